// The wire format of a table (src/dist/wire.hpp): a header, then per column its type, sizes and
// buffers. A sliced column is written compacted, as the spill file does: from the validity byte that
// holds its first row (the bits keep their place within the byte), string offsets rebased to its first
// chars. Both ends run the same build, so the format carries no version.
#include "wire.hpp"

#include <cstring>

#include "tug/core/error.hpp"

namespace tug::dist {

namespace {

constexpr uint32_t magic = 0x54475554;  // "TUGT"

struct writer {
  message& out;
  template <typename T>
  void put(const T& v) {
    bytes(&v, sizeof(T));
  }
  void bytes(const void* p, size_t n) {
    const size_t at = out.size();
    out.resize(at + n);
    if (n) std::memcpy(out.data() + at, p, n);
  }
};

struct reader {
  const message& in;
  size_t at = 0;
  template <typename T>
  T get() {
    T v;
    bytes(&v, sizeof(T));
    return v;
  }
  void bytes(void* p, size_t n) {
    if (n > in.size() - at) throw internal_error("exchange: a truncated table message");
    if (n) std::memcpy(p, in.data() + at, n);
    at += n;
  }
  buffer_ptr buffer(size_t n, memory_resource* mr) {
    buffer_ptr b = make_buffer(n, mr);
    bytes(b->data(), n);
    return b;
  }
};

}  // namespace

namespace {

void check_host(const column& c) {
  if (c.data_buffer() && c.data_buffer()->resource() && c.data_buffer()->resource()->kind() == memory_kind::device)
    throw internal_error("exchange: serialize takes host tables");
}

void put_type(writer& w, const data_type& ty) {
  w.put(static_cast<uint8_t>(ty.id));
  w.put(ty.precision);
  w.put(ty.scale);
  w.put(static_cast<uint8_t>(ty.unit));
  w.put(static_cast<uint32_t>(ty.tz.size()));
  w.bytes(ty.tz.data(), ty.tz.size());
}

/// Room for `n` more bytes at the end of `out`, uninitialized where the vector allows: its address.
uint8_t* grow(message& out, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  return out.data() + at;
}

/// Values `rows` (physical rows: the column's offset added) of a fixed-width buffer, `W` bytes each.
template <size_t W>
void gather_values(const uint8_t* src, const int64_t* rows, int64_t n, int64_t offset, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + static_cast<size_t>(i) * W, src + static_cast<size_t>(rows[i] + offset) * W, W);
}

}  // namespace

message serialize(const table& t) {
  message out;
  int64_t reserve = 64;
  for (auto& c : t.columns()) reserve += c.memory_usage() + 64;
  out.reserve(static_cast<size_t>(reserve));
  writer w{out};
  w.put(magic);
  w.put(static_cast<uint32_t>(t.num_columns()));
  w.put(t.num_rows());
  for (auto& c : t.columns()) {
    check_host(c);
    const data_type& ty = c.type();
    put_type(w, ty);
    const bool validity = c.validity_buffer() != nullptr;
    const int64_t shift = validity ? c.offset() % 8 : 0;
    const int64_t first = c.offset() - shift, n = c.size() + shift;
    w.put(c.size());
    w.put(shift);
    w.put(c.null_count());
    w.put(static_cast<uint8_t>(validity));
    if (validity) w.bytes(c.validity_buffer()->as<uint8_t>() + first / 8, static_cast<size_t>(bits::bytes_for(n)));
    if (ty.id == type_id::string) {
      const int64_t* o = c.offsets_buffer()->as<int64_t>() + first;
      const int64_t chars = o[n] - o[0];
      w.put(chars);
      const size_t at = out.size();
      w.bytes(o, static_cast<size_t>(n + 1) * 8);
      int64_t* r = reinterpret_cast<int64_t*>(out.data() + at);  // rebased in place (unaligned-safe below)
      for (int64_t k = 0; k <= n; ++k) {
        int64_t v;
        std::memcpy(&v, r + k, 8);
        v -= o[0];
        std::memcpy(r + k, &v, 8);
      }
      w.bytes(c.data_buffer()->as<char>() + o[0], static_cast<size_t>(chars));
    } else {
      const int64_t width = size_of(ty.id);
      w.put(n * width);
      w.bytes(c.data_buffer()->as<char>() + first * width, static_cast<size_t>(n * width));
    }
  }
  return out;
}

