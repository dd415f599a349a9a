// Hash group-by aggregation on the CUDA backend, in two phases like the CPU backend's: a partial
// aggregation per partition ("hash_aggregate[partial]", partitions in parallel on the pool threads)
// outputs the keys and the CPU's state columns of each group, and a final one ("hash_aggregate[final]",
// the sync point) merges the states of all partitions. Both run an accumulator program
// (hash_aggregate.hpp) over the rows of one table:
// - without keys, one block reduction per accumulator (CUB BlockReduce, one atomic per block);
// - with fixed-width keys, an open-addressing table in global memory whose slots hold the smallest row
//   of their group (compared on the key columns: nulls form one group, -0.0 == 0.0, NaNs equal), and
//   64-bit accumulators per slot updated with atomics. Each block first aggregates its rows in a
//   shared-memory table and merges it into the global one at its end, which keeps few groups at memory
//   bandwidth; when a block meets too many groups (or the small global table fills) the partition
//   is aggregated again directly into a global table of twice its rows. One integer key whose sampled
//   values lie in a small range indexes the block's table directly (slot = key - lo; experimental,
//   TUG_GPU_DIRECT_TABLE=0 turns it off).
// Groups come out in order of first appearance (slots sorted by their smallest row), like the CPU.
#include <thrust/iterator/counting_iterator.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <mutex>
#include <numeric>
#include <optional>
#include <string_view>

#include "exec/cpu/agg_kernels.hpp"
#include "exec/cuda/agg_common.cuh"
#include "exec/cuda/evaluate.hpp"
#include "exec/cuda/hash_aggregate.hpp"
#include "exec/cuda/hashing.cuh"
#include "exec/cuda/ops.hpp"
#include "exec/moments.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::cuda {

namespace {

using hash::acc_kind;
using hash::out_kind;
using hash::src_kind;
using ull = unsigned long long;

constexpr ull kEmpty = ~0ull;  ///< a free slot; also "no row" in min / max accumulators
constexpr ull kNoLimit = ~0ull;
constexpr int kBlock = 256;
constexpr int kMaxShared = 47 * 1024;  ///< dynamic shared memory of a block (under the 48 KiB needing no opt-in)
constexpr int64_t kSmallTable = int64_t{1} << 16;

/// An accumulator as kernels see it: columns it reads, its values per slot.
struct dacc {
  acc_kind kind = acc_kind::add_u64;
  src_kind src = src_kind::none;
  vkind k = vkind::u8, k2 = vkind::u8, k3 = vkind::u8;
  dcol c, c2, c3;
  ull* out = nullptr;         ///< per slot
  const ull* center = nullptr;  ///< per slot (dev, sq_dev, wdev, chan)
};

/// An open-addressing table of groups: each used slot holds the smallest row of its group.
struct dtable {
  ull* slots = nullptr;
  uint64_t mask = 0;     ///< capacity - 1 (a power of two)
  ull* count = nullptr;  ///< groups inserted (plus reservations in flight)
  ull limit = kNoLimit;  ///< a new group beyond `limit` groups is refused
};

__device__ inline double f64_of(ull v) { return __longlong_as_double(static_cast<long long>(v)); }
__device__ inline ull bits_of(double d) { return static_cast<ull>(__double_as_longlong(d)); }

__host__ __device__ inline ull identity(acc_kind k) {
  return k == acc_kind::best_min || k == acc_kind::best_max || k == acc_kind::min_u64 ? kEmpty : 0;
}

/// Whether row r passes the fused filter's mask (a boolean column; no data: every row).
__device__ inline bool selected(const dcol& mask, int64_t r) {
  return !mask.data || (mask.valid(r) && mask.value<bool>(r));
}

/// The better of two candidate rows of `c`: NaN only when nothing else, ties to the earlier row;
/// anything outside [0, rows) is no candidate.
__device__ inline ull better(const dcol& c, vkind k, bool max, ull a, ull b) {
  auto rows = static_cast<ull>(c.size);
  if (a >= rows) return b;
  if (b >= rows) return a;
  int r = cmp_values(c, k, static_cast<int64_t>(a), static_cast<int64_t>(b), !max);
  if (r == 0) return a < b ? a : b;
  return (max ? r > 0 : r < 0) ? a : b;
}

/// Sums, counts and flags (add_u64, add_f64, or_u64: identity 0): combined and merged atomically.
__device__ inline ull fadd(acc_kind k, ull a, ull b) {
  if (k == acc_kind::add_f64) return bits_of(f64_of(a) + f64_of(b));
  return k == acc_kind::or_u64 ? (a | b) : a + b;
}

__device__ inline void fmerge(acc_kind k, ull* p, ull v) {
  if (k == acc_kind::add_f64) atomicAdd(reinterpret_cast<double*>(p), f64_of(v));
  else if (k == acc_kind::or_u64) atomicOr(p, v);
  else atomicAdd(p, v);
}

__device__ inline ull combine(const dacc& d, ull a, ull b) {
  switch (d.kind) {
    case acc_kind::add_u64:
    case acc_kind::add_f64:
    case acc_kind::or_u64:
      return fadd(d.kind, a, b);
    case acc_kind::max_u64:
      return a > b ? a : b;
    case acc_kind::min_u64:
      return a < b ? a : b;
    case acc_kind::best_min:
      return better(d.c, d.k, false, a, b);
    case acc_kind::best_max:
      return better(d.c, d.k, true, a, b);
    default:
      return a;
  }
}

/// What row r (of group slot `slot`) contributes to `d`; identity(d.kind) for nothing.
__device__ inline ull contribution(const dacc& d, int64_t r, int64_t slot) {
  if (d.src == src_kind::one) return 1;
  if (d.src == src_kind::row) return static_cast<ull>(r);
  if (d.src == src_kind::row1) return static_cast<ull>(r) + 1;
  if (d.src == src_kind::none || !d.c.valid(r)) return identity(d.kind);
  switch (d.src) {
    case src_kind::valid:
      return 1;
    case src_kind::value:
      return d.kind == acc_kind::add_f64 ? bits_of(as_f64(d.c, d.k, r)) : as_u64(d.c, d.k, r);
    case src_kind::is_true:
      return as_u64(d.c, d.k, r) != 0;
    case src_kind::is_false:
      return as_u64(d.c, d.k, r) == 0;
    case src_kind::candidate:
      return static_cast<ull>(r);
    case src_kind::value_key:
      return hash::order_key(bits_of(as_f64(d.c, d.k, r)), hash::cmp_as::f64);
    case src_kind::weighted: {
      auto n = static_cast<int64_t>(as_u64(d.c, d.k, r));
      return n == 0 ? 0 : bits_of(static_cast<double>(n) * as_f64(d.c2, d.k2, r));
    }
    case src_kind::mean_key:
      return as_u64(d.c, d.k, r) == 0 ? identity(d.kind)
                                      : hash::order_key(bits_of(as_f64(d.c2, d.k2, r)), hash::cmp_as::f64);
    case src_kind::dev:
      return bits_of(moments::deviation(1.0, as_f64(d.c, d.k, r), f64_of(d.center[slot])));
    case src_kind::sq_dev:
      return bits_of(moments::squared_deviation(1.0, as_f64(d.c, d.k, r), 0.0, f64_of(d.center[slot])));
    case src_kind::wdev:
    case src_kind::chan: {
      auto n = static_cast<int64_t>(as_u64(d.c, d.k, r));
      if (n == 0) return 0;
      const double w = static_cast<double>(n), mu = as_f64(d.c2, d.k2, r), c = f64_of(d.center[slot]);
      return bits_of(d.src == src_kind::wdev ? moments::deviation(w, mu, c)
                                             : moments::squared_deviation(w, mu, as_f64(d.c3, d.k3, r), c));
    }
    default:
      return identity(d.kind);
  }
}

/// Combines `v` into the accumulator at `p` (shared or global memory) atomically.
__device__ inline void merge(const dacc& d, ull* p, ull v) {
  switch (d.kind) {
    case acc_kind::add_u64:
    case acc_kind::add_f64:
    case acc_kind::or_u64:
      fmerge(d.kind, p, v);
      return;
    case acc_kind::max_u64:
      atomicMax(p, v);
      return;
    case acc_kind::min_u64:
      atomicMin(p, v);
      return;
    default: {
      // min / max candidates: the stored row only ever gets better, so the loop ends
      ull old = *reinterpret_cast<volatile ull*>(p);
      while (true) {
        ull next = combine(d, old, v);
        if (next == old) return;
        ull seen = atomicCAS(p, old, next);
        if (seen == old) return;
        old = seen;
      }
    }
  }
}

__device__ inline void add_row(const dacc* accs, int na, int64_t r, int64_t slot, ull* base, int64_t stride) {
  for (int j = 0; j < na; ++j) {
    ull v = contribution(accs[j], r, slot);
    if (v != identity(accs[j].kind)) merge(accs[j], base + j * stride + slot, v);
  }
}

/// The bits a key value hashes by: equal keys (cmp_rows) give equal bits.
__device__ inline uint64_t key_bits(const dkey& key, int64_t r) {
  if (!key.c.valid(r)) return 0x9ae16a3b2f90404fULL;
  if (key.k == vkind::f32) return float_bits(key.c.value<float>(r));
  if (key.k == vkind::f64) return float_bits(key.c.value<double>(r));
  return as_u64(key.c, key.k, r);
}

__device__ inline uint64_t hash_row(const dkey* keys, int nk, int64_t r) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (int k = 0; k < nk; ++k)
    h = mix(h ^ (key_bits(keys[k], r) + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(k + 1)));
  return h;
}

