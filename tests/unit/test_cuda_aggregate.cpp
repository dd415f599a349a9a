// CUDA group_by/agg and over() against the CPU engine (skipped without a GPU): the hash aggregation
// (partial per partition + final; shared-memory tables, their overflow to a global table, global
// reductions) and the sort-based one (string keys); plus the host side of the hash aggregation
// (its programs and the choice between hash and sort), which runs without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/memory/device.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cpu/agg_kernels.hpp"
#include "tug/exec/cpu/evaluate.hpp"
#include "exec/cuda/hash_aggregate.hpp"
#include "exec/cuda/ops.hpp"
#endif

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

std::string names(const std::vector<std::string>& keys) {
  std::string s;
  for (auto& k : keys)
    s += (s.empty() ? "" : ",") + k;
  return s.empty() ? "(none)" : s;
}

// group_by(keys).agg(aggs) (select(aggs) without keys) of `df` (filtered by `where` first, if given)
// on both engines, with and without maintain_order.
void check_frame(const data_frame& df, const std::vector<std::string>& keys, const std::vector<expr>& aggs,
                 int64_t target, const std::optional<expr>& where = std::nullopt) {
  SCOPED_TRACE("rows=" + std::to_string(df.num_rows()) + " target=" + std::to_string(target) + " keys=" + names(keys) +
               (where ? " where " + to_string(*where) : std::string()));
  for (bool maintain : {false, true}) {
    lazy_frame in = where ? df.lazy().filter(*where) : df.lazy();
    auto q = keys.empty() ? in.select(aggs) : in.group_by(keys, maintain).agg(aggs);
    data_frame cpu = q.collect(engine_with(false, target));
    data_frame gpu = q.collect(engine_with(true, target));
    // both backends output groups in order of first appearance, with or without maintain_order
    expect_frames_close(gpu, cpu);
  }
}

void check_group_by(const std::vector<std::string>& keys, int64_t n, int card, int64_t target,
                    const std::vector<expr>& aggs = all_aggs()) {
  check_frame(sample(n, card), keys, aggs, target);
}

