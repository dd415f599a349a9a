// Topology, token-aware routing and replica-aware splits against a real three-node Apache Cassandra ring on
// 127.0.0.1, .2 and .3 (scripts/cassandra.sh ring). ctest starts the ring (fixture cassandra); run
// directly, the first test of the suite starts it and the binary stops it at the end.
#include <algorithm>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <thread>

#include "tug/api/cassandra.hpp"
#include "tug/api/data_frame.hpp"
#include "tug/io/cassandra/token.hpp"
#include "tug/io/cassandra/types.hpp"
#include "tug/io/cassandra_source.hpp"
#include "lazy_server.hpp"

using namespace tug;
namespace cq = tug::io::cassandra;

namespace {

const std::string ring_dir = TUG_CASSANDRA_RING_DIR;
int ring_port = 0;
auto* ring_server = tug::testing::add_lazy_server(ring_dir, "ring " + ring_dir + " auto", "ring-stop " + ring_dir,
                                                  "ring-status " + ring_dir);

std::string node(int i) { return "127.0.0." + std::to_string(i) + ":" + std::to_string(ring_port); }

class CassandraRing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ring_port = ring_server->ensure();
    ASSERT_GT(ring_port, 0) << "could not start the three-node ring (scripts/cassandra.sh ring)";
    // gossip spreads the last node's tokens within seconds: wait until node 1 lists both peers
    for (int i = 0; i < 120; ++i) {
      cq::session s(options());
      if (s.ring().nodes().size() == 3) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    FAIL() << "the ring did not form: node 1 does not list both peers with tokens";
  }

  static cq::client_options options() {
    cq::client_options o;
    o.port = ring_port;
    o.username = "cassandra";
    o.password = "cassandra";
    o.request_timeout_ms = 20000;
    return o;
  }

  static void create(cq::session& s, const std::string& ks, int rf, const std::string& table, const std::string& body) {
    s.query("CREATE KEYSPACE IF NOT EXISTS " + ks + " WITH replication = {'class': 'SimpleStrategy', "
            "'replication_factor': " + std::to_string(rf) + "}");
    s.query("DROP TABLE IF EXISTS " + ks + "." + table);
    s.query("CREATE TABLE " + ks + "." + table + " " + body);
  }
};

std::string i32(int32_t v) {
  cq::byte_writer w;
  w.i32(v);
  return w.out();
}
std::string i64(int64_t v) {
  cq::byte_writer w;
  w.i64(v);
  return w.out();
}

}  // namespace

TEST_F(CassandraRing, TopologyComesFromSystemTables) {
  cq::session s(options());
  const auto& ring = s.ring();
  ASSERT_EQ(ring.nodes().size(), 3u);
  std::set<std::string> hosts;
  for (auto& n : ring.nodes()) {
    hosts.insert(n.host);
    EXPECT_EQ(n.tokens.size(), 16u) << n.host;
    EXPECT_EQ(n.datacenter, "datacenter1");
    EXPECT_EQ(n.rack, "rack1");
    // each node's own view of its tokens (system.local through a session on that node alone)
    auto o = options();
    o.contact_points = {n.host};
    o.discover_nodes = false;
    cq::session one(o);
    EXPECT_EQ(one.hosts(), std::vector<std::string>{n.host});
    auto r = one.query("SELECT tokens FROM system.local");
    auto rows = cq::raw_rows(r.rows, r.host);
    ASSERT_EQ(rows.size(), 1u);
    std::vector<int64_t> own;
    for (auto& t : cq::decode_text_collection(*rows[0][0], r.host)) own.push_back(std::stoll(t));
    std::vector<int64_t> listed = n.tokens;
    std::sort(own.begin(), own.end());
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(own, listed) << n.host;
  }
  EXPECT_EQ(hosts, (std::set<std::string>{node(1), node(2), node(3)}));
  // requests may go to every node discovered
  auto all = s.hosts();
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()), hosts);
  // the ranges cover the ring once, in order
  ASSERT_EQ(ring.ranges().size(), 49u);  // 48 tokens, the wrapping range in two parts
  EXPECT_EQ(ring.ranges().front().tokens.start, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ring.ranges().back().tokens.end, std::numeric_limits<int64_t>::max());
  for (size_t i = 1; i < ring.ranges().size(); ++i)
    EXPECT_EQ(ring.ranges()[i].tokens.start, ring.ranges()[i - 1].tokens.end);
  // neither routing nor discovery: no ring, the contact point only
  auto o = options();
  o.discover_nodes = false;
  o.token_aware = false;
  cq::session bare(o);
  EXPECT_TRUE(bare.ring().empty());
  EXPECT_EQ(bare.hosts(), std::vector<std::string>{node(1)});
}

