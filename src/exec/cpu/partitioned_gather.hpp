#pragma once
// Helpers of the blocking CPU operators (sort, unique): all input partitions as one table, and the
// output rows gathered in parallel into partitions of about target_partition_rows rows.
#include <algorithm>
#include <vector>

#include "tug/exec/physical.hpp"

namespace tug::cpu {

/// All partitions as one table (no copy when there is only one), columns concatenated in parallel.
/// `parts` must not be empty.
inline table concat_partitions(const std::vector<table>& parts, exec_context& ctx) {
  size_t nc = parts[0].num_columns();
  if (parts.size() == 1 || nc == 0) return concatenate(parts, ctx.mr);
  std::vector<column> cols(nc);
  ctx.pool.parallel_for(static_cast<int64_t>(nc), [&](int64_t c) {
    std::vector<column> pieces;
    pieces.reserve(parts.size());
    for (auto& p : parts) pieces.push_back(p[static_cast<size_t>(c)]);
    cols[static_cast<size_t>(c)] = concatenate(pieces, ctx.mr);
  });
  return table(std::move(cols));
}

/// Rows `rows` of `src` in order, gathered in parallel into partitions of about
/// `ctx.options.target_partition_rows` rows. No rows gives one empty partition.
inline std::vector<table> gather_partitions(const table& src, const std::vector<int64_t>& rows, exec_context& ctx) {
  auto n = static_cast<int64_t>(rows.size());
  if (n == 0) return {src.slice(0, 0)};
  int64_t target = partition_rows(ctx.options);
  int64_t count = (n + target - 1) / target;
  std::vector<table> out(static_cast<size_t>(count));
  ctx.pool.parallel_for(count, [&](int64_t p) {
    int64_t begin = p * target, len = std::min(target, n - begin);
    out[static_cast<size_t>(p)] = gather(src, rows.data() + begin, len, ctx.mr);
  });
  return out;
}

/// Rows `rows` (distinct indices into all of `parts` concatenated) in order, in partitions of about
/// target_partition_rows rows. Few rows are gathered from each partition without concatenating them all.
inline std::vector<table> gather_rows(const std::vector<table>& parts, const std::vector<int64_t>& rows,
                                      exec_context& ctx) {
  int64_t n = total_rows(parts);
  if (parts.size() == 1 || static_cast<int64_t>(rows.size()) * 8 >= n)
    return gather_partitions(concat_partitions(parts, ctx), rows, ctx);
  std::vector<int64_t> ascending = rows;
  std::sort(ascending.begin(), ascending.end());
  std::vector<table> pieces;
  auto it = ascending.begin();
  int64_t base = 0;
  for (auto& p : parts) {
    auto end = std::lower_bound(it, ascending.end(), base + p.num_rows());
    std::vector<int64_t> local;
    for (; it != end; ++it) local.push_back(*it - base);
    if (!local.empty()) pieces.push_back(gather(p, local, ctx.mr));
    base += p.num_rows();
  }
  table picked = pieces.empty() ? parts[0].slice(0, 0) : concatenate(pieces, ctx.mr);
  std::vector<int64_t> at(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    at[i] = std::lower_bound(ascending.begin(), ascending.end(), rows[i]) - ascending.begin();
  return gather_partitions(picked, at, ctx);
}

}  // namespace tug::cpu
