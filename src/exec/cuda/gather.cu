// Device-side table primitives: gather by row indices, filter by a boolean mask, concatenation and
// broadcast of one row. Fixed-width values move by element size (1, 2, 4, 8 or 16 bytes), so one
// kernel per size serves every type; strings go lengths -> scan -> offsets -> chars.
#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/std/iterator>
#include <functional>

#include "exec/cuda/common.cuh"
#include "exec/cuda/table_ops.hpp"

namespace tug::cuda {

namespace {

struct alignas(16) u128 {
  uint64_t lo, hi;
};

template <int W>
struct word;
template <>
struct word<1> {
  using type = uint8_t;
};
template <>
struct word<2> {
  using type = uint16_t;
};
template <>
struct word<4> {
  using type = uint32_t;
};
template <>
struct word<8> {
  using type = uint64_t;
};
template <>
struct word<16> {
  using type = u128;
};

/// Calls f.template operator()<W>() for the element width of `id` (not for strings).
template <typename F>
void width_dispatch(type_id id, F&& f) {
  switch (size_of(id)) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 4:
      return f.template operator()<4>();
    case 8:
      return f.template operator()<8>();
    case 16:
      return f.template operator()<16>();
  }
  throw internal_error("cuda: unexpected element width");
}

template <typename T>
__global__ void gather_fixed_kernel(dcol src, const int64_t* idx, int64_t n, T* out, uint32_t* valid_out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int lane = threadIdx.x & 31;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i - lane < n; i += stride) {
    bool valid = false;
    if (i < n) {
      int64_t j = idx[i];
      if (j >= 0) {
        out[i] = src.value<T>(j);
        valid = src.valid(j);
      } else {
        out[i] = T{};
      }
    }
    store_valid_bit(valid_out, i, valid);
  }
}

__global__ void gather_lengths_kernel(dcol src, const int64_t* idx, int64_t n, int64_t* len, uint32_t* valid_out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int lane = threadIdx.x & 31;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i - lane < n; i += stride) {
    bool valid = false;
    if (i < n) {
      int64_t j = idx[i];
      len[i] = j >= 0 ? src.str(j).n : 0;
      valid = j >= 0 && src.valid(j);
    }
    store_valid_bit(valid_out, i, valid);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) len[n] = 0;
}

/// L lanes per row copy its bytes in turn (L: 4, 8 or 32 by the column's mean length, so that short
/// strings do not leave most of a warp idle).
template <int L>
__global__ void gather_chars_kernel(dcol src, const int64_t* idx, int64_t n, const int64_t* offsets, char* out) {
  int64_t groups = (int64_t(gridDim.x) * blockDim.x) / L;
  int lane = threadIdx.x % L;
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / L; i < n; i += groups) {
    int64_t j = idx[i];
    if (j < 0) continue;
    dstring s = src.str(j);
    char* d = out + offsets[i];
    for (int64_t b = lane; b < s.n; b += L)
      d[b] = s.p[b];
  }
}

struct mask_true {
  dcol mask;
  __device__ bool operator()(int64_t i) const { return mask.valid(i) && mask.value<bool>(i); }
};

// ---- concatenation: each output row finds its part by binary search over the parts' first rows ----

struct part_desc {
  dcol col;
  int64_t first;  ///< first output row of this part
};

__device__ inline int find_part(const part_desc* parts, int nparts, int64_t row) {
  int lo = 0, hi = nparts - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (parts[mid].first <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

template <typename T>
__global__ void concat_fixed_kernel(const part_desc* parts, int nparts, int64_t n, T* out, uint32_t* valid_out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int lane = threadIdx.x & 31;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i - lane < n; i += stride) {
    bool valid = false;
    if (i < n) {
      const part_desc& p = parts[find_part(parts, nparts, i)];
      int64_t j = i - p.first;
      if (out) out[i] = p.col.value<T>(j);
      valid = p.col.valid(j);
    }
    store_valid_bit(valid_out, i, valid);
  }
}

__global__ void concat_lengths_kernel(const part_desc* parts, int nparts, int64_t n, int64_t* len) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const part_desc& p = parts[find_part(parts, nparts, i)];
    len[i] = p.col.str(i - p.first).n;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) len[n] = 0;
}

__global__ void concat_chars_kernel(const part_desc* parts, int nparts, int64_t n, const int64_t* offsets, char* out) {
  int64_t warps = (int64_t(gridDim.x) * blockDim.x) / 32;
  int lane = threadIdx.x & 31;
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < n; i += warps) {
    const part_desc& p = parts[find_part(parts, nparts, i)];
    dstring s = p.col.str(i - p.first);
    for (int64_t b = lane; b < s.n; b += 32)
      out[offsets[i] + b] = s.p[b];
  }
}

