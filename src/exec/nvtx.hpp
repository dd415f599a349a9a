#pragma once
// NVTX ranges for Nsight Systems (host-only header): physical_node::execute opens one per operator
// execution ("name@backend", nested as the plan is), and CUDA operators open one around their own
// device work. Without CUDA the range is a no-op.
#include <string>

#ifdef TUG_WITH_CUDA
#include <nvtx3/nvtx3.hpp>
#endif

namespace tug {

#ifdef TUG_WITH_CUDA
/// tug's NVTX domain: Nsight Systems groups its ranges under "tug".
struct nvtx_domain {
  static constexpr char const* name{"tug"};
};
/// A scoped NVTX range in tug's domain.
using nvtx_range = nvtx3::scoped_range_in<nvtx_domain>;
#else
/// No NVTX without CUDA.
struct nvtx_range {
  explicit nvtx_range(const char*) {}
  explicit nvtx_range(const std::string&) {}
};
#endif

}  // namespace tug
