#pragma once
// Helpers of the blocking CPU operators (sort, unique): all input partitions as one table, and the
// output rows gathered in parallel into partitions of about target_partition_rows rows.
#include <algorithm>
#include <vector>

#include "tug/exec/physical.hpp"

namespace tug::cpu {

/// All partitions as one table (no copy when there is only one). `parts` must not be empty.
inline table concat_partitions(const std::vector<table>& parts, memory_resource* mr) {
  if (parts.size() == 1) return parts[0];
  return concatenate(parts, mr);
}

/// Rows `rows` of `src` in order, gathered in parallel into partitions of about
/// `ctx.options.target_partition_rows` rows. No rows gives one empty partition.
inline std::vector<table> gather_partitions(const table& src, const std::vector<int64_t>& rows, exec_context& ctx) {
  auto n = static_cast<int64_t>(rows.size());
  if (n == 0) return {src.slice(0, 0)};
  int64_t target = std::max<int64_t>(1, ctx.options.target_partition_rows);
  int64_t count = (n + target - 1) / target;
  std::vector<table> out(static_cast<size_t>(count));
  ctx.pool.parallel_for(count, [&](int64_t p) {
    int64_t begin = p * target, len = std::min(target, n - begin);
    out[static_cast<size_t>(p)] = gather(src, rows.data() + begin, len, ctx.mr);
  });
  return out;
}

}  // namespace tug::cpu
