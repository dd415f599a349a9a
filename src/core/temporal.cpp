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

bool parse_date(const std::string& s, int64_t& days) {
  int y, m, d;
  char tail;
  if (std::sscanf(s.c_str(), "%d-%d-%d%c", &y, &m, &d, &tail) != 3) return false;
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  days = days_from_civil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return civil_from_days(days).day == static_cast<unsigned>(d);
}

bool parse_timestamp(const std::string& s, int64_t tps, int64_t& ticks) {
  int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
  char sep;
  int got = std::sscanf(s.c_str(), "%d-%d-%d%c%d:%d:%d%n", &y, &mo, &d, &sep, &h, &mi, &sec, &n);
  int64_t days;
  if (got == 3) {
    if (!parse_date(s, days)) return false;
    ticks = days * 86400 * tps;
    return true;
  }
  if (got != 7 || (sep != ' ' && sep != 'T')) return false;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", y, mo, d);
  if (!parse_date(buf, days)) return false;
  if (h > 23 || mi > 59 || sec > 60) return false;
  int64_t frac = 0;
  size_t pos = static_cast<size_t>(n);
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int64_t scale = tps;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      scale /= 10;
      if (scale > 0) frac += (s[pos] - '0') * scale;
      ++pos;
    }
  }
  if (pos != s.size()) return false;
  ticks = ((days * 86400) + h * 3600 + mi * 60 + sec) * tps + frac;
  return true;
}

}  // namespace tug::temporal
