#pragma once
/// A scan over Parquet files (a file, a glob or a directory): row groups become partitions; columns
/// not requested are not read; row groups whose statistics prove that a pushed-down predicate
/// cannot match are skipped.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <functional>
#include "tug/io/files.hpp"
#include "tug/io/parquet/reader.hpp"

#include "tug/io/source.hpp"

namespace tug::io {

/// Counters of what a Parquet source read, for tests and statistics.
struct scan_counters {
  std::atomic<int64_t> row_groups_read{0};
  std::atomic<int64_t> row_groups_skipped{0};
  std::atomic<int64_t> bytes_read{0};          ///< uncompressed bytes of the column chunks read
  std::atomic<int64_t> partitions{0};          ///< partitions handed to the engine
  std::atomic<int64_t> pages_skipped{0};       ///< data pages of read row groups not decoded (page index)
  std::atomic<int64_t> take_row_groups{0};     ///< row groups take_rows decoded rows of
  std::atomic<int64_t> take_pages_skipped{0};  ///< their data pages without a taken row (offset index)
  // the GPU Parquet reader (read_device)
  std::atomic<int64_t> device_chunks{0};       ///< column chunks decoded on the device
  std::atomic<int64_t> device_host_chunks{0};  ///< column chunks it left to the host decoder (an encoding it lacks)
  std::atomic<int64_t> device_pages{0};        ///< pages decompressed on the device (nvCOMP)
  std::atomic<int64_t> host_pages{0};          ///< pages it decompressed on the host (no nvCOMP, or its codec)
  std::atomic<int64_t> device_read_ns{0};      ///< its threads' time reading and planning column chunks
  std::atomic<int64_t> device_submit_ns{0};    ///< queuing copies, decompression and kernels
  std::atomic<int64_t> device_wait_ns{0};      ///< waiting for the device
};

/// Partition `first .. first+count-1` of the row groups read (coalesced when count > 1), or one row
/// group cut into `pieces` row ranges.
struct partition_plan {
  size_t first = 0, count = 1;
  int64_t pieces = 1;
};

/// Groups row groups of the given sizes (bytes or rows) into partitions near `target`: a row group of
/// at least `target` is cut into round(size / target) pieces; consecutive smaller ones are coalesced
/// while their sum stays within `target`. Exposed for tests.
std::vector<partition_plan> plan_partitions(const std::vector<int64_t>& measure, int64_t target);

/// Decoded bytes per scan partition under `o.memory_limit` when `threads` decode at once: a share of
/// the limit small enough that every thread's partition and the copies its fused operators make fit
/// (0 without a limit; at least min_target_partition_size).
int64_t memory_bounded_partition_size(const engine_options& o, int threads);

/// Row groups become partitions of about `engine_options::target_partition_size` bytes of the columns
/// read (uncompressed, from the footer), or `target_partition_rows` rows when that is 0.
class parquet_source final : public table_source {
 public:
  /// Opens every file's footer. Columns tug cannot represent are left out with a warning on stderr
  /// (once, naming them and the files) when `options.skip_unsupported_columns` is set.
  /// @throws io_error naming a file that cannot be read or whose schema differs from the first
  /// file's; not_implemented_error naming a file and its columns that tug cannot represent (unless
  /// they are skipped), or a file all of whose columns are skipped.
  explicit parquet_source(const std::string& path, const parquet::read_options& options = {});
  const tug::schema& schema() const override { return _schema; }
  std::string describe() const override;
  /// With a `limit`, only the row groups that hold the first `limit` rows, and of the last only the
  /// data pages up to its last needed row.
  std::vector<table> read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                          const engine_options& options, thread_pool& pool, memory_resource* mr,
                          const partition_hook& hook = {}, int64_t limit = -1) const override;
  /// With engine_options::gpu_parquet_reader and a GPU: read() with the row groups decoded on the device
  /// (src/io/parquet/gpu_reader.cu) into device partitions; otherwise table_source::read_device.
  std::vector<table> read_device(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                                 const engine_options& options, thread_pool& pool, memory_resource* device_mr,
                                 memory_resource* staging_mr, const partition_hook& hook = {},
                                 int64_t limit = -1) const override;
  /// Fetches the row groups holding the ids (in parallel), only the pages holding them where the
  /// column chunks have an offset index. Hive partition columns cannot be taken (invalid_argument_error).
  std::vector<table> take_rows(const std::vector<std::string>& columns, const std::vector<column>& ids,
                               thread_pool& pool, memory_resource* mr) const override;
  const scan_counters& counters() const { return *_counters; }
  /// Rows [N * rank / size, N * (rank + 1) / size) of the N rows of all files (a row group that
  /// straddles two shares is cut at the row; each rank decodes only its rows' pages where the file has
  /// a page index).
  std::shared_ptr<const table_source> rank_share(int rank, int size) const override;

