// tug_pdsh: runs PDS-H queries (bench/pdsh) on a generated data directory and reports their timings.
//
// usage: tug_pdsh --data DIR --query 1,2,..|all [--engine cpu|gpu|auto] [--fallback warn|raise|silent]
//                 [--threads N] [--reps N] [--time-limit S] [--out FILE.csv|FILE.parquet|DIR/]
//                 [--json TIMINGS.json] [--explain] [--profile] [--no-late-materialization]
//                 [--memory-limit BYTES] [--spill-device-limit LIMIT] [--spill-directory DIR]
//                 [--force-external] [--spill-everything] [--no-pinned-memory] [--gpus N|all]
//        tug_pdsh --list        (prints the registered query numbers, one a line)
//
// Each query runs 1 + N times (N = --reps, default 3): the first run is "cold" (the first time in this
// process), the N others "warm". Every run scans the Parquet files again (scan, plan, execute), so the
// times include reading the files (from the OS cache after the first run). One line per query:
//   qNN rows=R cold=Xs median=Xs min=Xs max=Xs nodes=cpu:N,cuda:N fallbacks=N
// --out writes each query's result: with several queries, "{q}" in the path is replaced by the two-digit
// query number, or "_qNN" is inserted before the extension when there is no "{q}". A path that ends in
// "/" is a directory of Parquet part files (sink_parquet, after the timed runs): on several ranks every
// rank writes its own share's files there.
// --json writes {"engine", "threads", "data", "reps", "queries": [{"query", "rows", "cold_s", "times_s",
// "median_s", "min_s", "max_s", "nodes": {"cpu": N, "cuda": N}, "fallbacks": [..]}]}, rewritten after
// every query (a run killed midway leaves the queries done so far). "nodes" counts the physical plan's
// nodes per backend; "fallbacks" lists the nodes the lowering moved off the requested engine, with the
// reason (the --fallback mode, default warn, prints them once per query; warm runs are silent).
// --explain prints each query's plan instead of running it; --profile runs each query once more after
// the timed runs and prints its physical plan with per-node statistics.
// --no-late-materialization turns that optimizer pass off (engine_options::optimizer), for A/B runs.
// --memory-limit, --spill-device-limit and --spill-directory set those engine options (docs/options.md);
// --profile then shows what moved between the memory tiers, and at the end the process's peak RSS and
// its RSS before the first query (also "peak_rss_mib" and "rss_at_start_mib" in the JSON). --force-external and --spill-everything turn
// those debug options on (every join and aggregate in hash buckets; every spillable buffer to disk), and
// --no-pinned-memory turns pinned_memory off, for runs of the out-of-core paths and A/B runs.
// --engine gpu fails (status 1) when there is no GPU, rather than timing the CPU fallback.
// --time-limit S: no query starts, and no warm run, once S seconds have passed since the start; the
// queries not started are recorded as {"query", "skipped": "time limit"} and a query cut short keeps the
// runs it made ("reps" in its record).
// --gpus N|all starts this program again under mpirun, one process per GPU (all: every GPU of the host).
// Under an MPI launcher (`mpirun -np N tug_pdsh ...`, tug built with MPI) every rank runs every query
// on its share of the data (docs/architecture.md, "Multi-rank execution"); rank 0 prints, writes --out
// and --json, and every rank prints the errors it sees, prefixed with its rank. The ranks stop at
// --time-limit together (when it has passed on any of them).
// Exit status: 0 when every query ran, 1 when one failed (its error is printed and in the JSON), 2 for a
// usage error.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
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
#include "tug/dist/communicator.hpp"
#include "tug/dist/distribute.hpp"
#include "tug/memory/device.hpp"
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
  double time_limit = 0;  ///< seconds; 0 = none
  bool explain = false;
  bool profile = false;
  bool list = false;
  std::string gpus;  ///< --gpus: "all" or a count; empty: one process
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

