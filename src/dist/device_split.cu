// The split of a device table among ranks (device_split.hpp): each row's key hash as hash_rows computes
// it on the host (core/hash.hpp's per-type hashes, bit for bit), its rank (rank_of_hash), a stable
// radix sort of the row numbers by rank, and one gather into rank order.
#include <cub/device/device_radix_sort.cuh>

#include <bit>

#include "core/hash.hpp"
#include "device_split.hpp"
#include "exec/cuda/common.cuh"
#include "exec/cuda/table_ops.hpp"
#include "tug/memory/device.hpp"

namespace tug::dist {

namespace {

using cuda::dbuf;
using cuda::dcol;
using cuda::grid_for;
using cuda::stream;

template <typename T>
__device__ uint64_t key_hash(T v) {
  if constexpr (std::is_floating_point_v<T>) return hashing::hash_double(static_cast<double>(v));
  else if constexpr (std::is_same_v<T, __int128>) return hashing::hash_int128(v);
  else return hashing::hash_integral(v);
}

template <typename T>
__global__ void hash_fixed(dcol c, int64_t n, uint64_t* h, bool first) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint64_t x = c.valid(i) ? key_hash<T>(c.value<T>(i)) : hashing::null_hash;
    h[i] = first ? x : hashing::combine(h[i], x);
  }
}

__global__ void hash_strings(dcol c, int64_t n, uint64_t* h, bool first) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t x = hashing::null_hash;
    if (c.valid(i)) {
      const cuda::dstring s = c.str(i);
      x = hashing::hash_bytes_bytewise(s.p, static_cast<size_t>(s.n));
    }
    h[i] = first ? x : hashing::combine(h[i], x);
  }
}

__global__ void ranks_of(const uint64_t* h, int64_t n, int size, uint32_t* rank, int64_t* row,
                         unsigned long long* counts) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint32_t r = rank_of_hash(h[i], size);
    rank[i] = r;
    row[i] = i;
    atomicAdd(counts + r, 1ULL);
  }
}

/// hash_rows of `keys` of device table `t` into device array `h`.
void hash_keys(const table& t, const std::vector<size_t>& keys, uint64_t* h) {
  const int64_t n = t.num_rows();
  for (size_t k = 0; k < keys.size(); ++k) {
    const column& c = t.col(keys[k]);
    const dcol v = cuda::view_of(c);
    const bool first = k == 0;
    if (c.type().id == type_id::string) {
      hash_strings<<<grid_for(n), 256, 0, stream()>>>(v, n, h, first);
    } else {
      type_dispatch(c.type().id, [&]<type_id Id>() {
        if constexpr (Id != type_id::string) hash_fixed<storage_t<Id>><<<grid_for(n), 256, 0, stream()>>>(v, n, h, first);
      });
    }
    TUG_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

rank_split split_on_device(const table& t, const std::vector<size_t>& keys, int size, memory_resource* mr) {
  cuda::nvtx_range range{"exchange split"};
  const int64_t n = t.num_rows();
  rank_split out;
  out.start.assign(static_cast<size_t>(size) + 1, 0);
  if (n == 0 || size == 1) {  // every row (if any) on rank 0
    out.rows = t;
    for (int r = 1; r <= size; ++r) out.start[static_cast<size_t>(r)] = n;
    return out;
  }
  if (keys.empty()) throw internal_error("split_on_device: no key columns");
  dbuf<uint64_t> h(n, mr);
  hash_keys(t, keys, h.p);
  dbuf<uint32_t> rank(n, mr), rank_sorted(n, mr);
  dbuf<int64_t> row(n, mr), row_sorted(n, mr);
  dbuf<unsigned long long> counts(size, mr);
  TUG_CUDA_TRY(cudaMemsetAsync(counts.p, 0, sizeof(unsigned long long) * static_cast<size_t>(size), stream()));
  ranks_of<<<grid_for(n), 256, 0, stream()>>>(h.p, n, size, rank.p, row.p, counts.p);
  TUG_CUDA_CHECK_LAUNCH();
  // a stable sort of the row numbers by rank: each rank's rows keep their order
  const int end_bit = std::max(1, static_cast<int>(std::bit_width(static_cast<unsigned>(size - 1))));
  size_t bytes = 0;
  TUG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, rank.p, rank_sorted.p, row.p, row_sorted.p, n, 0,
                                               end_bit, stream()));
  dbuf<uint8_t> temp(static_cast<int64_t>(bytes), mr);
  TUG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.p, bytes, rank.p, rank_sorted.p, row.p, row_sorted.p, n, 0,
                                               end_bit, stream()));
  std::vector<unsigned long long> c(static_cast<size_t>(size));
  cuda::read_back(counts.p, c.data(), size);
  for (int r = 0; r < size; ++r)
    out.start[static_cast<size_t>(r) + 1] = out.start[static_cast<size_t>(r)] + static_cast<int64_t>(c[static_cast<size_t>(r)]);
  out.rows = cuda::gather(t, row_sorted.p, n, mr);
  return out;
}

std::vector<uint64_t> hash_rows_on_device(const table& t, const std::vector<size_t>& keys) {
  const int64_t n = t.num_rows();
  std::vector<uint64_t> out(static_cast<size_t>(n));
  if (n == 0) return out;
  memory_resource* mr = t.col(keys.at(0)).data_buffer()->resource();
  dbuf<uint64_t> h(n, mr);
  hash_keys(t, keys, h.p);
  cuda::read_back(h.p, out.data(), n);
  return out;
}

}  // namespace tug::dist
