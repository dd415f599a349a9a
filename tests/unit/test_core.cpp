#include <gtest/gtest.h>

#include "tug/core/scalar.hpp"
#include "tug/core/table.hpp"
#include "tug/core/temporal.hpp"
#include "tug/core/utf8.hpp"
#include "tug/runtime/thread_pool.hpp"
#include "test_util.hpp"
#include "memory/block_cache.hpp"
#include "tug/memory/memory_resource.hpp"

using namespace tug;

TEST(Types, NamesAndSizes) {
  EXPECT_EQ(to_string(decimal(10, 2)), "decimal[10,2]");
  EXPECT_EQ(to_string(timestamp(time_unit::ms, "UTC")), "datetime[ms, UTC]");
  EXPECT_EQ(size_of(type_id::decimal128), 16);
  EXPECT_THROW(decimal(39, 0), invalid_argument_error);
  EXPECT_THROW(decimal(5, 6), invalid_argument_error);
}

TEST(Schema, UnknownColumnNamesAvailable) {
  schema s({{"a", type_id::int64}, {"b", type_id::string}});
  try {
    s.index_of("c");
    FAIL();
  } catch (const column_not_found_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"c\""), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("a, b"), std::string::npos);
  }
  EXPECT_THROW(s.push_back({"a", type_id::int8}), invalid_argument_error);
}

class ColumnSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(ColumnSizes, GatherFilterConcatSlice) {
  int64_t n = GetParam();
  std::vector<std::optional<int64_t>> v;
  std::vector<std::optional<std::string>> s;
  for (int64_t i = 0; i < n; ++i) {
    v.push_back(i % 3 == 0 ? std::nullopt : std::optional<int64_t>(i));
    s.push_back(i % 5 == 0 ? std::nullopt : std::optional<std::string>("s" + std::to_string(i)));
  }
  column a = make_column<int64_t>(type_id::int64, v);
  column b = make_string_column(s);
  EXPECT_EQ(a.null_count(), (n + 2) / 3);
  table t({a, b});
  // filter: keep even rows
  std::vector<std::optional<bool>> m;
  for (int64_t i = 0; i < n; ++i) m.push_back(i % 2 == 0);
  table f = filter(t, make_bool_column(m));
  ASSERT_EQ(f.num_rows(), (n + 1) / 2);
  for (int64_t i = 0; i < f.num_rows(); ++i) {
    EXPECT_EQ(format_value(f[0], i), format_value(a, 2 * i));
    EXPECT_EQ(format_value(f[1], i), format_value(b, 2 * i));
  }
  // slice then concat restores the column
  int64_t cut = n / 2;
  column c = concatenate({b.slice(0, cut), b.slice(cut, n - cut)});
  expect_columns_equal(c, b);
  column d = concatenate({a.slice(0, cut), a.slice(cut, n - cut)});
  expect_columns_equal(d, a);
  // gather with a null index
  if (n > 0) {
    column g = gather(b, std::vector<int64_t>{n - 1, -1, 0});
    EXPECT_EQ(format_value(g, 0), format_value(b, n - 1));
    EXPECT_TRUE(g.is_null(1));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ColumnSizes, ::testing::Values(0, 1, 31, 32, 33, 1024, 100003));

TEST(Column, StringFilterAndGatherRuns) {
  // runs of kept rows (copied as one block), a mask with nulls, sliced inputs, empty strings,
  // and gathers with runs of consecutive indices broken by nulls and jumps
  std::vector<std::optional<std::string>> s;
  std::vector<std::optional<bool>> m;
  for (int64_t i = 0; i < 3000; ++i) {
    s.push_back(i % 11 == 0 ? std::nullopt
                            : std::optional<std::string>(std::string(static_cast<size_t>(i % 4), 'a' + i % 26)));
    m.push_back(i % 17 == 3 ? std::nullopt : std::optional<bool>((i / 7) % 3 != 0));
  }
  column full = make_string_column(s);
  column mask_full = make_bool_column(m);
  for (int64_t off : {0, 5}) {
    column c = full.slice(off, 2990), mask = mask_full.slice(off, 2990);
    column f = filter(c, mask);
    std::vector<std::string> expect, got;
    for (int64_t i = 0; i < c.size(); ++i)
      if (mask.is_valid(i) && mask.value<bool>(i)) expect.push_back(format_value(c, i));
    for (int64_t i = 0; i < f.size(); ++i) got.push_back(format_value(f, i));
    EXPECT_EQ(got, expect) << "offset " << off;
    table ft = filter(table({c, c.slice(0, c.size())}), mask);
    EXPECT_EQ(ft.num_rows(), static_cast<int64_t>(expect.size()));
    std::vector<int64_t> idx = {4, 5, 6, 7, -1, 8, 9, 100, 101, 3, 4, 2989, -1};
    column g = gather(c, idx);
    for (size_t i = 0; i < idx.size(); ++i)
      EXPECT_EQ(format_value(g, static_cast<int64_t>(i)),
                idx[i] < 0 ? format_value(make_string_column({std::nullopt}), 0) : format_value(c, idx[i]))
          << "row " << i;
  }
  // fixed-width columns under a mask without nulls: blocks of 8 rows all kept, none kept, or mixed
  std::vector<std::optional<int64_t>> iv;
  std::vector<std::optional<bool>> runs;
  for (int64_t i = 0; i < 3000; ++i) {
    iv.push_back(i % 13 == 0 ? std::nullopt : std::optional<int64_t>(i * 3));
    runs.push_back((i / 20) % 3 != 0 && i % 50 != 7);
  }
  column ic = make_column<int64_t>(type_id::int64, iv), rm = make_bool_column(runs);
  for (int64_t off : {0, 3}) {
    column c = ic.slice(off, 2990), mask = rm.slice(off, 2990);
    table f = filter(table({c, full.slice(off, 2990)}), mask);
    int64_t j = 0;
    for (int64_t i = 0; i < c.size(); ++i) {
      if (!mask.value<bool>(i)) continue;
      ASSERT_LT(j, f.num_rows());
      EXPECT_EQ(format_value(f[0], j), format_value(c, i)) << "offset " << off << " row " << i;
      EXPECT_EQ(format_value(f[1], j), format_value(full, off + i)) << "offset " << off << " row " << i;
      ++j;
    }
    EXPECT_EQ(j, f.num_rows());
  }
}

TEST(Column, SlicedNullCount) {
  column a = make_column<int32_t>(type_id::int32, std::vector<std::optional<int32_t>>{1, std::nullopt, 3, std::nullopt, 5});
  EXPECT_EQ(a.slice(1, 3).null_count(), 2);
  EXPECT_EQ(a.slice(2, 1).null_count(), 0);
  EXPECT_THROW(a.slice(3, 4), invalid_argument_error);
}

TEST(Temporal, CivilRoundTrip) {
  for (int64_t d = -800000; d < 800000; d += 997) {
    auto c = temporal::civil_from_days(d);
    EXPECT_EQ(temporal::days_from_civil(c.year, c.month, c.day), d);
  }
  EXPECT_EQ(temporal::format_date(0), "1970-01-01");
  EXPECT_EQ(temporal::format_timestamp(-1, 1000), "1969-12-31 23:59:59.999");
  EXPECT_EQ(temporal::iso_weekday(0), 4u);  // Thursday
  int64_t ticks;
  ASSERT_TRUE(temporal::parse_timestamp("2024-02-29 12:34:56.5", 1000, ticks));
  EXPECT_EQ(temporal::format_timestamp(ticks, 1000), "2024-02-29 12:34:56.500");
  EXPECT_FALSE(temporal::parse_timestamp("2023-02-29", 1000, ticks));
}

TEST(Scalar, Format) {
  EXPECT_EQ(scalar(decimal(10, 2), static_cast<__int128>(-1234)).to_string(), "-12.34");
  EXPECT_EQ(scalar(decimal(10, 3), static_cast<__int128>(5)).to_string(), "0.005");
  EXPECT_EQ(scalar(type_id::float64, 0.1).to_string(), "0.1");
  EXPECT_EQ(scalar::null(type_id::int8).to_string(), "null");
}

TEST(Memory, BudgetRaisesNamedError) {
  auto budget = std::make_shared<memory_budget>(1024, "host");
  auto mr = std::make_shared<host_memory_resource>(budget);
  auto b = make_buffer(512, mr.get());
  try {
    auto c = make_buffer(4096, mr.get());
    FAIL();
  } catch (const memory_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("limit"), std::string::npos);
    EXPECT_NE(m.find("4.0 KiB"), std::string::npos);
  }
  b.reset();
  EXPECT_EQ(budget->used(), 0);
}

