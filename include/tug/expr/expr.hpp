#pragma once
/// The expression DSL (Polars-like) and its IR. An `expr` is an immutable, shareable tree of
/// `expr_node`s; types are inferred against a schema by `infer_type` when a plan is built.
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tug/core/scalar.hpp"
#include "tug/core/types.hpp"

namespace tug {

enum class expr_kind : uint8_t {
  column,    ///< reference to an input column by name
  literal,   ///< a scalar
  alias,     ///< args[0] renamed to `name`
  cast,      ///< args[0] cast to `dtype`; `flag` = strict
  function,  ///< elementwise function `fn` of `args`
  when,      ///< args = {condition, then, otherwise}
  agg,       ///< aggregate `agg` of args[0] (args empty for len)
  window,    ///< args[0] evaluated per group of `partition_by`, broadcast to rows
};

/// Elementwise functions.
enum class fn : uint16_t {
  // arithmetic (binary)
  add, sub, mul, div, floor_div, mod, pow,
  // comparison (binary)
  eq, ne, lt, le, gt, ge,
  // boolean logic (Kleene three-valued)
  and_, or_, xor_, not_,
  // nulls
  is_null, is_not_null, fill_null, coalesce, is_nan,
  // membership: is_in uses `list`; is_between uses args {x, lo, hi} and `s0` closed = both|left|right|none
  is_in, is_between,
  // math (unary unless noted); round uses i0 decimals; log uses d0 base (0 = natural)
  neg, abs, round, floor, ceil, sqrt, log, exp,
  // strings; slice uses i0 offset and i1 length (-1 = to end); strip uses s0 chars ("" = whitespace);
  // contains uses args[1] pattern and `flag` = literal; concat_str joins args with s0 separator
  str_len_chars, str_len_bytes, str_starts_with, str_ends_with, str_contains, str_slice, str_to_upper,
  str_to_lower, str_to_title, str_strip, str_concat,
  // temporal; truncate uses s0 every ("1d", "1h", "1mo", "1y", "15m", ...)
  dt_year, dt_month, dt_day, dt_hour, dt_minute, dt_second, dt_weekday, dt_truncate, dt_date,
  dt_total_days, dt_total_seconds, dt_total_milliseconds,
};

/// Aggregations.
enum class agg_op : uint8_t {
  sum, mean, min, max, count, len, n_unique, first, last, std, var, median, quantile, any, all,
};

/// Printable name of a function / aggregation ("add", "sum", ...).
const char* to_string(fn f);
const char* to_string(agg_op a);

class expr;

/// One node of an expression tree. Immutable once shared.
struct expr_node {
  expr_kind kind = expr_kind::literal;
  fn func = fn::add;
  agg_op agg = agg_op::sum;
  std::string name;              ///< column name or alias
  scalar value;                  ///< literal value
  bool dynamic = false;          ///< literal without an explicit type: adapts to the other operand
  data_type dtype;               ///< cast target
  std::vector<expr> args;
  std::vector<expr> partition_by;  ///< window keys
  std::vector<scalar> list;      ///< is_in values
  int64_t i0 = 0, i1 = -1;       ///< integer parameters (see `fn`), ddof for std/var
  double d0 = 0;                 ///< quantile q, log base
  std::string s0;                ///< string parameter (see `fn`), quantile interpolation
  bool flag = false;             ///< strict cast / literal contains
};

/// A handle to an expression tree, with the Polars-like builder methods.
class expr {
 public:
  expr() = default;
  explicit expr(std::shared_ptr<const expr_node> n) : _node(std::move(n)) {}
  /// Numbers and booleans convert implicitly to literals (`col("a") > 3`). Strings do not (a bare
  /// string in a list could mean a column or a literal); comparison operators take them as literals
  /// (`col("s") == "x"`), elsewhere write `lit("x")` or `col("x")`.
  expr(int v);                  // NOLINT
  expr(int64_t v);              // NOLINT
  expr(double v);               // NOLINT
  template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
  expr(B v) : expr(make_bool(v)) {}  // NOLINT: only a real bool, not a pointer

  const expr_node& node() const { return *_node; }
  const expr_node* operator->() const { return _node.get(); }
  const std::shared_ptr<const expr_node>& ptr() const { return _node; }
  bool valid() const { return static_cast<bool>(_node); }

  expr alias(std::string name) const;
  /// Cast; strict casts raise compute_error on values that do not fit or parse, others give null.
  expr cast(data_type to, bool strict = true) const;

