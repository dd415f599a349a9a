#pragma once
// What the map_partitions operators of both backends share (user kernels, docs/user-kernels.md): a
// per-partition node fused into the scan's partition hook. It picks the kernel's input columns,
// allocates the declared outputs, runs the backend's form of the kernel, checks what came back
// (types, lengths, memory) and assembles the kept columns and the outputs. A backend supplies the
// kernel call, the memory and the initial validity bitmaps.
#include <atomic>
#include <memory>
#include <string>

#include "tug/api/user_kernel.hpp"
#include "tug/exec/physical.hpp"

namespace tug {

class map_partitions_node : public physical_node {
 public:
  explicit map_partitions_node(std::shared_ptr<const user_kernel> k) : _k(std::move(k)) {}
  std::string name() const override { return "map_partitions"; }
  std::string detail() const override { return _k->describe(); }
  bool per_partition() const override { return true; }
  const user_kernel& kernel() const { return *_k; }

 protected:
  std::vector<table> run(exec_context& ctx) final;
  /// The kernel over partition `index` of the input (the number its messages give).
  table process_indexed(const table& t, size_t index, exec_context& ctx) final;
  /// Runs the kernel on `p` (inputs and arguments set, outputs allocated).
  virtual void run_kernel(kernel_partition& p, exec_context& ctx) const = 0;
  /// The memory the outputs are allocated from (host or device).
  virtual memory_resource* memory(exec_context& ctx) const = 0;
  /// The stream a partition's work runs on (nullptr on the CPU).
  virtual void* stream() const { return nullptr; }
  /// Sets every byte of `b` to 0xff (all rows valid).
  virtual void set_all_valid(buffer& b) const = 0;
  /// True when column `c` is in this backend's memory.
  virtual bool in_memory(const column& c) const = 0;
  std::shared_ptr<const user_kernel> _k;
};

}  // namespace tug
