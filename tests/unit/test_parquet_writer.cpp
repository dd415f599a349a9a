// Parquet writer: round trips tug -> tug and tug -> pyarrow (tests/data/read_parquet.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "parquet_test_util.hpp"
#include "test_util.hpp"
#include "tug/io/parquet/metadata.hpp"
#include "tug/io/parquet/reader.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {
namespace {

namespace fs = std::filesystem;
using namespace io::parquet;
using json = nlohmann::json;
using parquet_test::canon;

/// A directory for this process's files, removed at exit.
fs::path temp_dir() {
  struct dir {
    fs::path p = fs::temp_directory_path() / ("tug_parquet_w_" + std::to_string(::getpid()));
    dir() { fs::create_directories(p); }
    ~dir() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  };
  static dir d;
  return d.p;
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A table of `n` rows with every tug type the writer keeps exactly, with nulls (every 5th row) and,
/// in `low_card` columns, few distinct values (for dictionaries).
table every_type(int64_t n, uint64_t seed) {
  std::vector<column> cols;
  auto nul = [&](int64_t i, int k) { return mix(seed + static_cast<uint64_t>(i * 31 + k)) % 5 == 0; };
  auto r = [&](int64_t i, int k) { return mix(seed * 7 + static_cast<uint64_t>(i * 131 + k)); };
  auto fixed = [&]<typename T>(data_type t, int k, auto gen) {
    fixed_width_builder<T> b(t, n);
    for (int64_t i = 0; i < n; ++i) {
      if (nul(i, k))
        b.set_null(i);
      else
        b.set(i, static_cast<T>(gen(i)));
    }
    cols.push_back(b.finish());
  };
  fixed.template operator()<bool>(type_id::boolean, 1, [&](int64_t i) { return r(i, 1) & 1; });
  fixed.template operator()<int8_t>(type_id::int8, 2, [&](int64_t i) { return r(i, 2); });
  fixed.template operator()<int16_t>(type_id::int16, 3, [&](int64_t i) { return r(i, 3); });
  fixed.template operator()<int32_t>(type_id::int32, 4, [&](int64_t i) { return r(i, 4); });
  fixed.template operator()<int64_t>(type_id::int64, 5, [&](int64_t i) { return r(i, 5); });
  fixed.template operator()<uint8_t>(type_id::uint8, 6, [&](int64_t i) { return r(i, 6); });
  fixed.template operator()<uint16_t>(type_id::uint16, 7, [&](int64_t i) { return r(i, 7); });
  fixed.template operator()<uint32_t>(type_id::uint32, 8, [&](int64_t i) { return r(i, 8); });
  fixed.template operator()<uint64_t>(type_id::uint64, 9, [&](int64_t i) { return r(i, 9); });
  fixed.template operator()<float>(type_id::float32, 10, [&](int64_t i) {
    return static_cast<float>(static_cast<int64_t>(r(i, 10) % 2000001) - 1000000) / 64.0f;
  });
  fixed.template operator()<double>(
      type_id::float64, 11, [&](int64_t i) { return static_cast<double>(static_cast<int64_t>(r(i, 11))) * 1e-7; });
  fixed.template operator()<__int128>(decimal(7, 2), 12,
                                      [&](int64_t i) { return static_cast<int64_t>(r(i, 12) % 19999999) - 9999999; });
  fixed.template operator()<__int128>(decimal(15, 3), 13, [&](int64_t i) {
    return static_cast<int64_t>(r(i, 13) % 999999999999999ULL) - 499999999999999LL;
  });
  fixed.template operator()<__int128>(decimal(38, 10), 14, [&](int64_t i) {
    return (static_cast<__int128>(static_cast<int64_t>(r(i, 14))) * static_cast<__int128>(r(i, 15) >> 2)) / 8;
  });
  fixed.template operator()<int32_t>(type_id::date32, 16,
                                     [&](int64_t i) { return static_cast<int64_t>(r(i, 16) % 60000) - 30000; });
  fixed.template operator()<int64_t>(timestamp(time_unit::ms), 17,
                                     [&](int64_t i) { return static_cast<int64_t>(r(i, 17) >> 24); });
  fixed.template operator()<int64_t>(timestamp(time_unit::us, "UTC"), 18,
                                     [&](int64_t i) { return static_cast<int64_t>(r(i, 18) >> 8); });
  fixed.template operator()<int64_t>(timestamp(time_unit::ns), 19,
                                     [&](int64_t i) { return static_cast<int64_t>(r(i, 19) >> 2); });
  fixed.template operator()<int32_t>(type_id::int32, 20, [&](int64_t i) { return r(i, 20) % 4; });  // low cardinality
  string_builder s, s_low;
  for (int64_t i = 0; i < n; ++i) {
    if (nul(i, 21))
      s.append_null();
    else
      s.append(std::string(r(i, 21) % 17, static_cast<char>('a' + r(i, 22) % 26)) + "é" + std::to_string(r(i, 23)));
    if (nul(i, 24))
      s_low.append_null();
    else
      s_low.append(std::array<const char*, 3>{"x", "", "yy"}[r(i, 24) % 3]);
  }
  cols.push_back(s.finish());
  cols.push_back(s_low.finish());
  return table(std::move(cols));
}

write_options options(const char* codec, bool dictionary, int64_t row_group_rows, int64_t page_bytes) {
  write_options o;
  o.codec = codec;
  o.dictionary = dictionary;
  o.row_group_rows = row_group_rows;
  o.page_bytes = page_bytes;
  return o;
}

schema every_type_schema(const table& t) {
  std::vector<field> f;
  for (size_t i = 0; i < t.num_columns(); ++i)
    f.push_back({"c" + std::to_string(i), t[i].type()});
  return schema(f);
}

table read_all(const std::string& p) {
  auto r = file_reader::open(p);
  std::vector<table> parts = parquet_test::read_row_groups(r);
  if (parts.empty()) {
    std::vector<column> cols;
    for (const auto& f : r.schema())
      cols.push_back(make_empty_column(f.type));
    return table(std::move(cols));
  }
  return concatenate(parts);
}

TEST(ParquetWriter, RoundTripsEveryTypeCodecAndSize) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    table t = every_type(n, static_cast<uint64_t>(n));
    schema s = every_type_schema(t);
    for (const char* codec : {"none", "snappy", "zstd", "lz4_raw", "gzip"}) {
      for (bool dict : {true, false}) {
        SCOPED_TRACE(std::to_string(n) + " rows, " + codec + (dict ? ", dictionary" : ", plain"));
        std::string p = (temp_dir() / "rt.parquet").string();
        write_options o = options(codec, dict, 300, 512);
        // Two partitions, the second one sliced.
        std::vector<table> parts;
        if (n >= 2)
          parts = {t.slice(0, n / 2), t.slice(n / 2, n - n / 2)};
        else
          parts = {t};
        write_parquet(p, s, parts, o);
        auto r = file_reader::open(p);
        ASSERT_EQ(r.schema(), s);
        ASSERT_EQ(r.num_rows(), n);
        EXPECT_EQ(r.num_row_groups(), (n + 299) / 300);
        table back = read_all(p);
        ASSERT_EQ(back.num_rows(), n);
        for (size_t c = 0; c < s.size(); ++c)
          expect_columns_equal(back[c], t[c], s[c].name);
      }
    }
  }
}

