// Operators whose CPU implementation has not landed yet. Each raises not_implemented_error naming
// itself; delete an entry when its implementation lands.
#include "tug/exec/physical.hpp"

namespace tug::exec {

physical_ptr make_aggregate(backend, physical_ptr, std::vector<size_t>, std::vector<agg_spec>, bool, schema) {
  throw not_implemented_error("group_by aggregation is not implemented yet");
}
physical_ptr make_window(backend, physical_ptr, std::vector<window_spec>, schema) {
  throw not_implemented_error("over() windows are not implemented yet");
}

}  // namespace tug::exec
