// Late materialization: a chain of filters, projections and slices over an in-memory frame carries
// only the columns it reads plus a row index; the columns it merely passes through ("passengers")
// are gathered for the surviving rows at the end by a `take` (docs/gpu.md, "Late materialization
// across PCIe"). Runs last, on the plan the other passes left.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "tug/memory/device.hpp"
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

/// The most rows, as an estimated fraction, a chain may keep for the rewrite to pay: the take gathers
/// each kept row's passengers once more (on the host, and across PCIe a second time on the GPU), so
/// it wins only when the chain drops most rows. A filter that keeps nearly all rows (an is_not_null
/// over a column with few nulls) made the seed's group_by + join query 2.7x slower on the GPU.
constexpr double max_kept = 0.5;

/// Null fraction of each column of `src` (over all partitions).
std::map<std::string, double> null_fractions(const memory_source& src) {
  std::map<std::string, double> out;
  int64_t rows = 0;
  std::vector<int64_t> nulls(src.schema().size(), 0);
  for (auto& p : src.partitions()) {
    rows += p.num_rows();
    for (size_t i = 0; i < nulls.size(); ++i)
      nulls[i] += p[i].null_count();
  }
  for (size_t i = 0; i < nulls.size(); ++i)
    out[src.schema()[i].name] = rows ? static_cast<double>(nulls[i]) / static_cast<double>(rows) : 0.0;
  return out;
}

/// Estimated fraction of rows `e` keeps: textbook defaults per kind of predicate (an equality 1/10,
/// a range 1/3, anything else 1/2), exact null fractions of the source's columns (`nulls`: the
/// columns the chain has not redefined), independence between the parts of and/or.
double kept_fraction(const expr& e, const std::map<std::string, double>& nulls) {
  auto null_share = [&](const expr& a) {
    if (a->kind == expr_kind::column) {
      auto it = nulls.find(a->name);
      if (it != nulls.end()) return it->second;
    }
    return 0.1;
  };
  if (e->kind == expr_kind::alias) return kept_fraction(e->args[0], nulls);
  if (e->kind == expr_kind::literal) {
    if (e->value.is_null()) return 0.0;
    if (auto* b = std::get_if<bool>(&e->value.value())) return *b ? 1.0 : 0.0;
    return 0.5;
  }
  if (e->kind != expr_kind::function) return 0.5;
  switch (e->func) {
    case fn::and_:
      return kept_fraction(e->args[0], nulls) * kept_fraction(e->args[1], nulls);
    case fn::or_: {
      double a = kept_fraction(e->args[0], nulls), b = kept_fraction(e->args[1], nulls);
      return a + b - a * b;
    }
    case fn::not_:
      return 1.0 - kept_fraction(e->args[0], nulls);
    case fn::is_null:
      return null_share(e->args[0]);
    case fn::is_not_null:
      return 1.0 - null_share(e->args[0]);
    case fn::eq:
      return 0.1;
    case fn::ne:
      return 0.9;
    case fn::lt:
    case fn::le:
    case fn::gt:
    case fn::ge:
    case fn::is_between:
      return 1.0 / 3;
    case fn::is_in:
      return std::min(0.5, 0.1 * static_cast<double>(e->list.size()));
    default:
      return 0.5;
  }
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

  /// Estimated fraction of the scan's rows the chain keeps (top first, as `passengers`).
  static double estimated_kept(const std::vector<const plan_node*>& chain, const plan_node& scan,
                               const memory_source& src) {
    std::map<std::string, double> nulls = null_fractions(src);  // of the columns still the source's
    double kept = 1.0;
    for (auto& e : scan.predicates)
      kept *= kept_fraction(e, nulls);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const plan_node& n = **it;
      if (n.kind == plan_kind::filter) {
        for (auto& e : n.exprs)
          kept *= kept_fraction(e, nulls);
      } else if (n.kind == plan_kind::with_columns) {
        for (auto& e : n.exprs)
          if (!is_bare_column(e, output_name(e))) nulls.erase(output_name(e));
      } else if (n.kind == plan_kind::select) {
        std::map<std::string, double> kept_names;
        for (auto& e : n.exprs) {
          const expr& inner = e->kind == expr_kind::alias ? e->args[0] : e;
          auto at = inner->kind == expr_kind::column ? nulls.find(inner->name) : nulls.end();
          if (at != nulls.end()) kept_names[output_name(e)] = at->second;
        }
        nulls = std::move(kept_names);
      }
    }
    return kept;
  }

  static std::optional<plan_ptr> rewrite(const std::vector<const plan_node*>& chain, const plan_node& scan) {
    if (scan.kind != plan_kind::scan) return std::nullopt;
    auto src = std::dynamic_pointer_cast<const memory_source>(scan.source);
    if (!src || src->schema().contains(row_column)) return std::nullopt;
    // data already in device memory crosses no link, and the take gathers on the host
    for (auto& part : src->partitions())
      if (on_device(part)) return std::nullopt;
    bool any_filter = !scan.predicates.empty();
    for (auto* n : chain) {
      any_filter |= n->kind == plan_kind::filter;
      if (n->schema.contains(row_column)) return std::nullopt;
    }
    if (!any_filter || estimated_kept(chain, scan, *src) > max_kept) return std::nullopt;
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
