// device_slots: the bound on partitions with device work in flight (engine_options::num_streams).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "api/in_order.hpp"
#include "test_util.hpp"
#include "tug/exec/physical.hpp"

namespace tug {
namespace {

/// Runs `tasks` tasks on a pool of `threads` threads, each holding a slot of `slots` while it sleeps
/// briefly; returns the most tasks seen inside a slot at once.
int most_at_once(int slots, int threads, int tasks) {
  device_slots s(slots);
  thread_pool pool(threads);
  std::atomic<int> inside{0}, most{0};
  pool.parallel_for(tasks, [&](int64_t) {
    device_slots::guard g(&s);
    int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --inside;
  });
  EXPECT_EQ(s.peak(), most.load());
  return most.load();
}

TEST(DeviceSlots, BoundsTasksInFlight) {
  EXPECT_LE(most_at_once(2, 8, 32), 2);
  EXPECT_EQ(most_at_once(1, 4, 8), 1);
  EXPECT_LE(most_at_once(3, 8, 3), 3);
}

TEST(DeviceSlots, AtLeastOneSlot) { EXPECT_EQ(most_at_once(0, 4, 4), 1); }

TEST(DeviceSlots, NestedGuardsOnOneThreadTakeOneSlot) {
  device_slots s(1);
  device_slots::guard outer(&s);
  device_slots::guard inner(&s);  // would wait forever if it took a second slot
  EXPECT_EQ(s.peak(), 1);
}

TEST(DeviceSlots, ProducersWaitingForASinkLendTheirSlots) {
  // a sink's queue (in_order, room for 1) takes partitions in index order: partition 0's producer comes
  // last, after the two slots are taken by producers of later partitions that then wait for room. Were
  // the slots kept while waiting, partition 0 would never get one (the seed 4-way join at 95M rows hung
  // so on 16 threads and 4 slots); lent, every partition is written in order.
  device_slots s(2);
  thread_pool pool(8);
  std::vector<int64_t> written;
  in_order<int64_t> order([&](int64_t& i) { written.push_back(i); }, 1);
  pool.parallel_for(32, [&](int64_t i) {
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    device_slots::guard g(&s);
    device_slots::lend l;
    order.put(i, static_cast<size_t>(i));
  });
  order.finish(32);
  ASSERT_EQ(written.size(), 32u);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(written[static_cast<size_t>(i)], i);
  EXPECT_LE(s.peak(), 2);
}

}  // namespace
}  // namespace tug
