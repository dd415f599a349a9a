// The Arrow C Data / C Stream interfaces: export of tug frames and import of any producer's arrays.
#include "arrow_c.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tug/core/error.hpp"
#include "tug/core/table.hpp"

namespace tug::arrow_c {
namespace {

// A buffer of an empty column may be null; Arrow consumers want a pointer to at least one offset.
alignas(64) const int64_t k_zeros[8] = {};

// ---------------------------------------------------------------------------------------------------
// export

std::string format_of(const data_type& t) {
  auto unit_char = [](time_unit u) {
    switch (u) {
      case time_unit::s: return 's';
      case time_unit::ms: return 'm';
      case time_unit::us: return 'u';
      case time_unit::ns: return 'n';
    }
    return 'u';
  };
  switch (t.id) {
    case type_id::boolean: return "b";
    case type_id::int8: return "c";
    case type_id::int16: return "s";
    case type_id::int32: return "i";
    case type_id::int64: return "l";
    case type_id::uint8: return "C";
    case type_id::uint16: return "S";
    case type_id::uint32: return "I";
    case type_id::uint64: return "L";
    case type_id::float32: return "f";
    case type_id::float64: return "g";
    case type_id::decimal128: return "d:" + std::to_string(t.precision) + "," + std::to_string(t.scale);
    case type_id::date32: return "tdD";
    case type_id::timestamp: return std::string("ts") + unit_char(t.unit) + ":" + t.tz;
    case type_id::duration: return std::string("tD") + unit_char(t.unit);
    case type_id::string: return "U";
  }
  throw not_implemented_error("Arrow export: type " + to_string(t) + " has no Arrow format");
}

struct schema_private {
  std::string format, name;
  std::vector<ArrowSchema> children;
  std::vector<ArrowSchema*> child_ptrs;
};

void release_schema(ArrowSchema* s) {
  auto* p = static_cast<schema_private*>(s->private_data);
  for (ArrowSchema* c : p->child_ptrs)
    if (c->release) c->release(c);
  delete p;
  s->release = nullptr;
}

void fill_schema(ArrowSchema* out, std::string format, std::string name, size_t n_children) {
  auto* p = new schema_private{std::move(format), std::move(name), std::vector<ArrowSchema>(n_children), {}};
  for (auto& c : p->children) p->child_ptrs.push_back(&c);
  *out = ArrowSchema{p->format.c_str(), p->name.c_str(), nullptr, ARROW_FLAG_NULLABLE,
                     static_cast<int64_t>(n_children), n_children ? p->child_ptrs.data() : nullptr, nullptr,
                     release_schema, p};
}

struct array_private {
  std::vector<buffer_ptr> keep;  // the shared buffers (and the packed booleans) this array points into
  std::vector<const void*> buffers;
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_ptrs;
};

void release_array(ArrowArray* a) {
  auto* p = static_cast<array_private*>(a->private_data);
  for (ArrowArray* c : p->child_ptrs)
    if (c->release) c->release(c);
  delete p;
  a->release = nullptr;
}

void export_column(const std::string& name, const column& c, ArrowArray* out) {
  for (const buffer_ptr* b : {&c.data_buffer(), &c.offsets_buffer(), &c.validity_buffer()})
    if (*b && (*b)->resource() && (*b)->resource()->kind() == memory_kind::device)
      throw invalid_argument_error("Arrow export: column \"" + name + "\" is in device memory");
  auto* p = new array_private;
  const void* validity = c.has_nulls() ? c.validity_buffer()->data() : nullptr;
  if (validity) p->keep.push_back(c.validity_buffer());
  auto data_or_zeros = [&](const buffer_ptr& b) -> const void* {
    if (!b) return k_zeros;
    p->keep.push_back(b);
    return b->data();
  };
  if (c.type().id == type_id::boolean) {
    // Arrow packs booleans to bits: values at bit `offset + i`, so the validity bitmap is shared as it is
    int64_t bits_n = c.offset() + c.size();
    buffer_ptr bits = make_buffer(static_cast<size_t>(std::max<int64_t>(bits::bytes_for(bits_n), 1)));
    auto* dst = bits->as<uint8_t>();
    std::memset(dst, 0, bits->size());
    const bool* v = c.size() ? c.values<bool>() : nullptr;
    for (int64_t i = 0; i < c.size(); ++i)
      if (v[i]) bits::set(dst, c.offset() + i);
    p->keep.push_back(bits);
    p->buffers = {validity, bits->data()};
  } else if (c.type().id == type_id::string) {
    p->buffers = {validity, data_or_zeros(c.offsets_buffer()), data_or_zeros(c.data_buffer())};
  } else {
    p->buffers = {validity, data_or_zeros(c.data_buffer())};
  }
  *out = ArrowArray{c.size(),
                    c.null_count(),
                    c.offset(),
                    static_cast<int64_t>(p->buffers.size()),
                    0,
                    p->buffers.data(),
                    nullptr,
                    nullptr,
                    release_array,
                    p};
}

// ---------------------------------------------------------------------------------------------------
// import

/// Memory of an imported Arrow array seen as one tug buffer: `allocate` hands out the producer's
/// pointer, and the array is released when the last buffer over it goes away.
class foreign_resource final : public memory_resource {
 public:
  foreign_resource(const void* p, std::shared_ptr<void> owner) : _p(const_cast<void*>(p)), _owner(std::move(owner)) {}
  void* allocate(size_t) override { return _p; }
  void deallocate(void*, size_t) noexcept override {}
  memory_kind kind() const override { return memory_kind::host; }
  const char* name() const override { return "arrow"; }