/// The slot of row r's group, inserting r when the group is new and lowering the slot's row to r
/// when r is smaller; -1 when the group is new and the table already holds `limit` groups.
__device__ inline int64_t find_or_insert(const dtable& t, const dkey* keys, int nk, int64_t r, uint64_t h) {
  auto row = static_cast<ull>(r);
  for (uint64_t i = h & t.mask;; i = (i + 1) & t.mask) {
    ull cur = *reinterpret_cast<volatile ull*>(&t.slots[i]);
    if (cur == kEmpty) {
      // reserve room first, so that a full table is never probed forever
      if (atomicAdd(t.count, 1ull) >= t.limit) {
        atomicAdd(t.count, ~0ull);
        return -1;
      }
      cur = atomicCAS(&t.slots[i], kEmpty, row);
      if (cur == kEmpty) return static_cast<int64_t>(i);
      atomicAdd(t.count, ~0ull);  // another group took the slot first
    }
    if (cmp_rows(keys, nk, static_cast<int64_t>(cur), r) == 0) {
      if (row < cur) atomicMin(&t.slots[i], row);
      return static_cast<int64_t>(i);
    }
  }
}

/// The slot of row r's group (which must be in the table), -1 when missing.
__device__ inline int64_t find(const dtable& t, const dkey* keys, int nk, int64_t r, uint64_t h) {
  uint64_t i = h & t.mask;
  for (uint64_t probes = 0; probes <= t.mask; ++probes, i = (i + 1) & t.mask) {
    ull cur = t.slots[i];
    if (cur == kEmpty) return -1;
    if (cmp_rows(keys, nk, static_cast<int64_t>(cur), r) == 0) return static_cast<int64_t>(i);
  }
  return -1;
}

/// Merges a block's shared-memory table into the global table `g` at the block's end: each used slot
/// (its smallest row at srow[i]) finds or inserts its group in `g`, then `merge_slot(i, slot)` adds
/// its accumulators. A group that does not fit sets *overflow and ends the merge.
template <typename F>
__device__ inline void merge_block_table(const ull* srow, int cap, const dkey* keys, int nk, const dtable& g,
                                         ull* overflow, F&& merge_slot) {
  for (int i = threadIdx.x; i < cap; i += blockDim.x) {
    ull row = srow[i];
    if (row == kEmpty) continue;
    auto r = static_cast<int64_t>(row);
    int64_t slot = find_or_insert(g, keys, nk, r, hash_row(keys, nk, r));
    if (slot < 0) {
      atomicExch(overflow, 1ull);
      return;
    }
    merge_slot(i, slot);
  }
}

/// Pass 1 through shared memory: block b aggregates the selected rows of [b * per_block, (b + 1) * per_block) into a
/// table of `cap` slots, then merges its groups into `g`. A block that meets more than cap / 2 groups,
/// or whose groups do not fit in `g`, sets *overflow and every block stops.
__global__ void shared_pass_kernel(const dkey* keys, int nk, const dacc* accs, int na, dcol mask, int64_t n,
                                   int64_t per_block, int cap, dtable g, ull* overflow) {
  extern __shared__ ull smem[];
  __shared__ ull count;
  ull* stab = smem;
  ull* sacc = smem + cap;
  for (int i = threadIdx.x; i < cap; i += blockDim.x) {
    stab[i] = kEmpty;
    for (int j = 0; j < na; ++j)
      sacc[int64_t(j) * cap + i] = identity(accs[j].kind);
  }
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  dtable s{stab, static_cast<uint64_t>(cap - 1), &count, static_cast<ull>(cap / 2)};
  int64_t lo = int64_t(blockIdx.x) * per_block, hi = lo + per_block < n ? lo + per_block : n;
  for (int64_t base = lo; base < hi; base += blockDim.x) {
    int64_t r = base + threadIdx.x;
    bool stop = false;
    if (r < hi && selected(mask, r)) {
      int64_t slot = find_or_insert(s, keys, nk, r, hash_row(keys, nk, r));
      if (slot < 0) {
        atomicExch(overflow, 1ull);
        stop = true;
      } else {
        add_row(accs, na, r, slot, sacc, cap);
      }
    }
    if (threadIdx.x == 0 && *reinterpret_cast<volatile ull*>(overflow)) stop = true;
    if (__syncthreads_or(stop)) return;
  }
  // the barrier above (or the first one) has seen every row of the block into the shared table
  merge_block_table(stab, cap, keys, nk, g, overflow, [&](int i, int64_t slot) {
    for (int j = 0; j < na; ++j) {
      ull v = sacc[int64_t(j) * cap + i];
      if (v != identity(accs[j].kind)) merge(accs[j], accs[j].out + slot, v);
    }
  });
}

/// A pass over the selected rows straight into the global table: pass 1 inserts groups (a new group
/// beyond the table's limit sets *overflow), pass 2 finds them (all of them are in the table).
__global__ void rows_pass_kernel(const dkey* keys, int nk, const dacc* accs, int na, dcol mask, int64_t n, dtable g,
                                 bool insert, ull* overflow) {
  const bool limited = insert && g.limit != kNoLimit;
  unsigned step = 0;
  TUG_GRID_LOOP(r, n) {
    // a limited table that overflowed is dropped: stop early (each thread reads the flag every 8th row)
    if (limited && (++step & 7) == 0 && *reinterpret_cast<volatile ull*>(overflow)) return;
    if (!selected(mask, r)) continue;
    uint64_t h = hash_row(keys, nk, r);
    int64_t slot = insert ? find_or_insert(g, keys, nk, r, h) : find(g, keys, nk, r, h);
    if (slot < 0) {
      if (insert) atomicExch(overflow, 1ull);
      continue;
    }
    for (int j = 0; j < na; ++j) {
      ull v = contribution(accs[j], r, slot);
      if (v != identity(accs[j].kind)) merge(accs[j], accs[j].out + slot, v);
    }
  }
}

struct combine_op {
  dacc d;
  __device__ ull operator()(ull a, ull b) const { return combine(d, a, b); }
};

/// Without keys: accumulator `d` (one slot) over the selected rows; one atomic per block.
__global__ void reduce_kernel(dacc d, dcol mask, int64_t n) {
  using reduce_t = cub::BlockReduce<ull, kBlock>;
  __shared__ typename reduce_t::TempStorage temp;
  ull x = identity(d.kind);
  TUG_GRID_LOOP(r, n) {
    if (selected(mask, r)) x = combine(d, x, contribution(d, r, 0));
  }
  x = reduce_t(temp).Reduce(x, combine_op{d});
  if (threadIdx.x == 0 && x != identity(d.kind)) merge(d, d.out, x);
}

// ---------------------------------------------------------------------------------------------
// The fused path: the predicate's `column <op> literal` terms, the keys and the accumulators read at
// most kFCols columns, loaded kRows rows a thread (every load issued before any is used, so that many
// are in flight) and evaluated in registers, with no mask column. It runs programs whose accumulators
// are sums, counts and flags (add_u64 / add_f64 / or_u64 of one / valid / value / is_true / is_false,
// identity 0) without a pass 2; the others take the mask path.

constexpr int kFCols = 4, kFAccs = 4, kFKeys = 2, kRows = 4;
constexpr int kFTerms = static_cast<int>(hash::max_fused_terms);
constexpr ull kClaim = ~1ull;  ///< a shared slot being filled in (its key not yet written)

/// A predicate term as a range of order keys (order_key): true where the column is valid and its key
/// is in [lo, hi] (outside it when `outside`); an empty range (lo > hi) holds nowhere.
struct fterm {
  int col = 0;
  hash::cmp_as as = hash::cmp_as::s64;
  bool outside = false;
  ull lo = 0, hi = 0;
};
struct facc {
  acc_kind kind = acc_kind::add_u64;
  src_kind src = src_kind::one;
  int col = -1;
  ull* out = nullptr;
};
/// A fused program (passed by value: kernel parameters).
struct fprog {
  dcol cols[kFCols];
  vkind kinds[kFCols] = {};
  int ncols = 0;
  fterm terms[kFTerms];
  int nterms = 0;
  facc accs[kFAccs];
  int naccs = 0;
  int keys[kFKeys] = {};
  int nk = 0;
  bool wide = false;   ///< every column 8 bytes (int64, uint64, float64, times): read without conversion
  bool nulls = false;  ///< some column has a validity bitmap
};

/// One row's columns: values widened to 64 bits (integers extended, floats as doubles), valid bits.
/// Kernels are compiled for kC = 2 and kC = kFCols columns: a row of a program with at most two
/// columns takes half the registers (the four rows a thread loads ahead no longer spill).
template <int kC>
struct frow {
  ull v[kC];
  unsigned valid;
};

__device__ inline ull raw_of(const dcol& c, vkind k, int64_t r) {
  if (k == vkind::f64) return c.value<ull>(r);
  if (k == vkind::f32) return bits_of(static_cast<double>(c.value<float>(r)));
  return as_u64(c, k, r);
}

/// Loads row r; kWide / kNulls: the program's `wide` / `nulls` (compile-time, so that the common
/// case, 8-byte columns without nulls, is one load per column).
template <bool kWide, bool kNulls, int kC>
__device__ inline void load_row(const fprog& p, int64_t r, frow<kC>& x) {
  x.valid = kNulls ? 0u : ~0u;
#pragma unroll
  for (int c = 0; c < kC; ++c)
    if (c < p.ncols) {
      if constexpr (kWide) x.v[c] = static_cast<const ull*>(p.cols[c].data)[p.cols[c].offset + r];
      else x.v[c] = raw_of(p.cols[c], p.kinds[c], r);
      if constexpr (kNulls) x.valid |= static_cast<unsigned>(p.cols[c].valid(r)) << c;
    }
}

/// x.v[c] without indexing the register array at run time (which would put it in local memory).
template <int kC>
__device__ inline ull pick(const frow<kC>& x, int c) {
  ull v = x.v[0];
#pragma unroll
  for (int i = 1; i < kC; ++i)
    if (c == i) v = x.v[i];
  return v;
}

template <int kC>
__device__ inline bool term_holds(const fterm& t, const frow<kC>& x) {
  ull k = hash::order_key(pick(x, t.col), t.as);
  bool in = k >= t.lo && k <= t.hi;
  return ((x.valid >> t.col) & 1) && in != t.outside;
}

