// User kernels (map_partitions / foreach_partition): host functors on the CPU engine, the declared
// schema's checks, NVRTC compilation and its disk cache (no GPU needed), and on a GPU source kernels,
// device functors and faults (skipped without one).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "exec/user_kernel.hpp"
#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/api/map_reduce.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/thread_pool.hpp"
#ifdef TUG_WITH_CUDA
#include <cuda_runtime_api.h>

#include "exec/cuda/nvrtc.hpp"
#endif

using namespace tug;

namespace {

/// x (i64, every 5th row null) and y (f64 = row / 4).
data_frame xy(int64_t n) {
  std::vector<std::optional<int64_t>> x;
  std::vector<std::optional<double>> y;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(i % 5 == 3 ? std::nullopt : std::optional<int64_t>(i * 3 - 7));
    y.push_back(static_cast<double>(i) / 4);
  }
  return data_frame::from_columns({{"x", i64(x)}, {"y", f64(y)}});
}

/// z = a * x + y, null where x is null (the same loop for host and device views).
void axpy_host(kernel_partition& p) {
  auto x = p.in<int64_t>(0);
  auto y = p.in<double>(1);
  auto z = p.out<double>(0);
  const double a = p.arg(0).as_double();
  for (long long i = 0; i < p.rows(); ++i) {
    if (x.is_null(i)) {
      z[i] = 0;
      z.set_null(i);
    } else {
      z[i] = a * static_cast<double>(x[i]) + y[i];
    }
  }
}

user_kernel axpy_kernel() {
  return user_kernel("axpy")
      .inputs({"x", "y"})
      .keep({"x"})
      .outputs(schema({{"z", type_id::float64}}))
      .args(kernel_args(2.5))
      .host(axpy_host);
}

/// The expected output of axpy_kernel over xy(n).
data_frame axpy_expected(int64_t n) {
  std::vector<std::optional<int64_t>> x;
  std::vector<std::optional<double>> z;
  for (int64_t i = 0; i < n; ++i) {
    bool null = i % 5 == 3;
    x.push_back(null ? std::nullopt : std::optional<int64_t>(i * 3 - 7));
    z.push_back(null ? std::nullopt : std::optional<double>(2.5 * static_cast<double>(i * 3 - 7) + i / 4.0));
  }
  return data_frame::from_columns({{"x", i64(x)}, {"z", f64(z)}});
}

/// The message of the `E` that `f` throws ("" when none, a failure when another exception).
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return {};
}

/// A fresh, empty directory for a kernel cache.
std::string temp_cache_dir(const std::string& tag) {
  auto d = std::filesystem::temp_directory_path() / ("tug_kernel_cache_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

const char* axpy_source = R"(
#include <tug/kernel.cuh>
extern "C" __global__ void axpy(long long rows, tug::in_column<long long> x, tug::in_column<double> y,
                                tug::out_column<double> z, double a) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
    if (x.is_null(i)) {
      z[i] = 0;
      z.set_null(i);
    } else {
      z[i] = a * static_cast<double>(x[i]) + y[i];
    }
  }
}
)";

/// Per row of a string column: its length in bytes and its count of ASCII vowels, both null for a null
/// row. The body is the same for the host functor and the CUDA source: tug::in_strings serves both.
#define TUG_TEXT_STATS_BODY                                                   \
  if (s.is_null(i)) {                                                         \
    len[i] = 0;                                                               \
    vowels[i] = 0;                                                            \
    len.set_null(i);                                                          \
    vowels.set_null(i);                                                       \
  } else {                                                                    \
    const char* c = s.data(i);                                                \
    int v = 0;                                                                \
    for (long long j = 0; j < s.length(i); ++j)                               \
      v += c[j] == 'a' || c[j] == 'e' || c[j] == 'i' || c[j] == 'o' || c[j] == 'u'; \
    len[i] = s.length(i);                                                     \
    vowels[i] = v;                                                            \
  }
#define TUG_STR(...) #__VA_ARGS__
#define TUG_XSTR(...) TUG_STR(__VA_ARGS__)

const std::string text_stats_source = std::string(R"(
#include <tug/kernel.cuh>
extern "C" __global__ void text_stats(long long rows, tug::in_column<long long> x, tug::in_strings s,
                                      tug::out_column<long long> len, tug::out_column<int> vowels) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
)") + TUG_XSTR(TUG_TEXT_STATS_BODY) + "\n  }\n}\n";

/// s: strings with nulls, empty strings and multi-byte UTF-8; x: the row number.
data_frame texts(int64_t n) {
  std::vector<std::optional<std::string>> s;
  std::vector<std::optional<int64_t>> x;
  const char* words[] = {"", "a", "tug", "über", "aeiou", "zzz", "Grüße, aeon"};
  for (int64_t i = 0; i < n; ++i) {
    s.push_back(i % 7 == 5 ? std::nullopt : std::optional<std::string>(words[i % 7] + std::string(i % 3, 'o')));
    x.push_back(i);
  }
  return data_frame::from_columns({{"x", i64(x)}, {"s", str(s)}});
}

user_kernel text_stats_kernel() {
  return user_kernel("text_stats")
      .inputs({"x", "s"})
      .keep({"x"})
      .outputs(schema({{"len", type_id::int64}, {"vowels", type_id::int32}}))
      .host([](kernel_partition& p) {
        tug::in_strings s = p.in_strings(1);
        auto len = p.out<long long>(0);
        auto vowels = p.out<int>(1);
        EXPECT_EQ(s.size, p.rows());
        for (long long i = 0; i < p.rows(); ++i) {
          TUG_TEXT_STATS_BODY
        }
      });
}

/// What text_stats_kernel makes of texts(n), computed from the strings themselves.
data_frame text_stats_expected(int64_t n) {
  data_frame in = texts(n);
  table t = in.to_table();
  std::vector<std::optional<int64_t>> x, len;
  std::vector<std::optional<int32_t>> vowels;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(i);
    if (t[1].is_null(i)) {
      len.push_back(std::nullopt);
      vowels.push_back(std::nullopt);
      continue;
    }
    std::string_view v = t[1].string(i);
    len.push_back(static_cast<int64_t>(v.size()));
    vowels.push_back(static_cast<int32_t>(std::count_if(v.begin(), v.end(), [](char c) {
      return std::string_view("aeiou").find(c) != std::string_view::npos;
    })));
  }
  return data_frame::from_columns(
      {{"x", i64(x)}, {"len", i64(len)}, {"vowels", i32(vowels)}});
}

/// `k` (with a host functor) over texts(n) on the CPU engine equals `expected(n)` for the edge sizes, in
/// partitions of 7 rows (slices of one column) and in one.
void expect_over_texts(const user_kernel& k, data_frame (*expected)(int64_t)) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    for (int64_t target : {7, 1 << 20}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      engine_options o = cpu_engine();
      o.target_partition_rows = target;
      expect_frames_equal(texts(n).lazy().map_partitions(k).collect(o), expected(n));
    }
  }
}

}  // namespace

