#pragma once
/// Parquet reader and writer of tug: the format is parsed in-house (Thrift compact protocol, page
/// encodings); compression goes through system libraries (snappy, zlib, zstd, lz4).
/// Flat columns only: columns tug cannot represent (nested ones, decimals wider than decimal128, a
/// repeated name) are left out of `file_reader::schema()` and listed by
/// `file_reader::unsupported_columns()`; a scan refuses them unless `read_options::
/// skip_unsupported_columns` is set. See docs/parquet.md for the supported types and encodings.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tug/core/scalar.hpp"
#include "tug/core/table.hpp"
#include "tug/core/types.hpp"
#include "tug/io/source.hpp"

namespace tug {
class thread_pool;
}

namespace tug::io::parquet {

struct file_metadata;  // parsed footer (tug/io/parquet/metadata.hpp)
struct schema_element;
struct column_metadata;
struct page_location;
namespace detail {
struct decode_scratch;  // src/io/parquet/column_decoder.hpp
struct leaf_info;
}  // namespace detail

/// Statistics of one column chunk, typed as the column; absent when the file has none.
using tug::column_statistics;

/// A top-level column of a Parquet file that tug cannot represent, and why (e.g. "nested list",
/// "decimal(50, 2): precision above 38").
struct unsupported_column {
  std::string name;
  std::string reason;
};

/// Options of reading Parquet files (`scan_parquet`, `parquet_source`).
struct read_options {
  /// false: a file with columns tug cannot represent (nested lists, structs and maps, decimals of
  /// precision above 38, a repeated column name) raises not_implemented_error naming them and the
  /// file; true: they are left out, with a warning on stderr once per scan and a note in explain().
  bool skip_unsupported_columns = false;
};

/// Rows [begin, end) of a row group.
struct row_range {
  int64_t begin = 0, end = 0;
};

/// Rows [lo, hi) of the rows that `ranges` select from a row group (all of its rows when `ranges` is
/// empty), as row ranges of the row group: the rows of one piece of a partition.
std::vector<row_range> sub_ranges(const std::vector<row_range>& ranges, int64_t lo, int64_t hi);

/// One data page of a column chunk from the page index: the rows it holds and its statistics.
struct page_stats {
  row_range rows;
  column_statistics stats;
};

/// Reads a Parquet file: the footer on `open`, then row groups column by column. The const methods
/// are safe to call from several threads at once (each read opens the file itself).
class file_reader {
 public:
  /// Opens and parses the footer.
  /// @throws io_error naming the file: missing file, wrong magic, truncated, corrupt footer.
  static file_reader open(const std::string& path);

  /// Flat columns mapped to tug types (unsupported columns omitted).
  const tug::schema& schema() const { return _schema; }
  /// The top-level columns left out of schema(), in file order, with the reason.
  const std::vector<unsupported_column>& unsupported_columns() const { return _unsupported; }
  int64_t num_rows() const;
  int num_row_groups() const;
  /// @throws invalid_argument_error for a row group out of range.
  int64_t row_group_num_rows(int rg) const;
  /// Uncompressed bytes of the given columns (indices into schema()) in a row group.
  int64_t row_group_uncompressed_bytes(int rg, const std::vector<size_t>& columns) const;
  /// About the bytes `columns` of row group `rg` take once decoded: fixed-width values, validity bits
  /// of optional columns, and for strings their uncompressed chunk plus an offset per row.
  int64_t row_group_decoded_bytes(int rg, const std::vector<size_t>& columns) const;
  /// Statistics from the column chunk metadata, typed as the column. `distinct_count` is the
  /// statistics' own when the writer gave one; with `dictionary_size`, else the size of the chunk's
  /// dictionary page (one read of its header; a lower bound where the writer fell back to plain pages).
  column_statistics statistics(int rg, size_t column, bool dictionary_size = false) const;
  /// Reads the given columns (indices into schema()) of one row group.
  /// @throws io_error naming file, column and row group on a page that does not decompress or
  /// decodes past its end; not_implemented_error naming an unsupported encoding or codec.
  table read_row_group(int rg, const std::vector<size_t>& columns, memory_resource* mr = default_host_resource()) const;
  /// The page index (ColumnIndex + OffsetIndex) of a column chunk: per data page its rows and statistics.
  /// Empty when the file has none for it or it is malformed (a bad page index is ignored, as if absent).
  std::vector<page_stats> page_index(int rg, size_t column) const;
  /// Reads only the rows in `ranges` (sorted, disjoint, within the row group; empty = all rows), decoding
  /// only the data pages that overlap them where the column chunk has an offset index (else the pages
  /// in order up to the last wanted row, as read_row_group_rows), and adds the number of data pages
  /// before the last wanted row not decompressed or decoded to `*pages_skipped`. With a `pool`, the
  /// column chunks are decoded in parallel on it.
  table read_row_group_ranges(int rg, const std::vector<size_t>& columns, const std::vector<row_range>& ranges,
                              memory_resource* mr = default_host_resource(), int64_t* pages_skipped = nullptr,
                              thread_pool* pool = nullptr) const;
  /// Reads only the rows at the positions `rows` (ascending, unique, within the row group), in order.
  /// Data pages without any are not decompressed (added to `*pages_skipped`); of the others only the
  /// selected values are converted and copied. With a `pool`, the column chunks are decoded in
  /// parallel on it. @throws invalid_argument_error on bad positions; as read_row_group otherwise.
  table read_row_group_rows(int rg, const std::vector<size_t>& columns, const std::vector<int64_t>& rows,
                            memory_resource* mr = default_host_resource(), int64_t* pages_skipped = nullptr,
                            thread_pool* pool = nullptr) const;
  const std::string& path() const { return _path; }

