// key_index and cpu::group_rows against a reference (std::map over formatted key tuples): every
// codec path (direct table of packed codes, ranked table of sparse packed codes, hashed packed codes,
// short strings packed, bits of one fixed-width key, the generic path), nulls, negative values,
// extreme values, sliced inputs and the parallel chunked grouping.
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "../../src/exec/cpu/agg_kernels.hpp"
#include "test_util.hpp"
#include "tug/exec/key_index.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {
namespace {

std::string key_of(const std::vector<column>& keys, int64_t r) {
  std::string s;
  for (auto& k : keys) s += (k.is_null(r) ? std::string("<null>") : format_value(k, r)) + "|";
  return s;
}

struct reference {
  std::vector<int64_t> ids, first_rows;
  std::map<std::string, int64_t> group_of;
};

reference reference_groups(const std::vector<column>& keys) {
  reference ref;
  for (int64_t r = 0; r < keys[0].size(); ++r) {
    auto [it, fresh] = ref.group_of.emplace(key_of(keys, r), static_cast<int64_t>(ref.first_rows.size()));
    if (fresh) ref.first_rows.push_back(r);
    ref.ids.push_back(it->second);
  }
  return ref;
}

// Checks grouping, group keys and find() (probe = `probe`, or the keys themselves) against the reference.
void check_index(const std::vector<column>& keys, const std::vector<column>& probe, const std::string& what) {
  SCOPED_TRACE(what + ", rows " + std::to_string(keys[0].size()));
  reference ref = reference_groups(keys);
  key_index ki(keys);
  ASSERT_EQ(ki.num_groups(), static_cast<int64_t>(ref.first_rows.size()));
  EXPECT_EQ(ki.group_ids(), ref.ids);
  EXPECT_EQ(ki.first_rows(), ref.first_rows);
  auto gk = ki.group_keys();
  for (size_t c = 0; c < keys.size(); ++c) expect_columns_equal(gk[c], gather(keys[c], ref.first_rows), "group key");
  std::vector<int64_t> expected;
  for (int64_t r = 0; r < probe[0].size(); ++r) {
    auto it = ref.group_of.find(key_of(probe, r));
    expected.push_back(it == ref.group_of.end() ? -1 : it->second);
  }
  EXPECT_EQ(ki.find(probe), expected);
  thread_pool pool(2);
  cpu::row_groups rg = cpu::group_rows(keys, &pool);
  EXPECT_EQ(rg.ids, ref.ids);
  EXPECT_EQ(rg.first_row, ref.first_rows);
}

// An int64 column of n values drawn from `gen`, null with probability `null_p`.
template <typename T, typename Gen>
column random_column(type_id id, int64_t n, std::mt19937_64& rng, double null_p, Gen gen) {
  std::vector<std::optional<T>> v;
  std::bernoulli_distribution is_null(null_p);
  for (int64_t i = 0; i < n; ++i) v.push_back(is_null(rng) ? std::nullopt : std::optional<T>(gen(rng)));
  return make_column<T>(id, v);
}

auto uniform(int64_t lo, int64_t hi) {
  return [=](std::mt19937_64& rng) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
}

const std::vector<int64_t> sizes = {0, 1, 31, 32, 33, 1024, 70000};

TEST(KeyIndex, SingleSmallRangeWithNegatives) {
  std::mt19937_64 rng(1);
  for (int64_t n : sizes) {
    for (double null_p : {0.0, 0.2, 1.0}) {
      column k = random_column<int64_t>(type_id::int64, n, rng, null_p, uniform(-40, 40));
      column probe = random_column<int64_t>(type_id::int64, 300, rng, 0.1, uniform(-60, 60));
      check_index({k}, {probe}, "small range, null_p " + std::to_string(null_p));
      check_index({k}, {k}, "small range self");
    }
  }
}

TEST(KeyIndex, TwoKeysPackedDirectAndHashed) {
  std::mt19937_64 rng(2);
  for (int64_t n : sizes) {
    for (double null_p : {0.0, 0.3}) {
      // small ranges: direct table; (0, 10) and (1, 0)-style tuples must not collide
      column a = random_column<int64_t>(type_id::int64, n, rng, null_p, uniform(-5, 5));
      column b = random_column<int64_t>(type_id::int64, n, rng, null_p, uniform(-10, 10));
      column pa = random_column<int64_t>(type_id::int64, 500, rng, 0.1, uniform(-7, 7));
      column pb = random_column<int64_t>(type_id::int64, 500, rng, 0.1, uniform(-12, 12));
      check_index({a, b}, {pa, pb}, "two small keys");
      // wide ranges: codes fit 64 bits but not a direct table
      column c = random_column<int64_t>(type_id::int64, n, rng, null_p, uniform(-1'000'000, 1'000'000));
      column d = random_column<int64_t>(type_id::int64, n, rng, null_p, uniform(0, 3));
      column pc = random_column<int64_t>(type_id::int64, 500, rng, 0.1, uniform(-1'000'000, 1'000'000));
      check_index({c, d}, {pc, pb}, "wide and narrow keys");
      check_index({c, d}, {c, d}, "wide and narrow self");
    }
  }
}

TEST(KeyIndex, MixedIntegralTypes) {
  std::mt19937_64 rng(3);
  for (int64_t n : sizes) {
    column a = random_column<int32_t>(type_id::int32, n, rng, 0.1, [](std::mt19937_64& r) {
      return static_cast<int32_t>(std::uniform_int_distribution<int32_t>(-3, 3)(r));
    });
    column b = random_column<bool>(type_id::boolean, n, rng, 0.1,
                                   [](std::mt19937_64& r) { return std::bernoulli_distribution(0.5)(r); });
    column c = random_column<uint64_t>(type_id::uint64, n, rng, 0.0, [](std::mt19937_64& r) {
      return std::numeric_limits<uint64_t>::max() - std::uniform_int_distribution<uint64_t>(0, 5)(r);
    });
    check_index({a, b, c}, {a, b, c}, "int32, bool, uint64");
  }
}

TEST(KeyIndex, ExtremeValuesAndOverflowingRanges) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  // the span of one key is 2^64 - 1: no null digit fits (generic path), without nulls the bits path
  check_index({i64({lo, hi, 0, lo, -1, hi})}, {i64({hi, 1, lo, std::nullopt})}, "full range");
  check_index({i64({lo, hi, std::nullopt, lo, std::nullopt, 0})}, {i64({hi, 1, std::nullopt, 0})},
              "full range with nulls");
  // two keys whose range product overflows 64 bits: generic path
  check_index({i64({lo, hi, lo, lo}), i64({0, 1 << 20, 0, 5})}, {i64({lo, hi}), i64({0, 0})}, "overflowing product");
}

