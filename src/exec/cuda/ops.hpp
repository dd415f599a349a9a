#pragma once
// The CUDA operator factories (host-only header): exec::make_* (physical.hpp) forwards here for
// backend::cuda. Operators take and return partitions in device memory; physical_node::input moves
// a child's partitions to the device first. Every operator synchronizes its thread's stream before it
// returns a partition, so another pool thread may use (and free) it.
#include <optional>
#include <string>
#include <vector>

#include "tug/exec/physical.hpp"

namespace tug::cuda {

physical_ptr make_filter(physical_ptr child, expr predicate);
physical_ptr make_project(physical_ptr child, std::vector<expr> exprs, schema out);
physical_ptr make_aggregate(physical_ptr child, std::vector<size_t> keys, std::vector<agg_spec> aggs,
                            bool maintain_order, schema out);
/// The sort-based group-by (aggregate.cu): one sync point over all partitions. make_aggregate
/// (hash_aggregate.cu) picks it where hashing does not fit (hash::unfit).
physical_ptr make_sort_aggregate(physical_ptr child, std::vector<size_t> keys, std::vector<agg_spec> aggs,
                                 bool maintain_order, schema out);
/// `over` windows: hashed (hash_aggregate.cu) when their keys and aggregations hash, else sorted.
physical_ptr make_window(physical_ptr child, std::vector<window_spec> specs, schema out);
/// The sort-based windows (aggregate.cu): every key type, every aggregation.
physical_ptr make_sort_window(physical_ptr child, std::vector<window_spec> specs, schema out);
physical_ptr make_join(physical_ptr left, physical_ptr right, join_spec spec, schema out);
physical_ptr make_sort(physical_ptr child, std::vector<size_t> keys, std::vector<bool> descending,
                       std::vector<bool> nulls_last, bool stable, int64_t limit);
physical_ptr make_slice(physical_ptr child, int64_t offset, int64_t length);
physical_ptr make_unique(physical_ptr child, std::vector<size_t> subset, unique_keep keep, bool maintain_order);
physical_ptr make_concat(std::vector<physical_ptr> children, schema out);
physical_ptr make_row_index(physical_ptr child, int64_t offset, schema out);
/// A user kernel's device functor or CUDA source on each partition (user_kernel.cu).
physical_ptr make_map_partitions(physical_ptr child, std::shared_ptr<const user_kernel> k, schema out);

/// A CUDA filter under zero or more CUDA projections of bare (possibly renamed) column references (the
/// lowering's pre-projections of an aggregation), as an aggregation absorbs it: the filter's input, its
/// predicate (resolved against that input), and for each column of the top node its index in that input.
struct filter_project {
  physical_ptr input;
  expr predicate;
  std::vector<size_t> columns;
};
/// Takes the filter's input out of `node` when `node` is such a chain (`node` is then spent);
/// otherwise nothing, and `node` is untouched (basic_ops.cu).
std::optional<filter_project> take_filter_project(physical_ptr& node);

/// True when the output of `input` may not fit in a quarter of the device budget (spill_device_limit),
/// by its size hint (rows) and a width estimated from its schema (strings 24 bytes a row), plus as many
/// rows of `output` when given (an operator's own output, as many rows as its input: a join's), or when
/// `force_external` is set: a CUDA operator then works on that input a partition at a time, fused into
/// it, instead of holding it (and its output) whole on the device (support.cpp). False when the size is
/// unknown.
bool may_exceed_device(const physical_node& input, const exec_context& ctx, const schema* output = nullptr);

/// Empty when the CUDA backend can run `r`, else why not (support.cpp; one section per operator).
std::string unsupported(const exec::op_request& r);

/// Why the CUDA join cannot use `keys` of `input` as join keys ("" when it can; join.cu).
std::string join_key_unsupported(const schema& input, const std::vector<size_t>& keys);

/// Why the CUDA expression evaluator cannot evaluate `e` over `input` ("" when it can).
std::string expr_unsupported(const expr& e, const schema& input);

}  // namespace tug::cuda
