#include "tug/core/temporal.hpp"

#include <cstdio>

namespace tug::temporal {

std::string format_date(int64_t days) {
  auto c = civil_from_days(days);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u", static_cast<long long>(c.year), c.month, c.day);
  return buf;
}

std::string format_timestamp(int64_t ticks, int64_t tps) {
  int64_t secs = floor_div(ticks, tps);
  int64_t frac = floor_mod(ticks, tps);
  int64_t days = floor_div(secs, 86400);
  int64_t sod = floor_mod(secs, 86400);
  std::string s = format_date(days);
  char buf[64];
  std::snprintf(buf, sizeof buf, " %02lld:%02lld:%02lld", static_cast<long long>(sod / 3600),
                static_cast<long long>(sod / 60 % 60), static_cast<long long>(sod % 60));
  s += buf;
  if (frac) {
    int digits = tps == 1000 ? 3 : tps == 1000000 ? 6 : 9;
    std::snprintf(buf, sizeof buf, ".%0*lld", digits, static_cast<long long>(frac));
    s += buf;
  }
  return s;
}

}  // namespace tug::temporal
