#pragma once
/// The GPU Parquet reader (gpu_reader.cu): a row group's column chunks read into pinned host memory,
/// copied to the device, decompressed there (nvCOMP) or on the host, and decoded on the device
/// (page_decode.hpp) into device columns. Only in builds with CUDA.
#include <atomic>
#include <cstdint>
#include <vector>

#include "tug/core/table.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug::io::parquet {

/// What the GPU reader did, summed over its calls (for tests and statistics).
struct device_read_counters {
  std::atomic<int64_t> device_chunks{0};      ///< column chunks decoded on the device
  std::atomic<int64_t> host_chunks{0};        ///< column chunks the host decoded (an encoding the device lacks)
  std::atomic<int64_t> device_pages{0};       ///< pages decompressed on the device (nvCOMP)
  std::atomic<int64_t> host_pages{0};         ///< pages decompressed on the host (no nvCOMP, or its codec)
  std::atomic<int64_t> decoded_bytes{0};      ///< bytes of the device columns made (values, offsets, chars, bits)
  std::atomic<int64_t> pages_skipped{0};      ///< data pages none of whose rows was wanted (not decoded)
  // where the time of the calls went (nanoseconds, summed over the calls of all threads)
  std::atomic<int64_t> read_ns{0};            ///< reading the column chunks into pinned memory and planning them
  std::atomic<int64_t> submit_ns{0};          ///< queuing the copies, decompression and kernels
  std::atomic<int64_t> wait_ns{0};            ///< waiting for the device (the read-backs of the errors, then the strings)
};

/// Reads columns `columns` (indices into r.schema()) of row group `rg`, only the rows in `ranges`
/// (sorted, disjoint, within the row group; empty: all), into device memory from `device_mr`; the
/// column chunks are read into `pinned_mr`. A chunk with an encoding or type the device does not
/// decode (chunk_plan::host_reason) is decoded by the host reader and copied. Compressed pages are
/// decompressed by this thread on the host, or, with `device_decompression`, those nvCOMP takes (SNAPPY
/// and LZ4_RAW pages with a CRC the host checked: plan_chunk) on the device. Waits for the device before
/// it returns.
/// @throws io_error naming the file, column, row group and page on a corrupt page or one that does
/// not decompress; otherwise as file_reader::read_row_group_ranges.
table read_row_group_device(const file_reader& r, int rg, const std::vector<size_t>& columns,
                            const std::vector<row_range>& ranges, bool device_decompression,
                            memory_resource* device_mr, memory_resource* pinned_mr,
                            device_read_counters* counters = nullptr);

}  // namespace tug::io::parquet
