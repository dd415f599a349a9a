// Late materialization: filter chains over in-memory frames carry only the columns they read plus a
// row index, and a `take` gathers the passed-through columns at the end. Results with the pass equal
// results without it; the plan shape says when the rewrite applies.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/gen/seed_data.hpp"
#include "tug/memory/device.hpp"
#include "tug/plan/optimizer.hpp"

using namespace tug;

namespace {

// k: i64 (no nulls), v: f64 (nulls), and passenger-like columns of every type: i32, f64, bool,
// decimal, string (long: most of the bytes), date (each with nulls).
data_frame wide(int64_t n = 40) {
  std::vector<std::optional<int64_t>> k;
  std::vector<std::optional<double>> v, pf;
  std::vector<std::optional<int32_t>> pi, pd;
  std::vector<std::optional<bool>> pb;
  std::vector<std::optional<__int128>> pdec;
  std::vector<std::optional<std::string>> ps;
  for (int64_t i = 0; i < n; ++i) {
    k.push_back(i);
    v.push_back(i % 6 == 5 ? std::nullopt : std::optional<double>(0.25 * static_cast<double>(i)));
    pi.push_back(i % 4 == 3 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(i * 7)));
    pf.push_back(i % 5 == 1 ? std::nullopt : std::optional<double>(1.5 * static_cast<double>(i)));
    pb.push_back(i % 7 == 2 ? std::nullopt : std::optional<bool>(i % 2 == 0));
    pdec.push_back(i % 9 == 4 ? std::nullopt : std::optional<__int128>(static_cast<__int128>(i) * 1000003 - 77));
    ps.push_back(i % 3 == 0
                     ? std::nullopt
                     : std::optional<std::string>("passenger string " + std::to_string(i) + std::string(40, 'x')));
    pd.push_back(i % 8 == 7 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(19000 + i)));
  }
  return data_frame::from_columns({{"k", i64(k)},
                                   {"p_i32", i32(pi)},
                                   {"v", f64(v)},
                                   {"p_f64", f64(pf)},
                                   {"p_bool", boolean(pb)},
                                   {"p_dec", make_column<__int128>(decimal(18, 3), pdec)},
                                   {"p_str", str(ps)},
                                   {"p_date", make_column<int32_t>(type_id::date32, pd)}});
}

const plan_node* find(const plan_ptr& p, plan_kind kind) {
  if (p->kind == kind) return p.get();
  for (auto& i : p->inputs)
    if (auto r = find(i, kind)) return r;
  return nullptr;
}

optimizer_flags with_late(bool on) {
  optimizer_flags f;
  f.late_materialization = on;
  return f;
}

// The columns the take gathers (empty: no take in the optimized plan).
std::vector<std::string> taken(const lazy_frame& q) {
  plan_ptr p = optimize(q.plan(), with_late(true));
  const plan_node* t = find(p, plan_kind::take);
  return t ? t->projection : std::vector<std::string>{};
}

data_frame run(const lazy_frame& q, bool late, const engine_options& o) {
  return run_plan(optimize(q.plan(), with_late(late)), o).frame;
}

// The physical plan's line of the take operator ("" when there is none).
std::string take_line(const std::string& plan) {
  size_t at = plan.find("take [");
  if (at == std::string::npos) return "";
  return plan.substr(at, plan.find('\n', at) - at);
}

// Same results with the pass on and off, on the CPU engine with `target` rows a partition.
void expect_same(const lazy_frame& q, int64_t target = 7) {
  engine_options o = cpu_engine();
  o.target_partition_rows = target;
  data_frame on = run(q, true, o), off = run(q, false, o);
  expect_frames_equal(on, off);
}

// The seed's speed-anomaly query (examples/seed_queries.hpp) at twice the cohort mean instead of ten
// times, so that the small test frames keep rows.
lazy_frame anomalies(const data_frame& ais) {
  return ais.lazy()
      .filter(col("VesselType").is_not_null() & col("Status").is_not_null())
      .with_columns({col("SOG").mean().over({"VesselType", "Status"}).alias("cohort_avg_speed")})
      .with_columns({(col("SOG") > col("cohort_avg_speed") * 2).alias("is_speed_anomaly")})
      .filter(col("is_speed_anomaly"));
}

lazy_frame chain(const lazy_frame& f) {
  return f.filter(col("v") > 2.0).with_columns({(col("v") * 2).alias("v2")}).filter(col("k") % 3 != 0);
}

}  // namespace

TEST(LateMaterialization, SeedQueryOnAis) {
  data_frame ais = gen::ais(30000, 42, 8192);
  lazy_frame q = anomalies(ais);
  plan_ptr p = optimize(q.plan());
  const plan_node* t = find(p, plan_kind::take);
  ASSERT_NE(t, nullptr) << to_string(p);
  EXPECT_EQ(t->projection.size(), ais.schema().size() - 3);
  const plan_node* s = find(p, plan_kind::scan);
  EXPECT_EQ(s->projection, (std::vector<std::string>{"SOG", "VesselType", "Status"})) << to_string(p);
  EXPECT_TRUE(s->predicates.empty());
  EXPECT_EQ(p->schema, q.plan()->schema);
  expect_same(q, 4096);
  engine_options o = cpu_engine();
  EXPECT_GT(run(q, true, o).num_rows(), 0);
}

