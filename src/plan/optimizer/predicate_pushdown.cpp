// Predicate pushdown: splits filters into conjuncts and moves each as close to the data as it can go
// without changing results: through row-wise projections (renaming columns), sorts, unions, the
// non-null-producing sides of joins, group_by keys and unique subsets, into scan predicates.
// Stops at slices, row indices, user kernels, windows, aggregations, top-k sorts and subplans used more than once
// (so that they stay shared).
#include <optional>

#include "tug/plan/optimizer.hpp"
#include "util.hpp"

namespace tug::passes {

namespace {

using column_map = std::map<std::string, expr>;

// True when every column of `e` is in `m`.
bool covered(const expr& e, const column_map& m) {
  for (auto& c : referenced_columns(e))
    if (!m.count(c)) return false;
  return true;
}

struct pusher {
  std::map<const plan_node*, int> uses;
  opt::plan_memo memo;  // results with nothing to push

  plan_ptr go(const plan_ptr& p, std::vector<expr> preds) {
    if (preds.empty()) return opt::memoized(memo, p, [&](const plan_ptr& n) { return node(n, {}); });
    if (uses[p.get()] > 1) return opt::filter_all(go(p, {}), preds);
    return node(p, std::move(preds));
  }

  // `p` with each input optimized on its own (nothing pushed into it).
  plan_ptr rebuild(const plan_ptr& p, std::vector<plan_ptr> ins) {
    bool same = true;
    for (size_t i = 0; i < ins.size(); ++i)
      same &= ins[i] == p->inputs[i];
    return same ? p : plan::with_inputs(*p, std::move(ins));
  }

  plan_ptr barrier(const plan_ptr& p, const std::vector<expr>& preds) {
    std::vector<plan_ptr> ins;
    for (auto& i : p->inputs)
      ins.push_back(go(i, {}));
    return opt::filter_all(rebuild(p, std::move(ins)), preds);
  }

  // Pushes the predicates covered by `m` (rewritten through it) into the single input of `p`.
  plan_ptr through(const plan_ptr& p, const std::vector<expr>& preds, const column_map& m) {
    std::vector<expr> down, keep;
    for (auto& e : preds) {
      if (covered(e, m))
        down.push_back(opt::substitute_columns(e, m));
      else
        keep.push_back(e);
    }
    return opt::filter_all(rebuild(p, {go(p->inputs[0], std::move(down))}), keep);
  }

  static column_map identity(const std::vector<std::string>& names) {
    column_map m;
    for (auto& n : names)
      m.emplace(n, col(n));
    return m;
  }

  // Output columns of `exprs` that are (renamed) input columns.
  static void add_plain(const std::vector<expr>& exprs, column_map& m) {
    for (auto& e : exprs) {
      if (auto c = opt::plain_column(e))
        m[output_name(e)] = col(*c);
      else
        m.erase(output_name(e));
    }
  }

  plan_ptr node(const plan_ptr& p, std::vector<expr> preds) {
    const plan_node& n = *p;
    switch (n.kind) {
      case plan_kind::scan: {
        if (preds.empty()) return p;
        auto c = std::make_shared<plan_node>(n);
        for (auto& e : preds)
          c->predicates.push_back(e);
        return c;
      }
      case plan_kind::filter: {
        std::vector<expr> mine;
        opt::split_conjunction(n.exprs[0], mine);
        for (auto& e : mine)
          if (contains_window(e)) return barrier(p, preds);  // a window sees the rows below it
        mine.insert(mine.end(), preds.begin(), preds.end());
        return go(n.inputs[0], std::move(mine));
      }
      case plan_kind::select: {
        if (opt::any_window_or_agg(n.exprs)) return barrier(p, preds);
        column_map m;
        add_plain(n.exprs, m);
        return through(p, preds, m);
      }
      case plan_kind::with_columns: {
        if (opt::any_window_or_agg(n.exprs)) return barrier(p, preds);
        column_map m = identity(n.inputs[0]->schema.names());
        add_plain(n.exprs, m);
        return through(p, preds, m);
      }
      case plan_kind::sort:
        if (n.length >= 0) return barrier(p, preds);
        return through(p, preds, identity(n.schema.names()));
      case plan_kind::unique:
        return through(p, preds, identity(n.names.empty() ? n.schema.names() : n.names));
      case plan_kind::group_by: {
        column_map m;
        add_plain(n.keys, m);
        return through(p, preds, m);
      }
      case plan_kind::concat: {
        std::vector<plan_ptr> ins;
        for (auto& i : n.inputs)
          ins.push_back(go(i, preds));
        return rebuild(p, std::move(ins));
      }
      case plan_kind::join:
        return join(p, preds);
      case plan_kind::slice:
      case plan_kind::with_row_index:
      case plan_kind::take:
      case plan_kind::map_partitions:  // a kernel sees whole partitions
        return barrier(p, preds);
    }
    throw internal_error("predicate_pushdown: bad plan kind");
  }

