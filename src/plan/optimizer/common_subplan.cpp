// Common subplan elimination: structurally equal subtrees become one shared node, which the lowering
// executes once (behind a cache) however many parents it has.
#include <functional>
#include <unordered_map>

#include "tug/plan/optimizer.hpp"
#include "util.hpp"

namespace tug::passes {

namespace {

bool equal_exprs(const std::vector<expr>& a, const std::vector<expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}

// Same operator with the same parameters over the same (already shared) inputs.
bool same_node(const plan_node& a, const plan_node& b) {
  return a.kind == b.kind && a.inputs == b.inputs && a.source == b.source && a.how == b.how && a.suffix == b.suffix &&
         a.descending == b.descending && a.nulls_last == b.nulls_last && a.stable == b.stable &&
         a.offset == b.offset && a.length == b.length && a.names == b.names && a.keep == b.keep &&
         a.projection == b.projection && a.schema == b.schema && a.kernel == b.kernel && equal_exprs(a.exprs, b.exprs) &&
         equal_exprs(a.keys, b.keys) && equal_exprs(a.right_keys, b.right_keys) &&
         equal_exprs(a.predicates, b.predicates);
}

size_t node_hash(const plan_node& n) {
  size_t h = std::hash<int>()(static_cast<int>(n.kind));
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (auto& i : n.inputs) mix(std::hash<const void*>()(i.get()));
  mix(std::hash<const void*>()(n.source.get()));
  mix(std::hash<int64_t>()(n.offset));
  mix(std::hash<int64_t>()(n.length));
  for (auto* v : {&n.exprs, &n.keys, &n.right_keys, &n.predicates})
    for (auto& e : *v) mix(std::hash<std::string>()(to_string(e)));
  for (auto& s : n.names) mix(std::hash<std::string>()(s));
  for (auto& s : n.projection) mix(std::hash<std::string>()(s));
  return h;
}

struct sharer {
  std::map<const plan_node*, plan_ptr> memo;
  std::unordered_multimap<size_t, plan_ptr> canonical;

  plan_ptr go(const plan_ptr& p) {
    auto it = memo.find(p.get());
    if (it != memo.end()) return it->second;
    std::vector<plan_ptr> ins;
    bool same = true;
    for (auto& i : p->inputs) {
      ins.push_back(go(i));
      same &= ins.back() == i;
    }
    plan_ptr c = same ? p : plan::with_inputs(*p, std::move(ins));
    size_t h = node_hash(*c);
    plan_ptr r = c;
    auto range = canonical.equal_range(h);
    for (auto k = range.first; k != range.second; ++k)
      if (same_node(*k->second, *c)) {
        r = k->second;
        break;
      }
    if (r == c) canonical.emplace(h, c);
    memo.emplace(p.get(), r);
    return r;
  }
};

}  // namespace

plan_ptr common_subplan(const plan_ptr& p) { return sharer{}.go(p); }

}  // namespace tug::passes
