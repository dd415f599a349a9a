// Operators whose CPU implementation has not landed yet. Each raises not_implemented_error naming
// itself; delete an entry when its implementation lands.
#include "tug/exec/physical.hpp"

namespace tug::exec {

physical_ptr make_join(backend, physical_ptr, physical_ptr, join_spec, schema) {
  throw not_implemented_error("join is not implemented yet");
}
physical_ptr make_sort(backend, physical_ptr, std::vector<size_t>, std::vector<bool>, std::vector<bool>, bool,
                       int64_t) {
  throw not_implemented_error("sort is not implemented yet");
}
physical_ptr make_unique(backend, physical_ptr, std::vector<size_t>, unique_keep, bool) {
  throw not_implemented_error("unique is not implemented yet");
}

}  // namespace tug::exec
