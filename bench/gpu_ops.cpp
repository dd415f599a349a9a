// The GPU benchmark suite (issue 5), benchmarks named tug_gpu/<query>/<engine>:
//  - d2d_copy: device-to-device copy bandwidth (bytes read + written), the yardstick of the others;
//  - operator queries with the data already in device memory: filter + sum (int64, float64),
//    group_by sum with 100 and with rows/10 groups, inner join rows x rows/10 on int64 keys, sort of
//    int64 and of strings, mean over() two keys. GB/s = bytes of input read / time, also as a
//    fraction of the copy bandwidth. The CPU peer (engine=cpu, all cores, data in host memory) runs at
//    TUG_GPU_BENCH_CPU_SCALE of the GPU's rows (default 0.1; its label says so): compare rows/s;
//  - the seed-002 queries end to end (examples/seed_queries.hpp) on generated data, from Parquet files
//    (scan included) and from host memory, GPU engine and CPU engine at the same size.
// Sizes default to the issue's (1B rows, 100M groups, 1B x 100M join, 100M strings); TUG_GPU_BENCH_SCALE
// multiplies every size (scripts/gpu-check.sh --quick uses 0.02). GPU times are CUDA events around
// collect(); CPU times are the steady clock; each repetition is one run, the median is the figure.
// Every benchmark skips when no GPU is visible (TUG_GPU_BENCH_FORCE_CPU=1 still runs the CPU peers).
// TUG_GPU_BENCH_PROFILE=1 prints each operator query's per-operator statistics (one more run) on stderr.
// TUG_GPU_BENCH_STREAMS=N sets the operator queries' num_streams (partitions with device work in flight).
// TUG_GPU_BENCH_LATE_MAT=0 runs the seed queries without late materialization (A/B runs in one session).
// bench/gpu_report.py turns --benchmark_out JSON into a Markdown table and a chart.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "../examples/seed_queries.hpp"
#include "tug/api/io.hpp"
#include "tug/gen/random.hpp"
#include "tug/gen/seed_data.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/thread_pool.hpp"

#ifdef TUG_WITH_CUDA
#include <cuda_runtime.h>
#endif

using namespace tug;

