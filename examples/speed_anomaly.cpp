// Seed 002's speed-anomaly query on generated AIS-like data: vessels faster than 10x the mean speed
// of their (VesselType, Status) cohort, computed with `over`. Prints the plan, the result and the
// execution statistics. `make demo` runs this.
#include <chrono>
#include <iostream>

#include "example_args.hpp"
#include "tug/gen/seed_data.hpp"
#include "seed_queries.hpp"
#include "tug/plan/lower.hpp"

int main(int argc, char** argv) {
  using namespace tug;
  auto args = seed::parse_args(argc, argv, 2'000'000);
  try {
    std::cout << "generating " << args.rows << " AIS-like rows..." << std::flush;
    auto t0 = std::chrono::steady_clock::now();
    data_frame ais = gen::ais(args.rows);
    double gen = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << " done in " << gen << " s (" << ais.partitions().size() << " partitions)\n";
    const char* engine = args.options.engine == engine_kind::cpu   ? "cpu"
                         : args.options.engine == engine_kind::gpu ? "gpu"
                         : gpu_available()                         ? "auto -> gpu"
                                                                   : "auto -> cpu (no GPU visible)";
    std::cout << "engine: " << engine << "\n\n";

    lazy_frame q = seed::speed_anomaly(ais.lazy());
    if (args.explain) std::cout << q.explain(args.options) << "\n";
    query_result r = q.profile(args.options);
    std::cout << "speed anomalies: " << r.frame.num_rows() << " of " << args.rows << " rows\n";
    std::cout << r.frame.lazy().select({col("MMSI"), col("BaseDateTime"), col("VesselType"), col("Status"), col("SOG"),
                                        col("cohort_avg_speed")})
                     .collect(args.options)
                     .to_string(6)
              << "\n";
    std::cout << "anomalies by vessel type (top 5):\n"
              << seed::anomalies_by_type(r.frame.lazy()).collect(args.options).to_string() << "\n";
    std::cout << "physical plan:\n" << r.physical_plan << "\nstatistics:\n" << r.statistics;
    for (auto& f : r.fallbacks) std::cout << "fallback: " << f << "\n";
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
