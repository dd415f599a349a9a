#include "tug/exec/physical.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "exec/buckets.hpp"
#include "exec/nvtx.hpp"
#include "exec/pieces.hpp"
#include "exec/size_estimate.hpp"
#include "memory/concatenate_where.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/query_control.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug {

const char* to_string(backend b) { return b == backend::cpu ? "cpu" : "cuda"; }

struct physical_node::fused_totals {
  std::atomic<int64_t> ns{0}, waits{0}, wait_ns{0};
};


std::vector<table> physical_node::execute(exec_context& ctx) {
  check_cancelled();
  auto t0 = std::chrono::steady_clock::now();
  // children run inside run(); their recorded time is subtracted from this operator's
  size_t before = 0;
  device_wait_totals waits0;
  if (ctx.stats) {
    std::lock_guard<std::mutex> g(ctx.stats->mu);
    before = ctx.stats->operators.size();
    waits0 = device_waits();
  }
  // with consumers' work fused in, this node's own outputs are what goes into that work
  struct own_output {
    std::atomic<int64_t> rows{0}, bytes{0}, partitions{0};
  };
  std::shared_ptr<own_output> own;
  if (fused && ctx.stats) {
    own = std::make_shared<own_output>();
    // the hook is its consumer's work (set before the consumer ran this node): the consumer's account
    fused = [own, inner = std::move(fused), consumer = memory_account::current()](table t, size_t index) {
      own->rows += t.num_rows();
      own->bytes += t.memory_usage();
      ++own->partitions;
      memory_account::scope on_account(consumer);
      return inner(std::move(t), index);
    };
  }
  // this operator's own work (here, in the pool tasks it starts and in its fused work) reserves and
  // spills on its account; a child's execute installs the child's
  if (ctx.stats) _account = std::make_shared<memory_account>();
  std::vector<table> out;
  try {
    nvtx_range range{name() + "@" + to_string(where)};
    memory_account::scope on_account(_account.get());
    out = run(ctx);
    fused = nullptr;
  } catch (const memory_error& e) {
    std::string m = e.what();
    if (m.rfind("operator ", 0) == 0) throw;  // the innermost operator already named itself
    throw memory_error("operator " + name() + ": " + m);
  }
  if (query_control* c = query_control::current()) c->operator_done();
  if (ctx.stats) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> g(ctx.stats->mu);
    double child = 0, child_wait = 0;
    int64_t child_waits = 0;
    for (size_t i = before; i < ctx.stats->operators.size(); ++i) {
      // a fused operator's time is inside its child's wall time already
      if (!ctx.stats->operators[i].fused) child += ctx.stats->operators[i].seconds;
      child_waits += ctx.stats->operators[i].device_waits;
      child_wait += ctx.stats->operators[i].wait_seconds;
    }
    const device_wait_totals waits1 = device_waits();
    operator_stats s;
    // (another query running at the same time adds its waits: clamped at zero)
    s.device_waits = std::max<int64_t>(0, waits1.waits - waits0.waits - child_waits);
    s.wait_seconds = std::max(0.0, waits1.seconds - waits0.seconds - child_wait);
    s.name = _fused ? name() + " (fused)" : name();
    s.seconds = secs - child;
    if (_fused) {
      s.fused = true;
      s.seconds = static_cast<double>(_fused->ns) * 1e-9;
      s.device_waits = _fused->waits;
      s.wait_seconds = static_cast<double>(_fused->wait_ns) * 1e-9;
    }
    for (auto& c : children)
      if (c->_stats_line >= 0 && static_cast<size_t>(c->_stats_line) < ctx.stats->operators.size()) {
        s.rows_in += ctx.stats->operators[static_cast<size_t>(c->_stats_line)].rows_out;
        s.bytes_in += ctx.stats->operators[static_cast<size_t>(c->_stats_line)].bytes_out;
      }
    s.peak_host_memory = _account->peak[static_cast<size_t>(memory_kind::host)].load();
    s.peak_device_memory = _account->peak[static_cast<size_t>(memory_kind::device)].load();
    for (size_t d = 0; d < num_transfer_directions; ++d)
      s.moved[d] = _account->moved[d].load();
    if (own) {
      s.rows_out = own->rows;
      s.partitions_out = own->partitions;
      s.bytes_out = own->bytes;
    } else {
      s.rows_out = total_rows(out);
      s.partitions_out = static_cast<int64_t>(out.size());
      for (auto& p : out)
        s.bytes_out += p.memory_usage();
    }
    _stats_line = static_cast<int64_t>(ctx.stats->operators.size());
    ctx.stats->operators.push_back(std::move(s));
  }
  return out;
}

std::string filter_node::detail() const {
  return to_string(_pred) + (_keep.empty() ? "" : " -> " + std::to_string(_keep.size()) + " columns");
}

table filter_node::process_partition(const table& t, exec_context& ctx) {
  return filter_partition(t, children[0]->output_schema, ctx);
}

bool filter_node::narrow_output(const std::vector<std::string>& names) {
  const schema& in = children[0]->output_schema;
  std::vector<size_t> keep;
  schema out;
  for (auto& n : names) {
    keep.push_back(in.index_of(n));
    out.push_back(in[keep.back()]);
  }
  _keep = std::move(keep);
  output_schema = std::move(out);
  return true;
}

