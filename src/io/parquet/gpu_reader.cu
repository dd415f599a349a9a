// The GPU Parquet reader (gpu_reader.hpp): planning on the host (page_plan.cpp), decompression with
// nvCOMP's batched API (or on the host), decoding on the device with the steps of page_decode.hpp: each
// step one launch for every column chunk of the row group (a block a page for the walks, tiles of a
// page's rows for the values).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>

#include "exec/cuda/common.cuh"
#include "exec/cuda/table_ops.hpp"
#include "gpu_reader.hpp"
#include "page_decode.hpp"
#include "page_plan.hpp"
#include "tug/core/error.hpp"
#include "tug/io/parquet/codec.hpp"
#include "tug/memory/device.hpp"

#ifdef TUG_WITH_NVCOMP
#include <nvcomp/lz4.h>
#include <nvcomp/snappy.h>
#include <nvcomp/zstd.h>
#endif

namespace tug::io::parquet {
namespace {

using cuda::stream;

/// The threads of one block as a team of page_decode.hpp (host bodies are never run).
struct block_team {
  __host__ __device__ int rank() const {
#ifdef __CUDA_ARCH__
    return static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  __host__ __device__ int size() const {
#ifdef __CUDA_ARCH__
    return static_cast<int>(blockDim.x);
#else
    return 1;
#endif
  }
  __host__ __device__ bool leader() const { return rank() == 0; }
  __host__ __device__ void sync() const {
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
  }
  /// Block-wide exclusive count of `v` (every thread calls it; blockDim.x a multiple of 32).
  __host__ __device__ int32_t exclusive_count(bool v, int32_t& total, gpu::page_shared& sh) const {
#ifdef __CUDA_ARCH__
    const unsigned mask = __ballot_sync(0xffffffffu, v);
    const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
    const int32_t in_warp = __popc(mask & ((1u << lane) - 1u));
    if (lane == 0) sh.warp_totals[warp] = __popc(mask);
    __syncthreads();
    int32_t before = 0, all = 0;
    const int warps = static_cast<int>((blockDim.x + 31) / 32);
    for (int w = 0; w < warps; ++w) {
      if (w < warp) before += sh.warp_totals[w];
      all += sh.warp_totals[w];
    }
    __syncthreads();
    total = all;
    return before + in_warp;
#else
    total = v ? 1 : 0;
    return 0;
#endif
  }
};

constexpr int kPageThreads = 256;
constexpr int64_t kTileRows = 1024;  ///< rows of a data page that one block of rows_kernel decodes

/// Every dictionary page of a row group's chunks, a block each.
__global__ void dictionary_kernel(const gpu::chunk_params* chunks, const gpu::page_params* pages) {
  __shared__ gpu::page_shared sh;
  const block_team t;
  const gpu::page_params pg = pages[blockIdx.x];
  gpu::decode_dictionary(t, chunks[pg.chunk], pg, sh);
}

/// Every data page of a row group's chunks, a block each: levels, indices and walks (prepare_page).
__global__ void prepare_kernel(const gpu::chunk_params* chunks, const gpu::page_params* pages,
                               gpu::page_state* states) {
  __shared__ gpu::page_shared sh;
  const block_team t;
  const gpu::page_params pg = pages[blockIdx.x];
  gpu::prepare_page(t, chunks[pg.chunk], pg, sh, states + blockIdx.x);
}

/// The rows of every data page: block b decodes tile b - tile_start[k] of page k (kTileRows rows),
/// where tile_start[k] <= b < tile_start[k + 1]; pages that failed to prepare are left alone.
__global__ void rows_kernel(const gpu::chunk_params* chunks, const gpu::page_params* pages,
                            const gpu::page_state* states, const int32_t* tile_start, int32_t n_pages) {
  const auto b = static_cast<int32_t>(blockIdx.x);
  int32_t lo = 0, hi = n_pages;  // the last page whose first tile is at or before b
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (tile_start[mid] <= b) lo = mid;
    else hi = mid;
  }
  const gpu::page_state st = states[lo];
  if (!st.ok) return;
  const gpu::page_params& pg = pages[lo];
  const gpu::chunk_params& c = chunks[pg.chunk];
  const int64_t begin = static_cast<int64_t>(b - tile_start[lo]) * kTileRows;
  const int64_t end = begin + kTileRows < pg.rows ? begin + kTileRows : pg.rows;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    gpu::decode_row(c, pg, st, i);
}

/// The validity bits of every optional chunk (blockIdx.y: the chunk).
__global__ void validity_kernel(const gpu::chunk_params* chunks) {
  const gpu::chunk_params& c = chunks[blockIdx.y];
  if (!c.optional) return;
  const int64_t bytes = (c.rows + 7) / 8;
  for (int64_t b = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; b < bytes; b += int64_t{gridDim.x} * blockDim.x)
    c.validity[b] = gpu::validity_byte(c.rank, c.rows, b);
}

__global__ void chars_kernel(gpu::chunk_params c, const int64_t* offsets, char* chars, int64_t rows) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows; i += int64_t{gridDim.x} * blockDim.x)
    gpu::copy_string(c, offsets, chars, i);
}

