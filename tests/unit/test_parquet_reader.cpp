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

TEST_F(ParquetFiles, DecimalsStoredAsIntegers) { check_file("decimal_int.parquet"); }
TEST_F(ParquetFiles, DictionaryFallsBackToPlain) { check_file("dict_fallback.parquet"); }
TEST_F(ParquetFiles, Int96Timestamps) { check_file("int96.parquet"); }
TEST_F(ParquetFiles, UuidAndFloat16) { check_file("extra_types.parquet"); }
TEST_F(ParquetFiles, EmptyAndOneRow) {
  check_file("empty.parquet");
  check_file("one_row.parquet");
}

TEST_F(ParquetFiles, NestedColumnsAreSkipped) {
  check_file("nested.parquet");
  auto r = file_reader::open(path("nested.parquet"));
  EXPECT_EQ(r.skipped_columns(), expected_["nested.parquet"]["skipped"].get<std::vector<std::string>>());
  EXPECT_EQ(r.schema().names(), (std::vector<std::string>{"a", "z"}));
}

TEST_F(ParquetFiles, RepeatedColumnNameIsSkipped) {
  check_file("duplicate_names.parquet");
  auto r = file_reader::open(path("duplicate_names.parquet"));
  EXPECT_EQ(r.skipped_columns(), std::vector<std::string>{"a"});
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
