// Parquet page decoding internals: batch bit-unpacking, validity bitmaps from definition levels, and
// columns decoded straight into their buffers (null runs at odd offsets, columns that grow past their
// first allocation).
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <limits>
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

/// A DELTA_BINARY_PACKED stream of `v` as DuckDB writes it: blocks of 128 values in 4 miniblocks, the
/// deltas of INT32 values computed in int64 (so a delta minus the block's min delta may need 33 bits),
/// those of INT64 values modulo 2^64; the bit widths of unused miniblocks set to `unused_width`
/// (readers must accept any). `widest` is the widest miniblock written.
template <typename I>
std::vector<uint8_t> delta_encode(const std::vector<I>& v, int& widest, uint8_t unused_width = 0) {
  std::vector<uint8_t> out;
  auto uleb = [&](uint64_t x) {
    do {
      out.push_back(static_cast<uint8_t>((x & 0x7f) | (x >= 0x80 ? 0x80 : 0)));
      x >>= 7;
    } while (x);
  };
  auto zigzag = [](int64_t x) { return (static_cast<uint64_t>(x) << 1) ^ static_cast<uint64_t>(x >> 63); };
  constexpr size_t block = 128, minis = 4, per_mini = block / minis;
  uleb(block);
  uleb(minis);
  uleb(v.size());
  uleb(zigzag(v.empty() ? 0 : static_cast<int64_t>(v[0])));
  widest = 0;
  for (size_t b = 1; b < v.size(); b += block) {
    const size_t k = std::min(block, v.size() - b);
    std::vector<int64_t> d(k);
    for (size_t j = 0; j < k; ++j)
      d[j] = static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(v[b + j])) -
                                  static_cast<uint64_t>(static_cast<int64_t>(v[b + j - 1])));
    const int64_t min_delta = *std::min_element(d.begin(), d.end());
    uleb(zigzag(min_delta));
    const size_t widths_at = out.size();
    out.resize(out.size() + minis, unused_width);
    for (size_t m = 0; m * per_mini < k; ++m) {
      std::vector<uint64_t> packed(per_mini, 0);  // the last miniblock padded with zeros
      uint64_t top = 0;
      for (size_t j = 0; j < per_mini && m * per_mini + j < k; ++j) {
        packed[j] = static_cast<uint64_t>(d[m * per_mini + j]) - static_cast<uint64_t>(min_delta);
        top |= packed[j];
      }
      const int bw = static_cast<int>(std::bit_width(top));
      widest = std::max(widest, bw);
      out[widths_at + m] = static_cast<uint8_t>(bw);
      std::vector<uint8_t> bytes(per_mini * static_cast<size_t>(bw) / 8, 0);
      for (size_t j = 0; j < per_mini; ++j)
        for (int t = 0; t < bw; ++t)
          if ((packed[j] >> t) & 1) {
            const size_t bit = j * static_cast<size_t>(bw) + static_cast<size_t>(t);
            bytes[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
          }
      out.insert(out.end(), bytes.begin(), bytes.end());
    }
  }
  return out;
}

/// Values over the type's whole range: its extremes and zero in turn (the widest deltas), runs, random.
template <typename I>
std::vector<I> extreme_values(size_t n, std::mt19937_64& rng) {
  std::vector<I> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch ((i / 40) % 3) {
      case 0: {  // deltas of +-(2^32 - 1) for INT32 in int64, of +-INT64_MAX for INT64
        const I pattern[4] = {std::numeric_limits<I>::min(), std::numeric_limits<I>::max(), 0,
                              std::numeric_limits<I>::max()};
        v[i] = pattern[i % 4];
        break;
      }
      case 1:
        v[i] = static_cast<I>(static_cast<int64_t>(i) - 1000);
        break;
      default:
        v[i] = static_cast<I>(rng());
    }
  }
  return v;
}

// DuckDB writes INT32 columns of data page v2 with 33-bit miniblocks; tug rejected them whole.
TEST(ParquetDecode, DeltaBinaryPackedWiderThanTheTypeWrapsAround) {
  std::mt19937_64 rng(5);
  for (size_t n : {0, 1, 2, 31, 32, 33, 129, 1024, 1000}) {
    SCOPED_TRACE(n);
    int widest = 0;
    const auto v32 = extreme_values<int32_t>(n, rng);
    for (uint8_t unused : {uint8_t{0}, uint8_t{200}}) {
      const auto s32 = delta_encode(v32, widest, unused);
      if (n >= 5) EXPECT_EQ(widest, 33);
      EXPECT_EQ(delta_count(s32.data(), s32.data() + s32.size()), static_cast<int64_t>(n));
      std::vector<int32_t> got32(n + 1, 7);
      EXPECT_EQ(delta_decode<int32_t>(s32.data(), s32.data() + s32.size(), static_cast<int64_t>(n), got32.data()),
                s32.data() + s32.size());
      got32.pop_back();
      EXPECT_EQ(got32, v32);
    }
    const auto v64 = extreme_values<int64_t>(n, rng);
    const auto s64 = delta_encode(v64, widest);
    if (n >= 5) EXPECT_EQ(widest, 64);
    std::vector<int64_t> got64(n);
    delta_decode<int64_t>(s64.data(), s64.data() + s64.size(), static_cast<int64_t>(n), got64.data());
    EXPECT_EQ(got64, v64);
  }
  // Wider than any writer computes: 34 bits for INT32 is corrupt (and so is 65 for INT64).
  int widest = 0;
  auto bad = delta_encode(extreme_values<int32_t>(1024, rng), widest);
  const uint8_t* p = bad.data();
  for (int i = 0; i < 5; ++i)  // block size, miniblocks, count, first value, the first block's min delta
    (void)read_uleb(p, bad.data() + bad.size());
  const auto at = static_cast<size_t>(p - bad.data());
  ASSERT_EQ(bad[at], 33);
  bad[at] = 34;
  std::vector<int32_t> out32(1024);
  try {
    delta_decode<int32_t>(bad.data(), bad.data() + bad.size(), 1024, out32.data());
    ADD_FAILURE() << "34-bit INT32 deltas were accepted";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("bit width 34 above 33 for INT32"), std::string::npos) << e.what();
  }
  auto s64 = delta_encode(extreme_values<int64_t>(1024, rng), widest);
  p = s64.data();
  for (int i = 0; i < 5; ++i)
    (void)read_uleb(p, s64.data() + s64.size());
  s64[static_cast<size_t>(p - s64.data())] = 65;
  std::vector<int64_t> out64(1024);
  EXPECT_THROW(delta_decode<int64_t>(s64.data(), s64.data() + s64.size(), 1024, out64.data()), io_error);
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
