#pragma once
// The oracle of the seed-000 example (examples/seed000_cassandra_kernel.hpp), row by row from the generated
// readings: what dew_points must hold for each (sensor, ts). Shared by tests/unit/test_seed000_kernel.cpp
// and tests/cassandra/test_cassandra_kernel.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "../examples/seed000_cassandra_kernel.hpp"
#include "tug/core/scalar.hpp"

namespace tug::testing {

struct dew_point_row {
  std::optional<std::string> site;
  std::optional<double> dew_point_c;
  std::optional<bool> fog;
  double spread = 0;  ///< temp_c - dew_point_c, for rows whose fog flag sits on the threshold
};

/// The expected dew_points rows of seed000::generate(rows), by (sensor, ts).
inline std::map<std::pair<int32_t, int64_t>, dew_point_row> dew_point_reference(int64_t rows, double fog_spread) {
  table t = seed000::generate(rows).to_table();
  std::map<std::pair<int32_t, int64_t>, dew_point_row> out;
  for (int64_t i = 0; i < rows; ++i) {
    dew_point_row r;
    if (t[4].is_valid(i)) r.site = std::string(t[4].string(i));
    if (t[2].is_valid(i) && t[3].is_valid(i) && t[3].value<float>(i) > 0) {
      const double temp = t[2].value<double>(i);
      const double rh = t[3].value<float>(i);
      // Magnus: dew point = c * gamma / (b - gamma), gamma = ln(RH / 100) + b * T / (c + T)
      const double gamma = std::log(rh / 100.0) + 17.62 * temp / (243.12 + temp);
      r.dew_point_c = 243.12 * gamma / (17.62 - gamma);
      r.spread = temp - *r.dew_point_c;
      r.fog = r.spread <= fog_spread;
    }
    out[{t[0].value<int32_t>(i), t[1].value<int64_t>(i)}] = r;
  }
  return out;
}

/// Checks that `got` (columns sensor, ts, site, dew_point_c, fog in any order) holds exactly the reference's
/// rows: every key once, the site as written (null and "" apart), the dew point within `tolerance`
/// (relative; the device's log may differ from the host's in the last bits), the same fog flag (but on the
/// threshold itself, where the last bits decide).
inline void expect_dew_points(const data_frame& got, int64_t rows, double fog_spread, double tolerance) {
  auto want = dew_point_reference(rows, fog_spread);
  table t = got.to_table();
  const schema& s = got.schema();
  const column& sensor = t[s.index_of("sensor")];
  const column& ts = t[s.index_of("ts")];
  const column& site = t[s.index_of("site")];
  const column& dew = t[s.index_of("dew_point_c")];
  const column& fog = t[s.index_of("fog")];
  ASSERT_EQ(t.num_rows(), rows);
  std::map<std::pair<int32_t, int64_t>, int> seen;
  int64_t bad = 0;
  for (int64_t i = 0; i < t.num_rows() && bad < 10; ++i) {
    auto key = std::make_pair(sensor.value<int32_t>(i), ts.value<int64_t>(i));
    auto it = want.find(key);
    std::string where = "sensor " + std::to_string(key.first) + ", ts " + std::to_string(key.second);
    if (it == want.end() || ++seen[key] > 1) {
      ADD_FAILURE() << where << ": not in the input, or twice";
      ++bad;
      continue;
    }
    const dew_point_row& w = it->second;
    std::optional<std::string> g_site;
    if (site.is_valid(i)) g_site = std::string(site.string(i));
    bool ok = g_site == w.site && dew.is_valid(i) == w.dew_point_c.has_value() && fog.is_valid(i) == w.fog.has_value();
    if (ok && w.dew_point_c) {
      const double d = dew.value<double>(i);
      ok = std::abs(d - *w.dew_point_c) <= tolerance * std::max(1.0, std::abs(*w.dew_point_c));
      if (ok && std::abs(w.spread - fog_spread) > 1e-6) ok = fog.value<bool>(i) == *w.fog;
    }
    if (!ok) {
      ADD_FAILURE() << where << ": got " << format_value(site, i) << "|" << format_value(dew, i) << "|"
                    << format_value(fog, i) << ", want " << (w.site ? *w.site : "null") << "|"
                    << (w.dew_point_c ? std::to_string(*w.dew_point_c) : "null") << "|"
                    << (w.fog ? (*w.fog ? "true" : "false") : "null");
      ++bad;
    }
  }
  EXPECT_EQ(seen.size(), want.size());
}

}  // namespace tug::testing
