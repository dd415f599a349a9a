// tug_pdsh: runs PDS-H queries (bench/pdsh) on a generated data directory and reports their timings.
//
// usage: tug_pdsh --data DIR --query 1,2,..|all [--engine cpu|gpu|auto] [--threads N] [--reps N]
//                 [--out FILE.csv|FILE.parquet] [--json TIMINGS.json] [--explain] [--profile]
//        tug_pdsh --list        (prints the registered query numbers, one a line)
//
// Each query runs 1 + N times (N = --reps, default 3): the first run is "cold" (the first time in this
// process), the N others "warm". Every run scans the Parquet files again (scan, plan, execute), so the
// times include reading the files (from the OS cache after the first run). One line per query:
//   qNN rows=R cold=Xs median=Xs min=Xs max=Xs
// --out writes each query's result: with several queries, "{q}" in the path is replaced by the two-digit
// query number, or "_qNN" is inserted before the extension when there is no "{q}".
// --json writes {"engine", "threads", "data", "reps", "queries": [{"query", "rows", "cold_s", "times_s",
// "median_s", "min_s", "max_s"}]}. --explain prints each query's plan instead of running it; --profile
// runs each query once more after the timed runs and prints its physical plan with per-node statistics.
// --engine gpu fails (status 1) when there is no GPU, rather than timing the CPU fallback.
// Exit status: 0 when every query ran, 1 when one failed (its error is printed and in the JSON), 2 for a
// usage error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "queries.hpp"
#include "tug/api/io.hpp"
#include "tug/core/error.hpp"
#include "tug/plan/lower.hpp"

using json = nlohmann::json;
using namespace tug;

namespace {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct options {
  std::string data, out, json_path;
  std::vector<int> queries;
  engine_options engine;
  std::string engine_name = "auto";
  int reps = 3;
  bool explain = false;
  bool profile = false;
  bool list = false;
};

int parse_int(const std::string& flag, const std::string& v, int lo) {
  try {
    size_t pos = 0;
    int n = std::stoi(v, &pos);
    if (pos != v.size() || n < lo) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw usage_error(flag + " needs an integer >= " + std::to_string(lo) + ", got '" + v + "'");
  }
}

std::vector<int> parse_queries(const std::string& v) {
  if (v == "all") return pdsh::registered_queries();
  std::vector<int> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) {
    int q = parse_int("--query", item, 1);
    try {
      pdsh::query(q);
    } catch (const invalid_argument_error& e) {
      throw usage_error(std::string(e.what()) + " or is not registered");
    }
    out.push_back(q);
  }
  if (out.empty()) throw usage_error("--query needs a list of query numbers or 'all'");
  return out;
}

options parse_args(int argc, char** argv) {
  options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw usage_error(a + " needs a value");
      return args[++i];
    };
    if (a == "--data") {
      o.data = value();
    } else if (a == "--query") {
      o.queries = parse_queries(value());
    } else if (a == "--engine") {
      o.engine_name = value();
      if (o.engine_name == "cpu") o.engine.engine = engine_kind::cpu;
      else if (o.engine_name == "gpu") o.engine.engine = engine_kind::gpu;
      else if (o.engine_name == "auto") o.engine.engine = engine_kind::automatic;
      else throw usage_error("--engine must be cpu, gpu or auto, got '" + o.engine_name + "'");
    } else if (a == "--threads") {
      o.engine.num_threads = parse_int(a, value(), 0);
    } else if (a == "--reps") {
      o.reps = parse_int(a, value(), 0);
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--json") {
      o.json_path = value();
    } else if (a == "--explain") {
      o.explain = true;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--list") {
      o.list = true;
    } else {
      throw usage_error("unknown argument '" + a + "'");
    }
  }
  if (o.list) return o;
  if (o.engine.engine == engine_kind::gpu && !gpu_available())
    throw invalid_argument_error("--engine gpu: no CUDA device is visible or tug was built without CUDA");
  if (o.data.empty()) throw usage_error("--data DIR is required");
  if (o.queries.empty()) throw usage_error("--query 1,2,..|all is required");
  return o;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string two_digits(int q) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d", q);
  return buf;
}

