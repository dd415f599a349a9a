// The CUDA device layer: device and pinned memory resources, host <-> device table copies, and bit
// counting on the device.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "exec/cuda/common.cuh"
#include "exec/cuda/table_ops.hpp"
#include "memory/block_cache.hpp"
#include "memory/concatenate_where.hpp"
#include "tug/core/table.hpp"
#include "tug/memory/device.hpp"

namespace tug {

namespace cuda {

void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  std::string m = std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " + call +
                  " at " + file + ":" + std::to_string(line);
  if (e == cudaErrorMemoryAllocation) throw memory_error(m);
  throw compute_error(m);
}

namespace {
std::atomic<int64_t> wait_count{0}, wait_ns{0};
thread_local int64_t thread_wait_count = 0, thread_wait_ns = 0;

/// Counts one host wait that began at `t0` (device_waits).
void waited_since(std::chrono::steady_clock::time_point t0) {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  wait_count.fetch_add(1, std::memory_order_relaxed);
  wait_ns.fetch_add(ns, std::memory_order_relaxed);
  ++thread_wait_count;
  thread_wait_ns += ns;
}
}  // namespace

void sync() {
  const auto t0 = std::chrono::steady_clock::now();
  TUG_CUDA_TRY(cudaStreamSynchronize(stream()));
  waited_since(t0);
}

bool is_device(const column& c) {
  return c.data_buffer() && c.data_buffer()->resource()->kind() == memory_kind::device;
}

dcol view_of(const column& c) {
  if (!is_device(c) && c.size() > 0) throw internal_error("cuda::view_of: the column is not in device memory");
  dcol v;
  v.data = c.data_buffer() ? c.data_buffer()->data() : nullptr;
  v.offsets = c.offsets_buffer() ? c.offsets_buffer()->as<int64_t>() : nullptr;
  v.validity = c.validity_buffer() ? c.validity_buffer()->as<uint8_t>() : nullptr;
  v.offset = c.offset();
  v.size = c.size();
  return v;
}

int grid_for(int64_t n, int block) {
  static int sms = [] {
    int dev = 0, v = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
    return v > 0 ? v : 1;
  }();
  int64_t blocks = (n + block - 1) / block;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, static_cast<int64_t>(sms) * 16));
}

column make_device_column(const data_type& type, int64_t n, buffer_ptr data, buffer_ptr validity, buffer_ptr offsets) {
  int64_t nulls = 0;
  if (validity) nulls = n - count_set_bits(*validity, 0, n);
  return column(type, n, std::move(data), nulls > 0 ? std::move(validity) : buffer_ptr{}, nulls, std::move(offsets), 0);
}

