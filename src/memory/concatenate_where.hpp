#pragma once
// Concatenation of tables in host or device memory where they are (device.cu; device_none.cpp without
// CUDA), for operators that run on either backend.
#include <vector>

#include "tug/core/table.hpp"

namespace tug {

/// The concatenation of `parts` (all in host memory, or all in device memory) where they are: into
/// `host_mr`, or into `device_mr` with the CUDA backend's concatenate (the host one reads host memory).
table concatenate_where_they_are(const std::vector<table>& parts, memory_resource* host_mr,
                                 memory_resource* device_mr);

}  // namespace tug
