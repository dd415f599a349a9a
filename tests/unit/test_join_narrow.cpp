// Joins that output only the columns their consumer reads (join_node::narrow_output): the same rows as
// the join of every column followed by a selection, for every join type, through the physical plan
// (any subset, none included) and through the lazy API (where the lowering narrows the join).
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tug/memory/memory_resource.hpp"
#include "tug/plan/lower.hpp"
#include "tug/runtime/thread_pool.hpp"

using namespace tug;

namespace {

constexpr auto nul = std::nullopt;

const std::vector<join_type> all_types = {join_type::inner, join_type::left, join_type::right, join_type::full,
                                          join_type::semi,  join_type::anti, join_type::cross};

/// Left (k, v, k2, s) and right (k2, w, k, v) frames in partitions of `part` rows: keys with duplicates
/// and nulls, clashing names (k2, v), a string payload.
std::pair<data_frame, data_frame> make_pair(int64_t nl, int64_t nr, int64_t part, uint64_t seed) {
  uint64_t s = seed;
  auto next = [&](int64_t n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(n));
  };
  auto key = [&](int64_t domain) { return next(9) == 0 ? std::optional<int64_t>() : next(domain); };
  int64_t domain = std::max<int64_t>(2, (nl + nr) / 5);
  std::vector<std::optional<int64_t>> lk, lv, lk2, rk, rv, rw, rk2;
  std::vector<std::optional<std::string>> ls;
  for (int64_t i = 0; i < nl; ++i) {
    lk.push_back(key(domain));
    lv.push_back(i);
    lk2.push_back(key(3));
    ls.push_back(i % 4 == 0 ? std::optional<std::string>() : "s" + std::to_string(i));
  }
  for (int64_t i = 0; i < nr; ++i) {
    rk2.push_back(key(3));
    rw.push_back(i % 3 == 0 ? std::optional<int64_t>() : std::optional<int64_t>(i));
    rk.push_back(key(domain));
    rv.push_back(1000 + i);
  }
  auto split = [&](const data_frame& f) {
    table t = f.to_table();
    std::vector<table> parts;
    for (int64_t a = 0; a < t.num_rows(); a += part)
      parts.push_back(t.slice(a, std::min(part, t.num_rows() - a)));
    return data_frame(f.schema(), std::move(parts));
  };
  auto l = data_frame::from_columns({{"k", i64(lk)}, {"v", i64(lv)}, {"k2", i64(lk2)}, {"s", str(ls)}});
  auto r = data_frame::from_columns({{"k2", i64(rk2)}, {"w", i64(rw)}, {"k", i64(rk)}, {"v", i64(rv)}});
  return {split(l), split(r)};
}

lazy_frame join_of(const data_frame& l, const data_frame& r, const std::vector<std::string>& keys, join_type how) {
  return how == join_type::cross ? l.lazy().cross_join(r.lazy()) : l.lazy().join(r.lazy(), keys, how);
}

/// Runs a physical plan on the CPU.
data_frame execute(physical_node& root, const schema& out, const engine_options& o) {
  auto mr = std::make_shared<host_memory_resource>(std::make_shared<memory_budget>(0, "host"));
  exec_context ctx{o, global_thread_pool(o.num_threads), mr.get()};
  std::vector<table> parts = root.execute(ctx);
  std::vector<table> keep;
  for (auto& t : parts)
    if (t.num_rows() > 0) keep.push_back(std::move(t));
  return data_frame(out, std::move(keep));
}

/// The columns `names` of `f`, in that order.
data_frame columns_of(const data_frame& f, const std::vector<std::string>& names) {
  table t = f.to_table();
  std::vector<std::pair<std::string, column>> cols;
  for (auto& n : names)
    cols.emplace_back(n, t[f.schema().index_of(n)]);
  return data_frame::from_columns(cols);
}

