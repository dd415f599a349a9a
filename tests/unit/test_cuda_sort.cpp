// CUDA sort, top-k, slice, concat, row index and unique (src/exec/cuda/sort.cu, reshape_ops.cu):
// every query runs with engine=gpu, fallback=raise and must equal the CPU engine's result row for row.
#include <cmath>
#include <limits>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/memory/device.hpp"

namespace tug {
namespace {

/// A frame of `n` rows with many ties, nulls, NaN, -0.0 and strings sharing long prefixes; `row` is
/// the input position, so any difference in tie order shows.
data_frame sample(int64_t n) {
  std::vector<std::optional<int64_t>> row, i64v, ts;
  std::vector<std::optional<int32_t>> i32v, date;
  std::vector<std::optional<int8_t>> i8v;
  std::vector<std::optional<uint8_t>> u8v;
  std::vector<std::optional<uint32_t>> u32v;
  std::vector<std::optional<uint64_t>> u64v;
  std::vector<std::optional<float>> f32v;
  std::vector<std::optional<double>> f64v;
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<std::string>> s;
  std::vector<std::optional<__int128>> dec;
  const double specials[] = {
      std::nan(""), -0.0, 0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
      1.5,          -2.25};
  const char* words[] = {"",
                         "a",
                         "ab",
                         "abcdefg",
                         "abcdefgh",
                         "abcdefghijklmn",
                         "abcdefghijklmno",
                         "abcdefghijklmnopqrstuvwxyz0123",
                         "abcdefghijklmnopqrstuvwxyz0124",
                         "\xc3\xa9t\xc3\xa9",
                         "zz"};
  uint64_t x = 12345;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    auto r = static_cast<int64_t>(x >> 33);
    bool null = r % 11 == 0;
    row.push_back(i);
    i64v.push_back(null ? std::nullopt : std::optional<int64_t>((r % 9 - 4) * 1000000000000LL));
    ts.push_back(r % 13 == 1 ? std::nullopt : std::optional<int64_t>(r % 5 - 2));
    i32v.push_back(r % 7 == 3 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(r % 17) - 8));
    date.push_back(null ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(r % 4) * 365 - 700));
    i8v.push_back(r % 5 == 0 ? std::nullopt : std::optional<int8_t>(static_cast<int8_t>(r % 256 - 128)));
    u8v.push_back(std::optional<uint8_t>(static_cast<uint8_t>(r % 3 * 100)));
    u32v.push_back(null ? std::nullopt : std::optional<uint32_t>(static_cast<uint32_t>(r % 4) * 0x7fffffffu));
    u64v.push_back(std::optional<uint64_t>((r % 3) * 0x8000000000000001ULL));
    f32v.push_back(r % 9 == 2 ? std::nullopt : std::optional<float>(static_cast<float>(specials[r % 7])));
    f64v.push_back(r % 10 == 4 ? std::nullopt : std::optional<double>(specials[(r / 7) % 7]));
    b.push_back(r % 6 == 5 ? std::nullopt : std::optional<bool>(r % 2 == 0));
    s.push_back(r % 8 == 7 ? std::nullopt : std::optional<std::string>(words[(r / 3) % 11]));
    dec.push_back(r % 9 == 8 ? std::nullopt
                             : std::optional<__int128>((static_cast<__int128>(r % 5) - 2) << (r % 2 ? 70 : 3)));
  }
  return data_frame::from_columns({{"row", i64(row)},
                                   {"i64", i64(i64v)},
                                   {"ts", make_column<int64_t>(timestamp(time_unit::ms), ts)},
                                   {"i32", i32(i32v)},
                                   {"date", make_column<int32_t>(type_id::date32, date)},
                                   {"i8", make_column<int8_t>(type_id::int8, i8v)},
                                   {"u8", make_column<uint8_t>(type_id::uint8, u8v)},
                                   {"u32", make_column<uint32_t>(type_id::uint32, u32v)},
                                   {"u64", make_column<uint64_t>(type_id::uint64, u64v)},
                                   {"f32", make_column<float>(type_id::float32, f32v)},
                                   {"f64", f64(f64v)},
                                   {"b", boolean(b)},
                                   {"s", str(s)},
                                   {"dec", make_column<__int128>(decimal(38, 2), dec)}});
}

const int64_t sizes[] = {0, 1, 31, 32, 33, 1024};
const char* key_columns[] = {"i64", "ts", "i32", "date", "i8", "u8", "u32", "u64", "f32", "f64", "b", "s", "dec"};