TEST(UserKernel, StringInputsThroughOffsetsAndChars) {
  // the host functor reads tug::in_strings, the view a CUDA source kernel gets: nulls, empty strings,
  // multi-byte characters, partitions that are slices of one column (offsets from `offset`)
  expect_over_texts(text_stats_kernel(), text_stats_expected);
  // a column with no string at all: zero-length chars
  auto empty = data_frame::from_columns({{"x", i64({1, 2})}, {"s", str({"", std::nullopt})}});
  data_frame got = empty.lazy().map_partitions(text_stats_kernel()).collect(cpu_engine());
  EXPECT_EQ(rows_of(got), (std::vector<std::string>{"1|0|0", "2|null|null"}));
  // the typed views check the column's type
  std::string m = error_of<type_error>([&] {
    texts(3).lazy().map_partitions(user_kernel("wrong").host([](kernel_partition& p) { p.in_strings(0); })).collect(
        cpu_engine());
  });
  EXPECT_NE(m.find("input \"x\" is i64, not a string column"), std::string::npos) << m;
  m = error_of<type_error>([&] {
    texts(3).lazy().map_partitions(user_kernel("wrong").host([](kernel_partition& p) { p.in<int64_t>(1); })).collect(
        cpu_engine());
  });
  EXPECT_NE(m.find("input \"s\" is str, not a column of 8-byte values"), std::string::npos) << m;
}

TEST(UserKernel, HostFunctorEdgeSizesAndPartitions) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    for (int64_t target : {7, 32, 1 << 20}) {
      std::atomic<int64_t> calls{0}, rows{0};
      user_kernel k = axpy_kernel();
      k.host([&](kernel_partition& p) {
        ++calls;
        rows += p.rows();
        EXPECT_EQ(p.where(), backend::cpu);
        EXPECT_EQ(p.stream(), nullptr);
        axpy_host(p);
      });
      engine_options o = cpu_engine();
      o.target_partition_rows = target;
      data_frame out = xy(n).lazy().map_partitions(k).collect(o);
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      expect_frames_equal(out, axpy_expected(n));
      EXPECT_EQ(rows.load(), n);
      if (n > 0) EXPECT_EQ(calls.load(), static_cast<int64_t>(out.partitions().size()));  // collect drops empty ones
      if (n > target) EXPECT_GT(calls.load(), 1);
    }
  }
}

namespace {

/// s: 480-byte strings (so that a row is wide) with nulls, x: the row number.
data_frame wide_rows(int64_t n) {
  std::vector<std::optional<std::string>> s;
  std::vector<std::optional<int64_t>> x;
  for (int64_t i = 0; i < n; ++i) {
    s.push_back(i % 9 == 4 ? std::nullopt
                           : std::optional<std::string>(std::string(470, 'a' + i % 26) + std::to_string(1000000000 + i)));
    x.push_back(i);
  }
  return data_frame::from_columns({{"x", i64(x)}, {"s", str(s)}});
}

/// What a call of the wide kernel saw.
struct call_seen {
  int64_t number, first, rows, partition_rows;
};

/// len = the length of s (null for null s), recording every call in `seen`.
user_kernel wide_kernel(std::vector<call_seen>* seen, std::mutex* mu) {
  return user_kernel("wide").inputs({"s"}).outputs(schema({{"len", type_id::int64}})).host([=](kernel_partition& p) {
    {
      std::lock_guard<std::mutex> g(*mu);
      seen->push_back({p.number(), p.first_row(), p.rows(), p.partition_rows()});
    }
    tug::in_strings s = p.in_strings(0);
    auto len = p.out<long long>(0);
    for (long long i = 0; i < p.rows(); ++i) {
      len[i] = s.length(i);
      if (s.is_null(i)) len.set_null(i);
    }
  });
}

}  // namespace

TEST(UserKernel, CallsAreCutToWhatAPartitionMayUseUnderAMemoryLimit) {
  // memory_limit / threads bounds one call: its input (~480 bytes a row) and its output (8 bytes and a
  // bit a row); a larger partition is cut into zero-copy slices, one call each, and the answer equals
  // the unlimited one. Partitions of 7 rows fit; of 100 rows are slices of a longer column, cut again.
  const int threads = 8;
  const int64_t limit = 64 << 10;
  const int64_t budget = limit / global_thread_pool(threads).size();
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    for (int64_t target : {7, 100, 1 << 20}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      std::vector<call_seen> seen;
      std::mutex mu;
      engine_options o = cpu_engine();
      o.target_partition_rows = target;
      o.num_threads = threads;
      data_frame unlimited = wide_rows(n).lazy().map_partitions(wide_kernel(&seen, &mu)).collect(o);
      const size_t whole_calls = seen.size();
      for (auto& c : seen) EXPECT_EQ(c.rows, c.partition_rows);  // no limit: whole partitions
      seen.clear();
      o.memory_limit = limit;
      data_frame got = wide_rows(n).lazy().map_partitions(wide_kernel(&seen, &mu)).collect(o);
      expect_frames_equal(got, unlimited);
      // each call fits: its strings' bytes (offsets and chars; validity) and its output
      table in = wide_rows(n).to_table();
      int64_t rows = 0;
      int64_t most = 0;
      for (auto& c : seen) {
        const int64_t start = c.number * target + c.first;  // partitions of the frame are `target` rows
        ASSERT_LE(start + c.rows, n);
        ASSERT_LE(c.first + c.rows, c.partition_rows);
        table call = table({in[1]}).slice(start, c.rows);
        // (a call is sized by the partition's average row: give it one string's bytes of slack)
        EXPECT_LE(call.memory_usage() + c.rows * 8 + (c.rows + 31) / 32 * 4, budget + 480) << c.rows << " rows";
        // the computed size: partitions of the same rows get the same cut
        table part = table({in[1]}).slice(c.number * target, c.partition_rows);
        user_kernel k = wide_kernel(&seen, &mu);
        EXPECT_LE(c.rows, kernel_call_rows(k, part, budget, ""));
        rows += c.rows;
        most = std::max(most, c.rows);
      }
      EXPECT_EQ(rows, n);
      // the cut is near the largest that fits (~16 rows), not arbitrarily small
      if (n >= 32 && target >= 32) EXPECT_GE(most, 8);
      if (n >= 32 && target >= 32) EXPECT_GT(seen.size(), whole_calls);
      if (target == 7) EXPECT_EQ(seen.size(), whole_calls);
    }
  }
}

