/// Thrift compact protocol decoding of the Parquet footer and page headers.
#include <cstring>
#include <type_traits>

#include "tug/core/error.hpp"
#include "tug/io/parquet/metadata.hpp"

namespace tug::io::parquet {
namespace {

enum ctype : uint8_t {
  t_stop = 0,
  t_true = 1,
  t_false = 2,
  t_byte = 3,
  t_i16 = 4,
  t_i32 = 5,
  t_i64 = 6,
  t_double = 7,
  t_binary = 8,
  t_list = 9,
  t_set = 10,
  t_map = 11,
  t_struct = 12
};

constexpr int max_depth = 64;

/// Reads compact-protocol values from a bounded buffer; every read is checked.
class decoder {
 public:
  decoder(const uint8_t* p, size_t n) : _begin(p), _p(p), _end(p + n) {}
  size_t consumed() const { return static_cast<size_t>(_p - _begin); }

  [[noreturn]] void fail(const char* what) const {
    throw io_error(std::string("corrupt Thrift metadata: ") + what + " at byte " + std::to_string(consumed()));
  }
  uint8_t byte() {
    if (_p >= _end) fail("unexpected end");
    return *_p++;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      uint8_t b = byte();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint too long");
  }
  int64_t zigzag() {
    uint64_t v = varint();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  int32_t i32() {
    int64_t v = zigzag();
    if (v < INT32_MIN || v > INT32_MAX) fail("i32 out of range");
    return static_cast<int32_t>(v);
  }
  std::string binary() {
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(_end - _p)) fail("string past the end");
    std::string s(reinterpret_cast<const char*>(_p), n);
    _p += n;
    return s;
  }
  /// A value of compact type `t` read as a boolean (the field header holds it).
  bool boolean(uint8_t t) {
    if (t == t_true) return true;
    if (t == t_false) return false;
    fail("expected a boolean");
  }

  /// Reads a struct: calls `on(field_id, type)` for each field; it returns false to skip the field.
  template <typename F>
  void read_struct(F&& on) {
    if (++_depth > max_depth) fail("nesting too deep");
    int16_t last = 0;
    while (true) {
      uint8_t h = byte();
      uint8_t t = h & 0x0f;
      if (t == t_stop) break;
      int16_t id;
      if (h >> 4)
        id = static_cast<int16_t>(last + (h >> 4));
      else
        id = static_cast<int16_t>(zigzag());
      last = id;
      if (!on(id, t)) skip(t);
    }
    --_depth;
  }
  /// Reads a list header; returns the element count and sets `elem` to the element type.
  size_t list_header(uint8_t& elem) {
    uint8_t h = byte();
    elem = h & 0x0f;
    uint64_t n = h >> 4;
    if (n == 15) n = varint();
    if (n > static_cast<uint64_t>(_end - _p)) fail("list longer than the data");  // every element takes >= 1 byte
    return static_cast<size_t>(n);
  }
  template <typename F>
  void read_list(uint8_t t, uint8_t want, F&& each) {
    if (t != t_list && t != t_set) fail("expected a list");
    uint8_t elem;
    size_t n = list_header(elem);
    if (elem != want) fail("unexpected list element type");
    for (size_t i = 0; i < n; ++i)
      each();
  }

  void skip(uint8_t t) {
    if (++_depth > max_depth) fail("nesting too deep");
    switch (t) {
      case t_true:
      case t_false:
        break;
      case t_byte:
        byte();
        break;
      case t_i16:
      case t_i32:
      case t_i64:
        varint();
        break;
      case t_double:
        if (_end - _p < 8) fail("unexpected end");
        _p += 8;
        break;
      case t_binary: {
        uint64_t n = varint();
        if (n > static_cast<uint64_t>(_end - _p)) fail("string past the end");
        _p += n;
        break;
      }
      case t_list:
      case t_set: {
        uint8_t elem;
        size_t n = list_header(elem);
        for (size_t i = 0; i < n; ++i) {
          if (elem == t_true || elem == t_false)
            byte();  // booleans in lists take one byte each
          else
            skip(elem);
        }
        break;
      }
      case t_map: {
        uint64_t n = varint();
        if (n > static_cast<uint64_t>(_end - _p)) fail("map longer than the data");
        if (n) {
          uint8_t kv = byte();
          for (uint64_t i = 0; i < n; ++i) {
            skip(kv >> 4);
            skip(kv & 0x0f);
          }
        }
        break;
      }
      case t_struct:
        read_struct([](int16_t, uint8_t) { return false; });
        break;
      default:
        fail("unknown field type");
    }
    --_depth;
  }

