// Tests of the CSV reader and writer (tug::io::csv).
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "test_util.hpp"
#include "tug/io/csv/csv.hpp"

namespace tug {
namespace {

namespace csv = io::csv;

/// A file under the test temp directory, removed at scope exit.
struct temp_file {
  std::string path;
  explicit temp_file(const std::string& contents = {}, const std::string& name = "t.csv") {
    static int counter = 0;
    path =
        ::testing::TempDir() + "tug_csv_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + name;
    std::ofstream(path, std::ios::binary) << contents;
  }
  ~temp_file() { std::remove(path.c_str()); }
};

data_frame frame_of(const csv::read_result& r) { return data_frame(r.schema, r.partitions); }

data_frame read_text(const std::string& text, const csv::csv_options& o = {},
                     const std::vector<std::string>& cols = {}) {
  temp_file f(text);
  return frame_of(csv::read_csv(f.path, o, cols));
}

data_frame round_trip(const data_frame& df, csv::csv_options o = {});

std::string error_of(const std::string& text, const csv::csv_options& o = {}) {
  temp_file f(text);
  try {
    csv::read_csv(f.path, o);
  } catch (const io_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Csv, InfersEveryType) {
  auto df = read_text(
      "i,f,b,d,t,s,n\n"
      "1,2.5,true,2024-01-02,2024-01-02 03:04:05,x,\n"
      "-7,1e3,False,1999-12-31,2024-01-02T03:04:05.25,y,\n"
      ",,,,,,\n");
  EXPECT_EQ(df.schema().to_string(), "i: i64, f: f64, b: bool, d: date, t: datetime[us], s: str, n: str");
  expect_frames_equal(
      df, data_frame::from_columns(
              {{"i", i64({1, -7, std::nullopt})},
               {"f", f64({2.5, 1000.0, std::nullopt})},
               {"b", boolean({true, false, std::nullopt})},
               {"d",
                make_column<int32_t>(type_id::date32, std::vector<std::optional<int32_t>>{19724, 10956, std::nullopt})},
               {"t", make_column<int64_t>(
                         timestamp(time_unit::us),
                         std::vector<std::optional<int64_t>>{1704164645000000, 1704164645250000, std::nullopt})},
               {"s", str({"x", "y", std::nullopt})},
               {"n", make_null_column(type_id::string, 3)}}));
}

TEST(Csv, InferenceWidensAndFallsBack) {
  auto df = read_text("a,b,c,d\n1,1,2024-01-01,1\n2.5,x,2024-01-01 10:00,2\n");
  EXPECT_EQ(df.schema().to_string(), "a: f64, b: str, c: datetime[us], d: i64");
  csv::csv_options o;
  o.infer_schema_rows = 0;  // no inference: everything is a string
  EXPECT_EQ(read_text("a\n1\n", o).schema().to_string(), "a: str");
}

TEST(Csv, QuotingEdgeCases) {
  auto df = read_text(
      "a,b\n"
      "\"x,y\",\"line1\nline2\"\n"
      "\"say \"\"hi\"\"\",\"\"\n"
      "plain\"quote,\"\"\n"
      "\"ab\"cd,\n");
  expect_frames_equal(df, data_frame::from_columns({{"a", str({"x,y", "say \"hi\"", "plain\"quote", "abcd"})},
                                                    {"b", str({"line1\nline2", "", "", std::nullopt})}}));
}

TEST(Csv, EscapeCharacter) {
  csv::csv_options o;
  o.escape = '\\';
  auto df = read_text("a,b\n\"x\\\"y\",\"back\\\\slash\"\n\"p\\,q\",2\n", o);
  expect_frames_equal(df, data_frame::from_columns({{"a", str({"x\"y", "p,q"})}, {"b", str({"back\\slash", "2"})}}));
}

TEST(Csv, QuoteCharDisabled) {
  csv::csv_options o;
  o.quote = 0;
  auto df = read_text("a,b\n\"x\",y\"\n", o);
  expect_frames_equal(df, data_frame::from_columns({{"a", str({"\"x\""})}, {"b", str({"y\""})}}));
  auto ok = data_frame::from_columns({{"a", str({"\"q\"", std::nullopt})}});
  expect_frames_equal(round_trip(ok, o), ok);
  auto bad = data_frame::from_columns({{"a", str({"x,y"})}});
  EXPECT_THROW(csv::to_csv_string(bad.schema(), bad.partitions(), o), invalid_argument_error);
}

TEST(Csv, CrlfLineEndings) {
  auto df = read_text("a,b\r\n1,\"x\r\ny\"\r\n2,z\r\n\r\n3,\r\n");
  expect_frames_equal(df, data_frame::from_columns({{"a", i64({1, 2, 3})}, {"b", str({"x\r\ny", "z", std::nullopt})}}));
}

TEST(Csv, EmptyFileAndHeaderOnly) {
  auto empty = read_text("");
  EXPECT_EQ(empty.num_columns(), 0u);
  EXPECT_EQ(empty.num_rows(), 0);
  auto header = read_text("a,b\n");
  EXPECT_EQ(header.schema().to_string(), "a: str, b: str");
  EXPECT_EQ(header.num_rows(), 0);
  csv::csv_options o;
  o.schema_overrides = {{"a", type_id::int32}};
  EXPECT_EQ(read_text("a,b", o).schema().to_string(), "a: i32, b: str");
}

TEST(Csv, NullValuesCommentsSkipRowsNoHeader) {
  csv::csv_options o;
  o.null_values = {"NA", ""};
  o.comment = '#';
  o.skip_rows = 2;
  o.has_header = false;
  auto df = read_text("junk line\nmore \"junk\n# a comment\n1,NA,\"NA\"\n\n# another\nNA,x,\n", o);
  expect_frames_equal(df, data_frame::from_columns({{"column_1", i64({1, std::nullopt})},
                                                    {"column_2", str({std::nullopt, "x"})},
                                                    {"column_3", str({"NA", std::nullopt})}}));
}

TEST(Csv, DuplicateAndEmptyHeaderNames) {
  auto df = read_text("a,a,\n1,2,3\n");
  EXPECT_EQ(df.schema().to_string(), "a: i64, a_duplicated_0: i64, column_3: i64");
}

TEST(Csv, Projection) {
  auto df = read_text("a,b,c\n1,x,2.5\n2,y,oops\n", {}, {"b", "a"});  // c is never converted
  expect_frames_equal(df, data_frame::from_columns({{"b", str({"x", "y"})}, {"a", i64({1, 2})}}));
  EXPECT_THROW(read_text("a,b\n1,2\n", {}, {"zz"}), column_not_found_error);
}

TEST(Csv, OverridesEveryType) {
  csv::csv_options o;
  o.schema_overrides = {{"i8", type_id::int8},
                        {"u16", type_id::uint16},
                        {"u64", type_id::uint64},
                        {"f32", type_id::float32},
                        {"dec", decimal(10, 2)},
                        {"d", type_id::date32},
                        {"ts", timestamp(time_unit::ns)},
                        {"dur", duration(time_unit::ms)},
                        {"s", type_id::string}};
  auto df = read_text(
      "i8,u16,u64,f32,dec,d,ts,dur,s\n"
      "-128,65535,18446744073709551615,0.5,-12.3,2000-02-29,1970-01-01 00:00:01.123456789,15ms,007\n",
      o);
  EXPECT_EQ(
      df.schema().to_string(),
      "i8: i8, u16: u16, u64: u64, f32: f32, dec: decimal[10,2], d: date, ts: datetime[ns], dur: duration[ms], s: str");
  table t = df.to_table();
  EXPECT_EQ(t[0].value<int8_t>(0), -128);
  EXPECT_EQ(t[1].value<uint16_t>(0), 65535);
  EXPECT_EQ(t[2].value<uint64_t>(0), UINT64_MAX);
  EXPECT_EQ(t[3].value<float>(0), 0.5f);
  EXPECT_TRUE(t[4].value<__int128>(0) == -1230);
  EXPECT_EQ(t[5].value<int32_t>(0), 11016);
  EXPECT_EQ(t[6].value<int64_t>(0), 1123456789);
  EXPECT_EQ(t[7].value<int64_t>(0), 15);
  EXPECT_EQ(t[8].string(0), "007");
  o.schema_overrides = {{"nope", type_id::int8}};
  EXPECT_THROW(read_text("a\n1\n", o), column_not_found_error);
}

TEST(Csv, MalformedRowsNameLineAndColumn) {
  std::string e = error_of("a,b\n1,2\n3\n");
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 2 fields, found 1"), std::string::npos) << e;
  csv::csv_options sample2;
  sample2.infer_schema_rows = 2;                                // "x" is outside the sample
  e = error_of("a,b\n1,2\n\"multi\nline\",3\n4,x\n", sample2);  // the quoted newline counts as a line
  EXPECT_NE(e.find("line 5, column 2 ('b')"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot parse 'x' as i64"), std::string::npos) << e;
  EXPECT_NE(e.find("infer_schema_rows"), std::string::npos) << e;
  e = error_of("a,b\n1,2\n3,\"open\n4,5\n");
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("unterminated"), std::string::npos) << e;
  csv::csv_options o;
  o.schema_overrides = {{"a", type_id::uint8}};
  e = error_of("a\n1\n256\n", o);
  EXPECT_NE(e.find("line 3, column 1 ('a'): cannot parse '256' as u8"), std::string::npos) << e;
  e = error_of("a\n1\n", [] {
    csv::csv_options x;
    x.schema_overrides = {{"a", decimal(3, 1)}};
    return x;
  }());
  EXPECT_EQ(e, "no error");
  temp_file missing;
  std::remove(missing.path.c_str());
  try {
    csv::read_csv(missing.path);
    ADD_FAILURE() << "no error for a missing file";
  } catch (const io_error& err) {
    EXPECT_NE(std::string(err.what()).find(missing.path), std::string::npos);
  }
}

TEST(Csv, InvalidUtf8NamesLineAndColumnUnlessLossy) {
  // an invalid byte in a string field: io_error naming file, line and column (and the lossy option)
  temp_file f("id,name\n1,ok\n2,caf\xE9\n3,\xC3\xA9t\xC3\xA9\n", "latin1.csv");
  try {
    csv::read_csv(f.path);
    ADD_FAILURE() << "invalid UTF-8 was accepted";
  } catch (const io_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(f.path + ": line 3, column 2 ('name'): invalid UTF-8 (byte 0xE9 at byte 3"), std::string::npos)
        << m;
    EXPECT_NE(m.find("utf8-lossy"), std::string::npos) << m;
  }
  // "utf8-lossy": the invalid sequence becomes U+FFFD, valid text is kept
  csv::csv_options lossy;
  lossy.encoding = "utf8-lossy";
  expect_frames_equal(frame_of(csv::read_csv(f.path, lossy)),
                      data_frame::from_columns({{"id", i64({1, 2, 3})},
                                                {"name", str({"ok", "caf\xEF\xBF\xBD", "\xC3\xA9t\xC3\xA9"})}}));
  // skip_malformed drops and counts the row, like any malformed row
  csv::csv_options skip;
  skip.skip_malformed = true;
  auto r = csv::read_csv(f.path, skip);
  EXPECT_EQ(r.skipped_rows, 1);
  expect_frames_equal(frame_of(r),
                      data_frame::from_columns({{"id", i64({1, 3})}, {"name", str({"ok", "\xC3\xA9t\xC3\xA9"})}}));
  // a field not read (projection) or a non-string column is not a UTF-8 matter
  expect_frames_equal(frame_of(csv::read_csv(f.path, {}, {"id"})), data_frame::from_columns({{"id", i64({1, 2, 3})}}));
  // quoted fields, escapes and every chunk: the error names the physical line wherever it is
  std::string text = "a,b\n";
  for (int i = 0; i < 3000; ++i)
    text += std::to_string(i) + ",\"x, \"\"y\"\"\nz\xE2\x82\xAC\"\n";
  text += "3000,\"bad \xE2\x82\"\n";
  temp_file g(text);
  csv::csv_options small;
  small.chunk_bytes = 1000;
  try {
    csv::read_csv(g.path, small);
    ADD_FAILURE() << "a truncated sequence was accepted";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 6002, column 2 ('b'): invalid UTF-8 (byte 0xE2 at byte 4"),
              std::string::npos)
        << e.what();
  }
  small.encoding = "utf8-lossy";
  auto big = frame_of(csv::read_csv(g.path, small));
  EXPECT_EQ(big.num_rows(), 3001);
  EXPECT_EQ(big["b"].string(3000), "bad \xEF\xBF\xBD");
  EXPECT_EQ(big["b"].string(2999), "x, \"y\"\nz\xE2\x82\xAC");
  // header names too
  temp_file h("\xFF" "a,b\n1,2\n");
  try {
    csv::read_csv(h.path);
    ADD_FAILURE() << "an invalid header was accepted";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 1, column 1: header name: invalid UTF-8"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(csv::read_csv(h.path, lossy).schema.to_string(), "\xEF\xBF\xBD" "a: i64, b: i64");
  csv::csv_options bad;
  bad.encoding = "latin1";
  EXPECT_THROW(csv::read_csv(f.path, bad), invalid_argument_error);
}

TEST(Csv, SkipMalformedCountsRows) {
  csv::csv_options o;
  o.skip_malformed = true;
  o.schema_overrides = {{"b", type_id::int64}};
  temp_file f("a,b\n1,2\n3\n4,x\n5,6,7\n8,9\n10,\"open\n11,12\n");
  auto r = csv::read_csv(f.path, o);
  EXPECT_EQ(r.skipped_rows, 4);
  expect_frames_equal(frame_of(r), data_frame::from_columns({{"a", i64({1, 8})}, {"b", i64({2, 9})}}));
}

TEST(Csv, NRowsAndCountRows) {
  temp_file f("a\n1\n#c\n2\n3\n", "n.csv");
  csv::csv_options o;
  o.comment = '#';
  EXPECT_EQ(csv::count_rows(f.path, o), 3);
  o.n_rows = 2;
  expect_frames_equal(frame_of(csv::read_csv(f.path, o)), data_frame::from_columns({{"a", i64({1, 2})}}));
  o.n_rows = 0;
  EXPECT_EQ(frame_of(csv::read_csv(f.path, o)).num_rows(), 0);
}

/// A frame of every type with nulls and awkward strings, `n` rows.
data_frame all_types(int64_t n) {
  std::mt19937_64 rng(42 + n);
  auto pick = [&](int64_t i) { return i % 5 == 3; };  // nulls
  std::vector<std::optional<int8_t>> i8;
  std::vector<std::optional<int64_t>> i64v, ts, dur;
  std::vector<std::optional<uint32_t>> u32;
  std::vector<std::optional<uint64_t>> u64;
  std::vector<std::optional<float>> f32;
  std::vector<std::optional<double>> f64v;
  std::vector<std::optional<__int128>> dec;
  std::vector<std::optional<int32_t>> date;
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<std::string>> s;
  const char* strings[] = {"",         "plain",    "a,b", "q\"uote", "multi\nline",
                           "cr\r\nlf", " spaced ", "NA",  "#hash",   "back\\slash"};
  for (int64_t i = 0; i < n; ++i) {
    bool null = pick(i);
    auto opt = [&](auto v) -> std::optional<decltype(v)> { return null ? std::nullopt : std::optional(v); };
    i8.push_back(opt(static_cast<int8_t>(rng())));
    i64v.push_back(opt(static_cast<int64_t>(rng())));
    u32.push_back(opt(static_cast<uint32_t>(rng())));
    u64.push_back(opt(static_cast<uint64_t>(rng())));
    f32.push_back(opt(static_cast<float>(static_cast<int64_t>(rng() % 2000000) - 1000000) / 7.0f));
    f64v.push_back(opt(std::ldexp(static_cast<double>(rng() % 1000000) - 500000, static_cast<int>(rng() % 80) - 40)));
    dec.push_back(opt(static_cast<__int128>(static_cast<int64_t>(rng() % 2000000000000) - 1000000000000)));
    date.push_back(opt(static_cast<int32_t>(rng() % 80000) - 20000));
    ts.push_back(opt(static_cast<int64_t>(rng() % 4000000000000000000) - 2000000000000000000));
    dur.push_back(opt(static_cast<int64_t>(rng() % 100000) - 50000));
    b.push_back(opt(rng() % 2 == 0));
    s.push_back(i % 5 == 3 ? std::nullopt : std::optional<std::string>(strings[rng() % 10]));
  }
  return data_frame::from_columns({{"s", str(s)},
                                   {"i8", make_column<int8_t>(type_id::int8, i8)},
                                   {"i64", make_column<int64_t>(type_id::int64, i64v)},
                                   {"u32", make_column<uint32_t>(type_id::uint32, u32)},
                                   {"u64", make_column<uint64_t>(type_id::uint64, u64)},
                                   {"f32", make_column<float>(type_id::float32, f32)},
                                   {"f64", make_column<double>(type_id::float64, f64v)},
                                   {"dec", make_column<__int128>(decimal(18, 3), dec)},
                                   {"date", make_column<int32_t>(type_id::date32, date)},
                                   {"ts", make_column<int64_t>(timestamp(time_unit::ns), ts)},
                                   {"dur", make_column<int64_t>(duration(time_unit::us), dur)},
                                   {"b", boolean(b)}});
}

data_frame round_trip(const data_frame& df, csv::csv_options o) {
  temp_file f;
  csv::write_csv(f.path, df.schema(), df.partitions(), o);
  o.schema_overrides = df.schema().fields();
  return frame_of(csv::read_csv(f.path, o));
}

TEST(Csv, RoundTripEveryTypeAndSize) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    SCOPED_TRACE(n);
    auto df = all_types(n);
    expect_frames_equal(round_trip(df), df);
  }
}

TEST(Csv, RoundTripOptionsSlicedAndPartitioned) {
  auto df = all_types(100);
  table t = df.to_table().slice(7, 60);
  data_frame parts(df.schema(), {t.slice(0, 13), t.slice(13, 0), t.slice(13, 47)});
  data_frame expect(df.schema(), {t});
  expect_frames_equal(round_trip(parts), expect);
  csv::csv_options o;
  o.delimiter = ';';
  o.escape = '\\';
  o.null_values = {"NA"};
  o.comment = '#';
  expect_frames_equal(round_trip(parts, o), expect);
}

TEST(Csv, SingleColumnNullsAreKept) {
  auto df = data_frame::from_columns({{"s", str({std::nullopt, "", "x", std::nullopt})}});
  expect_frames_equal(round_trip(df), df);
  auto ints = data_frame::from_columns({{"i", i64({std::nullopt, 1, std::nullopt})}});
  expect_frames_equal(round_trip(ints), ints);
}

TEST(Csv, ParallelChunksMatchOneChunk) {
  std::mt19937_64 rng(7);
  std::string text = "id,name,value,flag\n";
  int64_t rows = 0;
  while (text.size() < (3 << 20)) {
    std::string name = rng() % 4 == 0 ? "\"multi\nline, \"\"quoted\"\"\"" : "n" + std::to_string(rng() % 1000);
    text += std::to_string(rows) + "," + name + "," + (rng() % 7 == 0 ? "" : std::to_string(rng() % 100000) + ".5") +
            "," + (rng() % 2 ? "true" : "false") + (rows % 3 == 0 ? "\r\n" : "\n");
    ++rows;
  }
  temp_file f(text);
  csv::csv_options one, many;
  one.chunk_bytes = INT64_MAX;
  many.chunk_bytes = 4096;
  auto a = csv::read_csv(f.path, one);
  auto b = csv::read_csv(f.path, many);
  EXPECT_EQ(a.partitions.size(), 1u);
  EXPECT_GT(b.partitions.size(), 500u);
  EXPECT_EQ(frame_of(b).num_rows(), rows);
  expect_frames_equal(frame_of(a), frame_of(b));
  thread_pool pool(3);
  auto c = csv::read_csv(f.path, many, {"value", "id"}, &pool);
  expect_frames_equal(frame_of(c),
                      data_frame::from_columns({{"value", frame_of(a)["value"]}, {"id", frame_of(a)["id"]}}));
  EXPECT_EQ(csv::count_rows(f.path, many), rows);
  // an error deep in the file names its physical line, whichever chunk holds it
  std::string bad = text + "1,x,notanumber,true\n";
  int64_t lines = static_cast<int64_t>(std::count(bad.begin(), bad.end(), '\n'));
  temp_file g(bad);
  try {
    csv::read_csv(g.path, many);
    ADD_FAILURE() << "no error";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("line " + std::to_string(lines) + ", column 3 ('value')"), std::string::npos)
        << e.what();
  }
}

TEST(Csv, WriterQuotesAndFormats) {
  auto df = data_frame::from_columns({{"a b", str({"x,y", "", std::nullopt, "q\""})},
                                      {"d", make_column<__int128>(decimal(5, 2), std::vector<std::optional<__int128>>{
                                                                                     1, -250, std::nullopt, 12345})}});
  EXPECT_EQ(csv::to_csv_string(df.schema(), df.partitions()), "a b,d\n\"x,y\",0.01\n\"\",-2.50\n,\n\"q\"\"\",123.45\n");
  EXPECT_THROW(csv::write_csv(::testing::TempDir() + "no/such/dir/x.csv", df.schema(), df.partitions()), io_error);
}

}  // namespace
}  // namespace tug