TEST(UserKernel, ARowThatCannotFitACallIsAMemoryErrorNamingTheKernel) {
  std::vector<call_seen> seen;
  std::mutex mu;
  engine_options o = cpu_engine();
  o.num_threads = 8;
  o.memory_limit = 2048;  // 256 bytes a call: less than one row
  std::string m = error_of<memory_error>(
      [&] { wide_rows(10).lazy().map_partitions(wide_kernel(&seen, &mu)).collect(o); });
  EXPECT_NE(m.find("kernel \"wide\": one row takes "), std::string::npos) << m;
  EXPECT_NE(m.find("one call may use " + std::to_string(2048 / global_thread_pool(8).size()) + " bytes"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("raise memory_limit"), std::string::npos) << m;
  EXPECT_TRUE(seen.empty());
  // no rows: nothing to cut, no error
  EXPECT_EQ(wide_rows(0).lazy().map_partitions(wide_kernel(&seen, &mu)).collect(o).num_rows(), 0);
}

TEST(UserKernel, KernelCallBytesCountInputsKeptAndOutputs) {
  user_kernel k =
      user_kernel("k").outputs(schema({{"a", type_id::int64}, {"b", type_id::int8}, {"c", type_id::string}}));
  table in = xy(64).to_table();  // x: 8 bytes and a validity bit a row, y: 8 bytes
  EXPECT_EQ(in.memory_usage(), 64 * 16 + 8);
  // 32 of 64 rows: half the input; a: 8 a row, b: 1 a row, c: 33 offsets; one 4-byte bitmap word each
  EXPECT_EQ(kernel_call_bytes(k, in, 32), 64 * 16 / 2 + 4 + 32 * 8 + 32 + 33 * 8 + 3 * 4);
  EXPECT_EQ(kernel_call_bytes(k, in, 0), 8 + 0);  // c's one offset
  const int64_t all = kernel_call_bytes(k, in, 64);
  EXPECT_EQ(kernel_call_rows(k, in, all, ""), 64);
  EXPECT_EQ(kernel_call_rows(k, in, 0, ""), 64);  // no bound
  const int64_t r = kernel_call_rows(k, in, all / 2, "");
  EXPECT_LE(kernel_call_bytes(k, in, r), all / 2);
  EXPECT_GT(kernel_call_bytes(k, in, r + 1), all / 2);
}

namespace {

/// Per row of texts(): s upper-cased (ASCII letters) with x % 3 '!' after it, or s as it is when x % 5 == 0
/// (through out_strings::set), null where s is null; `len` its length. One body for the host form
/// (kernel_partition::make_strings) and the CUDA source: the two launches of a string output.
#define TUG_SHOUT_BODY                                           \
  if (s.is_null(i)) {                                            \
    o.set_null(i);                                               \
    len.set_null(i);                                             \
  } else if (x[i] % 5 == 0) {                                    \
    o.set(i, s.data(i), s.length(i));                            \
    len[i] = s.length(i);                                        \
  } else {                                                       \
    const long long n = s.length(i), bangs = x[i] % 3;           \
    o.set_length(i, n + bangs);                                  \
    char* d = o.data(i);                                         \
    if (d) {                                                     \
      for (long long j = 0; j < n; ++j) {                        \
        const char c = s.data(i)[j];                             \
        d[j] = c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; \
      }                                                          \
      for (long long j = 0; j < bangs; ++j) d[n + j] = '!';      \
    }                                                            \
    len[i] = n + bangs;                                          \
  }

const std::string shout_source = std::string(R"(
#include <tug/kernel.cuh>
extern "C" __global__ void shout(long long rows, tug::in_column<long long> x, tug::in_strings s,
                                 tug::out_strings o, tug::out_column<long long> len) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
)") + TUG_XSTR(TUG_SHOUT_BODY) + "\n  }\n}\n";

user_kernel shout_kernel() {
  return user_kernel("shout")
      .inputs({"x", "s"})
      .keep({"x"})
      .outputs(schema({{"t", type_id::string}, {"len", type_id::int64}}))
      .host([](kernel_partition& p) {
        auto x = p.in<long long>(0);
        tug::in_strings s = p.in_strings(1);
        auto len = p.out<long long>(1);
        p.set_output(0, p.make_strings([&](const tug::out_strings& o) {
          for (long long i = 0; i < p.rows(); ++i) {
            TUG_SHOUT_BODY
          }
        }));
      });
}

/// What shout_kernel makes of texts(n), computed from the strings themselves.
data_frame shout_expected(int64_t n) {
  table t = texts(n).to_table();
  std::vector<std::optional<int64_t>> x, len;
  std::vector<std::optional<std::string>> out;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(i);
    if (t[1].is_null(i)) {
      out.push_back(std::nullopt);
      len.push_back(std::nullopt);
      continue;
    }
    std::string v(t[1].string(i));
    if (i % 5 != 0) {
      for (char& c : v)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      v += std::string(static_cast<size_t>(i % 3), '!');
    }
    len.push_back(static_cast<int64_t>(v.size()));
    out.push_back(v);
  }
  return data_frame::from_columns({{"x", i64(x)}, {"t", str(out)}, {"len", i64(len)}});
}

}  // namespace

TEST(UserKernel, StringOutputsInTwoPassesOnTheHost) {
  // the loop body a CUDA source kernel runs twice for a string output, run by the host form through
  // make_strings: nulls, empty strings, multi-byte characters, sliced partitions
  expect_over_texts(shout_kernel(), shout_expected);
  // a row given fewer bytes in the writing pass keeps its length (zero bytes after), more are cut
  auto one = data_frame::from_columns({{"x", i64({1, 2})}});
  user_kernel k = user_kernel("short").inputs({"x"}).outputs(schema({{"t", type_id::string}})).host(
      [](kernel_partition& p) {
        p.set_output(0, p.make_strings([&](const tug::out_strings& o) {
          o.set(0, "abcdef", o.sizing() ? 3 : 1);  // sized 3, writes 1
          o.set(1, "abcdef", o.sizing() ? 2 : 6);  // sized 2, writes 6: cut to 2
        }));
      });
  data_frame got = one.lazy().map_partitions(k).collect(cpu_engine());
  table t = got.to_table();
  EXPECT_EQ(t[0].string(0), std::string_view("a\0\0", 3));
  EXPECT_EQ(t[0].string(1), "ab");
}

TEST(UserKernel, RunsFusedIntoTheScan) {
  engine_options o = cpu_engine();
  o.target_partition_rows = 10;
  auto r = xy(100).lazy().filter(col("y") > lit(1.0)).map_partitions(axpy_kernel()).profile(o);
  EXPECT_NE(r.statistics.find("map_partitions (fused)"), std::string::npos) << r.statistics;
  EXPECT_NE(r.physical_plan.find("map_partitions \"axpy\" (host)"), std::string::npos) << r.physical_plan;
}