  expr floor_div(const expr& o) const;
  expr pow(const expr& o) const;
  expr eq(const expr& o) const;
  expr ne(const expr& o) const;
  expr lt(const expr& o) const;
  expr le(const expr& o) const;
  expr gt(const expr& o) const;
  expr ge(const expr& o) const;
  expr and_(const expr& o) const;
  expr or_(const expr& o) const;
  expr xor_(const expr& o) const;
  expr not_() const;

  expr is_null() const;
  expr is_not_null() const;
  expr is_nan() const;
  expr fill_null(const expr& value) const;
  expr is_in(std::vector<scalar> values) const;
  /// `closed`: "both" (default), "left", "right", "none".
  expr is_between(const expr& lo, const expr& hi, std::string closed = "both") const;

  expr abs() const;
  expr round(int decimals = 0) const;
  expr floor() const;
  expr ceil() const;
  expr sqrt() const;
  /// Natural logarithm, or logarithm to `base`.
  expr log(double base = 0) const;
  expr exp() const;

  expr str_len_chars() const;
  expr str_len_bytes() const;
  expr str_starts_with(const expr& prefix) const;
  expr str_starts_with(const std::string& prefix) const;
  expr str_ends_with(const expr& suffix) const;
  expr str_ends_with(const std::string& suffix) const;
  /// Substring test; `literal=false` treats the pattern as an ECMAScript regular expression.
  expr str_contains(const expr& pattern, bool literal = true) const;
  expr str_contains(const std::string& pattern, bool literal = true) const;
  /// Characters [offset, offset+length); negative offset counts from the end; length -1 = to the end.
  expr str_slice(int64_t offset, int64_t length = -1) const;
  expr str_to_upper() const;
  expr str_to_lower() const;
  /// The first character of each word (a run of alphabetic characters) titlecased, the others lowercased,
  /// as Polars' str.to_titlecase ("o'neil 3d" -> "O'Neil 3D"; full Unicode mappings, src/exec/case_mapping.hpp).
  expr str_to_title() const;
  /// Removes leading and trailing `chars` (whitespace when empty).
  expr str_strip(std::string chars = {}) const;

  expr dt_year() const;
  expr dt_month() const;
  expr dt_day() const;
  expr dt_hour() const;
  expr dt_minute() const;
  expr dt_second() const;
  /// ISO weekday, Monday = 1 .. Sunday = 7.
  expr dt_weekday() const;
  /// Truncates to a multiple of `every`: "1y", "1mo", "1w", "1d", "1h", "15m", "30s", "1ms", ...
  expr dt_truncate(std::string every) const;
  expr dt_date() const;
  expr dt_total_days() const;
  expr dt_total_seconds() const;
  expr dt_total_milliseconds() const;

  expr sum() const;
  expr mean() const;
  expr min() const;
  expr max() const;
  /// Non-null values.
  expr count() const;
  expr n_unique() const;
  expr first() const;
  expr last() const;
  expr std(int ddof = 1) const;
  expr var(int ddof = 1) const;
  expr median() const;
  /// `interpolation`: "nearest" (default, as Polars), "linear", "lower", "higher", "midpoint".
  expr quantile(double q, std::string interpolation = "nearest") const;
  expr any() const;
  expr all() const;

  /// Evaluates this expression per group of `keys` and broadcasts the result to every row.
  expr over(std::vector<expr> keys) const;
  expr over(const std::vector<std::string>& keys) const;
  expr over(std::initializer_list<const char*> keys) const;

