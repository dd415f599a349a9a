// CPU evaluator: comparisons (every type, NaN order), membership, Kleene logic, when, null functions.
#include "eval_helpers.hpp"

using namespace tug;
using namespace tug::eval_test;

namespace {

expr cmp(fn f, const expr& a, const expr& b) { return make_function(f, {a, b}); }

template <typename T>
void check_compare_all_sizes(const data_type& type) {
  for (fn f : {fn::eq, fn::ne, fn::lt, fn::le, fn::gt, fn::ge}) {
    for (int64_t n : sizes()) {
      for (bool sliced : {false, true}) {
        column a = gen<T>(type, n, 11, 3, sliced), b = gen<T>(type, n, 12, 4, sliced);
        column got = eval(cmp(f, col("a"), col("b")), {{"a", a}, {"b", b}});
        column want = expected<bool>(type_id::boolean, n, [&](int64_t i) -> std::optional<bool> {
          auto x = opt<T>(a, i), y = opt<T>(b, i);
          if (!x || !y) return std::nullopt;
          switch (f) {
            case fn::eq: return *x == *y;
            case fn::ne: return *x != *y;
            case fn::lt: return *x < *y;
            case fn::le: return *x <= *y;
            case fn::gt: return *x > *y;
            default: return *x >= *y;
          }
        });
        expect_columns_equal(got, want, std::string(to_string(f)) + " " + to_string(type) + " n=" + std::to_string(n));
      }
    }
  }
}

}  // namespace

TEST(EvalCompare, EveryFixedWidthType) {
  check_compare_all_sizes<int8_t>(type_id::int8);
  check_compare_all_sizes<int16_t>(type_id::int16);
  check_compare_all_sizes<int32_t>(type_id::int32);
  check_compare_all_sizes<int64_t>(type_id::int64);
  check_compare_all_sizes<uint8_t>(type_id::uint8);
  check_compare_all_sizes<uint16_t>(type_id::uint16);
  check_compare_all_sizes<uint32_t>(type_id::uint32);
  check_compare_all_sizes<uint64_t>(type_id::uint64);
  check_compare_all_sizes<float>(type_id::float32);
  check_compare_all_sizes<double>(type_id::float64);
  check_compare_all_sizes<bool>(type_id::boolean);
  check_compare_all_sizes<int32_t>(type_id::date32);
  check_compare_all_sizes<int64_t>(timestamp(time_unit::ms));
  check_compare_all_sizes<__int128>(decimal(20, 3));
}

TEST(EvalCompare, StringsBytewiseWithSliceAndLiteral) {
  column s = str({"z", "a", "abc", std::nullopt, "\xc3\xa9", "ab"}).slice(1, 5);
  expect_columns_equal(eval(col("s") < "abc", {{"s", s}}), boolean({true, false, std::nullopt, false, true}));
  expect_columns_equal(eval(col("s") == "abc", {{"s", s}}), boolean({false, true, std::nullopt, false, false}));
  column t = str({"b", "abc", "x", "x", "ab"});
  expect_columns_equal(eval(col("s") >= col("t"), {{"s", s}, {"t", t}}),
                       boolean({false, true, std::nullopt, true, true}));
  expect_columns_equal(eval(col("s") != lit_null(type_id::string), {{"s", s}}), make_null_column(type_id::boolean, 5));
}

TEST(EvalCompare, NaNIsEqualToItselfAndLargest) {
  const double nan = std::nan("");
  column a = f64({nan, nan, 1.0, INFINITY, std::nullopt}), b = f64({nan, 1.0, nan, nan, nan});
  auto run = [&](fn f) { return eval(cmp(f, col("a"), col("b")), {{"a", a}, {"b", b}}); };
  expect_columns_equal(run(fn::eq), boolean({true, false, false, false, std::nullopt}));
  expect_columns_equal(run(fn::ne), boolean({false, true, true, true, std::nullopt}));
  expect_columns_equal(run(fn::lt), boolean({false, false, true, true, std::nullopt}));
  expect_columns_equal(run(fn::le), boolean({true, false, true, true, std::nullopt}));
  expect_columns_equal(run(fn::gt), boolean({false, true, false, false, std::nullopt}));
  expect_columns_equal(run(fn::ge), boolean({true, true, false, false, std::nullopt}));
}