/// A byte count with a unit ("64MiB", "2GB", "123456") for `flag`.
int64_t parse_bytes(const std::string& flag, const std::string& v) {
  if (!v.empty() && v.back() == '%') throw usage_error(flag + " needs a byte count such as 64MiB, got '" + v + "'");
  try {
    return parse_device_limit(v, 0);  // the byte-count syntax of spill_device_limit
  } catch (const invalid_argument_error&) {
    throw usage_error(flag + " needs a byte count such as 64MiB or 2GB, got '" + v + "'");
  }
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
      if (o.engine_name == "cpu")
        o.engine.engine = engine_kind::cpu;
      else if (o.engine_name == "gpu")
        o.engine.engine = engine_kind::gpu;
      else if (o.engine_name == "auto")
        o.engine.engine = engine_kind::automatic;
      else
        throw usage_error("--engine must be cpu, gpu or auto, got '" + o.engine_name + "'");
    } else if (a == "--fallback") {
      std::string f = value();
      if (f == "warn")
        o.engine.fallback = fallback_mode::warn;
      else if (f == "raise")
        o.engine.fallback = fallback_mode::raise;
      else if (f == "silent")
        o.engine.fallback = fallback_mode::silent;
      else
        throw usage_error("--fallback must be warn, raise or silent, got '" + f + "'");
    } else if (a == "--time-limit") {
      o.time_limit = parse_int(a, value(), 0);
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
    } else if (a == "--no-late-materialization") {
      o.engine.optimizer.late_materialization = false;
    } else if (a == "--memory-limit") {
      o.engine.memory_limit = parse_bytes(a, value());
    } else if (a == "--spill-device-limit") {
      o.engine.spill_device_limit = value();  // checked when the query starts (validate_options)
    } else if (a == "--spill-directory") {
      o.engine.spill_directory = value();
    } else if (a == "--force-external") {
      o.engine.force_external = true;
    } else if (a == "--spill-everything") {
      o.engine.spill_everything = true;
    } else if (a == "--no-pinned-memory") {
      o.engine.pinned_memory = false;
    } else if (a == "--gpus") {
      o.gpus = value();
      if (o.gpus != "all") parse_int(a, o.gpus, 1);
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
  if (p.back() == '/') return p + "q" + two_digits(q) + "/";
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
    throw usage_error("--out must end in .csv, .parquet or / (a directory), got '" + path + "'");
  }
}

using steady = std::chrono::steady_clock;

double seconds_since(steady::time_point t0) { return std::chrono::duration<double>(steady::now() - t0).count(); }

/// True once --time-limit seconds have passed since `start` (on several ranks: on any rank, so that
/// all stop together).
bool past_limit(const options& o, steady::time_point start) {
  if (o.time_limit <= 0) return false;
  const bool past = seconds_since(start) >= o.time_limit;
  return dist::sum_over_ranks(past ? 1 : 0, o.engine.collective_timeout) > 0;
}

/// Nodes per backend of a physical plan as explain() prints it (each line ends in "@<backend>").
json count_nodes(const std::string& plan) {
  json nodes = {{"cpu", 0}, {"cuda", 0}};
  std::stringstream ss(plan);
  for (std::string line; std::getline(ss, line);) {
    auto at = line.rfind('@');
    if (at == std::string::npos) continue;
    std::string b = line.substr(at + 1);
    nodes[b] = nodes.value(b, 0) + 1;
  }
  return nodes;
}

