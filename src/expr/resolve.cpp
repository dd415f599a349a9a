#include "tug/expr/resolve.hpp"

#include <algorithm>

namespace tug {

namespace {

int int_width(type_id id) { return size_of(id); }

type_id signed_of_width(int w) {
  switch (w) {
    case 1: return type_id::int8;
    case 2: return type_id::int16;
    case 4: return type_id::int32;
    default: return type_id::int64;
  }
}
type_id unsigned_of_width(int w) {
  switch (w) {
    case 1: return type_id::uint8;
    case 2: return type_id::uint16;
    case 4: return type_id::uint32;
    default: return type_id::uint64;
  }
}

time_unit finer(time_unit a, time_unit b) { return ticks_per_second(a) >= ticks_per_second(b) ? a : b; }

[[noreturn]] void no_common(const data_type& a, const data_type& b, const char* what) {
  throw type_error(std::string("cannot apply ") + what + " to " + to_string(a) + " and " + to_string(b));
}

}  // namespace

data_type common_type(const data_type& a, const data_type& b, const char* what) {
  if (a == b) return a;
  type_id x = a.id, y = b.id;
  if (x == type_id::boolean && is_numeric(y)) return b;
  if (y == type_id::boolean && is_numeric(x)) return a;
  if (is_integer(x) && is_integer(y)) {
    bool sx = is_signed_integer(x), sy = is_signed_integer(y);
    int wx = int_width(x), wy = int_width(y);
    if (sx == sy) return sx ? signed_of_width(std::max(wx, wy)) : unsigned_of_width(std::max(wx, wy));
    int ws = sx ? wx : wy, wu = sx ? wy : wx;
    if (ws > wu) return signed_of_width(ws);
    if (wu < 8) return signed_of_width(wu * 2);
    return type_id::float64;  // no integer type holds both u64 and a signed type
  }
  if ((is_integer(x) && is_floating(y)) || (is_floating(x) && is_integer(y))) {
    type_id f = is_floating(x) ? x : y, i = is_floating(x) ? y : x;
    if (f == type_id::float32 && int_width(i) <= 2) return type_id::float32;
    return type_id::float64;
  }
  if (is_floating(x) && is_floating(y)) return type_id::float64;
  if (x == type_id::decimal128 && y == type_id::decimal128) return decimal(38, std::max(a.scale, b.scale));
  if (x == type_id::decimal128 && is_integer(y)) return decimal(38, a.scale);
  if (y == type_id::decimal128 && is_integer(x)) return decimal(38, b.scale);
  if ((x == type_id::decimal128 && is_floating(y)) || (y == type_id::decimal128 && is_floating(x)))
    return type_id::float64;
  if (x == type_id::timestamp && y == type_id::timestamp) return timestamp(finer(a.unit, b.unit), a.tz);
  if (x == type_id::date32 && y == type_id::timestamp) return b;
  if (y == type_id::date32 && x == type_id::timestamp) return a;
  if (x == type_id::duration && y == type_id::duration) return duration(finer(a.unit, b.unit));
  no_common(a, b, what);
}

data_type agg_result_type(agg_op op, const data_type& t) {
  auto need = [&](bool ok) {
    if (!ok) throw type_error(std::string("cannot compute ") + to_string(op) + " of a " + to_string(t) + " column");
  };
  switch (op) {
    case agg_op::count:
    case agg_op::len:
    case agg_op::n_unique: return type_id::int64;
    case agg_op::min:
    case agg_op::max:
    case agg_op::first:
    case agg_op::last: return t;
    case agg_op::sum:
      need(is_numeric(t.id) || t.id == type_id::boolean || t.id == type_id::duration);
      if (is_signed_integer(t.id) || t.id == type_id::boolean) return type_id::int64;
      if (is_unsigned_integer(t.id)) return type_id::uint64;
      if (is_floating(t.id)) return type_id::float64;
      if (t.id == type_id::duration) return t;
      return decimal(38, t.scale);
    case agg_op::mean:
    case agg_op::std:
    case agg_op::var:
    case agg_op::median:
    case agg_op::quantile:
      need(is_numeric(t.id) || t.id == type_id::boolean);
      return type_id::float64;
    case agg_op::any:
    case agg_op::all:
      need(t.id == type_id::boolean);
      return type_id::boolean;
  }
  return t;
}

namespace {

std::shared_ptr<expr_node> copy_node(const expr& e) { return std::make_shared<expr_node>(e.node()); }

expr cast_to(const expr& e, const data_type& t) {
  if (e->dtype == t) return e;
  if (e->kind == expr_kind::literal) {
    // fold typed literal casts: keep a literal node so backends see a scalar
    auto n = copy_node(e);
    n->dynamic = false;
    n->dtype = t;
    if (e->value.is_null()) {
      n->value = scalar::null(t);
      return expr(n);
    }
  }
  auto n = std::make_shared<expr_node>();
  n->kind = expr_kind::cast;
  n->dtype = t;
  n->flag = false;
  n->args = {e};
  return expr(n);
}

bool is_dynamic(const expr& e) { return e->kind == expr_kind::literal && e->dynamic; }

// Type of a dynamic literal next to an operand of type `other`.
data_type adapt_dynamic(const expr& lit, const data_type& other) {
  const scalar& v = lit->value;
  if (v.is_null()) return other;
  type_id t = v.type().id;
  if (t == type_id::int64 && (is_numeric(other.id))) return other;
  if (t == type_id::float64 && is_floating(other.id)) return other;
  return v.type();
}

struct resolver {
  const schema& in;

