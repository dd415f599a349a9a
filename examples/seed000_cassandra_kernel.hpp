#pragma once
// Seed 000 end to end (issue 22): read a Cassandra table, run the user's CUDA kernel on every partition,
// write the results back to Cassandra in bounded batches. What the seed does by hand with PySpark's
// foreachPartition, PyCUDA and batched driver writes is here one query:
//
//   scan_cassandra(ks, "readings")             the table, split by token range, read in parallel
//     .map_partitions(dew_point_kernel(...))   the kernel per partition: CUDA source on the GPU engine
//                                              (NVRTC), its host version on the CPU engine
//   sink_cassandra(..., ks, "dew_points")      prepared INSERTs in unlogged batches of one partition key,
//                                              at most max_in_flight requests at once (seed 004)
//
// The kernel computes the dew point of each reading (the Magnus formula) and whether fog is likely (the
// temperature within `fog_spread` degrees of the dew point). A reading without temperature or humidity,
// or with a humidity that is not positive, has neither. Shared by examples/seed000_cassandra_kernel.cpp,
// tests/cassandra/test_cassandra_kernel.cpp and tests/unit/test_seed000_kernel.cpp.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "tug/api/cassandra.hpp"
#include "tug/api/data_frame.hpp"
#include "tug/api/user_kernel.hpp"

namespace tug::seed000 {

/// The Magnus formula's constants (Sonntag 1990, over water).
constexpr double magnus_b = 17.62;
constexpr double magnus_c = 243.12;

/// Defines `code` for the host compiler and keeps its text for NVRTC: one definition of the per-row math
/// serves both forms of the kernel.
#define TUG_SEED000_SHARED(name, ...) \
  __VA_ARGS__                        \
  inline const char* const name = #__VA_ARGS__;

/// Row i of the kernel: the dew point of temperature t (degrees C) at relative humidity rh (%) by the
/// Magnus formula (constants b and c), and whether fog is likely (t within fog_spread of it); both null
/// when t or rh is null or rh is not positive.
TUG_SEED000_SHARED(dew_point_row_source,
TUG_KERNEL_FN void dew_point_row(long long i, tug::in_column<double> temp_c, tug::in_column<float> humidity,
                                 tug::out_column<double> dew_point_c, tug::out_column<bool> fog, double b, double c,
                                 double fog_spread) {
  const bool known = temp_c.valid(i) && humidity.valid(i) && humidity[i] > 0.0f;
  double t = known ? temp_c[i] : 0.0;
  double g = known ? log(humidity[i] / 100.0) + b * t / (c + t) : 0.0;
  dew_point_c[i] = known ? c * g / (b - g) : 0.0;
  fog[i] = known && t - dew_point_c[i] <= fog_spread;
  if (!known) {
    dew_point_c.set_null(i);
    fog.set_null(i);
  }
})

/// The kernel as CUDA source: one thread a row in a grid-stride loop, struct-of-arrays views of the
/// partition's columns (tug/kernel.cuh), plain scalars after them.
inline const std::string dew_point_source = std::string("#include <tug/kernel.cuh>\n") + dew_point_row_source + R"(
extern "C" __global__ void dew_point(long long rows, tug::in_column<double> temp_c, tug::in_column<float> humidity,
                                     tug::out_column<double> dew_point_c, tug::out_column<bool> fog,
                                     double b, double c, double fog_spread) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride())
    dew_point_row(i, temp_c, humidity, dew_point_c, fog, b, c, fog_spread);
}
)";

/// The same rows on the host: what the CPU engine runs (CI, machines without a GPU).
inline void dew_point_host(kernel_partition& p) {
  const double b = p.arg(0).as_double(), c = p.arg(1).as_double(), fog_spread = p.arg(2).as_double();
  for (long long i = 0; i < p.rows(); ++i)
    dew_point_row(i, p.in<double>(0), p.in<float>(1), p.out<double>(0), p.out<bool>(1), b, c, fog_spread);
}

