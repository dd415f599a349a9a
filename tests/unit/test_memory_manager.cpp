// The query memory manager: spillable tables moving to disk and back, byte for byte, priorities,
// budgets that spill before they refuse, the spill file, errors, options from the environment.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "tug/memory/device.hpp"
#include "tug/memory/memory_manager.hpp"
#include "tug/memory/scratch.hpp"
#include "tug/exec/key_index.hpp"
#include "tug/runtime/thread_pool.hpp"
#ifdef TUG_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace tug;
namespace fs = std::filesystem;

namespace {

/// A fresh, empty directory for one test's spill file.
struct temp_dir {
  fs::path path;
  explicit temp_dir(const std::string& name) {
    path = fs::temp_directory_path() / ("tug-mm-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() { fs::remove_all(path); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), fs::directory_iterator())); }
};

/// Every type, with nulls, `n` rows.
table all_types(int64_t n) {
  auto opt = [&](int64_t i) { return i % 7 != 3; };
  std::vector<column> cols;
  auto fixed = [&]<typename T>(data_type t, auto value) {
    std::vector<std::optional<T>> v;
    for (int64_t i = 0; i < n; ++i)
      v.push_back(opt(i) ? std::optional<T>(static_cast<T>(value(i))) : std::nullopt);
    cols.push_back(make_column<T>(t, v));
  };
  fixed.operator()<int8_t>(type_id::int8, [](int64_t i) { return i % 100 - 50; });
  fixed.operator()<int16_t>(type_id::int16, [](int64_t i) { return i * 3 - 700; });
  fixed.operator()<int32_t>(type_id::int32, [](int64_t i) { return i * 1000 - 7; });
  fixed.operator()<int64_t>(type_id::int64, [](int64_t i) { return i * 1000003 - (int64_t{1} << 40); });
  fixed.operator()<uint8_t>(type_id::uint8, [](int64_t i) { return i % 250; });
  fixed.operator()<uint16_t>(type_id::uint16, [](int64_t i) { return i * 7; });
  fixed.operator()<uint32_t>(type_id::uint32, [](int64_t i) { return i * 100000; });
  fixed.operator()<uint64_t>(type_id::uint64, [](int64_t i) { return uint64_t(i) << 33; });
  fixed.operator()<float>(type_id::float32, [](int64_t i) { return float(i) / 3; });
  fixed.operator()<double>(type_id::float64, [](int64_t i) { return double(i) / 7 - 1e9; });
  fixed.operator()<__int128>(decimal(38, 4), [](int64_t i) { return (__int128(i) << 70) - 12345; });
  fixed.operator()<int32_t>(type_id::date32, [](int64_t i) { return i - 20000; });
  fixed.operator()<int64_t>(timestamp(time_unit::ns, "Europe/Paris"), [](int64_t i) { return i * 1000000007; });
  fixed.operator()<int64_t>(data_type(type_id::duration), [](int64_t i) { return -i * 13; });
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<std::string>> s;
  for (int64_t i = 0; i < n; ++i) {
    b.push_back(opt(i) ? std::optional<bool>(i % 3 == 0) : std::nullopt);
    s.push_back(opt(i) ? std::optional<std::string>(std::string(static_cast<size_t>(i % 13), char('a' + i % 26)) + "é")
                       : std::nullopt);
  }
  cols.push_back(make_bool_column(b));
  cols.push_back(make_string_column(s));
  return table(std::move(cols));
}

/// Same types, rows, nulls and value bytes (not only equal when printed).
void expect_tables_identical(const table& a, const table& b, const std::string& what) {
  ASSERT_EQ(a.num_rows(), b.num_rows()) << what;
  ASSERT_EQ(a.num_columns(), b.num_columns()) << what;
  for (size_t c = 0; c < a.num_columns(); ++c) {
    const column& x = a[c];
    const column& y = b[c];
    ASSERT_TRUE(x.type() == y.type()) << what << " column " << c;
    ASSERT_EQ(x.null_count(), y.null_count()) << what << " column " << c;
    for (int64_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x.is_valid(i), y.is_valid(i)) << what << " column " << c << " row " << i;
      if (x.type().id == type_id::string) {
        ASSERT_EQ(x.string(i), y.string(i)) << what << " column " << c << " row " << i;
      } else {
        const int w = size_of(x.type().id);
        ASSERT_EQ(std::memcmp(x.data_buffer()->as<char>() + (x.offset() + i) * w,
                              y.data_buffer()->as<char>() + (y.offset() + i) * w, static_cast<size_t>(w)),
                  0)
            << what << " column " << c << " row " << i;
      }
    }
  }
}

struct query_memory {
  std::shared_ptr<memory_budget> budget;
  std::shared_ptr<host_memory_resource> mr;
  std::unique_ptr<memory_manager> mm;
  query_memory(const engine_options& o, int64_t limit) {
    budget = std::make_shared<memory_budget>(limit, "host", "memory_limit");
    mr = std::make_shared<host_memory_resource>(budget);
    memory_manager::resources r;
    r.host = mr.get();
    r.host_budget = budget.get();
    mm = std::make_unique<memory_manager>(o, r);
  }
};

engine_options spill_to(const temp_dir& d) {
  engine_options o;
  o.spill_directory = d.path.string();
  o.spill_everything = false;  // these tests move tables themselves (the suite also runs with TUG_SPILL_EVERYTHING=1)
  o.spill_disk_limit = 0;
  return o;
}

}  // namespace

TEST(MemoryManager, EveryTypeRoundTripsThroughDiskByteForByte) {
  temp_dir dir("roundtrip");
  query_memory q(spill_to(dir), 0);
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{1024}, int64_t{5000}}) {
    // whole, and sliced so that values, offsets and validity bits start mid-buffer and mid-byte
    std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> cases = {{{0, n}, "whole"}};
    if (n > 10) cases.push_back({{3, n - 10}, "slice(3)"});
    if (n > 20) cases.push_back({{13, 5}, "slice(13, 5)"});
    cases.push_back({{n - 1, 1}, "last row"});
    cases.push_back({{0, 0}, "no rows"});
    for (auto& [window, name] : cases) {
      const std::string what = std::to_string(n) + " rows, " + name;
      table expect = all_types(n).slice(window.first, window.second);  // equal data, other buffers
      // the handle holds the only reference to its buffers
      spillable_ptr s = q.mm->make_spillable(all_types(n).slice(window.first, window.second), spill_priority::queued);
      if (window.second > 0) {
        EXPECT_GT(q.mm->spill(memory_tier::host, INT64_MAX), 0) << what;
        EXPECT_EQ(s->tier(), memory_tier::disk) << what;
      }
      auto p = s->acquire();
      EXPECT_EQ(s->tier(), memory_tier::host) << what;
      expect_tables_identical(p.get(), expect, what);
    }
  }
  {
    // a column shared with another table stays; the others move
    table t = all_types(100);
    column shared = t[3];
    spillable_ptr s = q.mm->make_spillable(std::move(t), spill_priority::queued);
    const int64_t moved = q.mm->spill(memory_tier::host, INT64_MAX);
    EXPECT_GT(moved, 0);
    EXPECT_LT(moved, s->bytes());
    EXPECT_EQ(s->tier(), memory_tier::disk);
    expect_tables_identical(s->acquire().get(), all_types(100), "partly shared");
    EXPECT_EQ(s->acquire().get()[3].data_buffer(), shared.data_buffer());
  }
  auto t = q.mm->transfers();
  EXPECT_GT(t[size_t(transfer_direction::host_to_disk)].count, 0);
  EXPECT_EQ(t[size_t(transfer_direction::host_to_disk)].count, t[size_t(transfer_direction::disk_to_host)].count);
  EXPECT_NE(q.mm->transfers_to_string().find("host->disk"), std::string::npos);
  EXPECT_NE(q.mm->transfers_to_json().find("\"disk->host\": {\"count\": "), std::string::npos);
  EXPECT_EQ(q.mm->disk_bytes(), 0);  // every extent came back
  EXPECT_GT(q.mm->disk_peak(), 0);
}