std::vector<std::string> filter_node::key_partitioned() const {
  std::vector<std::string> keys = children.at(0)->key_partitioned();
  for (auto& k : keys)
    if (output_schema.find(k) < 0) return {};
  return keys;
}

std::vector<std::string> project_node::key_partitioned() const {
  std::vector<std::string> keys = children.at(0)->key_partitioned();
  for (auto& k : keys) {
    std::string passed;
    for (size_t i = 0; i < _exprs.size() && passed.empty(); ++i) {
      const expr_node* n = &_exprs[i].node();
      while (n->kind == expr_kind::alias) n = &n->args[0].node();
      if (n->kind == expr_kind::column && n->name == k) passed = output_schema[i].name;
    }
    if (passed.empty()) return {};
    k = passed;
  }
  return keys;
}

std::string project_node::detail() const {
  std::string s;
  for (auto& e : _exprs)
    s += (s.empty() ? "" : ", ") + to_string(e);
  return "[" + s + "]";
}

bool project_node::narrow_output(const std::vector<std::string>& names) {
  std::vector<expr> exprs;
  schema out;
  for (auto& n : names) {
    size_t i = output_schema.index_of(n);
    exprs.push_back(_exprs[i]);
    out.push_back(output_schema[i]);
  }
  narrow_to_used(*children[0], exprs);
  _exprs = std::move(exprs);
  output_schema = std::move(out);
  return true;
}

void narrow_to_used(physical_node& child, const std::vector<expr>& exprs) {
  std::vector<std::string> used;
  for (auto& e : exprs)
    for (auto& c : referenced_columns(e))
      if (std::find(used.begin(), used.end(), c) == used.end()) used.push_back(c);
  if (used.empty() || used.size() >= child.output_schema.size()) return;
  std::vector<std::string> ordered;  // keep the child's column order
  for (auto& f : child.output_schema)
    if (std::find(used.begin(), used.end(), f.name) != used.end()) ordered.push_back(f.name);
  child.narrow_output(ordered);
}

table project_node::process_partition(const table& t, exec_context& ctx) {
  std::vector<column> cols = evaluate_partition(t, children[0]->output_schema, ctx);
  if (cols.empty()) return table::empty_with_rows(t.num_rows());
  return table(std::move(cols));
}

table physical_node::process_partition(const table&, exec_context&) {
  throw internal_error("operator " + name() + " has no per-partition form");
}

std::vector<table> physical_node::run_per_partition(exec_context& ctx) {
  physical_node& child = *children.at(0);
  partition_hook after = std::move(fused);
  fused = nullptr;
  if (child.accepts_fused()) {
    // this node's work (then its consumers') runs on each of the child's partitions as it is ready
    if (where == backend::cuda) {
      if (!ctx.device_mr) throw internal_error("a cuda operator ran without a device memory resource");
      child.output_to_device = true;
    }
    auto totals = std::make_shared<fused_totals>();
    child.fused = [this, &ctx, after, totals](table t, size_t index) {
      check_cancelled();
      // each piece of this node's output goes through the consumers as soon as it is made; what they
      // give back (placeholders, or rows for the child's output) is joined in order
      std::vector<table> back;
      auto consume = [&](table o, bool last) {
        exec::more_pieces more(!last);
        if (!after) return back.push_back(std::move(o));
        back.push_back(after(std::move(o), index));
      };
      // A CUDA node keeps its device slot while its consumers run (their guards nest): its output is
      // on the device, and a thread that waited for a slot for each step held its last step's output
      // there meanwhile (16 threads, 4 slots: a 4-way join's chains peaked at 4 GB on the device where
      // 4 threads took 2 GB). A CPU node's work, on the host, gives a slot its thread holds back while
      // it and its consumers run (device_slots::lend: a sink waiting for room must not hold one).
      device_slots::guard g(where == backend::cuda ? ctx.partition_slots : nullptr);
      std::optional<device_slots::lend> host_work;
      std::vector<std::pair<table, bool>> pieces;  // kept until the input is released (one piece)
      {
        const auto t0 = std::chrono::steady_clock::now();
        const device_wait_totals w0 = device_waits_on_this_thread();
        struct account {
          fused_totals& f;
          std::chrono::steady_clock::time_point t0;
          device_wait_totals w0;
          ~account() {
            const device_wait_totals w1 = device_waits_on_this_thread();
            f.ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
            f.waits += w1.waits - w0.waits;
            f.wait_ns += static_cast<int64_t>((w1.seconds - w0.seconds) * 1e9);
          }
        } acc{*totals, t0, w0};
        memory_account::scope on_account(_account.get());  // this node's work, on the child's thread
        if (where == backend::cuda) {
          t = to_device(t, ctx.device_mr);
        } else {
          if (on_device(t)) t = to_host(t, ctx.mr);
          host_work.emplace();
        }
        try {
          auto* producer = dynamic_cast<exec::piece_producer*>(this);
          const std::function<void(table, bool)> emit = [&](table o, bool last) {
            if (pieces.empty() && last) {
              pieces.emplace_back(std::move(o), last);
              return;
            }
            // several pieces: each goes on at once (the input stays while the rest are made)
            for (auto& p : pieces) consume(std::move(p.first), p.second);
            pieces.clear();
            consume(std::move(o), last);
          };
          if (producer)
            producer->process_pieces(t, index, ctx, emit);
          else
            emit(process_indexed(t, index, ctx), true);
        } catch (const memory_error& e) {
          if (std::string(e.what()).rfind("operator ", 0) == 0) throw;
          throw memory_error("operator " + name() + ": " + e.what());
        }
      }
      // the input is released before the consumers run: a chain holds one partition per step it is
      // at, not every step's partition (a fused chain of three joins held all four)
      t = table();
      for (auto& p : pieces) consume(std::move(p.first), p.second);
      if (back.size() == 1) return std::move(back[0]);
      std::vector<table> rows;
      for (auto& b : back)
        if (b.num_rows() > 0) rows.push_back(std::move(b));
      if (rows.empty()) return std::move(back[0]);
      return rows.size() == 1 ? std::move(rows[0]) : concatenate_where_they_are(rows, ctx.mr, ctx.device_mr);
    };
    _fused = totals;
    std::vector<table> out = child.execute(ctx);
    if (ctx.stats) {
      // the child's line counted this node's device waits as its own: they are this node's
      std::lock_guard<std::mutex> g(ctx.stats->mu);
      if (!ctx.stats->operators.empty()) {
        operator_stats& c = ctx.stats->operators.back();
        c.device_waits = std::max<int64_t>(0, c.device_waits - totals->waits);
        c.wait_seconds = std::max(0.0, c.wait_seconds - static_cast<double>(totals->wait_ns) * 1e-9);
      }
    }
    return out;
  }
  auto parts = input(0, ctx);
  std::vector<table> out(parts.size());
  for_partitions(ctx, static_cast<int64_t>(parts.size()), [&](int64_t i) {
    const auto k = static_cast<size_t>(i);
    table o = process_indexed(parts[k], k, ctx);
    parts[k] = table();  // its memory goes as soon as it is processed
    out[k] = after ? after(std::move(o), k) : std::move(o);
  });
  return out;
}

