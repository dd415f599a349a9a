#pragma once
// Partitions of a streaming sink, handed over from several threads in any order, consumed in index
// order by one thread at a time with a bound on what waits (sink_parquet, sink_csv, sink_cassandra).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "tug/core/error.hpp"

namespace tug {

/// Hands partitions that arrive in any order, from several threads, to `consume` in index order, one
/// at a time: a thread that finds no one consuming drains what is ready; the others queue theirs and
/// go on, unless more than `bound` partitions wait already, then they wait for room (backpressure: the readers
/// cannot run ahead of the writer). No deadlock: a thread waits only after queuing its own partition and
/// never while the next index is its own, and the pool hands out indices in increasing order, so the
/// next one is queued or being made by a thread that is not waiting. An index may come in several pieces (exec/pieces.hpp), put in order
/// by one thread, the last with `last`: they are consumed in that order, before the next index.
template <typename Item>
class in_order {
 public:
  in_order(std::function<void(Item&)> consume, size_t bound) : _consume(std::move(consume)), _bound(bound) {}

  void put(Item item, size_t index, bool last = true) {
    std::unique_lock<std::mutex> g(_mu);
    if (_failed) return;  // the query fails with the first error
    size_t piece = 0;
    if (auto it = _pieces.find(index); it != _pieces.end()) {
      piece = it->second;
      if (last) _pieces.erase(it);
      else ++it->second;
    } else if (!last) {
      _pieces.emplace(index, 1);
    }
    _waiting.emplace(std::make_pair(index, piece), std::make_pair(std::move(item), last));
    for (;;) {
      if (_failed) return;
      if (!_busy && _waiting.count(_next)) break;  // this thread drains
      if (_waiting.size() <= _bound) return;
      // over the bound: wait for room, unless no thread drains and the next index is this thread's
      // (another thread drained this piece: the queue waits for this thread's next piece)
      if (!_busy && index == _next.first) return;
      // the producer of the next index is running (the pool starts indices in increasing order, and a
      // producer never waits for its own index), and drains its pieces as it puts them; unless it failed
      // before putting anything (its error ends the query): while nobody drains and the next index has
      // no piece yet, wait only briefly, then go on (the bound overshoots rather than hanging)
      if (_busy || _pieces.count(_next.first)) {
        _room.wait(g);
      } else if (_room.wait_for(g, std::chrono::milliseconds(200)) == std::cv_status::timeout &&
                 !_busy && !_waiting.count(_next)) {
        return;
      }
    }
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
        _failed = true;
        _waiting.clear();
        _room.notify_all();
        throw;
      }
      g.lock();
    }
  }

  /// After the last put: every index below `n` was consumed.
  void finish(size_t n) {
    std::lock_guard<std::mutex> g(_mu);
    if (_next != std::make_pair(n, size_t{0}) || !_waiting.empty())
      throw internal_error("streaming sink: " + std::to_string(_next.first) + " of " + std::to_string(n) +
                           " partitions were written in order");
  }

 private:
  std::function<void(Item&)> _consume;
  size_t _bound;
  std::mutex _mu;
  std::condition_variable _room;
  std::map<std::pair<size_t, size_t>, std::pair<Item, bool>> _waiting;  ///< (index, piece) -> (item, last)
  std::map<size_t, size_t> _pieces;  ///< indices whose last piece has not come: the next piece's number
  std::pair<size_t, size_t> _next{0, 0};
  bool _busy = false, _failed = false;
};

}  // namespace tug
