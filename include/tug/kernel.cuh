#pragma once
/// Column views for user kernels (docs/user-kernels.md): what a CUDA kernel launched by
/// `map_partitions` receives, one struct per column (struct of arrays). The same header serves three
/// compilers: NVRTC (tug hands it to every run-time compiled kernel as <tug/kernel.cuh>), nvcc (a
/// user's own device functor includes it) and the host compiler (tug fills the structs). It includes
/// no standard header, since NVRTC has none.
///
/// A source kernel's parameters are, in order: `long long rows`, one `tug::in_column<T>` per input
/// column (`tug::in_strings` for a string column), one `tug::out_column<T>` per declared output
/// column (`tug::out_strings` for a string column), then the scalar arguments.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TUG_KERNEL_FN __host__ __device__ inline
#else
#define TUG_KERNEL_FN inline
#endif

namespace tug {

/// Bit j of an LSB-first validity bitmap (no bitmap: every row is valid).
TUG_KERNEL_FN bool valid_bit(const unsigned char* validity, long long j) {
  return !validity || ((validity[j >> 3] >> (j & 7)) & 1);
}

/// Read-only view of one input column of a partition. Row i of the partition is `data[offset + i]`;
/// `validity` is an LSB-first bitmap indexed like `data` (nullptr when the column has no nulls).
template <typename T>
struct in_column {
  const T* data;
  const unsigned char* validity;
  long long offset;
  long long size;

  TUG_KERNEL_FN T operator[](long long i) const { return data[offset + i]; }
  TUG_KERNEL_FN bool valid(long long i) const { return valid_bit(validity, offset + i); }
  TUG_KERNEL_FN bool is_null(long long i) const { return !valid(i); }
};

/// Read-only view of one string input column of a partition (UTF-8, Arrow's layout): row i is the
/// `length(i)` bytes at `data(i)`, not NUL-terminated; `offsets` holds int64 offsets into `chars`,
/// indexed like `validity` (row i's are `offsets[offset + i]` and `offsets[offset + i + 1]`). An empty
/// string and a null both have length 0: tell them apart with valid(i).
struct in_strings {
  const char* chars;
  const long long* offsets;
  const unsigned char* validity;
  long long offset;
  long long size;

  TUG_KERNEL_FN long long length(long long i) const { return offsets[offset + i + 1] - offsets[offset + i]; }
  TUG_KERNEL_FN const char* data(long long i) const { return chars + offsets[offset + i]; }
  TUG_KERNEL_FN bool valid(long long i) const { return valid_bit(validity, offset + i); }
  TUG_KERNEL_FN bool is_null(long long i) const { return !valid(i); }
};

#if defined(__CUDA_ARCH__)
/// Clears bit i of a bitmap of 32-bit words (safe from many threads at once).
__device__ inline void clear_bit(unsigned int* validity, long long i) {
  atomicAnd(validity + (i >> 5), ~(1u << (i & 31)));
}
#else
/// Clears bit i of a bitmap of 32-bit words (host code: not thread-safe for rows of one 32-row word).
inline void clear_bit(unsigned int* validity, long long i) { validity[i >> 5] &= ~(1u << (i & 31)); }
#endif

/// Writable view of one output column of a partition (`size` rows, every row valid until set_null).
/// `validity` is an LSB-first bitmap as 32-bit words (little-endian), so set_null is one atomic.
template <typename T>
struct out_column {
  T* data;
  unsigned int* validity;
  long long size;

  TUG_KERNEL_FN T& operator[](long long i) const { return data[i]; }
  /// Marks row i null (on the device safe from many threads at once).
  TUG_KERNEL_FN void set_null(long long i) const { clear_bit(validity, i); }
};

/// Writable view of one string output column of a partition (`size` rows of UTF-8, every row valid
/// until set_null). tug launches a kernel with a string output twice over the same rows, and the kernel
/// gives every row the same bytes both times. The first launch sizes (`sizing()`: `chars` is null):
/// `set(i, s, n)` or `set_length(i, n)` records row i's length in `offsets[i]` (rows never set are
/// empty). tug then turns the lengths into int64 offsets (`size + 1`) and allocates the characters. The
/// second launch writes: `set(i, s, n)` copies the bytes (at most the length the first launch gave), or
/// the kernel writes `length(i)` bytes at `data(i)` itself. Nulls are marked in either launch.
struct out_strings {
  char* chars;
  long long* offsets;
  unsigned int* validity;
  long long size;

  /// True in the first launch, which only gives lengths.
  TUG_KERNEL_FN bool sizing() const { return chars == nullptr; }
  /// First launch: row i takes `n` bytes (nothing in the second).
  TUG_KERNEL_FN void set_length(long long i, long long n) const {
    if (sizing()) offsets[i] = n;
  }
  /// Row i is the `n` bytes at `s`: its length in the first launch, its bytes in the second.
  TUG_KERNEL_FN void set(long long i, const char* s, long long n) const {
    if (sizing()) {
      offsets[i] = n;
      return;
    }
    const long long room = offsets[i + 1] - offsets[i];
    char* d = chars + offsets[i];
    for (long long j = 0; j < n && j < room; ++j) d[j] = s[j];
  }
  /// Second launch: where row i's bytes go (null in the first).
  TUG_KERNEL_FN char* data(long long i) const { return sizing() ? nullptr : chars + offsets[i]; }
  /// Second launch: row i's length from the first (0 in the first).
  TUG_KERNEL_FN long long length(long long i) const { return sizing() ? 0 : offsets[i + 1] - offsets[i]; }
  /// Marks row i null (on the device safe from many threads at once).
  TUG_KERNEL_FN void set_null(long long i) const { clear_bit(validity, i); }
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
/// The first row this thread handles in a grid-stride loop, and the stride:
/// `for (long long i = tug::first_row(); i < rows; i += tug::row_stride())`.
__device__ inline long long first_row() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline long long row_stride() { return static_cast<long long>(gridDim.x) * blockDim.x; }
#endif

}  // namespace tug
