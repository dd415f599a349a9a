#pragma once
/// Columns: Arrow-layout arrays (values, LSB-first validity bitmap, int64 string offsets) over shared
/// immutable buffers. A `column` is a cheap handle (copying it shares the buffers); slicing is free.
/// Booleans take one byte per value (as in libcudf), not Arrow's bit-packing.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tug/core/types.hpp"
#include "tug/memory/memory_resource.hpp"

namespace tug {

namespace bits {
inline bool get(const uint8_t* bm, int64_t i) { return (bm[i >> 3] >> (i & 7)) & 1; }
inline void set(uint8_t* bm, int64_t i) { bm[i >> 3] |= static_cast<uint8_t>(1u << (i & 7)); }
inline void clear(uint8_t* bm, int64_t i) { bm[i >> 3] &= static_cast<uint8_t>(~(1u << (i & 7))); }
inline int64_t bytes_for(int64_t n) { return (n + 7) / 8; }
/// Number of set bits in [offset, offset + n).
int64_t count_set(const uint8_t* bm, int64_t offset, int64_t n);
}  // namespace bits

/// Non-owning view of a column's buffers, for kernels. Valid while the owning column lives.
struct column_view {
  data_type type;
  int64_t size = 0;
  int64_t offset = 0;          ///< first row within the buffers (values, offsets and validity bits)
  int64_t null_count = 0;
  const void* data = nullptr;  ///< values; for strings the chars
  const int64_t* offsets = nullptr;  ///< strings only: size+1 entries starting at `offset`
  const uint8_t* validity = nullptr; ///< nullptr when there are no nulls

  bool is_valid(int64_t i) const { return !validity || bits::get(validity, offset + i); }
  bool is_null(int64_t i) const { return !is_valid(i); }
  template <typename T> const T* values() const { return static_cast<const T*>(data) + offset; }
  template <typename T> T value(int64_t i) const { return values<T>()[i]; }
  std::string_view string(int64_t i) const {
    const int64_t* o = offsets + offset;
    return {static_cast<const char*>(data) + o[i], static_cast<size_t>(o[i + 1] - o[i])};
  }
};

template <> inline std::string_view column_view::value<std::string_view>(int64_t i) const { return string(i); }

/// Owning handle of an immutable column.
class column {
 public:
  column() = default;
  /// Wraps buffers. `null_count` < 0 means "count it". For strings `data` holds the chars and
  /// `offsets` size+1 int64 offsets.
  column(data_type type, int64_t size, buffer_ptr data, buffer_ptr validity = {}, int64_t null_count = -1,
         buffer_ptr offsets = {}, int64_t offset = 0);

  const data_type& type() const { return _type; }
  int64_t size() const { return _size; }
  int64_t null_count() const { return _null_count; }
  bool has_nulls() const { return _null_count > 0; }
  int64_t offset() const { return _offset; }
  bool is_valid(int64_t i) const { return !_validity || bits::get(_validity->as<uint8_t>(), _offset + i); }
  bool is_null(int64_t i) const { return !is_valid(i); }

  template <typename T> const T* values() const { return _data->as<T>() + _offset; }
  template <typename T> T value(int64_t i) const { return view().value<T>(i); }
  std::string_view string(int64_t i) const { return view().string(i); }

  column_view view() const;
  /// Rows [offset, offset+length), sharing buffers. @throws invalid_argument_error when out of range.
  column slice(int64_t offset, int64_t length) const;

  const buffer_ptr& data_buffer() const { return _data; }
  const buffer_ptr& offsets_buffer() const { return _offsets; }
  const buffer_ptr& validity_buffer() const { return _validity; }
  /// Bytes referenced by this column's rows (values, offsets, chars, validity).
  int64_t memory_usage() const;

