#pragma once
/// Grouped aggregation kernels of the CPU backend, shared by the aggregate and window operators.
/// Each kernel dispatches once on the input type, then loops over rows with their group ids.
///
/// Semantics follow Polars: nulls are ignored except by len, n_unique (null is one value), first and
/// last; sum of no values is 0, mean/min/max/median/quantile of no values are null. min and max
/// ignore NaN unless a group holds only NaNs (then NaN); sum, mean, std and var propagate NaN (std and
/// var give NaN for an infinity too, as Polars), and std / var of identical values are exactly 0
/// (exec/moments.hpp); median and quantile sort NaN above every number and -0.0 below 0.0. Decimals
/// read as float64 are correctly rounded; a decimal sum past 38 digits raises compute_error.
#include <cstdint>
#include <string>
#include <vector>

#include "exec/decimal_sum.hpp"
#include "tug/memory/scratch.hpp"
#include "tug/exec/physical.hpp"

namespace tug::cpu {

/// Dense group id of each row. `ids == nullptr` puts every row in group 0 (aggregation without keys).
struct group_map {
  const int64_t* ids = nullptr;
  int64_t num_rows = 0;
  int64_t num_groups = 0;
};

/// Rows grouped by key columns: dense group ids in first-seen order (nulls form their own group).
struct row_groups {
  std::vector<int64_t> ids;        ///< group of each row
  std::vector<int64_t> first_row;  ///< first row of each group
  scratch_reservation charge;      ///< ids and first_row, counted against the query's memory
  int64_t num_groups() const { return static_cast<int64_t>(first_row.size()); }
  /// Counts ids and first_row (call when they are filled).
  void count() { charge.resize(capacity_bytes(ids) + capacity_bytes(first_row), "group ids"); }
};

/// Groups the rows of `keys` (at least one column). With a pool and many rows, chunks of rows are
/// indexed in parallel and their groups merged (see group_chunks).
row_groups group_rows(const std::vector<column>& keys, thread_pool* pool);

/// Groups rows given as consecutive chunks (each the same key columns), indexing the chunks in
/// parallel; ids and first rows refer to the chunks' rows concatenated. The chunks' groups are then
/// merged: by group_in_parts where they number kPartedMergeRows or more and the pool has
/// kPartedMergeThreads threads, else by one index.
row_groups group_chunks(const std::vector<std::vector<column>>& chunks, thread_pool& pool);

/// Groups the rows of `keys` exactly as one key_index does (the same ids, in first-seen order), in
/// parallel: the rows are split by key hash into one part per thread (row order kept in each), each
/// part is indexed on its own, and the groups are numbered by their first rows. For keys of many
/// distinct values, where indexing chunks of rows and merging their groups would leave the merge, as
/// large as the input, to one thread.
row_groups group_in_parts(const std::vector<column>& keys, thread_pool& pool);

/// Merged groups of chunks from which group_chunks merges by parts, and the threads it needs for that:
/// the parts hash, scatter and gather every row besides indexing it, which two threads do not repay
/// (PDS-H SF1 Q18 on 2 cores, 1.5M groups: 0.21 s by parts, 0.16 s by one index).
inline constexpr int64_t kPartedMergeRows = int64_t{1} << 16;
inline constexpr int kPartedMergeThreads = 4;

/// Aggregation `spec` of `in` per group: one row per group, of type `spec.output_type`.
/// `in` may be nullptr for len. @throws type_error when the op does not apply to the input type.
column aggregate_groups(const agg_spec& spec, const column* in, const group_map& g, memory_resource* mr);

/// Whether `op` can be computed per partition (partial states) and merged.
bool is_decomposable(agg_op op);

/// Types of the partial state columns of `spec` (decomposable ops only).
std::vector<data_type> state_types(const agg_spec& spec);

/// Output schema of a partial aggregation of `in` by `keys`: the key fields, then the state columns of
/// each aggregation ("__state<i>_<j>"). Shared by the CPU and CUDA backends.
schema partial_schema(const schema& in, const std::vector<size_t>& keys, const std::vector<agg_spec>& aggs);

/// Partial state columns of `spec` over `in`, one row per group (decomposable ops only).
std::vector<column> partial_states(const agg_spec& spec, const column* in, const group_map& g,
                                   memory_resource* mr);

/// Merges partial state rows grouped by `g` into the final result of `spec`.
column merge_states(const agg_spec& spec, const std::vector<column>& states, const group_map& g,
                    memory_resource* mr);

/// Columns `columns` of all partitions, concatenated (empty columns of the schema's types when there
/// are no partitions).
std::vector<column> concat_columns(const std::vector<table>& parts, const schema& in,
                                   const std::vector<size_t>& columns, memory_resource* mr);

/// "sum(#2)" (len: "len(*)"), for explain().
std::string describe(const agg_spec& spec);
/// "[#0, #1]", for explain().
std::string describe_columns(const std::vector<size_t>& columns);

/// Checks the parameters of `spec` (quantile q and interpolation). @throws invalid_argument_error.
void check_agg_spec(const agg_spec& spec);

/// Raises the compute_error of a decimal sum (`spec`, the sum aggregation) that does not fit its result
/// type, naming the sum. Shared by the CUDA backend.
[[noreturn]] void raise_sum_overflow(const agg_spec& spec, const decimal_sum& sum);

}  // namespace tug::cpu