TEST(MemoryManager, SpillFileIsUnlinkedAndLeavesNothing) {
  temp_dir dir("unlinked");
  {
    query_memory q(spill_to(dir), 0);
    spillable_ptr s = q.mm->make_spillable(all_types(1000), spill_priority::queued);
    ASSERT_GT(q.mm->spill(memory_tier::host, INT64_MAX), 0);
    EXPECT_EQ(s->tier(), memory_tier::disk);
    EXPECT_EQ(dir.entries(), 0u);  // the file exists only as an open descriptor
  }
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(MemoryManager, PinnedAndSharedTablesDoNotMove) {
  temp_dir dir("pinned");
  query_memory q(spill_to(dir), 0);
  spillable_ptr a = q.mm->make_spillable(all_types(100), spill_priority::queued);
  table shared = all_types(100);
  spillable_ptr b = q.mm->make_spillable(shared, spill_priority::queued);  // `shared` still holds the buffers
  {
    auto p = a->acquire();
    EXPECT_EQ(q.mm->spill(memory_tier::host, INT64_MAX), 0);
    EXPECT_EQ(a->tier(), memory_tier::host);
    EXPECT_EQ(b->tier(), memory_tier::host);
    // a refusal's message names both: the pinned table and the one whose buffers are shared
    const std::string d = q.mm->describe(*q.budget);
    EXPECT_NE(d.find(human_bytes(a->bytes()) + " of spillable data in use by running work (1 tables)"), std::string::npos) << d;
    EXPECT_NE(d.find("that cannot move while other work shares its buffers (1 tables)"), std::string::npos) << d;
  }
  EXPECT_GT(q.mm->spill(memory_tier::host, INT64_MAX), 0);  // unpinned now
  EXPECT_EQ(a->tier(), memory_tier::disk);
  EXPECT_EQ(b->tier(), memory_tier::host);
  const std::string d = q.mm->describe(*q.budget);
  EXPECT_NE(d.find("0.0 B of spillable data in use by running work (0 tables)"), std::string::npos) << d;
  EXPECT_NE(d.find("(1 tables)"), std::string::npos) << d;
}

TEST(MemoryManager, SpillsLowestPriorityClassFirstThenLargest) {
  temp_dir dir("priority");
  query_memory q(spill_to(dir), 0);
  spillable_ptr queued_big = q.mm->make_spillable(all_types(4000), spill_priority::queued);
  spillable_ptr cold_small = q.mm->make_spillable(all_types(100), spill_priority::cold);
  spillable_ptr cold_big = q.mm->make_spillable(all_types(2000), spill_priority::cold);
  spillable_ptr buffered = q.mm->make_spillable(all_types(3000), spill_priority::buffered);
  // one byte to free: the largest of the lowest class goes
  EXPECT_EQ(q.mm->spill(memory_tier::host, 1), cold_big->bytes());
  EXPECT_EQ(cold_big->tier(), memory_tier::disk);
  EXPECT_EQ(cold_small->tier(), memory_tier::host);
  EXPECT_EQ(q.mm->spill(memory_tier::host, cold_small->bytes() + 1), cold_small->bytes() + buffered->bytes());
  EXPECT_EQ(buffered->tier(), memory_tier::disk);
  EXPECT_EQ(queued_big->tier(), memory_tier::host);
}

TEST(MemoryManager, BudgetSpillsBeforeItRefuses) {
  temp_dir dir("reclaim");
  const int64_t limit = 4 << 20;
  query_memory q(spill_to(dir), limit);
  std::vector<spillable_ptr> held;
  std::vector<table> expect;
  // fill the budget with spillable tables, then keep allocating: each allocation spills older ones
  for (int i = 0; i < 40; ++i) {
    std::vector<std::optional<int64_t>> v(20000);
    for (size_t k = 0; k < v.size(); ++k)
      v[k] = static_cast<int64_t>(k) * (i + 1);
    expect.push_back(table({i64(v)}));  // outside the budget (default resource)
    fixed_width_builder<int64_t> b(type_id::int64, 20000, q.mr.get());
    std::memcpy(b.data(), expect.back()[0].values<int64_t>(), 20000 * 8);
    held.push_back(q.mm->make_spillable(table({b.finish()}), spill_priority::queued));
  }
  EXPECT_LE(q.budget->peak(), limit);
  auto t = q.mm->transfers();
  EXPECT_GT(t[size_t(transfer_direction::host_to_disk)].bytes, 0);
  for (size_t i = 0; i < held.size(); ++i) {
    auto p = held[i]->acquire();  // restores spill others to make room
    expect_tables_identical(p.get(), expect[i], "table " + std::to_string(i));
  }
  EXPECT_LE(q.budget->peak(), limit);
}

TEST(MemoryManager, ReclaimWithinTheLimitSpillsThroughTheManager) {
  // what a device allocation that fails within its budget asks (memory_budget::reclaim): the manager
  // spills held data although the budget is not full
  temp_dir dir("reclaim_within");
  query_memory q(spill_to(dir), 64 << 20);
  fixed_width_builder<int64_t> b(type_id::int64, 100000, q.mr.get());
  std::vector<std::optional<int64_t>> v(100000, int64_t{7});
  const table expect({i64(v)});
  std::memcpy(b.data(), expect[0].values<int64_t>(), 100000 * 8);
  spillable_ptr s = q.mm->make_spillable(table({b.finish()}), spill_priority::queued);
  const int64_t used = q.budget->used();
  ASSERT_GE(used, 800000);
  const int64_t freed = q.budget->reclaim(1);
  EXPECT_GE(freed, 800000);
  EXPECT_LE(q.budget->used(), used - 800000);
  EXPECT_EQ(q.budget->reclaim(1), 0) << "nothing more to move";
  expect_tables_identical(s->acquire().get(), expect, "the table after its spill");
  memory_budget bare(1 << 20);
  EXPECT_EQ(bare.reclaim(100), 0) << "a budget without a reclaimer frees nothing";
}

TEST(MemoryManager, LastResortNamesWhatIsHeldAndSpilled) {
  temp_dir dir("last");
  query_memory q(spill_to(dir), 1 << 20);
  fixed_width_builder<int64_t> b(type_id::int64, 60000, q.mr.get());
  spillable_ptr s = q.mm->make_spillable(table({b.finish()}), spill_priority::queued);
  auto p = s->acquire();  // in use: cannot move
  try {
    make_buffer(900 << 10, q.mr.get());
    FAIL() << "expected memory_error";
  } catch (const memory_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("in use by running work (1 tables)"), std::string::npos) << m;
    EXPECT_NE(m.find("memory_limit"), std::string::npos) << m;
    EXPECT_NE(m.find("spilled so far"), std::string::npos) << m;
  }
}

TEST(MemoryManager, KeyIndexMemoryCountsAgainstTheScratchBudgetOnEveryThread) {
  // a key index's vectors and table are std containers: a scratch reservation counts them on the
  // budget installed for the query, also on the pool's threads (thread_pool hands the budget on)
  for (int64_t n : {int64_t{1}, int64_t{33}, int64_t{1024}, int64_t{200000}}) {
    std::vector<std::optional<int64_t>> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(i % 5 == 0 ? std::nullopt : std::optional<int64_t>(i * 7));
    auto budget = std::make_shared<memory_budget>(0);
    {
      key_index outside({i64(v)});
      EXPECT_EQ(budget->used(), 0) << "no budget installed: nothing counted";
    }
    scratch_budget::scope on(budget.get());
    {
      key_index k({i64(v)});
      EXPECT_GE(budget->used(), n * 8 + k.num_groups() * 8) << n << " rows: group ids and first rows";
    }
    EXPECT_EQ(budget->used(), 0) << n << " rows: released with the index";
    thread_pool pool(2);
    std::vector<int64_t> seen(8, -1);
    pool.parallel_for(8, [&](int64_t i) {
      EXPECT_EQ(scratch_budget::current(), budget.get());
      key_index k({i64(v)});
      seen[static_cast<size_t>(i)] = k.num_groups();
    });
    EXPECT_EQ(budget->used(), 0);
    EXPECT_GE(budget->peak(), n * 16) << n;
    const int64_t groups = key_index({i64(v)}).num_groups();
    for (int64_t g : seen) EXPECT_EQ(g, groups) << n << " rows: the same index on every thread";
  }
}

