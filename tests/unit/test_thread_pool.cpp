// thread_pool: parallel_for covers every index once, propagates errors, and nests without a thread
// taking up more outer work while its own is unfinished.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tug/runtime/thread_pool.hpp"

namespace tug {

TEST(ThreadPool, EveryIndexOnce) {
  thread_pool pool(4);
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
    for (auto& h : hits)
      EXPECT_EQ(h.load(), 1) << "n = " << n;
  }
}

TEST(ThreadPool, RethrowsTheError) {
  thread_pool pool(3);
  EXPECT_THROW(pool.parallel_for(100, [](int64_t i) { if (i == 37) throw std::runtime_error("index 37"); }),
               std::runtime_error);
  // the pool still works afterwards
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 4950);
}

// A scan's loop over row groups runs a nested loop over each row group's columns. A thread waiting for
// its nested loop must not start another outer index: each one it started would hold a decoded row
// group (the PDS-H SF10 scans held six times the memory and ran 2.5x slower on the GPU engine).
TEST(ThreadPool, NestedLoopsKeepOneOuterIndexAThread) {
  thread_pool pool(4);
  std::atomic<int> in_flight{0}, most{0};
  std::atomic<int64_t> inner_runs{0};
  pool.parallel_for(64, [&](int64_t) {
    int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    pool.parallel_for(8, [&](int64_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // lets the outer loop's indices wait
      ++inner_runs;
    });
    --in_flight;
  });
  EXPECT_EQ(inner_runs.load(), 64 * 8);
  EXPECT_LE(most.load(), pool.size());
}

}  // namespace tug