template <int kC>
__device__ inline bool row_selected(const fprog& p, const frow<kC>& x) {
  bool s = true;
#pragma unroll
  for (int i = 0; i < kFTerms; ++i)
    if (i < p.nterms) s = s && term_holds(p.terms[i], x);
  return s;
}

template <int kC>
__device__ inline ull fcontribution(const fprog& p, const facc& a, const frow<kC>& x) {
  if (a.src == src_kind::one) return 1;
  if (!((x.valid >> a.col) & 1)) return 0;
  ull v = pick(x, a.col);
  switch (a.src) {
    case src_kind::valid:
      return 1;
    case src_kind::value: {
      if (a.kind != acc_kind::add_f64) return v;
      vkind k = p.kinds[a.col];
      double d = k == vkind::f64 || k == vkind::f32 ? f64_of(v)
                 : k == vkind::u64                  ? static_cast<double>(v)
                                                    : static_cast<double>(static_cast<long long>(v));
      return bits_of(d);
    }
    case src_kind::is_true:
      return v != 0;
    case src_kind::is_false:
      return v == 0;
    default:
      return 0;
  }
}

struct fadd_op {
  acc_kind k;
  __device__ ull operator()(ull a, ull b) const { return fadd(k, a, b); }
};
struct min_op {
  __device__ ull operator()(ull a, ull b) const { return a < b ? a : b; }
};

/// Without keys: the accumulators over the selected rows (grid-stride tiles); per block one atomic per
/// accumulator; `first` (when set) gets the smallest selected row.
template <bool kWide, bool kNulls, int kC>
__global__ void __launch_bounds__(kBlock) fused_reduce_kernel(fprog p, int64_t n, ull* first) {
  ull acc[kFAccs] = {0, 0, 0, 0};
  ull lo = kEmpty;
  const int64_t tile = int64_t(kBlock) * kRows;
  for (int64_t base = int64_t(blockIdx.x) * tile; base < n; base += int64_t(gridDim.x) * tile) {
    frow<kC> x[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      int64_t r = base + k * kBlock + threadIdx.x;
      if (r < n) load_row<kWide, kNulls, kC>(p, r, x[k]);
    }
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      int64_t r = base + k * kBlock + threadIdx.x;
      if (r >= n || !row_selected(p, x[k])) continue;
      lo = static_cast<ull>(r) < lo ? static_cast<ull>(r) : lo;
#pragma unroll
      for (int j = 0; j < kFAccs; ++j)
        if (j < p.naccs) acc[j] = fadd(p.accs[j].kind, acc[j], fcontribution(p, p.accs[j], x[k]));
    }
  }
  using reduce_t = cub::BlockReduce<ull, kBlock>;
  __shared__ typename reduce_t::TempStorage temp;
#pragma unroll
  for (int j = 0; j < kFAccs; ++j)
    if (j < p.naccs) {
      ull v = reduce_t(temp).Reduce(acc[j], fadd_op{p.accs[j].kind});
      if (threadIdx.x == 0 && v != 0) fmerge(p.accs[j].kind, p.accs[j].out, v);
      __syncthreads();
    }
  if (first) {
    lo = reduce_t(temp).Reduce(lo, min_op{});
    if (threadIdx.x == 0 && lo != kEmpty) atomicMin(first, lo);
  }
}

/// The key words of row x (0 for a null key) and the null mask; floats normalized like the hash.
template <int kC>
__device__ inline uint32_t key_words(const fprog& p, const frow<kC>& x, ull* w) {
  uint32_t nulls = 0;
#pragma unroll
  for (int i = 0; i < kFKeys; ++i)
    if (i < p.nk) {
      int c = p.keys[i];
      bool valid = (x.valid >> c) & 1;
      ull v = pick(x, c);
      vkind k = p.kinds[c];
      w[i] = !valid ? 0 : (k == vkind::f64 || k == vkind::f32) ? float_bits(f64_of(v)) : v;
      nulls |= static_cast<uint32_t>(!valid) << i;
    }
  return nulls;
}

/// Adds row x's contributions to the accumulators of one shared slot (accumulator j at acc[j * cap]).
template <int kC>
__device__ inline void add_contributions(const fprog& p, const frow<kC>& x, ull* acc, int cap) {
#pragma unroll
  for (int j = 0; j < kFAccs; ++j)
    if (j < p.naccs) {
      ull v = fcontribution(p, p.accs[j], x);
      if (v != 0) fmerge(p.accs[j].kind, &acc[int64_t(j) * cap], v);
    }
}

/// Adds row r (loaded in x) to the shared table; false when its group is new and the table already
/// holds `limit` groups. A slot is claimed (kClaim), its key written, then published with its row.
template <bool kNulls, int kC>
__device__ inline bool shared_add(const fprog& p, const frow<kC>& x, int64_t r, ull* srow, ull* skey, ull* sacc, int cap,
                                  ull* count, ull limit) {
  ull w[kFKeys] = {0, 0};
  uint32_t nulls = key_words(p, x, w);
  uint64_t h = (w[0] * 0x9e3779b97f4a7c15ULL) ^ ((w[1] + nulls) * 0xc2b2ae3d27d4eb4fULL);
  const auto mask = static_cast<uint32_t>(cap - 1);
  uint32_t i = static_cast<uint32_t>(h >> 40) & mask;
  // Writers publish a slot with atomics after a block fence (key words, then the row); a warp's
  // shared-memory loads complete in order, so key words loaded after a published row are that row's.
  // The row and the key words are loaded back to back (one round trip), then compared.
  auto same_key = [&](const volatile ull* key, ull k0) {
    bool same = k0 == w[0];
    if (kFKeys > 1 && p.nk > 1) same = same && key[cap] == w[1];
    if (kNulls) same = same && key[int64_t(p.nk) * cap] == nulls;
    return same;
  };
  for (;; i = (i + 1) & mask) {
    volatile ull* row = &srow[i];
    const volatile ull* key = skey + i;
    ull cur = *row;
    ull k0 = key[0];
    if (cur == kEmpty) {
      if (atomicAdd(count, 1ull) >= limit) {
        atomicAdd(count, ~0ull);
        return false;
      }
      cur = atomicCAS(&srow[i], kEmpty, kClaim);
      if (cur == kEmpty) {
        // atomic writes: the readers of a published slot read its key without a barrier between
#pragma unroll
        for (int k = 0; k < kFKeys; ++k)
          if (k < p.nk) atomicExch(&skey[int64_t(k) * cap + i], w[k]);
        if (kNulls) atomicExch(&skey[int64_t(p.nk) * cap + i], static_cast<ull>(nulls));
        __threadfence_block();
        atomicExch(&srow[i], static_cast<ull>(r));
        break;
      }
      atomicAdd(count, ~0ull);  // another thread took the slot first
      k0 = key[0];
    }
    while (cur == kClaim) {
      cur = *row;
      k0 = key[0];
    }
    if (same_key(key, k0)) {
      if (static_cast<ull>(r) < cur) atomicMin(&srow[i], static_cast<ull>(r));
      break;
    }
  }
  add_contributions(p, x, sacc + i, cap);
  return true;
}

/// Adds row r (loaded in x) to a direct table of cap = range.span + 1 slots: the key's value v takes
/// slot v - lo, the null key the last one; no hashing, probing or key compare. False when the key is
/// outside the range (the sample that chose the range missed it).
template <bool kNulls, int kC>
__device__ inline bool direct_add(const fprog& p, const frow<kC>& x, int64_t r, ull* srow, ull* sacc, int cap,
                                  hash::direct_range range) {
  const int c = p.keys[0];
  ull i = range.span;
  if (!kNulls || ((x.valid >> c) & 1)) {
    ull v = pick(x, c);
    if (!range.holds(v)) return false;
    i = v - range.lo;
  }
  if (static_cast<ull>(r) < *reinterpret_cast<volatile ull*>(&srow[i])) atomicMin(&srow[i], static_cast<ull>(r));
  add_contributions(p, x, sacc + i, cap);
  return true;
}

/// Blocks of fused_shared_kernel that an SM must hold (__launch_bounds__: registers are capped at 64 Ki
/// / (kBlock * blocks)); more blocks hide more of the shared-memory round trips. The direct tables'
/// two-column instances need fewer registers (no probing): 6 blocks (40 registers) without validity
/// bits, 5 (48) with them (at 6 they spill); the other instances 4 (64).
constexpr int fused_min_blocks(bool direct, bool nulls, int cols) { return direct && cols == 2 ? (nulls ? 5 : 6) : 4; }

