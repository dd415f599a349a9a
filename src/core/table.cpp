#include "tug/core/table.hpp"

#include <bit>
#include <cstring>

namespace tug {

table::table(std::vector<column> columns) : _columns(std::move(columns)) {
  _num_rows = _columns.empty() ? 0 : _columns[0].size();
  for (auto& c : _columns) TUG_EXPECTS(c.size() == _num_rows, "table columns differ in length");
}

table table::empty_with_rows(int64_t num_rows) {
  table t;
  t._num_rows = num_rows;
  return t;
}

table table::slice(int64_t offset, int64_t length) const {
  if (_columns.empty()) {
    if (offset < 0 || length < 0 || offset + length > _num_rows)
      throw invalid_argument_error("table slice out of range");
    return empty_with_rows(length);
  }
  std::vector<column> cols;
  cols.reserve(_columns.size());
  for (auto& c : _columns) cols.push_back(c.slice(offset, length));
  return table(std::move(cols));
}

table table::select(const std::vector<size_t>& indices) const {
  std::vector<column> cols;
  for (auto i : indices) cols.push_back(_columns.at(i));
  if (cols.empty()) return empty_with_rows(_num_rows);
  return table(std::move(cols));
}

int64_t table::memory_usage() const {
  int64_t b = 0;
  for (auto& c : _columns) b += c.memory_usage();
  return b;
}

column make_empty_column(const data_type& type) {
  if (type.id == type_id::string) {
    auto offs = make_buffer(sizeof(int64_t));
    offs->as<int64_t>()[0] = 0;
    return column(type, 0, make_buffer(0), {}, 0, std::move(offs));
  }
  return column(type, 0, make_buffer(0), {}, 0);
}

int64_t total_rows(const std::vector<table>& parts) {
  int64_t n = 0;
  for (auto& p : parts) n += p.num_rows();
  return n;
}

namespace {
// Calls f.template operator()<U>() with an unsigned integer type U of `width` bytes (copies of
// fixed-width values need only the width, not the logical type).
template <typename F>
void by_width(int width, F&& f) {
  switch (width) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    case 8: f.template operator()<uint64_t>(); break;
    case 16: f.template operator()<unsigned __int128>(); break;
    default: TUG_EXPECTS(false, "fixed-width copy: bad width " + std::to_string(width));
  }
}
}  // namespace

namespace {

// Gathers by an index function idx(i) -> source row or -1 (null).
// `negative_indices`: whether any idx(i) is < 0 (a null row).
template <typename IndexFn>
column gather_impl(const column& c, int64_t n, IndexFn idx, bool negative_indices, memory_resource* mr) {
  auto v = c.view();
  bool may_null = c.has_nulls() || negative_indices;
  buffer_ptr validity;
  uint8_t* vb = nullptr;
  int64_t nulls = 0;
  if (may_null) {
    validity = make_buffer(static_cast<size_t>(bits::bytes_for(n)), mr);
    std::memset(validity->data(), 0, validity->size());
    vb = validity->as<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t s = idx(i);
      if (s >= 0 && v.is_valid(s)) bits::set(vb, i);
      else ++nulls;
    }
  }
  if (v.type.id == type_id::string) {
    auto offs = make_buffer(sizeof(int64_t) * static_cast<size_t>(n + 1), mr);
    int64_t* o = offs->as<int64_t>();
    o[0] = 0;
    const int64_t* so = v.offsets + v.offset;
    for (int64_t i = 0; i < n; ++i) {
      int64_t s = idx(i);
      o[i + 1] = o[i] + (s >= 0 ? so[s + 1] - so[s] : 0);
    }
    auto chars = make_buffer(static_cast<size_t>(o[n]), mr);
    char* dst = chars->as<char>();
    const char* src = static_cast<const char*>(v.data);
    for (int64_t i = 0; i < n;) {
      int64_t s = idx(i);
      if (s < 0) {
        ++i;
        continue;
      }
      // a run of consecutive source rows is one copy
      int64_t j = i + 1;
      while (j < n && idx(j) == s + (j - i)) ++j;
      auto bytes = static_cast<size_t>(so[s + (j - i)] - so[s]);
      if (bytes > 0) std::memcpy(dst + o[i], src + so[s], bytes);
      i = j;
    }
    return column(v.type, n, std::move(chars), std::move(validity), nulls, std::move(offs));
  }
  int w = size_of(v.type.id);
  auto data = make_buffer(static_cast<size_t>(w * n), mr);
  auto copy = [&]<typename T>() {
    const T* s = static_cast<const T*>(v.data) + v.offset;
    T* d = data->as<T>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = idx(i);
      d[i] = k >= 0 ? s[k] : T{};
    }
  };
  by_width(w, copy);
  return column(v.type, n, std::move(data), std::move(validity), may_null ? nulls : 0);
}

}  // namespace

