// CUDA slice, concat and row index. Slice and concat move no data: device partitions are sliced and
// passed on zero-copy (column::slice counts nulls on device bitmaps); row index fills one int64 column
// per partition with a kernel.
#include <algorithm>

#include "exec/cuda/common.cuh"
#include "exec/cuda/ops.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::cuda {

namespace {

class slice_op final : public physical_node {
 public:
  slice_op(int64_t offset, int64_t length) : _offset(offset), _length(length) {}
  std::string name() const override { return "slice"; }
  std::string detail() const override {
    return "offset " + std::to_string(_offset) + " len " + (_length < 0 ? "all" : std::to_string(_length));
  }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    nvtx_range r{"slice"};
    int64_t n = total_rows(parts);
    // Polars semantics, as the CPU slice: a negative offset counts from the end, the window is clipped
    int64_t start = _offset < 0 ? n + _offset : _offset;
    int64_t end = _length < 0 ? n : start + _length;
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, start, n);
    std::vector<table> out;
    int64_t pos = 0;
    for (auto& p : parts) {
      int64_t a = std::max(start, pos), b = std::min(end, pos + p.num_rows());
      if (a < b) out.push_back(p.slice(a - pos, b - a));
      pos += p.num_rows();
    }
    if (out.empty() && !parts.empty()) out.push_back(parts[0].slice(0, 0));
    sync();
    return out;
  }

 private:
  int64_t _offset, _length;
};

class concat_op final : public physical_node {
 public:
  std::string name() const override { return "concat"; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    std::vector<table> out;
    for (size_t i = 0; i < children.size(); ++i)
      for (auto& p : input(i, ctx))
        out.push_back(std::move(p));
    return out;
  }
};

__global__ void sequence_kernel(int64_t start, int64_t n, int64_t* out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = start + i;
}

class row_index_op final : public physical_node {
 public:
  explicit row_index_op(int64_t offset) : _offset(offset) {}
  std::string name() const override { return "row_index"; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    auto parts = input(0, ctx);
    std::vector<int64_t> starts(parts.size());
    int64_t pos = _offset;
    for (size_t i = 0; i < parts.size(); ++i) {
      starts[i] = pos;
      pos += parts[i].num_rows();
    }
    std::vector<table> out(parts.size());
    ctx.pool.parallel_for(static_cast<int64_t>(parts.size()), [&](int64_t k) {
      nvtx_range r{"row_index"};
      auto i = static_cast<size_t>(k);
      const table& t = parts[i];
      int64_t n = t.num_rows();
      dbuf<int64_t> index(n, ctx.device_mr);
      if (n > 0) sequence_kernel<<<grid_for(n), 256, 0, stream()>>>(starts[i], n, index.p);
      TUG_CUDA_CHECK_LAUNCH();
      std::vector<column> cols{make_device_column(type_id::int64, n, index.buf)};
      for (auto& c : t.columns())
        cols.push_back(c);
      out[i] = table(std::move(cols));
      sync();
    });
    return out;
  }

 private:
  int64_t _offset;
};

}  // namespace

physical_ptr make_slice(physical_ptr child, int64_t offset, int64_t length) {
  schema s = child->output_schema;
  return cpu::finish(std::make_unique<slice_op>(offset, length), backend::cuda, cpu::one(std::move(child)),
                     std::move(s));
}

physical_ptr make_concat(std::vector<physical_ptr> children, schema out) {
  return cpu::finish(std::make_unique<concat_op>(), backend::cuda, std::move(children), std::move(out));
}

physical_ptr make_row_index(physical_ptr child, int64_t offset, schema out) {
  return cpu::finish(std::make_unique<row_index_op>(offset), backend::cuda, cpu::one(std::move(child)), std::move(out));
}

}  // namespace tug::cuda