/// Keys through shared memory: block b aggregates the selected rows of [b * per_block, (b + 1) * per_block)
/// into a shared table of `cap` slots (row: the group's smallest row, kEmpty / kClaim; the key words
/// and null mask; the accumulators), then merges its groups into `g`. A block that meets more than 3/4
/// cap groups, or whose groups do not fit in `g`, sets *overflow and every block stops. With `reps`
/// > 1 the accumulators are replicated: warp w adds into replica w % reps, so warps never contend for
/// a few hot groups' atomics (a float64 add in shared memory is a compare-and-swap loop, which other
/// warps' adds to the same group make retry); the replicas are summed at the merge. kDirect: the table
/// is direct-indexed (direct_add: `cap` = range.span + 1 slots without key words, the group's row and
/// accumulators only); a key outside `range` sets *overflow like a full table.
template <bool kWide, bool kNulls, int kC, bool kDirect>
__global__ void __launch_bounds__(kBlock, fused_min_blocks(kDirect, kNulls, kC))
    fused_shared_kernel(fprog p, const dkey* keys, int nk, int64_t n, int64_t per_block, int cap, int reps,
                        hash::direct_range range, dtable g, ull* overflow) {
  extern __shared__ ull smem[];
  __shared__ ull count;
  ull* srow = smem;
  ull* skey = smem + cap;  // word w of slot i at skey[w * cap + i] (hashed tables)
  // accumulator j of slot i in replica q at sacc[(q * naccs + j) * cap + i]
  ull* sacc = smem + static_cast<int64_t>(cap) * (kDirect ? 1 : 2 + nk);
  const int64_t per_rep = int64_t(p.naccs) * cap;
  for (int i = threadIdx.x; i < cap; i += blockDim.x)
    srow[i] = kEmpty;
  for (int64_t i = threadIdx.x; i < per_rep * reps; i += blockDim.x)
    sacc[i] = 0;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const ull limit = static_cast<ull>(cap) / 4 * 3;
  int64_t lo = int64_t(blockIdx.x) * per_block, hi = lo + per_block < n ? lo + per_block : n;
  const int64_t tile = int64_t(kBlock) * kRows;
  ull* mine = sacc + (threadIdx.x / 32 % reps) * per_rep;
  for (int64_t base = lo; base < hi; base += tile) {
    frow<kC> x[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      int64_t r = base + k * kBlock + threadIdx.x;
      if (r < hi) load_row<kWide, kNulls, kC>(p, r, x[k]);
    }
    bool stop = false;
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      int64_t r = base + k * kBlock + threadIdx.x;
      if (!stop && r < hi && row_selected(p, x[k])) {
        if constexpr (kDirect)
          stop = !direct_add<kNulls, kC>(p, x[k], r, srow, mine, cap, range);
        else
          stop = !shared_add<kNulls, kC>(p, x[k], r, srow, skey, mine, cap, &count, limit);
      }
    }
    if (stop) atomicExch(overflow, 1ull);
    if (threadIdx.x == 0 && *reinterpret_cast<volatile ull*>(overflow)) stop = true;
    if (__syncthreads_or(stop)) return;
  }
  // the barrier above has seen every row of the block into the shared table
  merge_block_table(srow, cap, keys, nk, g, overflow, [&](int i, int64_t slot) {
    for (int j = 0; j < p.naccs; ++j) {
      ull v = 0;
      for (int q = 0; q < reps; ++q)
        v = fadd(p.accs[j].kind, v, sacc[q * per_rep + int64_t(j) * cap + i]);
      if (v != 0) fmerge(p.accs[j].kind, p.accs[j].out + slot, v);
    }
  });
}

/// center[s] = moments::center of count[s], sum[s] and the values' range (order keys lo[s], hi[s]) for
/// the slots of the groups.
__global__ void center_kernel(const int64_t* slots, int64_t g, const ull* count, const ull* sum, const ull* lo,
                              const ull* hi, ull* center) {
  TUG_GRID_LOOP(i, g) {
    int64_t s = slots[i];
    center[s] = bits_of(moments::center(f64_of(sum[s]), static_cast<double>(count[s]), hash::from_order_key(lo[s]),
                                        hash::from_order_key(hi[s])));
  }
}

/// group_of_slot[slots[i]] = i.
__global__ void slot_groups_kernel(const int64_t* slots, int64_t g, int64_t* group_of_slot) {
  TUG_GRID_LOOP(i, g) { group_of_slot[slots[i]] = i; }
}

/// out[r] = the group of row r (every row's group is in the table).
__global__ void row_groups_kernel(const dkey* keys, int nk, dtable t, const int64_t* group_of_slot, int64_t n,
                                  int64_t* out) {
  TUG_GRID_LOOP(r, n) {
    int64_t s = find(t, keys, nk, r, hash_row(keys, nk, r));
    out[r] = s < 0 ? -1 : group_of_slot[s];
  }
}

struct is_used {
  const ull* slots;
  __device__ bool operator()(int64_t i) const { return slots[i] != kEmpty; }
};

/// An output column's values from accumulators.
struct dout {
  out_kind kind = out_kind::take;
  const ull* a = nullptr;
  const ull* b = nullptr;
  const ull* c = nullptr;
  int ddof = 0;
  void* data = nullptr;
  uint32_t* valid = nullptr;  ///< null: the column has no nulls
};

/// Output row i from the accumulators of slot slots[i]; row kinds write the row to gather (-1: none).
__global__ void finish_kernel(dout o, const int64_t* slots, int64_t g) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int lane = threadIdx.x & 31;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i - lane < g; i += stride) {
    bool valid = false;
    if (i < g) {
      int64_t s = slots[i];
      ull x = o.a[s];
      valid = true;
      switch (o.kind) {
        case out_kind::take:
          static_cast<ull*>(o.data)[i] = x;
          break;
        case out_kind::first_row:
        case out_kind::best_row:
          static_cast<int64_t*>(o.data)[i] = x == kEmpty ? -1 : static_cast<int64_t>(x);
          break;
        case out_kind::last_row:
          static_cast<int64_t*>(o.data)[i] = static_cast<int64_t>(x) - 1;
          break;
        case out_kind::mean: {
          auto c = static_cast<int64_t>(o.b[s]);
          valid = c > 0;
          static_cast<double*>(o.data)[i] = valid ? f64_of(x) / static_cast<double>(c) : 0.0;
          break;
        }
        case out_kind::var:
        case out_kind::std: {
          auto c = static_cast<int64_t>(x);
          valid = moments::has_variance(c, o.ddof);
          static_cast<double*>(o.data)[i] =
              valid ? moments::variance(moments::m2(f64_of(o.b[s]), f64_of(o.c[s]), static_cast<double>(c)), c, o.ddof,
                                        o.kind == out_kind::std)
                    : 0.0;
          break;
        }
        case out_kind::moment_mean:
        case out_kind::moment_m2: {
          auto w = static_cast<double>(x);
          double v = 0;
          if (x > 0)
            v = o.kind == out_kind::moment_mean ? moments::mean(f64_of(o.b[s]), f64_of(o.c[s]), w)
                                                : moments::m2(f64_of(o.b[s]), f64_of(o.c[s]), w);
          static_cast<double*>(o.data)[i] = v;
          break;
        }
        case out_kind::any:
          static_cast<bool*>(o.data)[i] = x != 0;
          break;
        case out_kind::all:
          static_cast<bool*>(o.data)[i] = x == 0;
          break;
      }
    }
    if (o.valid) store_valid_bit(o.valid, i, valid);
  }
}

/// The instance of a fused kernel for program `f`: `make(wide, nulls, columns)` with each as an
/// integral constant (columns: 2 when the program reads at most two, else kFCols).
template <typename K, typename M>
K pick_kernel(const fprog& f, M make) {
  using yes = std::true_type;
  using no = std::false_type;
  using two = std::integral_constant<int, 2>;
  using all = std::integral_constant<int, kFCols>;
  auto by_cols = [&](auto w, auto z) -> K { return f.ncols <= 2 ? make(w, z, two{}) : make(w, z, all{}); };
  auto by_nulls = [&](auto w) -> K { return f.nulls ? by_cols(w, yes{}) : by_cols(w, no{}); };
  return f.wide ? by_nulls(yes{}) : by_nulls(no{});
}

int sm_count() {
  static int sms = [] {
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
    return v > 0 ? v : 1;
  }();
  return sms;
}

int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x)
    p <<= 1;
  return p;
}

int bit_width(int64_t x) {
  int b = 0;
  while (b < 63 && (int64_t{1} << b) <= x)
    ++b;
  return b;
}

/// Slots of the shared-memory table for `na` accumulators (0: they do not fit).
/// Slots of a block's shared-memory table whose slots take `words` 8-byte words (0: fewer than `least`
/// fit).
int shared_slots(int words, int least = 256) {
  for (int cap = 4096; cap >= least; cap /= 2)
    if (static_cast<int64_t>(words) * cap * 8 <= kMaxShared) return cap;
  return 0;
}

/// Slots of shared_pass_kernel's table (the row, the accumulators).
int shared_capacity(int na) { return shared_slots(1 + na); }

/// The accumulators of a program over table `t`, with `cap` slots each.
struct accumulators {
  int64_t cap = 0;
  dbuf<ull> slots;    ///< the group table (cap slots)
  dbuf<ull> values;   ///< accumulator j at [j * cap, (j + 1) * cap)
  dbuf<ull> control;  ///< [0] groups, [1] overflow
  dbuf<dacc> accs;
  std::vector<dacc> host;

  const ull* at(int j) const { return values.p + static_cast<int64_t>(j) * cap; }
};

accumulators make_accumulators(const hash::program& p, const table& t, int64_t cap, memory_resource* mr) {
  accumulators a;
  a.cap = cap;
  auto na = static_cast<int64_t>(p.accs.size());
  a.slots = dbuf<ull>(cap, mr);
  a.values = dbuf<ull>(na * cap, mr);
  a.control = dbuf<ull>(2, mr);
  TUG_CUDA_TRY(cudaMemsetAsync(a.slots.p, 0xff, sizeof(ull) * static_cast<size_t>(cap), stream()));
  TUG_CUDA_TRY(cudaMemsetAsync(a.control.p, 0, 2 * sizeof(ull), stream()));
  auto view = [&](int c, dcol& v, vkind& k) {
    if (c < 0) return;
    const column& col = t[static_cast<size_t>(c)];
    v = view_of(col);
    k = kind_of(col.type());
  };
  for (int64_t j = 0; j < na; ++j) {
    const hash::acc_desc& d = p.accs[static_cast<size_t>(j)];
    dacc x;
    x.kind = d.kind;
    x.src = d.src;
    view(d.col, x.c, x.k);
    view(d.col2, x.c2, x.k2);
    view(d.col3, x.c3, x.k3);
    x.out = a.values.p + j * cap;
    if (d.src == src_kind::dev || d.src == src_kind::sq_dev || d.src == src_kind::wdev || d.src == src_kind::chan)
      x.center = a.values.p + static_cast<int64_t>(d.a) * cap;
    TUG_CUDA_TRY(
        cudaMemsetAsync(x.out, identity(d.kind) == 0 ? 0 : 0xff, sizeof(ull) * static_cast<size_t>(cap), stream()));
    a.host.push_back(x);
  }
  a.accs = dbuf<dacc>(na, mr);
  upload(a.accs.p, a.host.data(), sizeof(dacc) * static_cast<size_t>(na));
  return a;
}

