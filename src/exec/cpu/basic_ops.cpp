// Per-partition and simple operators of the CPU backend: scan of memory, filter, project, slice,
// concat, row index.
#include <optional>

#include "tug/exec/cpu/evaluate.hpp"
#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif
#include "tug/exec/physical.hpp"
#include "api/in_order.hpp"
#include "exec/pieces.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/query_control.hpp"

namespace tug::exec {

using cpu::finish;
using cpu::one;

namespace {

class scan_op final : public physical_node {
 public:
  scan_op(std::shared_ptr<const table_source> src, std::vector<std::string> cols, std::vector<expr> predicates,
          int64_t limit)
      : _src(std::move(src)), _read(_src), _cols(std::move(cols)), _predicates(std::move(predicates)), _limit(limit) {}
  std::string name() const override { return "scan"; }
  /// Reads the share from now on; describe(), statistics and size hints stay the whole source's.
  bool read_rank_share(int rank, int size) override {
    std::shared_ptr<const table_source> share = _src->rank_share(rank, size);
    if (!share) return false;
    _read = std::move(share);
    _shared = " (rank " + std::to_string(rank) + "'s share of " + std::to_string(size) + ")";
    return true;
  }
  std::string detail() const override {
    std::string read = _src->describe_read(_cols, _predicates);
    return std::to_string(_cols.size()) + "/" + std::to_string(_src->schema().size()) + " columns of " +
           _src->describe() + _shared + (_limit >= 0 ? "; first " + std::to_string(_limit) + " rows" : "") +
           (read.empty() ? "" : "; " + read);
  }
  bool accepts_fused() const override { return true; }
  std::vector<std::string> key_partitioned() const override {
    std::vector<std::string> keys = _src->key_partitioned();
    for (auto& k : keys)
      if (std::find(_cols.begin(), _cols.end(), k) == _cols.end()) return {};
    return keys;
  }
  int64_t size_hint() const override {
    const std::vector<piece_statistics> pieces = _src->statistics({});
    if (pieces.empty()) return -1;
    int64_t rows = 0;
    for (auto& p : pieces)
      rows += p.rows;
    return _limit >= 0 ? std::min(rows, _limit) : rows;
  }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    partition_hook after = std::move(fused);
    fused = nullptr;
    const bool device = output_to_device && ctx.device_mr;
    query_control* control = query_control::current();  // counts the partitions for progress()
    if (!device && !after && !control)
      return _read->read(_cols, _predicates, ctx.options, ctx.pool, ctx.mr, {}, _limit);
    // decoded into pinned memory when there is a staging resource and copied as each partition is
    // done; the consumers' fused work runs on each partition as it is ready
    memory_resource* host = device && ctx.staging_mr ? ctx.staging_mr : ctx.mr;
    std::atomic<int64_t> calls{0};
    auto count = [&](table t, size_t index) {
      ++calls;
      if (control) control->scanned(t.num_rows());
      if (after) return after(std::move(t), index);  // a GPU consumer copies what is still on the host
      return device ? to_device(t, ctx.device_mr) : t;
    };
    // a GPU consumer gets device partitions: the source copies them there, or decodes there (Parquet)
    auto out = device ? _read->read_device(_cols, _predicates, ctx.options, ctx.pool, ctx.device_mr, host, count, _limit)
                      : _read->read(_cols, _predicates, ctx.options, ctx.pool, host, count, _limit);
    if (calls.load() != static_cast<int64_t>(out.size()))
      throw internal_error("source " + _src->describe() + " returned " + std::to_string(out.size()) +
                           " partitions but handed " + std::to_string(calls.load()) +
                           " to the partition hook (table_source::read must apply it to every partition)");
    return out;
  }

 private:
  std::shared_ptr<const table_source> _src;
  std::shared_ptr<const table_source> _read;  ///< what run() reads: _src, or this rank's share of it
  std::string _shared;                        ///< explain(): which share, when _read is one
  std::vector<std::string> _cols;
  std::vector<expr> _predicates;
  int64_t _limit;
};

class filter_op final : public filter_node {
 public:
  using filter_node::filter_node;

 protected:
  table filter_partition(const table& t, const schema& in, exec_context& ctx) const override {
    column mask = cpu::evaluate(_pred, t, in, ctx.mr);
    // the predicate may read columns no consumer needs: copy only the kept ones
    return filter(kept_columns(t), mask, ctx.mr);
  }
};

class project_op final : public project_node {
 public:
  using project_node::project_node;

 protected:
  std::vector<column> evaluate_partition(const table& t, const schema& in, exec_context& ctx) const override {
    std::vector<column> cols;
    cols.reserve(exprs().size());
    for (auto& e : exprs())
      cols.push_back(cpu::evaluate(e, t, in, ctx.mr));
    return cols;
  }
};

class slice_op final : public slice_node {
 public:
  using slice_node::slice_node;

 protected:
  std::vector<table> run(exec_context& ctx) override { return window(input(0, ctx)); }
};

/// Writes each partition with `partition_writer::write` as it is ready. The writer numbers partitions
/// 0..n-1; an input partition that comes in several pieces (exec/pieces.hpp) gives one written
/// partition per piece, so the sink renumbers them in order as they pass (an in_order of its own).
class sink_op final : public physical_node {
 public:
  explicit sink_op(std::shared_ptr<partition_writer> w) : _w(std::move(w)) {}
  std::string name() const override { return "sink"; }
  bool per_partition() const override { return true; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    size_t written = 0;
    _order.emplace([&](table& t) { _w->write(std::move(t), written++); }, 2 * static_cast<size_t>(ctx.pool.size()));
    const size_t n = run_per_partition(ctx).size();
    _order->finish(n);
    _order.reset();
    _w->finish(written);
    return {};
  }
  table process_partition(const table& t, exec_context& ctx) override { return process_indexed(t, 0, ctx); }
  table process_indexed(const table& t, size_t index, exec_context& ctx) override {
    // (run_per_partition: a device slot this thread holds is given back while a CPU node's work runs,
    // so waiting here for room holds none)
    _order->put(on_device(t) ? to_host(t, ctx.mr) : t, index, last_piece());
    return table::empty_with_rows(0);
  }

