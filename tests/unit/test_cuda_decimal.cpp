// decimal128 in the CUDA expression evaluator: lazy projections and filters on engine=gpu
// (fallback=raise) against the CPU engine over decimals of several precisions and scales, with nulls,
// sliced inputs and several sizes; decimal overflow and failing strict casts raise the CPU's error;
// and (host code, no GPU needed) the seed's four-way join no longer leaves the GPU over its decimals.
#include <algorithm>

#include "../../examples/seed_queries.hpp"
#include "test_util.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/gen/seed_data.hpp"
#include "tug/memory/device.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug {
namespace {

uint64_t mix(int64_t i, int64_t salt) {
  uint64_t x =
      static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(salt) * 0xD1B54A32D192ED03ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 32);
}

/// Values lo + mix % span, times `mult` (for large magnitudes); null every 7th row (shifted by salt).
template <typename T>
column gen(const data_type& type, int64_t n, int64_t salt, int64_t lo, int64_t span, __int128 mult = 1) {
  std::vector<std::optional<T>> v;
  for (int64_t i = 0; i < n; ++i) {
    if ((i + salt) % 7 == 0) {
      v.push_back(std::nullopt);
      continue;
    }
    __int128 x = lo + static_cast<int64_t>(mix(i, salt) % static_cast<uint64_t>(span));
    v.push_back(static_cast<T>(x * mult));
  }
  return make_column<T>(type, v);
}

/// `n` rows of decimals and the numbers they meet, each column a slice starting at row `off`.
data_frame frame(int64_t n, int64_t off = 0) {
  const int64_t m = n + off;
  const __int128 e25 = static_cast<__int128>(10000000000000) * 1000000000000;
  std::vector<std::pair<std::string, column>> cols = {
      {"p", gen<__int128>(decimal(15, 2), m, 1, -10000000, 20000000)},    // +-100000.00
      {"q", gen<__int128>(decimal(10, 4), m, 2, -1000000, 2000000)},      // +-100.0000
      {"r", gen<__int128>(decimal(38, 6), m, 3, -900000, 1800000, e25)},  // about 1e31 unscaled
      {"z", gen<__int128>(decimal(5, 0), m, 4, -20, 40)},                 // small, so that is_in hits
      {"h", gen<__int128>(decimal(12, 3), m, 5, -3000, 6000)},            // +-3.000: rounding ties
      {"i32", gen<int32_t>(type_id::int32, m, 6, -50, 100)},
      {"i64", gen<int64_t>(type_id::int64, m, 7, -4000000000000000000, 8000000000000000000)},
      {"u64", gen<uint64_t>(type_id::uint64, m, 8, 0, 1000000)},
      {"f32", gen<float>(type_id::float32, m, 9, -20000, 40000)},
      {"f64", gen<double>(type_id::float64, m, 10, -2000000, 4000000)},
      {"b", gen<bool>(type_id::boolean, m, 11, 0, 2)},
  };
  if (off)
    for (auto& [name, c] : cols)
      c = c.slice(off, n);
  return data_frame::from_columns(std::move(cols));
}

scalar dec(int precision, int scale, __int128 unscaled) { return scalar(decimal(precision, scale), unscaled); }

