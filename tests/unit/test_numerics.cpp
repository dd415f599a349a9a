// Numerics the random differential run caught (CPU engine; test_cuda_numerics.cpp runs the same cases
// on the GPU against it): std / var of identical values, NaN and infinities (exec/moments.hpp, one
// algorithm for both backends); decimals read as floats, correctly rounded in one place
// (float_text::decimal_to_float) for casts and aggregations alike; decimal results past their
// precision raise; the sign of a zero median / quantile.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include <unistd.h>

#include "exec/float_text.hpp"
#include "exec/moments.hpp"
#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"

using namespace tug;

namespace {

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_v = std::numeric_limits<double>::infinity();

engine_options with_target(int64_t target) {
  engine_options o = cpu_engine();
  o.target_partition_rows = target;
  return o;
}

// The float64 cell (c, r) of `t`; NaN for null (callers check nulls separately).
double cell(const table& t, size_t c, int64_t r) { return t[c].is_null(r) ? nan_v : t[c].value<double>(r); }

// A decimal(p, s) column of unscaled values.
column dec(int p, int s, const std::vector<std::optional<__int128>>& v) {
  return make_column<__int128>(decimal(p, s), v);
}

__int128 pow10(int e) {
  __int128 p = 1;
  for (int i = 0; i < e; ++i)
    p *= 10;
  return p;
}

// Text "unscaled[e-scale]" of a decimal, which std::from_chars reads correctly rounded.
std::string sci_text(__int128 v, int scale) {
  unsigned __int128 u = v < 0 ? 0 - static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string d;
  do {
    d.insert(d.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u);
  return (v < 0 ? "-" : "") + d + "e-" + std::to_string(scale);
}

// std, var (ddof 1 and 0) of "x" by "k" as group_by, as a window over "k" (first row of each group's
// value) and, for one group, as a global select: three frames whose float columns are sd, var, var0.
std::vector<data_frame> variance_frames(const data_frame& df, const engine_options& o) {
  std::vector<expr> aggs = {col("x").std().alias("sd"), col("x").var().alias("var"), col("x").var(0).alias("var0")};
  std::vector<data_frame> out;
  out.push_back(df.lazy().group_by(std::vector<std::string>{"k"}, true).agg(aggs).drop({"k"}).collect(o));
  out.push_back(df.lazy()
                    .select({col("x").std().over({"k"}).alias("sd"), col("x").var().over({"k"}).alias("var"),
                             col("x").var(0).over({"k"}).alias("var0")})
                    .collect(o));
  out.push_back(df.lazy().select(aggs).collect(o));
  return out;
}

// n copies of `x` (some nulls between them when `nulls`) in one group "k" = 1.
data_frame constant_frame(const column& x, int64_t n) {
  return data_frame::from_columns(
      {{"k", i64(std::vector<std::optional<int64_t>>(static_cast<size_t>(n), 1))}, {"x", x}});
}

// Group g (key "k" = g) holds the values groups[g] of float64 column "x".
data_frame grouped(const std::vector<std::vector<double>>& groups) {
  std::vector<std::optional<int64_t>> k;
  std::vector<std::optional<double>> x;
  for (size_t g = 0; g < groups.size(); ++g)
    for (double v : groups[g]) {
      k.push_back(static_cast<int64_t>(g));
      x.push_back(v);
    }
  return data_frame::from_columns({{"k", i64(k)}, {"x", f64(x)}});
}

template <typename T>
column repeat(const data_type& t, T v, int64_t n, bool nulls) {
  std::vector<std::optional<T>> vals;
  for (int64_t i = 0; i < n; ++i)
    vals.push_back(nulls && i % 5 == 3 ? std::nullopt : std::optional<T>(v));
  return make_column<T>(t, vals);
}

}  // namespace

// ---- the shared algorithm -------------------------------------------------------------------------------

TEST(Moments, CenterIsClampedIntoTheRange) {
  EXPECT_EQ(moments::center(10.0, 4.0, 1.0, 4.0), 2.5);
  EXPECT_EQ(moments::center(100.0, 4.0, 1.0, 4.0), 4.0);  // a sum rounded too far stays within the values
  EXPECT_EQ(moments::center(-100.0, 4.0, 1.0, 4.0), 1.0);
  EXPECT_EQ(moments::center(5.0, 0.0, 1.0, 4.0), 0.0);  // no values
  EXPECT_TRUE(std::isnan(moments::center(nan_v, 3.0, 1.0, 4.0)));
  EXPECT_EQ(moments::center(inf_v, 3.0, 1.0, inf_v), inf_v);
}

TEST(Moments, SecondMomentIsNeverNegativeAndKeepsNaN) {
  EXPECT_EQ(moments::m2(1e-3, 0.0, 2.0), 0.0);  // rounding below zero
  EXPECT_EQ(moments::m2(-2048.0, 3.0 * 2048 * 2048, 3.0), 3.0 * 2048 * 2048 - 2048.0 * 2048 / 3);
  EXPECT_TRUE(std::isnan(moments::m2(nan_v, 1.0, 2.0)));
  EXPECT_TRUE(std::isnan(moments::m2(1.0, nan_v, 2.0)));
  EXPECT_EQ(moments::variance(8.0, 5, 1, false), 2.0);
  EXPECT_EQ(moments::variance(8.0, 5, 1, true), std::sqrt(2.0));
  EXPECT_FALSE(moments::has_variance(1, 1));
  EXPECT_TRUE(moments::has_variance(1, 0));
}

// ---- std / var ----------------------------------------------------------------------------------------

TEST(Variance, IdenticalValuesGiveExactlyZero) {
  // the case: 15 copies of an int64 whose mean rounds away from the value in float64
  std::vector<std::pair<std::string, column>> columns;
  for (int64_t n : {2, 3, 15, 31, 32, 33, 1024}) {
    for (bool nulls : {false, true}) {
      std::string tag = "n=" + std::to_string(n) + (nulls ? " with nulls" : "");
      columns.push_back({"i64 " + tag, repeat<int64_t>(type_id::int64, -5435833015522271204LL, n, nulls)});
      columns.push_back(
          {"i64 max " + tag, repeat<int64_t>(type_id::int64, std::numeric_limits<int64_t>::max(), n, nulls)});
      columns.push_back({"u64 1.5e19 " + tag, repeat<uint64_t>(type_id::uint64, 15000000000000000001ULL, n, nulls)});
      columns.push_back({"f64 0.1 " + tag, repeat<double>(type_id::float64, 0.1, n, nulls)});
      columns.push_back({"f64 -1e300 " + tag, repeat<double>(type_id::float64, -1e300, n, nulls)});
      columns.push_back({"f64 1e-310 " + tag, repeat<double>(type_id::float64, 1e-310, n, nulls)});
      columns.push_back({"f32 0.1 " + tag, repeat<float>(type_id::float32, 0.1f, n, nulls)});
      columns.push_back({"decimal(38,30) 0.1 " + tag, repeat<__int128>(decimal(38, 30), pow10(29), n, nulls)});
      columns.push_back({"decimal(38,0) " + tag, repeat<__int128>(decimal(38, 0), pow10(37) * 3 + 7, n, nulls)});
    }
  }
  for (auto& [what, x] : columns) {
    for (int64_t target : {int64_t{1} << 20, int64_t{7}, int64_t{1}}) {
      SCOPED_TRACE(what + " target=" + std::to_string(target));
      for (const data_frame& f : variance_frames(constant_frame(x, x.size()), with_target(target))) {
        table t = f.to_table();
        for (int64_t r = 0; r < t.num_rows(); ++r)
          for (size_t c = 0; c < 3; ++c)
            EXPECT_EQ(cell(t, c, r), 0.0) << "column " << c << " row " << r;
      }
    }
  }
}

TEST(Variance, NaNAndInfinitiesGiveNaN) {
  // as Polars: a NaN or an infinity anywhere in the group makes std and var NaN; one value has no
  // sample variance (null) but a population variance (NaN for NaN and inf)
  struct group {
    std::vector<double> x;
    bool var_null;  // ddof 1 of a single value
  };
  std::vector<group> groups = {
      {{1.0, nan_v, 2.0}, false}, {{1.0, inf_v, 2.0}, false}, {{inf_v, inf_v}, false}, {{-inf_v, 1.0}, false},
      {{inf_v, -inf_v}, false},   {{nan_v, nan_v}, false},    {{nan_v}, true},         {{inf_v}, true},
      {{5.0, 5.0, nan_v}, false}};
  std::vector<std::vector<double>> values;
  for (auto& g : groups)
    values.push_back(g.x);
  auto df = grouped(values);
  for (int64_t target : {int64_t{1} << 20, int64_t{2}, int64_t{1}}) {
    SCOPED_TRACE("target=" + std::to_string(target));
    auto out = df.lazy()
                   .group_by(std::vector<std::string>{"k"}, true)
                   .agg({col("x").std().alias("sd"), col("x").var().alias("var"), col("x").var(0).alias("var0")})
                   .collect(with_target(target));
    table t = out.to_table();
    ASSERT_EQ(t.num_rows(), static_cast<int64_t>(groups.size()));
    for (size_t g = 0; g < groups.size(); ++g) {
      SCOPED_TRACE("group " + std::to_string(g));
      auto r = static_cast<int64_t>(g);
      EXPECT_EQ(t[1].is_null(r), groups[g].var_null);
      EXPECT_EQ(t[2].is_null(r), groups[g].var_null);
      if (!groups[g].var_null) {
        EXPECT_TRUE(std::isnan(cell(t, 1, r))) << cell(t, 1, r);
        EXPECT_TRUE(std::isnan(cell(t, 2, r))) << cell(t, 2, r);
      }
      EXPECT_TRUE(std::isnan(cell(t, 3, r))) << cell(t, 3, r);
    }
  }
}

TEST(Variance, LargeMagnitudesAreExact) {
  // 1.5e19 as float64 is a multiple of 2048: a, a and a + 4096 have the exact variance 4096^2 / 3
  // (DuckDB gives 4194304 and Polars 8388608, both off by the inexact mean)
  auto df = data_frame::from_columns(
      {{"k", i64({1, 1, 1})},
       {"x", make_column<uint64_t>(
                 type_id::uint64, std::vector<std::optional<uint64_t>>{15000000000000000000ULL, 15000000000000000001ULL,
                                                                       15000000000000004096ULL})}});
  for (int64_t target : {int64_t{1} << 20, int64_t{1}}) {
    table t = df.lazy().select({col("x").var().alias("v")}).collect(with_target(target)).to_table();
    EXPECT_DOUBLE_EQ(cell(t, 0, 0), 4096.0 * 4096.0 / 3.0) << "target " << target;
  }
}

TEST(Variance, AccurateAroundALargeOffset) {
  // values 1e9 + j / 4 (exact in float64): the exact variance from integer sums of 4x, against the
  // engine's over one and many partitions
  std::mt19937_64 rng(42);
  for (int64_t n : {2, 33, 1024, 5000}) {
    std::vector<std::optional<int64_t>> k;
    std::vector<std::optional<double>> x;
    __int128 s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t q = 4000000000LL + static_cast<int64_t>(rng() % 4001) - 2000;  // 4 * value
      k.push_back(1);
      x.push_back(static_cast<double>(q) / 4.0);
      s1 += q;
      s2 += static_cast<__int128>(q) * q;
    }
    // var = (n s2 - s1^2) / (16 n (n - 1))
    long double want = static_cast<long double>(static_cast<__int128>(n) * s2 - s1 * s1) /
                       (16.0L * static_cast<long double>(n) * static_cast<long double>(n - 1));
    auto df = data_frame::from_columns({{"k", i64(k)}, {"x", f64(x)}});
    // one partition: the two passes over the rows; several: partial states merged, whose float64
    // means (1e9 to within 6e-8) bound the error to about eps * mean / std
    for (auto [target, tolerance] : {std::pair{int64_t{1} << 20, 1e-12}, std::pair{int64_t{31}, 1e-9}}) {
      for (const data_frame& f : variance_frames(df, with_target(target))) {
        double got = cell(f.to_table(), 1, 0);
        EXPECT_NEAR(got, static_cast<double>(want), tolerance * static_cast<double>(want))
            << "n=" << n << " target=" << target;
      }
    }
  }
}

