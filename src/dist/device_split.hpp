#pragma once
// Multi-rank execution: which rank a row's keys go to, one rule for host and device tables, and the
// split of a device table by it (src/dist/device_split.cu), so that a GPU operator's rows are routed on
// the device and only the rows for other ranks cross host memory.
#include <cstdint>
#include <vector>

#include "exec/host_device.hpp"
#include "tug/core/table.hpp"

namespace tug::dist {

/// The rank (0 .. size - 1) of a row whose keys hash to `h` (hash_rows): a mix of the hash's bits, so
/// that the ranks do not take the same bits as the hash buckets and the key index within a rank.
TUG_HOST_DEVICE inline uint32_t rank_of_hash(uint64_t h, int size) {
  uint64_t x = h ^ (h >> 31);
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return static_cast<uint32_t>(((x & 0xffffffffULL) * static_cast<uint64_t>(size)) >> 32);
}

/// The rows of a device table in rank order, and where each rank's rows start: rank r's rows are
/// rows[start[r], start[r + 1]).
struct rank_split {
  table rows;
  std::vector<int64_t> start;
};

/// Splits device table `t` by the rank of its `keys` (rank_of_hash of hash_rows, bit for bit the host
/// rule, so host and device sides of one join meet), keeping each rank's rows in input order; in
/// device memory `mr`. @throws not_implemented_error when tug was built without CUDA.
rank_split split_on_device(const table& t, const std::vector<size_t>& keys, int size, memory_resource* mr);

/// The hash of each row's `keys` of device table `t`, as hash_rows computes it on the host (copied back
/// to host memory; for tests).
std::vector<uint64_t> hash_rows_on_device(const table& t, const std::vector<size_t>& keys);

}  // namespace tug::dist