  /// A disjunction over both sides of a join, `(a1 & b1) | (a2 & b2) | ...`, implies on one side the
  /// disjunction of each branch's conjuncts over that side alone, `a1 | a2 | ...` (in that side's
  /// names), when every branch has some: pushed down as well, while the whole predicate stays above
  /// (PDS-H Q19). Nothing when `e` is no disjunction or a branch says nothing about the side.
  static std::optional<expr> implied_on_side(const expr& e, const std::map<std::string, opt::join_origin>& origins,
                                             int side) {
    std::vector<expr> branches;
    opt::split_by(e, fn::or_, branches);
    if (branches.size() < 2) return std::nullopt;
    std::optional<expr> out;
    for (auto& b : branches) {
      std::vector<expr> conj, mine;
      opt::split_conjunction(b, conj);
      for (auto& c : conj) {
        auto cols = referenced_columns(c);
        bool only = !cols.empty();
        for (auto& name : cols)
          only = only && origins.at(name).side == side;
        if (only) mine.push_back(c);
      }
      if (mine.empty()) return std::nullopt;
      expr d = opt::conjunction(mine);
      out = out ? (*out | d) : d;
    }
    column_map m;
    for (auto& c : referenced_columns(*out))
      m.emplace(c, col(origins.at(c).name));
    return opt::substitute_columns(*out, m);
  }

  plan_ptr join(const plan_ptr& p, const std::vector<expr>& preds) {
    const plan_node& n = *p;
    auto origins = opt::join_origins(n);
    bool left_ok = n.how == join_type::inner || n.how == join_type::left || n.how == join_type::semi ||
                   n.how == join_type::anti || n.how == join_type::cross;
    bool right_ok = n.how == join_type::inner || n.how == join_type::right || n.how == join_type::cross;
    std::vector<expr> side_preds[2], keep;
    for (auto& e : preds) {
      column_map m[2];
      for (auto& c : referenced_columns(e)) {
        const opt::join_origin& o = origins.at(c);
        m[o.side].emplace(c, col(o.name));
      }
      if (left_ok && m[1].empty())
        side_preds[0].push_back(opt::substitute_columns(e, m[0]));
      else if (right_ok && m[0].empty())
        side_preds[1].push_back(opt::substitute_columns(e, m[1]));
      else {
        keep.push_back(e);
        for (int s = 0; s < 2; ++s)
          if (s == 0 ? left_ok : right_ok)
            if (auto d = implied_on_side(e, origins, s)) side_preds[s].push_back(*d);
      }
    }
    plan_ptr l = go(n.inputs[0], std::move(side_preds[0]));
    plan_ptr r = go(n.inputs[1], std::move(side_preds[1]));
    return opt::filter_all(rebuild(p, {l, r}), keep);
  }
};

}  // namespace

plan_ptr predicate_pushdown(const plan_ptr& p) {
  pusher w;
  opt::count_uses(p, w.uses);
  return w.go(p, {});
}

}  // namespace tug::passes
