// Group-by aggregation on the CPU. When every aggregation is decomposable the work is split into a
// per-partition "hash_aggregate[partial]" (keys + state columns) and a "hash_aggregate[final]" sync
// point that merges the states, so an exchange can go between them; otherwise one "hash_aggregate"
// sync point aggregates all input at once.
#include <numeric>

#include "agg_kernels.hpp"
#include "exec/buckets.hpp"
#include "runtime/partition_share.hpp"
#include "tug/runtime/query_control.hpp"
#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug::exec {

using cpu::finish;
using cpu::one;

namespace {

// Rows grouped by key columns (dense group ids in first-seen order) and the key columns themselves.
struct grouping {
  cpu::row_groups groups;
  std::vector<column> keys;  // empty without keys
  int64_t num_rows = 0;
  int64_t num_groups = 0;

  cpu::group_map map() const { return {keys.empty() ? nullptr : groups.ids.data(), num_rows, num_groups}; }
  /// One key row per group.
  std::vector<column> group_keys(memory_resource* mr) const {
    std::vector<column> out;
    for (auto& k : keys) out.push_back(gather(k, groups.first_row, mr));
    return out;
  }
};

// Groups `keys` (columns of equal length; in parallel when a pool is given). Without keys all rows
// form one group, and an empty input forms one group only when `one_group_if_empty` (a global
// aggregation outputs one row).
grouping group_rows(std::vector<column> keys, int64_t num_rows, bool one_group_if_empty, thread_pool* pool) {
  grouping g;
  g.num_rows = num_rows;
  if (keys.empty()) {
    g.num_groups = num_rows > 0 || one_group_if_empty ? 1 : 0;
    return g;
  }
  g.groups = cpu::group_rows(keys, pool);
  g.keys = std::move(keys);
  g.num_groups = g.groups.num_groups();
  return g;
}

std::vector<size_t> iota(size_t from, size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

// Key columns of each group, then the columns of each aggregation (computed in parallel).
table assemble(exec_context& ctx, const grouping& g, size_t num_aggs,
               const std::function<std::vector<column>(size_t)>& agg_columns) {
  std::vector<std::vector<column>> per_agg(num_aggs);
  ctx.pool.parallel_for(static_cast<int64_t>(num_aggs),
                        [&](int64_t i) { per_agg[static_cast<size_t>(i)] = agg_columns(static_cast<size_t>(i)); });
  std::vector<column> cols = g.group_keys(ctx.mr);
  for (auto& a : per_agg)
    for (auto& c : a) cols.push_back(std::move(c));
  if (cols.empty()) return table::empty_with_rows(g.num_groups);
  return table(std::move(cols));
}

// Splits a result into partitions of about `target_partition_rows` rows, or fewer so that every thread
// has one for the work after it (a filter or projection fused into the aggregate runs on each).
std::vector<table> split(const table& t, const exec_context& ctx) {
  const int64_t target = share_per_thread(partition_rows(ctx.options), t.num_rows(), ctx.pool.size(),
                                          min_rows_per_thread_share);
  if (t.num_rows() <= target) return {t};
  std::vector<table> out;
  for (int64_t off = 0; off < t.num_rows(); off += target) out.push_back(t.slice(off, std::min(target, t.num_rows() - off)));
  return out;
}

std::string describe(const std::vector<size_t>& keys, const std::vector<agg_spec>& aggs, bool maintain_order) {
  std::string s = "keys " + cpu::describe_columns(keys) + " aggs [";
  for (size_t i = 0; i < aggs.size(); ++i) s += (i ? ", " : "") + cpu::describe(aggs[i]);
  s += "]";
  if (maintain_order) s += " maintain_order";
  return s;
}

const column* agg_input(const agg_spec& s, const std::vector<column>& cols) {
  return s.input < 0 ? nullptr : &cols[static_cast<size_t>(s.input)];
}

// Per partition: key columns and the partial states of every aggregation; or, `whole`, the aggregates
// themselves, for input where no group spans two partitions (a scan whose source keeps the rows of a
// key together, e.g. a Cassandra partition key): no merge follows, and groups come in first-seen order,
// since each group's rows are all in the partition where it first appears.
class partition_aggregate_op final : public physical_node {
 public:
  partition_aggregate_op(std::vector<size_t> keys, std::vector<agg_spec> aggs, bool whole)
      : _keys(std::move(keys)), _aggs(std::move(aggs)), _whole(whole) {}
  std::string name() const override { return _whole ? "hash_aggregate[per partition]" : "hash_aggregate[partial]"; }
  std::string detail() const override {
    return describe(_keys, _aggs, false) + (_whole ? " (partitions keep their keys)" : "");
  }
  bool per_partition() const override { return true; }

 protected:
  std::vector<table> run(exec_context& ctx) override { return run_per_partition(ctx); }
  table process_partition(const table& t, exec_context& ctx) override {
    std::vector<column> keys;
    for (size_t k : _keys) keys.push_back(t[k]);
    grouping g = group_rows(std::move(keys), t.num_rows(), false, nullptr);  // partitions run in parallel
    std::vector<column> cols = g.group_keys(ctx.mr);
    for (auto& s : _aggs) {
      if (_whole) cols.push_back(cpu::aggregate_groups(s, agg_input(s, t.columns()), g.map(), ctx.mr));
      else
        for (auto& c : cpu::partial_states(s, agg_input(s, t.columns()), g.map(), ctx.mr)) cols.push_back(std::move(c));
    }
    if (cols.empty()) return table::empty_with_rows(g.num_groups);
    return table(std::move(cols));
  }

 private:
  std::vector<size_t> _keys;
  std::vector<agg_spec> _aggs;
  bool _whole;
};

// What the final and the one-phase aggregation share: the input held spillable as it is produced, and
// aggregated whole, or, when it may not fit (exec::external_buckets) and the groups' order need not be
// kept, split into hash buckets by the grouping keys and aggregated one bucket at a time (a group's
// rows are all in one bucket). The consumers' fused work runs on each output partition.
class blocking_aggregate : public physical_node {
 public:
  bool sync_point() const override { return true; }
  bool accepts_fused() const override { return true; }
  rank_need input_need(size_t) const override { return aggregate_need(_group_keys, _maintain_order, merges_states()); }

 protected:
  blocking_aggregate(std::vector<size_t> keys, bool maintain_order)
      : _group_keys(std::move(keys)), _maintain_order(maintain_order) {}
  /// The aggregation of `parts` (the whole input, or one bucket of it).
  virtual std::vector<table> aggregate(std::vector<table> parts, exec_context& ctx) = 0;
  /// True when the input is partial states (small: a global aggregate gathers them to every rank).
  virtual bool merges_states() const = 0;

  std::vector<table> run(exec_context& ctx) final {
    partition_hook after = std::move(fused);
    fused = nullptr;
    held_partitions in = input_held(0, ctx, spill_priority::buffered);
    const size_t buckets = _group_keys.empty() || _maintain_order
                               ? 0
                               : external_buckets(ctx, in.bytes() + in.rows() * index_scratch_per_row);
    std::vector<table> out;
    if (buckets > 0) {
      hash_buckets hb(ctx, {_group_keys}, buckets);
      hb.add(0, in);
      for_each_bucket(hb, [&](hash_buckets& h, size_t b, bool fits) {
        if (h.rows(0, b) == 0) return;
        // a bucket of one group too large to split is aggregated whole all the same: it may fit the limit
        // (an eighth of it is only the buckets' aim), else the error names the key
        const std::string sizes = fits ? std::string() : bucket_sizes(h, b, {"input"});
        const size_t first = out.size();
        try {
          for (auto& t : aggregate(h.take(0, b), ctx)) out.push_back(std::move(t));
        } catch (const memory_error& e) {
          if (fits) throw;
          throw unsplittable_bucket(name(), children[0]->output_schema, _group_keys, sizes, "does not fit", e);
        }
        apply_after(ctx, after, out, first);
      });
      if (!out.empty()) return out;
      out = aggregate({}, ctx);  // no rows (`in` is empty now): a global aggregate's one row, else none
    } else {
      out = aggregate(in.take(), ctx);
    }
    apply_after(ctx, after, out, 0);
    return out;
  }

  std::vector<size_t> _group_keys;
  bool _maintain_order;
};

// Merges the partial states of all partitions: input = keys [0, num_keys), then the states of each
// aggregation in order.
class final_aggregate_op final : public blocking_aggregate {
 public:
  final_aggregate_op(size_t num_keys, std::vector<agg_spec> aggs, bool maintain_order)
      : blocking_aggregate(iota(0, num_keys), maintain_order), _num_keys(num_keys), _aggs(std::move(aggs)) {
    size_t pos = num_keys;
    for (auto& s : _aggs) {
      _state_pos.push_back(pos);
      pos += cpu::state_types(s).size();
    }
    _num_columns = pos;
  }
  std::string name() const override { return "hash_aggregate[final]"; }
  std::string detail() const override { return describe(iota(0, _num_keys), _aggs, _maintain_order); }

 protected:
  bool merges_states() const override { return true; }
  std::vector<table> aggregate(std::vector<table> parts, exec_context& ctx) override {
    // states arrive in partition order, each partition's groups in first-seen order, so first-seen
    // order over the concatenation is the order of first appearance in the input
    std::vector<column> all = cpu::concat_columns(parts, children[0]->output_schema, iota(0, _num_columns), ctx.mr);
    int64_t rows = total_rows(parts);
    grouping g = group_rows(std::vector<column>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(_num_keys)),
                            rows, _num_keys == 0, &ctx.pool);
    table out = assemble(ctx, g, _aggs.size(), [&](size_t i) {
      const agg_spec& s = _aggs[i];
      auto first = all.begin() + static_cast<std::ptrdiff_t>(_state_pos[i]);
      std::vector<column> states(first, first + static_cast<std::ptrdiff_t>(cpu::state_types(s).size()));
      return std::vector<column>{cpu::merge_states(s, states, g.map(), ctx.mr)};
    });
    return split(out, ctx);
  }

 private:
  size_t _num_keys;
  std::vector<agg_spec> _aggs;
  std::vector<size_t> _state_pos;
  size_t _num_columns = 0;
};

// One phase over all input, for aggregations that cannot be merged from partial states.
class single_aggregate_op final : public blocking_aggregate {
 public:
  single_aggregate_op(std::vector<size_t> keys, std::vector<agg_spec> aggs, bool maintain_order)
      : blocking_aggregate(keys, maintain_order), _keys(std::move(keys)), _aggs(std::move(aggs)) {}
  std::string name() const override { return "hash_aggregate"; }
  std::string detail() const override { return describe(_keys, _aggs, _maintain_order); }

