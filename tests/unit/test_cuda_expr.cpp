// The CUDA expression evaluator: lazy filter / with_columns on engine=gpu (fallback=raise) against the
// CPU engine, over every supported type, nulls, sliced inputs, several sizes and partitions; and
// expr_unsupported (host code) for what stays on the CPU.
#include <cmath>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/memory/device.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/expr_program.hpp"
#include "exec/cuda/ops.hpp"
#endif

namespace tug {
namespace {

// Deterministic values with nulls every 7th row (shifted per column), zeros, negatives and NaNs.
uint64_t mix(int64_t i, int64_t salt) {
  uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(salt) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 29);
}

template <typename T>
column gen(const data_type& type, int64_t n, int64_t salt, int64_t lo, int64_t span) {
  std::vector<std::optional<T>> v;
  for (int64_t i = 0; i < n; ++i) {
    if ((i + salt) % 7 == 0)
      v.push_back(std::nullopt);
    else
      v.push_back(static_cast<T>(lo + static_cast<int64_t>(mix(i, salt) % static_cast<uint64_t>(span))));
  }
  return make_column<T>(type, v);
}

column gen_float(const data_type& type, int64_t n, int64_t salt) {
  std::vector<std::optional<double>> v;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t m = mix(i, salt);
    if ((i + salt) % 7 == 0)
      v.push_back(std::nullopt);
    else if (m % 53 == 0)
      v.push_back(std::nan(""));
    else if (m % 41 == 0)
      v.push_back(0.0);
    else
      v.push_back((static_cast<double>(m % 20001) - 10000.0) / 64.0);
  }
  if (type.id == type_id::float64) return make_column<double>(type, v);
  std::vector<std::optional<float>> f;
  for (auto& x : v)
    f.push_back(x ? std::optional<float>(static_cast<float>(*x)) : std::nullopt);
  return make_column<float>(type, f);
}

column gen_strings(int64_t n, int64_t salt) {
  static const char* words[] = {"", "a", "abc", "bca", "é", "xyzé", "mbc", "abcabc", "zz", "b"};
  std::vector<std::optional<std::string>> v;
  for (int64_t i = 0; i < n; ++i) {
    if ((i + salt) % 7 == 0)
      v.push_back(std::nullopt);
    else
      v.push_back(words[mix(i, salt) % 10]);
  }
  return make_string_column(v);
}

/// A frame of `n` rows of every supported type, each column a slice starting at row `off` of a longer one.
data_frame frame(int64_t n, int64_t off = 0) {
  const int64_t m = n + off;
  std::vector<std::pair<std::string, column>> cols = {
      {"b", gen<bool>(type_id::boolean, m, 1, false, 2)},
      {"i8", gen<int8_t>(type_id::int8, m, 2, -128, 256)},
      {"i16", gen<int16_t>(type_id::int16, m, 3, -300, 600)},
      {"i32", gen<int32_t>(type_id::int32, m, 4, -50, 100)},
      {"i64", gen<int64_t>(type_id::int64, m, 5, -1000, 2000)},
      {"u8", gen<uint8_t>(type_id::uint8, m, 6, 0, 256)},
      {"u16", gen<uint16_t>(type_id::uint16, m, 8, 0, 1000)},
      {"u32", gen<uint32_t>(type_id::uint32, m, 9, 0, 100000)},
      {"u64", gen<uint64_t>(type_id::uint64, m, 10, 0, 300)},
      {"f32", gen_float(type_id::float32, m, 11)},
      {"f64", gen_float(type_id::float64, m, 12)},
      {"d", gen<int32_t>(type_id::date32, m, 13, -20000, 60000)},
      {"ts", gen<int64_t>(timestamp(time_unit::us), m, 15, -4000000000000000, 8000000000000000)},
      {"dur", gen<int64_t>(duration(time_unit::ms), m, 16, -500000000000, 1000000000000)},
      {"s", gen_strings(m, 17)},
  };
  if (off)
    for (auto& [name, c] : cols)
      c = c.slice(off, n);
  return data_frame::from_columns(std::move(cols));
}

