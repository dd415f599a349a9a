// Device buffers between ranks over NCCL (device_link.hpp).
#include "device_link.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "exec/cuda/common.cuh"
#include "tug/core/error.hpp"
#include "tug/runtime/cuda_libraries.hpp"
#include "tug/runtime/query_control.hpp"

#ifdef TUG_WITH_NCCL
#include <nccl.h>
#endif

namespace tug::dist {

#ifdef TUG_WITH_NCCL

class device_link {
 public:
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int64_t* ids = nullptr;  ///< device scratch: 2 int64 (query, exchange) a rank to send, then one a rank received
  int ranks = 0;
  std::mutex mu;      ///< one group at a time
  bool dead = false;  ///< aborted after a failed or timed-out transfer
  // never destroyed: a communicator lives until the process ends, and NCCL's teardown at exit may wait on
  // ranks that are gone
};

namespace {

std::string nccl_text(ncclResult_t r) { return std::string(ncclGetErrorString(r)) + " (NCCL error " + std::to_string(r) + ")"; }

void nccl_try(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess && r != ncclInProgress) throw distributed_error(what + ": " + nccl_text(r));
}

constexpr size_t bus_id_bytes = 32;

/// What a rank tells every other one when the link is set up.
struct setup_message {
  bool can = false;
  char bus[bus_id_bytes] = {};
  std::string why;
  ncclUniqueId id{};
  bool has_id = false;

  message bytes() const {
    message m(1 + bus_id_bytes + 4 + why.size() + (has_id ? sizeof(ncclUniqueId) : 0));
    m[0] = can ? 1 : 0;
    std::memcpy(m.data() + 1, bus, bus_id_bytes);
    const auto n = static_cast<uint32_t>(why.size());
    std::memcpy(m.data() + 1 + bus_id_bytes, &n, 4);
    std::memcpy(m.data() + 5 + bus_id_bytes, why.data(), why.size());
    if (has_id) std::memcpy(m.data() + 5 + bus_id_bytes + why.size(), &id, sizeof(id));
    return m;
  }
  static setup_message of(const message& m) {
    setup_message s;
    if (m.size() < 5 + bus_id_bytes) throw internal_error("device link: a truncated setup message");
    s.can = m[0] != 0;
    std::memcpy(s.bus, m.data() + 1, bus_id_bytes);
    uint32_t n = 0;
    std::memcpy(&n, m.data() + 1 + bus_id_bytes, 4);
    if (m.size() < 5 + bus_id_bytes + n) throw internal_error("device link: a truncated setup message");
    s.why.assign(reinterpret_cast<const char*>(m.data()) + 5 + bus_id_bytes, n);
    const size_t at = 5 + bus_id_bytes + n;
    if (m.size() == at + sizeof(ncclUniqueId)) {
      std::memcpy(&s.id, m.data() + at, sizeof(ncclUniqueId));
      s.has_id = true;
    }
    return s;
  }
};

bool turned_off() {
  const char* env = std::getenv("TUG_NCCL");
  return env && std::string(env) == "0";
}

/// Whether this rank can use NCCL, and why not.
setup_message this_rank(int rank) {
  setup_message s;
  if (turned_off()) {
    s.why = "TUG_NCCL=0";
    return s;
  }
  std::string why;
  if (!nccl_available(&why)) {
    s.why = why;
    return s;
  }
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(s.bus, static_cast<int>(bus_id_bytes) - 1, dev) != cudaSuccess) {
    cudaGetLastError();
    s.why = "no CUDA device";
    return s;
  }
  s.can = true;
  if (rank == 0) {
    nccl_try(ncclGetUniqueId(&s.id), "ncclGetUniqueId");
    s.has_id = true;
  }
  return s;
}

