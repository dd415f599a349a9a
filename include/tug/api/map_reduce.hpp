#pragma once
/// MapRed-style hooks for porting CUDA SDK-style programs (seed 001, docs/user-kernels.md): a job
/// reads one partition into its own structures (`process_input`, the "bootstrapping" of the SDK
/// program) and then computes, emitting key/value results (`compute`, where the program launches its
/// CUDA kernel). tug runs a fresh job on every partition, in parallel, and returns the emitted pairs
/// as rows (key: str, value: str), so that a group_by on `key` is the reduce step.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tug/api/user_kernel.hpp"

namespace tug {

/// One map task: override both hooks. A job gets the partition's columns in host memory and does its
/// own device work (allocations, copies, launches), as the ported programs do.
class map_reduce_job {
 public:
  virtual ~map_reduce_job() = default;
  /// Reads the partition's input columns (user_kernel::inputs order) into the job's own structures.
  virtual void process_input(const kernel_partition& partition) = 0;
  /// Computes over what process_input read and emits results, one key/value pair a row.
  virtual void compute(std::map<std::string, std::string>& outputs) = 0;
};

/// A user kernel that runs `make()`'s job on each partition: process_input, then compute. Its output
/// columns are `key` and `value` (strings), one row per emitted pair; `inputs` are the columns the job
/// reads (empty: all). Give it to lazy_frame::map_partitions. An exception from a hook becomes a
/// compute_error naming the kernel and the partition.
user_kernel map_reduce_kernel(std::string name, std::function<std::unique_ptr<map_reduce_job>()> make,
                              std::vector<std::string> inputs = {});

}  // namespace tug
