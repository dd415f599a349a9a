// Every blocking operator at 1M rows over many partitions, checked against plain-loop references.
#include <gtest/gtest.h>

#include <map>
#include <unordered_map>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"

using namespace tug;

namespace {
constexpr int64_t kRows = 1'000'000;

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct big {
  std::vector<int64_t> k;     // 5000 keys, ~1% null (-1 marks null)
  std::vector<double> v;
  data_frame df;
};

const big& data() {
  static big b = [] {
    big d;
    fixed_width_builder<int64_t> k(type_id::int64, kRows);
    fixed_width_builder<double> v(type_id::float64, kRows);
    for (int64_t i = 0; i < kRows; ++i) {
      uint64_t h = mix(static_cast<uint64_t>(i));
      int64_t key = (h % 100 == 0) ? -1 : static_cast<int64_t>((h >> 8) % 5000);
      double val = static_cast<double>((h >> 20) % 1000) / 8.0;
      d.k.push_back(key);
      d.v.push_back(val);
      if (key < 0) k.set_null(i);
      else k.set(i, key);
      v.set(i, val);
    }
    d.df = data_frame::from_columns({{"k", k.finish()}, {"v", v.finish()}});
    return d;
  }();
  return b;
}

engine_options opts() {
  engine_options o;
  o.target_partition_rows = 65536;
  return o;
}
}  // namespace

TEST(Large, GroupBySumCountMatchesReference) {
  const auto& d = data();
  std::map<int64_t, std::pair<double, int64_t>> ref;
  for (int64_t i = 0; i < kRows; ++i) {
    auto& r = ref[d.k[static_cast<size_t>(i)]];
    r.first += d.v[static_cast<size_t>(i)];
    r.second++;
  }
  auto out = d.df.lazy().group_by({"k"}).agg({col("v").sum().alias("s"), len().alias("n")}).sort("k").collect(opts());
  ASSERT_EQ(out.num_rows(), static_cast<int64_t>(ref.size()));
  column k = out["k"], s = out["s"], n = out["n"];
  int64_t row = 0;
  for (auto& [key, agg] : ref) {  // nulls sort first, and -1 is the smallest key
    if (key < 0) EXPECT_TRUE(k.is_null(row));
    else EXPECT_EQ(k.value<int64_t>(row), key);
    EXPECT_NEAR(s.value<double>(row), agg.first, 1e-6 * agg.first);
    EXPECT_EQ(n.value<int64_t>(row), agg.second);
    ++row;
  }
}

TEST(Large, JoinWindowSortUnique) {
  const auto& d = data();
  auto lf = d.df.lazy();
  // join against the distinct keys: every non-null row matches once
  int64_t nonnull = 0;
  for (auto k : d.k) nonnull += k >= 0;
  auto keys = lf.unique({"k"}).filter(col("k").is_not_null()).with_columns({(col("k") * 2).alias("k2")});
  EXPECT_EQ(keys.collect(opts()).num_rows(), 5000);
  auto joined = lf.join(keys.select({col("k"), col("k2")}), {"k"}).collect(opts());
  EXPECT_EQ(joined.num_rows(), nonnull);
  // window: the per-key mean broadcast to rows equals the group-by mean
  std::unordered_map<int64_t, std::pair<double, int64_t>> ref;
  for (int64_t i = 0; i < kRows; ++i) {
    auto& r = ref[d.k[static_cast<size_t>(i)]];
    r.first += d.v[static_cast<size_t>(i)];
    r.second++;
  }
  auto w = lf.with_columns({col("v").mean().over({"k"}).alias("m")}).collect(opts());
  ASSERT_EQ(w.num_rows(), kRows);
  column m = w["m"];
  for (int64_t i = 0; i < kRows; i += 997) {
    auto& r = ref[d.k[static_cast<size_t>(i)]];
    EXPECT_NEAR(m.value<double>(i), r.first / static_cast<double>(r.second), 1e-9);
  }
  // sort descending by v, nulls irrelevant: check order and that it is a permutation (sum kept)
  auto s = lf.sort({col("v")}, sort_options{{true}, {}, true}).collect(opts());
  column sv = s["v"];
  ASSERT_EQ(sv.size(), kRows);
  double total = 0, ref_total = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    if (i) ASSERT_GE(sv.value<double>(i - 1), sv.value<double>(i)) << "row " << i;
    total += sv.value<double>(i);
    ref_total += d.v[static_cast<size_t>(i)];
  }
  EXPECT_NEAR(total, ref_total, 1e-6 * ref_total);
  // top-k equals the head of the full sort
  auto top = lf.sort({col("v")}, sort_options{{true}, {}, true}).head(10).collect(opts());
  expect_frames_equal(top, s.lazy().head(10).collect());
}