dtable table_of(const accumulators& a, ull limit) {
  return dtable{a.slots.p, static_cast<uint64_t>(a.cap - 1), a.control.p, limit};
}

/// The rows an aggregation reads: all of them, or those where a predicate is true. A predicate of
/// `column <op> literal` terms is fused into the kernels (`terms`); any predicate is also evaluated
/// into a mask column when a kernel without fusion needs it (once per table).
struct row_filter {
  const expr* predicate = nullptr;
  const schema* input = nullptr;
  std::vector<hash::pred_term> terms;
  std::optional<column> mask;

  bool any() const { return predicate != nullptr; }
  /// The mask's device view (an empty view without a predicate), evaluated over `t` at the first call.
  dcol mask_of(const table& t, memory_resource* mr) {
    if (!predicate) return dcol{};
    if (!mask) mask = evaluate({*predicate}, t, *input, mr)[0];
    return view_of(*mask);
  }
};

/// The fused program of `p` over `t` (keys `keys`), when the program, the keys and the filter fit it
/// (see the fused path above); its accumulators' outputs are set by with_outputs.
std::optional<fprog> fused_program(const hash::program& p, const table& t, const std::vector<size_t>& keys,
                                   const row_filter& filter) {
  if (p.pass2 > 0 || static_cast<int>(p.accs.size()) > kFAccs || static_cast<int>(keys.size()) > kFKeys) return {};
  if (filter.any() && filter.terms.empty()) return {};
  fprog f;
  std::vector<size_t> cols;
  auto slot = [&](size_t c) {
    auto it = std::find(cols.begin(), cols.end(), c);
    if (it != cols.end()) return static_cast<int>(it - cols.begin());
    cols.push_back(c);
    return static_cast<int>(cols.size()) - 1;
  };
  for (auto& d : p.accs) {
    bool kind = d.kind == acc_kind::add_u64 || d.kind == acc_kind::add_f64 || d.kind == acc_kind::or_u64;
    bool src = d.src == src_kind::one || d.src == src_kind::valid || d.src == src_kind::value ||
               d.src == src_kind::is_true || d.src == src_kind::is_false;
    if (!kind || !src || d.pass != 1) return {};
    facc& x = f.accs[f.naccs];
    x.kind = d.kind;
    x.src = d.src;
    x.col = d.src == src_kind::one ? -1 : slot(static_cast<size_t>(d.col));
    ++f.naccs;
  }
  for (auto& term : filter.terms) {
    fterm& x = f.terms[f.nterms++];
    x.col = slot(term.col);
    x.as = term.as;
    hash::key_range range = hash::range_of(term);
    x.lo = range.lo;
    x.hi = range.hi;
    x.outside = range.outside;
  }
  for (size_t k : keys)
    f.keys[f.nk++] = slot(k);
  if (static_cast<int>(cols.size()) > kFCols) return {};
  f.wide = true;
  for (size_t c : cols) {
    f.cols[f.ncols] = view_of(t[c]);
    vkind k = kind_of(t[c].type());
    if (k == vkind::str) return {};
    f.kinds[f.ncols] = k;
    f.wide = f.wide && (k == vkind::i64 || k == vkind::u64 || k == vkind::f64);
    f.nulls = f.nulls || f.cols[f.ncols].validity != nullptr;
    ++f.ncols;
  }
  return f;
}

/// `f` with its accumulators' outputs in `a` (made for the program `f` was made from).
fprog with_outputs(fprog f, const accumulators& a) {
  for (int j = 0; j < f.naccs; ++j)
    f.accs[j].out = a.host[static_cast<size_t>(j)].out;
  return f;
}

/// How an operator's partitions group their rows: through direct-indexed shared-memory tables (fused
/// programs of one integer key whose sampled values lie in a small range; replicated accumulators),
/// shared-memory tables whose accumulators are replicated per warp (fused programs, a few hundred
/// groups at most), shared-memory tables, a small global table (up to kSmallTable / 2 groups, in
/// L2), or a global table of twice the rows. The first large partition picks the starting tier from
/// a sample (guess_tier); a partition that overflows a tier moves the operator's later partitions to
/// the next.
enum class tier : int { unknown = -1, direct = 0, warp = 1, shared = 2, small = 3, big = 4 };

/// What guess_tier decides: the starting tier and, for tier::direct, the key range.
struct tier_guess {
  tier at = tier::warp;
  hash::direct_range range;
};

