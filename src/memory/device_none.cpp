// Without CUDA: no device is ever visible, and nothing can be copied to one.
#ifndef TUG_WITH_CUDA
#include "tug/core/column.hpp"
#include "tug/core/error.hpp"
#include "tug/core/table.hpp"
#include "tug/memory/device.hpp"
#include "memory/concatenate_where.hpp"

namespace tug {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw not_implemented_error(std::string(what) + ": tug was built without CUDA (configure with -DTUG_WITH_CUDA=ON)");
}
}  // namespace

bool gpu_available() { return false; }
bool cuda_started() { return false; }
device_info current_device_info() { no_cuda("current_device_info"); }
std::shared_ptr<memory_resource> make_device_resource(std::shared_ptr<memory_budget>) { no_cuda("device memory"); }
std::shared_ptr<memory_resource> make_pinned_resource(std::shared_ptr<memory_budget>) { no_cuda("pinned memory"); }
table to_device(const table&, memory_resource*) { no_cuda("to_device"); }
table to_host(const table& t, memory_resource*) { return t; }
table concatenate_where_they_are(const std::vector<table>& parts, memory_resource* host_mr, memory_resource*) {
  return concatenate(parts, host_mr);
}
device_wait_totals device_waits() { return {}; }
device_wait_totals device_waits_on_this_thread() { return {}; }
int64_t count_set_bits(const buffer& bitmap, int64_t offset, int64_t n) {
  return bits::count_set(bitmap.as<uint8_t>(), offset, n);
}

}  // namespace tug
#endif