namespace {

/// One column of every fixed-width type (b, i8, i16, i32, u64, f32, d, ts, dec), every 7th row null.
data_frame every_fixed_width_type(int64_t n) {
  std::vector<std::pair<std::string, column>> cols;
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<int8_t>> i8;
  std::vector<std::optional<int16_t>> i16;
  std::vector<std::optional<int32_t>> i32v;
  std::vector<std::optional<uint64_t>> u64;
  std::vector<std::optional<float>> f32;
  std::vector<std::optional<int32_t>> d32;
  std::vector<std::optional<int64_t>> ts;
  std::vector<std::optional<__int128>> dec;
  for (int64_t i = 0; i < n; ++i) {
    bool null = i % 7 == 2;
    auto opt = [&](auto v) { return null ? std::nullopt : std::optional<decltype(v)>(v); };
    b.push_back(opt(i % 2 == 0));
    i8.push_back(opt(static_cast<int8_t>(i - 60)));
    i16.push_back(opt(static_cast<int16_t>(i * 300)));
    i32v.push_back(opt(static_cast<int32_t>(-i * 100000)));
    u64.push_back(opt(static_cast<uint64_t>(i) << 40));
    f32.push_back(opt(static_cast<float>(i) / 3));
    d32.push_back(opt(static_cast<int32_t>(18000 + i)));
    ts.push_back(opt(static_cast<int64_t>(i) * 1000000007));
    dec.push_back(opt(static_cast<__int128>(i) * 1000000000000LL - 5));
  }
  cols.push_back({"b", make_bool_column(b)});
  cols.push_back({"i8", make_column<int8_t>(type_id::int8, i8)});
  cols.push_back({"i16", make_column<int16_t>(type_id::int16, i16)});
  cols.push_back({"i32", make_column<int32_t>(type_id::int32, i32v)});
  cols.push_back({"u64", make_column<uint64_t>(type_id::uint64, u64)});
  cols.push_back({"f32", make_column<float>(type_id::float32, f32)});
  cols.push_back({"d", make_column<int32_t>(type_id::date32, d32)});
  cols.push_back({"ts", make_column<int64_t>(timestamp(time_unit::ns), ts)});
  cols.push_back({"dec", make_column<__int128>(decimal(30, 4), dec)});
  return data_frame::from_columns(cols);
}

/// The schema of a copy of every column of `s`, each named with "_copy".
schema copies_of(const schema& s) {
  schema out;
  for (auto& f : s)
    out.push_back({f.name + "_copy", f.type});
  return out;
}

/// Copies each column of every_fixed_width_type to an output of its type, value by value and null by null:
/// the CUDA source of the host functor in EveryFixedWidthTypeSlicedWithNulls.
const char* copy_every_type_source = R"(
#include <tug/kernel.cuh>
#define TUG_COPY(in, out) if (in.is_null(i)) { out[i] = {}; out.set_null(i); } else out[i] = in[i];
extern "C" __global__ void copy_every_type(
    long long rows, tug::in_column<bool> b, tug::in_column<signed char> i8, tug::in_column<short> i16,
    tug::in_column<int> i32, tug::in_column<unsigned long long> u64, tug::in_column<float> f32,
    tug::in_column<int> d, tug::in_column<long long> ts, tug::in_column<__int128> dec, tug::out_column<bool> b2,
    tug::out_column<signed char> i82, tug::out_column<short> i162, tug::out_column<int> i322,
    tug::out_column<unsigned long long> u642, tug::out_column<float> f322, tug::out_column<int> d2,
    tug::out_column<long long> ts2, tug::out_column<__int128> dec2) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
    TUG_COPY(b, b2) TUG_COPY(i8, i82) TUG_COPY(i16, i162) TUG_COPY(i32, i322) TUG_COPY(u64, u642)
    TUG_COPY(f32, f322) TUG_COPY(d, d2) TUG_COPY(ts, ts2) TUG_COPY(dec, dec2)
  }
}
)";

}  // namespace

TEST(UserKernel, EveryFixedWidthTypeSlicedWithNulls) {
  // copies every input to the output of the same type, value by value and null by null
  auto copy = [](kernel_partition& p) {
    for (size_t c = 0; c < p.num_inputs(); ++c) {
      column_view in = p.input(c);
      const mutable_column_view& o = p.output(c);
      type_dispatch(in.type.id, [&]<type_id Id>() {
        if constexpr (Id != type_id::string) {
          using T = storage_t<Id>;
          for (int64_t i = 0; i < p.rows(); ++i) {
            o.values<T>()[i] = in.is_valid(i) ? in.value<T>(i) : T{};
            if (in.is_null(i)) o.set_null(i);
          }
        }
      });
    }
  };
  for (int64_t n : {0, 1, 70}) {
    data_frame df = every_fixed_width_type(n);
    for (int64_t target : {9, 1 << 20}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      engine_options o = cpu_engine();
      o.target_partition_rows = target;  // 9: sliced partitions, whose columns start at an offset
      user_kernel k = user_kernel("copy").outputs(copies_of(df.schema())).host(copy);
      data_frame got = df.lazy().map_partitions(k).collect(o);
      ASSERT_EQ(got.schema().size(), df.schema().size());
      table a = got.to_table(), e = df.to_table();
      for (size_t c = 0; c < a.num_columns(); ++c)
        expect_columns_equal(a[c], e[c], df.schema()[c].name);
    }
  }
}

TEST(UserKernel, StringsAndOtherLengthsThroughSetOutput) {
  auto df = data_frame::from_columns({{"s", str({"ab", std::nullopt, "", "xyz", "q"})}});
  // one row per partition: the partition's row count and its strings joined
  user_kernel k = user_kernel("summary")
                      .outputs(schema({{"rows", type_id::int64}, {"joined", type_id::string}}))
                      .host([](kernel_partition& p) {
                        std::string j;
                        column_view s = p.input(0);
                        for (int64_t i = 0; i < p.rows(); ++i)
                          j += s.is_null(i) ? "~" : std::string(s.string(i));
                        p.set_output(0, make_column<int64_t>(type_id::int64, std::vector<int64_t>{p.rows()}));
                        string_builder b;
                        b.append(j);
                        p.set_output(1, b.finish());
                      });
  engine_options o = cpu_engine();
  o.target_partition_rows = 2;
  data_frame got = df.lazy().map_partitions(k).collect(o);
  std::vector<std::string> rows = rows_of(got);
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, (std::vector<std::string>{"1|q", "2|ab~", "2|xyz"}));
}

TEST(UserKernel, ScalarArguments) {
  auto args = kernel_args(1.5, 2.5f, 3, int64_t{4}, uint8_t{5}, true, "s");
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(args[0].type().id, type_id::float64);
  EXPECT_EQ(args[1].type().id, type_id::float32);
  EXPECT_EQ(args[2].type().id, type_id::int32);
  EXPECT_EQ(args[3].type().id, type_id::int64);
  EXPECT_EQ(args[4].type().id, type_id::uint8);
  EXPECT_EQ(args[5].type().id, type_id::boolean);
  EXPECT_EQ(args[6].as_string(), "s");
  EXPECT_EQ(args[2].as_int64(), 3);
  std::string seen;
  std::mutex mu;
  user_kernel k = user_kernel("args").args(args).host([&](kernel_partition& p) {
    std::lock_guard<std::mutex> g(mu);
    seen = p.arg(6).as_string() + std::to_string(p.arg(3).as_int64());
    EXPECT_THROW(p.arg(7), invalid_argument_error);
  });
  xy(3).lazy().foreach_partition(k, cpu_engine());
  EXPECT_EQ(seen, "s4");
}

