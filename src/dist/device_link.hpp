#pragma once
// Device tables between ranks without host memory: an exchange sends a device table's layout (wire.hpp,
// serialize_layout) over the communicator like any message, and its buffers straight from device to
// device over NCCL once the exchange's messages are all in (src/dist/device_link.cu; NCCL is opened at
// run time, src/runtime/cuda_libraries.cpp). The ranks share one NCCL communicator, set up by the first
// query that exchanges device tables and kept with the tug communicator. Off (device tables go through
// host memory, as before) when any rank cannot use it: tug built without CUDA or NCCL, libnccl not
// found, two ranks on one GPU (the in-process test ranks), or TUG_NCCL=0 in a rank's environment.
//
// NCCL matches one pair's sends and receives by their order: every rank moves an exchange's buffers in
// one group, in exchange order, which holds while a process runs one multi-rank query at a time (as
// tug_pdsh, the Python API and the `gpus` ranks do). Each group first swaps the (query, exchange) it is
// for with every peer, so that two ranks moving different exchanges fail with a distributed_error
// instead of mixing their buffers.
#include <memory>
#include <string>
#include <vector>

#include "tug/dist/distribute.hpp"
#include "wire.hpp"

namespace tug::dist {

/// The NCCL link of `q`'s communicator: set up the first time (a collective through exchange `tag`:
/// every rank calls it at the same exchange), then the same for every later query; null when the ranks
/// cannot all use NCCL (q.comm->device_why says why). @throws distributed_error when NCCL fails to set up.
std::shared_ptr<device_link> device_link_of(query_ranks& q, int tag);

/// Moves exchange `tag`'s device buffers: to each rank r, `sends[r]` in order; from each rank r into
/// `recvs[r]`, in order (the sizes on both ends agree: they come from one layout message), then rebases
/// the string offsets `rebases`. Waits until all is done. @throws distributed_error after q.timeout
/// seconds (0: none) without it (the link is aborted then and later queries go through host memory), or
/// when a peer is moving another exchange.
void move_on_device(device_link& link, query_ranks& q, int tag, const std::vector<std::vector<span>>& sends,
                    const std::vector<std::vector<landing>>& recvs, const std::vector<rebase>& rebases);

/// Waits for the device work queued by the calling thread (before another thread's NCCL group reads it).
void wait_for_this_thread();

/// read_fn for device memory (a copy to host memory that waits).
void read_device(void* dst, const void* src, size_t bytes);

}  // namespace tug::dist
