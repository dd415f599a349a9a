// The CUDA backend's map_partitions node (docs/user-kernels.md): a user kernel's device functor or its
// CUDA source (nvrtc.cpp) on each partition in device memory, on the thread's stream; a fault names
// the kernel and the partition.
#include "exec/cuda/common.cuh"
#include "exec/cuda/nvrtc.hpp"
#include "exec/cuda/ops.hpp"
#include "exec/cuda/table_ops.hpp"
#include "exec/user_kernel.hpp"
#include "tug/exec/cpu/require.hpp"
#include "tug/memory/device.hpp"

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
  void run_kernel(kernel_partition& p, exec_context& ctx) const override {
    if (_k->device_fn()) {
      _k->device_fn()(p);
      return check(p);
    }
    const launch_config& cfg = _k->launch_cfg();
    int block = cfg.block > 0 ? cfg.block : 256;
    long long grid = cfg.grid > 0 ? cfg.grid : grid_for(p.rows(), block);
    // string outputs (tug::out_strings): a launch that gives the lengths, then one that writes the bytes
    std::vector<size_t> strings;
    for (size_t i = 0; i < p.slots().size(); ++i)
      if (p.slots()[i].view.type.id == type_id::string) strings.push_back(i);
    const int64_t rows = p.rows();
    memory_resource* mr = memory(ctx);
    std::vector<buffer_ptr> lengths;
    for (size_t i : strings) {
      kernel_partition::output_slot& s = p.slots()[i];
      dbuf<int64_t> len(rows + 1, mr);
      TUG_CUDA_TRY(cudaMemsetAsync(len.p, 0, sizeof(int64_t) * static_cast<size_t>(rows + 1), cuda::stream()));
      s.validity = make_bitmap(rows, mr).buf;
      set_all_valid(*s.validity);
      s.view = {s.view.type, rows, nullptr, s.validity->as<unsigned int>(), reinterpret_cast<long long*>(len.p)};
      lengths.push_back(len.buf);
    }
    launch_source_kernel(*_k, p, grid, block);
    check(p);
    if (strings.empty()) return;
    std::vector<buffer_ptr> offsets(strings.size());
    for (size_t j = 0; j < strings.size(); ++j) {
      kernel_partition::output_slot& s = p.slots()[strings[j]];
      int64_t total = 0;
      offsets[j] = scan_offsets(lengths[j]->as<int64_t>(), rows, &total, mr);
      lengths[j].reset();
      s.data = make_buffer(static_cast<size_t>(total), mr);
      if (total > 0) TUG_CUDA_TRY(cudaMemsetAsync(s.data->data(), 0, static_cast<size_t>(total), cuda::stream()));
      // `chars` is never null in the writing launch (sizing() tells the launches apart): with no byte to
      // write, it points at the offsets, where no row may write (every row's room is 0)
      s.view.data = total > 0 ? s.data->data() : offsets[j]->data();
      s.view.offsets = reinterpret_cast<long long*>(offsets[j]->as<int64_t>());
    }
    launch_source_kernel(*_k, p, grid, block);
    check(p);
    for (size_t j = 0; j < strings.size(); ++j) {
      kernel_partition::output_slot& s = p.slots()[strings[j]];
      const int64_t valid = count_set_bits(*s.validity, 0, rows);
      p.set_output(strings[j], column(s.view.type, rows, s.data, valid == rows ? buffer_ptr{} : s.validity,
                                      rows - valid, offsets[j]));
    }
  }

  /// A launch error of a device functor, then what the kernel did on the device.
  static void check(const kernel_partition& p) {
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
