// Group-by aggregation and `over` windows on the CUDA backend, sort-based: the row indices are
// stably sorted by the key columns (nulls form one group, -0.0 == 0.0, NaNs equal), runs of equal
// keys are the groups ("segments"), and every aggregation is a reduce-by-key over the sorted rows.
// Aggregate outputs groups in order of first appearance (as the CPU backend); a window gathers each
// row's group value back in row order. Group-bys that hashing fits run in hash_aggregate.cu instead;
// this one ("sort_aggregate") takes string and decimal keys, decimal inputs, the aggregations that do
// not decompose (n_unique, median, quantile: values sorted within their segments), and every window.
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include "exec/cpu/agg_kernels.hpp"
#include "exec/cuda/agg_common.cuh"
#include "exec/cuda/ops.hpp"
#include "exec/decimal_sum.hpp"
#include "exec/float_text.hpp"
#include "exec/moments.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::cuda {

namespace {

struct row_less {
  const dkey* keys;
  int nk;
  __device__ bool operator()(int64_t a, int64_t b) const { return cmp_rows(keys, nk, a, b) < 0; }
};

__global__ void iota_kernel(int64_t* out, int64_t n) { TUG_GRID_LOOP(i, n) out[i] = i; }
__global__ void fill_kernel(int64_t* out, int64_t n, int64_t v) { TUG_GRID_LOOP(i, n) out[i] = v; }

// flag[p] = 1 where sorted position p starts a new group (p > 0).
__global__ void boundary_kernel(const dkey* keys, int nk, const int64_t* order, int64_t n, int64_t* flag) {
  TUG_GRID_LOOP(p, n) flag[p] = p > 0 && cmp_rows(keys, nk, order[p - 1], order[p]) != 0 ? 1 : 0;
}

// start[s] = first sorted position of segment s; start[G] = n.
__global__ void starts_kernel(const int64_t* seg, int64_t n, int64_t* start) {
  TUG_GRID_LOOP(p, n) {
    if (p == 0 || seg[p] != seg[p - 1]) start[seg[p]] = p;
    if (p == n - 1) start[seg[p] + 1] = n;
  }
}

// Row index of each segment: its first (last) row in input order, -1 when empty.
__global__ void edge_rows_kernel(const int64_t* order, const int64_t* start, int64_t g, bool last, int64_t* out) {
  TUG_GRID_LOOP(s, g) {
    int64_t a = start[s], b = start[s + 1];
    out[s] = a == b ? -1 : order[last ? b - 1 : a];
  }
}

__global__ void scatter_kernel(const int64_t* order, const int64_t* seg, int64_t n, int64_t* seg_of_row) {
  TUG_GRID_LOOP(p, n) seg_of_row[order[p]] = seg[p];
}

enum class load_mode : uint8_t { value, valid, one, is_true, is_false };

// Per sorted position: what a u64 sum reduces (0 for null rows).
__global__ void load_u64_kernel(dcol c, vkind k, const int64_t* order, int64_t n, load_mode m, uint64_t* out) {
  TUG_GRID_LOOP(p, n) {
    if (m == load_mode::one) {
      out[p] = 1;
      continue;
    }
    int64_t r = order[p];
    bool v = c.valid(r);
    uint64_t x = v && m != load_mode::valid ? as_u64(c, k, r) : 0;
    switch (m) {
      case load_mode::value:
        out[p] = x;
        break;
      case load_mode::valid:
        out[p] = v;
        break;
      case load_mode::is_true:
        out[p] = v && x != 0;
        break;
      default:
        out[p] = v && x == 0;
        break;
    }
  }
}

// The value of valid row r as the CPU's aggregations read it: decimals correctly rounded from their
// unscaled value at `scale` (float_text::decimal_to_float, as cpu::cast).
__device__ inline double value_f64(const dcol& c, vkind k, int64_t r, int scale) {
  return k == vkind::d128 ? float_text::decimal_to_float<double>(c.value<__int128>(r), scale) : as_f64(c, k, r);
}

// Two doubles reduced together (moments.hpp's range and deviation sums).
struct f64_pair {
  double a, b;
};

// Per sorted position: the value as double (0 for null rows).
__global__ void load_f64_kernel(dcol c, vkind k, int scale, const int64_t* order, int64_t n, double* out) {
  TUG_GRID_LOOP(p, n) {
    int64_t r = order[p];
    out[p] = c.valid(r) ? value_f64(c, k, r, scale) : 0.0;
  }
}

// Per sorted position: the value twice, as the candidate of its segment's smallest (a) and largest (b)
// value; null rows and NaN are no candidate (+inf / -inf).
__global__ void load_range_kernel(dcol c, vkind k, int scale, const int64_t* order, int64_t n, f64_pair* out) {
  TUG_GRID_LOOP(p, n) {
    int64_t r = order[p];
    double x = c.valid(r) ? value_f64(c, k, r, scale) : NAN;
    out[p] = x == x ? f64_pair{x, x} : f64_pair{INFINITY, -INFINITY};
  }
}

// Per sorted position: pass 2's contributions of its value (moments.hpp) around its segment's center
// (0 for null rows).
__global__ void load_deviation_kernel(dcol c, vkind k, int scale, const int64_t* order, int64_t n, const int64_t* seg,
                                      const double* center, f64_pair* out) {
  TUG_GRID_LOOP(p, n) {
    int64_t r = order[p];
    f64_pair v{0.0, 0.0};
    if (c.valid(r)) {
      const double x = value_f64(c, k, r, scale), m = center[seg[p]];
      v = f64_pair{moments::deviation(1.0, x, m), moments::squared_deviation(1.0, x, 0.0, m)};
    }
    out[p] = v;
  }
}

// Per segment: pass 2's center from the count, the sum and the range of its values.
__global__ void center_kernel(const uint64_t* n, const double* sum, const f64_pair* range, int64_t g, double* out) {
  TUG_GRID_LOOP(s, g) { out[s] = moments::center(sum[s], static_cast<double>(n[s]), range[s].a, range[s].b); }
}

// Per sorted position: the decimal value, 0 for null rows, to add up exactly (as the CPU's sums).
__global__ void load_d128_kernel(dcol c, const int64_t* order, int64_t n, decimal_sum* out) {
  TUG_GRID_LOOP(p, n) {
    int64_t r = order[p];
    out[p] = decimal_sum(c.valid(r) ? c.value<__int128>(r) : 0);
  }
}

// Per segment: its sum's unscaled value; *bad = the first segment whose sum has more than `precision`
// digits (left as it is when none does).
__global__ void finish_d128_kernel(const decimal_sum* sum, int64_t g, int precision, __int128* out,
                                   unsigned long long* bad) {
  TUG_GRID_LOOP(s, g) {
    out[s] = static_cast<__int128>(sum[s].lo);
    if (!sum[s].fits(precision)) atomicMin(bad, static_cast<unsigned long long>(s));
  }
}

// Per sorted position: the row when valid, else -1 (candidates of min / max).
__global__ void load_row_kernel(dcol c, const int64_t* order, int64_t n, int64_t* out) {
  TUG_GRID_LOOP(p, n) {
    int64_t r = order[p];
    out[p] = c.valid(r) ? r : -1;
  }
}

// The better of two candidate rows for min / max: NaN only when nothing else, ties to the earlier row.
struct best_row {
  dcol c;
  vkind k;
  bool max;
  __device__ int64_t operator()(int64_t a, int64_t b) const {
    // CUB's reduce-by-key may combine a tile's uninitialized prefix: anything outside [0, rows) is
    // "no candidate", like -1
    if (a < 0 || a >= c.size) return b;
    if (b < 0 || b >= c.size) return a;
    int r = cmp_values(c, k, a, b, !max);
    if (r == 0) return a < b ? a : b;
    return (max ? r > 0 : r < 0) ? a : b;
  }
};

struct plus_op {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
  __device__ f64_pair operator()(f64_pair x, f64_pair y) const { return f64_pair{x.a + y.a, x.b + y.b}; }
};

// The smaller of the a's and the larger of the b's.
struct range_op {
  __device__ f64_pair operator()(f64_pair x, f64_pair y) const {
    return f64_pair{x.a < y.a ? x.a : y.a, x.b > y.b ? x.b : y.b};
  }
};

enum class finish_op : uint8_t { mean, var, std, any, all };

// Final values per segment from reduced sums `a` (double sum or u64 count of matches), counts `n` and
// var / std's pass-2 sums `dev` (moments.hpp); writes a warp's validity bits together.
__global__ void finish_kernel(finish_op op, const double* a, const uint64_t* u, const uint64_t* n, const f64_pair* dev,
                              int ddof, int64_t g, void* out, uint32_t* valid_out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int lane = threadIdx.x & 31;
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s - lane < g; s += stride) {
    bool valid = true;
    if (s < g) {
      auto cnt = static_cast<int64_t>(n ? n[s] : 0);
      switch (op) {
        case finish_op::any:
          static_cast<bool*>(out)[s] = u[s] != 0;
          break;
        case finish_op::all:
          static_cast<bool*>(out)[s] = u[s] == 0;
          break;
        case finish_op::mean:
          valid = cnt > 0;
          static_cast<double*>(out)[s] = valid ? a[s] / static_cast<double>(cnt) : 0.0;
          break;
        default:
          valid = moments::has_variance(cnt, ddof);
          static_cast<double*>(out)[s] =
              valid ? moments::variance(moments::m2(dev[s].a, dev[s].b, static_cast<double>(cnt)), cnt, ddof,
                                        op == finish_op::std)
                    : 0.0;
      }
    } else {
      valid = false;
    }
    if (valid_out) store_valid_bit(valid_out, s, valid);
  }
}