/// An operator's tier, shared by its partitions (which run in parallel on the pool threads): decided
/// once, by the first partition to get there, and raised by any partition that overflows it. The
/// direct tier's key range is written with the decision, under the lock and before the tier is
/// published (release), and never changes: a partition that reads tier::direct (acquire) may read it.
class tier_state {
 public:
  tier at() const { return static_cast<tier>(_level.load(std::memory_order_acquire)); }
  /// The direct tier's keys (read only after at() returned tier::direct).
  const hash::direct_range& range() const { return _range; }
  /// Sets the tier to `g` unless it is decided already.
  void decide(const tier_guess& g) {
    std::lock_guard<std::mutex> lock(_decide);
    if (_level.load(std::memory_order_relaxed) != static_cast<int>(tier::unknown)) return;
    _range = g.range;
    _level.store(static_cast<int>(g.at), std::memory_order_release);
  }
  /// Raises the tier to at least `to` (after the decision).
  void raise(tier to) {
    int want = static_cast<int>(to), cur = _level.load(std::memory_order_relaxed);
    while (cur < want && !_level.compare_exchange_weak(cur, want, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<int> _level{static_cast<int>(tier::unknown)};
  std::mutex _decide;
  hash::direct_range _range;
};

constexpr int kWarps = kBlock / 32;

/// Slots of the fused shared-memory table with `nk` keys and `na` accumulators in `reps` replicas
/// (0: too few fit).
int fused_shared_capacity(int nk, int na, int reps) { return shared_slots(2 + nk + reps * na, reps > 1 ? 128 : 256); }

/// Slots of a direct table with `na` accumulators replicated once a warp (each slot: the group's row
/// and the replicas): 668 for one accumulator, 182 for four.
int direct_slots(int na) { return kMaxShared / (8 * (1 + kWarps * na)); }

/// TUG_GPU_DIRECT_TABLE=0 turns the direct tier off (experimental: to compare with the hashed tiers;
/// read once).
bool direct_table_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TUG_GPU_DIRECT_TABLE");
    return !(v && std::string_view(v) == "0");
  }();
  return on;
}

/// How a direct table orders the values of key kind `k`: s64 / u64 for integers (and booleans, dates,
/// times), f64 (no direct table) for the others.
__host__ __device__ inline hash::cmp_as direct_order(vkind k) {
  switch (k) {
    case vkind::i8:
    case vkind::i16:
    case vkind::i32:
    case vkind::i64:
      return hash::cmp_as::s64;
    case vkind::u8:
    case vkind::u16:
    case vkind::u32:
    case vkind::u64:
      return hash::cmp_as::u64;
    default:
      return hash::cmp_as::f64;
  }
}

constexpr int kSampleBits = 1 << 17;        ///< linear-counting bitmap of the sample (16 KiB of shared memory)
constexpr int64_t kSamples = 1 << 15;       ///< rows sampled
constexpr int64_t kGuessRows = 1 << 20;     ///< partitions at least this large guess their tier
constexpr int64_t kSizeRows = 1 << 22;      ///< at least this many rows size the largest table to the groups

/// `kSamples` rows spread evenly over [0, n) (row s * n / kSamples): linear counting sets one bit of a
/// shared bitmap per sampled row's key hash and writes the number of bits left clear to out[0]; with
/// one integer key, out[1] and out[2] get the smallest and largest valid sampled keys as order keys
/// (direct_order; ~0 and 0 when none). One block.
__global__ void __launch_bounds__(1024) sample_keys_kernel(const dkey* keys, int nk, int64_t n, ull* out) {
  __shared__ uint32_t bits[kSampleBits / 32];
  __shared__ unsigned int clear;
  __shared__ ull least, most;
  for (int i = threadIdx.x; i < kSampleBits / 32; i += blockDim.x)
    bits[i] = 0;
  if (threadIdx.x == 0) {
    clear = 0;
    least = kEmpty;
    most = 0;
  }
  __syncthreads();
  const hash::cmp_as as = nk == 1 ? direct_order(keys[0].k) : hash::cmp_as::f64;
  ull lo = kEmpty, hi = 0;
  for (int64_t s = threadIdx.x; s < kSamples; s += blockDim.x) {
    int64_t r = s * n / kSamples;
    uint64_t h = hash_row(keys, nk, r) >> (64 - 17);
    atomicOr(&bits[h >> 5], 1u << (h & 31));
    if (as != hash::cmp_as::f64 && keys[0].c.valid(r)) {
      ull k = hash::order_key(as_u64(keys[0].c, keys[0].k, r), as);
      lo = k < lo ? k : lo;
      hi = k > hi ? k : hi;
    }
  }
  atomicMin(&least, lo);
  atomicMax(&most, hi);
  __syncthreads();
  unsigned int z = 0;
  for (int i = threadIdx.x; i < kSampleBits / 32; i += blockDim.x)
    z += 32 - __popc(bits[i]);
  atomicAdd(&clear, z);
  __syncthreads();
  if (threadIdx.x == 0) {
    out[0] = clear;
    out[1] = least;
    out[2] = most;
  }
}

/// HyperLogLog registers (hash::hll_place) of the key hashes of rows [0, n): each block keeps its own
/// in shared memory and raises `regs` with them at its end.
__global__ void hll_kernel(const dkey* keys, int nk, int64_t n, uint32_t* regs) {
  __shared__ uint32_t local[hash::hll_registers];
  for (int i = threadIdx.x; i < hash::hll_registers; i += blockDim.x)
    local[i] = 0;
  __syncthreads();
  TUG_GRID_LOOP(r, n) {
    uint32_t reg = 0, rank = 0;
    hash::hll_place(hash_row(keys, nk, r), reg, rank);
    atomicMax(&local[reg], rank);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < hash::hll_registers; i += blockDim.x)
    if (local[i] != 0) atomicMax(&regs[i], local[i]);
}

/// HyperLogLog registers (hash::hll_registers words, zeroed once) raised by the keys of further rows.
struct hll_sketch {
  dbuf<uint32_t> regs;
  explicit hll_sketch(memory_resource* mr) : regs(hash::hll_registers, mr) {
    TUG_CUDA_TRY(cudaMemsetAsync(regs.p, 0, sizeof(uint32_t) * hash::hll_registers, stream()));
  }
  /// Adds the key hashes of rows [0, n) keyed by `dk`.
  void add(const dkey* dk, int nk, int64_t n) {
    if (n <= 0) return;
    // 8 blocks an SM: enough loads in flight for a pass at memory speed (2 an SM took twice as long)
    auto blocks = static_cast<int>(std::min<int64_t>((n + 255) / 256, int64_t(sm_count()) * 8));
    hll_kernel<<<blocks, 256, 0, stream()>>>(dk, nk, n, regs.p);
    TUG_CUDA_CHECK_LAUNCH();
  }
  /// The distinct keys added so far, estimated (about 1.6% error).
  double estimate() const {
    std::vector<uint32_t> host(hash::hll_registers);
    read_back(regs.p, host.data(), hash::hll_registers);
    return hash::hll_estimate(host.data());
  }
};

/// The distinct keys among rows [0, n) keyed by `dk`, estimated (HyperLogLog, about 1.6% error).
double estimate_distinct(const dkey* dk, int nk, int64_t n, memory_resource* mr) {
  hll_sketch h(mr);
  h.add(dk, nk, n);
  return h.estimate();
}

/// The tier to start at for `n` rows (n >= kSamples) keyed by `dk`, whose direct tables hold
/// `direct_cap` slots (0: none; the key then orders as `as`), whose shared tables hold `warp_cap`
/// slots with replicated accumulators (0: none) and `cap` without. A direct table when the sampled
/// keys' range (and the null key) fits it; else the distinct keys among kSamples sampled rows, by
/// linear counting, against the count that G groups would show, G (1 - e^(-samples / G)): up to
/// warp_cap / 2 groups use replicated tables, up to cap / 2 shared tables, up to kSmallTable / 4 the
/// small table, more the big one. A wrong guess costs an overflow, not a result.
tier_guess guess_tier(const dkey* dk, int nk, int64_t n, int direct_cap, hash::cmp_as as, int warp_cap, int cap,
                      memory_resource* mr) {
  dbuf<ull> out(3, mr);
  sample_keys_kernel<<<1, 1024, 0, stream()>>>(dk, nk, n, out.p);
  TUG_CUDA_CHECK_LAUNCH();
  ull sampled[3] = {0, 0, 0};
  read_back(out.p, sampled, 3);
  if (direct_cap > 0) {
    hash::direct_range range = hash::direct_range_of(sampled[1], sampled[2], as, direct_cap);
    if (range.span > 0) return {tier::direct, range};
  }
  constexpr double m = kSampleBits, s = kSamples;
  ull z = sampled[0];
  double seen = z == 0 ? s : -m * std::log(static_cast<double>(z) / m);
  auto shows = [&](double groups) { return groups * (1 - std::exp(-s / groups)); };
  if (warp_cap > 0 && seen <= shows(warp_cap / 2.0)) return {tier::warp, {}};
  if (cap > 0 && seen <= shows(cap / 2.0)) return {tier::shared, {}};
  if (seen <= shows(static_cast<double>(kSmallTable) / 4)) return {tier::small, {}};
  return {tier::big, {}};
}

/// Pass 1 over the rows of `t` grouped by `keys` (uploaded as `dk`); returns the accumulators and the
/// number of groups. Starts at the operator's tier `level` (raised when a partition overflows it).
accumulators group_pass(const hash::program& p, const table& t, const std::vector<size_t>& keys, const dkey* dk,
                        row_filter& filter, tier_state& level, int64_t* groups, memory_resource* mr) {
  int64_t n = t.num_rows();
  int nk = static_cast<int>(keys.size());
  int64_t big = pow2_at_least(2 * n);
  auto finish = [&](accumulators& a, ull* control) {
    read_back(a.control.p, control, 2);
    if (control[1] == 0) *groups = static_cast<int64_t>(control[0]);
    return control[1] == 0;
  };
  ull control[2] = {0, 0};
  std::optional<fprog> f = fused_program(p, t, keys, filter);
  if (level.at() == tier::unknown) {
    // the fused table's slots are larger: guess with the smaller capacity
    int cap = std::min(fused_shared_capacity(nk, p.pass1, 1), shared_capacity(p.pass1));
    // a direct table for a fused program of one integer key
    hash::cmp_as as = f && nk == 1 ? direct_order(f->kinds[f->keys[0]]) : hash::cmp_as::f64;
    int direct_cap = as != hash::cmp_as::f64 && direct_table_enabled() ? direct_slots(p.pass1) : 0;
    // smaller partitions start at the warp tier (never direct): their overflows are cheap
    level.decide(n >= kGuessRows
                     ? guess_tier(dk, nk, n, direct_cap, as, fused_shared_capacity(nk, p.pass1, kWarps), cap, mr)
                     : tier_guess{});
  }
  // one wave of blocks (as many as fit on the device at once), each over an equal share of the rows
  auto split = [&](const void* kernel, size_t smem, int64_t* per_block) {
    int resident = 0;
    TUG_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kBlock, smem));
    int64_t wave = std::max<int64_t>(1, int64_t(resident) * sm_count());
    int64_t share = (n + wave - 1) / wave;
    *per_block = std::max<int64_t>(kBlock * kRows, (share + kBlock - 1) / kBlock * kBlock);
    return static_cast<int>((n + *per_block - 1) / *per_block);
  };
  // the fused shared-memory kernel, hashed or direct (an integral constant)
  auto fused_kernel = [&](auto direct) {
    return pick_kernel<decltype(&fused_shared_kernel<true, true, 2, false>)>(*f, [](auto w, auto z, auto c) {
      return &fused_shared_kernel<decltype(w)::value, decltype(z)::value, decltype(c)::value, decltype(direct)::value>;
    });
  };
  for (tier at : {tier::direct, tier::warp, tier::shared}) {
    if (level.at() > at) continue;
    accumulators a = make_accumulators(p, t, std::min(big, kSmallTable), mr);
    const bool direct = at == tier::direct;
    // the direct tier is decided only for fused programs of one key; its range fits direct_slots
    hash::direct_range range = direct ? level.range() : hash::direct_range{};
    int reps = at == tier::shared ? 1 : kWarps;
    int cap = direct             ? (f && range.span > 0 ? static_cast<int>(range.span) + 1 : 0)
              : f                ? fused_shared_capacity(nk, p.pass1, reps)
              : at == tier::warp ? 0
                                 : shared_capacity(p.pass1);
    if (cap > 0) {
      dtable g = table_of(a, static_cast<ull>(a.cap / 2));
      int64_t per_block = 0;
      if (f) {
        size_t words = static_cast<size_t>((direct ? 1 : 2 + nk) + reps * p.pass1);
        size_t smem = sizeof(ull) * static_cast<size_t>(cap) * words;
        auto kernel = direct ? fused_kernel(std::true_type{}) : fused_kernel(std::false_type{});
        int blocks = split(reinterpret_cast<const void*>(kernel), smem, &per_block);
        kernel<<<blocks, kBlock, smem, stream()>>>(with_outputs(*f, a), dk, nk, n, per_block, cap, reps, range, g,
                                                   a.control.p + 1);
      } else {
        size_t smem = sizeof(ull) * static_cast<size_t>(cap) * static_cast<size_t>(1 + p.pass1);
        int blocks = split(reinterpret_cast<const void*>(shared_pass_kernel), smem, &per_block);
        shared_pass_kernel<<<blocks, kBlock, smem, stream()>>>(dk, nk, a.accs.p, p.pass1, filter.mask_of(t, mr), n,
                                                               per_block, cap, g, a.control.p + 1);
      }
      TUG_CUDA_CHECK_LAUNCH();
      if (finish(a, control)) return a;
    }
    // a key outside the direct table's range, more groups than a block's table holds (or no
    // replicated table for this program)
    level.raise(direct ? tier::warp : at == tier::warp ? tier::shared : tier::small);
  }
  if (level.at() <= tier::small && big > kSmallTable) {
    accumulators a = make_accumulators(p, t, kSmallTable, mr);
    launch(n, rows_pass_kernel, dk, nk, a.accs.p, p.pass1, filter.mask_of(t, mr), n,
           table_of(a, static_cast<ull>(kSmallTable / 2)), true, a.control.p + 1);
    if (finish(a, control)) return a;
    level.raise(tier::big);
  }
  if (n >= kSizeRows) {
    // a table for the estimated groups, when that is smaller than one for the rows, as in a final
    // phase (each group once per partition): at least 4 slots a group (at 2.2 the longer probes cost
    // more than the smaller table saves: bench/results/2026-11-21-gpu-session6-h100/), filled to at
    // most half (an estimate far off overflows it, and the table of the rows follows)
    int64_t sized = pow2_at_least(static_cast<int64_t>(4 * estimate_distinct(dk, nk, n, mr)) + 1);
    if (sized < big) {
      accumulators a = make_accumulators(p, t, sized, mr);
      launch(n, rows_pass_kernel, dk, nk, a.accs.p, p.pass1, filter.mask_of(t, mr), n,
             table_of(a, static_cast<ull>(sized / 2)), true, a.control.p + 1);
      if (finish(a, control)) return a;
    }
  }
  accumulators a = make_accumulators(p, t, big, mr);
  launch(n, rows_pass_kernel, dk, nk, a.accs.p, p.pass1, filter.mask_of(t, mr), n, table_of(a, kNoLimit), true,
         a.control.p + 1);
  finish(a, control);
  return a;
}