/// The join node of a lowered plan (its root projects the join's output to the logical layout).
join_node* join_in(physical_node& root) {
  for (physical_node* n = &root; n; n = n->children.empty() ? nullptr : n->children[0].get())
    if (auto* j = dynamic_cast<join_node*>(n)) return j;
  return nullptr;
}

/// Every subset of the join's logical output columns asked of the lowered plan (subsets of up to
/// `most` columns, so the count stays small), and the join asked for no columns at all: the same rows
/// as the plan of every column.
void check_subsets(const data_frame& l, const data_frame& r, const std::vector<std::string>& keys, join_type how,
                   const engine_options& o, const std::string& what) {
  lazy_frame lf = join_of(l, r, keys, how);
  std::vector<std::string> names = lf.schema().names();
  physical_ptr full = lower(lf.plan(), o);
  data_frame want = execute(*full, lf.schema(), o);
  auto n = static_cast<uint32_t>(names.size());
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) > 3 && mask != (1u << n) - 1) continue;
    std::vector<std::string> subset;
    for (uint32_t c = 0; c < n; ++c)
      if (mask & (1u << c)) subset.push_back(names[c]);
    physical_ptr p = lower(lf.plan(), o);
    ASSERT_TRUE(p->narrow_output(subset));
    schema out;
    for (auto& c : subset)
      out.push_back(lf.schema()[lf.schema().index_of(c)]);
    ASSERT_EQ(p->output_schema.to_string(), out.to_string());
    join_node* j = join_in(*p);
    ASSERT_NE(j, nullptr);
    EXPECT_LE(j->output_schema.size(), subset.size()) << what;
    data_frame got = execute(*p, out, o);
    std::string label = what + " " + to_string(how) + " columns " + out.to_string();
    EXPECT_EQ(rows_of(got), rows_of(columns_of(want, subset))) << label;
  }
  // no columns: the join keeps only its row count
  physical_ptr p = lower(lf.plan(), o);
  join_node* j = join_in(*p);
  ASSERT_TRUE(j->narrow_output({}));
  EXPECT_EQ(j->output_schema.size(), 0u);
  data_frame got = execute(*j, j->output_schema, o);
  EXPECT_EQ(got.num_rows(), want.num_rows()) << what << " " << to_string(how) << " no columns";
}

}  // namespace

TEST(JoinNarrow, EverySubsetEveryJoinType) {
  engine_options o = cpu_engine();
  o.target_partition_rows = 7;
  // 60 x 25 builds over the right side, 25 x 60 over the (smaller) left one where the join allows
  for (auto [nl, nr] : {std::pair<int64_t, int64_t>{60, 25}, {25, 60}}) {
    auto [l, r] = make_pair(nl, nr, 11, static_cast<uint64_t>(nl));
    std::string what = std::to_string(nl) + "x" + std::to_string(nr);
    for (join_type how : all_types) {
      check_subsets(l, r, {"k"}, how, o, what);
      if (how != join_type::cross) check_subsets(l, r, {"k", "k2"}, how, o, what + " two keys");
    }
  }
}

TEST(JoinNarrow, EmptyInputs) {
  engine_options o = cpu_engine();
  o.target_partition_rows = 5;
  auto [l, r] = make_pair(20, 15, 6, 3);
  data_frame no_left(l.schema(), {}), no_right(r.schema(), {});
  data_frame empty_left(l.schema(), {l.to_table().slice(0, 0)});
  for (join_type how : all_types) {
    check_subsets(no_left, r, {"k"}, how, o, "no left partitions");
    check_subsets(l, no_right, {"k"}, how, o, "no right partitions");
    check_subsets(empty_left, r, {"k"}, how, o, "empty left");
  }
}

TEST(JoinNarrow, NullsOnlyAndNoMatches) {
  engine_options o = cpu_engine();
  o.target_partition_rows = 4;
  auto l = data_frame::from_columns({{"k", i64({nul, nul, 1, 2})}, {"a", str({"x", nul, "y", "z"})}});
  auto r = data_frame::from_columns({{"k", i64({nul, 3, 3})}, {"b", i64({1, 2, nul})}});
  for (join_type how : all_types)
    check_subsets(l, r, {"k"}, how, o, "no matches");
}

