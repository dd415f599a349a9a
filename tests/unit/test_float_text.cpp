// float_text (src/exec/float_text.hpp): the float <-> text conversions that the CPU and the CUDA
// evaluator share, checked against the reference algorithms they replace: format_value's
// snprintf/strtod loop (kept below as the oracle; float32 reads back with strtof) and std::from_chars.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/float_text.hpp"
#include "float_edge_strings.hpp"

namespace {

using tug::float_text::format_float;
using tug::float_text::parse_float;

// The formatting loop format_value used before float_text (float32 reading back through strtof).
template <typename F>
std::string oracle_format(F v) {
  const double d = v;
  auto reads_back = [&](const char* s) {
    if constexpr (std::is_same_v<F, float>)
      return std::strtof(s, nullptr) == v;
    else
      return std::strtod(s, nullptr) == v;
  };
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[400];
  double a = std::fabs(d);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    for (int p = 1; p <= 20; ++p) {
      std::snprintf(buf, sizeof buf, "%.*f", p, d);
      if (reads_back(buf)) break;
    }
    std::string s = buf;
    while (s.size() > 2 && s.back() == '0' && s[s.size() - 2] != '.')
      s.pop_back();
    return s;
  }
  std::snprintf(buf, sizeof buf, "%.17g", d);
  for (int p = 1; p <= 17; ++p) {
    char t[64];
    std::snprintf(t, sizeof t, "%.*g", p, d);
    if (reads_back(t)) {
      std::snprintf(buf, sizeof buf, "%s", t);
      break;
    }
  }
  return buf;
}

template <typename F>
std::string fmt(F v) {
  char buf[tug::float_text::max_format_length];
  return std::string(buf, static_cast<size_t>(format_float(v, buf)));
}

template <typename F>
int check_format(const std::vector<F>& values) {
  int bad = 0;
  for (F v : values) {
    const std::string want = oracle_format(v), got = fmt(v);
    if (want != got && ++bad <= 10) ADD_FAILURE() << "format of " << want << ": got " << got;
  }
  return bad;
}

std::vector<double> special_doubles() {
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           0.1,
                           0.3,
                           0.1 + 0.2,
                           1e-4,
                           1e16,
                           9999999999999998.0,
                           123456789012345678.0,
                           5e-324,
                           2.2250738585072014e-308,
                           2.2250738585072009e-308,
                           1.7976931348623157e308,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN()};
  auto around = [&](double x) {
    double lo = x, hi = x;
    for (int k = 0; k < 4; ++k) {
      lo = std::nextafter(lo, 0.0);
      hi = std::nextafter(hi, std::numeric_limits<double>::infinity());
      v.push_back(lo);
      v.push_back(hi);
      v.push_back(-lo);
      v.push_back(-hi);
    }
    v.push_back(x);
    v.push_back(-x);
  };
  for (int e = -1074; e <= 1023; ++e)
    around(std::ldexp(1.0, e));
  for (int e = -323; e <= 308; ++e)
    around(std::strtod(("1e" + std::to_string(e)).c_str(), nullptr));
  // exact ties of "%.*f" (odd multiples of 2^-j) and of "%.*g" (integers ending in 5)
  for (int j = 1; j <= 30; ++j)
    for (int k = 1; k < 200; k += 2)
      v.push_back(std::ldexp(static_cast<double>(k), -j));
  for (int64_t k = 5; k < 1000000000000000000LL; k = k * 10 + 5)
    v.push_back(static_cast<double>(k));
  return v;
}

TEST(FloatText, FormatDoubleSpecial) { EXPECT_EQ(check_format(special_doubles()), 0); }

TEST(FloatText, FormatDoubleRandom) {
  std::mt19937_64 rng(42);
  std::vector<double> v;
  for (int k = 0; k < 60000; ++k) {  // random bit patterns: mostly the %g branch
    const uint64_t b = rng();
    double d;
    std::memcpy(&d, &b, sizeof d);
    v.push_back(d);
  }
  // the plain range: random magnitudes and random short decimals
  std::uniform_real_distribution<double> ex(-4.5, 16.5);
  for (int k = 0; k < 150000; ++k)
    v.push_back(std::pow(10.0, ex(rng)) * (k % 2 ? 1 : -1));
  for (int k = 0; k < 100000; ++k) {
    const std::string s = std::to_string(rng() % 100000000) + "e" + std::to_string(static_cast<int>(rng() % 30) - 15);
    v.push_back(std::strtod(s.c_str(), nullptr));
  }
  EXPECT_EQ(check_format(v), 0);
}