  expr finish(std::shared_ptr<expr_node> n, data_type t) {
    n->dtype = std::move(t);
    return expr(n);
  }

  // Resolves both operands and, where `unify`, casts them to their common type.
  std::pair<expr, expr> operands(const expr& a0, const expr& b0, const char* what, bool unify = true) {
    expr a = go(a0), b = go(b0);
    if (is_dynamic(a) && !is_dynamic(b)) a = retype_literal(a, adapt_dynamic(a, b->dtype));
    if (is_dynamic(b) && !is_dynamic(a)) b = retype_literal(b, adapt_dynamic(b, a->dtype));
    if (!unify) return {a, b};
    data_type t = common_type(a->dtype, b->dtype, what);
    return {cast_to(a, t), cast_to(b, t)};
  }

  expr retype_literal(const expr& e, const data_type& t) {
    if (e->dtype == t) {
      auto n = copy_node(e);
      n->dynamic = false;
      return expr(n);
    }
    return cast_to(e, t);
  }

  expr go(const expr& e) {
    const auto& n = e.node();
    switch (n.kind) {
      case expr_kind::column: {
        auto c = copy_node(e);
        return finish(c, in.type_of(n.name));
      }
      case expr_kind::literal: {
        auto c = copy_node(e);
        return finish(c, n.value.type());
      }
      case expr_kind::alias: {
        auto c = copy_node(e);
        c->args = {go(n.args[0])};
        return finish(c, c->args[0]->dtype);
      }
      case expr_kind::cast: {
        auto c = copy_node(e);
        c->args = {go(n.args[0])};
        check_cast(c->args[0]->dtype, n.dtype);
        return finish(c, n.dtype);
      }
      case expr_kind::when: {
        auto c = copy_node(e);
        expr cond = go(n.args[0]);
        if (cond->dtype.id != type_id::boolean)
          throw type_error("when() condition must be boolean, got " + to_string(cond->dtype) + " in " + to_string(e));
        auto [t, o] = operands(n.args[1], n.args[2], "when/then/otherwise");
        c->args = {cond, t, o};
        return finish(c, t->dtype);
      }
      case expr_kind::agg: {
        auto c = copy_node(e);
        if (n.agg == agg_op::len) return finish(c, type_id::int64);
        expr a = go(n.args[0]);
        if (contains_agg(a))
          throw type_error("nested aggregation is not supported: " + to_string(e));
        c->args = {a};
        return finish(c, agg_result_type(n.agg, a->dtype));
      }
      case expr_kind::window: {
        auto c = copy_node(e);
        expr a = go(n.args[0]);
        if (contains_window(a)) throw type_error("nested over() is not supported: " + to_string(e));
        c->args = {a};
        c->partition_by.clear();
        for (auto& k : n.partition_by) {
          expr rk = go(k);
          if (contains_agg(rk) || contains_window(rk))
            throw type_error("over() keys must not aggregate: " + to_string(k));
          c->partition_by.push_back(rk);
        }
        return finish(c, a->dtype);
      }
      case expr_kind::function: return function(e);
    }
    throw internal_error("resolve: bad expression kind");
  }

