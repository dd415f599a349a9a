// Projection pushdown: computes the columns each node must produce (the union over its parents, so a
// shared subplan stays shared), drops unused select / with_columns / agg expressions and row indices,
// and sets the scan's `projection` so only the needed columns are read. A node may produce more
// columns than its parents need (e.g. a group_by keeps its keys); unions and the root get an exact
// select, so the output schema is unchanged.
#include <algorithm>

#include "tug/api/user_kernel.hpp"
#include "tug/plan/optimizer.hpp"
#include "util.hpp"

namespace tug::passes {

namespace {

using name_set = std::set<std::string>;

void add_refs(const expr& e, name_set& s) {
  for (auto& c : referenced_columns(e)) s.insert(c);
}

// What a node keeps given the columns needed from it: its kept expressions and what it needs from
// each input.
struct decision {
  std::vector<expr> kept;  // select / with_columns exprs, group_by aggs
  std::vector<name_set> inputs;
};

std::vector<expr> keep_named(const std::vector<expr>& exprs, const name_set& need) {
  std::vector<expr> out;
  for (auto& e : exprs)
    if (need.count(output_name(e))) out.push_back(e);
  return out;
}

decision decide(const plan_node& n, const name_set& need) {
  decision d;
  d.inputs.resize(n.inputs.size());
  switch (n.kind) {
    case plan_kind::scan: break;
    case plan_kind::filter:
    case plan_kind::sort:
    case plan_kind::slice:
      d.inputs[0] = need;
      for (auto& e : n.exprs) add_refs(e, d.inputs[0]);
      break;
    case plan_kind::select:
      d.kept = keep_named(n.exprs, need);
      for (auto& e : d.kept) add_refs(e, d.inputs[0]);
      break;
    case plan_kind::with_columns:
      d.kept = keep_named(n.exprs, need);
      d.inputs[0] = need;
      for (auto& e : d.kept) d.inputs[0].erase(output_name(e));
      for (auto& e : d.kept) add_refs(e, d.inputs[0]);
      break;
    case plan_kind::group_by:
      d.kept = keep_named(n.exprs, need);
      for (auto& e : n.keys) add_refs(e, d.inputs[0]);
      for (auto& e : d.kept) add_refs(e, d.inputs[0]);
      break;
    case plan_kind::unique:
      d.inputs[0] = need;
      if (n.names.empty()) {
        for (auto& f : n.schema) d.inputs[0].insert(f.name);
      } else {
        d.inputs[0].insert(n.names.begin(), n.names.end());
      }
      break;
    case plan_kind::concat:
      for (auto& s : d.inputs) s = need;
      break;
    case plan_kind::with_row_index:
      d.inputs[0] = need;
      d.inputs[0].erase(n.names[0]);
      break;
    case plan_kind::take:  // the gathered columns come from the source; the row column from the input
      d.inputs[0] = need;
      for (auto& c : n.projection) d.inputs[0].erase(c);
      d.inputs[0].insert(n.names[0]);
      break;
    case plan_kind::map_partitions:  // the kernel reads its inputs (all columns when it names none)
      if (n.kernel->input_names().empty())
        for (auto& f : n.inputs[0]->schema) d.inputs[0].insert(f.name);
      d.inputs[0].insert(n.kernel->input_names().begin(), n.kernel->input_names().end());
      d.inputs[0].insert(n.kernel->kept().begin(), n.kernel->kept().end());
      break;
    case plan_kind::join: {
      for (auto& [out, o] : opt::join_origins(n)) {
        if (!need.count(out)) continue;
        d.inputs[static_cast<size_t>(o.side)].insert(o.name);
        // a suffixed right column keeps its suffix only while the clashing left column is there
        if (o.side == 1 && out != o.name) d.inputs[0].insert(o.name);
      }
      for (auto& e : n.keys) add_refs(e, d.inputs[0]);
      for (auto& e : n.right_keys) add_refs(e, d.inputs[1]);
      break;
    }
  }
  return d;
}

// Columns of `s` that are in `need`, in schema order.
std::vector<std::string> ordered(const schema& s, const name_set& need) {
  std::vector<std::string> out;
  for (auto& f : s)
    if (need.count(f.name)) out.push_back(f.name);
  return out;
}

// `p` restricted to exactly `names`, in that order.
plan_ptr exact(const plan_ptr& p, const std::vector<std::string>& names) {
  if (p->schema.names() == names) return p;
  std::vector<expr> cols;
  for (auto& n : names) cols.push_back(col(n));
  return plan::select(p, std::move(cols));
}

// True when `exprs` are the columns of `s`, unrenamed and in order.
bool identity(const std::vector<expr>& exprs, const schema& s) {
  if (exprs.size() != s.size()) return false;
  for (size_t i = 0; i < exprs.size(); ++i)
    if (exprs[i]->kind != expr_kind::column || exprs[i]->name != s[i].name) return false;
  return true;
}

struct pruner {
  std::map<const plan_node*, name_set> need;
  opt::plan_memo memo;
  std::vector<plan_ptr> order;  // parents before children
  std::set<const plan_node*> seen;