// The line of `text` that contains `needle` ("" when none).
std::string line_with(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return {};
  size_t begin = text.rfind('\n', at), end = text.find('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Few aggregations a query, so that the hash aggregation's shared-memory tables are used (all_aggs()
// has too many accumulators for shared memory and goes to the global table directly).
std::vector<std::vector<expr>> small_agg_sets() {
  return {
      {col("v64").sum().alias("s64"), col("vf").sum().alias("sf"), len().alias("len"), col("v64").count().alias("c")},
      {col("vf").mean().alias("mf"), col("vf").min().alias("nf"), col("v32").max().alias("x32"),
       col("v32").first().alias("f32")},
      {col("vstr").min().alias("nstr"), col("vstr").max().alias("xstr"), col("vstr").first().alias("fstr"),
       col("vf").last().alias("lf")},
      {col("vb").any().alias("any"), col("vb").all().alias("all"), col("v64").std().alias("sd"),
       col("vf32").var(0).alias("var0")},
      {col("kdate").max().alias("xdate"), col("kts").min().alias("nts"), col("vb").sum().alias("sb"),
       col("v64").mean().alias("m64"), col("vf32").max().alias("xf32")},
  };
}

// Fixed-width key sets (the hash aggregation): one key, two keys, float keys with NaN / -0.0.
std::vector<std::vector<std::string>> hash_key_sets() {
  return {{"k64"}, {"k32", "kb"}, {"kf"}, {"kdate", "ku8"}, {"kts"}, {"vf32"}, {"kf", "kb", "k32"}};
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

TEST(CudaAggregate, HashGroupByFewAggregationsMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (auto& aggs : small_agg_sets())
    for (auto& keys : hash_key_sets()) {
      for (int64_t n : {0, 1, 31, 33, 1024})
        for (int64_t target : {int64_t{7}, int64_t{1} << 20})
          check_group_by(keys, n, 3, target, aggs);
      check_group_by(keys, 5000, 3, 1000, aggs);
      check_group_by(keys, 5000, 5000, 1 << 20, aggs);
    }
}

TEST(CudaAggregate, HashGroupByManyPartitionsMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (auto& aggs : small_agg_sets()) {
    check_group_by({"k64"}, 20000, 13, 97, aggs);
    check_group_by({"k32", "kb"}, 300, 13, 1, aggs);  // one-row partitions
  }
  check_group_by({"k64"}, 20000, 13, 300);
}

// Many groups: blocks meet more groups than their shared-memory table holds (random keys), or every
// block few but all blocks together more than the first global table holds (sorted keys); both go
// again straight to a global table of twice the rows.
TEST(CudaAggregate, HashGroupByManyGroupsMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (auto& aggs : small_agg_sets())
    check_group_by({"k64"}, 50000, 20000, 1 << 20, aggs);
  int64_t n = 400000;
  std::vector<std::optional<int64_t>> sorted, shuffled, v;
  std::vector<std::optional<double>> f;
  for (int64_t i = 0; i < n; ++i) {
    sorted.push_back(i / 8);
    shuffled.push_back((i * 7919) % 50000);
    v.push_back(i % 11 == 0 ? std::nullopt : std::optional<int64_t>(i % 1000 - 500));
    f.push_back(i % 13 == 0 ? std::nullopt : std::optional<double>(static_cast<double>(i % 77)));
  }
  data_frame df =
      data_frame::from_columns({{"sorted", i64(sorted)}, {"shuffled", i64(shuffled)}, {"v", i64(v)}, {"f", f64(f)}});
  std::vector<expr> aggs = {col("v").sum().alias("s"), col("f").max().alias("x"), col("v").first().alias("first"),
                            col("f").mean().alias("m")};
  for (int64_t target : {int64_t{1} << 20, int64_t{150000}}) {
    check_frame(df, {"sorted"}, aggs, target);
    check_frame(df, {"shuffled"}, aggs, target);
    check_frame(df, {"shuffled", "sorted"}, aggs, target);
  }
}

TEST(CudaAggregate, AllNullColumnsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {1, 33, 3000}) {
    std::vector<std::optional<int64_t>> nk(n), nv(n), k(n);
    std::vector<std::optional<double>> nf(n);
    std::vector<std::optional<std::string>> ns(n);
    std::vector<std::optional<bool>> nb(n);
    for (int64_t i = 0; i < n; ++i)
      k[static_cast<size_t>(i)] = i % 3;
    data_frame df = data_frame::from_columns(
        {{"nk", i64(nk)}, {"k", i64(k)}, {"nv", i64(nv)}, {"nf", f64(nf)}, {"ns", str(ns)}, {"nb", boolean(nb)}});
    std::vector<expr> aggs = {col("nv").sum().alias("s"),   col("nf").sum().alias("sf"),  col("nf").mean().alias("m"),
                              col("nf").min().alias("mn"),  col("nv").max().alias("mx"),  col("ns").min().alias("smin"),
                              col("ns").first().alias("f"), col("nf").last().alias("l"),  col("nv").count().alias("c"),
                              len().alias("len"),           col("nb").any().alias("any"), col("nb").all().alias("all"),
                              col("nf").std().alias("sd"),  col("nv").var().alias("v")};
    for (int64_t target : {int64_t{7}, int64_t{1} << 20}) {
      check_frame(df, {"nk"}, aggs, target);
      check_frame(df, {"k", "nk"}, aggs, target);
      check_frame(df, {}, aggs, target);
      check_frame(df, {"nk"}, {col("nf").sum().alias("s"), col("nv").min().alias("m")}, target);
    }
  }
}

// A filter under the aggregation is absorbed by the partial aggregation (its predicate selects rows).
TEST(CudaAggregate, FilteredAggregationMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<expr> wheres = {col("v64") > lit(int64_t{0}), col("kb"), col("v64") > lit(int64_t{100000})};
  for (int64_t n : {0, 33, 1024, 5000}) {
    data_frame df = sample(n, 13);
    for (auto& where : wheres)
      for (int64_t target : {int64_t{7}, int64_t{1} << 20}) {
        for (auto& aggs : small_agg_sets()) {
          check_frame(df, {"k64"}, aggs, target, where);
          check_frame(df, {}, aggs, target, where);
        }
        check_frame(df, {"kf", "kb"}, all_aggs(), target, where);
        check_frame(df, {}, all_aggs(), target, where);
        check_frame(df, {"kstr"}, small_agg_sets()[0], target, where);  // sort path: the filter stays
      }
  }
}

// Predicates of `column <op> literal` terms (up to four, and-ed) are evaluated inside the aggregation
// kernels; other predicates, and programs the fused kernels do not run, evaluate a mask column.
TEST(CudaAggregate, FusedPredicatesMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<expr> wheres = {
      col("v64") > lit(int64_t{0}),
      lit(int64_t{5}) > col("v32"),  // the literal on the left
      col("vf") <= 2.0,              // NaN is above every number
      col("vf") == lit(NAN),         // NaN equals NaN
      col("vf32") >= -3.0,
      col("k32") != 1,
      col("ku8") >= 2,
      col("kf") == 0.0,  // -0.0 == 0.0
      (col("v64") > -500) & (col("v32") < 20) & (col("vf") != 3.0),
      (col("v64") > -900) & (col("v64") < 900) & (col("v32") > -40) & (col("v32") < 40) & (col("vf") > -9.0),  // 5 terms: mask
      (col("v64") > 0) | (col("v32") < 0),  // not a conjunction: mask
  };
  std::vector<std::vector<expr>> fusable = {
      {col("v64").sum().alias("s64"), col("vf").sum().alias("sf"), len().alias("len"), col("v64").count().alias("c")},
      {col("vf").mean().alias("mf"), col("vb").any().alias("any"), col("vb").all().alias("all")},
      {col("vf32").sum().alias("sf32"), col("vb").sum().alias("sb")},
  };
  for (int64_t n : {0, 1, 31, 32, 33, 1024, 5000, 100000}) {
    data_frame df = sample(n, 13);
    for (auto& where : wheres)
      for (int64_t target : {int64_t{7777}, int64_t{1} << 20}) {
        if (n < 1000 && target == 7777) target = 7;
        for (auto& aggs : fusable) {
          check_frame(df, {"k64"}, aggs, target, where);
          check_frame(df, {}, aggs, target, where);
        }
        check_frame(df, {"kf", "kb"}, fusable[0], target, where);
      }
  }
  // sliced input: the filter and the aggregation read a window of the columns
  data_frame df = sample(3000, 17);
  data_frame sliced = df.lazy().slice(1001, 1500).collect(engine_with(false, 1 << 20));
  check_frame(sliced, {"k64"}, fusable[0], 1 << 20, col("v64") > lit(int64_t{0}));
  check_frame(sliced, {}, fusable[1], 1 << 20, col("vf") < 4.0);
}

// Groups per block beyond the shared-memory table move the operator to a small global table, and
// beyond that to a table of twice the rows; every tier gives the CPU's groups in the CPU's order.
TEST(CudaAggregate, GroupByTiersMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<expr> aggs = {col("v64").sum().alias("s"), col("vf").mean().alias("m"), len().alias("n")};
  for (int card : {50, 2000, 50000}) {
    data_frame df = sample(200000, card);
    for (int64_t target : {int64_t{30000}, int64_t{1} << 20}) {
      check_frame(df, {"k64"}, aggs, target);
      check_frame(df, {"k64"}, aggs, target, col("v32") > lit(int64_t{-10}));
      check_frame(df, {"k64"}, {col("v64").min().alias("lo"), col("vf").std().alias("sd")}, target);
    }
  }
}

// Partitions of at least 2^20 rows guess their starting tier from a sample of the keys (every 64th
// row of such a partition); a wrong guess overflows into the next tier. Every guess gives the CPU's
// groups in the CPU's order. One and two threads: in-memory partitions are at most rows / threads,
// so that the partitions reach 2^20 rows on any machine.
TEST(CudaAggregate, GuessedTiersMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int64_t n = (int64_t{1} << 21) + 4099;
  // card > 0: uniform keys in [0, card); 0: key 0 on every 64th row and distinct keys between, so the
  // sample sees one group where there are millions; every 13th key null
  for (int64_t card : {int64_t{40}, int64_t{9000}, int64_t{300000}, int64_t{0}}) {
    std::vector<std::optional<int64_t>> k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
    uint64_t x = 99;
    for (int64_t i = 0; i < n; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      auto r = static_cast<int64_t>(x >> 33);
      int64_t key = card > 0 ? r % card : i % 64 == 0 ? 0 : i;
      k[static_cast<size_t>(i)] = r % 13 == 0 && i % 64 != 0 ? std::nullopt : std::optional<int64_t>(key);
      v[static_cast<size_t>(i)] = r % 7 == 0 ? std::nullopt : std::optional<int64_t>(r % 1000 - 500);
    }
    data_frame df = data_frame::from_columns({{"k", i64(k)}, {"v", i64(v)}});
    for (int64_t target : {n, n / 2 + 1}) {
      SCOPED_TRACE("card " + std::to_string(card) + " target " + std::to_string(target));
      engine_options gpu = engine_with(true, target), cpu = engine_with(false, target);
      // in-memory partitions are at most rows / threads: few threads, so they reach 2^20 rows
      gpu.num_threads = cpu.num_threads = target == n ? 1 : 2;
      auto q = df.lazy().group_by({"k"}).agg({col("v").sum().alias("s"), len().alias("n"), col("v").min().alias("lo")});
      expect_frames_equal(q.collect(gpu), q.collect(cpu));
      auto f = df.lazy().filter(col("v") > lit(int64_t{-100})).group_by({"k"}).agg({col("v").sum().alias("s")});
      expect_frames_equal(f.collect(gpu), f.collect(cpu));
    }
  }
}

// One integer key whose sampled values lie in a small range: the guess picks a direct-indexed table
// (slot = key - smallest sampled key, the null key in one more slot; TUG_GPU_DIRECT_TABLE=0 turns it
// off). Keys of several integer types, signed and unsigned, with nulls in the keys and the values, with
// and without a (fused) filter, over one and several partitions of at least 2^20 rows (each guesses
// from every (n / 2^15)-th row: here every 32nd or 96th), and partitions too small to guess. `rare`
// has 99.99% of its keys in [0, 100) and a few at +-10^9 on rows the sample never reads (odd rows), so
// the direct table overflows and the partition is redone in the next tier.
TEST(CudaAggregate, DirectTierMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int64_t part = int64_t{1} << 20, n = 3 * part;
  auto u = static_cast<size_t>(n);
  uint64_t x = 7;
  std::vector<int64_t> rnd(u);
  for (auto& r : rnd) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    r = static_cast<int64_t>(x >> 33);
  }
  auto null_at = [&](int64_t i, int64_t every) {
    return every > 0 && (rnd[static_cast<size_t>(i)] >> 20) % every == 0;
  };
  // a column of type `id` (storage: the type of `tag`): value(i, random), null on about 1 in `every`
  // rows (never when 0)
  auto make = [&](auto tag, type_id id, int64_t every, auto value) {
    using T = decltype(tag);
    std::vector<std::optional<T>> c(u);
    for (int64_t i = 0; i < n; ++i)
      if (!null_at(i, every)) c[static_cast<size_t>(i)] = static_cast<T>(value(i, rnd[static_cast<size_t>(i)]));
    return make_column<T>(id, c);
  };
  auto rare = [](int64_t i, int64_t r) -> int64_t {
    if (i % 50000 == 17) return (i / 50000) % 2 ? int64_t{1000000000} : int64_t{-1000000000};  // odd rows
    return r % 100;
  };
  data_frame df = data_frame::from_columns({
      {"k64", make(int64_t{}, type_id::int64, 13, [](int64_t, int64_t r) { return r % 100 - 50; })},
      {"k100", make(int64_t{}, type_id::int64, 0, [](int64_t, int64_t r) { return r % 100; })},
      {"k32", make(int32_t{}, type_id::int32, 9, [](int64_t, int64_t r) { return 1000 + r % 100; })},
      {"ku8", make(uint8_t{}, type_id::uint8, 17, [](int64_t, int64_t r) { return r % 256; })},
      {"ki8", make(int8_t{}, type_id::int8, 0, [](int64_t, int64_t r) { return r % 256 - 128; })},
      {"kdate", make(int32_t{}, type_id::date32, 5, [](int64_t, int64_t r) { return 19000 + r % 200; })},
      {"kb", make(bool{}, type_id::boolean, 3, [](int64_t, int64_t r) { return r % 2; })},
      {"rare", make(int64_t{}, type_id::int64, 0, rare)},
      {"v", make(double{}, type_id::float64, 7, [](int64_t, int64_t r) { return r % 201 - 100; })},  // exact sums
      {"d", make(double{}, type_id::float64, 0, [](int64_t, int64_t r) { return r % 51 - 25; })},
      {"w", make(int64_t{}, type_id::int64, 11, [](int64_t, int64_t r) { return r % 1000 - 500; })},
  });
  // one accumulator (no nulls but in the key: the benchmark's two-column kernel), three (uint8 / int8
  // keys' 256 values do not fit: hashed tiers) and a filtered mean (two: they fit)
  std::vector<std::pair<std::optional<expr>, std::vector<expr>>> queries = {
      {std::nullopt, {col("d").sum().alias("s")}},
      {std::nullopt, {col("v").sum().alias("s"), len().alias("n"), col("w").sum().alias("sw")}},
      {col("w") > lit(int64_t{-300}), {col("v").mean().alias("m")}},
  };
  // (threads, target): one partition (sampled every 96th row), three in parallel (every 32nd), and
  // four of 3/4 2^20 rows (no guess: they start at the warp tier)
  for (auto [threads, target] : {std::pair{1, n}, std::pair{3, part}, std::pair{4, n / 4}}) {
    engine_options gpu = engine_with(true, target), cpu = engine_with(false, target);
    gpu.num_threads = cpu.num_threads = threads;
    for (std::string k : {"k64", "k100", "k32", "ku8", "ki8", "kdate", "kb", "rare"})
      for (auto& [where, aggs] : queries) {
        SCOPED_TRACE(k + " threads " + std::to_string(threads) + " target " + std::to_string(target) + " " +
                     to_string(aggs[0]) + (where ? " where " + to_string(*where) : std::string()));
        lazy_frame in = where ? df.lazy().filter(*where) : df.lazy();
        auto q = in.group_by({k}).agg(aggs);
        expect_frames_equal(q.collect(gpu), q.collect(cpu));
      }
  }
}

// At least 2^22 rows in the largest tier: the table is sized to the groups a HyperLogLog sketch
// estimates (here 1M groups in 5M rows: 4Mi slots rather than 16Mi), in one partition and in the final
// phase over several partitions' states.
TEST(CudaAggregate, SizedLargeTableMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int64_t n = 5000000;
  std::vector<std::optional<int64_t>> k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
  uint64_t x = 5;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    auto r = static_cast<int64_t>(x >> 33);
    k[static_cast<size_t>(i)] = r % 17 == 0 ? std::nullopt : std::optional<int64_t>(r % 1000000);
    v[static_cast<size_t>(i)] = r % 5 == 0 ? std::nullopt : std::optional<int64_t>(r % 100);
  }
  data_frame df = data_frame::from_columns({{"k", i64(k)}, {"v", i64(v)}});
  // one partition of 5M rows (in-memory partitions are at most rows / threads), then 1Mi-row
  // partitions whose final phase gets about 4.3M states
  for (auto [threads, target] : {std::pair{1, int64_t{8} << 20}, std::pair{0, int64_t{1} << 20}}) {
    SCOPED_TRACE("threads " + std::to_string(threads) + " target " + std::to_string(target));
    engine_options gpu = engine_with(true, target), cpu = engine_with(false, target);
    gpu.num_threads = cpu.num_threads = threads;
    auto q = df.lazy().group_by({"k"}).agg({col("v").sum().alias("s"), col("v").max().alias("hi"), len().alias("n")});
    expect_frames_equal(q.collect(gpu), q.collect(cpu));
  }
}

/// The output partitions of the first `op` line of a profile's statistics (-1: no such line).
/// Output partitions of the first operator named `op` in a profile (-1 when none).
int64_t partitions_of(const query_result& r, const std::string& op) {
  for (const operator_stats& s : r.operators)
    if (s.name == op) return s.partitions_out;
  return -1;
}

// Keys nearly all distinct, two partitions of 2^22 + 1000 rows: partial aggregation would hardly reduce
// them, so they are aggregated once (hash_aggregate[partial] puts out one partition); with a key of 16
// values per partition they are aggregated per partition as before. Both against the CPU.
TEST(CudaAggregate, UnreducedPartitionsAggregateOnce) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int64_t part = (int64_t{1} << 22) + 1000, n = 2 * part;
  std::vector<std::optional<int64_t>> k(static_cast<size_t>(n)), few(static_cast<size_t>(n));
  std::vector<std::optional<double>> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto u = static_cast<size_t>(i);
    if (i % 101 != 7) k[u] = (i * 7919) % (n - 12345);  // distinct but for a few repeats, across partitions too
    few[u] = i % 16;
    if (i % 13 != 3) v[u] = static_cast<double>(i % 1000) / 8.0;
  }
  data_frame df = data_frame::from_columns({{"k", i64(k)}, {"few", i64(few)}, {"v", f64(v)}});
  engine_options gpu = engine_with(true, part), cpu = engine_with(false, part);
  gpu.num_threads = cpu.num_threads = 2;  // in-memory partitions are at most rows / threads
  for (auto [key, once] : {std::pair{std::string("k"), true}, std::pair{std::string("few"), false}}) {
    SCOPED_TRACE(key);
    auto q = df.lazy().group_by({key}).agg(
        {col("v").sum().alias("s"), col("v").mean().alias("m"), col("v").min().alias("lo"), len().alias("n")});
    query_result r = q.profile(gpu);
    EXPECT_EQ(partitions_of(r, "hash_aggregate[partial]"), once ? 1 : 2) << r.statistics;
    expect_frames_close(r.frame, q.collect(cpu));
  }
}