namespace tug {
namespace {

TEST(Csv, WriterFloatsMatchFormatValue) {
  std::vector<double> d = {0.0,        -0.0, 0.1,   1e-4,   9.99e-5,      1e16,     9999999999999998.0,
                           123456.789, -2.5, 1e300, 5e-324, std::nan(""), INFINITY, -INFINITY,
                           1.0 / 3};
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    d.push_back(i % 2 ? v : std::ldexp(static_cast<double>(rng() % 100000000), static_cast<int>(rng() % 100) - 60));
  }
  std::vector<float> f;
  for (double v : d)
    f.push_back(static_cast<float>(v));
  auto df = data_frame::from_columns(
      {{"d", make_column<double>(type_id::float64, d)}, {"f", make_column<float>(type_id::float32, f)}});
  std::string text = csv::to_csv_string(df.schema(), df.partitions());
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  table t = df.to_table();
  for (int64_t r = 0; r < t.num_rows(); ++r) {
    std::getline(in, line);
    ASSERT_EQ(line, format_value(t[0], r) + "," + format_value(t[1], r)) << "row " << r;
  }
  // and they read back bit-exactly (NaN as NaN)
  auto back = round_trip(df);
  expect_frames_equal(back, df);
}

}  // namespace
}  // namespace tug

namespace tug {
namespace {

TEST(Csv, ParallelChunksWithCommentsAndEscapes) {
  csv::csv_options o;
  o.escape = '\\';
  o.comment = '#';
  o.null_values = {"NA"};
  auto df = all_types(3000);
  // rows written one by one, with comment lines holding unbalanced quotes between them
  std::string text = csv::to_csv_string(df.schema(), {}, o);
  csv::csv_options rows_only = o;
  rows_only.has_header = false;
  table t = df.to_table();
  for (int64_t r = 0; r < t.num_rows(); ++r) {
    if (r % 50 == 0) text += "# a ,\"comment, with an open quote\n";
    text += csv::to_csv_string(df.schema(), {t.slice(r, 1)}, rows_only);
  }
  temp_file f(text);
  o.schema_overrides = df.schema().fields();
  csv::csv_options one = o, tiny = o;
  one.chunk_bytes = INT64_MAX;
  tiny.chunk_bytes = 1;  // every record its own chunk
  auto a = csv::read_csv(f.path, one);
  auto b = csv::read_csv(f.path, tiny);
  EXPECT_GT(b.partitions.size(), 1000u);
  expect_frames_equal(frame_of(a), df);
  expect_frames_equal(frame_of(b), df);
  EXPECT_EQ(csv::count_rows(f.path, tiny), 3000);
}

}  // namespace
}  // namespace tug

