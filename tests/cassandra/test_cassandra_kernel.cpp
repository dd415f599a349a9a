// Seed 000 end to end against the real node of test_cassandra_server.cpp (which that file's environment,
// or ctest's fixture, starts): scan_cassandra, the example's user kernel on every partition, sink_cassandra
// in bounded batches (examples/seed000_cassandra_kernel.hpp); every written row checked against the oracle.
// The CPU engine runs the kernel's host version; on a GPU machine the GPU engine runs its CUDA source.
#include <gtest/gtest.h>

#include <atomic>

#include "../seed000_reference.hpp"
#include "node_client.hpp"
#include "tug/memory/device.hpp"

using namespace tug;
namespace cq = tug::io::cassandra;

namespace {

const std::string keyspace = "tug_seed000_test";

cq::client_options client() { return tug::testing::node_client(); }

io::cassandra_scan_options scan_options() {
  io::cassandra_scan_options o;
  o.client = client();
  o.splits = 8;  // several partitions, each a token range of the ring
  return o;
}

cassandra_write_options write_options() {
  cassandra_write_options o;
  o.client = client();
  o.consistency = "ONE";
  o.batch_max_rows = 40;
  o.max_in_flight = 3;
  return o;
}

engine_options engine(bool gpu) {
  engine_options o;
  o.engine = gpu ? engine_kind::gpu : engine_kind::cpu;
  return o;
}

/// Fresh tables with `rows` generated readings.
void load(int64_t rows) {
  cq::session s(client());
  seed000::create_tables(s, keyspace);
  auto r = sink_cassandra(seed000::generate(rows).lazy(), keyspace, "readings", write_options(), engine(false));
  ASSERT_EQ(r.rows_written, rows);
}

int64_t count(const std::string& table) {
  return scan_cassandra(keyspace, table, scan_options()).collect(engine(false)).num_rows();
}

}  // namespace

TEST(CassandraKernel, Seed000ReadKernelWriteBack) {
  const int64_t rows = 3000;
  load(rows);
  for (bool gpu : {false, true}) {
    if (gpu && !gpu_available()) continue;  // the GPU engine runs the kernel's CUDA source where there is a GPU
    SCOPED_TRACE(gpu ? "gpu engine" : "cpu engine");
    {
      cq::session s(client());
      s.query("TRUNCATE " + keyspace + ".dew_points");
    }
    cassandra_write_options w = write_options();
    cassandra_write_result r = seed000::run(keyspace, scan_options(), w, engine(gpu), 2.0);
    // every row written once, in batches of one partition key, never more requests in flight than allowed
    EXPECT_EQ(r.rows_written, rows);
    EXPECT_GT(r.batches, 0);
    EXPECT_LT(r.requests, rows);
    EXPECT_GE(r.max_in_flight_seen, 1);
    EXPECT_LE(r.max_in_flight_seen, w.max_in_flight);
    data_frame got = scan_cassandra(keyspace, "dew_points", scan_options()).collect(engine(false));
    tug::testing::expect_dew_points(got, rows, 2.0, gpu ? 1e-12 : 0.0);
  }
}

TEST(CassandraKernel, Seed000KernelSeesEveryCassandraPartition) {
  const int64_t rows = 500;
  load(rows);
  // the scan's partitions (one per split), each through the kernel once
  std::atomic<int64_t> calls{0}, seen{0};
  user_kernel k = seed000::dew_point_kernel(2.0, "");
  k.host([&](kernel_partition& p) {
    ++calls;
    seen += p.rows();
    seed000::dew_point_host(p);
  });
  auto r = sink_cassandra(scan_cassandra(keyspace, "readings", scan_options()).map_partitions(k), keyspace,
                          "dew_points", write_options(), engine(false));
  EXPECT_EQ(r.rows_written, rows);
  EXPECT_EQ(seen.load(), rows);
  EXPECT_GT(calls.load(), 1);
  data_frame got = scan_cassandra(keyspace, "dew_points", scan_options()).collect(engine(false));
  tug::testing::expect_dew_points(got, rows, 2.0, 0.0);
}

TEST(CassandraKernel, Seed000KernelFailureSaysWhatWasWritten) {
  const int64_t rows = 200;
  load(rows);
  // a kernel that fails on one partition: the query fails naming the kernel and the partition; the sink
  // streams, so partition #0 may have been written (the error says so), never partition #1 or later
  user_kernel k = seed000::dew_point_kernel(2.0, "");
  k.host([](kernel_partition& p) {
    if (p.number() == 1) throw std::runtime_error("sensor bus fault");
    seed000::dew_point_host(p);
  });
  try {
    sink_cassandra(scan_cassandra(keyspace, "readings", scan_options()).map_partitions(k), keyspace, "dew_points",
                   write_options(), engine(false));
    FAIL() << "no error";
  } catch (const compute_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kernel \"dew_point\", partition #1"), std::string::npos) << m;
    EXPECT_NE(m.find("sensor bus fault"), std::string::npos) << m;
    const int64_t written = count("dew_points");
    const int64_t first = scan_cassandra(keyspace, "readings", scan_options()).collect().partitions().at(0).num_rows();
    EXPECT_TRUE(written == 0 || written == first) << written << " rows written, partition #0 has " << first;
    if (written > 0)
      EXPECT_NE(m.find(std::to_string(written) + " rows were written before this error"), std::string::npos) << m;
    else
      EXPECT_EQ(m.find("rows were written"), std::string::npos) << m;
  }
  // a declared output the target table lacks: named before any data moves
  cq::session s(client());
  s.query("TRUNCATE " + keyspace + ".dew_points");
  s.query("ALTER TABLE " + keyspace + ".dew_points DROP fog");
  try {
    seed000::run(keyspace, scan_options(), write_options(), engine(false));
    FAIL() << "no error";
  } catch (const column_not_found_error& e) {
    EXPECT_NE(std::string(e.what()).find("column 'fog' does not exist in " + keyspace + ".dew_points"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(count("dew_points"), 0);
}
