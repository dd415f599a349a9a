// The CUDA sort-based group-by (aggregate.cu) on what hashing does not take: n_unique, median and
// quantile (values sorted within their groups), decimal128 inputs and decimal128 keys, in group_by,
// select and over, against the CPU engine (skipped without a GPU); plus the placement of these
// aggregations on the GPU (support and plan), which runs without a GPU in a CUDA build.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/memory/device.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

using namespace tug;

namespace {

// n rows (after cutting `pad` rows off both ends of every column: sliced inputs) of keys and values
// of every type, nulls in all but the constant key, NaN / -0.0 / 0.0 in the floats, negative and
// fractional decimals, large decimal(38, 0) values.
data_frame sample(int64_t n, int card, int64_t pad = 0) {
  int64_t rows = n + 2 * pad;
  std::vector<std::optional<int64_t>> k64, v64;
  std::vector<std::optional<int32_t>> kone, v32, vdate;
  std::vector<std::optional<uint16_t>> vu16;
  std::vector<std::optional<std::string>> kstr, vstr;
  std::vector<std::optional<bool>> vb;
  std::vector<std::optional<double>> vf;
  std::vector<std::optional<float>> vf32;
  std::vector<std::optional<__int128>> kdec, vdec, vbig;
  uint64_t x = 777 + static_cast<uint64_t>(rows) * 31;
  auto rnd = [&] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>(x >> 33);
  };
  for (int64_t i = 0; i < rows; ++i) {
    int64_t r = rnd() % card;
    bool null_key = rnd() % 9 == 0;
    k64.push_back(null_key ? std::nullopt : std::optional<int64_t>(r - card / 2));
    kone.push_back(7);
    kstr.push_back(rnd() % 10 == 0 ? std::nullopt
                                   : std::optional<std::string>(r % 4 == 0 ? "" : "k" + std::to_string(r)));
    kdec.push_back(rnd() % 8 == 0 ? std::nullopt : std::optional<__int128>(static_cast<__int128>(r - card / 3) * 125));
    bool nv = rnd() % 5 == 0;
    v64.push_back(nv ? std::nullopt : std::optional<int64_t>(rnd() % 41 - 20));
    v32.push_back(rnd() % 6 == 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(rnd() % 1000 - 500)));
    vdate.push_back(rnd() % 7 == 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(19000 + rnd() % 30)));
    vu16.push_back(rnd() % 4 == 0 ? std::nullopt : std::optional<uint16_t>(static_cast<uint16_t>(60000 + rnd() % 50)));
    int64_t f = rnd() % 12;
    vf.push_back(f == 0   ? std::nullopt
                 : f == 1 ? std::optional<double>(NAN)
                 : f == 2 ? std::optional<double>(-0.0)
                 : f == 3 ? std::optional<double>(0.0)
                 : f == 4 ? std::optional<double>(INFINITY)
                          : std::optional<double>(static_cast<double>(rnd() % 2000 - 1000) / 8.0));
    vf32.push_back(rnd() % 6 == 0   ? std::nullopt
                   : rnd() % 9 == 0 ? std::optional<float>(NAN)
                                    : std::optional<float>(static_cast<float>(rnd() % 64) * 0.25f - 8.0f));
    vb.push_back(rnd() % 6 == 0 ? std::nullopt : std::optional<bool>(rnd() % 3 != 0));
    vstr.push_back(rnd() % 5 == 0 ? std::nullopt : std::optional<std::string>("s" + std::to_string(rnd() % 25)));
    vdec.push_back(nv ? std::nullopt : std::optional<__int128>(static_cast<__int128>(rnd() % 200001 - 100000)));
    __int128 big = static_cast<__int128>(rnd() % 1000000 - 500000) * static_cast<__int128>(1000000000000000000LL) *
                   static_cast<__int128>(1000000000000LL);  // about +-5e35
    vbig.push_back(rnd() % 4 == 0 ? std::nullopt : std::optional<__int128>(big + rnd() % 1000));
  }
  auto cut = [&](column c) { return pad ? c.slice(pad, n) : c; };
  return data_frame::from_columns({
      {"k64", cut(make_column<int64_t>(type_id::int64, k64))},
      {"kone", cut(make_column<int32_t>(type_id::int32, kone))},
      {"kstr", cut(make_string_column(kstr))},
      {"kdec", cut(make_column<__int128>(decimal(10, 2), kdec))},
      {"v64", cut(make_column<int64_t>(type_id::int64, v64))},
      {"v32", cut(make_column<int32_t>(type_id::int32, v32))},
      {"vu16", cut(make_column<uint16_t>(type_id::uint16, vu16))},
      {"vdate", cut(make_column<int32_t>(type_id::date32, vdate))},
      {"vf", cut(make_column<double>(type_id::float64, vf))},
      {"vf32", cut(make_column<float>(type_id::float32, vf32))},
      {"vb", cut(make_bool_column(vb))},
      {"vstr", cut(make_string_column(vstr))},
      {"vdec", cut(make_column<__int128>(decimal(18, 3), vdec))},
      {"vbig", cut(make_column<__int128>(decimal(38, 0), vbig))},
  });
}

