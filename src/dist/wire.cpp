// The wire format of a table (src/dist/wire.hpp): a header, then per column its type, sizes and
// buffers. A sliced column is written compacted, as the spill file does: from the validity byte that
// holds its first row (the bits keep their place within the byte), string offsets rebased to its first
// chars. Both ends run the same build, so the format carries no version.
#include "wire.hpp"

#include <cstring>

#include "tug/core/error.hpp"

namespace tug::dist {

namespace {

constexpr uint32_t magic = 0x54475554;         // "TUGT"
constexpr uint32_t layout_magic = 0x44475554;  // "TUGD"

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

/// The rows of column `c` that a message carries: from row `first` (the start of the validity byte
/// that holds its first row when it has validity), `n` of them, the first `shift` not its own.
struct column_extent {
  int64_t shift, first, n;
  explicit column_extent(const column& c)
      : shift(c.validity_buffer() ? c.offset() % 8 : 0), first(c.offset() - shift), n(c.size() + shift) {}
};

/// What serialize and serialize_layout write of a column before its buffers.
void put_column_header(writer& w, const column& c, const column_extent& e) {
  put_type(w, c.type());
  w.put(c.size());
  w.put(e.shift);
  w.put(c.null_count());
  w.put(static_cast<uint8_t>(c.validity_buffer() != nullptr));
}

/// The column header that put_column_header wrote.
struct column_header {
  data_type type;
  int64_t size = 0, shift = 0, nulls = 0;
  bool validity = false;
  int64_t rows() const { return size + shift; }
};

column_header get_column_header(reader& r) {
  column_header h;
  data_type& ty = h.type;
  ty.id = static_cast<type_id>(r.get<uint8_t>());
  ty.precision = r.get<int8_t>();
  ty.scale = r.get<int8_t>();
  ty.unit = static_cast<time_unit>(r.get<uint8_t>());
  ty.tz.resize(r.get<uint32_t>());
  r.bytes(ty.tz.data(), ty.tz.size());
  h.size = r.get<int64_t>();
  h.shift = r.get<int64_t>();
  h.nulls = r.get<int64_t>();
  h.validity = r.get<uint8_t>() != 0;
  if (h.size < 0 || h.shift < 0 || h.shift > 7) throw internal_error("exchange: a table message with a bad column header");
  return h;
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
    const column_extent e(c);
    const bool validity = c.validity_buffer() != nullptr;
    const int64_t first = e.first, n = e.n;
    put_column_header(w, c, e);
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

namespace {

/// The table of a message that begins with `want` (serialize's or serialize_layout's): each buffer of
/// `bytes` from `take(r, bytes)` (read from the message, or allocated to be filled apart). A layout's
/// string columns carry the value their offsets are rebased by, handed to `based(offsets, n, base)`.
template <typename Take, typename Based>
table read_table(const message& m, uint32_t want, const char* what, Take take, Based based) {
  const bool layout = want == layout_magic;
  reader r{m};
  if (r.get<uint32_t>() != want) throw internal_error(std::string("exchange: a message that is not ") + what);
  const auto ncols = r.get<uint32_t>();
  const auto rows = r.get<int64_t>();
  std::vector<column> cols;
  cols.reserve(ncols);
  for (uint32_t i = 0; i < ncols; ++i) {
    const column_header h = get_column_header(r);
    const int64_t n = h.rows();
    buffer_ptr validity = h.validity ? take(r, static_cast<size_t>(bits::bytes_for(n))) : nullptr;
    if (h.type.id == type_id::string) {
      const auto chars = r.get<int64_t>();
      const int64_t base = layout ? r.get<int64_t>() : 0;
      if (chars < 0) throw internal_error(std::string("exchange: ") + what + " with a negative size");
      buffer_ptr offsets = take(r, static_cast<size_t>(n + 1) * 8);
      if (base != 0) based(offsets->as<int64_t>(), n + 1, base);
      buffer_ptr data = take(r, static_cast<size_t>(chars));
      cols.emplace_back(h.type, h.size, std::move(data), std::move(validity), h.nulls, std::move(offsets), h.shift);
    } else {
      const auto bytes = r.get<int64_t>();
      if (bytes != n * size_of(h.type.id))
        throw internal_error(std::string("exchange: ") + what + " whose sizes disagree");
      buffer_ptr data = take(r, static_cast<size_t>(bytes));
      cols.emplace_back(h.type, h.size, std::move(data), std::move(validity), h.nulls, nullptr, h.shift);
    }
  }
  if (r.at != m.size()) throw internal_error(std::string("exchange: ") + what + " with trailing bytes");
  return ncols == 0 ? table::empty_with_rows(rows) : table(std::move(cols));
}

}  // namespace

table deserialize(const message& m, memory_resource* mr) {
  return read_table(
      m, magic, "a table", [&](reader& r, size_t bytes) { return r.buffer(bytes, mr); },
      [](int64_t*, int64_t, int64_t) { throw internal_error("exchange: a table message with rebased offsets"); });
}

bool is_layout(const message& m) {
  uint32_t v = 0;
  if (m.size() >= 4) std::memcpy(&v, m.data(), 4);
  return v == layout_magic;
}

message serialize_layout(const table& t, std::vector<span>& spans, const read_fn& read) {
  message out;
  writer w{out};
  w.put(layout_magic);
  w.put(static_cast<uint32_t>(t.num_columns()));
  w.put(t.num_rows());
  for (auto& c : t.columns()) {
    const column_extent e(c);
    put_column_header(w, c, e);
    if (c.validity_buffer())
      spans.push_back({c.validity_buffer()->as<uint8_t>() + e.first / 8, static_cast<size_t>(bits::bytes_for(e.n))});
    if (c.type().id == type_id::string) {
      const int64_t* o = c.offsets_buffer()->as<int64_t>() + e.first;
      int64_t ends[2];
      read(&ends[0], o, 8);
      read(&ends[1], o + e.n, 8);
      w.put(ends[1] - ends[0]);  // the chars
      w.put(ends[0]);            // what the offsets are rebased by
      spans.push_back({o, static_cast<size_t>(e.n + 1) * 8});
      spans.push_back({c.data_buffer()->as<char>() + ends[0], static_cast<size_t>(ends[1] - ends[0])});
    } else {
      const int64_t width = size_of(c.type().id);
      w.put(e.n * width);
      spans.push_back({c.data_buffer()->as<char>() + e.first * width, static_cast<size_t>(e.n * width)});
    }
  }
  return out;
}

table deserialize_layout(const message& m, memory_resource* mr, std::vector<landing>& spans,
                         std::vector<rebase>& rebases) {
  return read_table(
      m, layout_magic, "a table layout",
      [&](reader&, size_t bytes) {
        buffer_ptr b = make_buffer(bytes, mr);
        spans.push_back({b->data(), bytes});
        return b;
      },
      [&](int64_t* offsets, int64_t n, int64_t base) { rebases.push_back({offsets, n, base}); });
}

}  // namespace tug::dist
