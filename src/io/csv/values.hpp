#pragma once
/// Strict text-to-value parsers of the CSV reader (private to src/io/csv).
#include <charconv>
#include <cstdint>
#include <string_view>

#include "tug/core/temporal.hpp"
#include "tug/core/types.hpp"

namespace tug::io::csv::detail {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

inline std::string_view strip_plus(std::string_view s) {
  return s.size() > 1 && s[0] == '+' && s[1] != '-' ? s.substr(1) : s;
}

template <typename T>
bool parse_integer(std::string_view s, T& out) {
  s = strip_plus(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

template <typename T>
bool parse_floating(std::string_view s, T& out) {
  s = strip_plus(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec == std::errc::result_out_of_range) return false;
  return ec == std::errc() && p == s.data() + s.size();
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != b[i]) return false;
  return true;
}

/// "true" / "false", case-insensitive.
inline bool parse_bool(std::string_view s, bool& out) {
  if (iequals(s, "true")) return out = true, true;
  if (iequals(s, "false")) return out = false, true;
  return false;
}

inline bool parse_fixed_digits(std::string_view s, size_t pos, size_t n, int64_t& v) {
  v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (i >= s.size() || !is_digit(s[i])) return false;
    v = v * 10 + (s[i] - '0');
  }
  return true;
}

/// Exactly "YYYY-MM-DD" (a valid calendar day) into days since the epoch.
inline bool parse_date(std::string_view s, int64_t& days) {
  int64_t y, m, d;
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  if (!parse_fixed_digits(s, 0, 4, y) || !parse_fixed_digits(s, 5, 2, m) || !parse_fixed_digits(s, 8, 2, d))
    return false;
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  days = temporal::days_from_civil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return temporal::civil_from_days(days).day == static_cast<unsigned>(d);
}

/// "YYYY-MM-DD", or that followed by ' ' or 'T' and "HH:MM[:SS[.fraction]]", into ticks of `tps`
/// (fraction digits beyond the unit are truncated).
inline bool parse_timestamp(std::string_view s, int64_t tps, int64_t& ticks) {
  int64_t days;
  if (s.size() < 10 || !parse_date(s.substr(0, 10), days)) return false;
  int64_t h = 0, mi = 0, sec = 0, frac = 0;
  if (s.size() > 10) {
    if ((s[10] != ' ' && s[10] != 'T') || s.size() < 16 || s[13] != ':') return false;
    if (!parse_fixed_digits(s, 11, 2, h) || !parse_fixed_digits(s, 14, 2, mi) || h > 23 || mi > 59) return false;
    size_t pos = 16;
    if (pos < s.size()) {
      if (s[pos] != ':' || !parse_fixed_digits(s, pos + 1, 2, sec) || sec > 60) return false;
      pos += 3;
      if (pos < s.size()) {
        if (s[pos] != '.' || pos + 1 >= s.size()) return false;
        int64_t scale = tps;
        for (++pos; pos < s.size(); ++pos) {
          if (!is_digit(s[pos])) return false;
          scale /= 10;
          frac += (s[pos] - '0') * scale;
        }
      }
    }
  }
  ticks = (days * 86400 + h * 3600 + mi * 60 + sec) * tps + frac;
  return true;
}

/// "[+-]digits[.digits]" with at most `scale` fraction digits (extra trailing zeros allowed) and at
/// most `precision` digits in all, into the unscaled value.
inline bool parse_decimal(std::string_view s, int precision, int scale, __int128& out) {
  s = strip_plus(s);
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  if (s.empty()) return false;
  __int128 v = 0;
  int digits = 0, frac = 0;
  bool dot = false, any = false;
  for (char c : s) {
    if (c == '.') {
      if (dot) return false;
      dot = true;
      continue;
    }
    if (!is_digit(c)) return false;
    any = true;
    if (dot && frac >= scale) {
      if (c != '0') return false;  // more fraction digits than the scale keeps
      continue;
    }
    if (dot) ++frac;
    v = v * 10 + (c - '0');
    if (v != 0 && ++digits > precision) return false;
  }
  if (!any) return false;
  for (; frac < scale; ++frac) {
    v *= 10;
    if (v != 0 && ++digits > precision) return false;
  }
  if (digits > precision) return false;
  out = neg ? -v : v;
  return true;
}

/// Integer ticks, optionally followed by the unit name (as format_value writes durations: "15us").
inline bool parse_duration(std::string_view s, time_unit unit, int64_t& out) {
  std::string_view suffix = unit == time_unit::s    ? "s"
                            : unit == time_unit::ms ? "ms"
                            : unit == time_unit::us ? "us"
                                                    : "ns";
  if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix &&
      is_digit(s[s.size() - suffix.size() - 1]))
    s.remove_suffix(suffix.size());
  return parse_integer(s, out);
}

}  // namespace tug::io::csv::detail
