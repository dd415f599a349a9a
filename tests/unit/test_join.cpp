// Joins through the lazy API, against a nested-loop reference join.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"

using namespace tug;

namespace {

constexpr auto nul = std::nullopt;

/// Key kinds the random tests cover.
enum class key_kind { i64, i32, f64, str, dec, date, boolean };

/// A key column from integer codes (nullopt = null). Codes map to values with duplicates; for
/// floats some codes give NaN, -0.0 and 0.0.
column key_column(key_kind kind, const std::vector<std::optional<int64_t>>& codes) {
  switch (kind) {
    case key_kind::i64: return i64(codes);
    case key_kind::i32: {
      std::vector<std::optional<int32_t>> v;
      for (auto& c : codes) v.push_back(c ? std::optional<int32_t>(static_cast<int32_t>(*c)) : nul);
      return i32(v);
    }
    case key_kind::f64: {
      std::vector<std::optional<double>> v;
      for (auto& c : codes) {
        if (!c) v.push_back(nul);
        else if (*c % 5 == 0) v.push_back(std::numeric_limits<double>::quiet_NaN());
        else if (*c % 5 == 1) v.push_back(-0.0);
        else if (*c % 5 == 2) v.push_back(0.0);
        else v.push_back(static_cast<double>(*c) * 0.25);
      }
      return f64(v);
    }
    case key_kind::str: {
      std::vector<std::optional<std::string>> v;
      for (auto& c : codes) v.push_back(c ? std::optional<std::string>("key" + std::to_string(*c)) : nul);
      return str(v);
    }
    case key_kind::dec: {
      std::vector<std::optional<__int128>> v;
      for (auto& c : codes) v.push_back(c ? std::optional<__int128>(static_cast<__int128>(*c) * 1000000007 - 5) : nul);
      return make_column<__int128>(decimal(20, 3), v);
    }
    case key_kind::date: {
      std::vector<std::optional<int32_t>> v;
      for (auto& c : codes) v.push_back(c ? std::optional<int32_t>(static_cast<int32_t>(*c * 37 - 1000)) : nul);
      return make_column<int32_t>(type_id::date32, v);
    }
    case key_kind::boolean: {
      std::vector<std::optional<bool>> v;
      for (auto& c : codes) v.push_back(c ? std::optional<bool>(*c % 2 == 0) : nul);
      return boolean(v);
    }
  }
  return {};
}

/// Deterministic pseudo-random numbers.
struct lcg {
  uint64_t s;
  int64_t next(int64_t n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(n));
  }
};

std::vector<std::optional<int64_t>> codes(lcg& r, int64_t n, int64_t domain, bool nulls) {
  std::vector<std::optional<int64_t>> v;
  for (int64_t i = 0; i < n; ++i) {
    if (nulls && r.next(10) == 0) v.push_back(nul);
    else v.push_back(r.next(domain));
  }
  return v;
}

/// Canonical text of a key value for the reference: floats with -0.0 == 0.0 and NaN == NaN.
std::optional<std::string> key_text(const column& c, int64_t i) {
  if (c.is_null(i)) return nul;
  if (c.type().id == type_id::float64) {
    double d = c.value<double>(i);
    if (std::isnan(d)) return "NaN";
    if (d == 0) return "0";
  }
  return format_value(c, i);
}