 private:
  const uint8_t* _begin;
  const uint8_t* _p;
  const uint8_t* _end;
  int _depth = 0;
};

void expect(decoder& d, uint8_t t, uint8_t want) {
  if (t != want) d.fail("unexpected field type");
}

int32_t read_i32(decoder& d, uint8_t t) {
  if (t != t_i32 && t != t_i16 && t != t_byte) d.fail("expected an integer");
  if (t == t_byte) return static_cast<int8_t>(d.byte());
  return d.i32();
}
int64_t read_i64(decoder& d, uint8_t t) {
  if (t != t_i64 && t != t_i32 && t != t_i16) d.fail("expected an integer");
  return d.zigzag();
}

/// A field id and where its value goes.
template <typename T>
struct slot {
  int16_t id;
  T* target;
};
template <typename T>
slot(int16_t, T*) -> slot<T>;

/// Reads field `t` into the slot whose id is `id`; false when none has that id.
template <typename... T>
bool assign(decoder& d, int16_t id, uint8_t t, slot<T>... slots) {
  auto one = [&]<typename U>(slot<U> s) {
    if (s.id != id) return false;
    if constexpr (std::is_same_v<U, bool>)
      *s.target = d.boolean(t);
    else if constexpr (std::is_same_v<U, int64_t>)
      *s.target = read_i64(d, t);
    else if constexpr (std::is_same_v<U, std::string>) {
      expect(d, t, t_binary);
      *s.target = d.binary();
    } else if constexpr (std::is_same_v<U, std::optional<std::string>>) {
      expect(d, t, t_binary);
      *s.target = d.binary();
    } else if constexpr (std::is_same_v<U, std::optional<int64_t>>)
      *s.target = read_i64(d, t);
    else if constexpr (std::is_enum_v<U>)
      *s.target = static_cast<U>(read_i32(d, t));
    else if constexpr (requires { typename U::value_type; })  // optional enum
      *s.target = static_cast<typename U::value_type>(read_i32(d, t));
    else
      *s.target = static_cast<U>(read_i32(d, t));
    return true;
  };
  return (one(slots) || ...);
}

/// Reads a struct whose fields all go to slots; other fields are skipped.
template <typename... T>
void read_fields(decoder& d, uint8_t t, slot<T>... slots) {
  expect(d, t, t_struct);
  d.read_struct([&](int16_t id, uint8_t ft) { return assign(d, id, ft, slots...); });
}

logical_unit read_time_unit(decoder& d, uint8_t t) {
  expect(d, t, t_struct);
  logical_unit u = logical_unit::millis;
  d.read_struct([&](int16_t id, uint8_t ft) {
    if (ft == t_struct && id >= 1 && id <= 3) u = static_cast<logical_unit>(id - 1);
    return false;  // the members are empty structs: skip them
  });
  return u;
}

logical_type read_logical_type(decoder& d, uint8_t t) {
  expect(d, t, t_struct);
  logical_type lt;
  d.read_struct([&](int16_t id, uint8_t ft) {
    if (ft != t_struct) return false;
    // Union member ids 1..15 map onto logical_kind in order, except the reserved 9.
    static constexpr logical_kind kinds[] = {
        logical_kind::none,      logical_kind::string,  logical_kind::map,     logical_kind::list,
        logical_kind::enum_,     logical_kind::decimal, logical_kind::date,    logical_kind::time,
        logical_kind::timestamp, logical_kind::none,    logical_kind::integer, logical_kind::unknown,
        logical_kind::json,      logical_kind::bson,    logical_kind::uuid,    logical_kind::float16};
    if (id < 1 || id > 15) return false;
    lt.kind = kinds[id];
    switch (lt.kind) {
      case logical_kind::decimal:
        read_fields(d, ft, slot{1, &lt.scale}, slot{2, &lt.precision});
        return true;
      case logical_kind::time:
      case logical_kind::timestamp:
        d.read_struct([&](int16_t fid, uint8_t t2) {
          if (fid == 2) {
            lt.unit = read_time_unit(d, t2);
            return true;
          }
          return assign(d, fid, t2, slot{1, &lt.adjusted_to_utc});
        });
        return true;
      case logical_kind::integer:
        read_fields(d, ft, slot{1, &lt.bit_width}, slot{2, &lt.is_signed});
        return true;
      default:
        return false;  // empty structs
    }
  });
  return lt;
}

schema_element read_schema_element(decoder& d) {
  schema_element e;
  d.read_struct([&](int16_t id, uint8_t t) {
    if (id == 10) {
      e.logical = read_logical_type(d, t);
      return true;
    }
    return assign(d, id, t, slot{1, &e.type}, slot{2, &e.type_length}, slot{3, &e.repetition_type}, slot{4, &e.name},
                  slot{5, &e.num_children}, slot{6, &e.converted}, slot{7, &e.scale}, slot{8, &e.precision});
  });
  return e;
}

column_metadata read_column_metadata(decoder& d, uint8_t t) {
  expect(d, t, t_struct);
  column_metadata m;
  d.read_struct([&](int16_t id, uint8_t ft) {
    switch (id) {
      case 2:
        d.read_list(ft, t_i32, [&] { m.encodings.push_back(static_cast<encoding>(d.i32())); });
        return true;
      case 3:
        d.read_list(ft, t_binary, [&] { m.path_in_schema.push_back(d.binary()); });
        return true;
      case 12:
        m.stats.emplace();
        read_fields(d, ft, slot{1, &m.stats->max}, slot{2, &m.stats->min}, slot{3, &m.stats->null_count},
                    slot{4, &m.stats->distinct_count}, slot{5, &m.stats->max_value}, slot{6, &m.stats->min_value});
        return true;
      default:
        return assign(d, id, ft, slot{1, &m.type}, slot{4, &m.compression}, slot{5, &m.num_values},
                      slot{6, &m.total_uncompressed_size}, slot{7, &m.total_compressed_size},
                      slot{9, &m.data_page_offset}, slot{11, &m.dictionary_page_offset});
    }
  });
  return m;
}

row_group read_row_group(decoder& d) {
  row_group rg;
  d.read_struct([&](int16_t id, uint8_t t) {
    if (id == 1) {
      d.read_list(t, t_struct, [&] {
        column_chunk c;
        d.read_struct([&](int16_t fid, uint8_t ft) {
          if (fid == 3) {
            c.meta = read_column_metadata(d, ft);
            return true;
          }
          return assign(d, fid, ft, slot{1, &c.file_path}, slot{2, &c.file_offset}, slot{4, &c.offset_index_offset},
                        slot{5, &c.offset_index_length}, slot{6, &c.column_index_offset},
                        slot{7, &c.column_index_length});
        });
        rg.columns.push_back(std::move(c));
      });
      return true;
    }
    return assign(d, id, t, slot{2, &rg.total_byte_size}, slot{3, &rg.num_rows});
  });
  return rg;
}

}  // namespace

file_metadata decode_file_metadata(const uint8_t* data, size_t size) {
  decoder d(data, size);
  file_metadata m;
  bool has_schema = false;
  std::optional<int64_t> rows;
  d.read_struct([&](int16_t id, uint8_t t) {
    switch (id) {
      case 2:
        d.read_list(t, t_struct, [&] { m.schema.push_back(read_schema_element(d)); });
        has_schema = true;
        return true;
      case 4:
        d.read_list(t, t_struct, [&] { m.row_groups.push_back(read_row_group(d)); });
        return true;
      case 5:
        d.read_list(t, t_struct, [&] {
          key_value kv;
          d.read_struct([&](int16_t fid, uint8_t ft) {
            return assign(d, fid, ft, slot{1, &kv.key}, slot{2, &kv.value});
          });
          m.key_value_metadata.push_back(std::move(kv));
        });
        return true;
      default:
        return assign(d, id, t, slot{1, &m.version}, slot{3, &rows}, slot{6, &m.created_by});
    }
  });
  if (!has_schema || m.schema.empty() || !rows) d.fail("FileMetaData lacks its schema or row count");
  m.num_rows = *rows;
  return m;
}

std::vector<page_location> decode_offset_index(const uint8_t* data, size_t size) {
  decoder d(data, size);
  std::vector<page_location> out;
  d.read_struct([&](int16_t id, uint8_t t) {
    if (id != 1) return false;
    d.read_list(t, t_struct, [&] {
      page_location l;
      d.read_struct([&](int16_t fid, uint8_t ft) {
        return assign(d, fid, ft, slot{1, &l.offset}, slot{2, &l.compressed_page_size}, slot{3, &l.first_row_index});
      });
      out.push_back(l);
    });
    return true;
  });
  return out;
}

column_index decode_column_index(const uint8_t* data, size_t size) {
  decoder d(data, size);
  column_index ci;
  d.read_struct([&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: {  // list<bool>: one byte per element, 1 = true
        if (t != t_list) d.fail("expected a list");
        uint8_t elem;
        size_t n = d.list_header(elem);
        if (elem != t_true && elem != t_false) d.fail("unexpected list element type");
        for (size_t i = 0; i < n; ++i)
          ci.null_pages.push_back(d.byte() == 1);
        return true;
      }
      case 2:
        d.read_list(t, t_binary, [&] { ci.min_values.push_back(d.binary()); });
        return true;
      case 3:
        d.read_list(t, t_binary, [&] { ci.max_values.push_back(d.binary()); });
        return true;
      case 5:
        d.read_list(t, t_i64, [&] { ci.null_counts.push_back(d.zigzag()); });
        return true;
      default:
        return false;
    }
  });
  return ci;
}