/// Rows grouped by key columns: `order` = row indices sorted by key (stable), `seg` = segment of
/// each sorted position, `start` = G + 1 segment bounds. Without keys, one segment of all rows.
struct dgroups {
  int64_t n = 0;
  int64_t g = 0;
  dbuf<int64_t> order, seg, start;
};

dgroups group(const std::vector<column>& keys, int64_t n, memory_resource* mr) {
  dgroups d;
  d.n = n;
  d.order = dbuf<int64_t>(n, mr);
  d.seg = dbuf<int64_t>(n, mr);
  launch(n, iota_kernel, d.order.p, n);
  if (keys.empty()) {
    d.g = 1;
    launch(n, fill_kernel, d.seg.p, n, 0);
    std::vector<int64_t> bounds{0, n};
    d.start = dbuf<int64_t>(2, mr);
    upload(d.start.p, bounds.data(), 2 * sizeof(int64_t));
    sync();
    return d;
  }
  std::vector<dkey> hk;
  for (auto& k : keys)
    hk.push_back({view_of(k), kind_of(k.type())});
  dbuf<dkey> dk(static_cast<int64_t>(hk.size()), mr);
  upload(dk.p, hk.data(), hk.size() * sizeof(dkey));
  int nk = static_cast<int>(hk.size());
  if (n == 0) {
    d.g = 0;
    d.start = dbuf<int64_t>(1, mr);
    TUG_CUDA_TRY(cudaMemsetAsync(d.start.p, 0, sizeof(int64_t), stream()));
    sync();
    return d;
  }
  row_less less{dk.p, nk};
  cub_run(mr, [&](void* temp, size_t& bytes) {
    return cub::DeviceMergeSort::StableSortKeys(temp, bytes, d.order.p, n, less, stream());
  });
  dbuf<int64_t> flag(n, mr);
  launch(n, boundary_kernel, dk.p, nk, d.order.p, n, flag.p);
  cub_run(mr, [&](void* temp, size_t& bytes) {
    return cub::DeviceScan::InclusiveSum(temp, bytes, flag.p, d.seg.p, n, stream());
  });
  read_back(d.seg.p + n - 1, &d.g);
  d.g += 1;
  d.start = dbuf<int64_t>(d.g + 1, mr);
  launch(n, starts_kernel, d.seg.p, n, d.start.p);
  return d;
}