TEST(KeyIndex, FloatKeys) {
  column f = f64({0.0, -0.0, std::nan(""), 1.5, -std::nan(""), 1.5, -2.0});
  key_index ki({f});
  EXPECT_EQ(ki.group_ids(), (std::vector<int64_t>{0, 0, 1, 2, 1, 2, 3}));
  EXPECT_EQ(ki.find({f64({-0.0, std::nullopt, 7.0, std::nan("")})}), (std::vector<int64_t>{0, -1, -1, 1}));
  key_index with_null({f64({1.0, std::nullopt, 1.0}), i64({1, 2, 1})});
  EXPECT_EQ(with_null.group_ids(), (std::vector<int64_t>{0, 1, 0}));
}

TEST(KeyIndex, SlicedKeys) {
  std::mt19937_64 rng(4);
  column a = random_column<int64_t>(type_id::int64, 2000, rng, 0.2, uniform(-20, 20));
  column b = random_column<int64_t>(type_id::int64, 2000, rng, 0.2, uniform(-3, 3));
  for (int64_t off : {0, 3, 33}) {
    column sa = a.slice(off, 1024), sb = b.slice(off + 7, 1024);
    check_index({sa, sb}, {sb, sa}, "sliced at " + std::to_string(off));
    check_index({sa}, {a.slice(1, 500)}, "one sliced key");
  }
}

TEST(KeyIndex, GroupChunksWithEmptyAndUnevenChunks) {
  std::mt19937_64 rng(5);
  thread_pool pool(2);
  for (double null_p : {0.0, 0.3}) {
    column a = random_column<int64_t>(type_id::int64, 1089, rng, null_p, uniform(-9, 9));
    column s = random_column<int64_t>(type_id::int64, 1089, rng, null_p, uniform(-3, 3));
    column b = make_string_column([&] {
      std::vector<std::optional<std::string>> v;
      for (int64_t i = 0; i < s.size(); ++i) v.push_back(s.is_null(i) ? std::nullopt : std::optional(format_value(s, i)));
      return v;
    }());
    reference ref = reference_groups({a, b});
    std::vector<std::vector<column>> chunks;
    int64_t at = 0;
    for (int64_t len : {0, 31, 1, 0, 1024, 33}) {
      chunks.push_back({a.slice(at, len), b.slice(at, len)});
      at += len;
    }
    cpu::row_groups rg = cpu::group_chunks(chunks, pool);
    EXPECT_EQ(rg.ids, ref.ids);
    EXPECT_EQ(rg.first_row, ref.first_rows);
  }
}