/// Runs query `q` 1 + reps times (fewer when the time limit passes); returns its JSON record (and
/// writes its result when asked). The cold run is profiled for the backends and fallbacks of its plan;
/// the warm runs lower the same plan, so they do not repeat the fallback warnings.
json run_query(const options& o, int q, steady::time_point start, bool lead) {
  json rec = {{"query", q}};
  std::vector<double> times;
  engine_options cold = o.engine;
  cold.statistics = false;
  auto t0 = steady::now();
  query_result first = pdsh::query(q)(pdsh::scan_tables(o.data)).profile(cold);
  times.push_back(seconds_since(t0));
  data_frame result = std::move(first.frame);
  rec["nodes"] = count_nodes(first.physical_plan);
  rec["fallbacks"] = first.fallbacks;
  engine_options warm = o.engine;
  if (warm.fallback == fallback_mode::warn) warm.fallback = fallback_mode::silent;
  for (int r = 0; r < o.reps && !past_limit(o, start); ++r) {
    t0 = steady::now();
    result = pdsh::query(q)(pdsh::scan_tables(o.data)).collect(warm);
    times.push_back(seconds_since(t0));
  }
  rec["rows"] = result.num_rows();
  rec["cold_s"] = times[0];
  rec["reps"] = times.size() - 1;
  // Without warm runs the cold run stands in for them.
  std::vector<double> warm_times = times.size() > 1 ? std::vector<double>(times.begin() + 1, times.end()) : times;
  rec["times_s"] = warm_times;
  std::sort(warm_times.begin(), warm_times.end());
  size_t n = warm_times.size();
  rec["median_s"] = n % 2 ? warm_times[n / 2] : (warm_times[n / 2 - 1] + warm_times[n / 2]) / 2;
  rec["min_s"] = warm_times.front();
  rec["max_s"] = warm_times.back();
  if (ends_with(o.out, "/")) sink_parquet(pdsh::query(q)(pdsh::scan_tables(o.data)), out_path(o, q), {}, warm);
  else if (!o.out.empty() && lead) write_result(result, out_path(o, q));
  if (o.profile) {
    query_result p = pdsh::query(q)(pdsh::scan_tables(o.data)).profile(o.engine);
    if (lead) std::cout << "-- q" << two_digits(q) << " profile\n" << p.physical_plan << "\n" << p.statistics << "\n";
  }
  return rec;
}