template <typename T>
__global__ void repeat_fixed_kernel(dcol src, int64_t row, int64_t n, T* out) {
  T v = src.value<T>(row);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = v;
}

__global__ void repeat_string_kernel(dcol src, int64_t row, int64_t n, int64_t* offsets, char* out) {
  dstring s = src.str(row);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i <= n; i += int64_t(gridDim.x) * blockDim.x) {
    offsets[i] = i * s.n;
    if (i < n)
      for (int64_t b = 0; b < s.n; ++b)
        out[i * s.n + b] = s.p[b];
  }
}

}  // namespace

namespace {

/// The exclusive scan of `len` (n + 1 entries, the last 0) into offsets, queued on the stream; the
/// total (the last offset) is copied to the device word `total` (no wait).
buffer_ptr scan_offsets_async(const int64_t* len, int64_t n, int64_t* total, memory_resource* mr) {
  dbuf<int64_t> offsets(n + 1, mr);
  size_t temp_bytes = 0;
  TUG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, len, offsets.p, n + 1, stream()));
  dbuf<uint8_t> temp(static_cast<int64_t>(temp_bytes), mr);
  TUG_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.p, temp_bytes, len, offsets.p, n + 1, stream()));
  TUG_CUDA_TRY(cudaMemcpyAsync(total, offsets.p + n, sizeof(int64_t), cudaMemcpyDeviceToDevice, stream()));
  return offsets.buf;
}

/// One gathered column while its kernels are queued: its values (the characters of a string column
/// come after the wait, once their size is known), validity and offsets.
struct gathered {
  buffer_ptr data, valid, offsets;
};

gathered gather_queued(const column& c, const int64_t* indices, int64_t n, int64_t* chars_total, memory_resource* mr) {
  dcol src = view_of(c);
  auto valid = make_bitmap(n, mr);
  if (c.type().id == type_id::string) {
    dbuf<int64_t> len(n + 1, mr);
    gather_lengths_kernel<<<grid_for(n), 256, 0, stream()>>>(src, indices, n, len.p, valid.p);
    TUG_CUDA_CHECK_LAUNCH();
    return {{}, valid.buf, scan_offsets_async(len.p, n, chars_total, mr)};
  }
  buffer_ptr data;
  width_dispatch(c.type().id, [&]<int W>() {
    using T = typename word<W>::type;
    dbuf<T> out(n, mr);
    if (n > 0) gather_fixed_kernel<T><<<grid_for(n), 256, 0, stream()>>>(src, indices, n, out.p, valid.p);
    TUG_CUDA_CHECK_LAUNCH();
    data = out.buf;
  });
  return {data, valid.buf, {}};
}

/// The characters of a gathered string column of `total` bytes.
buffer_ptr gather_chars(const column& c, const gathered& g, const int64_t* indices, int64_t n, int64_t total,
                        memory_resource* mr) {
  dbuf<char> chars(total, mr);
  dcol src = view_of(c);
  const int64_t* offsets = g.offsets->as<int64_t>();
  int64_t mean = n > 0 ? total / n : 0;
  if (n == 0) return chars.buf;
  if (mean < 16)
    gather_chars_kernel<4><<<grid_for(n * 4), 256, 0, stream()>>>(src, indices, n, offsets, chars.p);
  else if (mean < 64)
    gather_chars_kernel<8><<<grid_for(n * 8), 256, 0, stream()>>>(src, indices, n, offsets, chars.p);
  else
    gather_chars_kernel<32><<<grid_for(n * 32), 256, 0, stream()>>>(src, indices, n, offsets, chars.p);
  TUG_CUDA_CHECK_LAUNCH();
  return chars.buf;
}

/// Columns of `k` queued results once their counts are known: `h` holds k valid-row counts, then k
/// character totals; `chars(i, total)` gives string column i's characters.
std::vector<column> finish_columns(const table& like, std::vector<gathered>& g, const std::vector<int64_t>& rows,
                                   const std::vector<int64_t>& h,
                                   const std::function<buffer_ptr(size_t, int64_t)>& chars) {
  size_t k = g.size();
  std::vector<column> cols;
  cols.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    const data_type& type = like[i].type();
    if (type.id == type_id::string) g[i].data = chars(i, h[k + i]);
    int64_t nulls = rows[i] - h[i];
    cols.push_back(column(type, rows[i], std::move(g[i].data), nulls > 0 ? std::move(g[i].valid) : buffer_ptr{}, nulls,
                          std::move(g[i].offsets), 0));
  }
  return cols;
}

}  // namespace

buffer_ptr scan_offsets(const int64_t* len, int64_t n, int64_t* total, memory_resource* mr) {
  dbuf<int64_t> last(1, mr);
  buffer_ptr offsets = scan_offsets_async(len, n, last.p, mr);
  read_back(last.p, total);
  return offsets;
}

