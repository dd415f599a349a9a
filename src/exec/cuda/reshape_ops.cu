// CUDA slice and row index (concat is concat_node, the same on every backend). Slice moves no data:
// device partitions are sliced and passed on zero-copy (column::slice counts nulls on device bitmaps);
// row index fills one int64 column per partition with a kernel.
#include "exec/cuda/common.cuh"
#include "exec/cuda/ops.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::cuda {

namespace {

class slice_op final : public slice_node {
 public:
  using slice_node::slice_node;

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    nvtx_range r{"slice"};
    std::vector<table> out = window(parts);  // column::slice may count nulls on the device
    sync();
    return out;
  }
};

__global__ void sequence_kernel(int64_t start, int64_t n, int64_t* out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = start + i;
}

class row_index_op final : public row_index_node {
 public:
  using row_index_node::row_index_node;

 protected:
  column index_column(int64_t start, int64_t n, exec_context& ctx) const override {
    nvtx_range r{"row_index"};
    dbuf<int64_t> index(n, ctx.device_mr);
    if (n > 0) sequence_kernel<<<grid_for(n), 256, 0, stream()>>>(start, n, index.p);
    TUG_CUDA_CHECK_LAUNCH();
    column out = make_device_column(type_id::int64, n, index.buf);
    sync();
    return out;
  }
};

}  // namespace

physical_ptr make_slice(physical_ptr child, int64_t offset, int64_t length) {
  schema s = child->output_schema;
  return cpu::finish(std::make_unique<slice_op>(offset, length), backend::cuda, cpu::one(std::move(child)),
                     std::move(s));
}

physical_ptr make_concat(std::vector<physical_ptr> children, schema out) {
  return cpu::finish(std::make_unique<concat_node>(), backend::cuda, std::move(children), std::move(out));
}

physical_ptr make_row_index(physical_ptr child, int64_t offset, schema out) {
  return cpu::finish(std::make_unique<row_index_op>(offset), backend::cuda, cpu::one(std::move(child)), std::move(out));
}

}  // namespace tug::cuda
