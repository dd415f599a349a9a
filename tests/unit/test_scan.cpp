// scan_parquet / scan_csv / sink_*: pushdown into files (row groups skipped by statistics, only the
// needed columns read), many files, hive directories, and the errors a user sees.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.hpp"
#include "tug/api/io.hpp"
#include "tug/api/user_kernel.hpp"
#include "tug/io/parquet_source.hpp"
#include "tug/runtime/thread_pool.hpp"

using namespace tug;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path;
  temp_dir() {
    path = fs::temp_directory_path() / ("tug_scan_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

// 10 000 rows, `k` sorted 0..9999, `g` = k % 7, `s` a string, `v` nullable.
data_frame sample(int64_t n = 10000, int64_t offset = 0) {
  std::vector<std::optional<int64_t>> k, g;
  std::vector<std::optional<std::string>> s;
  std::vector<std::optional<double>> v;
  for (int64_t i = 0; i < n; ++i) {
    k.push_back(offset + i);
    g.push_back((offset + i) % 7);
    s.push_back("s" + std::to_string((offset + i) % 13));
    v.push_back(i % 11 == 0 ? std::nullopt : std::optional<double>(static_cast<double>(i) / 4));
  }
  return data_frame::from_columns({{"k", i64(k)}, {"g", i64(g)}, {"s", str(s)}, {"v", f64(v)}});
}

io::parquet::write_options small_groups() {
  io::parquet::write_options o;
  o.row_group_rows = 1000;
  return o;
}

}  // namespace

TEST(ScanParquet, FilterOnSortedColumnSkipsRowGroups) {
  temp_dir d;
  data_frame df = sample();
  io::parquet::write_parquet(d / "a.parquet", df.schema(), df.partitions(), small_groups());
  auto src = std::make_shared<io::parquet_source>(d / "a.parquet");
  lazy_frame q = lazy_frame(plan::scan(src)).filter(col("k") >= 2500 & col("k") < 3100).select({col("k"), col("v")});
  data_frame got = q.collect();
  data_frame want = df.lazy().filter(col("k") >= 2500 & col("k") < 3100).select({col("k"), col("v")}).collect();
  expect_frames_equal(got, want);
  // rows 2500..3099 live in row groups 2 and 3 of 10
  EXPECT_EQ(src->counters().row_groups_read.load(), 2);
  EXPECT_EQ(src->counters().row_groups_skipped.load(), 8);
  EXPECT_NE(q.explain().find("selection"), std::string::npos);
}

TEST(ScanParquet, PredicatesReadTheOtherColumnsOnlyAtPassingRows) {
  // the CPU engine's scan evaluates its pushed-down predicates while it reads: where at most a quarter
  // of the rows pass, it returns only those (the filter above keeps its answer either way)
  temp_dir d;
  data_frame df = sample();
  io::parquet::write_parquet(d / "a.parquet", df.schema(), df.partitions(), small_groups());
  auto src = std::make_shared<io::parquet_source>(d / "a.parquet");
  engine_options o = cpu_engine();
  thread_pool pool(2);
  struct read_case {
    std::vector<std::string> columns;
    std::vector<expr> predicates;
    bool selective;  // few enough rows pass that only they come back
  };
  const std::vector<read_case> cases = {
      {{"k", "g", "s", "v"}, {col("g") == lit(int64_t{3})}, true},
      {{"v", "k", "s"}, {col("s") == lit("s5")}, true},
      {{"k", "s"}, {col("v") > lit(2200.0), col("g") == lit(int64_t{3})}, true},  // nulls in v do not pass
      {{"k", "s"}, {col("v") > lit(2200.0)}, false},  // 8 in 10 pass in row group 8: read whole
      {{"k"}, {col("g") == lit(int64_t{3}), col("s") != lit("s1")}, true},
      {{"k", "v"}, {col("k") >= lit(int64_t{2500}), col("k") < lit(int64_t{2600})}, true},  // with row groups skipped
      {{"k", "g", "s", "v"}, {col("k") >= lit(int64_t{0})}, false},  // every row passes: all come back
      {{"g", "s"}, {col("g") == lit(int64_t{3})}, false},  // no other column: read whole
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const read_case& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i));
    std::vector<column> cols;
    expr all = c.predicates[0];
    for (size_t j = 1; j < c.predicates.size(); ++j) all = all & c.predicates[j];
    std::vector<expr> picked;
    for (auto& name : c.columns) picked.push_back(col(name));
    const data_frame passing = df.lazy().filter(all).select(picked).collect(o);
    const data_frame every = df.lazy().select(picked).collect(o);
    tug::schema s;
    for (auto& name : c.columns) s.push_back(df.schema()[df.schema().index_of(name)]);
    const data_frame got(s, src->read(c.columns, c.predicates, o, pool, default_host_resource()));
    if (c.selective) {
      expect_frames_equal(got, passing);
    } else {  // whole row groups where many pass: between the passing rows and every row
      EXPECT_GE(got.num_rows(), passing.num_rows());
      EXPECT_LE(got.num_rows(), every.num_rows());
      if (i == 6) expect_frames_equal(got, every);
      if (i == 3) EXPECT_LT(got.num_rows(), every.num_rows()) << "the selective row groups are cut";
    }
  }
}