TEST(LateMaterialization, EveryPassengerType) {
  lazy_frame q = chain(wide().lazy());
  EXPECT_EQ(taken(q), (std::vector<std::string>{"p_i32", "p_f64", "p_bool", "p_dec", "p_str", "p_date"}));
  expect_same(q);
  expect_same(q, 1);
  expect_same(q, 1 << 20);
}

TEST(LateMaterialization, ScanPredicatesAlone) {
  // the filter goes into the scan: the chain above it is empty, the scan's predicates still filter
  lazy_frame q = wide().lazy().filter(col("k") > 30);
  EXPECT_FALSE(taken(q).empty());
  expect_same(q, 4);
}

TEST(LateMaterialization, SlicedAndManySourcePartitions) {
  data_frame w = wide(100);
  table t = w.to_table();
  // sliced source partitions (offsets inside the buffers), one of them empty
  data_frame sliced(w.schema(), {t.slice(3, 30), t.slice(40, 0), t.slice(45, 11), t.slice(60, 37)});
  expect_same(chain(sliced.lazy()), 5);
  expect_same(chain(sliced.lazy()), 1000);
  data_frame many = w.repartition(6);
  EXPECT_GT(many.partitions().size(), 10u);
  expect_same(chain(many.lazy()), 4);
  expect_same(chain(many.lazy()), 1 << 20);
}

TEST(LateMaterialization, EmptyAndAllRows) {
  lazy_frame none = wide().lazy().with_columns({(col("k") + 1).alias("k1")}).filter(col("k1") < 0);
  EXPECT_FALSE(taken(none).empty());
  expect_same(none);
  EXPECT_EQ(run(none, true, cpu_engine()).num_rows(), 0);
  lazy_frame all = wide().lazy().with_columns({(col("k") + 1).alias("k1")}).filter(col("k1") > 0);
  EXPECT_FALSE(taken(all).empty());
  expect_same(all);
  EXPECT_EQ(run(all, true, cpu_engine()).num_rows(), 40);
}

TEST(LateMaterialization, SelectReordersAndRenames) {
  lazy_frame q = chain(wide().lazy())
                     .select({col("p_str"), col("v2"), col("k").alias("key"), col("p_f64").alias("renamed"),
                              col("p_dec"), col("p_bool")});
  std::vector<std::string> t = taken(q);
  // renamed columns are read, not passed through
  EXPECT_EQ(t, (std::vector<std::string>{"p_bool", "p_dec", "p_str"}));
  expect_same(q);
  // a slice in the chain
  expect_same(q.slice(2, 4));
  expect_same(wide().lazy().filter(col("v") > 1.0).limit(5));
}

TEST(LateMaterialization, ReadColumnsAreNotPassengers) {
  lazy_frame q = chain(wide().lazy())
                     .filter(col("p_bool").is_not_null())
                     .with_columns({col("p_i32").alias("p_i32_copy"), (col("p_date").is_null()).alias("no_date"),
                                    (col("p_f64") + 1).alias("p_f64")});
  std::vector<std::string> t = taken(q);
  EXPECT_EQ(t, (std::vector<std::string>{"p_dec", "p_str"}));
  expect_same(q);
}

TEST(LateMaterialization, NoRewrite) {
  // no filter
  lazy_frame no_filter = wide().lazy().with_columns({(col("v") * 2).alias("v2")});
  EXPECT_TRUE(taken(no_filter).empty());
  // a column named like the row index
  data_frame w = wide();
  std::vector<std::pair<std::string, column>> cols;
  for (size_t i = 0; i < w.schema().size(); ++i)
    cols.push_back({w.schema()[i].name, w[w.schema()[i].name]});
  cols.push_back({"__tug_row", w["k"]});
  lazy_frame reserved = chain(data_frame::from_columns(cols).lazy());
  EXPECT_TRUE(taken(reserved).empty());
  expect_same(reserved);
  // passengers too small a share of the bytes
  lazy_frame narrow = chain(wide().lazy()).select({col("k"), col("v"), col("v2"), col("p_bool")});
  EXPECT_TRUE(taken(narrow).empty());
  expect_same(narrow);
  // an aggregating select ends the chain
  lazy_frame agg = chain(wide().lazy()).select({col("v").sum()});
  EXPECT_TRUE(taken(agg).empty());
  expect_same(agg);
}