TEST(CudaAggregate, GlobalAggregationLargeMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t target : {int64_t{1} << 20, int64_t{7777}}) {
    check_group_by({}, 100000, 5, target);
    for (auto& aggs : small_agg_sets())
      check_group_by({}, 100000, 5, target, aggs);
  }
}

TEST(CudaAggregate, ExplainNamesHashAndSortNodes) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto lf = sample(100, 5).lazy();
  std::string hashed = lf.group_by({"k64", "kf"}).agg({col("v64").sum()}).explain(engine_with(true, 7));
  EXPECT_NE(line_with(hashed, "hash_aggregate[partial]").find("@cuda"), std::string::npos) << hashed;
  EXPECT_NE(line_with(hashed, "[sync] hash_aggregate[final]").find("@cuda"), std::string::npos) << hashed;
  std::string global = lf.select({col("v64").sum(), col("vf").max()}).explain(engine_with(true, 7));
  EXPECT_NE(line_with(global, "hash_aggregate[partial]").find("@cuda"), std::string::npos) << global;
  // the filter is absorbed into the aggregation (late materialization off: it would move the
  // aggregation's inputs behind a take)
  engine_options absorbing = engine_with(true, 7);
  absorbing.optimizer.late_materialization = false;
  std::string filtered =
      lf.filter(col("v32") > lit(int64_t{0})).group_by({"k64"}).agg({col("v64").sum()}).explain(absorbing);
  EXPECT_NE(line_with(filtered, "hash_aggregate[partial] filter").find("@cuda"), std::string::npos) << filtered;
  EXPECT_EQ(line_with(filtered, "  filter"), "") << filtered;
  std::string sorted = lf.group_by({"kstr"}).agg({col("v64").sum()}).explain(engine_with(true, 7));
  EXPECT_NE(line_with(sorted, "[sync] sort_aggregate").find("@cuda"), std::string::npos) << sorted;
  EXPECT_EQ(sorted.find("hash_aggregate"), std::string::npos) << sorted;
}