 private:
  static expr make_bool(bool v);
  std::shared_ptr<const expr_node> _node;
};

/// Reference to a column.
expr col(std::string name);
/// Typed literal.
expr lit(scalar value);
expr lit(int64_t v);
expr lit(double v);
expr lit(bool v);
expr lit(std::string v);
expr lit(const char* v);
/// A typed null literal.
expr lit_null(data_type type);
/// A date literal.
expr lit_date(int year, int month, int day);
/// A duration literal (e.g. `duration_lit(3, time_unit::s)` is three seconds). `days` helper below.
expr lit_duration(int64_t ticks, time_unit unit);
expr lit_days(int64_t days);
/// Number of rows (counts nulls): `len()` in Polars.
expr len();
/// First non-null of `exprs`, row by row.
expr coalesce(std::vector<expr> exprs);
/// Concatenates string expressions with a separator (null if any input is null).
expr concat_str(std::vector<expr> exprs, std::string separator = "");

/// `when(cond).then(a).when(cond2).then(b).otherwise(c)`; without `otherwise` the rest is null.
class when_builder;
class then_builder {
 public:
  then_builder(std::vector<std::pair<expr, expr>> branches) : _branches(std::move(branches)) {}
  when_builder when(const expr& cond) const;
  expr otherwise(const expr& e) const;
  operator expr() const;  // NOLINT: no otherwise -> null
 private:
  std::vector<std::pair<expr, expr>> _branches;
};
class when_builder {
 public:
  when_builder(std::vector<std::pair<expr, expr>> branches, expr cond)
      : _branches(std::move(branches)), _cond(std::move(cond)) {}
  then_builder then(const expr& e) const;
 private:
  std::vector<std::pair<expr, expr>> _branches;
  expr _cond;
};
when_builder when(const expr& cond);

expr operator+(const expr& a, const expr& b);
expr operator-(const expr& a, const expr& b);
expr operator*(const expr& a, const expr& b);
/// True division: always floating.
expr operator/(const expr& a, const expr& b);
/// Remainder with the sign of the divisor (Python/Polars semantics).
expr operator%(const expr& a, const expr& b);
expr operator-(const expr& a);
expr operator==(const expr& a, const expr& b);
expr operator!=(const expr& a, const expr& b);
expr operator<(const expr& a, const expr& b);
expr operator<=(const expr& a, const expr& b);
expr operator>(const expr& a, const expr& b);
expr operator>=(const expr& a, const expr& b);
expr operator&(const expr& a, const expr& b);
expr operator|(const expr& a, const expr& b);
expr operator^(const expr& a, const expr& b);
expr operator!(const expr& a);
/// Comparisons with a string literal: `col("s") == "x"`. (Arrays and std::string only, so that
/// `col("a") == 0` stays an integer comparison.)
template <size_t N> expr operator==(const expr& a, const char (&b)[N]) { return a == lit(std::string(b)); }
template <typename S, std::enable_if_t<std::is_same_v<S, std::string>, int> = 0>
expr operator==(const expr& a, const S& b) { return a == lit(b); }
template <size_t N> expr operator!=(const expr& a, const char (&b)[N]) { return a != lit(std::string(b)); }
template <typename S, std::enable_if_t<std::is_same_v<S, std::string>, int> = 0>
expr operator!=(const expr& a, const S& b) { return a != lit(b); }
template <size_t N> expr operator<(const expr& a, const char (&b)[N]) { return a < lit(std::string(b)); }
template <typename S, std::enable_if_t<std::is_same_v<S, std::string>, int> = 0>
expr operator<(const expr& a, const S& b) { return a < lit(b); }
template <size_t N> expr operator<=(const expr& a, const char (&b)[N]) { return a <= lit(std::string(b)); }
template <typename S, std::enable_if_t<std::is_same_v<S, std::string>, int> = 0>
expr operator<=(const expr& a, const S& b) { return a <= lit(b); }
template <size_t N> expr operator>(const expr& a, const char (&b)[N]) { return a > lit(std::string(b)); }
template <typename S, std::enable_if_t<std::is_same_v<S, std::string>, int> = 0>
expr operator>(const expr& a, const S& b) { return a > lit(b); }
template <size_t N> expr operator>=(const expr& a, const char (&b)[N]) { return a >= lit(std::string(b)); }
template <typename S, std::enable_if_t<std::is_same_v<S, std::string>, int> = 0>
expr operator>=(const expr& a, const S& b) { return a >= lit(b); }
expr operator~(const expr& a);

/// Builds a function node (used by the DSL, the optimizer and tests).
expr make_function(fn f, std::vector<expr> args);
/// A copy of `e`'s node with new arguments.
expr with_args(const expr& e, std::vector<expr> args);

/// The output name: the alias, else the name of the first column in the tree, "literal" or "len".
std::string output_name(const expr& e);
/// The type of `e` over `input`. @throws column_not_found_error / type_error naming the column or function.
data_type infer_type(const expr& e, const schema& input);
/// Columns referenced by `e` (each once, in first-seen order).
std::vector<std::string> referenced_columns(const expr& e);
/// True when `e` contains an aggregation outside of any window.
bool contains_agg(const expr& e);
/// True when `e` contains a window expression.
bool contains_window(const expr& e);
/// Polars-like text: col("a").sum().over([col("b")]) renders as `col("a").sum().over([col("b")])`.
std::string to_string(const expr& e);
/// Structural equality.
bool equal(const expr& a, const expr& b);

/// The common type of two operands for arithmetic and comparison (documented in docs/types.md).
/// @throws type_error when there is none.
data_type common_type(const data_type& a, const data_type& b, const char* what);
/// The type of aggregate `op` over a column of `input`. @throws type_error when unsupported.
data_type agg_result_type(agg_op op, const data_type& input);

}  // namespace tug
