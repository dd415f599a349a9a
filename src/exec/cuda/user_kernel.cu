// The CUDA backend's map_partitions node (docs/user-kernels.md): a user kernel's device functor or its
// CUDA source (nvrtc.cpp) on each partition in device memory, on the thread's stream; a fault names
// the kernel and the partition.
#include "exec/cuda/common.cuh"
#include "exec/cuda/nvrtc.hpp"
#include "exec/cuda/ops.hpp"
#include "exec/user_kernel.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::cuda {

namespace {

/// Errors after which the CUDA context cannot be used again (the process must restart to use the GPU).
bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

class map_partitions_op final : public map_partitions_node {
 public:
  using map_partitions_node::map_partitions_node;

 protected:
  void run_kernel(kernel_partition& p, exec_context&) const override {
    if (_k->device_fn()) {
      _k->device_fn()(p);
    } else {
      const launch_config& cfg = _k->launch_cfg();
      int block = cfg.block > 0 ? cfg.block : 256;
      long long grid = cfg.grid > 0 ? cfg.grid : grid_for(p.rows(), block);
      launch_source_kernel(*_k, p, grid, block);
    }
    // a launch error of a device functor, then what the kernel did on the device
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(cuda::stream());
    if (e != cudaSuccess) {
      std::string m = p.where_text() + " failed on the device: " + cudaGetErrorName(e) + " (" +
                      cudaGetErrorString(e) + ")";
      if (sticky(e)) m += "; CUDA cannot recover from this error in this process: restart it to use the GPU again";
      throw compute_error(m);
    }
  }
  memory_resource* memory(exec_context& ctx) const override { return ctx.device_mr; }
  void* stream() const override { return cudaStreamPerThread; }
  void set_all_valid(buffer& b) const override {
    if (b.size() > 0) TUG_CUDA_TRY(cudaMemsetAsync(b.data(), 0xff, b.size(), cuda::stream()));
  }
  bool in_memory(const column& c) const override { return is_device(c); }
};

}  // namespace

physical_ptr make_map_partitions(physical_ptr child, std::shared_ptr<const user_kernel> k, schema out) {
  return cpu::finish(std::make_unique<map_partitions_op>(std::move(k)), backend::cuda, cpu::one(std::move(child)),
                     std::move(out));
}

}  // namespace tug::cuda