// What compute-sanitizer runs (scripts/gpu-check.sh): each aggregation path once, at small sizes,
// over several partitions: the shared-memory hash table, its overflow to the global table, the
// global aggregation, the absorbed filter (fused and as a mask), the sort path (string keys) and the
// windows (hashed and sorted).
TEST(CudaSanitized, AggregationPaths) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  data_frame df = sample(1024, 5);
  check_frame(df, {"k64"}, small_agg_sets()[0], 300);
  check_frame(df, {"kf", "kb"}, small_agg_sets()[1], 300);
  check_frame(sample(3000, 2500), {"k64"}, small_agg_sets()[0], 1 << 20);
  check_frame(df, {}, small_agg_sets()[2], 300);
  check_frame(df, {"k64"}, small_agg_sets()[3], 300, col("v64") > lit(int64_t{0}));
  check_frame(df, {"k64"}, small_agg_sets()[0], 300, col("v64") > lit(int64_t{0}));  // fused, shared table
  check_frame(df, {}, small_agg_sets()[0], 300, col("vf") < 3.0);                  // fused, no keys
  check_frame(df, {"kstr"}, small_agg_sets()[0], 300);
  auto q = df.lazy().with_columns({col("vf").mean().over({"k64", "kb"}).alias("m")});  // hashed
  expect_frames_close(q.collect(engine_with(true, 300)), q.collect(engine_with(false, 300)));
  auto sorted = df.lazy().with_columns({col("vf").mean().over({"kstr"}).alias("m")});
  expect_frames_close(sorted.collect(engine_with(true, 300)), sorted.collect(engine_with(false, 300)));
}

