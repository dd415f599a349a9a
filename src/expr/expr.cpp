#include "tug/expr/expr.hpp"

#include <cstdio>

#include "tug/core/temporal.hpp"

namespace tug {

namespace {
std::shared_ptr<expr_node> node_of(expr_kind k) {
  auto n = std::make_shared<expr_node>();
  n->kind = k;
  return n;
}
expr fn1(fn f, const expr& a) { return make_function(f, {a}); }
expr fn2(fn f, const expr& a, const expr& b) { return make_function(f, {a, b}); }
expr agg1(agg_op op, const expr& a) {
  auto n = node_of(expr_kind::agg);
  n->agg = op;
  n->args = {a};
  return expr(n);
}
expr dynamic_lit(scalar v) {
  auto n = node_of(expr_kind::literal);
  n->value = std::move(v);
  n->dynamic = true;
  n->dtype = n->value.type();
  return expr(n);
}
}  // namespace

expr::expr(int v) : expr(dynamic_lit(scalar(type_id::int64, static_cast<int64_t>(v)))) {}
expr::expr(int64_t v) : expr(dynamic_lit(scalar(type_id::int64, v))) {}
expr::expr(double v) : expr(dynamic_lit(scalar(type_id::float64, v))) {}
expr expr::make_bool(bool v) { return lit(v); }

expr make_function(fn f, std::vector<expr> args) {
  auto n = node_of(expr_kind::function);
  n->func = f;
  n->args = std::move(args);
  return expr(n);
}

expr with_args(const expr& e, std::vector<expr> args) {
  auto n = std::make_shared<expr_node>(e.node());
  n->args = std::move(args);
  return expr(n);
}

expr col(std::string name) {
  auto n = node_of(expr_kind::column);
  n->name = std::move(name);
  return expr(n);
}
expr lit(scalar value) {
  auto n = node_of(expr_kind::literal);
  n->dtype = value.type();
  n->value = std::move(value);
  return expr(n);
}
expr lit(int64_t v) { return lit(scalar(type_id::int64, v)); }
expr lit(double v) { return lit(scalar(type_id::float64, v)); }
expr lit(bool v) { return lit(scalar(type_id::boolean, v)); }
expr lit(std::string v) { return lit(scalar(type_id::string, std::move(v))); }
expr lit(const char* v) { return lit(std::string(v)); }
expr lit_null(data_type type) { return lit(scalar::null(std::move(type))); }
expr lit_date(int y, int m, int d) {
  return lit(scalar(type_id::date32, temporal::days_from_civil(y, static_cast<unsigned>(m), static_cast<unsigned>(d))));
}
expr lit_duration(int64_t ticks, time_unit unit) { return lit(scalar(duration(unit), ticks)); }
expr lit_days(int64_t days) { return lit_duration(days * 86400000, time_unit::ms); }
expr len() {
  auto n = node_of(expr_kind::agg);
  n->agg = agg_op::len;
  return expr(n);
}
expr coalesce(std::vector<expr> exprs) {
  if (exprs.empty()) throw invalid_argument_error("coalesce needs at least one expression");
  return make_function(fn::coalesce, std::move(exprs));
}
expr concat_str(std::vector<expr> exprs, std::string separator) {
  if (exprs.empty()) throw invalid_argument_error("concat_str needs at least one expression");
  auto n = std::make_shared<expr_node>(make_function(fn::str_concat, std::move(exprs)).node());
  n->s0 = std::move(separator);
  return expr(n);
}

expr expr::alias(std::string name) const {
  auto n = node_of(expr_kind::alias);
  n->name = std::move(name);
  n->args = {*this};
  return expr(n);
}
expr expr::cast(data_type to, bool strict) const {
  auto n = node_of(expr_kind::cast);
  n->dtype = std::move(to);
  n->flag = strict;
  n->args = {*this};
  return expr(n);
}
expr expr::floor_div(const expr& o) const { return fn2(fn::floor_div, *this, o); }
expr expr::pow(const expr& o) const { return fn2(fn::pow, *this, o); }
expr expr::eq(const expr& o) const { return fn2(fn::eq, *this, o); }
expr expr::ne(const expr& o) const { return fn2(fn::ne, *this, o); }
expr expr::lt(const expr& o) const { return fn2(fn::lt, *this, o); }
expr expr::le(const expr& o) const { return fn2(fn::le, *this, o); }
expr expr::gt(const expr& o) const { return fn2(fn::gt, *this, o); }
expr expr::ge(const expr& o) const { return fn2(fn::ge, *this, o); }
expr expr::and_(const expr& o) const { return fn2(fn::and_, *this, o); }
expr expr::or_(const expr& o) const { return fn2(fn::or_, *this, o); }
expr expr::xor_(const expr& o) const { return fn2(fn::xor_, *this, o); }
expr expr::not_() const { return fn1(fn::not_, *this); }
expr expr::is_null() const { return fn1(fn::is_null, *this); }
expr expr::is_not_null() const { return fn1(fn::is_not_null, *this); }
expr expr::is_nan() const { return fn1(fn::is_nan, *this); }
expr expr::fill_null(const expr& v) const { return fn2(fn::fill_null, *this, v); }
expr expr::is_in(std::vector<scalar> values) const {
  auto n = std::make_shared<expr_node>(fn1(fn::is_in, *this).node());
  n->list = std::move(values);
  return expr(n);
}
expr expr::is_between(const expr& lo, const expr& hi, std::string closed) const {
  if (closed != "both" && closed != "left" && closed != "right" && closed != "none")
    throw invalid_argument_error("is_between: closed must be both, left, right or none; got \"" + closed + "\"");
  auto n = std::make_shared<expr_node>(make_function(fn::is_between, {*this, lo, hi}).node());
  n->s0 = std::move(closed);
  return expr(n);
}
expr expr::abs() const { return fn1(fn::abs, *this); }
expr expr::round(int decimals) const {
  auto n = std::make_shared<expr_node>(fn1(fn::round, *this).node());
  n->i0 = decimals;
  return expr(n);
}
expr expr::floor() const { return fn1(fn::floor, *this); }
expr expr::ceil() const { return fn1(fn::ceil, *this); }
expr expr::sqrt() const { return fn1(fn::sqrt, *this); }
expr expr::log(double base) const {
  auto n = std::make_shared<expr_node>(fn1(fn::log, *this).node());
  n->d0 = base;
  return expr(n);
}
expr expr::exp() const { return fn1(fn::exp, *this); }
expr expr::str_len_chars() const { return fn1(fn::str_len_chars, *this); }
expr expr::str_len_bytes() const { return fn1(fn::str_len_bytes, *this); }
expr expr::str_starts_with(const expr& p) const { return fn2(fn::str_starts_with, *this, p); }
expr expr::str_ends_with(const expr& s) const { return fn2(fn::str_ends_with, *this, s); }
expr expr::str_starts_with(const std::string& p) const { return str_starts_with(lit(p)); }
expr expr::str_ends_with(const std::string& s) const { return str_ends_with(lit(s)); }
expr expr::str_contains(const std::string& p, bool literal) const { return str_contains(lit(p), literal); }
expr expr::str_contains(const expr& p, bool literal) const {
  auto n = std::make_shared<expr_node>(fn2(fn::str_contains, *this, p).node());
  n->flag = literal;
  return expr(n);
}
expr expr::str_slice(int64_t offset, int64_t length) const {
  auto n = std::make_shared<expr_node>(fn1(fn::str_slice, *this).node());
  n->i0 = offset;
  n->i1 = length;
  return expr(n);
}
expr expr::str_to_upper() const { return fn1(fn::str_to_upper, *this); }
expr expr::str_to_lower() const { return fn1(fn::str_to_lower, *this); }
expr expr::str_to_title() const { return fn1(fn::str_to_title, *this); }
expr expr::str_strip(std::string chars) const {
  auto n = std::make_shared<expr_node>(fn1(fn::str_strip, *this).node());
  n->s0 = std::move(chars);
  return expr(n);
}
expr expr::dt_year() const { return fn1(fn::dt_year, *this); }
expr expr::dt_month() const { return fn1(fn::dt_month, *this); }
expr expr::dt_day() const { return fn1(fn::dt_day, *this); }
expr expr::dt_hour() const { return fn1(fn::dt_hour, *this); }
expr expr::dt_minute() const { return fn1(fn::dt_minute, *this); }
expr expr::dt_second() const { return fn1(fn::dt_second, *this); }
expr expr::dt_weekday() const { return fn1(fn::dt_weekday, *this); }
expr expr::dt_truncate(std::string every) const {
  auto n = std::make_shared<expr_node>(fn1(fn::dt_truncate, *this).node());
  n->s0 = std::move(every);
  return expr(n);
}
expr expr::dt_date() const { return fn1(fn::dt_date, *this); }
expr expr::dt_total_days() const { return fn1(fn::dt_total_days, *this); }
expr expr::dt_total_seconds() const { return fn1(fn::dt_total_seconds, *this); }
expr expr::dt_total_milliseconds() const { return fn1(fn::dt_total_milliseconds, *this); }

expr expr::sum() const { return agg1(agg_op::sum, *this); }
expr expr::mean() const { return agg1(agg_op::mean, *this); }
expr expr::min() const { return agg1(agg_op::min, *this); }
expr expr::max() const { return agg1(agg_op::max, *this); }
expr expr::count() const { return agg1(agg_op::count, *this); }
expr expr::n_unique() const { return agg1(agg_op::n_unique, *this); }
expr expr::first() const { return agg1(agg_op::first, *this); }
expr expr::last() const { return agg1(agg_op::last, *this); }
expr expr::std(int ddof) const {
  auto n = std::make_shared<expr_node>(agg1(agg_op::std, *this).node());
  n->i0 = ddof;
  return expr(n);
}
expr expr::var(int ddof) const {
  auto n = std::make_shared<expr_node>(agg1(agg_op::var, *this).node());
  n->i0 = ddof;
  return expr(n);
}
expr expr::median() const { return agg1(agg_op::median, *this); }
expr expr::quantile(double q, std::string interpolation) const {
  if (!(q >= 0 && q <= 1)) throw invalid_argument_error("quantile must be in [0, 1], got " + std::to_string(q));
  if (interpolation != "nearest" && interpolation != "linear" && interpolation != "lower" &&
      interpolation != "higher" && interpolation != "midpoint")
    throw invalid_argument_error("quantile interpolation must be nearest, linear, lower, higher or midpoint; got \"" +
                                 interpolation + "\"");
  auto n = std::make_shared<expr_node>(agg1(agg_op::quantile, *this).node());
  n->d0 = q;
  n->s0 = std::move(interpolation);
  return expr(n);
}
expr expr::any() const { return agg1(agg_op::any, *this); }
expr expr::all() const { return agg1(agg_op::all, *this); }

expr expr::over(std::vector<expr> keys) const {
  if (keys.empty()) throw invalid_argument_error("over() needs at least one partition key");
  auto n = node_of(expr_kind::window);
  n->args = {*this};
  n->partition_by = std::move(keys);
  return expr(n);
}
expr expr::over(const std::vector<std::string>& keys) const {
  std::vector<expr> k;
  for (auto& s : keys) k.push_back(col(s));
  return over(std::move(k));
}

expr expr::over(std::initializer_list<const char*> keys) const {
  return over(std::vector<std::string>(keys.begin(), keys.end()));
}

when_builder when(const expr& cond) { return when_builder({}, cond); }
then_builder when_builder::then(const expr& e) const {
  auto b = _branches;
  b.emplace_back(_cond, e);
  return then_builder(std::move(b));
}
when_builder then_builder::when(const expr& cond) const { return when_builder(_branches, cond); }
expr then_builder::otherwise(const expr& e) const {
  expr acc = e;
  for (auto it = _branches.rbegin(); it != _branches.rend(); ++it) {
    auto n = node_of(expr_kind::when);
    n->args = {it->first, it->second, acc};
    acc = expr(n);
  }
  return acc;
}
then_builder::operator expr() const {
  auto n = node_of(expr_kind::literal);
  n->dynamic = true;  // a null that takes the type of the branches
  n->value = scalar::null(type_id::int64);
  n->dtype = type_id::int64;
  return otherwise(expr(n));
}

expr operator+(const expr& a, const expr& b) { return fn2(fn::add, a, b); }
expr operator-(const expr& a, const expr& b) { return fn2(fn::sub, a, b); }
expr operator*(const expr& a, const expr& b) { return fn2(fn::mul, a, b); }
expr operator/(const expr& a, const expr& b) { return fn2(fn::div, a, b); }
expr operator%(const expr& a, const expr& b) { return fn2(fn::mod, a, b); }
expr operator-(const expr& a) { return fn1(fn::neg, a); }
expr operator==(const expr& a, const expr& b) { return a.eq(b); }
expr operator!=(const expr& a, const expr& b) { return a.ne(b); }
expr operator<(const expr& a, const expr& b) { return a.lt(b); }
expr operator<=(const expr& a, const expr& b) { return a.le(b); }
expr operator>(const expr& a, const expr& b) { return a.gt(b); }
expr operator>=(const expr& a, const expr& b) { return a.ge(b); }
expr operator&(const expr& a, const expr& b) { return a.and_(b); }
expr operator|(const expr& a, const expr& b) { return a.or_(b); }
expr operator^(const expr& a, const expr& b) { return a.xor_(b); }
expr operator!(const expr& a) { return a.not_(); }
expr operator~(const expr& a) { return a.not_(); }

const char* to_string(fn f) {
  switch (f) {
    case fn::add: return "add"; case fn::sub: return "sub"; case fn::mul: return "mul";
    case fn::div: return "truediv"; case fn::floor_div: return "floordiv"; case fn::mod: return "mod";
    case fn::pow: return "pow"; case fn::eq: return "eq"; case fn::ne: return "neq"; case fn::lt: return "lt";
    case fn::le: return "lt_eq"; case fn::gt: return "gt"; case fn::ge: return "gt_eq"; case fn::and_: return "and";
    case fn::or_: return "or"; case fn::xor_: return "xor"; case fn::not_: return "not";
    case fn::is_null: return "is_null"; case fn::is_not_null: return "is_not_null";
    case fn::fill_null: return "fill_null"; case fn::coalesce: return "coalesce"; case fn::is_nan: return "is_nan";
    case fn::is_in: return "is_in"; case fn::is_between: return "is_between"; case fn::neg: return "neg";
    case fn::abs: return "abs"; case fn::round: return "round"; case fn::floor: return "floor";
    case fn::ceil: return "ceil"; case fn::sqrt: return "sqrt"; case fn::log: return "log"; case fn::exp: return "exp";
    case fn::str_len_chars: return "str.len_chars"; case fn::str_len_bytes: return "str.len_bytes";
    case fn::str_starts_with: return "str.starts_with"; case fn::str_ends_with: return "str.ends_with";
    case fn::str_contains: return "str.contains"; case fn::str_slice: return "str.slice";
    case fn::str_to_upper: return "str.to_uppercase"; case fn::str_to_lower: return "str.to_lowercase";
    case fn::str_to_title: return "str.to_titlecase";
    case fn::str_strip: return "str.strip_chars"; case fn::str_concat: return "concat_str";
    case fn::dt_year: return "dt.year"; case fn::dt_month: return "dt.month"; case fn::dt_day: return "dt.day";
    case fn::dt_hour: return "dt.hour"; case fn::dt_minute: return "dt.minute"; case fn::dt_second: return "dt.second";
    case fn::dt_weekday: return "dt.weekday"; case fn::dt_truncate: return "dt.truncate"; case fn::dt_date: return "dt.date";
    case fn::dt_total_days: return "dt.total_days"; case fn::dt_total_seconds: return "dt.total_seconds";
    case fn::dt_total_milliseconds: return "dt.total_milliseconds";
  }
  return "?";
}

const char* to_string(agg_op a) {
  switch (a) {
    case agg_op::sum: return "sum"; case agg_op::mean: return "mean"; case agg_op::min: return "min";
    case agg_op::max: return "max"; case agg_op::count: return "count"; case agg_op::len: return "len";
    case agg_op::n_unique: return "n_unique"; case agg_op::first: return "first"; case agg_op::last: return "last";
    case agg_op::std: return "std"; case agg_op::var: return "var"; case agg_op::median: return "median";
    case agg_op::quantile: return "quantile"; case agg_op::any: return "any"; case agg_op::all: return "all";
  }
  return "?";
}

std::string output_name(const expr& e) {
  const auto& n = e.node();
  switch (n.kind) {
    case expr_kind::column:
    case expr_kind::alias: return n.name;
    case expr_kind::literal: return "literal";
    case expr_kind::agg:
      if (n.agg == agg_op::len) return "len";
      return output_name(n.args[0]);
    default:
      for (auto& a : n.args) {
        auto s = output_name(a);
        if (s != "literal") return s;
      }
      return n.args.empty() ? "literal" : output_name(n.args[0]);
  }
}

namespace {
void collect_columns(const expr& e, std::vector<std::string>& out) {
  const auto& n = e.node();
  if (n.kind == expr_kind::column) {
    for (auto& s : out)
      if (s == n.name) return;
    out.push_back(n.name);
    return;
  }
  for (auto& a : n.args) collect_columns(a, out);
  for (auto& a : n.partition_by) collect_columns(a, out);
}
}  // namespace

std::vector<std::string> referenced_columns(const expr& e) {
  std::vector<std::string> out;
  collect_columns(e, out);
  return out;
}

bool contains_agg(const expr& e) {
  const auto& n = e.node();
  if (n.kind == expr_kind::agg) return true;
  if (n.kind == expr_kind::window) return false;
  for (auto& a : n.args)
    if (contains_agg(a)) return true;
  return false;
}

bool contains_window(const expr& e) {
  const auto& n = e.node();
  if (n.kind == expr_kind::window) return true;
  for (auto& a : n.args)
    if (contains_window(a)) return true;
  return false;
}

std::string to_string(const expr& e) {
  const auto& n = e.node();
  auto list = [](const std::vector<expr>& v) {
    std::string s;
    for (auto& a : v) s += (s.empty() ? "" : ", ") + to_string(a);
    return s;
  };
  switch (n.kind) {
    case expr_kind::column: return "col(\"" + n.name + "\")";
    case expr_kind::literal:
      if (n.value.type().id == type_id::string && n.value.is_valid()) return "\"" + n.value.as_string() + "\"";
      return n.value.to_string();
    case expr_kind::alias: return to_string(n.args[0]) + ".alias(\"" + n.name + "\")";
    case expr_kind::cast: return to_string(n.args[0]) + ".cast(" + to_string(n.dtype) + ")";
    case expr_kind::when:
      return "when(" + to_string(n.args[0]) + ").then(" + to_string(n.args[1]) + ").otherwise(" +
             to_string(n.args[2]) + ")";
    case expr_kind::agg:
      if (n.agg == agg_op::len) return "len()";
      return to_string(n.args[0]) + "." + tug::to_string(n.agg) + "()";
    case expr_kind::window: return to_string(n.args[0]) + ".over([" + list(n.partition_by) + "])";
    case expr_kind::function: {
      const char* op = nullptr;
      switch (n.func) {
        case fn::add: op = " + "; break; case fn::sub: op = " - "; break; case fn::mul: op = " * "; break;
        case fn::div: op = " / "; break; case fn::floor_div: op = " // "; break; case fn::mod: op = " % "; break;
        case fn::eq: op = " == "; break; case fn::ne: op = " != "; break; case fn::lt: op = " < "; break;
        case fn::le: op = " <= "; break; case fn::gt: op = " > "; break; case fn::ge: op = " >= "; break;
        case fn::and_: op = " & "; break; case fn::or_: op = " | "; break; case fn::xor_: op = " ^ "; break;
        default: break;
      }
      if (op && n.args.size() == 2) return "[" + to_string(n.args[0]) + op + to_string(n.args[1]) + "]";
      if (n.func == fn::is_in) {
        std::string s;
        for (auto& v : n.list) s += (s.empty() ? "" : ", ") + v.to_string();
        return to_string(n.args[0]) + ".is_in([" + s + "])";
      }
      if (n.args.empty()) return std::string(tug::to_string(n.func)) + "()";
      std::string rest;
      for (size_t i = 1; i < n.args.size(); ++i) rest += (rest.empty() ? "" : ", ") + to_string(n.args[i]);
      if (n.func == fn::str_slice) rest = std::to_string(n.i0) + ", " + std::to_string(n.i1);
      if (n.func == fn::round) rest = std::to_string(n.i0);
      if (n.func == fn::dt_truncate || n.func == fn::str_strip) rest = "\"" + n.s0 + "\"";
      return to_string(n.args[0]) + "." + tug::to_string(n.func) + "(" + rest + ")";
    }
  }
  return "?";
}

bool equal(const expr& a, const expr& b) {
  if (a.ptr() == b.ptr()) return true;
  const auto& x = a.node();
  const auto& y = b.node();
  if (x.kind != y.kind || x.func != y.func || x.agg != y.agg || x.name != y.name || !(x.value == y.value) ||
      x.dynamic != y.dynamic || !(x.dtype == y.dtype) || x.i0 != y.i0 || x.i1 != y.i1 || x.d0 != y.d0 ||
      x.s0 != y.s0 || x.flag != y.flag || x.args.size() != y.args.size() ||
      x.partition_by.size() != y.partition_by.size() || !(x.list == y.list))
    return false;
  for (size_t i = 0; i < x.args.size(); ++i)
    if (!equal(x.args[i], y.args[i])) return false;
  for (size_t i = 0; i < x.partition_by.size(); ++i)
    if (!equal(x.partition_by[i], y.partition_by[i])) return false;
  return true;
}

}  // namespace tug
