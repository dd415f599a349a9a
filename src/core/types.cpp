#include "tug/core/types.hpp"

namespace tug {

data_type decimal(int precision, int scale) {
  if (precision < 1 || precision > 38)
    throw invalid_argument_error("decimal precision must be in 1..38, got " + std::to_string(precision));
  if (scale < 0 || scale > precision)
    throw invalid_argument_error("decimal scale must be in 0..precision (" + std::to_string(precision) +
                                 "), got " + std::to_string(scale));
  data_type t(type_id::decimal128);
  t.precision = static_cast<int8_t>(precision);
  t.scale = static_cast<int8_t>(scale);
  return t;
}

data_type timestamp(time_unit unit, std::string tz) {
  data_type t(type_id::timestamp);
  t.unit = unit;
  t.tz = std::move(tz);
  return t;
}

data_type duration(time_unit unit) {
  data_type t(type_id::duration);
  t.unit = unit;
  return t;
}

std::string to_string(time_unit u) {
  switch (u) {
    case time_unit::s: return "s";
    case time_unit::ms: return "ms";
    case time_unit::us: return "us";
    case time_unit::ns: return "ns";
  }
  return "?";
}

std::string to_string(const data_type& t) {
  switch (t.id) {
    case type_id::boolean: return "bool";
    case type_id::int8: return "i8";
    case type_id::int16: return "i16";
    case type_id::int32: return "i32";
    case type_id::int64: return "i64";
    case type_id::uint8: return "u8";
    case type_id::uint16: return "u16";
    case type_id::uint32: return "u32";
    case type_id::uint64: return "u64";
    case type_id::float32: return "f32";
    case type_id::float64: return "f64";
    case type_id::decimal128:
      return "decimal[" + std::to_string(t.precision) + "," + std::to_string(t.scale) + "]";
    case type_id::date32: return "date";
    case type_id::timestamp:
      return "datetime[" + to_string(t.unit) + (t.tz.empty() ? "" : ", " + t.tz) + "]";
    case type_id::duration: return "duration[" + to_string(t.unit) + "]";
    case type_id::string: return "str";
  }
  return "?";
}

int size_of(type_id id) {
  switch (id) {
    case type_id::boolean:
    case type_id::int8:
    case type_id::uint8: return 1;
    case type_id::int16:
    case type_id::uint16: return 2;
    case type_id::int32:
    case type_id::uint32:
    case type_id::float32:
    case type_id::date32: return 4;
    case type_id::int64:
    case type_id::uint64:
    case type_id::float64:
    case type_id::timestamp:
    case type_id::duration: return 8;
    case type_id::decimal128: return 16;
    case type_id::string: return 0;
  }
  return 0;
}

bool is_signed_integer(type_id id) {
  return id == type_id::int8 || id == type_id::int16 || id == type_id::int32 || id == type_id::int64;
}
bool is_unsigned_integer(type_id id) {
  return id == type_id::uint8 || id == type_id::uint16 || id == type_id::uint32 || id == type_id::uint64;
}
bool is_integer(type_id id) { return is_signed_integer(id) || is_unsigned_integer(id); }
bool is_floating(type_id id) { return id == type_id::float32 || id == type_id::float64; }
bool is_numeric(type_id id) { return is_integer(id) || is_floating(id) || id == type_id::decimal128; }
bool is_temporal(type_id id) { return id == type_id::date32 || id == type_id::timestamp; }

schema::schema(std::vector<field> fields) {
  for (auto& f : fields) push_back(std::move(f));
}

int64_t schema::find(std::string_view name) const {
  for (size_t i = 0; i < _fields.size(); ++i)
    if (_fields[i].name == name) return static_cast<int64_t>(i);
  return -1;
}

size_t schema::index_of(std::string_view name) const {
  int64_t i = find(name);
  if (i < 0) {
    std::string avail;
    for (auto& f : _fields) avail += (avail.empty() ? "" : ", ") + f.name;
    throw column_not_found_error("column \"" + std::string(name) + "\" not found; available columns: [" + avail + "]");
  }
  return static_cast<size_t>(i);
}

std::vector<std::string> schema::names() const {
  std::vector<std::string> out;
  for (auto& f : _fields) out.push_back(f.name);
  return out;
}

void schema::push_back(field f) {
  if (find(f.name) >= 0)
    throw invalid_argument_error("duplicate column name \"" + f.name +
                                 "\"; rename one of them (alias, or a join suffix)");
  _fields.push_back(std::move(f));
}

void schema::set(field f) {
  int64_t i = find(f.name);
  if (i >= 0) _fields[static_cast<size_t>(i)] = std::move(f);
  else _fields.push_back(std::move(f));
}

std::string schema::to_string() const {
  std::string s;
  for (auto& f : _fields) s += (s.empty() ? "" : ", ") + f.name + ": " + tug::to_string(f.type);
  return s;
}

}  // namespace tug