TEST(MemoryManager, KeyIndexBeyondTheLimitSpillsFirstThenNamesItself) {
  temp_dir dir("key_index_limit");
  query_memory q(spill_to(dir), 4 << 20);
  scratch_budget::scope on(q.budget.get());
  // 3 MiB of held data in the budget; an index of 100k distinct keys needs about 2.4 MiB more: the
  // held table spills to make room
  fixed_width_builder<int64_t> b(type_id::int64, 3 << 17, q.mr.get());
  std::memset(b.data(), 0, size_t{3} << 20);
  spillable_ptr s = q.mm->make_spillable(table({b.finish()}), spill_priority::queued);
  std::vector<std::optional<int64_t>> v;
  for (int64_t i = 0; i < 100000; ++i) v.push_back(i);
  {
    key_index k({i64(v)});
    EXPECT_EQ(k.num_groups(), 100000);
    EXPECT_EQ(s->tier(), memory_tier::disk) << "the held table made room for the index";
    EXPECT_LE(q.budget->used(), q.budget->limit());
  }
  // nothing left to move: an index larger than the limit is a memory_error naming it
  std::vector<std::optional<int64_t>> big;
  for (int64_t i = 0; i < 400000; ++i) big.push_back(i);
  try {
    key_index k({i64(big)});
    FAIL() << "expected memory_error";
  } catch (const memory_error& e) {
    EXPECT_NE(std::string(e.what()).find("key index"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("memory_limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(q.budget->used(), 0) << "a refused index releases what it reserved";
}

TEST(MemoryManager, IdleHostBlocksStayWithinWhatTheLimitLeaves) {
  // freed blocks of 1 MiB and more are kept for reuse, but under a memory_limit the idle ones and the
  // bytes in use stay within the limit together (the process's memory follows the budget)
  auto budget = std::make_shared<memory_budget>(16 << 20);
  auto mr = std::make_shared<host_memory_resource>(budget);
  std::vector<buffer_ptr> held;
  for (int i = 0; i < 12; ++i) held.push_back(make_buffer(1 << 20, mr.get()));
  held.clear();  // 12 MiB freed: kept
  EXPECT_LE(cached_host_bytes() + static_cast<size_t>(budget->used()), size_t{16} << 20);
  // 14 MiB in use in 2 MiB blocks (a class the idle 1 MiB blocks do not serve): the idle ones give way
  for (int i = 0; i < 7; ++i) {
    held.push_back(make_buffer(2 << 20, mr.get()));
    EXPECT_LE(cached_host_bytes() + static_cast<size_t>(budget->used()), (size_t{16} << 20))
        << "after " << i + 1 << " blocks";
  }
  held.clear();
  EXPECT_LE(cached_host_bytes(), size_t{16} << 20);
}

TEST(MemoryManager, DiskLimitAndMissingDirectoryRaiseIoErrorNamingThem) {
  temp_dir dir("disklimit");
  engine_options o = spill_to(dir);
  o.spill_disk_limit = 8192;
  query_memory q(o, 0);
  spillable_ptr s = q.mm->make_spillable(all_types(5000), spill_priority::queued);
  try {
    q.mm->spill(memory_tier::host, INT64_MAX);
    FAIL() << "expected io_error";
  } catch (const io_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("spill_disk_limit"), std::string::npos) << m;
    EXPECT_NE(m.find(dir.path.string()), std::string::npos) << m;
  }
  EXPECT_EQ(s->tier(), memory_tier::host);  // nothing lost: still readable
  EXPECT_EQ(s->acquire().get().num_rows(), 5000);

  engine_options gone = spill_to(dir);
  gone.spill_directory = (dir.path / "removed").string();
  query_memory g(gone, 0);
  spillable_ptr t = g.mm->make_spillable(all_types(100), spill_priority::queued);
  try {
    g.mm->spill(memory_tier::host, INT64_MAX);
    FAIL() << "expected io_error";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("spill_directory \"" + gone.spill_directory + "\""), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(t->tier(), memory_tier::host);
}

TEST(MemoryManager, SpillEverythingKeepsTablesOnDiskWhileUnused) {
  temp_dir dir("everything");
  engine_options o = spill_to(dir);
  o.spill_everything = true;
  query_memory q(o, 0);
  table t = all_types(300);
  table expect = gather(t, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  spillable_ptr s = q.mm->make_spillable(std::move(t), spill_priority::queued);
  EXPECT_EQ(s->tier(), memory_tier::disk);
  {
    auto p = s->acquire();
    EXPECT_EQ(s->tier(), memory_tier::host);
    expect_tables_identical(p.get().slice(0, 10), expect, "first rows");
  }
  EXPECT_EQ(s->tier(), memory_tier::disk);
  table back = s->take();
  EXPECT_EQ(back.num_rows(), 300);
}

TEST(MemoryManager, ConcurrentUseUnderATinyBudgetNeitherDeadlocksNorLosesData) {
  // 16 threads x 20 tables of 64 KiB (20 MiB) through 3 MiB: at worst each thread holds a table it is
  // building and one it brought back (2 MiB); the rest must spill. A budget of exactly 2 MiB left no
  // room for the block rounding and failed when a loaded machine lined every thread up at its peak.
  temp_dir dir("stress");
  query_memory q(spill_to(dir), 3 << 20);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 16; ++w)
    threads.emplace_back([&, w] {
      std::vector<spillable_ptr> mine;
      for (int i = 0; i < 20; ++i) {
        fixed_width_builder<int64_t> b(type_id::int64, 8192, q.mr.get());
        for (int64_t k = 0; k < 8192; ++k)
          b.set(k, w * 1000000 + i * 10000 + k);
        mine.push_back(q.mm->make_spillable(table({b.finish()}), spill_priority::queued));
        // use an older one again
        auto& old = mine[static_cast<size_t>(i / 2)];
        auto p = old->acquire();
        const int64_t first = p.get()[0].value<int64_t>(0);
        if (first != w * 1000000 + (i / 2) * 10000) ++failures;
      }
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(q.budget->peak(), 3 << 20);
}

TEST(Options, EnvironmentSetsDefaultsAndCodeWins) {
  ::setenv("TUG_MEMORY_LIMIT", "64MiB", 1);
  ::setenv("TUG_SPILL_EVERYTHING", "1", 1);
  ::setenv("TUG_SPILL_DEVICE_LIMIT", "16GiB", 1);
  engine_options o;
  EXPECT_EQ(o.memory_limit, int64_t{64} << 20);
  EXPECT_TRUE(o.spill_everything);
  EXPECT_EQ(o.spill_device_limit, "16GiB");
  o.memory_limit = 5;  // the code's value wins
  EXPECT_EQ(o.memory_limit, 5);
  ::setenv("TUG_MEMORY_LIMIT", "lots", 1);
  try {
    engine_options bad;
    FAIL() << "expected invalid_argument_error";
  } catch (const invalid_argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("TUG_MEMORY_LIMIT"), std::string::npos) << e.what();
  }
  ::unsetenv("TUG_MEMORY_LIMIT");
  ::unsetenv("TUG_SPILL_EVERYTHING");
  ::unsetenv("TUG_SPILL_DEVICE_LIMIT");
  EXPECT_EQ(engine_options().memory_limit, 0);
}

// ---- the engine: queries through the memory manager ----------------------------------------------

#include <sstream>

#include "tug/api/io.hpp"
#include "tug/io/parquet_source.hpp"

namespace {
data_frame numbers(int64_t n, int64_t mod) {
  std::vector<std::optional<int64_t>> k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    k[static_cast<size_t>(i)] = i % mod;
    v[static_cast<size_t>(i)] = i % 11 == 0 ? std::nullopt : std::optional<int64_t>(i * 3);
  }
  return data_frame::from_columns({{"k", i64(k)}, {"v", i64(v)}});
}
}  // namespace

TEST(Streaming, ScanFilterAggregateOverParquetLargerThanMemoryLimit) {
  // 8M rows of two int64 columns: 128 MiB decoded, in row groups of 512K rows (8 MiB). The filter and
  // the partial aggregate run on each row group as it is decoded, so the scan's output never exists
  // whole and a 48 MiB limit is enough for two threads.
  temp_dir dir("stream");
  const std::string path = (dir.path / "big.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 19;
  w.codec = "none";
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  unlimited.target_partition_rows = 1 << 19;  // one row group a partition
  sink_parquet(numbers(8 << 20, 1000).lazy(), path, w, unlimited);
  auto q = scan_parquet(path).filter(col("v") > lit(int64_t{100})).group_by({"k"}).agg({col("v").sum().alias("s"), col("v").count().alias("n")}).sort("k");
  data_frame expect = q.collect(unlimited);
  engine_options o = unlimited;
  o.memory_limit = 48 << 20;
  o.spill_directory = dir.path.string();
  query_result r = q.profile(o);
  expect_frames_equal(r.frame, expect);
  EXPECT_NE(r.statistics.find("filter (fused)"), std::string::npos) << r.statistics;
  EXPECT_NE(r.statistics.find("hash_aggregate[partial] (fused)"), std::string::npos) << r.statistics;
  EXPECT_EQ(expect.num_rows(), 1000);
}

TEST(Streaming, RowIndexOverAScanLargerThanTheLimitHoldsItsInputSpillable) {
  // 4M rows of Parquet (64 MiB decoded) numbered under a 24 MiB limit on two threads (as late
  // materialization numbers a scan's rows): each partition's first index needs the rows before it, so
  // the scan's output is held spillable as it is read, then each partition comes back alone, is
  // numbered and goes through the filter above (fused). It held the whole scan output before.
  temp_dir dir("rowindex");
  const std::string path = (dir.path / "big.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 18;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  sink_parquet(numbers(4 << 20, 1000).lazy(), path, w, unlimited);
  auto q = scan_parquet(path).with_row_index("i").filter(col("i") % lit(int64_t{4099}) == lit(int64_t{7}));
  const data_frame expect = q.collect(unlimited);
  ASSERT_EQ(expect.num_rows(), (int64_t{4} << 20) / 4099 + 1);
  engine_options o = unlimited;
  o.memory_limit = 24 << 20;
  o.spill_directory = dir.path.string();
  const query_result r = q.profile(o);
  expect_frames_equal(r.frame, expect);
  EXPECT_LE(r.peak_memory, o.memory_limit) << r.statistics;
  EXPECT_NE(r.statistics.find("filter (fused)"), std::string::npos) << r.statistics;
  EXPECT_NE(r.statistics.find("host->disk"), std::string::npos) << r.statistics;
}

TEST(Streaming, ScanCutsRowGroupsUnderAMemoryLimit) {
  // two row groups of 1M rows of two int64 columns (16 MiB decoded each). Under a 16 MiB limit on two
  // threads a scan partition aims at 2 MiB (memory_bounded_partition_size), so each row group is
  // decoded in pieces, none of which holds the whole row group; the answer does not change.
  temp_dir dir("cut");
  const std::string path = (dir.path / "two.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 20;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  sink_parquet(numbers(2 << 20, 997).lazy(), path, w, unlimited);
  auto q = scan_parquet(path).filter(col("v") > lit(int64_t{5})).group_by({"k"}).agg({col("v").sum().alias("s"), col("v").count().alias("n")}).sort("k");
  query_result whole = q.profile(unlimited);
  engine_options o = unlimited;
  o.memory_limit = 16 << 20;
  EXPECT_EQ(io::memory_bounded_partition_size(o, 2), 2 << 20);
  query_result r = q.profile(o);
  expect_frames_equal(r.frame, whole.frame);
  auto scan_partitions = [](const std::string& st) {
    const size_t at = st.find("\nscan ");
    std::istringstream line(st.substr(at + 1, st.find('\n', at + 1) - at - 1));
    std::string name;
    int64_t rows_in = 0, rows = 0, parts = 0;
    line >> name >> rows_in >> rows >> parts;
    return parts;
  };
  EXPECT_EQ(scan_partitions(whole.statistics), 2) << whole.statistics;
  EXPECT_GE(scan_partitions(r.statistics), 12) << r.statistics;
  EXPECT_EQ(io::memory_bounded_partition_size(unlimited, 2), 0);
}

namespace {
/// The join's probe ran fused into its left child, and the partial aggregate above into the join.
void expect_probe_and_partial_fused(const std::string& statistics) {
  const size_t at = statistics.find("\nhash_join[");
  ASSERT_NE(at, std::string::npos) << statistics;
  EXPECT_NE(statistics.substr(at, statistics.find('\n', at + 1) - at).find("(fused)"), std::string::npos) << statistics;
  EXPECT_NE(statistics.find("hash_aggregate[partial] (fused)"), std::string::npos) << statistics;
}
}  // namespace

TEST(Streaming, JoinProbesEachPartitionOfTheLargerSideAsItIsRead) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  // 4M rows of Parquet (64 MiB decoded) joined to 1000 keys under a 24 MiB limit: the build side is
  // indexed first, then each scan partition is probed as it is decoded, and the partial aggregate
  // above the join runs on each probe output, so neither side's whole input is ever held.
  temp_dir dir("probe");
  const std::string path = (dir.path / "big.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 19;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  sink_parquet(numbers(4 << 20, 5000).lazy(), path, w, unlimited);
  auto small = numbers(1000, 1000).lazy().select({col("k"), (col("k") * lit(int64_t{2})).alias("k2")});
  for (join_type how : {join_type::inner, join_type::left, join_type::semi, join_type::anti}) {
    SCOPED_TRACE(static_cast<int>(how));
    auto joined = scan_parquet(path).join(small, {"k"}, how);
    auto q = how == join_type::semi || how == join_type::anti
                 ? joined.group_by({"k"}).agg({col("v").sum().alias("s")}).sort("k")
                 : joined.group_by({"k"}).agg({col("v").sum().alias("s"), col("k2").max().alias("m")}).sort("k");
    data_frame expect = q.collect(unlimited);
    engine_options o = unlimited;
    o.memory_limit = 24 << 20;
    query_result r = q.profile(o);
    expect_frames_equal(r.frame, expect);
    expect_probe_and_partial_fused(r.statistics);
  }
}

TEST(Streaming, JoinAndAggregateLargerThanTheLimitRunInHashBuckets) {
  // 2M x 1M rows of Parquet (48 MiB decoded) joined on a key with 1M values, then grouped by it (1M
  // groups), under a 24 MiB limit on two threads: neither the join's sides nor the aggregate's partial
  // states fit, so both are split into hash buckets that spill to disk and are processed one by one
  temp_dir dir("buckets");
  io::parquet::write_options w;
  w.row_group_rows = 1 << 18;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  const std::string big = (dir.path / "big.parquet").string(), keys = (dir.path / "keys.parquet").string();
  sink_parquet(numbers(2 << 20, 1 << 20).lazy(), big, w, unlimited);
  sink_parquet(numbers(1 << 20, 1 << 20).lazy().rename({{"v", "w"}}), keys, w, unlimited);
  for (join_type how : {join_type::inner, join_type::left, join_type::full}) {
    SCOPED_TRACE(static_cast<int>(how));
    auto q = scan_parquet(big)
                 .join(scan_parquet(keys), {"k"}, how)
                 .group_by({"k"})
                 .agg({col("v").sum().alias("s"), col("w").max().alias("m"), col("v").count().alias("n")})
                 .select({col("s").sum(), col("m").sum(), col("n").sum(), col("k").count().alias("groups")});
    const data_frame expect = q.collect(unlimited);
    engine_options o = unlimited;
    o.memory_limit = 24 << 20;
    o.spill_directory = dir.path.string();
    const query_result r = q.profile(o);
    expect_frames_equal(r.frame, expect);
    EXPECT_LE(r.peak_memory, o.memory_limit);
    EXPECT_NE(r.statistics.find("peak spill file"), std::string::npos) << r.statistics;
    EXPECT_EQ(expect.num_rows(), 1);
  }
}

namespace {
/// `n` rows: k = `key(i)`, v = i.
data_frame keyed(int64_t n, const std::function<int64_t(int64_t)>& key) {
  std::vector<std::optional<int64_t>> k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    k[static_cast<size_t>(i)] = key(i);
    v[static_cast<size_t>(i)] = i;
  }
  return data_frame::from_columns({{"k", i64(k)}, {"v", i64(v)}});
}
}  // namespace

TEST(Streaming, SkewedJoinKeyRunsUnderASmallMemoryLimit) {
  // 600K x 300K rows of Parquet joined on a key whose value 0 holds 90% of the left rows (8.6 MiB),
  // under an 8 MiB limit: the hash bucket holding 0 is split again on the next hash bits until 0 is
  // alone in it; that bucket cannot be split, so its right rows are indexed and its left pieces probed
  // one at a time. Before, the bucket was joined whole and raised memory_error.
  temp_dir dir("skewjoin");
  io::parquet::write_options w;
  w.row_group_rows = 1 << 16;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  const std::string big = (dir.path / "big.parquet").string(), keys = (dir.path / "keys.parquet").string();
  sink_parquet(keyed(600000, [](int64_t i) { return i % 10 ? 0 : i; }).lazy(), big, w, unlimited);
  sink_parquet(keyed(300000, [](int64_t i) { return i * 10; }).lazy().rename({{"v", "w"}}), keys, w, unlimited);
  for (join_type how : {join_type::inner, join_type::left, join_type::full, join_type::semi}) {
    SCOPED_TRACE(static_cast<int>(how));
    auto joined = scan_parquet(big).join(scan_parquet(keys), {"k"}, how);
    auto q = how == join_type::semi
                 ? joined.group_by({"k"}).agg({col("v").sum().alias("s"), col("v").count().alias("n")})
                 : joined.group_by({"k"}).agg({col("v").sum().alias("s"), col("w").max().alias("m"),
                                               col("v").count().alias("n")});
    q = q.sort("k");
    const data_frame expect = q.collect(unlimited);
    engine_options o = unlimited;
    o.memory_limit = 8 << 20;
    o.spill_directory = dir.path.string();
    const query_result r = q.profile(o);
    expect_frames_equal(r.frame, expect);
    EXPECT_LE(r.peak_memory, o.memory_limit);
    EXPECT_NE(r.statistics.find("peak spill file"), std::string::npos) << r.statistics;
  }
}

TEST(Streaming, SkewedGroupByKeyRunsUnderASmallMemoryLimit) {
  // a one-phase aggregate (median) over 300K rows whose key 0 holds 90% of them, under a 16 MiB limit:
  // the bucket of key 0 (6.5 MiB with the aggregates' inputs) does not fit its share and cannot be
  // split, and is aggregated whole all the same (it fits the limit); the other keys' buckets are split
  // until they fit
  temp_dir dir("skewagg");
  io::parquet::write_options w;
  w.row_group_rows = 1 << 16;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  const std::string big = (dir.path / "big.parquet").string();
  sink_parquet(keyed(300000, [](int64_t i) { return i % 10 ? 0 : i; }).lazy(), big, w, unlimited);
  auto q = scan_parquet(big).group_by({"k"}).agg({col("v").median().alias("m"), col("v").max().alias("x")}).sort("k");
  const data_frame expect = q.collect(unlimited);
  engine_options o = unlimited;
  o.memory_limit = 16 << 20;
  o.spill_directory = dir.path.string();
  const query_result r = q.profile(o);
  expect_frames_equal(r.frame, expect);
  EXPECT_LE(r.peak_memory, o.memory_limit);
  EXPECT_EQ(expect.num_rows(), 30000);
}

TEST(Streaming, SkewedWindowKeyRunsPieceByPieceUnderASmallMemoryLimit) {
  // over() by a key whose value 0 holds 90% of 600K rows (the seed's speed anomaly: a cohort larger than
  // memory), under an 8 MiB limit: the bucket of key 0 (16 MiB with the positions) cannot be split and
  // does not fit, so its pieces are aggregated one at a time into partial states and then given the
  // merged values; every aggregation that merges (nulls in w, a null key's group too), in input order
  temp_dir dir("skewwindow");
  io::parquet::write_options w;
  w.row_group_rows = 1 << 16;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  const std::string path = (dir.path / "in.parquet").string();
  std::vector<std::optional<int64_t>> k(600000), v(600000);
  for (int64_t i = 0; i < 600000; ++i) {
    const int64_t key = i % 10 ? 0 : i % 1000;
    if (key != 10) k[static_cast<size_t>(i)] = key;
    if (i % 7 != 0) v[static_cast<size_t>(i)] = i;
  }
  sink_parquet(data_frame::from_columns({{"k", i64(k)}, {"w", i64(v)}}).lazy(), path, w, unlimited);
  std::vector<expr> windows;
  for (auto [agg, name] : std::vector<std::pair<expr, std::string>>{{col("w").sum(), "sum"},
                                                                   {col("w").mean(), "mean"},
                                                                   {col("w").count(), "count"},
                                                                   {col("w").min(), "min"},
                                                                   {col("w").max(), "max"},
                                                                   {col("w").first(), "first"},
                                                                   {col("w").last(), "last"},
                                                                   {len(), "len"}})
    windows.push_back(agg.over({"k"}).alias(name));
  auto q = scan_parquet(path).with_columns(windows);
  engine_options o = unlimited;
  o.memory_limit = 8 << 20;
  o.spill_directory = dir.path.string();
  // the result (46 MiB) is larger than the limit: written by a sink, read back without one
  const std::string out = (dir.path / "out.parquet").string();
  io::parquet::write_options small_groups;  // the writer holds a row group's rows until it is full
  small_groups.row_group_rows = 1 << 14;
  sink_parquet(q, out, small_groups, o);
  expect_frames_equal(scan_parquet(out).collect(unlimited), q.collect(unlimited));
  EXPECT_EQ(dir.entries(), 2u);  // the input and the output; the spill file is gone
  // a median does not merge from partial states: the bucket raises the unsplittable bucket's error
  try {
    scan_parquet(path).with_columns({col("w").median().over({"k"}).alias("m")}).collect(o);
    ADD_FAILURE() << "expected memory_error";
  } catch (const memory_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be split further"), std::string::npos) << e.what();
  }
}

TEST(Streaming, AnUnsplittableKeyBucketThatDoesNotFitRaisesANamedMemoryError) {
  // every row has key 7: no hash bit separates them. A join whose right side (9 MiB) is over the 8 MiB
  // limit, and a median over the same 9 MiB, raise memory_error naming the operator, the key and the sizes
  temp_dir dir("unsplit");
  io::parquet::write_options w;
  w.row_group_rows = 1 << 16;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  const std::string l = (dir.path / "l.parquet").string(), r = (dir.path / "r.parquet").string();
  sink_parquet(keyed(200000, [](int64_t) { return 7; }).lazy(), l, w, unlimited);
  sink_parquet(keyed(600000, [](int64_t) { return 7; }).lazy().rename({{"v", "w"}}), r, w, unlimited);
  engine_options o = unlimited;
  o.memory_limit = 8 << 20;
  o.spill_directory = dir.path.string();
  auto expect_error = [&](const lazy_frame& q, const std::string& op, const std::string& sizes) {
    try {
      q.collect(o);
      ADD_FAILURE() << "expected memory_error from " << op;
    } catch (const memory_error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("operator " + op, 0), 0u) << m;
      EXPECT_NE(m.find("key column(s) [k]"), std::string::npos) << m;
      EXPECT_NE(m.find(sizes), std::string::npos) << m;
      EXPECT_NE(m.find("memory_limit"), std::string::npos) << m;
    }
  };
  expect_error(scan_parquet(l).join(scan_parquet(r), {"k"}).select({col("v").sum()}), "hash_join[inner]",
               "200000 left rows");
  expect_error(scan_parquet(r).group_by({"k"}).agg({col("w").median()}), "hash_aggregate", "600000 input rows");
  EXPECT_EQ(dir.entries(), 2u);  // the two files: no spill file is left behind
}

TEST(Streaming, SortLargerThanTheLimitRunsInRanges) {
  // 1M rows of Parquet (about 27 MiB decoded, a string key among them) sorted under a 16 MiB limit: the
  // input is split into key ranges at sampled boundaries, which spill, and each is sorted in turn; the
  // first and last values of each group in sorted order equal the in-memory sort's
  temp_dir dir("sort");
  io::parquet::write_options w;
  w.row_group_rows = 1 << 16;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  const std::string path = (dir.path / "s.parquet").string();
  sink_parquet(keyed(1 << 20, [](int64_t i) { return (i * 7919) % 100003; })
                   .lazy()
                   .with_columns({concat_str({lit("s"), (col("k") % lit(int64_t{1000})).cast(data_type{type_id::string})}).alias("s")}),
               path, w, unlimited);
  for (bool desc : {false, true}) {
    SCOPED_TRACE(desc);
    auto q = scan_parquet(path)
                 .sort({col("s"), col("k")}, sort_options{{desc, false}, {false, false}, true})
                 .group_by({"s"})
                 .agg({col("v").first().alias("first"), col("v").last().alias("last"), col("k").first().alias("k"),
                       col("v").count().alias("n")})
                 .sort("s");
    const data_frame expect = q.collect(unlimited);
    engine_options o = unlimited;
    o.memory_limit = 16 << 20;
    o.spill_directory = dir.path.string();
    const query_result r = q.profile(o);
    expect_frames_equal(r.frame, expect);
    EXPECT_LE(r.peak_memory, o.memory_limit);
    EXPECT_NE(r.statistics.find("peak spill file"), std::string::npos) << r.statistics;
    EXPECT_EQ(expect.num_rows(), 1000);
  }
  // top-k: each partition is cut to its first 5000 rows, which then fit and are sorted whole
  auto top = scan_parquet(path).sort({col("s"), col("k")}, sort_options{{true, false}, {false, false}, true}).head(5000);
  engine_options o = unlimited;
  o.memory_limit = 16 << 20;
  o.spill_directory = dir.path.string();
  const query_result r = top.profile(o);
  EXPECT_NE(r.physical_plan.find("top_k"), std::string::npos) << r.physical_plan;
  expect_frames_equal(r.frame, top.collect(unlimited));
  EXPECT_LE(r.peak_memory, o.memory_limit);
}

TEST(Streaming, FullJoinUnmatchedBuildRowsFollowTheProbedPartitionsIntoASink) {
  // a full join streams its probe side into a streaming sink; the build rows no probe row matched
  // come last, after every probed partition, and the file holds every row exactly once
  temp_dir dir("full");
  auto left = numbers(5000, 300).lazy();  // keys 0..299
  auto right = data_frame::from_columns({{"k", i64({int64_t{5}, int64_t{299}, int64_t{1000}, int64_t{2000}})},
                                         {"w", i64({int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}})}})
                   .lazy();
  auto q = left.join(right, {"k"}, join_type::full);
  engine_options o = cpu_engine();
  o.target_partition_rows = 512;
  o.num_threads = 2;
  o.memory_limit = int64_t{1} << 30;  // the CPU join streams its probe side under a memory_limit
  const data_frame expect = q.sort({col("k"), col("v")}).collect(o);
  const std::string path = (dir.path / "full.parquet").string();
  sink_parquet(q, path, {}, o);
  const data_frame back = scan_parquet(path).sort({col("k"), col("v")}).collect(o);
  expect_frames_equal(back, expect);
  EXPECT_EQ(back.num_rows(), 5000 + 2);
}

TEST(Streaming, WideProbeOutputIsCutIntoPiecesUnderAMemoryLimit) {
  without_env in_memory("TUG_FORCE_EXTERNAL");  // the in-memory paths' order and shape
  // 256K rows of two int64 columns in row groups of 64K (1 MiB decoded), joined to 100 keys carrying
  // 600-byte strings: the output of one probed scan partition is ~40x wider than the partition. Under a 16 MiB limit
  // the streamed probe hands it on in pieces (exec/pieces.hpp), so the aggregate above and a sink
  // see pieces, never one partition's whole output; the answers equal the unlimited run's, the sink's
  // rows in the same order (each partition's pieces in order, before the next partition's).
  temp_dir dir("wide");
  const std::string path = (dir.path / "long.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 16;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  sink_parquet(numbers(256 << 10, 100).lazy(), path, w, unlimited);
  std::vector<std::optional<int64_t>> keys;
  std::vector<std::optional<std::string>> text;
  for (int64_t i = 0; i < 100; ++i) {
    keys.push_back(i == 7 ? std::nullopt : std::optional<int64_t>(i));
    text.push_back(i % 9 == 4 ? std::nullopt
                              : std::optional<std::string>(std::string(600, char('a' + i % 26)) + std::to_string(i)));
  }
  auto wide = data_frame::from_columns({{"k", i64(keys)}, {"s", str(text)}}).lazy();
  engine_options o = unlimited;
  o.memory_limit = 16 << 20;
  o.spill_directory = dir.path.string();
  for (join_type how : {join_type::inner, join_type::left}) {
    SCOPED_TRACE(static_cast<int>(how));
    auto joined = scan_parquet(path).join(wide, {"k"}, how);
    auto q = joined.group_by({"k"})
                 .agg({col("s").max().alias("m"), col("s").count().alias("n"), col("v").sum().alias("t")})
                 .sort("k");
    const query_result r = q.profile(o);
    expect_frames_equal(r.frame, q.collect(unlimited));
    EXPECT_LE(r.peak_memory, o.memory_limit) << r.statistics;
    const std::string out = (dir.path / "joined.parquet").string();
    io::parquet::write_options small_groups;  // the writer holds a row group's rows until it is full
    small_groups.row_group_rows = 1 << 12;
    sink_parquet(joined, out, small_groups, o);
    expect_frames_equal(scan_parquet(out).collect(unlimited), joined.collect(unlimited));
  }
}

TEST(Streaming, UniqueLargerThanTheLimitRunsInHashBuckets) {
  // 2M rows of Parquet (32 MiB decoded, a null in every 11th v) deduplicated on v and on (k, v) under
  // a 16 MiB limit on two threads: the input is split into hash buckets of the subset columns that
  // spill, and deduplicated bucket by bucket; keep first/last/none pick the same rows (k tells which)
  // as in memory, summed up by k.
  temp_dir dir("unique");
  const std::string path = (dir.path / "dups.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 18;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  sink_parquet(numbers(2 << 20, 1000).lazy().with_columns({(col("v") % lit(int64_t{300007})).alias("v")}), path, w,
               unlimited);
  engine_options o = unlimited;
  o.memory_limit = 16 << 20;
  o.spill_directory = dir.path.string();
  for (unique_keep keep : {unique_keep::first, unique_keep::last, unique_keep::none}) {
    for (const std::vector<std::string>& subset : {std::vector<std::string>{"v"}, std::vector<std::string>{"k", "v"}}) {
      SCOPED_TRACE(std::string(to_string(keep)) + " " + std::to_string(subset.size()));
      auto q = scan_parquet(path)
                   .unique(subset, keep)
                   .group_by({"k"})
                   .agg({col("v").sum().alias("s"), col("v").min().alias("lo"), col("v").max().alias("hi"),
                         col("k").count().alias("n")})
                   .sort("k");
      const query_result r = q.profile(o);
      expect_frames_equal(r.frame, q.collect(unlimited));
      EXPECT_LE(r.peak_memory, o.memory_limit) << r.statistics;
      EXPECT_NE(r.statistics.find("peak spill file"), std::string::npos) << r.statistics;
    }
  }
}

TEST(Streaming, WindowLargerThanTheLimitRunsInHashBucketsInInputOrder) {
  // 1M rows of Parquet (16 MiB decoded, nulls in v) with sum, first and last of v over k (1000 groups)
  // under a 16 MiB limit on two threads: the rows are split into hash buckets of k that spill, the
  // window runs bucket by bucket, and its output is put back in input order: the aggregate above sees
  // the same values and a sink writes the same rows in the same order as without a limit
  temp_dir dir("window");
  const std::string path = (dir.path / "in.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 18;
  engine_options unlimited = cpu_engine();
  unlimited.num_threads = 2;
  sink_parquet(numbers(1 << 20, 1000).lazy(), path, w, unlimited);
  auto windowed = scan_parquet(path).with_columns({col("v").sum().over({"k"}).alias("s"),
                                                   col("v").first().over({"k"}).alias("f"),
                                                   col("v").last().over({"k"}).alias("l")});
  engine_options o = unlimited;
  o.memory_limit = 16 << 20;
  o.spill_directory = dir.path.string();
  auto q = windowed.group_by({"k"})
               .agg({col("s").max().alias("s"), col("f").min().alias("f"), col("l").max().alias("l"),
                     (col("v") - col("f")).sum().alias("d"), col("v").count().alias("n")})
               .sort("k");
  const query_result r = q.profile(o);
  expect_frames_equal(r.frame, q.collect(unlimited));
  EXPECT_LE(r.peak_memory, o.memory_limit) << r.statistics;
  EXPECT_NE(r.statistics.find("peak spill file"), std::string::npos) << r.statistics;
  const std::string out = (dir.path / "out.parquet").string();
  io::parquet::write_options small_groups;  // the writer holds a row group's rows until it is full
  small_groups.row_group_rows = 1 << 14;
  sink_parquet(windowed, out, small_groups, o);
  expect_frames_equal(scan_parquet(out).collect(unlimited), windowed.collect(unlimited));
}

TEST(Streaming, FusedStatisticsCountEachOperatorsOwnRows) {
  auto df = numbers(10000, 7);
  engine_options o = cpu_engine();
  o.optimizer.late_materialization = false;
  o.target_partition_rows = 1000;
  query_result r = df.lazy().filter(col("k") == lit(int64_t{3})).select({(col("v") * lit(int64_t{2})).alias("w")}).profile(o);
  // scan 10000 rows in 10 partitions, filter 1429 rows (k == 3), project the same rows
  EXPECT_EQ(r.frame.num_rows(), 1429);
  auto line = [&](const std::string& op) {
    size_t at = r.statistics.find(op);
    return at == std::string::npos ? std::string() : r.statistics.substr(at, r.statistics.find('\n', at) - at);
  };
  EXPECT_NE(line("scan").find(" 10000 "), std::string::npos) << r.statistics;
  EXPECT_NE(line("filter (fused)").find(" 1429 "), std::string::npos) << r.statistics;
  EXPECT_NE(line("project (fused)").find(" 1429 "), std::string::npos) << r.statistics;
}

TEST(Streaming, JoinProbeSideSpillsWhileBuildSideRuns) {
  // the probe side (computed columns, owned by the query) is held while the build side aggregates
  // a larger input; with spill_everything it goes to disk in between and comes back intact
  temp_dir dir("join");
  auto left = numbers(300000, 5000).lazy().select({col("k"), (col("v") + lit(int64_t{1})).alias("w")});
  auto right = numbers(600000, 5000).lazy().group_by({"k"}).agg({col("v").sum().alias("s")});
  auto q = left.join(right, {"k"}).group_by({"k"}).agg({col("w").sum().alias("w"), col("s").max().alias("s")}).sort("k");
  engine_options plain = cpu_engine();
  data_frame expect = q.collect(plain);
  engine_options o = plain;
  o.spill_everything = true;
  o.spill_directory = dir.path.string();
  query_result r = q.profile(o);
  expect_frames_equal(r.frame, expect);
  EXPECT_NE(r.statistics.find("host->disk"), std::string::npos) << r.statistics;
  EXPECT_NE(r.statistics.find("disk->host"), std::string::npos) << r.statistics;
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(Streaming, OperatorStatisticsShowWhatEachOperatorSpilled) {
  // force_external under a small memory_limit: the aggregates and the join work in hash buckets that
  // spill to disk when their reservations find no room. Each operator's line shows what its own work
  // moved (the spills its reservations caused), the lines add up to the query's transfers, and the
  // JSON has the same numbers; without spills the spill columns are left out.
  temp_dir dir("opstats");
  auto left = numbers(300000, 5000).lazy().select({col("k"), (col("v") + lit(int64_t{1})).alias("w")});
  auto right = numbers(600000, 5000).lazy().group_by({"k"}).agg({col("v").sum().alias("s")});
  auto q = left.join(right, {"k"}).group_by({"k"}).agg({col("w").sum().alias("w"), col("s").max().alias("s")}).sort("k");
  engine_options plain = cpu_engine();
  plain.num_threads = 2;
  plain.spill_everything = false;  // (the suite also runs with TUG_SPILL_EVERYTHING=1)
  const query_result whole = q.profile(plain);
  EXPECT_EQ(whole.statistics.find("disk_spill_MiB"), std::string::npos) << whole.statistics;
  EXPECT_EQ(whole.statistics.find("dev_peak_MiB"), std::string::npos) << whole.statistics;
  EXPECT_NE(whole.statistics.find("peak_MiB"), std::string::npos) << whole.statistics;
  engine_options o = plain;
  o.force_external = true;
  o.memory_limit = 3 << 20;
  o.target_partition_rows = 1 << 14;
  o.spill_directory = dir.path.string();
  const query_result r = q.profile(o);
  expect_frames_equal(r.frame, whole.frame);
  ASSERT_NE(r.statistics.find("disk_spill_MiB"), std::string::npos) << r.statistics;
  const auto to_disk = static_cast<size_t>(transfer_direction::host_to_disk);
  int64_t spilled = 0, peak = 0;
  for (const operator_stats& s : r.operators) {
    spilled += s.moved[to_disk];
    peak = std::max(peak, s.peak_host_memory);
    EXPECT_LE(s.peak_host_memory, r.peak_memory) << s.name;
    if (s.spilled_to_disk() == 0) continue;
    // a line that spilled shows it in its last column (one of the lines of that name: the plan may
    // have several operators of one name, e.g. two fused partial aggregates)
    char mib[32];
    std::snprintf(mib, sizeof mib, " %.1f", static_cast<double>(s.spilled_to_disk()) / (1 << 20));
    bool shown = false;
    for (size_t at = r.statistics.find("\n" + s.name + " "); at != std::string::npos && !shown;
         at = r.statistics.find("\n" + s.name + " ", at + 1)) {
      const std::string line = r.statistics.substr(at + 1, r.statistics.find('\n', at + 1) - at - 1);
      shown = line.size() >= std::strlen(mib) && line.substr(line.size() - std::strlen(mib)) == mib;
    }
    EXPECT_TRUE(shown) << s.name << " spilled" << mib << " MiB\n" << r.statistics;
  }
  EXPECT_GT(spilled, 0) << r.statistics;
  EXPECT_GT(peak, 0) << r.statistics;
  // the operators that spilled are the bucketed ones
  for (const operator_stats& s : r.operators)
    if (s.spilled_to_disk() > 0)
      EXPECT_TRUE(s.name.find("aggregate") != std::string::npos || s.name.find("join") != std::string::npos)
          << s.name << "\n" << r.statistics;
  // rows in are the children's rows out: the sort on top gets the final aggregate's 5000 rows
  EXPECT_EQ(r.operators.back().name, "sort") << r.statistics;
  EXPECT_EQ(r.operators.back().rows_in, 5000) << r.statistics;
  EXPECT_EQ(r.operators.back().rows_out, 5000) << r.statistics;
  EXPECT_GT(r.operators.back().bytes_in, 0) << r.statistics;

  const nlohmann::json j = nlohmann::json::parse(r.statistics_json);
  ASSERT_EQ(j.at("operators").size(), r.operators.size()) << r.statistics_json;
  for (size_t i = 0; i < r.operators.size(); ++i) {
    const operator_stats& s = r.operators[i];
    const nlohmann::json& o = j.at("operators")[i];
    EXPECT_EQ(o.at("name").get<std::string>(), s.name);
    EXPECT_EQ(o.at("rows_in").get<int64_t>(), s.rows_in);
    EXPECT_EQ(o.at("bytes_in").get<int64_t>(), s.bytes_in);
    EXPECT_EQ(o.at("rows_out").get<int64_t>(), s.rows_out);
    EXPECT_EQ(o.at("bytes_out").get<int64_t>(), s.bytes_out);
    EXPECT_EQ(o.at("peak_host_memory").get<int64_t>(), s.peak_host_memory);
    EXPECT_EQ(o.at("moved").at("host->disk").get<int64_t>(), s.moved[to_disk]);
    EXPECT_EQ(o.at("fused").get<bool>(), s.fused);
  }
  EXPECT_EQ(j.at("peak_memory").get<int64_t>(), r.peak_memory);
  // every spill ran on some operator's work: the lines add up to the query's host->disk bytes
  EXPECT_EQ(j.at("transfers").at("host->disk").at("bytes").get<int64_t>(), spilled) << r.statistics;
  EXPECT_GT(j.at("peak_disk").get<int64_t>(), 0);
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(Streaming, GpuProbeSideSpillsThroughHostAndDiskAndComesBack) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  temp_dir dir("gpujoin");
  auto left = numbers(300000, 5000).lazy().select({col("k"), (col("v") + lit(int64_t{1})).alias("w")});
  auto right = numbers(600000, 5000).lazy().group_by({"k"}).agg({col("v").sum().alias("s")});
  auto q = left.join(right, {"k"}).group_by({"k"}).agg({col("w").sum().alias("w"), col("s").max().alias("s")}).sort("k");
  data_frame expect = q.collect(cpu_engine());
  engine_options o = gpu_engine();
  o.spill_everything = true;
  o.spill_directory = dir.path.string();
  query_result r = q.profile(o);
  expect_frames_equal(r.frame, expect);
  // device tables go to the pinned pool (or pageable host memory), then to disk, and back
  const bool via_pinned = r.statistics.find("device->pinned") != std::string::npos;
  EXPECT_TRUE(via_pinned || r.statistics.find("device->host") != std::string::npos) << r.statistics;
  EXPECT_NE(r.statistics.find("host->disk"), std::string::npos) << r.statistics;
  // back from disk through pageable host memory
  EXPECT_NE(r.statistics.find("disk->host"), std::string::npos) << r.statistics;
  EXPECT_NE(r.statistics.find("host->device"), std::string::npos) << r.statistics;
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(Streaming, GpuFusedChainEqualsCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  temp_dir dir("gpufused");
  const std::string path = (dir.path / "t.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 100000;
  sink_parquet(numbers(1000003, 977).lazy(), path, w, cpu_engine());
  auto q = scan_parquet(path)
               .filter(col("v") > lit(int64_t{100}))
               .with_columns({(col("v") * lit(int64_t{2})).alias("w")})
               .group_by({"k"})
               .agg({col("w").sum().alias("s"), col("v").count().alias("n")})
               .sort("k");
  data_frame expect = q.collect(cpu_engine());
  engine_options o = gpu_engine();
  o.target_partition_rows = 100000;
  query_result r = q.profile(o);
  expect_frames_equal(r.frame, expect);
  EXPECT_NE(r.statistics.find("filter (fused)"), std::string::npos) << r.statistics;
}

namespace {
/// The query's peak device memory in MiB, as the statistics print it (-1: not printed).
double peak_device_mib(const std::string& statistics) {
  const size_t at = statistics.find("peak device memory ");
  return at == std::string::npos ? -1.0 : std::stod(statistics.substr(at + 19));
}
}  // namespace

TEST(Streaming, GpuJoinProbesEachPartitionAsItIsReadUnderADeviceLimit) {
  // 8M rows of Parquet (136 MiB decoded) probe 6000 keys under a 96 MiB device limit: the CUDA join
  // indexes the small side, then probes each scan partition on the device as it is decoded, and the
  // partial aggregate above runs on each probe output, so the probe side is never whole on the device
  // (held whole, as join_partitions takes it, it would not fit)
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  without_env in_memory("TUG_FORCE_EXTERNAL");
  temp_dir dir("gpuprobe");
  const std::string path = (dir.path / "big.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 17;
  sink_parquet(numbers(8 << 20, 5000).lazy(), path, w, cpu_engine());
  // keys 5000..5999 match no left row: a full join's unmatched right rows follow the probes
  auto small = numbers(6000, 6000).lazy().select({col("k"), (col("k") * lit(int64_t{2})).alias("k2")});
  for (join_type how : {join_type::inner, join_type::left, join_type::semi, join_type::anti, join_type::full}) {
    SCOPED_TRACE(static_cast<int>(how));
    auto joined = scan_parquet(path).join(small, {"k"}, how);
    auto q = how == join_type::semi || how == join_type::anti
                 ? joined.group_by({"k"}).agg({col("v").sum().alias("s"), col("v").count().alias("n")}).sort("k")
                 : joined.group_by({"k"})
                       .agg({col("v").sum().alias("s"), col("k2").max().alias("m"), col("k2").count().alias("n")})
                       .sort("k");
    data_frame expect = q.collect(cpu_engine());
    engine_options o = gpu_engine();
    // row groups and partitions of 2 MiB on 4 threads: each thread's row group, its probe output and
    // its states fit beside the indexed right side (16 threads decoding 8 MiB row groups at once under
    // 64 MiB did not: nothing makes the scan wait for device memory)
    o.num_threads = 4;
    o.target_partition_rows = 1 << 17;
    o.spill_device_limit = std::to_string(96 << 20);
    query_result r = q.profile(o);
    expect_frames_equal(r.frame, expect);
    expect_probe_and_partial_fused(r.statistics);
    EXPECT_LE(peak_device_mib(r.statistics), 96.0) << r.statistics;
  }
}

TEST(Streaming, GpuStreamedProbeEqualsCpuOnEveryTypeAndSize) {
  // force_external makes the CUDA join stream its probe whatever the sizes (the right side is never the
  // larger one here, so it is the build side): integer, string and two-column keys with nulls (v is null
  // every 11th row), every join type, 1 to 5000 left rows in partitions of 31, against the CPU engine
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t rows : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{1024}, int64_t{5000}}) {
    SCOPED_TRACE(rows);
    auto left = numbers(rows, 37).lazy().with_columns({col("v").cast(data_type{type_id::string}).alias("s"),
                                                       (col("k") % lit(int64_t{7})).cast(data_type{type_id::int32}).alias("i")});
    auto right = numbers(std::min<int64_t>(rows, 60), 45).lazy().with_columns({col("v").cast(data_type{type_id::string}).alias("s"),
                                                      (col("k") % lit(int64_t{7})).cast(data_type{type_id::int32}).alias("i"),
                                                      (col("k") * lit(2.5)).alias("f")});
    for (join_type how : {join_type::inner, join_type::left, join_type::semi, join_type::anti, join_type::full}) {
      SCOPED_TRACE(static_cast<int>(how));
      for (const std::vector<std::string>& on : std::vector<std::vector<std::string>>{{"k"}, {"s"}, {"i", "k"}}) {
        auto q = left.join(right, on, how);
        data_frame expect = q.collect(cpu_engine());
        engine_options o = gpu_engine();
        o.force_external = true;
        o.target_partition_rows = 31;
        expect_frames_equal(q.collect(o), expect);
      }
    }
  }
}

TEST(Streaming, SinkParquetWritesWhileReadingUnderAMemoryLimit) {
  // 256 MiB of Parquet (decoded), filtered to 192 MiB and written to one file under a 96 MiB limit: each
  // row group is filtered and handed to the writer as it is decoded, and the writer appends them in
  // order (holding a row group's rows until it is full, and what arrives early)
  temp_dir dir("sinkpq");
  const std::string in = (dir.path / "in.parquet").string(), out = (dir.path / "out.parquet").string();
  io::parquet::write_options w;
  w.row_group_rows = 1 << 19;
  w.codec = "none";
  engine_options o = cpu_engine();
  o.num_threads = 2;
  o.target_partition_rows = 1 << 19;
  sink_parquet(numbers(16 << 20, 1000).lazy(), in, w, o);
  auto q = scan_parquet(in).filter(col("k") < lit(int64_t{500})).with_columns({(col("v") * lit(int64_t{2})).alias("w")});
  data_frame expect = q.collect(o);
  engine_options limited = o;
  limited.memory_limit = 96 << 20;
  limited.spill_directory = dir.path.string();
  sink_parquet(q, out, w, limited);
  expect_frames_equal(scan_parquet(out).collect(o), expect);  // in order
  // a limit too small for one partition: memory_error, and no partial file is left
  engine_options tiny = o;
  tiny.memory_limit = 1 << 20;
  const std::string failed = (dir.path / "failed.parquet").string();
  EXPECT_THROW(sink_parquet(q, failed, w, tiny), memory_error);
  EXPECT_FALSE(fs::exists(failed));
}

TEST(Streaming, SinksKeepOrderAcrossManyPartitions) {
  temp_dir dir("sinkorder");
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1024}, int64_t{5003}}) {
    engine_options o = cpu_engine();
    o.target_partition_rows = 7;  // many partitions, handed over from several threads in any order
    auto q = numbers(n, 13).lazy().filter(col("k") != lit(int64_t{4})).with_row_index("i");
    data_frame expect = q.collect(o);
    const std::string pq = (dir.path / ("o" + std::to_string(n) + ".parquet")).string();
    const std::string csv = (dir.path / ("o" + std::to_string(n) + ".csv")).string();
    sink_parquet(q, pq, {}, o);
    expect_frames_equal(scan_parquet(pq).collect(o), expect);
    sink_csv(q, csv, {}, o);
    io::csv::csv_options ro;
    ro.schema_overrides = {{"i", type_id::int64}, {"k", type_id::int64}, {"v", type_id::int64}};
    data_frame back = scan_csv(csv, ro).collect(o);
    EXPECT_EQ(back.num_rows(), expect.num_rows()) << n;
    if (n > 0) expect_frames_equal(back, expect);
    // a directory: one file per partition with rows, in order
    const std::string d = (dir.path / ("d" + std::to_string(n) + "/")).string();
    sink_parquet(q, d, {}, o);
    EXPECT_EQ(scan_parquet(d).collect(o).num_rows(), expect.num_rows()) << n;
    if (n > 0) expect_frames_equal(scan_parquet(d).collect(o), expect);
  }
}

#ifdef TUG_WITH_CUDA
TEST(MemoryManager, DeviceAllocationThatFailsWithinTheBudgetSpillsAndRetries) {
  // a real cudaErrorMemoryAllocation under an unlimited budget: the resource asks the budget's reclaimer
  // (the memory manager in a query) to free device memory and retries while something is freed
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  struct victim_reclaimer final : memory_reclaimer {
    buffer_ptr victim;
    int calls = 0;
    int64_t reclaim(memory_budget&, int64_t) override {
      ++calls;
      if (!victim) return 0;
      const auto n = static_cast<int64_t>(victim->size());
      victim.reset();
      return n;
    }
    std::string describe(const memory_budget&) const override { return {}; }
  };
  auto budget = std::make_shared<memory_budget>(0, "device");
  victim_reclaimer reclaimer;
  budget->set_reclaimer(&reclaimer);
  auto dev = make_device_resource(budget);
  const size_t chunk = size_t(256) << 20;
  reclaimer.victim = make_buffer(chunk, dev.get());
  std::vector<buffer_ptr> held;
  std::string error;
  try {
    for (int i = 0; i < 4096; ++i)  // at most 1 TiB
      held.push_back(make_buffer(chunk, dev.get()));
  } catch (const memory_error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("out of memory"), std::string::npos) << error;
  EXPECT_GE(reclaimer.calls, 1) << "the first failed allocation should have asked for memory";
  EXPECT_EQ(reclaimer.victim, nullptr) << "the victim's memory should have been taken back";
  EXPECT_GT(held.size(), 1u);
  held.clear();
  // the pool keeps what it held: give the device back to the tests after this one
  int d = 0;
  cudaMemPool_t pool{};
  ASSERT_EQ(cudaGetDevice(&d), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, d), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
}
#endif

TEST(Streaming, GpuBlockingOperatorsBeyondTheDeviceLimitRunOnTheCpuOutOfCore) {
  // 2M rows of two int64 columns (32 MB) under a 16 MiB device budget: the GPU holds a sort's, a
  // unique's, a window's, a one-phase aggregate's and a join's whole sides at once, so the lowering
  // places them on the cpu (lowerer::choose_blocking), which runs them in hash buckets or sort ranges
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto big = numbers(2000000, 977).lazy();
  auto distinct = numbers(2000000, 2000000).lazy();
  auto small = numbers(5000, 977).lazy().select({col("k"), col("v").alias("w")});
  const std::vector<std::pair<std::string, lazy_frame>> queries = {
      {"sort", big.sort({col("k"), col("v")})},
      {"unique", big.unique({"k"}, unique_keep::first).sort("k")},
      {"window", big.with_columns({col("v").sum().over({"k"}).alias("s")})},
      {"aggregate", big.group_by({"k"}).agg({col("v").median().alias("m")}).sort("k")},
      {"join", small.join(distinct, {"k"}, join_type::left).sort("k")},
  };
  for (auto& [op, q] : queries) {
    SCOPED_TRACE(op);
    data_frame expect = q.collect(cpu_engine());
    engine_options o = gpu_engine();
    o.spill_device_limit = "16MiB";
    query_result r = q.profile(o);
    expect_frames_equal(r.frame, expect);
    bool named = false;
    for (auto& f : r.fallbacks)
      named = named || (f.find("operator " + op) == 0 && f.find("may not fit the device budget") != std::string::npos);
    EXPECT_TRUE(named) << ::testing::PrintToString(r.fallbacks);
    // under the default budget (80% of the device) every one stays on the GPU
    query_result d = q.profile(gpu_engine());
    expect_frames_equal(d.frame, expect);
    for (auto& f : d.fallbacks) EXPECT_EQ(f.find("may not fit the device budget"), std::string::npos) << f;
  }
}

TEST(Streaming, GpuProbeSideSpillsWhenTheDeviceLimitIsReached) {
  // no debug option: the probe side, held on the device while the build side runs, spills because the
  // build side's allocations reach spill_device_limit (the device budget asks the memory manager)
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  // a build side that needs much more memory than the join after it: its keys meet ten of the probe's
  auto left = numbers(4000000, 5000).lazy().select({col("k"), (col("v") + lit(int64_t{1})).alias("w")});
  auto right = numbers(16000000, 5000)
                   .lazy()
                   .with_columns({(col("k") + lit(int64_t{4990})).alias("k")})
                   .group_by({"k"})
                   .agg({col("v").sum().alias("s")});
  auto q = left.join(right, {"k"}).group_by({"k"}).agg({col("w").sum().alias("w"), col("s").max().alias("s")}).sort("k");
  data_frame expect = q.collect(cpu_engine());
  ASSERT_EQ(expect.num_rows(), 10);
  engine_options o = gpu_engine();
  const double build = peak_device_mib(right.profile(o).statistics);  // MiB
  const double probe = peak_device_mib(left.profile(o).statistics);   // about what the join holds of it
  // the build side's peak and half the probe side: the probe side, held through the build side's peak,
  // must move for it. (Halfway between the build side's peak and the whole query's stopped spilling once
  // a scan feeding a fused GPU consumer left the copies to it: the whole query's peak is the join's.)
  o.spill_device_limit = std::to_string(static_cast<int64_t>((build + probe / 2) * (1 << 20)));
  query_result r = q.profile(o);
  expect_frames_equal(r.frame, expect);
  EXPECT_TRUE(r.statistics.find("device->pinned") != std::string::npos ||
              r.statistics.find("device->host") != std::string::npos)
      << "limit " << o.spill_device_limit << " (build side " << build << " MiB, probe side " << probe << " MiB)\n"
      << r.statistics;
  EXPECT_LE(peak_device_mib(r.statistics) * (1 << 20), static_cast<double>(std::stoll(o.spill_device_limit))) << r.statistics;
}