TEST(Variance, MergedStatesMatchOnePass) {
  // groups split over partitions merge their (count, mean, M2) states: the same result as one
  // partition, to the last bits for identical values and to 1e-12 otherwise
  std::vector<std::optional<int64_t>> k;
  std::vector<std::optional<double>> x;
  for (int i = 0; i < 500; ++i) {
    k.push_back(i % 7);
    x.push_back(i % 7 == 3    ? std::optional<double>(0.3)
                : i % 11 == 0 ? std::nullopt
                              : std::optional<double>(i * 0.37 - 50));
  }
  auto df = data_frame::from_columns({{"k", i64(k)}, {"x", f64(x)}});
  table one = df.lazy()
                  .group_by(std::vector<std::string>{"k"}, true)
                  .agg({col("x").var().alias("v")})
                  .collect(with_target(1 << 20))
                  .to_table();
  for (int64_t target : {1, 2, 7, 64}) {
    table many = df.lazy()
                     .group_by(std::vector<std::string>{"k"}, true)
                     .agg({col("x").var().alias("v")})
                     .collect(with_target(target))
                     .to_table();
    for (int64_t r = 0; r < 7; ++r) {
      if (r == 3) EXPECT_EQ(cell(many, 1, r), 0.0);
      EXPECT_NEAR(cell(many, 1, r), cell(one, 1, r), 1e-12 * cell(one, 1, r)) << "group " << r << " target " << target;
    }
  }
}

