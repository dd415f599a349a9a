// Parquet page decoding internals: batch bit-unpacking, validity bitmaps from definition levels, and
// columns decoded straight into their buffers (null runs at odd offsets, columns that grow past their
// first allocation).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <random>

#include "io/parquet/rle.hpp"
#include "parquet_test_util.hpp"
#include "test_util.hpp"
#include "tug/io/parquet/encoding.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug {
namespace {

namespace fs = std::filesystem;
using namespace io::parquet;

fs::path temp_file(const std::string& name) {
  struct dir {
    fs::path p = fs::temp_directory_path() / ("tug_parquet_d_" + std::to_string(::getpid()));
    dir() { fs::create_directories(p); }
    ~dir() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  };
  static dir d;
  return d.p / name;
}

/// Value j of width bw from LSB-first packed bytes, one bit at a time.
uint32_t bit_value(const std::vector<uint8_t>& bytes, int bw, int64_t j) {
  uint32_t v = 0;
  for (int b = 0; b < bw; ++b) {
    const int64_t bit = j * bw + b;
    v |= static_cast<uint32_t>((bytes[static_cast<size_t>(bit >> 3)] >> (bit & 7)) & 1) << b;
  }
  return v;
}

TEST(ParquetDecode, Unpack32MatchesBitByBitForEveryWidthAndTightBuffers) {
  std::mt19937_64 rng(7);
  for (int bw = 0; bw <= 32; ++bw) {
    for (int64_t k : {0, 1, 7, 8, 9, 64, 100, 1000}) {
      const size_t need = (static_cast<size_t>(k) * static_cast<size_t>(bw) + 7) / 8;
      for (size_t extra : {size_t{0}, size_t{3}, size_t{16}}) {  // bytes behind the values: none, few, plenty
        std::vector<uint8_t> bytes(need + extra);
        for (auto& b : bytes)
          b = static_cast<uint8_t>(rng());
        std::vector<uint32_t> out(static_cast<size_t>(k) + 1, 0xdeadbeef);
        unpack32(bytes.data(), bytes.size(), bw, k, out.data());
        for (int64_t j = 0; j < k; ++j)
          ASSERT_EQ(out[static_cast<size_t>(j)], bit_value(bytes, bw, j)) << "bw " << bw << " k " << k << " j " << j;
        EXPECT_EQ(out[static_cast<size_t>(k)], 0xdeadbeef) << "wrote past the values, bw " << bw;
      }
    }
  }
}

TEST(ParquetDecode, RleDecodeMixesRepeatedAndBitPackedRuns) {
  // width 5: a repeated run of 11 x 19, a bit-packed run of 16 values, a repeated run of 3 x 7
  std::vector<uint32_t> packed(16);
  for (size_t i = 0; i < 16; ++i)
    packed[i] = static_cast<uint32_t>(i * 3 % 32);
  std::array<uint8_t, 15> s{};  // header, value | header, 10 bytes of 16 x 5 bits | header, value
  s[0] = 11 << 1;
  s[1] = 19;
  s[2] = (2 << 1) | 1;
  for (size_t i = 0; i < 16; ++i)
    for (size_t b = 0; b < 5; ++b)
      if ((packed[i] >> b) & 1) s[3 + (i * 5 + b) / 8] |= static_cast<uint8_t>(1 << ((i * 5 + b) % 8));
  s[13] = 3 << 1;
  s[14] = 7;
  std::vector<uint32_t> out(30);
  rle_decode(s.data(), s.data() + s.size(), 5, out.data(), 30);
  for (size_t i = 0; i < 11; ++i)
    EXPECT_EQ(out[i], 19u);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_EQ(out[11 + i], packed[i]);
  for (size_t i = 27; i < 30; ++i)
    EXPECT_EQ(out[i], 7u);
  EXPECT_THROW(rle_decode(s.data(), s.data() + s.size() - 1, 5, out.data(), 30), io_error);
}

TEST(ParquetDecode, SetAndOrBitsAtEveryOffset) {
  std::mt19937_64 rng(3);
  for (int64_t off = 0; off < 20; ++off) {
    for (int64_t n : {0, 1, 5, 8, 9, 17, 64, 75}) {
      std::vector<uint8_t> src(16);
      for (auto& b : src)
        b = static_cast<uint8_t>(rng());
      std::vector<uint8_t> a(16, 0), b(16, 0);
      or_bits(a.data(), off, src.data(), n);
      set_bits(b.data(), off, n);
      for (int64_t i = 0; i < 16 * 8; ++i) {
        const bool in = i >= off && i < off + n;
        ASSERT_EQ(bits::get(a.data(), i), in && bits::get(src.data(), i - off)) << off << " " << n << " " << i;
        ASSERT_EQ(bits::get(b.data(), i), in) << off << " " << n << " " << i;
      }
    }
  }
}

table read_file(const std::string& p) {
  auto r = file_reader::open(p);
  return concatenate(parquet_test::read_row_groups(r));
}

/// Columns of every decoding path (as stored, converted, booleans, strings) whose nulls come in runs of
/// 1 to 40 rows, so that definition levels hold repeated runs that start at odd bit offsets.
TEST(ParquetDecode, NullRunsAtOddOffsetsEveryPathAndPageSize) {
  const int64_t n = 20000;
  std::mt19937_64 rng(11);
  std::vector<bool> valid(static_cast<size_t>(n));
  for (int64_t i = 0; i < n;) {
    const int64_t run = 1 + static_cast<int64_t>(rng() % 40);
    const bool v = rng() % 3 != 0;
    for (int64_t j = i; j < std::min(n, i + run); ++j)
      valid[static_cast<size_t>(j)] = v;
    i += run;
  }
  auto fixed = [&]<typename T>(data_type t, auto gen) {
    fixed_width_builder<T> b(t, n);
    for (int64_t i = 0; i < n; ++i) {
      if (valid[static_cast<size_t>(i)])
        b.set(i, static_cast<T>(gen(i)));
      else
        b.set_null(i);
    }
    return b.finish();
  };
  std::vector<column> cols;
  cols.push_back(fixed.template operator()<bool>(type_id::boolean, [](int64_t i) { return i % 3 == 0; }));
  cols.push_back(fixed.template operator()<int8_t>(type_id::int8, [](int64_t i) { return i % 200 - 100; }));
  cols.push_back(fixed.template operator()<int32_t>(type_id::int32, [](int64_t i) { return i * 7919; }));
  cols.push_back(fixed.template operator()<int32_t>(type_id::int32, [](int64_t i) { return i % 5; }));
  cols.push_back(fixed.template operator()<int64_t>(type_id::int64, [](int64_t i) { return i * 1000003; }));
  cols.push_back(fixed.template operator()<double>(type_id::float64, [](int64_t i) { return i * 0.25; }));
  cols.push_back(fixed.template operator()<__int128>(decimal(15, 3), [](int64_t i) { return i * 12345 - 77; }));
  string_builder s, s_low;
  for (int64_t i = 0; i < n; ++i) {
    if (!valid[static_cast<size_t>(i)]) {
      s.append_null();
      s_low.append_null();
      continue;
    }
    s.append(std::string(static_cast<size_t>(i % 50), 'q') + std::to_string(i));  // short and long values
    s_low.append(std::array<const char*, 4>{"AIR", "", "a somewhat longer value of 40 characters", "R"}[i % 4]);
  }
  cols.push_back(s.finish());
  cols.push_back(s_low.finish());
  table t(cols);
  std::vector<field> f;
  for (size_t i = 0; i < t.num_columns(); ++i)
    f.push_back({"c" + std::to_string(i), t[i].type()});
  const schema sch(f);
  for (bool dict : {true, false}) {
    for (int64_t page : {int64_t{300}, int64_t{4096}, int64_t{1} << 20}) {
      SCOPED_TRACE(std::string(dict ? "dictionary" : "plain") + ", pages of " + std::to_string(page) + " bytes");
      write_options o;
      o.dictionary = dict;
      o.page_bytes = page;
      o.row_group_rows = 7000;
      const std::string p = temp_file("runs.parquet").string();
      write_parquet(p, sch, {t}, o);
      table back = read_file(p);
      ASSERT_EQ(back.num_rows(), n);
      for (size_t c = 0; c < t.num_columns(); ++c)
        expect_columns_equal(back[c], t[c], f[c].name);
    }
  }
}

/// A chunk of a few bytes can hold many rows (long runs of nulls): the column is first allocated for
/// what the chunk's bytes can hold and grows as its pages prove more rows, values and validity alike.
TEST(ParquetDecode, ColumnsGrowPastTheirFirstAllocation) {
  const int64_t n = 200000;
  fixed_width_builder<int64_t> a(type_id::int64, n);
  string_builder s;
  for (int64_t i = 0; i < n; ++i) {
    if (i < 3 || i % 40000 == 39999) {
      a.set(i, i);
      s.append("row " + std::to_string(i));
    } else {
      a.set_null(i);
      s.append_null();
    }
  }
  table t({a.finish(), s.finish(), make_null_column(type_id::float64, n)});
  const schema sch({{"a", type_id::int64}, {"s", type_id::string}, {"z", type_id::float64}});
  write_options o;
  o.row_group_rows = n;
  o.page_bytes = 20000;  // pages of 20000 rows of a few bytes each: the column grows page by page
  const std::string p = temp_file("grow.parquet").string();
  write_parquet(p, sch, {t}, o);
  auto r = file_reader::open(p);
  table back = r.read_row_group(0, {0, 1, 2});
  for (size_t c = 0; c < 3; ++c) {
    expect_columns_equal(back[c], t[c], sch[c].name);
    EXPECT_EQ(back[c].null_count(), t[c].null_count());
  }
}

}  // namespace
}  // namespace tug