TEST_F(CassandraRing, WritesGoToTheReplicasTheServerUses) {
  cq::session s(options());
  create(s, "tug_ring2", 2, "comp_t", "(a bigint, b text, c int, v int, PRIMARY KEY ((a, b), c))");
  create(s, "tug_ring2", 2, "one_t", "(k int PRIMARY KEY, v int)");
  auto comp = s.prepare("INSERT INTO tug_ring2.comp_t (a, b, c, v) VALUES (?, ?, ?, ?)");
  auto one = s.prepare("INSERT INTO tug_ring2.one_t (k, v) VALUES (?, ?)");
  ASSERT_EQ(comp->bind.pk_indexes, (std::vector<uint16_t>{0, 1}));
  cq::query_parameters p;
  p.level = cq::consistency::all;
  p.tracing = true;
  struct traced {
    std::string id, coordinator;
    std::vector<std::string> replicas;
  };
  std::vector<traced> traces;
  std::set<std::string> coordinators;
  for (int i = 0; i < 24; ++i) {
    int64_t a = static_cast<int64_t>(i) * 7919 - 50000;
    std::string b = "key" + std::to_string(i * 31);
    cq::byte_writer w;
    std::string av = i64(a);
    w.bytes(av);
    w.bytes(b);
    w.bytes(i32(i));
    w.bytes(i32(i));
    auto r = s.execute(*comp, {4, w.out()}, p);
    auto replicas = s.replicas("tug_ring2", cq::murmur3_token(cq::routing_key({av, b})));
    ASSERT_EQ(replicas.size(), 2u);
    // the coordinator is a replica of the key
    EXPECT_TRUE(r.host == replicas[0] || r.host == replicas[1]) << r.host;
    coordinators.insert(r.host);
    traces.push_back({r.tracing_id, r.host, replicas});
    cq::byte_writer w1;
    std::string kv = i32(i * 1000003);
    w1.bytes(kv);
    w1.bytes(i32(i));
    auto r1 = s.execute(*one, {2, w1.out()}, p);
    auto rep1 = s.replicas("tug_ring2", cq::murmur3_token(kv));
    EXPECT_TRUE(r1.host == rep1[0] || r1.host == rep1[1]) << r1.host;
    traces.push_back({r1.tracing_id, r1.host, rep1});
  }
  EXPECT_EQ(coordinators.size(), 3u);  // the keys spread over the ring
  // the server's own account: the nodes that applied each mutation to a memtable are our replicas
  for (auto& t : traces) {
    ASSERT_FALSE(t.id.empty());
    // every computed replica applied it (a loaded node may also trace memtable writes of its own
    // tables, such as the trace tables, so other nodes may appear too)
    const std::set<std::string> want(t.replicas.begin(), t.replicas.end());
    auto covered = [&](const std::set<std::string>& got) {
      return std::includes(got.begin(), got.end(), want.begin(), want.end());
    };
    std::set<std::string> applied;
    for (int attempt = 0; attempt < 100 && !covered(applied); ++attempt) {
      applied.clear();
      auto ev = s.query("SELECT source, activity FROM system_traces.events WHERE session_id = " + t.id);
      for (auto& row : cq::raw_rows(ev.rows, ev.host))
        if (row[0] && row[1] && row[1]->find("memtable") != std::string_view::npos)
          applied.insert(cq::format_inet(*row[0]) + ":" + std::to_string(ring_port));
      if (!covered(applied)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(covered(applied)) << t.id;
  }
  // without token awareness the requests go round robin: some coordinators are no replica
  auto o = options();
  o.token_aware = false;
  cq::session plain(o);
  auto one2 = plain.prepare("INSERT INTO tug_ring2.one_t (k, v) VALUES (?, ?)");
  int misses = 0;
  for (int i = 0; i < 24; ++i) {
    cq::byte_writer w;
    std::string kv = i32(i);
    w.bytes(kv);
    w.bytes(i32(i));
    auto r = plain.execute(*one2, {2, w.out()});
    auto rep = s.replicas("tug_ring2", cq::murmur3_token(kv));
    misses += r.host != rep[0] && r.host != rep[1];
  }
  EXPECT_GT(misses, 0);
}

TEST_F(CassandraRing, SplitCountExtrapolatesOneNodesSizeEstimatesToTheTable) {
  // each node's system.size_estimates holds only the ranges it owns: the table's bytes come from the
  // coordinator's rows divided by the fraction of the ring they cover (as the Spark connector does), not
  // from that node's share alone
  cq::session s(options());
  create(s, "tug_ring1", 1, "est_t", "(p int, c int, v text, PRIMARY KEY (p, c))");
  const int64_t n = 30000;
  std::vector<int32_t> p(n), c(n);
  std::vector<std::optional<std::string>> v(n);
  uint64_t x = 88172645463325252ull;
  for (int64_t i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)] = static_cast<int32_t>(i % 3000);
    c[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    std::string text;  // 96 pseudo-random hex digits: compression keeps most of their bytes
    for (int k = 0; k < 6; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      char b[17];
      std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x));
      text += b;
    }
    v[static_cast<size_t>(i)] = text;
  }
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"v", make_string_column(v)}});
  cassandra_write_options w;
  w.client = options();
  w.consistency = "ONE";
  ASSERT_EQ(sink_cassandra(df.lazy(), "tug_ring1", "est_t", w).rows_written, n);
  for (int i = 1; i <= 3; ++i)
    for (const char* args : {" nodetool flush tug_ring1 est_t", " nodetool refreshsizeestimates"})
      ASSERT_EQ(std::system(("bash " TUG_SOURCE_DIR "/scripts/cassandra.sh ring-node " + ring_dir + " " +
                             std::to_string(i) + args + " > /dev/null")
                                .c_str()),
                0)
          << "node " << i << args;
  // each node's own rows, read on that node alone
  auto alone = [](int i) {
    auto o = options();
    o.contact_points = {node(i)};
    o.discover_nodes = false;
    o.topology_events = false;
    return o;
  };
  std::vector<std::vector<io::size_estimate>> rows(4);
  double total = 0;  // the table: the three nodes' own bytes together
  for (int i = 1; i <= 3; ++i) {
    cq::session one(alone(i));
    auto r = one.query("SELECT range_start, range_end, mean_partition_size, partitions_count FROM "
                       "system.size_estimates WHERE keyspace_name = 'tug_ring1' AND table_name = 'est_t'");
    auto t = cq::decode_rows(r.rows, {type_id::string, type_id::string, type_id::int64, type_id::int64}, {}, "");
    ASSERT_GT(t.num_rows(), 0) << "node " << i;
    for (int64_t k = 0; k < t.num_rows(); ++k) {
      rows[static_cast<size_t>(i)].push_back({std::string(t[0].string(k)), std::string(t[1].string(k)),
                                              t[2].value<int64_t>(k), t[3].value<int64_t>(k)});
      total += static_cast<double>(t[2].value<int64_t>(k)) * static_cast<double>(t[3].value<int64_t>(k));
    }
  }
  ASSERT_GT(total, 2.0 * 1024 * 1024);
  for (int i = 1; i <= 3; ++i) {
    SCOPED_TRACE("node " + std::to_string(i));
    const double est = io::estimated_table_bytes(rows[static_cast<size_t>(i)], "tug_ring1.est_t");
    EXPECT_NEAR(est, total, 0.3 * total) << "a node's own bytes would be about a third";
    io::cassandra_scan_options o;
    o.client = alone(i);
    o.split_size_mb = 1;
    io::cassandra_source src("tug_ring1", "est_t", o);
    EXPECT_EQ(src.split_count(), static_cast<int>(std::ceil(est / (1024.0 * 1024.0))));
  }
}