TEST(JoinNarrow, LoweringNarrowsTheJoin) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  auto a = data_frame::from_columns(
      {{"k", i64({1, 2, 3, nul})}, {"v", i64({1, 2, 3, 4})}, {"x", str({"a", "b", "c", "d"})}});
  auto b = data_frame::from_columns({{"k", i64({1, 2, 2, nul})}, {"w", i64({4, 5, 6, 7})}, {"x", i64({0, 0, 0, 0})}});
  engine_options o = cpu_engine();
  // an aggregation of a product of one column of each side
  lazy_frame agg = a.lazy().join(b.lazy(), {"k"}).select({(col("v") * col("w")).sum()});
  std::string e = agg.explain(o);
  EXPECT_NE(e.find("hash_join[inner] on k = k -> left [v] right [w]"), std::string::npos) << e;
  expect_frames_equal(agg.collect(o), data_frame::from_columns({{"v", i64({1 * 4 + 2 * 5 + 2 * 6})}}));
  // with_columns, then a selection of the new column and a renamed right column
  lazy_frame wc = a.lazy()
                      .join(b.lazy(), {"k"}, join_type::left)
                      .with_columns({(col("v") * col("w")).alias("p")})
                      .select({col("p"), col("x_right")});
  e = wc.explain(o);
  EXPECT_NE(e.find("hash_join[left] on k = k -> left [v] right [w, x]"), std::string::npos) << e;
  expect_frames_equal(wc.collect(o), data_frame::from_columns(
                                         {{"p", i64({4, 10, 12, nul, nul})}, {"x_right", i64({0, 0, 0, nul, nul})}}));
  // semi joins keep left columns only
  lazy_frame semi = a.lazy().join(b.lazy(), {"k"}, join_type::semi).select({col("x")});
  e = semi.explain(o);
  EXPECT_NE(e.find("hash_join[semi] on k = k -> left [x]"), std::string::npos) << e;
  expect_frames_equal(semi.collect(o), data_frame::from_columns({{"x", str({"a", "b"})}}));
  // a consumer of every column leaves the join as it is
  e = a.lazy().join(b.lazy(), {"k"}).explain(o);
  EXPECT_EQ(e.find("->"), std::string::npos) << e;
}

TEST(JoinNarrow, LazyQueriesMatchTheWholeJoin) {
  engine_options o = cpu_engine();
  o.target_partition_rows = 7;
  auto [l, r] = make_pair(80, 30, 13, 17);
  for (join_type how : all_types) {
    lazy_frame lf = join_of(l, r, {"k", "k2"}, how);
    data_frame whole = lf.collect(o);
    std::vector<std::string> names = lf.schema().names();
    std::string plan = lf.select({col(names.back())}).explain(o);
    EXPECT_NE(plan.find("-> left"), std::string::npos) << to_string(how) << ": the join was not narrowed\n" << plan;
    // the last column alone, then the first and the last (a key on most joins)
    for (auto subset :
         {std::vector<std::string>{names.back()}, std::vector<std::string>{names.front(), names.back()}}) {
      std::vector<expr> cols;
      for (auto& n : subset)
        cols.push_back(col(n));
      data_frame got = lf.select(cols).collect(o);
      EXPECT_EQ(rows_of(got), rows_of(columns_of(whole, subset))) << to_string(how);
    }
    // a sum over one column per side (right/semi/anti: what their output has)
    std::string a = names.front(), b = names.back();
    data_frame got =
        lf.select({col(a).cast(data_type(type_id::float64)).sum().alias("a"), col(b).count().alias("b")}).collect(o);
    data_frame ref = whole.lazy()
                         .select({col(a).cast(data_type(type_id::float64)).sum().alias("a"), col(b).count().alias("b")})
                         .collect(o);
    expect_frames_equal(got, ref);
  }
}