namespace {

__global__ void count_bits_kernel(const uint8_t* bm, int64_t first, int64_t end, unsigned long long* out) {
  // word w covers bits [64w, 64w+64); only bits in [first, end) count
  int64_t w0 = first >> 6, w1 = (end + 63) >> 6;
  // bytes past the bitmap's end are not read: the bitmap holds at least (end + 7) / 8 bytes
  const int64_t bitmap_bytes = (end + 7) / 8;
  const bool aligned = (reinterpret_cast<uintptr_t>(bm) & 7) == 0;
  unsigned long long c = 0;
  for (int64_t w = w0 + blockIdx.x * blockDim.x + threadIdx.x; w < w1; w += int64_t(gridDim.x) * blockDim.x) {
    uint64_t word = 0;
    int64_t byte0 = w * 8;
    int64_t bytes = bitmap_bytes - byte0;
    if (bytes >= 8 && aligned) {
      word = *reinterpret_cast<const uint64_t*>(bm + byte0);  // one load (little-endian: bit i of byte b is bit 8b+i)
    } else {
      if (bytes > 8) bytes = 8;
      for (int64_t b = 0; b < bytes; ++b)
        word |= uint64_t(bm[byte0 + b]) << (8 * b);
    }
    int64_t lo = w * 64, hi = lo + 64;
    if (first > lo) word &= ~0ull << (first - lo);
    if (end < hi) word &= (end - lo) >= 64 ? ~0ull : ((1ull << (end - lo)) - 1);
    c += __popcll(word);
  }
  // the warp's sum, then one atomic a warp (not one a thread: they serialize on `out`)
  for (int d = 16; d > 0; d >>= 1)
    c += __shfl_down_sync(0xffffffffu, c, d);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(out, c);
}

class device_memory_resource final : public memory_resource {
 public:
  explicit device_memory_resource(std::shared_ptr<memory_budget> budget) : _budget(std::move(budget)) {
    int dev = 0;
    TUG_CUDA_TRY(cudaGetDevice(&dev));
    TUG_CUDA_TRY(cudaDeviceGetDefaultMemPool(&_pool, dev));
    uint64_t keep = UINT64_MAX;  // freed memory stays in the pool for the next query
    TUG_CUDA_TRY(cudaMemPoolSetAttribute(_pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  void* allocate(size_t bytes) override {
    size_t rounded = std::max<size_t>(256, (bytes + 255) / 256 * 256);
    if (_budget) _budget->reserve(static_cast<int64_t>(rounded), "device allocation");
    void* p = nullptr;
    cudaError_t e = cudaMallocFromPoolAsync(&p, rounded, _pool, cuda::stream());
    // The device ran out within the budget (other processes, fragmentation, blocks freed on other
    // streams that this one cannot reuse yet): wait for the device, so that every queued free is done,
    // and retry; then spill device data held for later (the budget's reclaimer) and retry while
    // something moves.
    int64_t spilled = 0;
    for (int round = 0; e == cudaErrorMemoryAllocation && round < 64; ++round) {
      cudaGetLastError();
      if (round > 0) {
        const int64_t freed = _budget ? _budget->reclaim(static_cast<int64_t>(rounded)) : 0;
        if (freed <= 0) break;
        spilled += freed;
      }
      const cudaError_t synced = cudaDeviceSynchronize();
      if (synced != cudaSuccess) {
        if (_budget) _budget->release(static_cast<int64_t>(rounded));
        TUG_CUDA_TRY(synced);
      }
      e = cudaMallocFromPoolAsync(&p, rounded, _pool, cuda::stream());
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      if (_budget) _budget->release(static_cast<int64_t>(rounded));
      throw memory_error("device allocation of " + std::to_string(rounded) + " bytes failed (" + cudaGetErrorName(e) +
                         (spilled ? ", after spilling " + human_bytes(spilled) + " of device data" : std::string()) +
                         "): the GPU is out of memory; lower spill_device_limit or target_partition_size");
    }
    return p;
  }
  void deallocate(void* p, size_t bytes) noexcept override {
    size_t rounded = std::max<size_t>(256, (bytes + 255) / 256 * 256);
    cudaFreeAsync(p, cuda::stream());
    if (_budget) _budget->release(static_cast<int64_t>(rounded));
  }
  memory_kind kind() const override { return memory_kind::device; }
  const char* name() const override { return "device"; }

 private:
  std::shared_ptr<memory_budget> _budget;
  cudaMemPool_t _pool{};
};

// Pinned blocks kept for reuse across queries (cudaMallocHost costs far more than a copy of the
// same size): power-of-two size classes, at most 4 GiB idle.
block_cache& pinned_blocks() {
  // never destroyed: blocks may be freed at exit
  static auto* c = new block_cache(size_t(4) << 30, [](void* p) { cudaFreeHost(p); });
  return *c;
}

/// Pinned slots of a thread for the host's small copies to and from the device (expression programs,
/// key descriptors, counts read back). From or into pageable memory, the driver stages such a copy
/// itself, which costs more than the transfer; into pageable memory it also returns only when done.
/// A slot is reused once the copy that used it before is done (an event per slot).
class small_copies {
 public:
  static constexpr size_t kSlot = size_t(8) << 10;
  static constexpr int kSlots = 8;
  static small_copies& of_thread() {
    thread_local small_copies s;
    return s;
  }
  small_copies(const small_copies&) = delete;
  small_copies& operator=(const small_copies&) = delete;
  ~small_copies() {
    for (auto& e : _done)
      if (e) {
        cudaEventSynchronize(e);  // errors ignored: at process exit the runtime may be gone
        cudaEventDestroy(e);
      }
    if (_buf) pinned_blocks().give(_buf, kSlot * kSlots);
  }
  /// The next slot, free (nullptr when no pinned memory could be had: the caller copies directly).
  char* next(int& i) {
    if (!_buf && !_failed) {
      _buf = pinned_blocks().take(kSlot * kSlots);
      if (!_buf && cudaMallocHost(&_buf, kSlot * kSlots) != cudaSuccess) {
        cudaGetLastError();
        _buf = nullptr;
        _failed = true;
      }
    }
    if (!_buf) return nullptr;
    i = _at;
    _at = (_at + 1) % kSlots;
    if (_done[i]) {
      TUG_CUDA_TRY(cudaEventSynchronize(_done[i]));
    } else {
      TUG_CUDA_TRY(cudaEventCreateWithFlags(&_done[i], cudaEventDisableTiming));
    }
    return static_cast<char*>(_buf) + static_cast<size_t>(i) * kSlot;
  }
  /// Marks slot `i` in use by the copies queued so far on the thread's stream.
  void queued(int i) { TUG_CUDA_TRY(cudaEventRecord(_done[i], stream())); }

 private:
  small_copies() = default;
  void* _buf = nullptr;
  bool _failed = false;
  int _at = 0;
  cudaEvent_t _done[kSlots] = {};
};

}  // namespace

void download(void* host, const void* dev, size_t bytes) {
  // the wait and the copy are timed together as one wait
  const auto t0 = std::chrono::steady_clock::now();
  int i = 0;
  char* slot = bytes && bytes <= small_copies::kSlot ? small_copies::of_thread().next(i) : nullptr;
  if (bytes) TUG_CUDA_TRY(cudaMemcpyAsync(slot ? slot : host, dev, bytes, cudaMemcpyDeviceToHost, stream()));
  TUG_CUDA_TRY(cudaStreamSynchronize(stream()));
  if (slot) std::memcpy(host, slot, bytes);
  waited_since(t0);
}

void upload(void* dev, const void* host, size_t bytes) {
  if (!bytes) return;
  int i = 0;
  small_copies& s = small_copies::of_thread();
  char* slot = bytes <= small_copies::kSlot ? s.next(i) : nullptr;
  if (!slot) {
    TUG_CUDA_TRY(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream()));  // staged by the driver
    return;
  }
  std::memcpy(slot, host, bytes);
  TUG_CUDA_TRY(cudaMemcpyAsync(dev, slot, bytes, cudaMemcpyHostToDevice, stream()));
  s.queued(i);
}

namespace {

class pinned_memory_resource final : public memory_resource {
 public:
  explicit pinned_memory_resource(std::shared_ptr<memory_budget> budget) : _budget(std::move(budget)) {}
  void* allocate(size_t bytes) override {
    size_t cls = block_cache::pow2_class(bytes);
    if (_budget) _budget->reserve(static_cast<int64_t>(cls), "pinned host allocation");
    if (void* p = pinned_blocks().take(cls)) return p;
    void* p = nullptr;
    cudaError_t e = cudaMallocHost(&p, cls);
    if (e != cudaSuccess) {
      cudaGetLastError();
      if (_budget) _budget->release(static_cast<int64_t>(cls));
      throw memory_error("pinned host allocation of " + std::to_string(cls) + " bytes failed (" + cudaGetErrorName(e) +
                         "); set pinned_memory=false");
    }
    return p;
  }
  void deallocate(void* p, size_t bytes) noexcept override {
    size_t cls = block_cache::pow2_class(bytes);
    pinned_blocks().give(p, cls);
    if (_budget) _budget->release(static_cast<int64_t>(cls));
  }
  memory_kind kind() const override { return memory_kind::pinned_host; }
  const char* name() const override { return "pinned"; }

