#pragma once
// What the map_partitions operators of both backends share (user kernels, docs/user-kernels.md): a
// per-partition node fused into the scan's partition hook. It picks the kernel's input columns,
// allocates the declared outputs, runs the backend's form of the kernel, checks what came back
// (types, lengths, memory) and assembles the kept columns and the outputs. A backend supplies the
// kernel call, the memory and the initial validity bitmaps. A partition larger than one call may take
// (kernel_call_rows) is cut into zero-copy slices, one call each, handed on as pieces of the partition.
#include <atomic>
#include <memory>
#include <string>

#include "exec/pieces.hpp"
#include "tug/api/user_kernel.hpp"
#include "tug/exec/physical.hpp"

namespace tug {

/// The bytes one call of a user kernel may use on the tier `where` runs on: on the GPU the device
/// budget (spill_device_limit) over num_streams, the partitions the GPU works on at once; on the CPU
/// memory_limit over the pool's threads. 0 when unbounded. `how` (when given) gets the reason as
/// messages quote it: `memory_limit 65536 / 8 threads`.
int64_t kernel_call_budget(const exec_context& ctx, backend where, std::string* how = nullptr);

/// The bytes of `rows` rows of a call of `k`: its input and kept columns (`input`, `n` rows, whose
/// bytes are taken in proportion) and its declared outputs as tug allocates them (values and a
/// validity bitmap of 32-bit words; a string output counts its int64 offsets and a bit, its chars are
/// the kernel's own).
int64_t kernel_call_bytes(const user_kernel& k, const table& input, int64_t rows);

/// The most rows of `input` (the columns a call of `k` holds: its inputs and kept columns) one call
/// may take so that kernel_call_bytes fits `budget` (0: all of them).
/// @throws memory_error naming the kernel, the bytes of one row, the budget and `how` when even one
/// row does not fit.
int64_t kernel_call_rows(const user_kernel& k, const table& input, int64_t budget, const std::string& how);

class map_partitions_node : public physical_node, public exec::piece_producer {
 public:
  explicit map_partitions_node(std::shared_ptr<const user_kernel> k) : _k(std::move(k)) {}
  std::string name() const override { return "map_partitions"; }
  std::string detail() const override { return _k->describe(); }
  bool per_partition() const override { return true; }
  const user_kernel& kernel() const { return *_k; }

 protected:
  std::vector<table> run(exec_context& ctx) final;
  /// The kernel over partition `index` of the input (the number its messages give): the outputs of
  /// its calls (process_pieces), concatenated.
  table process_indexed(const table& t, size_t index, exec_context& ctx) final;
  /// The kernel over partition `index`, cut into zero-copy slices of at most kernel_call_rows rows,
  /// each call's output handed to `emit` in order.
  void process_pieces(const table& t, size_t index, exec_context& ctx,
                      const std::function<void(table, bool last)>& emit) final;
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

 private:
  /// One call of the kernel on rows [first, first + t.num_rows()) of partition `index` (`total` rows).
  table run_call(const table& t, size_t index, int64_t first, int64_t total, exec_context& ctx);
};

}  // namespace tug
