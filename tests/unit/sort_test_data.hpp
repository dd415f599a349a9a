#pragma once
// Random frames with every key type, many ties and nulls, for the sort and unique tests.
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tug/api/data_frame.hpp"

namespace tug::test_data {

/// `n` rows: i64, i32, u8, f64 (NaN, +-0.0, +-inf), f32, str (shared 8-byte prefixes, empty), bool, dec
/// (decimal(30,2) beyond 64 bits), date, ts (ns) - about 10% nulls each - and idx (the row number).
inline data_frame mixed_frame(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t m) { return rng() % m; };
  auto null = [&] { return pick(10) == 0; };
  std::vector<std::optional<int64_t>> i64v, tsv, idx;
  std::vector<std::optional<int32_t>> i32v, datev;
  std::vector<std::optional<uint8_t>> u8v;
  std::vector<std::optional<double>> f64v;
  std::vector<std::optional<float>> f32v;
  std::vector<std::optional<std::string>> strv;
  std::vector<std::optional<bool>> boolv;
  std::vector<std::optional<__int128>> decv;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> floats = {-1.5, -0.0, 0.0, 2.25, std::nan(""), inf, -inf, 1e300, -7.0};
  const std::vector<std::string> strings = {"", "a", "ab", "abcdefgh", "abcdefgh1", "abcdefgh2", "abcdefgi",
                                            "b", "zz\xc3\xa9", "Z", "abcdefghabcdefgh0", "abcdefghabcdefgh"};
  for (int64_t i = 0; i < n; ++i) {
    idx.push_back(i);
    i64v.push_back(null() ? std::nullopt
                          : std::optional<int64_t>(pick(3) == 0 ? static_cast<int64_t>(rng())
                                                                : static_cast<int64_t>(pick(50)) - 25));
    i32v.push_back(null() ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(pick(7)) - 3));
    u8v.push_back(null() ? std::nullopt : std::optional<uint8_t>(static_cast<uint8_t>(pick(256))));
    f64v.push_back(null() ? std::nullopt : std::optional<double>(floats[pick(floats.size())]));
    f32v.push_back(null() ? std::nullopt : std::optional<float>(static_cast<float>(floats[pick(floats.size())])));
    strv.push_back(null() ? std::nullopt : std::optional<std::string>(strings[pick(strings.size())]));
    boolv.push_back(null() ? std::nullopt : std::optional<bool>(pick(2) == 1));
    __int128 big = static_cast<__int128>(static_cast<int64_t>(pick(5)) - 2) << 70;
    decv.push_back(null() ? std::nullopt : std::optional<__int128>(big + static_cast<int64_t>(pick(9)) - 4));
    datev.push_back(null() ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(pick(20)) - 10));
    tsv.push_back(null() ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(pick(20)) * 1000000007LL));
  }
  return data_frame::from_columns({
      {"i64", make_column<int64_t>(type_id::int64, i64v)},
      {"i32", make_column<int32_t>(type_id::int32, i32v)},
      {"u8", make_column<uint8_t>(type_id::uint8, u8v)},
      {"f64", make_column<double>(type_id::float64, f64v)},
      {"f32", make_column<float>(type_id::float32, f32v)},
      {"str", make_string_column(strv)},
      {"bool", make_bool_column(boolv)},
      {"dec", make_column<__int128>(decimal(30, 2), decv)},
      {"date", make_column<int32_t>(type_id::date32, datev)},
      {"ts", make_column<int64_t>(timestamp(time_unit::ns), tsv)},
      {"idx", make_column<int64_t>(type_id::int64, idx)},
  });
}

}  // namespace tug::test_data
