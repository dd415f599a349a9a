#pragma once
/// Engine options, all in one place (see docs/options.md for each default and meaning).
#include <cstdint>
#include <string>

namespace tug {

/// What to do when a plan node cannot run on the requested backend.
enum class fallback_mode : uint8_t { warn, raise, silent };

/// Which engine runs a query.
enum class engine_kind : uint8_t {
  automatic,  ///< the GPU when one is visible and tug was built with CUDA, else the CPU
  cpu,
  gpu,
};

/// The optimizer's passes, each on or off (src/plan/optimizer; docs/architecture.md).
struct optimizer_flags {
  bool constant_folding = true;     ///< fold literal subexpressions, simplify boolean logic
  bool predicate_pushdown = true;   ///< move filters toward (and into) scans, through projections, joins, unions
  bool projection_pushdown = true;  ///< read and carry only the columns that are used
  bool slice_pushdown = true;       ///< push limits into sorts (top-k) and through projections
  bool common_subplan = true;       ///< share identical subplans (executed once)
  /// filter chains over in-memory frames or Parquet scans carry only the columns they read plus a row
  /// index; the columns they only pass through are gathered for the surviving rows at the end (a `take`)
  /// where the sources' statistics show that it pays
  bool late_materialization = true;
};

/// The smallest `target_partition_size` other than 0 (smaller partitions cost more to schedule than
/// to process).
inline constexpr int64_t min_target_partition_size = 16 << 10;
/// Rows per partition where `target_partition_rows` is 0 (automatic).
inline constexpr int64_t default_partition_rows = int64_t{1} << 20;
/// Rows per partition that Parquet scans decoded by the GPU reader aim at where `target_partition_rows`
/// is 0: each partition costs the device's operators launches and synchronizations, so fewer, larger
/// ones pay (PDS-H SF10 on an H200, session 18: 4.98 s at 1Mi rows, 4.37 s at 4Mi, 4.15 s at 16Mi).
inline constexpr int64_t gpu_scan_partition_rows = int64_t{1} << 24;
/// The largest `num_threads`.
inline constexpr int max_num_threads = 4096;

struct engine_options {
  /// The defaults below, overridden by the environment variables that are set (TUG_MEMORY_LIMIT,
  /// TUG_SPILL_DEVICE_LIMIT, ...: the option's name in capitals; docs/options.md). What the code assigns
  /// afterwards wins. @throws invalid_argument_error naming a variable whose value does not parse.
  engine_options();