 private:
  void* _p;
  std::shared_ptr<void> _owner;
};

buffer_ptr wrap(const void* p, size_t bytes, const std::shared_ptr<void>& owner) {
  auto mr = std::make_shared<foreign_resource>(p, owner);
  return std::make_shared<buffer>(bytes, mr.get());  // the buffer keeps `mr` (and so the array) alive
}

/// Bits [offset, offset+n) of `src` as a new bitmap starting at bit 0.
buffer_ptr copy_bits(const uint8_t* src, int64_t offset, int64_t n) {
  buffer_ptr b = make_buffer(static_cast<size_t>(std::max<int64_t>(bits::bytes_for(n), 1)));
  auto* dst = b->as<uint8_t>();
  std::memset(dst, 0, b->size());
  for (int64_t i = 0; i < n; ++i)
    if (bits::get(src, offset + i)) bits::set(dst, i);
  return b;
}

struct imported_type {
  data_type type;
  enum class layout { fixed, boolean, string32, string64, string_view, date64 } how = layout::fixed;
};

[[noreturn]] void unsupported(const std::string& name, const char* format) {
  throw not_implemented_error("Arrow import: column \"" + name + "\" has Arrow format '" + format +
                              "', which tug cannot represent (supported: booleans, integers, floats, "
                              "decimal128, dates, timestamps, durations, strings, dictionaries of these)");
}

imported_type parse_format(const std::string& name, const char* f) {
  using L = imported_type::layout;
  std::string s(f);
  auto unit = [&](char c) {
    switch (c) {
      case 's': return time_unit::s;
      case 'm': return time_unit::ms;
      case 'u': return time_unit::us;
      case 'n': return time_unit::ns;
    }
    unsupported(name, f);
  };
  if (s == "b") return {type_id::boolean, L::boolean};
  if (s == "c") return {type_id::int8};
  if (s == "s") return {type_id::int16};
  if (s == "i") return {type_id::int32};
  if (s == "l") return {type_id::int64};
  if (s == "C") return {type_id::uint8};
  if (s == "S") return {type_id::uint16};
  if (s == "I") return {type_id::uint32};
  if (s == "L") return {type_id::uint64};
  if (s == "f") return {type_id::float32};
  if (s == "g") return {type_id::float64};
  if (s == "u") return {type_id::string, L::string32};
  if (s == "U") return {type_id::string, L::string64};
  if (s == "vu") return {type_id::string, L::string_view};
  if (s == "tdD") return {type_id::date32};
  if (s == "tdm") return {type_id::date32, L::date64};
  if (s.size() >= 4 && s.compare(0, 2, "ts") == 0 && s[3] == ':') return {timestamp(unit(s[2]), s.substr(4))};
  if (s.size() == 3 && s.compare(0, 2, "tD") == 0) return {duration(unit(s[2]))};
  if (s.compare(0, 2, "d:") == 0) {
    int precision = 0, scale = 0, width = 128;
    int got = std::sscanf(f, "d:%d,%d,%d", &precision, &scale, &width);
    if (got < 2 || width != 128 || precision < 1 || precision > 38) unsupported(name, f);
    return {decimal(precision, scale)};
  }
  unsupported(name, f);
}

bool is_index_format(const char* f) { return std::strlen(f) == 1 && std::strchr("csilCSIL", f[0]); }

int64_t index_at(const char* f, const void* data, int64_t i) {
  switch (f[0]) {
    case 'c': return static_cast<const int8_t*>(data)[i];
    case 's': return static_cast<const int16_t*>(data)[i];
    case 'i': return static_cast<const int32_t*>(data)[i];
    case 'l': return static_cast<const int64_t*>(data)[i];
    case 'C': return static_cast<const uint8_t*>(data)[i];
    case 'S': return static_cast<const uint16_t*>(data)[i];
    case 'I': return static_cast<const uint32_t*>(data)[i];
    default: return static_cast<int64_t>(static_cast<const uint64_t*>(data)[i]);
  }
}

column import_column(const std::string& name, const ArrowSchema* s, const ArrowArray* a,
                     const std::shared_ptr<void>& owner) {
  using L = imported_type::layout;
  const int64_t n = a->length, off = a->offset;
  const auto* validity = static_cast<const uint8_t*>(a->n_buffers > 0 ? a->buffers[0] : nullptr);
  if (a->null_count == 0) validity = nullptr;
  if (s->dictionary) {
    // dictionary-encoded (Polars' categoricals): decoded by a gather of the dictionary's values
    if (!is_index_format(s->format) || !a->dictionary) unsupported(name, s->format);
    column values = import_column(name, s->dictionary, a->dictionary, owner);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      bool valid = !validity || bits::get(validity, off + i);
      int64_t k = valid ? index_at(s->format, a->buffers[1], off + i) : -1;
      if (valid && (k < 0 || k >= values.size()))
        throw invalid_argument_error("Arrow import: column \"" + name + "\" has dictionary index " +
                                     std::to_string(k) + " outside its " + std::to_string(values.size()) +
                                     " values");
      idx[static_cast<size_t>(i)] = k;
    }
    return gather(values, idx);
  }
  imported_type it = parse_format(name, s->format);
  const data_type& t = it.type;
  auto validity_at_zero = [&]() -> buffer_ptr {
    if (!validity) return {};
    if (off == 0) return wrap(validity, static_cast<size_t>(bits::bytes_for(n)), owner);
    return copy_bits(validity, off, n);
  };
  if (n == 0) return make_empty_column(t);
  switch (it.how) {
    case L::fixed: {
      int w = size_of(t.id);
      const void* data = a->buffers[1];
      buffer_ptr values;
      if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(w) == 0) {
        values = wrap(data, static_cast<size_t>((off + n) * w), owner);
      } else {  // misaligned for its type: tug's kernels load values as their type
        values = make_buffer(static_cast<size_t>((off + n) * w));
        std::memcpy(values->data(), data, values->size());
      }
      buffer_ptr valid = validity ? wrap(validity, static_cast<size_t>(bits::bytes_for(off + n)), owner) : nullptr;
      return column(t, n, values, valid, validity ? a->null_count : 0, {}, off);
    }
    case L::boolean: {
      fixed_width_builder<bool> b(t, n);
      const auto* bitsp = static_cast<const uint8_t*>(a->buffers[1]);
      for (int64_t i = 0; i < n; ++i) b.set(i, bits::get(bitsp, off + i));
      column c = b.finish();
      return column(t, n, c.data_buffer(), validity_at_zero(), validity ? a->null_count : 0);
    }
    case L::string64: {
      if (reinterpret_cast<uintptr_t>(a->buffers[1]) % 8 != 0) unsupported(name, "U (misaligned offsets)");
      const auto* o = static_cast<const int64_t*>(a->buffers[1]);
      buffer_ptr offsets = wrap(o, static_cast<size_t>((off + n + 1) * 8), owner);
      buffer_ptr chars = wrap(a->buffers[2] ? a->buffers[2] : k_zeros, static_cast<size_t>(o[off + n]), owner);
      buffer_ptr valid = validity ? wrap(validity, static_cast<size_t>(bits::bytes_for(off + n)), owner) : nullptr;
      return column(t, n, chars, valid, validity ? a->null_count : 0, offsets, off);
    }
    case L::string32: {
      // int32 offsets widen to tug's int64 (a copy of the offsets only); the chars are shared
      const auto* o = static_cast<const int32_t*>(a->buffers[1]);
      buffer_ptr offsets = make_buffer(static_cast<size_t>((n + 1) * 8));
      auto* dst = offsets->as<int64_t>();
      for (int64_t i = 0; i <= n; ++i) dst[i] = o[off + i];
      buffer_ptr chars = wrap(a->buffers[2] ? a->buffers[2] : k_zeros, static_cast<size_t>(o[off + n]), owner);
      return column(t, n, chars, validity_at_zero(), validity ? a->null_count : 0, offsets);
    }
    case L::string_view: {
      // views (length, 4-byte prefix, then inline bytes or buffer index and offset) are copied
      const auto* views = static_cast<const uint8_t*>(a->buffers[1]);
      string_builder b(n);
      for (int64_t i = 0; i < n; ++i) {
        if (validity && !bits::get(validity, off + i)) {
          b.append_null();
          continue;
        }
        const uint8_t* v = views + 16 * (off + i);
        int32_t len, buf, pos;
        std::memcpy(&len, v, 4);
        if (len <= 12) {
          b.append(std::string_view(reinterpret_cast<const char*>(v + 4), static_cast<size_t>(len)));
        } else {
          std::memcpy(&buf, v + 8, 4);
          std::memcpy(&pos, v + 12, 4);
          if (buf < 0 || buf + 3 > a->n_buffers)
            throw invalid_argument_error("Arrow import: column \"" + name + "\" has a string view into buffer " +
                                         std::to_string(buf) + " of " + std::to_string(a->n_buffers - 3));
          const char* data = static_cast<const char*>(a->buffers[2 + buf]);
          b.append(std::string_view(data + pos, static_cast<size_t>(len)));
        }
      }
      return b.finish(t);
    }
    case L::date64: {
      fixed_width_builder<int32_t> b(t, n);
      const auto* ms = static_cast<const int64_t*>(a->buffers[1]);
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = ms[off + i];
        b.set(i, static_cast<int32_t>(v >= 0 ? v / 86400000 : -((-v + 86399999) / 86400000)));
      }
      column c = b.finish();
      return column(t, n, c.data_buffer(), validity_at_zero(), validity ? a->null_count : 0);
    }
  }
  unsupported(name, s->format);
}