/// One page for nvCOMP: where its compressed bytes are and where they go.
struct codec_entry {
  const void* in;
  size_t in_size;
  void* out;
  size_t out_size;
  size_t chunk, page;  ///< which chunk state and page (errors)
};

/// A column chunk decoded on the device, while its work is queued.
struct chunk_state {
  size_t k = 0;  ///< position among the columns read
  chunk_plan plan;
  buffer_ptr host_bytes, dev_bytes, ubuf, host_ubuf;
  gpu::chunk_params params;
  std::vector<gpu::page_params> jobs;  ///< the pages, with device pointers
  buffer_ptr out, rank, indices, dense_values, dense_ptr, dense_len, str_ptr, str_len, dict_values, dict_ptr, dict_len, validity;
};

#ifdef TUG_WITH_NVCOMP
const char* nvcomp_status_text(nvcompStatus_t s) {
  switch (s) {
    case nvcompSuccess:
      return "success";
    case nvcompErrorInvalidValue:
      return "invalid value";
    case nvcompErrorNotSupported:
      return "not supported";
    case nvcompErrorCannotDecompress:
      return "cannot decompress";
    case nvcompErrorBadChecksum:
      return "bad checksum";
    case nvcompErrorCannotVerifyChecksums:
      return "cannot verify checksums";
    case nvcompErrorOutputBufferTooSmall:
      return "output buffer too small";
    case nvcompErrorWrongHeaderLength:
      return "wrong header length";
    case nvcompErrorAlignment:
      return "alignment";
    case nvcompErrorChunkSizeTooLarge:
      return "chunk size too large";
    case nvcompErrorCannotCompress:
      return "cannot compress";
    case nvcompErrorWrongInputLength:
      return "wrong input length";
    case nvcompErrorCudaError:
      return "CUDA error";
    case nvcompErrorInternal:
      return "internal error";
    default:
      return "error";
  }
}

/// The device arrays of one nvCOMP batch and the results read back.
struct codec_batch {
  codec c = codec::uncompressed;
  std::vector<codec_entry> entries;
  buffer_ptr args;      ///< in ptrs, out ptrs, in sizes, out sizes, actual sizes, statuses
  buffer_ptr temp;
  size_t actual_at = 0, status_at = 0;
};

