#pragma once
/// Logical data types of tug columns and their physical storage.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tug/core/error.hpp"

namespace tug {

/// Identifier of a logical type.
enum class type_id : uint8_t {
  boolean,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  float32,
  float64,
  decimal128,
  date32,     ///< days since 1970-01-01, int32 storage
  timestamp,  ///< ticks of `time_unit` since the epoch, int64 storage
  duration,   ///< ticks of `time_unit`, int64 storage
  string,     ///< UTF-8, int64 offsets
};

/// Unit of timestamp and duration ticks.
enum class time_unit : uint8_t { s, ms, us, ns };

/// Ticks per second of a unit.
constexpr int64_t ticks_per_second(time_unit u) {
  switch (u) {
    case time_unit::s: return 1;
    case time_unit::ms: return 1000;
    case time_unit::us: return 1000000;
    case time_unit::ns: return 1000000000;
  }
  return 1;
}

/// A logical type: the id plus its parameters (decimal precision/scale, time unit, time zone).
struct data_type {
  type_id id = type_id::int64;
  int8_t precision = 0;  ///< decimal128 only: 1..38
  int8_t scale = 0;      ///< decimal128 only: 0..precision
  time_unit unit = time_unit::us;  ///< timestamp and duration only
  std::string tz;        ///< timestamp only: time zone name kept as metadata ("" = naive)

  data_type() = default;
  /*implicit*/ data_type(type_id i) : id(i) {}  // NOLINT

  friend bool operator==(const data_type& a, const data_type& b) {
    if (a.id != b.id) return false;
    switch (a.id) {
      case type_id::decimal128: return a.precision == b.precision && a.scale == b.scale;
      case type_id::timestamp: return a.unit == b.unit && a.tz == b.tz;
      case type_id::duration: return a.unit == b.unit;
      default: return true;
    }
  }
};

/// A decimal128 type. @throws invalid_argument_error for precision outside 1..38 or bad scale.
data_type decimal(int precision, int scale);
/// A timestamp type with a unit and an optional time zone (metadata only).
data_type timestamp(time_unit unit = time_unit::us, std::string tz = {});
/// A duration type.
data_type duration(time_unit unit = time_unit::us);

/// Short name of a type, as Polars prints it: i64, f64, str, decimal[10,2], datetime[us], ...
std::string to_string(const data_type& t);
/// Name of a time unit: s, ms, us, ns.
std::string to_string(time_unit u);

/// Bytes of one value in the data buffer (strings: 0, their chars are variable).
int size_of(type_id id);

bool is_integer(type_id id);
bool is_signed_integer(type_id id);
bool is_unsigned_integer(type_id id);
bool is_floating(type_id id);
/// Integer, floating or decimal.
bool is_numeric(type_id id);
/// date32, timestamp.
bool is_temporal(type_id id);

/// Physical storage type of each logical type.
template <type_id Id> struct storage_of;
template <> struct storage_of<type_id::boolean> { using type = bool; };
template <> struct storage_of<type_id::int8> { using type = int8_t; };
template <> struct storage_of<type_id::int16> { using type = int16_t; };
template <> struct storage_of<type_id::int32> { using type = int32_t; };
template <> struct storage_of<type_id::int64> { using type = int64_t; };
template <> struct storage_of<type_id::uint8> { using type = uint8_t; };
template <> struct storage_of<type_id::uint16> { using type = uint16_t; };
template <> struct storage_of<type_id::uint32> { using type = uint32_t; };
template <> struct storage_of<type_id::uint64> { using type = uint64_t; };
template <> struct storage_of<type_id::float32> { using type = float; };
template <> struct storage_of<type_id::float64> { using type = double; };
template <> struct storage_of<type_id::decimal128> { using type = __int128; };
template <> struct storage_of<type_id::date32> { using type = int32_t; };
template <> struct storage_of<type_id::timestamp> { using type = int64_t; };
template <> struct storage_of<type_id::duration> { using type = int64_t; };
template <> struct storage_of<type_id::string> { using type = std::string_view; };
template <type_id Id> using storage_t = typename storage_of<Id>::type;

/// A named, typed field of a schema.
struct field {
  std::string name;
  data_type type;
  friend bool operator==(const field&, const field&) = default;
};

/// Ordered list of fields; names are unique.
class schema {
 public:
  schema() = default;
  explicit schema(std::vector<field> fields);

  size_t size() const { return _fields.size(); }
  const field& operator[](size_t i) const { return _fields[i]; }
  const std::vector<field>& fields() const { return _fields; }
  auto begin() const { return _fields.begin(); }
  auto end() const { return _fields.end(); }

  /// Index of a column, or -1.
  int64_t find(std::string_view name) const;
  /// Index of a column. @throws column_not_found_error naming the column and the available ones.
  size_t index_of(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) >= 0; }
  const data_type& type_of(std::string_view name) const { return _fields[index_of(name)].type; }
  std::vector<std::string> names() const;

  /// Appends a field. @throws invalid_argument_error when the name is taken.
  void push_back(field f);
  /// Sets a field by name: replaces an existing one in place or appends.
  void set(field f);

  /// One line: "a: i64, b: str".
  std::string to_string() const;
  friend bool operator==(const schema&, const schema&) = default;

 private:
  std::vector<field> _fields;
};

}  // namespace tug
