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

physical_ptr make_aggregate(physical_ptr, std::vector<size_t>, std::vector<agg_spec>, bool, schema) {
  pending("aggregate");
}
physical_ptr make_window(physical_ptr, std::vector<window_spec>, schema) { pending("window"); }
physical_ptr make_join(physical_ptr, physical_ptr, join_spec, schema) { pending("join"); }

}  // namespace tug::cuda
#endif

// The expression evaluator (expr/ files) replaces these.
#ifdef TUG_WITH_CUDA
#include "exec/cuda/evaluate.hpp"
namespace tug::cuda {
std::string expr_unsupported(const expr&, const schema&) { return "the CUDA expression evaluator is not built yet"; }
std::vector<column> evaluate(const std::vector<expr>&, const table&, const schema&, memory_resource*) {
  throw not_implemented_error("the CUDA expression evaluator is not built yet");
}
}  // namespace tug::cuda
#endif