/// Nested-loop reference join of `l` and `r` on plain key columns, rows as rows_of prints them,
/// columns in Polars order (see plan::join); sorted, or else left rows in order with their matches in
/// right order.
std::vector<std::string> reference_join(const data_frame& l, const data_frame& r, const std::vector<std::string>& lk,
                                        const std::vector<std::string>& rk, join_type how, bool sort = true) {
  table lt = l.to_table(), rt = r.to_table();
  int64_t nl = l.num_rows(), nr = r.num_rows();
  auto keys_of = [](const data_frame& f, const table& t, const std::vector<std::string>& names) {
    std::vector<std::vector<std::optional<std::string>>> out(static_cast<size_t>(t.num_rows()));
    for (auto& name : names) {
      size_t c = f.schema().index_of(name);
      for (int64_t i = 0; i < t.num_rows(); ++i) out[static_cast<size_t>(i)].push_back(key_text(t[c], i));
    }
    return out;
  };
  auto lkeys = keys_of(l, lt, lk), rkeys = keys_of(r, rt, rk);
  auto match = [&](int64_t i, int64_t j) {
    if (how == join_type::cross) return true;
    auto& a = lkeys[static_cast<size_t>(i)];
    auto& b = rkeys[static_cast<size_t>(j)];
    for (size_t k = 0; k < a.size(); ++k)
      if (!a[k] || !b[k] || *a[k] != *b[k]) return false;
    return true;
  };
  bool coalesce = how == join_type::inner || how == join_type::left || how == join_type::right;
  // one side's part of an output row: row `i` of `t` (-1 = nulls), skipping coalesced keys
  auto part = [](const data_frame& f, const table& t, int64_t i, const std::vector<std::string>& skip) {
    std::vector<std::string> cells;
    for (size_t c = 0; c < t.num_columns(); ++c) {
      if (std::find(skip.begin(), skip.end(), f.schema()[c].name) != skip.end()) continue;
      cells.push_back(i < 0 ? "null" : format_value(t[c], i));
    }
    return cells;
  };
  std::vector<std::string> none;
  auto row = [&](int64_t i, int64_t j) {
    std::vector<std::string> cells;
    if (how == join_type::right) {
      cells = part(l, lt, i, coalesce ? lk : none);
      for (auto& s : part(r, rt, j, none)) cells.push_back(s);
    } else {
      cells = part(l, lt, i, none);
      if (how != join_type::semi && how != join_type::anti)
        for (auto& s : part(r, rt, j, coalesce ? rk : none)) cells.push_back(s);
    }
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) s += (c ? "|" : "") + cells[c];
    return s;
  };
  std::vector<std::string> out;
  std::vector<bool> right_matched(static_cast<size_t>(nr), false);
  for (int64_t i = 0; i < nl; ++i) {
    bool any = false;
    for (int64_t j = 0; j < nr; ++j) {
      if (!match(i, j)) continue;
      any = true;
      right_matched[static_cast<size_t>(j)] = true;
      if (how == join_type::semi || how == join_type::anti) break;
      out.push_back(row(i, j));
    }
    if ((how == join_type::semi && any) || (!any && (how == join_type::anti || how == join_type::left ||
                                                      how == join_type::full)))
      out.push_back(row(i, -1));
  }
  if (how == join_type::right || how == join_type::full)
    for (int64_t j = 0; j < nr; ++j)
      if (!right_matched[static_cast<size_t>(j)]) out.push_back(row(-1, j));
  if (sort) std::sort(out.begin(), out.end());
  return out;
}

const std::vector<join_type> all_types = {join_type::inner, join_type::left, join_type::right, join_type::full,
                                          join_type::semi,  join_type::anti, join_type::cross};

/// Left and right frames with key columns k (of `kind`) and k2 (i64), a clashing column v and payloads.
/// `right_distinct`: right keys k are 0..nr-1 shuffled (for floats, codes that map to NaN still repeat).
std::pair<data_frame, data_frame> make_pair(key_kind lkind, key_kind rkind, int64_t nl, int64_t nr, uint64_t seed,
                                            bool left_nulls = true, bool right_nulls = true,
                                            bool right_distinct = false) {
  lcg r{seed};
  int64_t domain = std::max<int64_t>(2, (nl + nr) / 4);
  std::vector<std::optional<int64_t>> lv, rv, rw;
  for (int64_t i = 0; i < nl; ++i) lv.push_back(i);
  for (int64_t i = 0; i < nr; ++i) {
    rv.push_back(1000 + i);
    rw.push_back(i % 3 == 0 ? std::optional<int64_t>() : std::optional<int64_t>(i));
  }
  std::vector<std::optional<int64_t>> rk = codes(r, nr, domain, right_nulls);
  if (right_distinct) {
    for (int64_t i = 0; i < nr; ++i) rk[static_cast<size_t>(i)] = i;
    for (int64_t i = nr - 1; i > 0; --i) std::swap(rk[static_cast<size_t>(i)], rk[static_cast<size_t>(r.next(i + 1))]);
  }
  auto l = data_frame::from_columns({{"k", key_column(lkind, codes(r, nl, domain, left_nulls))},
                                     {"v", i64(lv)},
                                     {"k2", i64(codes(r, nl, 3, left_nulls))}});
  auto rr = data_frame::from_columns({{"k2", i64(codes(r, nr, 3, right_nulls))},
                                      {"w", i64(rw)},
                                      {"k", key_column(rkind, rk)},
                                      {"v", i64(rv)}});
  return {l, rr};
}