namespace {
bool any_negative(const int64_t* indices, int64_t n) {
  int64_t neg = 0;
  for (int64_t i = 0; i < n; ++i) neg |= indices[i];
  return neg < 0;  // the sign bit survives the or
}

table gather_table(const table& t, const int64_t* indices, int64_t n, bool negative, memory_resource* mr) {
  if (t.num_columns() == 0) return table::empty_with_rows(n);
  std::vector<column> cols;
  cols.reserve(t.num_columns());
  for (auto& c : t.columns())
    cols.push_back(gather_impl(c, n, [indices](int64_t i) { return indices[i]; }, negative, mr));
  return table(std::move(cols));
}
}  // namespace

column gather(const column& c, const int64_t* indices, int64_t n, memory_resource* mr) {
  return gather_impl(c, n, [indices](int64_t i) { return indices[i]; }, any_negative(indices, n), mr);
}

table gather(const table& t, const int64_t* indices, int64_t n, memory_resource* mr) {
  return gather_table(t, indices, n, any_negative(indices, n), mr);
}

table gather_in_range(const table& t, const int64_t* indices, int64_t n, memory_resource* mr) {
  return gather_table(t, indices, n, false, mr);
}

namespace {
// Whether row i is selected by the boolean mask `m` (null = not selected).
inline bool selected(const column_view& m, const bool* sel, int64_t i) {
  return sel[i] && (!m.validity || m.is_valid(i));
}

// Validity of the `k` selected rows of `v` (none when `v` has no nulls); counts the nulls.
buffer_ptr compact_validity(const column_view& v, const column_view& m, int64_t k, int64_t& nulls,
                            memory_resource* mr) {
  nulls = 0;
  if (!v.validity) return {};
  const bool* sel = m.values<bool>();
  buffer_ptr validity = make_buffer(static_cast<size_t>(bits::bytes_for(k)), mr);
  std::memset(validity->data(), 0, validity->size());
  uint8_t* vb = validity->as<uint8_t>();
  int64_t j = 0;
  for (int64_t i = 0; i < v.size; ++i) {
    if (!selected(m, sel, i)) continue;
    if (v.is_valid(i)) bits::set(vb, j);
    else ++nulls;
    ++j;
  }
  return validity;
}

// Copies the selected rows of a fixed-width column straight from the mask (no index array): one
// sequential, branch-free pass. `k` is the number of selected rows.
column compact_fixed(const column& c, const column_view& m, int64_t k, memory_resource* mr) {
  auto v = c.view();
  const bool* sel = m.values<bool>();
  int w = size_of(v.type.id);
  auto data = make_buffer(static_cast<size_t>(w) * static_cast<size_t>(k), mr);
  auto copy = [&]<typename T>() {
    const T* src = v.values<T>();
    T* dst = data->as<T>();
    int64_t j = 0;
    if (!m.validity) {
      // 8 mask bytes at a time: none selected is skipped, all selected is one block copy
      constexpr uint64_t all = 0x0101010101010101ULL;
      int64_t i = 0;
      for (; i + 8 <= v.size; i += 8) {
        uint64_t w;
        std::memcpy(&w, sel + i, 8);
        if (w == 0) continue;
        if (w == all) {
          std::memcpy(dst + j, src + i, 8 * sizeof(T));
          j += 8;
          continue;
        }
        for (int64_t b = i; b < i + 8; ++b) {
          if (j < k) dst[j] = src[b];
          j += sel[b];
        }
      }
      for (; i < v.size; ++i) {
        if (j < k) dst[j] = src[i];
        j += sel[i];
      }
    } else {
      for (int64_t i = 0; i < v.size; ++i) {
        if (j < k) dst[j] = src[i];
        j += sel[i] & m.is_valid(i);
      }
    }
  };
  by_width(w, copy);
  int64_t nulls = 0;
  buffer_ptr validity = compact_validity(v, m, k, nulls, mr);
  return column(v.type, k, std::move(data), std::move(validity), nulls);
}

// The selected rows of a string column straight from the mask: the offsets in one pass, then the
// characters of each run of consecutive selected rows in one copy.
column compact_string(const column& c, const column_view& m, int64_t k, memory_resource* mr) {
  auto v = c.view();
  const bool* sel = m.values<bool>();
  const int64_t* so = v.offsets + v.offset;
  auto offs = make_buffer(sizeof(int64_t) * static_cast<size_t>(k + 1), mr);
  int64_t* o = offs->as<int64_t>();
  o[0] = 0;
  int64_t j = 0;
  for (int64_t i = 0; i < v.size; ++i)
    if (selected(m, sel, i)) {
      o[j + 1] = o[j] + (so[i + 1] - so[i]);
      ++j;
    }
  auto chars = make_buffer(static_cast<size_t>(o[k]), mr);
  char* dst = chars->as<char>();
  const char* src = static_cast<const char*>(v.data);
  for (int64_t i = 0; i < v.size;) {
    if (!selected(m, sel, i)) {
      ++i;
      continue;
    }
    int64_t start = i;
    while (i < v.size && selected(m, sel, i)) ++i;
    auto bytes = static_cast<size_t>(so[i] - so[start]);
    if (bytes > 0) std::memcpy(dst, src + so[start], bytes);
    dst += bytes;
  }
  int64_t nulls = 0;
  buffer_ptr validity = compact_validity(v, m, k, nulls, mr);
  return column(v.type, k, std::move(chars), std::move(validity), nulls, std::move(offs));
}
}  // namespace

