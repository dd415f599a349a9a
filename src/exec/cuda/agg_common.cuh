#pragma once
// Shared by the CUDA aggregation sources (aggregate.cu: sort-based; hash_aggregate.cu: hash-based):
// how kernels read key and value columns, row comparison with the CPU backend's grouping rules (nulls
// form one group, -0.0 == 0.0, NaNs equal), launch and CUB helpers, and the operators' host plumbing.
// Included only from .cu files.
#include <algorithm>
#include <string>
#include <vector>

#include "exec/cuda/common.cuh"
#include "exec/cuda/table_ops.hpp"
#include "tug/exec/physical.hpp"
#include "tug/memory/device.hpp"

namespace tug::cuda {

/// How a kernel reads a column's values (dates and times read as their integer storage; decimals as
/// their unscaled __int128).
enum class vkind : uint8_t { i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, str, d128 };

/// The vkind of `t`. @throws not_implemented_error for types the CUDA aggregation does not read.
inline vkind kind_of(const data_type& t) {
  switch (t.id) {
    case type_id::int8:
      return vkind::i8;
    case type_id::int16:
      return vkind::i16;
    case type_id::int32:
    case type_id::date32:
      return vkind::i32;
    case type_id::int64:
    case type_id::timestamp:
    case type_id::duration:
      return vkind::i64;
    case type_id::boolean:
    case type_id::uint8:
      return vkind::u8;
    case type_id::uint16:
      return vkind::u16;
    case type_id::uint32:
      return vkind::u32;
    case type_id::uint64:
      return vkind::u64;
    case type_id::float32:
      return vkind::f32;
    case type_id::float64:
      return vkind::f64;
    case type_id::string:
      return vkind::str;
    case type_id::decimal128:
      return vkind::d128;
    default:
      break;
  }
  throw not_implemented_error("CUDA aggregation does not handle columns of type " + to_string(t));
}

/// A key column as kernels read it.
struct dkey {
  dcol c;
  vkind k;
};

template <typename T>
__device__ inline int cmp3(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

/// NaNs compare equal to each other and above (nan_high) or below every number; -0.0 == 0.0.
__device__ inline int cmp_float(double a, double b, bool nan_high) {
  bool na = a != a, nb = b != b;
  if (na || nb) return na == nb ? 0 : ((na == nan_high) ? 1 : -1);
  return cmp3(a, b);
}

__device__ inline int cmp_str(dstring a, dstring b) {
  int64_t m = a.n < b.n ? a.n : b.n;
  for (int64_t i = 0; i < m; ++i) {
    auto x = static_cast<unsigned char>(a.p[i]), y = static_cast<unsigned char>(b.p[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return cmp3(a.n, b.n);
}

/// Three-way comparison of valid rows i and j of one column.
__device__ inline int cmp_values(const dcol& c, vkind k, int64_t i, int64_t j, bool nan_high) {
  switch (k) {
    case vkind::i8:
      return cmp3(c.value<int8_t>(i), c.value<int8_t>(j));
    case vkind::i16:
      return cmp3(c.value<int16_t>(i), c.value<int16_t>(j));
    case vkind::i32:
      return cmp3(c.value<int32_t>(i), c.value<int32_t>(j));
    case vkind::i64:
      return cmp3(c.value<int64_t>(i), c.value<int64_t>(j));
    case vkind::u8:
      return cmp3(c.value<uint8_t>(i), c.value<uint8_t>(j));
    case vkind::u16:
      return cmp3(c.value<uint16_t>(i), c.value<uint16_t>(j));
    case vkind::u32:
      return cmp3(c.value<uint32_t>(i), c.value<uint32_t>(j));
    case vkind::u64:
      return cmp3(c.value<uint64_t>(i), c.value<uint64_t>(j));
    case vkind::f32:
      return cmp_float(c.value<float>(i), c.value<float>(j), nan_high);
    case vkind::f64:
      return cmp_float(c.value<double>(i), c.value<double>(j), nan_high);
    case vkind::str:
      return cmp_str(c.str(i), c.str(j));
    case vkind::d128:
      return cmp3(c.value<__int128>(i), c.value<__int128>(j));
  }
  return 0;
}

/// Three-way comparison of rows a and b over all key columns (null before any value).
__device__ inline int cmp_rows(const dkey* keys, int nk, int64_t a, int64_t b) {
  for (int k = 0; k < nk; ++k) {
    bool va = keys[k].c.valid(a), vb = keys[k].c.valid(b);
    if (va != vb) return va ? 1 : -1;
    if (!va) continue;
    int c = cmp_values(keys[k].c, keys[k].k, a, b, true);
    if (c) return c;
  }
  return 0;
}

/// The value of row i widened to 64 bits (integers wrap as in the CPU sums; booleans are 0/1).
__device__ inline uint64_t as_u64(const dcol& c, vkind k, int64_t i) {
  switch (k) {
    case vkind::i8:
      return static_cast<uint64_t>(static_cast<int64_t>(c.value<int8_t>(i)));
    case vkind::i16:
      return static_cast<uint64_t>(static_cast<int64_t>(c.value<int16_t>(i)));
    case vkind::i32:
      return static_cast<uint64_t>(static_cast<int64_t>(c.value<int32_t>(i)));
    case vkind::i64:
      return static_cast<uint64_t>(c.value<int64_t>(i));
    case vkind::u8:
      return c.value<uint8_t>(i);
    case vkind::u16:
      return c.value<uint16_t>(i);
    case vkind::u32:
      return c.value<uint32_t>(i);
    case vkind::u64:
      return c.value<uint64_t>(i);
    default:
      return 0;
  }
}

/// The value of row i as a double.
__device__ inline double as_f64(const dcol& c, vkind k, int64_t i) {
  switch (k) {
    case vkind::f32:
      return c.value<float>(i);
    case vkind::f64:
      return c.value<double>(i);
    case vkind::u8:
    case vkind::u16:
    case vkind::u32:
    case vkind::u64:
      return static_cast<double>(as_u64(c, k, i));
    default:
      return static_cast<double>(static_cast<int64_t>(as_u64(c, k, i)));
  }
}

/// Grid-stride loop over [0, n) with 64-bit indices.
#define TUG_GRID_LOOP(i, n)                                                                                       \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, tug_stride_ = int64_t(gridDim.x) * blockDim.x; \
       i < (n); i += tug_stride_)

/// Launches `kernel(args...)` on the calling thread's stream with grid_for(n) blocks of 256 threads;
/// nothing when n <= 0 (no empty grids).
template <typename... P, typename... A>
void launch(int64_t n, void (*kernel)(P...), A&&... args) {
  if (n <= 0) return;
  kernel<<<grid_for(n), 256, 0, stream()>>>(std::forward<A>(args)...);
  TUG_CUDA_CHECK_LAUNCH();
}

/// Runs a CUB device algorithm `f(temp, bytes)` twice (size query, then the call) with temporary
/// storage from `mr`.
template <typename F>
void cub_run(memory_resource* mr, F&& f) {
  size_t bytes = 0;
  TUG_CUDA_TRY(f(static_cast<void*>(nullptr), bytes));
  dbuf<uint8_t> temp(static_cast<int64_t>(bytes), mr);
  TUG_CUDA_TRY(f(static_cast<void*>(temp.p), bytes));
}


/// All partitions concatenated on the device (empty device columns of `in` when there are none).
inline table concat_all(const std::vector<table>& parts, const schema& in, exec_context& ctx) {
  if (parts.empty()) {
    std::vector<column> cols;
    for (auto& f : in)
      cols.push_back(make_empty_column(f.type));
    return to_device(cols.empty() ? table::empty_with_rows(0) : table(std::move(cols)), ctx.device_mr);
  }
  if (parts.size() == 1) return parts[0];
  return cuda::concatenate(parts, ctx.device_mr);
}

/// Splits an aggregation result into partitions of at most `target_partition_rows` rows.
inline std::vector<table> split_rows(const table& out, const engine_options& opts) {
  int64_t target = partition_rows(opts);
  if (out.num_rows() <= target) return {out};
  std::vector<table> split;
  for (int64_t off = 0; off < out.num_rows(); off += target)
    split.push_back(out.slice(off, std::min(target, out.num_rows() - off)));
  return split;
}

/// "sum(#2)" / "len(*)", for explain().
inline std::string describe(const agg_spec& s) {
  return std::string(to_string(s.op)) + (s.input < 0 ? "(*)" : "(#" + std::to_string(s.input) + ")");
}

/// "[#0, #1]", for explain().
inline std::string describe_columns(const std::vector<size_t>& cols) {
  std::string s = "[";
  for (size_t i = 0; i < cols.size(); ++i)
    s += (i ? ", #" : "#") + std::to_string(cols[i]);
  return s + "]";
}

/// "mean(#2) over [#0, #1], ..." for explain().
inline std::string describe(const std::vector<window_spec>& specs) {
  std::string s;
  for (auto& w : specs)
    s += (s.empty() ? "" : ", ") + describe(w.agg) + " over " + describe_columns(w.keys);
  return s;
}

/// "keys [#0] aggs [sum(#1)]" (+ " maintain_order"), for explain().
inline std::string describe(const std::vector<size_t>& keys, const std::vector<agg_spec>& aggs, bool maintain_order) {
  std::string s = "keys " + describe_columns(keys) + " aggs [";
  for (size_t i = 0; i < aggs.size(); ++i)
    s += (i ? ", " : "") + describe(aggs[i]);
  return s + "]" + (maintain_order ? " maintain_order" : "");
}

/// What the CUDA window operators (sort-based in aggregate.cu, hashed in hash_aggregate.cu) share: the
/// windows, explain()'s detail, and that all partitions meet there.
class window_base : public window_node {
 public:
  using window_node::window_node;
  std::string detail() const override { return describe(_specs); }
};

}  // namespace tug::cuda
