// CUDA sort, top-k and unique. Both order rows with one stable permutation: least significant key
// first, every key is turned into order-preserving unsigned words (as the CPU's normalize: -0.0 ==
// 0.0, NaN above +inf, strings by bytes) that a stable CUB radix sort orders, a null flag above them.
// Stability makes ties keep input order, so results equal the CPU's row for row.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>

#include "exec/cuda/common.cuh"
#include "exec/cuda/ops.hpp"
#include "exec/cuda/table_ops.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::cuda {

namespace {

constexpr uint64_t sign_bit = 1ULL << 63;

/// What one radix pass sorts by (one kernel serves every type: the kind is a runtime value).
enum class word_kind : int {
  // unsigned integers and booleans, by width
  u8,
  u16,
  u32,
  u64,
  // signed integers, date and time types, by width
  s8,
  s16,
  s32,
  s64,
  f32,
  f64,
  dec_lo,     ///< decimal128: low 64 bits
  dec_hi,     ///< decimal128: high 64 bits
  str_chunk,  ///< 7 bytes of a string at 7 * chunk, then min(bytes left, 8)
  null_flag,  ///< 0 before 1: nulls first or last
};

/// Bytes of a string chunk (the low byte of its word holds the remaining length).
constexpr int chunk_bytes = 7;

__device__ inline uint64_t float_word(double d) {
  if (d == 0) d = 0;
  if (d != d) return ~uint64_t{0};
  uint64_t b = __double_as_longlong(d);
  return (b & sign_bit) ? ~b : (b | sign_bit);
}

__device__ inline uint32_t float_word(float f) {
  if (f == 0) f = 0;
  if (f != f) return ~uint32_t{0};
  uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/// Order-preserving word of valid row `r` of `c`.
__device__ uint64_t word_of(const dcol& c, word_kind kind, int chunk, int64_t r) {
  switch (kind) {
    case word_kind::u8:
      return c.value<uint8_t>(r);
    case word_kind::u16:
      return c.value<uint16_t>(r);
    case word_kind::u32:
      return c.value<uint32_t>(r);
    case word_kind::u64:
      return c.value<uint64_t>(r);
    case word_kind::s8:
      return uint8_t(c.value<uint8_t>(r) ^ 0x80u);
    case word_kind::s16:
      return uint16_t(c.value<uint16_t>(r) ^ 0x8000u);
    case word_kind::s32:
      return c.value<uint32_t>(r) ^ 0x80000000u;
    case word_kind::s64:
      return c.value<uint64_t>(r) ^ sign_bit;
    case word_kind::f32:
      return float_word(c.value<float>(r));
    case word_kind::f64:
      return float_word(c.value<double>(r));
    case word_kind::dec_lo:
      return static_cast<const uint64_t*>(c.data)[2 * (c.offset + r)];
    case word_kind::dec_hi:
      return static_cast<const uint64_t*>(c.data)[2 * (c.offset + r) + 1] ^ sign_bit;
    case word_kind::str_chunk: {
      dstring s = c.str(r);
      int64_t start = int64_t(chunk) * chunk_bytes;
      int64_t left = s.n > start ? s.n - start : 0;
      uint64_t w = 0;
      for (int b = 0; b < chunk_bytes && b < left; ++b)
        w |= uint64_t(static_cast<unsigned char>(s.p[start + b])) << (56 - 8 * b);
      return w | uint64_t(left < 8 ? left : 8);
    }
    case word_kind::null_flag:
      return 0;
  }
  return 0;
}

/// out[i] = the word of row perm[i] (nulls 0; the null flag pass: 1 for the rows that go last).
__global__ void words_kernel(dcol c, word_kind kind, int chunk, uint64_t flip, bool nulls_last, const int64_t* perm,
                             int64_t n, uint64_t* out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t r = perm[i];
    bool valid = c.valid(r);
    if (kind == word_kind::null_flag)
      out[i] = valid == nulls_last ? 0 : 1;
    else
      out[i] = valid ? word_of(c, kind, chunk, r) ^ flip : 0;
  }
}

__global__ void iota_kernel(int64_t* out, int64_t n) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = i;
}

__global__ void string_lengths_kernel(dcol c, int64_t n, int64_t* out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = c.valid(i) ? c.str(i).n : 0;
}

/// One radix pass: its kind, chunk (strings) and significant bits.
struct pass {
  word_kind kind;
  int chunk = 0;
  int bits = 64;
};

