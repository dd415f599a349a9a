#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/memory/device.hpp"
#include "tug/plan/lower.hpp"

using namespace tug;

namespace {
data_frame sample() {
  return data_frame::from_columns({{"a", i64({1, 2, std::nullopt, 4})}, {"s", str({"x", "y", "z", std::nullopt})}});
}
}  // namespace

TEST(LazyBasic, SchemaErrorsAtBuildTime) {
  auto lf = sample().lazy();
  EXPECT_THROW(lf.select({col("nope")}), column_not_found_error);
  EXPECT_THROW(lf.filter(col("a")), type_error);
  EXPECT_THROW(lf.select({col("s") + col("a")}), type_error);
  EXPECT_THROW(lf.group_by({"a"}).agg({col("s")}), invalid_argument_error);
  EXPECT_THROW(lf.join(lf, {"zz"}), column_not_found_error);
  EXPECT_THROW(lf.select({col("a"), col("a")}), invalid_argument_error);
}

TEST(LazyBasic, SelectRenameDropSliceRowIndex) {
  auto lf = sample().lazy();
  auto out = lf.rename({{"a", "b"}}).drop({"s"}).with_row_index("i", 10).slice(1, 2).collect();
  EXPECT_EQ(out.schema().to_string(), "i: i64, b: i64");
  expect_frames_equal(out, data_frame::from_columns({{"i", i64({11, 12})}, {"b", i64({2, std::nullopt})}}));
  auto tail = lf.tail(1).collect();
  EXPECT_EQ(rows_of(tail), std::vector<std::string>{"4|null"});
}

TEST(LazyBasic, FilterOnGlobalAggregates) {
  // as Polars: the aggregate is of the whole input, over every partition; nulls never pass
  auto lf = sample().lazy();
  expect_frames_equal(lf.filter(col("a") == col("a").max()).collect(),
                      data_frame::from_columns({{"a", i64({4})}, {"s", str({std::nullopt})}}));
  engine_options small;
  small.target_partition_rows = 1;
  auto out = lf.filter((col("a") > col("a").mean() - lit(int64_t{1})) | (col("s") == col("s").min())).collect(small);
  EXPECT_EQ(rows_of(out), (std::vector<std::string>{"1|x", "2|y", "4|null"}));
  // a column of the temporary's name is kept; the predicate must still be boolean
  auto named = data_frame::from_columns({{"__tug_filter_predicate", i64({3, 1})}}).lazy();
  EXPECT_EQ(rows_of(named.filter(col("__tug_filter_predicate") < col("__tug_filter_predicate").max()).collect()),
            std::vector<std::string>{"1"});
  EXPECT_THROW(lf.filter(col("a").sum()), type_error);
  // over an empty input the aggregate is null: no row passes
  expect_frames_equal(lf.slice(0, 0).filter(col("a") == col("a").max()).collect(), lf.slice(0, 0).collect());
}

TEST(LazyBasic, PartitionsKeepOrder) {
  std::vector<std::optional<int64_t>> v;
  for (int64_t i = 0; i < 1000; ++i)
    v.push_back(i);
  auto df = data_frame::from_columns({{"a", i64(v)}});
  engine_options o;
  o.target_partition_rows = 33;
  auto out = df.lazy().with_row_index().slice(-40, 35).collect(o);
  EXPECT_GT(out.partitions().size(), 1u);
  auto t = out.to_table();
  ASSERT_EQ(t.num_rows(), 35);
  for (int64_t i = 0; i < 35; ++i)
    EXPECT_EQ(t[0].value<int64_t>(i), 960 + i);
}

TEST(LazyBasic, GpuRequestWithoutGpuFallsBackOrRaises) {
  auto lf = sample().lazy().select({col("a")});
  engine_options o;
  o.engine = engine_kind::gpu;
  o.fallback = fallback_mode::raise;
  if (!gpu_available()) {
    EXPECT_THROW(lf.collect(o), not_implemented_error);
    o.fallback = fallback_mode::silent;
    auto r = lf.profile(o);
    ASSERT_EQ(r.fallbacks.size(), 1u);
    EXPECT_NE(r.fallbacks[0].find("no CUDA device"), std::string::npos);
    EXPECT_EQ(r.frame.num_rows(), 4);
  }
}