std::string slice_node::detail() const {
  return "offset " + std::to_string(_offset) + " len " + (_length < 0 ? "all" : std::to_string(_length));
}

std::vector<table> slice_node::window(const std::vector<table>& parts) const {
  int64_t n = total_rows(parts);
  // Polars semantics: a negative offset counts from the end, and the window [start, start+length)
  // is clipped to the rows that exist (so slice(-28, 1) of 10 rows is empty).
  int64_t start = _offset < 0 ? n + _offset : _offset;
  int64_t end = _length < 0 ? n : start + _length;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  std::vector<table> out;
  int64_t pos = 0;
  for (auto& p : parts) {
    int64_t a = std::max(start, pos), b = std::min(end, pos + p.num_rows());
    if (a < b) out.push_back(p.slice(a - pos, b - a));
    pos += p.num_rows();
  }
  if (out.empty() && !parts.empty()) out.push_back(parts[0].slice(0, 0));
  return out;
}

std::vector<table> row_index_node::run(exec_context& ctx) {
  // each partition's first index needs the rows of every partition before it: the input is held
  // (spillable as it is produced), then each partition is brought back alone, indexed and handed to the
  // consumers' work (a late-materialized Parquet scan under a memory_limit held its whole input here)
  partition_hook after = std::move(fused);
  fused = nullptr;
  held_partitions in = input_held(0, ctx, spill_priority::buffered);
  std::vector<int64_t> starts(in.size());
  int64_t pos = _offset;
  for (size_t i = 0; i < in.size(); ++i) {
    starts[i] = pos;
    pos += in.rows(i);
  }
  std::vector<table> out(in.size());
  ctx.pool.parallel_for(static_cast<int64_t>(in.size()), [&](int64_t k) {
    auto i = static_cast<size_t>(k);
    table t = in.take(i);
    std::vector<column> cols{index_column(starts[i], t.num_rows(), ctx)};
    for (auto& c : t.columns())
      cols.push_back(c);
    t = table();
    table indexed(std::move(cols));
    out[i] = after ? after(std::move(indexed), i) : std::move(indexed);
  });
  return out;
}

join_node::join_node(join_spec spec) : _spec(std::move(spec)) {
  TUG_EXPECTS(_spec.left_keys.size() == _spec.right_keys.size(), "join: key counts differ");
  TUG_EXPECTS(_spec.how != join_type::right, "join: right joins must be lowered to left joins");
  TUG_EXPECTS(_spec.how == join_type::cross || !_spec.left_keys.empty(), "join: no keys");
}

std::string join_node::name() const { return std::string("hash_join[") + to_string(_spec.how) + "]"; }

std::string join_node::detail() const {
  std::string s;
  for (size_t i = 0; i < _spec.left_keys.size(); ++i)
    s += (i ? ", " : "") + children[0]->output_schema[_spec.left_keys[i]].name + " = " +
         children[1]->output_schema[_spec.right_keys[i]].name;
  if (!s.empty()) s = "on " + s;
  if (!_narrowed) return s;
  // the kept columns, by their input names (the output's are the lowering's temporaries)
  auto names = [](const schema& in, const std::vector<size_t>& cols) {
    std::string r;
    for (size_t c : cols)
      r += (r.empty() ? "" : ", ") + in[c].name;
    return "[" + r + "]";
  };
  s += (s.empty() ? "" : " ") + std::string("-> left ") + names(children[0]->output_schema, _left_keep);
  if (!filtering()) s += " right " + names(children[1]->output_schema, _spec.right_columns);
  return s;
}

