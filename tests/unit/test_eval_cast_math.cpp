// CPU evaluator: the cast matrix (strict failures name the value) and unary math.
#include "eval_helpers.hpp"

using namespace tug;
using namespace tug::eval_test;

namespace {

column cast_of(const column& c, const data_type& to, bool strict) { return cpu::cast(c, to, strict); }

std::string strict_error(const column& c, const data_type& to) {
  try {
    cpu::cast(c, to, true);
  } catch (const compute_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(EvalCast, SameTypeIsUnchanged) {
  column a = i64({1, std::nullopt});
  column b = cast_of(a, type_id::int64, true);
  EXPECT_EQ(a.data_buffer().get(), b.data_buffer().get());
}

TEST(EvalCast, IntegerNarrowingStrictAndNot) {
  column a = i64({1, 300, -129, std::nullopt, 127});
  expect_columns_equal(cast_of(a, type_id::int8, false),
                       make_column<int8_t>(type_id::int8, std::vector<std::optional<int8_t>>{1, std::nullopt, std::nullopt, std::nullopt, 127}));
  std::string msg = strict_error(a, type_id::int8);
  EXPECT_NE(msg.find("300"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("i8"), std::string::npos) << msg;
  // unsigned <-> signed
  expect_columns_equal(cast_of(i64({-1, 5}), type_id::uint32, false),
                       make_column<uint32_t>(type_id::uint32, std::vector<std::optional<uint32_t>>{std::nullopt, 5}));
  column big = make_column<uint64_t>(type_id::uint64, std::vector<uint64_t>{~0ull, 7});
  expect_columns_equal(cast_of(big, type_id::int64, false), i64({std::nullopt, 7}));
  EXPECT_NE(strict_error(big, type_id::int64).find("18446744073709551615"), std::string::npos);
}

TEST(EvalCast, FloatToIntTruncatesAndChecksRange) {
  column f = f64({1.9, -1.9, 1e30, std::nan(""), -128.7, std::nullopt});
  expect_columns_equal(cast_of(f, type_id::int8, false),
                       make_column<int8_t>(type_id::int8, std::vector<std::optional<int8_t>>{1, -1, std::nullopt, std::nullopt, -128, std::nullopt}));
  EXPECT_NE(strict_error(f, type_id::int64).find("1e+30"), std::string::npos) << strict_error(f, type_id::int64);
  expect_columns_equal(cast_of(f64({9.2e18, -1.0}), type_id::uint64, false),
                       make_column<uint64_t>(type_id::uint64, std::vector<std::optional<uint64_t>>{9200000000000000000ull, std::nullopt}));
}

TEST(EvalCast, NumericAllSizesSliced) {
  for (int64_t n : sizes()) {
    column a = gen<int32_t>(type_id::int32, n, 3, 3, true);
    column got = cast_of(a, type_id::float64, true);
    column want = expected<double>(type_id::float64, n, [&](int64_t i) -> std::optional<double> {
      auto x = opt<int32_t>(a, i);
      if (!x) return std::nullopt;
      return *x;
    });
    expect_columns_equal(got, want, "n=" + std::to_string(n));
    column back = cast_of(got, type_id::int32, true);
    expect_columns_equal(back, a, "back n=" + std::to_string(n));
    column wide = gen<int64_t>(type_id::int64, n, 4, 5, true, true);
    column i16 = cast_of(wide, type_id::int16, false);
    for (int64_t i = 0; i < n; ++i) {
      bool fits = wide.is_valid(i) && wide.value<int64_t>(i) >= -32768 && wide.value<int64_t>(i) <= 32767;
      ASSERT_EQ(i16.is_valid(i), fits) << i;
    }
  }
}

TEST(EvalCast, BoolAndNumeric) {
  expect_columns_equal(cast_of(boolean({true, false, std::nullopt}), type_id::float64, true), f64({1.0, 0.0, std::nullopt}));
  expect_columns_equal(cast_of(f64({0.0, -2.5, std::nullopt}), type_id::boolean, true), boolean({false, true, std::nullopt}));
  expect_columns_equal(cast_of(i64({0, 3}), type_id::boolean, true), boolean({false, true}));
}

TEST(EvalCast, Decimals) {
  data_type d2 = decimal(10, 2);
  column f = cast_of(f64({1.005, -2.675, 12.5, std::nullopt}), d2, true);
  EXPECT_EQ(format_value(f, 1), "-2.68");  // -267.5 ulp-rounded, half away from zero on the scaled value
  EXPECT_EQ(format_value(f, 2), "12.50");
  column i = cast_of(i64({7, -3}), d2, true);
  EXPECT_EQ(format_value(i, 0), "7.00");
  EXPECT_EQ(format_value(i, 1), "-3.00");
  // rescale down rounds half away from zero, up multiplies
  column x = make_column<__int128>(decimal(10, 3), std::vector<__int128>{1235, -1235, 1234});
  column r = cast_of(x, decimal(10, 2), true);
  EXPECT_EQ(format_value(r, 0), "1.24");
  EXPECT_EQ(format_value(r, 1), "-1.24");
  EXPECT_EQ(format_value(r, 2), "1.23");
  EXPECT_EQ(format_value(cast_of(x, decimal(12, 5), true), 0), "1.23500");
  // to integer truncates, to float divides
  expect_columns_equal(cast_of(x, type_id::int64, true), i64({1, -1, 1}));
  column fx = cast_of(x, type_id::float64, true);
  EXPECT_DOUBLE_EQ(fx.value<double>(0), 1.235);
  // precision overflow
  column p = cast_of(i64({123456, 5}), decimal(5, 2), false);
  EXPECT_TRUE(p.is_null(0));
  EXPECT_EQ(format_value(p, 1), "5.00");
  EXPECT_NE(strict_error(i64({123456}), decimal(5, 2)).find("123456"), std::string::npos);
}

TEST(EvalCast, ToStringMatchesFormatValue) {
  std::vector<column> cols = {i64({-5, std::nullopt, 0}), f64({1.5, 1e20, std::nan("")}), boolean({true, false, std::nullopt}),
                              make_column<int32_t>(type_id::date32, std::vector<int32_t>{0, 19000, -1}),
                              make_column<int64_t>(timestamp(time_unit::ms), std::vector<int64_t>{1500, 0, -1}),
                              make_column<int64_t>(duration(time_unit::us), std::vector<int64_t>{5, 0, -7}),
                              make_column<__int128>(decimal(6, 2), std::vector<__int128>{-5, 100, 12345}),
                              make_column<uint8_t>(type_id::uint8, std::vector<uint8_t>{255, 0, 1}).slice(0, 3)};
  for (auto& c : cols) {
    column s = cast_of(c, type_id::string, true);
    ASSERT_EQ(s.type().id, type_id::string);
    for (int64_t i = 0; i < c.size(); ++i) {
      EXPECT_EQ(s.is_null(i), c.is_null(i));
      if (c.is_valid(i)) EXPECT_EQ(std::string(s.string(i)), format_value(c, i)) << to_string(c.type());
    }
  }
}

TEST(EvalCast, ParseStrings) {
  column s = str({"12", "-3", "x", std::nullopt, "1.5", "+4"});
  expect_columns_equal(cast_of(s, type_id::int64, false), i64({12, -3, std::nullopt, std::nullopt, std::nullopt, 4}));
  std::string msg = strict_error(s, type_id::int64);
  EXPECT_NE(msg.find("\"x\""), std::string::npos) << msg;
  expect_columns_equal(cast_of(s, type_id::float64, false), f64({12.0, -3.0, std::nullopt, std::nullopt, 1.5, 4.0}));
  expect_columns_equal(cast_of(str({"300", "7"}), type_id::uint8, false),
                       make_column<uint8_t>(type_id::uint8, std::vector<std::optional<uint8_t>>{std::nullopt, 7}));
  expect_columns_equal(cast_of(str({"true", "false", "yes"}), type_id::boolean, false), boolean({true, false, std::nullopt}));
  column d = cast_of(str({"1970-01-02", "2024-02-30", "2024-02-29"}), type_id::date32, false);
  EXPECT_EQ(d.value<int32_t>(0), 1);
  EXPECT_TRUE(d.is_null(1));
  EXPECT_EQ(format_value(d, 2), "2024-02-29");
  column t = cast_of(str({"1970-01-01 00:00:01.5", "bad"}), timestamp(time_unit::ms), false);
  EXPECT_EQ(t.value<int64_t>(0), 1500);
  EXPECT_TRUE(t.is_null(1));
  column dec = cast_of(str({"1.005", "-2.5", "12", ".5", "abc", "1.2.3"}), decimal(10, 2), false);
  EXPECT_EQ(format_value(dec, 0), "1.01");
  EXPECT_EQ(format_value(dec, 1), "-2.50");
  EXPECT_EQ(format_value(dec, 2), "12.00");
  EXPECT_EQ(format_value(dec, 3), "0.50");
  EXPECT_TRUE(dec.is_null(4));
  EXPECT_TRUE(dec.is_null(5));
  column du = cast_of(str({"5us", "7"}), duration(time_unit::us), true);
  EXPECT_EQ(du.value<int64_t>(0), 5);
  EXPECT_EQ(du.value<int64_t>(1), 7);
}

TEST(EvalCast, Temporal) {
  column d = make_column<int32_t>(type_id::date32, std::vector<std::optional<int32_t>>{1, -1, std::nullopt});
  column ts = cast_of(d, timestamp(time_unit::s), true);
  expect_columns_equal(ts, make_column<int64_t>(timestamp(time_unit::s), std::vector<std::optional<int64_t>>{86400, -86400, std::nullopt}));
  column ms = make_column<int64_t>(timestamp(time_unit::ms), std::vector<int64_t>{-1, 86400001});
  expect_columns_equal(cast_of(ms, type_id::date32, true), make_column<int32_t>(type_id::date32, std::vector<int32_t>{-1, 1}));
  expect_columns_equal(cast_of(ms, timestamp(time_unit::s), true),
                       make_column<int64_t>(timestamp(time_unit::s), std::vector<int64_t>{-1, 86400}));
  expect_columns_equal(cast_of(ms, timestamp(time_unit::us), true),
                       make_column<int64_t>(timestamp(time_unit::us), std::vector<int64_t>{-1000, 86400001000}));
  column tz = cast_of(ms, timestamp(time_unit::ms, "UTC"), true);
  EXPECT_EQ(tz.type().tz, "UTC");
  column du = make_column<int64_t>(duration(time_unit::ms), std::vector<int64_t>{-1500, 2500});
  expect_columns_equal(cast_of(du, duration(time_unit::s), true),
                       make_column<int64_t>(duration(time_unit::s), std::vector<int64_t>{-1, 2}));
  expect_columns_equal(cast_of(du, type_id::int64, true), i64({-1500, 2500}));
  expect_columns_equal(cast_of(i64({3, 1LL << 40}), type_id::date32, false),
                       make_column<int32_t>(type_id::date32, std::vector<std::optional<int32_t>>{3, std::nullopt}));
  column huge = make_column<int64_t>(timestamp(time_unit::s), std::vector<int64_t>{1LL << 62});
  EXPECT_THROW(cast_of(huge, timestamp(time_unit::ns), true), compute_error);
}

TEST(EvalCast, ThroughExpressionsAndLazyFrame) {
  column s = str({"1", "x", "3"});
  EXPECT_THROW(eval(col("s").cast(type_id::int64), {{"s", s}}), compute_error);
  expect_columns_equal(eval(col("s").cast(type_id::int64, false), {{"s", s}}), i64({1, std::nullopt, 3}));
  auto df = data_frame::from_columns({{"a", f64({1.7, -2.2, std::nullopt})}});
  auto out = df.lazy().with_columns({col("a").cast(type_id::int32).alias("i")}).collect();
  EXPECT_EQ(rows_of(out), (std::vector<std::string>{"1.7|1", "-2.2|-2", "null|null"}));
}

TEST(EvalMath, NegAbsRoundFloorCeil) {
  column a = i64({-3, 4, std::nullopt, std::numeric_limits<int64_t>::min()});
  expect_columns_equal(eval(-col("a"), {{"a", a}}), i64({3, -4, std::nullopt, std::numeric_limits<int64_t>::min()}));
  expect_columns_equal(eval(col("a").abs(), {{"a", a}}), i64({3, 4, std::nullopt, std::numeric_limits<int64_t>::min()}));
  expect_columns_equal(eval(col("a").round(), {{"a", a}}), a);
  expect_columns_equal(eval(col("a").floor(), {{"a", a}}), a);
  column f = f64({2.5, -2.5, 1.25, -0.4, std::nullopt});
  expect_columns_equal(eval(col("f").round(), {{"f", f}}), f64({3.0, -3.0, 1.0, -0.0, std::nullopt}));
  expect_columns_equal(eval(col("f").round(1), {{"f", f}}), f64({2.5, -2.5, 1.3, -0.4, std::nullopt}));
  expect_columns_equal(eval(col("f").floor(), {{"f", f}}), f64({2.0, -3.0, 1.0, -1.0, std::nullopt}));
  expect_columns_equal(eval(col("f").ceil(), {{"f", f}}), f64({3.0, -2.0, 2.0, -0.0, std::nullopt}));
  expect_columns_equal(eval(col("f").abs(), {{"f", f}}), f64({2.5, 2.5, 1.25, 0.4, std::nullopt}));
  column d = make_column<__int128>(decimal(10, 2), std::vector<__int128>{125, -125, 149});
  column dr = eval(col("d").round(1), {{"d", d}});
  EXPECT_EQ(format_value(dr, 0), "1.30");
  EXPECT_EQ(format_value(dr, 1), "-1.30");
  EXPECT_EQ(format_value(eval(col("d").floor(), {{"d", d}}), 1), "-2.00");
  EXPECT_EQ(format_value(eval(col("d").ceil(), {{"d", d}}), 2), "2.00");
  EXPECT_EQ(format_value(eval(-col("d"), {{"d", d}}), 0), "-1.25");
  column du = make_column<int64_t>(duration(time_unit::s), std::vector<int64_t>{-4});
  EXPECT_EQ(eval(col("u").abs(), {{"u", du}}).value<int64_t>(0), 4);
}

TEST(EvalMath, SqrtLogExpAllSizes) {
  for (int64_t n : sizes()) {
    column a = gen<double>(type_id::float64, n, 9, 3, true);
    column got = eval(col("a").abs().sqrt() + col("a").exp().log() + col("a").abs().log(2.0), {{"a", a}});
    column want = expected<double>(type_id::float64, n, [&](int64_t i) -> std::optional<double> {
      auto x = opt<double>(a, i);
      if (!x) return std::nullopt;
      return std::sqrt(std::fabs(*x)) + std::log(std::exp(*x)) + std::log(std::fabs(*x)) / std::log(2.0);
    });
    expect_columns_equal(got, want, "n=" + std::to_string(n));
  }
  column i = eval(col("a").sqrt(), {{"a", i64({4, 9})}});
  expect_columns_equal(i, f64({2.0, 3.0}));
  column f32 = eval(col("a").sqrt(), {{"a", make_column<float>(type_id::float32, std::vector<float>{4.0f})}});
  EXPECT_EQ(f32.type().id, type_id::float32);
}