  void check_cast(const data_type& from, const data_type& to) {
    auto ok = [&] {
      if (from == to) return true;
      if (to.id == type_id::string || from.id == type_id::string) return true;
      bool fnum = is_numeric(from.id) || from.id == type_id::boolean;
      bool tnum = is_numeric(to.id) || to.id == type_id::boolean;
      if (fnum && tnum) return true;
      if (is_temporal(from.id) && is_temporal(to.id)) return true;
      if ((is_temporal(from.id) || from.id == type_id::duration) && is_integer(to.id)) return true;
      if (is_integer(from.id) && (is_temporal(to.id) || to.id == type_id::duration)) return true;
      if (from.id == type_id::duration && to.id == type_id::duration) return true;
      return false;
    }();
    if (!ok) throw type_error("cannot cast " + to_string(from) + " to " + to_string(to));
  }

  expr function(const expr& e) {
    const auto& n = e.node();
    auto c = copy_node(e);
    const char* name = to_string(n.func);
    auto need = [&](bool cond, const data_type& t) {
      if (!cond) throw type_error(std::string(name) + " is not supported for type " + to_string(t) + " in " + to_string(e));
    };
    auto unary = [&]() -> expr {
      if (n.args.size() != 1) throw invalid_argument_error(std::string(name) + " takes one argument");
      c->args = {go(n.args[0])};
      return c->args[0];
    };
    switch (n.func) {
      case fn::add:
      case fn::sub: {
        expr a = go(n.args[0]), b = go(n.args[1]);
        if (is_dynamic(a) && !is_dynamic(b)) a = retype_literal(a, adapt_dynamic(a, b->dtype));
        if (is_dynamic(b) && !is_dynamic(a)) b = retype_literal(b, adapt_dynamic(b, a->dtype));
        type_id x = a->dtype.id, y = b->dtype.id;
        // temporal arithmetic
        if (n.func == fn::sub && is_temporal(x) && is_temporal(y)) {
          data_type t = common_type(a->dtype, b->dtype, name);
          c->args = {cast_to(a, t), cast_to(b, t)};
          return finish(c, duration(t.id == type_id::date32 ? time_unit::ms : t.unit));
        }
        if (is_temporal(x) && y == type_id::duration) {
          c->args = {a, b};
          return finish(c, a->dtype);
        }
        if (n.func == fn::add && x == type_id::duration && is_temporal(y)) {
          c->args = {b, a};  // normalize to temporal + duration
          return finish(c, b->dtype);
        }
        need(x != type_id::string && y != type_id::string && !is_temporal(x) && !is_temporal(y), a->dtype);
        data_type t = common_type(a->dtype, b->dtype, name);
        if (t.id == type_id::boolean) t = type_id::int64;
        c->args = {cast_to(a, t), cast_to(b, t)};
        return finish(c, t);
      }
      case fn::mul: {
        auto [a, b] = operands(n.args[0], n.args[1], name, false);
        if (a->dtype.id == type_id::duration && is_integer(b->dtype.id)) {
          c->args = {a, cast_to(b, type_id::int64)};
          return finish(c, a->dtype);
        }
        need(is_numeric(a->dtype.id) || a->dtype.id == type_id::boolean, a->dtype);
        need(is_numeric(b->dtype.id) || b->dtype.id == type_id::boolean, b->dtype);
        if (a->dtype.id == type_id::decimal128 && b->dtype.id == type_id::decimal128) {
          c->args = {a, b};
          return finish(c, decimal(38, std::min(38, a->dtype.scale + b->dtype.scale)));
        }
        data_type t = common_type(a->dtype, b->dtype, name);
        if (t.id == type_id::boolean) t = type_id::int64;
        if (t.id == type_id::decimal128) {
          // decimal * integer keeps the decimal's scale
          c->args = {cast_to(a, a->dtype.id == type_id::decimal128 ? a->dtype : decimal(38, 0)),
                     cast_to(b, b->dtype.id == type_id::decimal128 ? b->dtype : decimal(38, 0))};
          return finish(c, t);
        }
        c->args = {cast_to(a, t), cast_to(b, t)};
        return finish(c, t);
      }
      case fn::div: {
        auto [a, b] = operands(n.args[0], n.args[1], name, false);
        need(is_numeric(a->dtype.id) || a->dtype.id == type_id::boolean, a->dtype);
        need(is_numeric(b->dtype.id) || b->dtype.id == type_id::boolean, b->dtype);
        data_type t = (a->dtype.id == type_id::float32 && b->dtype.id == type_id::float32) ? data_type(type_id::float32)
                                                                                           : data_type(type_id::float64);
        c->args = {cast_to(a, t), cast_to(b, t)};
        return finish(c, t);
      }
      case fn::floor_div:
      case fn::mod: {
        auto [a, b] = operands(n.args[0], n.args[1], name);
        need(is_integer(a->dtype.id) || is_floating(a->dtype.id), a->dtype);
        c->args = {a, b};
        return finish(c, a->dtype);
      }
      case fn::pow: {
        auto [a, b] = operands(n.args[0], n.args[1], name, false);
        need(is_numeric(a->dtype.id), a->dtype);
        need(is_numeric(b->dtype.id), b->dtype);
        data_type t = (is_integer(a->dtype.id) && is_integer(b->dtype.id)) ? data_type(type_id::int64)
                                                                           : data_type(type_id::float64);
        c->args = {cast_to(a, t), cast_to(b, t)};
        return finish(c, t);
      }
      case fn::eq: case fn::ne: case fn::lt: case fn::le: case fn::gt: case fn::ge: {
        auto [a, b] = operands(n.args[0], n.args[1], name);
        c->args = {a, b};
        return finish(c, type_id::boolean);
      }
      case fn::and_: case fn::or_: case fn::xor_: {
        expr a = go(n.args[0]), b = go(n.args[1]);
        if (a->kind == expr_kind::literal && a->value.is_null()) a = cast_to(a, type_id::boolean);
        if (b->kind == expr_kind::literal && b->value.is_null()) b = cast_to(b, type_id::boolean);
        need(a->dtype.id == type_id::boolean, a->dtype);
        need(b->dtype.id == type_id::boolean, b->dtype);
        c->args = {a, b};
        return finish(c, type_id::boolean);
      }
      case fn::not_: {
        expr a = unary();
        need(a->dtype.id == type_id::boolean, a->dtype);
        return finish(c, type_id::boolean);
      }
      case fn::is_null:
      case fn::is_not_null: unary(); return finish(c, type_id::boolean);
      case fn::is_nan: {
        expr a = unary();
        need(is_floating(a->dtype.id), a->dtype);
        return finish(c, type_id::boolean);
      }
      case fn::fill_null: {
        auto [a, b] = operands(n.args[0], n.args[1], name);
        c->args = {a, b};
        return finish(c, a->dtype);
      }
      case fn::coalesce: {
        std::vector<expr> args;
        for (auto& a : n.args) args.push_back(go(a));
        data_type t;
        bool have = false;
        for (auto& a : args)
          if (!is_dynamic(a)) { t = have ? common_type(t, a->dtype, name) : a->dtype; have = true; }
        if (!have) t = args[0]->dtype;
        for (auto& a : args) a = is_dynamic(a) ? retype_literal(a, adapt_dynamic(a, t)) : a;
        for (auto& a : args) {
          if (!have) break;
          a = cast_to(a, common_type(t, a->dtype, name));
        }
        c->args = args;
        return finish(c, t);
      }
      case fn::is_in: {
        expr a = unary();
        for (auto& v : n.list) {
          if (v.is_null()) continue;
          common_type(a->dtype, v.type().id == type_id::int64 && is_numeric(a->dtype.id) ? a->dtype : v.type(), name);
        }
        return finish(c, type_id::boolean);
      }
      case fn::is_between: {
        expr x = go(n.args[0]);
        auto [x1, lo] = operands(x, n.args[1], name);
        auto [x2, hi] = operands(x, n.args[2], name);
        data_type t = common_type(x1->dtype, x2->dtype, name);
        c->args = {cast_to(x, t), cast_to(lo, t), cast_to(hi, t)};
        return finish(c, type_id::boolean);
      }
      case fn::neg:
      case fn::abs: {
        expr a = unary();
        need(is_numeric(a->dtype.id) || a->dtype.id == type_id::duration, a->dtype);
        return finish(c, a->dtype);
      }
      case fn::round:
      case fn::floor:
      case fn::ceil: {
        expr a = unary();
        need(is_numeric(a->dtype.id), a->dtype);
        const data_type& t = a->dtype;
        // as Polars: rounding a decimal away some of its fraction digits may carry into one more digit
        // (99.99 -> 100.00), so the precision grows by one, up to 38
        int64_t keep = n.func == fn::round ? std::max<int64_t>(n.i0, 0) : 0;
        if (t.id == type_id::decimal128 && keep < t.scale)
          return finish(c, decimal(std::min(t.precision + 1, 38), t.scale));
        return finish(c, t);
      }
      case fn::sqrt:
      case fn::log:
      case fn::exp: {
        expr a = unary();
        need(is_numeric(a->dtype.id), a->dtype);
        data_type t = a->dtype.id == type_id::float32 ? data_type(type_id::float32) : data_type(type_id::float64);
        c->args = {cast_to(a, t)};
        return finish(c, t);
      }
      case fn::str_len_chars:
      case fn::str_len_bytes: {
        expr a = unary();
        need(a->dtype.id == type_id::string, a->dtype);
        return finish(c, type_id::int64);
      }
      case fn::str_starts_with:
      case fn::str_ends_with:
      case fn::str_contains: {
        expr a = go(n.args[0]), b = go(n.args[1]);
        need(a->dtype.id == type_id::string, a->dtype);
        need(b->dtype.id == type_id::string, b->dtype);
        c->args = {a, b};
        return finish(c, type_id::boolean);
      }
      case fn::str_slice:
      case fn::str_to_upper:
      case fn::str_to_lower:
      case fn::str_to_title:
      case fn::str_strip: {
        expr a = unary();
        need(a->dtype.id == type_id::string, a->dtype);
        return finish(c, type_id::string);
      }
      case fn::str_concat: {
        std::vector<expr> args;
        for (auto& a : n.args) {
          expr r = go(a);
          args.push_back(r->dtype.id == type_id::string ? r : cast_to(r, type_id::string));
        }
        c->args = args;
        return finish(c, type_id::string);
      }
      case fn::dt_year: case fn::dt_month: case fn::dt_day: case fn::dt_weekday: {
        expr a = unary();
        need(is_temporal(a->dtype.id), a->dtype);
        return finish(c, type_id::int32);
      }
      case fn::dt_hour: case fn::dt_minute: case fn::dt_second: {
        expr a = unary();
        need(a->dtype.id == type_id::timestamp, a->dtype);
        return finish(c, type_id::int32);
      }
      case fn::dt_truncate: {
        expr a = unary();
        need(is_temporal(a->dtype.id), a->dtype);
        return finish(c, a->dtype);
      }
      case fn::dt_date: {
        expr a = unary();
        need(is_temporal(a->dtype.id), a->dtype);
        return finish(c, type_id::date32);
      }
      case fn::dt_total_days: case fn::dt_total_seconds: case fn::dt_total_milliseconds: {
        expr a = unary();
        need(a->dtype.id == type_id::duration, a->dtype);
        return finish(c, type_id::int64);
      }
    }
    throw internal_error("resolve: unhandled function");
  }
};

}  // namespace

expr resolve(const expr& e, const schema& input) {
  resolver r{input};
  expr out = r.go(e);
  if (out->kind == expr_kind::literal && out->dynamic) {
    auto n = std::make_shared<expr_node>(out.node());
    n->dynamic = false;
    out = expr(n);
  }
  return out;
}

data_type infer_type(const expr& e, const schema& input) { return resolve(e, input)->dtype; }

fn mirrored(fn f) {
  switch (f) {
    case fn::lt: return fn::gt;
    case fn::le: return fn::ge;
    case fn::gt: return fn::lt;
    case fn::ge: return fn::le;
    default: return f;
  }
}

}  // namespace tug