TEST(UserKernel, ForeachSeesEveryRowOnce) {
  std::atomic<int64_t> rows{0}, sum{0}, calls{0};
  user_kernel k = user_kernel("sum").inputs({"x"}).host([&](kernel_partition& p) {
    ++calls;
    auto x = p.in<int64_t>(0);
    for (long long i = 0; i < p.rows(); ++i)
      if (x.valid(i)) sum += x[i];
    rows += p.rows();
  });
  engine_options o = cpu_engine();
  o.target_partition_rows = 33;
  xy(1024).lazy().foreach_partition(k, o);
  int64_t want = 0;
  for (int64_t i = 0; i < 1024; ++i)
    if (i % 5 != 3) want += i * 3 - 7;
  EXPECT_EQ(rows.load(), 1024);
  EXPECT_EQ(sum.load(), want);
  EXPECT_GT(calls.load(), 1);
  EXPECT_THROW(xy(3).lazy().foreach_partition(axpy_kernel(), o), invalid_argument_error);
}

TEST(UserKernel, FiltersAboveAKernelStayAbove) {
  // a filter on a kept column above the kernel must not reach the scan: the kernel sees every row
  std::atomic<int64_t> rows{0};
  user_kernel k = axpy_kernel();
  k.host([&](kernel_partition& p) {
    rows += p.rows();
    axpy_host(p);
  });
  data_frame got = xy(100).lazy().map_partitions(k).filter(col("x") > lit(int64_t{100})).select({col("z")}).collect(
      cpu_engine());
  EXPECT_EQ(rows.load(), 100);
  data_frame want = axpy_expected(100).lazy().filter(col("x") > lit(int64_t{100})).select({col("z")}).collect(
      cpu_engine());
  expect_frames_equal(got, want);
}

TEST(UserKernel, DeclarationErrorsAtBuildTime) {
  auto lf = xy(3).lazy();
  std::string m = error_of<column_not_found_error>([&] { lf.map_partitions(user_kernel("k").inputs({"nope"}).host(axpy_host)); });
  EXPECT_NE(m.find("kernel \"k\""), std::string::npos) << m;
  EXPECT_NE(m.find("nope"), std::string::npos) << m;
  EXPECT_THROW(lf.map_partitions(user_kernel("k").keep({"nope"}).host(axpy_host)), column_not_found_error);
  EXPECT_THROW(lf.map_partitions(user_kernel("k").keep({"x"}).outputs(schema({{"x", type_id::int64}})).host(axpy_host)),
               invalid_argument_error);
  EXPECT_THROW(lf.map_partitions(user_kernel("no_form")), invalid_argument_error);
  auto s = data_frame::from_columns({{"s", str({"a"})}}).lazy();
  s.map_partitions(user_kernel("src").source({"", "src"}));  // a source kernel reads strings (tug::in_strings)
  // and makes them (tug::out_strings)
  s.map_partitions(user_kernel("src").outputs(schema({{"t", type_id::string}})).source({"", "src"}));
  m = error_of<invalid_argument_error>(
      [&] { lf.map_partitions(user_kernel("src").source({"", "src"}).args(kernel_args("text"))); });
  EXPECT_NE(m.find("argument 0 is a string"), std::string::npos) << m;
  // a launch no device takes: named with its fields; the limits themselves are taken
  m = error_of<invalid_argument_error>(
      [&] { lf.map_partitions(user_kernel("wide").source({"", "wide"}).launch({1, 1025, 0})); });
  EXPECT_NE(m.find("kernel \"wide\": launch (grid 1, block 1025, shared_bytes 0) is out of range"), std::string::npos)
      << m;
  for (launch_config bad : {launch_config{-1, 0, 0}, launch_config{int64_t{1} << 31, 256, 0}, launch_config{0, -32, 0},
                            launch_config{0, 0, -1}, launch_config{0, 0, int64_t{1} << 32}})
    EXPECT_THROW(lf.map_partitions(user_kernel("k").source({"", "k"}).launch(bad)), invalid_argument_error)
        << bad.grid << " " << bad.block << " " << bad.shared_bytes;
  lf.map_partitions(user_kernel("k").source({"", "k"}).launch({(int64_t{1} << 31) - 1, 1024, (int64_t{1} << 32) - 1}));
  lf.map_partitions(user_kernel("k").host(axpy_host).launch({0, 0, 0}));
}

TEST(UserKernel, OutputChecksNameTheKernelAndThePartition) {
  engine_options o = cpu_engine();
  o.target_partition_rows = 10;
  auto lf = xy(30).lazy();
  schema f64_out({{"z", type_id::float64}});
  // a column of another type than declared
  std::string m = error_of<type_error>([&] {
    lf.map_partitions(user_kernel("wrong_type").outputs(f64_out).host([](kernel_partition& p) {
        p.set_output(0, make_column<int64_t>(type_id::int64, std::vector<int64_t>(static_cast<size_t>(p.rows()), 1)));
      })).collect(o);
  });
  EXPECT_NE(m.find("kernel \"wrong_type\", partition #"), std::string::npos) << m;
  EXPECT_NE(m.find("(10 rows)"), std::string::npos) << m;
  EXPECT_NE(m.find("output \"z\" is i64 but the kernel declares f64"), std::string::npos) << m;
  // a length other than the kept columns'
  m = error_of<compute_error>([&] {
    lf.map_partitions(user_kernel("wrong_length").keep({"x"}).outputs(f64_out).host([](kernel_partition& p) {
        p.set_output(0, make_column<double>(type_id::float64, std::vector<double>{1.0}));
      })).collect(o);
  });
  EXPECT_NE(m.find("kernel \"wrong_length\""), std::string::npos) << m;
  EXPECT_NE(m.find("has 1 rows but the kept input columns 10"), std::string::npos) << m;
  // a typed view of the wrong width
  m = error_of<type_error>([&] {
    lf.map_partitions(user_kernel("wrong_view").outputs(f64_out).host([](kernel_partition& p) { p.in<int32_t>(0); }))
        .collect(o);
  });
  EXPECT_NE(m.find("input \"x\" is i64, not a column of 4-byte values"), std::string::npos) << m;
  // a string output never given
  m = error_of<invalid_argument_error>([&] {
    lf.map_partitions(user_kernel("no_string").outputs(schema({{"s", type_id::string}})).host([](kernel_partition&) {}))
        .collect(o);
  });
  EXPECT_NE(m.find("string output \"s\" was not given"), std::string::npos) << m;
  // the kernel's own exception
  m = error_of<compute_error>([&] {
    lf.map_partitions(user_kernel("throws").host([](kernel_partition&) { throw std::runtime_error("boom"); })).collect(o);
  });
  EXPECT_NE(m.find("kernel \"throws\", partition #"), std::string::npos) << m;
  EXPECT_NE(m.find("raised: boom"), std::string::npos) << m;
}

TEST(UserKernel, GpuOnlyKernelOnTheCpuEngine) {
  user_kernel k = user_kernel("axpy").inputs({"x", "y"}).outputs(schema({{"z", type_id::float64}}))
                      .args(kernel_args(2.5)).source({axpy_source, "axpy"}, "");
  std::string m = error_of<not_implemented_error>([&] { xy(10).lazy().map_partitions(k).collect(cpu_engine()); });
  EXPECT_NE(m.find("kernel \"axpy\" has only a GPU form (CUDA source)"), std::string::npos) << m;
  EXPECT_NE(m.find("give the kernel a host functor"), std::string::npos) << m;
  // with a host functor as well, the CPU engine runs that
  k.host(axpy_host);
  data_frame got = xy(10).lazy().map_partitions(k).collect(cpu_engine());
  expect_frames_equal(got, axpy_expected(10).lazy().select({col("z")}).collect(cpu_engine()));
}