TEST(ParquetWriter, ParallelEncodingWritesTheSameBytes) {
  // every type, plus dictionaries of up to 17-bit indices (70000 distinct int32s) that pass the 1 MiB
  // limit mid-chunk (int64s), over row groups of 25000 rows: a pool of 4 threads encodes the chunks
  // of each row group at once, and the file must not change
  const int64_t n = 90000;
  table t = every_type(n, 5);
  std::vector<column> cols = t.columns();
  fixed_width_builder<int32_t> wide(type_id::int32, n);
  fixed_width_builder<int64_t> spill(type_id::int64, n);
  for (int64_t i = 0; i < n; ++i) {
    wide.set(i, static_cast<int32_t>(mix(static_cast<uint64_t>(i)) % 70000));
    if (i % 7 == 3)
      spill.set_null(i);
    else
      spill.set(i, static_cast<int64_t>(mix(static_cast<uint64_t>(i) + 99)));
  }
  cols.push_back(wide.finish());
  cols.push_back(spill.finish());
  t = table(std::move(cols));
  schema s = every_type_schema(t);
  std::vector<table> parts = {t.slice(0, 40000), t.slice(40000, n - 40000)};
  auto bytes_of_file = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), {});
  };
  thread_pool pool(4);
  for (const char* codec : {"none", "zstd"}) {
    SCOPED_TRACE(codec);
    const write_options o = options(codec, true, 25000, 64 << 10);
    const std::string one = (temp_dir() / "serial.parquet").string(), many = (temp_dir() / "pool.parquet").string();
    write_parquet(one, s, parts, o);
    write_parquet(many, s, parts, o, &pool);
    const std::string a = bytes_of_file(one), b = bytes_of_file(many);
    ASSERT_GT(a.size(), 0u);
    EXPECT_TRUE(a == b) << "sizes " << a.size() << " and " << b.size();
    table back = read_all(many);
    ASSERT_EQ(back.num_rows(), n);
    for (size_t c = 0; c < s.size(); ++c)
      expect_columns_equal(back[c], t[c], s[c].name);
  }
}