void check_all_types(const data_frame& l, const data_frame& r, const std::vector<std::string>& keys,
                     const engine_options& o, const std::string& what) {
  for (join_type how : all_types) {
    if (how == join_type::cross && l.num_rows() * r.num_rows() > 4000) continue;  // keep the reference cheap
    auto lf = how == join_type::cross ? l.lazy().cross_join(r.lazy()) : l.lazy().join(r.lazy(), keys, how);
    auto got = lf.collect(o);
    EXPECT_EQ(got.schema().to_string(), lf.schema().to_string());
    EXPECT_EQ(sorted_rows(got), reference_join(l, r, keys, keys, how)) << what << " " << to_string(how);
  }
}

}  // namespace

TEST(Join, SchemasFollowPolars) {
  auto l = data_frame::from_columns({{"k", i64({1, 2})}, {"a", i64({10, 20})}, {"v", i64({0, 0})}}).lazy();
  auto r = data_frame::from_columns({{"v", i64({5, 6})}, {"k", i64({2, 3})}, {"b", str({"x", "y"})}}).lazy();
  EXPECT_EQ(l.join(r, {"k"}).schema().to_string(), "k: i64, a: i64, v: i64, v_right: i64, b: str");
  EXPECT_EQ(l.join(r, {"k"}, join_type::left).schema().to_string(), "k: i64, a: i64, v: i64, v_right: i64, b: str");
  EXPECT_EQ(l.join(r, {"k"}, join_type::right).schema().to_string(), "a: i64, v: i64, v_right: i64, k: i64, b: str");
  EXPECT_EQ(l.join(r, {"k"}, join_type::full).schema().to_string(),
            "k: i64, a: i64, v: i64, v_right: i64, k_right: i64, b: str");
  EXPECT_EQ(l.join(r, {"k"}, join_type::semi).schema().to_string(), "k: i64, a: i64, v: i64");
  EXPECT_EQ(l.join(r, {"k"}, join_type::anti).schema().to_string(), "k: i64, a: i64, v: i64");
  EXPECT_EQ(l.cross_join(r, "_x").schema().to_string(), "k: i64, a: i64, v: i64, v_x: i64, k_x: i64, b: str");
  EXPECT_EQ(l.join(r, {col("k")}, {col("v")}, join_type::inner, "_r").schema().to_string(),
            "k: i64, a: i64, v: i64, k_r: i64, b: str");
}

TEST(Join, SmallExactOutputs) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  auto l = data_frame::from_columns({{"k", i64({1, 2, 2, nul, 4})}, {"a", str({"a", "b", "c", "d", "e"})}});
  auto r = data_frame::from_columns({{"k", i64({2, 2, 3, nul, 1})}, {"b", i64({20, 21, 30, 99, 10})}});
  auto lz = l.lazy(), rz = r.lazy();
  // left join keeps left order; matches in right order
  expect_frames_equal(lz.join(rz, {"k"}, join_type::left).collect(),
                      data_frame::from_columns({{"k", i64({1, 2, 2, 2, 2, nul, 4})},
                                                {"a", str({"a", "b", "b", "c", "c", "d", "e"})},
                                                {"b", i64({10, 20, 21, 20, 21, nul, nul})}}));
  expect_frames_equal(lz.join(rz, {"k"}, join_type::inner).collect(),
                      data_frame::from_columns({{"k", i64({1, 2, 2, 2, 2})},
                                                {"a", str({"a", "b", "b", "c", "c"})},
                                                {"b", i64({10, 20, 21, 20, 21})}}));
  expect_frames_equal(lz.join(rz, {"k"}, join_type::semi).collect(),
                      data_frame::from_columns({{"k", i64({1, 2, 2})}, {"a", str({"a", "b", "c"})}}));
  expect_frames_equal(lz.join(rz, {"k"}, join_type::anti).collect(),
                      data_frame::from_columns({{"k", i64({nul, 4})}, {"a", str({"d", "e"})}}));
  // full: unmatched right rows (3 and the null key) come last with null left columns
  expect_frames_equal(lz.join(rz, {"k"}, join_type::full).collect(),
                      data_frame::from_columns({{"k", i64({1, 2, 2, 2, 2, nul, 4, nul, nul})},
                                                {"a", str({"a", "b", "b", "c", "c", "d", "e", nul, nul})},
                                                {"k_right", i64({1, 2, 2, 2, 2, nul, nul, 3, nul})},
                                                {"b", i64({10, 20, 21, 20, 21, nul, nul, 30, 99})}}));
  // right join: right order, right key kept
  expect_frames_equal(lz.join(rz, {"k"}, join_type::right).collect(),
                      data_frame::from_columns({{"a", str({"b", "c", "b", "c", nul, nul, "a"})},
                                                {"k", i64({2, 2, 2, 2, 3, nul, 1})},
                                                {"b", i64({20, 20, 21, 21, 30, 99, 10})}}));
  auto cross = lz.cross_join(rz.select({col("b")})).collect();
  EXPECT_EQ(cross.num_rows(), 25);
  EXPECT_EQ(rows_of(cross)[0], "1|a|20");
  EXPECT_EQ(rows_of(cross)[1], "1|a|21");
  EXPECT_EQ(rows_of(cross)[5], "2|b|20");
}

