// Parquet reader: files written by pyarrow (tests/data/make_parquet.py) read by tug and compared with
// the values pyarrow dumps to expected.json; corrupt files; statistics.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "parquet_test_util.hpp"
#include "test_util.hpp"
#include "tug/api/io.hpp"
#include "tug/io/parquet/reader.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {
namespace {

namespace fs = std::filesystem;
using io::parquet::file_reader;
using json = nlohmann::json;
using parquet_test::all_columns;
using parquet_test::canon;
using parquet_test::read_row_groups;

class ParquetFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tug_parquet_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::string cmd =
        test_python() + " " TUG_SOURCE_DIR "/tests/data/make_parquet.py " + dir_.string();
    int rc = std::system(cmd.c_str());
    ASSERT_EQ(rc, 0) << "generating Parquet test files failed (needs pyarrow): " << cmd;
    std::ifstream f(dir_ / "expected.json");
    expected_ = json::parse(f);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string path(const std::string& name) { return (dir_ / name).string(); }

  /// read_row_group_rows of row group `g` (whole: `t`) gives the same rows as a gather of `t`: every
  /// row, every third (on the pool), every 37th from the 5th, and the last one alone. With several
  /// pages a chunk (the base files), the last row alone passes over pages.
  static void check_selected_rows(const file_reader& r, int g, const table& t, thread_pool& pool,
                                  const std::string& name) {
    const int64_t n = t.num_rows();
    for (int64_t step : {1, 3, 37, 0}) {
      std::vector<int64_t> sel;
      if (step == 0 && n > 0) sel.push_back(n - 1);
      for (int64_t i = step == 37 ? 5 : 0; step > 0 && i < n; i += step)
        sel.push_back(i);
      int64_t skipped = 0;
      table got = r.read_row_group_rows(g, all_columns(r), sel, default_host_resource(), &skipped,
                                        step == 3 ? &pool : nullptr);
      ASSERT_EQ(got.num_columns(), t.num_columns());
      ASSERT_EQ(got.num_rows(), static_cast<int64_t>(sel.size()));
      for (size_t c = 0; c < t.num_columns(); ++c)
        expect_columns_equal(got[c], gather(t[c], sel),
                             r.schema()[c].name + " rows of row group " + std::to_string(g) + " step " +
                                 std::to_string(step));
      const bool paged = name.find("_plain") != std::string::npos || name == "dict_fallback.parquet";
      if (step == 0 && n >= 300 && paged)
        EXPECT_GT(skipped, 0) << "row group " << g;
      if (step == 1) EXPECT_EQ(skipped, 0);
    }
  }

  /// Reads every row group of `name` and compares with pyarrow's values.
  static void check_file(const std::string& name) {
    SCOPED_TRACE(name);
    const json& e = expected_.at(name);
    auto r = file_reader::open(path(name));
    ASSERT_EQ(r.num_rows(), e["rows"].get<int64_t>());
    ASSERT_EQ(r.num_row_groups(), e["row_groups"].get<int>());
    const json& cols = e["columns"];
    ASSERT_EQ(r.schema().size(), cols.size());
    std::vector<table> parts = read_row_groups(r);
    int64_t rows = 0;
    thread_pool pool(3);  // the column chunks decoded in parallel give the same columns
    for (int g = 0; g < r.num_row_groups(); ++g) {
      const table& t = parts[static_cast<size_t>(g)];
      EXPECT_EQ(t.num_rows(), r.row_group_num_rows(g));
      rows += t.num_rows();
      table pooled = r.read_row_group_ranges(g, all_columns(r), {}, default_host_resource(), nullptr, &pool);
      ASSERT_EQ(pooled.num_columns(), t.num_columns());
      for (size_t c = 0; c < t.num_columns(); ++c)
        expect_columns_equal(pooled[c], t[c], r.schema()[c].name + " (pool)");
      check_selected_rows(r, g, t, pool, name);
    }
    ASSERT_EQ(rows, r.num_rows());
    for (size_t c = 0; c < r.schema().size(); ++c) {
      const auto& f = r.schema()[c];
      SCOPED_TRACE(f.name);
      ASSERT_TRUE(cols.contains(f.name));
      const json& ec = cols[f.name];
      EXPECT_EQ(to_string(f.type), ec["type"].get<std::string>());
      int64_t row = 0;
      int mismatches = 0;
      for (const auto& p : parts) {
        const column& col = p[c];
        ASSERT_EQ(col.type(), f.type);
        for (int64_t i = 0; i < col.size(); ++i, ++row) {
          const json& want = ec["values"][static_cast<size_t>(row)];
          auto got = canon(col, i);
          std::optional<std::string> w = want.is_null() ? std::nullopt : std::optional(want.get<std::string>());
          if (got != w && ++mismatches <= 3)
            ADD_FAILURE() << "row " << row << ": got " << got.value_or("null") << ", want " << w.value_or("null");
        }
      }
      EXPECT_EQ(mismatches, 0);
    }
  }