 private:
  std::shared_ptr<memory_budget> _budget;
};

bool is_on_device(const buffer_ptr& b) { return b && b->resource()->kind() == memory_kind::device; }

/// Two pinned chunks a thread for copies between pageable host memory and the device: the driver's
/// own pageable copy ran at about 5 GB/s (a seed query over in-memory frames was slower on the GPU
/// than on the CPU); through the chunks, the host memcpy of one overlaps the DMA of the other and every
/// thread copies in parallel. The chunks go back to the pinned block cache when the thread ends.
class staging_chunks {
 public:
  static constexpr size_t kChunk = size_t(4) << 20;
  static staging_chunks& of_thread() {
    thread_local staging_chunks s;
    return s;
  }
  staging_chunks(const staging_chunks&) = delete;
  staging_chunks& operator=(const staging_chunks&) = delete;
  ~staging_chunks() {
    for (int i = 0; i < 2; ++i) {
      // a copy cut short by an exception may still use the chunk (errors ignored: at process exit the
      // runtime may be gone)
      if (_done[i]) cudaEventSynchronize(_done[i]);
      if (_done[i]) cudaEventDestroy(_done[i]);
      if (_buf[i]) pinned_blocks().give(_buf[i], kChunk);
    }
  }
  /// Chunk `i` (0 or 1), once the copies that used it before are done.
  char* take(int i) {
    if (!_buf[i]) {
      _buf[i] = pinned_blocks().take(kChunk);
      if (!_buf[i] && cudaMallocHost(&_buf[i], kChunk) != cudaSuccess) {
        cudaGetLastError();
        _buf[i] = nullptr;
        throw memory_error("pinned staging chunk of " + std::to_string(kChunk) + " bytes: cudaMallocHost failed");
      }
      TUG_CUDA_TRY(cudaEventCreateWithFlags(&_done[i], cudaEventDisableTiming));
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      TUG_CUDA_TRY(cudaEventSynchronize(_done[i]));
      waited_since(t0);
    }
    return static_cast<char*>(_buf[i]);
  }
  /// Marks chunk `i` in use by the copies queued so far on the thread's stream.
  void queued(int i) { TUG_CUDA_TRY(cudaEventRecord(_done[i], cuda::stream())); }

