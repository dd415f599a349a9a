// Google Benchmark of a user kernel's per-partition cost (issue 22, docs/user-kernels.md): an empty kernel on
// each of 1024 partitions against the same partitions without a kernel. Arguments: rows per partition.
// bench/user_kernel_overhead.py runs these and the Python forms and charts the difference per partition.
//   BM_partitions_no_kernel/R/E      1024 partitions of R rows collected as they are (E: 0 cpu, 1 gpu)
//   BM_partitions_empty_host/R       the same with an empty host functor (CPU engine)
//   BM_partitions_empty_source/R     the same with an empty CUDA source kernel (GPU engine; skipped without)
#include <benchmark/benchmark.h>

#include "tug/api/lazy_frame.hpp"
#include "tug/memory/device.hpp"

using namespace tug;

namespace {

constexpr int64_t k_partitions = 1024;

lazy_frame partitions_of(int64_t rows_per) {
  const int64_t n = k_partitions * rows_per;
  fixed_width_builder<int64_t> x(type_id::int64, n);
  for (int64_t i = 0; i < n; ++i)
    x.set(i, i);
  return data_frame::from_columns({{"x", x.finish()}}).lazy();
}

void run(benchmark::State& state, const lazy_frame& q, engine_kind e, int64_t rows_per) {
  engine_options o;
  o.engine = e;
  o.target_partition_rows = rows_per;
  int64_t rows = 0;
  for (auto _ : state) {
    rows = q.collect(o).num_rows();
    benchmark::DoNotOptimize(rows);
  }
  if (rows != k_partitions * rows_per) state.SkipWithError("wrong row count");
  state.counters["partitions"] = static_cast<double>(k_partitions);
}

void BM_partitions_no_kernel(benchmark::State& state) {
  const bool gpu = state.range(1) == 1;
  if (gpu && !gpu_available()) return state.SkipWithError("no CUDA device");
  run(state, partitions_of(state.range(0)), gpu ? engine_kind::gpu : engine_kind::cpu,
      state.range(0));
}

void BM_partitions_empty_host(benchmark::State& state) {
  user_kernel k = user_kernel("empty").inputs({"x"}).keep({"x"}).host([](kernel_partition&) {});
  run(state, partitions_of(state.range(0)).map_partitions(k), engine_kind::cpu, state.range(0));
}

void BM_partitions_empty_source(benchmark::State& state) {
  if (!gpu_available()) return state.SkipWithError("no CUDA device");
  const char* src = R"(#include <tug/kernel.cuh>
extern "C" __global__ void empty(long long rows, tug::in_column<long long> x) {})";
  user_kernel k = user_kernel("empty").inputs({"x"}).keep({"x"}).source({src, "empty"});
  run(state, partitions_of(state.range(0)).map_partitions(k), engine_kind::gpu, state.range(0));
}

}  // namespace

BENCHMARK(BM_partitions_no_kernel)->ArgsProduct({{1, 1024}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_partitions_empty_host)->Arg(1)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_partitions_empty_source)->Arg(1)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
