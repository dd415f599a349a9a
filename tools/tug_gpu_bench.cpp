// GPU operator benchmarks with the data already in device memory: each query runs through the lazy
// API on the GPU engine and on the CPU engine of the same machine (all cores), median of --reps runs.
// Bandwidth is bytes of input read over time, also as a fraction of the measured device-to-device
// copy bandwidth (bytes read + written). Prints a Markdown table; --json writes the figures.
//   tug_gpu_bench [--rows N] [--reps R] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "tug/api/data_frame.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/thread_pool.hpp"

#ifdef TUG_WITH_CUDA
#include <cuda_runtime.h>
#endif

using namespace tug;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double time_it(int reps, const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

#ifdef TUG_WITH_CUDA
/// Device-to-device copy bandwidth in GB/s (bytes read + written), median of `reps`, CUDA events.
double copy_bandwidth(int64_t bytes, int reps) {
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return 0;
  cudaMemset(a, 1, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> t;
  for (int i = 0; i <= reps; ++i) {
    cudaEventRecord(e0);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i > 0) t.push_back(ms / 1e3);
  }
  cudaFree(a);
  cudaFree(b);
  return 2.0 * static_cast<double>(bytes) / median(t) / 1e9;
}
#endif

/// Deterministic columns: k100 (100 groups), kmany (rows/10 groups), x (int64), v (float64).
data_frame make_data(int64_t n, int64_t parts) {
  std::vector<table> partitions;
  int64_t per = (n + parts - 1) / parts;
  std::vector<table> out(static_cast<size_t>(parts));
  global_thread_pool(0).parallel_for(parts, [&](int64_t p) {
    int64_t lo = p * per, hi = std::min(n, lo + per), m = std::max<int64_t>(0, hi - lo);
    fixed_width_builder<int64_t> k100(type_id::int64, m), kmany(type_id::int64, m), x(type_id::int64, m);
    fixed_width_builder<double> v(type_id::float64, m);
    for (int64_t i = 0; i < m; ++i) {
      uint64_t h = static_cast<uint64_t>(lo + i) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 31;
      h *= 0xBF58476D1CE4E5B9ull;
      h ^= h >> 29;
      k100.set(i, static_cast<int64_t>(h % 100));
      kmany.set(i, static_cast<int64_t>((h >> 8) % static_cast<uint64_t>(std::max<int64_t>(1, n / 10))));
      x.set(i, static_cast<int64_t>((h >> 20) % 1000));
      v.set(i, static_cast<double>(h >> 40) / 1e6);
    }
    out[static_cast<size_t>(p)] = table({k100.finish(), kmany.finish(), x.finish(), v.finish()});
  });
  schema s(std::vector<field>{
      {"k100", type_id::int64}, {"kmany", type_id::int64}, {"x", type_id::int64}, {"v", type_id::float64}});
  return data_frame(s, std::move(out));
}

struct result {
  std::string name;
  double bytes = 0;
  double gpu_s = 0, cpu_s = 0;
  std::string where;  // fallbacks seen on the GPU run
};

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 200'000'000;
  int reps = 5;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rows" && i + 1 < argc)
      rows = std::stoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::stoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else {
      std::cerr << "usage: tug_gpu_bench [--rows N] [--reps R] [--json FILE]\n";
      return 2;
    }
  }
  if (!gpu_available()) {
    std::cerr << "tug_gpu_bench: no CUDA device is visible (or tug was built without CUDA)\n";
    return 1;
  }
  device_info dev = current_device_info();
  double copy_gbs = 0;
#ifdef TUG_WITH_CUDA
  copy_gbs = copy_bandwidth(int64_t(4) << 30, 10);