TEST(ScanParquet, ProjectionReadsOnlyNeededColumns) {
  temp_dir d;
  data_frame df = sample();
  io::parquet::write_parquet(d / "a.parquet", df.schema(), df.partitions(), small_groups());
  auto all = std::make_shared<io::parquet_source>(d / "a.parquet");
  lazy_frame(plan::scan(all)).collect();
  auto one = std::make_shared<io::parquet_source>(d / "a.parquet");
  data_frame k = lazy_frame(plan::scan(one)).select({col("k").sum()}).collect();
  EXPECT_EQ(k["k"].value<int64_t>(0), 9999 * 10000 / 2);
  // exactly the column chunks of k were read
  auto reader = io::parquet::file_reader::open(d / "a.parquet");
  int64_t k_bytes = 0, all_bytes = 0;
  for (int rg = 0; rg < reader.num_row_groups(); ++rg) {
    k_bytes += reader.row_group_uncompressed_bytes(rg, {0});
    all_bytes += reader.row_group_uncompressed_bytes(rg, {0, 1, 2, 3});
  }
  EXPECT_EQ(one->counters().bytes_read.load(), k_bytes);
  EXPECT_EQ(all->counters().bytes_read.load(), all_bytes);
  EXPECT_LT(k_bytes, all_bytes);
}

TEST(ScanParquet, DirectoryGlobAndHivePartitions) {
  temp_dir d;
  for (int part = 0; part < 3; ++part) {
    data_frame df = sample(500, part * 500);
    fs::create_directories(d.path / ("year=" + std::to_string(2020 + part)));
    io::parquet::write_parquet(d / ("year=" + std::to_string(2020 + part) + "/data.parquet"), df.schema(),
                               df.partitions());
  }
  data_frame all = scan_parquet(d.path.string()).collect();
  EXPECT_EQ(all.num_rows(), 1500);
  ASSERT_TRUE(all.schema().contains("year"));
  data_frame by_year = scan_parquet(d.path.string()).group_by({"year"}).agg({len()}).sort("year").collect();
  EXPECT_EQ(rows_of(by_year), (std::vector<std::string>{"2020|500", "2021|500", "2022|500"}));
  EXPECT_EQ(scan_parquet(d / "year=202[01]/*.parquet").collect().num_rows(), 1000);
}

TEST(ScanParquet, SinkDirectoryWritesOneFilePerPartition) {
  temp_dir d;
  engine_options o;
  o.target_partition_rows = 3000;
  o.num_threads = 4;  // the files are written in parallel
  sink_parquet(sample().lazy().filter(col("g") != 3), d / "out/", {}, o);
  int files = 0;
  for (auto& e : fs::directory_iterator(d.path / "out"))
    files += e.path().extension() == ".parquet";
  EXPECT_GT(files, 1);
  expect_frames_equal(scan_parquet(d / "out").sort("k").collect(), sample().lazy().filter(col("g") != 3).collect());
  // part-00000, part-00001, ... hold the partitions in order
  expect_frames_equal(scan_parquet(d / "out").collect(), sample().lazy().filter(col("g") != 3).collect(o));
}