/// The longest string of `c` (device reduction).
int64_t max_length(const column& c, memory_resource* mr) {
  int64_t n = c.size();
  dbuf<int64_t> len(n, mr);
  dbuf<int64_t> result(1, mr);
  string_lengths_kernel<<<grid_for(n), 256, 0, stream()>>>(view_of(c), n, len.p);
  TUG_CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  TUG_CUDA_TRY(cub::DeviceReduce::Max(nullptr, temp_bytes, len.p, result.p, n, stream()));
  dbuf<uint8_t> temp(static_cast<int64_t>(temp_bytes), mr);
  TUG_CUDA_TRY(cub::DeviceReduce::Max(temp.p, temp_bytes, len.p, result.p, n, stream()));
  int64_t m = 0;
  read_back(result.p, &m);
  return m;
}

/// The value passes of key `c`, least significant first (without the null flag).
std::vector<pass> value_passes(const column& c, memory_resource* mr) {
  type_id id = c.type().id;
  if (id == type_id::string) {
    std::vector<pass> p;
    int64_t chunks = (max_length(c, mr) + chunk_bytes - 1) / chunk_bytes;
    for (int64_t k = chunks - 1; k >= 0; --k)
      p.push_back({word_kind::str_chunk, static_cast<int>(k), 64});
    return p;
  }
  if (id == type_id::decimal128) return {{word_kind::dec_lo, 0, 64}, {word_kind::dec_hi, 0, 64}};
  if (id == type_id::float32) return {{word_kind::f32, 0, 32}};
  if (id == type_id::float64) return {{word_kind::f64, 0, 64}};
  if (id == type_id::boolean) return {{word_kind::u8, 0, 1}};
  int w = size_of(id);
  int lg = w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : 3;
  int base = is_signed_integer(id) || id == type_id::date32 || id == type_id::timestamp || id == type_id::duration
                 ? static_cast<int>(word_kind::s8)
                 : static_cast<int>(word_kind::u8);
  return {{static_cast<word_kind>(base + lg), 0, 8 * w}};
}

/// Stable permutation of the `n` rows of `keys`: by key 0, ties by key 1, ..., then row order.
dbuf<int64_t> sort_permutation(const std::vector<column>& keys, const std::vector<bool>& descending,
                               const std::vector<bool>& nulls_last, int64_t n, memory_resource* mr) {
  dbuf<int64_t> perm(n, mr), perm_alt(n, mr);
  dbuf<uint64_t> words(n, mr), words_alt(n, mr);
  iota_kernel<<<grid_for(n), 256, 0, stream()>>>(perm.p, n);
  TUG_CUDA_CHECK_LAUNCH();
  cub::DoubleBuffer<uint64_t> kb(words.p, words_alt.p);
  cub::DoubleBuffer<int64_t> vb(perm.p, perm_alt.p);
  size_t temp_bytes = 0;
  TUG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, kb, vb, n, 0, 64, stream()));
  dbuf<uint8_t> temp(static_cast<int64_t>(temp_bytes), mr);
  auto run_pass = [&](const dcol& c, const pass& p, bool desc, bool last) {
    uint64_t flip = desc ? (p.bits == 64 ? ~uint64_t{0} : (uint64_t{1} << p.bits) - 1) : 0;
    words_kernel<<<grid_for(n), 256, 0, stream()>>>(c, p.kind, p.chunk, flip, last, vb.Current(), n, kb.Current());
    TUG_CUDA_CHECK_LAUNCH();
    size_t bytes = temp_bytes;
    TUG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.p, bytes, kb, vb, n, 0, p.bits, stream()));
  };
  for (size_t k = keys.size(); k-- > 0;) {
    dcol c = view_of(keys[k]);
    for (const pass& p : value_passes(keys[k], mr))
      run_pass(c, p, descending[k], nulls_last[k]);
    if (keys[k].has_nulls()) run_pass(c, pass{word_kind::null_flag, 0, 1}, false, nulls_last[k]);
  }
  sync();
  return vb.Current() == perm.p ? perm : perm_alt;
}

/// Splits `t` into zero-copy slices of about `target` rows (one empty table when it has no rows).
std::vector<table> split_rows(const table& t, int64_t target) {
  target = std::max<int64_t>(1, target);
  std::vector<table> out;
  for (int64_t b = 0; b < t.num_rows(); b += target)
    out.push_back(t.slice(b, std::min(target, t.num_rows() - b)));
  if (out.empty()) out.push_back(t.slice(0, 0));
  return out;
}

/// All partitions as one device table.
table concat_all(const std::vector<table>& parts, memory_resource* mr) {
  return parts.size() == 1 ? parts[0] : cuda::concatenate(parts, mr);
}

class sort_op final : public sort_node {
 public:
  using sort_node::sort_node;