void check_struct(const ArrowSchema* sch) {
  if (!sch || std::strcmp(sch->format, "+s") != 0)
    throw invalid_argument_error(std::string("Arrow import: expected a struct array (format '+s') of columns, got '") +
                                 (sch ? sch->format : "null") + "'");
}

struct stream_private {
  data_frame df;
  size_t next = 0;
  std::string error;
};

}  // namespace

void export_schema(const schema& s, ArrowSchema* out) {
  fill_schema(out, "+s", "", s.size());
  auto* p = static_cast<schema_private*>(out->private_data);
  try {
    for (size_t i = 0; i < s.size(); ++i) fill_schema(&p->children[i], format_of(s[i].type), s[i].name, 0);
  } catch (...) {
    out->release(out);
    throw;
  }
  // a struct's own validity: none (flags 0)
  out->flags = 0;
}

void export_table(const schema& s, const table& t, ArrowArray* out) {
  auto* p = new array_private;
  p->children.resize(t.num_columns());
  for (auto& c : p->children) {
    c.release = nullptr;
    p->child_ptrs.push_back(&c);
  }
  p->buffers = {nullptr};
  *out = ArrowArray{t.num_rows(),
                    0,
                    0,
                    1,
                    static_cast<int64_t>(t.num_columns()),
                    p->buffers.data(),
                    t.num_columns() ? p->child_ptrs.data() : nullptr,
                    nullptr,
                    release_array,
                    p};
  try {
    for (size_t i = 0; i < t.num_columns(); ++i) export_column(s[i].name, t[i], &p->children[i]);
  } catch (...) {
    out->release(out);
    throw;
  }
}

