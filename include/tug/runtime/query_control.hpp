#pragma once
/// Control of a running query from another thread: cancel it (Ctrl-C in Python) and watch what it has
/// done (a progress bar). A query finds its control through the thread that runs it: a
/// `query_control::scope` installs one on the calling thread, the thread pool hands it to the tasks of
/// every parallel_for started under it, and the executor checks it at partition boundaries (each
/// operator, each partition of the per-partition loops, each pool task, each row group or chunk a scan
/// decodes) and inside the long loops of one task (check_cancelled_at: hash builds and probes, sorts,
/// merges), so that a query of one huge partition stops within milliseconds too.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stop_token>

namespace tug {

class memory_manager;

/// What a query has done so far (a snapshot; query_control::progress).
struct query_progress {
  int64_t rows_scanned = 0;        ///< rows the scans have produced
  int64_t partitions_scanned = 0;  ///< partitions the scans have produced
  /// Rows of the scanned sources known before reading (Parquet metadata, in-memory frames), capped by
  /// pushed-down limits; -1 when a source does not know (CSV). Filters that skip row groups make the
  /// scans produce fewer.
  int64_t rows_total = -1;
  int64_t operators_done = 0;   ///< physical operators finished
  int64_t operators_total = 0;  ///< operators of the physical plans started under the control
  /// Bytes moved between memory tiers so far, by transfer_direction (memory_manager::transfers).
  std::array<int64_t, 6> bytes_moved{};
  /// Bytes spilled so far: device -> pinned, device -> host and host -> disk.
  int64_t spilled_bytes = 0;
};

/// The cancellation flag and progress counters of one query (or of several run one after another
/// under the same control, as a sink's query and its nested queries). Thread-safe.
class query_control {
 public:
  query_control() = default;
  query_control(const query_control&) = delete;
  query_control& operator=(const query_control&) = delete;

  /// Asks the query to stop at its next cancellation point; it then throws cancelled_error. Safe from
  /// any thread (not from a signal handler: set an atomic flag there and call this from a thread).
  /// Waits that only the query's other tasks could end (task_group, wait_unless_stopped) wake at once.
  void cancel() noexcept {
    _cancelled.store(true, std::memory_order_relaxed);
    _stop.request_stop();
  }
  bool cancelled() const noexcept { return _cancelled.load(std::memory_order_relaxed); }
  /// Stopped by cancel() (for std::condition_variable_any waits: wait_unless_stopped).
  std::stop_token stop_token() const noexcept { return _stop.get_token(); }
  /// @throws cancelled_error when cancel() was called. Counts the check (checks()).
  void check() const;
  /// The cancellation checks made so far: how often the query looked for a cancel (tests use it to see
  /// that a long loop looks inside, not only at its end).
  int64_t checks() const noexcept { return _checks.load(std::memory_order_relaxed); }
  /// A snapshot of the counters (and of the running query's spill transfers).
  query_progress progress() const;

  // --- fed by the executor (run_plan, physical_node::execute, the scan operator)
  /// A plan of `operators` physical operators starts; its sources hold `rows` rows (-1: unknown).
  void plan_started(int64_t operators, int64_t rows) noexcept;
  void operator_done() noexcept { _operators_done.fetch_add(1, std::memory_order_relaxed); }
  void scanned(int64_t rows) noexcept {
    _rows.fetch_add(rows, std::memory_order_relaxed);
    _partitions.fetch_add(1, std::memory_order_relaxed);
  }
  /// The running query's memory manager, read by progress() until detached; a nested query keeps the
  /// outer one's. Returns whether `m` was attached (then the caller detaches it before destroying it).
  bool attach(const memory_manager* m);
  void detach(const memory_manager* m);

  /// The control installed on the calling thread (nullptr: none).
  static query_control* current() noexcept;

  /// Installs a control on the calling thread for its lifetime (nullptr: none), restoring the previous one.
  class scope {
   public:
    explicit scope(query_control* c) noexcept;
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    query_control* _previous;
  };

 private:
  std::atomic<bool> _cancelled{false};
  std::stop_source _stop;
  mutable std::atomic<int64_t> _checks{0};
  std::atomic<int64_t> _rows{0}, _partitions{0}, _operators_done{0}, _operators_total{0};
  std::atomic<int64_t> _rows_total{0};
  std::atomic<bool> _rows_unknown{false};
  mutable std::mutex _mu;  ///< guards _memory and _moved
  const memory_manager* _memory = nullptr;
  std::array<int64_t, 6> _moved{};  ///< transfers of the queries that finished under this control
};

/// Throws cancelled_error when the calling thread's query (query_control::current) was cancelled; a
/// no-op without a control. Call at partition boundaries.
void check_cancelled();

/// Iterations of a loop inside one task between two cancellation checks (check_cancelled_at).
inline constexpr int64_t cancel_check_interval = int64_t{1} << 16;

/// check_cancelled() when `i` is a multiple of cancel_check_interval: for loops over the rows of one
/// partition (a hash table's build, a sort), whose task boundaries come too rarely.
inline void check_cancelled_at(int64_t i) {
  if ((i & (cancel_check_interval - 1)) == 0) check_cancelled();
}

}  // namespace tug
