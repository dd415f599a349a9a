#pragma once
/// The stop state of tasks that run side by side (the indices of one thread_pool::parallel_for, a
/// source's reader threads): the first task that fails stops the group with its error, and a task
/// blocked in a wait that only its siblings can end (a streaming sink's queue waiting for room) wakes
/// and stops with that error at once, instead of waiting for a sibling that will never come. A group
/// also stops when the group it runs inside stops, or when its query is cancelled (query_control).
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <stop_token>

namespace tug {

class query_control;

/// Thread-safe. Lives on the stack of the code that starts the tasks, longer than every task.
class task_group {
 public:
  /// A group inside the calling thread's current group, or (none) under its current query_control.
  task_group();
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;

  /// A task of the group failed with `error`: the group stops (the first error is kept).
  void fail(std::exception_ptr error) noexcept;
  /// Whether the group was stopped (a task failed, the enclosing group stopped, the query was cancelled).
  bool stopped() const noexcept { return _stop.stop_requested(); }
  /// The token that is stopped with the group (for std::condition_variable_any waits).
  std::stop_token token() const noexcept { return _stop.get_token(); }
  /// @throws the error the group stopped with (cancelled_error for a cancelled query), when stopped.
  void rethrow_if_stopped() const;

  /// The group installed on the calling thread (nullptr: none).
  static task_group* current() noexcept;

  /// Installs a group on the calling thread for its lifetime (nullptr: none), restoring the previous one.
  class scope {
   public:
    explicit scope(task_group* g) noexcept;
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    task_group* _previous;
  };

 private:
  struct stop_from_outside {
    task_group* group;
    void operator()() const noexcept;
  };
  task_group* _parent;
  mutable std::mutex _mu;  ///< guards _error
  std::exception_ptr _error;
  std::stop_source _stop;
  std::optional<std::stop_callback<stop_from_outside>> _follow;  ///< the parent's or the query's stop
};

/// Waits on `cv` under `lock` until `done()` holds, or until the calling thread's task group (or, without
/// one, its query) stops: then it throws that group's error (cancelled_error when the query was
/// cancelled), with `lock` held. No group and no query: a plain wait.
/// @throws the error the group stopped with.
template <typename Lock, typename Pred>
void wait_unless_stopped(std::condition_variable_any& cv, Lock& lock, Pred done);

}  // namespace tug

#include "tug/runtime/query_control.hpp"

namespace tug {

template <typename Lock, typename Pred>
void wait_unless_stopped(std::condition_variable_any& cv, Lock& lock, Pred done) {
  if (task_group* g = task_group::current()) {
    if (!cv.wait(lock, g->token(), done)) g->rethrow_if_stopped();
    return;
  }
  if (query_control* c = query_control::current()) {
    if (!cv.wait(lock, c->stop_token(), done)) c->check();
    return;
  }
  cv.wait(lock, done);
}

}  // namespace tug