std::vector<expr> projections() {
  using tf = time_unit;
  return {
      // integer arithmetic (wrapping), division by zero nulls
      (col("i8") + col("i8")).alias("a1"),
      (col("i16") * lit(int64_t{300})).alias("a2"),
      (col("i32") - col("i64")).alias("a3"),
      col("i64").floor_div(col("i32")).alias("a4"),
      (col("i64") % col("i8")).alias("a5"),
      (col("u8") + col("u8")).alias("a6"),
      (col("u32") * col("u16")).alias("a7"),
      (col("u64") - 5).alias("a8"),
      (col("u64") % col("u8")).alias("a9"),
      col("i8").floor_div(col("i8")).alias("a10"),
      (col("i64") * col("i64") * col("i64")).alias("a11"),
      col("i64").pow(lit(int64_t{3})).alias("a12"),
      (col("u16") - col("u8")).alias("a13"),
      (col("b") + col("i8")).alias("a14"),
      // floating arithmetic (float32 rounded after each op)
      (col("f32") + col("f32")).alias("f1"),
      (col("f32") * col("f32")).alias("f2"),
      (col("f32") / col("f32")).alias("f3"),
      (col("f32") % lit(3.0)).alias("f4"),
      col("f64").floor_div(col("f64")).alias("f5"),
      (col("f64") / col("i32")).alias("f6"),
      (col("f64") % col("f64")).alias("f7"),
      (col("f32") * col("i16")).alias("f8"),
      (col("i32") / col("i8")).alias("f9"),
      // math
      (-col("f32")).alias("m1"),
      col("f64").abs().alias("m2"),
      col("f64").round(2).alias("m3"),
      col("f32").round().alias("m4"),
      col("f64").floor().alias("m5"),
      col("f32").ceil().alias("m6"),
      col("f64").abs().sqrt().alias("m7"),
      (-col("i8")).alias("m8"),
      col("i16").abs().alias("m9"),
      col("i32").round().alias("m10"),
      (-col("dur")).alias("m11"),
      col("f32").round(1).alias("m12"),
      // comparisons
      (col("i32") < col("i64")).alias("c1"),
      (col("f64") >= col("f32")).alias("c2"),
      (col("s") == "abc").alias("c3"),
      (col("s") > "b").alias("c4"),
      (col("u64") != col("u8")).alias("c5"),
      (col("f64") == col("f64")).alias("c6"),
      (col("d") <= lit_date(2000, 1, 1)).alias("c7"),
      (col("i8") > col("u8")).alias("c8"),
      (col("b") == true).alias("c9"),
      (col("s") <= col("s")).alias("c10"),
      // logic
      ((col("i8") > 0) & (col("f64") < 1)).alias("l1"),
      ((col("i8") > 0) | (col("f64") < 1)).alias("l2"),
      ((col("i8") > 0) ^ col("b")).alias("l3"),
      (!col("b")).alias("l4"),
      (col("b") & lit_null(type_id::boolean)).alias("l5"),
      // nulls and membership
      col("i32").is_null().alias("n1"),
      col("f32").is_not_null().alias("n2"),
      col("f64").is_nan().alias("n3"),
      col("i16").fill_null(0).alias("n4"),
      coalesce({col("i32"), col("i16"), lit(int64_t{7})}).alias("n5"),
      col("s").is_null().alias("n6"),
      col("i64")
          .is_in({scalar(type_id::int64, int64_t{1}), scalar(type_id::int64, int64_t{-3}),
                  scalar(type_id::float64, 2.5), scalar(type_id::int64, int64_t{999})})
          .alias("n7"),
      col("s")
          .is_in({scalar(type_id::string, std::string("abc")), scalar(type_id::string, std::string("é"))})
          .alias("n8"),
      col("i32").is_between(lit(int64_t{-10}), lit(int64_t{10})).alias("n9"),
      col("f64").is_between(col("f32"), lit(50.0), "left").alias("n10"),
      col("f64").fill_null(col("f32")).alias("n11"),
      // casts
      col("i64").cast(type_id::int8, false).alias("k1"),
      col("f64").cast(type_id::int32, false).alias("k2"),
      col("i32").cast(type_id::float32).alias("k3"),
      col("u64").cast(type_id::float32).alias("k4"),
      col("f64").cast(type_id::uint8, false).alias("k5"),
      col("i8").cast(type_id::boolean).alias("k6"),
      col("b").cast(type_id::int64).alias("k7"),
      col("ts").cast(type_id::date32).alias("k8"),
      col("d").cast(timestamp(tf::ms)).alias("k9"),
      col("ts").cast(timestamp(tf::s)).alias("k10"),
      col("dur").cast(duration(tf::s)).alias("k11"),
      col("i64").cast(type_id::uint16, false).alias("k12"),
      col("f32").cast(type_id::float64).alias("k13"),
      col("f64").cast(type_id::float32).alias("k14"),
      col("ts").cast(timestamp(tf::ns), false).alias("k15"),
      col("i64").cast(type_id::uint64, false).alias("k16"),
      col("f32").cast(type_id::boolean).alias("k17"),
      col("d").cast(type_id::int64).alias("k18"),
      // when / then / otherwise
      when(col("i32") > 0).then(col("f64")).otherwise(col("f32")).alias("w1"),
      when(col("b"))
          .then(col("i8"))
          .when(col("i16") < 0)
          .then(lit(int64_t{-1}))
          .otherwise(lit_null(type_id::int64))
          .alias("w2"),
      // temporal
      col("ts").dt_year().alias("t1"),
      col("ts").dt_month().alias("t2"),
      col("d").dt_day().alias("t3"),
      col("d").dt_weekday().alias("t4"),
      col("ts").dt_hour().alias("t5"),
      col("ts").dt_minute().alias("t6"),
      col("ts").dt_second().alias("t7"),
      col("ts").dt_date().alias("t8"),
      col("dur").dt_total_days().alias("t9"),
      col("dur").dt_total_seconds().alias("t10"),
      col("dur").dt_total_milliseconds().alias("t11"),
      (col("d") - lit_date(2000, 1, 1)).alias("t12"),
      (col("ts") + col("dur")).alias("t13"),
      (col("d") + lit_days(3)).alias("t14"),
      (col("d") - col("dur")).alias("t15"),
      (col("dur") + col("dur")).alias("t16"),
      (col("ts") - col("ts")).alias("t17"),
      (col("dur") * lit(int64_t{3})).alias("t18"),
      col("d").dt_year().alias("t19"),
      // strings as inputs
      col("s").str_len_bytes().alias("s1"),
      col("s").str_len_chars().alias("s2"),
      col("s").str_starts_with("a").alias("s3"),
      col("s").str_ends_with("c").alias("s4"),
      col("s").str_contains("bc").alias("s5"),
      col("s").str_contains("b", false).alias("s6"),
      col("s").str_starts_with(col("s")).alias("s7"),
      // constants
      lit(int64_t{5}).alias("z1"),
      (lit(2.5) + col("f64")).alias("z2"),
      lit_null(type_id::int32).alias("z3"),
      col("s").alias("z4"),
  };
}