TEST(LazyBasic, ExplainShowsBackendAndSchemaKnownUpfront) {
  auto lf = sample().lazy().with_row_index("i").select({col("i"), col("s")});
  EXPECT_EQ(lf.schema().to_string(), "i: i64, s: str");
  std::string e = lf.explain(cpu_engine());
  EXPECT_NE(e.find("optimized logical plan"), std::string::npos);
  EXPECT_NE(e.find("row_index"), std::string::npos);
  EXPECT_NE(e.find("@cpu"), std::string::npos);
}

TEST(LazyBasic, MemoryLimitRaisesNamedError) {
  std::vector<std::optional<int64_t>> v(100000, 1);
  auto df = data_frame::from_columns({{"a", i64(v)}});
  engine_options o = cpu_engine();  // memory_limit budgets host memory, where the CPU engine runs
  o.memory_limit = 1024;            // far too small for the row index column
  try {
    df.lazy().with_row_index().collect(o);
    FAIL() << "expected memory_error";
  } catch (const memory_error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_limit"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("operator row_index"), std::string::npos) << e.what();
  }
}

TEST(LazyBasic, DeviceLimitRaisesNamedError) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<std::optional<int64_t>> v(100000, 1);
  auto df = data_frame::from_columns({{"a", i64(v)}});
  engine_options o;
  o.engine = engine_kind::gpu;
  o.spill_device_limit = "1024";  // bytes: far too small for the copy of column a
  try {
    df.lazy().with_row_index().collect(o);
    FAIL() << "expected memory_error";
  } catch (const memory_error& e) {
    // the scan copies partitions to the device as it produces them, so it is the operator named
    EXPECT_NE(std::string(e.what()).find("spill_device_limit"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("operator scan", 0), 0u) << e.what();
  }
  // a host limit too small for the result names the copy back to the host (the result's partitions
  // leave the device as the root makes them: hold_output)
  engine_options h;
  h.engine = engine_kind::gpu;
  h.memory_limit = 1024;
  try {
    df.lazy().with_row_index().collect(h);
    FAIL() << "expected memory_error";
  } catch (const memory_error& e) {
    EXPECT_NE(std::string(e.what()).find("copying the output of operator row_index from the device to host memory"),
              std::string::npos)
        << e.what();
  }
}

TEST(LazyBasic, ZeroLiteralIsAnInteger) {
  auto out = sample().lazy().filter(col("a") == 0 | col("a") > 3).collect();
  EXPECT_EQ(rows_of(out), std::vector<std::string>{"4|null"});
  auto s = sample().lazy().filter(col("s") == "y").collect();
  EXPECT_EQ(rows_of(s), std::vector<std::string>{"2|y"});
}

TEST(LazyBasic, NegativeSliceBeyondStartIsClipped) {
  auto lf = sample().lazy();  // 4 rows
  EXPECT_EQ(lf.slice(-6, 1).collect().num_rows(), 0);
  EXPECT_EQ(lf.slice(-6, 3).collect().num_rows(), 1);
  EXPECT_EQ(lf.tail(10).collect().num_rows(), 4);
  EXPECT_EQ(lf.slice(2).collect().num_rows(), 2);
  EXPECT_EQ(lf.slice(7, 2).collect().num_rows(), 0);
}

TEST(LazyBasic, ToStringAlignsMultibyteText) {
  auto df = data_frame::from_columns({{"näme", str({"Ünïcödé", "x", std::nullopt})}, {"v", f64({280.0, 0.5, 1e20})}});
  std::string s = df.to_string();
  std::vector<size_t> widths;
  size_t start = s.find('\n') + 1;  // skip the shape line
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    std::string line = s.substr(start, end - start);
    size_t w = 0;
    for (unsigned char c : line)
      w += (c & 0xC0) != 0x80;
    widths.push_back(w);
    start = end + 1;
  }
  ASSERT_GT(widths.size(), 5u);
  for (size_t w : widths)
    EXPECT_EQ(w, widths[0]) << s;
  EXPECT_NE(s.find("280.0"), std::string::npos);
}

TEST(LazyBasic, ToCsvQuotesAndNulls) {
  auto df = data_frame::from_columns({{"a", i64({1, std::nullopt})}, {"s", str({"x,y", ""})}});
  EXPECT_EQ(df.to_csv(), "a,s\n1,\"x,y\"\n,\"\"\n");
}
