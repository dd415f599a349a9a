#include "tug/runtime/thread_pool.hpp"

#include <memory>
#include <string>

#include "tug/core/error.hpp"
#include "tug/memory/memory_resource.hpp"
#include "tug/memory/scratch.hpp"
#include "tug/runtime/query_control.hpp"

namespace tug {

thread_pool::thread_pool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  try {
    _workers.reserve(static_cast<size_t>(threads - 1));
    for (int i = 1; i < threads; ++i)
      _workers.emplace_back([this] { worker(); });
  } catch (const std::exception& e) {
    // the members' destructors would wait on a condition variable the started workers sleep on (a
    // hang) and then destroy joinable threads (std::terminate): stop and join them first
    const size_t started = _workers.size();
    stop_workers();
    throw resource_error("num_threads = " + std::to_string(threads) + ": could not start worker thread " +
                         std::to_string(started + 1) + " of " + std::to_string(threads - 1) + " (" + e.what() +
                         "); lower num_threads or raise the process's limits on threads and memory "
                         "(ulimit -u, ulimit -v)");
  }
}

thread_pool::~thread_pool() { stop_workers(); }

void thread_pool::stop_workers() {
  {
    std::lock_guard<std::mutex> g(_mu);
    _stop = true;
  }
  _cv.notify_all();
  for (auto& t : _workers)
    t.join();
  _workers.clear();
}

// Takes one index of job `only`, or (null) of the newest job with work left, and runs it. Called with
// the lock held. Newest first: a nested parallel_for (a row group's column chunks inside the scan's
// loop over row groups) finishes what is started before idle workers start more outer work.
bool thread_pool::run_one(std::unique_lock<std::mutex>& lock, job* only) {
  job* j = only;
  if (!j)
    for (auto it = _jobs.rbegin(); it != _jobs.rend() && !j; ++it)
      if ((*it)->next < (*it)->n) j = *it;
  if (!j || j->next >= j->n) return false;
  int64_t i = j->next++;
  ++j->started;
  lock.unlock();
  std::exception_ptr err;
  try {
    // the caller's query: its cancellation is checked here, and nested calls and the executor see it
    query_control::scope s(j->control);
    task_group::scope g(&j->group);
    memory_account::scope a(j->account);
    scratch_budget::scope sb(j->scratch);
    check_cancelled();
    (*j->f)(i);
  } catch (...) {
    err = std::current_exception();
    j->group.fail(err);  // its indices that wait on each other wake with this error
  }
  lock.lock();
  // The error of the lowest failing index: indices start in order and every started one finishes
  // before parallel_for returns, so which error is raised does not depend on timing.
  if (err && (!j->error || i < j->error_index)) {
    j->error = err;
    j->error_index = i;
  }
  if (err) j->next = j->n;  // stop handing out work of a failed job
  if (++j->done == j->started) _done_cv.notify_all();
  return true;
}

void thread_pool::worker() {
  std::unique_lock<std::mutex> lock(_mu);
  while (true) {
    if (_stop) return;
    if (!run_one(lock)) _cv.wait(lock);
  }
}

void thread_pool::parallel_for(int64_t n, const std::function<void(int64_t)>& f) {
  if (n <= 0) return;
  if (n == 1 || _workers.empty()) {
    for (int64_t i = 0; i < n; ++i) {
      check_cancelled();
      f(i);
    }
    return;
  }
  job j;
  j.f = &f;
  j.n = n;
  j.control = query_control::current();
  j.account = memory_account::current();
  j.scratch = scratch_budget::current();
  std::unique_lock<std::mutex> lock(_mu);
  _jobs.push_back(&j);
  _cv.notify_all();
  // The caller runs indices of its own job only, then waits: helping with an older job (the loop a
  // nested parallel_for runs inside) would start more outer tasks while this one is unfinished, so
  // a scan held ever more decoded row groups (PDS-H SF10 Q1 on the GPU: peak 0.86 -> 5.1 GB, 2.5x slower).
  while (j.next < j.n) run_one(lock, &j);
  _done_cv.wait(lock, [&] { return j.done == j.started; });
  std::erase(_jobs, &j);
  if (j.error) std::rethrow_exception(j.error);
}

namespace {
std::mutex g_first_pool_mu;
std::mutex* g_pool_mu = &g_first_pool_mu;  // replaced (never freed) in a forked child
std::unique_ptr<thread_pool> g_pool;
}  // namespace

void forget_thread_pool_after_fork() {
  g_pool_mu = new std::mutex;  // the parent's may have been held by a thread that does not exist here
  (void)g_pool.release();      // its threads do not exist here: leaked, never joined
}

thread_pool& global_thread_pool(int threads) {
  auto& pool = g_pool;
  std::lock_guard<std::mutex> g(*g_pool_mu);
  int want = threads <= 0 ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) : threads;
  if (!pool || pool->size() != want) pool = std::make_unique<thread_pool>(want);
  return *pool;
}

}  // namespace tug
