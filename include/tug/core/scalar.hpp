#pragma once
/// A single typed value, possibly null: literals and aggregate results.
#include <cstdint>
#include <string>
#include <variant>

#include "tug/core/column.hpp"

namespace tug {

/// A typed value or a typed null. Integers are held as int64/uint64, floats as double, decimals as
/// their unscaled __int128, dates/timestamps/durations as int64 ticks, strings as std::string.
class scalar {
 public:
  using value_type = std::variant<std::monostate, bool, int64_t, uint64_t, double, __int128, std::string>;

  scalar() = default;  ///< a null of type int64
  /// The value is normalized to the canonical alternative of the type (uint64 for u64, int64 for the
  /// other integers and temporal types, double for floats, __int128 for decimals), so equal values
  /// compare equal however they were built. @throws type_error when the value does not fit the type.
  scalar(data_type type, value_type value);
  static scalar null(data_type type) { return scalar(std::move(type), std::monostate{}); }

  const data_type& type() const { return _type; }
  bool is_valid() const { return !std::holds_alternative<std::monostate>(_value); }
  bool is_null() const { return !is_valid(); }
  const value_type& value() const { return _value; }

  /// The value as int64 (integers, temporal ticks, booleans). @throws type_error otherwise.
  int64_t as_int64() const;
  /// The value as double (any numeric). @throws type_error otherwise.
  double as_double() const;
  /// The value as string. @throws type_error when not a string.
  const std::string& as_string() const;
  bool as_bool() const;
  __int128 as_int128() const;

  /// A one-row column holding this value.
  column to_column(int64_t n = 1, memory_resource* mr = default_host_resource()) const;
  /// Human readable, as Polars prints values ("null" for null, strings unquoted).
  std::string to_string() const;

  friend bool operator==(const scalar& a, const scalar& b) { return a._type == b._type && a._value == b._value; }

 private:
  data_type _type;
  value_type _value;
};

/// Row `i` of `c` as a scalar.
scalar get_scalar(const column& c, int64_t i);

/// Formats one value of a column for display (dates as YYYY-MM-DD, timestamps ISO, decimals with scale).
std::string format_value(const column& c, int64_t i);

}  // namespace tug