/// Queues the decompression of `b.entries` with nvCOMP.
void decompress_batch(codec_batch& b, memory_resource* mr) {
  const size_t n = b.entries.size();
  std::vector<uint64_t> host(n * 4);
  size_t max_out = 0, total_out = 0;
  for (size_t i = 0; i < n; ++i) {
    const codec_entry& e = b.entries[i];
    host[i] = reinterpret_cast<uint64_t>(e.in);
    host[n + i] = reinterpret_cast<uint64_t>(e.out);
    host[2 * n + i] = e.in_size;
    host[3 * n + i] = e.out_size;
    max_out = std::max(max_out, e.out_size);
    total_out += e.out_size;
  }
  b.actual_at = 4 * n * sizeof(uint64_t);
  b.status_at = b.actual_at + n * sizeof(size_t);
  b.args = make_buffer(b.status_at + n * sizeof(nvcompStatus_t), mr);
  cuda::upload(b.args->data(), host.data(), host.size() * sizeof(uint64_t));
  auto* base = b.args->as<uint8_t>();
  auto* in_ptrs = reinterpret_cast<const void* const*>(base);
  auto* out_ptrs = reinterpret_cast<void* const*>(base + n * 8);
  auto* in_sizes = reinterpret_cast<const size_t*>(base + 2 * n * 8);
  auto* out_sizes = reinterpret_cast<const size_t*>(base + 3 * n * 8);
  auto* actual = reinterpret_cast<size_t*>(base + b.actual_at);
  auto* statuses = reinterpret_cast<nvcompStatus_t*>(base + b.status_at);
  size_t temp = 0;
  nvcompStatus_t s = nvcompSuccess;
  auto check = [&](nvcompStatus_t st, const char* call) {
    if (st != nvcompSuccess)
      throw compute_error(std::string("nvCOMP ") + call + " failed for " + to_string(b.c) + ": " + nvcomp_status_text(st));
  };
  switch (b.c) {
    case codec::snappy:
      s = nvcompBatchedSnappyDecompressGetTempSize(n, max_out, nvcompBatchedSnappyDecompressDefaultOpts, &temp, total_out, stream());
      break;
    case codec::zstd:
      s = nvcompBatchedZstdDecompressGetTempSize(n, max_out, nvcompBatchedZstdDecompressDefaultOpts, &temp, total_out, stream());
      break;
    case codec::lz4_raw:
      s = nvcompBatchedLZ4DecompressGetTempSize(n, max_out, nvcompBatchedLZ4DecompressDefaultOpts, &temp, total_out, stream());
      break;
    default:
      throw internal_error("parquet: no device codec for " + to_string(b.c));
  }
  check(s, "temp size");
  b.temp = make_buffer(std::max<size_t>(temp, 1), mr);
  switch (b.c) {
    case codec::snappy:
      s = nvcompBatchedSnappyDecompressAsync(in_ptrs, in_sizes, out_sizes, actual, n, b.temp->data(), temp, out_ptrs,
                                             nvcompBatchedSnappyDecompressDefaultOpts, statuses, stream());
      break;
    case codec::zstd:
      s = nvcompBatchedZstdDecompressAsync(in_ptrs, in_sizes, out_sizes, actual, n, b.temp->data(), temp, out_ptrs,
                                           nvcompBatchedZstdDecompressDefaultOpts, statuses, stream());
      break;
    case codec::lz4_raw:
      s = nvcompBatchedLZ4DecompressAsync(in_ptrs, in_sizes, out_sizes, actual, n, b.temp->data(), temp, out_ptrs,
                                          nvcompBatchedLZ4DecompressDefaultOpts, statuses, stream());
      break;
    default:
      break;
  }
  check(s, "decompression");
}
#endif

/// Device buffer of `n` values of T from `mr` (at least one value, so pointers are never null).
template <typename T>
buffer_ptr dev_array(int64_t n, memory_resource* mr) {
  return make_buffer(sizeof(T) * static_cast<size_t>(std::max<int64_t>(n, 1)), mr);
}

