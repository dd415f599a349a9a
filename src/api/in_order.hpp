#pragma once
// Partitions of a streaming sink, handed over from several threads in any order, consumed in index
// order by one thread at a time with a bound on what waits (sink_parquet, sink_csv, sink_cassandra).
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "tug/core/error.hpp"
#include "tug/runtime/task_group.hpp"

namespace tug {

/// Hands partitions that arrive in any order, from several threads, to `consume` in index order, one
/// at a time: a thread that finds no one consuming drains what is ready; the others queue theirs and
/// go on, unless more than `bound` partitions wait already, then they wait for room (backpressure: the readers
/// cannot run ahead of the writer). No deadlock: a thread waits only after queuing its own partition and
/// never while the next index is its own, and the producers (a pool's parallel_for, a source's readers)
/// start indices in increasing order, so the next one is queued or being made by a thread that is not
/// waiting. An index may come in several pieces (exec/pieces.hpp), put in order by one thread, the last
/// with `last`: they are consumed in that order, before the next index.
///
/// Failure: the producers are one task_group (the pool's indices; a source's readers). When one fails
/// before putting its piece, or the query is cancelled, the group stops and every thread waiting here
/// wakes and throws that error (wait_unless_stopped); when `consume` throws, the consuming thread throws
/// it, and every waiting and later put throws the same error. Either way nothing more is consumed.
template <typename Item>
class in_order {
 public:
  in_order(std::function<void(Item&)> consume, size_t bound) : _consume(std::move(consume)), _bound(bound) {}

  /// Queues `item` as piece of partition `index` (the last one with `last`) and consumes what is ready
  /// when no other thread does.
  /// @throws the error of a failed `consume` or of the stopped task group (see the class comment).
  void put(Item item, size_t index, bool last = true) {
    std::unique_lock<std::mutex> g(_mu);
    rethrow_if_failed();
    size_t piece = 0;
    if (auto it = _pieces.find(index); it != _pieces.end()) {
      piece = it->second;
      if (last) _pieces.erase(it);
      else ++it->second;
    } else if (!last) {
      _pieces.emplace(index, 1);
    }
    _waiting.emplace(std::make_pair(index, piece), std::make_pair(std::move(item), last));
    // this thread drains; or goes on while there is room, or while no thread drains and the next index
    // is this thread's (another thread drained this piece: the queue waits for this thread's next
    // piece); else it waits for room (the producer of the next index is running: it never waits for
    // its own index, and drains its pieces as it puts them)
    bool drains = false;
    try {
      wait_unless_stopped(_room, g, [&] {
        if (_failure) return true;
        drains = !_busy && _waiting.count(_next);
        return drains || _waiting.size() <= _bound || (!_busy && index == _next.first);
      });
    } catch (...) {
      fail(std::current_exception());  // a producer failed or the query was cancelled: nothing more goes out
      throw;
    }
    rethrow_if_failed();
    if (!drains) return;
    _busy = true;
    for (;;) {
      auto it = _waiting.find(_next);
      if (it == _waiting.end()) {
        _busy = false;
        _room.notify_all();
        return;
      }
      Item next = std::move(it->second.first);
      _next = it->second.second ? std::make_pair(_next.first + 1, size_t{0})
                                : std::make_pair(_next.first, _next.second + 1);
      _waiting.erase(it);
      _room.notify_all();
      g.unlock();
      try {
        _consume(next);
      } catch (...) {
        g.lock();
        _busy = false;
        fail(std::current_exception());
        throw;
      }
      g.lock();
    }
  }

  /// After the last put: every index below `n` was consumed.
  /// @throws internal_error when one was not, or the error that stopped the queue.
  void finish(size_t n) {
    std::lock_guard<std::mutex> g(_mu);
    rethrow_if_failed();
    if (_next != std::make_pair(n, size_t{0}) || !_waiting.empty())
      throw internal_error("streaming sink: " + std::to_string(_next.first) + " of " + std::to_string(n) +
                           " partitions were written in order");
  }

 private:
  /// With _mu held: the first error ends the queue; what waits is dropped and every waiter wakes.
  void fail(std::exception_ptr e) {
    if (!_failure) _failure = std::move(e);
    _waiting.clear();
    _room.notify_all();
  }
  void rethrow_if_failed() const {
    if (_failure) std::rethrow_exception(_failure);
  }

  std::function<void(Item&)> _consume;
  size_t _bound;
  std::mutex _mu;
  std::condition_variable_any _room;
  std::map<std::pair<size_t, size_t>, std::pair<Item, bool>> _waiting;  ///< (index, piece) -> (item, last)
  std::map<size_t, size_t> _pieces;  ///< indices whose last piece has not come: the next piece's number
  std::pair<size_t, size_t> _next{0, 0};
  bool _busy = false;
  std::exception_ptr _failure;  ///< the first error of `consume` or of the producers' task group
};

}  // namespace tug
