// dt.truncate and casts from strings to timestamps on the CUDA expression evaluator (engine=gpu,
// fallback=raise) against the CPU engine: every time unit, dates, intervals of months, weeks, days,
// whole ticks and sub-tick nanoseconds, nulls, sliced inputs and sizes around a warp.
#include "test_util.hpp"
#include "tug/memory/device.hpp"

namespace tug {
namespace {

constexpr time_unit kUnits[] = {time_unit::s, time_unit::ms, time_unit::us, time_unit::ns};

/// n instants of unit u from about 1900 to 2100 (a null every 9th row), with negative ticks.
column instants(time_unit u, int64_t n) {
  const int64_t tps = u == time_unit::s ? 1 : u == time_unit::ms ? 1000 : u == time_unit::us ? 1000000 : 1000000000;
  std::vector<std::optional<int64_t>> v;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 9 == 4) {
      v.push_back(std::nullopt);
      continue;
    }
    const int64_t secs = (i * 2654435761LL) % (int64_t{200} * 365 * 86400) - int64_t{70} * 365 * 86400;
    v.push_back(secs * tps + (i * 7919) % tps);
  }
  return make_column<int64_t>(timestamp(u), v);
}

TEST(CudaTemporal, TruncateMatchesCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const std::vector<std::string> every = {"1mo", "3mo", "1q", "1y", "2y", "1w", "2w", "1d", "3d",
                                          "1h",  "1h30m", "15m", "1s", "250ms", "1500us", "7ns"};
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, int64_t{1024}}) {
    for (time_unit u : kUnits) {
      column t = instants(u, n + 3);
      std::vector<std::optional<int32_t>> days;
      for (int64_t i = 0; i < n + 3; ++i)
        days.push_back(i % 11 == 2 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(i * 97 % 90000 - 40000)));
      data_frame df = data_frame::from_columns(
          {{"t", t.slice(3, n)}, {"d", make_column<int32_t>(type_id::date32, days).slice(3, n)}});
      for (const std::string& e : every) {
        SCOPED_TRACE(to_string(u) + " " + e + " n " + std::to_string(n));
        expect_gpu_matches_cpu(df.lazy().with_columns({col("t").dt_truncate(e).alias("tt"), col("d").dt_truncate(e).alias("dt")}));
      }
    }
  }
}

TEST(CudaTemporal, MalformedIntervalRaisesTheCpuError) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  data_frame df = data_frame::from_columns({{"t", instants(time_unit::us, 5)}});
  auto q = df.lazy().with_columns({col("t").dt_truncate("1d1h").alias("x")});
  EXPECT_NO_THROW(q.explain(gpu_engine()));  // as on the CPU engine: the interval is read when it runs
  try {
    q.collect(gpu_engine());
    FAIL() << "expected invalid_argument_error";
  } catch (const invalid_argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"1d1h\""), std::string::npos) << e.what();
  }
}

TEST(CudaTemporal, StringsToTimestampsMatchCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<std::optional<std::string>> s = {"2024-02-29 23:59:60",
                                               "2024-02-29T00:00:00.5",
                                               "1970-01-01",
                                               std::nullopt,
                                               " 1970-1-1 1:2:3",
                                               "1970-01-01 -1:00:00",
                                               "2023-02-29 00:00:00",
                                               "1900-03-01 12:34:56.123456789",
                                               "2262-04-11 23:47:16.854775808",
                                               "junk",
                                               "",
                                               "1969-12-31 23:59:59.999"};
  for (int i = 0; i < 1100; ++i)
    s.push_back(std::to_string(1900 + i % 300) + "-" + std::to_string(1 + i % 12) + "-" + std::to_string(1 + i % 28) +
                (i % 3 ? " " : "T") + std::to_string(i % 24) + ":" + std::to_string(i % 60) + ":" +
                std::to_string(i % 61) + (i % 4 ? "." + std::to_string(i * 7919 % 1000000) : ""));
  column c = str(s);
  for (int64_t off : {int64_t{0}, int64_t{5}})
    for (int64_t n : {int64_t{1}, int64_t{33}, int64_t{1024}}) {
      data_frame df = data_frame::from_columns({{"s", c.slice(off, n)}});
      for (time_unit u : kUnits) {
        SCOPED_TRACE(to_string(u) + " off " + std::to_string(off) + " n " + std::to_string(n));
        expect_gpu_matches_cpu(df.lazy().with_columns({col("s").cast(timestamp(u), false).alias("t")}));
      }
    }
  // a strict cast names the first value that does not parse, as on the CPU
  data_frame bad = data_frame::from_columns({{"s", str({"1970-01-01 00:00:00", "1970-01-01 25:00:00"})}});
  auto q = bad.lazy().with_columns({col("s").cast(timestamp(time_unit::us), true).alias("t")});
  EXPECT_EQ(collect_error(q, gpu_engine()), collect_error(q, engine_with(false, 1 << 20)));
}

}  // namespace
}  // namespace tug
