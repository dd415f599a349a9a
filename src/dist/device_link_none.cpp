// Without CUDA no table is in device memory, and without NCCL's header device tables go through host
// memory: no exchange moves device buffers then (device_link.cu).
#if !defined(TUG_WITH_CUDA) || !defined(TUG_WITH_NCCL)
#include "device_link.hpp"

#include "tug/core/error.hpp"

namespace tug::dist {

#ifdef TUG_WITH_CUDA
constexpr const char* missing = "tug was built without NCCL";
#else
constexpr const char* missing = "tug was built without CUDA";
#endif

class device_link {};

bool device_exchanges_possible() { return false; }

std::shared_ptr<device_link> device_link_of(query_ranks& q, int) {
  std::lock_guard<std::mutex> g(q.comm->device_mu);
  q.comm->device_checked = true;
  q.comm->device_why = missing;
  return nullptr;
}

void move_on_device(device_link&, query_ranks&, int, const std::vector<std::vector<span>>&,
                    const std::vector<std::vector<landing>>&, const std::vector<rebase>&) {
  throw internal_error(std::string("move_on_device: ") + missing);
}

#ifndef TUG_WITH_CUDA
void wait_for_this_thread() {}

void read_device(void*, const void*, size_t) { throw internal_error("read_device: tug was built without CUDA"); }
#endif

}  // namespace tug::dist
#endif