/// Waits for the link's stream: @throws distributed_error when NCCL reports an error or after the
/// query's timeout (the link is aborted then).
void wait(device_link& l, query_ranks& q, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  int64_t pause_us = 5;
  for (;;) {
    const cudaError_t e = cudaStreamQuery(l.stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) {
      cudaGetLastError();
      l.dead = true;
      throw compute_error(what + ": " + cudaGetErrorString(e));
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(l.comm, &async);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool late = q.timeout > 0 && s > q.timeout;
    if ((async != ncclSuccess && async != ncclInProgress) || late) {
      l.dead = true;
      ncclCommAbort(l.comm);
      throw distributed_error(what + (late ? " did not complete within collective_timeout (" + std::to_string(q.timeout) + " s)"
                                           : ": " + nccl_text(async)) +
                              "; rank " + std::to_string(q.comm->rank()) + " of " + std::to_string(q.comm->size()) +
                              ". Device exchanges go through host memory from now on in this process");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    pause_us = std::min<int64_t>(pause_us * 2, 1000);
  }
}

__global__ void rebase_offsets(int64_t* o, int64_t n, int64_t base) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    o[i] -= base;
}

bool moves_bytes(const auto& spans) {
  for (auto& s : spans)
    if (s.bytes > 0) return true;
  return false;
}

}  // namespace

bool device_exchanges_possible() { return !turned_off() && nccl_available(); }

std::shared_ptr<device_link> device_link_of(query_ranks& q, int tag) {
  communicator& c = *q.comm;
  std::lock_guard<std::mutex> g(c.device_mu);
  if (c.device_checked) return c.device && !c.device->dead ? c.device : nullptr;
  const int me = c.rank(), size = c.size();
  const setup_message mine = this_rank(me);
  auto ex = c.open(q.query, tag, q.timeout);
  for (int r = 0; r < size; ++r)
    if (r != me) ex->send(r, mine.bytes());
  ex->finish();
  std::vector<setup_message> all(static_cast<size_t>(size));
  all[static_cast<size_t>(me)] = mine;
  while (auto got = ex->receive()) all[static_cast<size_t>(got->first)] = setup_message::of(got->second);
  c.device_checked = true;
  for (int r = 0; r < size; ++r) {
    const setup_message& s = all[static_cast<size_t>(r)];
    if (!s.can) {
      c.device_why = "rank " + std::to_string(r) + ": " + s.why;
      return nullptr;
    }
    for (int o = 0; o < r; ++o)
      if (std::strncmp(s.bus, all[static_cast<size_t>(o)].bus, bus_id_bytes) == 0) {
        c.device_why = "ranks " + std::to_string(o) + " and " + std::to_string(r) + " share the GPU " + s.bus;
        return nullptr;
      }
  }
  if (!all[0].has_id) throw internal_error("device link: rank 0 sent no NCCL id");
  auto l = std::make_shared<device_link>();
  l->ranks = size;
  nccl_try(ncclCommInitRank(&l->comm, size, all[0].id, me), "ncclCommInitRank (rank " + std::to_string(me) + ")");
  TUG_CUDA_TRY(cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking));
  TUG_CUDA_TRY(cudaMalloc(&l->ids, sizeof(int64_t) * 4 * static_cast<size_t>(size)));
  // connect every pair now, while every rank is known to be here: a byte each way
  nccl_try(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < size; ++r) {
    if (r == me) continue;
    nccl_try(ncclSend(l->ids, 1, ncclUint8, r, l->comm, l->stream), "ncclSend");
    nccl_try(ncclRecv(l->ids + 2 * size + r, 1, ncclUint8, r, l->comm, l->stream), "ncclRecv");
  }
  nccl_try(ncclGroupEnd(), "ncclGroupEnd");
  wait(*l, q, "connecting the ranks' GPUs over NCCL");
  c.device = l;
  c.device_why.clear();
  return l;
}

