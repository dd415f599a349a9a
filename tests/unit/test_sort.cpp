// Sort and top-k through the lazy API, against a std::stable_sort reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "sort_test_data.hpp"
#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"

using namespace tug;
using tug::test_data::mixed_frame;

namespace {

/// -1, 0, 1 comparing valid rows a and b of `c` (floats: NaN above all numbers, NaNs equal).
int ref_cmp(const column& c, int64_t a, int64_t b) {
  return type_dispatch(c.type().id, [&]<type_id Id>() -> int {
    using T = storage_t<Id>;
    T x = c.value<T>(a), y = c.value<T>(b);
    if constexpr (std::is_floating_point_v<T>) {
      bool nx = std::isnan(x), ny = std::isnan(y);
      if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
    }
    return x < y ? -1 : (y < x ? 1 : 0);
  });
}

/// Stable-sorted row order of `t` by key columns.
std::vector<int64_t> ref_order(const table& t, const std::vector<size_t>& keys, const std::vector<bool>& desc,
                               const std::vector<bool>& nulls_last) {
  std::vector<int64_t> rows(static_cast<size_t>(t.num_rows()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
    for (size_t k = 0; k < keys.size(); ++k) {
      const column& c = t[keys[k]];
      bool na = c.is_null(a), nb = c.is_null(b);
      if (na != nb) return na != nulls_last[k];
      if (na) continue;
      int r = ref_cmp(c, a, b);
      if (r != 0) return desc[k] ? r > 0 : r < 0;
    }
    return false;
  });
  return rows;
}

data_frame ref_sort(const data_frame& df, const std::vector<std::string>& by, const std::vector<bool>& desc,
                    const std::vector<bool>& nulls_last, int64_t limit = -1) {
  table t = df.to_table();
  std::vector<size_t> keys;
  for (auto& b : by) keys.push_back(df.schema().index_of(b));
  auto rows = ref_order(t, keys, desc, nulls_last);
  if (limit >= 0 && static_cast<int64_t>(rows.size()) > limit) rows.resize(static_cast<size_t>(limit));
  return data_frame(df.schema(), {gather(t, rows)});
}

std::vector<expr> cols(const std::vector<std::string>& names) {
  std::vector<expr> v;
  for (auto& n : names) v.push_back(col(n));
  return v;
}

engine_options small_partitions() {
  engine_options o;
  o.target_partition_rows = 7;
  return o;
}

/// Sorts by `by` with every option combination of the first key, default and small partitions.
void check_all_options(const data_frame& df, const std::vector<std::string>& by) {
  for (bool desc : {false, true})
    for (bool last : {false, true})
      for (bool stable : {false, true})
        for (const engine_options& o : {engine_options{}, small_partitions()}) {
          SCOPED_TRACE(by[0] + (desc ? " desc" : " asc") + (last ? " nulls_last" : " nulls_first") +
                       " rows " + std::to_string(df.num_rows()) + " part " + std::to_string(o.target_partition_rows));
          std::vector<bool> d(by.size(), false), l(by.size(), false);
          d[0] = desc;
          l[0] = last;
          auto out = df.lazy().sort(cols(by), sort_options{d, l, stable}).collect(o);
          expect_frames_equal(out, ref_sort(df, by, d, l));
        }
}

const std::vector<std::string> all_keys = {"i64", "i32", "u8", "f64", "f32", "str", "bool", "dec", "date", "ts"};

}  // namespace

TEST(Sort, EveryTypeSingleKeyAllSizes) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    auto df = mixed_frame(n, 42 + static_cast<uint64_t>(n));
    for (auto& k : all_keys) check_all_options(df, {k});
  }
}

TEST(Sort, MultiKey) {
  for (int64_t n : {0, 1, 33, 1024}) {
    auto df = mixed_frame(n, 7 + static_cast<uint64_t>(n));
    check_all_options(df, {"i32", "str"});
    check_all_options(df, {"bool", "f64", "dec"});
    check_all_options(df, {"str", "ts", "date"});
    // per-key options as in the brief
    auto out = df.lazy().sort({col("i32"), col("f64")}, sort_options{{true, false}, {false, true}, true})
                   .collect(small_partitions());
    expect_frames_equal(out, ref_sort(df, {"i32", "f64"}, {true, false}, {false, true}));
  }
}