/// The process's resident memory now (/proc/self/statm), in MiB; 0 where unknown.
double resident_mib() {
  std::ifstream f("/proc/self/statm");
  long long pages = 0, resident = 0;
  if (!(f >> pages >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

/// The process's peak resident memory so far (getrusage), in MiB.
double peak_rss_mib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

void write_json(const options& o, const json& doc) {
  if (o.json_path.empty()) return;
  std::ofstream f(o.json_path);
  f << doc.dump(2) << "\n";
  if (!f) throw io_error("cannot write " + o.json_path);
}

int run(const options& o) {
  const auto comm = dist::world();
  const bool lead = comm->rank() == 0;  // prints and writes; the other ranks only compute
  if (o.list) {
    for (int q : pdsh::registered_queries())
      std::cout << q << "\n";
    return 0;
  }
  if (o.explain) {
    pdsh::tables t = pdsh::scan_tables(o.data);
    for (int q : o.queries) {
      std::string plan = pdsh::query(q)(t).explain(o.engine);
      if (lead) std::cout << "-- q" << two_digits(q) << "\n" << plan << "\n";
    }
    return 0;
  }
  json doc = {{"engine", o.engine_name}, {"threads", o.engine.num_threads}, {"data", o.data}, {"reps", o.reps},
              {"ranks", comm->size()}};
  json& list = doc["queries"] = json::array();
  int status = 0;
  const double rss_at_start = resident_mib();
  auto start = steady::now();
  for (int q : o.queries) {
    if (past_limit(o, start)) {
      if (lead) std::printf("q%s skipped: time limit\n", two_digits(q).c_str());
      list.push_back({{"query", q}, {"skipped", "time limit"}});
      continue;
    }
    try {
      json rec = run_query(o, q, start, lead);
      if (lead)
        std::printf("q%s rows=%lld cold=%.4fs median=%.4fs min=%.4fs max=%.4fs nodes=cpu:%d,cuda:%d fallbacks=%zu\n",
                  two_digits(q).c_str(), static_cast<long long>(rec["rows"].get<int64_t>()),
                  rec["cold_s"].get<double>(), rec["median_s"].get<double>(), rec["min_s"].get<double>(),
                  rec["max_s"].get<double>(), rec["nodes"]["cpu"].get<int>(), rec["nodes"]["cuda"].get<int>(),
                  rec["fallbacks"].size());
      list.push_back(std::move(rec));
    } catch (const usage_error&) {
      throw;
    } catch (const std::exception& e) {
      if (comm->size() > 1)
        std::printf("q%s error (rank %d of %d): %s\n", two_digits(q).c_str(), comm->rank(), comm->size(), e.what());
      else
        std::printf("q%s error: %s\n", two_digits(q).c_str(), e.what());
      list.push_back({{"query", q}, {"error", e.what()}});
      status = 1;
    }
    std::fflush(stdout);
    if (lead) write_json(o, doc);
  }
  // the process's memory against the queries' budgets (bench/memory_limit_check.sh checks the two)
  doc["peak_rss_mib"] = peak_rss_mib();
  doc["rss_at_start_mib"] = rss_at_start;
  if (lead && o.profile)
    std::printf("process: peak RSS %.1f MiB, %.1f MiB before the first query\n", peak_rss_mib(), rss_at_start);
  if (lead) write_json(o, doc);
  return status;
}

}  // namespace

/// --gpus N|all outside an MPI launcher: this program again, one process per GPU, under mpirun (which
/// must be on PATH); each process then uses one GPU (docs/architecture.md, "Multi-rank execution").
/// Returns only when no launch is needed.
void launch_ranks(const options& o, int argc, char** argv) {
  if (o.gpus.empty() || dist::launcher_ranks() > 0) return;
  const int n = o.gpus == "all" ? dist::host_gpus() : parse_int("--gpus", o.gpus, 1);
  if (o.gpus == "all" && n == 0) throw invalid_argument_error("--gpus all: no GPU on this host (/dev/nvidiaN)");
  if (n <= 1) return;
  // --bind-to none: OpenMPI binds each of up to 2 processes to one core by default, and a rank's
  // worker threads would all share it
  std::vector<std::string> args = {"mpirun", "--oversubscribe", "--bind-to", "none", "-np", std::to_string(n),
                                   "-x", "NCCL_NVLS_ENABLE=0"};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  // this program's own path (in mpirun, /proc/self/exe would name mpirun)
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw invalid_argument_error(std::string("--gpus: cannot find this program's path: ") + std::strerror(errno));
  args.emplace_back(self, static_cast<size_t>(len));
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--gpus") {
      ++i;  // and its value
      continue;
    }
    args.push_back(argv[i]);
  }
  std::vector<char*> c;
  for (auto& a : args) c.push_back(a.data());
  c.push_back(nullptr);
  std::fflush(stdout);
  ::execvp("mpirun", c.data());
  throw invalid_argument_error(std::string("--gpus ") + o.gpus + ": cannot start mpirun (" + std::strerror(errno) +
                               "); install OpenMPI (openmpi-bin) or run under your own launcher");
}

int main(int argc, char** argv) {
  try {
    options o = parse_args(argc, argv);
    launch_ranks(o, argc, argv);
    return run(o);
  } catch (const usage_error& e) {
    std::cerr
        << "tug_pdsh: " << e.what() << "\n"
        << "usage: tug_pdsh --data DIR --query 1,2,..|all [--engine cpu|gpu|auto] [--fallback warn|raise|silent]\n"
           "                [--threads N] [--reps N] [--time-limit S] [--out FILE.csv|FILE.parquet|DIR/]\n"
           "                [--json TIMINGS.json] [--explain] [--profile] [--no-late-materialization]\n"
           "                [--memory-limit BYTES] [--spill-device-limit LIMIT] [--spill-directory DIR]\n"
           "                [--force-external] [--spill-everything] [--no-pinned-memory] [--gpus N|all]\n"
           "       tug_pdsh --list\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tug_pdsh: " << e.what() << "\n";
    return 1;
  }
}