bool join_node::narrow_output(const std::vector<std::string>& names) {
  std::vector<size_t> left = left_columns(), keep_left, keep_right;
  schema out;
  size_t next = 0;  // names must follow the output order
  for (auto& n : names) {
    size_t i = output_schema.index_of(n);
    TUG_EXPECTS(i >= next, "join: narrow_output wants a subset of the output in its order");
    next = i + 1;
    if (i < left.size())
      keep_left.push_back(left[i]);
    else
      keep_right.push_back(_spec.right_columns[i - left.size()]);
    out.push_back(output_schema[i]);
  }
  _left_keep = std::move(keep_left);
  _narrowed = true;
  if (!filtering()) _spec.right_columns = std::move(keep_right);
  output_schema = std::move(out);
  return true;
}

std::vector<size_t> join_node::left_columns() const {
  if (_narrowed) return _left_keep;
  std::vector<size_t> all(children[0]->output_schema.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  return all;
}

std::vector<size_t> join_node::build_columns() const {
  std::vector<size_t> cols;
  if (_spec.how != join_type::cross) cols = _spec.right_keys;
  cols.insert(cols.end(), _spec.right_columns.begin(), _spec.right_columns.end());
  return cols;
}

rank_need physical_node::input_need(size_t) const {
  return per_partition() ? rank_need{rank_need::kind::any, {}} : rank_need{};
}

rank_need unique_node::input_need(size_t) const {
  if (_maintain_order) return {};  // the first occurrence over all ranks: rank 0 sees every row in order
  return {rank_need::kind::keys, _subset};
}

namespace exec {
rank_need aggregate_need(const std::vector<size_t>& keys, bool maintain_order, bool merges_states) {
  if (maintain_order) return {};
  if (keys.empty()) return merges_states ? rank_need{rank_need::kind::all, {}} : rank_need{};
  return {rank_need::kind::keys, keys};
}
}  // namespace exec

int64_t physical_node::size_hint() const {
  int64_t most = children.empty() ? -1 : 0;
  for (auto& c : children) {
    const int64_t h = c->size_hint();
    if (h < 0) return -1;
    most = std::max(most, h);
  }
  return most;
}

std::vector<table> join_node::run(exec_context& ctx) {
  // The build side is the right one, indexed first, and the left side streams through the probe,
  // unless the left side may be the smaller one (or the sizes are unknown) and the backend can build
  // over it instead: join_partitions then sees both sides whole and indexes the smaller.
  const bool left_may_be_smaller =
      exec::join_may_hold_both_sides(_spec.how, children[0]->size_hint(), children[1]->size_hint());
  // on the CPU, a side that may not fit splits both sides into hash buckets (join_buckets)
  bool bucketable = where == backend::cpu && _spec.how != join_type::cross;
  for (size_t k = 0; k < _spec.left_keys.size(); ++k)
    bucketable = bucketable && children[0]->output_schema[_spec.left_keys[k]].type ==
                                   children[1]->output_schema[_spec.right_keys[k]].type;
  partition_hook after = std::move(fused);
  fused = nullptr;
  if (streams_probe(ctx) && !left_may_be_smaller) {
    held_partitions right = input_held(1, ctx, spill_priority::buffered);
    if (const size_t buckets =
            bucketable ? exec::external_buckets(ctx, right.bytes() + right.rows() * exec::index_scratch_per_row) : 0) {
      held_partitions left = input_held(0, ctx, spill_priority::buffered);
      return join_buckets(left, right, buckets, after, ctx);
    }
    start_probe(right.take(), ctx);
    fused = after;  // run_per_partition takes it; finish_probe's rows need it too
    std::vector<table> out = run_per_partition(ctx);
    std::vector<table> rest = finish_probe(ctx);
    if (out.empty() && rest.empty()) rest.push_back(empty_table(output_schema));
    for (auto& t : rest) {
      const size_t index = out.size();
      out.push_back(after ? after(std::move(t), index) : std::move(t));
    }
    return out;
  }
  std::vector<table> out;
  {
    // each side may spill while the other runs
    held_partitions left = input_held(0, ctx, spill_priority::buffered);
    held_partitions right = input_held(1, ctx, spill_priority::buffered);
    // (the index is over one side, the smaller where the backend may choose)
    const int64_t indexed = std::min(left.rows(), right.rows()) * exec::index_scratch_per_row;
    if (const size_t buckets = bucketable ? exec::external_buckets(ctx, left.bytes() + right.bytes() + indexed) : 0)
      return join_buckets(left, right, buckets, after, ctx);
    out = join_partitions(left.take(), right.take(), ctx);
  }
  apply_after(ctx, after, out, 0);
  return out;
}

void physical_node::apply_after(exec_context& ctx, const partition_hook& after, std::vector<table>& out,
                                size_t first) const {
  if (!after) return;
  for_partitions(ctx, static_cast<int64_t>(out.size() - first), [&](int64_t i) {
    const size_t k = first + static_cast<size_t>(i);
    out[k] = after(std::move(out[k]), k);
  });
}

std::vector<table> join_node::join_buckets(held_partitions& left, held_partitions& right, size_t count,
                                           const partition_hook& after, exec_context& ctx) {
  exec::hash_buckets hb(ctx, {_spec.left_keys, _spec.right_keys}, count);
  hb.add(1, right);
  hb.add(0, left);
  // a bucket without left rows gives no output unless unmatched right rows are kept (full), one
  // without right rows none unless unmatched left rows are (left, anti, full)
  const bool keeps_left = _spec.how == join_type::left || _spec.how == join_type::anti || _spec.how == join_type::full;
  const bool keeps_right = _spec.how == join_type::full;
  std::vector<table> out;
  exec::for_each_bucket(hb, [&](exec::hash_buckets& h, size_t b, bool fits) {
    const int64_t nl = h.rows(0, b), nr = h.rows(1, b);
    if ((nl == 0 && !keeps_right) || (nr == 0 && !keeps_left) || (nl == 0 && nr == 0)) {
      h.pieces(0, b);  // released
      h.pieces(1, b);
      return;
    }
    const size_t first = out.size();
    if (fits) {
      std::vector<table> l = h.take(0, b), r = h.take(1, b);
      if (l.empty()) l.push_back(empty_table(children[0]->output_schema));
      if (r.empty()) r.push_back(empty_table(children[1]->output_schema));
      for (auto& t : join_partitions(std::move(l), std::move(r), ctx)) out.push_back(std::move(t));
    } else {
      // one key value (or every hash bit used) and too large: the right side of the bucket is indexed
      // whole and its left pieces are probed one at a time, as the streamed probe does
      const std::string sizes = exec::bucket_sizes(h, b, {"left", "right"});
      try {
        std::vector<spillable_ptr> l = h.pieces(0, b);
        start_probe(h.take(1, b), ctx);
        for (auto& piece : l) {
          check_cancelled();
          table t = piece->take();
          piece.reset();
          table o = process_partition(t, ctx);
          t = table();
          const size_t index = out.size();
          out.push_back(after ? after(std::move(o), index) : std::move(o));
        }
        const size_t rest = out.size();
        for (auto& t : finish_probe(ctx)) out.push_back(std::move(t));
        apply_after(ctx, after, out, rest);
      } catch (const memory_error& e) {
        throw exec::unsplittable_bucket(name(), children[0]->output_schema, _spec.left_keys, sizes,
                                        "does not fit with its right rows indexed whole", e);
      }
      return;
    }
    apply_after(ctx, after, out, first);
  });
  if (out.empty()) {
    out.push_back(empty_table(output_schema));
    apply_after(ctx, after, out, 0);
  }
  return out;
}

int64_t join_node::target_rows(const exec_context& ctx) {
  return partition_rows(ctx.options);
}

table join_node::empty_table(const schema& s) {
  std::vector<column> cols;
  for (auto& f : s)
    cols.push_back(make_empty_column(f.type));
  return cols.empty() ? table::empty_with_rows(0) : table(std::move(cols));
}

table join_node::join_columns(const table& left, const table& right) {
  std::vector<column> cols = left.columns();
  for (auto& c : right.columns())
    cols.push_back(c);
  if (cols.empty()) return table::empty_with_rows(left.num_rows());
  return table(std::move(cols));
}

sort_node::sort_node(std::vector<size_t> keys, std::vector<bool> descending, std::vector<bool> nulls_last, bool stable,
                     int64_t limit)
    : _keys(std::move(keys)),
      _descending(std::move(descending)),
      _nulls_last(std::move(nulls_last)),
      _stable(stable),
      _limit(limit) {
  TUG_EXPECTS(!_keys.empty(), "sort needs at least one key");
  TUG_EXPECTS(_descending.size() == _keys.size() && _nulls_last.size() == _keys.size(),
              "sort: descending and nulls_last need one entry per key");
}

std::string sort_node::detail() const {
  std::string s;
  for (size_t i = 0; i < _keys.size(); ++i) {
    s += (i ? ", " : "") + output_schema[_keys[i]].name;
    if (_descending[i]) s += " desc";
    if (_nulls_last[i]) s += " nulls_last";
  }
  s = "by [" + s + "]";
  if (_stable) s += " stable";
  if (_limit >= 0) s += " limit " + std::to_string(_limit);
  return s;
}

std::vector<table> sort_node::run(exec_context& ctx) {
  partition_hook after = std::move(fused);
  fused = nullptr;
  // the input may spill while it is produced
  held_partitions in = input_held(0, ctx, spill_priority::buffered);
  if (in.size() == 0) return {};
  // the CPU kernel's per-row temporaries count with the input
  const int64_t need = in.bytes() + in.rows() * exec::sort_scratch_per_row(_keys.size());
  if (const size_t count = where == backend::cpu && _limit != 0 ? exec::external_buckets(ctx, need) : 0) {
    exec::range_sort rs(ctx, _keys, _limit);
    rs.locate = [&](const table& keys, const table& bounds) { return locate(keys, bounds, ctx); };
    rs.sort = [&](const std::vector<table>& parts, int64_t n) { return sort_partitions(parts, n, ctx); };
    rs.after = after;
    return rs.run(in, count);
  }
  auto parts = in.take();
  const int64_t n = total_rows(parts);
  std::vector<table> out =
      n == 0 || _limit == 0 ? std::vector<table>{parts[0].slice(0, 0)} : sort_partitions(parts, n, ctx);
  apply_after(ctx, after, out, 0);
  return out;
}

std::vector<table> unique_node::run(exec_context& ctx) {
  partition_hook after = std::move(fused);  // set where the backend accepts_fused() (the CPU's)
  fused = nullptr;
  held_partitions in = input_held(0, ctx, spill_priority::buffered);
  if (in.size() == 0) return {};
  // on the CPU, an input that may not fit is split into hash buckets by the subset columns (all rows
  // of one key in one bucket, in input order there, so keep first/last/none hold per bucket) and
  // deduplicated bucket by bucket; the buckets' order is not the input's, which only maintain_order
  // promises: that keeps the whole-input form
  if (const size_t count = where == backend::cpu && !_maintain_order
                               ? exec::external_buckets(ctx, in.bytes() + in.rows() * exec::index_scratch_per_row)
                               : 0) {
    std::vector<size_t> keys = _subset;
    if (keys.empty())
      for (size_t c = 0; c < output_schema.size(); ++c) keys.push_back(c);
    if (!keys.empty()) {
      exec::hash_buckets hb(ctx, {keys}, count);
      hb.add(0, in);
      std::vector<table> out;
      exec::for_each_bucket(hb, [&](exec::hash_buckets& h, size_t b, bool fits) {
        if (h.rows(0, b) == 0) return;
        // a bucket of one key too large to split is deduplicated whole all the same (as an aggregate's)
        const std::string sizes = fits ? std::string() : exec::bucket_sizes(h, b, {"input"});
        const size_t first = out.size();
        try {
          for (auto& t : unique_partitions(h.take(0, b), ctx))
            if (t.num_rows() > 0) out.push_back(std::move(t));
        } catch (const memory_error& e) {
          if (fits) throw;
          throw exec::unsplittable_bucket(name(), children[0]->output_schema, keys, sizes, "does not fit", e);
        }
        apply_after(ctx, after, out, first);  // each bucket's output goes on before the next bucket's
      });
      if (out.empty()) {  // no rows: one empty partition of the schema
        std::vector<column> cols;
        for (auto& f : output_schema) cols.push_back(make_empty_column(f.type));
        out.push_back(table(std::move(cols)));
        apply_after(ctx, after, out, 0);
      }
      return out;
    }
  }
  std::vector<table> out = unique_partitions(in.take(), ctx);
  apply_after(ctx, after, out, 0);
  return out;
}

std::vector<table> concat_node::run(exec_context& ctx) {
  // each child's output may spill while the later children run
  std::vector<held_partitions> held;
  for (size_t i = 0; i < children.size(); ++i)
    held.push_back(input_held(i, ctx, spill_priority::buffered));
  std::vector<table> out;
  for (auto& h : held)
    for (auto& p : h.take())
      out.push_back(std::move(p));
  return out;
}

held_partitions::held_partitions(exec_context& ctx, std::vector<table> parts, spill_priority p) {
  if (!ctx.memory) {
    _plain = std::move(parts);
    return;
  }
  for (auto& t : parts)
    _spillable.push_back(ctx.memory->make_spillable(std::move(t), p));
}

std::vector<table> held_partitions::take() {
  std::vector<table> out = std::move(_plain);
  for (auto& s : _spillable)
    out.push_back(!s ? table() : _view ? s->acquire().get() : s->take());
  _spillable.clear();
  return out;
}

int64_t held_partitions::bytes() const {
  int64_t b = 0;
  for (auto& t : _plain) b += t.memory_usage();
  for (auto& s : _spillable)
    if (s) b += s->bytes();
  return b;
}

int64_t held_partitions::rows() const {
  int64_t n = 0;
  for (auto& t : _plain) n += t.num_rows();
  for (auto& s : _spillable)
    if (s) n += s->num_rows();
  return n;
}

int64_t held_partitions::rows(size_t i) const {
  if (i < _plain.size()) return _plain[i].num_rows();
  const spillable_ptr& s = _spillable.at(i - _plain.size());
  return s ? s->num_rows() : 0;
}

table held_partitions::take(size_t i) {
  if (i < _plain.size()) return std::move(_plain[i]);
  spillable_ptr& s = _spillable.at(i - _plain.size());
  if (!s) return table();
  table t = _view ? s->acquire().get() : s->take();
  s.reset();
  return t;
}

held_partitions held_partitions::view() const {
  held_partitions v;
  v._plain = _plain;
  v._spillable = _spillable;
  v._view = true;
  return v;
}

table held_partitions::get(size_t i) const {
  if (i < _plain.size()) return _plain[i];
  const spillable_ptr& s = _spillable.at(i - _plain.size());
  return s ? s->acquire().get() : table();
}

std::vector<table> held_partitions::get() const {
  std::vector<table> out = _plain;
  for (auto& s : _spillable)
    out.push_back(s->acquire().get());
  return out;
}

std::string unique_node::detail() const {
  std::string s;
  for (size_t i : _subset)
    s += (s.empty() ? "" : ", ") + output_schema[i].name;
  s = "subset [" + (_subset.empty() ? std::string("all") : s) + "] keep " + to_string(_keep);
  if (_maintain_order) s += " maintain_order";
  return s;
}

std::vector<table> physical_node::input(size_t i, exec_context& ctx) {
  physical_node& child = *children.at(i);
  if (where == backend::cuda) child.output_to_device = true;
  std::vector<table> parts = child.execute(ctx);
  if (where == backend::cuda) {
    if (!ctx.device_mr) throw internal_error("a cuda operator ran without a device memory resource");
    return map_partitions(ctx, parts, [&](const table& t) { return to_device(t, ctx.device_mr); });
  }
  bool any = false;
  for (auto& t : parts)
    any = any || on_device(t);
  if (!any) return parts;
  return map_partitions(ctx, parts, [&](const table& t) { return to_host(t, ctx.mr); });
}

held_partitions physical_node::input_held(size_t i, exec_context& ctx, spill_priority p) {
  if (where != backend::cpu) return held_partitions(ctx, input(i, ctx), p);
  return hold_output(*children.at(i), ctx, p);
}

held_partitions physical_node::hold_output(physical_node& child, exec_context& ctx, spill_priority p) {
  held_partitions shared;  // a shared subplan's result, when the child is its cache
  child.share_into = &shared;
  struct clear {
    physical_node& c;
    ~clear() { c.share_into = nullptr; }
  } cleared{child};
  // a device partition's copy that does not fit names what it copied
  auto host = [&](table t) {
    if (!on_device(t)) return t;
    try {
      return to_host(t, ctx.mr);
    } catch (const memory_error& e) {
      throw memory_error("copying the output of operator " + child.name() + " from the device to host memory: " +
                         e.what());
    }
  };
  if (!ctx.memory || !child.accepts_fused() || child.fused) {
    std::vector<table> parts = child.execute(ctx);
    if (shared.is_view()) return shared;
    ctx.pool.parallel_for(static_cast<int64_t>(parts.size()), [&](int64_t i) {
      table& t = parts[static_cast<size_t>(i)];
      t = host(std::move(t));
    });
    return held_partitions(ctx, std::move(parts), p);
  }
  // each partition is held as soon as the child has it (the child's outputs are then placeholders)
  // (an index may come in several pieces, in order from one thread: exec/pieces.hpp)
  std::mutex mu;
  std::vector<std::pair<size_t, spillable_ptr>> got;
  size_t lasts = 0;
  child.fused = [&](table t, size_t index) {
    // without a consumer operator (the child is a plan's root) what holding moves counts for the child
    memory_account::scope on_account(memory_account::current() ? memory_account::current() : child._account.get());
    spillable_ptr s = ctx.memory->make_spillable(host(std::move(t)), p);
    const bool last = exec::last_piece();
    std::lock_guard<std::mutex> g(mu);
    got.emplace_back(index, std::move(s));
    lasts += last ? 1 : 0;
    return table();
  };
  const size_t n = child.execute(ctx).size();
  if (shared.is_view()) return shared;
  if (lasts != n)
    throw internal_error("operator " + child.name() + " returned " + std::to_string(n) + " partitions but handed " +
                         std::to_string(lasts) + " to its consumer's hook");
  std::stable_sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<spillable_ptr> parts;
  parts.reserve(got.size());
  for (auto& g : got) parts.push_back(std::move(g.second));
  return held_partitions(std::move(parts));
}

std::string exec::backend_unsupported(backend b, const op_request& r) {
  if (b == backend::cpu) return {};
#ifdef TUG_WITH_CUDA
  return cuda::unsupported(r);
#else
  return "tug was built without CUDA";
#endif
}

bool uses_backend(const physical_node& root, backend b) {
  if (root.where == b) return true;
  for (auto& c : root.children)
    if (uses_backend(*c, b)) return true;
  return false;
}

std::vector<table> physical_node::map_partitions(exec_context& ctx, const std::vector<table>& in,
                                                 const std::function<table(const table&)>& f) const {
  std::vector<table> out(in.size());
  for_partitions(ctx, static_cast<int64_t>(in.size()),
                 [&](int64_t i) { out[static_cast<size_t>(i)] = f(in[static_cast<size_t>(i)]); });
  return out;
}

void physical_node::for_partitions(exec_context& ctx, int64_t n, const std::function<void(int64_t)>& f) const {
  if (where != backend::cuda || !ctx.partition_slots) return ctx.pool.parallel_for(n, f);
  ctx.pool.parallel_for(n, [&](int64_t i) {
    device_slots::guard g(ctx.partition_slots);
    f(i);
  });
}

namespace {
/// The slots whose slot the calling thread holds (null: none).
thread_local device_slots* held_device_slot = nullptr;
}  // namespace

void device_slots::take() {
  std::unique_lock<std::mutex> lock(_mu);
  _cv.wait(lock, [&] { return _free > 0; });
  --_free;
  _peak = std::max(_peak, ++_held);
  held_device_slot = this;
}

void device_slots::give_back() {
  {
    std::lock_guard<std::mutex> lock(_mu);
    ++_free;
    --_held;
  }
  held_device_slot = nullptr;
  _cv.notify_one();
}

device_slots::guard::guard(device_slots* s) {
  if (!s || held_device_slot) return;
  s->take();
  _s = s;
}

device_slots::guard::~guard() {
  if (_s) _s->give_back();
}

device_slots::lend::lend() : _s(held_device_slot) {
  if (_s) _s->give_back();
}

device_slots::lend::~lend() {
  if (_s) _s->take();
}

int64_t operator_stats::spilled_from_device() const {
  return moved[static_cast<size_t>(transfer_direction::device_to_pinned)] +
         moved[static_cast<size_t>(transfer_direction::device_to_host)];
}

int64_t operator_stats::spilled_to_disk() const { return moved[static_cast<size_t>(transfer_direction::host_to_disk)]; }

std::string exec_statistics::to_string() const {
  // columns that would be zero on every line are left out: device waits and their time (a GPU query),
  // the device's peak, what spilled from the device and to disk
  bool waits = false, host_peak = false, device_peak = false, from_device = false, to_disk = false;
  for (auto& o : operators) {
    waits = waits || o.device_waits > 0;
    host_peak = host_peak || o.peak_host_memory > 0;
    device_peak = device_peak || o.peak_device_memory > 0;
    from_device = from_device || o.spilled_from_device() > 0;
    to_disk = to_disk || o.spilled_to_disk() > 0;
  }
  auto mib = [](int64_t b) { return static_cast<double>(b) / (1 << 20); };
  std::string s = "operator                          rows_in   rows_out  partitions   in_MiB  out_MiB   seconds";
  if (waits) s += "   waits  wait_s";
  if (host_peak) s += "  peak_MiB";
  if (device_peak) s += "  dev_peak_MiB";
  if (from_device) s += "  dev_spill_MiB";
  if (to_disk) s += "  disk_spill_MiB";
  s += "\n";
  char buf[256];
  for (auto& o : operators) {
    std::snprintf(buf, sizeof buf, "%-30s %10lld %10lld %11lld %8.1f %8.1f %9.4f", o.name.c_str(),
                  static_cast<long long>(o.rows_in), static_cast<long long>(o.rows_out),
                  static_cast<long long>(o.partitions_out), mib(o.bytes_in), mib(o.bytes_out), o.seconds);
    s += buf;
    if (waits) {
      std::snprintf(buf, sizeof buf, " %7lld %7.4f", static_cast<long long>(o.device_waits), o.wait_seconds);
      s += buf;
    }
    auto column = [&](bool shown, int width, int64_t bytes) {
      if (!shown) return;
      std::snprintf(buf, sizeof buf, " %*.1f", width, mib(bytes));
      s += buf;
    };
    column(host_peak, 9, o.peak_host_memory);
    column(device_peak, 13, o.peak_device_memory);
    column(from_device, 14, o.spilled_from_device());
    column(to_disk, 15, o.spilled_to_disk());
    s += "\n";
  }
  std::snprintf(buf, sizeof buf, "total %.4f s, peak memory %.1f MiB", total_seconds, mib(peak_memory));
  s += buf;
  if (peak_device_memory > 0) {
    std::snprintf(buf, sizeof buf, ", peak device memory %.1f MiB", mib(peak_device_memory));
    s += buf;
  }
  if (peak_disk > 0) {
    std::snprintf(buf, sizeof buf, ", peak spill file %.1f MiB", mib(peak_disk));
    s += buf;
  }
  s += "\n" + transfers;
  return s;
}

namespace {
/// `v` as a JSON string literal.
std::string json_string(const std::string& v) {
  std::string s = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') {
      s += '\\';
      s += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
      s += esc;
    } else {
      s += c;
    }
  }
  return s + "\"";
}
}  // namespace