// ---- decimals to floats ----------------------------------------------------------------------------------

namespace {

// Decimals whose float64 value is hard to get right: random digit counts and scales, the edges of
// 2^53 and 10^38, and values exactly halfway between two doubles (and one unit off each way).
std::vector<std::pair<__int128, int>> decimal_cases() {
  std::vector<std::pair<__int128, int>> v;
  std::mt19937_64 rng(7);
  const __int128 max38 = pow10(38) - 1;
  for (int s = 0; s <= 38; ++s) {
    for (__int128 u : {__int128{1}, __int128{3}, __int128{7}, pow10(s > 0 ? s - 1 : 0), (__int128{1} << 53) - 1,
                       __int128{1} << 53, (__int128{1} << 53) + 1, (__int128{1} << 64) + 1, max38, max38 / 3})
      for (int sign : {1, -1})
        v.push_back({sign * u, s});
  }
  for (int k = 0; k < 20000; ++k) {
    int digits = 1 + static_cast<int>(rng() % 38);
    __int128 u = 0;
    for (int d = 0; d < digits; ++d)
      u = u * 10 + static_cast<int>(rng() % 10);
    v.push_back({rng() % 2 ? u : -u, static_cast<int>(rng() % 39)});
  }
  // halfway points m2 * 2^e2 with m2 = 2m + 1 odd of 54 bits: integers for e2 >= 0, else m2 * 5^-e2 at
  // scale -e2 (while that fits 38 digits)
  for (int k = 0; k < 3000; ++k) {
    __int128 m2 = static_cast<__int128>(((rng() >> 11) | (uint64_t{1} << 52)) * 2 + 1);
    int e2 = static_cast<int>(rng() % 95) - 31;  // [-31, 63]
    __int128 u;
    int scale;
    if (e2 >= 0) {
      u = m2 << e2;
      if (u > max38) continue;
      scale = 0;
      while (scale < 38 && u <= max38 / 10 && rng() % 2) {  // trailing zeros, the same value
        u *= 10;
        ++scale;
      }
    } else {
      u = m2;
      for (int j = 0; j < -e2; ++j)
        u *= 5;
      if (u > max38) continue;
      scale = -e2;
    }
    for (int off : {0, 1, -1})
      v.push_back({(k % 2 ? u : -u) + off, scale});
  }
  return v;
}

}  // namespace