 private:
  staging_chunks() = default;
  void* _buf[2] = {nullptr, nullptr};
  cudaEvent_t _done[2] = {nullptr, nullptr};
};

/// Queues a copy on the thread's stream; `pageable`: the host side is pageable memory, copied through
/// the thread's pinned chunks when it is larger than one (the call then returns when the host side
/// may be reused for a host -> device copy, or holds the data for a device -> host one).
void copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, bool pageable) {
  if (!bytes) return;
  if (!pageable || bytes <= staging_chunks::kChunk) {
    // into pageable memory the copy returns when it is done: a wait on the device, counted as one
    const bool waits = pageable && kind == cudaMemcpyDeviceToHost;
    const auto t0 = std::chrono::steady_clock::now();
    TUG_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, cuda::stream()));
    if (waits) waited_since(t0);
    return;
  }
  staging_chunks& s = staging_chunks::of_thread();
  const size_t k = staging_chunks::kChunk;
  auto* d = static_cast<char*>(dst);
  auto* from = static_cast<const char*>(src);
  if (kind == cudaMemcpyHostToDevice) {
    for (size_t off = 0, i = 0; off < bytes; off += k, ++i) {
      size_t len = std::min(k, bytes - off);
      int b = static_cast<int>(i & 1);
      char* chunk = s.take(b);
      std::memcpy(chunk, from + off, len);
      TUG_CUDA_TRY(cudaMemcpyAsync(d + off, chunk, len, kind, cuda::stream()));
      s.queued(b);
    }
    return;
  }
  // device -> host: chunk i lands while chunk i - 1 is copied out on the host
  size_t chunks = (bytes + k - 1) / k;
  for (size_t i = 0; i <= chunks; ++i) {
    if (i < chunks) {
      int b = static_cast<int>(i & 1);
      char* chunk = s.take(b);
      TUG_CUDA_TRY(cudaMemcpyAsync(chunk, from + i * k, std::min(k, bytes - i * k), kind, cuda::stream()));
      s.queued(b);
    }
    if (i > 0) {
      size_t j = i - 1;
      char* chunk = s.take(static_cast<int>(j & 1));  // waits for chunk j's copy
      std::memcpy(d + j * k, chunk, std::min(k, bytes - j * k));
    }
  }
}

bool pageable(const buffer_ptr& b) { return b->resource()->kind() == memory_kind::host; }