#ifdef TUG_WITH_CUDA
TEST(UserKernel, NvrtcCompilesAndCachesWithoutAGpu) {
  std::string dir = temp_cache_dir("cache");
  cuda_source src{axpy_source, "axpy"};
  compiled_kernel a = compile_cuda_source(src, "sm_90", dir);
  EXPECT_FALSE(a.from_cache);
  EXPECT_GT(a.cubin.size(), 100u);
  EXPECT_EQ(a.cubin.substr(0, 4), std::string("\x7f" "ELF"));
  EXPECT_TRUE(std::filesystem::exists(a.cache_file)) << a.cache_file;
  compiled_kernel b = compile_cuda_source(src, "sm_90", dir);
  EXPECT_TRUE(b.from_cache);
  EXPECT_EQ(b.cubin, a.cubin);
  EXPECT_EQ(b.cache_file, a.cache_file);
  // other options, another architecture, other source: other entries
  cuda_source fast = src;
  fast.options = {"-use_fast_math"};
  compiled_kernel c = compile_cuda_source(fast, "sm_90", dir);
  EXPECT_FALSE(c.from_cache);
  EXPECT_NE(c.cache_file, a.cache_file);
  compiled_kernel d = compile_cuda_source(src, "sm_80", dir);
  EXPECT_FALSE(d.from_cache);
  EXPECT_NE(d.cache_file, a.cache_file);
  cuda_source edited = src;
  edited.code += "\n// edited\n";
  EXPECT_FALSE(compile_cuda_source(edited, "sm_90", dir).from_cache);
  // a damaged entry is compiled again and rewritten
  std::filesystem::resize_file(a.cache_file, 20);
  compiled_kernel e = compile_cuda_source(src, "sm_90", dir);
  EXPECT_FALSE(e.from_cache);
  EXPECT_EQ(e.cubin, a.cubin);
  EXPECT_TRUE(compile_cuda_source(src, "sm_90", dir).from_cache);
  // no directory: no cache
  compiled_kernel f = compile_cuda_source(src, "sm_90", "");
  EXPECT_FALSE(f.from_cache);
  EXPECT_TRUE(f.cache_file.empty());
  std::filesystem::remove_all(dir);
  // NVRTC's builtins library is loaded for NVRTC alone: nothing of it (nor its libstdc++) joins the
  // process's global symbol scope
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "getArchBuiltins"), nullptr);
}

