#include "tug/runtime/task_group.hpp"

#include "tug/core/error.hpp"

namespace tug {

namespace {
thread_local task_group* t_group = nullptr;
}

task_group* task_group::current() noexcept { return t_group; }

task_group::scope::scope(task_group* g) noexcept : _previous(t_group) { t_group = g; }
task_group::scope::~scope() { t_group = _previous; }

task_group::task_group() : _parent(t_group) {
  // last: the callback may run here at once (the parent stopped, the query was cancelled already)
  if (_parent)
    _follow.emplace(_parent->token(), stop_from_outside{this});
  else if (query_control* c = query_control::current())
    _follow.emplace(c->stop_token(), stop_from_outside{this});
}

void task_group::stop_from_outside::operator()() const noexcept {
  std::exception_ptr e;
  if (group->_parent) {
    std::lock_guard<std::mutex> g(group->_parent->_mu);
    e = group->_parent->_error;
  }
  group->fail(e);  // none: the query was cancelled
}

void task_group::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard<std::mutex> g(_mu);
    if (!_error) _error = std::move(error);
  }
  _stop.request_stop();
}

void task_group::rethrow_if_stopped() const {
  if (!stopped()) return;
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> g(_mu);
    e = _error;
  }
  if (e) std::rethrow_exception(e);
  throw cancelled_error("the query was cancelled");
}

}  // namespace tug