/// Per segment, the sum of `in` (n values) by segment id, into `out` (G values; 0 for empty segments).
template <typename T, typename Op>
void reduce_segments(const dgroups& d, const T* in, T* out, Op op, T identity, memory_resource* mr) {
  if (d.n == 0) {
    std::vector<T> init(static_cast<size_t>(d.g), identity);
    upload(out, init.data(), init.size() * sizeof(T));
    sync();
    return;
  }
  dbuf<int64_t> unique(d.g, mr), runs(1, mr);
  cub_run(mr, [&](void* temp, size_t& bytes) {
    return cub::DeviceReduce::ReduceByKey(temp, bytes, d.seg.p, unique.p, in, out, runs.p, op, d.n, stream());
  });
}

dbuf<uint64_t> u64_sums(const dgroups& d, const column* in, load_mode m, memory_resource* mr) {
  dbuf<uint64_t> vals(d.n, mr), out(d.g, mr);
  dcol c = in ? view_of(*in) : dcol{};
  vkind k = in && m != load_mode::valid ? kind_of(in->type()) : vkind::u8;
  launch(d.n, load_u64_kernel, c, k, d.order.p, d.n, m, vals.p);
  reduce_segments<uint64_t>(d, vals.p, out.p, plus_op{}, 0, mr);
  return out;
}

