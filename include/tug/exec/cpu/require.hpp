#pragma once
/// Helpers shared by the CPU operator factories.
#include <memory>
#include <string>
#include <vector>

#include "tug/core/error.hpp"
#include "tug/exec/physical.hpp"

namespace tug::cpu {

/// A CUDA request for an operator that has no CUDA implementation yet raises not_implemented_error,
/// which the lowering turns into a fallback (see fallback_mode).
inline void require_cpu(backend b, const char* op) {
  if (b != backend::cpu)
    throw not_implemented_error(std::string("operator ") + op + " has no " + to_string(b) + " implementation");
}

/// Starts a factory: a CUDA request goes to the CUDA factory `call` (src/exec/cuda/ops.hpp).
#ifdef TUG_WITH_CUDA
#define TUG_DISPATCH_CUDA(b, call) \
  if ((b) == ::tug::backend::cuda) return ::tug::cuda::call
#else
#define TUG_DISPATCH_CUDA(b, call) ::tug::cpu::require_cpu(b, #call)
#endif

/// Sets backend, children and output schema of a new operator.
template <typename Op>
physical_ptr finish(std::unique_ptr<Op> op, backend b, std::vector<physical_ptr> children, schema out) {
  op->where = b;
  op->children = std::move(children);
  op->output_schema = std::move(out);
  return op;
}

inline std::vector<physical_ptr> one(physical_ptr c) {
  std::vector<physical_ptr> v;
  v.push_back(std::move(c));
  return v;
}

}  // namespace tug::cpu
