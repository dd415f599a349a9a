#include "tug/runtime/query_control.hpp"

#include "tug/core/error.hpp"
#include "tug/memory/memory_manager.hpp"

namespace tug {

static_assert(num_transfer_directions == std::tuple_size_v<decltype(query_progress::bytes_moved)>,
              "query_progress::bytes_moved has one entry per transfer_direction");

namespace {
thread_local query_control* t_current = nullptr;
}

query_control* query_control::current() noexcept { return t_current; }

query_control::scope::scope(query_control* c) noexcept : _previous(t_current) { t_current = c; }
query_control::scope::~scope() { t_current = _previous; }

void query_control::check() const {
  _checks.fetch_add(1, std::memory_order_relaxed);
  if (cancelled()) throw cancelled_error("the query was cancelled");
}

void check_cancelled() {
  if (const query_control* c = t_current) c->check();
}

void query_control::plan_started(int64_t operators, int64_t rows) noexcept {
  _operators_total.fetch_add(operators, std::memory_order_relaxed);
  if (rows < 0)
    _rows_unknown.store(true, std::memory_order_relaxed);
  else
    _rows_total.fetch_add(rows, std::memory_order_relaxed);
}

bool query_control::attach(const memory_manager* m) {
  std::lock_guard<std::mutex> g(_mu);
  if (_memory) return false;
  _memory = m;
  return true;
}

void query_control::detach(const memory_manager* m) {
  std::lock_guard<std::mutex> g(_mu);
  if (_memory != m) return;
  const auto t = m->transfers();
  for (size_t i = 0; i < t.size(); ++i)
    _moved[i] += t[i].bytes;
  _memory = nullptr;
}

query_progress query_control::progress() const {
  query_progress p;
  p.rows_scanned = _rows.load(std::memory_order_relaxed);
  p.partitions_scanned = _partitions.load(std::memory_order_relaxed);
  p.rows_total = _rows_unknown.load(std::memory_order_relaxed) ? -1 : _rows_total.load(std::memory_order_relaxed);
  p.operators_done = _operators_done.load(std::memory_order_relaxed);
  p.operators_total = _operators_total.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> g(_mu);
    p.bytes_moved = _moved;
    if (_memory) {
      const auto t = _memory->transfers();
      for (size_t i = 0; i < t.size(); ++i)
        p.bytes_moved[i] += t[i].bytes;
    }
  }
  for (transfer_direction d :
       {transfer_direction::device_to_pinned, transfer_direction::device_to_host, transfer_direction::host_to_disk})
    p.spilled_bytes += p.bytes_moved[static_cast<size_t>(d)];
  return p;
}

}  // namespace tug