TEST(DecimalToFloat, CorrectlyRoundedAsFromChars) {
  int bad = 0;
  for (auto [u, s] : decimal_cases()) {
    const std::string text = sci_text(u, s);
    double want = 0;
    float want_f = 0;
    std::from_chars(text.data(), text.data() + text.size(), want);
    std::from_chars(text.data(), text.data() + text.size(), want_f);
    const double got = float_text::decimal_to_float<double>(u, s);
    const float got_f = float_text::decimal_to_float<float>(u, s);
    if ((std::memcmp(&got, &want, sizeof got) != 0 || std::memcmp(&got_f, &want_f, sizeof got_f) != 0) && ++bad <= 10)
      ADD_FAILURE() << text << ": want " << want << " / " << want_f << ", got " << got << " / " << got_f;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(float_text::decimal_to_float<double>(pow10(29), 30), 0.1);  // not 0.09999999999999999
  EXPECT_EQ(float_text::decimal_to_float<double>(1, 1), 0.1);
  EXPECT_FALSE(std::signbit(float_text::decimal_to_float<double>(0, 5)));
}

TEST(DecimalToFloat, MatchesPythonFloatOfDecimal) {
  // Python's float(Decimal(text)) is the oracle the issue names: every 10th case, written out and read
  // back by one Python process that prints float.hex() of each
  std::vector<std::pair<__int128, int>> cases;
  auto all = decimal_cases();
  for (size_t i = 0; i < all.size(); i += 10)
    cases.push_back(all[i]);
  const std::string base =
      (std::filesystem::temp_directory_path() / ("tug_numerics_" + std::to_string(::getpid()))).string();
  const std::string in = base + "_decimals.txt", out = base + "_floats.txt";
  {
    std::ofstream f(in);
    for (auto [u, s] : cases)
      f << sci_text(u, s) << "\n";
  }
  const std::string cmd = test_python() +
                          " -c \"import sys, decimal; "
                          "open(sys.argv[2], 'w').write(''.join(float(decimal.Decimal(l)).hex() + chr(10) "
                          "for l in open(sys.argv[1]).read().split()))\" " +
                          in + " " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out);
  int bad = 0;
  for (auto [u, s] : cases) {
    std::string hex;
    ASSERT_TRUE(static_cast<bool>(f >> hex));
    const double want = std::strtod(hex.c_str(), nullptr);
    const double got = float_text::decimal_to_float<double>(u, s);
    if (std::memcmp(&got, &want, sizeof got) != 0 && ++bad <= 10)
      ADD_FAILURE() << sci_text(u, s) << ": Python " << hex << ", got " << got;
  }
  EXPECT_EQ(bad, 0);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

TEST(DecimalToFloat, CastAndAggregationsAgree) {
  // the case: a one-row group's quantile is the row's own value, so x < quantile is false;
  // the cast, mean, median and quantile all read the decimal as the same double
  std::vector<std::optional<__int128>> vals = {pow10(29), 7 * pow10(29), 123 * pow10(28), -pow10(29) * 3, pow10(37) + 1,
                                               1,         pow10(38) - 1};
  std::vector<std::optional<int64_t>> k;
  for (size_t i = 0; i < vals.size(); ++i)
    k.push_back(static_cast<int64_t>(i));
  auto df = data_frame::from_columns({{"k", i64(k)}, {"x", dec(38, 30, vals)}});
  for (int64_t target : {int64_t{1} << 20, int64_t{2}}) {
    auto o = with_target(target);
    table t = df.lazy()
                  .select({col("x").cast(type_id::float64).alias("cast"),
                           col("x").quantile(0.75, "linear").over({"k"}).alias("q"),
                           col("x").median().over({"k"}).alias("med"), col("x").mean().over({"k"}).alias("mean"),
                           (col("x") < col("x").quantile(0.75, "linear").over({"k"})).alias("lt")})
                  .collect(o)
                  .to_table();
    for (size_t i = 0; i < vals.size(); ++i) {
      auto r = static_cast<int64_t>(i);
      const double want = float_text::decimal_to_float<double>(*vals[i], 30);
      EXPECT_EQ(cell(t, 0, r), want) << "row " << i;
      EXPECT_EQ(cell(t, 1, r), want) << "row " << i;
      EXPECT_EQ(cell(t, 2, r), want) << "row " << i;
      EXPECT_EQ(cell(t, 3, r), want) << "row " << i;
      EXPECT_FALSE(t[4].value<bool>(r)) << "row " << i;
    }
    // float32 directly from the decimal (not through a double: no double rounding)
    table f = df.lazy().select({col("x").cast(type_id::float32).alias("f")}).collect(o).to_table();
    for (size_t i = 0; i < vals.size(); ++i)
      EXPECT_EQ(f[0].value<float>(static_cast<int64_t>(i)), float_text::decimal_to_float<float>(*vals[i], 30));
  }
}

// ---- decimal overflow --------------------------------------------------------------------------------

namespace {

const __int128 max38 = pow10(38) - 1;  // 99999999.999999999999999999999999999999 at scale 30

// The compute_error message of collecting `lf` on the CPU engine ("" when none).
std::string cpu_error(const lazy_frame& lf) { return collect_error(lf, with_target(1 << 20)); }

}  // namespace

TEST(DecimalOverflow, RoundingPastThePrecisionRaises) {
  auto df = data_frame::from_columns({{"x", dec(38, 30, {max38, std::nullopt})}, {"y", dec(38, 30, {-max38, 5})}});
  std::string e = cpu_error(df.lazy().select({col("x").ceil()}));
  EXPECT_NE(e.find("decimal overflow in col(\"x\").ceil()"), std::string::npos) << e;
  EXPECT_NE(e.find("99999999.999999999999999999999999999999 rounds to 100000000.000000000000000000000000000000"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("decimal[38,30]"), std::string::npos) << e;
  EXPECT_NE(cpu_error(df.lazy().select({col("x").round(2)})).find("round(2)"), std::string::npos);
  EXPECT_NE(cpu_error(df.lazy().select({col("y").floor()})).find("floor()"), std::string::npos);
  // the same value rounded within its precision, and a null row, do not raise
  EXPECT_EQ(cpu_error(df.lazy().select({col("x").round(35)})), "");
  EXPECT_EQ(cpu_error(df.lazy().select({col("x").floor(), col("y").ceil()})), "");
}

TEST(DecimalOverflow, RoundingGrowsThePrecisionByOneDigit) {
  // as Polars: 99999999.99 as decimal(10, 2) ceils to 100000000.00, an 11-digit decimal(11, 2)
  auto df = data_frame::from_columns({{"x", dec(10, 2, {9999999999, -9999999949, 150})}});
  auto out = df.lazy()
                 .select({col("x").ceil().alias("c"), col("x").floor().alias("f"), col("x").round(1).alias("r1"),
                          col("x").round(2).alias("r2")})
                 .collect(with_target(1 << 20));
  EXPECT_EQ(out.schema().to_string(), "c: decimal[11,2], f: decimal[11,2], r1: decimal[11,2], r2: decimal[10,2]");
  EXPECT_EQ(rows_of(out),
            (std::vector<std::string>{"100000000.00|99999999.00|100000000.00|99999999.99",
                                      "-99999999.00|-100000000.00|-99999999.50|-99999999.49", "2.00|1.00|1.50|1.50"}));
}

TEST(DecimalOverflow, ArithmeticPast38DigitsRaises) {
  auto df = data_frame::from_columns({{"x", dec(38, 30, {max38, 1})}, {"y", dec(38, 30, {1, std::nullopt})}});
  std::string add = cpu_error(df.lazy().select({col("x") + col("y")}));
  EXPECT_NE(add.find("decimal overflow in [col(\"x\") + col(\"y\")]: 99999999.999999999999999999999999999999 + "
                     "0.000000000000000000000000000001 = 100000000.000000000000000000000000000000 does not fit"),
            std::string::npos)
      << add;
  EXPECT_NE(cpu_error(df.lazy().select({col("y") - col("x") - col("x")})).find("decimal overflow"), std::string::npos);
  EXPECT_NE(cpu_error(df.lazy().select({col("x") * col("x")})).find("decimal overflow"), std::string::npos);
  // a null operand never raises; results within 38 digits do not
  auto nulls = data_frame::from_columns({{"a", dec(38, 30, {max38, max38})}, {"b", dec(38, 30, {std::nullopt, -1})}});
  EXPECT_EQ(cpu_error(nulls.lazy().select({col("a") + col("b")})), "");
  EXPECT_EQ(cpu_error(df.lazy().select({col("x") - col("y")})), "");
}

TEST(DecimalOverflow, SumsAreExactAndRaisePast38Digits) {
  // 9e37 + 9e37 - 9e37 wraps 128 bits partway in row order (2^127 ~ 1.7e38): the sum is exact
  const __int128 big = pow10(37) * 9, six = pow10(37) * 6;
  auto ok = data_frame::from_columns({{"k", i64({1, 1, 1})}, {"x", dec(38, 0, {big, big, -big})}});
  auto over = data_frame::from_columns({{"k", i64({1, 1, 2})}, {"x", dec(38, 0, {six, six, -six})}});
  auto wide = data_frame::from_columns({{"x", dec(38, 0, {big, big, big, std::nullopt})}});
  for (int64_t target : {int64_t{1} << 20, int64_t{1}}) {
    auto o = with_target(target);
    auto sum = ok.lazy().group_by(std::vector<std::string>{"k"}).agg({col("x").sum()}).collect(o);
    EXPECT_EQ(rows_of(sum), std::vector<std::string>{"1|90000000000000000000000000000000000000"}) << target;
    std::string e = collect_error(over.lazy().group_by(std::vector<std::string>{"k"}).agg({col("x").sum()}), o);
    EXPECT_NE(e.find("decimal overflow in sum"), std::string::npos) << e;
    EXPECT_NE(e.find("120000000000000000000000000000000000000 has more than 38 digits"), std::string::npos) << e;
    EXPECT_NE(e.find("decimal[38,0]"), std::string::npos) << e;
    e = collect_error(wide.lazy().select({col("x").sum()}), o);
    EXPECT_NE(e.find("a group's sum does not fit in 128 bits"), std::string::npos) << e;
  }
}

// ---- the sign of a zero median ------------------------------------------------------------------------

TEST(Quantile, NegativeZeroSortsBelowZero) {
  // -0.0 sorts below 0.0, so the zero picked is the same whatever the order of the rows (and on both
  // backends): the median of {0.0, -0.0} is the lower one, -0.0; of {0.0, 0.0} it is 0.0
  struct group {
    std::vector<double> x;
    bool negative;  // median and quantile(0.5, "lower") are -0.0
  };
  std::vector<group> groups = {
      {{-0.0, 0.0}, true},       {{0.0, -0.0}, true},       {{0.0, 0.0}, false},           {{-0.0}, true},
      {{0.0, 0.0, -0.0}, false}, {{-0.0, 0.0, -0.0}, true}, {{-1.0, 0.0, -0.0, 2.0}, true}};
  std::vector<std::vector<double>> values;
  for (auto& g : groups)
    values.push_back(g.x);
  auto df = grouped(values);
  for (int64_t target : {int64_t{1} << 20, int64_t{1}}) {
    table t = df.lazy()
                  .group_by(std::vector<std::string>{"k"}, true)
                  .agg({col("x").median().alias("m"), col("x").quantile(0.5, "lower").alias("lo"),
                        col("x").quantile(0.5, "linear").alias("lin")})
                  .collect(with_target(target))
                  .to_table();
    for (size_t g = 0; g < groups.size(); ++g) {
      auto r = static_cast<int64_t>(g);
      for (size_t c = 1; c <= 3; ++c) {
        EXPECT_EQ(cell(t, c, r), 0.0) << "group " << g << " column " << c;
        EXPECT_EQ(std::signbit(cell(t, c, r)), groups[g].negative) << "group " << g << " column " << c;
      }
    }
  }
}
