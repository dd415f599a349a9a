// The numerics of test_numerics.cpp on the GPU engine against the CPU engine (skipped without a GPU):
// std / var of identical values exactly 0 and of NaN / infinities NaN on the hash aggregation, the
// sort-based one and both window operators (exec/moments.hpp); decimals read as floats (casts in the
// expression evaluator, aggregations) bit for bit as on the CPU; decimal results past their precision
// raise the CPU's error; the sign of a zero median.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/memory/device.hpp"

using namespace tug;

namespace {

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_v = std::numeric_limits<double>::infinity();

__int128 pow10(int e) {
  __int128 p = 1;
  for (int i = 0; i < e; ++i)
    p *= 10;
  return p;
}

std::vector<int64_t> targets() { return {int64_t{1} << 20, 7, 1}; }

// Groups of identical values: group g (key k = g, ks = "g<g>") holds `size` copies of its own value
// in every column, nulls between them.
data_frame constant_groups(int groups, int size) {
  std::vector<std::optional<int64_t>> k, i64v;
  std::vector<std::optional<std::string>> ks;
  std::vector<std::optional<uint64_t>> u64v;
  std::vector<std::optional<double>> f64v;
  std::vector<std::optional<float>> f32v;
  std::vector<std::optional<__int128>> decv;
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < size; ++i) {
      bool null = i % 4 == 2;
      k.push_back(g);
      ks.push_back("g" + std::to_string(g));
      i64v.push_back(null ? std::nullopt : std::optional<int64_t>(-5435833015522271204LL + g * 1000003));
      u64v.push_back(null ? std::nullopt : std::optional<uint64_t>(15000000000000000001ULL + static_cast<uint64_t>(g)));
      f64v.push_back(null ? std::nullopt : std::optional<double>(0.1 * (g + 1)));
      f32v.push_back(null ? std::nullopt : std::optional<float>(0.1f * static_cast<float>(g + 1)));
      decv.push_back(null ? std::nullopt : std::optional<__int128>(pow10(29) * (g + 1) + 7));
    }
  return data_frame::from_columns({{"k", i64(k)},
                                   {"ks", str(ks)},
                                   {"i64", i64(i64v)},
                                   {"u64", make_column<uint64_t>(type_id::uint64, u64v)},
                                   {"f64", f64(f64v)},
                                   {"f32", make_column<float>(type_id::float32, f32v)},
                                   {"dec", make_column<__int128>(decimal(38, 30), decv)}});
}

// Group g (keys "k" = g and "ks" = "g<g>") holds the values groups[g] of float64 column "x".
data_frame grouped(const std::vector<std::vector<double>>& groups) {
  std::vector<std::optional<int64_t>> k;
  std::vector<std::optional<std::string>> ks;
  std::vector<std::optional<double>> x;
  for (size_t g = 0; g < groups.size(); ++g)
    for (double v : groups[g]) {
      k.push_back(static_cast<int64_t>(g));
      ks.push_back("g" + std::to_string(g));
      x.push_back(v);
    }
  return data_frame::from_columns({{"k", i64(k)}, {"ks", str(ks)}, {"x", f64(x)}});
}

std::vector<expr> variance_aggs(const std::vector<std::string>& columns) {
  std::vector<expr> v;
  for (auto& c : columns) {
    v.push_back(col(c).std().alias(c + "_sd"));
    v.push_back(col(c).var().alias(c + "_var"));
    v.push_back(col(c).var(0).alias(c + "_var0"));
  }
  return v;
}

// Every float64 cell of `f` after its first `skip` columns is exactly 0.
void expect_all_zero(const data_frame& f, size_t skip, const std::string& what) {
  table t = f.to_table();
  for (size_t c = skip; c < t.num_columns(); ++c)
    for (int64_t r = 0; r < t.num_rows(); ++r) {
      ASSERT_FALSE(t[c].is_null(r)) << what << " " << f.schema()[c].name << " row " << r;
      EXPECT_EQ(t[c].value<double>(r), 0.0) << what << " " << f.schema()[c].name << " row " << r;
    }
}

}  // namespace

TEST(CudaNumerics, IdenticalValuesHaveZeroVariance) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  data_frame df = constant_groups(5, 40);
  // int64 keys hash (hash_aggregate, hash_window); string keys and decimal inputs sort
  std::vector<std::string> hashed = {"i64", "u64", "f64", "f32"}, all = {"i64", "u64", "f64", "f32", "dec"};
  for (int64_t target : targets()) {
    SCOPED_TRACE("target=" + std::to_string(target));
    for (bool gpu : {true, false}) {
      engine_options o = engine_with(gpu, target);
      std::string what = gpu ? "gpu" : "cpu";
      expect_all_zero(df.lazy().group_by(std::vector<std::string>{"k"}).agg(variance_aggs(hashed)).collect(o), 1,
                      what + " hash group_by");
      expect_all_zero(df.lazy().group_by(std::vector<std::string>{"ks"}).agg(variance_aggs(all)).collect(o), 1,
                      what + " sort group_by");
      expect_all_zero(df.lazy().filter(col("k") == 3).select(variance_aggs(all)).collect(o), 0, what + " global");
      std::vector<expr> windows;
      for (auto& c : hashed)
        windows.push_back(col(c).var().over({"k"}).alias(c + "_wk"));
      for (auto& c : all)
        windows.push_back(col(c).std().over({"ks"}).alias(c + "_ws"));
      expect_all_zero(df.lazy().select(windows).collect(o), 0, what + " windows");
    }
  }
}

