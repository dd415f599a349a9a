// Constant folding: evaluates literal-only subexpressions once, at plan time, and simplifies boolean
// logic (Kleene three-valued, as Polars): x & true -> x, x & false -> false, x | true -> true,
// x | false -> x, not(not(x)) -> x. A filter that is always true disappears; one that is always false
// (or null) becomes an empty slice with the same schema.
#include "tug/core/error.hpp"
#include "tug/exec/cpu/evaluate.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/plan/optimizer.hpp"
#include "util.hpp"

namespace tug::passes {

namespace {

bool is_literal(const expr& e) { return e->kind == expr_kind::literal; }

// The value of a boolean (or null) literal: nullopt for null; `known` false when `e` is not one.
std::optional<bool> bool_literal(const expr& e, bool& known) {
  known = false;
  if (!is_literal(e)) return std::nullopt;
  if (e->value.is_null()) {
    known = true;
    return std::nullopt;
  }
  if (e->value.type().id != type_id::boolean) return std::nullopt;
  known = true;
  return e->value.as_bool();
}

expr bool_literal_expr(std::optional<bool> v) { return v ? lit(*v) : lit_null(type_id::boolean); }

bool may_drop(const expr& e) { return !contains_agg(e) && !contains_window(e); }

// Kleene and/or/not over literals, and the identities with one literal operand.
std::optional<expr> simplify_logic(const expr& e) {
  if (e->kind != expr_kind::function) return std::nullopt;
  if (e->func == fn::not_) {
    bool known = false;
    auto v = bool_literal(e->args[0], known);
    if (known) return bool_literal_expr(v ? std::optional<bool>(!*v) : std::nullopt);
    const expr& a = e->args[0];
    if (a->kind == expr_kind::function && a->func == fn::not_) return a->args[0];
    return std::nullopt;
  }
  if (e->func != fn::and_ && e->func != fn::or_) return std::nullopt;
  bool is_and = e->func == fn::and_;
  bool ka = false, kb = false;
  auto va = bool_literal(e->args[0], ka);
  auto vb = bool_literal(e->args[1], kb);
  if (ka && kb) {
    // and: false wins, then null; or: true wins, then null
    bool absorbing = !is_and;
    if ((va && *va == absorbing) || (vb && *vb == absorbing)) return lit(absorbing);
    if (!va || !vb) return lit_null(type_id::boolean);
    return lit(!absorbing);
  }
  if (!ka && !kb) return std::nullopt;
  const expr& other = ka ? e->args[1] : e->args[0];
  std::optional<bool> v = ka ? va : vb;
  if (!v) return std::nullopt;  // x & null, x | null depend on x
  if (*v == is_and) return other;  // identity: x & true, x | false
  if (may_drop(other)) return lit(*v);  // absorbing: x & false, x | true
  return std::nullopt;
}

// Evaluates a function/cast/when node whose arguments are all literals; nullopt when the evaluator
// cannot (not implemented yet, or a value error that must surface when the query runs).
std::optional<expr> evaluate_literal(const expr& e) {
  if (e->kind != expr_kind::function && e->kind != expr_kind::cast && e->kind != expr_kind::when) return std::nullopt;
  if (e->args.empty()) return std::nullopt;
  for (auto& a : e->args)
    if (!is_literal(a)) return std::nullopt;
  try {
    schema none;
    expr r = resolve(e, none);
    column c = cpu::evaluate(r, table::empty_with_rows(1), none);
    if (c.size() != 1 || !(c.type() == r->dtype)) return std::nullopt;
    return lit(get_scalar(c, 0));
  } catch (const not_implemented_error&) {
    return std::nullopt;
  } catch (const user_error&) {
    return std::nullopt;
  }
}

}  // namespace

namespace {

// `e` folded, its output name not kept (for predicates and sort keys).
expr fold_raw(const expr& e) {
  return opt::transform_up(e, [](const expr& x) {
    if (auto s = simplify_logic(x)) return *s;
    if (auto v = evaluate_literal(x)) return *v;
    return x;
  });
}

// `e` folded; a join key that was not a plain column stays one that is not (it decides the layout).
expr fold_join_key(const expr& e) {
  expr r = fold_expression(e);
  if (r->kind == expr_kind::column && e->kind != expr_kind::column) r = r.alias(output_name(e));
  return r;
}

}  // namespace

expr fold_expression(const expr& e) {
  expr r = fold_raw(e);
  if (r.ptr() != e.ptr() && output_name(r) != output_name(e)) r = r.alias(output_name(e));
  return r;
}

namespace {

struct folder {
  opt::plan_memo memo;

  static bool fold_all(std::vector<expr>& v, expr (*fold)(const expr&)) {
    bool changed = false;
    for (auto& e : v) {
      expr f = fold(e);
      changed |= f.ptr() != e.ptr();
      e = f;
    }
    return changed;
  }

  plan_ptr go(const plan_ptr& p) {
    return opt::memoized(memo, p, [&](const plan_ptr& n) { return fold_node(n); });
  }

  plan_ptr fold_node(const plan_ptr& p) {
    std::vector<plan_ptr> ins;
    bool changed = false;
    for (auto& i : p->inputs) {
      ins.push_back(go(i));
      changed |= ins.back() != i;
    }
    plan_node c = *p;
    bool named = c.kind == plan_kind::select || c.kind == plan_kind::with_columns || c.kind == plan_kind::group_by;
    bool join = c.kind == plan_kind::join;
    changed |= fold_all(c.exprs, named ? &fold_expression : &fold_raw);
    changed |= fold_all(c.keys, join ? &fold_join_key : named ? &fold_expression : &fold_raw);
    changed |= fold_all(c.right_keys, &fold_join_key);
    if (c.kind == plan_kind::scan) {
      std::vector<expr> kept;
      for (auto& e : c.predicates) {
        expr f = fold_raw(e);
        bool known = false;
        auto v = bool_literal(f, known);
        if (known && v && *v) {
          changed = true;  // always true: nothing to filter
          continue;
        }
        changed |= f.ptr() != e.ptr();
        kept.push_back(f);
      }
      c.predicates = std::move(kept);
      return changed ? std::make_shared<plan_node>(std::move(c)) : p;
    }
    if (c.kind == plan_kind::filter) {
      bool known = false;
      auto v = bool_literal(c.exprs[0], known);
      if (known && v && *v) return ins[0];
      if (known) return plan::slice(ins[0], 0, 0);  // false or null keeps no row
    }
    return changed ? plan::with_inputs(c, std::move(ins)) : p;
  }
};

}  // namespace

plan_ptr constant_folding(const plan_ptr& p) { return folder{}.go(p); }

}  // namespace tug::passes