column gather(const column& c, const int64_t* indices, int64_t n, memory_resource* mr) {
  return cuda::gather(table({c}), indices, n, mr)[0];
}

table gather(const table& t, const int64_t* indices, int64_t n, memory_resource* mr) {
  nvtx_range r{"gather"};
  size_t k = t.num_columns();
  if (k == 0) return table::empty_with_rows(n);
  // Every column's kernels are queued first, then one wait learns all the valid-row counts and the
  // strings' character totals (not one wait per column), then the strings' characters are queued.
  // words [0, k): valid rows per column; [k, 2k): characters per string column
  dbuf<int64_t> counts(static_cast<int64_t>(2 * k), mr);
  TUG_CUDA_TRY(cudaMemsetAsync(counts.p, 0, 2 * k * sizeof(int64_t), stream()));
  static_assert(sizeof(int64_t) == sizeof(unsigned long long));
  std::vector<gathered> g;
  g.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    g.push_back(gather_queued(t[i], indices, n, counts.p + k + i, mr));
    count_set_bits_async(*g.back().valid, 0, n, reinterpret_cast<unsigned long long*>(counts.p + i));
  }
  std::vector<int64_t> h(2 * k);
  read_back(counts.p, h.data(), static_cast<int64_t>(h.size()));
  std::vector<column> cols = finish_columns(t, g, std::vector<int64_t>(k, n), h, [&](size_t i, int64_t total) {
    return gather_chars(t[i], g[i], indices, n, total, mr);
  });
  return table(std::move(cols));
}

buffer_ptr true_indices(const column& mask, int64_t* count, memory_resource* mr) {
  int64_t n = mask.size();
  dbuf<int64_t> out(n, mr);
  dbuf<int64_t> selected(1, mr);
  thrust::counting_iterator<int64_t> first(0);
  mask_true pred{view_of(mask)};
  size_t temp_bytes = 0;
  TUG_CUDA_TRY(cub::DeviceSelect::If(nullptr, temp_bytes, first, out.p, selected.p, n, pred, stream()));
  dbuf<uint8_t> temp(static_cast<int64_t>(temp_bytes), mr);
  TUG_CUDA_TRY(cub::DeviceSelect::If(temp.p, temp_bytes, first, out.p, selected.p, n, pred, stream()));
  read_back(selected.p, count);
  return out.buf;
}

table filter(const table& t, const column& mask, memory_resource* mr) {
  nvtx_range r{"filter"};
  int64_t count = 0;
  buffer_ptr idx = true_indices(mask, &count, mr);
  if (count == t.num_rows()) return t;
  table out = cuda::gather(t, idx->as<int64_t>(), count, mr);
  sync();
  return out;
}

namespace {

/// One concatenated column while its kernels are queued (as `gathered`); `desc` describes the parts.
struct concatenated {
  dbuf<part_desc> desc;
  int64_t n = 0;
  gathered g;
};

concatenated concatenate_queued(const std::vector<column>& parts, int64_t* chars_total, memory_resource* mr) {
  const data_type& type = parts[0].type();
  std::vector<part_desc> host;
  concatenated c;
  for (auto& p : parts) {
    if (p.type() != type) throw internal_error("cuda::concatenate: column types differ");
    host.push_back({view_of(p), c.n});
    c.n += p.size();
  }
  int64_t n = c.n;
  c.desc = dbuf<part_desc>(static_cast<int64_t>(host.size()), mr);
  upload(c.desc.p, host.data(), host.size() * sizeof(part_desc));
  int np = static_cast<int>(host.size());
  auto valid = make_bitmap(n, mr);
  c.g.valid = valid.buf;
  if (type.id == type_id::string) {
    dbuf<int64_t> len(n + 1, mr);
    concat_lengths_kernel<<<grid_for(n), 256, 0, stream()>>>(c.desc.p, np, n, len.p);
    TUG_CUDA_CHECK_LAUNCH();
    c.g.offsets = scan_offsets_async(len.p, n, chars_total, mr);
    // validity only (out == nullptr): any fixed width does
    if (n > 0) concat_fixed_kernel<uint8_t><<<grid_for(n), 256, 0, stream()>>>(c.desc.p, np, n, nullptr, valid.p);
    TUG_CUDA_CHECK_LAUNCH();
    return c;
  }
  width_dispatch(type.id, [&]<int W>() {
    using T = typename word<W>::type;
    dbuf<T> o(n, mr);
    if (n > 0) concat_fixed_kernel<T><<<grid_for(n), 256, 0, stream()>>>(c.desc.p, np, n, o.p, valid.p);
    TUG_CUDA_CHECK_LAUNCH();
    c.g.data = o.buf;
  });
  return c;
}

}  // namespace

