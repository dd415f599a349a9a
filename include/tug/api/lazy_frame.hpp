#pragma once
/// The lazy, Polars-like query API.
#include <map>
#include <string>
#include <vector>

#include "tug/api/data_frame.hpp"
#include "tug/api/user_kernel.hpp"
#include "tug/exec/physical.hpp"
#include "tug/plan/logical.hpp"
#include "tug/runtime/options.hpp"

namespace tug::dist {
struct query_ranks;
}

namespace tug {

class lazy_frame;

/// Sort options, as in Polars' `sort(by, descending=, nulls_last=, maintain_order=)`.
struct sort_options {
  std::vector<bool> descending;  ///< one per key, or one for all
  std::vector<bool> nulls_last;  ///< one per key, or one for all
  bool maintain_order = false;   ///< stable sort
};

/// Result of `group_by(...)`; `.agg(...)` finishes it.
class group_by_builder {
 public:
  group_by_builder(plan_ptr in, std::vector<expr> keys, bool maintain_order)
      : _in(std::move(in)), _keys(std::move(keys)), _maintain_order(maintain_order) {}
  lazy_frame agg(std::vector<expr> aggs) const;

 private:
  plan_ptr _in;
  std::vector<expr> _keys;
  bool _maintain_order;
};

/// The result of a query with its execution statistics and plans.
struct query_result {
  data_frame frame;
  std::string physical_plan;
  std::string statistics;
  std::string statistics_json;  ///< what `statistics` shows of the query's operators and tiers, as JSON (exec_statistics::to_json)
  std::vector<std::string> fallbacks;  ///< nodes that could not run on the requested backend, with the reason
  std::vector<operator_stats> operators;  ///< the figures `statistics` prints, one per operator
  int64_t peak_memory = 0;                ///< peak host bytes of the query's budget
  double total_seconds = 0;               ///< wall time of the whole query
};

class lazy_frame {
 public:
  explicit lazy_frame(plan_ptr p) : _plan(std::move(p)) {}

  lazy_frame filter(const expr& predicate) const;
  lazy_frame select(std::vector<expr> exprs) const;
  lazy_frame with_columns(std::vector<expr> exprs) const;
  lazy_frame with_column(const expr& e) const { return with_columns({e}); }
  group_by_builder group_by(std::vector<expr> keys, bool maintain_order = false) const;
  group_by_builder group_by(const std::vector<std::string>& keys, bool maintain_order = false) const;
  group_by_builder group_by(std::initializer_list<const char*> keys, bool maintain_order = false) const {
    return group_by(std::vector<std::string>(keys.begin(), keys.end()), maintain_order);
  }
  lazy_frame join(const lazy_frame& other, std::vector<expr> left_on, std::vector<expr> right_on,
                  join_type how = join_type::inner, std::string suffix = "_right") const;
  lazy_frame join(const lazy_frame& other, const std::vector<std::string>& on, join_type how = join_type::inner,
                  std::string suffix = "_right") const;
  lazy_frame join(const lazy_frame& other, std::initializer_list<const char*> on, join_type how = join_type::inner,
                  std::string suffix = "_right") const {
    return join(other, std::vector<std::string>(on.begin(), on.end()), how, std::move(suffix));
  }
  lazy_frame cross_join(const lazy_frame& other, std::string suffix = "_right") const;
  lazy_frame sort(std::vector<expr> by, sort_options opts = {}) const;
  lazy_frame sort(const std::string& column, bool descending = false) const;
  lazy_frame slice(int64_t offset, int64_t length = -1) const;
  lazy_frame limit(int64_t n) const { return slice(0, n); }
  lazy_frame head(int64_t n = 5) const { return slice(0, n); }
  lazy_frame tail(int64_t n = 5) const { return slice(-n, n); }
  /// Distinct rows over `subset` (all columns when empty).
  lazy_frame unique(std::vector<std::string> subset = {}, unique_keep keep = unique_keep::any,
                    bool maintain_order = false) const;
  lazy_frame rename(const std::map<std::string, std::string>& mapping) const;
  lazy_frame drop(const std::vector<std::string>& columns) const;
  lazy_frame with_row_index(std::string name = "index", int64_t offset = 0) const;
  /// Runs user kernel `k` on every partition as it is read (docs/user-kernels.md): the output is
  /// `k`'s kept columns, then its declared outputs. @throws column_not_found_error /
  /// invalid_argument_error naming the kernel when its declaration does not fit this frame.
  lazy_frame map_partitions(const user_kernel& k) const;
  /// Runs the query and user kernel `k` on every partition for its effect (a kernel that writes
  /// somewhere itself); `k` declares no outputs. @throws invalid_argument_error when it declares some,
  /// and what collect() throws.
  void foreach_partition(const user_kernel& k, const engine_options& opts = {}) const;

  /// Output schema, known without running anything.
  const tug::schema& schema() const { return _plan->schema; }
  const plan_ptr& plan() const { return _plan; }

  /// The optimized logical plan and the physical plan (backends per node, sync points marked).
  std::string explain(const engine_options& opts = {}) const;
  /// Runs the query. @throws user_error subclasses for bad input, memory_error when out of budget.
  data_frame collect(const engine_options& opts = {}) const;
  /// Runs the query and returns statistics and the physical plan with the result.
  query_result profile(const engine_options& opts = {}) const;

 private:
  plan_ptr _plan;
};

/// Vertical concatenation of frames with equal schemas.
lazy_frame concat(const std::vector<lazy_frame>& frames);

/// Lowers and runs the logical plan `p` as it is (no optimizer passes; lazy_frame::profile runs the
/// optimized plan through this): chooses backends, creates the device memory resource when a node runs
/// on the GPU, and returns the result in host memory with statistics and fallbacks.
query_result run_plan(const plan_ptr& p, const engine_options& opts = {});
/// The same, handing the result to `sink` partition by partition as it is ready (the frame of the
/// result is empty): a streaming sink (sink_parquet, sink_csv).
query_result run_plan(const plan_ptr& p, const engine_options& opts, std::shared_ptr<partition_writer> sink);
/// run_plan as one rank of `ranks` (its communicator, query number and timeout), which is what
/// run_plan does when the world has several ranks; tests run ranks as threads through this. The
/// result is this rank's share: everything on rank 0 unless `leave_split` (or a sink that writes each
/// rank's share) keeps a split result where it is. Does not tell the other ranks of an error.
query_result run_plan_as_rank(const plan_ptr& p, const engine_options& opts, std::shared_ptr<partition_writer> sink,
                              std::shared_ptr<dist::query_ranks> ranks, bool leave_split = false);

}  // namespace tug