  static fs::path dir_;
  static json expected_;
};
fs::path ParquetFiles::dir_;
json ParquetFiles::expected_;

TEST_F(ParquetFiles, EveryPageVersionCodecAndDictionarySetting) {
  for (const char* v : {"1", "2"})
    for (const char* codec : {"none", "snappy", "gzip", "zstd", "lz4"})
      for (const char* d : {"dict", "plain"})
        check_file(std::string("base_v") + v + "_" + codec + "_" + d + ".parquet");
}

TEST_F(ParquetFiles, DeltaAndByteStreamSplitEncodings) {
  for (const char* v : {"1", "2"})
    for (const char* f : {"delta_bp_v", "delta_len_v", "delta_ba_v", "bss_v"})
      check_file(std::string(f) + v + ".parquet");
}

TEST_F(ParquetFiles, FilesWrittenByDuckDBAndPolars) {
  // make_parquet.py writes them where duckdb and polars import (the .venv has both)
  int files = 0;
  for (const auto& [name, e] : expected_.items())
    if (name.starts_with("duckdb_") || name.starts_with("polars_")) {
      check_file(name);
      ++files;
    }
  if (files == 0) GTEST_SKIP() << "no DuckDB or Polars here to write the files";
  EXPECT_EQ(files, 10);
}

TEST_F(ParquetFiles, DecimalsStoredAsIntegers) { check_file("decimal_int.parquet"); }
TEST_F(ParquetFiles, DictionaryFallsBackToPlain) { check_file("dict_fallback.parquet"); }
TEST_F(ParquetFiles, Int96Timestamps) { check_file("int96.parquet"); }
TEST_F(ParquetFiles, UuidAndFloat16) { check_file("extra_types.parquet"); }
TEST_F(ParquetFiles, EmptyAndOneRow) {
  check_file("empty.parquet");
  check_file("one_row.parquet");
}

/// The unsupported columns of a file as [name, reason] pairs.
std::vector<std::vector<std::string>> unsupported_of(const file_reader& r) {
  std::vector<std::vector<std::string>> out;
  for (const auto& u : r.unsupported_columns())
    out.push_back({u.name, u.reason});
  return out;
}

TEST_F(ParquetFiles, UnsupportedColumnsAreListedWithTheReason) {
  for (const char* name : {"nested.parquet", "unsupported.parquet", "duplicate_names.parquet"}) {
    check_file(name);  // the file reader reads the other columns
    auto r = file_reader::open(path(name));
    EXPECT_EQ(unsupported_of(r), expected_[name]["unsupported"].get<std::vector<std::vector<std::string>>>()) << name;
  }
  EXPECT_EQ(file_reader::open(path("unsupported.parquet")).schema().names(), (std::vector<std::string>{"a", "z"}));
}

