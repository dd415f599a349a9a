// The seed's speed-anomaly queries (over() and group_by + join) over Parquet files of generated AIS
// data, timed with late materialization on and off (medians of --runs runs each, alternating): the
// A/B of docs/gpu.md, "Late materialization across PCIe" (Parquet). The files are written once (as
// the GPU benchmark writes the seed data: gen::write_dataset) under --dir (default
// /tmp/tug_speed_anomaly_parquet_<rows>). Flags: those of example_args.hpp (--rows, --engine,
// --threads, --explain; --no-late-materialization times the pass off only) and --dir DIR, --runs N,
// --profile (the execution statistics of one more run each way).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <vector>

#include "example_args.hpp"
#include "seed_queries.hpp"
#include "tug/api/io.hpp"
#include "tug/gen/dataset.hpp"
#include "tug/gen/seed_data.hpp"

int main(int argc, char** argv) {
  using namespace tug;
  std::string dir;
  int runs = 5;
  bool profile = false;
  std::vector<char*> rest{argv[0]};  // the flags example_args knows
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (s == "--profile") {
      profile = true;
    } else if (s == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      rest.push_back(argv[i]);
    }
  }
  auto args = seed::parse_args(static_cast<int>(rest.size()), rest.data(), 4'000'000);
  const bool only_off = !args.options.optimizer.late_materialization;
  if (dir.empty()) dir = "/tmp/tug_speed_anomaly_parquet_" + std::to_string(args.rows);
  try {
    if (!std::filesystem::exists(dir + "/ais")) {
      std::cout << "writing " << args.rows << " AIS rows to " << dir << "..." << std::flush;
      gen::write_config w;
      w.out = dir;
      w.progress = false;
      gen::write_dataset(gen::ais_dataset(args.rows), w);
      std::cout << " done\n";
    }
    const std::string files = dir + "/ais";
    struct query {
      const char* name;
      lazy_frame q;
    };
    std::vector<query> queries{{"speed_anomaly (over)", seed::speed_anomaly(scan_parquet(files))},
                               {"speed_anomaly_join (group_by + join)", seed::speed_anomaly_join(scan_parquet(files))}};
    for (auto& [name, q] : queries) {
      engine_options on = args.options, off = args.options;
      on.optimizer.late_materialization = true;
      off.optimizer.late_materialization = false;
      if (args.explain) std::cout << name << ":\n" << q.explain(on) << "\n";
      std::vector<double> t_on, t_off;
      int64_t rows_on = -1, rows_off = -1;
      auto time = [&](const engine_options& o, std::vector<double>& out, int64_t& rows) {
        auto t0 = std::chrono::steady_clock::now();
        rows = q.collect(o).num_rows();
        out.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      };
      for (int r = 0; r < runs; ++r) {
        if (!only_off) time(on, t_on, rows_on);
        time(off, t_off, rows_off);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
      };
      std::cout << name << ": " << rows_off << " rows; late materialization off " << median(t_off) << " ms";
      if (!only_off) std::cout << ", on " << median(t_on) << " ms (" << rows_on << " rows)";
      std::cout << " (median of " << runs << ")\n";
      if (profile) {
        if (!only_off) std::cout << "statistics, pass on:\n" << q.profile(on).statistics;
        std::cout << "statistics, pass off:\n" << q.profile(off).statistics;
      }
    }
  } catch (const tug::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