TEST(KeyIndex, GroupInPartsGivesTheIdsOfOneIndex) {
  // group_in_parts (the parallel merge of group_chunks) against one key_index: few and many distinct
  // keys, nulls, NaN and -0.0 (equal to 0.0), strings, two key columns, sliced input, 1 to 5 threads
  std::mt19937_64 rng(8);
  auto f64_of = [&](int64_t n, double null_p) {
    std::vector<std::optional<double>> v;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t r = rng() % 100;
      if (static_cast<double>(r) < null_p * 100) v.push_back(std::nullopt);
      else if (r % 10 == 1) v.push_back(std::nan(""));
      else if (r % 10 == 2) v.push_back(-0.0);
      else if (r % 10 == 3) v.push_back(0.0);
      else v.push_back(static_cast<double>(rng() % 50));
    }
    return f64(v);
  };
  for (int threads : {1, 2, 3, 5}) {
    thread_pool pool(threads);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, int64_t{1024}, int64_t{70000}}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, " + std::to_string(n) + " rows");
      column many = random_column<int64_t>(type_id::int64, n + 7, rng, 0.1, uniform(-1000000, 1000000)).slice(7, n);
      column few = random_column<int64_t>(type_id::int64, n, rng, 0.2, uniform(-3, 3));
      column s = make_string_column([&] {
        std::vector<std::optional<std::string>> v;
        for (int64_t i = 0; i < n; ++i)
          v.push_back(i % 11 == 0 ? std::nullopt : std::optional(std::string("key-") + std::to_string(rng() % 5000)));
        return v;
      }());
      for (const std::vector<column>& keys : std::vector<std::vector<column>>{{many}, {few}, {f64_of(n, 0.1)}, {s}, {few, s}}) {
        key_index one(keys);  // the oracle (itself checked against the reference above; -0.0 == 0.0 there)
        cpu::row_groups rg = cpu::group_in_parts(keys, pool);
        EXPECT_EQ(rg.ids, one.group_ids());
        EXPECT_EQ(rg.first_row, one.first_rows());
      }
    }
  }
}

TEST(KeyIndex, GroupChunksOfManyGroupsMergesByParts) {
  // chunks whose groups pass kPartedMergeRows: the merge goes by parts and gives the same ids
  std::mt19937_64 rng(9);
  thread_pool pool(cpu::kPartedMergeThreads);
  const int64_t n = 3 * cpu::kPartedMergeRows;
  column k = random_column<int64_t>(type_id::int64, n, rng, 0.01, uniform(0, n));
  reference ref = reference_groups({k});
  std::vector<std::vector<column>> chunks;
  for (int64_t c = 0; c < 4; ++c) chunks.push_back({k.slice(n * c / 4, n * (c + 1) / 4 - n * c / 4)});
  cpu::row_groups rg = cpu::group_chunks(chunks, pool);
  EXPECT_EQ(rg.ids, ref.ids);
  EXPECT_EQ(rg.first_row, ref.first_rows);
  cpu::row_groups all = cpu::group_rows({k}, &pool);
  EXPECT_EQ(all.ids, ref.ids);
  EXPECT_EQ(all.first_row, ref.first_rows);
}

TEST(KeyIndex, StringsGenericPath) {
  // a string longer than 7 bytes: no packed codec
  column s = str({"a", std::nullopt, "b", "a", std::nullopt, "", "eight by"});
  check_index({s, i64({1, 1, 1, 1, 1, 1, 1})}, {str({"a", "c", std::nullopt, "eight by"}), i64({1, 1, 1, 1})},
              "strings");
}