// A scan does not lose columns silently: it raises naming them, the file and the option, or skips
// them when told to, saying so once (stderr) and in explain().
TEST_F(ParquetFiles, ScanRefusesUnsupportedColumnsUnlessSkipped) {
  const std::string file = path("unsupported.parquet");
  try {
    scan_parquet(file);
    ADD_FAILURE() << "unsupported columns were dropped silently";
  } catch (const not_implemented_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(file + ": tug cannot read the column(s) \"m\" (nested map), \"d256\" (decimal(50, 2): precision "
                            "above 38, beyond decimal128), \"l\" (nested list), \"st\" (nested struct)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("skip_unsupported_columns"), std::string::npos) << m;
  }
  io::parquet::read_options skip;
  skip.skip_unsupported_columns = true;
  ::testing::internal::CaptureStderr();
  lazy_frame q = scan_parquet(file, skip);
  data_frame df = q.collect();
  const std::string plan = q.explain();
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string note = "skipped unsupported columns \"m\" (nested map), \"d256\" (decimal(50, 2): precision "
                           "above 38, beyond decimal128), \"l\" (nested list), \"st\" (nested struct) of " + file;
  EXPECT_EQ(err, "tug warning: scan_parquet " + note + "\n");  // once, at the scan
  EXPECT_NE(plan.find(note), std::string::npos) << plan;
  expect_frames_equal(df, data_frame::from_columns({{"a", make_column<int32_t>(type_id::int32, {1, std::nullopt, 3})},
                                                    {"z", str({"p", "q", std::nullopt})}}));
  // over several files: the columns once, and how many files have them
  const fs::path dir = dir_ / "unsupported_dir";
  fs::create_directories(dir);
  fs::copy_file(file, dir / "p0.parquet", fs::copy_options::overwrite_existing);
  fs::copy_file(file, dir / "p1.parquet", fs::copy_options::overwrite_existing);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(scan_parquet(dir.string(), skip).collect().num_rows(), 6);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "tug warning: scan_parquet skipped unsupported columns \"m\" (nested map), \"d256\" (decimal(50, 2): "
            "precision above 38, beyond decimal128), \"l\" (nested list), \"st\" (nested struct) of 2 of 2 files (" +
                (dir / "p0.parquet").string() + ", " + (dir / "p1.parquet").string() + ")\n");
  const std::string only = path("nested_only.parquet");
  EXPECT_THROW(scan_parquet(only), not_implemented_error);
  try {
    scan_parquet(only, skip);
    ADD_FAILURE() << "a file of unsupported columns only read as no columns";
  } catch (const not_implemented_error& e) {
    EXPECT_NE(std::string(e.what()).find(only + ": every column is one tug cannot read: \"l\" (nested list), \"st\" "
                                                "(nested struct)"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ParquetFiles, ReadsAColumnSubsetInAnyOrder) {
  auto r = file_reader::open(path("base_v1_snappy_dict.parquet"));
  size_t s = r.schema().index_of("s"), i64c = r.schema().index_of("i64");
  table t = r.read_row_group(1, {s, i64c});
  table full = r.read_row_group(1, {i64c, s});
  expect_columns_equal(t[0], full[1]);
  expect_columns_equal(t[1], full[0]);
  EXPECT_EQ(r.read_row_group(0, {}).num_rows(), r.row_group_num_rows(0));
  EXPECT_GT(r.row_group_uncompressed_bytes(0, {s, i64c}), r.row_group_uncompressed_bytes(0, {s}));
  EXPECT_THROW(r.read_row_group(r.num_row_groups(), {s}), invalid_argument_error);
  EXPECT_THROW(r.read_row_group(0, {r.schema().size()}), invalid_argument_error);
}

TEST_F(ParquetFiles, Statistics) {
  auto r = file_reader::open(path("stats.parquet"));
  const auto& s = r.schema();
  auto st = r.statistics(0, s.index_of("i"));
  ASSERT_TRUE(st.min && st.max && st.null_count);
  EXPECT_EQ(*st.min, scalar(type_id::int64, int64_t{-7}));
  EXPECT_EQ(*st.max, scalar(type_id::int64, int64_t{12}));
  EXPECT_EQ(*st.null_count, 1);
  st = r.statistics(0, s.index_of("s"));
  ASSERT_TRUE(st.min && st.max);
  EXPECT_EQ(st.min->as_string(), "apple");
  EXPECT_EQ(st.max->as_string(), "zoo");
  st = r.statistics(0, s.index_of("d"));
  EXPECT_EQ(st.min->as_double(), -2.25);
  EXPECT_EQ(st.max->as_double(), 1.5);
  EXPECT_EQ(*st.null_count, 2);
  st = r.statistics(0, s.index_of("dec"));
  EXPECT_EQ(st.min->type(), decimal(7, 2));
  EXPECT_EQ(st.min->as_int128(), -350);
  EXPECT_EQ(st.max->as_int128(), 125);
  st = r.statistics(0, s.index_of("u"));
  EXPECT_EQ(*st.max, scalar(type_id::uint64, ~uint64_t{0}));
  EXPECT_EQ(*st.min, scalar(type_id::uint64, uint64_t{1}));
}

// ---- corrupt files: io_error naming the file ----

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void write_all(const std::string& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

/// Opens `p` and reads everything; expects an io_error whose message names the file.
void expect_io_error(const std::string& p) {
  try {
    auto r = file_reader::open(p);
    read_row_groups(r);
    ADD_FAILURE() << "no io_error for " << p;
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(ParquetFiles, CorruptFilesRaiseIoError) {
  const std::string good = read_all(path("base_v1_snappy_dict.parquet"));
  const std::string bad = path("bad.parquet");
  expect_io_error(path("does_not_exist.parquet"));
  write_all(bad, "");
  expect_io_error(bad);
  write_all(bad, good.substr(0, good.size() / 2));  // truncated
  expect_io_error(bad);
  std::string m = good;
  m[0] = 'X';  // wrong magic
  write_all(bad, m);
  expect_io_error(bad);
  m = good;
  uint32_t footer_len;
  std::memcpy(&footer_len, m.data() + m.size() - 8, 4);
  // Footer length past the file.
  uint32_t huge = static_cast<uint32_t>(m.size());
  std::memcpy(m.data() + m.size() - 8, &huge, 4);
  write_all(bad, m);
  expect_io_error(bad);
  // Truncated page: a column chunk cut short is seen as a chunk outside the file or a short page.
  m = good.substr(0, 200) + good.substr(good.size() - 8 - footer_len);
  write_all(bad, m);
  expect_io_error(bad);
}

TEST_F(ParquetFiles, CorruptPageNamesFileColumnAndRowGroup) {
  // Garbage over the first compressed page of column 'b' (the first chunk in the file).
  std::string m = read_all(path("base_v1_snappy_plain.parquet"));
  auto r0 = file_reader::open(path("base_v1_snappy_plain.parquet"));
  const std::string bad = path("bad_page.parquet");
  for (size_t i = 30; i < 60; ++i)
    m[i] = static_cast<char>(0xff);
  write_all(bad, m);
  auto r = file_reader::open(bad);  // the footer is intact
  EXPECT_EQ(r.schema(), r0.schema());
  try {
    r.read_row_group(0, {0});
    ADD_FAILURE() << "no io_error";
  } catch (const io_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(bad), std::string::npos) << msg;
    EXPECT_NE(msg.find("column 'b' row group 0"), std::string::npos) << msg;
  }
  // The same error when the chunks are decoded in parallel.
  thread_pool pool(3);
  try {
    r.read_row_group_ranges(0, all_columns(r), {}, default_host_resource(), nullptr, &pool);
    ADD_FAILURE() << "no io_error";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("column 'b' row group 0"), std::string::npos) << e.what();
  }
  // The other columns still read.
  EXPECT_EQ(r.read_row_group(0, {1}).num_rows(), r.row_group_num_rows(0));
}

TEST_F(ParquetFiles, FlippedFooterAndPageBytesNeverCrash) {
  // Every flipped byte of the footer, and bytes through the pages, must give data or an io_error, read
  // whole or every other row (read_row_group_rows).
  for (const char* name : {"base_v2_zstd_dict.parquet", "base_v1_snappy_plain.parquet"}) {
    SCOPED_TRACE(name);
    const std::string good = read_all(path(name));
    const std::string bad = path("flip.parquet");
    uint32_t footer_len;
    std::memcpy(&footer_len, good.data() + good.size() - 8, 4);
    int errors = 0;
    std::vector<size_t> positions;
    for (size_t i = good.size() - 8 - footer_len; i < good.size() - 8; i += 29)
      positions.push_back(i);
    for (size_t i = 4; i < good.size() - 8 - footer_len; i += good.size() / 97)
      positions.push_back(i);
    for (size_t pos : positions) {
      std::string m = good;
      m[pos] = static_cast<char>(m[pos] ^ 0x5a);
      write_all(bad, m);
      for (bool selected : {false, true}) {
        try {
          auto r = file_reader::open(bad);
          if (!selected) {
            read_row_groups(r);
            continue;
          }
          for (int g = 0; g < r.num_row_groups(); ++g) {
            std::vector<int64_t> rows;
            for (int64_t i = 1; i < r.row_group_num_rows(g); i += 2)
              rows.push_back(i);
            r.read_row_group_rows(g, all_columns(r), rows);
          }
        } catch (const io_error& e) {
          ++errors;
          EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
        } catch (const user_error&) {
          ++errors;  // e.g. a flipped type makes a schema the reader rejects as invalid
        } catch (const not_implemented_error&) {
          ++errors;  // e.g. a flipped encoding id
        }
      }
    }
    EXPECT_GT(errors, 0);
  }
}

}  // namespace
}  // namespace tug

TEST(ParquetReader, SubRangesPickRowsOfTheSelectedRows) {
  using tug::io::parquet::row_range;
  using tug::io::parquet::sub_ranges;
  auto eq = [](const std::vector<row_range>& a, const std::vector<row_range>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].begin, b[i].begin) << i;
      EXPECT_EQ(a[i].end, b[i].end) << i;
    }
  };
  eq(sub_ranges({}, 3, 7), {{3, 7}});
  eq(sub_ranges({}, 4, 4), {});
  // selected rows 10..19 then 30..49: rows 5..24 of them are 15..19 and 30..44
  eq(sub_ranges({{10, 20}, {30, 50}}, 5, 25), {{15, 20}, {30, 45}});
  eq(sub_ranges({{10, 20}, {30, 50}}, 0, 10), {{10, 20}});
  eq(sub_ranges({{10, 20}, {30, 50}}, 10, 30), {{30, 50}});
  eq(sub_ranges({{10, 20}, {30, 50}}, 9, 11), {{19, 20}, {30, 31}});
}