TEST(ScanParquet, ASinkDirectoryOfAFailedQueryKeepsNoFile) {
  // partition 3 of 4 fails after others were written: the files already written are removed, so the
  // directory never holds part of a result
  temp_dir d;
  engine_options o;
  o.target_partition_rows = 3000;
  o.num_threads = 4;
  const user_kernel fails = user_kernel("fails").keep({"k", "g"}).host([](kernel_partition& p) {
    if (p.number() == 3) throw io_error("partition 3 cannot be read");
  });
  try {
    sink_parquet(sample().lazy().map_partitions(fails), d / "out/", {}, o);
    FAIL() << "the query should fail";
  } catch (const tug::error& e) {
    EXPECT_NE(std::string(e.what()).find("partition 3 cannot be read"), std::string::npos) << e.what();
  }
  int files = 0;
  if (fs::exists(d.path / "out"))
    for (auto& e : fs::directory_iterator(d.path / "out")) files += e.path().extension() == ".parquet";
  EXPECT_EQ(files, 0);
  // the same sink then succeeds into the same directory
  sink_parquet(sample().lazy(), d / "out/", {}, o);
  EXPECT_EQ(scan_parquet(d / "out").collect().num_rows(), 10000);
}

TEST(ScanParquet, ErrorsNameTheFile) {
  temp_dir d;
  try {
    scan_parquet(d / "missing.parquet");
    FAIL();
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.parquet"), std::string::npos);
  }
  data_frame a = sample(10), b = sample(10).lazy().select({col("k"), col("s")}).collect();
  io::parquet::write_parquet(d / "1.parquet", a.schema(), a.partitions());
  io::parquet::write_parquet(d / "2.parquet", b.schema(), b.partitions());
  try {
    scan_parquet(d.path.string());
    FAIL();
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("2.parquet"), std::string::npos) << e.what();
  }
  EXPECT_THROW(scan_parquet(d / "*.nothing"), io_error);
  // a wrong column name fails when the query is built, before reading
  EXPECT_THROW(scan_parquet(d / "1.parquet").select({col("nope")}), column_not_found_error);
}

TEST(ScanCsv, RoundTripThroughSinkAndScan) {
  temp_dir d;
  data_frame df = sample(2000);
  sink_csv(df.lazy(), d / "x.csv");
  data_frame back = scan_csv(d / "x.csv").filter(col("g") == 2).collect();
  data_frame want = df.lazy().filter(col("g") == 2).collect();
  expect_frames_equal(back, want);
  EXPECT_THROW(scan_csv(d / "nope.csv"), io_error);
}

namespace {
/// Partitions of a parquet_source read of `columns` under `o`, checked to hold `want`'s rows in order.
std::vector<table> read_partitions(const io::parquet_source& src, const std::vector<std::string>& columns,
                                   const engine_options& o, const data_frame& want) {
  thread_pool pool(2);
  auto parts = src.read(columns, {}, o, pool, default_host_resource());
  int64_t rows = 0;
  for (auto& p : parts)
    rows += p.num_rows();
  EXPECT_EQ(rows, want.num_rows());
  expect_frames_equal(data_frame(want.schema(), parts), want);
  return parts;
}
}  // namespace