void export_stream(const data_frame& df, ArrowArrayStream* out) {
  auto* p = new stream_private{df, 0, {}};
  out->private_data = p;
  out->get_schema = [](ArrowArrayStream* st, ArrowSchema* s) -> int {
    auto* p = static_cast<stream_private*>(st->private_data);
    try {
      export_schema(p->df.schema(), s);
      return 0;
    } catch (const std::exception& e) {
      p->error = e.what();
      return EINVAL;
    }
  };
  out->get_next = [](ArrowArrayStream* st, ArrowArray* a) -> int {
    auto* p = static_cast<stream_private*>(st->private_data);
    try {
      if (p->next >= p->df.partitions().size()) {
        a->release = nullptr;  // end of stream
        return 0;
      }
      export_table(p->df.schema(), p->df.partitions()[p->next++], a);
      return 0;
    } catch (const std::exception& e) {
      p->error = e.what();
      return EINVAL;
    }
  };
  out->get_last_error = [](ArrowArrayStream* st) -> const char* {
    auto* p = static_cast<stream_private*>(st->private_data);
    return p->error.empty() ? nullptr : p->error.c_str();
  };
  out->release = [](ArrowArrayStream* st) {
    delete static_cast<stream_private*>(st->private_data);
    st->release = nullptr;
  };
}

