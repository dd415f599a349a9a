// device_slots: the bound on partitions with device work in flight (engine_options::num_streams).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

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

}  // namespace
}  // namespace tug
