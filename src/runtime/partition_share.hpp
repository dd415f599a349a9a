#pragma once
// How large the CPU engine's partitions are where an operator or a source chooses (memory_source, the
// Parquet scan, a blocking aggregate's output): the target, made smaller where it would leave threads
// without a partition to work on.
#include <algorithm>
#include <cstdint>

namespace tug {

/// Rows under which a partition is not cut further to give every thread one (per-partition costs would
/// outweigh the parallelism).
constexpr int64_t min_rows_per_thread_share = 16384;

/// What a partition aims at: `target`, or an even share of `total` per thread when that is smaller, but
/// not below `floor` (all in the caller's unit: rows or bytes); at least 1.
inline int64_t share_per_thread(int64_t target, int64_t total, int threads, int64_t floor) {
  const int64_t t = std::max(1, threads);
  return std::max<int64_t>(1, std::min(target, std::max(floor, (total + t - 1) / t)));
}

}  // namespace tug