dbuf<double> f64_sums(const dgroups& d, const column& in, memory_resource* mr) {
  dbuf<double> vals(d.n, mr), out(d.g, mr);
  launch(d.n, load_f64_kernel, view_of(in), kind_of(in.type()), in.type().scale, d.order.p, d.n, vals.p);
  reduce_segments<double>(d, vals.p, out.p, plus_op{}, 0.0, mr);
  return out;
}

column finish_column(finish_op op, const data_type& t, const dgroups& d, const double* a, const uint64_t* u,
                     const uint64_t* n, const f64_pair* dev, int ddof, bool nullable, memory_resource* mr) {
  buffer_ptr data = make_buffer(static_cast<size_t>(d.g) * static_cast<size_t>(size_of(t.id)), mr);
  dbuf<uint32_t> valid;
  if (nullable) valid = make_bitmap(d.g, mr);
  launch(d.g, finish_kernel, op, a, u, n, dev, ddof, d.g, data->data(), valid.p);
  return make_device_column(t, d.g, std::move(data), valid.buf);
}

/// var / std of `in` per segment: moments.hpp's two passes (count, sum and range; then the deviations
/// from the center), as the CPU backend's aggregate_groups.
column variance_column(const agg_spec& s, const column& in, const dgroups& d, memory_resource* mr) {
  const dcol c = view_of(in);
  const vkind k = kind_of(in.type());
  const int scale = in.type().scale;
  auto sum = f64_sums(d, in, mr);
  auto cnt = u64_sums(d, &in, load_mode::valid, mr);
  dbuf<f64_pair> vals(d.n, mr), range(d.g, mr), dev(d.g, mr);
  launch(d.n, load_range_kernel, c, k, scale, d.order.p, d.n, vals.p);
  reduce_segments<f64_pair>(d, vals.p, range.p, range_op{}, f64_pair{INFINITY, -INFINITY}, mr);
  dbuf<double> center(d.g, mr);
  launch(d.g, center_kernel, cnt.p, sum.p, range.p, d.g, center.p);
  launch(d.n, load_deviation_kernel, c, k, scale, d.order.p, d.n, d.seg.p, center.p, vals.p);
  reduce_segments<f64_pair>(d, vals.p, dev.p, plus_op{}, f64_pair{0.0, 0.0}, mr);
  return finish_column(s.op == agg_op::std ? finish_op::std : finish_op::var, s.output_type, d, nullptr, nullptr, cnt.p,
                       dev.p, s.ddof, true, mr);
}