 private:
  data_type _type;
  int64_t _size = 0;
  int64_t _offset = 0;
  int64_t _null_count = 0;
  buffer_ptr _data;
  buffer_ptr _offsets;
  buffer_ptr _validity;
};

/// Builds a fixed-width column of a known size. Values start uninitialized, all valid.
template <typename T>
class fixed_width_builder {
 public:
  fixed_width_builder(data_type type, int64_t n, memory_resource* mr = default_host_resource())
      : _type(std::move(type)), _n(n), _mr(mr), _data(make_buffer(sizeof(T) * static_cast<size_t>(n), mr)) {}
  T* data() { return _data->as<T>(); }
  void set(int64_t i, T v) { data()[i] = v; }
  void set_null(int64_t i) {
    if (!_validity) {
      _validity = make_buffer(static_cast<size_t>(bits::bytes_for(_n)), _mr);
      std::memset(_validity->data(), 0xff, _validity->size());
    }
    bits::clear(_validity->as<uint8_t>(), i);
    data()[i] = T{};
  }
  void set_valid(int64_t i, bool valid) { if (!valid) set_null(i); }
  column finish() { return column(_type, _n, std::move(_data), std::move(_validity), -1); }

 private:
  data_type _type;
  int64_t _n;
  memory_resource* _mr;
  buffer_ptr _data;
  buffer_ptr _validity;
};

/// Builds a string column by appending.
class string_builder {
 public:
  explicit string_builder(int64_t expected_rows = 0, int64_t expected_bytes = 0,
                          memory_resource* mr = default_host_resource());
  void append(std::string_view s);
  void append_null();
  int64_t size() const { return static_cast<int64_t>(_offsets.size()) - 1; }
  column finish(data_type type = type_id::string);

 private:
  memory_resource* _mr;
  std::vector<int64_t> _offsets;
  std::string _chars;
  std::vector<uint8_t> _valid;
  bool _has_null = false;
};

/// A column of `n` nulls of `type`.
column make_null_column(const data_type& type, int64_t n, memory_resource* mr = default_host_resource());

/// Test and example helpers: columns from optional values.
template <typename T>
column make_column(const data_type& type, const std::vector<std::optional<T>>& values,
                   memory_resource* mr = default_host_resource()) {
  fixed_width_builder<T> b(type, static_cast<int64_t>(values.size()), mr);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i]) b.set(static_cast<int64_t>(i), *values[i]);
    else b.set_null(static_cast<int64_t>(i));
  }
  return b.finish();
}
template <typename T>
column make_column(const data_type& type, const std::vector<T>& values, memory_resource* mr = default_host_resource()) {
  fixed_width_builder<T> b(type, static_cast<int64_t>(values.size()), mr);
  if (!values.empty()) std::memcpy(b.data(), values.data(), sizeof(T) * values.size());
  return b.finish();
}
column make_bool_column(const std::vector<std::optional<bool>>& values);
column make_string_column(const std::vector<std::optional<std::string>>& values);

/// Calls `f.template operator()<Id>()` with the type id as template argument. The one dispatch level.
template <typename F>
decltype(auto) type_dispatch(type_id id, F&& f) {
  switch (id) {
    case type_id::boolean: return f.template operator()<type_id::boolean>();
    case type_id::int8: return f.template operator()<type_id::int8>();
    case type_id::int16: return f.template operator()<type_id::int16>();
    case type_id::int32: return f.template operator()<type_id::int32>();
    case type_id::int64: return f.template operator()<type_id::int64>();
    case type_id::uint8: return f.template operator()<type_id::uint8>();
    case type_id::uint16: return f.template operator()<type_id::uint16>();
    case type_id::uint32: return f.template operator()<type_id::uint32>();
    case type_id::uint64: return f.template operator()<type_id::uint64>();
    case type_id::float32: return f.template operator()<type_id::float32>();
    case type_id::float64: return f.template operator()<type_id::float64>();
    case type_id::decimal128: return f.template operator()<type_id::decimal128>();
    case type_id::date32: return f.template operator()<type_id::date32>();
    case type_id::timestamp: return f.template operator()<type_id::timestamp>();
    case type_id::duration: return f.template operator()<type_id::duration>();
    case type_id::string: return f.template operator()<type_id::string>();
  }
  throw internal_error("type_dispatch: bad type id");
}

}  // namespace tug
