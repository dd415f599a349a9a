#pragma once
/// Calendar arithmetic on the proleptic Gregorian calendar (UTC), shared by formatting, parsing and
/// the temporal expressions.
#include <cstdint>
#include <string>

namespace tug::temporal {

struct civil_date {
  int64_t year;
  unsigned month;  ///< 1..12
  unsigned day;    ///< 1..31
};

/// Days since 1970-01-01 of a civil date.
constexpr int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

/// Civil date of a day count since 1970-01-01.
constexpr civil_date civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2), m, d};
}

/// Floor division for negative tick counts.
constexpr int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
constexpr int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

/// ISO weekday (Monday = 1 .. Sunday = 7) of a day count.
constexpr unsigned iso_weekday(int64_t days) { return static_cast<unsigned>(floor_mod(days + 3, 7)) + 1; }

/// One sscanf "%d" at `pos` of s[0, n): whitespace, an optional sign, digits. False when no digit
/// follows or the value does not fit an int (where sscanf would wrap "4294969296" around to 2000).
/// constexpr: the CUDA evaluator runs it too.
constexpr bool scan_int(const char* s, int64_t n, int64_t& pos, int32_t& out) {
  while (pos < n && (s[pos] == ' ' || (s[pos] >= '\t' && s[pos] <= '\r')))
    ++pos;
  bool neg = false;
  if (pos < n && (s[pos] == '-' || s[pos] == '+')) neg = s[pos++] == '-';
  const int64_t first = pos;
  uint64_t mag = 0;
  bool over = false;
  for (; pos < n && s[pos] >= '0' && s[pos] <= '9'; ++pos) {
    const unsigned d = static_cast<unsigned>(s[pos] - '0');
    if (mag > (uint64_t{1} << 63) / 10 || mag * 10 + d > (uint64_t{1} << 63)) over = true;
    if (!over) mag = mag * 10 + d;
  }
  if (pos == first || over || mag > (neg ? uint64_t{1} << 31 : uint64_t{INT32_MAX})) return false;
  out = static_cast<int32_t>(neg ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag));
  return true;
}

/// The bytes of s[0, n) before the first NUL (what a C string of them holds).
constexpr int64_t c_string_length(const char* s, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    if (s[k] == '\0') return k;
  return n;
}

/// Days of year `y`, month `m`, day `d` when they name a date (false otherwise).
constexpr bool civil_days(int64_t y, int32_t m, int32_t d, int64_t& days) {
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  days = days_from_civil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return civil_from_days(days).day == static_cast<unsigned>(d);
}

/// Parses "Y-M-D" from s[0, n) as sscanf("%d-%d-%d%c") with exactly three conversions: each number
/// may have leading whitespace and a sign; the day must end the string (before any NUL).
constexpr bool parse_date(const char* s, int64_t n, int64_t& days) {
  n = c_string_length(s, n);
  int64_t pos = 0;
  int32_t y = 0, m = 0, d = 0;
  if (!scan_int(s, n, pos, y) || pos >= n || s[pos++] != '-') return false;
  if (!scan_int(s, n, pos, m) || pos >= n || s[pos++] != '-') return false;
  if (!scan_int(s, n, pos, d) || pos != n) return false;
  return civil_days(y, m, d, days);
}

/// a * b + c into `out`, false when it leaves int64.
constexpr bool mul_add_checked(int64_t a, int64_t b, int64_t c, int64_t& out) {
  const __int128 v = static_cast<__int128>(a) * b + c;
  if (v < INT64_MIN || v > INT64_MAX) return false;
  out = static_cast<int64_t>(v);
  return true;
}

/// Parses "Y-M-D" or "Y-M-D[ |T]h:m:s[.fraction]" from s[0, n) (before any NUL) into ticks of
/// `tps` a second: the date as parse_date, hour 0..23, minute 0..59, second 0..60 (each scanned as
/// sscanf's "%d"), fraction digits past the unit's resolution dropped; false when malformed or when
/// the instant leaves int64 ticks.
constexpr bool parse_timestamp(const char* s, int64_t n, int64_t tps, int64_t& ticks) {
  n = c_string_length(s, n);
  int64_t pos = 0, days = 0;
  int32_t y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!scan_int(s, n, pos, y) || pos >= n || s[pos++] != '-') return false;
  if (!scan_int(s, n, pos, mo) || pos >= n || s[pos++] != '-') return false;
  if (!scan_int(s, n, pos, d)) return false;
  if (pos == n) return civil_days(y, mo, d, days) && mul_add_checked(days, 86400 * tps, 0, ticks);
  const char sep = s[pos++];
  if (sep != ' ' && sep != 'T') return false;
  if (!scan_int(s, n, pos, h) || pos >= n || s[pos++] != ':') return false;
  if (!scan_int(s, n, pos, mi) || pos >= n || s[pos++] != ':') return false;
  if (!scan_int(s, n, pos, sec)) return false;
  if (!civil_days(y, mo, d, days)) return false;
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60) return false;
  int64_t frac = 0;
  if (pos < n && s[pos] == '.') {
    ++pos;
    int64_t scale = tps;
    for (; pos < n && s[pos] >= '0' && s[pos] <= '9'; ++pos) {
      scale /= 10;
      frac += (s[pos] - '0') * scale;
    }
  }
  if (pos != n) return false;
  int64_t secs = 0;
  return mul_add_checked(days, 86400, int64_t{h} * 3600 + mi * 60 + sec, secs) && mul_add_checked(secs, tps, frac, ticks);
}

/// "YYYY-MM-DD".
std::string format_date(int64_t days);
/// "YYYY-MM-DD HH:MM:SS[.fraction]" for ticks of `ticks_per_second`.
std::string format_timestamp(int64_t ticks, int64_t ticks_per_second);
/// parse_date of a string's bytes.
inline bool parse_date(const std::string& s, int64_t& days) {
  return parse_date(s.data(), static_cast<int64_t>(s.size()), days);
}
/// parse_timestamp of a string's bytes.
inline bool parse_timestamp(const std::string& s, int64_t ticks_per_second, int64_t& ticks) {
  return parse_timestamp(s.data(), static_cast<int64_t>(s.size()), ticks_per_second, ticks);
}

}  // namespace tug::temporal
