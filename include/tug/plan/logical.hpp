#pragma once
/// The logical plan: an immutable tree of nodes, each with its output schema computed (and checked)
/// when it is built, so errors about columns and types happen before any data moves.
#include <memory>
#include <string>
#include <vector>

#include "tug/core/table.hpp"
#include "tug/expr/expr.hpp"
#include "tug/io/source.hpp"

namespace tug {

enum class plan_kind : uint8_t {
  scan,             ///< a table_source: memory, Parquet or CSV
  filter,           ///< exprs[0] is the predicate
  select,           ///< exprs are the output columns
  with_columns,     ///< input columns plus/replaced by exprs
  group_by,         ///< keys, exprs = aggregations
  join,             ///< keys = left_on, right_keys = right_on
  sort,             ///< exprs = sort keys
  slice,            ///< offset, length (-1 = to the end); negative offset counts from the end
  unique,           ///< names = subset (empty = all), keep
  concat,           ///< vertical concatenation of inputs with equal schemas
  with_row_index,   ///< names[0] is the index column, offset
  take,             ///< appends `projection` columns of a source, rows by the int64 column names[0]
  map_partitions,   ///< a user kernel on every partition (`kernel`; include/tug/api/user_kernel.hpp)
};

enum class join_type : uint8_t { inner, left, right, full, semi, anti, cross };
enum class unique_keep : uint8_t { any, first, last, none };

const char* to_string(plan_kind k);
const char* to_string(join_type j);
const char* to_string(unique_keep k);


class user_kernel;
struct plan_node;
using plan_ptr = std::shared_ptr<const plan_node>;

struct plan_node {
  plan_kind kind = plan_kind::scan;
  std::vector<plan_ptr> inputs;
  tug::schema schema;  ///< output schema

  std::vector<expr> exprs;
  std::vector<expr> keys;
  std::vector<expr> right_keys;
  join_type how = join_type::inner;
  std::string suffix = "_right";
  std::vector<bool> descending;
  std::vector<bool> nulls_last;
  bool stable = false;  ///< sort: stable; group_by/unique: maintain_order
  int64_t offset = 0;
  int64_t length = -1;  ///< slice: rows; sort: top-k (-1 = all); scan: the first rows needed (slice pushdown)
  std::vector<std::string> names;
  unique_keep keep = unique_keep::any;

  // scans
  std::shared_ptr<const table_source> source;
  std::vector<std::string> projection;  ///< pushed-down projection (empty = all columns)
  std::vector<expr> predicates;         ///< pushed-down filters (conjunction)

  std::shared_ptr<const user_kernel> kernel;  ///< map_partitions
};

/// Plan builders: each checks its input and computes the output schema.
/// @throws column_not_found_error / type_error / invalid_argument_error naming what is wrong.
namespace plan {
plan_ptr scan(std::shared_ptr<const table_source> src);
plan_ptr filter(plan_ptr in, expr predicate);
plan_ptr select(plan_ptr in, std::vector<expr> exprs);
plan_ptr with_columns(plan_ptr in, std::vector<expr> exprs);
plan_ptr group_by(plan_ptr in, std::vector<expr> keys, std::vector<expr> aggs, bool maintain_order = false);
plan_ptr join(plan_ptr left, plan_ptr right, std::vector<expr> left_on, std::vector<expr> right_on, join_type how,
              std::string suffix = "_right");
plan_ptr sort(plan_ptr in, std::vector<expr> by, std::vector<bool> descending, std::vector<bool> nulls_last,
              bool stable);
plan_ptr slice(plan_ptr in, int64_t offset, int64_t length);
plan_ptr unique(plan_ptr in, std::vector<std::string> subset, unique_keep keep, bool maintain_order);
plan_ptr concat(std::vector<plan_ptr> inputs);
plan_ptr with_row_index(plan_ptr in, std::string name, int64_t offset);
/// The input columns, then `columns` of `src` gathered by the int64 input column `row_column` (global
/// row positions in `src`'s partitions concatenated in order; table_source::take_rows): what the
/// late_materialization pass puts above a filter chain. @throws type_error / invalid_argument_error.
plan_ptr take(plan_ptr in, std::shared_ptr<const table_source> src, std::string row_column,
              std::vector<std::string> columns);
/// The kept input columns, then the declared outputs of user kernel `k` run on every partition of `in`.
/// @throws column_not_found_error for an input or kept column `in` lacks; invalid_argument_error for a
/// duplicate output name, or a CUDA source kernel with a string column; each naming the kernel.
plan_ptr map_partitions(plan_ptr in, std::shared_ptr<const user_kernel> k);
/// A copy of `n` with other inputs (schema recomputed).
plan_ptr with_inputs(const plan_node& n, std::vector<plan_ptr> inputs);
}  // namespace plan

/// Indented tree, one node a line (as Polars' explain prints the logical plan).
std::string to_string(const plan_ptr& p);

}  // namespace tug
