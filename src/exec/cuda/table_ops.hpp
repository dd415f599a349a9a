#pragma once
// Device-side table primitives shared by the CUDA operators (gather.cu). Inputs and outputs are in
// device memory; `indices` / `mask` are device pointers / device columns. Each function waits for
// its stream before returning, except where it says otherwise.
#include <cstdint>
#include <vector>

#include "tug/core/table.hpp"

namespace tug::cuda {

/// Rows `indices[i]` (device array of `n` int64) of `c`; a negative index gives a null row.
column gather(const column& c, const int64_t* indices, int64_t n, memory_resource* mr);
/// `gather` for every column of `t`.
table gather(const table& t, const int64_t* indices, int64_t n, memory_resource* mr);
/// Rows where the device boolean column `mask` is true (null = false).
table filter(const table& t, const column& mask, memory_resource* mr);
/// Row indices (device int64) where the device boolean `mask` is true; returns their count.
buffer_ptr true_indices(const column& mask, int64_t* count, memory_resource* mr);
/// Concatenation of device columns of one type.
column concatenate(const std::vector<column>& parts, memory_resource* mr);
/// Concatenation of device tables with equal schemas (`num_rows` rows of no columns when none).
table concatenate(const std::vector<table>& parts, memory_resource* mr);
/// Exclusive scan of the device array `len` (n + 1 entries, the last 0) into string offsets; stores
/// their total (the last offset) in `*total`. Waits for the stream.
buffer_ptr scan_offsets(const int64_t* len, int64_t n, int64_t* total, memory_resource* mr);
/// A device column of `n` copies of row `row` of device column `c` (a literal broadcast).
column repeat_row(const column& c, int64_t row, int64_t n, memory_resource* mr);

}  // namespace tug::cuda