// Orders sorted positions by segment, then by the value of their row: valid before null, NaN above
// every number, strings by bytes, decimals by value; -0.0 == 0.0, or with `signed_zero` -0.0 below
// 0.0 (IEEE 754's total order, as the CPU's quantile selects: the sign of a zero quantile is then
// the same on both backends).
struct segment_value_less {
  const int64_t* seg;
  const int64_t* order;
  dcol c;
  vkind k;
  bool signed_zero;
  __device__ bool operator()(int64_t a, int64_t b) const {
    if (seg[a] != seg[b]) return seg[a] < seg[b];
    int64_t ra = order[a], rb = order[b];
    bool va = c.valid(ra), vb = c.valid(rb);
    if (va != vb) return va;
    if (!va) return false;
    int r = cmp_values(c, k, ra, rb, true);
    if (r == 0 && signed_zero && (k == vkind::f32 || k == vkind::f64)) {
      double x = as_f64(c, k, ra), y = as_f64(c, k, rb);
      return x == 0 && signbit(x) && !signbit(y);
    }
    return r < 0;
  }
};

__global__ void take_kernel(const int64_t* order, const int64_t* pos, int64_t n, int64_t* out) {
  TUG_GRID_LOOP(p, n) out[p] = order[pos[p]];
}

/// The rows of `in` sorted by (segment, value) as segment_value_less orders them (with `signed_zero`):
/// position p of the result is in segment d.seg[p] (the segments keep their bounds), each segment's
/// valid values first and ascending, its nulls last.
dbuf<int64_t> sort_within_segments(const dgroups& d, const column& in, bool signed_zero, memory_resource* mr) {
  dbuf<int64_t> pos(d.n, mr), rows(d.n, mr);
  if (d.n == 0) return rows;
  launch(d.n, iota_kernel, pos.p, d.n);
  segment_value_less less{d.seg.p, d.order.p, view_of(in), kind_of(in.type()), signed_zero};
  cub_run(mr, [&](void* temp, size_t& bytes) {
    return cub::DeviceMergeSort::SortKeys(temp, bytes, pos.p, d.n, less, stream());
  });
  launch(d.n, take_kernel, d.order.p, pos.p, d.n, rows.p);
  return rows;
}

// flag[p] = 1 where sorted position p holds the first of a distinct value of its segment (null is
// one value; NaNs equal; -0.0 == 0.0), given rows sorted within segments.
__global__ void distinct_kernel(dcol c, vkind k, const int64_t* seg, const int64_t* rows, int64_t n, uint64_t* flag) {
  TUG_GRID_LOOP(p, n) {
    bool first = p == 0 || seg[p] != seg[p - 1];
    if (!first) {
      int64_t a = rows[p - 1], b = rows[p];
      bool va = c.valid(a), vb = c.valid(b);
      first = va != vb || (va && cmp_values(c, k, a, b, true) != 0);
    }
    flag[p] = first;
  }
}

enum class interp : uint8_t { nearest, lower, higher, midpoint, linear };

interp interp_of(const std::string& m) {
  if (m == "nearest") return interp::nearest;
  if (m == "lower") return interp::lower;
  if (m == "higher") return interp::higher;
  if (m == "midpoint") return interp::midpoint;
  if (m == "linear") return interp::linear;
  throw invalid_argument_error("quantile: unknown interpolation '" + m +
                               "' (expected nearest, lower, higher, midpoint or linear)");
}