TEST(UserKernel, NvrtcCompileErrorsCarryTheLogWithLineNumbers) {
  std::string dir = temp_cache_dir("errors");
  cuda_source bad{"#include <tug/kernel.cuh>\n"
                  "extern \"C\" __global__ void bad(long long rows, tug::out_column<double> z) {\n"
                  "  z[0] = undefined_name;\n"
                  "}\n",
                  "bad"};
  std::string m = error_of<invalid_argument_error>([&] { compile_cuda_source(bad, "sm_90", dir); });
  EXPECT_NE(m.find("kernel \"bad\" does not compile"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.cu(3)"), std::string::npos) << m;
  EXPECT_NE(m.find("undefined_name"), std::string::npos) << m;
  EXPECT_FALSE(std::filesystem::exists(dir) && !std::filesystem::is_empty(dir));  // nothing cached
  EXPECT_THROW(compile_cuda_source(bad, "sm_1", dir), invalid_argument_error);    // a bad option is NVRTC's error too
  EXPECT_THROW(compile_cuda_source({axpy_source, ""}, "sm_90", dir), invalid_argument_error);
  std::filesystem::remove_all(dir);
}

TEST(UserKernel, ParameterSizesComeFromTheCubinWithoutAGpu) {
  // read from the compiled code, so the launcher needs no failing driver call to count them
  cuda_source src{std::string(axpy_source) +
                      "struct alignas(16) wide { int v; };\n"
                      "extern \"C\" __global__ void none() {}\n"
                      "extern \"C\" __global__ void padded(char c, wide w, bool b, short s, int unused) {}\n"
                      "struct big { char b[600]; };\n"
                      "extern \"C\" __global__ void large(big b, float f) {}\n",
                  "axpy"};
  std::string cubin = compile_cuda_source(src, "sm_90", "").cubin;
  using sizes = std::vector<size_t>;
  EXPECT_EQ(cuda::cubin_param_sizes(cubin, "axpy"), sizes({8, 32, 32, 24, 8}));  // rows, in, in, out, double
  EXPECT_EQ(cuda::cubin_param_sizes(cubin, "none"), sizes{});
  EXPECT_EQ(cuda::cubin_param_sizes(cubin, "padded"), sizes({1, 16, 1, 2, 4}));
  EXPECT_EQ(cuda::cubin_param_sizes(cubin, "large"), sizes({600, 4}));
  EXPECT_EQ(cuda::cubin_param_sizes(cubin, "absent"), std::nullopt);
  // a string input is one tug::in_strings: chars, offsets, validity, offset, size
  std::string strings_cubin = compile_cuda_source({text_stats_source, "text_stats"}, "sm_90", "").cubin;
  EXPECT_EQ(cuda::cubin_param_sizes(strings_cubin, "text_stats"), sizes({8, 32, 40, 24, 24}));
  EXPECT_EQ(sizeof(tug::in_strings), 40u);
  // a string output is one tug::out_strings: chars, offsets, validity, size (the shout kernel's body
  // compiles for the device as it does for the host)
  std::string shout_cubin = compile_cuda_source({shout_source, "shout"}, "sm_90", "").cubin;
  EXPECT_EQ(cuda::cubin_param_sizes(shout_cubin, "shout"), sizes({8, 32, 40, 32, 24}));
  EXPECT_EQ(sizeof(tug::out_strings), 32u);
  // the kernel of GpuSourceKernelOnEveryFixedWidthType: rows, 9 in_columns, 9 out_columns
  std::string every_cubin = compile_cuda_source({copy_every_type_source, "copy_every_type"}, "sm_90", "").cubin;
  sizes every{8};
  every.insert(every.end(), 9, 32);
  every.insert(every.end(), 9, 24);
  EXPECT_EQ(cuda::cubin_param_sizes(every_cubin, "copy_every_type"), every);
  EXPECT_EQ(cuda::cubin_param_sizes(cubin, "axp"), std::nullopt);  // a prefix of a name is no match
  // damaged or foreign bytes: unknown, never a crash or a read past the end
  for (size_t cut : {size_t{0}, size_t{3}, size_t{0x40}, cubin.size() / 2, cubin.size() - 1})
    EXPECT_EQ(cuda::cubin_param_sizes(std::string_view(cubin).substr(0, cut), "axpy"), std::nullopt) << cut;
  EXPECT_EQ(cuda::cubin_param_sizes("not an ELF file at all, just some bytes to read past", "axpy"), std::nullopt);
}

namespace {

/// The GPU engine with `target` rows a partition, or a skip.
#define TUG_NEED_GPU() \
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device"

}  // namespace

TEST(UserKernel, GpuSourceKernelEqualsTheHostFunctor) {
  TUG_NEED_GPU();
  std::string dir = temp_cache_dir("gpu");
  user_kernel k = axpy_kernel();
  k.source({axpy_source, "axpy"}, dir);
  for (int64_t n : {0, 1, 31, 32, 33, 1024, 100000}) {
    for (int64_t target : {7, 1 << 20}) {
      if (n > 1024 && target < 1024) continue;  // thousands of partitions add nothing here
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      auto r = xy(n).lazy().map_partitions(k).profile(engine_with(true, target));
      EXPECT_NE(r.physical_plan.find("map_partitions \"axpy\" (host+cuda source)"), std::string::npos);
      EXPECT_NE(r.physical_plan.find("@cuda"), std::string::npos) << r.physical_plan;
      expect_frames_equal(r.frame, axpy_expected(n));
    }
  }
  // a launch configuration given by the user: one block of 32 threads loops over every row
  k.launch({1, 32, 0});
  expect_frames_equal(xy(1000).lazy().map_partitions(k).collect(engine_with(true, 1 << 20)), axpy_expected(1000));
  std::filesystem::remove_all(dir);
}

TEST(UserKernel, GpuSourceKernelOnEveryFixedWidthType) {
  TUG_NEED_GPU();
  // the host functor's copy of EveryFixedWidthTypeSlicedWithNulls as CUDA source, on empty, sliced and whole
  // partitions in device memory
  for (int64_t n : {0, 1, 70, 5000}) {
    for (int64_t target : {9, 1 << 20}) {
      if (n > 70 && target < 1024) continue;
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      data_frame df = every_fixed_width_type(n);
      user_kernel k = user_kernel("copy_every_type").outputs(copies_of(df.schema()))
                          .source({copy_every_type_source, "copy_every_type"}, "");
      auto r = df.lazy().map_partitions(k).profile(engine_with(true, target));
      EXPECT_NE(r.physical_plan.find("@cuda"), std::string::npos) << r.physical_plan;
      table a = r.frame.to_table(), e = df.to_table();
      ASSERT_EQ(a.num_columns(), e.num_columns());
      for (size_t c = 0; c < a.num_columns(); ++c)
        expect_columns_equal(a[c], e[c], df.schema()[c].name);
    }
  }
}

TEST(UserKernel, GpuSourceKernelReadsStrings) {
  TUG_NEED_GPU();
  user_kernel k = text_stats_kernel();
  k.source({text_stats_source, "text_stats"}, "");
  for (int64_t n : {0, 1, 31, 33, 1024, 100000}) {
    for (int64_t target : {7, 1 << 20}) {
      if (n > 1024 && target < 1024) continue;
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      auto r = texts(n).lazy().map_partitions(k).profile(engine_with(true, target));
      EXPECT_NE(r.physical_plan.find("@cuda"), std::string::npos) << r.physical_plan;
      expect_frames_equal(r.frame, text_stats_expected(n));
    }
  }
}

TEST(UserKernel, GpuDeviceFunctorGetsDeviceViewsAndTheStream) {
  TUG_NEED_GPU();
  // copies y to the output with the CUDA runtime on the partition's stream
  user_kernel k = user_kernel("copy_y").inputs({"y"}).outputs(schema({{"y2", type_id::float64}}))
                      .device([](kernel_partition& p) {
                        ASSERT_EQ(p.where(), backend::cuda);
                        auto y = p.in<double>(0);
                        auto o = p.out<double>(0);
                        cudaMemcpyAsync(o.data, y.data + y.offset, sizeof(double) * static_cast<size_t>(p.rows()),
                                        cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(p.stream()));
                      });
  data_frame got = xy(1000).lazy().map_partitions(k).collect(engine_with(true, 33));
  data_frame want = xy(1000).lazy().select({col("y").alias("y2")}).collect(cpu_engine());
  expect_frames_equal(got, want);
}

TEST(UserKernel, GpuSourceKernelMakesStrings) {
  TUG_NEED_GPU();
  // the CUDA source of shout_kernel's body: two launches (lengths, then bytes), equal to the host form's
  user_kernel k = shout_kernel();
  k.source({shout_source, "shout"}, "");
  for (int64_t n : {0, 1, 31, 32, 33, 1024, 100000}) {
    for (int64_t target : {7, 1 << 20}) {
      if (n > 1024 && target < 1024) continue;
      SCOPED_TRACE("n=" + std::to_string(n) + " target=" + std::to_string(target));
      auto r = texts(n).lazy().map_partitions(k).profile(engine_with(true, target));
      EXPECT_NE(r.physical_plan.find("@cuda"), std::string::npos) << r.physical_plan;
      expect_frames_equal(r.frame, shout_expected(n));
    }
  }
  // every string empty: the writing launch has no byte to write
  auto empty = data_frame::from_columns({{"x", i64({5, 10})}, {"s", str({"", ""})}});
  EXPECT_EQ(rows_of(empty.lazy().map_partitions(k).collect(engine_with(true, 1 << 20))),
            (std::vector<std::string>{"5||0", "10||0"}));
  // a kernel that declares a string but takes an out_column there is named before its launch
  user_kernel wrong = user_kernel("wrong").inputs({"x"}).outputs(schema({{"t", type_id::string}})).source(
      {"#include <tug/kernel.cuh>\nextern \"C\" __global__ void wrong(long long rows, tug::in_column<long long> x, "
       "tug::out_column<long long> t) {}",
       "wrong"},
      "");
  std::string m = error_of<invalid_argument_error>(
      [&] { empty.lazy().map_partitions(wrong).collect(engine_with(true, 1 << 20)); });
  EXPECT_NE(m.find("tug::out_strings"), std::string::npos) << m;
}

TEST(UserKernel, GpuCallsAreCutToTheDeviceBudgetPerStream) {
  TUG_NEED_GPU();
  // spill_device_limit 16 MB over num_streams 8: 2 MB a call, ~124000 rows of an i64 input and an i64
  // output; a partition of 300000 rows is cut into zero-copy slices of its device copy (the input, the
  // calls' outputs and their concatenation take ~7 MB of the 16)
  std::mutex mu;
  std::vector<call_seen> seen;
  user_kernel k = user_kernel("copy_x").inputs({"x"}).outputs(schema({{"x2", type_id::int64}}))
                      .device([&](kernel_partition& p) {
                        ASSERT_EQ(p.where(), backend::cuda);
                        {
                          std::lock_guard<std::mutex> g(mu);
                          seen.push_back({p.number(), p.first_row(), p.rows(), p.partition_rows()});
                        }
                        auto x = p.in<int64_t>(0);
                        auto o = p.out<int64_t>(0);
                        cudaMemcpyAsync(o.data, x.data + x.offset, sizeof(int64_t) * static_cast<size_t>(p.rows()),
                                        cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(p.stream()));
                      });
  const int64_t n = 300000;
  std::vector<std::optional<int64_t>> xs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xs[static_cast<size_t>(i)] = i * 7 - 3;
  auto frame = data_frame::from_columns({{"x", i64(xs)}});
  engine_options o = engine_with(true, 1 << 20);
  o.spill_device_limit = "16MB";
  o.num_streams = 8;
  o.num_threads = 1;  // one in-memory partition of all n rows (else one per thread: 16 of 18750 on 16 cores)
  data_frame got = frame.lazy().map_partitions(k).collect(o);
  expect_frames_equal(got, frame.lazy().select({col("x").alias("x2")}).collect(cpu_engine()));
  ASSERT_GT(seen.size(), 1u);
  int64_t rows = 0;
  for (auto& c : seen) {
    EXPECT_LE(c.rows * 16 + (c.rows + 31) / 32 * 4, 16000000 / 8) << c.rows << " rows";
    EXPECT_EQ(c.partition_rows, n);
    rows += c.rows;
  }
  EXPECT_EQ(rows, n);
  // a row wider than a call may use: 4000 bytes over 256 streams (the one-row input's copy fits)
  o.spill_device_limit = "4KB";
  o.num_streams = 256;
  auto one = data_frame::from_columns({{"x", i64({7})}});
  std::string m = error_of<memory_error>([&] { one.lazy().map_partitions(k).collect(o); });
  EXPECT_NE(m.find("kernel \"copy_x\": one row takes "), std::string::npos) << m;
}

TEST(UserKernel, GpuParameterMismatchIsNamed) {
  TUG_NEED_GPU();
  user_kernel k = axpy_kernel();
  k.source({axpy_source, "axpy"}, "").args(kernel_args(2.5f));  // a float where the kernel takes a double
  std::string m = error_of<invalid_argument_error>([&] { xy(10).lazy().map_partitions(k).collect(engine_with(true, 1 << 20)); });
  EXPECT_NE(m.find("parameter 4 takes 8 bytes but tug passes f32 argument 0 (4 bytes)"), std::string::npos) << m;
  k.args({});  // one parameter too few
  m = error_of<invalid_argument_error>([&] { xy(10).lazy().map_partitions(k).collect(engine_with(true, 1 << 20)); });
  EXPECT_NE(m.find("kernel \"axpy\" takes 5 parameters but tug passes 4"), std::string::npos) << m;
}

TEST(UserKernel, GpuLaunchErrorLeavesTheProcessUsable) {
  TUG_NEED_GPU();
  if (sanitizer_run()) GTEST_SKIP() << "the refused launch it makes is an API error to compute-sanitizer";
  // more dynamic shared memory than any GPU gives a block: CUDA refuses the launch, an error it recovers from
  user_kernel k = axpy_kernel();
  k.source({axpy_source, "axpy"}, "").launch({0, 256, int64_t{1} << 30});
  std::string m =
      error_of<compute_error>([&] { xy(10).lazy().map_partitions(k).collect(engine_with(true, 1 << 20)); });
  EXPECT_NE(m.find("kernel \"axpy\", partition #0 (10 rows): the launch (grid "), std::string::npos) << m;
  EXPECT_NE(m.find("1073741824 bytes of shared memory) failed"), std::string::npos) << m;
  EXPECT_EQ(m.find("restart"), std::string::npos) << m;
  // the process goes on using the GPU: the same kernel with tug's launch, then tug's own kernels
  k.launch({});
  expect_frames_equal(xy(1000).lazy().map_partitions(k).collect(engine_with(true, 100)), axpy_expected(1000));
  data_frame got = xy(10).lazy().select({col("x") + lit(int64_t{1})}).collect(engine_with(true, 1 << 20));
  expect_frames_equal(got, xy(10).lazy().select({col("x") + lit(int64_t{1})}).collect(cpu_engine()));
}

TEST(UserKernelDeathTest, GpuFaultNamesTheKernelAndThePartition) {
  TUG_NEED_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the fault ruins its CUDA context
  const char* faulty = R"(
#include <tug/kernel.cuh>
extern "C" __global__ void faulty(long long rows, tug::in_column<long long> x) {
  if (tug::first_row() == 0) *reinterpret_cast<volatile long long*>(16) = x[0];
})";
  EXPECT_EXIT(
      {
        user_kernel k = user_kernel("faulty").inputs({"x"}).source({faulty, "faulty"}, "");
        std::string m = error_of<compute_error>([&] { xy(100).lazy().foreach_partition(k, engine_with(true, 1 << 20)); });
        bool ok = m.find("kernel \"faulty\", partition #0 (100 rows) failed on the device") != std::string::npos &&
                  m.find("CUDA cannot recover from this error in this process: restart it") != std::string::npos;
        std::fprintf(stderr, "%s\n", m.c_str());
        std::_Exit(ok ? 0 : 1);  // no static destructors in a ruined CUDA context
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

namespace {
/// Sums its partition's x (nulls skipped) and counts its rows, as a MapRed job.
class sum_job final : public map_reduce_job {
 public:
  void process_input(const kernel_partition& p) override {
    auto x = p.in<int64_t>(0);
    for (long long i = 0; i < p.rows(); ++i)
      if (x.valid(i)) _sum += x[i];
    _rows = p.rows();
  }
  void compute(std::map<std::string, std::string>& out) override {
    out["rows"] = std::to_string(_rows);
    out["sum"] = std::to_string(_sum);
  }

 private:
  int64_t _sum = 0, _rows = 0;
};
}  // namespace

TEST(UserKernel, MapReduceJobPerPartitionThenReduce) {
  for (int64_t target : {7, 1 << 20}) {
    engine_options o = cpu_engine();
    o.target_partition_rows = target;
    auto q = xy(1024)
                 .lazy()
                 .map_partitions(map_reduce_kernel("sum", [] { return std::make_unique<sum_job>(); }, {"x"}))
                 .group_by({"key"})
                 .agg({col("value").cast(type_id::int64).sum().alias("total"), col("value").count().alias("jobs")})
                 .sort("key");
    data_frame got = q.collect(o);
    int64_t want = 0;
    for (int64_t i = 0; i < 1024; ++i)
      if (i % 5 != 3) want += i * 3 - 7;
    int64_t jobs = (1024 + target - 1) / target;
    EXPECT_EQ(rows_of(got), (std::vector<std::string>{"rows|1024|" + std::to_string(jobs),
                                                      "sum|" + std::to_string(want) + "|" + std::to_string(jobs)}))
        << "target " << target;
  }
  std::string m = error_of<invalid_argument_error>([&] {
    xy(3).lazy().map_partitions(map_reduce_kernel("null_job", [] { return std::unique_ptr<map_reduce_job>(); })).collect(
        cpu_engine());
  });
  EXPECT_NE(m.find("kernel \"null_job\", partition #0 (3 rows): the job factory returned no job"), std::string::npos)
      << m;
}
