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
    if (c.data_buffer() && c.data_buffer()->resource() &&
        c.data_buffer()->resource()->kind() == memory_kind::device)
      throw internal_error("exchange: serialize takes host tables");
    const data_type& ty = c.type();
    w.put(static_cast<uint8_t>(ty.id));
    w.put(ty.precision);
    w.put(ty.scale);
    w.put(static_cast<uint8_t>(ty.unit));
    w.put(static_cast<uint32_t>(ty.tz.size()));
    w.bytes(ty.tz.data(), ty.tz.size());
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
