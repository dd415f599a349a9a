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

/// "YYYY-MM-DD".
std::string format_date(int64_t days);
/// "YYYY-MM-DD HH:MM:SS[.fraction]" for ticks of `ticks_per_second`.
std::string format_timestamp(int64_t ticks, int64_t ticks_per_second);
/// Parses "YYYY-MM-DD". Returns false when malformed.
bool parse_date(const std::string& s, int64_t& days);
/// Parses "YYYY-MM-DD[ |T]HH:MM:SS[.fraction]" into ticks. Returns false when malformed.
bool parse_timestamp(const std::string& s, int64_t ticks_per_second, int64_t& ticks);

}  // namespace tug::temporal