TEST_F(CassandraRing, SplitsKnowTheirReplicas) {
  cq::session s(options());
  create(s, "tug_ring1", 1, "scan_t", "(p int, c int, v bigint, PRIMARY KEY (p, c))");
  const int64_t n = 6000;
  std::vector<int32_t> p(n), c(n);
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)] = static_cast<int32_t>(i % 600);
    c[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    v[static_cast<size_t>(i)] = i * 3;
  }
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"v", make_column<int64_t>(type_id::int64, v)}});
  cassandra_write_options w;
  w.client = options();
  w.consistency = "ONE";
  EXPECT_EQ(sink_cassandra(df.lazy(), "tug_ring1", "scan_t", w).rows_written, n);
  for (int want : {1, 5, 40}) {
    io::cassandra_scan_options o;
    o.client = options();
    o.splits = want;
    io::cassandra_source src("tug_ring1", "scan_t", o);
    auto splits = src.splits();
    // at least one split per node (RF 1: each range has one replica, its owner); about `want` in all
    EXPECT_GE(splits.size(), 3u);
    EXPECT_LE(splits.size(), static_cast<size_t>(std::max(want, 3) + 3));
    std::vector<cq::token_range> all;
    std::set<std::string> owners;
    const auto& ring = src.session().ring();
    for (auto& sp : splits) {
      ASSERT_EQ(sp.replicas.size(), 1u);
      owners.insert(sp.replicas[0]);
      for (auto& r : sp.ranges) {
        all.push_back(r);
        // every token of the range belongs to the split's replica: check both ends and the middle
        for (int64_t t : {r.start + 1, r.end, static_cast<int64_t>((static_cast<__int128>(r.start) + r.end) / 2)}) {
          auto& range = ring.ranges()[ring.range_of(t)];
          EXPECT_EQ(s.replicas("tug_ring1", t), sp.replicas) << t;
          EXPECT_EQ(ring.nodes()[range.owner].host, sp.replicas[0]) << t;
        }
      }
    }
    EXPECT_EQ(owners, (std::set<std::string>{node(1), node(2), node(3)}));
    std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.start < b.start; });
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.front().start, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(all.back().end, std::numeric_limits<int64_t>::max());
    for (size_t i = 1; i < all.size(); ++i) EXPECT_EQ(all[i].start, all[i - 1].end);
    // each split read from its replica alone: RF 1 with consistency ONE, the replica answers from its own
    // data, and all rows come back once, each partition key in one tug partition
    auto out = scan_cassandra("tug_ring1", "scan_t", o).collect();
    EXPECT_EQ(out.num_rows(), n) << want;
    std::map<int32_t, size_t> owner;
    int64_t sum = 0;
    for (size_t i = 0; i < out.partitions().size(); ++i) {
      auto& part = out.partitions()[i];
      for (int64_t r = 0; r < part.num_rows(); ++r) {
        auto [it, fresh] = owner.emplace(part[0].value<int32_t>(r), i);
        EXPECT_EQ(it->second, i);
        sum += part[2].value<int64_t>(r);
      }
    }
    EXPECT_EQ(owner.size(), 600u);
    EXPECT_EQ(sum, 3 * n * (n - 1) / 2);
  }
  // joinWithCassandraTable over the ring: each lookup goes to the key's replica; every row comes back
  std::vector<int32_t> keys(700);
  for (int i = 0; i < 700; ++i) keys[static_cast<size_t>(i)] = i;  // 600..699 are not in the table
  cassandra_join_options jo;
  jo.client = options();
  cassandra_join_stats st;
  auto joined = join_cassandra(data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, keys)}}).lazy(),
                               "tug_ring1", "scan_t", {"p"}, jo, {}, &st)
                    .collect();
  EXPECT_EQ(joined.num_rows(), n);
  EXPECT_EQ(st.keys, 700);
  EXPECT_EQ(st.rows_fetched, n);
  // a split's statement goes to the host it names
  io::cassandra_scan_options o;
  o.client = options();
  io::cassandra_source src("tug_ring1", "scan_t", o);
  auto stmt = s.prepare("SELECT p FROM tug_ring1.scan_t WHERE token(p) > ? AND token(p) <= ?");
  for (auto& sp : src.splits()) {
    cq::byte_writer b;
    b.bytes(i64(sp.ranges[0].start));
    b.bytes(i64(sp.ranges[0].end));
    EXPECT_EQ(s.execute(*stmt, {2, b.out()}, {}, sp.replicas).host, sp.replicas[0]);
  }
}