TEST(EvalCompare, IsInAndIsBetween) {
  column a = i32({1, 2, 3, std::nullopt, 5});
  expect_columns_equal(eval(col("a").is_in({scalar(type_id::int64, int64_t{2}), scalar(type_id::int64, int64_t{5}),
                                             scalar::null(type_id::int64)}),
                            {{"a", a}}),
                       boolean({false, true, false, std::nullopt, true}));
  // a long list takes the sorted path
  std::vector<scalar> many;
  for (int64_t k = 100; k > 2; --k) many.push_back(scalar(type_id::int64, k));
  expect_columns_equal(eval(col("a").is_in(many), {{"a", a}}), boolean({false, false, true, std::nullopt, true}));
  expect_columns_equal(eval(col("a").is_in({scalar(type_id::float64, 2.5), scalar(type_id::float64, 3.0)}), {{"a", a}}),
                       boolean({false, false, true, std::nullopt, false}));
  column s = str({"x", "y", std::nullopt});
  expect_columns_equal(eval(col("s").is_in({scalar(type_id::string, std::string("y"))}), {{"s", s}}),
                       boolean({false, true, std::nullopt}));
  column f = f64({std::nan(""), 1.0});
  expect_columns_equal(eval(col("f").is_in({scalar(type_id::float64, std::nan(""))}), {{"f", f}}), boolean({true, false}));
  // strings: short lists of strings up to 7 bytes compare as integers, others byte by byte; the
  // length tells "ab" from "ab\0", "" is a value, longer candidates never match a short list
  using namespace std::string_literals;
  column t = str({"MAIL", "SHIP", "", "ab", "ab\0"s, "SHIPPING", std::nullopt, "AIR REG", "abcdefgh", "abcdefg"});
  auto strs = [](std::vector<std::string> v) {
    std::vector<scalar> out;
    for (auto& x : v) out.push_back(scalar(type_id::string, x));
    return out;
  };
  expect_columns_equal(eval(col("t").is_in(strs({"MAIL", "SHIP", "AIR REG", "ab"})), {{"t", t}}),
                       boolean({true, true, false, true, false, false, std::nullopt, true, false, false}));
  expect_columns_equal(eval(col("t").is_in(strs({"", "ab\0"s, "abcdefg"})), {{"t", t}}),
                       boolean({false, false, true, false, true, false, std::nullopt, false, false, true}));
  expect_columns_equal(eval(col("t").is_in(strs({"SHIPPING", "abcdefgh", "MAIL"})), {{"t", t}}),
                       boolean({true, false, false, false, false, true, std::nullopt, false, true, false}));
  // equality with a constant: short constants compare as integers, on either side
  expect_columns_equal(eval(col("t") == lit("ab"), {{"t", t}}),
                       boolean({false, false, false, true, false, false, std::nullopt, false, false, false}));
  expect_columns_equal(eval(lit("ab\0"s) != col("t"), {{"t", t}}),
                       boolean({true, true, true, true, false, true, std::nullopt, true, true, true}));
  expect_columns_equal(eval(col("t") == lit(""), {{"t", t}}),
                       boolean({false, false, true, false, false, false, std::nullopt, false, false, false}));
  expect_columns_equal(eval(col("t") == lit("abcdefgh"), {{"t", t}}),
                       boolean({false, false, false, false, false, false, std::nullopt, false, true, false}));

  column x = i64({1, 2, 3, 4, std::nullopt});
  expect_columns_equal(eval(col("x").is_between(2, 4), {{"x", x}}), boolean({false, true, true, true, std::nullopt}));
  expect_columns_equal(eval(col("x").is_between(2, 4, "left"), {{"x", x}}), boolean({false, true, true, false, std::nullopt}));
  expect_columns_equal(eval(col("x").is_between(2, 4, "right"), {{"x", x}}), boolean({false, false, true, true, std::nullopt}));
  expect_columns_equal(eval(col("x").is_between(2, 4, "none"), {{"x", x}}), boolean({false, false, true, false, std::nullopt}));
  // Kleene: below a known lower bound is false even with a null upper bound
  expect_columns_equal(eval(col("x").is_between(2, col("h")), {{"x", x}, {"h", i64({std::nullopt, std::nullopt, 9, 9, 9})}}),
                       boolean({false, std::nullopt, true, true, std::nullopt}));
  EXPECT_THROW(eval(col("x").is_between(2, 4, "middle"), {{"x", x}}), invalid_argument_error);
}

TEST(EvalLogic, KleeneTruthTables) {
  // all 9 combinations of {true, false, null}
  std::vector<std::optional<bool>> av, bv;
  for (auto x : {std::optional<bool>(true), std::optional<bool>(false), std::optional<bool>()})
    for (auto y : {std::optional<bool>(true), std::optional<bool>(false), std::optional<bool>()}) {
      av.push_back(x);
      bv.push_back(y);
    }
  column a = boolean(av), b = boolean(bv);
  std::optional<bool> T = true, F = false, N;
  expect_columns_equal(eval(col("a") & col("b"), {{"a", a}, {"b", b}}), boolean({T, F, N, F, F, F, N, F, N}));
  expect_columns_equal(eval(col("a") | col("b"), {{"a", a}, {"b", b}}), boolean({T, T, T, T, F, N, T, N, N}));
  expect_columns_equal(eval(col("a") ^ col("b"), {{"a", a}, {"b", b}}), boolean({F, T, N, T, F, N, N, N, N}));
  expect_columns_equal(eval(!col("a"), {{"a", a}}), boolean({F, F, F, T, T, T, N, N, N}));
  // with literals, including a null literal
  expect_columns_equal(eval(col("a") & lit_null(type_id::boolean), {{"a", a}}), boolean({N, N, N, F, F, F, N, N, N}));
  expect_columns_equal(eval(col("a") | true, {{"a", a}}), boolean({T, T, T, T, T, T, T, T, T}));
}