void move_on_device(device_link& l, query_ranks& q, int tag, const std::vector<std::vector<span>>& sends,
                    const std::vector<std::vector<landing>>& recvs, const std::vector<rebase>& rebases) {
  std::lock_guard<std::mutex> g(l.mu);
  cuda::nvtx_range range{"exchange over NCCL"};
  const int me = q.comm->rank(), size = q.comm->size();
  if (l.dead) throw distributed_error("the NCCL link between the ranks' GPUs was aborted by an earlier failure");
  const std::string what = "exchange " + std::to_string(tag) + " of query " + std::to_string(q.query) + " over NCCL";
  // the receiving buffers were allocated in the order of this thread's stream
  cudaEvent_t ready;
  TUG_CUDA_TRY(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  TUG_CUDA_TRY(cudaEventRecord(ready, cuda::stream()));
  TUG_CUDA_TRY(cudaStreamWaitEvent(l.stream, ready, 0));
  cudaEventDestroy(ready);
  // first, with every peer this rank moves bytes with, which (query, exchange) each is moving
  std::vector<int> peers;
  for (int r = 0; r < size; ++r)
    if (r != me && (moves_bytes(sends[static_cast<size_t>(r)]) || moves_bytes(recvs[static_cast<size_t>(r)]))) peers.push_back(r);
  if (peers.empty()) return;
  const int64_t id[2] = {q.query, tag};
  TUG_CUDA_TRY(cudaMemcpyAsync(l.ids, id, sizeof(id), cudaMemcpyHostToDevice, l.stream));
  nccl_try(ncclGroupStart(), what);
  for (int r : peers) {
    nccl_try(ncclSend(l.ids, 16, ncclUint8, r, l.comm, l.stream), what);
    nccl_try(ncclRecv(l.ids + 2 + 2 * r, 16, ncclUint8, r, l.comm, l.stream), what);
  }
  nccl_try(ncclGroupEnd(), what);
  std::vector<int64_t> theirs(2 * static_cast<size_t>(size));
  TUG_CUDA_TRY(cudaMemcpyAsync(theirs.data(), l.ids + 2, sizeof(int64_t) * 2 * static_cast<size_t>(size),
                               cudaMemcpyDeviceToHost, l.stream));
  wait(l, q, what);
  for (int r : peers)
    if (theirs[2 * static_cast<size_t>(r)] != id[0] || theirs[2 * static_cast<size_t>(r) + 1] != id[1]) {
      l.dead = true;
      ncclCommAbort(l.comm);
      throw distributed_error(what + ": rank " + std::to_string(r) + " is moving exchange " +
                              std::to_string(theirs[2 * static_cast<size_t>(r) + 1]) + " of query " +
                              std::to_string(theirs[2 * static_cast<size_t>(r)]) +
                              " (ranks ran multi-rank queries concurrently in different orders)");
    }
  nccl_try(ncclGroupStart(), what);
  for (int r : peers) {
    for (const span& s : sends[static_cast<size_t>(r)])
      if (s.bytes > 0) nccl_try(ncclSend(s.p, s.bytes, ncclUint8, r, l.comm, l.stream), what);
    for (const landing& s : recvs[static_cast<size_t>(r)])
      if (s.bytes > 0) nccl_try(ncclRecv(s.p, s.bytes, ncclUint8, r, l.comm, l.stream), what);
  }
  nccl_try(ncclGroupEnd(), what);
  for (const rebase& b : rebases) {
    rebase_offsets<<<cuda::grid_for(b.n), 256, 0, l.stream>>>(b.p, b.n, b.base);
    TUG_CUDA_CHECK_LAUNCH();
  }
  wait(l, q, what);
}

#endif

void wait_for_this_thread() { TUG_CUDA_TRY(cudaStreamSynchronize(cuda::stream())); }

void read_device(void* dst, const void* src, size_t bytes) {
  TUG_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cuda::stream()));
  TUG_CUDA_TRY(cudaStreamSynchronize(cuda::stream()));
}

}  // namespace tug::dist
