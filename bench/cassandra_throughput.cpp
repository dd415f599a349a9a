// Google Benchmark of scan_cassandra and sink_cassandra throughput against a running Cassandra node (issue
// 21, docs/cassandra.md). bench/cassandra_throughput.py starts the node, creates the tables, runs these and
// the DataStax Python driver's execute_concurrent on the same data, and charts rows/s. Environment:
// TUG_BENCH_CASSANDRA_PORT (the node's native port on 127.0.0.1; the benchmarks skip without it),
// TUG_BENCH_CASSANDRA_ROWS (rows of the table, default 200000), TUG_BENCH_CASSANDRA_FETCH (page size, 5000).
//   BM_cassandra_write/W/B   sink_cassandra of the rows into tug_bench.w_tug, W requests in flight, B: 1 unlogged
//                            batches per partition key (the default), 0 one row per request
//   BM_cassandra_scan/R/S    scan_cassandra of tug_bench.w_tug (written by the above; 64 splits), R splits read
//                            at once; S 1: the session (connections, login, topology, table schema) made in
//                            each timed scan; S 0: made once before the timed scans, as the Python side's
//                            Cluster.connect and prepare are (the statement is prepared in the first scan)
// Rows: k = i % 10007 (partition key), c = i / 10007, v = i * 0.5, s = "s" + (i % 1000); the Python side makes
// the same rows.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "tug/api/cassandra.hpp"

using namespace tug;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

io::cassandra::client_options client() {
  io::cassandra::client_options o;
  o.port = env_int("TUG_BENCH_CASSANDRA_PORT", 0);
  o.username = "cassandra";
  o.password = "cassandra";
  o.request_timeout_ms = 30000;
  return o;
}

lazy_frame bench_rows(int64_t n) {
  fixed_width_builder<int32_t> k(type_id::int32, n), c(type_id::int32, n);
  fixed_width_builder<double> v(type_id::float64, n);
  std::vector<std::optional<std::string>> s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    k.set(i, static_cast<int32_t>(i % 10007));
    c.set(i, static_cast<int32_t>(i / 10007));
    v.set(i, static_cast<double>(i) * 0.5);
    s[static_cast<size_t>(i)] = "s" + std::to_string(i % 1000);
  }
  return data_frame::from_columns({{"k", k.finish()}, {"c", c.finish()}, {"v", v.finish()}, {"s", make_string_column(s)}})
      .lazy();
}

void BM_cassandra_write(benchmark::State& state) {
  if (client().port <= 0) return state.SkipWithError("TUG_BENCH_CASSANDRA_PORT is not set");
  const int64_t n = env_int("TUG_BENCH_CASSANDRA_ROWS", 200000);
  const data_frame rows = bench_rows(n).collect();
  cassandra_write_options o;
  o.client = client();
  o.consistency = "ONE";
  o.max_in_flight = static_cast<int>(state.range(0));
  if (state.range(1) == 0) o.batch_max_rows = 1;
  int64_t written = 0;
  for (auto _ : state) written = sink_cassandra(rows.lazy(), "tug_bench", "w_tug", o).rows_written;
  if (written != n) return state.SkipWithError("rows written differ from the rows");
  state.counters["rows"] = static_cast<double>(n);
}

void BM_cassandra_scan(benchmark::State& state) {
  if (client().port <= 0) return state.SkipWithError("TUG_BENCH_CASSANDRA_PORT is not set");
  const int64_t n = env_int("TUG_BENCH_CASSANDRA_ROWS", 200000);
  io::cassandra_scan_options o;
  o.client = client();
  o.splits = 64;
  o.reads_in_flight = static_cast<int>(state.range(0));
  o.fetch_size = env_int("TUG_BENCH_CASSANDRA_FETCH", 5000);
  int64_t read = 0;
  if (state.range(1) == 1) {
    for (auto _ : state) read = scan_cassandra("tug_bench", "w_tug", o).collect().num_rows();
  } else {
    const lazy_frame scan = scan_cassandra("tug_bench", "w_tug", o);  // connects, reads the schema
    for (auto _ : state) read = scan.collect().num_rows();
  }
  if (read != n) return state.SkipWithError("rows read differ from the table's");
  state.counters["rows"] = static_cast<double>(n);
}

}  // namespace

BENCHMARK(BM_cassandra_write)->ArgsProduct({{5, 64}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_cassandra_scan)->ArgsProduct({{1, 8}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