// Queues the copy of column `c` to the memory of `mr` (`to_dev`: host -> device, else device -> host);
// the caller waits for the stream before using the result (copy_table waits once per table, not once
// per column). The host side may be released when this returns: a pageable source is staged and a
// pageable destination filled before `copy` returns, and the caller holds `c`. Sliced columns keep
// their sub-byte offset so validity bits need no shifting; string offsets are rebased on the host side.
column copy_column(const column& c, memory_resource* mr, bool to_dev) {
  cudaMemcpyKind kind = to_dev ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  // the host side: the column's buffers (to the device) or those of `mr` (to the host)
  const bool mr_pageable = mr->kind() == memory_kind::host;
  auto host_pageable = [&](const buffer_ptr& src) { return to_dev ? pageable(src) : mr_pageable; };
  int64_t sub = c.offset() & 7, first = c.offset() - sub, n = c.size() + sub;
  buffer_ptr validity;
  if (c.validity_buffer()) {
    int64_t bytes = bits::bytes_for(n);
    validity = make_buffer(static_cast<size_t>(bytes), mr);
    copy(validity->data(), c.validity_buffer()->as<uint8_t>() + (first >> 3), static_cast<size_t>(bytes), kind,
         host_pageable(c.validity_buffer()));
  }
  if (c.type().id != type_id::string) {
    size_t w = static_cast<size_t>(size_of(c.type().id));
    buffer_ptr data = make_buffer(w * static_cast<size_t>(n), mr);
    copy(data->data(), c.data_buffer()->as<uint8_t>() + w * static_cast<size_t>(first), w * static_cast<size_t>(n),
         kind, host_pageable(c.data_buffer()));
    return column(c.type(), c.size(), std::move(data), std::move(validity), c.null_count(), {}, sub);
  }
  buffer_ptr offsets = make_buffer(sizeof(int64_t) * static_cast<size_t>(n + 1), mr);
  std::vector<int64_t> host_offsets(static_cast<size_t>(n + 1));
  const int64_t* src_off = c.offsets_buffer()->as<int64_t>() + first;
  if (to_dev)
    std::memcpy(host_offsets.data(), src_off, host_offsets.size() * sizeof(int64_t));
  else {
    copy(host_offsets.data(), src_off, host_offsets.size() * sizeof(int64_t), kind, true);
    cuda::sync();
  }
  int64_t base = host_offsets.front(), chars = host_offsets.back() - base;
  if (base != 0)
    for (auto& o : host_offsets)
      o -= base;
  if (to_dev)
    copy(offsets->data(), host_offsets.data(), host_offsets.size() * sizeof(int64_t), kind, true);
  else
    std::memcpy(offsets->data(), host_offsets.data(), host_offsets.size() * sizeof(int64_t));
  buffer_ptr data = make_buffer(static_cast<size_t>(chars), mr);
  // host_offsets is pageable: staged (to the device) or filled (to the host) when copy returns
  copy(data->data(), c.data_buffer()->as<char>() + base, static_cast<size_t>(chars), kind,
       host_pageable(c.data_buffer()));
  return column(c.type(), c.size(), std::move(data), std::move(validity), c.null_count(), std::move(offsets), sub);
}

table copy_table(const table& t, memory_resource* mr, bool to_dev) {
  std::vector<column> cols;
  cols.reserve(t.num_columns());
  try {
    for (auto& c : t.columns()) {
      bool there = is_on_device(c.data_buffer());
      if (there == to_dev)
        cols.push_back(c);
      else
        cols.push_back(copy_column(c, mr, to_dev));
    }
  } catch (...) {
    cudaStreamSynchronize(cuda::stream());  // the copies queued so far read `t`'s buffers
    throw;
  }
  cuda::sync();  // every column's copies at once
  if (cols.empty()) return table::empty_with_rows(t.num_rows());
  return table(std::move(cols));
}

}  // namespace
}  // namespace cuda

bool cuda_started() {
  // the CUDA runtime (linked statically) loads the driver library on its first call
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) return false;
  ::dlclose(driver);
  return true;
}

namespace {

/// The number of CUDA devices, asked in a forked child so that this process does not load the driver;
/// -1 when the child cannot be started or does not answer within 30 s (then this process asks itself).
int device_count_from_a_child() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    ::close(fds[0]);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;  // no driver or no device
    const ssize_t w = ::write(fds[1], &n, sizeof n);
    ::_exit(w == static_cast<ssize_t>(sizeof n) ? 0 : 1);
  }
  ::close(fds[1]);
  int n = -1;
  ssize_t got = 0;
  // at most 30 s: a child forked while another thread held a lock it needs (the loader's) could hang
  pollfd wait_for{fds[0], POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&wait_for, 1, 30000);
  } while (ready < 0 && errno == EINTR);
  if (ready > 0) {
    do {
      got = ::read(fds[0], &n, sizeof n);
    } while (got < 0 && errno == EINTR);
  } else {
    ::kill(pid, SIGKILL);
  }
  ::close(fds[0]);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return got == static_cast<ssize_t>(sizeof n) ? n : -1;
}

}  // namespace