// The direct tier under compute-sanitizer (not in scripts/gpu-check.sh's list: a partition must have
// 2^20 rows to guess it): int64 keys in [-50, 50) with nulls, and keys the sample (every 32nd row)
// misses (rows 5 + 99991 m), which overflow into the warp tier.
TEST(CudaSanitized, DirectTier) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int64_t n = int64_t{1} << 20;
  std::vector<std::optional<int64_t>> k(static_cast<size_t>(n)), rare(static_cast<size_t>(n));
  std::vector<std::optional<double>> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = (i * 7919) % 1009;
    if (r % 11 != 0) k[static_cast<size_t>(i)] = r % 100 - 50;
    rare[static_cast<size_t>(i)] = i % 99991 == 5 ? int64_t{1} << 40 : r % 100;
    if (r % 13 != 0) v[static_cast<size_t>(i)] = static_cast<double>(r % 21 - 10);
  }
  data_frame df = data_frame::from_columns({{"k", i64(k)}, {"rare", i64(rare)}, {"v", f64(v)}});
  engine_options gpu = engine_with(true, n), cpu = engine_with(false, n);
  gpu.num_threads = cpu.num_threads = 1;
  for (std::string key : {"k", "rare"}) {
    SCOPED_TRACE(key);
    auto q = df.lazy().group_by({key}).agg({col("v").sum().alias("s")});
    expect_frames_equal(q.collect(gpu), q.collect(cpu));
  }
}

TEST(CudaAggregate, GpuPlanHasNoFallback) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto r = sample(100, 5).lazy().group_by({"kstr"}).agg(all_aggs()).profile(engine_with(true, 7));
  EXPECT_TRUE(r.fallbacks.empty()) << r.fallbacks[0];
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
      expect_frames_close(q.collect(engine_with(true, target)), q.collect(engine_with(false, target)));
    }
  }
}

// Windows whose keys are fixed-width and whose aggregations decompose run on the hash tables.
TEST(CudaWindow, HashedOverMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 31, 32, 33, 1024, 5000}) {
    for (int card : {11, 3000}) {
      for (int64_t target : {int64_t{7}, int64_t{1} << 20}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " card=" + std::to_string(card) + " target=" + std::to_string(target));
        data_frame df = sample(n, card);
        auto q = df.lazy().with_columns({
            col("v64").sum().over({"k64"}).alias("w_sum"),
            col("vf").mean().over({"k64", "kb"}).alias("w_mean"),
            col("vstr").min().over({"kf"}).alias("w_min"),
            col("vf").max().over({"kdate"}).alias("w_max"),
            col("v32").first().over({"k32"}).alias("w_first"),
            col("vb").last().over({"ku8"}).alias("w_last"),
            col("v64").count().over({"kts"}).alias("w_count"),
            len().over({"k64", "k32"}).alias("w_len"),
            col("vf32").std().over({"k64"}).alias("w_std"),
            col("vb").all().over({"kb"}).alias("w_all"),
        });
        expect_frames_close(q.collect(engine_with(true, target)), q.collect(engine_with(false, target)));
        if (n == 33) {
          std::string plan = q.explain(engine_with(true, target));
          EXPECT_NE(line_with(plan, "hash_window").find("@cuda"), std::string::npos) << plan;
        }
      }
    }
  }
}

#ifdef TUG_WITH_CUDA
// ---- host side of the hash aggregation (no GPU needed) ----
namespace {

namespace hp = tug::cuda::hash;

// One aggregation of every decomposable kind over columns of `in_schema()`.
schema in_schema() {
  return schema(std::vector<field>{{"k", type_id::int64},
                                   {"i", type_id::int32},
                                   {"f", type_id::float32},
                                   {"s", type_id::string},
                                   {"b", type_id::boolean},
                                   {"u", type_id::uint16},
                                   {"d", duration(time_unit::ms)}});
}

agg_spec spec(agg_op op, int64_t input, int ddof = 1) {
  agg_spec s;
  s.op = op;
  s.input = input;
  s.input_type = input < 0 ? data_type(type_id::int64) : in_schema()[static_cast<size_t>(input)].type;
  s.output_type = op == agg_op::len ? data_type(type_id::int64) : agg_result_type(op, s.input_type);
  s.ddof = ddof;
  return s;
}

std::vector<agg_spec> every_decomposable() {
  return {spec(agg_op::sum, 1),   spec(agg_op::sum, 2),   spec(agg_op::sum, 4),  spec(agg_op::sum, 5),
          spec(agg_op::sum, 6),   spec(agg_op::mean, 2),  spec(agg_op::mean, 4), spec(agg_op::min, 3),
          spec(agg_op::max, 2),   spec(agg_op::count, 3), spec(agg_op::len, -1), spec(agg_op::first, 3),
          spec(agg_op::last, 1),  spec(agg_op::any, 4),   spec(agg_op::all, 4),  spec(agg_op::std, 1),
          spec(agg_op::var, 2, 0)};
}

using leaf = schema_leaf;

void expect_well_formed(const hp::program& p) {
  int n = static_cast<int>(p.accs.size());
  for (int j = 0; j < n; ++j) {
    const hp::acc_desc& a = p.accs[static_cast<size_t>(j)];
    int pass = j < p.pass1 ? 1 : (j < n - p.pass2 ? 0 : 2);
    EXPECT_EQ(a.pass, pass) << "accumulator " << j;
    if (a.kind == hp::acc_kind::center) {
      // computed from pass-1 count, sum, smallest and largest value
      for (int i : {a.a, a.b, a.lo, a.hi})
        ASSERT_TRUE(i >= 0 && i < p.pass1) << "accumulator " << j;
      EXPECT_EQ(p.accs[static_cast<size_t>(a.lo)].kind, hp::acc_kind::min_u64) << "accumulator " << j;
      EXPECT_EQ(p.accs[static_cast<size_t>(a.hi)].kind, hp::acc_kind::max_u64) << "accumulator " << j;
    }
    if (a.src == hp::src_kind::dev || a.src == hp::src_kind::sq_dev || a.src == hp::src_kind::wdev ||
        a.src == hp::src_kind::chan) {
      ASSERT_TRUE(a.a >= 0 && a.a < n) << "accumulator " << j;
      EXPECT_EQ(p.accs[static_cast<size_t>(a.a)].kind, hp::acc_kind::center) << "accumulator " << j;
    }
  }
  for (auto& o : p.outs) {
    EXPECT_TRUE(o.kind == hp::out_kind::first_row || (o.acc >= 0 && o.acc < n));
    EXPECT_LT(o.acc2, n);
    EXPECT_LT(o.acc3, n);
    if (o.kind == hp::out_kind::var || o.kind == hp::out_kind::std || o.kind == hp::out_kind::moment_mean ||
        o.kind == hp::out_kind::moment_m2)
      EXPECT_TRUE(o.acc2 >= 0 && o.acc3 >= 0);
    if (o.kind == hp::out_kind::take) EXPECT_EQ(size_of(o.type.id), 8) << to_string(o.type);
  }
}

}  // namespace

