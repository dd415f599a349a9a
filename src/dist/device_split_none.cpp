// Without CUDA no table is in device memory, so the device split (device_split.cu) is never reached.
#ifndef TUG_WITH_CUDA
#include "device_split.hpp"

#include "tug/core/error.hpp"

namespace tug::dist {

rank_split split_on_device(const table&, const std::vector<size_t>&, int, memory_resource*) {
  throw not_implemented_error("splitting a device table among ranks: tug was built without CUDA");
}

std::vector<uint64_t> hash_rows_on_device(const table&, const std::vector<size_t>&) {
  throw not_implemented_error("hashing a device table: tug was built without CUDA");
}

}  // namespace tug::dist
#endif