// Per segment: quantile q of its cnt[s] valid values, ascending from sorted position start[s] (rows
// sorted within segments), as agg_kernels.cpp's quantile_of computes it; null when it has none.
// Roundings are explicit (__dmul_rn / __dadd_rn): no fused multiply-add, as on the CPU.
__global__ void quantile_kernel(dcol c, vkind k, int scale, const int64_t* rows, const int64_t* start,
                                const uint64_t* cnt, int64_t g, double q, interp m, double* out, uint32_t* valid_out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int lane = threadIdx.x & 31;
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s - lane < g; s += stride) {
    bool valid = false;
    if (s < g) {
      auto n = static_cast<int64_t>(cnt[s]);
      valid = n > 0;
      double r = 0;
      if (valid) {
        const int64_t* v = rows + start[s];
        double fidx = static_cast<double>(n - 1) * q;
        auto at = [&](int64_t i) { return value_f64(c, k, v[i < n - 1 ? i : n - 1], scale); };
        if (m == interp::nearest) {
          r = at(static_cast<int64_t>(round(fidx)));
        } else if (m == interp::higher) {
          r = at(static_cast<int64_t>(ceil(fidx)));
        } else {
          int64_t base = static_cast<int64_t>(fidx) < n - 1 ? static_cast<int64_t>(fidx) : n - 1;
          int64_t top = static_cast<int64_t>(ceil(fidx)) < n - 1 ? static_cast<int64_t>(ceil(fidx)) : n - 1;
          double lower = at(base);
          r = lower;
          if (m != interp::lower && top != base) {
            double upper = at(base + 1);
            if (m == interp::midpoint)
              r = (lower + upper) / 2;
            else if (!(lower == upper))
              r = __dadd_rn(__dmul_rn(fidx - static_cast<double>(base), upper - lower), lower);
          }
        }
      }
      out[s] = r;
    }
    store_valid_bit(valid_out, s, valid);
  }
}