TEST(CudaHashPlan, PartialOutputsAreTheCpuStates) {
  auto aggs = every_decomposable();
  hp::program p = hp::plan_partial(aggs);
  schema states = cpu::partial_schema(in_schema(), {0}, aggs);
  ASSERT_EQ(p.outs.size() + 1, states.size());
  for (size_t i = 0; i < p.outs.size(); ++i)
    EXPECT_EQ(p.outs[i].type, states[i + 1].type) << "state " << i << " " << to_string(p.outs[i].type);
  expect_well_formed(p);
  EXPECT_GT(p.pass2, 0);  // std and var
}

TEST(CudaHashPlan, FinalOutputsAreTheResults) {
  auto aggs = every_decomposable();
  hp::program p = hp::plan_final(aggs, 2);
  ASSERT_EQ(p.outs.size(), aggs.size());
  for (size_t i = 0; i < aggs.size(); ++i)
    EXPECT_EQ(p.outs[i].type, aggs[i].output_type) << to_string(aggs[i].op);
  expect_well_formed(p);
  // the final reads state columns after the 2 keys, each aggregation's in turn
  schema states = cpu::partial_schema(in_schema(), {0, 1}, aggs);
  for (auto& a : p.accs) {
    for (int c : {a.col, a.col2, a.col3})
      EXPECT_TRUE(c < 0 || (c >= 2 && c < static_cast<int>(states.size()))) << c;
  }
}

TEST(CudaHashPlan, UnfitNamesWhatHashingDoesNotTake) {
  schema in = in_schema();
  EXPECT_EQ(hp::unfit(in, {0, 1, 2, 4, 5, 6}, every_decomposable()), "");
  EXPECT_EQ(hp::unfit(in, {}, every_decomposable()), "");
  EXPECT_NE(hp::unfit(in, {3}, {spec(agg_op::sum, 1)}).find("key column s has type str"), std::string::npos);
  EXPECT_NE(hp::unfit(in, {0}, {spec(agg_op::median, 1)}).find("median"), std::string::npos);
}

TEST(CudaHashPlan, MakeAggregatePicksHashOrSort) {
  auto plan = [](std::vector<size_t> keys, std::vector<agg_spec> aggs) {
    schema out;
    for (size_t k : keys)
      out.push_back(in_schema()[k]);
    for (size_t i = 0; i < aggs.size(); ++i)
      out.push_back({"a" + std::to_string(i), aggs[i].output_type});
    physical_ptr p = cuda::make_aggregate(std::make_unique<leaf>(in_schema()), keys, aggs, false, out);
    return to_string(*p);
  };
  std::string hashed = plan({0, 2}, every_decomposable());
  EXPECT_NE(hashed.find("[sync] hash_aggregate[final] keys [#0, #1]"), std::string::npos) << hashed;
  EXPECT_NE(hashed.find("hash_aggregate[partial] keys [#0, #2]"), std::string::npos) << hashed;
  EXPECT_EQ(hashed.find("@cpu"), std::string::npos) << hashed;
  std::string global = plan({}, {spec(agg_op::sum, 2)});
  EXPECT_NE(global.find("hash_aggregate[partial] keys []"), std::string::npos) << global;
  std::string sorted = plan({3}, {spec(agg_op::sum, 1)});
  EXPECT_NE(sorted.find("sort_aggregate keys [#3]"), std::string::npos) << sorted;
  EXPECT_EQ(sorted.find("hash_aggregate"), std::string::npos) << sorted;
}

