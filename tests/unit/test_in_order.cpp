// in_order (src/api/in_order.hpp), the ordered queue of the streaming sinks, on its own: order, and
// what happens when a producer fails or the query is cancelled while other producers wait for room.
// Every test that could hang runs under a deadline that ends the test binary with a failure instead.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "api/in_order.hpp"
#include "tug/core/error.hpp"
#include "tug/runtime/query_control.hpp"
#include "tug/runtime/task_group.hpp"
#include "tug/runtime/thread_pool.hpp"

using namespace tug;

namespace {

/// Runs `f` on its own thread; when it has not returned after 60 s, the test binary ends with a failure
/// (a hang is the bug these tests look for: the waiting threads cannot be stopped from outside).
template <typename F>
void within_deadline(F f, const char* what) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([f = std::move(f), done]() mutable {
    try {
      f();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  if (finished.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not end within 60 s (threads wait in in_order::put)\n", what);
    std::fflush(stderr);
    std::_Exit(1);
  }
  finished.get();
}

/// Producers 0..n-1 on `pool`, each putting `pieces` pieces of its index (value index * 100 + piece);
/// producer `failing` puts `pieces_before_failure` of them, waits until `blocked` other producers have
/// queued theirs (over the bound: they wait for room), then throws. Returns the error; `consumed` gets
/// what was consumed, `completed` how many producers after the failing one put all their pieces.
struct scenario {
  int threads = 4;
  size_t n = 8, pieces = 1, bound = 1;
  size_t failing = 1, pieces_before_failure = 0;
  int blocked = 2;
};

std::string run_failing(const scenario& s, std::vector<int>* consumed, int* completed) {
  thread_pool pool(s.threads);
  std::mutex mu;
  in_order<int> q(
      [&](int& v) {
        std::lock_guard<std::mutex> g(mu);
        consumed->push_back(v);
      },
      s.bound);
  std::atomic<int> queued{0};  // producers below `failing` done, and those above it started
  std::atomic<int> done{0};    // producers above `failing` whose puts all returned
  try {
    pool.parallel_for(static_cast<int64_t>(s.n), [&](int64_t i) {
      const auto k = static_cast<size_t>(i);
      if (k == s.failing) {
        for (size_t p = 0; p < s.pieces_before_failure; ++p) q.put(static_cast<int>(k * 100 + p), k, false);
        // the others queue theirs (and wait for room: the next index is this one's)
        while (queued.load() < static_cast<int>(s.failing) + s.blocked) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let them reach the wait
        throw std::runtime_error("producer " + std::to_string(k) + " failed");
      }
      if (k > s.failing) queued.fetch_add(1);
      for (size_t p = 0; p < s.pieces; ++p)
        q.put(static_cast<int>(k * 100 + p), k, p + 1 == s.pieces);
      if (k < s.failing) queued.fetch_add(1);
      if (k > s.failing) done.fetch_add(1);
    });
  } catch (const std::runtime_error& e) {
    *completed = done.load();
    return e.what();
  }
  *completed = done.load();
  return "no error";
}

}  // namespace

TEST(InOrder, ConsumesInIndexAndPieceOrder) {
  // 33 producers on 4 threads, 3 pieces each, a bound of 2: everything comes out once, in order
  within_deadline(
      [] {
        thread_pool pool(4);
        std::vector<int> got;
        in_order<int> q([&](int& v) { got.push_back(v); }, 2);
        pool.parallel_for(33, [&](int64_t i) {
          for (int p = 0; p < 3; ++p)
            q.put(static_cast<int>(i) * 100 + p, static_cast<size_t>(i), p == 2);
        });
        q.finish(33);
        std::vector<int> want;
        for (int i = 0; i < 33; ++i)
          for (int p = 0; p < 3; ++p)
            want.push_back(i * 100 + p);
        EXPECT_EQ(got, want);
      },
      "ConsumesInIndexAndPieceOrder");
}

TEST(InOrder, ProducerThatFailsBeforeItsFirstPutStopsTheWaitingOnes) {
  // producer 1 throws before it puts anything while the others wait for room (the bound is 1: the
  // first to queue found room, every later one waits): they wake and end with producer 1's error (none
  // of them goes on as if it had been written); nothing after index 0 was consumed
  within_deadline(
      [] {
        scenario s;
        std::vector<int> consumed;
        int completed = -1;
        EXPECT_EQ(run_failing(s, &consumed, &completed), "producer 1 failed");
        EXPECT_EQ(consumed, std::vector<int>{0});
        EXPECT_EQ(completed, 1);
      },
      "ProducerThatFailsBeforeItsFirstPutStopsTheWaitingOnes");
}

TEST(InOrder, ProducerThatFailsBetweenItsPiecesStopsTheWaitingOnes) {
  // producer 1 put 2 of its pieces (consumed at once: its index is next), then throws while 2, 3 and
  // 4 wait: the queue waits for its next piece, which never comes
  within_deadline(
      [] {
        scenario s;
        s.pieces = 3;
        s.pieces_before_failure = 2;
        s.blocked = 3;
        std::vector<int> consumed;
        int completed = -1;
        EXPECT_EQ(run_failing(s, &consumed, &completed), "producer 1 failed");
        EXPECT_EQ(consumed, (std::vector<int>{0, 1, 2, 100, 101}));
        EXPECT_EQ(completed, 0);  // each waited at its second piece
      },
      "ProducerThatFailsBetweenItsPiecesStopsTheWaitingOnes");
}

TEST(InOrder, ProducerThatFailsOnOneThread) {
  // one thread: the indices run one after the other, the failing one ends the loop
  within_deadline(
      [] {
        scenario s;
        s.threads = 1;
        s.blocked = 0;
        std::vector<int> consumed;
        int completed = -1;
        EXPECT_EQ(run_failing(s, &consumed, &completed), "producer 1 failed");
        EXPECT_EQ(consumed, std::vector<int>{0});
        EXPECT_EQ(completed, 0);  // no index after the failing one starts
      },
      "ProducerThatFailsOnOneThread");
}

TEST(InOrder, ReaderThreadsOfOneTaskGroupStop) {
  // producers on threads of their own (as a source's readers) in one task_group: reader 0 fails
  // before its put while the others wait for room
  within_deadline(
      [] {
        std::vector<int> consumed;
        in_order<int> q([&](int& v) { consumed.push_back(v); }, 1);
        task_group readers;
        std::atomic<int> queued{0};
        std::vector<std::exception_ptr> errors(4);
        std::vector<std::thread> threads;
        for (size_t k = 0; k < 4; ++k)
          threads.emplace_back([&, k] {
            task_group::scope in_group(&readers);
            try {
              if (k == 0) {
                while (queued.load() < 3) std::this_thread::yield();
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                throw io_error("reader 0 failed");
              }
              queued.fetch_add(1);
              q.put(static_cast<int>(k), k);
            } catch (...) {
              errors[k] = std::current_exception();
              readers.fail(errors[k]);
            }
          });
        for (auto& t : threads) t.join();
        // the first reader to queue found room and went on; the other two waited and end with reader 0's error
        int stopped = 0;
        for (auto& e : errors) {
          if (!e) continue;
          ++stopped;
          try {
            std::rethrow_exception(e);
          } catch (const io_error& x) {
            EXPECT_STREQ(x.what(), "reader 0 failed");
          }
        }
        EXPECT_TRUE(errors[0]);
        EXPECT_EQ(stopped, 3);
        EXPECT_TRUE(consumed.empty());
        EXPECT_THROW(q.put(9, 9), io_error);  // the queue stays failed
      },
      "ReaderThreadsOfOneTaskGroupStop");
}

TEST(InOrder, CancelWakesTheWaitingProducers) {
  // producer 0 never puts; 1..3 wait for room; cancelling the query wakes them with cancelled_error
  within_deadline(
      [] {
        query_control control;
        query_control::scope in_query(&control);
        thread_pool pool(4);
        std::vector<int> consumed;
        in_order<int> q([&](int& v) { consumed.push_back(v); }, 1);
        std::atomic<int> queued{0};
        EXPECT_THROW(pool.parallel_for(4,
                                       [&](int64_t i) {
                                         if (i == 0) {
                                           while (queued.load() < 2) std::this_thread::yield();
                                           std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                           control.cancel();
                                           return;  // a producer that is slow, not failed
                                         }
                                         queued.fetch_add(1);
                                         q.put(static_cast<int>(i), static_cast<size_t>(i));
                                       }),
                     cancelled_error);
        EXPECT_TRUE(consumed.empty());
      },
      "CancelWakesTheWaitingProducers");
}

TEST(InOrder, ConsumerFailureEndsEveryPut) {
  // `consume` throws on index 2: the consuming thread throws it, and so do the waiting and later puts
  within_deadline(
      [] {
        thread_pool pool(4);
        std::vector<int> consumed;
        in_order<int> q(
            [&](int& v) {
              if (v == 2) throw io_error("disk full at 2");
              consumed.push_back(v);
            },
            1);
        try {
          pool.parallel_for(32, [&](int64_t i) { q.put(static_cast<int>(i), static_cast<size_t>(i)); });
          ADD_FAILURE() << "no error";
        } catch (const io_error& e) {
          EXPECT_STREQ(e.what(), "disk full at 2");
        }
        EXPECT_EQ(consumed, (std::vector<int>{0, 1}));
        EXPECT_THROW(q.finish(32), io_error);
      },
      "ConsumerFailureEndsEveryPut");
}