schema import_schema(const ArrowSchema* sch) {
  check_struct(sch);
  schema s;
  for (int64_t i = 0; i < sch->n_children; ++i) {
    const ArrowSchema* c = sch->children[i];
    std::string name = c->name ? c->name : "";
    data_type t;
    if (c->dictionary) {
      if (!is_index_format(c->format)) unsupported(name, c->format);
      if (c->dictionary->dictionary) unsupported(name, c->dictionary->format);
      t = parse_format(name, c->dictionary->format).type;
    } else {
      t = parse_format(name, c->format).type;
    }
    s.push_back({name, t});
  }
  return s;
}

table import_table(const ArrowSchema* sch, ArrowArray* array) {
  // own the array from here on: released when the last buffer that shares its memory goes away
  std::shared_ptr<ArrowArray> holder(new ArrowArray(*array), [](ArrowArray* a) {
    if (a->release) a->release(a);
    delete a;
  });
  array->release = nullptr;
  check_struct(sch);
  const ArrowArray* a = holder.get();
  if (a->n_children != sch->n_children)
    throw invalid_argument_error("Arrow import: the array has " + std::to_string(a->n_children) +
                                 " columns, its schema " + std::to_string(sch->n_children));
  if (a->null_count != 0 && a->n_buffers > 0 && a->buffers[0])
    throw not_implemented_error("Arrow import: a struct array with null rows (tug's frames have none)");
  std::shared_ptr<void> owner = holder;
  std::vector<column> cols;
  for (int64_t i = 0; i < a->n_children; ++i) {
    const ArrowSchema* cs = sch->children[i];
    const ArrowArray* ca = a->children[i];
    std::string name = cs->name ? cs->name : "";
    if (ca->length < a->offset + a->length)
      throw invalid_argument_error("Arrow import: column \"" + name + "\" has " + std::to_string(ca->length) +
                                   " rows, the struct " + std::to_string(a->offset + a->length));
    column c = import_column(name, cs, ca, owner);
    if (a->offset != 0 || c.size() != a->length) c = c.slice(a->offset, a->length);
    cols.push_back(std::move(c));
  }
  if (cols.empty()) return table::empty_with_rows(a->length);
  return table(std::move(cols));
}

data_frame import_array(const ArrowSchema* sch, ArrowArray* array) {
  schema s = import_schema(sch);
  table t = import_table(sch, array);
  std::vector<table> parts;
  if (t.num_rows() > 0) parts.push_back(std::move(t));
  return data_frame(std::move(s), std::move(parts));
}

data_frame import_stream(ArrowArrayStream* stream) {
  std::unique_ptr<ArrowArrayStream, void (*)(ArrowArrayStream*)> st(new ArrowArrayStream(*stream),
                                                                    [](ArrowArrayStream* s) {
                                                                      if (s->release) s->release(s);
                                                                      delete s;
                                                                    });
  stream->release = nullptr;
  auto failed = [&](int rc, const char* what) {
    const char* msg = st->get_last_error ? st->get_last_error(st.get()) : nullptr;
    return io_error(std::string("Arrow stream: ") + what + " failed (" + std::strerror(rc) + ")" +
                    (msg ? std::string(": ") + msg : std::string()));
  };
  ArrowSchema sch{};
  if (int rc = st->get_schema(st.get(), &sch)) throw failed(rc, "get_schema");
  std::unique_ptr<ArrowSchema, void (*)(ArrowSchema*)> sch_guard(&sch, [](ArrowSchema* s) {
    if (s->release) s->release(s);
  });
  schema s = import_schema(&sch);
  std::vector<table> parts;
  while (true) {
    ArrowArray a{};
    if (int rc = st->get_next(st.get(), &a)) throw failed(rc, "get_next");
    if (!a.release) break;
    table t = import_table(&sch, &a);
    if (t.num_rows() > 0) parts.push_back(std::move(t));
  }
  return data_frame(std::move(s), std::move(parts));
}

}  // namespace tug::arrow_c