/// The user kernel: reads temp_c and humidity, keeps the key and the site, makes dew_point_c and fog.
/// `cache_dir`: where NVRTC's cubin is cached (default: $TUG_KERNEL_CACHE or ~/.cache/tug/kernels).
inline user_kernel dew_point_kernel(double fog_spread = 2.0, std::string cache_dir = default_kernel_cache_dir()) {
  return user_kernel("dew_point")
      .inputs({"temp_c", "humidity"})
      .keep({"sensor", "ts", "site"})
      .outputs(schema({{"dew_point_c", type_id::float64}, {"fog", type_id::boolean}}))
      .args(kernel_args(magnus_b, magnus_c, fog_spread))
      .source({dew_point_source, "dew_point"}, std::move(cache_dir))
      .host(dew_point_host);
}

/// The query between the two tables: the kernel over the readings.
inline lazy_frame pipeline(const lazy_frame& readings, double fog_spread = 2.0,
                           std::string cache_dir = default_kernel_cache_dir()) {
  return readings.map_partitions(dew_point_kernel(fog_spread, std::move(cache_dir)));
}

/// `rows` readings of `sensors` sensors, deterministic: temp_c from -20 to 40 (null every 53rd row),
/// humidity from 0 to 100 % (null every 41st row, 0 every 97th), site a text (null every 29th, empty
/// every 31st).
inline data_frame generate(int64_t rows, int sensors = 37) {
  std::vector<std::optional<int32_t>> sensor;
  std::vector<std::optional<int64_t>> ts;
  std::vector<std::optional<double>> temp_c;
  std::vector<std::optional<float>> humidity;
  std::vector<std::optional<std::string>> site;
  uint64_t s = 0x2545f4914f6cdd1dULL;
  auto next = [&] {  // xorshift64*, in [0, 1)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<double>((s * 0x2545f4914f6cdd1dULL) >> 11) * 0x1.0p-53;
  };
  for (int64_t i = 0; i < rows; ++i) {
    sensor.push_back(static_cast<int32_t>(i % sensors));
    ts.push_back(1700000000000 + i / sensors * 60000);
    double t = -20 + 60 * next();
    double h = 100 * next();
    temp_c.push_back(i % 53 == 7 ? std::nullopt : std::optional<double>(t));
    humidity.push_back(i % 41 == 3 ? std::nullopt : std::optional<float>(i % 97 == 11 ? 0.0f : static_cast<float>(h)));
    site.push_back(i % 29 == 5   ? std::nullopt
                   : i % 31 == 9 ? std::optional<std::string>("")
                                 : std::optional<std::string>("site-" + std::to_string(i % sensors % 5)));
  }
  return data_frame::from_columns({{"sensor", make_column<int32_t>(type_id::int32, sensor)},
                                   {"ts", make_column<int64_t>(type_id::int64, ts)},
                                   {"temp_c", make_column<double>(type_id::float64, temp_c)},
                                   {"humidity", make_column<float>(type_id::float32, humidity)},
                                   {"site", make_string_column(site)}});
}

/// Creates `keyspace` (SimpleStrategy, `replication` copies) and the two tables, empty.
inline void create_tables(io::cassandra::session& s, const std::string& keyspace, int replication = 1) {
  s.query("CREATE KEYSPACE IF NOT EXISTS " + keyspace +
          " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': " + std::to_string(replication) +
          "}");
  s.query("DROP TABLE IF EXISTS " + keyspace + ".readings");
  s.query("DROP TABLE IF EXISTS " + keyspace + ".dew_points");
  s.query("CREATE TABLE " + keyspace +
          ".readings (sensor int, ts bigint, temp_c double, humidity float, site text, PRIMARY KEY ((sensor), ts))");
  s.query("CREATE TABLE " + keyspace +
          ".dew_points (sensor int, ts bigint, site text, dew_point_c double, fog boolean, "
          "PRIMARY KEY ((sensor), ts))");
}

/// Reads keyspace.readings, runs the kernel on every partition, writes keyspace.dew_points.
inline cassandra_write_result run(const std::string& keyspace, const io::cassandra_scan_options& scan,
                                  const cassandra_write_options& write, const engine_options& engine,
                                  double fog_spread = 2.0) {
  return sink_cassandra(pipeline(scan_cassandra(keyspace, "readings", scan), fog_spread), keyspace, "dew_points",
                        write, engine);
}

}  // namespace tug::seed000