  /// Whether read() with these predicates would skip rows: a row group ruled out by its statistics or
  /// rows ruled out by the page index (then its rows' positions are not global row positions).
  bool prunes(const std::vector<expr>& predicates) const;
  /// Whether `column` is a hive partition column (from the directories, not in the files).
  bool is_hive_column(const std::string& column) const { return _schema.index_of(column) >= _file_columns; }
  /// Uncompressed bytes of the columns `columns` over all row groups (from the footers; hive
  /// partition columns count nothing).
  int64_t column_bytes(const std::vector<std::string>& columns) const;
  /// Per row group of every file: its rows and the column chunks' statistics (a hive partition
  /// column: its directory's value as min and max, no nulls).
  std::vector<piece_statistics> statistics(const std::vector<std::string>& columns) const override;
  /// Data pages of the file column `column` over all row groups: from the offset index where the
  /// chunk has one, else estimated from its uncompressed bytes at the usual 1 MiB a page.
  int64_t data_pages(const std::string& column) const;
  int64_t num_rows() const;

 private:
  /// A row group read() decodes: the rows the page index cannot rule out (empty = all).
  struct rg_task {
    size_t file;
    int rg;
    std::vector<parquet::row_range> ranges;
    int64_t rows = 0;  ///< rows to read
  };
  /// The row groups read() decodes with `predicates`, in file order; `*skipped` counts the others
  /// that have rows.
  std::vector<rg_task> plan_reads(const std::vector<expr>& predicates, int64_t* skipped) const;
  /// read(), or with `device_mr` read_device() (host memory from `mr` then stages the column chunks).
  std::vector<table> read_parts(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                                const engine_options& options, thread_pool& pool, memory_resource* mr,
                                memory_resource* device_mr, const partition_hook& hook, int64_t limit) const;
  tug::schema file_schema() const;
  std::string _path;
  std::vector<file_entry> _files;
  std::vector<std::shared_ptr<parquet::file_reader>> _readers;
  tug::schema _schema;  ///< file columns, then hive partition columns (strings)
  size_t _file_columns = 0;
  std::string _skip_note;  ///< the unsupported columns skipped and their files (describe(), the warning)
  std::shared_ptr<scan_counters> _counters = std::make_shared<scan_counters>();
  int64_t _share_begin = 0, _share_end = -1;  ///< the rows of a rank's share (rank_share); end -1: all rows
};

/// Rows of row group `rg` that the page index (per-page statistics) cannot rule out for the conjuncts
/// `preds` (each over one column; others are ignored), as sorted disjoint ranges; all rows when there
/// is no page index. Exposed for tests.
std::vector<parquet::row_range> page_ranges(const parquet::file_reader& r, int rg, const std::vector<expr>& preds,
                                            const tug::schema& s);

/// True unless the statistics prove that no row of a row group satisfies `pred` (resolved against
/// the file schema). Exposed for tests.
bool may_match(const expr& pred, const tug::schema& s, int64_t rows,
               const std::function<parquet::column_statistics(size_t)>& stats);

}  // namespace tug::io
