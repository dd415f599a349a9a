// Host <-> device table copies (src/memory/device.cu): pageable host memory goes through each thread's
// two pinned 4 MiB chunks when larger than one, pinned memory straight; both must give back every
// value, null and string, for sizes around the chunk, sliced columns and several threads at once.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "test_util.hpp"
#include "tug/memory/device.hpp"
#include "tug/memory/memory_resource.hpp"

namespace tug {
namespace {

constexpr int64_t kChunkValues = (int64_t{4} << 20) / 8;  // int64 values in one staging chunk

/// n rows: int64 (a null every 7th), float64, strings of 0 to 40 bytes (a null every 11th), booleans.
table sample_table(int64_t n, int64_t seed) {
  std::vector<std::optional<int64_t>> a(static_cast<size_t>(n));
  std::vector<std::optional<double>> b(static_cast<size_t>(n));
  std::vector<std::optional<std::string>> c(static_cast<size_t>(n));
  std::vector<std::optional<bool>> d(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto k = static_cast<size_t>(i);
    int64_t v = (i + seed) * 2654435761LL % 1000003;
    if (i % 7 != 3) a[k] = v - 500000;
    b[k] = static_cast<double>(v) / 7.0;
    if (i % 11 != 5) c[k] = std::string(static_cast<size_t>(v % 41), static_cast<char>('a' + v % 26));
    d[k] = v % 3 == 0;
  }
  return table({i64(a), f64(b), str(c), boolean(d)});
}

void expect_tables_equal(const table& x, const table& y, const std::string& what) {
  ASSERT_EQ(x.num_columns(), y.num_columns()) << what;
  for (size_t i = 0; i < x.num_columns(); ++i)
    expect_columns_equal(x[i], y[i], what + " column " + std::to_string(i));
}

/// Copies `t` to the device and back into `host` memory and compares.
void round_trip(const table& t, memory_resource* device, memory_resource* host, const std::string& what) {
  table d = to_device(t, device);
  ASSERT_TRUE(on_device(d)) << what;
  table h = to_host(d, host);
  ASSERT_FALSE(on_device(h)) << what;
  expect_tables_equal(h, t, what);
}

TEST(CudaCopy, RoundTripsAroundTheStagingChunk) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto device = make_device_resource(nullptr);
  auto pinned = make_pinned_resource(nullptr);
  host_memory_resource pageable;
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, kChunkValues - 1, kChunkValues, kChunkValues + 1,
                    3 * kChunkValues + 5}) {
    table t = sample_table(n, n);
    round_trip(t, device.get(), &pageable, "pageable, n " + std::to_string(n));
    round_trip(t, device.get(), pinned.get(), "pinned, n " + std::to_string(n));
  }
}

TEST(CudaCopy, SlicedColumnsRoundTrip) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto device = make_device_resource(nullptr);
  host_memory_resource pageable;
  const int64_t n = 2 * kChunkValues + 100;
  table t = sample_table(n, 1);
  for (auto [off, len] : {std::pair{int64_t{3}, n - 3}, std::pair{int64_t{13}, kChunkValues + 9},
                          std::pair{n - 1, int64_t{1}}, std::pair{kChunkValues, int64_t{0}}}) {
    std::vector<column> cols;
    for (auto& c : t.columns())
      cols.push_back(c.slice(off, len));
    round_trip(table(std::move(cols)), device.get(), &pageable,
               "slice " + std::to_string(off) + "+" + std::to_string(len));
  }
}

TEST(CudaCopy, ThreadsCopyAtOnce) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto device = make_device_resource(nullptr);
  host_memory_resource pageable;
  std::vector<table> tables;
  for (int i = 0; i < 4; ++i)
    tables.push_back(sample_table(kChunkValues + 1000 * i + 7, 100 + i));
  std::vector<table> back(tables.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < tables.size(); ++i)
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 3; ++rep)
        back[i] = to_host(to_device(tables[i], device.get()), &pageable);
    });
  for (auto& th : threads)
    th.join();
  for (size_t i = 0; i < tables.size(); ++i)
    expect_tables_equal(back[i], tables[i], "thread " + std::to_string(i));
}

// Set bits of a device bitmap counted on the device equal the host's count, at every offset and
// length around the 64-bit words and the warps' sums.
TEST(CudaCopy, CountSetBitsMatchesHost) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto device = make_device_resource(nullptr);
  const int64_t n = 70000;
  std::vector<std::optional<int64_t>> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    if ((i * 2654435761LL) % 13 > 3 || (i > 30000 && i < 40000)) v[static_cast<size_t>(i)] = i;
  const column host = i64(v);
  const table dev = to_device(table({host}), device.get());
  const buffer& hb = *host.validity_buffer();
  const buffer& db = *dev[0].validity_buffer();
  for (int64_t off : {0, 1, 7, 8, 63, 64, 65, 100, 4097})
    for (int64_t len : std::initializer_list<int64_t>{0, 1, 31, 32, 33, 63, 64, 65, 1000, 8191, n - 4097 - 1})
      EXPECT_EQ(count_set_bits(db, off, len), bits::count_set(hb.as<uint8_t>(), off, len))
          << "offset " << off << " length " << len;
}

// Every copy back from the device waits for it: device_waits() counts the waits, and a GPU query's
// statistics show them per operator (two more columns); a CPU query's statistics have none.
TEST(CudaCopy, WaitsAreCountedAndShownPerOperator) {
  data_frame df = data_frame::from_columns({{"a", sample_table(5000, 3)[0]}});
  lazy_frame q = df.lazy().filter(col("a") > 0).with_columns({(col("a") * 2).alias("b")});
  query_result cpu = q.profile(cpu_engine());
  EXPECT_EQ(cpu.statistics.find("waits"), std::string::npos) << cpu.statistics;
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  auto device = make_device_resource(nullptr);
  host_memory_resource pageable;
  const device_wait_totals before = device_waits();
  to_host(to_device(sample_table(100, 1), device.get()), &pageable);
  const device_wait_totals after = device_waits();
  EXPECT_GE(after.waits - before.waits, 2);  // one wait each way at least
  EXPECT_GE(after.seconds, before.seconds);
  query_result gpu = q.profile(gpu_engine());
  const std::string& st = gpu.statistics;
  ASSERT_NE(st.find("   seconds   waits  wait_s"), std::string::npos) << st;
  // the filter's line (fused into the scan): name, rows in and out, partitions, MiB in and out, seconds,
  // waits, wait_s (then the memory columns)
  size_t at = st.find("\nfilter (fused)");
  ASSERT_NE(at, std::string::npos) << st;
  std::istringstream line(st.substr(at + 1, st.find('\n', at + 1) - at - 1));
  std::string name, fused;
  int64_t rows_in = 0, rows = 0, parts = 0, waits = -1;
  double mib_in = 0, mib = 0, secs = 0, wait_s = -1;
  line >> name >> fused >> rows_in >> rows >> parts >> mib_in >> mib >> secs >> waits >> wait_s;
  EXPECT_GT(waits, 0) << st;  // the filter reads its output's size back
  EXPECT_GE(wait_s, 0) << st;
  expect_frames_equal(gpu.frame, cpu.frame);
}

}  // namespace
}  // namespace tug
