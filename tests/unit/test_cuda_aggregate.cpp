// CUDA group_by/agg and over() against the CPU engine (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/memory/device.hpp"

using namespace tug;

namespace {

// n rows with keys and values of every supported type, nulls in all of them, NaN / -0.0 in floats.
data_frame sample(int64_t n, int card) {
  std::vector<std::optional<int64_t>> k64, v64;
  std::vector<std::optional<int32_t>> k32, kdate, v32;
  std::vector<std::optional<uint8_t>> ku8;
  std::vector<std::optional<std::string>> kstr, vstr;
  std::vector<std::optional<bool>> kb, vb;
  std::vector<std::optional<double>> kf, vf;
  std::vector<std::optional<float>> vf32;
  uint64_t x = 12345 + static_cast<uint64_t>(n);
  auto rnd = [&] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>(x >> 33);
  };
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = rnd() % card;
    bool null_key = rnd() % 9 == 0;
    k64.push_back(null_key ? std::nullopt : std::optional<int64_t>(r - card / 2));
    k32.push_back(rnd() % 7 == 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(rnd() % 3)));
    kdate.push_back(rnd() % 8 == 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(19000 + r % 5)));
    ku8.push_back(static_cast<uint8_t>(r % 4));
    kstr.push_back(null_key ? std::nullopt : std::optional<std::string>(r % 3 == 0 ? "" : "key" + std::to_string(r)));
    kb.push_back(rnd() % 5 == 0 ? std::nullopt : std::optional<bool>(r % 2 == 0));
    int64_t f = rnd() % 6;
    kf.push_back(f == 0   ? std::nullopt
                 : f == 1 ? std::optional<double>(NAN)
                 : f == 2 ? std::optional<double>(-0.0)
                 : f == 3 ? std::optional<double>(0.0)
                          : std::optional<double>(static_cast<double>(f) * 0.5));
    bool nv = rnd() % 4 == 0;
    v64.push_back(nv ? std::nullopt : std::optional<int64_t>(rnd() % 2001 - 1000));
    v32.push_back(rnd() % 5 == 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(rnd() % 100 - 50)));
    // integer-valued floats: sums are exact in any order
    int64_t fv = rnd() % 20;
    vf.push_back(nv ? std::nullopt : fv == 0 ? std::optional<double>(NAN) : std::optional<double>(fv - 10.0));
    vf32.push_back(rnd() % 6 == 0 ? std::nullopt : std::optional<float>(static_cast<float>(rnd() % 40) - 20.0f));
    vstr.push_back(rnd() % 5 == 0 ? std::nullopt : std::optional<std::string>("v" + std::to_string(rnd() % 50)));
    vb.push_back(rnd() % 6 == 0 ? std::nullopt : std::optional<bool>(rnd() % 3 != 0));
  }
  return data_frame::from_columns({
      {"k64", make_column<int64_t>(type_id::int64, k64)},
      {"k32", make_column<int32_t>(type_id::int32, k32)},
      {"kdate", make_column<int32_t>(type_id::date32, kdate)},
      {"ku8", make_column<uint8_t>(type_id::uint8, ku8)},
      {"kstr", make_string_column(kstr)},
      {"kb", make_bool_column(kb)},
      {"kf", make_column<double>(type_id::float64, kf)},
      {"v64", make_column<int64_t>(type_id::int64, v64)},
      {"v32", make_column<int32_t>(type_id::int32, v32)},
      {"vf", make_column<double>(type_id::float64, vf)},
      {"vf32", make_column<float>(type_id::float32, vf32)},
      {"vstr", make_string_column(vstr)},
      {"vb", make_bool_column(vb)},
      {"kts", make_column<int64_t>(timestamp(time_unit::us), k64)},
  });
}

engine_options opts(bool gpu, int64_t target) {
  engine_options o;
  o.engine = gpu ? engine_kind::gpu : engine_kind::cpu;
  o.fallback = fallback_mode::raise;
  o.target_partition_rows = target;
  return o;
}

// Equal frames, in order; float64 cells within a relative 1e-9 (std/var round differently).
void expect_close(const data_frame& gpu, const data_frame& cpu) {
  ASSERT_EQ(gpu.schema().to_string(), cpu.schema().to_string());
  table a = gpu.to_table(), b = cpu.to_table();
  ASSERT_EQ(a.num_rows(), b.num_rows());
  for (size_t c = 0; c < a.num_columns(); ++c) {
    if (a[c].type().id != type_id::float64) {
      expect_columns_equal(a[c], b[c], gpu.schema()[c].name);
      continue;
    }
    for (int64_t i = 0; i < a.num_rows(); ++i) {
      ASSERT_EQ(a[c].is_null(i), b[c].is_null(i)) << gpu.schema()[c].name << " row " << i;
      if (a[c].is_null(i)) continue;
      double x = a[c].value<double>(i), y = b[c].value<double>(i);
      if (std::isnan(x) || std::isnan(y)) {
        EXPECT_EQ(std::isnan(x), std::isnan(y)) << gpu.schema()[c].name << " row " << i;
        continue;
      }
      EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::abs(y))) << gpu.schema()[c].name << " row " << i;
    }
  }
}