table decode(const file_reader& r, int rg, const std::vector<size_t>& columns, const std::vector<row_range>& ranges,
             bool device_decompression, memory_resource* mr, memory_resource* pinned, device_read_counters* counters,
             std::vector<chunk_state>& states) {
  std::vector<column> out(columns.size());
  std::vector<size_t> host_cols, host_at;
  using clock = std::chrono::steady_clock;
  auto lap = [t = clock::now()](std::atomic<int64_t>* into) mutable {
    const auto now = clock::now();
    if (into) *into += std::chrono::duration_cast<std::chrono::nanoseconds>(now - t).count();
    t = now;
  };
  // 1. read and plan; chunks the device cannot decode go to the host reader
  for (size_t k = 0; k < columns.size(); ++k) {
    const file_reader::chunk_info ci = r.chunk(rg, columns[k]);
    buffer_ptr bytes = make_buffer(static_cast<size_t>(ci.size) + 8, pinned);
    r.read_bytes(ci.offset, static_cast<size_t>(ci.size), bytes->as<uint8_t>());
    chunk_plan plan = plan_chunk(r, rg, columns[k], bytes->as<uint8_t>(), static_cast<size_t>(ci.size), ranges,
                                 device_decompression);
    if (!plan.host_reason.empty()) {
      host_cols.push_back(columns[k]);
      host_at.push_back(k);
      continue;
    }
    if (counters) counters->pages_skipped += plan.pages_skipped;
    chunk_state s;
    s.k = k;
    s.plan = std::move(plan);
    s.host_bytes = std::move(bytes);
    states.push_back(std::move(s));
  }
  lap(counters ? &counters->read_ns : nullptr);
  // 2. chunk bytes to the device (where a page is read from them there); pages decompressed there, or
  // on the host into a pinned buffer laid out as the device's, copied in runs of adjacent pages
  std::map<codec, std::vector<codec_entry>> by_codec;
  for (size_t i = 0; i < states.size(); ++i) {
    chunk_state& s = states[i];
    const chunk_plan& p = s.plan;
    // a page is read from the chunk's device bytes unless the host decompresses it whole
    auto on_host = [&](const planned_page& pg) {
      return p.compression != codec::uncompressed && pg.compressed && pg.codec_out_size() > 0 && !pg.checked;
    };
    const bool all_on_host = std::all_of(p.pages.begin(), p.pages.end(), on_host);
    uint8_t* dev = nullptr;
    if (!all_on_host) {
      s.dev_bytes = make_buffer(std::max<size_t>(p.size, 1), mr);
      dev = s.dev_bytes->as<uint8_t>();
      TUG_CUDA_TRY(cudaMemcpyAsync(dev, s.host_bytes->data(), p.size, cudaMemcpyHostToDevice, stream()));
    }
    std::vector<size_t> at;
    const size_t ubytes = uncompressed_layout(p, at);
    s.ubuf = make_buffer(std::max<size_t>(ubytes, 1), mr);
    auto* udev = s.ubuf->as<uint8_t>();
    std::vector<const uint8_t*> data(p.pages.size());
    size_t run_lo = 0, run_hi = 0;  // host-decompressed bytes [lo, hi) of the layout not yet copied
    auto flush = [&] {
      if (run_hi > run_lo)
        TUG_CUDA_TRY(cudaMemcpyAsync(udev + run_lo, s.host_ubuf->as<uint8_t>() + run_lo, run_hi - run_lo,
                                     cudaMemcpyHostToDevice, stream()));
      run_lo = run_hi = 0;
    };
    for (size_t j = 0; j < p.pages.size(); ++j) {
      const planned_page& pg = p.pages[j];
      if (p.compression == codec::uncompressed || !pg.compressed) {
        data[j] = dev + pg.offset;
        continue;
      }
      data[j] = udev + at[j];
      if (on_host(pg)) {
        if (!s.host_ubuf) s.host_ubuf = make_buffer(std::max<size_t>(ubytes, 1), pinned);
        decompress_page(p, pg, s.host_bytes->as<uint8_t>(), s.host_ubuf->as<uint8_t>() + at[j]);
        if (run_hi == run_lo) run_lo = at[j];
        run_hi = at[j] + static_cast<size_t>(pg.uncompressed_size);  // the layout's padding between goes too
        if (counters) ++counters->host_pages;
        continue;
      }
      flush();  // the layout between this page and the run is written by the device
      if (pg.rep_bytes + pg.def_bytes)  // v2 levels (a page of levels only included)
        TUG_CUDA_TRY(cudaMemcpyAsync(udev + at[j], dev + pg.offset, static_cast<size_t>(pg.rep_bytes + pg.def_bytes),
                                     cudaMemcpyDeviceToDevice, stream()));
      if (pg.codec_out_size() == 0) continue;
      // planned for the device codec, its CRC checked (plan_chunk)
      by_codec[p.compression].push_back({dev + pg.codec_in(), pg.codec_in_size(),
                                         udev + at[j] + pg.rep_bytes + pg.def_bytes, pg.codec_out_size(), i, j});
      if (counters) ++counters->device_pages;
    }
    flush();
    s.jobs = page_jobs(p, data);
    for (gpu::page_params& j : s.jobs)
      j.chunk = static_cast<int32_t>(i);
  }
#ifdef TUG_WITH_NVCOMP
  std::vector<codec_batch> batches;
  for (auto& [c, entries] : by_codec) {
    codec_batch b;
    b.c = c;
    b.entries = std::move(entries);
    decompress_batch(b, mr);
    batches.push_back(std::move(b));
  }
#else
  if (!by_codec.empty()) throw internal_error("parquet: device decompression planned without nvCOMP");
#endif
  // 3. decode, every chunk in each launch: the dictionaries, the data pages' walks (a block a page),
  // their rows (tiles of kTileRows), then the validity bits
  buffer_ptr errors = dev_array<gpu::error_slot>(static_cast<int64_t>(states.size()), mr);
  TUG_CUDA_TRY(cudaMemsetAsync(errors->data(), 0, sizeof(gpu::error_slot) * std::max<size_t>(states.size(), 1), stream()));
  std::vector<gpu::page_params> dict_pages, data_pages;
  std::vector<int32_t> tile_start{0};
  int64_t max_bytes = 0;  // of a validity bitmap
  for (size_t i = 0; i < states.size(); ++i) {
    chunk_state& s = states[i];
    const chunk_plan& p = s.plan;
    const int64_t rows = p.decoded_rows;
    gpu::chunk_params& c = s.params;
    c = p.params;
    c.error = errors->as<gpu::error_slot>() + i;
    c.rows = rows;
    const bool strings = c.cv == gpu::conv::string;
    if (!strings) {
      s.out = make_buffer(static_cast<size_t>(std::max<int64_t>(rows, 1)) * static_cast<size_t>(c.out_width), mr);
      c.out = s.out->as<uint8_t>();
    } else {
      s.str_ptr = dev_array<const uint8_t*>(rows, mr);
      s.str_len = dev_array<int64_t>(rows + 1, mr);
      TUG_CUDA_TRY(cudaMemsetAsync(s.str_len->as<int64_t>() + rows, 0, sizeof(int64_t), stream()));
      c.str_ptr = s.str_ptr->as<const uint8_t*>();
      c.str_len = s.str_len->as<int64_t>();
    }
    if (c.optional) {
      s.rank = dev_array<int32_t>(rows, mr);
      c.rank = s.rank->as<int32_t>();
      s.validity = make_buffer(static_cast<size_t>(std::max<int64_t>(bits::bytes_for(rows), 1)), mr);
      c.validity = s.validity->as<uint8_t>();
      max_bytes = std::max(max_bytes, bits::bytes_for(rows));
    }
    bool indexed = false, plain_bytes = false, delta = false;
    for (const planned_page& pg : p.pages) {
      indexed |= pg.enc == encoding::plain_dictionary || pg.enc == encoding::rle_dictionary || pg.enc == encoding::rle;
      delta |= pg.enc == encoding::delta_binary_packed || pg.enc == encoding::delta_length_byte_array;
      plain_bytes |= c.byte_array && (pg.enc == encoding::plain || pg.enc == encoding::delta_length_byte_array) &&
                     pg.type != page_type::dictionary_page;
    }
    if (delta) {
      s.dense_values = dev_array<uint64_t>(rows, mr);
      c.dense_values = s.dense_values->as<uint64_t>();
    }
    if (indexed) {
      s.indices = dev_array<uint32_t>(rows, mr);
      c.indices = s.indices->as<uint32_t>();
    }
    if (plain_bytes) {
      s.dense_ptr = dev_array<const uint8_t*>(rows, mr);
      s.dense_len = dev_array<int32_t>(rows, mr);
      c.dense_ptr = s.dense_ptr->as<const uint8_t*>();
      c.dense_len = s.dense_len->as<int32_t>();
    }
    size_t first_data = 0;
    if (p.dictionary >= 0) {
      const gpu::page_params& d = s.jobs[static_cast<size_t>(p.dictionary)];
      const int64_t dn = d.rows;
      if (c.byte_array || c.cv == gpu::conv::string) {
        s.dict_ptr = dev_array<const uint8_t*>(dn, mr);
        s.dict_len = dev_array<int32_t>(dn, mr);
        c.dict_ptr = s.dict_ptr->as<const uint8_t*>();
        c.dict_len = s.dict_len->as<int32_t>();
      } else {
        s.dict_values = make_buffer(static_cast<size_t>(std::max<int64_t>(dn, 1)) * static_cast<size_t>(c.out_width), mr);
        c.dict_values = s.dict_values->as<uint8_t>();
      }
      dict_pages.push_back(d);
      c.has_dict = true;
      c.dict_count = dn;
      first_data = static_cast<size_t>(p.dictionary) + 1;
    }
    for (size_t j = first_data; j < s.jobs.size(); ++j) {
      data_pages.push_back(s.jobs[j]);
      const int64_t tiles = (s.jobs[j].rows + kTileRows - 1) / kTileRows;
      if (tile_start.back() + tiles > std::numeric_limits<int32_t>::max())
        throw internal_error("parquet: a row group too large for the GPU reader (over 2^41 rows)");
      tile_start.push_back(tile_start.back() + static_cast<int32_t>(tiles));
    }
  }
  // the descriptions in one upload: chunks, dictionary pages, data pages, tile starts; then the states
  auto align = [](size_t x) { return (x + 15) / 16 * 16; };
  const size_t at_dict = align(states.size() * sizeof(gpu::chunk_params));
  const size_t at_data = at_dict + align(dict_pages.size() * sizeof(gpu::page_params));
  const size_t at_tiles = at_data + align(data_pages.size() * sizeof(gpu::page_params));
  const size_t at_states = at_tiles + align(tile_start.size() * sizeof(int32_t));
  const size_t desc_bytes = at_states + data_pages.size() * sizeof(gpu::page_state);
  std::vector<uint8_t> host_desc(at_states);
  for (size_t i = 0; i < states.size(); ++i)
    std::memcpy(host_desc.data() + i * sizeof(gpu::chunk_params), &states[i].params, sizeof(gpu::chunk_params));
  std::memcpy(host_desc.data() + at_dict, dict_pages.data(), dict_pages.size() * sizeof(gpu::page_params));
  std::memcpy(host_desc.data() + at_data, data_pages.data(), data_pages.size() * sizeof(gpu::page_params));
  std::memcpy(host_desc.data() + at_tiles, tile_start.data(), tile_start.size() * sizeof(int32_t));
  buffer_ptr desc = make_buffer(std::max<size_t>(desc_bytes, 1), mr);
  auto* d = desc->as<uint8_t>();
  if (at_states) cuda::upload(d, host_desc.data(), at_states);
  if (desc_bytes > at_states)
    TUG_CUDA_TRY(cudaMemsetAsync(d + at_states, 0, desc_bytes - at_states, stream()));
  const auto* chunks = reinterpret_cast<const gpu::chunk_params*>(d);
  const auto* dict_dev = reinterpret_cast<const gpu::page_params*>(d + at_dict);
  const auto* data_dev = reinterpret_cast<const gpu::page_params*>(d + at_data);
  const auto* tiles_dev = reinterpret_cast<const int32_t*>(d + at_tiles);
  auto* states_dev = reinterpret_cast<gpu::page_state*>(d + at_states);
  if (!dict_pages.empty()) {
    dictionary_kernel<<<static_cast<unsigned>(dict_pages.size()), kPageThreads, 0, stream()>>>(chunks, dict_dev);
    TUG_CUDA_CHECK_LAUNCH();
  }
  if (!data_pages.empty()) {
    prepare_kernel<<<static_cast<unsigned>(data_pages.size()), kPageThreads, 0, stream()>>>(chunks, data_dev,
                                                                                            states_dev);
    TUG_CUDA_CHECK_LAUNCH();
    if (tile_start.back() > 0) {
      rows_kernel<<<static_cast<unsigned>(tile_start.back()), kPageThreads, 0, stream()>>>(
          chunks, data_dev, states_dev, tiles_dev, static_cast<int32_t>(data_pages.size()));
      TUG_CUDA_CHECK_LAUNCH();
    }
  }
  if (max_bytes > 0) {
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>((max_bytes + 255) / 256, 1024)),
                    static_cast<unsigned>(states.size()));
    validity_kernel<<<grid, 256, 0, stream()>>>(chunks);
    TUG_CUDA_CHECK_LAUNCH();
  }
  // 4. one wait: the pages' errors, nVCOMP's statuses and the valid counts
  const size_t n = states.size();
  buffer_ptr counts = dev_array<unsigned long long>(static_cast<int64_t>(n), mr);
  TUG_CUDA_TRY(cudaMemsetAsync(counts->data(), 0, sizeof(unsigned long long) * std::max<size_t>(n, 1), stream()));
  for (size_t i = 0; i < n; ++i)
    if (states[i].validity)
      cuda::count_set_bits_async(*states[i].validity, 0, states[i].plan.decoded_rows,
                                 counts->as<unsigned long long>() + i);
  std::vector<gpu::error_slot> errs(n);
  std::vector<unsigned long long> valid(n);
  // the copies into pageable memory below wait for the stream: the device's time counts as waiting
  lap(counters ? &counters->submit_ns : nullptr);
  if (n) {
    TUG_CUDA_TRY(cudaMemcpyAsync(errs.data(), errors->data(), n * sizeof(gpu::error_slot), cudaMemcpyDeviceToHost, stream()));
    TUG_CUDA_TRY(cudaMemcpyAsync(valid.data(), counts->data(), n * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                 stream()));
  }
