// query_control: cancelling a query (the thread pool stops starting tasks, the executor stops at the next
// partition, the query throws cancelled_error) and the progress counters the executor feeds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/api/user_kernel.hpp"
#include "tug/exec/key_index.hpp"
#include "tug/memory/memory_manager.hpp"
#include "tug/runtime/query_control.hpp"
#include "tug/runtime/thread_pool.hpp"

using namespace tug;

namespace {
data_frame counting(int64_t n) {
  std::vector<std::optional<int64_t>> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = i % 7 == 0 ? std::nullopt : std::optional<int64_t>(i);
  return data_frame::from_columns({{"k", i64(v)}, {"v", i64(v)}});
}

engine_options small_partitions(int64_t rows) {
  engine_options o = cpu_engine();
  o.target_partition_rows = rows;
  o.num_threads = 4;
  return o;
}
}  // namespace

TEST(QueryControl, CheckThrowsOnlyOnceCancelled) {
  query_control c;
  EXPECT_FALSE(c.cancelled());
  EXPECT_NO_THROW(c.check());
  c.cancel();
  EXPECT_TRUE(c.cancelled());
  EXPECT_THROW(c.check(), cancelled_error);
  c.cancel();  // twice is harmless
  EXPECT_THROW(c.check(), cancelled_error);
}

TEST(QueryControl, ScopeInstallsAndRestores) {
  EXPECT_EQ(query_control::current(), nullptr);
  EXPECT_NO_THROW(check_cancelled());  // no control: never cancelled
  query_control a, b;
  {
    query_control::scope sa(&a);
    EXPECT_EQ(query_control::current(), &a);
    {
      query_control::scope sb(&b);
      EXPECT_EQ(query_control::current(), &b);
      b.cancel();
      EXPECT_THROW(check_cancelled(), cancelled_error);
    }
    EXPECT_EQ(query_control::current(), &a);
    EXPECT_NO_THROW(check_cancelled());
  }
  EXPECT_EQ(query_control::current(), nullptr);
}

TEST(QueryControl, PoolTasksSeeTheCallersControl) {
  thread_pool pool(4);
  query_control c;
  query_control::scope s(&c);
  for (int64_t n : {1, 2, 33, 1024}) {
    std::atomic<int64_t> seen{0}, nested{0};
    pool.parallel_for(n, [&](int64_t) {
      if (query_control::current() == &c) ++seen;
      pool.parallel_for(3, [&](int64_t) {
        if (query_control::current() == &c) ++nested;
      });
    });
    EXPECT_EQ(seen.load(), n);
    EXPECT_EQ(nested.load(), 3 * n);
  }
  // a worker forgets the control once its task is done
  query_control::scope none(nullptr);
  std::atomic<int64_t> leaked{0};
  pool.parallel_for(64, [&](int64_t) {
    if (query_control::current() != nullptr) ++leaked;
  });
  EXPECT_EQ(leaked.load(), 0);
}

