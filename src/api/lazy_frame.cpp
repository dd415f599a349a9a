#include "tug/api/lazy_frame.hpp"
#include "tug/dist/ranks.hpp"

#include "forked_ranks.hpp"

#include "tug/memory/device.hpp"
#include "tug/memory/scratch.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "tug/dist/distribute.hpp"
#include "tug/plan/lower.hpp"
#include "tug/plan/optimizer.hpp"
#include "tug/runtime/query_control.hpp"

namespace tug {

lazy_frame group_by_builder::agg(std::vector<expr> aggs) const {
  return lazy_frame(plan::group_by(_in, _keys, std::move(aggs), _maintain_order));
}

lazy_frame lazy_frame::filter(const expr& predicate) const {
  if (!contains_agg(predicate)) return lazy_frame(plan::filter(_plan, predicate));
  // an aggregate of the whole input in the predicate (Polars' `col("x") == col("x").max()`): the
  // predicate as a column first (with_columns broadcasts the aggregate), the filter on it, then the
  // input's columns
  std::string tmp = "__tug_filter_predicate";
  while (_plan->schema.contains(tmp))
    tmp += "_";
  lazy_frame with = with_columns({predicate.alias(tmp)});
  const data_type& t = with.schema().type_of(tmp);
  if (t.id != type_id::boolean)
    throw type_error("filter predicate must be boolean, got " + to_string(t) + ": " + to_string(predicate));
  std::vector<expr> keep;
  for (const field& f : _plan->schema)
    keep.push_back(col(f.name));
  return with.filter(col(tmp)).select(std::move(keep));
}
lazy_frame lazy_frame::select(std::vector<expr> exprs) const {
  return lazy_frame(plan::select(_plan, std::move(exprs)));
}
lazy_frame lazy_frame::with_columns(std::vector<expr> exprs) const {
  return lazy_frame(plan::with_columns(_plan, std::move(exprs)));
}
group_by_builder lazy_frame::group_by(std::vector<expr> keys, bool maintain_order) const {
  return group_by_builder(_plan, std::move(keys), maintain_order);
}
group_by_builder lazy_frame::group_by(const std::vector<std::string>& keys, bool maintain_order) const {
  std::vector<expr> k;
  for (auto& s : keys)
    k.push_back(col(s));
  return group_by(std::move(k), maintain_order);
}
lazy_frame lazy_frame::join(const lazy_frame& other, std::vector<expr> left_on, std::vector<expr> right_on,
                            join_type how, std::string suffix) const {
  return lazy_frame(plan::join(_plan, other._plan, std::move(left_on), std::move(right_on), how, std::move(suffix)));
}
lazy_frame lazy_frame::join(const lazy_frame& other, const std::vector<std::string>& on, join_type how,
                            std::string suffix) const {
  std::vector<expr> k;
  for (auto& s : on)
    k.push_back(col(s));
  return join(other, k, k, how, std::move(suffix));
}
lazy_frame lazy_frame::cross_join(const lazy_frame& other, std::string suffix) const {
  return lazy_frame(plan::join(_plan, other._plan, {}, {}, join_type::cross, std::move(suffix)));
}
lazy_frame lazy_frame::sort(std::vector<expr> by, sort_options opts) const {
  return lazy_frame(plan::sort(_plan, std::move(by), opts.descending, opts.nulls_last, opts.maintain_order));
}
lazy_frame lazy_frame::sort(const std::string& column, bool descending) const {
  return sort({col(column)}, sort_options{{descending}, {}, false});
}
lazy_frame lazy_frame::slice(int64_t offset, int64_t length) const {
  return lazy_frame(plan::slice(_plan, offset, length));
}
lazy_frame lazy_frame::unique(std::vector<std::string> subset, unique_keep keep, bool maintain_order) const {
  return lazy_frame(plan::unique(_plan, std::move(subset), keep, maintain_order));
}
lazy_frame lazy_frame::rename(const std::map<std::string, std::string>& mapping) const {
  for (auto& [from, to] : mapping)
    _plan->schema.index_of(from);
  std::vector<expr> exprs;
  for (auto& f : _plan->schema) {
    auto it = mapping.find(f.name);
    exprs.push_back(it == mapping.end() ? col(f.name) : col(f.name).alias(it->second));
  }
  return select(std::move(exprs));
}
lazy_frame lazy_frame::drop(const std::vector<std::string>& columns) const {
  for (auto& c : columns)
    _plan->schema.index_of(c);
  std::vector<expr> exprs;
  for (auto& f : _plan->schema)
    if (std::find(columns.begin(), columns.end(), f.name) == columns.end()) exprs.push_back(col(f.name));
  return select(std::move(exprs));
}
lazy_frame lazy_frame::with_row_index(std::string name, int64_t offset) const {
  return lazy_frame(plan::with_row_index(_plan, std::move(name), offset));
}

lazy_frame lazy_frame::map_partitions(const user_kernel& k) const {
  return lazy_frame(plan::map_partitions(_plan, std::make_shared<const user_kernel>(k)));
}

void lazy_frame::foreach_partition(const user_kernel& k, const engine_options& opts) const {
  if (k.output_schema().size() > 0 || !k.kept().empty())
    throw invalid_argument_error("foreach_partition: kernel \"" + k.name() +
                                 "\" declares output or kept columns; use map_partitions to keep them");
  map_partitions(k).collect(opts);
}

std::string lazy_frame::explain(const engine_options& opts) const {
  auto comm = dist::world();
  if (const int forked = forked_ranks_for(opts); forked > 1) comm = dist::planning_ranks(forked);
  plan_ptr opt = optimize(_plan, dist::flags_for_ranks(opts.optimizer, query_ranks_for(opts)), opts.check_optimizer_schema);
  std::vector<std::string> fallbacks;
  engine_options quiet = opts;
  if (quiet.fallback == fallback_mode::warn) quiet.fallback = fallback_mode::silent;
  physical_ptr phys = lower(opt, quiet, &fallbacks);
  if (comm->size() > 1) {
    auto q = std::make_shared<dist::query_ranks>();
    q->comm = comm;
    q->query = -1;  // planned only: nothing is exchanged
    phys = dist::distribute(std::move(phys), q, opts);
  }
  std::string out = "optimized logical plan:\n" + to_string(opt) +
                    "\nphysical plan ([sync] = partitions meet; @ = backend):\n" + to_string(*phys);
  for (auto& f : fallbacks)
    out += "fallback: " + f + "\n";
  return out;
}

query_result run_plan(const plan_ptr& p, const engine_options& opts) { return run_plan(p, opts, nullptr); }

namespace {

/// Operators of the plan, each shared subplan once.
int64_t count_operators(const physical_node& n, std::vector<const physical_node*>& shared) {
  int64_t k = 1;
  if (const physical_node* s = exec::cached_subplan(n))
    if (std::find(shared.begin(), shared.end(), s) == shared.end()) {
      shared.push_back(s);
      k += count_operators(*s, shared);
    }
  for (auto& c : n.children)
    k += count_operators(*c, shared);
  return k;
}

/// Rows of the plan's scans as their sources know them without reading (each shared scan once; a pushed-down
/// limit caps its scan); -1 when a source does not know.
int64_t source_rows(const plan_ptr& p, std::vector<const plan_node*>& seen) {
  if (std::find(seen.begin(), seen.end(), p.get()) != seen.end()) return 0;
  seen.push_back(p.get());
  int64_t rows = 0;
  if (p->kind == plan_kind::scan && p->source) {
    if (auto* m = dynamic_cast<const memory_source*>(p->source.get())) {
      rows = total_rows(m->partitions());
    } else {
      auto pieces = p->source->statistics({});
      if (pieces.empty()) return -1;
      for (auto& piece : pieces)
        rows += piece.rows;
    }
    if (p->length >= 0) rows = std::min(rows, p->length);
  }
  for (auto& in : p->inputs) {
    const int64_t r = source_rows(in, seen);
    if (r < 0) return -1;
    rows += r;
  }
  return rows;
}

/// Shows the query's memory manager to its query_control's progress() while it lives.
struct attached_memory {
  query_control* control;
  const memory_manager* memory;
  attached_memory(query_control* c, const memory_manager* m) : control(c && c->attach(m) ? c : nullptr), memory(m) {}
  ~attached_memory() {
    if (control) control->detach(memory);
  }
  attached_memory(const attached_memory&) = delete;
  attached_memory& operator=(const attached_memory&) = delete;
};

}  // namespace

query_result run_plan_as_rank(const plan_ptr& p, const engine_options& opts, std::shared_ptr<partition_writer> sink,
                              std::shared_ptr<dist::query_ranks> ranks, bool leave_split) {
  auto t0 = std::chrono::steady_clock::now();
  query_result r;
  // the memory of the query outlives its plan (held partitions of the plan spill through it)
  auto budget = std::make_shared<memory_budget>(opts.memory_limit, "host", "memory_limit");
  if (opts.memory_limit > 0) bound_allocator_retention();
  auto mr = std::make_shared<host_memory_resource>(budget);
  std::shared_ptr<memory_budget> device_budget;
  std::shared_ptr<memory_resource> device_mr, pinned_mr;
  std::unique_ptr<memory_manager> memory;
  physical_ptr phys = lower(p, opts, &r.fallbacks);
  // on several ranks: exchanges where nodes need rows from other ranks, the result on rank 0; a sink
  // writes there (the callers give the other ranks none), or each rank writes its share (rank_share_writer)
  if (ranks)
    phys = dist::distribute(std::move(phys), ranks, opts,
                            leave_split || dynamic_cast<dist::rank_share_writer*>(sink.get()) != nullptr);
  const bool sinks = sink != nullptr;
  if (sinks) phys = exec::make_sink(std::move(phys), std::move(sink));
  r.physical_plan = to_string(*phys);
  query_control* control = query_control::current();
  if (control) {
    std::vector<const plan_node*> seen;
    std::vector<const physical_node*> shared;
    control->plan_started(count_operators(*phys, shared), source_rows(p, seen));
  }
  exec_statistics stats;
  exec_context ctx{opts, global_thread_pool(opts.num_threads), mr.get(), opts.statistics ? &stats : nullptr};
  device_slots slots(opts.num_streams);
  memory_manager::resources res;
  res.host = mr.get();
  res.host_budget = budget.get();
  if (uses_backend(*phys, backend::cuda)) {
    ctx.partition_slots = &slots;
    device_budget = std::make_shared<memory_budget>(
        parse_device_limit(opts.spill_device_limit, current_device_info().total_memory), "device",
        "spill_device_limit");
    device_mr = make_device_resource(device_budget);
    ctx.device_mr = device_mr.get();
    ctx.device_budget = device_budget.get();
    res.device = device_mr.get();
    res.device_budget = device_budget.get();
    if (opts.pinned_memory) {
      pinned_mr = make_pinned_resource(budget);  // counted against the host memory_limit
      ctx.staging_mr = pinned_mr.get();
      res.pinned = pinned_mr.get();
    }
  }
  memory = std::make_unique<memory_manager>(opts, res);
  ctx.memory = memory.get();
  attached_memory shown(control, memory.get());
  std::vector<table> parts;
  try {
    scratch_budget::scope scratch(budget.get());  // operators' working memory counts too (memory/scratch.hpp)
    if (sinks) {
      parts = phys->execute(ctx);
    } else {
      // the result's partitions leave the device and become spillable as the root makes them, so that
      // neither memory holds the whole result beside the operators still running (a 4-way join's
      // result piled up unspillable under a 64 MiB memory_limit, and on the device under a 4 GiB
      // spill_device_limit); they come back, in order, once the plan is done
      held_partitions result = physical_node::hold_output(*phys, ctx, spill_priority::cold);
      phys.reset();  // what the plan held goes first: the result's partitions need its room
      parts = result.take();
    }
    phys.reset();  // what the plan held (shared subplans) goes before the memory manager
  } catch (...) {
    phys.reset();
    throw;
  }
  if (device_mr) {
    try {
      std::vector<table> host(parts.size());
      ctx.pool.parallel_for(static_cast<int64_t>(parts.size()), [&](int64_t i) {
        host[static_cast<size_t>(i)] = to_host(parts[static_cast<size_t>(i)], mr.get());
      });
      parts = std::move(host);
    } catch (const memory_error& e) {
      throw memory_error(std::string("copying the result from the device to host memory: ") + e.what());
    }
  }
  // result buffers keep their resource (and budget) alive; drop empty partitions
  std::vector<table> keep;
  for (auto& t : parts)
    if (t.num_rows() > 0) keep.push_back(std::move(t));
  r.frame = data_frame(p->schema, std::move(keep));
  stats.peak_memory = budget->peak();
  stats.peak_device_memory = device_budget ? device_budget->peak() : 0;
  stats.peak_disk = memory->disk_peak();
  stats.transfers = memory->transfers_to_string();
  stats.transfers_json = memory->transfers_to_json();
  stats.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.statistics = stats.to_string();
  r.statistics_json = stats.to_json();
  if (ranks) {
    // what this rank sent, in the JSON too (one more member of its top object)
    if (!r.statistics_json.empty() && r.statistics_json.back() == '}')
      r.statistics_json.insert(r.statistics_json.size() - 1, ", \"exchanges\": " + ranks->sent_to_json());
    const std::string sent = ranks->sent_to_string();
    if (!sent.empty()) r.statistics += (r.statistics.empty() || r.statistics.back() == '\n' ? "" : "\n") + sent + "\n";
  }
  // what the sources add (e.g. a Cassandra scan's requests, bytes and latency), one line each
  std::vector<const table_source*> sources;
  std::function<void(const plan_node&)> walk = [&](const plan_node& n) {
    if (n.source && std::find(sources.begin(), sources.end(), n.source.get()) == sources.end()) {
      sources.push_back(n.source.get());
      std::string line = n.source->read_statistics();
      if (!line.empty()) r.statistics += (r.statistics.empty() || r.statistics.back() == '\n' ? "" : "\n") + line + "\n";
    }
    for (auto& in : n.inputs) walk(*in);
  };
  walk(*p);
  r.operators = stats.operators;
  r.peak_memory = stats.peak_memory;
  r.total_seconds = stats.total_seconds;
  return r;
}

namespace {

/// run_plan on the ranks of `comm` (one rank: none), telling the other ranks of an error here.
query_result run_plan_on(const plan_ptr& p, const engine_options& opts, std::shared_ptr<partition_writer> sink,
                         std::shared_ptr<dist::communicator> comm) {
  std::shared_ptr<dist::query_ranks> ranks;
  if (comm->size() > 1) {
    ranks = std::make_shared<dist::query_ranks>();
    ranks->comm = std::move(comm);
    ranks->query = dist::next_query_number();
    ranks->timeout = opts.collective_timeout;
  }
  try {
    return run_plan_as_rank(p, opts, std::move(sink), ranks);
  } catch (const std::exception& e) {
    // the other ranks stop in their next exchange of this query, with this rank's error
    if (ranks) ranks->comm->abort(ranks->query, e);
    throw;
  } catch (...) {
    if (ranks) ranks->comm->abort(ranks->query, internal_error("an unknown exception"));
    throw;
  }
}

}  // namespace

query_result run_plan(const plan_ptr& p, const engine_options& opts, std::shared_ptr<partition_writer> sink) {
  if (const int forked = forked_ranks_for(opts); forked > 1) return run_forked_ranks(p, opts, forked, std::move(sink));
  return run_plan_on(p, opts, std::move(sink), dist::world());
}

query_result dist::collect_as_rank(const lazy_frame& lf, const engine_options& opts, std::shared_ptr<communicator> comm) {
  if (!comm) throw invalid_argument_error("collect_as_rank: no communicator");
  engine_options o = opts;
  o.gpus = 0;  // these ranks are the launcher's (each has its GPU already)
  const int ranks = comm->size();
  return run_plan_on(optimize(lf.plan(), flags_for_ranks(o.optimizer, ranks), o.check_optimizer_schema), o, nullptr,
                     std::move(comm));
}

query_result lazy_frame::profile(const engine_options& opts) const {
  return run_plan(optimize(_plan, dist::flags_for_ranks(opts.optimizer, query_ranks_for(opts)), opts.check_optimizer_schema),
                  opts);
}

data_frame lazy_frame::collect(const engine_options& opts) const {
  engine_options o = opts;
  o.statistics = false;
  return profile(o).frame;
}

lazy_frame concat(const std::vector<lazy_frame>& frames) {
  std::vector<plan_ptr> inputs;
  for (auto& f : frames)
    inputs.push_back(f.plan());
  return lazy_frame(plan::concat(std::move(inputs)));
}

}  // namespace tug
