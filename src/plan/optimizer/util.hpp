#pragma once
// Helpers shared by the optimizer passes (internal to src/plan/optimizer).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tug/plan/logical.hpp"

namespace tug::opt {

/// Rebuilds `e` bottom-up: children first, then `f` on the node with rebuilt children.
template <typename F>
expr transform_up(const expr& e, F&& f) {
  const auto& n = e.node();
  expr cur = e;
  if (!n.args.empty() || !n.partition_by.empty()) {
    bool changed = false;
    auto c = std::make_shared<expr_node>(n);
    for (auto& a : c->args) {
      expr r = transform_up(a, f);
      changed |= r.ptr() != a.ptr();
      a = r;
    }
    for (auto& a : c->partition_by) {
      expr r = transform_up(a, f);
      changed |= r.ptr() != a.ptr();
      a = r;
    }
    if (changed) cur = expr(c);
  }
  return f(cur);
}

/// Replaces every column reference named in `mapping` by its expression.
inline expr substitute_columns(const expr& e, const std::map<std::string, expr>& mapping) {
  return transform_up(e, [&](const expr& x) {
    if (x->kind != expr_kind::column) return x;
    auto it = mapping.find(x->name);
    return it == mapping.end() ? x : it->second;
  });
}

/// The operands of a chain of `f` (with fn::and_: `a & b & c` -> {a, b, c}).
inline void split_by(const expr& e, fn f, std::vector<expr>& out) {
  if (e->kind == expr_kind::function && e->func == f) {
    split_by(e->args[0], f, out);
    split_by(e->args[1], f, out);
    return;
  }
  out.push_back(e);
}

/// The conjuncts of a predicate (`a & b & c` -> {a, b, c}).
inline void split_conjunction(const expr& e, std::vector<expr>& out) { split_by(e, fn::and_, out); }

/// `a & b & ...` of a non-empty list.
inline expr conjunction(const std::vector<expr>& v) {
  expr r = v[0];
  for (size_t i = 1; i < v.size(); ++i)
    r = r & v[i];
  return r;
}

/// Wraps `p` in a filter of the conjunction of `preds` (none: `p` itself).
inline plan_ptr filter_all(plan_ptr p, const std::vector<expr>& preds) {
  return preds.empty() ? p : plan::filter(std::move(p), conjunction(preds));
}

/// True when any of `v` contains a window or an aggregation.
inline bool any_window_or_agg(const std::vector<expr>& v) {
  for (auto& e : v)
    if (contains_window(e) || contains_agg(e)) return true;
  return false;
}

/// `e` with aliases stripped, when what remains is a plain column reference; else nullopt.
inline std::optional<std::string> plain_column(const expr& e) {
  const expr* x = &e;
  while ((*x)->kind == expr_kind::alias)
    x = &(*x)->args[0];
  if ((*x)->kind == expr_kind::column) return (*x)->name;
  return std::nullopt;
}

/// Plan nodes already rewritten by a pass, by node: shared subplans are rewritten once.
using plan_memo = std::map<const plan_node*, plan_ptr>;

/// `f(p)`, computed on the first visit of `p` and remembered in `memo` for the later ones.
template <typename F>
plan_ptr memoized(plan_memo& memo, const plan_ptr& p, F&& f) {
  auto it = memo.find(p.get());
  if (it != memo.end()) return it->second;
  plan_ptr r = f(p);
  memo.emplace(p.get(), r);
  return r;
}

/// Number of parents of each node reachable from `p` (the root counts 1).
inline void count_uses(const plan_ptr& p, std::map<const plan_node*, int>& uses) {
  if (uses[p.get()]++ > 0) return;
  for (auto& i : p->inputs)
    count_uses(i, uses);
}

/// Where an output column of a join comes from.
struct join_origin {
  int side = 0;      ///< 0 = left input, 1 = right input
  std::string name;  ///< name in that input
};

/// Output column name -> origin, following the layout of plan::join (keys coalesced, suffixes).
std::map<std::string, join_origin> join_origins(const plan_node& j);

}  // namespace tug::opt