#ifdef TUG_WITH_NVCOMP
  std::vector<std::vector<size_t>> actual(batches.size());
  std::vector<std::vector<nvcompStatus_t>> statuses(batches.size());
  for (size_t b = 0; b < batches.size(); ++b) {
    const size_t m = batches[b].entries.size();
    actual[b].resize(m);
    statuses[b].resize(m);
    const auto* base = batches[b].args->as<uint8_t>();
    TUG_CUDA_TRY(cudaMemcpyAsync(actual[b].data(), base + batches[b].actual_at, m * sizeof(size_t),
                                 cudaMemcpyDeviceToHost, stream()));
    TUG_CUDA_TRY(cudaMemcpyAsync(statuses[b].data(), base + batches[b].status_at, m * sizeof(nvcompStatus_t),
                                 cudaMemcpyDeviceToHost, stream()));
  }
#endif
  cuda::sync();
  lap(counters ? &counters->wait_ns : nullptr);
#ifdef TUG_WITH_NVCOMP
  for (size_t b = 0; b < batches.size(); ++b)
    for (size_t e = 0; e < batches[b].entries.size(); ++e) {
      const codec_entry& x = batches[b].entries[e];
      if (statuses[b][e] != nvcompSuccess || actual[b][e] != x.out_size) {
        const chunk_plan& p = states[x.chunk].plan;
        throw io_error(p.where + "page " + std::to_string(p.pages[x.page].index) + ": " + to_string(p.compression) +
                       " page does not decompress to its " + std::to_string(x.out_size) + " bytes (nvCOMP: " +
                       nvcomp_status_text(statuses[b][e]) + ", " + std::to_string(actual[b][e]) + " bytes)");
      }
    }