TEST(EvalLogic, AllSizesSliced) {
  for (int64_t n : sizes()) {
    column a = gen<bool>(type_id::boolean, n, 5, 3, true), b = gen<bool>(type_id::boolean, n, 6, 4, true);
    column got = eval(col("a") & col("b"), {{"a", a}, {"b", b}});
    column want = expected<bool>(type_id::boolean, n, [&](int64_t i) -> std::optional<bool> {
      auto x = opt<bool>(a, i), y = opt<bool>(b, i);
      if ((x && !*x) || (y && !*y)) return false;
      if (!x || !y) return std::nullopt;
      return true;
    });
    expect_columns_equal(got, want, "and n=" + std::to_string(n));
  }
}

TEST(EvalLogic, WhenThenOtherwise) {
  column c = boolean({true, false, std::nullopt, true}), x = i64({1, 2, 3, std::nullopt});
  expect_columns_equal(eval(when(col("c")).then(col("x")).otherwise(lit(int64_t{-1})), {{"c", c}, {"x", x}}),
                       i64({1, -1, -1, std::nullopt}));
  expect_columns_equal(eval(when(col("c")).then(lit("y")).otherwise(lit("n")), {{"c", c}}), str({"y", "n", "n", "y"}));
  expect_columns_equal(eval(expr(when(col("x") > 1).then(col("x"))), {{"x", x}}), i64({std::nullopt, 2, 3, std::nullopt}));
  // chained branches and a scalar condition
  expect_columns_equal(
      eval(when(col("x") == 1).then(lit(int64_t{10})).when(col("x") == 2).then(lit(int64_t{20})).otherwise(col("x")),
           {{"x", x}}),
      i64({10, 20, 3, std::nullopt}));
  expect_columns_equal(eval(when(lit(false)).then(col("x")).otherwise(lit(int64_t{0})), {{"x", x}}), i64({0, 0, 0, 0}));
}

TEST(EvalNulls, IsNullFillNullCoalesceIsNan) {
  column a = i64({1, std::nullopt, 3, std::nullopt}).slice(1, 3);
  expect_columns_equal(eval(col("a").is_null(), {{"a", a}}), boolean({true, false, true}));
  expect_columns_equal(eval(col("a").is_not_null(), {{"a", a}}), boolean({false, true, false}));
  expect_columns_equal(eval(col("a").fill_null(0), {{"a", a}}), i64({0, 3, 0}));
  expect_columns_equal(eval(col("a").fill_null(col("b")), {{"a", a}, {"b", i64({7, 8, std::nullopt})}}),
                       i64({7, 3, std::nullopt}));
  expect_columns_equal(eval(coalesce({col("a"), col("b"), lit(int64_t{9})}), {{"a", a}, {"b", i64({std::nullopt, 8, std::nullopt})}}),
                       i64({9, 3, 9}));
  expect_columns_equal(eval(coalesce({col("a"), lit_null(type_id::int64)}), {{"a", a}}), i64({std::nullopt, 3, std::nullopt}));
  column s = str({std::nullopt, "q"});
  expect_columns_equal(eval(col("s").fill_null(lit("z")), {{"s", s}}), str({"z", "q"}));
  column f = f64({std::nan(""), 1.0, std::nullopt});
  expect_columns_equal(eval(col("f").is_nan(), {{"f", f}}), boolean({true, false, std::nullopt}));
  column e = make_null_column(type_id::int64, 0);
  expect_columns_equal(eval(col("e").is_null(), {{"e", e}}), boolean({}));
  column alln = make_null_column(type_id::float64, 33);
  expect_columns_equal(eval(col("x").fill_null(1.5), {{"x", alln}}), f64(std::vector<std::optional<double>>(33, 1.5)));
}

TEST(EvalCompare, EndToEndFilter) {
  auto df = data_frame::from_columns({{"a", i64({1, 5, std::nullopt, 7, 3})}, {"s", str({"x", "y", "z", "w", std::nullopt})}});
  engine_options o;
  o.target_partition_rows = 2;
  auto out = df.lazy().filter((col("a") > 2) & col("s").is_not_null()).collect(o);
  EXPECT_EQ(rows_of(out), (std::vector<std::string>{"5|y", "7|w"}));
  auto out2 = df.lazy().filter((col("a") > 2) | (col("s") == "x")).collect(o);
  EXPECT_EQ(rows_of(out2), (std::vector<std::string>{"1|x", "5|y", "7|w", "3|null"}));
}