#endif
  std::cerr << "device " << dev.name << ", D2D copy " << copy_gbs << " GB/s; generating " << rows << " rows\n";
  data_frame host = make_data(rows, 64);
  // the same partitions, resident on the device
  auto budget = std::make_shared<memory_budget>(0, "device");
  auto dmr = make_device_resource(budget);
  std::vector<table> dparts;
  for (auto& p : host.partitions())
    dparts.push_back(to_device(p, dmr.get()));
  data_frame dev_df(host.schema(), std::move(dparts));

  engine_options gpu;
  gpu.engine = engine_kind::gpu;
  gpu.fallback = fallback_mode::silent;
  gpu.target_partition_rows = int64_t(1) << 26;
  engine_options cpu;
  cpu.engine = engine_kind::cpu;

  struct query {
    std::string name;
    double bytes_per_row;
    std::function<lazy_frame(const lazy_frame&)> q;
  };
  std::vector<query> queries = {
      {"filter x<500, sum v", 16,
       [](const lazy_frame& f) { return f.filter(col("x") < 500).select({col("v").sum()}); }},
      {"group_by 100 keys, sum v", 16, [](const lazy_frame& f) { return f.group_by({"k100"}).agg({col("v").sum()}); }},
      {"group_by rows/10 keys, sum v", 16,
       [](const lazy_frame& f) { return f.group_by({"kmany"}).agg({col("v").sum()}); }},
      {"sort int64", 8, [](const lazy_frame& f) { return f.select({col("kmany")}).sort({"kmany"}); }},
      {"over: mean v by (k100, x%7)", 24,
       [](const lazy_frame& f) {
         return f.select({(col("v") - col("v").mean().over({col("k100"), col("x") % 7})).alias("d")});
       }},
      {"group_by rows/10 + join back, sum", 16,
       [](const lazy_frame& f) {
         lazy_frame dim = f.group_by({"kmany"}).agg({col("v").max().alias("w")});
         return f.select({col("kmany"), col("v")}).join(dim, {"kmany"}).select({col("w").sum()});
       }},
  };
  std::vector<result> results;
  for (auto& q : queries) {
    result r;
    r.name = q.name;
    r.bytes = q.bytes_per_row * static_cast<double>(rows);
    lazy_frame g = q.q(dev_df.lazy()), c = q.q(host.lazy());
    query_result pr = g.profile(gpu);
    for (auto& f : pr.fallbacks)
      r.where += (r.where.empty() ? "" : "; ") + f;
    r.gpu_s = time_it(reps, [&] { g.collect(gpu); });
    r.cpu_s = time_it(std::max(1, reps / 2), [&] { c.collect(cpu); });
    std::cerr << q.name << ": gpu " << r.gpu_s << " s, cpu " << r.cpu_s << " s\n";
    results.push_back(r);
  }
  std::printf("\n%s, %lld rows, D2D copy %.0f GB/s, median of %d\n\n", dev.name.c_str(), static_cast<long long>(rows),
              copy_gbs, reps);
  std::printf(
      "| query | GPU s | CPU s (all cores) | CPU/GPU | GPU GB/s | of copy BW | GPU fallbacks "
      "|\n|---|---|---|---|---|---|---|\n");
  for (auto& r : results) {
    double gbs = r.bytes / r.gpu_s / 1e9;
    std::printf("| %s | %.4f | %.4f | %.1fx | %.0f | %.0f%% | %s |\n", r.name.c_str(), r.gpu_s, r.cpu_s,
                r.cpu_s / r.gpu_s, gbs, copy_gbs > 0 ? 100 * gbs / copy_gbs : 0,
                r.where.empty() ? "none" : r.where.c_str());
  }
  if (!json.empty()) {
    std::ofstream o(json);
    o << "{\"device\": \"" << dev.name << "\", \"rows\": " << rows << ", \"copy_gbs\": " << copy_gbs
      << ", \"reps\": " << reps << ", \"queries\": [";
    for (size_t i = 0; i < results.size(); ++i)
      o << (i ? "," : "") << "{\"name\": \"" << results[i].name << "\", \"gpu_s\": " << results[i].gpu_s
        << ", \"cpu_s\": " << results[i].cpu_s << ", \"bytes\": " << results[i].bytes << "}";
    o << "]}\n";
  }
  return 0;
}
