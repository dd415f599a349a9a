// spanBy: a source whose partitions keep the rows of a key together (table_source::key_partitioned, a
// Cassandra scan's partition key) lets a group_by on that key aggregate each partition alone, with no
// merge; the results equal the merged aggregation's.
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "test_util.hpp"
#include "tug/api/data_frame.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/plan/logical.hpp"

using namespace tug;

namespace {

/// Partitions as given (never re-split), claiming that `keys` keep their rows together.
class grouped_source final : public table_source {
 public:
  grouped_source(tug::schema s, std::vector<table> parts, std::vector<std::string> keys)
      : _schema(std::move(s)), _parts(std::move(parts)), _keys(std::move(keys)) {}
  const tug::schema& schema() const override { return _schema; }
  std::string describe() const override { return "GROUPED " + std::to_string(_parts.size()) + " partitions"; }
  std::vector<std::string> key_partitioned() const override { return _keys; }
  std::vector<table> read(const std::vector<std::string>& columns, const std::vector<expr>&, const engine_options&,
                          thread_pool& pool, memory_resource*, const partition_hook& hook, int64_t) const override {
    std::vector<size_t> idx;
    for (auto& c : columns) idx.push_back(_schema.index_of(c));
    std::vector<table> out;
    for (auto& p : _parts) out.push_back(columns.empty() ? table::empty_with_rows(p.num_rows()) : p.select(idx));
    apply_partition_hook(out, hook, pool);
    return out;
  }

 private:
  tug::schema _schema;
  std::vector<table> _parts;
  std::vector<std::string> _keys;
};

/// `rows` rows with key k (int32, some nulls), a second key g (string), values x (float64, some null):
/// k's values (null included) are dealt to `parts` partitions so that each value lies in one of them.
struct grouped_data {
  std::vector<table> parts;
  tug::schema schema{{{"k", data_type(type_id::int32)}, {"g", data_type(type_id::string)}, {"x", data_type(type_id::float64)}}};

  grouped_data(int64_t rows, int keys, int nparts, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<std::optional<int32_t>>> k(static_cast<size_t>(nparts));
    std::vector<std::vector<std::optional<std::string>>> g(static_cast<size_t>(nparts));
    std::vector<std::vector<std::optional<double>>> x(static_cast<size_t>(nparts));
    for (int64_t i = 0; i < rows; ++i) {
      int key = static_cast<int>(rng() % static_cast<uint64_t>(keys + 1));  // keys: the null key
      size_t p = static_cast<size_t>(key % nparts);
      k[p].push_back(key == keys ? std::nullopt : std::optional<int32_t>(key));
      g[p].push_back(std::string(1, static_cast<char>('a' + rng() % 3)));
      x[p].push_back(rng() % 9 == 0 ? std::nullopt : std::optional<double>(static_cast<double>(rng() % 1000) / 8));
    }
    for (size_t p = 0; p < k.size(); ++p)
      parts.push_back(table({make_column(data_type(type_id::int32), k[p]), make_string_column(g[p]),
                             make_column(data_type(type_id::float64), x[p])}));
  }
  lazy_frame grouped() const {
    return lazy_frame(plan::scan(std::make_shared<grouped_source>(schema, parts, std::vector<std::string>{"k"})));
  }
  /// The same rows without the claim (the plain, merged aggregation).
  lazy_frame plain() const { return data_frame(schema, parts).lazy(); }
};

std::vector<expr> aggs() {
  return {col("x").sum().alias("s"), col("x").mean().alias("m"), col("x").median().alias("med"),
          col("x").n_unique().alias("u"), col("x").count().alias("n"), col("x").first().alias("f"),
          col("x").max().alias("mx")};
}

void expect_same(const data_frame& a, const data_frame& b, const std::string& what) {
  table ta = a.to_table(), tb = b.to_table();
  ASSERT_EQ(ta.num_rows(), tb.num_rows()) << what;
  ASSERT_EQ(ta.num_columns(), tb.num_columns()) << what;
  for (size_t c = 0; c < ta.num_columns(); ++c)
    for (int64_t r = 0; r < ta.num_rows(); ++r)
      ASSERT_EQ(format_value(ta[c], r), format_value(tb[c], r)) << what << " column " << c << " row " << r;
}

}  // namespace

// the partition-wise aggregate is the CPU engine's (the GPU engine, the default where a GPU is, merges)
TEST(KeyPartitioned, GroupByThePartitionKeyAggregatesEachPartitionAlone) {
  const engine_options cpu = cpu_engine();
  for (int64_t rows : {0, 1, 31, 32, 33, 1024, 20000})
    for (int nparts : {1, 3, 16}) {
      grouped_data d(rows, 40, nparts, static_cast<uint64_t>(rows * 31 + nparts));
      std::string what = "rows " + std::to_string(rows) + " partitions " + std::to_string(nparts);
      // groups in first-seen order, as the merged aggregation with maintain_order
      auto q = d.grouped().group_by(std::vector<std::string>{"k"}, true).agg(aggs());
      std::string plan = q.explain(cpu);
      EXPECT_NE(plan.find("hash_aggregate[per partition]"), std::string::npos) << plan;
      EXPECT_EQ(plan.find("hash_aggregate[final]"), std::string::npos) << plan;
      expect_same(q.collect(cpu), d.plain().group_by(std::vector<std::string>{"k"}, true).agg(aggs()).collect(cpu), what);
      // more keys than the partition key
      auto q2 = d.grouped().group_by(std::vector<std::string>{"g", "k"}, true).agg(aggs());
      EXPECT_NE(q2.explain(cpu).find("hash_aggregate[per partition]"), std::string::npos);
      expect_same(q2.collect(cpu), d.plain().group_by(std::vector<std::string>{"g", "k"}, true).agg(aggs()).collect(cpu), what);
    }
}

TEST(KeyPartitioned, ThePropertyFollowsFiltersAndRenames) {
  const engine_options cpu = cpu_engine();
  grouped_data d(5000, 50, 7, 5);
  // a filter and a rename keep the rows where they are
  auto q = d.grouped().filter(col("x") > 20.0).select({col("k").alias("kk"), col("x")}).group_by(
      std::vector<std::string>{"kk"}, true).agg({col("x").sum().alias("s"), col("x").median().alias("med")});
  EXPECT_NE(q.explain(cpu).find("hash_aggregate[per partition]"), std::string::npos) << q.explain(cpu);
  auto want = d.plain().filter(col("x") > 20.0).select({col("k").alias("kk"), col("x")}).group_by(
      std::vector<std::string>{"kk"}, true).agg({col("x").sum().alias("s"), col("x").median().alias("med")});
  expect_same(q.collect(cpu), want.collect(cpu), "renamed");
  // a computed key, another column, or a global aggregation: the merge stays
  for (auto& other : {d.grouped().group_by({col("k") + 1}).agg({col("x").sum()}),
                      d.grouped().group_by(std::vector<std::string>{"g"}).agg({col("x").sum()}),
                      d.grouped().select({col("x").sum()}),
                      d.grouped().select({col("x"), (col("k") * 2).alias("k")}).group_by(
                          std::vector<std::string>{"k"}).agg({col("x").sum()})}) {
    std::string plan = other.explain(cpu);
    EXPECT_EQ(plan.find("per partition"), std::string::npos) << plan;
  }
}