/// Runs `lf` on the GPU (no fallback) and on the CPU, with 7-row partitions and with one partition
/// (only one partition under compute-sanitizer).
void expect_gpu_matches_cpu(const lazy_frame& lf, const std::string& what) {
  SCOPED_TRACE(what);
  for (int64_t target : {int64_t{7}, int64_t{1} << 20}) {
    if (target == 7 && sanitizer_run()) continue;
    engine_options gpu, cpu;
    gpu.engine = engine_kind::gpu;
    gpu.fallback = fallback_mode::raise;
    cpu.engine = engine_kind::cpu;
    gpu.target_partition_rows = cpu.target_partition_rows = target;
    data_frame expected = lf.collect(cpu);
    data_frame got = lf.collect(gpu);
    expect_frames_equal(got, expected);
  }
}

class CudaSort : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CudaSort, SingleKeyEveryTypeAndDirection) {
  for (int64_t n : sizes) {
    auto lf = sample(n).lazy();
    for (const char* k : key_columns)
      for (bool desc : {false, true})
        for (bool last : {false, true})
          for (bool stable : {false, true}) {
            sort_options o{{desc}, {last}, stable};
            expect_gpu_matches_cpu(lf.sort({col(k)}, o), std::string(k) + " n=" + std::to_string(n) +
                                                             (desc ? " desc" : "") + (last ? " nulls_last" : ""));
          }
  }
}

TEST_F(CudaSort, MultiKey) {
  const std::vector<std::vector<std::string>> key_sets = {
      {"b", "s", "f64"}, {"i8", "i32", "s"}, {"s", "dec"}, {"u8", "f32", "date", "ts"}, {"dec", "b"}};
  for (int64_t n : {int64_t{33}, int64_t{1024}}) {
    auto lf = sample(n).lazy();
    for (auto& keys : key_sets)
      for (int mask = 0; mask < 4; mask += sanitizer_run() ? 3 : 1) {
        sort_options o;
        std::vector<expr> by;
        for (size_t i = 0; i < keys.size(); ++i) {
          by.push_back(col(keys[i]));
          o.descending.push_back(((mask + static_cast<int>(i)) & 1) != 0);
          o.nulls_last.push_back(((mask >> 1) + static_cast<int>(i)) % 3 == 0);
        }
        expect_gpu_matches_cpu(lf.sort(by, o),
                               keys[0] + "... mask " + std::to_string(mask) + " n=" + std::to_string(n));
      }
  }
}

TEST_F(CudaSort, TopK) {
  for (int64_t n : sizes) {
    auto lf = sample(n).lazy();
    for (int64_t k : {0, 1, 5, 32, 2000})
      for (const char* key : {"i32", "f64", "s"}) {
        expect_gpu_matches_cpu(lf.sort(key).head(k), std::string("top ") + std::to_string(k) + " by " + key);
        expect_gpu_matches_cpu(lf.sort({col(key), col("b")}, sort_options{{true, false}, {true}, false}).head(k),
                               std::string("top desc ") + std::to_string(k) + " by " + key);
      }
  }
}

TEST_F(CudaSort, Slice) {
  for (int64_t n : sizes) {
    auto lf = sample(n).lazy();
    for (auto [off, len] : std::vector<std::pair<int64_t, int64_t>>{
             {0, -1}, {0, 5}, {3, 10}, {-5, 3}, {-40, 2}, {-40, 100}, {30, -1}, {2000, 4}, {7, 0}})
      expect_gpu_matches_cpu(lf.slice(off, len), "slice " + std::to_string(off) + "," + std::to_string(len));
    expect_gpu_matches_cpu(lf.tail(3), "tail");
  }
}

TEST_F(CudaSort, ConcatAndRowIndex) {
  for (int64_t n : sizes) {
    auto a = sample(n).lazy(), b = sample(n / 2 + 3).lazy();
    expect_gpu_matches_cpu(concat({a, b, a}), "concat");
    expect_gpu_matches_cpu(a.with_row_index(), "row index");
    expect_gpu_matches_cpu(concat({a, b}).with_row_index("idx", 100), "row index after concat");
    expect_gpu_matches_cpu(a.sort("f64", true).with_row_index("r", -3).slice(2, 20), "sort, row index, slice");
  }
}

TEST_F(CudaSort, Unique) {
  const std::vector<std::vector<std::string>> subsets = {{},           {"b"},   {"s"},        {"f64"},
                                                         {"f32", "b"}, {"dec"}, {"i8", "u8"}, {"s", "b", "date"}};
  for (int64_t n : sizes) {
    auto lf = sample(n).lazy();
    for (auto& subset : subsets)
      for (unique_keep keep : {unique_keep::any, unique_keep::first, unique_keep::last, unique_keep::none})
        for (bool maintain : {false, true})
          expect_gpu_matches_cpu(lf.unique(subset, keep, maintain),
                                 "unique keep " + std::string(to_string(keep)) + " subset " +
                                     (subset.empty() ? "all" : subset[0]) + " n=" + std::to_string(n));
  }
}

}  // namespace
}  // namespace tug
