#include "tug/io/source.hpp"

#include <algorithm>

#include "row_ids.hpp"
#include "runtime/partition_share.hpp"
#include "tug/memory/device.hpp"

namespace tug {

std::vector<table> table_source::take_rows(const std::vector<std::string>&, const std::vector<column>&, thread_pool&,
                                           memory_resource*) const {
  throw not_implemented_error("take: " + describe() + " cannot fetch rows by position");
}

std::vector<table> table_source::read_device(const std::vector<std::string>& columns,
                                             const std::vector<expr>& predicates, const engine_options& options,
                                             thread_pool& pool, memory_resource* device_mr,
                                             memory_resource* staging_mr, const partition_hook& hook,
                                             int64_t limit) const {
  if (hook) return read(columns, predicates, options, pool, staging_mr, hook, limit);
  return read(
      columns, predicates, options, pool, staging_mr, [&](table t, size_t) { return to_device(t, device_mr); },
      limit);
}

std::vector<piece_statistics> memory_source::statistics(const std::vector<std::string>& columns) const {
  std::vector<size_t> idx;
  for (auto& c : columns)
    idx.push_back(_schema.index_of(c));
  std::vector<piece_statistics> out;
  for (auto& p : _partitions) {
    piece_statistics s{p.num_rows(), {}};
    for (size_t i : idx)
      s.columns.push_back({std::nullopt, std::nullopt, p[i].null_count(), std::nullopt});
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

/// Rows `local[i]` of partitions `part[i]` of `parts`, one gather per run of equal partitions.
table gather_runs(const std::vector<table>& parts, const std::vector<int64_t>& local, const std::vector<size_t>& part,
                  memory_resource* mr) {
  std::vector<table> pieces;
  size_t begin = 0;
  for (size_t i = 1; i <= local.size(); ++i) {
    if (i < local.size() && part[i] == part[begin]) continue;
    pieces.push_back(gather_in_range(parts[part[begin]], local.data() + begin, static_cast<int64_t>(i - begin), mr));
    begin = i;
  }
  return pieces.size() == 1 ? pieces[0] : concatenate(pieces, mr);
}

/// The rows of `parts` (starting at global rows `starts`, then the total) at the global positions
/// `ids`, in order. Ids whose partitions follow the partitions' order (ascending ids, as a filter
/// chain leaves them) are gathered one piece per run; otherwise (after a join) by partition, then put
/// back in the ids' order by one more gather.
table gather_ids(const std::vector<table>& parts, const std::vector<int64_t>& starts, const column& ids,
                 memory_resource* mr) {
  const int64_t n = ids.size();
  const int64_t* id = ids.values<int64_t>();
  std::vector<int64_t> local(static_cast<size_t>(n));
  std::vector<size_t> part(static_cast<size_t>(n));
  size_t cur = 0;
  bool in_order = true;
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = id[i];
    if (r < starts[cur] || r >= starts[cur + 1]) {
      auto next = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), r) - starts.begin() - 1);
      in_order &= next > cur;
      cur = next;
    }
    local[static_cast<size_t>(i)] = r - starts[cur];
    part[static_cast<size_t>(i)] = cur;
  }
  if (in_order) return gather_runs(parts, local, part, mr);
  // counting sort by partition (stable), then the inverse permutation
  std::vector<int64_t> start(parts.size() + 1, 0);
  for (size_t p : part)
    ++start[p + 1];
  for (size_t p = 0; p < parts.size(); ++p)
    start[p + 1] += start[p];
  std::vector<int64_t> sorted_local(static_cast<size_t>(n)), back(static_cast<size_t>(n));
  std::vector<size_t> sorted_part(static_cast<size_t>(n));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    auto at = static_cast<size_t>(start[part[i]]++);
    sorted_local[at] = local[i];
    sorted_part[at] = part[i];
    back[i] = static_cast<int64_t>(at);
  }
  table grouped = gather_runs(parts, sorted_local, sorted_part, mr);
  return gather_in_range(grouped, back.data(), n, mr);
}

}  // namespace

std::vector<table> memory_source::take_rows(const std::vector<std::string>& columns, const std::vector<column>& ids,
                                            thread_pool& pool, memory_resource* mr) const {
  std::vector<size_t> idx;
  std::vector<data_type> types;
  for (auto& c : columns) {
    idx.push_back(_schema.index_of(c));
    types.push_back(_schema[idx.back()].type);
  }
  std::vector<table> parts;  // the non-empty partitions, the columns taken only
  std::vector<int64_t> starts{0};
  for (auto& p : _partitions) {
    if (p.num_rows() == 0) continue;
    if (on_device(p)) throw internal_error("take: the source's columns are in device memory");
    parts.push_back(p.select(idx));
    starts.push_back(starts.back() + p.num_rows());
  }
  io_detail::check_row_ids(ids, starts.back(), describe());
  std::vector<table> out(ids.size());
  pool.parallel_for(static_cast<int64_t>(ids.size()), [&](int64_t i) {
    const column& c = ids[static_cast<size_t>(i)];
    out[static_cast<size_t>(i)] = c.size() == 0 ? io_detail::empty_table(types, mr) : gather_ids(parts, starts, c, mr);
  });
  return out;
}

std::shared_ptr<const table_source> memory_source::rank_share(int rank, int size) const {
  if (size < 1 || rank < 0 || rank >= size) throw internal_error("rank_share: rank " + std::to_string(rank) + " of " + std::to_string(size));
  const int64_t n = total_rows(_partitions);
  const int64_t lo = n * rank / size, hi = n * (rank + 1) / size;
  std::vector<table> mine;
  int64_t base = 0;
  for (auto& p : _partitions) {
    const int64_t a = std::max(lo, base), b = std::min(hi, base + p.num_rows());
    if (a < b) mine.push_back(p.slice(a - base, b - a));
    base += p.num_rows();
  }
  if (mine.empty() && !_partitions.empty()) mine.push_back(_partitions[0].slice(0, 0));
  return std::make_shared<memory_source>(_schema, std::move(mine));
}

std::string memory_source::describe() const {
  return "DF; " + std::to_string(_schema.size()) + " columns, " + std::to_string(total_rows(_partitions)) +
         " rows in " + std::to_string(_partitions.size()) + " partitions";
}

std::vector<table> memory_source::read(const std::vector<std::string>& columns, const std::vector<expr>&,
                                       const engine_options& options, thread_pool& pool, memory_resource*,
                                       const partition_hook& hook, int64_t limit) const {
  std::vector<size_t> cols;
  for (auto& c : columns)
    cols.push_back(_schema.index_of(c));
  std::vector<table> out;
  // at most target_partition_rows a partition, and enough partitions to keep every thread busy
  // (but not slivers: at least 16k rows each unless the target itself is smaller)
  int64_t rows = total_rows(_partitions);
  if (limit >= 0) rows = std::min(rows, limit);
  const int64_t target = share_per_thread(partition_rows(options), rows, pool.size(), min_rows_per_thread_share);
  int64_t left = rows;  // rows still wanted (slices are free, so exactly the first `limit`)
  for (auto& p : _partitions) {
    if (left == 0 && limit >= 0) break;
    table t = p.select(cols);
    if (t.num_rows() > left) t = t.slice(0, left);
    left -= t.num_rows();
    if (t.num_rows() <= target) {
      out.push_back(std::move(t));
      continue;
    }
    for (int64_t off = 0; off < t.num_rows(); off += target)
      out.push_back(t.slice(off, std::min(target, t.num_rows() - off)));
  }
  apply_partition_hook(out, hook, pool);
  return out;
}

}  // namespace tug