  engine_kind engine = engine_kind::automatic;
  /// Rows per partition produced by in-memory sources and operators and aimed at by scans; 0 (the
  /// default) = automatic: default_partition_rows, and gpu_scan_partition_rows for Parquet scans that
  /// the GPU reader decodes. Read it through partition_rows().
  int64_t target_partition_rows = 0;
  /// Bytes per partition aimed at by file scans (0 = use target_partition_rows; else at least
  /// min_target_partition_size).
  int64_t target_partition_size = 0;
  /// Worker threads for the CPU engine (0 = all hardware threads; at most max_num_threads).
  int num_threads = 0;
  /// Host memory limit in bytes for query execution (0 = unlimited). Exceeding it raises memory_error.
  int64_t memory_limit = 0;
  /// Device memory fraction or bytes at which the GPU engine spills ("80%").
  std::string spill_device_limit = "80%";
  /// GPU engine: scans decode into pinned host memory (counted against memory_limit, blocks reused
  /// across queries) so each partition's copy to the device is a direct, asynchronous DMA.
  bool pinned_memory = true;
  /// GPU engine: Parquet scans decode on the device (the GPU Parquet reader, src/io/parquet/gpu_reader.cu:
  /// pages decompressed on the host, decoded by kernels) and hand device columns on; false: they decode on
  /// the host and copy each partition to the device. On by default since session 18 (PDS-H SF10 on an
  /// H200, 16 cores: 4.62 s warm with it against 5.36 s, bench/results/2026-11-27-gpu-scan-h200-session18).
  bool gpu_parquet_reader = true;
  /// GPU Parquet reader: SNAPPY and LZ4_RAW pages whose header carries a CRC-32 (checked by the host
  /// first) are decompressed on the device by nvCOMP, where tug was built with it and can load it; false:
  /// every compressed page is decompressed by the reading thread on the host, and the device only
  /// decodes. Off by default: on 16 cores the host's snappy outruns nvCOMP 6's (session 18, one H200,
  /// PDS-H SF10 lineitem: the 4 numeric columns of Q6 in 0.083 s with host decompression, 0.222 s with
  /// nvCOMP; all 16 columns 0.43 s against 0.39 s).
  bool gpu_parquet_device_decompression = false;
  /// Host bytes that data spilled from the device may hold before it moves on to disk (0 = unlimited).
  int64_t host_spill_limit = 0;
  /// Where spilled buffers go on disk: an existing, writable directory. Each query spills into one file
  /// there, unlinked as soon as it is opened.
  std::string spill_directory = "/tmp";
  /// Bytes a query may write to its spill file (0 = unlimited); past it, spilling raises io_error.
  int64_t spill_disk_limit = 0;
  /// Debug: every spillable buffer goes to disk as soon as nothing uses it, and comes back when it is
  /// used, so that tests run the spill paths on every query.
  bool spill_everything = false;
  /// Debug: the CPU engine's joins, aggregates, unique and windows split their input into hash buckets
  /// (sorts into ranges) and process one at a time, as they do when their input exceeds a quarter of
  /// `memory_limit`, so that tests run the out-of-core paths on every query (output order is then not
  /// the input's where the operator does not promise it).
  bool force_external = false;
  /// GPU engine: partitions with device work in flight at once, each on its thread's own CUDA stream.
  /// Every partition's kernels fill the GPU, so more buys little and multiplies device temporaries.
  int num_streams = 4;
  /// Collect per-operator statistics (rows, partitions, time).
  bool statistics = true;
  fallback_mode fallback = fallback_mode::warn;
  /// Multi-rank execution: a join whose build (right) side has at most this many rows over all ranks
  /// (counted at run time) copies that side to every rank instead of shuffling both sides.
  int64_t broadcast_limit = 1 << 22;
  /// Multi-rank execution: seconds a rank waits in an exchange for the other ranks before it fails with
  /// an error naming the ranks it still waits for (a rank that died or hangs); 0 waits forever.
  double collective_timeout = 600;
  /// Multi-rank execution: collect() gives the result on every rank; false: on rank 0, and the other
  /// ranks get an empty frame with the result's schema.
  bool collect_on_every_rank = false;
  /// Multi-rank execution started by tug itself: a query runs on this many ranks, processes forked from
  /// this one (one GPU each; src/api/forked_ranks.cpp), and the result comes back to this process.
  /// 0 or 1: this process alone; -1: one rank per GPU of the host ("all"). Ignored under an MPI launcher,
  /// whose processes are the ranks already.
  int gpus = 0;
  /// Which optimizer passes run.
  optimizer_flags optimizer;
  /// Run the debug check that optimizer passes never change the output schema.
  bool check_optimizer_schema = true;
};

/// Rows per partition: `o.target_partition_rows`, or default_partition_rows where it is 0 (automatic).
inline int64_t partition_rows(const engine_options& o) {
  return o.target_partition_rows > 0 ? o.target_partition_rows : default_partition_rows;
}

/// Checks every option and the environment variables the engine reads (TUG_ENGINE,
/// TUG_GPU_DIRECT_TABLE) against the ranges in docs/options.md; every query (collect, profile,
/// explain, the sinks) calls it before anything runs.
/// @throws invalid_argument_error naming the option, the value and what is allowed.
void validate_options(const engine_options& o);

}  // namespace tug
