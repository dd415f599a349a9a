// Google Benchmark of the core CPU engine on 10M rows (TUG_BENCH_ROWS overrides): filter+sum,
// group_by sum at low and high cardinality, join, sort, over. `tug_bench --dump DIR` writes the same
// data as raw little-endian arrays so bench/run.py can time DuckDB and Polars on identical data.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "tug/api/lazy_frame.hpp"

using namespace tug;

namespace {

int64_t bench_rows() {
  const char* e = std::getenv("TUG_BENCH_ROWS");
  return e ? std::atoll(e) : 10'000'000;
}

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double unit(uint64_t z) { return static_cast<double>(mix(z) >> 11) * 0x1.0p-53; }

struct bench_data {
  data_frame facts;  // k_low [0,100), k_high [0, rows/10), k2 [0,10), v, x
  data_frame dim;    // key [0, rows/10), w
};

const bench_data& data() {
  static bench_data d = [] {
    int64_t n = bench_rows(), nd = std::max<int64_t>(1, n / 10);
    fixed_width_builder<int64_t> kl(type_id::int64, n), kh(type_id::int64, n), k2(type_id::int64, n);
    fixed_width_builder<double> v(type_id::float64, n), x(type_id::float64, n);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t s = static_cast<uint64_t>(i) * 5;
      kl.set(i, static_cast<int64_t>(mix(s) % 100));
      kh.set(i, static_cast<int64_t>(mix(s + 1) % static_cast<uint64_t>(nd)));
      k2.set(i, static_cast<int64_t>(mix(s + 2) % 10));
      v.set(i, unit(s + 3) * 100);
      x.set(i, unit(s + 4));
    }
    fixed_width_builder<int64_t> key(type_id::int64, nd);
    fixed_width_builder<double> w(type_id::float64, nd);
    for (int64_t i = 0; i < nd; ++i) {
      key.set(i, i);  // every key once
      w.set(i, unit(static_cast<uint64_t>(i) + (1ULL << 40)));
    }
    bench_data b;
    b.facts = data_frame::from_columns(
        {{"k_low", kl.finish()}, {"k_high", kh.finish()}, {"k2", k2.finish()}, {"v", v.finish()}, {"x", x.finish()}});
    b.dim = data_frame::from_columns({{"key", key.finish()}, {"w", w.finish()}});
    return b;
  }();
  return d;
}

void run(benchmark::State& state, const lazy_frame& q) {
  engine_options o;
  o.engine = engine_kind::cpu;
  int64_t rows = 0;
  for (auto _ : state) {
    data_frame r = q.collect(o);
    rows = r.num_rows();
    benchmark::DoNotOptimize(rows);
  }
  state.counters["rows_out"] = static_cast<double>(rows);
  state.SetItemsProcessed(state.iterations() * data().facts.num_rows());
}

void BM_filter_sum(benchmark::State& s) {
  run(s, data().facts.lazy().filter(col("x") > 0.5).select({col("v").sum()}));
}
void BM_groupby_low(benchmark::State& s) {
  run(s, data().facts.lazy().group_by({"k_low"}).agg({col("v").sum()}));
}
void BM_groupby_high(benchmark::State& s) {
  run(s, data().facts.lazy().group_by({"k_high"}).agg({col("v").sum()}));
}
void BM_join(benchmark::State& s) {
  run(s, data().facts.lazy().select({col("k_high"), col("v")}).join(data().dim.lazy(), {col("k_high")}, {col("key")}));
}
void BM_sort(benchmark::State& s) {
  run(s, data().facts.lazy().select({col("k_high"), col("v")}).sort("v"));
}
void BM_over(benchmark::State& s) {
  run(s, data().facts.lazy().select({col("k_low"), col("k2"), col("v")})
             .with_columns({col("v").mean().over({"k_low", "k2"}).alias("m")}));
}

BENCHMARK(BM_filter_sum)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_groupby_low)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_groupby_high)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_join)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_sort)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_over)->Unit(benchmark::kMillisecond)->UseRealTime();

void dump_column(const std::string& dir, const std::string& name, const column& c) {
  std::ofstream f(dir + "/" + name + ".bin", std::ios::binary);
  f.write(reinterpret_cast<const char*>(c.values<int64_t>()), c.size() * 8);
  if (!f) throw std::runtime_error("cannot write " + dir + "/" + name + ".bin");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--dump") == 0) {
    std::string dir = argv[2];
    table f = data().facts.to_table(), d = data().dim.to_table();
    auto names = data().facts.schema().names();
    for (size_t i = 0; i < names.size(); ++i) dump_column(dir, names[i], f[i]);
    dump_column(dir, "key", d[0]);
    dump_column(dir, "w", d[1]);
    std::cout << "wrote " << f.num_rows() << " fact rows and " << d.num_rows() << " dim rows to " << dir << "\n";
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