message serialize_rows(const table& t, const int64_t* rows, int64_t n) {
  // the sizes first, so that the message is allocated once
  int64_t size = 64;
  for (auto& c : t.columns()) {
    size += 64 + static_cast<int64_t>(c.type().tz.size()) + bits::bytes_for(n);
    if (c.type().id == type_id::string) {
      const int64_t* o = c.offsets_buffer()->as<int64_t>() + c.offset();
      size += (n + 1) * 8;
      for (int64_t i = 0; i < n; ++i) size += o[rows[i] + 1] - o[rows[i]];
    } else {
      size += n * size_of(c.type().id);
    }
  }
  message out;
  out.reserve(static_cast<size_t>(size));
  writer w{out};
  w.put(magic);
  w.put(static_cast<uint32_t>(t.num_columns()));
  w.put(n);
  for (auto& c : t.columns()) {
    check_host(c);
    const data_type& ty = c.type();
    const int64_t off = c.offset();
    put_type(w, ty);
    const bool validity = c.validity_buffer() != nullptr;
    w.put(n);
    w.put(int64_t{0});  // no shift: row 0 is bit 0
    const size_t nulls_at = out.size();
    w.put(int64_t{0});  // the null count, set below
    w.put(static_cast<uint8_t>(validity));
    if (validity) {
      const uint8_t* src = c.validity_buffer()->as<uint8_t>();
      uint8_t* dst = grow(out, static_cast<size_t>(bits::bytes_for(n)));
      std::memset(dst, 0, static_cast<size_t>(bits::bytes_for(n)));
      int64_t nulls = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (bits::get(src, rows[i] + off)) bits::set(dst, i);
        else ++nulls;
      }
      std::memcpy(out.data() + nulls_at, &nulls, 8);
    }
    if (ty.id == type_id::string) {
      const int64_t* o = c.offsets_buffer()->as<int64_t>() + off;
      const char* chars = c.data_buffer()->as<char>();
      const size_t chars_at = out.size();
      w.put(int64_t{0});  // the chars, set below
      uint8_t* offsets = grow(out, static_cast<size_t>(n + 1) * 8);
      int64_t total = 0;
      std::memcpy(offsets, &total, 8);
      for (int64_t i = 0; i < n; ++i) {
        total += o[rows[i] + 1] - o[rows[i]];
        std::memcpy(offsets + static_cast<size_t>(i + 1) * 8, &total, 8);
      }
      std::memcpy(out.data() + chars_at, &total, 8);
      uint8_t* dst = grow(out, static_cast<size_t>(total));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t len = o[rows[i] + 1] - o[rows[i]];
        std::memcpy(dst, chars + o[rows[i]], static_cast<size_t>(len));
        dst += len;
      }
    } else {
      const int64_t width = size_of(ty.id);
      w.put(n * width);
      uint8_t* dst = grow(out, static_cast<size_t>(n * width));
      const uint8_t* src = c.data_buffer()->as<uint8_t>();
      switch (width) {
        case 1: gather_values<1>(src, rows, n, off, dst); break;
        case 2: gather_values<2>(src, rows, n, off, dst); break;
        case 4: gather_values<4>(src, rows, n, off, dst); break;
        case 8: gather_values<8>(src, rows, n, off, dst); break;
        case 16: gather_values<16>(src, rows, n, off, dst); break;
        default:
          for (int64_t i = 0; i < n; ++i)
            std::memcpy(dst + i * width, src + (rows[i] + off) * width, static_cast<size_t>(width));
      }
    }
  }
  return out;
}

table deserialize(const message& m, memory_resource* mr) {
  reader r{m};
  if (r.get<uint32_t>() != magic) throw internal_error("exchange: a message that is not a table");
  const auto ncols = r.get<uint32_t>();
  const auto rows = r.get<int64_t>();
  std::vector<column> cols;
  cols.reserve(ncols);
  for (uint32_t i = 0; i < ncols; ++i) {
    data_type ty;
    ty.id = static_cast<type_id>(r.get<uint8_t>());
    ty.precision = r.get<int8_t>();
    ty.scale = r.get<int8_t>();
    ty.unit = static_cast<time_unit>(r.get<uint8_t>());
    ty.tz.resize(r.get<uint32_t>());
    r.bytes(ty.tz.data(), ty.tz.size());
    const auto size = r.get<int64_t>();
    const auto shift = r.get<int64_t>();
    const auto nulls = r.get<int64_t>();
    const bool has_validity = r.get<uint8_t>() != 0;
    const int64_t n = size + shift;
    buffer_ptr validity = has_validity ? r.buffer(static_cast<size_t>(bits::bytes_for(n)), mr) : nullptr;
    buffer_ptr offsets;
    if (ty.id == type_id::string) {
      const auto chars = r.get<int64_t>();
      offsets = r.buffer(static_cast<size_t>(n + 1) * 8, mr);
      buffer_ptr data = r.buffer(static_cast<size_t>(chars), mr);
      cols.emplace_back(ty, size, std::move(data), std::move(validity), nulls, std::move(offsets), shift);
    } else {
      const auto bytes = r.get<int64_t>();
      buffer_ptr data = r.buffer(static_cast<size_t>(bytes), mr);
      cols.emplace_back(ty, size, std::move(data), std::move(validity), nulls, nullptr, shift);
    }
  }
  if (r.at != m.size()) throw internal_error("exchange: a table message with trailing bytes");
  return ncols == 0 ? table::empty_with_rows(rows) : table(std::move(cols));
}

}  // namespace tug::dist
