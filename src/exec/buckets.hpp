#pragma once
// Hash buckets of a blocking operator's input: how the CPU engine's joins and aggregates run out of
// core. An input that may not fit is split by the hash of its keys into buckets whose pieces spill
// separately; the operator's in-memory kernel then runs on one bucket at a time.
#include <mutex>
#include <utility>
#include <vector>

#include "tug/exec/physical.hpp"

namespace tug::exec {

/// Buckets a blocking operator splits `bytes` of input into: 0 (keep it whole) unless the input exceeds
/// a quarter of `memory_limit` or `force_external` is set; then enough that a bucket holds about an
/// eighth of the limit (at least 4 with force_external, at most 4096).
size_t external_buckets(const exec_context& ctx, int64_t bytes);

/// Rows split by the hash of their key columns into `count` buckets, each piece of a partition a
/// spillable table (cold: processed last, spilled first). Equal keys, and every null key, land in the
/// same bucket on every side split with the same count, provided the key types are equal.
class hash_buckets {
 public:
  hash_buckets(exec_context& ctx, size_t count);
  size_t count() const { return _pieces.size(); }
  /// Splits every partition of `in` by columns `keys` (partitions brought back one at a time, in
  /// parallel); `in` is empty afterwards.
  void add(held_partitions& in, const std::vector<size_t>& keys);
  /// The pieces of bucket `b`, in input order (none when no row fell in it); the bucket is empty afterwards.
  std::vector<table> take(size_t b);

 private:
  exec_context& _ctx;
  std::mutex _mu;
  /// per bucket: (input partition, piece)
  std::vector<std::vector<std::pair<size_t, spillable_ptr>>> _pieces;
};

}  // namespace tug::exec