// The lowering's pre-projection of bare columns over a filter: the partial aggregation takes the
// filter's input and predicate, with key and input columns renumbered to that input.
TEST(CudaHashPlan, MakeAggregateAbsorbsAFilter) {
  auto filtered = [](std::vector<expr> pre) {
    schema in = in_schema();
    physical_ptr f = cuda::make_filter(std::make_unique<leaf>(in), resolve(col("i") > lit(int64_t{0}), in));
    schema mid;
    for (auto& e : pre)
      mid.push_back({output_name(e), resolve(e, in)->dtype});
    std::vector<expr> resolved;
    for (auto& e : pre)
      resolved.push_back(resolve(e, in));
    physical_ptr p = cuda::make_project(std::move(f), resolved, mid);
    agg_spec s = spec(agg_op::sum, 1);  // over the second projected column
    s.input_type = mid[1].type;
    s.output_type = agg_result_type(agg_op::sum, s.input_type);
    schema out{std::vector<field>{mid[0], {"a", s.output_type}}};
    return to_string(*cuda::make_aggregate(std::move(p), {0}, {s}, false, out));
  };
  std::string fused = filtered({col("k"), col("f").alias("x")});
  EXPECT_NE(fused.find("hash_aggregate[partial] filter"), std::string::npos) << fused;
  EXPECT_NE(fused.find("keys [#0] aggs [sum(#2)]"), std::string::npos) << fused;  // f is column 2 of the input
  EXPECT_EQ(fused.find("project"), std::string::npos) << fused;
  // a computed column keeps the projection and the filter
  std::string kept = filtered({col("k"), (col("f") + lit(1.0)).alias("x")});
  EXPECT_NE(kept.find("project"), std::string::npos) << kept;
  EXPECT_NE(kept.find("filter"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("[partial] filter"), std::string::npos) << kept;
  // a filter straight under the aggregation (no projection) is absorbed too
  schema in = in_schema();
  physical_ptr f = cuda::make_filter(std::make_unique<leaf>(in), resolve(col("i") > lit(int64_t{0}), in));
  agg_spec s = spec(agg_op::sum, 2);
  s.input_type = in[2].type;
  s.output_type = agg_result_type(agg_op::sum, s.input_type);
  schema out{std::vector<field>{in[0], {"a", s.output_type}}};
  std::string bare = to_string(*cuda::make_aggregate(std::move(f), {0}, {s}, false, out));
  EXPECT_NE(bare.find("hash_aggregate[partial] filter"), std::string::npos) << bare;
  EXPECT_NE(bare.find("keys [#0] aggs [sum(#2)]"), std::string::npos) << bare;
  EXPECT_EQ(bare.find("  filter"), std::string::npos) << bare;
  // and through two projections of plain columns (what the lowering builds for a filtered group_by)
  schema in2 = in_schema();
  physical_ptr f2 = cuda::make_filter(std::make_unique<leaf>(in2), resolve(col("i") > lit(int64_t{0}), in2));
  schema p1{std::vector<field>{in2[0], in2[2]}};
  physical_ptr pr1 = cuda::make_project(std::move(f2), {resolve(col("k"), in2), resolve(col("f"), in2)}, p1);
  schema p2{std::vector<field>{{"x", in2[2].type}, in2[0]}};
  physical_ptr pr2 = cuda::make_project(std::move(pr1), {resolve(col("f").alias("x"), p1), resolve(col("k"), p1)}, p2);
  agg_spec s2 = spec(agg_op::sum, 0);  // x = f, column 2 of the input
  s2.input_type = p2[0].type;
  s2.output_type = agg_result_type(agg_op::sum, s2.input_type);
  schema out2{std::vector<field>{p2[1], {"a", s2.output_type}}};
  std::string chain = to_string(*cuda::make_aggregate(std::move(pr2), {1}, {s2}, false, out2));
  EXPECT_NE(chain.find("hash_aggregate[partial] filter"), std::string::npos) << chain;
  EXPECT_NE(chain.find("keys [#0] aggs [sum(#2)]"), std::string::npos) << chain;
  EXPECT_EQ(chain.find("project"), std::string::npos) << chain;
}

// Which predicates the aggregation kernels evaluate themselves: and-ed `column <op> literal` terms
// in the column's type (the literal mirrored to the right), at most hp::max_fused_terms of them.
TEST(CudaAggregatePlan, FusedPredicateTerms) {
  schema in = in_schema();
  auto terms = [&](const expr& e) { return hp::fused_predicate(resolve(e, in), in); };
  auto one = terms(col("k") < 500);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].col, 0u);
  EXPECT_EQ(one[0].op, fn::lt);
  EXPECT_EQ(one[0].as, hp::cmp_as::s64);
  EXPECT_EQ(static_cast<int64_t>(one[0].literal), 500);
  auto mirrored = terms(expr(-7) <= col("i"));  // -7 <= i is i >= -7 (a dynamic literal takes int32)
  ASSERT_EQ(mirrored.size(), 1u);
  EXPECT_EQ(mirrored[0].col, 1u);
  EXPECT_EQ(mirrored[0].op, fn::ge);
  EXPECT_EQ(static_cast<int64_t>(mirrored[0].literal), -7);
  auto flt = terms(col("f") != 2.5);
  ASSERT_EQ(flt.size(), 1u);
  EXPECT_EQ(flt[0].as, hp::cmp_as::f64);
  double d = 0;
  std::memcpy(&d, &flt[0].literal, sizeof d);
  EXPECT_EQ(d, 2.5);
  EXPECT_EQ(terms((col("k") > 1) & (col("u") == 3) & (col("d") >= lit(int64_t{0}).cast(duration(time_unit::ms)))).size(), 3u);
  // not fused: an or, a column on both sides, a string, a null literal, a computed side, five terms
  EXPECT_TRUE(terms((col("k") > 1) | (col("i") < 0)).empty());
  EXPECT_TRUE(terms(col("k") > col("i")).empty());
  EXPECT_TRUE(terms(col("s") == "x").empty());
  EXPECT_TRUE(terms(col("k") == lit(scalar::null(data_type(type_id::int64)))).empty());
  EXPECT_TRUE(terms(col("k") + 1 > 3).empty());
  EXPECT_TRUE(terms(col("b")).empty());
  EXPECT_TRUE(terms((col("k") > 1) & (col("k") < 9) & (col("i") > 1) & (col("i") < 9) & (col("u") > 0)).empty());
}

// The fused kernels decide a term by the order key of the value and the term's key range
// (hp::order_key, hp::range_of): for every comparison and literal, that agrees with the CPU
// evaluator on every value, including the extremes, NaN (equal to NaN, above every number), -0.0
// (equal to 0.0) and infinities.
// The HyperLogLog sketch that sizes the largest group-by table: register placement bounds and the
// estimate within 5% (its standard error is about 1.6%) of distinct counts from 1 to 3 million.
TEST(CudaAggregatePlan, HyperLogLogEstimatesDistinctCounts) {
  uint32_t reg = 0, rank = 0;
  hp::hll_place(0, reg, rank);
  EXPECT_EQ(reg, 0u);
  EXPECT_EQ(rank, static_cast<uint32_t>(64 - hp::hll_bits + 1));
  hp::hll_place(~uint64_t{0}, reg, rank);
  EXPECT_EQ(reg, static_cast<uint32_t>(hp::hll_registers - 1));
  EXPECT_EQ(rank, 1u);
  auto mix = [](uint64_t z) {  // splitmix64's finalizer: distinct inputs, well-spread hashes
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{100}, int64_t{5000}, int64_t{200000}, int64_t{3000000}}) {
    std::vector<uint32_t> regs(hp::hll_registers, 0);
    for (int64_t i = 0; i < n; ++i)
      for (int twice = 0; twice < 2; ++twice) {  // repeats do not count
        hp::hll_place(mix(static_cast<uint64_t>(i) + 1), reg, rank);
        regs[reg] = std::max(regs[reg], rank);
      }
    double e = hp::hll_estimate(regs.data());
    EXPECT_NEAR(e, static_cast<double>(n), std::max(1.0, 0.05 * static_cast<double>(n))) << "n = " << n;
  }
}