TEST(CudaNumerics, NaNAndInfinitiesMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<std::vector<double>> groups = {{1.0, nan_v, 2.0}, {1.0, inf_v, 2.0}, {inf_v, inf_v}, {-inf_v, 1.0},
                                             {inf_v, -inf_v},   {nan_v, nan_v},    {nan_v},        {inf_v},
                                             {5.0, 5.0, nan_v}, {3.0, 4.0}};
  auto df = grouped(groups);
  for (int64_t target : targets()) {
    SCOPED_TRACE("target=" + std::to_string(target));
    auto aggs = variance_aggs({"x"});
    for (const char* key : {"k", "ks"}) {
      auto q = df.lazy().group_by(std::vector<std::string>{key}, true).agg(aggs);
      expect_frames_close(q.collect(engine_with(true, target)), q.collect(engine_with(false, target)));
      auto w = df.lazy().select({col("x").var().over({key}).alias("v"), col("x").std(0).over({key}).alias("s")});
      expect_frames_close(w.collect(engine_with(true, target)), w.collect(engine_with(false, target)));
    }
  }
}

TEST(CudaNumerics, LargeMagnitudesMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  // the issue: values near 1.5e19 gave 4194300 on the GPU and 0 on the CPU
  std::vector<std::optional<uint64_t>> u;
  std::vector<std::optional<int64_t>> k;
  for (int i = 0; i < 300; ++i) {
    k.push_back(i % 3);
    u.push_back(15000000000000000000ULL + static_cast<uint64_t>(i % 3 == 0 ? 0 : i % 3 == 1 ? i : i * 4096));
  }
  auto df = data_frame::from_columns({{"k", i64(k)}, {"x", make_column<uint64_t>(type_id::uint64, u)}});
  for (int64_t target : targets()) {
    auto q = df.lazy().group_by(std::vector<std::string>{"k"}, true).agg(variance_aggs({"x"}));
    data_frame gpu = q.collect(engine_with(true, target)), cpu = q.collect(engine_with(false, target));
    expect_frames_close(gpu, cpu);
    table t = gpu.to_table();
    EXPECT_EQ(t[1].value<double>(0), 0.0);  // group 0: one value as float64
    EXPECT_EQ(t[2].value<double>(1), 0.0);  // group 1: i < 2048 rounds away in float64
  }
}

TEST(CudaNumerics, RandomVarianceMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<std::optional<int64_t>> k;
  std::vector<std::optional<std::string>> ks;
  std::vector<std::optional<double>> x;
  std::vector<std::optional<__int128>> d;
  for (int i = 0; i < 5000; ++i) {
    k.push_back(i % 17);
    ks.push_back("g" + std::to_string(i % 17));
    bool null = i % 13 == 0;
    x.push_back(null ? std::nullopt : std::optional<double>(1e9 + (i * 7919 % 1001) * 0.25));
    d.push_back(null ? std::nullopt : std::optional<__int128>(pow10(30) * 123 + (i * 7919 % 1001) * pow10(25)));
  }
  auto df = data_frame::from_columns(
      {{"k", i64(k)}, {"ks", str(ks)}, {"x", f64(x)}, {"d", make_column<__int128>(decimal(38, 30), d)}});
  for (int64_t target : targets()) {
    SCOPED_TRACE("target=" + std::to_string(target));
    auto h = df.lazy().group_by(std::vector<std::string>{"k"}, true).agg(variance_aggs({"x"}));
    expect_frames_close(h.collect(engine_with(true, target)), h.collect(engine_with(false, target)));
    auto s = df.lazy().group_by(std::vector<std::string>{"ks"}, true).agg(variance_aggs({"x", "d"}));
    expect_frames_close(s.collect(engine_with(true, target)), s.collect(engine_with(false, target)));
  }
}