bool gpu_available() {
  static const bool available = [] {
    int n = cuda_started() ? -1 : device_count_from_a_child();
    if (n < 0) {  // CUDA started already, or no child: ask here
      n = 0;
      if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        n = 0;
      }
    }
    return n > 0;
  }();
  return available;
}

device_info current_device_info() {
  if (!gpu_available()) throw not_implemented_error("no CUDA device is visible");
  int dev = 0;
  TUG_CUDA_TRY(cudaGetDevice(&dev));
  // cudaGetDeviceProperties takes milliseconds (it queries every attribute) and every GPU query asks
  // for the device's memory size: the properties are read once per device
  static std::mutex mu;
  static std::map<int, cudaDeviceProp> props;
  cudaDeviceProp p{};
  {
    std::lock_guard<std::mutex> g(mu);
    auto it = props.find(dev);
    if (it == props.end()) {
      TUG_CUDA_TRY(cudaGetDeviceProperties(&p, dev));
      props.emplace(dev, p);
    } else {
      p = it->second;
    }
  }
  device_info d;
  d.name = p.name;
  d.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  size_t free_b = 0, total_b = 0;
  TUG_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  d.free_memory = static_cast<int64_t>(free_b);
  d.sm_count = p.multiProcessorCount;
  d.compute_major = p.major;
  d.compute_minor = p.minor;
  return d;
}

std::shared_ptr<memory_resource> make_device_resource(std::shared_ptr<memory_budget> budget) {
  if (!gpu_available()) throw not_implemented_error("device memory: no CUDA device is visible");
  return std::make_shared<cuda::device_memory_resource>(std::move(budget));
}

std::shared_ptr<memory_resource> make_pinned_resource(std::shared_ptr<memory_budget> budget) {
  if (!gpu_available()) throw not_implemented_error("pinned memory: no CUDA device is visible");
  return std::make_shared<cuda::pinned_memory_resource>(std::move(budget));
}

table to_device(const table& t, memory_resource* device_mr) {
  cuda::nvtx_range r{"to_device"};
  return cuda::copy_table(t, device_mr, true);
}

table to_host(const table& t, memory_resource* host_mr) {
  if (!on_device(t)) return t;
  cuda::nvtx_range r{"to_host"};
  return cuda::copy_table(t, host_mr, false);
}

table concatenate_where_they_are(const std::vector<table>& parts, memory_resource* host_mr,
                                 memory_resource* device_mr) {
  if (!parts.empty() && on_device(parts[0])) return cuda::concatenate(parts, device_mr);
  return concatenate(parts, host_mr);
}

void cuda::count_set_bits_async(const buffer& bitmap, int64_t offset, int64_t n, unsigned long long* out) {
  if (n <= 0) return;
  int64_t words = (offset + n + 63) / 64 - offset / 64;
  count_bits_kernel<<<grid_for(words), 256, 0, stream()>>>(bitmap.as<uint8_t>(), offset, offset + n, out);
  TUG_CUDA_CHECK_LAUNCH();
}

device_wait_totals device_waits() {
  return {cuda::wait_count.load(std::memory_order_relaxed),
          static_cast<double>(cuda::wait_ns.load(std::memory_order_relaxed)) * 1e-9};
}

device_wait_totals device_waits_on_this_thread() {
  return {cuda::thread_wait_count, static_cast<double>(cuda::thread_wait_ns) * 1e-9};
}

int64_t count_set_bits(const buffer& bitmap, int64_t offset, int64_t n) {
  if (bitmap.resource()->kind() != memory_kind::device) return bits::count_set(bitmap.as<uint8_t>(), offset, n);
  if (n <= 0) return 0;
  cuda::dbuf<unsigned long long> out(1, bitmap.resource());
  TUG_CUDA_TRY(cudaMemsetAsync(out.p, 0, sizeof(unsigned long long), cuda::stream()));
  cuda::count_set_bits_async(bitmap, offset, n, out.p);
  unsigned long long h = 0;
  cuda::read_back(out.p, &h);
  return static_cast<int64_t>(h);
}

}  // namespace tug