TEST(Join, ExplainShowsSyncPoint) {
  auto l = data_frame::from_columns({{"k", i64({1})}}).lazy();
  std::string e = l.join(l, {"k"}, join_type::left).explain(cpu_engine());
  EXPECT_NE(e.find("[sync] hash_join[left]"), std::string::npos) << e;
}

TEST(Join, AllTypesAndSizes) {
  const std::vector<key_kind> kinds = {key_kind::i64, key_kind::f64,  key_kind::str,    key_kind::dec,
                                       key_kind::date, key_kind::boolean};
  engine_options o;
  o.target_partition_rows = 7;
  uint64_t seed = 1;
  for (key_kind kind : kinds)
    for (int64_t nl : {0, 1, 31, 32, 33, 1024})
      for (int64_t nr : {0, 1, 33, 100}) {
        if (kind != key_kind::i64 && nl == 1024 && nr != 100) continue;
        auto [l, r] = make_pair(kind, kind, nl, nr, seed++);
        std::string what = "kind " + std::to_string(static_cast<int>(kind)) + " nl " + std::to_string(nl) + " nr " +
                           std::to_string(nr);
        check_all_types(l, r, {"k"}, o, what);
        check_all_types(l, r, {"k", "k2"}, o, what + " two keys");
      }
}

TEST(Join, ExternalBucketsEqualTheReference) {
  // force_external: both sides are split into hash buckets by their keys and joined bucket by bucket
  const std::vector<key_kind> kinds = {key_kind::i64, key_kind::f64,  key_kind::str,    key_kind::dec,
                                       key_kind::date, key_kind::boolean};
  engine_options o;
  o.target_partition_rows = 7;
  o.force_external = true;
  uint64_t seed = 100;
  for (key_kind kind : kinds)
    for (int64_t nl : {0, 1, 32, 33, 1024})
      for (int64_t nr : {0, 1, 31, 100}) {
        if (kind != key_kind::i64 && nl == 1024 && nr != 100) continue;
        auto [l, r] = make_pair(kind, kind, nl, nr, seed++);
        std::string what = "external kind " + std::to_string(static_cast<int>(kind)) + " nl " + std::to_string(nl) +
                           " nr " + std::to_string(nr);
        check_all_types(l, r, {"k"}, o, what);
        check_all_types(l, r, {"k", "k2"}, o, what + " two keys");
      }
  // the streamed-probe form under a memory_limit takes the buckets too
  o.memory_limit = int64_t{1} << 30;
  auto [l, r] = make_pair(key_kind::i64, key_kind::i64, 3000, 2000, 7);
  check_all_types(l, r, {"k"}, o, "external, memory_limit");
  o.target_partition_rows = 1 << 20;
  check_all_types(l, r, {"k2", "k"}, o, "external, one partition");
}

TEST(Join, OnePartitionAndNoNulls) {
  engine_options o;
  for (key_kind kind : {key_kind::i64, key_kind::str, key_kind::f64}) {
    auto [l, r] = make_pair(kind, kind, 300, 200, 77, false, false);
    check_all_types(l, r, {"k"}, o, "no nulls");
    check_all_types(l, r, {"k2", "k"}, o, "no nulls two keys");
  }
}

TEST(Join, RightWithoutNullsOrDuplicates) {
  // a build side without null keys (single fixed-width key fast path), with and without duplicates,
  // probed by keys with nulls
  engine_options o;
  o.target_partition_rows = 7;
  for (key_kind kind : {key_kind::i64, key_kind::f64, key_kind::date, key_kind::boolean, key_kind::str})
    for (bool distinct : {false, true}) {
      auto [l, r] = make_pair(kind, kind, 150, 60, 11, true, false, distinct);
      std::string what = "kind " + std::to_string(static_cast<int>(kind)) + (distinct ? " distinct" : "");
      check_all_types(l, r, {"k"}, o, what);
      check_all_types(l, r, {"k"}, engine_options{}, what + " one partition");
    }
}