TEST(CudaNumerics, DecimalsReadAsFloatsBitForBit) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  // casts in the expression evaluator and the aggregations' reading of decimals: one correctly rounded
  // conversion on both backends (0.1 at scale 30 is 0.1, not 0.09999999999999999)
  std::vector<std::optional<__int128>> v;
  std::vector<std::optional<int64_t>> k;
  std::vector<std::optional<std::string>> ks;
  const __int128 max38 = pow10(38) - 1;
  for (int i = 0; i < 2000; ++i) {
    __int128 x = i % 5 == 0   ? pow10(29) * (i % 97)
                 : i % 5 == 1 ? max38 - i
                              : (static_cast<__int128>(i) * 1000003) << (i % 60);
    if (i % 2) x = -x;
    v.push_back(i % 11 == 0 ? std::nullopt : std::optional<__int128>(x));
    k.push_back(i);
    ks.push_back("r" + std::to_string(i));
  }
  for (int scale : {0, 2, 18, 30, 38}) {
    SCOPED_TRACE("scale=" + std::to_string(scale));
    auto df =
        data_frame::from_columns({{"k", i64(k)}, {"ks", str(ks)}, {"x", make_column<__int128>(decimal(38, scale), v)}});
    // one row a group: the aggregations return the value itself, so all must equal the cast
    auto q = df.lazy().select(
        {col("x").cast(type_id::float64).alias("f64"), col("x").cast(type_id::float32).alias("f32"),
         col("x").median().over({"ks"}).alias("med"), col("x").quantile(0.75, "linear").over({"ks"}).alias("q"),
         col("x").mean().over({"ks"}).alias("mean"),
         (col("x") < col("x").quantile(0.75, "linear").over({"ks"})).alias("lt")});
    expect_gpu_matches_cpu(q);
    table t = q.collect(gpu_engine()).to_table();
    for (int64_t r = 0; r < t.num_rows(); ++r) {
      if (t[0].is_null(r)) continue;
      EXPECT_EQ(t[0].value<double>(r), t[2].value<double>(r)) << "row " << r;
      EXPECT_FALSE(t[5].value<bool>(r)) << "row " << r;
    }
  }
}

TEST(CudaNumerics, DecimalOverflowRaisesTheCpuError) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const __int128 max38 = pow10(38) - 1, six = pow10(37) * 6;
  auto df = data_frame::from_columns(
      {{"x", make_column<__int128>(decimal(38, 30), std::vector<std::optional<__int128>>{max38, 1})},
       {"y", make_column<__int128>(decimal(38, 30), std::vector<std::optional<__int128>>{1, std::nullopt})}});
  std::vector<lazy_frame> bad = {df.lazy().select({col("x").ceil()}), df.lazy().select({col("x").round(2)}),
                                 df.lazy().select({(-col("x")).floor()}), df.lazy().select({col("x") + col("y")}),
                                 df.lazy().select({col("x") * col("x")})};
  for (auto& lf : bad) {
    std::string cpu = collect_error(lf, engine_with(false, 1 << 20)), gpu = collect_error(lf, gpu_engine());
    EXPECT_NE(cpu.find("decimal overflow"), std::string::npos) << cpu;
    EXPECT_EQ(gpu, cpu);
  }
  expect_gpu_matches_cpu(df.lazy().select(
      {col("x").floor().alias("f"), col("x").round(30).alias("r"), (col("x") - col("y")).alias("d")}));
  auto sums = data_frame::from_columns(
      {{"ks", str({"a", "a", "b"})},
       {"x", make_column<__int128>(decimal(38, 0), std::vector<std::optional<__int128>>{six, six, -six})}});
  for (int64_t target : targets()) {
    auto lf = sums.lazy().group_by(std::vector<std::string>{"ks"}).agg({col("x").sum()});
    std::string cpu = collect_error(lf, engine_with(false, target)), gpu = collect_error(lf, engine_with(true, target));
    EXPECT_NE(cpu.find("decimal overflow in sum"), std::string::npos) << cpu;
    EXPECT_EQ(gpu, cpu);
  }
}

TEST(CudaNumerics, ZeroMedianHasTheCpuSign) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<std::vector<double>> groups = {
      {-0.0, 0.0}, {0.0, -0.0}, {0.0, 0.0}, {-0.0}, {0.0, 0.0, -0.0}, {-0.0, 0.0, -0.0}, {-1.0, 0.0, -0.0, 2.0}};
  auto df = grouped(groups);
  for (int64_t target : targets()) {
    auto q = df.lazy()
                 .group_by(std::vector<std::string>{"ks"}, true)
                 .agg({col("x").median().alias("m"), col("x").quantile(0.5, "lower").alias("lo"),
                       col("x").quantile(0.5, "linear").alias("lin")});
    table gpu = q.collect(engine_with(true, target)).to_table(), cpu = q.collect(engine_with(false, target)).to_table();
    ASSERT_EQ(gpu.num_rows(), cpu.num_rows());
    for (size_t c = 1; c < 4; ++c)
      for (int64_t r = 0; r < gpu.num_rows(); ++r)
        EXPECT_EQ(std::signbit(gpu[c].value<double>(r)), std::signbit(cpu[c].value<double>(r)))
            << "column " << c << " group " << r << " target " << target;
  }
}
