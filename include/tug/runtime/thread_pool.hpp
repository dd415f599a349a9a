#pragma once
/// A fixed pool of worker threads with a blocking parallel_for; exceptions propagate to the caller.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "tug/runtime/task_group.hpp"

namespace tug {

class query_control;
struct memory_account;
class memory_budget;

class thread_pool {
 public:
  /// `threads` (engine_options::num_threads) = 0 uses std::thread::hardware_concurrency().
  /// @throws resource_error naming num_threads and the system's error when a thread cannot be
  /// started (the threads already started are joined first).
  explicit thread_pool(int threads = 0);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return static_cast<int>(_workers.size()) + 1; }
  /// Runs f(i) for i in [0, n) on the pool and the calling thread. When calls throw, no further
  /// indices start and the exception of the lowest failing index is rethrown (the same one from run
  /// to run when failures are deterministic). Nested calls (from inside f) are allowed: the calling
  /// thread runs only indices of its own call while it waits, and idle workers take the newest call's
  /// indices first, so a thread never holds more than one unfinished index of an outer call.
  /// Every call runs under the calling thread's query_control (query_control::current), which it
  /// checks before each index: once the query is cancelled no further indices start and the call
  /// throws cancelled_error. The caller's memory_account and scratch budget are installed likewise. The indices of one
  /// call are a task_group: the first that fails stops it, so that the others' waits on each other
  /// (wait_unless_stopped) end with its error.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& f);

 private:
  void worker();
  /// Tells the workers to stop and joins them.
  void stop_workers();
  struct job {
    const std::function<void(int64_t)>* f = nullptr;
    int64_t n = 0;
    int64_t next = 0;
    int64_t started = 0;
    int64_t done = 0;
    std::exception_ptr error;
    int64_t error_index = 0;  ///< the index whose exception `error` holds
    query_control* control = nullptr;  ///< the caller's, installed on the threads that run its indices
    task_group group;  ///< inside the caller's; installed on the threads that run its indices
    memory_account* account = nullptr;  ///< the caller's (the operator whose work this is), installed likewise
    memory_budget* scratch = nullptr;   ///< the caller's scratch budget (memory/scratch.hpp), installed likewise
  };
  std::vector<std::thread> _workers;
  std::mutex _mu;
  std::condition_variable _cv;
  std::condition_variable _done_cv;
  std::vector<job*> _jobs;
  bool _stop = false;
  bool run_one(std::unique_lock<std::mutex>& lock, job* only = nullptr);
};

/// The process-wide pool sized for `threads` (re-created when the size changes; when that fails, the
/// previous pool stays). @throws resource_error as thread_pool's constructor.
thread_pool& global_thread_pool(int threads = 0);
/// In a child process made by fork(): forgets the parent's pool, whose threads do not exist in the
/// child, so that global_thread_pool makes a new one (engine_options::gpus' ranks).
void forget_thread_pool_after_fork();

}  // namespace tug
