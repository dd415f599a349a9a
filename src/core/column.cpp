#include "tug/core/column.hpp"

#include <bit>

#include "tug/memory/device.hpp"

namespace tug {

int64_t bits::count_set(const uint8_t* bm, int64_t offset, int64_t n) {
  int64_t c = 0;
  int64_t i = offset, end = offset + n;
  while (i < end && (i & 7)) c += get(bm, i++);
  while (i + 64 <= end) {
    uint64_t w;
    std::memcpy(&w, bm + (i >> 3), 8);
    c += std::popcount(w);
    i += 64;
  }
  while (i < end) c += get(bm, i++);
  return c;
}

column::column(data_type type, int64_t size, buffer_ptr data, buffer_ptr validity, int64_t null_count,
               buffer_ptr offsets, int64_t offset)
    : _type(std::move(type)), _size(size), _offset(offset), _data(std::move(data)),
      _offsets(std::move(offsets)), _validity(std::move(validity)) {
  TUG_EXPECTS(size >= 0 && offset >= 0, "negative column size or offset");
  TUG_EXPECTS(_type.id != type_id::string || _offsets, "string column without offsets");
  if (!_data) _data = make_buffer(0);
  if (!_validity) _null_count = 0;
  else if (null_count >= 0) _null_count = null_count;
  else _null_count = size - count_set_bits(*_validity, offset, size);
  if (_null_count == 0) _validity.reset();
}

column_view column::view() const {
  column_view v;
  v.type = _type;
  v.size = _size;
  v.offset = _offset;
  v.null_count = _null_count;
  v.data = _data ? _data->data() : nullptr;
  v.offsets = _offsets ? _offsets->as<int64_t>() : nullptr;
  v.validity = _validity ? _validity->as<uint8_t>() : nullptr;
  return v;
}

column column::slice(int64_t offset, int64_t length) const {
  if (offset < 0 || length < 0 || offset + length > _size)
    throw invalid_argument_error("slice [" + std::to_string(offset) + ", " + std::to_string(offset + length) +
                                 ") out of range for a column of " + std::to_string(_size) + " rows");
  int64_t nc = -1;
  if (!_validity) nc = 0;
  else if (offset == 0 && length == _size) nc = _null_count;
  return column(_type, length, _data, _validity, nc, _offsets, _offset + offset);
}

int64_t column::memory_usage() const {
  int64_t b = 0;
  if (_type.id == type_id::string && _data->resource()->kind() == memory_kind::device) {
    b += (_size + 1) * 8 + static_cast<int64_t>(_data->size());  // chars not read back from the device
  } else if (_type.id == type_id::string) {
    auto v = view();
    b += (_size + 1) * 8;
    if (_size > 0) b += v.offsets[_offset + _size] - v.offsets[_offset];
  } else {
    b += _size * size_of(_type.id);
  }
  if (_validity) b += bits::bytes_for(_size);
  return b;
}

string_builder::string_builder(int64_t expected_rows, int64_t expected_bytes, memory_resource* mr) : _mr(mr) {
  _offsets.reserve(static_cast<size_t>(expected_rows) + 1);
  _offsets.push_back(0);
  _chars.reserve(static_cast<size_t>(expected_bytes));
  _valid.reserve(static_cast<size_t>(expected_rows));
}

void string_builder::append(std::string_view s) {
  _chars.append(s);
  _offsets.push_back(static_cast<int64_t>(_chars.size()));
  _valid.push_back(1);
}

void string_builder::append_null() {
  _offsets.push_back(static_cast<int64_t>(_chars.size()));
  _valid.push_back(0);
  _has_null = true;
}

column string_builder::finish(data_type type) {
  int64_t n = size();
  auto offs = make_buffer(sizeof(int64_t) * _offsets.size(), _mr);
  std::memcpy(offs->data(), _offsets.data(), sizeof(int64_t) * _offsets.size());
  auto chars = make_buffer(_chars.size(), _mr);
  if (!_chars.empty()) std::memcpy(chars->data(), _chars.data(), _chars.size());
  buffer_ptr validity;
  if (_has_null) {
    validity = make_buffer(static_cast<size_t>(bits::bytes_for(n)), _mr);
    std::memset(validity->data(), 0, validity->size());
    for (int64_t i = 0; i < n; ++i)
      if (_valid[static_cast<size_t>(i)]) bits::set(validity->as<uint8_t>(), i);
  }
  return column(std::move(type), n, std::move(chars), std::move(validity), -1, std::move(offs));
}

column make_null_column(const data_type& type, int64_t n, memory_resource* mr) {
  auto validity = make_buffer(static_cast<size_t>(bits::bytes_for(n)), mr);
  std::memset(validity->data(), 0, validity->size());
  if (type.id == type_id::string) {
    auto offs = make_buffer(sizeof(int64_t) * static_cast<size_t>(n + 1), mr);
    std::memset(offs->data(), 0, offs->size());
    return column(type, n, make_buffer(0, mr), std::move(validity), n, std::move(offs));
  }
  auto data = make_buffer(static_cast<size_t>(size_of(type.id) * n), mr);
  std::memset(data->data(), 0, data->size());
  return column(type, n, std::move(data), std::move(validity), n);
}

column make_bool_column(const std::vector<std::optional<bool>>& values) {
  return make_column<bool>(type_id::boolean, values);
}

column make_string_column(const std::vector<std::optional<std::string>>& values) {
  string_builder b(static_cast<int64_t>(values.size()));
  for (auto& v : values) {
    if (v) b.append(*v);
    else b.append_null();
  }
  return b.finish();
}

}  // namespace tug
