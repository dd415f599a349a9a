#pragma once
/// Internal to the Parquet reader: decodes the pages of one column chunk straight into the buffers of
/// the tug column (values, validity bits, string offsets and chars), with transient host buffers that
/// are reused across the column chunks of one read.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tug/core/column.hpp"
#include "tug/io/parquet/metadata.hpp"

namespace tug::io::parquet::detail {

/// Bytes of slack behind every transient buffer the decoders read from or write to, so that short
/// values and bit-packed groups are moved with fixed-size loads and stores.
inline constexpr size_t slack = 64;

/// A host byte buffer reused for transient data: `get(n)` returns at least n + slack bytes, and drops
/// the old content when it has to grow. Outside the memory budget.
class raw_buffer {
 public:
  uint8_t* get(size_t n) {
    if (n > _cap || !_p) {
      _p = std::make_unique_for_overwrite<uint8_t[]>(n + slack);
      _cap = n;
    }
    return _p.get();
  }

 private:
  std::unique_ptr<uint8_t[]> _p;
  size_t _cap = 0;
};

/// A growable array of trivially copyable values that does not initialise what it adds.
template <typename T>
class pod_vector {
 public:
  /// Room for `n` more values at the end (uninitialised); returns them.
  T* grow(size_t n) {
    if (_size + n > _cap) {
      const size_t cap = std::max(_size + n, _cap * 2);
      auto p = std::make_unique_for_overwrite<T[]>(cap);
      if (_size) std::memcpy(p.get(), _p.get(), _size * sizeof(T));
      _p = std::move(p);
      _cap = cap;
    }
    T* out = _p.get() + _size;
    _size += n;
    return out;
  }
  void clear() { _size = 0; }
  T* data() { return _p.get(); }
  size_t size() const { return _size; }

 private:
  std::unique_ptr<T[]> _p;
  size_t _size = 0, _cap = 0;
};

/// Transient host buffers of one read (the column chunks of a row group), reused chunk after chunk.
struct decode_scratch {
  raw_buffer chunk;              ///< the compressed column chunk as read from the file
  raw_buffer page;               ///< one decompressed page (columns of fixed-width physical types)
  std::vector<raw_buffer> kept;  ///< decompressed pages of a binary column chunk, alive until it is done
  size_t kept_used = 0;          ///< entries of `kept` in use by the current chunk
  raw_buffer bits;               ///< validity bits of one page
  raw_buffer picked_bits;        ///< validity bits of a page's selected rows (decode_chunk_rows)
  raw_buffer dense;              ///< dense values of one page awaiting conversion
  pod_vector<uint32_t> indices;  ///< dictionary indices (of a page; of a whole chunk for strings)
};

/// How the dense physical values of one column become tug values.
struct leaf_info {
  const schema_element* elem = nullptr;
  data_type type;
  bool optional = false;
};

/// The name of an encoding as parquet.thrift spells it (PLAIN, RLE_DICTIONARY, ...).
std::string encoding_name(encoding e);

/// Decodes the column chunk [data, data + size) of `num_rows` rows (its bytes must be followed by
/// `slack` readable bytes). With `pages` (chunk positions of data pages and their rows, from the
/// offset index), decodes only those, after the dictionary page found before `first_data`.
/// @throws io_error (without the file name) on malformed data; not_implemented_error on unsupported
/// encodings and codecs.
column decode_chunk(const column_metadata& m, const leaf_info& leaf, const uint8_t* data, size_t size, int64_t num_rows,
                    const std::vector<std::pair<size_t, int64_t>>* pages, size_t first_data, decode_scratch& scratch,
                    memory_resource* mr);

/// Only the rows at the positions `rows` (ascending, unique, below `num_rows`: the caller checks, as
/// file_reader::read_row_group_rows does once for all its columns) of the column chunk of
/// `num_rows` rows, in order: data pages without any are not decompressed (counted in
/// `*pages_skipped`), and of the others only the selected values are converted and copied.
/// @throws as decode_chunk.
column decode_chunk_rows(const column_metadata& m, const leaf_info& leaf, const uint8_t* data, size_t size,
                         int64_t num_rows, const std::vector<int64_t>& rows, decode_scratch& scratch,
                         memory_resource* mr, int64_t* pages_skipped);

/// A one-row column of the leaf's type from the PLAIN-encoded statistics value `bytes` (binary values
/// are the bytes themselves). @throws io_error when the bytes do not hold a value.
column decode_stat_value(const leaf_info& leaf, physical_type pt, const std::string& bytes, memory_resource* mr);

}  // namespace tug::io::parquet::detail
