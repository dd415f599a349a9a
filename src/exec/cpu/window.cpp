// `over` windows on the CPU: per spec, rows of all partitions are grouped by the key columns, each
// group is aggregated, and the group's value is broadcast back to its rows. The output keeps the
// input partitions and row order, with one column appended per spec.
#include <map>
#include <optional>

#include "agg_kernels.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::exec {

using cpu::finish;
using cpu::one;
using cpu::require_cpu;

namespace {

class window_op final : public physical_node {
 public:
  explicit window_op(std::vector<window_spec> specs) : _specs(std::move(specs)) {
    // specs with the same keys share one grouping
    for (auto& s : _specs) {
      size_t k = 0;
      while (k < _key_sets.size() && _key_sets[k] != s.keys) ++k;
      if (k == _key_sets.size()) _key_sets.push_back(s.keys);
      _key_set_of.push_back(k);
    }
  }
  std::string name() const override { return "window"; }
  std::string detail() const override {
    std::string s;
    for (auto& w : _specs) s += (s.empty() ? "" : ", ") + cpu::describe(w.agg) + " over " + cpu::describe_columns(w.keys);
    return s;
  }
  bool sync_point() const override { return true; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    if (parts.empty()) return parts;
    const schema& in = children[0]->output_schema;
    int64_t rows = total_rows(parts);
    // concatenate only the columns the aggregations read (keys are grouped partition by partition)
    std::map<size_t, column> all;
    for (auto& s : _specs)
      if (s.agg.input >= 0) all[static_cast<size_t>(s.agg.input)];
    std::vector<size_t> used;
    for (auto& [c, _] : all) used.push_back(c);
    std::vector<column> cols(used.size());
    ctx.pool.parallel_for(static_cast<int64_t>(used.size()), [&](int64_t i) {
      auto u = static_cast<size_t>(i);
      cols[u] = cpu::concat_columns(parts, in, {used[u]}, ctx.mr)[0];
    });
    for (size_t i = 0; i < used.size(); ++i) all[used[i]] = cols[i];
    // group ids per key set (none for a window without keys: one group)
    std::vector<std::optional<cpu::row_groups>> groupings(_key_sets.size());
    for (size_t i = 0; i < _key_sets.size(); ++i) {
      if (_key_sets[i].empty()) continue;
      std::vector<std::vector<column>> chunks;
      for (auto& p : parts) {
        chunks.emplace_back();
        for (size_t k : _key_sets[i]) chunks.back().push_back(p[k]);
      }
      groupings[i] = chunks.size() == 1 ? cpu::group_rows(chunks[0], &ctx.pool) : cpu::group_chunks(chunks, ctx.pool);
    }
    auto map_of = [&](size_t spec) {
      const auto& g = groupings[_key_set_of[spec]];
      return cpu::group_map{g ? g->ids.data() : nullptr, rows, g ? g->num_groups() : 1};
    };
    // one value per group and spec
    std::vector<column> per_group(_specs.size());
    ctx.pool.parallel_for(static_cast<int64_t>(_specs.size()), [&](int64_t i) {
      auto s = static_cast<size_t>(i);
      const agg_spec& a = _specs[s].agg;
      const column* input = a.input < 0 ? nullptr : &all[static_cast<size_t>(a.input)];
      per_group[s] = cpu::aggregate_groups(a, input, map_of(s), ctx.mr);
    });
    // broadcast to the rows of every partition
    std::vector<int64_t> start(parts.size(), 0);
    for (size_t p = 1; p < parts.size(); ++p) start[p] = start[p - 1] + parts[p - 1].num_rows();
    return map_partitions(ctx, parts, [&](const table& t) {
      size_t p = static_cast<size_t>(&t - parts.data());  // map_partitions passes elements of `parts`
      std::vector<column> out = t.columns();
      for (size_t s = 0; s < _specs.size(); ++s) {
        const auto& g = groupings[_key_set_of[s]];
        if (g) out.push_back(gather(per_group[s], g->ids.data() + start[p], t.num_rows(), ctx.mr));
        else out.push_back(repeat_row(per_group[s], 0, t.num_rows(), ctx.mr));
      }
      return table(std::move(out));
    });
  }

 private:
  std::vector<window_spec> _specs;
  std::vector<std::vector<size_t>> _key_sets;
  std::vector<size_t> _key_set_of;
};

}  // namespace

physical_ptr make_window(backend b, physical_ptr child, std::vector<window_spec> specs, schema out) {
  require_cpu(b, "window");
  for (auto& s : specs) cpu::check_agg_spec(s.agg);
  return finish(std::make_unique<window_op>(std::move(specs)), b, one(std::move(child)), std::move(out));
}

}  // namespace tug::exec