TEST_F(CassandraRing, NodeStoppedMidWriteIsRetriedOrAClearError) {
  cq::session s(options());
  create(s, "tug_ring2", 2, "stop_t", "(p int, c int, v bigint, PRIMARY KEY (p, c))");
  create(s, "tug_ring1", 1, "stop1_t", "(p int, c int, v bigint, PRIMARY KEY (p, c))");
  const int64_t n = 40000;
  std::vector<int32_t> p(n), c(n);
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)] = static_cast<int32_t>(i % 4000);
    c[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    v[static_cast<size_t>(i)] = i;
  }
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"v", make_column<int64_t>(type_id::int64, v)}});
  cassandra_write_options w;
  w.client = options();
  w.client.max_retries = 5;
  w.consistency = "ONE";
  w.max_in_flight = 8;
  w.batch_max_rows = 4;
  w.max_rows_per_second = 10000;  // about four seconds of writes, the node stops in the middle
  auto restart = [&] {
    ASSERT_EQ(std::system((std::string("bash " TUG_SOURCE_DIR "/scripts/cassandra.sh ring-node ") + ring_dir + " 3 start").c_str()), 0);
  };
  cassandra_write_result res;
  std::exception_ptr failure;
  std::thread writer([&] {
    try {
      res = sink_cassandra(df.lazy(), "tug_ring2", "stop_t", w);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::system((std::string("bash " TUG_SOURCE_DIR "/scripts/cassandra.sh ring-node ") + ring_dir + " 3 stop").c_str());
  writer.join();
  if (failure) {
    restart();
    std::rethrow_exception(failure);
  }
  // the cluster pushes the node's DOWN to the session's control connection (on node 1): requests skip it
  // without trying it first (waited for, bounded: gossip decides when)
  auto has_event = [&](const std::string& e) {
    auto ev = s.events();
    return std::find(ev.begin(), ev.end(), e) != ev.end();
  };
  for (int i = 0; i < 240 && s.is_up(node(3)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(s.is_up(node(3))) << "no STATUS_CHANGE DOWN for node 3";
  EXPECT_TRUE(has_event("DOWN " + node(3)));
  EXPECT_TRUE(s.is_up(node(1)) && s.is_up(node(2)));
  // replication factor 2: each key has another replica; requests on the stopped node's connections are
  // sent again elsewhere, nothing is lost
  EXPECT_EQ(res.rows_written, n);
  RecordProperty("retries", static_cast<int>(res.retries));  // tries on another replica (0 when the stop fell between requests)
  auto count = [&](const std::string& table) {
    cq::query_parameters q;
    q.level = cq::consistency::one;
    auto r = s.query("SELECT count(*) FROM " + table, q);
    return cq::decode_rows(r.rows, {type_id::int64}, {}, "")[0].value<int64_t>(0);
  };
  EXPECT_EQ(count("tug_ring2.stop_t"), n);
  // replication factor 1 with the node down: its keys cannot be written; a clear error says how many rows
  // were written and which key failed, within the retries
  w.max_rows_per_second = 0;
  w.client.max_retries = 1;
  w.client.retry_delay_ms = 50;
  auto t0 = std::chrono::steady_clock::now();
  try {
    sink_cassandra(df.lazy(), "tug_ring1", "stop1_t", w);
    ADD_FAILURE() << "no error with a third of the ring down";
  } catch (const io_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("rows, then the write of rows"), std::string::npos) << m;
    EXPECT_NE(m.find("partition key p="), std::string::npos) << m;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  restart();
  // back in the ring: wait until a write at ALL reaches it again
  auto ins = s.prepare("INSERT INTO tug_ring2.stop_t (p, c, v) VALUES (?, ?, ?)");
  bool up = false;
  for (int i = 0; i < 120 && !up; ++i) {
    try {
      cq::query_parameters all;
      all.level = cq::consistency::all;
      for (int k = 0; k < 30; ++k) {
        cq::byte_writer b;
        b.bytes(i32(k));
        b.bytes(i32(-1));
        b.bytes(i64(0));
        s.execute(*ins, {3, b.out()}, all);
      }
      up = true;
    } catch (const io_error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  EXPECT_TRUE(up) << "node 3 did not come back";
  // and its UP once its native port serves again
  for (int i = 0; i < 240 && !s.is_up(node(3)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(s.is_up(node(3))) << "no STATUS_CHANGE UP for node 3";
  EXPECT_TRUE(has_event("UP " + node(3)));
}

TEST_F(CassandraRing, SchemaAgreementSkipsNodesKnownDown) {
  cq::session s(options());
  create(s, "tug_ring2", 2, "agree0_t", "(p int PRIMARY KEY, v int)");
  auto script = [](const std::string& what) {
    const std::string cmd = "bash " TUG_SOURCE_DIR "/scripts/cassandra.sh ring-node " + ring_dir + " 3 " + what;
    return std::system(cmd.c_str());
  };
  ASSERT_EQ(script("stop"), 0);
  // its DOWN reaches the session's control connection (bounded: gossip decides when)
  for (int i = 0; i < 240 && s.is_up(node(3)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(s.is_up(node(3))) << "no STATUS_CHANGE DOWN for node 3";
  // node 3 keeps its old schema version in the peers' tables: a session that knows it is down waits for
  // nodes 1 and 2 only, and the change succeeds
  std::string error;
  try {
    s.query("CREATE TABLE tug_ring2.agree_t (p int PRIMARY KEY, v int)");
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "");
  // a session that cannot know (no events, node 3 never tried): the bounded wait ends in a clear error
  // that names node 3's other version; the change itself was applied
  auto o = options();
  o.topology_events = false;
  o.discover_nodes = false;
  o.schema_agreement_wait_ms = 1500;
  {
    cq::session blind(o);
    try {
      blind.query("CREATE TABLE tug_ring2.agree2_t (p int PRIMARY KEY, v int)");
      ADD_FAILURE() << "no error while node 3 is down with another schema version";
    } catch (const cq::schema_agreement_error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("report 2 schema versions after 1500 ms (schema_agreement_wait_ms)"), std::string::npos) << m;
      EXPECT_NE(m.find(node(3) + " "), std::string::npos) << m;
      EXPECT_NE(m.find("known down: none"), std::string::npos) << m;
      EXPECT_NE(m.find("CREATE TABLE tug_ring2.agree2_t"), std::string::npos) << m;
    }
    cq::query_parameters one;
    one.level = cq::consistency::one;
    EXPECT_NO_THROW(blind.query("SELECT * FROM tug_ring2.agree2_t", one));
  }
  ASSERT_EQ(script("start"), 0);
  // back: its UP, then one schema version again (it pulls the tables made while it was down)
  for (int i = 0; i < 240 && !s.is_up(node(3)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(s.is_up(node(3))) << "no STATUS_CHANGE UP for node 3";
  o.schema_agreement_wait_ms = 60000;
  cq::session again(o);
  EXPECT_NO_THROW(again.query("DROP TABLE IF EXISTS tug_ring2.agree2_t"));
}

TEST_F(CassandraRing, NodeAddedLaterTakesRequests) {
  cq::session s(options());
  ASSERT_EQ(s.ring().nodes().size(), 3u);
  const int reads = s.ring_reads();
  create(s, "tug_ring1", 1, "added_t", "(p int PRIMARY KEY, v int)");
  // node 4 joins with one token, the middle of a range that does not hold the login role's row
  // (system_auth has one replica and a node that joins without bootstrap holds no data)
  const cq::token_ring before = s.ring();
  const int64_t role = cq::murmur3_token("cassandra");
  int64_t token = 0;
  for (auto& r : before.ranges()) {
    if (r.tokens.end - r.tokens.start < 1000 || (role > r.tokens.start && role <= r.tokens.end)) continue;
    token = r.tokens.start / 2 + r.tokens.end / 2;
    break;
  }
  auto script = [](const std::string& what, const std::string& env = "") {
    const std::string cmd = env + "bash " TUG_SOURCE_DIR "/scripts/cassandra.sh ring-node " + ring_dir + " 4 " + what;
    return std::system(cmd.c_str());
  };
  ASSERT_EQ(script("start", "TUG_CASSANDRA_INITIAL_TOKEN=" + std::to_string(token) + " "), 0);
  // whatever happens below, node 4 leaves the ring again (the other tests expect three nodes)
  struct leave {
    std::function<int(const std::string&, const std::string&)> run;
    bool done = false;
    ~leave() {
      if (!done) run("decommission", "");
    }
  } leaves{script};
  // the cluster pushes NEW_NODE / UP; the next request reads the ring again (bounded: gossip decides when)
  auto knows = [&](size_t nodes) {
    for (int i = 0; i < 240; ++i) {
      s.query("SELECT release_version FROM system.local");
      if (s.ring().nodes().size() == nodes) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return false;
  };
  const bool added = knows(4);
  EXPECT_TRUE(added) << "node 4 never reached the session's ring";
  if (added) {
    EXPECT_GT(s.ring_reads(), reads);
    auto hosts = s.hosts();
    EXPECT_NE(std::find(hosts.begin(), hosts.end(), node(4)), hosts.end());
    // node 4 pulls the schema from the others after it joined: wait until it can prepare against the
    // table (bounded). Its system_schema tables may list the table a moment before its schema in memory
    // has it (CI: "keyspace tug_ring1 does not exist" from node 4 right after the table was listed)
    auto o4 = options();
    o4.contact_points = {"127.0.0.4"};
    o4.discover_nodes = false;
    o4.topology_events = false;
    // the session opens inside the loop too: node 4 authenticates the login role at QUORUM from a replica
    // it may not see UP yet (CI: "Bad_credentials: ... Cannot achieve consistency level QUORUM")
    bool has_table = false;
    std::string last;
    for (int i = 0; i < 240 && !has_table; ++i) {
      try {
        cq::session at4(o4);
        at4.prepare("INSERT INTO tug_ring1.added_t (p, v) VALUES (?, ?)");
        has_table = true;
      } catch (const std::exception& e) {
        last = e.what();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    }
    ASSERT_TRUE(has_table) << "node 4 never got the schema: " << last;
    // the keys of node 4's range go to node 4, the others elsewhere (one replica: the owner coordinates)
    auto ins = s.prepare("INSERT INTO tug_ring1.added_t (p, v) VALUES (?, ?)");
    int on_4 = 0;
    for (int32_t k = 0; k < 2000; ++k) {
      cq::byte_writer b;
      b.bytes(i32(k));
      b.bytes(i32(k));
      auto want = s.replicas("tug_ring1", cq::murmur3_token(i32(k)));
      ASSERT_EQ(want.size(), 1u);
      auto r = s.execute(*ins, {2, b.out()});
      EXPECT_EQ(r.host, want[0]) << "key " << k;
      on_4 += want[0] == node(4);
    }
    EXPECT_GT(on_4, 0) << "no key of 2000 in node 4's range";
  }
  // it leaves again (so the ring is as the other tests expect it); the session drops its range
  leaves.done = true;
  ASSERT_EQ(script("decommission"), 0);
  EXPECT_TRUE(knows(3)) << "node 4's departure never reached the session's ring";
}