TEST(ScanParquet, SmallRowGroupsAreCoalescedIntoPartitionsNearTheTarget) {
  temp_dir d;
  data_frame df = sample();
  io::parquet::write_options w = small_groups();  // 10 row groups
  w.page_checksums = false;  // (a CRC's varint length varies: row groups of equal bytes below)
  io::parquet::write_parquet(d / "a.parquet", df.schema(), df.partitions(), w);
  io::parquet_source src(d / "a.parquet");
  data_frame k = df.lazy().select({col("k")}).collect();
  engine_options o;
  o.target_partition_rows = 2500;  // two row groups of 1000 rows per partition
  EXPECT_EQ(read_partitions(src, {"k"}, o, k).size(), 5u);
  // by bytes: three row groups' worth of column k per partition
  auto reader = io::parquet::file_reader::open(d / "a.parquet");
  int64_t rg_bytes = reader.row_group_uncompressed_bytes(0, {0});
  for (int rg = 1; rg < reader.num_row_groups(); ++rg)
    ASSERT_EQ(reader.row_group_uncompressed_bytes(rg, {0}), rg_bytes);
  o.target_partition_size = 3 * rg_bytes;
  auto parts = read_partitions(src, {"k"}, o, k);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0].num_rows(), 3000);
  EXPECT_EQ(parts[3].num_rows(), 1000);
  // the lazy query sees the same partitions
  auto lazy_src = std::make_shared<io::parquet_source>(d / "a.parquet");
  data_frame sum = lazy_frame(plan::scan(lazy_src)).select({col("k").sum()}).collect(o);
  EXPECT_EQ(sum["k"].value<int64_t>(0), 9999 * 10000 / 2);
  EXPECT_EQ(lazy_src->counters().partitions.load(), 4);
  EXPECT_EQ(lazy_src->counters().row_groups_read.load(), 10);
}

TEST(ScanParquet, LargeRowGroupIsSplitIntoRowRanges) {
  temp_dir d;
  data_frame df = sample();
  io::parquet::write_parquet(d / "a.parquet", df.schema(), df.partitions());  // one row group
  io::parquet_source src(d / "a.parquet");
  ASSERT_EQ(io::parquet::file_reader::open(d / "a.parquet").num_row_groups(), 1);
  engine_options o;
  o.target_partition_rows = 2500;
  auto parts = read_partitions(src, {"k", "s", "v"}, o, df.lazy().select({col("k"), col("s"), col("v")}).collect());
  ASSERT_EQ(parts.size(), 4u);
  for (auto& p : parts)
    EXPECT_EQ(p.num_rows(), 2500);
  // by bytes: a quarter of the row group's uncompressed bytes of k and v
  int64_t bytes = io::parquet::file_reader::open(d / "a.parquet").row_group_uncompressed_bytes(0, {0, 3});
  o.target_partition_size = bytes / 4;
  EXPECT_EQ(read_partitions(src, {"k", "v"}, o, df.lazy().select({col("k"), col("v")}).collect()).size(), 4u);
  o.target_partition_size = bytes * 10;
  EXPECT_EQ(read_partitions(src, {"k", "v"}, o, df.lazy().select({col("k"), col("v")}).collect()).size(), 1u);
  EXPECT_EQ(src.counters().row_groups_read.load(), 3);  // each read decodes the row group once
}

TEST(ScanParquet, FewRowGroupsGiveEveryThreadAPartition) {
  // two row groups of 40000 rows under the default target (1 Mi rows): coalesced into one partition
  // before, which left all but one thread idle in the operators after the scan; now an even share per
  // thread (4 threads: 20000 rows), not below 16384 rows' worth
  temp_dir d;
  data_frame df = sample(80000);
  io::parquet::write_options w;
  w.row_group_rows = 40000;
  io::parquet::write_parquet(d / "a.parquet", df.schema(), df.partitions(), w);
  io::parquet_source src(d / "a.parquet");
  const data_frame want = df.lazy().select({col("k"), col("s")}).collect();
  engine_options o;
  for (const auto& [threads, partitions] : std::vector<std::pair<int, size_t>>{{4, 4}, {2, 2}, {8, 4}, {1, 1}}) {
    thread_pool pool(threads);
    auto parts = src.read({"k", "s"}, {}, o, pool, default_host_resource());
    EXPECT_EQ(parts.size(), partitions) << threads << " threads";  // 8 threads: 16384-row floor, 4 pieces
    expect_frames_equal(data_frame(want.schema(), parts), want);
  }
}