namespace {
// Rows the boolean `mask` selects (true and valid).
int64_t count_selected(const column& mask) {
  TUG_EXPECTS(mask.type().id == type_id::boolean, "filter mask must be boolean");
  auto m = mask.view();
  const bool* sel = m.values<bool>();
  int64_t k = 0;
  if (!m.validity) {
    // booleans are bytes 0 or 1: a popcount of 8 of them at a time counts the selected rows
    int64_t i = 0;
    for (; i + 8 <= m.size; i += 8) {
      uint64_t w;
      std::memcpy(&w, sel + i, 8);
      k += std::popcount(w);
    }
    for (; i < m.size; ++i) k += sel[i];
  } else {
    for (int64_t i = 0; i < m.size; ++i) k += sel[i] & m.is_valid(i);
  }
  return k;
}

// The `k` rows of `c` that `m` selects.
column compact_selected(const column& c, const column_view& m, int64_t k, memory_resource* mr) {
  return c.type().id == type_id::string ? compact_string(c, m, k, mr) : compact_fixed(c, m, k, mr);
}
}  // namespace

table filter(const table& t, const column& mask, memory_resource* mr) {
  TUG_EXPECTS(mask.size() == t.num_rows(), "filter mask length differs from the table");
  int64_t k = count_selected(mask);
  if (k == t.num_rows()) return t;
  if (t.num_columns() == 0) return table::empty_with_rows(k);
  std::vector<column> cols;
  cols.reserve(t.num_columns());
  for (auto& c : t.columns()) cols.push_back(compact_selected(c, mask.view(), k, mr));
  return table(std::move(cols));
}

column filter(const column& c, const column& mask, memory_resource* mr) {
  TUG_EXPECTS(mask.size() == c.size(), "filter mask length differs from the column");
  int64_t k = count_selected(mask);
  if (k == c.size()) return c;
  return compact_selected(c, mask.view(), k, mr);
}

