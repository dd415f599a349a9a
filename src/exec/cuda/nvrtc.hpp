#pragma once
// CUDA source kernels (nvrtc.cpp): compiled with NVRTC, cached on disk and in the process, launched
// through the CUDA driver API (its entry points come from the runtime, so libtug links no libcuda).
#include <optional>
#include <string_view>
#include <vector>

#include "tug/api/user_kernel.hpp"

namespace tug::cuda {

/// The bytes each parameter of the entry point `entry` takes, in order, read from the cubin's
/// .nv.info.<entry> section (the EIATTR_KPARAM_INFO records the driver itself reads); nothing when the
/// cubin has no such section or its records do not add up. Needs no GPU and makes no driver call.
std::optional<std::vector<size_t>> cubin_param_sizes(std::string_view cubin, const std::string& entry);

/// Launches the CUDA source of `k` over partition `p` on p.stream() with `grid` blocks of `block`
/// threads (nothing for 0 rows); does not wait for it. Compiles and loads the module on first use in the process.
/// @throws invalid_argument_error when the source does not compile or its parameters do not match
/// (rows, input columns, output columns, arguments); compute_error when the launch fails.
void launch_source_kernel(const user_kernel& k, kernel_partition& p, long long grid, int block);

}  // namespace tug::cuda
