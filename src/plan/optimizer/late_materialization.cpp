// Late materialization: a chain of filters, projections and slices over an in-memory frame carries
// only the columns it reads plus a row index; the columns it merely passes through ("passengers")
// are gathered for the surviving rows at the end by a `take` (docs/gpu.md, "Late materialization
// across PCIe"). Runs last, on the plan the other passes left.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "tug/plan/optimizer.hpp"
#include "util.hpp"

namespace tug::passes {

namespace {

/// The row-index column the rewrite adds (no rewrite when a column of the chain has this name).
constexpr const char* row_column = "__tug_row";

/// Row-preserving nodes the rewrite carries the row index through.
bool in_chain(const plan_node& n) {
  switch (n.kind) {
    case plan_kind::filter:
    case plan_kind::with_columns:
    case plan_kind::slice:
      return true;
    case plan_kind::select: {
      // an aggregating select changes the rows; a select of literals alone has no row-wise input
      bool reads = false;
      for (auto& e : n.exprs) {
        if (contains_agg(e)) return false;
        reads |= !referenced_columns(e).empty();
      }
      return reads;
    }
    default:
      return false;
  }
}

bool is_bare_column(const expr& e, const std::string& name) { return e->kind == expr_kind::column && e->name == name; }

/// Bytes of the columns `names` over all partitions of `src`.
int64_t column_bytes(const memory_source& src, const std::vector<std::string>& names) {
  std::vector<size_t> idx;
  for (auto& c : names)
    idx.push_back(src.schema().index_of(c));
  int64_t b = 0;
  for (auto& p : src.partitions())
    for (size_t i : idx)
      b += p[i].memory_usage();
  return b;
}

struct rewriter {
  std::map<const plan_node*, int> uses;
  opt::plan_memo done;

  plan_ptr go(const plan_ptr& p) {
    return opt::memoized(done, p, [&](const plan_ptr& n) { return node(n); });
  }

  plan_ptr node(const plan_ptr& p) {
    if (p->kind == plan_kind::scan) return rewrite({}, *p).value_or(p);  // its predicates filter
    if (in_chain(*p)) {
      // the longest chain from p down whose inner nodes have no other parent
      std::vector<const plan_node*> chain{p.get()};  // top first
      plan_ptr below = p->inputs[0];
      while (in_chain(*below) && uses[below.get()] == 1) {
        chain.push_back(below.get());
        below = below->inputs[0];
      }
      if (auto r = rewrite(chain, *below)) return *r;
      plan_ptr b = go(below);
      if (b == below) return p;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it)
        b = plan::with_inputs(**it, {b});
      return b;
    }
    std::vector<plan_ptr> ins;
    bool same = true;
    for (auto& i : p->inputs) {
      ins.push_back(go(i));
      same &= ins.back() == i;
    }
    return same ? p : plan::with_inputs(*p, std::move(ins));
  }

  /// The passenger columns of `chain` (top first; may be empty) over `scan`, in the scan's order.
  static std::vector<std::string> passengers(const std::vector<const plan_node*>& chain, const plan_node& scan) {
    std::set<std::string> read;
    auto add = [&](const expr& e) {
      for (auto& c : referenced_columns(e))
        read.insert(c);
    };
    for (auto& e : scan.predicates)
      add(e);
    for (auto* n : chain) {
      for (auto& e : n->exprs)
        if (n->kind != plan_kind::select || e->kind != expr_kind::column) add(e);
    }
    std::vector<std::string> out;
    for (auto& f : scan.schema) {
      if (read.count(f.name)) continue;
      bool kept = true;
      for (auto it = chain.rbegin(); kept && it != chain.rend(); ++it) {
        const plan_node& n = **it;
        if (n.kind == plan_kind::with_columns) {
          for (auto& e : n.exprs)
            kept &= output_name(e) != f.name;
        } else if (n.kind == plan_kind::select) {
          kept = std::any_of(n.exprs.begin(), n.exprs.end(), [&](const expr& e) { return is_bare_column(e, f.name); });
        }
      }
      if (kept) out.push_back(f.name);
    }
    return out;
  }

  static std::optional<plan_ptr> rewrite(const std::vector<const plan_node*>& chain, const plan_node& scan) {
    if (scan.kind != plan_kind::scan) return std::nullopt;
    auto src = std::dynamic_pointer_cast<const memory_source>(scan.source);
    if (!src || src->schema().contains(row_column)) return std::nullopt;
    bool any_filter = !scan.predicates.empty();
    for (auto* n : chain) {
      any_filter |= n->kind == plan_kind::filter;
      if (n->schema.contains(row_column)) return std::nullopt;
    }
    if (!any_filter) return std::nullopt;
    std::vector<std::string> moved = passengers(chain, scan);
    if (moved.empty()) return std::nullopt;
    std::vector<std::string> scanned = scan.projection.empty() ? src->schema().names() : scan.projection;
    std::vector<std::string> narrow;
    for (auto& c : scanned)
      if (std::find(moved.begin(), moved.end(), c) == moved.end()) narrow.push_back(c);
    if (narrow.empty() || 2 * column_bytes(*src, moved) < column_bytes(*src, scanned)) return std::nullopt;

    // the narrow scan: no pushed-down predicates (a source may drop rows by them, which would shift
    // the row index), so they become a filter above the row index
    auto s = std::make_shared<plan_node>(scan);
    s->projection = narrow;
    s->predicates.clear();
    tug::schema ss;
    for (auto& c : narrow)
      ss.push_back(src->schema()[src->schema().index_of(c)]);
    s->schema = std::move(ss);
    plan_ptr cur = plan::with_row_index(s, row_column, 0);
    cur = opt::filter_all(cur, scan.predicates);
    std::vector<std::string> wanted{row_column};
    for (auto& f : scan.schema)
      if (std::find(moved.begin(), moved.end(), f.name) == moved.end()) wanted.push_back(f.name);
    if (cur->schema.names() != wanted) {
      std::vector<expr> cols;
      for (auto& c : wanted)
        cols.push_back(col(c));
      cur = plan::select(cur, std::move(cols));
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const plan_node& n = **it;
      if (n.kind == plan_kind::select) {
        // the passengers come back with the take; the row index goes up with the rest
        std::vector<expr> exprs;
        for (auto& e : n.exprs)
          if (e->kind != expr_kind::column || std::find(moved.begin(), moved.end(), e->name) == moved.end())
            exprs.push_back(e);
        exprs.push_back(col(row_column));
        cur = plan::select(cur, std::move(exprs));
      } else {
        cur = plan::with_inputs(n, {cur});
      }
    }
    cur = plan::take(cur, src, row_column, moved);
    std::vector<expr> out;
    for (auto& f : chain.empty() ? scan.schema : chain[0]->schema)
      out.push_back(col(f.name));
    return plan::select(cur, std::move(out));
  }
};

}  // namespace

plan_ptr late_materialization(const plan_ptr& p) {
  rewriter r;
  opt::count_uses(p, r.uses);
  return r.go(p);
}

}  // namespace tug::passes