TEST(Sort, ByNameDescendingAndFloatsOrderedAsPolars) {
  auto df = data_frame::from_columns(
      {{"x", f64({1.0, std::nan(""), -0.0, std::nullopt, -std::numeric_limits<double>::infinity(), 0.0,
                  std::numeric_limits<double>::infinity(), -2.5})},
       {"i", i64({0, 1, 2, 3, 4, 5, 6, 7})}});
  auto asc = df.lazy().sort("x").collect();
  EXPECT_EQ(rows_of(asc), (std::vector<std::string>{"null|3", "-inf|4", "-2.5|7", "-0.0|2", "0.0|5", "1.0|0",
                                                     "inf|6", "NaN|1"}));
  auto desc = df.lazy().sort("x", true).collect();
  EXPECT_EQ(rows_of(desc), (std::vector<std::string>{"null|3", "NaN|1", "inf|6", "1.0|0", "-0.0|2", "0.0|5",
                                                      "-2.5|7", "-inf|4"}));
}

TEST(Sort, StableKeepsInputOrderOfEqualKeys) {
  std::vector<std::optional<int64_t>> k, idx;
  for (int64_t i = 0; i < 1000; ++i) {
    k.push_back(i % 3);
    idx.push_back(i);
  }
  auto df = data_frame::from_columns({{"k", i64(k)}, {"idx", i64(idx)}});
  auto out = df.lazy().sort({col("k")}, sort_options{{true}, {}, true}).collect(small_partitions()).to_table();
  for (int64_t r = 1; r < out.num_rows(); ++r) {
    if (out[0].value<int64_t>(r) == out[0].value<int64_t>(r - 1))
      ASSERT_LT(out[1].value<int64_t>(r - 1), out[1].value<int64_t>(r)) << "row " << r;
  }
}

TEST(Sort, AllNullKeys) {
  auto df = data_frame::from_columns({{"a", make_null_column(type_id::int64, 40)},
                                      {"s", make_null_column(type_id::string, 40)},
                                      {"i", i64(std::vector<std::optional<int64_t>>(40, 5))}});
  check_all_options(df, {"a"});
  check_all_options(df, {"s", "a"});
}

TEST(Sort, LargeParallel) {
  auto df = mixed_frame(100000, 99);
  for (auto& k : {"i64", "f64", "str"}) {
    auto out = df.lazy().sort(cols({k}), sort_options{{true}, {true}, false}).collect();
    expect_frames_equal(out, ref_sort(df, {k}, {true}, {true}));
  }
  auto out = df.lazy().sort(cols({"i32", "str"}), sort_options{{false, true}, {false}, true}).collect();
  expect_frames_equal(out, ref_sort(df, {"i32", "str"}, {false, true}, {false, false}));
  // distinct keys, no nulls: the (word, row) path with many ties broken by row
  std::mt19937_64 rng(5);
  std::vector<int64_t> v(100000);
  for (auto& x : v) x = static_cast<int64_t>(rng() % 1000000) - 500000;
  auto plain = data_frame::from_columns({{"v", make_column<int64_t>(type_id::int64, v)}});
  auto sorted = plain.lazy().sort("v").collect()["v"];
  std::sort(v.begin(), v.end());
  expect_columns_equal(sorted, make_column<int64_t>(type_id::int64, v));
}

TEST(Sort, SlicedInput) {
  auto df = mixed_frame(200, 3);
  table t = df.to_table();
  for (auto [off, len] : {std::pair<int64_t, int64_t>{0, 0}, {5, 1}, {17, 100}, {63, 137}}) {
    data_frame sliced(df.schema(), {t.slice(off, len)});
    for (auto& k : all_keys) check_all_options(sliced, {k});
    check_all_options(sliced, {"str", "i32"});
  }
}

TEST(Sort, OutputPartitionsAndSyncPoint) {
  auto df = mixed_frame(100, 1);
  auto lf = df.lazy().sort("i64");
  auto res = lf.profile(small_partitions());
  EXPECT_GT(res.frame.partitions().size(), 1u);
  for (auto& p : res.frame.partitions()) EXPECT_LE(p.num_rows(), 7);
  EXPECT_NE(res.physical_plan.find("[sync] sort"), std::string::npos) << res.physical_plan;
}

namespace {
/// The sort node of `lf`'s plan with its length (top-k limit) set, as the slice pushdown does.
lazy_frame with_limit(const lazy_frame& lf, int64_t limit) {
  auto n = std::make_shared<plan_node>(*lf.plan());
  EXPECT_EQ(n->kind, plan_kind::sort);
  n->length = limit;
  return lazy_frame(n);
}
}  // namespace