namespace tug {
namespace {

TEST(Csv, InferSchemaReadsEnoughOfALargeFile) {
  // ~3 MB of records with long quoted multi-line fields: the sample crosses the first prefix read
  std::string pad = "\"" + std::string(1500, 'p') + "\n" + std::string(1500, 'q') + "\"";
  std::string text = "pad,v,w\n";
  for (int i = 0; i < 1000; ++i)
    text += pad + "," + (i == 999 ? "2.5" : std::to_string(i)) + "," + std::to_string(i) + "\n";
  text += pad + ",x,1\n";  // beyond the default sample
  temp_file f(text);
  EXPECT_EQ(csv::infer_schema(f.path).to_string(), "pad: str, v: f64, w: i64");
  csv::csv_options all;
  all.infer_schema_rows = -1;
  EXPECT_EQ(csv::infer_schema(f.path, all).to_string(), "pad: str, v: str, w: i64");
  EXPECT_EQ(csv::read_csv(f.path, all).schema.to_string(), "pad: str, v: str, w: i64");
  csv::csv_options head;  // n_rows reads a growing prefix: it must still see the whole sample and n_rows rows
  head.n_rows = 3;
  auto r = csv::read_csv(f.path, head);
  EXPECT_EQ(r.schema.to_string(), "pad: str, v: f64, w: i64");
  EXPECT_EQ(total_rows(r.partitions), 3);
  head.n_rows = 1000;
  r = csv::read_csv(f.path, head, {"w"});
  expect_columns_equal(concatenate(r.partitions)[0],
                       csv::read_csv(f.path, {}, {"w"}).partitions[0].col(0).slice(0, 1000));
  head.n_rows = 1001;
  EXPECT_THROW(csv::read_csv(f.path, head), io_error);  // "x" is not an f64
}

}  // namespace
}  // namespace tug

namespace tug {
namespace {

TEST(Csv, HugeQuotedHeaderAcrossThePrefix) {
  std::string name(3 << 20, 'h');
  temp_file f("\"" + name + "\n\",b\n1,2\n");
  csv::csv_options o;
  o.infer_schema_rows = 0;
  EXPECT_EQ(csv::infer_schema(f.path, o).names(), (std::vector<std::string>{name + "\n", "b"}));
  o.n_rows = 1;
  auto r = csv::read_csv(f.path, o);
  EXPECT_EQ(r.schema.size(), 2u);
  EXPECT_EQ(total_rows(r.partitions), 1);
}

}  // namespace
}  // namespace tug
