// temporal::parse_date / parse_timestamp (include/tug/core/temporal.hpp): one byte-level parser that
// the CPU casts and the CUDA evaluator share. Checked against the sscanf-based parser it replaced
// (kept below as the oracle), which it must match but for three deliberate changes: negative hour,
// minute or second fields are rejected, numbers that do not fit an int are rejected instead of wrapping
// around, and instants that leave int64 ticks are rejected instead of wrapping.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tug/core/temporal.hpp"

namespace tug {
namespace {

struct oracle_result {
  bool ok = false;
  int64_t ticks = 0;
  bool comparable = true;  ///< false where the new parser deliberately differs
  bool overflow = false;   ///< accepted, but the instant leaves int64 ticks: the new parser refuses it
};

/// `exact` as ticks, or the overflow flag.
void set_ticks(oracle_result& r, __int128 exact) {
  r.overflow = exact < INT64_MIN || exact > INT64_MAX;
  r.ticks = static_cast<int64_t>(exact);
}

bool old_parse_date(const std::string& s, int64_t& days) {
  int y, m, d;
  char tail;
  if (std::sscanf(s.c_str(), "%d-%d-%d%c", &y, &m, &d, &tail) != 3) return false;
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  days = temporal::days_from_civil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
  return temporal::civil_from_days(days).day == static_cast<unsigned>(d);
}

/// True when a run of digits not after a '.' is above INT_MAX (sscanf wraps it around; the new parser
/// refuses it).
bool has_wide_number(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    if (s[i] < '0' || s[i] > '9') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9')
      ++j;
    std::string run = s.substr(i, j - i);
    run.erase(0, std::min(run.find_first_not_of('0'), run.size()));
    if ((i == 0 || s[i - 1] != '.') && (run.size() > 10 || (run.size() == 10 && run > "2147483647"))) return true;
    i = j;
  }
  return false;
}

oracle_result old_parse_timestamp(const std::string& s, int64_t tps) {
  oracle_result r;
  if (has_wide_number(s)) r.comparable = false;
  int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
  char sep;
  int got = std::sscanf(s.c_str(), "%d-%d-%d%c%d:%d:%d%n", &y, &mo, &d, &sep, &h, &mi, &sec, &n);
  int64_t days;
  if (got >= 1 && (y > 99999999 || y < -99999999)) r.comparable = false;  // formatted back into 16 bytes
  if (got == 3) {
    r.ok = old_parse_date(s, days);
    if (r.ok) set_ticks(r, static_cast<__int128>(days) * 86400 * tps);
    return r;
  }
  if (got != 7 || (sep != ' ' && sep != 'T')) return r;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", y, mo, d);
  if (!old_parse_date(buf, days)) return r;
  if (h > 23 || mi > 59 || sec > 60) return r;
  if (h < 0 || mi < 0 || sec < 0) r.comparable = false;
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
  if (pos != s.size()) return r;
  r.ok = true;
  set_ticks(r, (static_cast<__int128>(days) * 86400 + h * 3600 + mi * 60 + sec) * tps + frac);
  return r;
}

/// Valid instants, then each perturbed: signs, whitespace, separators, digits, NULs, truncation.
std::vector<std::string> fuzz_inputs() {
  std::vector<std::string> out = {"", "2024-02-29", "2023-02-29", "2024-02-29 23:59:60", "2024-02-29T00:00:00.5",
                                  "1970-01-01 00:00:00.", "1970-01-01 00:00:00.123456789123", " 1970-1-1 1:2:3",
                                  "+1970-+01-01 00:00:00", "-0044-03-15 12:00:00", "1970-01-01 -1:00:00",
                                  "1970-01-01 24:00:00", "1970-01-01  00:00:00", "1970-01-01x00:00:00",
                                  "99999-12-31 23:59:59", "1970-01-01 00:00", "1970-01-01 00:00:00Z",
                                  std::string("1970-01-01\0 junk", 16), "2147483648-01-01", "1970-13-01",
                                  "1970-00-10", "1970-01-32", "1970-01-01 00:00:00.999999999"};
  std::mt19937_64 rng(42);
  const std::string alphabet = "0123456789-: T.+\t\nZx";
  for (int i = 0; i < 60000; ++i) {
    int64_t y = static_cast<int64_t>(rng() % 4000) - 1000, mo = 1 + rng() % 12, d = 1 + rng() % 31;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld%c%02d:%02d:%02d.%09d", static_cast<long long>(y),
                  static_cast<long long>(mo), static_cast<long long>(d), rng() % 2 ? ' ' : 'T',
                  static_cast<int>(rng() % 25), static_cast<int>(rng() % 61), static_cast<int>(rng() % 62),
                  static_cast<int>(rng() % 1000000000));
    std::string s = buf;
    switch (rng() % 6) {
      case 0: s.resize(rng() % (s.size() + 1)); break;  // a prefix: date only, partial time, partial fraction
      case 1: s[rng() % s.size()] = alphabet[rng() % alphabet.size()]; break;
      case 2: s.insert(rng() % (s.size() + 1), 1, alphabet[rng() % alphabet.size()]); break;
      case 3: s.erase(rng() % s.size(), 1); break;
      case 4: s = std::to_string(static_cast<int64_t>(rng()) >> (rng() % 64)) + s.substr(s.find('-')); break;
      default: break;
    }
    out.push_back(s);
  }
  return out;
}