TEST(ScanParquet, PlanPartitions) {
  using io::plan_partitions;
  auto shape = [](const std::vector<io::partition_plan>& p) {
    std::string s;
    for (auto& x : p)
      s += std::to_string(x.first) + "+" + std::to_string(x.count) + "/" + std::to_string(x.pieces) + " ";
    return s;
  };
  EXPECT_EQ(shape(plan_partitions({10, 10, 10, 35, 10, 16, 10}, 20)), "0+2/1 2+1/1 3+1/2 4+1/1 5+1/1 6+1/1 ");
  EXPECT_EQ(shape(plan_partitions({5, 5, 5, 5, 5}, 20)), "0+4/1 4+1/1 ");
  EXPECT_EQ(shape(plan_partitions({100}, 20)), "0+1/5 ");
  EXPECT_EQ(shape(plan_partitions({}, 20)), "");
}

namespace {
/// Writes with pyarrow a 100 000-row file of one row group, `k` sorted, with small pages and a page index.
std::string pyarrow_page_index_file(const temp_dir& d) {
  const std::string path = d / "pi.parquet";
  const std::string cmd = test_python() +
                          " -c \"import sys, pyarrow as pa, pyarrow.parquet as pq; n = 100000; "
                          "t = pa.table({'k': pa.array(range(n), pa.int64()), 's': [f's{i % 97}' for i in range(n)], "
                          "'v': [None if i % 11 == 0 else i / 4 for i in range(n)]}); "
                          "pq.write_table(t, sys.argv[1], row_group_size=n, data_page_size=4096, "
                          "write_page_index=True)\" " +
                          path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return path;
}
}  // namespace

TEST(ScanParquet, PageIndexSkipsPagesOfSortedColumn) {
  temp_dir d;
  const std::string path = pyarrow_page_index_file(d);
  auto reader = io::parquet::file_reader::open(path);
  ASSERT_EQ(reader.num_row_groups(), 1);
  size_t total_pages = 0;
  for (size_t c = 0; c < 3; ++c) {
    auto pages = reader.page_index(0, c);
    EXPECT_GT(pages.size(), 10u) << c;
    total_pages += pages.size();
  }
  auto k_pages = reader.page_index(0, 0);
  EXPECT_EQ(k_pages.front().stats.min->as_int64(), 0);
  EXPECT_EQ(k_pages.back().stats.max->as_int64(), 99999);

  auto src = std::make_shared<io::parquet_source>(path);
  auto filter = col("k") >= 50000 & col("k") < 50500;
  data_frame got = lazy_frame(plan::scan(src)).filter(filter).collect();
  data_frame want = scan_parquet(path).collect().lazy().filter(filter).collect();
  EXPECT_EQ(got.num_rows(), 500);
  expect_frames_equal(got, want);
  EXPECT_EQ(src->counters().row_groups_read.load(), 1);
  // k's pages around rows 50000..50499 and the pages of s and v overlapping them are decoded, no others
  const int64_t skipped = src->counters().pages_skipped.load();
  EXPECT_GT(skipped, 0);
  EXPECT_GE(skipped, static_cast<int64_t>(total_pages) - 9);
  // a filter no page matches skips the row group; one every page may match skips nothing
  auto none = std::make_shared<io::parquet_source>(path);
  EXPECT_EQ(lazy_frame(plan::scan(none)).filter(col("k") == 123456).collect().num_rows(), 0);
  auto all = std::make_shared<io::parquet_source>(path);
  EXPECT_EQ(lazy_frame(plan::scan(all)).filter(col("k") >= 0).collect().num_rows(), 100000);
  EXPECT_EQ(all->counters().pages_skipped.load(), 0);
}

