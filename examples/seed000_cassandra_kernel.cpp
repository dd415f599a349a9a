// Seed 000 end to end: Cassandra -> a user CUDA kernel on every partition -> Cassandra, in one query
// (examples/seed000_cassandra_kernel.hpp says what it computes). With --load it first creates the keyspace's
// two tables and writes --rows generated readings into `readings` (with sink_cassandra too).
//
//   example_seed000_cassandra_kernel --port 9042 --load --rows 100000 [--engine cpu|gpu|auto] [--keyspace ks]
//       [--host 127.0.0.1] [--user cassandra --password cassandra] [--splits N] [--batch-rows N]
//       [--in-flight N] [--fog-spread DEGREES] [--explain]
//
// A local node for trying it: `scripts/cassandra.sh start /tmp/cass auto; cat /tmp/cass/port`.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "seed000_cassandra_kernel.hpp"

namespace {

void usage(const char* argv0, int code) {
  std::cerr << "usage: " << argv0
            << " [--host H] [--port P] [--user U --password P] [--keyspace KS] [--load] [--rows N]"
               " [--engine cpu|gpu|auto] [--splits N] [--batch-rows N] [--in-flight N] [--fog-spread D] [--explain]\n";
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tug;
  io::cassandra::client_options client;
  client.port = 9042;
  std::string keyspace = "tug_seed000";
  bool load = false, explain = false;
  int64_t rows = 100000;
  int splits = 0;
  double fog_spread = 2.0;
  engine_options engine;
  cassandra_write_options write;
  write.consistency = "ONE";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0], 2);
      return argv[++i];
    };
    if (a == "--host") client.contact_points = {next()};
    else if (a == "--port") client.port = std::atoi(next().c_str());
    else if (a == "--user") client.username = next();
    else if (a == "--password") client.password = next();
    else if (a == "--keyspace") keyspace = next();
    else if (a == "--load") load = true;
    else if (a == "--rows") rows = std::atoll(next().c_str());
    else if (a == "--splits") splits = std::atoi(next().c_str());
    else if (a == "--batch-rows") write.batch_max_rows = std::atoi(next().c_str());
    else if (a == "--in-flight") write.max_in_flight = std::atoi(next().c_str());
    else if (a == "--fog-spread") fog_spread = std::atof(next().c_str());
    else if (a == "--explain") explain = true;
    else if (a == "--engine") {
      std::string e = next();
      if (e == "cpu") engine.engine = engine_kind::cpu;
      else if (e == "gpu") engine.engine = engine_kind::gpu;
      else if (e == "auto") engine.engine = engine_kind::automatic;
      else usage(argv[0], 2);
    } else usage(argv[0], a == "--help" ? 0 : 2);
  }
  write.client = client;
  io::cassandra_scan_options scan;
  scan.client = client;
  scan.splits = splits;
  try {
    if (load) {
      io::cassandra::session s(client);
      seed000::create_tables(s, keyspace);
      auto r = sink_cassandra(seed000::generate(rows).lazy(), keyspace, "readings", write, engine);
      std::cout << "loaded " << r.rows_written << " readings into " << keyspace << ".readings\n";
    }
    if (explain)
      std::cout << seed000::pipeline(scan_cassandra(keyspace, "readings", scan), fog_spread).explain(engine) << "\n";
    auto t0 = std::chrono::steady_clock::now();
    cassandra_write_result r = seed000::run(keyspace, scan, write, engine, fog_spread);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "dew_point over " << keyspace << ".readings -> " << keyspace << ".dew_points: " << r.rows_written
              << " rows in " << s << " s; " << r.requests << " requests (" << r.batches << " batches of at most "
              << write.batch_max_rows << " rows), at most " << r.max_in_flight_seen << " in flight, " << r.retries
              << " retries\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