 protected:
  bool merges_states() const override { return false; }
  std::vector<table> aggregate(std::vector<table> parts, exec_context& ctx) override {
    const schema& in = children[0]->output_schema;
    std::vector<column> all = cpu::concat_columns(parts, in, iota(0, in.size()), ctx.mr);
    std::vector<column> keys;
    for (size_t k : _keys) keys.push_back(all[k]);
    grouping g = group_rows(std::move(keys), total_rows(parts), _keys.empty(), &ctx.pool);
    table out = assemble(ctx, g, _aggs.size(), [&](size_t i) {
      return std::vector<column>{cpu::aggregate_groups(_aggs[i], agg_input(_aggs[i], all), g.map(), ctx.mr)};
    });
    return split(out, ctx);
  }

 private:
  std::vector<size_t> _keys;
  std::vector<agg_spec> _aggs;
};

}  // namespace

physical_ptr make_partitionwise_aggregate(backend b, physical_ptr child, std::vector<size_t> keys,
                                          std::vector<agg_spec> aggs, schema out) {
  if (b != backend::cpu) throw internal_error("the partition-wise aggregate runs on the CPU only");
  if (keys.empty()) throw internal_error("a partition-wise aggregate needs keys");
  for (auto& s : aggs) cpu::check_agg_spec(s);
  return finish(std::make_unique<partition_aggregate_op>(std::move(keys), std::move(aggs), true), b,
                one(std::move(child)), std::move(out));
}

physical_ptr make_aggregate(backend b, physical_ptr child, std::vector<size_t> keys, std::vector<agg_spec> aggs,
                            bool maintain_order, schema out) {
  TUG_DISPATCH_CUDA(b, make_aggregate(std::move(child), std::move(keys), std::move(aggs), maintain_order, std::move(out)));
  bool decomposable = true;
  for (auto& s : aggs) {
    cpu::check_agg_spec(s);
    decomposable = decomposable && cpu::is_decomposable(s.op);
  }
  if (!decomposable)
    return finish(std::make_unique<single_aggregate_op>(std::move(keys), std::move(aggs), maintain_order), b,
                  one(std::move(child)), std::move(out));
  // partial output: the key columns, then the state columns of each aggregation
  schema partial_schema = cpu::partial_schema(child->output_schema, keys, aggs);
  size_t num_keys = keys.size();
  physical_ptr partial = finish(std::make_unique<partition_aggregate_op>(std::move(keys), aggs, false), b,
                                one(std::move(child)), std::move(partial_schema));
  return finish(std::make_unique<final_aggregate_op>(num_keys, std::move(aggs), maintain_order), b,
                one(std::move(partial)), std::move(out));
}

}  // namespace tug::exec