TEST(Memory, BlockCacheKeepsFreedBlocksWithinItsBound) {
  static int released = 0;
  released = 0;
  int a = 0, b = 0, c = 0;
  block_cache cache(3000, [](void*) { ++released; });
  EXPECT_EQ(cache.take(1024), nullptr);
  cache.give(&a, 1024);
  cache.give(&b, 1024);
  cache.give(&c, 2048);  // 4096 idle would pass the bound: released
  EXPECT_EQ(released, 1);
  EXPECT_EQ(cache.idle_bytes(), 2048u);
  EXPECT_EQ(cache.take(2048), nullptr);  // classes are exact
  void* x = cache.take(1024);
  EXPECT_TRUE(x == &a || x == &b);
  EXPECT_EQ(cache.idle_bytes(), 1024u);
  EXPECT_EQ(cache.drain(), 1024u);  // the other 1024-byte block
  EXPECT_EQ(released, 2);
  EXPECT_EQ(cache.idle_bytes(), 0u);
  EXPECT_EQ(cache.take(1024), nullptr);
  // classes: eight an octave, at most 12.5% more, multiples of 64 bytes
  for (size_t n : {size_t{1}, size_t{64}, size_t{65}, size_t{513}, size_t{4096}, size_t{(1 << 20) + 1}, size_t{3000017},
                   size_t{1} << 33}) {
    const size_t k = block_cache::eighth_class(n);
    EXPECT_GE(k, n);
    EXPECT_EQ(k % 64, 0u);
    if (n > 512) EXPECT_LE(static_cast<double>(k), 1.125 * static_cast<double>(n)) << n;
    EXPECT_EQ(block_cache::eighth_class(k), k) << n;
  }
  EXPECT_EQ(block_cache::pow2_class(5000), 8192u);
  EXPECT_EQ(block_cache::pow2_class(1), 4096u);
}

TEST(Memory, LargeHostBlocksAreReusedAndStillCounted) {
  // a freed block of 3 MiB comes back for the next request of its class; the budget counts the bytes
  // asked for whether the block is fresh or reused, and nothing once it is freed
  auto budget = std::make_shared<memory_budget>(int64_t{64} << 20, "host");
  auto mr = std::make_shared<host_memory_resource>(budget);
  const size_t n = (size_t{3} << 20) + 100;
  void* p = mr->allocate(n);
  std::memset(p, 1, n);
  EXPECT_EQ(budget->used(), static_cast<int64_t>((n + 63) / 64 * 64));
  const size_t before = cached_host_bytes();
  if (before + block_cache::eighth_class(n) > cached_host_limit()) GTEST_SKIP() << "the cache is full";
  mr->deallocate(p, n);
  EXPECT_EQ(budget->used(), 0);
  EXPECT_GE(cached_host_bytes(), before + n);
  void* q = mr->allocate(n + 1000);  // the same class
  EXPECT_EQ(q, p);
  EXPECT_EQ(budget->used(), static_cast<int64_t>((n + 1000 + 63) / 64 * 64));
  mr->deallocate(q, n + 1000);
  // small blocks are not cached
  const size_t idle = cached_host_bytes();
  mr->deallocate(mr->allocate(4096), 4096);
  EXPECT_EQ(cached_host_bytes(), idle);
}

TEST(Scalar, CanonicalRepresentation) {
  EXPECT_EQ(scalar(type_id::uint8, uint64_t{7}), scalar(type_id::uint8, int64_t{7}));
  EXPECT_EQ(scalar(type_id::uint64, int64_t{7}), scalar(type_id::uint64, uint64_t{7}));
  EXPECT_EQ(get_scalar(make_column<uint8_t>(type_id::uint8, std::vector<uint8_t>{7}), 0), scalar(type_id::uint8, uint64_t{7}));
  EXPECT_EQ(scalar(type_id::float32, int64_t{2}).as_double(), 2.0);
  EXPECT_THROW(scalar(type_id::int32, std::string("x")), type_error);
}