TEST(FloatText, FormatFloat) {
  std::vector<float> v = {0.0f, -0.0f, 0.1f, 1.0f / 3, 1e-4f, 1e16f, 3.4028235e38f, 1.4e-45f, 1.17549435e-38f};
  for (int e = -149; e <= 127; ++e) {
    const float x = std::ldexp(1.0f, e);
    v.push_back(x);
    v.push_back(std::nextafter(x, 0.0f));
    v.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
  }
  std::mt19937_64 rng(7);
  for (int k = 0; k < 100000; ++k) {
    const auto b = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &b, sizeof f);
    v.push_back(f);
  }
  EXPECT_EQ(check_format(v), 0);
  EXPECT_EQ(fmt(0.1f), "0.1");
  EXPECT_EQ(fmt(-2.5f), "-2.5");
  EXPECT_EQ(fmt(1e20f), "1e+20");
  EXPECT_EQ(fmt(0.1), "0.1");
  EXPECT_EQ(fmt(-0.0), "-0.0");
  EXPECT_EQ(fmt(1e16), "1e+16");
  EXPECT_EQ(fmt(static_cast<double>(0.1f)), "0.10000000149011612");
}

// ---- parsing against std::from_chars ------------------------------------------------------------------

template <typename F>
bool oracle_parse(const std::string& s, F& out) {
  std::string_view v = s;
  if (!v.empty() && v[0] == '+') v.remove_prefix(1);
  if (v.empty()) return false;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  return r.ec == std::errc() && r.ptr == v.data() + v.size();
}

template <typename F>
int check_parse(const std::vector<std::string>& strings) {
  int bad = 0;
  for (const std::string& s : strings) {
    F want = 0, got = 0;
    const bool ok_want = oracle_parse(s, want), ok_got = parse_float(s.data(), static_cast<int64_t>(s.size()), got);
    const bool same = ok_want == ok_got && (!ok_want || std::memcmp(&want, &got, sizeof want) == 0);
    if (!same && ++bad <= 10)
      ADD_FAILURE() << (sizeof(F) == 8 ? "double" : "float") << " parse of \"" << s.substr(0, 80) << "\": want "
                    << ok_want << " " << want << ", got " << ok_got << " " << got;
  }
  return bad;
}

std::vector<std::string> adversarial_strings() {
  std::vector<std::string> v = tug::float_edge_strings();
  // halfway between two doubles (exact in long double): exactly, a hair above and below
  std::mt19937_64 rng(3);
  char buf[2000];
  for (int k = 0; k < 3000; ++k) {
    const uint64_t b = (rng() >> 1) & ~uint64_t{0} >> 1;
    double d;
    std::memcpy(&d, &b, sizeof d);
    if (!std::isfinite(d)) continue;
    const long double mid =
        (static_cast<long double>(d) + std::nextafter(d, std::numeric_limits<double>::infinity())) / 2;
    std::snprintf(buf, sizeof buf, "%.780Le", mid);
    std::string s = buf;
    const size_t e = s.find('e');
    std::string mant = s.substr(0, e), exp = s.substr(e);
    while (mant.back() == '0')
      mant.pop_back();
    v.push_back(mant + exp);
    v.push_back(mant + "0000000000000001" + exp);
    std::string below = mant;
    size_t j = below.size() - 1;
    while (below[j] == '0' || below[j] == '.')
      --j;
    below[j] = static_cast<char>(below[j] - 1);
    v.push_back(below + "9999999999999999999999" + exp);
  }
  // halfway between two floats (exact in double)
  for (int k = 0; k < 3000; ++k) {
    const auto b = static_cast<uint32_t>(rng() >> 33);
    float f;
    std::memcpy(&f, &b, sizeof f);
    if (!std::isfinite(f)) continue;
    const double mid = (static_cast<double>(f) + std::nextafter(f, std::numeric_limits<float>::infinity())) / 2;
    std::snprintf(buf, sizeof buf, "%.120e", mid);
    v.push_back(buf);
    std::snprintf(buf, sizeof buf, "%.20e", mid);
    v.push_back(buf);
  }
  return v;
}