TEST(Join, AllNullKeys) {
  auto l = data_frame::from_columns({{"k", i64({nul, nul, nul})}, {"a", i64({1, 2, 3})}});
  auto r = data_frame::from_columns({{"k", i64({nul, nul})}, {"b", i64({1, 2})}});
  check_all_types(l, r, {"k"}, engine_options{}, "all null");
  EXPECT_EQ(l.lazy().join(r.lazy(), {"k"}).collect().num_rows(), 0);
  EXPECT_EQ(l.lazy().join(r.lazy(), {"k"}, join_type::full).collect().num_rows(), 5);
}

namespace {
void different_key_names_and_int_types() {
  engine_options o;
  o.target_partition_rows = 7;
  auto [l, r0] = make_pair(key_kind::i32, key_kind::i64, 200, 150, 5);
  auto r = r0.lazy().rename({{"k", "rk"}}).collect();
  for (bool external : {false, true})
    for (join_type how : all_types) {
      if (how == join_type::cross) continue;
      o.force_external = external;  // hash buckets need equal key types: a cast key must still match
      auto lf = l.lazy().join(r.lazy(), {col("k")}, {col("rk")}, how, "_x");
      auto got = lf.collect(o);
      EXPECT_EQ(got.schema().to_string(), lf.schema().to_string());
      EXPECT_EQ(sorted_rows(got), reference_join(l, r, {"k"}, {"rk"}, how)) << to_string(how) << external;
    }
  auto inner = l.lazy().join(r.lazy(), {col("k")}, {col("rk")}, join_type::inner, "_x");
  EXPECT_EQ(inner.schema().to_string(), "k: i32, v: i64, k2: i64, k2_x: i64, w: i64, v_x: i64");
}

void computed_keys() {
  auto l = data_frame::from_columns({{"a", i64({1, 2, 3, 4})}});
  auto r = data_frame::from_columns({{"b", i64({2, 4, 6, 9})}, {"c", str({"x", "y", "z", "w"})}});
  auto out = l.lazy().join(r.lazy(), {col("a") * lit(int64_t{2})}, {col("b")}, join_type::left).collect();
  // computed keys are not coalesced: the right key column stays
  EXPECT_EQ(out.schema().to_string(), "a: i64, b: i64, c: str");
  EXPECT_EQ(rows_of(out), (std::vector<std::string>{"1|2|x", "2|4|y", "3|6|z", "4|null|null"}));
}
}  // namespace

TEST(Join, DifferentKeyNamesAndIntTypes) {
  different_key_names_and_int_types();
}

TEST(Join, ComputedKeys) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  computed_keys();
}

TEST(Join, EmptySides) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  auto l = data_frame::from_columns({{"k", i64({1, 2})}, {"a", str({"x", "y"})}});
  auto e = data_frame::from_columns({{"k", i64({})}, {"b", str({})}});
  check_all_types(l, e, {"k"}, engine_options{}, "empty right");
  check_all_types(e, l, {"k"}, engine_options{}, "empty left");
  check_all_types(e, e, {"k"}, engine_options{}, "both empty");
  auto full = e.lazy().join(l.lazy(), {"k"}, join_type::full).collect();
  EXPECT_EQ(rows_of(full), (std::vector<std::string>{"null|null|1|x", "null|null|2|y"}));
  // inputs without any partition
  data_frame none(l.schema(), {});
  check_all_types(none, l, {"k"}, engine_options{}, "no left partitions");
  check_all_types(l, none, {"k"}, engine_options{}, "no right partitions");
  EXPECT_EQ(none.lazy().join(l.lazy(), {"k"}, join_type::full).collect().num_rows(), 2);
}

TEST(Join, SlicedInput) {
  auto [l0, r0] = make_pair(key_kind::str, key_kind::str, 300, 100, 9);
  auto l = data_frame(l0.schema(), {l0.to_table().slice(13, 250)});
  auto r = data_frame(r0.schema(), {r0.to_table().slice(7, 80)});
  engine_options o;
  o.target_partition_rows = 33;
  check_all_types(l, r, {"k", "k2"}, o, "sliced");
}