/// One row per segment: aggregation `s` of `in` (nullptr for len).
column segment_agg(const agg_spec& s, const column* in, const dgroups& d, memory_resource* mr) {
  if (s.op == agg_op::len || s.op == agg_op::count) {
    auto c = u64_sums(d, in, s.op == agg_op::len ? load_mode::one : load_mode::valid, mr);
    return make_device_column(s.output_type, d.g, c.buf);
  }
  TUG_EXPECTS(in != nullptr, std::string("aggregation ") + to_string(s.op) + " needs an input column");
  const data_type& t = in->type();
  bool floating = t.id == type_id::float32 || t.id == type_id::float64;
  switch (s.op) {
    case agg_op::sum: {
      if (t.id == type_id::decimal128) {
        dbuf<decimal_sum> vals(d.n, mr), sums(d.g, mr);
        dbuf<__int128> out(d.g, mr);
        dbuf<unsigned long long> bad(1, mr);
        launch(d.n, load_d128_kernel, view_of(*in), d.order.p, d.n, vals.p);
        reduce_segments<decimal_sum>(d, vals.p, sums.p, plus_op{}, decimal_sum(0), mr);
        TUG_CUDA_TRY(cudaMemsetAsync(bad.p, 0xff, sizeof(unsigned long long), stream()));
        launch(d.g, finish_d128_kernel, sums.p, d.g, s.output_type.precision, out.p, bad.p);
        unsigned long long first = 0;
        read_back(bad.p, &first);
        if (first != ~0ull) {  // the CPU's error, naming the sum
          decimal_sum sum;
          read_back(sums.p + first, &sum);
          cpu::raise_sum_overflow(s, sum);
        }
        return make_device_column(s.output_type, d.g, out.buf);
      }
      TUG_EXPECTS(size_of(s.output_type.id) == 8, "CUDA sum: unexpected output type " + to_string(s.output_type));
      buffer_ptr b = floating ? f64_sums(d, *in, mr).buf : u64_sums(d, in, load_mode::value, mr).buf;
      return make_device_column(s.output_type, d.g, std::move(b));
    }
    case agg_op::any:
    case agg_op::all: {
      auto c = u64_sums(d, in, s.op == agg_op::any ? load_mode::is_true : load_mode::is_false, mr);
      return finish_column(s.op == agg_op::any ? finish_op::any : finish_op::all, s.output_type, d, nullptr, c.p,
                           nullptr, nullptr, 0, false, mr);
    }
    case agg_op::mean: {
      auto sum = f64_sums(d, *in, mr);
      auto cnt = u64_sums(d, in, load_mode::valid, mr);
      return finish_column(finish_op::mean, s.output_type, d, sum.p, nullptr, cnt.p, nullptr, 0, true, mr);
    }
    case agg_op::var:
    case agg_op::std:
      return variance_column(s, *in, d, mr);
    case agg_op::first:
    case agg_op::last: {
      dbuf<int64_t> rows(d.g, mr);
      launch(d.g, edge_rows_kernel, d.order.p, d.start.p, d.g, s.op == agg_op::last, rows.p);
      return cuda::gather(*in, rows.p, d.g, mr);
    }
    case agg_op::min:
    case agg_op::max: {
      dbuf<int64_t> cand(d.n, mr), rows(d.g, mr);
      dcol c = view_of(*in);
      launch(d.n, load_row_kernel, c, d.order.p, d.n, cand.p);
      reduce_segments<int64_t>(d, cand.p, rows.p, best_row{c, kind_of(t), s.op == agg_op::max}, int64_t{-1}, mr);
      return cuda::gather(*in, rows.p, d.g, mr);
    }
    case agg_op::n_unique: {
      dbuf<int64_t> rows = sort_within_segments(d, *in, false, mr);
      dbuf<uint64_t> flag(d.n, mr), out(d.g, mr);
      launch(d.n, distinct_kernel, view_of(*in), kind_of(t), d.seg.p, rows.p, d.n, flag.p);
      reduce_segments<uint64_t>(d, flag.p, out.p, plus_op{}, 0, mr);
      return make_device_column(s.output_type, d.g, out.buf);
    }
    case agg_op::median:
    case agg_op::quantile: {
      if (!is_numeric(t.id) && t.id != type_id::boolean)
        throw type_error(std::string("cannot compute ") + to_string(s.op) + " of a " + to_string(t) + " column");
      interp m = interp_of(s.interpolation);
      dbuf<int64_t> rows = sort_within_segments(d, *in, true, mr);
      auto cnt = u64_sums(d, in, load_mode::valid, mr);
      buffer_ptr data = make_buffer(static_cast<size_t>(d.g) * sizeof(double), mr);
      dbuf<uint32_t> valid = make_bitmap(d.g, mr);
      launch(d.g, quantile_kernel, view_of(*in), kind_of(t), t.scale, rows.p, d.start.p, cnt.p, d.g, s.q, m,
             data->as<double>(), valid.p);
      return make_device_column(s.output_type, d.g, std::move(data), valid.buf);
    }
    default:
      break;
  }
  throw not_implemented_error(std::string("CUDA aggregation ") + to_string(s.op) + " is not implemented");
}

