#pragma once
// Shared by the CUDA sources: error checking, the per-thread stream, NVTX ranges, device views of
// columns, device buffers and grid sizing. Included only from .cu files.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "exec/nvtx.hpp"
#include "tug/core/column.hpp"
#include "tug/core/error.hpp"
#include "tug/core/table.hpp"

namespace tug::cuda {

/// Raises compute_error (or memory_error for out-of-memory) naming the failed call and its place.
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line);

#define TUG_CUDA_TRY(call)                                                                       \
  do {                                                                                           \
    cudaError_t tug_e_ = (call);                                                                 \
    if (tug_e_ != cudaSuccess) ::tug::cuda::throw_cuda_error(tug_e_, #call, __FILE__, __LINE__); \
  } while (0)
/// Checks the launch that precedes it.
#define TUG_CUDA_CHECK_LAUNCH() TUG_CUDA_TRY(cudaPeekAtLastError())

/// Every operator works on the calling thread's default stream (tug compiles with
/// --default-stream per-thread); partitions on different pool threads overlap.
inline cudaStream_t stream() { return cudaStreamPerThread; }
/// Waits for the calling thread's stream; an operator calls it before handing a table to another thread.
void sync();
/// Copies `bytes` from device memory `dev` to host memory `host` once the thread's stream has done
/// its work, and returns when they are there: one host wait (counted with its time in device_waits()).
void download(void* host, const void* dev, size_t bytes);
/// Queues a copy of `bytes` from host memory `host` to device memory `dev` on the thread's stream;
/// `host` may be reused when it returns. Small copies (expression programs, key descriptors) go
/// through a pinned slot of the thread.
void upload(void* dev, const void* host, size_t bytes);
/// `count` device values at `p`, copied to `out` (download).
template <typename T>
void read_back(const T* p, T* out, int64_t count = 1) {
  download(out, p, sizeof(T) * static_cast<size_t>(count));
}

/// NVTX range for an operator's device work (exec/nvtx.hpp).
using ::tug::nvtx_range;

/// A string value on the device.
struct dstring {
  const char* p;
  int64_t n;
};

/// Trivially copyable device view of a column (its buffers must be device memory).
struct dcol {
  const void* data = nullptr;
  const int64_t* offsets = nullptr;
  const uint8_t* validity = nullptr;
  int64_t offset = 0;
  int64_t size = 0;

  template <typename T>
  __device__ T value(int64_t i) const {
    return static_cast<const T*>(data)[offset + i];
  }
  __device__ bool valid(int64_t i) const {
    if (!validity) return true;
    int64_t j = offset + i;
    return (validity[j >> 3] >> (j & 7)) & 1;
  }
  __device__ dstring str(int64_t i) const {
    const int64_t* o = offsets + offset;
    return {static_cast<const char*>(data) + o[i], o[i + 1] - o[i]};
  }
};
/// The device view of `c`. @throws internal_error when `c` is not in device memory.
dcol view_of(const column& c);
/// True when `c`'s values live in device memory.
bool is_device(const column& c);

/// A device buffer of `n` values of T from `mr` (uninitialized).
template <typename T>
struct dbuf {
  buffer_ptr buf;
  T* p = nullptr;
  dbuf() = default;
  dbuf(int64_t n, memory_resource* mr)
      : buf(make_buffer(sizeof(T) * static_cast<size_t>(n > 0 ? n : 0), mr)), p(buf->as<T>()) {}
};

/// A validity bitmap of `n` bits in device memory, sized to whole 32-bit words so that kernels can
/// write a word per warp.
inline dbuf<uint32_t> make_bitmap(int64_t n, memory_resource* mr) { return dbuf<uint32_t>((n + 31) / 32, mr); }

/// Queues the count of the set bits [offset, offset + n) of the device bitmap `bitmap`, added to the
/// device counter `*out` (which the caller zeroes); no wait, so several columns' counts share one.
void count_set_bits_async(const buffer& bitmap, int64_t offset, int64_t n, unsigned long long* out);

/// A column over device buffers; the null count is computed on the device when `validity` is set
/// (one wait for the stream: `cuda::gather` counts a table's columns with one wait instead).
column make_device_column(const data_type& type, int64_t n, buffer_ptr data, buffer_ptr validity = {},
                          buffer_ptr offsets = {});

/// Blocks for a grid-stride loop over `n` items with 256 threads each.
int grid_for(int64_t n, int block = 256);

/// Writes validity bit `i` for each row of a warp-aligned grid-stride loop: every lane of the warp must
/// call it for rows [32k, 32k+32) (rows >= n pass false). Lane 0 stores the word.
__device__ inline void store_valid_bit(uint32_t* bitmap, int64_t i, bool valid) {
  uint32_t w = __ballot_sync(0xffffffffu, valid);
  if ((threadIdx.x & 31) == 0) bitmap[i >> 5] = w;
}

}  // namespace tug::cuda