// The direct table's key range from a sample's smallest and largest keys (as order keys): signed and
// unsigned keys, the capacity's edge (the keys plus the null key's slot), the ends of 64 bits, no
// valid key; and which widened key values it holds, at which slot (one unsigned subtraction, either
// signedness).
TEST(CudaAggregatePlan, DirectRangeFromSampledKeys) {
  const auto s64 = hp::cmp_as::s64, u64 = hp::cmp_as::u64;
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const uint64_t top = ~uint64_t{0};
  auto key = [](int64_t v) { return hp::order_key(static_cast<uint64_t>(v), hp::cmp_as::s64); };
  auto bits = [](int64_t v) { return static_cast<uint64_t>(v); };
  hp::direct_range r = hp::direct_range_of(key(-50), key(49), s64, 1024);
  EXPECT_EQ(r.lo, bits(-50));
  EXPECT_EQ(r.span, 100u);
  for (int64_t v : {lo, int64_t{-51}, int64_t{-50}, int64_t{0}, int64_t{49}, int64_t{50}, int64_t{1} << 40, hi})
    EXPECT_EQ(r.holds(bits(v)), v >= -50 && v < 50) << v;
  EXPECT_EQ(bits(49) - r.lo, 99u);
  // span + 1 <= slots
  EXPECT_EQ(hp::direct_range_of(key(0), key(1022), s64, 1024).span, 1023u);
  EXPECT_EQ(hp::direct_range_of(key(0), key(1023), s64, 1024).span, 0u);
  EXPECT_EQ(hp::direct_range_of(key(7), key(7), s64, 2).span, 1u);
  EXPECT_EQ(hp::direct_range_of(key(7), key(7), s64, 1).span, 0u);
  // no valid key sampled; ranges of (almost) all 64 bits
  EXPECT_EQ(hp::direct_range_of(top, 0, s64, 1024).span, 0u);
  EXPECT_EQ(hp::direct_range_of(0, top, u64, 1024).span, 0u);
  EXPECT_EQ(hp::direct_range_of(key(lo), key(hi), s64, 1024).span, 0u);
  EXPECT_EQ(hp::direct_range_of(key(lo + 1), key(lo), s64, 1024).span, 0u);
  // at the ends of int64: nothing wraps around
  r = hp::direct_range_of(key(lo), key(lo + 9), s64, 1024);
  EXPECT_EQ(r.lo, bits(lo));
  EXPECT_EQ(r.span, 10u);
  EXPECT_TRUE(r.holds(bits(lo + 9)));
  EXPECT_FALSE(r.holds(bits(lo + 10)));
  EXPECT_FALSE(r.holds(bits(hi)));
  r = hp::direct_range_of(key(hi - 4), key(hi), s64, 1024);
  EXPECT_TRUE(r.holds(bits(hi)));
  EXPECT_FALSE(r.holds(bits(lo)));
  EXPECT_FALSE(r.holds(bits(hi - 5)));
  // unsigned: at the top of uint64, and a uint8 key (zero-extended)
  r = hp::direct_range_of(top - 9, top, u64, 1024);
  EXPECT_EQ(r.lo, top - 9);
  EXPECT_TRUE(r.holds(top));
  EXPECT_FALSE(r.holds(0));
  r = hp::direct_range_of(0, 255, u64, 1024);
  EXPECT_TRUE(r.holds(255));
  EXPECT_FALSE(r.holds(256));
  // int8 keys, sign-extended: slot v + 128
  r = hp::direct_range_of(key(-128), key(127), s64, 1024);
  for (int v = -128; v <= 127; ++v) {
    ASSERT_TRUE(r.holds(bits(v))) << v;
    EXPECT_EQ(bits(v) - r.lo, static_cast<uint64_t>(v + 128)) << v;
  }
  EXPECT_FALSE(r.holds(bits(128)));
  EXPECT_FALSE(r.holds(bits(-129)));
}

TEST(CudaAggregatePlan, FusedTermRangesMatchCpuComparisons) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const uint64_t umax = std::numeric_limits<uint64_t>::max();
  std::vector<int64_t> ints = {lo, lo + 1, -1000, -1, 0, 1, 7, 1000, hi - 1, hi};
  std::vector<uint64_t> uints = {0, 1, 7, uint64_t{1} << 63, umax - 1, umax};
  std::vector<double> dbls = {-inf, -1e300, -1.5, -0.0, 0.0, 5e-324, 1.5, 1e300, inf, nan, -nan};
  std::vector<float> flts = {-std::numeric_limits<float>::infinity(), -2.5f, -0.0f, 0.0f, 0.25f, 3e38f,
                             std::numeric_limits<float>::quiet_NaN()};
  auto frame_of = [](const column& c) { return data_frame::from_columns({{"x", c}}); };
  std::vector<std::pair<data_frame, std::vector<expr>>> cases;
  std::vector<expr> int_lits, uint_lits, dbl_lits, flt_lits;
  for (int64_t v : ints)
    int_lits.push_back(lit(v));
  for (uint64_t v : uints)
    uint_lits.push_back(lit(scalar(data_type(type_id::uint64), v)));
  for (double v : dbls)
    dbl_lits.push_back(lit(v));
  for (float v : flts)
    flt_lits.push_back(lit(scalar(data_type(type_id::float32), static_cast<double>(v))));
  cases.push_back({frame_of(make_column<int64_t>(type_id::int64, ints)), int_lits});
  cases.push_back({frame_of(make_column<uint64_t>(type_id::uint64, uints)), uint_lits});
  cases.push_back({frame_of(make_column<double>(type_id::float64, dbls)), dbl_lits});
  cases.push_back({frame_of(make_column<float>(type_id::float32, flts)), flt_lits});
  using cmp = expr (expr::*)(const expr&) const;
  std::vector<std::pair<fn, cmp>> ops = {{fn::eq, &expr::eq}, {fn::ne, &expr::ne}, {fn::lt, &expr::lt},
                                         {fn::le, &expr::le}, {fn::gt, &expr::gt}, {fn::ge, &expr::ge}};
  int64_t checked = 0;
  for (auto& [df, lits] : cases) {
    schema in = df.schema();
    column x = df.to_table()[0];
    for (auto& l : lits)
      for (auto& [f, method] : ops) {
        expr pred = resolve((col("x").*method)(l), in);
        SCOPED_TRACE(to_string(pred));
        std::vector<hp::pred_term> terms = hp::fused_predicate(pred, in);
        ASSERT_EQ(terms.size(), 1u);
        EXPECT_EQ(terms[0].op, f);
        hp::key_range range = hp::range_of(terms[0]);
        column want = cpu::evaluate(pred, df.to_table(), in);
        for (int64_t i = 0; i < x.size(); ++i) {
          uint64_t bits = 0;
          if (x.type().id == type_id::float32) {
            double d = x.value<float>(i);  // the kernels widen float32 to double
            std::memcpy(&bits, &d, sizeof d);
          } else {
            std::memcpy(&bits, x.data_buffer()->as<uint8_t>() + 8 * (x.offset() + i), 8);
          }
          EXPECT_EQ(range.holds(hp::order_key(bits, terms[0].as)), want.value<bool>(i)) << "row " << i;
          ++checked;
        }
      }
  }
  EXPECT_EQ(checked, 6 * (10 * 10 + 6 * 6 + 11 * 11 + 7 * 7));
}

#endif