page_header decode_page_header(const uint8_t* data, size_t size, size_t& consumed) {
  decoder d(data, size);
  page_header h;
  d.read_struct([&](int16_t id, uint8_t t) {
    switch (id) {
      case 5: {
        auto& p = h.v1.emplace();
        read_fields(d, t, slot{1, &p.num_values}, slot{2, &p.enc}, slot{3, &p.definition_level_encoding},
                    slot{4, &p.repetition_level_encoding});
        return true;
      }
      case 7: {
        auto& p = h.dict.emplace();
        read_fields(d, t, slot{1, &p.num_values}, slot{2, &p.enc});
        return true;
      }
      case 8: {
        auto& p = h.v2.emplace();
        read_fields(d, t, slot{1, &p.num_values}, slot{2, &p.num_nulls}, slot{3, &p.num_rows}, slot{4, &p.enc},
                    slot{5, &p.definition_levels_byte_length}, slot{6, &p.repetition_levels_byte_length},
                    slot{7, &p.is_compressed});
        return true;
      }
      default:
        return assign(d, id, t, slot{1, &h.type}, slot{2, &h.uncompressed_page_size}, slot{3, &h.compressed_page_size},
                      slot{4, &h.crc});
    }
  });
  if (h.compressed_page_size < 0 || h.uncompressed_page_size < 0) d.fail("negative page size");
  consumed = d.consumed();
  return h;
}

}  // namespace tug::io::parquet