std::vector<expr> n_unique_aggs() {
  std::vector<expr> out;
  for (const char* c : {"v64", "v32", "vu16", "vdate", "vf", "vf32", "vb", "vstr", "vdec", "vbig", "kdec"})
    out.push_back(col(c).n_unique().alias(std::string("nu_") + c));
  return out;
}

std::vector<expr> median_aggs() {
  std::vector<expr> out;
  for (const char* c : {"v64", "v32", "vu16", "vf", "vf32", "vb", "vdec", "vbig"})
    out.push_back(col(c).median().alias(std::string("med_") + c));
  return out;
}

std::vector<expr> quantile_aggs() {
  std::vector<expr> out;
  for (const char* m : {"nearest", "lower", "higher", "midpoint", "linear"}) {
    for (double q : {0.0, 0.1, 0.25, 0.5, 0.9, 1.0})
      out.push_back(col("vf").quantile(q, m).alias("qf_" + std::string(m) + std::to_string(q)));
    out.push_back(col("v64").quantile(0.3, m).alias("q64_" + std::string(m)));
    out.push_back(col("vdec").quantile(0.75, m).alias("qdec_" + std::string(m)));
    out.push_back(col("vf32").quantile(0.6, m).alias("qf32_" + std::string(m)));
  }
  return out;
}

std::vector<expr> decimal_aggs() {
  std::vector<expr> out{len().alias("len")};
  for (const char* c : {"vdec", "vbig"}) {
    std::string s = c;
    out.push_back(col(c).sum().alias("sum_" + s));
    out.push_back(col(c).min().alias("min_" + s));
    out.push_back(col(c).max().alias("max_" + s));
    out.push_back(col(c).mean().alias("mean_" + s));
    out.push_back(col(c).first().alias("first_" + s));
    out.push_back(col(c).last().alias("last_" + s));
    out.push_back(col(c).count().alias("count_" + s));
    out.push_back(col(c).std().alias("std_" + s));
    out.push_back(col(c).var(0).alias("var_" + s));
  }
  // a decimal key column aggregated too (the hash path's keys beside it)
  out.push_back(col("kdec").max().alias("max_kdec"));
  out.push_back(col("v64").sum().alias("sum_v64"));
  return out;
}

std::vector<std::vector<expr>> agg_sets() { return {n_unique_aggs(), median_aggs(), quantile_aggs(), decimal_aggs()}; }

std::string names(const std::vector<std::string>& keys) {
  std::string s;
  for (auto& k : keys)
    s += (s.empty() ? "" : ",") + k;
  return s.empty() ? "(none)" : s;
}