 protected:
  std::vector<table> sort_partitions(const std::vector<table>& parts, int64_t n, exec_context& ctx) override {
    nvtx_range r{"sort"};
    table all = concat_all(parts, ctx.device_mr);
    auto perm = sort_permutation(all.select(_keys).columns(), _descending, _nulls_last, n, ctx.device_mr);
    table out = cuda::gather(all, perm.p, rows_wanted(n), ctx.device_mr);
    sync();
    return split_rows(out, partition_rows(ctx.options));
  }
};

// ---- unique: sort by the keys, mark group starts, keep rows per `keep` in input order ----

/// diff[i] |= rows perm[i] and perm[i-1] differ in key `c` (row 0 always starts a group).
__global__ void differs_kernel(dcol c, word_kind kind, bool strings, const int64_t* perm, int64_t n, uint8_t* diff) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (i == 0) {
      diff[0] = 1;
      continue;
    }
    int64_t a = perm[i], b = perm[i - 1];
    bool va = c.valid(a), vb = c.valid(b);
    bool d;
    if (va != vb) {
      d = true;
    } else if (!va) {
      d = false;
    } else if (strings) {
      dstring x = c.str(a), y = c.str(b);
      d = x.n != y.n;
      for (int64_t k = 0; !d && k < x.n; ++k)
        d = x.p[k] != y.p[k];
    } else {
      d = word_of(c, kind, 0, a) != word_of(c, kind, 0, b);
    }
    if (d) diff[i] = 1;
  }
}

/// keep[perm[i]] = 1 for the sorted rows that survive `keep` (groups are runs that start at diff).
__global__ void mark_kept_kernel(const uint8_t* diff, const int64_t* perm, int64_t n, unique_keep keep, bool* kept) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    bool first = diff[i] != 0, last = i == n - 1 || diff[i + 1] != 0;
    bool k = keep == unique_keep::last ? last : keep == unique_keep::none ? first && last : first;
    if (k) kept[perm[i]] = true;
  }
}

class unique_op final : public unique_node {
 public:
  using unique_node::unique_node;

 protected:
  std::vector<table> unique_partitions(std::vector<table> parts, exec_context& ctx) override {
    nvtx_range r{"unique"};
    memory_resource* mr = ctx.device_mr;
    int64_t n = total_rows(parts);
    table all = concat_all(parts, mr);
    if (n == 0) return {all.slice(0, 0)};
    std::vector<column> keys = _subset.empty() ? all.columns() : all.select(_subset).columns();
    // ascending, nulls first: equal keys (nulls equal nulls, -0.0 == 0.0, NaN == NaN) end up adjacent,
    // each group in input order
    std::vector<bool> flags(keys.size(), false);
    auto perm = sort_permutation(keys, flags, flags, n, mr);
    dbuf<uint8_t> diff(n, mr);
    TUG_CUDA_TRY(cudaMemsetAsync(diff.p, 0, static_cast<size_t>(n), stream()));
    auto mark = [&](const column& c, word_kind kind) {
      differs_kernel<<<grid_for(n), 256, 0, stream()>>>(view_of(c), kind, c.type().id == type_id::string, perm.p, n,
                                                        diff.p);
      TUG_CUDA_CHECK_LAUNCH();
    };
    if (keys.empty()) TUG_CUDA_TRY(cudaMemsetAsync(diff.p, 1, 1, stream()));  // no key columns: one group
    for (auto& c : keys) {
      if (c.type().id == type_id::string)
        mark(c, word_kind::str_chunk);
      else
        for (const pass& p : value_passes(c, mr))
          mark(c, p.kind);
    }
    dbuf<bool> kept(n, mr);
    TUG_CUDA_TRY(cudaMemsetAsync(kept.p, 0, static_cast<size_t>(n), stream()));
    mark_kept_kernel<<<grid_for(n), 256, 0, stream()>>>(diff.p, perm.p, n, _keep, kept.p);
    TUG_CUDA_CHECK_LAUNCH();
    table out = cuda::filter(all, make_device_column(type_id::boolean, n, kept.buf), mr);
    sync();
    return split_rows(out, partition_rows(ctx.options));
  }
};

}  // namespace

physical_ptr make_sort(physical_ptr child, std::vector<size_t> keys, std::vector<bool> descending,
                       std::vector<bool> nulls_last, bool stable, int64_t limit) {
  schema s = child->output_schema;
  return cpu::finish(
      std::make_unique<sort_op>(std::move(keys), std::move(descending), std::move(nulls_last), stable, limit),
      backend::cuda, cpu::one(std::move(child)), std::move(s));
}

physical_ptr make_unique(physical_ptr child, std::vector<size_t> subset, unique_keep keep, bool maintain_order) {
  schema s = child->output_schema;
  return cpu::finish(std::make_unique<unique_op>(std::move(subset), keep, maintain_order), backend::cuda,
                     cpu::one(std::move(child)), std::move(s));
}

}  // namespace tug::cuda