std::string exec_statistics::to_json() const {
  std::string s = "{\"operators\": [";
  char buf[512];
  for (size_t i = 0; i < operators.size(); ++i) {
    const operator_stats& o = operators[i];
    s += (i ? ", {\"name\": " : "{\"name\": ") + json_string(o.name);
    std::snprintf(buf, sizeof buf,
                  ", \"rows_in\": %lld, \"bytes_in\": %lld, \"rows_out\": %lld, \"partitions_out\": %lld, "
                  "\"bytes_out\": %lld, \"seconds\": %.6f, \"device_waits\": %lld, \"wait_seconds\": %.6f, "
                  "\"fused\": %s, \"peak_host_memory\": %lld, \"peak_device_memory\": %lld, \"moved\": {",
                  static_cast<long long>(o.rows_in), static_cast<long long>(o.bytes_in),
                  static_cast<long long>(o.rows_out), static_cast<long long>(o.partitions_out),
                  static_cast<long long>(o.bytes_out), o.seconds, static_cast<long long>(o.device_waits),
                  o.wait_seconds, o.fused ? "true" : "false", static_cast<long long>(o.peak_host_memory),
                  static_cast<long long>(o.peak_device_memory));
    s += buf;
    for (size_t d = 0; d < num_transfer_directions; ++d) {
      std::snprintf(buf, sizeof buf, "%s\"%s\": %lld", d ? ", " : "", tug::to_string(transfer_direction(d)),
                    static_cast<long long>(o.moved[d]));
      s += buf;
    }
    s += "}}";
  }
  std::snprintf(buf, sizeof buf,
                "], \"peak_memory\": %lld, \"peak_device_memory\": %lld, \"peak_disk\": %lld, \"total_seconds\": %.6f",
                static_cast<long long>(peak_memory), static_cast<long long>(peak_device_memory),
                static_cast<long long>(peak_disk), total_seconds);
  s += buf;
  s += ", \"transfers\": " + (transfers_json.empty() ? std::string("{}") : transfers_json) + "}";
  return s;
}

namespace {
void render(const physical_node& n, int depth, std::string& out) {
  std::string line(static_cast<size_t>(depth) * 2, ' ');
  if (n.sync_point()) line += "[sync] ";
  line += n.name();
  std::string d = n.detail();
  if (!d.empty()) line += " " + d;
  line += "  @" + std::string(to_string(n.where));
  out += line + "\n";
  for (auto& c : n.children)
    render(*c, depth + 1, out);
}
}  // namespace

std::string to_string(const physical_node& root) {
  std::string out;
  render(root, 0, out);
  return out;
}

}  // namespace tug