TEST(ScanParquet, RowRangesReadConsistentlyAcrossPageBoundaries) {
  temp_dir d;
  const std::string path = pyarrow_page_index_file(d);
  auto reader = io::parquet::file_reader::open(path);
  table full = reader.read_row_group(0, {0, 1, 2});
  // ranges that start and end inside pages of different columns
  std::vector<io::parquet::row_range> ranges{{10, 3000}, {40000, 40001}, {77777, 100000}};
  int64_t skipped = 0;
  table part = reader.read_row_group_ranges(0, {0, 1, 2}, ranges, default_host_resource(), &skipped);
  std::vector<table> want;
  for (auto& r : ranges)
    want.push_back(full.slice(r.begin, r.end - r.begin));
  tug::schema s = reader.schema();
  expect_frames_equal(data_frame(s, {part}), data_frame(s, {concatenate(want)}));
  EXPECT_GT(skipped, 0);
  // the column chunks decoded in parallel: the same rows, the same pages skipped
  thread_pool pool(3);
  int64_t pooled_skipped = 0;
  table pooled = reader.read_row_group_ranges(0, {0, 1, 2}, ranges, default_host_resource(), &pooled_skipped, &pool);
  expect_frames_equal(data_frame(s, {pooled}), data_frame(s, {concatenate(want)}));
  EXPECT_EQ(pooled_skipped, skipped);
  EXPECT_THROW(reader.read_row_group_ranges(0, {0}, {{5, 3}}), invalid_argument_error);
}

namespace {
/// Overwrites the bytes [from, to) of a file with 0xFF.
void clobber(const std::string& path, int64_t from, int64_t to) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(from);
  std::string junk(static_cast<size_t>(to - from), '\xff');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

/// Where a Parquet file's footer starts (after its last column chunk).
int64_t footer_start(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(-8, std::ios::end);
  const auto size = static_cast<int64_t>(f.tellg()) + 8;
  unsigned char len[4];
  f.read(reinterpret_cast<char*>(len), 4);
  return size - 8 - static_cast<int64_t>(len[0] | len[1] << 8 | len[2] << 16 | static_cast<uint32_t>(len[3]) << 24);
}
}  // namespace

// A limit over a scan (head) reads only the row groups that hold its rows: the later row groups'
// bytes are overwritten, and only a read past the limit trips over them.
TEST(ScanParquet, LimitReadsOnlyTheRowGroupsThatHoldItsRows) {
  temp_dir d;
  data_frame df = sample();
  const std::string path = d / "a.parquet";
  io::parquet::write_parquet(path, df.schema(), df.partitions(), small_groups());  // 10 row groups
  auto first_rows = [&](int64_t offset, int64_t n) { return df.lazy().slice(offset, n).collect(); };
  for (int64_t n : {0, 1, 5, 999, 1000, 1001, 2500}) {
    auto src = std::make_shared<io::parquet_source>(path);
    data_frame got = lazy_frame(plan::scan(src)).limit(n).collect();
    expect_frames_equal(got, first_rows(0, n));
    EXPECT_EQ(src->counters().row_groups_read.load(), (n + 999) / 1000) << n;
  }
  // through a projection and with an offset: rows 2500..2509 need the first three row groups
  auto src = std::make_shared<io::parquet_source>(path);
  lazy_frame q = lazy_frame(plan::scan(src)).select({col("k"), (col("v") * 2).alias("v2")}).slice(2500, 10);
  EXPECT_NE(q.explain().find("first 2510 rows"), std::string::npos) << q.explain();
  expect_frames_equal(q.collect(), df.lazy().select({col("k"), (col("v") * 2).alias("v2")}).slice(2500, 10).collect());
  EXPECT_EQ(src->counters().row_groups_read.load(), 3);
  // a filter pushed into the scan keeps the limit out of it (the filtered rows are not the first ones)
  auto filtered = std::make_shared<io::parquet_source>(path);
  lazy_frame f = lazy_frame(plan::scan(filtered)).filter(col("g") == 3).limit(5);
  expect_frames_equal(f.collect(), df.lazy().filter(col("g") == 3).limit(5).collect());
  EXPECT_EQ(f.explain().find("first 5 rows"), std::string::npos) << f.explain();
  // the bytes of row groups 1..9 overwritten (they start where the footer of a file of the first
  // row group alone starts): the first rows still read, more do not
  data_frame head = first_rows(0, 1000);
  io::parquet::write_parquet(d / "head.parquet", head.schema(), head.partitions(), small_groups());
  clobber(path, footer_start(d / "head.parquet"), footer_start(path));
  expect_frames_equal(scan_parquet(path).limit(1000).collect(), head);
  EXPECT_THROW(scan_parquet(path).limit(1001).collect(), io_error);
}