TEST(CudaExpr, ProjectionsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    expect_gpu_matches_cpu(frame(n).lazy().with_columns(projections()));
  }
}

TEST(CudaExpr, SlicedInputsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t off : {1, 5, 37}) {
    SCOPED_TRACE("offset " + std::to_string(off));
    expect_gpu_matches_cpu(frame(100, off).lazy().with_columns(projections()));
  }
}

TEST(CudaExpr, FiltersMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {0, 1, 33, 1024}) {
    auto lf = frame(n).lazy();
    expect_gpu_matches_cpu(lf.filter((col("i32") > 0) & col("s").str_contains("a")));
    expect_gpu_matches_cpu(lf.filter(col("f64").is_between(lit(-10.0), lit(10.0)) | col("b")));
    expect_gpu_matches_cpu(lf.filter(col("ts").dt_year() >= 1990).with_columns({(col("i64") * 2).alias("x")}));
  }
}

TEST(CudaExpr, MultiplePartitionsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  engine_options g = gpu_engine(), c = cpu_engine();
  g.target_partition_rows = c.target_partition_rows = 100;
  auto lf = frame(1024).lazy().filter(col("i8") != 3).with_columns(projections());
  expect_gpu_matches_cpu(lf, g, c);
  EXPECT_GT(lf.collect(g).partitions().size(), 1u);
}