// group_by(keys).agg(aggs) (select(aggs) without keys) of `q` on both engines, with and without
// maintain_order (both output groups in order of first appearance).
void check(const lazy_frame& q, const std::vector<std::string>& keys, const std::vector<expr>& aggs, int64_t target) {
  SCOPED_TRACE("keys=" + names(keys) + " target=" + std::to_string(target));
  for (bool maintain : {false, true}) {
    auto a = keys.empty() ? q.select(aggs) : q.group_by(keys, maintain).agg(aggs);
    expect_frames_close(a.collect(engine_with(true, target)), a.collect(engine_with(false, target)));
    if (keys.empty()) break;
  }
}

std::vector<std::vector<std::string>> key_sets() {
  return {{}, {"k64"}, {"kone"}, {"kstr"}, {"kdec"}, {"kdec", "k64"}, {"kstr", "kdec"}};
}

}  // namespace

TEST(CudaSortAggregate, EveryKeySetAndSizeMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 31, 32, 33, 1024, 3000}) {
    SCOPED_TRACE("rows=" + std::to_string(n));
    data_frame df = sample(n, 11);
    for (auto& keys : key_sets())
      for (auto& aggs : agg_sets())
        for (int64_t target : {int64_t{7}, int64_t{1} << 20})
          check(df.lazy(), keys, aggs, target);
  }
}

TEST(CudaSortAggregate, SlicedInputsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {1, 33, 1024}) {
    SCOPED_TRACE("rows=" + std::to_string(n));
    data_frame df = sample(n, 9, 5);  // host columns with offsets
    for (auto& keys : key_sets())
      for (auto& aggs : agg_sets()) {
        check(df.lazy(), keys, aggs, 1 << 20);
        check(df.lazy().slice(3, n / 2), keys, aggs, 10);  // device slices
      }
  }
}

TEST(CudaSortAggregate, ManyGroupsAndOneGroupMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  data_frame many = sample(5000, 4000), one = sample(5000, 1);
  for (auto& aggs : agg_sets()) {
    check(many.lazy(), {"k64"}, aggs, 1 << 20);
    check(many.lazy(), {"kdec", "kstr"}, aggs, 999);
    check(one.lazy(), {"kone"}, aggs, 999);
    check(one.lazy(), {}, aggs, 1 << 20);
  }
}

TEST(CudaSortAggregate, FilteredAndAllNullInputsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  data_frame df = sample(1024, 13);
  for (auto& aggs : agg_sets()) {
    // no row passes: empty groups, global aggregations of nothing
    check(df.lazy().filter(col("v32") > lit(int64_t{100000})), {"k64"}, aggs, 100);
    check(df.lazy().filter(col("v32") > lit(int64_t{100000})), {}, aggs, 100);
    // a value column null in whole groups
    check(df.lazy().filter(col("v64").is_null()), {"kdec"}, aggs, 100);
  }
}

TEST(CudaSortAggregate, WindowsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 33, 1024}) {
    auto q = sample(n, 7).lazy().with_columns({
        col("vstr").n_unique().over({"k64"}).alias("w_nu"),
        col("vf").median().over({"kstr"}).alias("w_med"),
        col("vdec").quantile(0.25, "linear").over({"kdec"}).alias("w_q"),
        col("vdec").sum().over({"k64", "kdec"}).alias("w_sum"),
        col("vbig").min().over({"kdec"}).alias("w_min"),
        col("vdec").mean().over({"kone"}).alias("w_mean"),
    });
    SCOPED_TRACE("rows=" + std::to_string(n));
    expect_frames_close(q.collect(engine_with(true, 10)), q.collect(engine_with(false, 10)));
  }
}

TEST(CudaSortAggregate, GpuPlanHasNoFallback) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  data_frame df = sample(100, 5);
  for (auto& aggs : agg_sets()) {
    auto r = df.lazy().group_by({"kdec"}).agg(aggs).profile(engine_with(true, 7));
    EXPECT_TRUE(r.fallbacks.empty()) << r.fallbacks[0];
    std::string plan = df.lazy().group_by({"k64"}).agg(aggs).explain(engine_with(true, 7));
    size_t at = plan.find("sort_aggregate");
    ASSERT_NE(at, std::string::npos) << plan;
    EXPECT_NE(plan.substr(at, plan.find('\n', at) - at).find("@cuda"), std::string::npos) << plan;
  }
}

