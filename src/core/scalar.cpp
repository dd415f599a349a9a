#include "tug/core/scalar.hpp"

#include <cmath>

#include "exec/float_text.hpp"
#include "tug/core/table.hpp"
#include "tug/core/temporal.hpp"

namespace tug {

namespace {
std::string int128_to_string(__int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string s;
  while (u) { s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10))); u /= 10; }
  return neg ? "-" + s : s;
}

std::string decimal_to_string(__int128 v, int scale) {
  std::string digits = int128_to_string(v < 0 ? -v : v);
  if (scale > 0) {
    while (static_cast<int>(digits.size()) <= scale) digits.insert(digits.begin(), '0');
    digits.insert(digits.end() - scale, '.');
  }
  return (v < 0 ? "-" : "") + digits;
}

/// Shortest text that reads back as the same float64 / float32 (rules in exec/float_text.hpp).
template <typename F>
std::string float_to_string(F v) {
  char buf[float_text::max_format_length];
  return std::string(buf, static_cast<size_t>(float_text::format_float(v, buf)));
}
}  // namespace

scalar::scalar(data_type type, value_type value) : _type(std::move(type)), _value(std::move(value)) {
  if (std::holds_alternative<std::monostate>(_value)) return;
  type_id id = _type.id;
  auto bad = [&] { throw type_error("a literal of the wrong kind for type " + tug::to_string(_type)); };
  if (id == type_id::uint64) {
    if (auto p = std::get_if<int64_t>(&_value)) _value = static_cast<uint64_t>(*p);
    else if (!std::holds_alternative<uint64_t>(_value)) bad();
  } else if (is_integer(id) || id == type_id::date32 || id == type_id::timestamp || id == type_id::duration) {
    if (auto p = std::get_if<uint64_t>(&_value)) _value = static_cast<int64_t>(*p);
    else if (auto b = std::get_if<bool>(&_value)) _value = static_cast<int64_t>(*b);
    else if (!std::holds_alternative<int64_t>(_value)) bad();
  } else if (is_floating(id)) {
    if (auto p = std::get_if<int64_t>(&_value)) _value = static_cast<double>(*p);
    else if (auto u = std::get_if<uint64_t>(&_value)) _value = static_cast<double>(*u);
    else if (!std::holds_alternative<double>(_value)) bad();
  } else if (id == type_id::decimal128) {
    if (auto p = std::get_if<int64_t>(&_value)) _value = static_cast<__int128>(*p);
    else if (!std::holds_alternative<__int128>(_value)) bad();
  } else if (id == type_id::boolean) {
    if (!std::holds_alternative<bool>(_value)) bad();
  } else if (id == type_id::string) {
    if (!std::holds_alternative<std::string>(_value)) bad();
  }
}

int64_t scalar::as_int64() const {
  if (auto p = std::get_if<int64_t>(&_value)) return *p;
  if (auto p = std::get_if<uint64_t>(&_value)) return static_cast<int64_t>(*p);
  if (auto p = std::get_if<bool>(&_value)) return *p;
  if (auto p = std::get_if<__int128>(&_value)) return static_cast<int64_t>(*p);
  throw type_error("expected an integer value, got " + to_string() + " of type " + tug::to_string(_type));
}

double scalar::as_double() const {
  if (auto p = std::get_if<double>(&_value)) return *p;
  if (auto p = std::get_if<int64_t>(&_value)) return static_cast<double>(*p);
  if (auto p = std::get_if<uint64_t>(&_value)) return static_cast<double>(*p);
  if (auto p = std::get_if<bool>(&_value)) return *p;
  if (auto p = std::get_if<__int128>(&_value)) return float_text::decimal_to_float<double>(*p, _type.scale);
  throw type_error("expected a numeric value, got " + to_string() + " of type " + tug::to_string(_type));
}

const std::string& scalar::as_string() const {
  if (auto p = std::get_if<std::string>(&_value)) return *p;
  throw type_error("expected a string value, got type " + tug::to_string(_type));
}

bool scalar::as_bool() const {
  if (auto p = std::get_if<bool>(&_value)) return *p;
  throw type_error("expected a boolean value, got type " + tug::to_string(_type));
}

__int128 scalar::as_int128() const {
  if (auto p = std::get_if<__int128>(&_value)) return *p;
  return as_int64();
}

column scalar::to_column(int64_t n, memory_resource* mr) const {
  if (is_null()) return make_null_column(_type, n, mr);
  if (_type.id == type_id::string) {
    string_builder b(1, static_cast<int64_t>(as_string().size()), mr);
    b.append(as_string());
    auto one = b.finish(_type);
    return n == 1 ? one : repeat_row(one, 0, n, mr);
  }
  return type_dispatch(_type.id, [&]<type_id Id>() -> column {
    if constexpr (Id == type_id::string) {
      return column();
    } else {
      using T = storage_t<Id>;
      fixed_width_builder<T> b(_type, n, mr);
      T v;
      if constexpr (Id == type_id::boolean) v = as_bool();
      else if constexpr (Id == type_id::float32 || Id == type_id::float64) v = static_cast<T>(as_double());
      else if constexpr (Id == type_id::decimal128) v = as_int128();
      else if constexpr (Id == type_id::uint64) {
        if (auto p = std::get_if<uint64_t>(&_value)) v = *p;
        else v = static_cast<T>(as_int64());
      } else v = static_cast<T>(as_int64());
      T* d = b.data();
      for (int64_t i = 0; i < n; ++i) d[i] = v;
      return b.finish();
    }
  });
}

std::string scalar::to_string() const {
  if (is_null()) return "null";
  return format_value(to_column(1), 0);
}

scalar get_scalar(const column& c, int64_t i) {
  if (c.is_null(i)) return scalar::null(c.type());
  return type_dispatch(c.type().id, [&]<type_id Id>() -> scalar {
    using T = storage_t<Id>;
    T v = c.value<T>(i);
    if constexpr (Id == type_id::string) return scalar(c.type(), std::string(v));
    else if constexpr (Id == type_id::boolean) return scalar(c.type(), v);
    else if constexpr (Id == type_id::float32 || Id == type_id::float64) return scalar(c.type(), static_cast<double>(v));
    else if constexpr (Id == type_id::decimal128) return scalar(c.type(), v);
    else if constexpr (Id == type_id::uint64) return scalar(c.type(), v);
    else return scalar(c.type(), static_cast<int64_t>(v));
  });
}

std::string format_value(const column& c, int64_t i) {
  if (c.is_null(i)) return "null";
  const data_type& t = c.type();
  return type_dispatch(t.id, [&]<type_id Id>() -> std::string {
    using T = storage_t<Id>;
    T v = c.value<T>(i);
    if constexpr (Id == type_id::string) return std::string(v);
    else if constexpr (Id == type_id::boolean) return v ? "true" : "false";
    else if constexpr (Id == type_id::float32 || Id == type_id::float64) return float_to_string(v);
    else if constexpr (Id == type_id::decimal128) return decimal_to_string(v, t.scale);
    else if constexpr (Id == type_id::date32) return temporal::format_date(v);
    else if constexpr (Id == type_id::timestamp) return temporal::format_timestamp(v, ticks_per_second(t.unit));
    else if constexpr (Id == type_id::duration) return std::to_string(v) + to_string(t.unit);
    else return std::to_string(v);
  });
}

}  // namespace tug