std::vector<expr> projections() {
  return {
      // arithmetic: + - of one scale (common type decimal[38, max scale]), * adding scales
      (col("p") + col("p")).alias("a1"),
      (col("p") - col("q")).alias("a2"),
      (col("p") * col("q")).alias("a3"),
      (col("r") * col("p")).alias("a4"),
      (col("r") + col("r")).alias("a5"),
      (col("p") * col("i32")).alias("a6"),
      (col("p") + col("i32")).alias("a7"),
      (col("p") * 3).alias("a8"),
      (lit(dec(10, 2, 12345)) - col("h")).alias("a9"),
      (col("p") / col("q")).alias("a10"),
      (col("h") * col("h") * col("h")).alias("a11"),
      // casts out of and into decimals, and between scales (rounding half away from zero)
      col("p").cast(type_id::float64).alias("k1"),
      col("q").cast(type_id::float32).alias("k2"),
      col("r").cast(type_id::float64).alias("k3"),
      col("p").cast(type_id::int32, false).alias("k4"),
      col("r").cast(type_id::int64, false).alias("k5"),
      col("h").cast(type_id::uint64, false).alias("k6"),
      col("h").cast(type_id::int8, false).alias("k7"),
      col("q").cast(type_id::boolean).alias("k8"),
      col("h").cast(decimal(10, 1), false).alias("k9"),
      col("h").cast(decimal(12, 0), false).alias("k10"),
      col("q").cast(decimal(20, 8)).alias("k11"),
      col("r").cast(decimal(20, 2), false).alias("k12"),
      col("i32").cast(decimal(12, 3)).alias("k13"),
      col("i64").cast(decimal(20, 1), false).alias("k14"),
      col("u64").cast(decimal(38, 30), false).alias("k15"),
      col("f64").cast(decimal(12, 2), false).alias("k16"),
      col("f32").cast(decimal(9, 3), false).alias("k17"),
      col("b").cast(decimal(3, 1)).alias("k18"),
      (col("f64") / 1000).cast(decimal(7, 1), false).alias("k19"),
      col("r").cast(decimal(38, 2)).alias("k20"),
      // comparisons, mixed scales and numbers
      (col("p") < col("q")).alias("c1"),
      (col("p") == col("p")).alias("c2"),
      (col("p") >= col("i32")).alias("c3"),
      (col("p") > 1.5).alias("c4"),
      (col("r") != col("r") * 1).alias("c5"),
      (col("q") <= 0).alias("c6"),
      col("p").is_between(lit(int64_t{-100}), lit(int64_t{100})).alias("c7"),
      (col("h") > col("q")).alias("c8"),
      (col("z") == col("i32")).alias("c9"),
      // math
      (-col("p")).alias("m1"),
      col("r").abs().alias("m2"),
      col("h").round(2).alias("m3"),
      col("h").round().alias("m4"),
      col("h").floor().alias("m5"),
      col("h").ceil().alias("m6"),
      col("p").round(5).alias("m7"),
      (-col("h")).floor().alias("m8"),
      col("q").abs().sqrt().alias("m9"),
      // nulls, when, membership
      col("p").is_null().alias("n1"),
      col("p").fill_null(col("q")).alias("n2"),
      coalesce({col("p"), col("h"), lit(int64_t{0})}).alias("n3"),
      when(col("i32") > 0).then(col("p")).otherwise(col("q")).alias("n4"),
      col("p").fill_null(lit(int64_t{0})).alias("n5"),
      col("z")
          .is_in({dec(5, 0, 3), scalar(type_id::int64, int64_t{-7}), scalar(type_id::float64, 2.5),
                  scalar(type_id::float64, 11.0), scalar::null(type_id::int64)})
          .alias("n6"),
      col("h").is_in({dec(12, 3, 1500), dec(12, 3, -250), dec(6, 1, 7)}).alias("n7"),
      col("p").is_not_null().alias("n8"),
      // the seed's revenue
      (col("p") * (1.0 - col("q").cast(type_id::float64))).alias("revenue"),
  };
}


TEST(CudaDecimal, ProjectionsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 31, 32, 33, 1024, 5000}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    expect_gpu_matches_cpu(frame(n).lazy().with_columns(projections()));
  }
}

TEST(CudaDecimal, SlicedInputsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t off : {1, 5, 37}) {
    SCOPED_TRACE("offset " + std::to_string(off));
    expect_gpu_matches_cpu(frame(100, off).lazy().with_columns(projections()));
  }
}

TEST(CudaDecimal, FiltersMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 33, 1024, 5000}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    auto lf = frame(n).lazy();
    expect_gpu_matches_cpu(lf.filter(col("p") > col("q")));
    expect_gpu_matches_cpu(lf.filter((col("p") * col("q") >= 0) & col("h").is_between(lit(int64_t{-1}), lit(int64_t{2}))));
    expect_gpu_matches_cpu(lf.filter(col("z") == 3).select({col("p"), (col("h") + col("h")).alias("x")}));
    expect_gpu_matches_cpu(frame(n, 3).lazy().filter(col("h").round(1) != col("h")).with_columns({(-col("r")).alias("x")}));
  }
}

TEST(CudaDecimal, MultiplePartitionsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  engine_options g = gpu_engine(), c = cpu_engine();
  g.target_partition_rows = c.target_partition_rows = 300;
  auto lf = frame(2000).lazy().filter(col("q") != 0).with_columns(projections()).sort("p");
  expect_gpu_matches_cpu(lf, g, c);
}