TEST(Sort, TopKThroughLogicalLength) {
  for (int64_t n : {0, 1, 31, 33, 1024}) {
    auto df = mixed_frame(n, 11 + static_cast<uint64_t>(n));
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{5}, n - 1, n, n + 3}) {
      if (k < 0) continue;
      for (auto& by : std::vector<std::vector<std::string>>{{"i64"}, {"f64"}, {"str"}, {"i32", "dec"}})
        for (bool desc : {false, true})
          for (bool last : {false, true})
            for (const engine_options& o : {engine_options{}, small_partitions()}) {
              SCOPED_TRACE(by[0] + " n " + std::to_string(n) + " k " + std::to_string(k) + (desc ? " desc" : "") +
                           (last ? " nulls_last" : ""));
              std::vector<bool> d(by.size(), desc), l(by.size(), last);
              auto lf = with_limit(df.lazy().sort(cols(by), sort_options{d, l, true}), k);
              auto res = lf.profile(o);
              EXPECT_NE(res.physical_plan.find("[sync] top_k"), std::string::npos) << res.physical_plan;
              expect_frames_equal(res.frame, ref_sort(df, by, d, l, k));
            }
    }
  }
}

TEST(Sort, TopKLargeAndHead) {
  auto df = mixed_frame(100000, 21);
  for (int64_t k : {10, 40000, 99999}) {
    for (auto& by : std::vector<std::vector<std::string>>{{"i64"}, {"str", "f64"}}) {
      std::vector<bool> d(by.size(), true), l(by.size(), false);
      auto out = with_limit(df.lazy().sort(cols(by), sort_options{d, l, false}), k).collect();
      expect_frames_equal(out, ref_sort(df, by, d, l, k));
    }
  }
  auto head = df.lazy().sort("f64").head(25).collect(small_partitions());
  expect_frames_equal(head, ref_sort(df, {"f64"}, {false}, {false}, 25));
  auto lim = df.lazy().sort("str", true).limit(3).collect();
  expect_frames_equal(lim, ref_sort(df, {"str"}, {true}, {false}, 3));
}

TEST(Sort, ExternalRangesEqualTheInMemorySort) {
  // force_external: the input is split into ranges of sort keys at sampled boundaries (spillable) and
  // sorted range by range; equal keys keep their input order, as in the in-memory sort
  engine_options whole = small_partitions();
  engine_options ext = whole;
  ext.force_external = true;
  engine_options one = ext;
  one.target_partition_rows = 1 << 20;
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    auto df = mixed_frame(n, 300 + static_cast<uint64_t>(n));
    for (auto& by : std::vector<std::vector<std::string>>{{"i64"}, {"i32"}, {"u8"}, {"f64"}, {"f32"}, {"str"},
                                                          {"bool"}, {"dec"}, {"date"}, {"ts"}, {"i32", "str"},
                                                          {"bool", "f64", "dec"}, {"str", "ts", "date"}})
      for (bool desc : {false, true})
        for (bool last : {false, true}) {
          SCOPED_TRACE(by[0] + " keys " + std::to_string(by.size()) + " n " + std::to_string(n) +
                       (desc ? " desc" : "") + (last ? " nulls_last" : ""));
          std::vector<bool> d(by.size(), false), l(by.size(), last);
          d[0] = desc;
          auto lf = df.lazy().sort(cols(by), sort_options{d, l, true});
          const data_frame expect = lf.collect(whole);
          expect_frames_equal(expect, ref_sort(df, by, d, l));
          expect_frames_equal(lf.collect(ext), expect);
          expect_frames_equal(lf.collect(one), expect);
          for (int64_t k : {int64_t{1}, int64_t{5}, n - 1, n + 3}) {
            if (k < 0) continue;
            SCOPED_TRACE("top " + std::to_string(k));
            expect_frames_equal(with_limit(lf, k).collect(ext), ref_sort(df, by, d, l, k));
          }
        }
  }
}

TEST(Sort, ExternalRangesKeepInputOrderOfDuplicateKeys) {
  // few distinct keys, many rows each: every boundary is a key value, whose range is left in input order
  for (int64_t mod : {1, 3, 200}) {
    std::vector<std::optional<int64_t>> k, idx;
    std::vector<std::optional<std::string>> s;
    for (int64_t i = 0; i < 5000; ++i) {
      k.push_back(i % 17 == 0 ? std::nullopt : std::optional<int64_t>((i * 7) % mod));
      s.push_back("key" + std::to_string((i * 13) % mod));
      idx.push_back(i);
    }
    auto df = data_frame::from_columns({{"k", i64(k)}, {"s", str(s)}, {"idx", i64(idx)}});
    engine_options o = small_partitions();
    o.target_partition_rows = 300;
    o.force_external = true;
    for (auto& by : std::vector<std::vector<std::string>>{{"k"}, {"s"}, {"s", "k"}}) {
      SCOPED_TRACE(by[0] + " mod " + std::to_string(mod));
      std::vector<bool> d(by.size(), true), l(by.size(), false);
      expect_frames_equal(df.lazy().sort(cols(by), sort_options{d, l, true}).collect(o), ref_sort(df, by, d, l));
    }
  }
}