TEST(ParquetWriter, SlicedAndAllNullColumns) {
  table t = every_type(100, 5).slice(13, 50);
  std::vector<column> cols = t.columns();
  cols.push_back(make_null_column(type_id::int64, 50));
  cols.push_back(make_null_column(type_id::string, 50));
  table u(cols);
  schema s = every_type_schema(u);
  std::string p = (temp_dir() / "sliced.parquet").string();
  write_parquet(p, s, {u});
  table back = read_all(p);
  for (size_t c = 0; c < s.size(); ++c)
    expect_columns_equal(back[c], u[c], s[c].name);
  auto st = file_reader::open(p).statistics(0, s.size() - 1);
  EXPECT_EQ(st.null_count, 50);
  EXPECT_FALSE(st.min.has_value());
}

TEST(ParquetWriter, DictionaryFallsBackToPlainMidChunk) {
  // 30000 distinct strings (about 1.3 MiB): the first pages are dictionary-encoded, then the dictionary
  // passes 1 MiB and the remaining pages are PLAIN.
  const int64_t n = 30000;
  string_builder b;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 11 == 0)
      b.append_null();
    else
      b.append("value-" + std::to_string(mix(static_cast<uint64_t>(i))) + std::string(20, 'z'));
  }
  table t({b.finish()});
  schema s({{"s", type_id::string}});
  std::string p = (temp_dir() / "fallback.parquet").string();
  write_parquet(p, s, {t}, options("snappy", true, 1 << 20, 64 << 10));
  expect_columns_equal(read_all(p)[0], t[0]);
  // The footer says both encodings were used and a dictionary page exists.
  std::ifstream f(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  uint32_t len;
  std::memcpy(&len, bytes.data() + bytes.size() - 8, 4);
  file_metadata m = decode_file_metadata(reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size() - 8 - len, len);
  const column_metadata& cm = *m.row_groups.at(0).columns.at(0).meta;
  EXPECT_TRUE(cm.dictionary_page_offset.has_value());
  EXPECT_NE(std::find(cm.encodings.begin(), cm.encodings.end(), encoding::rle_dictionary), cm.encodings.end());
  // pyarrow reads it too.
  std::string out = (temp_dir() / "fallback.json").string();
  std::string cmd =
      test_python() + " " TUG_SOURCE_DIR "/tests/data/read_parquet.py " + p + " " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream jf(out);
  json e = json::parse(jf);
  const json& vals = e["columns"]["s"]["values"];
  ASSERT_EQ(vals.size(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i += 997) {
    const json& v = vals[static_cast<size_t>(i)];
    EXPECT_EQ(v.is_null() ? std::nullopt : std::optional(v.get<std::string>()), canon(t[0], i));
  }
}

TEST(ParquetWriter, Statistics) {
  table t(
      {i64({5, std::nullopt, -7, 12}), str({"pear", "apple", std::nullopt, "zoo"}),
       make_column<uint64_t>(type_id::uint64, std::vector<std::optional<uint64_t>>{1, ~uint64_t{0}, std::nullopt, 3}),
       make_column<__int128>(decimal(30, 2), std::vector<std::optional<__int128>>{-350, 125, std::nullopt, 0})});
  schema s({{"i", type_id::int64}, {"s", type_id::string}, {"u", type_id::uint64}, {"d", decimal(30, 2)}});
  std::string p = (temp_dir() / "stats.parquet").string();
  write_parquet(p, s, {t});
  auto r = file_reader::open(p);
  auto st = r.statistics(0, 0);
  EXPECT_EQ(*st.min, scalar(type_id::int64, int64_t{-7}));
  EXPECT_EQ(*st.max, scalar(type_id::int64, int64_t{12}));
  EXPECT_EQ(st.null_count, 1);
  st = r.statistics(0, 1);
  EXPECT_EQ(st.min->as_string(), "apple");
  EXPECT_EQ(st.max->as_string(), "zoo");
  st = r.statistics(0, 2);
  EXPECT_EQ(*st.min, scalar(type_id::uint64, uint64_t{1}));
  EXPECT_EQ(*st.max, scalar(type_id::uint64, ~uint64_t{0}));
  st = r.statistics(0, 3);
  EXPECT_EQ(st.min->as_int128(), -350);
  EXPECT_EQ(st.max->as_int128(), 125);
  write_options o;
  o.statistics = false;
  write_parquet(p, s, {t}, o);
  EXPECT_FALSE(file_reader::open(p).statistics(0, 0).null_count.has_value());
}

TEST(ParquetWriter, BadOptionsAndPaths) {
  table t({i64({1})});
  schema s({{"i", type_id::int64}});
  write_options o;
  o.codec = "brotli";
  EXPECT_THROW(write_parquet((temp_dir() / "x.parquet").string(), s, {t}, o), invalid_argument_error);
  EXPECT_THROW(write_parquet("/nonexistent-dir/x.parquet", s, {t}), io_error);
  EXPECT_THROW(write_parquet((temp_dir() / "x.parquet").string(), schema({{"i", type_id::int32}}), {t}),
               invalid_argument_error);
}

// A STRING column holds UTF-8: other bytes (a binary Parquet column read as a string, a literal)
// are refused, naming the file, column and row, before the file exists.
TEST(ParquetWriter, RefusesInvalidUtf8InStringColumns) {
  const schema s({{"i", type_id::int64}, {"s", type_id::string}});
  const std::string p = (temp_dir() / "utf8.parquet").string();
  std::remove(p.c_str());
  const table first({i64({1, 2}), str({"ok", "\xC3\xA9"})});
  const table second({i64({3, 4, 5}), str({std::nullopt, "a", "b\xC3"})});
  thread_pool three(3);
  for (thread_pool* pool : {static_cast<thread_pool*>(nullptr), &three}) {
    try {
      write_parquet(p, s, {first, second}, {}, pool);
      ADD_FAILURE() << "invalid UTF-8 was written";
    } catch (const invalid_argument_error& e) {
      EXPECT_NE(std::string(e.what()).find(p + ": column 's' row 4 is not valid UTF-8"), std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(p));
  }
  write_parquet(p, s, {first, second.slice(0, 2)});  // the rows before the bad one are fine
  EXPECT_EQ(read_all(p).num_rows(), 4);
}

TEST(ParquetWriter, PyarrowReadsWhatTugWrote) {
  table t = every_type(1000, 42);
  schema s = every_type_schema(t);
  for (auto [codec, dict] : std::vector<std::pair<const char*, bool>>{
           {"snappy", true}, {"zstd", false}, {"lz4_raw", true}, {"none", false}}) {
    {
      SCOPED_TRACE(std::string(codec) + (dict ? ", dictionary" : ", plain"));
      std::string p = (temp_dir() / "to_pyarrow.parquet").string();
      std::string out = (temp_dir() / "from_pyarrow.json").string();
      write_options o = options(codec, dict, 400, 1000);
      write_parquet(p, s, {t}, o);
      std::string cmd =
          test_python() + " " TUG_SOURCE_DIR "/tests/data/read_parquet.py " + p + " " + out;
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      std::ifstream f(out);
      json e = json::parse(f);
      EXPECT_EQ(e["rows"].get<int64_t>(), 1000);
      EXPECT_EQ(e["row_groups"].get<int>(), 3);
      for (size_t c = 0; c < s.size(); ++c) {
        SCOPED_TRACE(s[c].name);
        const json& ec = e["columns"][s[c].name];
        EXPECT_EQ(ec["type"].get<std::string>(), to_string(s[c].type));
        int mismatches = 0;
        for (int64_t i = 0; i < t.num_rows(); ++i) {
          const json& want = ec["values"][static_cast<size_t>(i)];
          std::optional<std::string> w = want.is_null() ? std::nullopt : std::optional(want.get<std::string>());
          if (canon(t[c], i) != w && ++mismatches <= 3)
            ADD_FAILURE() << "row " << i << ": tug " << canon(t[c], i).value_or("null") << ", pyarrow "
                          << w.value_or("null");
        }
        EXPECT_EQ(mismatches, 0);
        // pyarrow trusts tug's statistics of row group 0 (rows 0..399).
        const json& es = e["stats"][s[c].name];
        column first = t[c].slice(0, 400);
        EXPECT_EQ(es["null_count"].get<int64_t>(), first.null_count());
        EXPECT_EQ(es["has_min_max"].get<bool>(), first.null_count() < first.size());
        if (es.contains("min")) {
          auto st = file_reader::open(p).statistics(0, c);
          EXPECT_EQ(es["min"].get<std::string>(), st.min->to_string());
          EXPECT_EQ(es["max"].get<std::string>(), st.max->to_string());
        }
      }
    }
  }
}

TEST(ParquetWriter, SecondTimestampsBecomeMillisAndDurationsInt64) {
  table t(
      {make_column<int64_t>(timestamp(time_unit::s), std::vector<std::optional<int64_t>>{-5, std::nullopt, 1700000000}),
       make_column<int64_t>(duration(time_unit::us), std::vector<std::optional<int64_t>>{5, std::nullopt, -3})});
  schema s({{"ts", timestamp(time_unit::s)}, {"d", duration(time_unit::us)}});
  std::string p = (temp_dir() / "units.parquet").string();
  write_parquet(p, s, {t});
  table back = read_all(p);
  expect_columns_equal(back[0],
                       make_column<int64_t>(timestamp(time_unit::ms),
                                            std::vector<std::optional<int64_t>>{-5000, std::nullopt, 1700000000000}));
  expect_columns_equal(back[1], i64({5, std::nullopt, -3}));
}

}  // namespace
}  // namespace tug