TEST(CudaDecimal, OverflowRaisesAsTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const __int128 big = static_cast<__int128>(9000000000000000000) * 10000000000000000000ull;  // 9e37
  auto big_col = [&](std::vector<std::optional<__int128>> v) { return make_column<__int128>(decimal(38, 0), v); };
  auto df = data_frame::from_columns({{"a", big_col({1, std::nullopt, big, 5})}, {"b", big_col({2, big, big, -3})}});
  for (const expr& e : {col("a") + col("b"), col("a") - (-col("b")), col("a") * col("b"), col("a") * 100}) {
    SCOPED_TRACE(to_string(e));
    auto lf = df.lazy().with_columns({e.alias("x")});
    std::string cpu = collect_error(lf, cpu_engine()), gpu = collect_error(lf, gpu_engine());
    EXPECT_NE(cpu.find("decimal overflow"), std::string::npos) << cpu;
    EXPECT_EQ(gpu, cpu);
  }
  // a null row never raises, whatever its slot holds: `hidden` holds big under a null
  column vals = big_col({big, 1, big}), nulls = big_col({std::nullopt, 1, std::nullopt});
  column hidden(decimal(38, 0), 3, vals.data_buffer(), nulls.validity_buffer(), 2);
  auto masked = data_frame::from_columns({{"a", hidden}, {"b", big_col({big, 7, big})}});
  expect_gpu_matches_cpu(masked.lazy().with_columns({(col("a") + col("b")).alias("x"), (col("a") * col("b")).alias("y")}));
  // a failing strict cast raises the CPU's error, naming the value
  auto strict = df.lazy().with_columns({col("b").cast(decimal(20, 2)).alias("x")});
  std::string cpu = collect_error(strict, cpu_engine());
  EXPECT_NE(cpu.find("strict cast"), std::string::npos) << cpu;
  EXPECT_EQ(collect_error(strict, gpu_engine()), cpu);
  expect_gpu_matches_cpu(df.lazy().with_columns({col("b").cast(decimal(20, 2), false).alias("x")}));
}

TEST(CudaDecimal, FourWayJoinRunsOnTheGpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto w = gen::wholesale_tables(5000, 5, 1000);
  auto lf = seed::four_way_join(w.lineitem.lazy(), w.orders.lazy(), w.customer.lazy(), w.supplier.lazy());
  auto got = rows_of(lf.collect(gpu_engine())), want = rows_of(lf.collect(cpu_engine()));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  engine_options silent = gpu_engine();
  silent.fallback = fallback_mode::silent;
  EXPECT_EQ(lf.explain(silent).find("decimal"), std::string::npos) << lf.explain(silent);
}

#ifdef TUG_WITH_CUDA
// expr_unsupported is host code: it runs without a GPU.
std::string why(const expr& e, const schema& s) { return cuda::expr_unsupported(resolve(e, s), s); }

TEST(CudaDecimal, SupportedWithoutFallback) {
  const schema s = frame(1).schema();
  for (const expr& e : projections())
    EXPECT_EQ(why(e, s), "") << to_string(e);
  // the seed's four-way join: its derived columns over the joined schema
  auto w = gen::wholesale_tables(100, 5, 100);
  const lazy_frame joined = w.lineitem.lazy()
                                .join(w.orders.lazy(), {col("l_orderkey")}, {col("o_orderkey")})
                                .join(w.customer.lazy(), {col("o_custkey")}, {col("c_custkey")})
                                .join(w.supplier.lazy(), {col("l_suppkey")}, {col("s_suppkey")});
  EXPECT_EQ(joined.schema().type_of("l_extendedprice").id, type_id::decimal128);
  const lazy_frame seed = seed::four_way_join(w.lineitem.lazy(), w.orders.lazy(), w.customer.lazy(), w.supplier.lazy());
  const std::vector<expr> derived = {
      (col("l_extendedprice") * (1.0 - col("l_discount").cast(type_id::float64))).alias("revenue"),
      (col("l_shipdate") - col("o_orderdate")).dt_total_days().alias("ship_delay_days"),
      (col("c_nationkey") == col("s_nationkey")).alias("domestic")};
  for (const expr& e : derived)
    EXPECT_EQ(why(e, joined.schema()), "") << to_string(e);
  EXPECT_EQ(seed.schema().size(), joined.schema().size() + derived.size());
}
#endif

}  // namespace
}  // namespace tug