  void topo(const plan_ptr& p) {
    if (!seen.insert(p.get()).second) return;
    for (auto& i : p->inputs) topo(i);
    order.push_back(p);
  }

  // The need of `n`, never empty (a node must keep at least one column to keep its row count).
  const name_set& need_of(const plan_node& n) {
    name_set& s = need[&n];
    if (s.empty() && n.schema.size() > 0) s.insert(n.schema[0].name);
    return s;
  }

  void propagate(const plan_ptr& root) {
    topo(root);
    std::reverse(order.begin(), order.end());
    for (auto& f : root->schema) need[root.get()].insert(f.name);
    for (auto& p : order) {
      decision d = decide(*p, need_of(*p));
      for (size_t i = 0; i < p->inputs.size(); ++i) need[p->inputs[i].get()].merge(d.inputs[i]);
    }
  }

  plan_ptr build(const plan_ptr& p) {
    return opt::memoized(memo, p, [&](const plan_ptr& n) { return build_node(n); });
  }

  plan_ptr scan(const plan_ptr& p, const name_set& nd) {
    name_set read = nd;
    for (auto& e : p->predicates) add_refs(e, read);
    const schema& src = p->source->schema();
    std::vector<std::string> proj = ordered(src, read);
    if (proj.size() == src.size()) proj.clear();
    std::vector<std::string> out = ordered(src, nd);
    if (proj == p->projection && out == p->schema.names()) return p;
    auto c = std::make_shared<plan_node>(*p);
    c->projection = std::move(proj);
    schema s;
    for (auto& name : out) s.push_back(src[src.index_of(name)]);
    c->schema = std::move(s);
    return c;
  }

  plan_ptr build_node(const plan_ptr& p) {
    const plan_node& n = *p;
    const name_set& nd = need_of(n);
    if (n.kind == plan_kind::scan) return scan(p, nd);
    decision d = decide(n, nd);
    std::vector<plan_ptr> ins;
    bool same = true;
    for (auto& i : n.inputs) {
      ins.push_back(build(i));
      same &= ins.back() == i;
    }
    bool all_kept = d.kept.size() == n.exprs.size();
    switch (n.kind) {
      case plan_kind::select:
        if (identity(d.kept, ins[0]->schema)) return ins[0];
        if (same && all_kept) return p;
        return plan::select(ins[0], d.kept);
      case plan_kind::with_columns:
        if (d.kept.empty()) return ins[0];
        if (same && all_kept) return p;
        return plan::with_columns(ins[0], d.kept);
      case plan_kind::group_by:
        if (same && all_kept) return p;
        return plan::group_by(ins[0], n.keys, d.kept, n.stable);
      case plan_kind::with_row_index:
        if (!nd.count(n.names[0])) return ins[0];
        break;
      case plan_kind::concat: {
        std::vector<std::string> names = ordered(n.schema, nd);
        for (auto& i : ins) {
          plan_ptr e = exact(i, names);
          same &= e == i;
          i = e;
        }
        break;
      }
      default: break;
    }
    return same ? p : plan::with_inputs(n, std::move(ins));
  }
};

}  // namespace

plan_ptr projection_pushdown(const plan_ptr& p) {
  pruner w;
  w.propagate(p);
  return exact(w.build(p), p->schema.names());
}

}  // namespace tug::passes