TEST(TemporalParse, TimestampsMatchTheSscanfParser) {
  int64_t compared = 0, accepted = 0;
  for (int64_t tps : {int64_t{1}, int64_t{1000}, int64_t{1000000}, int64_t{1000000000}})
    for (const std::string& s : fuzz_inputs()) {
      oracle_result want = old_parse_timestamp(s, tps);
      int64_t got = 0;
      const bool ok = temporal::parse_timestamp(s, tps, got);
      if (!want.comparable) continue;  // DeliberateDifferences checks these
      if (want.ok && want.overflow) {  // the old parser wrapped around: the new one refuses
        EXPECT_FALSE(ok) << "\"" << s << "\" at " << tps << " ticks a second";
        continue;
      }
      ++compared;
      ASSERT_EQ(ok, want.ok) << "\"" << s << "\" at " << tps << " ticks a second";
      if (ok) {
        ++accepted;
        ASSERT_EQ(got, want.ticks) << "\"" << s << "\" at " << tps << " ticks a second";
      }
    }
  // the fuzzer must reach both outcomes often, or the comparison says little
  EXPECT_GT(compared, 150000);
  EXPECT_GT(accepted, 40000);
  EXPECT_GT(compared - accepted, 40000);
}

TEST(TemporalParse, DatesMatchTheSscanfParser) {
  int64_t accepted = 0;
  for (const std::string& s : fuzz_inputs()) {
    std::string date = s.substr(0, s.find_first_of(" T"));
    if (has_wide_number(date)) continue;
    int64_t want = 0, got = 0;
    const bool want_ok = old_parse_date(date, want);
    ASSERT_EQ(temporal::parse_date(date, got), want_ok) << "\"" << date << "\"";
    if (want_ok) {
      ++accepted;
      ASSERT_EQ(got, want) << "\"" << date << "\"";
    }
  }
  EXPECT_GT(accepted, 10000);
}

TEST(TemporalParse, DeliberateDifferences) {
  int64_t t = 0;
  EXPECT_FALSE(temporal::parse_timestamp("1970-01-01 -1:00:00", 1, t));
  EXPECT_FALSE(temporal::parse_timestamp("1970-01-01 00:-5:00", 1, t));
  // sscanf reads 4294969296 as 2000 (wrapped around): refused
  EXPECT_FALSE(temporal::parse_date("4294969296-01-01", t));
  EXPECT_FALSE(temporal::parse_timestamp("4294969296-01-01 00:00:00", 1, t));
  EXPECT_FALSE(temporal::parse_timestamp("2000-01-01 4294967296:00:00", 1, t));
  EXPECT_TRUE(temporal::parse_date("-2147483648-01-01", t));
  EXPECT_FALSE(temporal::parse_date("-2147483649-01-01", t));
  // year 300000 is 9.4e15 seconds: fits in seconds, not in nanoseconds
  EXPECT_TRUE(temporal::parse_timestamp("300000-01-01 00:00:00", 1, t));
  EXPECT_EQ(t, temporal::days_from_civil(300000, 1, 1) * 86400);
  EXPECT_FALSE(temporal::parse_timestamp("300000-01-01 00:00:00", 1000000000, t));
  EXPECT_FALSE(temporal::parse_timestamp("300000-01-01", 1000000000, t));
  EXPECT_TRUE(temporal::parse_timestamp("2262-04-11 23:47:16.854775807", 1000000000, t));
  EXPECT_EQ(t, INT64_MAX);
  EXPECT_FALSE(temporal::parse_timestamp("2262-04-11 23:47:16.854775808", 1000000000, t));
}

}  // namespace
}  // namespace tug