  /// A column chunk of a row group: where its bytes lie in the file, its metadata and schema element.
  struct chunk_info {
    int64_t offset = 0, size = 0;
    const column_metadata* meta = nullptr;
    const schema_element* element = nullptr;
    bool optional = false;  ///< has definition levels
  };
  /// The chunk of `column` (an index into schema()) in row group `rg` (the GPU reader plans from it).
  /// @throws invalid_argument_error for a row group or column out of range; io_error naming the file,
  /// column and row group when the chunk lies outside the file.
  chunk_info chunk(int rg, size_t column) const;
  /// Reads `n` bytes at `offset` into `out` (opens the file). @throws io_error naming the file when the
  /// read fails or the file's size changed since its footer was read.
  void read_bytes(int64_t offset, size_t n, uint8_t* out) const;

 private:
  /// Decodes one column chunk: its index k in the columns read, its metadata and leaf, its bytes as read
  /// from the file (followed by detail::slack bytes) and their position in the file.
  using chunk_decode = std::function<column(size_t k, const column_metadata& m, const detail::leaf_info& leaf,
                                            const uint8_t* chunk, size_t size, int64_t start,
                                            detail::decode_scratch& scratch)>;
  /// The given columns of row group `rg` (checked by the caller), each by `decode`, in parallel on
  /// `pool` when given. @throws io_error naming file, column and row group; io_error when the file's
  /// size changed since the footer was read.
  std::vector<column> decode_columns(int rg, const std::vector<size_t>& columns, thread_pool* pool,
                                     const chunk_decode& decode) const;
  file_reader() = default;
  void check_rg(int rg) const;
  void check_column(size_t c) const;
  const schema_element& element(size_t c) const;
  std::optional<scalar> stat_value(size_t c, const std::string* plain_bytes) const;
  std::vector<page_location> offset_index(int rg, size_t c) const;
  static int64_t chunk_start(const column_metadata& m);

  std::string _path;
  std::shared_ptr<const file_metadata> _meta;
  tug::schema _schema;
  std::vector<size_t> _leaf;     ///< schema() column -> leaf index in the file's column chunks
  std::vector<size_t> _element;  ///< schema() column -> index of its element in the file's schema
  std::vector<bool> _optional;   ///< schema() column -> has definition levels
  std::vector<unsupported_column> _unsupported;
  int64_t _file_size = 0;
};

/// Options of `write_parquet`.
struct write_options {
  std::string codec = "snappy";  ///< "none"/"uncompressed", "snappy", "zstd", "lz4_raw", "gzip"
  int64_t row_group_rows = 1 << 20;
  int64_t page_bytes = 1 << 20;
  bool dictionary = true;
  bool statistics = true;
  /// Each page header carries the CRC-32 of the page's bytes (Parquet's `crc`), which readers may check:
  /// the GPU reader decompresses a page on the device only when it has checked it (docs/parquet.md).
  bool page_checksums = true;
};

/// Writes the partitions (all of schema `s`) as one Parquet file. With a `pool`, the column chunks of
/// each row group are encoded in parallel on it (the file's bytes are the same as without).
/// @throws io_error when the file cannot be written; invalid_argument_error on a bad option.
void write_parquet(const std::string& path, const tug::schema& s, const std::vector<table>& parts,
                   const write_options& = {}, thread_pool* pool = nullptr);

/// Writes one Parquet file a table at a time (a streaming sink): row groups of row_group_rows rows are
/// cut across the tables appended, each encoded when it is full (its column chunks in parallel on
/// `pool`). A file that is not closed is removed when the writer is destroyed. Not thread-safe.
class file_writer {
 public:
  /// Creates the file. @throws io_error when it cannot be created; invalid_argument_error on a bad option.
  file_writer(const std::string& path, const tug::schema& s, const write_options& = {}, thread_pool* pool = nullptr);
  ~file_writer();
  file_writer(const file_writer&) = delete;
  file_writer& operator=(const file_writer&) = delete;
  /// Appends the rows of `t` (of schema `s`). @throws invalid_argument_error on a wrong column or type,
  /// or a string that is not UTF-8 (naming its row in the file); io_error when writing fails.
  void append(const table& t);
  /// Rows appended so far.
  int64_t rows() const;
  /// Writes the last row group and the footer. @throws io_error when writing fails.
  void close();

 private:
  friend void write_parquet(const std::string&, const tug::schema&, const std::vector<table>&, const write_options&,
                            thread_pool*);
  void append_checked(const table& t);
  struct impl;
  std::unique_ptr<impl> _impl;
};

}  // namespace tug::io::parquet