 private:
  std::shared_ptr<partition_writer> _w;
  std::optional<in_order<table>> _order;  ///< while running
};

class row_index_op final : public row_index_node {
 public:
  using row_index_node::row_index_node;

 protected:
  column index_column(int64_t start, int64_t n, exec_context& ctx) const override {
    fixed_width_builder<int64_t> b(type_id::int64, n, ctx.mr);
    for (int64_t r = 0; r < n; ++r)
      b.set(r, start + r);
    return b.finish();
  }
};

}  // namespace

struct shared_subplan {
  physical_ptr child;
  std::mutex mu;
  bool done = false;
  held_partitions result;  ///< may spill between its consumers
};

namespace {
class cache_op final : public physical_node {
 public:
  explicit cache_op(std::shared_ptr<shared_subplan> s) : _s(std::move(s)) {}
  std::string name() const override { return "cache"; }
  std::string detail() const override { return "shared subplan " + _s->child->name(); }
  int64_t size_hint() const override { return _s->child->size_hint(); }
  const physical_node* subplan() const { return _s->child.get(); }
  physical_ptr* subplan_root() { return &_s->child; }
  /// A consumer's per-partition work runs on each held partition in turn, so the result never has to
  /// be in memory whole.
  bool accepts_fused() const override { return true; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    partition_hook after = std::move(fused);
    fused = nullptr;
    {
      std::lock_guard<std::mutex> g(_s->mu);
      if (!_s->done) {
        // on the CPU each partition is held (spillable) as soon as the subplan has it
        _s->result = where == backend::cpu
                         ? hold_output(*_s->child, ctx, spill_priority::buffered)
                         : held_partitions(ctx, _s->child->execute(ctx), spill_priority::buffered);
        _s->done = true;
      }
    }
    // done: the result is only read from here on
    if (share_into && where == backend::cpu) {
      *share_into = _s->result.view();  // a CPU consumer holds the partitions themselves
      share_into = nullptr;
      return {};
    }
    if (!after) return _s->result.get();
    std::vector<table> out(_s->result.size());
    for_partitions(ctx, static_cast<int64_t>(out.size()), [&](int64_t i) {
      const auto k = static_cast<size_t>(i);
      out[k] = after(_s->result.get(k), k);
    });
    return out;
  }

 private:
  std::shared_ptr<shared_subplan> _s;
};
}  // namespace

const physical_node* cached_subplan(const physical_node& n) {
  auto* c = dynamic_cast<const cache_op*>(&n);
  return c ? c->subplan() : nullptr;
}

physical_ptr* cached_subplan_root(physical_node& n) {
  auto* c = dynamic_cast<cache_op*>(&n);
  return c ? c->subplan_root() : nullptr;
}

std::shared_ptr<shared_subplan> make_shared_subplan(physical_ptr child) {
  auto s = std::make_shared<shared_subplan>();
  s->child = std::move(child);
  return s;
}

physical_ptr make_sink(physical_ptr child, std::shared_ptr<partition_writer> w) {
  return finish(std::make_unique<sink_op>(std::move(w)), backend::cpu, one(std::move(child)), {});
}

physical_ptr make_cache(const std::shared_ptr<shared_subplan>& shared) {
  schema out = shared->child->output_schema;
  return finish(std::make_unique<cache_op>(shared), shared->child->where, {}, std::move(out));
}

physical_ptr make_scan(backend b, std::shared_ptr<const table_source> src, std::vector<std::string> columns,
                       std::vector<expr> predicates, int64_t limit, schema out) {
  cpu::require_cpu(b, "scan");
  return finish(std::make_unique<scan_op>(std::move(src), std::move(columns), std::move(predicates), limit), b, {},
                std::move(out));
}

physical_ptr make_filter(backend b, physical_ptr child, expr predicate) {
  TUG_DISPATCH_CUDA(b, make_filter(std::move(child), std::move(predicate)));
  schema s = child->output_schema;
  return finish(std::make_unique<filter_op>(std::move(predicate)), b, one(std::move(child)), std::move(s));
}

physical_ptr make_project(backend b, physical_ptr child, std::vector<expr> exprs, schema out) {
  TUG_DISPATCH_CUDA(b, make_project(std::move(child), std::move(exprs), std::move(out)));
  return finish(std::make_unique<project_op>(std::move(exprs)), b, one(std::move(child)), std::move(out));
}

physical_ptr make_slice(backend b, physical_ptr child, int64_t offset, int64_t length) {
  TUG_DISPATCH_CUDA(b, make_slice(std::move(child), offset, length));
  schema s = child->output_schema;
  return finish(std::make_unique<slice_op>(offset, length), b, one(std::move(child)), std::move(s));
}

physical_ptr make_concat(backend b, std::vector<physical_ptr> children, schema out) {
  TUG_DISPATCH_CUDA(b, make_concat(std::move(children), std::move(out)));
  return finish(std::make_unique<concat_node>(), b, std::move(children), std::move(out));
}

physical_ptr make_row_index(backend b, physical_ptr child, int64_t offset, schema out) {
  TUG_DISPATCH_CUDA(b, make_row_index(std::move(child), offset, std::move(out)));
  return finish(std::make_unique<row_index_op>(offset), b, one(std::move(child)), std::move(out));
}

}  // namespace tug::exec