/// Output column `o` for the groups at `slots` (first rows `first`), from `t` and the accumulators.
column output_column(const hash::out_desc& o, const table& t, const accumulators& a, const int64_t* slots,
                     const int64_t* first, int64_t g, memory_resource* mr) {
  if (o.kind == out_kind::first_row) return cuda::gather(t[static_cast<size_t>(o.col)], first, g, mr);
  dout d;
  d.kind = o.kind;
  d.a = a.at(o.acc);
  d.b = o.acc2 >= 0 ? a.at(o.acc2) : nullptr;
  d.c = o.acc3 >= 0 ? a.at(o.acc3) : nullptr;
  d.ddof = o.ddof;
  if (o.kind == out_kind::best_row || o.kind == out_kind::last_row) {
    dbuf<int64_t> rows(g, mr);
    d.data = rows.p;
    launch(g, finish_kernel, d, slots, g);
    return cuda::gather(t[static_cast<size_t>(o.col)], rows.p, g, mr);
  }
  TUG_EXPECTS(o.kind != out_kind::take || size_of(o.type.id) == 8,
              "CUDA hash aggregation: unexpected output type " + to_string(o.type));
  buffer_ptr data = make_buffer(static_cast<size_t>(g) * static_cast<size_t>(size_of(o.type.id)), mr);
  dbuf<uint32_t> valid;
  bool nullable = o.kind == out_kind::mean || o.kind == out_kind::var || o.kind == out_kind::std;
  if (nullable) valid = make_bitmap(g, mr);
  d.data = data->data();
  d.valid = valid.p;
  launch(g, finish_kernel, d, slots, g);
  return make_device_column(o.type, g, std::move(data), valid.buf);
}

/// An empty device table of the given column types.
table empty_table(const std::vector<data_type>& types, memory_resource* mr) {
  std::vector<column> cols;
  for (auto& t : types)
    cols.push_back(make_empty_column(t));
  return to_device(cols.empty() ? table::empty_with_rows(0) : table(std::move(cols)), mr);
}

/// Runs program `p` over the rows of `t` where `filter` (a device boolean column; nullptr: every row)
/// is true, grouped by columns `keys`: the key columns of each group, then the program's outputs,
/// groups in order of first appearance. Without keys one group, or none when no row is selected and
/// not `one_group_if_empty`.
/// The device views of the key columns `keys` of `t`, in device memory.
dbuf<dkey> upload_keys(const table& t, const std::vector<size_t>& keys, memory_resource* mr) {
  std::vector<dkey> hk;
  for (size_t k : keys)
    hk.push_back({view_of(t[k]), kind_of(t[k].type())});
  dbuf<dkey> dk(static_cast<int64_t>(hk.size()), mr);
  upload(dk.p, hk.data(), hk.size() * sizeof(dkey));
  return dk;
}

table aggregate_table(const hash::program& p, const table& t, const std::vector<size_t>& keys, row_filter& filter,
                      bool one_group_if_empty, tier_state& level, memory_resource* mr,
                      dbuf<int64_t>* row_groups = nullptr) {
  int64_t n = t.num_rows();
  int nk = static_cast<int>(keys.size());
  auto no_groups = [&] {
    std::vector<data_type> types;
    for (size_t k : keys)
      types.push_back(t[k].type());
    for (auto& o : p.outs)
      types.push_back(o.type);
    return empty_table(types, mr);
  };
  if (n == 0 && (nk > 0 || !one_group_if_empty)) return no_groups();
  auto na = static_cast<int>(p.accs.size());
  int first2 = na - p.pass2;  // the first pass-2 accumulator
  accumulators a;
  int64_t g = 1;
  dbuf<int64_t> slots, first;
  dbuf<dkey> dk;
  if (nk == 0) {
    // one group: slot 0; its first row is the first selected one (-1: none)
    a = make_accumulators(p, t, 1, mr);
    slots = dbuf<int64_t>(1, mr);
    first = dbuf<int64_t>(1, mr);
    TUG_CUDA_TRY(cudaMemsetAsync(slots.p, 0, sizeof(int64_t), stream()));
    TUG_CUDA_TRY(cudaMemsetAsync(first.p, n > 0 && !filter.any() ? 0 : 0xff, sizeof(int64_t), stream()));
    ull* first_row = filter.any() ? reinterpret_cast<ull*>(first.p) : nullptr;
    if (std::optional<fprog> f = fused_program(p, t, keys, filter)) {
      int64_t tiles = (n + int64_t(kBlock) * kRows - 1) / (int64_t(kBlock) * kRows);
      auto blocks = static_cast<int>(std::min<int64_t>(tiles, int64_t(sm_count()) * 8));
      auto kernel = pick_kernel<decltype(&fused_reduce_kernel<true, true, 2>)>(*f, [](auto w, auto z, auto c) {
        return &fused_reduce_kernel<decltype(w)::value, decltype(z)::value, decltype(c)::value>;
      });
      if (n > 0) kernel<<<blocks, kBlock, 0, stream()>>>(with_outputs(*f, a), n, first_row);
      TUG_CUDA_CHECK_LAUNCH();
    } else {
      dcol mask = filter.mask_of(t, mr);
      if (first_row) {
        dacc f;
        f.kind = acc_kind::min_u64;
        f.src = src_kind::row;
        f.out = first_row;
        launch(n, reduce_kernel, f, mask, n);
      }
      for (int j = 0; j < p.pass1; ++j)
        launch(n, reduce_kernel, a.host[static_cast<size_t>(j)], mask, n);
    }
    if (filter.any() && !one_group_if_empty) {
      int64_t row = -1;
      read_back(first.p, &row);
      if (row < 0) return no_groups();
    }
  } else {
    dk = upload_keys(t, keys, mr);
    a = group_pass(p, t, keys, dk.p, filter, level, &g, mr);
    if (g == 0) return no_groups();  // the filter selected nothing
    // the groups' slots in order of first appearance: used slots, sorted by their smallest row
    dbuf<int64_t> used(g, mr), rows(g, mr), num(1, mr);
    thrust::counting_iterator<int64_t> all(0);
    is_used pred{a.slots.p};
    cub_run(mr, [&](void* temp, size_t& bytes) {
      return cub::DeviceSelect::If(temp, bytes, all, used.p, num.p, a.cap, pred, stream());
    });
    dout d;
    d.kind = out_kind::first_row;
    d.a = a.slots.p;
    d.data = rows.p;
    launch(g, finish_kernel, d, used.p, g);
    slots = dbuf<int64_t>(g, mr);
    first = dbuf<int64_t>(g, mr);
    if (g > 1) {
      int end_bit = bit_width(n);
      cub_run(mr, [&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, rows.p, first.p, used.p, slots.p, g, 0, end_bit, stream());
      });
    } else {
      first = rows;
      slots = used;
    }
    if (row_groups) {
      dbuf<int64_t> group_of_slot(a.cap, mr);
      launch(g, slot_groups_kernel, slots.p, g, group_of_slot.p);
      *row_groups = dbuf<int64_t>(n, mr);
      launch(n, row_groups_kernel, dk.p, nk, table_of(a, kNoLimit), group_of_slot.p, n, row_groups->p);
    }
  }
  if (p.pass2 > 0) {
    for (int j = 0; j < first2; ++j) {
      const hash::acc_desc& m = p.accs[static_cast<size_t>(j)];
      if (m.kind == acc_kind::center)
        launch(g, center_kernel, slots.p, g, a.at(m.a), a.at(m.b), a.at(m.lo), a.at(m.hi),
               a.host[static_cast<size_t>(j)].out);
    }
    if (nk == 0) {
      for (int j = first2; j < na; ++j)
        launch(n, reduce_kernel, a.host[static_cast<size_t>(j)], filter.mask_of(t, mr), n);
    } else {
      launch(n, rows_pass_kernel, dk.p, nk, a.accs.p + first2, p.pass2, filter.mask_of(t, mr), n,
             table_of(a, kNoLimit), false, a.control.p + 1);
    }
  }
  std::vector<column> cols;
  for (size_t k : keys)
    cols.push_back(cuda::gather(t[k], first.p, g, mr));
  for (auto& o : p.outs)
    cols.push_back(output_column(o, t, a, slots.p, first.p, g, mr));
  sync();
  return cols.empty() ? table::empty_with_rows(g) : table(std::move(cols));
}

std::vector<size_t> first_columns(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), size_t{0});
  return v;
}

/// True when partial aggregation would hardly reduce `parts`: the first partition has at least
/// kSizeRows rows and more distinct keys than half its rows (HyperLogLog estimate). Each row is then
/// inserted into a table twice, once in its partition and once more in the final phase over nearly as
/// many states (rows / 10 groups over 16 partitions keep 74% of the rows). False too when aggregating
/// them at once would not fit the device budget left: a copy of the partitions, the table sized for
/// all their groups (estimated over every partition) as group_pass sizes it, the sort of the groups
/// and the output.
bool hardly_reduces(const hash::program& p, const std::vector<table>& parts, const std::vector<size_t>& keys,
                    exec_context& ctx) {
  if (parts.size() < 2 || keys.empty() || parts[0].num_rows() < kSizeRows) return false;
  const int nk = static_cast<int>(keys.size());
  const int64_t n0 = parts[0].num_rows();
  hll_sketch sketch(ctx.device_mr);
  sketch.add(upload_keys(parts[0], keys, ctx.device_mr).p, nk, n0);
  if (sketch.estimate() <= 0.5 * static_cast<double>(n0)) return false;
  const memory_budget* b = ctx.device_budget;
  if (!b || b->limit() <= 0) return true;
  int64_t bytes = parts[0].memory_usage(), rows = n0;
  for (size_t i = 1; i < parts.size(); ++i) {
    sketch.add(upload_keys(parts[i], keys, ctx.device_mr).p, nk, parts[i].num_rows());
    bytes += parts[i].memory_usage();
    rows += parts[i].num_rows();
  }
  const auto groups = std::min<int64_t>(rows, static_cast<int64_t>(1.05 * sketch.estimate()) + 1);
  const int64_t table = pow2_at_least(4 * groups + 1) * 8 * (1 + static_cast<int64_t>(p.accs.size()));
  const int64_t sort = groups * 8 * 6;  // used slots, first rows, sorted pairs, radix sort room
  const int64_t out = groups * 8 * static_cast<int64_t>(keys.size() + p.outs.size());
  return b->used() + bytes + table + sort + out <= b->limit();
}