/// The result file of query `q` (see the usage above).
std::string out_path(const options& o, int q) {
  std::string p = o.out;
  if (auto pos = p.find("{q}"); pos != std::string::npos) return p.replace(pos, 3, two_digits(q));
  if (o.queries.size() == 1) return p;
  auto dot = p.find_last_of('.');
  auto slash = p.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = p.size();
  return p.substr(0, dot) + "_q" + two_digits(q) + p.substr(dot);
}

void write_result(const data_frame& df, const std::string& path) {
  if (ends_with(path, ".parquet")) {
    io::parquet::write_parquet(path, df.schema(), df.partitions());
  } else if (ends_with(path, ".csv")) {
    std::ofstream f(path);
    f << df.to_csv();
    if (!f) throw io_error("cannot write " + path);
  } else {
    throw usage_error("--out must end in .csv or .parquet, got '" + path + "'");
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Runs query `q` 1 + reps times; returns its JSON record (and writes its result when asked).
json run_query(const options& o, int q) {
  json rec = {{"query", q}};
  data_frame result;
  std::vector<double> times;
  for (int r = 0; r <= o.reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    result = pdsh::query(q)(pdsh::scan_tables(o.data)).collect(o.engine);
    times.push_back(seconds_since(t0));
  }
  rec["rows"] = result.num_rows();
  rec["cold_s"] = times[0];
  // Without warm runs the cold run stands in for them.
  std::vector<double> warm = o.reps > 0 ? std::vector<double>(times.begin() + 1, times.end()) : times;
  rec["times_s"] = warm;
  std::sort(warm.begin(), warm.end());
  size_t n = warm.size();
  rec["median_s"] = n % 2 ? warm[n / 2] : (warm[n / 2 - 1] + warm[n / 2]) / 2;
  rec["min_s"] = warm.front();
  rec["max_s"] = warm.back();
  if (!o.out.empty()) write_result(result, out_path(o, q));
  if (o.profile) {
    query_result p = pdsh::query(q)(pdsh::scan_tables(o.data)).profile(o.engine);
    std::cout << "-- q" << two_digits(q) << " profile\n" << p.physical_plan << "\n" << p.statistics << "\n";
  }
  return rec;
}

int run(const options& o) {
  if (o.list) {
    for (int q : pdsh::registered_queries()) std::cout << q << "\n";
    return 0;
  }
  if (o.explain) {
    pdsh::tables t = pdsh::scan_tables(o.data);
    for (int q : o.queries) std::cout << "-- q" << two_digits(q) << "\n" << pdsh::query(q)(t).explain(o.engine) << "\n";
    return 0;
  }
  json doc = {{"engine", o.engine_name}, {"threads", o.engine.num_threads}, {"data", o.data}, {"reps", o.reps}};
  json& list = doc["queries"] = json::array();
  int status = 0;
  for (int q : o.queries) {
    try {
      json rec = run_query(o, q);
      std::printf("q%s rows=%lld cold=%.4fs median=%.4fs min=%.4fs max=%.4fs\n", two_digits(q).c_str(),
                  static_cast<long long>(rec["rows"].get<int64_t>()), rec["cold_s"].get<double>(),
                  rec["median_s"].get<double>(), rec["min_s"].get<double>(), rec["max_s"].get<double>());
      list.push_back(std::move(rec));
    } catch (const usage_error&) {
      throw;
    } catch (const std::exception& e) {
      std::printf("q%s error: %s\n", two_digits(q).c_str(), e.what());
      list.push_back({{"query", q}, {"error", e.what()}});
      status = 1;
    }
    std::fflush(stdout);
  }
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    f << doc.dump(2) << "\n";
    if (!f) throw io_error("cannot write " + o.json_path);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const usage_error& e) {
    std::cerr << "tug_pdsh: " << e.what() << "\n"
              << "usage: tug_pdsh --data DIR --query 1,2,..|all [--engine cpu|gpu|auto] [--threads N] [--reps N]\n"
                 "                [--out FILE.csv|FILE.parquet] [--json TIMINGS.json] [--explain] [--profile]\n"
                 "       tug_pdsh --list\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tug_pdsh: " << e.what() << "\n";
    return 1;
  }
}