// ---- encoding ----

namespace tug::io::parquet {
namespace {

/// Writes compact-protocol values; structs nest through begin/end.
class encoder {
 public:
  explicit encoder(std::string& out) : _out(out) {}

  void varint(uint64_t v) {
    while (v >= 0x80) {
      _out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    _out.push_back(static_cast<char>(v));
  }
  void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void field(int16_t id, uint8_t t) {
    int delta = id - _last.back();
    if (delta > 0 && delta <= 15)
      _out.push_back(static_cast<char>((delta << 4) | t));
    else {
      _out.push_back(static_cast<char>(t));
      zigzag(id);
    }
    _last.back() = id;
  }
  void i32(int16_t id, int32_t v) {
    field(id, t_i32);
    zigzag(v);
  }
  void i64(int16_t id, int64_t v) {
    field(id, t_i64);
    zigzag(v);
  }
  void i8(int16_t id, int8_t v) {
    field(id, t_byte);
    _out.push_back(static_cast<char>(v));
  }
  void boolean(int16_t id, bool v) { field(id, v ? t_true : t_false); }
  void raw_binary(std::string_view s) {
    varint(s.size());
    _out.append(s);
  }
  void binary(int16_t id, std::string_view s) {
    field(id, t_binary);
    raw_binary(s);
  }
  void list(int16_t id, uint8_t elem, size_t n) {
    field(id, t_list);
    if (n < 15)
      _out.push_back(static_cast<char>((n << 4) | elem));
    else {
      _out.push_back(static_cast<char>(0xf0 | elem));
      varint(n);
    }
  }
  void begin(int16_t id) {
    field(id, t_struct);
    begin_element();
  }
  void begin_element() { _last.push_back(0); }
  void end() {
    _out.push_back(0);
    _last.pop_back();
  }
  void empty_struct(int16_t id) {
    begin(id);
    end();
  }

 private:
  std::string& _out;
  std::vector<int16_t> _last{0};
};

void encode_logical(encoder& e, const logical_type& lt) {
  e.begin(10);
  switch (lt.kind) {
    case logical_kind::string:
      e.empty_struct(1);
      break;
    case logical_kind::decimal:
      e.begin(5);
      e.i32(1, lt.scale);
      e.i32(2, lt.precision);
      e.end();
      break;
    case logical_kind::date:
      e.empty_struct(6);
      break;
    case logical_kind::time:
    case logical_kind::timestamp:
      e.begin(lt.kind == logical_kind::time ? 7 : 8);
      e.boolean(1, lt.adjusted_to_utc);
      e.begin(2);
      e.empty_struct(lt.unit == logical_unit::millis ? 1 : lt.unit == logical_unit::micros ? 2 : 3);
      e.end();
      e.end();
      break;
    case logical_kind::integer:
      e.begin(10);
      e.i8(1, lt.bit_width);
      e.boolean(2, lt.is_signed);
      e.end();
      break;
    default:
      throw internal_error("parquet writer: unsupported logical type");
  }
  e.end();
}

void encode_statistics(encoder& e, int16_t id, const statistics& s) {
  e.begin(id);
  if (s.null_count) e.i64(3, *s.null_count);
  if (s.max_value) e.binary(5, *s.max_value);
  if (s.min_value) e.binary(6, *s.min_value);
  e.end();
}

}  // namespace

void encode_file_metadata(const file_metadata& m, std::string& out) {
  encoder e(out);
  e.begin_element();
  e.i32(1, m.version);
  e.list(2, t_struct, m.schema.size());
  for (const auto& s : m.schema) {
    e.begin_element();
    if (s.type) e.i32(1, static_cast<int32_t>(*s.type));
    if (s.type == physical_type::fixed_len_byte_array) e.i32(2, s.type_length);
    if (s.repetition_type) e.i32(3, static_cast<int32_t>(*s.repetition_type));
    e.binary(4, s.name);
    if (s.num_children) e.i32(5, s.num_children);
    if (s.converted) e.i32(6, static_cast<int32_t>(*s.converted));
    if (s.converted == converted_type::decimal) {
      e.i32(7, s.scale);
      e.i32(8, s.precision);
    }
    if (s.logical.kind != logical_kind::none) encode_logical(e, s.logical);
    e.end();
  }
  e.i64(3, m.num_rows);
  e.list(4, t_struct, m.row_groups.size());
  for (const auto& rg : m.row_groups) {
    e.begin_element();
    e.list(1, t_struct, rg.columns.size());
    for (const auto& cc : rg.columns) {
      e.begin_element();
      e.i64(2, cc.file_offset);
      const column_metadata& c = *cc.meta;
      e.begin(3);
      e.i32(1, static_cast<int32_t>(c.type));
      e.list(2, t_i32, c.encodings.size());
      for (auto x : c.encodings)
        e.zigzag(static_cast<int32_t>(x));
      e.list(3, t_binary, c.path_in_schema.size());
      for (const auto& p : c.path_in_schema)
        e.raw_binary(p);
      e.i32(4, static_cast<int32_t>(c.compression));
      e.i64(5, c.num_values);
      e.i64(6, c.total_uncompressed_size);
      e.i64(7, c.total_compressed_size);
      e.i64(9, c.data_page_offset);
      if (c.dictionary_page_offset) e.i64(11, *c.dictionary_page_offset);
      if (c.stats) encode_statistics(e, 12, *c.stats);
      e.end();
      e.end();
    }
    e.i64(2, rg.total_byte_size);
    e.i64(3, rg.num_rows);
    e.end();
  }
  if (!m.created_by.empty()) e.binary(6, m.created_by);
  // column_orders: TYPE_DEFINED_ORDER for every leaf, so readers trust min_value / max_value.
  const size_t leaves = m.row_groups.empty() ? m.schema.size() - 1 : m.row_groups[0].columns.size();
  e.list(7, t_struct, leaves);
  for (size_t i = 0; i < leaves; ++i) {
    e.begin_element();
    e.empty_struct(1);
    e.end();
  }
  e.end();
}

void encode_page_header(const page_header& h, std::string& out) {
  encoder e(out);
  e.begin_element();
  e.i32(1, static_cast<int32_t>(h.type));
  e.i32(2, h.uncompressed_page_size);
  e.i32(3, h.compressed_page_size);
  if (h.crc) e.i32(4, *h.crc);
  if (h.v1) {
    e.begin(5);
    e.i32(1, h.v1->num_values);
    e.i32(2, static_cast<int32_t>(h.v1->enc));
    e.i32(3, static_cast<int32_t>(h.v1->definition_level_encoding));
    e.i32(4, static_cast<int32_t>(h.v1->repetition_level_encoding));
    e.end();
  }
  if (h.dict) {
    e.begin(7);
    e.i32(1, h.dict->num_values);
    e.i32(2, static_cast<int32_t>(h.dict->enc));
    e.end();
  }
  if (h.v2) throw internal_error("parquet writer: data page v2 headers are not written");
  e.end();
}

}  // namespace tug::io::parquet