TEST(KeyIndex, ShortStringsPacked) {
  // strings of at most 7 bytes pack like integers: the length tells "a" from "a\0"; probes longer
  // than 7 bytes, out of range or null (none indexed) find nothing
  using namespace std::string_literals;
  std::vector<std::optional<std::string>> v = {"a", "a\0"s, "", "abcdefg", "b", "a", "\0"s, "abcdefg", "zz"};
  column s = str(v);
  check_index({s}, {str({"a", "a\0"s, "\0\0"s, "abcdefgh", "abcdef", std::nullopt, "zzz", "", "zz"})}, "short");
  // with nulls, and a second key
  std::mt19937_64 rng(6);
  // up to `most` bytes from a 3-letter alphabet, null one time in 7
  auto word = [&](size_t most) -> std::optional<std::string> {
    if (rng() % 7 == 0) return std::nullopt;
    std::string w(rng() % (most + 1), ' ');
    for (auto& ch : w) ch = static_cast<char>('A' + rng() % 3);
    return w;
  };
  for (int64_t n : sizes) {
    std::vector<std::optional<std::string>> a, pa;
    for (int64_t i = 0; i < n; ++i) a.push_back(word(n > 1000 ? 7 : 3));
    for (int64_t i = 0; i < 300; ++i) pa.push_back(word(8));
    column b = random_column<int64_t>(type_id::int64, n, rng, 0.1, uniform(-3, 3));
    column pb = random_column<int64_t>(type_id::int64, 300, rng, 0.1, uniform(-4, 4));
    check_index({str(a)}, {str(pa)}, "short strings");
    check_index({str(a), b}, {str(pa), pb}, "short strings and ints");
  }
}

TEST(KeyIndex, SparseCodesRankedAndHashed) {
  // ranges between the direct table's limit (8 per row) and the ranked table's (128 per row plus
  // 2^20), and beyond it (hashed)
  std::mt19937_64 rng(7);
  for (int64_t n : {1000, 70000}) {
    for (int64_t range : {int64_t{200'000}, int64_t{5'000'000}, int64_t{1'000'000'000}}) {
      for (double null_p : {0.0, 0.1}) {
        column k = random_column<int64_t>(type_id::int64, n, rng, null_p, uniform(-range / 2, range / 2));
        // half the probes are indexed keys, half random
        std::vector<std::optional<int64_t>> p;
        for (int64_t i = 0; i < 2000; ++i) {
          int64_t r = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
          if (i % 2 == 0 && k.is_valid(r)) p.push_back(k.value<int64_t>(r));
          else p.push_back(uniform(-range, range)(rng));
        }
        check_index({k}, {i64(p)}, "range " + std::to_string(range) + " null_p " + std::to_string(null_p));
      }
    }
  }
}

TEST(KeyIndex, GroupRowsManyDistinctKeys) {
  // many rows with mostly distinct keys, grouped in parallel: equal floats (-0.0 and 0.0, every
  // NaN) and equal strings must form one group, numbered in first-seen order
  std::mt19937_64 rng(8);
  int64_t n = 100000;
  std::vector<std::optional<double>> f;
  std::vector<std::optional<std::string>> s;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = rng() % 100;
    if (r == 0) f.push_back(-0.0);
    else if (r == 1) f.push_back(0.0);
    else if (r == 2) f.push_back(std::nan(""));
    else if (r == 3) f.push_back(-std::nan(""));
    else if (r == 4) f.push_back(std::nullopt);
    else f.push_back(static_cast<double>(rng() % 1'000'000) * 0.5);
    s.push_back(r == 5 ? std::nullopt : std::optional<std::string>("key-" + std::to_string(rng() % 200'000)));
  }
  column fc = f64(f), sc = str(s);
  column ic = random_column<int64_t>(type_id::int64, n, rng, 0.05, uniform(0, 1'000'000'000));
  // floats against the one-threaded index (the text reference tells -0.0 from 0.0)
  key_index single({fc});
  thread_pool pool(2);
  cpu::row_groups rg = cpu::group_rows({fc}, &pool);
  EXPECT_EQ(rg.ids, single.group_ids());
  EXPECT_EQ(rg.first_row, single.first_rows());
  // the zeros form one group, and so do the NaNs
  int64_t zero = -1, nan = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!f[static_cast<size_t>(i)]) continue;
    double x = *f[static_cast<size_t>(i)];
    if (x != 0 && !std::isnan(x)) continue;
    int64_t& want = x == 0 ? zero : nan;
    if (want < 0) want = rg.ids[static_cast<size_t>(i)];
    EXPECT_EQ(rg.ids[static_cast<size_t>(i)], want) << "row " << i;
  }
  EXPECT_GE(zero, 0);
  EXPECT_GE(nan, 0);
  check_index({sc}, {sc.slice(0, 500)}, "string buckets");
  check_index({ic, sc}, {ic.slice(0, 500), sc.slice(0, 500)}, "int and string buckets");
}

}  // namespace
}  // namespace tug
