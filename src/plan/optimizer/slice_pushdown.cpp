// Slice pushdown: a slice [offset, offset + length) needs only the first offset + length rows of its
// input. That limit travels through row-wise projections and row indices, turns a sort into a top-k
// sort (its `length`), limits every input of a union, and reaches a scan without pushed-down
// predicates (its `length`: the source reads only what holds those rows). The slice itself stays.
#include "tug/plan/optimizer.hpp"
#include "util.hpp"

namespace tug::passes {

namespace {

struct limiter {
  opt::plan_memo memo;  // results with no limit

  plan_ptr go(const plan_ptr& p, int64_t limit) {
    if (limit >= 0) return node(p, limit);
    return opt::memoized(memo, p, [&](const plan_ptr& n) { return node(n, -1); });
  }

  plan_ptr rebuild(const plan_ptr& p, int64_t limit) {
    std::vector<plan_ptr> ins;
    bool same = true;
    for (auto& i : p->inputs) {
      ins.push_back(go(i, limit));
      same &= ins.back() == i;
    }
    return same ? p : plan::with_inputs(*p, std::move(ins));
  }

  // `limit` = rows needed from the top of `p`'s output, -1 = all.
  plan_ptr node(const plan_ptr& p, int64_t limit) {
    const plan_node& n = *p;
    switch (n.kind) {
      case plan_kind::slice: {
        int64_t need = -1;
        if (n.offset >= 0 && n.length >= 0) need = n.offset + (limit >= 0 ? std::min(limit, n.length) : n.length);
        else if (n.offset >= 0 && limit >= 0) need = n.offset + limit;
        return rebuild(p, need);
      }
      case plan_kind::sort: {
        plan_ptr r = rebuild(p, -1);
        if (limit < 0 || (n.length >= 0 && n.length <= limit)) return r;
        auto c = std::make_shared<plan_node>(*r);
        c->length = limit;
        return c;
      }
      case plan_kind::select:
      case plan_kind::with_columns:
        return rebuild(p, opt::any_window_or_agg(n.exprs) ? -1 : limit);
      case plan_kind::scan: {
        // rows a scan's predicates drop are still read, so a limit does not bound what it reads
        if (limit < 0 || !n.predicates.empty() || (n.length >= 0 && n.length <= limit)) return p;
        auto c = std::make_shared<plan_node>(n);
        c->length = limit;
        return c;
      }
      case plan_kind::with_row_index:
      case plan_kind::take: return rebuild(p, limit);
      case plan_kind::concat: {
        if (limit < 0) return rebuild(p, -1);
        std::vector<plan_ptr> ins;
        for (auto& i : n.inputs) {
          plan_ptr c = go(i, limit);
          bool limited = c->kind == plan_kind::slice && c->offset == 0 && c->length >= 0 && c->length <= limit;
          ins.push_back(limited ? c : plan::slice(c, 0, limit));
        }
        return plan::with_inputs(n, std::move(ins));
      }
      default: return rebuild(p, -1);
    }
  }
};

}  // namespace

plan_ptr slice_pushdown(const plan_ptr& p) { return limiter{}.go(p, -1); }

}  // namespace tug::passes