TEST(Join, LargeMultiPartitionAndSkew) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  engine_options o;
  o.target_partition_rows = 1000;
  // 100k left rows, 300 right rows; a fifth of the left rows and 5 right rows share key 0
  std::vector<std::optional<int64_t>> lk, lv, rk, rv;
  for (int64_t i = 0; i < 100000; ++i) {
    lk.push_back(i % 5 == 0 ? 0 : (i % 997 == 0 ? std::optional<int64_t>() : std::optional<int64_t>(i % 500)));
    lv.push_back(i);
  }
  for (int64_t i = 0; i < 300; ++i) {
    rk.push_back(i % 60 == 0 ? 0 : i);
    rv.push_back(-i);
  }
  auto l = data_frame::from_columns({{"k", i64(lk)}, {"v", i64(lv)}});
  auto r = data_frame::from_columns({{"k", i64(rk)}, {"w", i64(rv)}});
  for (join_type how : {join_type::inner, join_type::left, join_type::full, join_type::semi, join_type::anti}) {
    auto got = l.lazy().join(r.lazy(), {"k"}, how).collect(o);
    EXPECT_EQ(sorted_rows(got), reference_join(l, r, {"k"}, {"k"}, how)) << to_string(how);
    EXPECT_GT(got.partitions().size(), 1u);
    // under a memory_limit (ctest unit.join_streaming) an output partition holds the matches of one
    // left partition (the probe streams them), each left row at most 5 (key 0)
    const int64_t most = o.memory_limit > 0 ? 5 * 1000 : 1000;
    for (auto& p : got.partitions()) EXPECT_LE(p.num_rows(), most);
  }
  // left join keeps left order
  auto left = l.lazy().join(r.lazy(), {"k"}, join_type::left).collect(o).to_table();
  for (int64_t i = 1; i < left.num_rows(); ++i) ASSERT_LE(left[1].value<int64_t>(i - 1), left[1].value<int64_t>(i));
}

TEST(Join, NameClashSuffix) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  auto l = data_frame::from_columns({{"k", i64({1, 2})}, {"x", i64({1, 2})}, {"x_r", i64({5, 6})}});
  auto r = data_frame::from_columns({{"k", i64({1, 2})}, {"x", i64({3, 4})}});
  auto out = l.lazy().join(r.lazy(), {"k"}, join_type::inner, "_s").collect();
  EXPECT_EQ(out.schema().to_string(), "k: i64, x: i64, x_r: i64, x_s: i64");
  EXPECT_EQ(rows_of(out), (std::vector<std::string>{"1|1|5|3", "2|2|6|4"}));
  EXPECT_THROW(l.lazy().join(r.lazy(), {"k"}, join_type::inner, "_r"), invalid_argument_error);
}

TEST(Join, SmallerLeftSideKeepsOrder) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  // with fewer left rows than right rows the operator indexes the left side and probes with the
  // right one; the output order stays: left rows in order, each with its matches in right order
  engine_options o;
  o.target_partition_rows = 50;
  for (key_kind kind : {key_kind::i64, key_kind::str, key_kind::f64, key_kind::date})
    for (bool distinct : {false, true}) {
      auto [l0, r] = make_pair(kind, kind, 90, 700, 21 + (distinct ? 1 : 0));
      if (distinct) {  // left keys 0..89 shuffled (floats still repeat NaN and zero)
        std::vector<std::optional<int64_t>> k;
        for (int64_t i = 0; i < 90; ++i) k.push_back((i * 37) % 90);
        table t = l0.to_table();
        l0 = data_frame::from_columns({{"k", key_column(kind, k)}, {"v", t[1]}, {"k2", t[2]}});
      }
      // the left side in three partitions, so left rows are numbered across partitions
      table lt = l0.to_table();
      data_frame l(l0.schema(), {lt.slice(0, 20), lt.slice(20, 1), lt.slice(21, 69)});
      std::string what = "kind " + std::to_string(static_cast<int>(kind)) + (distinct ? " distinct" : "");
      for (join_type how : {join_type::inner, join_type::left, join_type::semi, join_type::anti})
        for (auto keys : {std::vector<std::string>{"k"}, std::vector<std::string>{"k", "k2"}}) {
          auto got = l.lazy().join(r.lazy(), keys, how).collect(o);
          EXPECT_EQ(rows_of(got), reference_join(l, r, keys, keys, how, false))
              << what << " " << to_string(how) << " keys " << keys.size();
        }
      // right joins run as left joins with the sides swapped
      auto right = r.lazy().join(l.lazy(), {"k"}, join_type::right).collect(o);
      EXPECT_EQ(sorted_rows(right), reference_join(r, l, {"k"}, {"k"}, join_type::right)) << what;
    }
}