std::vector<expr> all_aggs() {
  return {col("v64").sum().alias("s64"),     col("v32").sum().alias("s32"),     col("vf").sum().alias("sf"),
          col("vf32").sum().alias("sf32"),   col("vb").sum().alias("sb"),       col("v64").mean().alias("m64"),
          col("vf").mean().alias("mf"),      col("v64").min().alias("n64"),     col("vf").min().alias("nf"),
          col("vf").max().alias("xf"),       col("vf32").max().alias("xf32"),   col("vstr").min().alias("nstr"),
          col("vstr").max().alias("xstr"),   col("vb").min().alias("nb"),       col("v32").max().alias("x32"),
          col("v64").count().alias("c64"),   col("vstr").count().alias("cstr"), len().alias("len"),
          col("vstr").first().alias("fstr"), col("vf").last().alias("lf"),      col("v32").first().alias("f32"),
          col("vb").any().alias("any"),      col("vb").all().alias("all"),      col("v64").std().alias("sd"),
          col("vf32").var(0).alias("var0"),  col("kdate").max().alias("xdate"), col("kts").min().alias("nts")};
}

void check_group_by(const std::vector<std::string>& keys, int64_t n, int card, int64_t target) {
  SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target) + " keys=" + (keys.empty() ? std::string("(none)") : keys[0]));
  data_frame df = sample(n, card);
  for (bool maintain : {false, true}) {
    auto q = keys.empty() ? df.lazy().select(all_aggs()) : df.lazy().group_by(keys, maintain).agg(all_aggs());
    data_frame cpu = q.collect(opts(false, target));
    data_frame gpu = q.collect(opts(true, target));
    // both backends output groups in order of first appearance, with or without maintain_order
    expect_close(gpu, cpu);
  }
}

}  // namespace

TEST(CudaAggregate, GroupByEveryKeyTypeMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<std::vector<std::string>> key_sets = {{"k64"}, {"k32"}, {"kdate"}, {"ku8"},         {"kstr"},
                                                    {"kb"},  {"kf"},  {"kts"},   {"kstr", "k32"}, {"kb", "kf", "ku8"}};
  for (auto& keys : key_sets)
    for (int64_t n : {0, 1, 31, 32, 33, 1024})
      for (int64_t target : {int64_t{7}, int64_t{1} << 20})
        check_group_by(keys, n, 13, target);
}

TEST(CudaAggregate, ManyGroupsMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  check_group_by({"k64"}, 5000, 4000, 7);
  check_group_by({"kstr", "kdate"}, 5000, 1000, 1 << 20);
}

TEST(CudaAggregate, GlobalAggregationMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 31, 32, 33, 1024})
    for (int64_t target : {int64_t{7}, int64_t{1} << 20})
      check_group_by({}, n, 5, target);
}

TEST(CudaAggregate, GpuPlanHasNoFallback) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto r = sample(100, 5).lazy().group_by({"kstr"}).agg(all_aggs()).profile(opts(true, 7));
  EXPECT_TRUE(r.fallbacks.empty()) << r.fallbacks[0];
}

TEST(CudaAggregate, UnsupportedAggregationIsNamed) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto q = sample(10, 3).lazy().group_by({"k64"}).agg({col("v64").median()});
  try {
    q.collect(opts(true, 7));
    FAIL() << "expected the GPU to refuse median";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("median"), std::string::npos) << e.what();
  }
}

TEST(CudaWindow, OverMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    for (int64_t target : {int64_t{7}, int64_t{1} << 20}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      data_frame df = sample(n, 11);
      auto q = df.lazy().with_columns({
          col("v64").sum().over({"k64"}).alias("w_sum"),
          col("vf").mean().over({"kstr", "kb"}).alias("w_mean"),
          col("vstr").min().over({"kf"}).alias("w_min"),
          col("vf").max().over({"kdate"}).alias("w_max"),
          col("v32").first().over({"k32"}).alias("w_first"),
          col("vb").last().over({"ku8"}).alias("w_last"),
          col("v64").count().over({"kts"}).alias("w_count"),
          len().over({"k64", "kstr"}).alias("w_len"),
          col("vf32").std().over({"k64"}).alias("w_std"),
          col("vb").all().over({"kb"}).alias("w_all"),
      });
      expect_close(q.collect(opts(true, target)), q.collect(opts(false, target)));
    }
  }
}