#ifdef TUG_WITH_CUDA
namespace {


schema plan_input() {
  return schema({{"k", type_id::int64}, {"d", decimal(12, 2)}, {"s", type_id::string}, {"f", type_id::float64}});
}

agg_spec make_spec(agg_op op, int64_t input, double q = 0.5, std::string interpolation = "nearest") {
  agg_spec s;
  s.op = op;
  s.input = input;
  s.input_type = plan_input()[static_cast<size_t>(input)].type;
  s.output_type = agg_result_type(op, s.input_type);
  s.q = q;
  s.interpolation = std::move(interpolation);
  return s;
}

std::vector<agg_spec> sort_only_aggs() {
  return {make_spec(agg_op::n_unique, 2),
          make_spec(agg_op::n_unique, 1),
          make_spec(agg_op::median, 3, 0.5, "linear"),
          make_spec(agg_op::quantile, 1, 0.9, "midpoint"),
          make_spec(agg_op::sum, 1),
          make_spec(agg_op::mean, 1),
          make_spec(agg_op::min, 1)};
}

}  // namespace

// Runs without a GPU: the lowering's question (support.cpp) and the operator make_aggregate builds.
TEST(CudaSortAggregatePlan, NewAggregationsAndDecimalKeysAreOnTheGpu) {
  schema in = plan_input();
  for (auto& a : sort_only_aggs()) {
    for (std::vector<size_t> keys : {std::vector<size_t>{}, std::vector<size_t>{0}, std::vector<size_t>{1, 2}}) {
      exec::op_request agg{"aggregate", &in, {}, {a}, keys};
      EXPECT_EQ(exec::backend_unsupported(backend::cuda, agg), "") << to_string(a.op);
      exec::op_request win{"window", &in, {}, {a}, keys};
      EXPECT_EQ(exec::backend_unsupported(backend::cuda, win), "") << to_string(a.op);
    }
  }
  schema out{std::vector<field>{in[1], {"a", type_id::int64}}};
  std::string plan = to_string(
      *cuda::make_aggregate(std::make_unique<schema_leaf>(in), {1}, {make_spec(agg_op::n_unique, 2)}, false, out));
  EXPECT_NE(plan.find("sort_aggregate keys [#1] aggs [n_unique(#2)]"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("@cpu"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("hash_aggregate"), std::string::npos) << plan;
  schema out2{std::vector<field>{in[0], {"a", decimal(38, 2)}, {"b", type_id::float64}}};
  std::string dec = to_string(*cuda::make_aggregate(
      std::make_unique<schema_leaf>(in), {0}, {make_spec(agg_op::sum, 1), make_spec(agg_op::median, 3)}, false, out2));
  EXPECT_NE(dec.find("sort_aggregate keys [#0] aggs [sum(#1), median(#3)]"), std::string::npos) << dec;
  EXPECT_EQ(dec.find("@cpu"), std::string::npos) << dec;
}

TEST(CudaSortAggregatePlan, BadQuantileParametersAreRefusedAsOnTheCpu) {
  schema in = plan_input();
  schema out{std::vector<field>{in[0], {"a", type_id::float64}}};
  auto build = [&](agg_spec s) {
    return cuda::make_aggregate(std::make_unique<schema_leaf>(in), {0}, {std::move(s)}, false, out);
  };
  EXPECT_THROW(build(make_spec(agg_op::quantile, 3, 1.5, "linear")), invalid_argument_error);
  EXPECT_THROW(build(make_spec(agg_op::quantile, 3, 0.5, "cubic")), invalid_argument_error);
  EXPECT_NO_THROW(build(make_spec(agg_op::quantile, 3, 1.0, "higher")));
}
#endif