// The rewrite pays only when the chain drops most rows: filters estimated to keep more than half
// (an is_not_null over columns with few nulls, a not-equal) are left alone; the estimate uses the
// source's exact null fractions while a column is still the source's.
TEST(LateMaterialization, KeepsMostRowsNoRewrite) {
  data_frame w = wide(600);  // v: 1/6 nulls, p_i32: 1/4, k: none
  EXPECT_TRUE(taken(w.lazy().filter(col("v").is_not_null())).empty());
  EXPECT_TRUE(taken(w.lazy().filter(col("k") != 3)).empty());
  EXPECT_TRUE(taken(w.lazy().filter(col("v").is_not_null() & col("k").is_not_null())).empty());
  // a null test is selective by the same fractions
  EXPECT_FALSE(taken(w.lazy().filter(col("v").is_null())).empty());
  // a range keeps a third; is_not_null of a redefined column is no longer the source's fraction
  EXPECT_FALSE(taken(w.lazy().filter(col("v").is_not_null() & (col("k") > 100))).empty());
  lazy_frame redefined = w.lazy().with_columns({col("v").cast(type_id::int64).alias("k")}).filter(col("k").is_null());
  EXPECT_FALSE(taken(redefined).empty());
  expect_same(redefined);
  // the seed's group_by + join query: its only filter before the join keeps nearly every row
  lazy_frame ais = gen::ais(20000, 5, 8192).lazy();
  lazy_frame df = ais.filter(col("VesselType").is_not_null() & col("Status").is_not_null());
  lazy_frame cohort = df.group_by({"VesselType", "Status"}).agg({col("SOG").mean().alias("avg")});
  lazy_frame q = df.join(cohort, {"VesselType", "Status"}, join_type::left).filter(col("SOG") > col("avg") * 2);
  EXPECT_TRUE(taken(q).empty()) << to_string(optimize(q.plan()));
}

TEST(LateMaterialization, UnderJoin) {
  lazy_frame left = chain(wide().lazy());
  lazy_frame right = wide().lazy().filter(col("k") < 20).select({col("k"), col("p_str").alias("right_str")});
  lazy_frame q = left.join(right, {"k"}, join_type::inner).sort({col("k")});
  EXPECT_FALSE(taken(q).empty());
  expect_same(q, 5);
}

TEST(LateMaterialization, Explain) {
  std::string with = chain(wide().lazy()).explain(cpu_engine());
  EXPECT_NE(with.find("TAKE [p_i32, p_f64, p_bool, p_dec, p_str, p_date] BY __tug_row"), std::string::npos) << with;
  EXPECT_NE(take_line(with).find("@cpu"), std::string::npos) << with;
  std::string without = wide().lazy().with_columns({(col("v") * 2).alias("v2")}).explain(cpu_engine());
  EXPECT_EQ(without.find("TAKE"), std::string::npos) << without;
  EXPECT_EQ(take_line(without), "") << without;
  // engine_options::optimizer switches the pass off for explain() and collect()
  engine_options off = cpu_engine();
  off.optimizer.late_materialization = false;
  std::string switched = chain(wide().lazy()).explain(off);
  EXPECT_EQ(switched.find("TAKE"), std::string::npos) << switched;
  expect_frames_equal(chain(wide().lazy()).collect(off), chain(wide().lazy()).collect(cpu_engine()));
}

TEST(LateMaterialization, GpuEqualsCpuWithoutFallback) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  data_frame ais = gen::ais(200000, 7, 65536);
  lazy_frame q = anomalies(ais);
  plan_ptr p = optimize(q.plan());
  ASSERT_NE(find(p, plan_kind::take), nullptr);
  engine_options g = gpu_engine();
  g.target_partition_rows = 50000;
  query_result r = run_plan(p, g);
  EXPECT_TRUE(r.fallbacks.empty());
  EXPECT_NE(take_line(r.physical_plan).find("@cpu"), std::string::npos) << r.physical_plan;
  // the final select only puts the take's columns in order: it runs on the cpu, where they are
  std::string root = r.physical_plan.substr(0, r.physical_plan.find('\n'));
  EXPECT_EQ(root.rfind("project [", 0), 0u) << r.physical_plan;
  EXPECT_NE(root.find("@cpu"), std::string::npos) << r.physical_plan;
  engine_options c = cpu_engine();
  c.target_partition_rows = 50000;
  expect_frames_close(r.frame, run(q, false, c));
  query_result w = run_plan(optimize(chain(wide(5000).lazy()).plan()), g);
  EXPECT_TRUE(w.fallbacks.empty());
  expect_frames_close(w.frame, run(chain(wide(5000).lazy()), false, c));
}

// A frame already in device memory is not rewritten (no link to save; the take gathers on the host),
// and its query runs on the GPU as before.
TEST(LateMaterialization, DeviceResidentFrameIsNotRewritten) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  data_frame host = wide(3000);
  auto device = make_device_resource(nullptr);
  std::vector<table> parts;
  for (auto& t : host.partitions())
    parts.push_back(to_device(t, device.get()));
  data_frame resident(host.schema(), std::move(parts));
  lazy_frame q = chain(resident.lazy());
  EXPECT_TRUE(taken(q).empty());
  query_result r = run_plan(optimize(q.plan()), gpu_engine());
  EXPECT_TRUE(r.fallbacks.empty());
  expect_frames_close(r.frame, run(chain(host.lazy()), false, cpu_engine()));
}