column concatenate(const std::vector<column>& parts, memory_resource* mr) {
  TUG_EXPECTS(!parts.empty(), "cuda::concatenate of no columns");
  if (parts.size() == 1) return parts[0];
  std::vector<table> tables;
  for (auto& p : parts)
    tables.push_back(table({p}));
  return cuda::concatenate(tables, mr)[0];
}

table concatenate(const std::vector<table>& parts, memory_resource* mr) {
  nvtx_range r{"concatenate"};
  int64_t rows = 0;
  for (auto& p : parts)
    rows += p.num_rows();
  if (parts.empty() || parts[0].num_columns() == 0) return table::empty_with_rows(rows);
  if (parts.size() == 1) return parts[0];
  // as in gather: every column queued, one wait for the null counts and string sizes, then the
  // strings' characters
  size_t k = parts[0].num_columns();
  dbuf<int64_t> counts(static_cast<int64_t>(2 * k), mr);
  TUG_CUDA_TRY(cudaMemsetAsync(counts.p, 0, 2 * k * sizeof(int64_t), stream()));
  std::vector<concatenated> q;
  std::vector<gathered> g;
  std::vector<int64_t> n(k, rows);
  for (size_t c = 0; c < k; ++c) {
    std::vector<column> pieces;
    for (auto& p : parts)
      pieces.push_back(p[c]);
    q.push_back(concatenate_queued(pieces, counts.p + k + c, mr));
    count_set_bits_async(*q.back().g.valid, 0, rows, reinterpret_cast<unsigned long long*>(counts.p + c));
    g.push_back(q.back().g);
  }
  std::vector<int64_t> h(2 * k);
  read_back(counts.p, h.data(), static_cast<int64_t>(h.size()));
  auto chars = [&](size_t c, int64_t total) {
    dbuf<char> out(total, mr);
    int np = static_cast<int>(parts.size());
    concat_chars_kernel<<<grid_for(rows * 32), 256, 0, stream()>>>(q[c].desc.p, np, rows, g[c].offsets->as<int64_t>(),
                                                                   out.p);
    TUG_CUDA_CHECK_LAUNCH();
    return out.buf;
  };
  table out(finish_columns(parts[0], g, n, h, chars));
  sync();
  return out;
}

column repeat_row(const column& c, int64_t row, int64_t n, memory_resource* mr) {
  if (c.is_null(row)) {
    // an all-null column: values zeroed, every validity bit clear
    column z = [&] {
      if (c.type().id == type_id::string) {
        dbuf<int64_t> offsets(n + 1, mr);
        TUG_CUDA_TRY(cudaMemsetAsync(offsets.p, 0, sizeof(int64_t) * static_cast<size_t>(n + 1), stream()));
        return column(
            c.type(), n, dbuf<char>(0, mr).buf,
            [&] {
              auto v = make_bitmap(n, mr);
              TUG_CUDA_TRY(cudaMemsetAsync(v.p, 0, sizeof(uint32_t) * static_cast<size_t>((n + 31) / 32), stream()));
              return v.buf;
            }(),
            n, offsets.buf);
      }
      size_t bytes = static_cast<size_t>(size_of(c.type().id)) * static_cast<size_t>(n);
      dbuf<uint8_t> data(static_cast<int64_t>(bytes), mr);
      TUG_CUDA_TRY(cudaMemsetAsync(data.p, 0, bytes, stream()));
      auto v = make_bitmap(n, mr);
      TUG_CUDA_TRY(cudaMemsetAsync(v.p, 0, sizeof(uint32_t) * static_cast<size_t>((n + 31) / 32), stream()));
      return column(c.type(), n, data.buf, v.buf, n);
    }();
    sync();
    return z;
  }
  dcol src = view_of(c);
  column out;
  if (c.type().id == type_id::string) {
    int64_t len = 0;
    {
      int64_t o[2];
      read_back(c.offsets_buffer()->as<int64_t>() + c.offset() + row, o, 2);
      len = o[1] - o[0];
    }
    dbuf<int64_t> offsets(n + 1, mr);
    dbuf<char> chars(len * n, mr);
    repeat_string_kernel<<<grid_for(n + 1), 256, 0, stream()>>>(src, row, n, offsets.p, chars.p);
    TUG_CUDA_CHECK_LAUNCH();
    out = column(c.type(), n, chars.buf, {}, 0, offsets.buf);
  } else {
    buffer_ptr data;
    width_dispatch(c.type().id, [&]<int W>() {
      using T = typename word<W>::type;
      dbuf<T> o(n, mr);
      if (n > 0) repeat_fixed_kernel<T><<<grid_for(n), 256, 0, stream()>>>(src, row, n, o.p);
      TUG_CUDA_CHECK_LAUNCH();
      data = o.buf;
    });
    out = column(c.type(), n, std::move(data), {}, 0);
  }
  sync();
  return out;
}

}  // namespace tug::cuda