/// Per partition: the key columns and the state columns of every aggregation (cpu::partial_schema),
/// over the rows where the absorbed filter's predicate (if any) is true. When the input may not fit
/// the device budget whole (may_exceed_device), each partition is aggregated as its producer makes it
/// (fused into the child). Else, when that would hardly reduce the rows (hardly_reduces), the
/// partitions are concatenated and aggregated once instead: one partition of states, one a group, in
/// order of first appearance (per partition after all if that runs out of device memory).
class partial_op final : public physical_node {
 public:
  partial_op(std::vector<size_t> keys, const std::vector<agg_spec>& aggs, std::optional<expr> predicate)
      : _keys(std::move(keys)), _aggs(aggs), _predicate(std::move(predicate)), _program(hash::plan_partial(aggs)) {}
  std::string name() const override { return "hash_aggregate[partial]"; }
  std::string detail() const override {
    return (_predicate ? "filter " + to_string(*_predicate) + " " : std::string()) + describe(_keys, _aggs, false);
  }
  /// Partial states of any share of the rows are right (the final phase merges them): on several ranks
  /// each rank aggregates its own share (the default, for a node that is not per_partition(), would
  /// gather every input row to rank 0 first).
  rank_need input_need(size_t) const override { return {rank_need::kind::any, {}}; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    const schema& in = children[0]->output_schema;
    _level = std::make_unique<tier_state>();
    _terms.clear();
    if (_predicate) _terms = hash::fused_predicate(*_predicate, in);
    if (children[0]->accepts_fused() && may_exceed_device(*children[0], ctx)) return run_per_partition(ctx);
    auto parts = input(0, ctx);
    auto aggregate = [&](const table& t) { return process_partition(t, ctx); };
    if (hardly_reduces(_program, parts, _keys, ctx)) {
      try {
        return {aggregate(concat_all(parts, in, ctx))};
      } catch (const memory_error&) {
        // the estimate was short: per partition, as when the budget check says no
      }
    }
    return map_partitions(ctx, parts, aggregate);
  }

  table process_partition(const table& t, exec_context& ctx) override {
    nvtx_range r{"hash_aggregate[partial]"};
    row_filter filter;
    if (_predicate) {
      filter.predicate = &*_predicate;
      filter.input = &children[0]->output_schema;
      filter.terms = _terms;
    }
    return aggregate_table(_program, t, _keys, filter, false, *_level, ctx.device_mr);
  }

 private:
  std::vector<size_t> _keys;
  std::vector<agg_spec> _aggs;
  std::optional<expr> _predicate;
  hash::program _program;
  std::unique_ptr<tier_state> _level;  ///< the tier of this run's partitions (run)
  std::vector<hash::pred_term> _terms;  ///< the predicate's fused terms (run)
};

/// Merges the partial states of all partitions (input: the keys, then the states of each aggregation).
class final_op final : public physical_node {
 public:
  final_op(size_t num_keys, std::vector<agg_spec> aggs, bool maintain_order)
      : _num_keys(num_keys),
        _aggs(std::move(aggs)),
        _maintain_order(maintain_order),
        _program(hash::plan_final(_aggs, num_keys)) {}
  std::string name() const override { return "hash_aggregate[final]"; }
  std::string detail() const override { return describe(first_columns(_num_keys), _aggs, _maintain_order); }
  bool sync_point() const override { return true; }
  rank_need input_need(size_t) const override {
    return exec::aggregate_need(first_columns(_num_keys), _maintain_order, true);
  }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    nvtx_range r{"hash_aggregate[final]"};
    // states arrive in partition order, each partition's groups in order of first appearance, so the
    // first appearance over the concatenation is the first appearance in the input
    table all = concat_all(parts, children[0]->output_schema, ctx);
    tier_state level;
    row_filter none;
    table out = aggregate_table(_program, all, first_columns(_num_keys), none, _num_keys == 0, level, ctx.device_mr);
    return split_rows(out, ctx.options);
  }

 private:
  size_t _num_keys;
  std::vector<agg_spec> _aggs;
  bool _maintain_order;
  hash::program _program;
};

/// out[r] = state_group[offset + local[r]]: a partition's rows' groups among all partitions'.
__global__ void global_groups_kernel(const int64_t* local, int64_t n, const int64_t* state_group, int64_t offset,
                                     int64_t* out) {
  TUG_GRID_LOOP(r, n) { out[r] = state_group[offset + local[r]]; }
}

/// `over` windows whose keys and aggregation hash (hash::unfit), without concatenating the input: per
/// window, the partial program groups each partition's rows (giving each row its group within the
/// partition), the final program merges the states of all partitions (giving each state row its group
/// overall, in order of first appearance), and each row gathers its group's value. Output: the input
/// columns, then one column per window, in the input's partitions.
class window_op final : public window_base {
 public:
  using window_base::window_base;
  std::string name() const override { return "hash_window"; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    if (parts.empty()) return parts;
    nvtx_range r{"hash_window"};
    memory_resource* mr = ctx.device_mr;
    auto np = static_cast<int64_t>(parts.size());
    std::vector<std::vector<column>> results(parts.size());
    for (auto& w : _specs) {
      std::vector<agg_spec> aggs{w.agg};
      size_t nk = w.keys.size();
      hash::program partial = hash::plan_partial(aggs);
      std::vector<table> states(parts.size());
      std::vector<dbuf<int64_t>> local(parts.size());
      tier_state level, final_level;
      for_partitions(ctx, np, [&](int64_t p) {
        auto i = static_cast<size_t>(p);
        row_filter none;
        states[i] = aggregate_table(partial, parts[i], w.keys, none, false, level, mr, &local[i]);
      });
      std::vector<table> nonempty;
      for (auto& t : states)
        if (t.num_rows() > 0) nonempty.push_back(t);
      if (nonempty.empty()) {  // no rows at all
        for (auto& out : results)
          out.push_back(to_device(table({make_empty_column(w.agg.output_type)}), mr)[0]);
        continue;
      }
      table all = nonempty.size() == 1 ? nonempty[0] : cuda::concatenate(nonempty, mr);
      dbuf<int64_t> state_group;
      row_filter none;
      table values = aggregate_table(hash::plan_final(aggs, nk), all, first_columns(nk), none, false, final_level, mr,
                                     &state_group);
      std::vector<int64_t> offsets(parts.size(), 0);
      for (size_t i = 1; i < parts.size(); ++i)
        offsets[i] = offsets[i - 1] + states[i - 1].num_rows();
      for_partitions(ctx, np, [&](int64_t p) {
        auto i = static_cast<size_t>(p);
        int64_t n = parts[i].num_rows();
        dbuf<int64_t> groups(n, mr);
        launch(n, global_groups_kernel, local[i].p, n, state_group.p, offsets[i], groups.p);
        results[i].push_back(cuda::gather(values[nk], groups.p, n, mr));
        sync();
      });
    }
    sync();
    std::vector<table> out;
    for (size_t i = 0; i < parts.size(); ++i) {
      std::vector<column> cols = parts[i].columns();
      for (auto& c : results[i])
        cols.push_back(c);
      out.push_back(table(std::move(cols)));
    }
    return out;
  }
};

}  // namespace

physical_ptr make_window(physical_ptr child, std::vector<window_spec> specs, schema out) {
  for (auto& w : specs)
    if (w.keys.empty() || !hash::unfit(child->output_schema, w.keys, {w.agg}).empty())
      return make_sort_window(std::move(child), std::move(specs), std::move(out));
  return cpu::finish(std::make_unique<window_op>(std::move(specs)), backend::cuda, cpu::one(std::move(child)),
                     std::move(out));
}

physical_ptr make_aggregate(physical_ptr child, std::vector<size_t> keys, std::vector<agg_spec> aggs,
                            bool maintain_order, schema out) {
  if (!hash::unfit(child->output_schema, keys, aggs).empty())
    return make_sort_aggregate(std::move(child), std::move(keys), std::move(aggs), maintain_order, std::move(out));
  schema states = cpu::partial_schema(child->output_schema, keys, aggs);
  size_t num_keys = keys.size();
  // a filter under the pre-projection: the partial aggregation evaluates its predicate instead, so the
  // selected rows are never copied out
  std::optional<expr> predicate;
  std::vector<agg_spec> partial_aggs = aggs;
  if (std::optional<filter_project> f = take_filter_project(child)) {
    for (size_t& k : keys)
      k = f->columns[k];
    for (auto& a : partial_aggs)
      if (a.input >= 0) a.input = static_cast<int64_t>(f->columns[static_cast<size_t>(a.input)]);
    predicate = std::move(f->predicate);
    child = std::move(f->input);
  }
  physical_ptr partial = cpu::finish(std::make_unique<partial_op>(std::move(keys), partial_aggs, std::move(predicate)),
                                     backend::cuda, cpu::one(std::move(child)), std::move(states));
  return cpu::finish(std::make_unique<final_op>(num_keys, std::move(aggs), maintain_order), backend::cuda,
                     cpu::one(std::move(partial)), std::move(out));
}

}  // namespace tug::cuda