TEST(QueryControl, PoolStopsStartingTasksOnceCancelled) {
  for (int threads : {1, 4}) {
    thread_pool pool(threads);
    query_control c;
    query_control::scope s(&c);
    std::atomic<int64_t> started{0}, after{0};
    EXPECT_THROW(pool.parallel_for(1024,
                                   [&](int64_t i) {
                                     if (c.cancelled()) ++after;
                                     ++started;
                                     if (i == 10) c.cancel();
                                   }),
                 cancelled_error);
    // after the cancel, only tasks that other threads had already checked in run: at most one each
    EXPECT_LE(after.load(), threads - 1) << threads << " threads";
    EXPECT_LT(started.load(), 1024);
    // a cancelled control starts nothing
    started = 0;
    EXPECT_THROW(pool.parallel_for(5, [&](int64_t) { ++started; }), cancelled_error);
    EXPECT_EQ(started.load(), 0);
  }
  // the pool still works for queries that are not cancelled
  thread_pool pool(4);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(QueryControl, CancelledBeforeTheQueryStarts) {
  auto q = counting(1000).lazy().filter(col("v") > lit(int64_t{5})).group_by({"k"}).agg({col("v").sum()});
  query_control c;
  c.cancel();
  {
    query_control::scope s(&c);
    EXPECT_THROW(q.collect(small_partitions(100)), cancelled_error);
  }
  // the same query runs afterwards, without a control and under a fresh one
  const int64_t groups = q.collect(small_partitions(100)).num_rows();
  EXPECT_EQ(groups, 852);  // 6..999 less the multiples of 7 (null)
  query_control fresh;
  query_control::scope s(&fresh);
  EXPECT_EQ(q.collect(small_partitions(100)).num_rows(), groups);
}

TEST(QueryControl, CancelledWhileRunningStopsAtTheNextPartition) {
  // 1024 partitions; the kernel cancels the query on its fourth call: no partition starts after that
  const int64_t parts = 1024;
  std::atomic<int64_t> calls{0}, after{0};
  query_control c;
  user_kernel k("cancel_on_fourth");
  k.host([&](kernel_partition&) {
    if (c.cancelled()) ++after;
    if (++calls == 4) query_control::current()->cancel();
  });
  auto q = counting(parts * 8).lazy().filter(col("v").is_not_null());
  {
    query_control::scope s(&c);
    EXPECT_THROW(q.foreach_partition(k, small_partitions(8)), cancelled_error);
  }
  EXPECT_GE(calls.load(), 4);
  // after the cancel, only partitions that other threads (3) had already checked in run
  EXPECT_LE(after.load(), 3) << "partitions started after the cancel";
  EXPECT_LT(calls.load(), parts);
  const query_progress p = c.progress();
  EXPECT_LT(p.partitions_scanned, parts);
  EXPECT_LT(p.operators_done, p.operators_total);
}

TEST(QueryControl, ProgressCountsScansAndOperators) {
  for (int64_t n : {0, 1, 33, 1024}) {
    query_control c;
    query_control::scope s(&c);
    auto q = counting(n).lazy().filter(col("v") > lit(int64_t{5})).group_by({"k"}).agg({col("v").sum()});
    query_result r = q.profile(small_partitions(32));
    int64_t scan_partitions = -1;
    for (auto& op : r.operators)
      if (op.name.rfind("scan", 0) == 0) scan_partitions = op.partitions_out;
    const query_progress p = c.progress();
    EXPECT_EQ(p.rows_scanned, n);
    EXPECT_EQ(p.rows_total, n);
    EXPECT_EQ(p.partitions_scanned, scan_partitions) << r.statistics;
    EXPECT_GE(p.partitions_scanned, (n + 31) / 32);
    EXPECT_GT(p.operators_total, 0);
    EXPECT_EQ(p.operators_done, p.operators_total);
    EXPECT_EQ(p.spilled_bytes, 0);
  }
}

TEST(QueryControl, ProgressCountsSpilledBytes) {
  engine_options o = small_partitions(4096);
  o.spill_everything = true;  // into the default spill_directory (the file is unlinked when opened)
  auto left = counting(20000).lazy().select({col("k"), (col("v") + lit(int64_t{1})).alias("w")});
  auto right = counting(40000).lazy().group_by({"k"}).agg({col("v").sum().alias("s")});
  query_control c;
  query_control::scope s(&c);
  auto q = left.join(right, {"k"});
  auto out = q.collect(o);
  EXPECT_EQ(out.num_rows(), 20000 - (20000 + 6) / 7);  // null keys do not match
  const query_progress p = c.progress();
  EXPECT_GT(p.spilled_bytes, 0);
  EXPECT_GT(p.bytes_moved[static_cast<size_t>(transfer_direction::host_to_disk)], 0);
  EXPECT_GT(p.bytes_moved[static_cast<size_t>(transfer_direction::disk_to_host)], 0);
}

namespace {
/// `n` rows in one partition: a string key with many distinct values, an int key, and a value.
data_frame one_large_partition(int64_t n) {
  std::vector<std::optional<std::string>> s(static_cast<size_t>(n));
  std::vector<std::optional<int64_t>> k(static_cast<size_t>(n));
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s[static_cast<size_t>(i)] = "key-" + std::to_string(x % 1000003) + "-long-enough-to-compare-bytes";
    k[static_cast<size_t>(i)] = static_cast<int64_t>(x >> 40);
  }
  return data_frame::from_columns({{"s", str(s)}, {"k", i64(k)}, {"v", i64(k)}});
}

/// Runs `q` on one thread with everything in one partition, and cancels it from another thread as soon
/// as every operator below its blocking operator has finished (the blocking operator's own work has
/// started; `above` operators of the physical plan are above it). Returns whether the query threw
/// cancelled_error; `finished` says whether the blocking operator completed anyway.
bool cancel_in_blocking(const lazy_frame& q, int64_t above, bool& finished) {
  engine_options o = cpu_engine();
  o.num_threads = 1;
  o.target_partition_rows = int64_t{1} << 40;
  query_control c;
  std::atomic<bool> stop{false};
  int64_t done_at_cancel = -1;
  std::thread watcher([&] {
    while (!stop.load()) {
      const query_progress p = c.progress();
      if (p.operators_total > 0 && p.operators_done == p.operators_total - 1 - above) {
        done_at_cancel = p.operators_done;
        c.cancel();
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  bool cancelled = false;
  try {
    query_control::scope s(&c);
    q.collect(o);
  } catch (const cancelled_error&) {
    cancelled = true;
  }
  stop = true;
  watcher.join();
  const query_progress p = c.progress();
  finished = p.operators_done > p.operators_total - 1 - above;
  EXPECT_GE(done_at_cancel, 0) << "the watcher never saw the blocking operator start";
  return cancelled;
}
}  // namespace

TEST(QueryControl, KeyIndexChecksForCancellationWhileItBuildsAndProbes) {
  // a hash table over one large partition (a join's build side, a group_by) is one long loop: it
  // checks for cancellation inside, not only before (codec paths: ints, short strings; generic: long strings)
  const int64_t n = 3 * cancel_check_interval + 5;
  std::vector<std::optional<int64_t>> iv(static_cast<size_t>(n));
  std::vector<std::optional<std::string>> sv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    iv[static_cast<size_t>(i)] = i * 7919;
    sv[static_cast<size_t>(i)] = "a string longer than seven bytes " + std::to_string(i);
  }
  for (const std::vector<column>& keys : {std::vector<column>{i64(iv)}, std::vector<column>{str(sv)},
                                          std::vector<column>{i64(iv), str(sv)}}) {
    key_index built(keys);  // no control: never cancelled
    EXPECT_EQ(built.num_groups(), n);
    query_control c;
    c.cancel();
    query_control::scope s(&c);
    EXPECT_THROW(key_index{keys}, cancelled_error);
    EXPECT_THROW(built.find(keys), cancelled_error);
  }
}

TEST(QueryControl, LongLoopsOfOnePartitionLookForACancel) {
  // one partition on one thread: the sort, the hash build of a join and the hash table of a group_by are
  // each one long task; each looks for a cancel every cancel_check_interval rows (or comparisons) inside,
  // so the checks grow with the partition (a check per partition, operator or task would not)
  engine_options o = cpu_engine();
  o.num_threads = 1;
  o.target_partition_rows = int64_t{1} << 40;
  auto checks = [&](int64_t n, int which) {
    auto df = one_large_partition(n);
    const lazy_frame q = which == 0   ? df.lazy().sort({col("s"), col("k")})
                         : which == 1 ? df.lazy().sort("k")
                         : which == 2 ? df.lazy().head(1).join(df.lazy(), {"s", "k"}, join_type::full)
                                      : df.lazy().group_by({"s", "k"}).agg({col("v").median()});
    query_control c;
    query_control::scope s(&c);
    q.collect(o);
    return c.checks();
  };
  const char* names[] = {"sort by a string and an int", "sort by an int (radix)", "full join building over n rows",
                         "group_by with a median"};
  const int64_t n = 4 * cancel_check_interval;
  for (int which = 0; which < 4; ++which) {
    const int64_t small = checks(n, which), large = checks(3 * n, which);
    EXPECT_GE(large - small, 2 * n / cancel_check_interval) << names[which] << ": " << small << " then " << large;
  }
}

TEST(QueryControl, CancelledInsideTheSortOfOneLargePartition) {
  // the sort is the root and one task sorts the only partition: a cancel that only partition or task
  // boundaries see would let it finish (and the query return)
  auto df = one_large_partition(1 << 21);
  bool finished = false;
  EXPECT_TRUE(cancel_in_blocking(df.lazy().sort({col("s"), col("k")}), 0, finished));
  EXPECT_FALSE(finished);
  finished = false;
  EXPECT_TRUE(cancel_in_blocking(df.lazy().sort("k"), 0, finished));  // one word key: the radix sort
  EXPECT_FALSE(finished);
}

TEST(QueryControl, CancelledInsideTheHashBuildOfOneLargePartition) {
  auto df = one_large_partition(1 << 21);
  bool finished = false;
  // a full join builds over its right side: 2M rows with string keys, probed by one row
  auto one = df.lazy().head(1);
  EXPECT_TRUE(cancel_in_blocking(one.join(df.lazy(), {"s", "k"}, join_type::full), 1, finished));  // a project above
  EXPECT_FALSE(finished);
  finished = false;
  EXPECT_TRUE(cancel_in_blocking(df.lazy().group_by({"s", "k"}).agg({col("v").median()}), 1, finished));
  EXPECT_FALSE(finished);
}
