#pragma once
// CUDA source kernels (nvrtc.cpp): compiled with NVRTC, cached on disk and in the process, launched
// through the CUDA driver API (its entry points come from the runtime, so libtug links no libcuda).
#include "tug/api/user_kernel.hpp"

namespace tug::cuda {

/// Launches the CUDA source of `k` over partition `p` on p.stream() with `grid` blocks of `block`
/// threads (nothing for 0 rows); does not wait for it. Compiles and loads the module on first use in the process.
/// @throws invalid_argument_error when the source does not compile or its parameters do not match
/// (rows, input columns, output columns, arguments); compute_error when the launch fails.
void launch_source_kernel(const user_kernel& k, kernel_partition& p, long long grid, int block);

}  // namespace tug::cuda