namespace {

// ---------------------------------------------------------------------------------------------
// Sizes and options

double env_double(const char* name, double fallback) {
  const char* e = std::getenv(name);
  return e && *e ? std::atof(e) : fallback;
}

/// `full` (the issue's size) times TUG_GPU_BENCH_SCALE, at least 1000.
int64_t scaled(double full) {
  static double scale = env_double("TUG_GPU_BENCH_SCALE", 1.0);
  return std::max<int64_t>(1000, std::llround(full * scale));
}

/// Rows of the fact table on the GPU and, for the CPU peer, TUG_GPU_BENCH_CPU_SCALE of them.
int64_t fact_rows(bool gpu) {
  static double cpu_scale = std::clamp(env_double("TUG_GPU_BENCH_CPU_SCALE", 0.1), 1e-6, 1.0);
  int64_t n = scaled(1e9);
  return gpu ? n : std::max<int64_t>(1000, std::llround(static_cast<double>(n) * cpu_scale));
}

/// Rows of the string table (100M at scale 1), the same fraction for the CPU peer.
int64_t string_rows(bool gpu) { return std::max<int64_t>(1000, fact_rows(gpu) / 10); }

/// Rows of the seed data sets: AIS positions and wholesale lineitems (the GPU and CPU run the same).
int64_t ais_rows() { return scaled(2e7); }
int64_t lineitem_rows() { return scaled(5e6); }

bool gpu_visible() { return gpu_available(); }

/// The CPU peers run beside the GPU run only, unless TUG_GPU_BENCH_FORCE_CPU=1 (to check the suite on
/// a machine without a GPU).
bool cpu_peers_enabled() { return gpu_visible() || env_double("TUG_GPU_BENCH_FORCE_CPU", 0) != 0; }

const char* no_gpu_message() { return "no CUDA device is visible (or tug was built without CUDA)"; }

// ---------------------------------------------------------------------------------------------
// Timing: CUDA events on the device timeline for GPU runs, the steady clock for CPU runs

#ifdef TUG_WITH_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

/// Seconds that `f` takes: CUDA events recorded before and after it when `gpu`, else the steady clock.
double seconds_of(bool gpu, const std::function<void()>& f) {
#ifdef TUG_WITH_CUDA
  if (gpu) {
    cudaEvent_t a = nullptr, b = nullptr;
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
    float ms = 0;
    try {
      cuda_check(cudaEventRecord(a, 0), "cudaEventRecord");
      f();
      cuda_check(cudaEventRecord(b, 0), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(b), "cudaEventSynchronize");
      cuda_check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    } catch (...) {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
      throw;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / 1e3;
  }
#endif
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// ---------------------------------------------------------------------------------------------
// Device-to-device copy bandwidth

/// Seconds of each timed device-to-device copy so far (the d2d_copy benchmark adds to them).
std::vector<double>& copy_times() {
  static std::vector<double> t;
  return t;
}

/// Bytes of one copy: 4 GiB, or a tenth of the device memory when smaller.
int64_t copy_bytes() { return std::min<int64_t>(int64_t(4) << 30, current_device_info().total_memory / 10); }

#ifdef TUG_WITH_CUDA
/// Two device buffers of `bytes` (outside tug's pool; freed on destruction).
struct copy_buffers {
  void *src = nullptr, *dst = nullptr;
  int64_t bytes;
  explicit copy_buffers(int64_t n) : bytes(n) {
    auto size = static_cast<size_t>(bytes);
    if (cudaMalloc(&src, size) != cudaSuccess || cudaMalloc(&dst, size) != cudaSuccess ||
        cudaMemset(src, 1, size) != cudaSuccess) {
      cudaFree(src);
      cudaFree(dst);
      throw std::runtime_error("cannot allocate and fill two device buffers of " + std::to_string(bytes) + " bytes");
    }
  }
  ~copy_buffers() {
    cudaFree(src);
    cudaFree(dst);
  }
  copy_buffers(const copy_buffers&) = delete;
  copy_buffers& operator=(const copy_buffers&) = delete;
};

/// One timed copy; its time is added to copy_times().
double timed_copy(copy_buffers& b) {
  double s = seconds_of(true, [&] {
    cuda_check(cudaMemcpyAsync(b.dst, b.src, static_cast<size_t>(b.bytes), cudaMemcpyDeviceToDevice, 0),
               "cudaMemcpyAsync");
  });
  copy_times().push_back(s);
  return s;
}
#endif

/// The device-to-device copy bandwidth in GB/s (bytes read + written), the median of the copies timed
/// so far; measured here (one warm-up and 10 timed copies) when none were.
double copy_gbs() {
#ifdef TUG_WITH_CUDA
  if (copy_times().empty()) {
    copy_buffers b(copy_bytes());
    timed_copy(b);
    copy_times().clear();  // the warm-up
    for (int i = 0; i < 10; ++i)
      timed_copy(b);
  }
  return 2.0 * static_cast<double>(copy_bytes()) / median(copy_times()) / 1e9;
#else
  return 0;
#endif
}

void bm_d2d_copy(benchmark::State& state) {
#ifdef TUG_WITH_CUDA
  if (!gpu_visible()) return state.SkipWithError(no_gpu_message());
  try {
    copy_buffers b(copy_bytes());
    if (copy_times().empty()) {  // warm-up once
      timed_copy(b);
      copy_times().clear();
    }
    double s = 0;
    for (auto _ : state) {
      s = timed_copy(b);
      state.SetIterationTime(s);
    }
    state.counters["bytes"] = 2.0 * static_cast<double>(b.bytes);
    state.counters["GB/s"] = 2.0 * static_cast<double>(b.bytes) / s / 1e9;
    state.counters["copy_frac"] = 1;
    state.SetLabel(current_device_info().name);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
#else
  state.SkipWithError(no_gpu_message());
#endif
}

// ---------------------------------------------------------------------------------------------
// Generated data: each column a pure function of the row index and the table's row count, built in
// one chunk per pool thread (one partition each). GPU columns live in device memory, only those of
// the running benchmark (the others are freed first); CPU-peer columns stay in host memory.

/// Row counts per partition: one partition per pool thread.
std::vector<std::pair<int64_t, int64_t>> chunks(int64_t n) {
  int64_t parts = std::max<int64_t>(1, global_thread_pool().size());
  int64_t per = (n + parts - 1) / parts;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t lo = 0; lo < n; lo += per)
    out.emplace_back(lo, std::min(n, lo + per));
  return out;
}

/// Hash `salt` (< 64) of row i: independent streams per column.
uint64_t hash_of(int64_t i, uint64_t salt) { return gen::mix64(static_cast<uint64_t>(i) * 64 + salt); }
double unit_of(int64_t i, uint64_t salt) { return static_cast<double>(hash_of(i, salt) >> 11) * 0x1.0p-53; }

template <typename T, typename F>
column fixed(type_id t, int64_t lo, int64_t hi, F f) {
  fixed_width_builder<T> b(t, hi - lo);
  for (int64_t i = lo; i < hi; ++i)
    b.set(i - lo, f(i));
  return b.finish();
}

/// Strings of 8 to 24 lowercase letters.
column strings(int64_t lo, int64_t hi) {
  string_builder b(hi - lo, (hi - lo) * 16);
  char buf[24];
  for (int64_t i = lo; i < hi; ++i) {
    uint64_t h = hash_of(i, 9);
    int len = 8 + static_cast<int>(h % 17);
    for (int c = 0; c < len; ++c) {
      if (c % 12 == 0) h = hash_of(i, 10 + static_cast<uint64_t>(c / 12));  // 12 letters a hash
      buf[c] = static_cast<char>('a' + (h % 26));
      h /= 26;
    }
    b.append(std::string_view(buf, static_cast<size_t>(len)));
  }
  return b.finish();
}

/// Tables: "fact" (n rows), "dim" (n rows: every key of the fact's kmany once), "text" (n strings).
/// Fact columns: k100 (100 groups), kmany (n/10 groups), k2 (16 groups), x (int64 in [0, 1000)),
/// y (int64 in [0, 2^20)), v (float64 in [0, 100)), r (any int64); dim: key, w; text: s.
column make_column(const std::string& table, const std::string& name, int64_t n, int64_t lo, int64_t hi) {
  auto groups = static_cast<uint64_t>(std::max<int64_t>(1, n / 10));
  if (table == "fact") {
    if (name == "k100")
      return fixed<int64_t>(type_id::int64, lo, hi, [](int64_t i) { return int64_t(hash_of(i, 0) % 100); });
    if (name == "kmany")
      return fixed<int64_t>(type_id::int64, lo, hi, [&](int64_t i) { return int64_t(hash_of(i, 1) % groups); });
    if (name == "k2")
      return fixed<int64_t>(type_id::int64, lo, hi, [](int64_t i) { return int64_t(hash_of(i, 2) % 16); });
    if (name == "x")
      return fixed<int64_t>(type_id::int64, lo, hi, [](int64_t i) { return int64_t(hash_of(i, 3) % 1000); });
    if (name == "y")
      return fixed<int64_t>(type_id::int64, lo, hi, [](int64_t i) { return int64_t(hash_of(i, 4) >> 44); });
    if (name == "v") return fixed<double>(type_id::float64, lo, hi, [](int64_t i) { return unit_of(i, 5) * 100; });
    if (name == "r") return fixed<int64_t>(type_id::int64, lo, hi, [](int64_t i) { return int64_t(hash_of(i, 6)); });
  } else if (table == "dim") {
    if (name == "key") return fixed<int64_t>(type_id::int64, lo, hi, [](int64_t i) { return i; });
    if (name == "w") return fixed<double>(type_id::float64, lo, hi, [](int64_t i) { return unit_of(i, 7); });
  } else if (table == "text" && name == "s") {
    return strings(lo, hi);
  }
  throw std::logic_error("gpu_ops: no generated column " + table + "." + name);
}

data_type type_of(const std::string& name) {
  return name == "v" || name == "w" ? data_type(type_id::float64)
         : name == "s"              ? data_type(type_id::string)
                                    : data_type(type_id::int64);
}

/// Bytes of a column's values (and string offsets).
int64_t bytes_of(const column& c) {
  if (c.type().id == type_id::string) {
    // a generated column is never sliced: its offsets buffer starts at row 0
    return static_cast<int64_t>(c.data_buffer()->size()) + 8 * (c.size() + 1);
  }
  return static_cast<int64_t>(size_of(c.type().id)) * c.size();
}

/// Generated columns in host or device memory, one column per partition.
class column_cache {
 public:
  explicit column_cache(bool device) : _device(device) {}

  /// Columns `names` of table `tab` with `n` rows, as a frame (generated when not held).
  data_frame frame(const std::string& tab, int64_t n, const std::vector<std::string>& names) {
    std::vector<std::string> keys;
    for (auto& c : names)
      keys.push_back(key(tab, c, n));
    for (size_t i = 0; i < names.size(); ++i)
      if (!_cols.count(keys[i])) _cols[keys[i]] = generate(tab, names[i], n);
    auto parts = chunks(n);
    std::vector<table> tables;
    for (size_t p = 0; p < parts.size(); ++p) {
      std::vector<column> cols;
      for (auto& k : keys)
        cols.push_back(_cols[k][p]);
      tables.push_back(table(std::move(cols)));
    }
    std::vector<field> fields;
    for (auto& c : names)
      fields.push_back({c, type_of(c)});
    return data_frame(schema(std::move(fields)), std::move(tables));
  }

  /// The name of a generated column in the cache.
  static std::string key(const std::string& tab, const std::string& name, int64_t n) {
    return tab + "." + name + "@" + std::to_string(n);
  }

  /// Frees every column not in `keep` (keys; all with an empty list).
  void evict_except(const std::vector<std::string>& keep) {
    for (auto it = _cols.begin(); it != _cols.end();)
      it = std::find(keep.begin(), keep.end(), it->first) == keep.end() ? _cols.erase(it) : std::next(it);
  }

  /// Bytes held in device memory by this cache.
  int64_t device_bytes() const { return _budget ? _budget->used() : 0; }

 private:
  std::vector<column> generate(const std::string& tab, const std::string& name, int64_t n) {
    auto parts = chunks(n);
    std::vector<column> out(parts.size());
    if (_device && !_mr) {
      _budget = std::make_shared<memory_budget>(0, "benchmark data");
      _mr = make_device_resource(_budget);
    }
    global_thread_pool().parallel_for(static_cast<int64_t>(parts.size()), [&](int64_t p) {
      auto [lo, hi] = parts[static_cast<size_t>(p)];
      column c = make_column(tab, name, n, lo, hi);
      out[static_cast<size_t>(p)] = _device ? to_device(table({c}), _mr.get())[0] : c;
    });
    return out;
  }

  bool _device;
  std::shared_ptr<memory_budget> _budget;
  std::shared_ptr<memory_resource> _mr;
  std::map<std::string, std::vector<column>> _cols;
};

column_cache& cache(bool gpu) {
  static column_cache device(true), host(false);
  return gpu ? device : host;
}

// ---------------------------------------------------------------------------------------------
// Engines

/// GPU engine options for data resident on the device: large partitions, and a device budget of what
/// the resident data leaves free (less 2 GiB for the CUDA context and the pool's slack).
engine_options gpu_options(int64_t resident_bytes) {
  engine_options o;
  o.engine = engine_kind::gpu;
  o.fallback = fallback_mode::silent;
  o.target_partition_rows = int64_t(1) << 26;
  o.num_streams = static_cast<int>(env_double("TUG_GPU_BENCH_STREAMS", o.num_streams));
  int64_t total = current_device_info().total_memory;
  o.spill_device_limit =
      std::to_string(std::max<int64_t>(int64_t(1) << 30, total - resident_bytes - (int64_t(2) << 30)));
  return o;
}

engine_options cpu_options() {
  engine_options o;
  o.engine = engine_kind::cpu;
  return o;
}

/// "fallback: ..." lines of the GPU plan, joined (empty when every node runs on the GPU).
std::string fallbacks_of(const lazy_frame& q, const engine_options& o) {
  std::string plan = q.explain(o), out;
  for (size_t at = plan.find("fallback: "); at != std::string::npos; at = plan.find("fallback: ", at + 1)) {
    size_t end = plan.find('\n', at);
    out += (out.empty() ? "" : "; ") + plan.substr(at, end == std::string::npos ? end : end - at);
  }
  return out;
}

/// Runs `run` once per iteration, timed, and sets the counters: rows, bytes of input, GB/s and, with
/// `resident` (the input is in device memory), the fraction of the copy bandwidth.
void measure(benchmark::State& state, bool gpu, bool resident, int64_t rows, double bytes,
             const std::function<void()>& run, const std::string& label) {
  double s = 0;
  for (auto _ : state) {
    s = seconds_of(gpu, run);
    state.SetIterationTime(s);
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["bytes"] = bytes;
  state.counters["GB/s"] = bytes / s / 1e9;
  if (resident) state.counters["copy_frac"] = bytes / s / 1e9 / copy_gbs();
  if (!label.empty()) state.SetLabel(label);
}

/// False (the benchmark skipped) when the engine cannot run here.
bool can_run(benchmark::State& state, bool gpu) {
  if (gpu ? gpu_visible() : cpu_peers_enabled()) return true;
  state.SkipWithError(no_gpu_message());
  return false;
}

// ---------------------------------------------------------------------------------------------
// Operator queries

/// The tables an operator query reads: the fact table, the fact and dim tables, or the text table.
enum class source { fact, fact_dim, text };

struct inputs {
  data_frame fact, dim, text;
};

struct op_query {
  std::string name;
  source src;
  std::vector<std::string> columns;  ///< of the fact table (the dim and text tables are read whole)
  std::function<lazy_frame(const inputs&)> build;
};

/// Every query ends in a few rows, so the time is the device's work, not a copy of a large result.
const std::vector<op_query>& op_queries() {
  // sorts return the rows at every eighth of the sorted order
  auto octiles = [](const data_frame& f, const char* key) {
    int64_t step = std::max<int64_t>(1, f.num_rows() / 8);
    return f.lazy().sort(key).with_row_index("i").filter(col("i") % step == 0);
  };
  static const std::vector<op_query> q = {
      {"filter_sum_f64",
       source::fact,
       {"x", "v"},
       [](const inputs& d) { return d.fact.lazy().filter(col("x") < 500).select({col("v").sum()}); }},
      {"filter_sum_i64",
       source::fact,
       {"x", "y"},
       [](const inputs& d) { return d.fact.lazy().filter(col("x") < 500).select({col("y").sum()}); }},
      {"group_by_100_groups",
       source::fact,
       {"k100", "v"},
       [](const inputs& d) { return d.fact.lazy().group_by({"k100"}).agg({col("v").sum()}); }},
      {"over_mean_2_keys",
       source::fact,
       {"k100", "k2", "v"},
       [](const inputs& d) {
         return d.fact.lazy()
             .with_columns({col("v").mean().over({"k100", "k2"}).alias("m")})
             .filter(col("v") > col("m") * 1.9)
             .select({len().alias("n")});
       }},
      {"group_by_rows_div_10_groups",
       source::fact,
       {"kmany", "v"},
       [](const inputs& d) {
         return d.fact.lazy()
             .group_by({"kmany"})
             .agg({col("v").sum()})
             .select({col("v").sum().alias("total"), len().alias("groups")});
       }},
      {"inner_join_rows_x_rows_div_10",
       source::fact_dim,
       {"kmany", "v"},
       [](const inputs& d) {
         return d.fact.lazy()
             .join(d.dim.lazy(), {col("kmany")}, {col("key")})
             .select({(col("v") * col("w")).sum().alias("vw"), len().alias("n")});
       }},
      {"sort_int64", source::fact, {"r"}, [octiles](const inputs& d) { return octiles(d.fact, "r"); }},
      {"sort_strings", source::text, {}, [octiles](const inputs& d) { return octiles(d.text, "s"); }},
  };
  return q;
}

int64_t input_bytes(const inputs& d) {
  int64_t b = 0;
  for (const data_frame* f : {&d.fact, &d.dim, &d.text})
    for (auto& p : f->partitions())
      for (auto& c : p.columns())
        b += bytes_of(c);
  return b;
}

/// The inputs of `q` with `n` rows (of the fact or text table) from `c`; on the device, data of the
/// previous benchmark is freed first.
inputs load(const op_query& q, int64_t n, column_cache& c, bool device) {
  int64_t nd = std::max<int64_t>(1, n / 10);
  if (device) {
    std::vector<std::string> keep;
    for (auto& name : q.columns)
      keep.push_back(column_cache::key("fact", name, n));
    if (q.src == source::text) keep.push_back(column_cache::key("text", "s", n));
    if (q.src == source::fact_dim)
      keep.insert(keep.end(), {column_cache::key("dim", "key", nd), column_cache::key("dim", "w", nd)});
    c.evict_except(keep);
  }
  inputs d;
  if (q.src == source::text)
    d.text = c.frame("text", n, {"s"});
  else
    d.fact = c.frame("fact", n, q.columns);
  if (q.src == source::fact_dim) d.dim = c.frame("dim", nd, {"key", "w"});
  return d;
}

/// Rows of `q`'s main table at full size on the GPU, or for the CPU peer.
int64_t op_rows(const op_query& q, bool gpu) { return q.src == source::text ? string_rows(gpu) : fact_rows(gpu); }

/// TUG_GPU_BENCH_PROFILE=1: one more run of `lf` with per-operator statistics, on stderr (once a query
/// and engine).
void print_profile(const std::string& name, bool gpu, const lazy_frame& lf, const engine_options& o) {
  static std::set<std::string> profiled;
  if (env_double("TUG_GPU_BENCH_PROFILE", 0) != 0 && profiled.insert(name + (gpu ? "/gpu" : "/cpu")).second)
    std::fprintf(stderr, "profile %s/%s:\n%s\n", name.c_str(), gpu ? "gpu" : "cpu", lf.profile(o).statistics.c_str());
}

void bm_op(benchmark::State& state, const op_query& q, bool gpu) {
  if (!can_run(state, gpu)) return;
  // GPU: the first repetition warms up (two runs); a size that runs out of device memory is halved (up
  // to 3 times) and the label says so; an error is remembered, so later repetitions skip at once
  static std::map<std::string, int> halvings;
  static std::map<std::string, std::string> warmed, failed;
  if (gpu && failed.count(q.name)) return state.SkipWithError(failed[q.name].c_str());
  try {
    column_cache& c = cache(gpu);
    int64_t n = 0;
    inputs d;
    std::optional<lazy_frame> lf;
    engine_options o = cpu_options();
    for (;;) {
      int& h = halvings[q.name];
      n = std::max<int64_t>(1000, op_rows(q, gpu) >> (gpu ? h : 0));
      try {
        d = load(q, n, c, gpu);
        lf = q.build(d);
        if (!gpu) break;
        o = gpu_options(c.device_bytes());
        if (warmed.count(q.name)) break;
        // two warm-up runs: a size whose peak memory is borderline (partitions run concurrently, so the
        // peak varies between runs) is halved here rather than failing a timed repetition
        lf->collect(o);
        lf->collect(o);
        warmed[q.name] = h == 0 ? "" : "ran at " + std::to_string(n) + " rows: more ran out of device memory";
        break;
      } catch (const memory_error&) {
        if (!gpu || ++h > 3) throw;
        d = inputs{};
        lf.reset();
        c.evict_except({});
      }
    }
    std::string label;
    if (gpu) {
      label = fallbacks_of(*lf, o);
      if (!warmed[q.name].empty()) label += (label.empty() ? "" : "; ") + warmed[q.name];
    } else if (n != op_rows(q, true)) {
      label = "CPU peer at " + std::to_string(n) + " rows: compare rows/s";
    }
    measure(
        state, gpu, gpu, n, static_cast<double>(input_bytes(d)), [&] { benchmark::DoNotOptimize(lf->collect(o)); },
        label);
    print_profile(q.name, gpu, *lf, o);
  } catch (const std::exception& e) {
    if (gpu) failed[q.name] = e.what();
    state.SkipWithError(e.what());
  }
}

// ---------------------------------------------------------------------------------------------
// Seed queries end to end

/// Directory of the generated Parquet files (TUG_GPU_BENCH_DIR, else under the temporary directory);
/// removed at exit when this process created it.
const std::string& seed_dir() {
  static struct dir {
    std::string path;
    bool owned = false;
    dir() {
      const char* e = std::getenv("TUG_GPU_BENCH_DIR");
      namespace fs = std::filesystem;
      path = e && *e ? e : (fs::temp_directory_path() / ("tug_gpu_bench_" + std::to_string(::getpid()))).string();
      owned = !(e && *e);
      fs::create_directories(path);
    }
    ~dir() {
      std::error_code ec;
      if (owned) std::filesystem::remove_all(path, ec);
    }
  } d;
  return d.path;
}

/// A seed data set in host memory and as Parquet files under seed_dir()/<name> (written once).
struct seed_data {
  std::map<std::string, data_frame> frames;
  std::string dir;
  int64_t bytes = 0;  ///< bytes of the columns in memory
};

const seed_data& seed(const std::string& name) {
  static std::map<std::string, seed_data> sets;
  auto it = sets.find(name);
  if (it != sets.end()) return it->second;
  gen::dataset ds = name == "ais" ? gen::ais_dataset(ais_rows()) : gen::wholesale_dataset(lineitem_rows());
  seed_data s;
  s.dir = seed_dir() + "/" + name;
  gen::write_config w;
  w.out = s.dir;
  w.progress = false;
  gen::write_dataset(ds, w);
  s.frames = gen::generate_dataset(ds);
  for (auto& [t, f] : s.frames)
    for (auto& p : f.partitions())
      for (auto& c : p.columns())
        s.bytes += bytes_of(c);
  return sets.emplace(name, std::move(s)).first->second;
}

struct seed_query {
  std::string name;
  std::string data;   ///< "ais" or "wholesale"
  bool sink = false;  ///< written with sink_parquet (else collected)
  std::function<lazy_frame(const std::map<std::string, lazy_frame>&)> build;
};

const std::vector<seed_query>& seed_queries() {
  using tables = std::map<std::string, lazy_frame>;
  static const std::vector<seed_query> q = {
      {"seed_anomaly_over", "ais", false, [](const tables& t) { return seed::speed_anomaly(t.at("ais")); }},
      {"seed_anomaly_group_by_join", "ais", false,
       [](const tables& t) { return seed::speed_anomaly_join(t.at("ais")); }},
      {"seed_four_way_join_sink", "wholesale", true,
       [](const tables& t) {
         return seed::four_way_join(t.at("lineitem"), t.at("orders"), t.at("customer"), t.at("supplier"));
       }},
  };
  return q;
}

void bm_seed(benchmark::State& state, const seed_query& q, bool parquet, bool gpu) {
  if (!can_run(state, gpu)) return;
  try {
    if (gpu) cache(true).evict_except({});  // no operator benchmark data stays on the device
    const seed_data& d = seed(q.data);
    std::map<std::string, lazy_frame> tables;
    for (auto& [name, f] : d.frames)
      tables.emplace(name, parquet ? scan_parquet(d.dir + "/" + name) : f.lazy());
    lazy_frame lf = q.build(tables);
    engine_options o;  // as a user runs it
    o.engine = gpu ? engine_kind::gpu : engine_kind::cpu;
    o.fallback = fallback_mode::silent;
    o.optimizer.late_materialization = env_double("TUG_GPU_BENCH_LATE_MAT", 1) != 0;
    o.num_streams = static_cast<int>(env_double("TUG_GPU_BENCH_STREAMS", o.num_streams));  // partitions in flight
    std::string out = seed_dir() + "/out-" + q.name + "/";
    int64_t rows = (q.data == "ais" ? d.frames.at("ais") : d.frames.at("lineitem")).num_rows();
    measure(
        state, gpu, false, rows, static_cast<double>(d.bytes),
        [&] {
          if (q.sink)
            sink_parquet(lf, out, {}, o);
          else
            benchmark::DoNotOptimize(lf.collect(o));
        },
        gpu ? fallbacks_of(lf, o) : std::string());
    print_profile(q.name + (parquet ? "_from_parquet" : "_from_memory"), gpu, lf, o);  // a sink: its query only
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// ---------------------------------------------------------------------------------------------
// Registration: GPU then CPU peer for each query; repetitions sized so the whole suite takes about
// 4 minutes on an H100 at scale 1 (see docs/benchmarks.md).

int reps(const std::string& name, bool gpu) {
  if (!gpu) return 3;
  if (name == "filter_sum_f64" || name == "filter_sum_i64") return 10;
  if (name == "group_by_100_groups") return 7;
  if (name == "sort_int64" || name.rfind("seed_", 0) == 0) return 3;
  return 5;
}

benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b, int repetitions) {
  return b->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->Repetitions(repetitions)
      ->ReportAggregatesOnly(true);
}

[[maybe_unused]] const bool registered = [] {
  configure(benchmark::RegisterBenchmark("tug_gpu/d2d_copy/gpu", bm_d2d_copy), 10);
  for (auto& q : op_queries())
    for (bool gpu : {true, false})
      configure(benchmark::RegisterBenchmark(("tug_gpu/" + q.name + (gpu ? "/gpu" : "/cpu")).c_str(),
                                             [&q, gpu](benchmark::State& s) { bm_op(s, q, gpu); }),
                reps(q.name, gpu));
  for (auto& q : seed_queries())
    for (bool parquet : {true, false})
      for (bool gpu : {true, false})
        configure(
            benchmark::RegisterBenchmark(
                ("tug_gpu/" + q.name + (parquet ? "_from_parquet" : "_from_memory") + (gpu ? "/gpu" : "/cpu")).c_str(),
                [&q, parquet, gpu](benchmark::State& s) { bm_seed(s, q, parquet, gpu); }),
            reps(q.name, gpu));
  return true;
}();

}  // namespace