TEST(CudaExpr, TranscendentalsCloseToCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  // pow, exp and log may differ from the host libm in the last bit
  auto lf = frame(1024).lazy().select({col("f64").abs().log().alias("a"), (col("f32") / 1000).exp().alias("b"),
                                       col("f64").pow(lit(2.0)).alias("c"), col("f32").abs().log(10).alias("d")});
  table g = lf.collect(gpu_engine()).to_table(), c = lf.collect(cpu_engine()).to_table();
  ASSERT_EQ(g.num_rows(), c.num_rows());
  for (size_t k = 0; k < c.num_columns(); ++k) {
    ASSERT_EQ(to_string(g[k].type()), to_string(c[k].type()));
    for (int64_t i = 0; i < c.num_rows(); ++i) {
      ASSERT_EQ(g[k].is_null(i), c[k].is_null(i)) << "column " << k << " row " << i;
      if (c[k].is_null(i)) continue;
      double x = get_scalar(g[k], i).as_double(), y = get_scalar(c[k], i).as_double();
      if (std::isnan(y) || std::isinf(y))
        EXPECT_EQ(format_value(g[k], i), format_value(c[k], i));
      else
        EXPECT_NEAR(x, y, 1e-5 * std::max(1.0, std::fabs(y))) << "column " << k << " row " << i;
    }
  }
}

TEST(CudaExpr, StrictCastErrorMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto df = data_frame::from_columns({{"a", i64({1, std::nullopt, 1000, 5})}});
  auto lf = df.lazy().with_columns({col("a").cast(type_id::int8).alias("b")});
  std::string cpu_msg, gpu_msg;
  try {
    lf.collect(cpu_engine());
  } catch (const compute_error& e) {
    cpu_msg = e.what();
  }
  try {
    lf.collect(gpu_engine());
  } catch (const compute_error& e) {
    gpu_msg = e.what();
  }
  EXPECT_NE(cpu_msg.find("1000"), std::string::npos) << cpu_msg;
  EXPECT_EQ(gpu_msg, cpu_msg);
  // null rows never fail, non-strict casts null the value
  expect_gpu_matches_cpu(df.lazy().with_columns({col("a").cast(type_id::int8, false).alias("b")}));
}

#ifdef TUG_WITH_CUDA
// expr_unsupported is host code: it runs without a GPU.
std::string why(const expr& e, const schema& s) { return cuda::expr_unsupported(resolve(e, s), s); }

TEST(CudaExpr, UnsupportedNamesTheReason) {
  schema s = frame(1).schema();
  s.push_back({"dec", decimal(10, 2)});
  for (const expr& e : projections())
    EXPECT_EQ(why(e, s), "") << to_string(e);
  EXPECT_EQ(why(col("dec"), s), "");  // passed through unchanged
  EXPECT_EQ(why(col("dec") + col("dec"), s), "");  // decimals run on the GPU (test_cuda_decimal.cpp)
  // strings made on the GPU (slices, case mapping, concat_str, casts): test_cuda_strings.cpp
  EXPECT_NE(why(col("s").str_contains("(a)\\1", false), s).find("regular expression"), std::string::npos);
  EXPECT_EQ(why(col("ts").dt_truncate("1d"), s), "");  // test_cuda_temporal.cpp
  // a malformed interval raises when the program runs, as on the CPU (CudaTemporal.MalformedInterval...)
  EXPECT_EQ(why(col("ts").dt_truncate("1d1h"), s), "");
  EXPECT_NE(why(col("i64").sum(), s).find("aggregation"), std::string::npos);
}

TEST(CudaExpr, EveryProjectionCompiles) {
  // the host half of the evaluator (folding constants with the CPU evaluator, is_in lists) runs
  // without a GPU; the CPU engine runs the same queries the GPU tests compare against
  data_frame df = frame(33);
  const schema& s = df.schema();
  for (const expr& e : projections()) {
    expr r = resolve(e, s);
    if (r->kind == expr_kind::alias && r->args[0]->kind == expr_kind::column) continue;
    cuda::prog::program p = cuda::prog::compile(r, s);
    EXPECT_FALSE(p.code.empty()) << to_string(e);
    EXPECT_EQ(to_string(p.out_type), to_string(r->dtype)) << to_string(e);
  }
  auto is_in =
      cuda::prog::compile(resolve(col("i64").is_in({scalar(type_id::int64, int64_t{1}), scalar(type_id::float64, 2.5),
                                                    scalar::null(type_id::int64)}),
                                  s),
                          s);
  EXPECT_EQ(is_in.pool, std::vector<int64_t>{1});  // 2.5 cannot match an integer, null never matches
  auto lit_str = cuda::prog::compile(resolve(col("s") == "abc", s), s);
  EXPECT_EQ(lit_str.chars, "abc");
  EXPECT_EQ(df.lazy().with_columns(projections()).collect(cpu_engine()).num_columns(), s.size() + projections().size());
}
#endif

}  // namespace
}  // namespace tug
