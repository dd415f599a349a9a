// CPU evaluator: arithmetic over every numeric type, nulls, sliced inputs and boundary sizes.
#include "eval_helpers.hpp"

using namespace tug;
using namespace tug::eval_test;

namespace {

template <typename T>
struct type_of;
template <> struct type_of<int8_t> { static constexpr type_id id = type_id::int8; };
template <> struct type_of<int16_t> { static constexpr type_id id = type_id::int16; };
template <> struct type_of<int32_t> { static constexpr type_id id = type_id::int32; };
template <> struct type_of<int64_t> { static constexpr type_id id = type_id::int64; };
template <> struct type_of<uint8_t> { static constexpr type_id id = type_id::uint8; };
template <> struct type_of<uint16_t> { static constexpr type_id id = type_id::uint16; };
template <> struct type_of<uint32_t> { static constexpr type_id id = type_id::uint32; };
template <> struct type_of<uint64_t> { static constexpr type_id id = type_id::uint64; };
template <> struct type_of<float> { static constexpr type_id id = type_id::float32; };
template <> struct type_of<double> { static constexpr type_id id = type_id::float64; };

template <typename T>
class EvalArith : public ::testing::Test {};
using numeric_types = ::testing::Types<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, float, double>;
TYPED_TEST_SUITE(EvalArith, numeric_types);

template <typename T>
T ref_op(fn f, T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (f) {
      case fn::add: return x + y;
      case fn::sub: return x - y;
      case fn::mul: return x * y;
      case fn::floor_div: return std::floor(x / y);
      default: return x - y * std::floor(x / y);
    }
  } else {
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (f) {
      case fn::add: return static_cast<T>(ux + uy);
      case fn::sub: return static_cast<T>(ux - uy);
      case fn::mul: return static_cast<T>(ux * uy);
      case fn::floor_div: {
        long double q = std::floor(static_cast<long double>(x) / static_cast<long double>(y));
        return static_cast<T>(static_cast<int64_t>(q));
      }
      default: {
        long double q = std::floor(static_cast<long double>(x) / static_cast<long double>(y));
        return static_cast<T>(static_cast<long double>(x) - q * static_cast<long double>(y));
      }
    }
  }
}

expr apply(fn f, const expr& a, const expr& b) {
  switch (f) {
    case fn::add: return a + b;
    case fn::sub: return a - b;
    case fn::mul: return a * b;
    case fn::floor_div: return a.floor_div(b);
    default: return a % b;
  }
}

}  // namespace

TYPED_TEST(EvalArith, BinaryOpsMatchReference) {
  using T = TypeParam;
  const data_type type = type_of<T>::id;
  for (fn f : {fn::add, fn::sub, fn::mul, fn::floor_div, fn::mod}) {
    for (int64_t n : sizes()) {
      for (bool sliced : {false, true}) {
        column a = gen<T>(type, n, 1, 3, sliced), b = gen<T>(type, n, 2, 5, sliced);
        column got = eval(apply(f, col("a"), col("b")), {{"a", a}, {"b", b}});
        column want = expected<T>(type, n, [&](int64_t i) -> std::optional<T> {
          auto x = opt<T>(a, i), y = opt<T>(b, i);
          if (!x || !y) return std::nullopt;
          if (std::is_integral_v<T> && (f == fn::floor_div || f == fn::mod) && *y == 0) return std::nullopt;
          return ref_op<T>(f, *x, *y);
        });
        expect_columns_equal(got, want, std::string(to_string(f)) + " n=" + std::to_string(n));
      }
    }
  }
}

TYPED_TEST(EvalArith, ColumnAgainstLiteralAndNullLiteral) {
  using T = TypeParam;
  const data_type type = type_of<T>::id;
  column a = gen<T>(type, 33, 7, 4, true);
  column got = eval(col("a") + lit_null(type), {{"a", a}});
  expect_columns_equal(got, make_null_column(type, 33));
  // literal on either side, typed to the column's type by resolve
  column l = eval(lit(scalar(type, std::is_floating_point_v<T> ? scalar::value_type(2.0)
                                                               : scalar::value_type(int64_t{2}))) *
                      col("a"),
                  {{"a", a}});
  column r = eval(col("a") * 2, {{"a", a}});
  column want = expected<T>(type, 33, [&](int64_t i) -> std::optional<T> {
    auto x = opt<T>(a, i);
    if (!x) return std::nullopt;
    return ref_op<T>(fn::mul, *x, T(2));
  });
  expect_columns_equal(l, want, "lit * col");
  expect_columns_equal(r, want, "col * lit");
}

