#pragma once
/// The CUDA device seen from host code (no CUDA headers): whether one is visible, its memory
/// resources, and copies of tables between host and device memory. Built without CUDA, every
/// function here reports that no device exists.
#include <cstdint>
#include <memory>
#include <string>

#include "tug/memory/memory_resource.hpp"

namespace tug {

class table;

/// True when tug was built with CUDA and a CUDA device is visible. Asked in a short-lived child process
/// while this one has not started CUDA, so that asking does not start it (engine_options::gpus forks
/// ranks, which a process that started CUDA cannot).
bool gpu_available();
/// True once CUDA's driver is loaded in this process (a query ran on the GPU, or another library such
/// as CuPy used CUDA): a process forked after that cannot use CUDA.
bool cuda_started();

/// The current CUDA device.
struct device_info {
  std::string name;
  int64_t total_memory = 0;  ///< bytes
  int64_t free_memory = 0;   ///< bytes, when asked
  int sm_count = 0;
  int compute_major = 0, compute_minor = 0;
};
/// @throws not_implemented_error when no device is visible.
device_info current_device_info();

/// Bytes of device memory a query may use: `spec` is a percentage of the device's memory ("80%")
/// or a byte count ("8GiB", "500MB", "123456"). @throws invalid_argument_error naming the option.
int64_t parse_device_limit(const std::string& spec, int64_t total_memory);

/// Stream-ordered device memory (a cudaMallocAsync pool on the calling thread's default stream),
/// counted against `budget`. @throws not_implemented_error without CUDA.
std::shared_ptr<memory_resource> make_device_resource(std::shared_ptr<memory_budget> budget);
/// Page-locked host memory for staging copies. @throws not_implemented_error without CUDA.
std::shared_ptr<memory_resource> make_pinned_resource(std::shared_ptr<memory_budget> budget = nullptr);

/// True when any column of `t` lives in device memory.
bool on_device(const table& t);
/// A copy of `t` in device memory (columns already there are shared, not copied). Waits for the copy.
table to_device(const table& t, memory_resource* device_mr);
/// A copy of `t` in host memory (columns already there are shared, not copied). Waits for the copy.
table to_host(const table& t, memory_resource* host_mr);

/// Host waits on the device since the process started, summed over all threads: stream
/// synchronizations (a result read back, a copy finished) and waits for a staging chunk. The
/// execution statistics report them per operator. Zero without CUDA.
struct device_wait_totals {
  int64_t waits = 0;
  double seconds = 0;
};
device_wait_totals device_waits();
/// The same, counted on the calling thread only (for work that runs on several threads at once).
device_wait_totals device_waits_on_this_thread();

/// Number of set bits in [offset, offset + n) of a validity bitmap in host or device memory.
int64_t count_set_bits(const buffer& bitmap, int64_t offset, int64_t n);

}  // namespace tug