#endif
  for (size_t i = 0; i < n; ++i)
    if (errs[i].code) throw_page_error(states[i].plan, errs[i]);
  // 5. the columns: strings get their offsets and chars now that their pages are known good
  for (size_t i = 0; i < n; ++i) {
    chunk_state& s = states[i];
    const int64_t rows = s.plan.decoded_rows;
    const int64_t nulls = s.validity ? rows - static_cast<int64_t>(valid[i]) : 0;
    buffer_ptr validity = nulls > 0 ? s.validity : buffer_ptr{};
    column col;
    if (s.params.cv == gpu::conv::string) {
      int64_t total = 0;
      buffer_ptr offsets = cuda::scan_offsets(s.params.str_len, rows, &total, mr);
      buffer_ptr chars = make_buffer(static_cast<size_t>(std::max<int64_t>(total, 1)), mr);
      if (rows > 0) {
        chars_kernel<<<cuda::grid_for(rows), 256, 0, stream()>>>(s.params, offsets->as<int64_t>(), chars->as<char>(), rows);
        TUG_CUDA_CHECK_LAUNCH();
      }
      if (counters) counters->decoded_bytes += total + (rows + 1) * 8;
      col = column(s.plan.type, rows, std::move(chars), std::move(validity), nulls, std::move(offsets));
    } else {
      if (counters) counters->decoded_bytes += rows * s.params.out_width;
      col = column(s.plan.type, rows, s.out, std::move(validity), nulls);
    }
    std::vector<column> pieces;
    for (auto [at, len] : range_pieces(s.plan, ranges))
      pieces.push_back(col.slice(at, len));
    out[s.k] = pieces.size() == 1 ? pieces[0] : cuda::concatenate(pieces, mr);
    if (counters) ++counters->device_chunks;
  }
  lap(counters ? &counters->submit_ns : nullptr);
  cuda::sync();  // the chars are copied before the table is handed on
  lap(counters ? &counters->wait_ns : nullptr);
  if (!host_cols.empty()) {
    const table host = to_device(r.read_row_group_ranges(rg, host_cols, ranges, pinned), mr);
    for (size_t j = 0; j < host_cols.size(); ++j)
      out[host_at[j]] = host[j];
    if (counters) counters->host_chunks += static_cast<int64_t>(host_cols.size());
  }
  return table(std::move(out));
}

}  // namespace

table read_row_group_device(const file_reader& r, int rg, const std::vector<size_t>& columns,
                            const std::vector<row_range>& ranges, bool device_decompression,
                            memory_resource* device_mr, memory_resource* pinned_mr, device_read_counters* counters) {
  nvtx_range range{"parquet_gpu_read"};
  if (columns.empty() || r.row_group_num_rows(rg) == 0)
    return to_device(r.read_row_group_ranges(rg, columns, ranges, pinned_mr), device_mr);
  std::vector<chunk_state> states;  // buffers the queued work uses
  try {
    return decode(r, rg, columns, ranges, device_decompression, device_mr, pinned_mr, counters, states);
  } catch (...) {
    // queued copies and kernels still use the pinned and device buffers: wait before they are freed
    cudaStreamSynchronize(stream());
    throw;
  }
}

}  // namespace tug::io::parquet