TEST(Scalar, FloatFormatting) {
  EXPECT_EQ(scalar(type_id::float64, 280.0).to_string(), "280.0");
  EXPECT_EQ(scalar(type_id::float64, -0.25).to_string(), "-0.25");
  EXPECT_EQ(scalar(type_id::float64, 0.0001).to_string(), "0.0001");
  EXPECT_EQ(scalar(type_id::float64, 1e20).to_string(), "1e+20");
  EXPECT_EQ(scalar(type_id::float64, 1.5e-7).to_string(), "1.5e-07");
  EXPECT_EQ(scalar(type_id::float64, 0.1 + 0.2).to_string(), "0.30000000000000004");
}

TEST(Utf8, ValidationFollowsTable3_7) {
  const std::string ascii(100, 'a');
  for (const char* ok : {"", "a", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
                         "\xEF\xBF\xBD", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "z\xC3\xA9z"})
    for (size_t at : {size_t{0}, size_t{31}, size_t{32}, size_t{33}, size_t{99}}) {  // around the 32-byte steps
      std::string s = ascii;
      s.insert(at, ok);
      EXPECT_TRUE(is_valid_utf8(s)) << at;
    }
  // overlong, surrogate, above U+10FFFF, stray continuation, C0/C1/F5..FF, truncated at the end
  for (const char* bad : {"\xC0\x80", "\xC1\xBF", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xF0\x8F\xBF\xBF",
                          "\xF4\x90\x80\x80", "\x80", "\xBF", "\xF5\x80\x80\x80", "\xFF", "\xC3", "\xE2\x82",
                          "\xF0\x9F\x98"})
    for (size_t at : {size_t{0}, size_t{31}, size_t{32}, size_t{100}}) {
      std::string s = ascii;
      s.insert(at, bad);
      EXPECT_EQ(find_invalid_utf8(s), at) << at;
    }
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  // the example of the Unicode Standard, section 3.9 (U+FFFD substitution of maximal subparts)
  std::string out;
  EXPECT_EQ(append_utf8_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", out), 6u);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(out, "a" + r + r + r + "b" + r + "c" + r + r + "d");
  out = "x";
  EXPECT_EQ(append_utf8_lossy("\xC3\xA9\xE2\x82", out), 1u);  // a truncated sequence at the end: one U+FFFD
  EXPECT_EQ(out, "x\xC3\xA9" + r);
  out.clear();
  EXPECT_EQ(append_utf8_lossy("\xED\xA0\x80", out), 3u);  // a surrogate: each byte (ED's second byte is out of range)
  EXPECT_EQ(out, r + r + r);
}

TEST(Utf8, FirstInvalidRowOfAColumn) {
  EXPECT_EQ(first_invalid_utf8_row(str({"a", std::nullopt, "\xC3\xA9", ""}).view()), -1);
  EXPECT_EQ(first_invalid_utf8_row(str({"a", "b", "\xFF", "\xFE"}).view()), 2);
  // each value invalid although their concatenation is valid: a sequence split across two rows
  EXPECT_EQ(first_invalid_utf8_row(str({"ok", "\xC3", "\xA9"}).view()), 1);
  EXPECT_EQ(first_invalid_utf8_row(str({"\xC3\xA9", "x\xC3", "\xA9"}).slice(2, 1).view()), 0);
  EXPECT_EQ(first_invalid_utf8_row(str({"\xC3\xA9", "x\xC3", "\xA9"}).slice(0, 1).view()), -1);
}

// The error of a failing parallel_for is the one of its lowest failing index, whatever the timing.
TEST(ThreadPool, RethrowsTheLowestFailingIndex) {
  thread_pool pool(4);
  for (int rep = 0; rep < 5; ++rep) {
    try {
      pool.parallel_for(64, [&](int64_t i) {
        if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // fails last
        if (i >= 1 && i <= 3) throw std::runtime_error("index " + std::to_string(i));
      });
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "index 1");
    }
  }
}