TEST(Sort, ExternalRangesSplitAgainWhenARangeDoesNotFit) {
  // 1000 one-row partitions of key 0 and one of 200K rows (3 MiB) under a 6 MiB limit on one thread:
  // the samples (one a partition) are nearly all 0, so the only boundary is 0 and the large partition's
  // rows are one range (3 MiB), over a quarter of the limit, which is split again from its own samples.
  // The first and last rows of every group of keys, in sorted order, equal those of the in-memory sort.
  std::mt19937_64 rng(17);
  std::vector<table> parts;
  for (int64_t i = 0; i < 1000; ++i) parts.push_back(table({i64({int64_t{0}}), i64({i})}));
  std::vector<int64_t> k(200000), v(200000);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = i == 0 ? 10000 : static_cast<int64_t>(rng() % 50000);
    v[i] = 1000 + static_cast<int64_t>(i);
  }
  parts.push_back(table({make_column<int64_t>(type_id::int64, k), make_column<int64_t>(type_id::int64, v)}));
  const data_frame df(schema({{"k", type_id::int64}, {"v", type_id::int64}}), parts);
  for (bool desc : {false, true}) {
    SCOPED_TRACE(desc);
    auto q = df.lazy()
                 .sort({col("k")}, sort_options{{desc}, {false}, true})
                 .with_columns({(col("k") - col("k") % lit(int64_t{100})).alias("g")})
                 .group_by({"g"})
                 .agg({col("k").first().alias("k0"), col("k").last().alias("k1"), col("v").first().alias("v0"),
                       col("v").last().alias("v1"), col("v").count().alias("n")})
                 .sort("g");
    engine_options whole;
    whole.num_threads = 1;
    whole.target_partition_rows = 1 << 20;
    const data_frame expect = q.collect(whole);
    engine_options o = whole;
    o.memory_limit = 6 << 20;
    const query_result r = q.profile(o);
    expect_frames_equal(r.frame, expect);
    EXPECT_LE(r.peak_memory, o.memory_limit);
    EXPECT_EQ(expect.num_rows(), 500);
  }
}

TEST(Sort, TemporariesCountAgainstTheQuerysMemory) {
  // the normalized keys of a multi-key sort (8 bytes a row and key) and its (word, row) entries come
  // from the query's budget: four keys hold 16 bytes a row more at once than one key (entries and the
  // radix sort's scratch), so the query's peak is higher by about that; the outputs are the same size
  const int64_t n = 1 << 18;
  std::vector<int64_t> a(n), b(n), c(n), d(n);
  std::mt19937_64 rng(17);
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<size_t>(i)] = static_cast<int64_t>(rng() % 1000);
    b[static_cast<size_t>(i)] = static_cast<int64_t>(rng() % 1000);
    c[static_cast<size_t>(i)] = static_cast<int64_t>(rng());
    d[static_cast<size_t>(i)] = i;
  }
  const data_frame df = data_frame::from_columns({{"a", make_column<int64_t>(type_id::int64, a)},
                                                  {"b", make_column<int64_t>(type_id::int64, b)},
                                                  {"c", make_column<int64_t>(type_id::int64, c)},
                                                  {"d", make_column<int64_t>(type_id::int64, d)}});
  engine_options o;
  o.engine = engine_kind::cpu;
  o.num_threads = 1;
  o.target_partition_rows = 1 << 20;
  const query_result one = df.lazy().sort({col("a")}).profile(o);
  const query_result four = df.lazy().sort({col("a"), col("b"), col("c"), col("d")}).profile(o);
  EXPECT_EQ(one.frame.num_rows(), n);
  EXPECT_EQ(four.frame.num_rows(), n);
  EXPECT_GE(four.peak_memory, one.peak_memory + 8 * n) << one.statistics << four.statistics;
  // and the sort's own line shows it: its peak is at least its keys' 32 bytes and the entries' 16 a row
  EXPECT_EQ(four.operators.back().name, "sort") << four.statistics;
  EXPECT_GE(four.operators.back().peak_host_memory, 48 * n) << four.statistics;
}