// Of the last row group a limit needs, only the data pages up to its last row are decoded, also
// without an offset index (tug writes none): the later pages' bytes are overwritten.
TEST(ScanParquet, LimitDecodesOnlyThePagesUpToItsLastRow) {
  temp_dir d;
  data_frame df = sample(100000).lazy().select({col("k")}).collect();
  io::parquet::write_options w;
  w.codec = "none";
  w.dictionary = false;
  w.page_bytes = 4096;  // about 200 pages in one row group
  const std::string path = d / "pages.parquet";
  io::parquet::write_parquet(path, df.schema(), df.partitions(), w);
  ASSERT_EQ(io::parquet::file_reader::open(path).num_row_groups(), 1);
  ASSERT_TRUE(io::parquet::file_reader::open(path).page_index(0, 0).empty());
  const int64_t end = footer_start(path);
  clobber(path, 4 + (end - 4) / 2, end);  // the pages of rows from about 50000 on
  for (int64_t n : {1, 5, 40000})
    expect_frames_equal(scan_parquet(path).limit(n).collect(), df.lazy().limit(n).collect());
  EXPECT_THROW(scan_parquet(path).limit(60000).collect(), io_error);
}

// read_row_group_ranges without an offset index walks the pages up to the last wanted row and picks
// the ranges' rows: the same rows as slices of the whole row group.
TEST(ScanParquet, RowRangesWithoutAnOffsetIndex) {
  temp_dir d;
  data_frame df = sample();
  io::parquet::write_options w;
  w.page_bytes = 2048;
  io::parquet::write_parquet(d / "a.parquet", df.schema(), df.partitions(), w);
  auto reader = io::parquet::file_reader::open(d / "a.parquet");
  ASSERT_TRUE(reader.page_index(0, 0).empty());
  table full = reader.read_row_group(0, {0, 2, 3});
  tug::schema s({reader.schema()[0], reader.schema()[2], reader.schema()[3]});
  thread_pool pool(3);
  using ranges = std::vector<io::parquet::row_range>;
  for (const ranges& rs : {ranges{{0, 5}}, ranges{{0, 1}}, ranges{{10, 3000}, {4000, 4001}, {7777, 9999}},
                           ranges{{9999, 10000}}, ranges{{0, 10000}}}) {
    std::vector<table> want;
    for (auto& r : rs)
      want.push_back(full.slice(r.begin, r.end - r.begin));
    for (thread_pool* p : {static_cast<thread_pool*>(nullptr), &pool}) {
      table part = reader.read_row_group_ranges(0, {0, 2, 3}, rs, default_host_resource(), nullptr, p);
      expect_frames_equal(data_frame(s, {part}), data_frame(s, {concatenate(want)}));
    }
  }
}

// A limit over a CSV scan reads a prefix of the first file, and the later files of a directory or
// glob not at all: a malformed line after the limit is never seen.
TEST(ScanCsv, LimitReadsOnlyAPrefix) {
  temp_dir d;
  data_frame df = sample(100000);  // about 2 MB of CSV, more than the reader's first 1 MiB prefix
  sink_csv(df.lazy(), d / "big.csv");
  std::ofstream(d / "big.csv", std::ios::app) << "1,2\n";
  for (int64_t n : {0, 1, 5, 1000})
    expect_frames_equal(scan_csv(d / "big.csv").limit(n).collect(), df.lazy().limit(n).collect());
  EXPECT_THROW(scan_csv(d / "big.csv").collect(), io_error);
  fs::create_directories(d.path / "parts");
  data_frame first = sample(2000);
  sink_csv(first.lazy(), d / "parts/part-0.csv");
  std::ofstream(d / "parts/part-1.csv") << "k,g,s,v\n1,2\n";
  for (const std::string& in : {d / "parts", d / "parts/*.csv"}) {
    expect_frames_equal(scan_csv(in).limit(2000).collect(), first);
    EXPECT_THROW(scan_csv(in).limit(2001).collect(), io_error) << in;
  }
}