std::vector<std::string> random_strings() {
  std::mt19937_64 rng(11);
  std::vector<std::string> v;
  char buf[64];
  for (int k = 0; k < 300000; ++k) {  // random doubles written with random precision
    const uint64_t b = rng();
    double d;
    std::memcpy(&d, &b, sizeof d);
    std::snprintf(buf, sizeof buf, "%.*g", static_cast<int>(rng() % 25) + 1, d);
    v.push_back(buf);
  }
  const char* alphabet = "0123456789012345678901234567890123456789..eE+-";
  for (int k = 0; k < 400000; ++k) {  // random digit strings, some malformed
    std::string s;
    if (rng() % 4 == 0) s += '-';
    const int len = static_cast<int>(rng() % 24) + 1;
    const bool free_form = rng() % 8 == 0;
    for (int j = 0; j < len; ++j)
      s += free_form ? alphabet[rng() % 46] : static_cast<char>('0' + rng() % 10);
    if (!free_form && rng() % 2) s.insert(rng() % (s.size() + 1), ".");
    if (!free_form && rng() % 2) s += "e" + std::to_string(static_cast<int>(rng() % 700) - 350);
    v.push_back(s);
  }
  for (int k = 0; k < 200000; ++k) {  // 19 and 20 digit mantissas
    std::snprintf(buf, sizeof buf, "%llu%llue%d", static_cast<unsigned long long>(rng() % 10000000000ULL),
                  static_cast<unsigned long long>(rng() % 10000000000ULL), static_cast<int>(rng() % 80) - 40);
    v.push_back(buf);
  }
  return v;
}

TEST(FloatText, ParseAdversarial) {
  const auto v = adversarial_strings();
  EXPECT_EQ(check_parse<double>(v), 0);
  EXPECT_EQ(check_parse<float>(v), 0);
}

TEST(FloatText, ParseRandom) {
  const auto v = random_strings();
  EXPECT_EQ(check_parse<double>(v), 0);
  EXPECT_EQ(check_parse<float>(v), 0);
}

TEST(FloatText, RoundTrip) {  // what format_float writes, parse_float reads back bit for bit
  std::mt19937_64 rng(5);
  for (int k = 0; k < 100000; ++k) {
    const uint64_t b = rng();
    double d, back;
    std::memcpy(&d, &b, sizeof d);
    if (std::isnan(d)) continue;
    const std::string s = fmt(d);
    ASSERT_TRUE(parse_float(s.data(), static_cast<int64_t>(s.size()), back)) << s;
    ASSERT_EQ(std::memcmp(&d, &back, sizeof d), 0) << s;
  }
}

}  // namespace

namespace {

// The CSV writer's fast path: in the plain range, std::to_chars's shortest fixed text (plus ".0" for a
// whole number) is format_float's text, for float64 and float32.
template <typename F>
std::string to_chars_fixed(F v) {
  char buf[400];
  auto res = std::to_chars(buf, buf + sizeof buf - 2, v, std::chars_format::fixed);
  std::string s(buf, res.ptr);
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

template <typename F>
std::string format_text(F v) {
  char buf[400];
  return std::string(buf, static_cast<size_t>(format_float(v, buf)));
}

TEST(FloatText, ToCharsMatchesInThePlainRange) {
  std::mt19937_64 rng(11);
  int64_t tested = 0;
  for (int k = 0; k < 400000; ++k) {
    // mantissas of 1 to 53 bits scaled into [1e-4, 1e16), and prices of two decimals
    const double d = k % 3 == 2 ? static_cast<double>(rng() % 10000000) / 100.0
                                : std::ldexp(static_cast<double>(rng() >> (11 + rng() % 53)), static_cast<int>(rng() % 100) - 60);
    for (double x : {d, -d}) {
      const double a = std::fabs(x);
      if (!(a == 0 || (a >= 1e-4 && a < 1e16))) continue;
      ++tested;
      ASSERT_EQ(to_chars_fixed(x), format_text(x)) << x;
      const auto f = static_cast<float>(x);
      const double af = std::fabs(static_cast<double>(f));
      if (af == 0 || (af >= 1e-4 && af < 1e16)) ASSERT_EQ(to_chars_fixed(f), format_text(f)) << f;
    }
  }
  EXPECT_GT(tested, 500000);
}

}  // namespace
