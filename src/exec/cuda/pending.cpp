// CUDA factories not written yet. `unsupported` (support.cpp) keeps the lowering from ever calling
// these; each is deleted here when its operator lands.
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"

namespace tug::cuda {

namespace {
[[noreturn]] void pending(const char* op) {
  throw not_implemented_error(std::string("operator ") + op + " has no CUDA implementation yet");
}
}  // namespace

physical_ptr make_sort(physical_ptr, std::vector<size_t>, std::vector<bool>, std::vector<bool>, bool, int64_t) {
  pending("sort");
}
physical_ptr make_slice(physical_ptr, int64_t, int64_t) { pending("slice"); }
physical_ptr make_unique(physical_ptr, std::vector<size_t>, unique_keep, bool) { pending("unique"); }
physical_ptr make_concat(std::vector<physical_ptr>, schema) { pending("concat"); }
physical_ptr make_row_index(physical_ptr, int64_t, schema) { pending("row_index"); }

}  // namespace tug::cuda
#endif
