// What the CUDA backend can run: the lowering asks before placing a node on the GPU, and names the
// returned reason in its fallback message. One section per operator; keep each next to its truth.
#ifdef TUG_WITH_CUDA
#include <algorithm>
#include <string>

#include "exec/cuda/hash_aggregate.hpp"
#include "exec/cuda/ops.hpp"
#include "exec/size_estimate.hpp"
#include "tug/memory/memory_resource.hpp"

namespace tug::cuda {

bool may_exceed_device(const physical_node& input, const exec_context& ctx, const schema* output) {
  if (ctx.options.force_external) return true;
  if (!ctx.device_budget || ctx.device_budget->limit() <= 0) return false;
  const int64_t rows = input.size_hint();
  if (rows < 0) return false;
  const int64_t width =
      exec::estimated_row_bytes(input.output_schema) + (output ? exec::estimated_row_bytes(*output) : 0);
  return rows * std::max<int64_t>(width, 1) > ctx.device_budget->limit() / 4;
}

std::string unsupported(const exec::op_request& r) {
  std::string op = r.op;
  if (r.input)
    for (auto& e : r.exprs) {
      std::string why = expr_unsupported(e, *r.input);
      if (!why.empty()) return why;
    }
  if (op == "filter" || op == "project") return {};
  if (op == "aggregate" || op == "window") {
    // hash_aggregate.cu: fixed-width keys (integers, booleans, floats, dates, timestamps, durations) or
    // none, decomposable aggregations of non-decimal columns: partial per partition + final, hash
    // tables (hash::unfit); aggregate.cu: the rest (string and decimal128 keys, decimal128 inputs,
    // n_unique / median / quantile; every window), sort-based grouping over any key type, segmented
    // reductions and values sorted within segments
    return {};
  }
  // a group-by in two phases (partial states per partition, merged after an exchange between ranks):
  // hash_aggregate.cu's only
  if (op == "aggregate in two phases") return r.input ? hash::unfit(*r.input, r.keys, r.aggs) : std::string();
  // join: every join type (inner/left/full/semi/anti/cross; right joins arrive as left joins) and
  // every payload type; keys of every type but the ones join_key_unsupported names
  if (op == "join") return r.input ? join_key_unsupported(*r.input, r.keys) : std::string();
  // sort.cu: keys of every type (strings by bytes, decimal128 by both words), top-k, any subset
  if (op == "sort" || op == "unique") return {};
  // reshape_ops.cu: zero-copy slices and partition lists, a kernel for the index column
  if (op == "slice" || op == "concat" || op == "row_index") return {};
  return "no CUDA implementation of " + op;
}

}  // namespace tug::cuda
#endif