/// The sort-based group-by: one sync point over all partitions concatenated.
class sort_aggregate_op final : public physical_node {
 public:
  sort_aggregate_op(std::vector<size_t> keys, std::vector<agg_spec> aggs, bool maintain_order)
      : _keys(std::move(keys)), _aggs(std::move(aggs)), _maintain_order(maintain_order) {}
  std::string name() const override { return "sort_aggregate"; }
  std::string detail() const override { return describe(_keys, _aggs, _maintain_order); }
  bool sync_point() const override { return true; }
  rank_need input_need(size_t) const override { return exec::aggregate_need(_keys, _maintain_order, false); }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    nvtx_range r{"sort_aggregate"};
    memory_resource* mr = ctx.device_mr;
    table all = concat_all(parts, children[0]->output_schema, ctx);
    int64_t n = total_rows(parts);
    std::vector<column> keys;
    for (size_t k : _keys)
      keys.push_back(all[k]);
    dgroups d = group(keys, n, mr);
    // groups in order of first appearance: segments sorted by their first (smallest) row
    dbuf<int64_t> first(d.g, mr), seg_ids(d.g, mr), first_sorted(d.g, mr), perm(d.g, mr);
    launch(d.g, edge_rows_kernel, d.order.p, d.start.p, d.g, false, first.p);
    launch(d.g, iota_kernel, seg_ids.p, d.g);
    if (d.g > 1) {
      cub_run(mr, [&](void* temp, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, first.p, first_sorted.p, seg_ids.p, perm.p, d.g, 0, 64,
                                               stream());
      });
    } else {
      first_sorted = first;
      perm = seg_ids;
    }
    std::vector<column> cols;
    for (auto& k : keys)
      cols.push_back(cuda::gather(k, first_sorted.p, d.g, mr));
    for (auto& s : _aggs) {
      const column* in = s.input < 0 ? nullptr : &all[static_cast<size_t>(s.input)];
      cols.push_back(cuda::gather(segment_agg(s, in, d, mr), perm.p, d.g, mr));
    }
    sync();
    return split_rows(cols.empty() ? table::empty_with_rows(d.g) : table(std::move(cols)), ctx.options);
  }

 private:
  std::vector<size_t> _keys;
  std::vector<agg_spec> _aggs;
  bool _maintain_order;
};

class window_op final : public window_base {
 public:
  using window_base::window_base;
  std::string name() const override { return "window"; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    if (parts.empty()) return parts;
    nvtx_range r{"window"};
    memory_resource* mr = ctx.device_mr;
    table all = concat_all(parts, children[0]->output_schema, ctx);
    int64_t n = total_rows(parts);
    std::vector<column> results;
    for (auto& w : _specs) {
      std::vector<column> keys;
      for (size_t k : w.keys)
        keys.push_back(all[k]);
      dgroups d = group(keys, n, mr);
      dbuf<int64_t> seg_of_row(n, mr);
      launch(n, scatter_kernel, d.order.p, d.seg.p, n, seg_of_row.p);
      const column* in = w.agg.input < 0 ? nullptr : &all[static_cast<size_t>(w.agg.input)];
      results.push_back(cuda::gather(segment_agg(w.agg, in, d, mr), seg_of_row.p, n, mr));
    }
    sync();
    std::vector<table> out;
    int64_t off = 0;
    for (auto& p : parts) {
      std::vector<column> cols = p.columns();
      for (auto& c : results)
        cols.push_back(c.slice(off, p.num_rows()));
      off += p.num_rows();
      out.push_back(table(std::move(cols)));
    }
    return out;
  }
};

}  // namespace

physical_ptr make_sort_aggregate(physical_ptr child, std::vector<size_t> keys, std::vector<agg_spec> aggs,
                                 bool maintain_order, schema out) {
  for (auto& s : aggs)
    cpu::check_agg_spec(s);  // quantile's q and interpolation, as the CPU backend checks them
  return cpu::finish(std::make_unique<sort_aggregate_op>(std::move(keys), std::move(aggs), maintain_order),
                     backend::cuda, cpu::one(std::move(child)), std::move(out));
}

physical_ptr make_sort_window(physical_ptr child, std::vector<window_spec> specs, schema out) {
  for (auto& w : specs)
    cpu::check_agg_spec(w.agg);
  return cpu::finish(std::make_unique<window_op>(std::move(specs)), backend::cuda, cpu::one(std::move(child)),
                     std::move(out));
}

}  // namespace tug::cuda