TEST(EvalArith, IntegerOverflowWraps) {
  const int64_t mx = std::numeric_limits<int64_t>::max(), mn = std::numeric_limits<int64_t>::min();
  column a = i64({mx, mn, mn, 3}), b = i64({1, -1, -1, -1});
  expect_columns_equal(eval(col("a") + col("b"), {{"a", a}, {"b", b}}), i64({mn, mx, mx, 2}));
  expect_columns_equal(eval(col("a").floor_div(col("b")), {{"a", a}, {"b", b}}), i64({mx, mn, mn, -3}));
  expect_columns_equal(eval(col("a") % col("b"), {{"a", a}, {"b", b}}), i64({0, 0, 0, 0}));
  expect_columns_equal(eval(col("a") * col("a"), {{"a", i64({mx})}}), i64({1}));
  column i8 = make_column<int8_t>(type_id::int8, std::vector<int8_t>{127, -128});
  expect_columns_equal(eval(col("a") + col("a"), {{"a", i8}}),
                       make_column<int8_t>(type_id::int8, std::vector<int8_t>{-2, 0}));
  column u16 = make_column<uint16_t>(type_id::uint16, std::vector<uint16_t>{65535});
  expect_columns_equal(eval(col("a") * col("a"), {{"a", u16}}),
                       make_column<uint16_t>(type_id::uint16, std::vector<uint16_t>{1}));
}

TEST(EvalArith, DivisionAndModuloSemantics) {
  column a = i64({7, -7, 7, -7, 5, std::nullopt}), b = i64({2, 2, -2, -2, 0, 1});
  expect_columns_equal(eval(col("a").floor_div(col("b")), {{"a", a}, {"b", b}}),
                       i64({3, -4, -4, 3, std::nullopt, std::nullopt}));
  expect_columns_equal(eval(col("a") % col("b"), {{"a", a}, {"b", b}}), i64({1, 1, -1, -1, std::nullopt, std::nullopt}));
  // true division is floating: by zero gives inf / nan
  column d = eval(col("a") / col("b"), {{"a", a}, {"b", b}});
  ASSERT_EQ(d.type().id, type_id::float64);
  EXPECT_DOUBLE_EQ(d.value<double>(0), 3.5);
  EXPECT_TRUE(std::isinf(d.value<double>(4)));
  column z = eval(col("a") / col("b"), {{"a", f64({0.0, -1.0})}, {"b", f64({0.0, 0.0})}});
  EXPECT_TRUE(std::isnan(z.value<double>(0)));
  EXPECT_EQ(z.value<double>(1), -INFINITY);
  column fm = eval(col("a") % col("b"), {{"a", f64({7.5, -7.5, 1.0})}, {"b", f64({2.0, 2.0, 0.0})}});
  EXPECT_DOUBLE_EQ(fm.value<double>(0), 1.5);
  EXPECT_DOUBLE_EQ(fm.value<double>(1), 0.5);
  EXPECT_TRUE(std::isnan(fm.value<double>(2)));
  // division by a zero literal nulls every row
  expect_columns_equal(eval(col("a") % 0, {{"a", i64({1, 2})}}), i64({std::nullopt, std::nullopt}));
}

TEST(EvalArith, Pow) {
  column a = i64({2, 3, -2, 2, std::nullopt}), b = i64({10, 0, 3, -1, 2});
  expect_columns_equal(eval(col("a").pow(col("b")), {{"a", a}, {"b", b}}),
                       i64({1024, 1, -8, std::nullopt, std::nullopt}));
  column f = eval(col("a").pow(0.5), {{"a", f64({4.0, 2.25})}});
  expect_columns_equal(f, f64({2.0, 1.5}));
}