column concatenate(const std::vector<column>& parts, memory_resource* mr) {
  TUG_EXPECTS(!parts.empty(), "concatenate of no columns");
  if (parts.size() == 1) return parts[0];
  const data_type& type = parts[0].type();
  int64_t n = 0, nulls = 0;
  for (auto& p : parts) {
    TUG_EXPECTS(p.type() == type, "concatenate of columns of different types: " + to_string(type) + " and " +
                                      to_string(p.type()));
    // device memory is read by cuda::concatenate (memory/concatenate_where.hpp), never here
    TUG_EXPECTS(!(p.data_buffer() && p.data_buffer()->resource()->kind() == memory_kind::device) &&
                    !(mr && mr->kind() == memory_kind::device),
                "the host concatenate was given a column in device memory");
    n += p.size();
    nulls += p.null_count();
  }
  buffer_ptr validity;
  if (nulls > 0) {
    validity = make_buffer(static_cast<size_t>(bits::bytes_for(n)), mr);
    std::memset(validity->data(), 0, validity->size());
    uint8_t* vb = validity->as<uint8_t>();
    int64_t pos = 0;
    for (auto& p : parts) {
      auto v = p.view();
      for (int64_t i = 0; i < v.size; ++i)
        if (v.is_valid(i)) bits::set(vb, pos + i);
      pos += v.size;
    }
  }
  if (type.id == type_id::string) {
    int64_t bytes = 0;
    for (auto& p : parts) {
      auto v = p.view();
      bytes += v.size ? v.offsets[v.offset + v.size] - v.offsets[v.offset] : 0;
    }
    auto offs = make_buffer(sizeof(int64_t) * static_cast<size_t>(n + 1), mr);
    auto chars = make_buffer(static_cast<size_t>(bytes), mr);
    int64_t* o = offs->as<int64_t>();
    o[0] = 0;
    int64_t row = 0, cpos = 0;
    for (auto& p : parts) {
      auto v = p.view();
      if (v.size == 0) continue;
      const int64_t* so = v.offsets + v.offset;
      int64_t len = so[v.size] - so[0];
      std::memcpy(chars->as<char>() + cpos, static_cast<const char*>(v.data) + so[0], static_cast<size_t>(len));
      for (int64_t i = 0; i < v.size; ++i) o[row + i + 1] = cpos + so[i + 1] - so[0];
      row += v.size;
      cpos += len;
    }
    return column(type, n, std::move(chars), std::move(validity), nulls, std::move(offs));
  }
  int w = size_of(type.id);
  auto data = make_buffer(static_cast<size_t>(w * n), mr);
  int64_t pos = 0;
  for (auto& p : parts) {
    auto v = p.view();
    std::memcpy(data->as<char>() + pos * w, static_cast<const char*>(v.data) + v.offset * w,
                static_cast<size_t>(v.size * w));
    pos += v.size;
  }
  return column(type, n, std::move(data), std::move(validity), nulls);
}

table concatenate(const std::vector<table>& parts, memory_resource* mr) {
  if (parts.empty()) return table();
  if (parts.size() == 1) return parts[0];
  size_t nc = parts[0].num_columns();
  if (nc == 0) return table::empty_with_rows(total_rows(parts));
  std::vector<column> cols;
  for (size_t c = 0; c < nc; ++c) {
    std::vector<column> pieces;
    pieces.reserve(parts.size());
    for (auto& p : parts) {
      TUG_EXPECTS(p.num_columns() == nc, "concatenate of tables with different column counts");
      pieces.push_back(p[c]);
    }
    cols.push_back(concatenate(pieces, mr));
  }
  return table(std::move(cols));
}

column repeat_row(const column& c, int64_t row, int64_t n, memory_resource* mr) {
  return gather_impl(c, n, [row](int64_t) { return row; }, row < 0, mr);
}

column compact(const column& c, memory_resource* mr) {
  return gather_impl(c, c.size(), [](int64_t i) { return i; }, false, mr);
}

}  // namespace tug
