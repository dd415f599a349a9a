// `over` windows on the CPU: per spec, rows of all partitions are grouped by the key columns, each
// group is aggregated, and the group's value is broadcast back to its rows. The output keeps the
// input partitions and row order, with one column appended per spec.
#include <map>
#include <optional>

#include "agg_kernels.hpp"
#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug::exec {

using cpu::finish;
using cpu::one;

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
    // group ids per key set (none for a window without keys: one group); keys are grouped
    // partition by partition, without concatenating them
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
    auto groups_of = [&](size_t spec) {
      const auto& g = groupings[_key_set_of[spec]];
      return g ? g->num_groups() : int64_t{1};
    };
    std::vector<int64_t> start(parts.size() + 1, 0);
    for (size_t p = 0; p < parts.size(); ++p) start[p + 1] = start[p] + parts[p].num_rows();
    // decomposable aggregations over few groups: partial states per partition (in parallel, no
    // concatenated input), merged; the others aggregate the concatenated input
    auto num_parts = static_cast<int64_t>(parts.size());
    // (not first/last: a partition's state of a group absent from it would be a null value)
    std::vector<uint8_t> by_part(_specs.size());
    for (size_t s = 0; s < _specs.size(); ++s) {
      agg_op op = _specs[s].agg.op;
      by_part[s] = num_parts > 1 && rows > 0 && cpu::is_decomposable(op) && op != agg_op::first &&
                   op != agg_op::last && groups_of(s) * num_parts * 4 <= rows;
    }
    std::map<size_t, column> all;
    for (size_t s = 0; s < _specs.size(); ++s)
      if (!by_part[s] && _specs[s].agg.input >= 0) all[static_cast<size_t>(_specs[s].agg.input)];
    std::vector<size_t> used;
    for (auto& [c, _] : all) used.push_back(c);
    std::vector<column> cols(used.size());
    ctx.pool.parallel_for(static_cast<int64_t>(used.size()), [&](int64_t i) {
      auto u = static_cast<size_t>(i);
      cols[u] = cpu::concat_columns(parts, in, {used[u]}, ctx.mr)[0];
    });
    for (size_t i = 0; i < used.size(); ++i) all[used[i]] = cols[i];
    // group map of rows [from, from + n) for a spec
    auto map_of = [&](size_t spec, int64_t from, int64_t n) {
      const auto& g = groupings[_key_set_of[spec]];
      return cpu::group_map{g ? g->ids.data() + from : nullptr, n, groups_of(spec)};
    };
    // one value per group and spec
    std::vector<column> per_group(_specs.size());
    ctx.pool.parallel_for(static_cast<int64_t>(_specs.size()), [&](int64_t i) {
      auto s = static_cast<size_t>(i);
      if (by_part[s]) return;
      const agg_spec& a = _specs[s].agg;
      const column* input = a.input < 0 ? nullptr : &all[static_cast<size_t>(a.input)];
      per_group[s] = cpu::aggregate_groups(a, input, map_of(s, 0, rows), ctx.mr);
    });
    for (size_t s = 0; s < _specs.size(); ++s) {
      if (!by_part[s]) continue;
      const agg_spec& a = _specs[s].agg;
      std::vector<std::vector<column>> states(parts.size());
      ctx.pool.parallel_for(num_parts, [&](int64_t p) {
        auto q = static_cast<size_t>(p);
        const column* input = a.input < 0 ? nullptr : &parts[q][static_cast<size_t>(a.input)];
        states[q] = cpu::partial_states(a, input, map_of(s, start[q], parts[q].num_rows()), ctx.mr);
      });
      std::vector<column> merged;
      for (size_t j = 0; j < states[0].size(); ++j) {
        std::vector<column> pieces;
        for (auto& st : states) pieces.push_back(st[j]);
        merged.push_back(concatenate(pieces, ctx.mr));
      }
      // state row p * groups + g belongs to group g
      int64_t groups = groups_of(s);
      std::vector<int64_t> ids(static_cast<size_t>(groups * num_parts));
      for (size_t r = 0; r < ids.size(); ++r) ids[r] = static_cast<int64_t>(r) % groups;
      per_group[s] = cpu::merge_states(a, merged, {ids.data(), groups * num_parts, groups}, ctx.mr);
    }
    // broadcast to the rows of every partition
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
  TUG_DISPATCH_CUDA(b, make_window(std::move(child), std::move(specs), std::move(out)));
  for (auto& s : specs) cpu::check_agg_spec(s.agg);
  return finish(std::make_unique<window_op>(std::move(specs)), b, one(std::move(child)), std::move(out));
}

}  // namespace tug::exec