TEST(EvalArith, Decimals) {
  data_type d2 = decimal(10, 2), d1 = decimal(5, 1);
  column a = make_column<__int128>(d2, std::vector<std::optional<__int128>>{12345, -100, std::nullopt});  // 123.45 -1.00
  column b = make_column<__int128>(d1, std::vector<std::optional<__int128>>{15, 25, 10});                 // 1.5 2.5 1.0
  column s = eval(col("a") + col("b"), {{"a", a}, {"b", b}});
  EXPECT_EQ(to_string(s.type()), to_string(decimal(38, 2)));
  EXPECT_EQ(format_value(s, 0), "124.95");
  EXPECT_EQ(format_value(s, 1), "1.50");
  EXPECT_TRUE(s.is_null(2));
  column m = eval(col("a") * col("b"), {{"a", a}, {"b", b}});
  EXPECT_EQ(m.type().scale, 3);
  EXPECT_EQ(format_value(m, 0), "185.175");
  EXPECT_EQ(format_value(m, 1), "-2.500");
  column mi = eval(col("a") * col("i"), {{"a", a}, {"i", i64({2, 3, 4})}});
  EXPECT_EQ(format_value(mi, 0), "246.90");
  column q = eval(col("a") / col("b"), {{"a", a}, {"b", b}});
  EXPECT_NEAR(q.value<double>(0), 82.3, 1e-9);
  __int128 big = static_cast<__int128>(1) << 126;
  column o = make_column<__int128>(decimal(38, 0), std::vector<__int128>{big});
  EXPECT_THROW(eval(col("a") + col("a"), {{"a", o}}), compute_error);
}

TEST(EvalArith, BooleanOperandsBecomeInt64) {
  column got = eval(col("a") + col("b"), {{"a", boolean({true, false, std::nullopt})}, {"b", boolean({true, true, true})}});
  expect_columns_equal(got, i64({2, 1, std::nullopt}));
}

TEST(EvalArith, MixedTypesPromote) {
  column a = i32({1, 2}), b = f64({0.5, 0.25});
  expect_columns_equal(eval(col("a") + col("b"), {{"a", a}, {"b", b}}), f64({1.5, 2.25}));
  column u = make_column<uint8_t>(type_id::uint8, std::vector<uint8_t>{200, 1});
  column i = make_column<int8_t>(type_id::int8, std::vector<int8_t>{-100, -2});
  expect_columns_equal(eval(col("u") + col("i"), {{"u", u}, {"i", i}}),
                       make_column<int16_t>(type_id::int16, std::vector<int16_t>{100, -1}));
}

TEST(EvalArith, LiteralOnlyBroadcasts) {
  column got = eval(lit(int64_t{2}) + lit(int64_t{3}), {{"a", i64({1, 2, 3})}});
  expect_columns_equal(got, i64({5, 5, 5}));
}

TEST(EvalArith, DurationTimesInt) {
  column d = make_column<int64_t>(duration(time_unit::ms), std::vector<std::optional<int64_t>>{5, std::nullopt, -2});
  column got = eval(col("d") * col("k"), {{"d", d}, {"k", i32({3, 3, 4})}});
  expect_columns_equal(got, make_column<int64_t>(duration(time_unit::ms), std::vector<std::optional<int64_t>>{15, std::nullopt, -8}));
}

TEST(EvalArith, EndToEndThroughLazyFrame) {
  std::vector<std::optional<int64_t>> v;
  for (int64_t i = 0; i < 100; ++i) v.push_back(i % 9 == 4 ? std::nullopt : std::optional<int64_t>(i - 50));
  auto df = data_frame::from_columns({{"a", i64(v)}});
  engine_options o;
  o.target_partition_rows = 7;
  auto out = df.lazy().with_columns({(col("a") * 3 + 1).alias("b"), (col("a") % 7).alias("m")}).collect(o);
  EXPECT_GT(out.partitions().size(), 1u);
  auto t = out.to_table();
  for (int64_t i = 0; i < 100; ++i) {
    if (!v[static_cast<size_t>(i)]) {
      EXPECT_TRUE(t[1].is_null(i));
      continue;
    }
    int64_t x = *v[static_cast<size_t>(i)];
    EXPECT_EQ(t[1].value<int64_t>(i), x * 3 + 1);
    EXPECT_EQ(t[2].value<int64_t>(i), ((x % 7) + 7) % 7);
  }
  auto f = df.lazy().filter(col("a") % 2 == lit(int64_t{0})).collect(o);
  int64_t evens = 0;
  for (auto& x : v) evens += x && *x % 2 == 0;
  EXPECT_EQ(f.num_rows(), evens);
}

TEST(EvalArith, AggAndWindowNeverReachEvaluate) {
  schema s({{"a", type_id::int64}});
  table t({i64({1})});
  EXPECT_THROW(cpu::evaluate(resolve(col("a").sum(), s), t, s), internal_error);
  EXPECT_THROW(cpu::evaluate(resolve(col("a").sum().over({"a"}), s), t, s), internal_error);
}
