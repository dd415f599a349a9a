#include "tug/io/source.hpp"

#include <algorithm>

namespace tug {

std::string memory_source::describe() const {
  return "DF; " + std::to_string(_schema.size()) + " columns, " + std::to_string(total_rows(_partitions)) +
         " rows in " + std::to_string(_partitions.size()) + " partitions";
}

std::vector<table> memory_source::read(const std::vector<std::string>& columns, const std::vector<expr>&,
                                       const engine_options& options, thread_pool& pool, memory_resource*,
                                       const partition_hook& hook) const {
  std::vector<size_t> cols;
  for (auto& c : columns)
    cols.push_back(_schema.index_of(c));
  std::vector<table> out;
  // at most target_partition_rows a partition, and enough partitions to keep every thread busy
  // (but not slivers: at least 16k rows each unless the target itself is smaller)
  int64_t rows = total_rows(_partitions);
  int64_t threads = pool.size();
  int64_t per_thread = std::max<int64_t>(16384, (rows + threads - 1) / threads);
  int64_t target = std::max<int64_t>(1, std::min(options.target_partition_rows, per_thread));
  for (auto& p : _partitions) {
    table t = p.select(cols);
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
