// The Cassandra client, scan_cassandra and sink_cassandra against a real Apache Cassandra node
// (scripts/cassandra.sh). ctest starts one node for all of these tests (the cassandra.start fixture);
// run directly, the binary starts one itself and stops it at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "tug/api/cassandra.hpp"
#include "tug/api/data_frame.hpp"
#include "tug/api/io.hpp"
#include "tug/core/scalar.hpp"
#include "tug/io/cassandra/token.hpp"
#include "tug/plan/logical.hpp"

using namespace tug;
namespace cq = tug::io::cassandra;

namespace {

const std::string server_dir = TUG_CASSANDRA_DIR;
int server_port = 0;

bool server_running() { return std::system(("bash " TUG_SOURCE_DIR "/scripts/cassandra.sh status " + server_dir).c_str()) == 0; }

class cassandra_environment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!server_running()) {
      int rc = std::system(("bash " TUG_SOURCE_DIR "/scripts/cassandra.sh start " + server_dir + " auto").c_str());
      ASSERT_EQ(rc, 0) << "could not start Cassandra (scripts/cassandra.sh; Java 17 and Maven needed)";
      _started = true;
    }
    std::ifstream f(server_dir + "/port");
    f >> server_port;
    ASSERT_GT(server_port, 0);
  }
  void TearDown() override {
    if (_started) std::system(("bash " TUG_SOURCE_DIR "/scripts/cassandra.sh stop " + server_dir).c_str());
  }

 private:
  bool _started = false;
};
const auto* env = ::testing::AddGlobalTestEnvironment(new cassandra_environment);

cq::client_options client() {
  cq::client_options o;
  o.port = server_port;
  o.username = "cassandra";
  o.password = "cassandra";
  o.connect_timeout_ms = 5000;
  o.request_timeout_ms = 20000;
  return o;
}

io::cassandra_scan_options scan_options() {
  io::cassandra_scan_options o;
  o.client = client();
  return o;
}

cassandra_write_options write_options() {
  cassandra_write_options o;
  o.client = client();
  o.consistency = "ONE";
  return o;
}

/// A fresh table in keyspace tug_test (each test uses its own table name).
void create_table(cq::session& s, const std::string& name, const std::string& body) {
  s.query("CREATE KEYSPACE IF NOT EXISTS tug_test WITH replication = {'class': 'SimpleStrategy', "
          "'replication_factor': 1}");
  s.query("DROP TABLE IF EXISTS tug_test." + name);
  s.query("CREATE TABLE tug_test." + name + " " + body);
}

int64_t count_rows(cq::session& s, const std::string& table) {
  auto r = s.query("SELECT count(*) FROM tug_test." + table);
  auto t = cq::decode_rows(r.rows, {type_id::int64}, {}, "");
  return t[0].value<int64_t>(0);
}

}  // namespace

TEST(CassandraServer, WrongCredentialsAreAClearError) {
  auto o = client();
  o.password = "wrong";
  auto t0 = std::chrono::steady_clock::now();
  try {
    cq::session s(o);
    FAIL();
  } catch (const cq::authentication_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("127.0.0.1:" + std::to_string(server_port)), std::string::npos) << m;
    EXPECT_NE(m.find("Bad_credentials"), std::string::npos) << m;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  o.username.clear();
  EXPECT_THROW(cq::session{o}, cq::authentication_error);
}

TEST(CassandraServer, UnknownKeyspaceAndTableAreNamed) {
  try {
    scan_cassandra("no_such_keyspace", "t", scan_options());
    FAIL();
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("keyspace 'no_such_keyspace' does not exist"), std::string::npos) << e.what();
  }
  cq::session s(client());
  create_table(s, "exists_t", "(k int PRIMARY KEY)");
  try {
    scan_cassandra("tug_test", "no_such_table", scan_options());
    FAIL();
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("table 'tug_test.no_such_table' does not exist"), std::string::npos) << e.what();
  }
  // a statement the server rejects: a typed error naming the host and the statement
  try {
    s.query("SELEC nothing");
    FAIL();
  } catch (const cq::query_error& e) {
    EXPECT_EQ(e.code(), cq::error_code::syntax_error);
    EXPECT_NE(std::string(e.what()).find("SELEC nothing"), std::string::npos);
  }
}

TEST(CassandraServer, DecodesEveryTypeFromCqlLiterals) {
  cq::session s(client());
  create_table(s, "types_t",
               "(k int PRIMARY KEY, a ascii, bi bigint, bl blob, bo boolean, de decimal, do double, fl float, "
               "ip inet, si smallint, te text, tm time, ts timestamp, tu timeuuid, ti tinyint, uu uuid, vc varchar, "
               "vi varint, da date)");
  s.query("INSERT INTO tug_test.types_t (k, a, bi, bl, bo, de, do, fl, ip, si, te, tm, ts, tu, ti, uu, vc, vi, da) "
          "VALUES (1, 'abc', -9000000000, 0x00ff10, true, -123.4500, 2.5, 1.25, '10.1.2.3', -300, 'héllo', "
          "'01:02:03.000000004', '2024-02-29 12:00:00.123+0000', 50554d6e-29bb-11e5-b345-feff819cdc9f, -7, "
          "123e4567-e89b-12d3-a456-426614174000, 'v', 12345678901, '2024-02-29')");
  s.query("INSERT INTO tug_test.types_t (k) VALUES (2)");
  auto df = scan_cassandra("tug_test", "types_t", scan_options()).sort("k").collect();
  ASSERT_EQ(df.num_rows(), 2);
  auto t = df.to_table();
  auto at = [&](const std::string& c) { return df.schema().index_of(c); };
  EXPECT_EQ(t[at("a")].string(0), "abc");
  EXPECT_EQ(t[at("bi")].value<int64_t>(0), -9000000000);
  EXPECT_EQ(t[at("bl")].string(0), "0x00ff10");
  EXPECT_TRUE(t[at("bo")].value<bool>(0));
  EXPECT_EQ(df.schema().type_of("de"), decimal(38, 10));
  EXPECT_TRUE(t[at("de")].value<__int128>(0) == static_cast<__int128>(-1234500000000));
  EXPECT_EQ(t[at("do")].value<double>(0), 2.5);
  EXPECT_EQ(t[at("fl")].value<float>(0), 1.25f);
  EXPECT_EQ(t[at("ip")].string(0), "10.1.2.3");
  EXPECT_EQ(t[at("si")].value<int16_t>(0), -300);
  EXPECT_EQ(t[at("te")].string(0), "héllo");
  EXPECT_EQ(t[at("tm")].value<int64_t>(0), 3723000000004LL);
  EXPECT_EQ(t[at("ts")].value<int64_t>(0), 1709208000123LL);
  EXPECT_EQ(t[at("tu")].string(0), "50554d6e-29bb-11e5-b345-feff819cdc9f");
  EXPECT_EQ(t[at("ti")].value<int8_t>(0), -7);
  EXPECT_EQ(t[at("uu")].string(0), "123e4567-e89b-12d3-a456-426614174000");
  EXPECT_EQ(t[at("vc")].string(0), "v");
  EXPECT_EQ(t[at("vi")].value<int64_t>(0), 12345678901LL);
  EXPECT_EQ(t[at("da")].value<int32_t>(0), 19782);  // 2024-02-29
  // the second row: every column but the key is null
  for (size_t c = 0; c < t.num_columns(); ++c)
    if (df.schema()[c].name != "k") EXPECT_TRUE(t[c].is_null(1)) << df.schema()[c].name;
}

TEST(CassandraServer, EveryTypeRoundTripsThroughSinkAndScan) {
  cq::session s(client());
  const std::string cols =
      "(k int PRIMARY KEY, a ascii, bi bigint, bl blob, bo boolean, de decimal, do double, fl float, ip inet, si "
      "smallint, te text, tm time, ts timestamp, tu timeuuid, ti tinyint, uu uuid, vi varint, da date)";
  create_table(s, "rt_src", cols);
  create_table(s, "rt_dst", cols);
  // 33 rows of varied values and nulls, written with CQL literals
  std::mt19937_64 rng(3);
  for (int k = 0; k < 33; ++k) {
    if (k % 11 == 5) {
      s.query("INSERT INTO tug_test.rt_src (k) VALUES (" + std::to_string(k) + ")");
      continue;
    }
    int64_t v = static_cast<int64_t>(rng() >> 20) - (int64_t(1) << 42);
    char uu[64];
    std::snprintf(uu, sizeof uu, "%08x-%04x-4%03x-a%03x-%012llx", unsigned(rng()), unsigned(rng() & 0xffff),
                  unsigned(rng() & 0xfff), unsigned(rng() & 0xfff), static_cast<unsigned long long>(rng() & 0xffffffffffffULL));
    std::string q = "INSERT INTO tug_test.rt_src (k, a, bi, bl, bo, de, do, fl, ip, si, te, tm, ts, tu, ti, uu, vi, da) VALUES (" +
                    std::to_string(k) + ", 'a" + std::to_string(k) + "', " + std::to_string(v) + ", 0x" +
                    std::to_string(1000 + k) + ", " + (k % 2 ? "true" : "false") + ", " + std::to_string(v % 100000) + "." +
                    std::to_string(k) + ", " + std::to_string(k) + ".5, -" + std::to_string(k) + ".25, '192.168.0." +
                    std::to_string(k) + "', " + std::to_string(k * 100 - 1000) + ", 'tëxt " + std::to_string(k) + "', " +
                    std::to_string(k * 1000000007LL) + ", " + std::to_string(v) + ", now(), " + std::to_string(k - 16) +
                    ", " + uu + ", " + std::to_string(v * 1000) + ", " + std::to_string(2147483648LL + k * 100 - 1600) + ")";
    s.query(q);
  }
  auto src = scan_cassandra("tug_test", "rt_src", scan_options());
  auto w = sink_cassandra(src, "tug_test", "rt_dst", write_options());
  EXPECT_EQ(w.rows_written, 33);
  auto a = scan_cassandra("tug_test", "rt_src", scan_options()).sort("k").collect().to_table();
  auto b = scan_cassandra("tug_test", "rt_dst", scan_options()).sort("k").collect().to_table();
  ASSERT_EQ(a.num_rows(), 33);
  ASSERT_EQ(b.num_rows(), 33);
  ASSERT_EQ(a.num_columns(), b.num_columns());
  for (size_t c = 0; c < a.num_columns(); ++c)
    for (int64_t r = 0; r < 33; ++r)
      EXPECT_EQ(get_scalar(a[c], r), get_scalar(b[c], r)) << "column " << c << " row " << r;
}

TEST(CassandraServer, TokensMatchTheServer) {
  cq::session s(client());
  create_table(s, "tok_t", "(a bigint, b text, c int, PRIMARY KEY ((a, b), c))");
  create_table(s, "tok1_t", "(k text PRIMARY KEY)");
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300; ++i) {
    std::string text(static_cast<size_t>(rng() % 40), 'x');
    for (auto& ch : text) ch = static_cast<char>('a' + rng() % 26);
    s.query("INSERT INTO tug_test.tok_t (a, b, c) VALUES (" + std::to_string(static_cast<int64_t>(rng())) + ", '" + text +
            "', 1)");
    if (!text.empty()) s.query("INSERT INTO tug_test.tok1_t (k) VALUES ('" + text + "é')");
  }
  auto r = s.query("SELECT a, b, token(a, b) FROM tug_test.tok_t");
  auto t = cq::decode_rows(r.rows, {type_id::int64, type_id::string, type_id::int64}, {}, "");
  ASSERT_GT(t.num_rows(), 250);
  for (int64_t i = 0; i < t.num_rows(); ++i) {
    cq::byte_writer w;
    w.i64(t[0].value<int64_t>(i));
    std::string a = w.out();
    EXPECT_EQ(cq::murmur3_token(cq::routing_key({a, t[1].string(i)})), t[2].value<int64_t>(i)) << i;
  }
  auto r1 = s.query("SELECT k, token(k) FROM tug_test.tok1_t");
  auto t1 = cq::decode_rows(r1.rows, {type_id::string, type_id::int64}, {}, "");
  ASSERT_GT(t1.num_rows(), 250);
  for (int64_t i = 0; i < t1.num_rows(); ++i) EXPECT_EQ(cq::murmur3_token(t1[0].string(i)), t1[1].value<int64_t>(i));
}

TEST(CassandraServer, ScanByTokenRangesReadsEveryRowOnce) {
  cq::session s(client());
  create_table(s, "scan_t", "(p int, q text, c int, v double, PRIMARY KEY ((p, q), c))");
  const int partitions = 200, per = 50;  // 10,000 rows
  auto stmt = s.prepare("INSERT INTO tug_test.scan_t (p, q, c, v) VALUES (?, ?, ?, ?)");
  std::vector<cq::pending_request> reqs;
  for (int p = 0; p < partitions; ++p)
    for (int c = 0; c < per; ++c) {
      cq::byte_writer w;
      w.i32(4);
      w.i32(p);
      w.bytes("q" + std::to_string(p % 7));
      w.i32(4);
      w.i32(c);
      w.i32(8);
      double v = p * 1000 + c;
      int64_t bits;
      std::memcpy(&bits, &v, 8);
      w.i64(bits);
      reqs.push_back(s.execute_async(stmt, {4, w.out()}));
      if (reqs.size() >= 256) {
        for (auto& q : reqs) q.get();
        reqs.clear();
      }
    }
  for (auto& q : reqs) q.get();
  for (int splits : {1, 7, 64}) {
    auto o = scan_options();
    o.splits = splits;
    o.fetch_size = 333;  // several pages per split
    o.reads_in_flight = 4;
    auto df = scan_cassandra("tug_test", "scan_t", o).collect();
    EXPECT_EQ(df.num_rows(), partitions * per) << splits;
    // every Cassandra partition lies whole in one tug partition (spanBy without a shuffle)
    std::map<int32_t, size_t> owner;
    double sum = 0;
    for (size_t i = 0; i < df.partitions().size(); ++i) {
      auto& part = df.partitions()[i];
      size_t pi = df.schema().index_of("p"), vi = df.schema().index_of("v");
      for (int64_t r = 0; r < part.num_rows(); ++r) {
        auto [it, fresh] = owner.emplace(part[pi].value<int32_t>(r), i);
        EXPECT_EQ(it->second, i);
        sum += part[vi].value<double>(r);
      }
    }
    EXPECT_EQ(owner.size(), static_cast<size_t>(partitions));
    double expected = 0;
    for (int p = 0; p < partitions; ++p)
      for (int c = 0; c < per; ++c) expected += p * 1000 + c;
    EXPECT_EQ(sum, expected);
    EXPECT_LE(df.partitions().size(), static_cast<size_t>(splits));
  }
  // a count reads no column values
  auto n = scan_cassandra("tug_test", "scan_t", scan_options()).select({col("p").count().alias("n")}).collect();
  EXPECT_EQ(n.to_table()[0].value<int64_t>(0), partitions * per);
  // a limit reads the first rows in token order
  auto h = scan_cassandra("tug_test", "scan_t", scan_options()).head(17).collect();
  EXPECT_EQ(h.num_rows(), 17);
}

TEST(CassandraServer, PushesKeyPredicatesIntoCql) {
  cq::session s(client());
  create_table(s, "push_t", "(p int, q text, c1 int, c2 int, v int, PRIMARY KEY ((p, q), c1, c2))");
  for (int p = 0; p < 4; ++p)
    for (int c1 = 0; c1 < 5; ++c1)
      for (int c2 = 0; c2 < 5; ++c2)
        s.query("INSERT INTO tug_test.push_t (p, q, c1, c2, v) VALUES (" + std::to_string(p) + ", 'x', " +
                std::to_string(c1) + ", " + std::to_string(c2) + ", " + std::to_string(p * 100 + c1 * 10 + c2) + ")");
  io::cassandra_source src("tug_test", "push_t", scan_options());
  // the whole partition key with =, a clustering prefix with a range on its last column
  auto plan = src.plan_read({"v"}, {col("p") == 2 & col("q") == lit("x") & col("c1") == 3 & col("c2") >= 2 & col("v") > 0});
  EXPECT_EQ(plan.cql, "SELECT \"v\" FROM \"tug_test\".\"push_t\" WHERE \"p\" = ? AND \"q\" = ? AND \"c1\" = ? AND \"c2\" >= ?");
  EXPECT_FALSE(plan.token_ranges);
  // without the whole partition key: token ranges, the clustering prefix with ALLOW FILTERING
  plan = src.plan_read({"v"}, {col("c1") < 2, col("c2") == 1});
  EXPECT_EQ(plan.cql,
            "SELECT \"v\" FROM \"tug_test\".\"push_t\" WHERE \"c1\" < ? AND token(\"p\", \"q\") > ? AND token(\"p\", \"q\") "
            "<= ? ALLOW FILTERING");
  // nothing under OR, nothing on a regular column, no range before the last clustering column pushed
  plan = src.plan_read({"v"}, {col("p") == 1 | col("p") == 2, col("v") == 3, col("c2") > 1});
  EXPECT_EQ(plan.cql, "SELECT \"v\" FROM \"tug_test\".\"push_t\" WHERE token(\"p\", \"q\") > ? AND token(\"p\", \"q\") <= ?");
  // a widening cast of a key column keeps its values and is pushed; a narrowing one is not
  plan = src.plan_read({"v"}, {col("c1").cast(type_id::int64) == 3});
  EXPECT_NE(plan.cql.find("\"c1\" = ?"), std::string::npos) << plan.cql;
  plan = src.plan_read({"v"}, {col("c1").cast(type_id::int8) == 3});
  EXPECT_EQ(plan.cql.find("c1"), std::string::npos) << plan.cql;
  // the results equal filtering in tug
  auto lf = scan_cassandra("tug_test", "push_t", scan_options());
  auto check = [&](const expr& pred, auto keep) {
    int64_t expected_rows = 0, expected_sum = 0;
    for (int p = 0; p < 4; ++p)
      for (int c1 = 0; c1 < 5; ++c1)
        for (int c2 = 0; c2 < 5; ++c2)
          if (keep(p, c1, c2, p * 100 + c1 * 10 + c2)) ++expected_rows, expected_sum += p * 100 + c1 * 10 + c2;
    ASSERT_GT(expected_rows, 0);
    auto df = lf.filter(pred).select({col("v").cast(type_id::int64).sum().alias("s"), col("v").count().alias("n")}).collect();
    auto t = df.to_table();
    EXPECT_EQ(t[1].value<int64_t>(0), expected_rows) << to_string(pred);
    EXPECT_EQ(t[0].value<int64_t>(0), expected_sum) << to_string(pred);
  };
  check(col("p") == 2 & col("q") == lit("x") & col("c1") == 3 & col("c2") >= 2,
        [](int p, int c1, int c2, int) { return p == 2 && c1 == 3 && c2 >= 2; });
  check(col("c1") < 2 & col("v") > 100, [](int, int c1, int, int v) { return c1 < 2 && v > 100; });
  check(col("p") == 1 | col("c2") == 4, [](int p, int, int c2, int) { return p == 1 || c2 == 4; });
  check(col("c1") == 4 & col("c2") > 1 & col("c2") <= 3, [](int, int c1, int c2, int) { return c1 == 4 && c2 > 1 && c2 <= 3; });
  std::string ex = lf.filter(col("p") == 2 & col("q") == lit("x")).select({col("v")}).explain();
  EXPECT_NE(ex.find("CASSANDRA SCAN tug_test.push_t"), std::string::npos) << ex;
  // explain() shows the CQL the scan sends
  EXPECT_NE(ex.find("CQL: SELECT "), std::string::npos) << ex;
  EXPECT_NE(ex.find("FROM \"tug_test\".\"push_t\" WHERE \"p\" = ? AND \"q\" = ? with p = 2, q = 'x'"), std::string::npos)
      << ex;
  std::string sent = src.describe_read({"v"}, {col("p") == 2 & col("q") == lit("x")});
  EXPECT_EQ(sent, "CQL: SELECT \"v\" FROM \"tug_test\".\"push_t\" WHERE \"p\" = ? AND \"q\" = ? with p = 2, q = 'x'");
}

TEST(CassandraServer, PushedCqlIsWhatTheServerPrepared) {
  // the statements a scan sends, as the node keeps them (system.prepared_statements: every statement
  // prepared on it, with its text)
  cq::session s(client());
  create_table(s, "push_seen", "(p int, q text, c1 int, c2 int, v int, PRIMARY KEY ((p, q), c1, c2))");
  s.query("INSERT INTO tug_test.push_seen (p, q, c1, c2, v) VALUES (2, 'x', 3, 4, 7)");
  auto prepared_on_table = [&] {
    auto r = s.query("SELECT query_string FROM system.prepared_statements");
    auto t = cq::decode_rows(r.rows, {type_id::string}, {}, "");
    std::set<std::string> out;
    for (int64_t i = 0; i < t.num_rows(); ++i) {
      std::string q(t[0].string(i));
      if (q.find("\"push_seen\"") != std::string::npos) out.insert(q);
    }
    return out;
  };
  EXPECT_EQ(prepared_on_table().size(), 0u);  // the table is new: what follows is this test's
  auto lf = scan_cassandra("tug_test", "push_seen", scan_options());
  auto sum_of = [&](const expr& pred) {
    auto t = lf.filter(pred).select({col("v").cast(type_id::int64).sum().alias("s")}).collect().to_table();
    return t[0].value<int64_t>(0);
  };
  EXPECT_EQ(sum_of(col("p") == 2 & col("q") == lit("x") & col("c1") == 3 & col("c2") >= 2), 7);
  EXPECT_EQ(sum_of(col("c1") < 4 & col("v") > 0), 7);
  EXPECT_EQ(sum_of(col("p") == 2 | col("c2") == 4), 7);
  const std::set<std::string> seen = prepared_on_table();
  // the columns of the select and of the predicates (tug filters the rows again), the keys' predicates
  // in the WHERE clause
  const std::string from = " FROM \"tug_test\".\"push_seen\" WHERE ";
  EXPECT_TRUE(seen.count("SELECT \"p\", \"q\", \"c1\", \"c2\", \"v\"" + from +
                         "\"p\" = ? AND \"q\" = ? AND \"c1\" = ? AND \"c2\" >= ?"));
  EXPECT_TRUE(seen.count("SELECT \"c1\", \"v\"" + from +
                         "\"c1\" < ? AND token(\"p\", \"q\") > ? AND token(\"p\", \"q\") <= ? ALLOW FILTERING"));
  // OR: nothing pushed, the token ranges only (the columns p, c2 and v selected)
  const std::string ranges_only = "FROM \"tug_test\".\"push_seen\" WHERE token(\"p\", \"q\") > ? AND token(\"p\", \"q\") <= ?";
  EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [&](const std::string& q) {
    return q.ends_with(ranges_only) && q.find("\"c2\"") != std::string::npos && q.find("\"c1\"") == std::string::npos;
  })) << [&] {
    std::string all;
    for (auto& q : seen) all += q + "\n";
    return all;
  }();
  for (auto& q : seen) EXPECT_EQ(q.find(" OR "), std::string::npos) << q;
}

namespace {
scalar i64(int64_t v) { return scalar(type_id::int64, v); }
scalar str(const std::string& v) { return scalar(type_id::string, v); }
}  // namespace

TEST(CassandraServer, PushesInListsIntoCql) {
  cq::session s(client());
  create_table(s, "push_in", "(p int, q text, c1 int, c2 int, v int, PRIMARY KEY ((p, q), c1, c2))");
  auto ins = s.prepare("INSERT INTO tug_test.push_in (p, q, c1, c2, v) VALUES (?, ?, ?, ?, ?)");
  std::vector<cq::pending_request> reqs;
  for (int p = 0; p < 6; ++p)
    for (const char* q : {"x", "y"})
      for (int c1 = 0; c1 < 5; ++c1)
        for (int c2 = 0; c2 < 5; ++c2) {
          cq::byte_writer w;
          w.i32(4);
          w.i32(p);
          w.bytes(q);
          for (int v : {c1, c2, p * 100 + c1 * 10 + c2}) {
            w.i32(4);
            w.i32(v);
          }
          reqs.push_back(s.execute_async(ins, {5, w.out()}));
        }
  for (auto& r : reqs) r.get();
  io::cassandra_source src("tug_test", "push_in", scan_options());
  // the whole partition key with IN and =: one request per key (the product of the lists), a clustering
  // IN, then a range on the next clustering column
  expr pred = col("p").is_in({i64(1), i64(3), i64(5), i64(7)}) & col("q") == lit("x") &
              col("c1").is_in({i64(0), i64(2)}) & col("c2") > 2;
  auto plan = src.plan_read({"v"}, {pred});
  EXPECT_EQ(plan.cql, "SELECT \"v\" FROM \"tug_test\".\"push_in\" WHERE \"p\" = ? AND \"q\" = ? AND \"c1\" IN (?, ?) AND "
                      "\"c2\" > ?");
  EXPECT_FALSE(plan.token_ranges);
  EXPECT_EQ(plan.keys.size(), 4u);
  EXPECT_EQ(src.describe_read({"v"}, {pred}),
            "CQL: SELECT \"v\" FROM \"tug_test\".\"push_in\" WHERE \"p\" = ? AND \"q\" = ? AND \"c1\" IN (?, ?) AND \"c2\" > "
            "? with p IN (1, 3, 5, 7), q = 'x', c1 IN (0, 2), c2 > 2, one request per partition key (4)");
  // IN on both key columns: their product; duplicates and nulls (a key is never null) dropped
  plan = src.plan_read({"v"}, {col("p").is_in({i64(2), i64(4), i64(2), scalar::null(data_type(type_id::int64))}),
                               col("q").is_in({str("x"), str("y")})});
  EXPECT_EQ(plan.keys.size(), 4u);
  // more keys than max_key_lookups: token ranges, the clustering IN still pushed (with ALLOW FILTERING)
  auto few = scan_options();
  few.max_key_lookups = 3;
  io::cassandra_source capped("tug_test", "push_in", few);
  plan = capped.plan_read({"v"}, {pred});
  EXPECT_TRUE(plan.token_ranges);
  EXPECT_EQ(plan.cql, "SELECT \"v\" FROM \"tug_test\".\"push_in\" WHERE \"c1\" IN (?, ?) AND \"c2\" > ? AND token(\"p\", "
                      "\"q\") > ? AND token(\"p\", \"q\") <= ? ALLOW FILTERING");
  // nothing under OR or NOT IN
  plan = src.plan_read({"v"}, {col("p").is_in({i64(1)}) | col("c1") == 1, ~col("c1").is_in({i64(1), i64(2)})});
  EXPECT_TRUE(plan.token_ranges);
  EXPECT_EQ(plan.cql.find("c1"), std::string::npos) << plan.cql;
  // an empty IN list reads nothing
  plan = src.plan_read({"v"}, {col("c1").is_in(std::vector<scalar>{})});
  EXPECT_FALSE(plan.token_ranges);
  EXPECT_TRUE(plan.keys.empty());

  // the results equal filtering in tug, and the reads were the keys' requests
  auto check = [&](const io::cassandra_scan_options& o, const expr& e, auto keep, int64_t requests) {
    int64_t expected_rows = 0, expected_sum = 0;
    for (int p = 0; p < 6; ++p)
      for (int qi = 0; qi < 2; ++qi)
        for (int c1 = 0; c1 < 5; ++c1)
          for (int c2 = 0; c2 < 5; ++c2)
            if (keep(p, qi ? "y" : "x", c1, c2)) ++expected_rows, expected_sum += p * 100 + c1 * 10 + c2;
    auto lf = scan_cassandra("tug_test", "push_in", o);
    auto df = lf.filter(e).select({col("v").cast(type_id::int64).sum().alias("s"), col("v").count().alias("n")}).collect();
    auto t = df.to_table();
    EXPECT_EQ(t[1].value<int64_t>(0), expected_rows) << to_string(e);
    EXPECT_EQ(t[0].value<int64_t>(0), expected_sum) << to_string(e);
    if (requests >= 0) {
      io::cassandra_source probe("tug_test", "push_in", o);
      thread_pool pool(1);
      probe.read({"v"}, {e}, {}, pool, default_host_resource());
      EXPECT_EQ(probe.last_read_metrics().requests, requests) << to_string(e);
    }
  };
  check(scan_options(), pred, [](int p, const std::string& q, int c1, int c2) {
    return (p == 1 || p == 3 || p == 5) && q == "x" && (c1 == 0 || c1 == 2) && c2 > 2;
  }, 4);  // key 7 has no rows, it is still one request
  check(few, pred, [](int p, const std::string& q, int c1, int c2) {
    return (p == 1 || p == 3 || p == 5) && q == "x" && (c1 == 0 || c1 == 2) && c2 > 2;
  }, -1);
  check(scan_options(), col("p").is_in({i64(0), i64(4)}) & col("q").is_in({str("y"), str("x")}) & col("c1") == 3,
        [](int p, const std::string&, int c1, int) { return (p == 0 || p == 4) && c1 == 3; }, 4);
  check(scan_options(), col("p").is_in({i64(2)}) & col("q") == lit("y") & col("c1").is_in(std::vector<scalar>{}),
        [](int, const std::string&, int, int) { return false; }, 0);

  // spanBy: one tug partition per partition key read, and a group_by on the partition key aggregates each
  // partition alone (no merge), with the results of the merged aggregation
  auto keyed = scan_cassandra("tug_test", "push_in", scan_options())
                   .filter(col("p").is_in({i64(1), i64(2), i64(5)}) & col("q").is_in({str("x"), str("y")}));
  auto parts = keyed.collect();
  EXPECT_EQ(parts.partitions().size(), 6u);  // 3 values of p x 2 values of q
  auto grouped = keyed.group_by(std::vector<std::string>{"p", "q"}, true).agg({col("v").sum().alias("s"), col("v").median().alias("m")});
  std::string ex = grouped.explain();
  EXPECT_NE(ex.find("hash_aggregate[per partition]"), std::string::npos) << ex;
  EXPECT_EQ(ex.find("hash_aggregate[final]"), std::string::npos) << ex;
  auto merged = parts.lazy().group_by(std::vector<std::string>{"p", "q"}, true).agg({col("v").sum().alias("s"), col("v").median().alias("m")});
  EXPECT_EQ(grouped.collect().to_table().num_rows(), 6);
  auto a = grouped.collect().to_table(), b = merged.collect().to_table();
  ASSERT_EQ(a.num_rows(), b.num_rows());
  for (size_t c = 0; c < a.num_columns(); ++c)
    for (int64_t r = 0; r < a.num_rows(); ++r) EXPECT_EQ(format_value(a[c], r), format_value(b[c], r));
  // token ranges keep partitions whole too: a group_by on the partition key over a full scan
  auto full = scan_cassandra("tug_test", "push_in", scan_options()).group_by(std::vector<std::string>{"q", "p"}).agg({col("v").count().alias("n")});
  EXPECT_NE(full.explain().find("hash_aggregate[per partition]"), std::string::npos) << full.explain();
  auto counts = full.collect().to_table();
  ASSERT_EQ(counts.num_rows(), 12);
  for (int64_t r = 0; r < counts.num_rows(); ++r) EXPECT_EQ(counts[2].value<int64_t>(r), 25);
  // not on the partition key alone: the merge stays
  EXPECT_EQ(scan_cassandra("tug_test", "push_in", scan_options()).group_by(std::vector<std::string>{"p"}).agg(
                {col("v").sum()}).explain().find("per partition"), std::string::npos);
}

// A table of 1M rows (TUG_CASSANDRA_DRIVER_ROWS overrides) scanned through tug equals the same table read by
// the DataStax Python driver: tug writes its scan to Parquet, compare_with_driver.py reads the table with the
// driver and compares every row.
TEST(CassandraServer, ScanEqualsThePythonDriversRead) {
  const char* env_rows = std::getenv("TUG_CASSANDRA_DRIVER_ROWS");
  const int64_t n = env_rows ? std::atoll(env_rows) : 1000000;
  const std::string python = TUG_SOURCE_DIR "/.venv/bin/python";
  const std::string script = TUG_SOURCE_DIR "/tests/cassandra/compare_with_driver.py";
  if (std::system((python + " -c 'import cassandra' 2>/dev/null").c_str()) != 0)
    GTEST_FAIL() << "the Python driver is missing: scripts/setup.sh installs cassandra-driver into .venv";
  cq::session s(client());
  create_table(s, "driver_t", "(k int, c bigint, d double, s text, ts timestamp, u uuid, dec decimal, b boolean, "
                              "PRIMARY KEY (k, c))");
  fixed_width_builder<int64_t> i(type_id::int64, n);
  std::vector<std::optional<std::string>> uuids(static_cast<size_t>(n)), texts(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    i.set(r, r);
    char u[40];
    std::snprintf(u, sizeof u, "%08llx-%04llx-4%03llx-a000-%012llx", static_cast<unsigned long long>(r * 2654435761ULL % 4294967296ULL),
                  static_cast<unsigned long long>(r % 65536), static_cast<unsigned long long>(r % 4096),
                  static_cast<unsigned long long>(r));
    uuids[static_cast<size_t>(r)] = u;
    if (r % 997 != 5) texts[static_cast<size_t>(r)] = "row " + std::to_string(r) + (r % 3 ? "" : " ünïcode");
  }
  auto frame = data_frame::from_columns({{"i", i.finish()}, {"u", make_string_column(uuids)}, {"s", make_string_column(texts)}})
                   .lazy()
                   .select({(col("i") % 5003).cast(type_id::int32).alias("k"), col("i").alias("c"),
                            when(col("i") % 991 == 7).then(lit(scalar::null(data_type(type_id::float64))))
                                .otherwise(col("i").cast(type_id::float64) * 0.25 - 1000.0)
                                .alias("d"),
                            col("s"), (col("i") * 1000 + lit(int64_t{1700000000000})).cast(timestamp(time_unit::ms)).alias("ts"),
                            col("u"), (col("i").cast(type_id::float64) * 0.001 - 500.0).cast(decimal(38, 3)).alias("dec"),
                            (col("i") % 3 == 0).alias("b")});
  auto w = write_options();
  w.max_in_flight = 64;
  ASSERT_EQ(sink_cassandra(frame, "tug_test", "driver_t", w).rows_written, n);
  const std::string parquet = server_dir + "/driver_t.parquet";
  auto o = scan_options();
  o.fetch_size = 5000;
  sink_parquet(scan_cassandra("tug_test", "driver_t", o), parquet);
  int rc = std::system((python + " " + script + " " + std::to_string(server_port) + " tug_test driver_t " + parquet).c_str());
  EXPECT_EQ(rc, 0) << "compare_with_driver.py found differences (printed above)";
  std::remove(parquet.c_str());
  s.query("DROP TABLE tug_test.driver_t");
}

// Protocol v5 where the node offers it (Cassandra 5.0 does), v4 when asked, each with and without lz4: the
// same statements give the same rows, and values larger than a v5 segment (128 KiB) go both ways.
TEST(CassandraServer, SpeaksProtocolV5AndV4WithAndWithoutLz4) {
  {
    cq::session s(client());
    create_table(s, "v5_t", "(k int, c int, s text, PRIMARY KEY (k, c))");
  }
  std::string big(300000, 'x');
  for (size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>('a' + i % 26);
  std::string expected_sum;
  for (int version : {0, 4, 5})
    for (const char* compression : {"", "lz4"}) {
      SCOPED_TRACE("protocol_version " + std::to_string(version) + " compression '" + compression + "'");
      auto o = client();
      o.protocol_version = version;
      o.compression = compression;
      cq::session s(o);
      EXPECT_EQ(s.options().protocol_version, version == 4 ? 4 : 5);
      // a prepared write of a value over 128 KiB, a batch, then reads: paged, and one large row
      auto ins = s.prepare("INSERT INTO tug_test.v5_t (k, c, s) VALUES (?, ?, ?)");
      cq::byte_writer w;
      w.i32(4);
      w.i32(version * 10 + (compression[0] ? 1 : 0));
      w.i32(4);
      w.i32(0);
      w.bytes(big);
      s.execute(*ins, {3, w.out()});
      std::vector<cq::bound_values> rows;
      for (int c = 1; c <= 500; ++c) {
        cq::byte_writer r;
        r.i32(4);
        r.i32(version * 10 + (compression[0] ? 1 : 0));
        r.i32(4);
        r.i32(c);
        r.bytes("row " + std::to_string(c) + " " + std::string(200, 'y'));
        rows.push_back({3, r.out()});
      }
      s.batch_async(ins, rows, cq::consistency::one).get();
      auto df = scan_cassandra("tug_test", "v5_t", [&] {
                  auto so = scan_options();
                  so.client = o;
                  so.fetch_size = 700;  // pages of ~140 KiB: envelopes over one segment
                  return so;
                }())
                    .filter(col("k") == version * 10 + (compression[0] ? 1 : 0))
                    .sort("c")
                    .collect()
                    .to_table();
      ASSERT_EQ(df.num_rows(), 501);
      EXPECT_EQ(df[2].string(0), big);
      EXPECT_EQ(df[2].string(500), "row 500 " + std::string(200, 'y'));
      // errors decode in either version
      EXPECT_THROW(s.query("SELECT nope FROM tug_test.v5_t"), cq::query_error);
    }
  // the version and compression options are checked
  auto bad = client();
  bad.protocol_version = 3;
  EXPECT_THROW(cq::session{bad}, invalid_argument_error);
  bad = client();
  bad.compression = "snappy";
  EXPECT_THROW(cq::session{bad}, invalid_argument_error);
}

TEST(CassandraServer, PagingFollowsThePagingState) {
  cq::session s(client());
  create_table(s, "page_t", "(p int, c int, PRIMARY KEY (p, c))");
  for (int c = 0; c < 1024; ++c) s.query("INSERT INTO tug_test.page_t (p, c) VALUES (1, " + std::to_string(c) + ")");
  for (int fetch : {1, 31, 32, 33, 1024, 5000}) {
    auto o = scan_options();
    o.fetch_size = fetch;
    auto df = scan_cassandra("tug_test", "page_t", o).filter(col("p") == 1).sort("c").collect();
    ASSERT_EQ(df.num_rows(), 1024) << fetch;
    auto t = df.to_table();
    for (int64_t r = 0; r < 1024; ++r) ASSERT_EQ(t[1].value<int32_t>(r), r);
  }
  // an empty table: no rows, the right columns
  create_table(s, "empty_t", "(p int PRIMARY KEY, v text)");
  auto e = scan_cassandra("tug_test", "empty_t", scan_options()).collect();
  EXPECT_EQ(e.num_rows(), 0);
  EXPECT_EQ(e.schema().to_string(), "p: i32, v: str");
}

TEST(CassandraServer, RepreparesOnUnprepared) {
  cq::session s(client());
  create_table(s, "prep_t", "(k int PRIMARY KEY, v int)");
  s.query("INSERT INTO tug_test.prep_t (k, v) VALUES (1, 10)");
  auto stmt = s.prepare("SELECT v FROM tug_test.prep_t WHERE k = 1");
  EXPECT_EQ(s.execute(*stmt, {}).rows.rows_count, 1);
  // a schema change drops the server's prepared statements of the table: the next EXECUTE gets
  // Unprepared, and the client prepares again
  s.query("DROP TABLE tug_test.prep_t");
  s.query("CREATE TABLE tug_test.prep_t (k int PRIMARY KEY, v int)");
  s.query("INSERT INTO tug_test.prep_t (k, v) VALUES (1, 20)");
  auto r = s.execute(*stmt, {});
  ASSERT_EQ(r.rows.rows_count, 1);
  auto t = cq::decode_rows(r.rows, {type_id::int32}, {}, "");
  EXPECT_EQ(t[0].value<int32_t>(0), 20);
}

TEST(CassandraServer, PipelinesManyRequestsOnOneConnection) {
  auto o = client();
  o.connections_per_host = 1;
  o.max_requests_per_connection = 64;  // fewer stream ids than requests: senders wait for free ones
  cq::session s(o);
  create_table(s, "pipe_t", "(k int PRIMARY KEY, v int)");
  auto stmt = s.prepare("INSERT INTO tug_test.pipe_t (k, v) VALUES (?, ?)");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<cq::pending_request> reqs;
      for (int i = 0; i < 250; ++i) {
        cq::byte_writer w;
        w.i32(4);
        w.i32(t * 1000 + i);
        w.i32(4);
        w.i32(i);
        reqs.push_back(s.execute_async(stmt, {2, w.out()}));
        if (reqs.size() == 30) {
          for (auto& r : reqs) r.get(), ++ok;
          reqs.clear();
        }
      }
      for (auto& r : reqs) r.get(), ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 1000);
  EXPECT_EQ(count_rows(s, "pipe_t"), 1000);
}

TEST(CassandraServer, SinkWritesEveryRowWithBoundedInFlight) {
  cq::session s(client());
  create_table(s, "sink_t", "(p int, c int, v text, PRIMARY KEY (p, c))");
  const int64_t n = 20000;
  std::vector<int32_t> p(n), c(n);
  std::vector<std::optional<std::string>> v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)] = static_cast<int32_t>(i % 997);  // rows of one key far apart: grouped into batches
    c[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    v[static_cast<size_t>(i)] = i % 13 == 0 ? std::nullopt : std::optional<std::string>("v" + std::to_string(i));
  }
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"v", make_string_column(v)}});
  auto o = write_options();
  o.max_in_flight = 3;
  o.batch_max_rows = 8;
  auto w = sink_cassandra(df.lazy(), "tug_test", "sink_t", o);
  EXPECT_EQ(w.rows_written, n);
  EXPECT_EQ(w.max_in_flight_seen, 3);
  EXPECT_GT(w.batches, 0);
  EXPECT_LT(w.requests, n);
  EXPECT_EQ(count_rows(s, "sink_t"), n);
  auto back = scan_cassandra("tug_test", "sink_t", scan_options()).sort("c").collect().to_table();
  ASSERT_EQ(back.num_rows(), n);
  for (int64_t i = 0; i < n; i += 7) {
    EXPECT_EQ(back[0].value<int32_t>(i), i % 997);
    EXPECT_EQ(back[2].is_null(i), i % 13 == 0);
  }
}

TEST(CassandraServer, SinkStreamsAResultLargerThanTheMemoryLimit) {
  // 120k rows (about 7 MiB in memory) read from Parquet in row groups of 4096 rows and written under a
  // 3 MiB memory_limit: each partition is written as it is read, so the query never holds the result
  // whole; then the table is copied by scan_cassandra into another table the same way
  cq::session s(client());
  create_table(s, "stream_t", "(p int, c int, v text, PRIMARY KEY (p, c))");
  create_table(s, "stream2_t", "(p int, c int, v text, PRIMARY KEY (p, c))");
  const int64_t n = 120000;
  std::vector<int32_t> p(n), c(n);
  std::vector<std::optional<std::string>> v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)] = static_cast<int32_t>(i % 1009);
    c[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    v[static_cast<size_t>(i)] =
        i % 11 == 0 ? std::nullopt : std::optional<std::string>("row " + std::to_string(i) + std::string(36, 'x'));
  }
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"v", make_string_column(v)}});
  const int64_t result_bytes = df.to_table().memory_usage();
  ASSERT_GT(result_bytes, 6 << 20);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tug_cassandra_stream_" + std::to_string(::getpid()) + ".parquet"))
                               .string();
  io::parquet::write_options pw;
  pw.row_group_rows = 4096;
  sink_parquet(df.lazy(), path, pw);
  engine_options e;
  e.num_threads = 2;
  e.memory_limit = 3 << 20;
  auto o = write_options();
  o.max_in_flight = 8;
  auto w = sink_cassandra(scan_parquet(path), "tug_test", "stream_t", o, e);
  std::filesystem::remove(path);
  EXPECT_EQ(w.rows_written, n);
  EXPECT_GT(w.peak_memory, 0);
  EXPECT_LT(w.peak_memory, result_bytes / 2) << w.statistics;
  EXPECT_LE(w.max_in_flight_seen, 8);
  // the engine's statistics: the sink operator, and the sink's figures
  EXPECT_NE(w.statistics.find("sink"), std::string::npos) << w.statistics;
  EXPECT_NE(w.statistics.find("CASSANDRA SINK tug_test.stream_t: rows written 120000, batches " +
                              std::to_string(w.batches) + ", window at most " + std::to_string(w.max_in_flight_seen) +
                              "; requests " + std::to_string(w.metrics.requests) + ", retries 0, failures 0"),
            std::string::npos)
      << w.statistics;
  auto sorted = [](const lazy_frame& q) { return q.sort("c").collect().to_table(); };
  const table want = df.to_table();
  auto equal = [&](const table& got) {
    ASSERT_EQ(got.num_rows(), n);
    for (size_t k = 0; k < 3; ++k)
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(get_scalar(got[k], i) == get_scalar(want[k], i))
            << "column " << k << " row " << i << ": " << get_scalar(got[k], i).to_string() << " != "
            << get_scalar(want[k], i).to_string();
  };
  equal(sorted(scan_cassandra("tug_test", "stream_t", scan_options())));
  // Cassandra to Cassandra: the scan hands each split to the sink as soon as it is read
  auto so = scan_options();
  so.splits = 40;
  so.reads_in_flight = 2;
  auto w2 = sink_cassandra(scan_cassandra("tug_test", "stream_t", so), "tug_test", "stream2_t", o, e);
  EXPECT_EQ(w2.rows_written, n);
  EXPECT_LT(w2.peak_memory, result_bytes / 2) << w2.statistics;
  EXPECT_NE(w2.statistics.find("CASSANDRA SCAN tug_test.stream_t: requests "), std::string::npos) << w2.statistics;
  EXPECT_NE(w2.statistics.find("rows 120000, pages "), std::string::npos) << w2.statistics;
  equal(sorted(scan_cassandra("tug_test", "stream2_t", scan_options())));
}

TEST(CassandraServer, SinkChecksTheSchemaBeforeWriting) {
  cq::session s(client());
  create_table(s, "check_t", "(k int PRIMARY KEY, u uuid, v int)");
  auto df = [](std::vector<std::pair<std::string, column>> cols) { return data_frame::from_columns(std::move(cols)).lazy(); };
  auto k = make_column<int32_t>(type_id::int32, {1, 2});
  EXPECT_THROW(sink_cassandra(df({{"k", k}, {"nope", k}}), "tug_test", "check_t", write_options()), column_not_found_error);
  EXPECT_THROW(sink_cassandra(df({{"k", k}, {"v", make_column<int64_t>(type_id::int64, {1, 2})}}), "tug_test", "check_t",
                              write_options()),
               type_error);
  EXPECT_THROW(sink_cassandra(df({{"v", k}}), "tug_test", "check_t", write_options()), invalid_argument_error);
  // the second row's uuid is bad: nothing is written, not even the first row
  EXPECT_THROW(sink_cassandra(df({{"k", k}, {"u", make_string_column({std::string("123e4567-e89b-12d3-a456-426614174000"),
                                                                         std::string("zzz")})}}),
                              "tug_test", "check_t", write_options()),
               invalid_argument_error);
  EXPECT_EQ(count_rows(s, "check_t"), 0);
  EXPECT_THROW(sink_cassandra(df({{"k", k}}), "tug_test", "no_such_table", write_options()), io_error);
}

TEST(CassandraServer, SinkFailureSaysWhatWasWritten) {
  cq::session s(client());
  create_table(s, "fail_t", "(p int, c int, a ascii, PRIMARY KEY (p, c))");
  // ten rows of distinct keys, then one the server rejects (a non-ASCII value in an ascii column)
  std::vector<int32_t> p = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 99};
  std::vector<int32_t> c(p.size(), 0);
  std::vector<std::optional<std::string>> a(p.size(), std::string("ok"));
  a.back() = "caf\xc3\xa9";
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"a", make_string_column(a)}});
  auto o = write_options();
  o.max_in_flight = 1;
  try {
    sink_cassandra(df.lazy(), "tug_test", "fail_t", o);
    FAIL();
  } catch (const io_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("wrote 10 rows, then the write of rows 10.."), std::string::npos) << m;
    EXPECT_NE(m.find("partition key p=99"), std::string::npos) << m;
    EXPECT_NE(m.find("Invalid"), std::string::npos) << m;
  }
  EXPECT_EQ(count_rows(s, "fail_t"), 10);
  // several requests in flight fail: every failed partition key is named, with the rows they held
  create_table(s, "fail_many", "(p int, c int, a ascii, PRIMARY KEY (p, c))");
  std::vector<int32_t> mp, mc;
  std::vector<std::optional<std::string>> ma;
  for (int k = 0; k < 30; ++k)
    for (int c2 = 0; c2 < 2; ++c2) {
      mp.push_back(k);
      mc.push_back(c2);
      ma.push_back(k < 6 ? std::optional<std::string>("caf\xc3\xa9") : std::optional<std::string>("ok"));
    }
  auto many = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, mp)},
                                        {"c", make_column<int32_t>(type_id::int32, mc)},
                                        {"a", make_string_column(ma)}});
  o.max_in_flight = 6;  // the six bad keys' batches are all in flight before the first answer is awaited
  try {
    sink_cassandra(many.lazy(), "tug_test", "fail_many", o);
    FAIL();
  } catch (const io_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("wrote 0 rows, then the write of rows 0.. (2 rows of partition key p=0)"), std::string::npos) << m;
    EXPECT_NE(m.find("12 rows of 6 partition keys failed in all: p=0, p=1, p=2, p=3, p=4, p=5"), std::string::npos)
        << m;
  }
  EXPECT_EQ(count_rows(s, "fail_many"), 0);
}

TEST(CassandraServer, SinkWritesWithTtlWriteTimeAndIfNotExists) {
  cq::session s(client());
  create_table(s, "opts_t", "(p int, c int, v int, PRIMARY KEY (p, c))");
  auto rows = [](int from, int n, int v) {
    std::vector<int32_t> p, c, vs;
    for (int i = from; i < from + n; ++i) {
      p.push_back(i % 7);
      c.push_back(i);
      vs.push_back(v);
    }
    return data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                     {"c", make_column<int32_t>(type_id::int32, c)},
                                     {"v", make_column<int32_t>(type_id::int32, vs)}});
  };
  // TTL and write time reach every row: the server's TTL(v) and WRITETIME(v)
  auto o = write_options();
  o.ttl_seconds = 86400;
  o.write_time_us = 1700000000000000;
  EXPECT_EQ(sink_cassandra(rows(0, 40, 1).lazy(), "tug_test", "opts_t", o).rows_written, 40);
  auto r = s.query("SELECT TTL(v), WRITETIME(v) FROM tug_test.opts_t");
  auto t = cq::decode_rows(r.rows, {type_id::int32, type_id::int64}, {}, "");
  ASSERT_EQ(t.num_rows(), 40);
  for (int64_t i = 0; i < t.num_rows(); ++i) {
    EXPECT_GT(t[0].value<int32_t>(i), 86400 - 600) << i;  // counts down from 86400
    EXPECT_LE(t[0].value<int32_t>(i), 86400) << i;
    EXPECT_EQ(t[1].value<int64_t>(i), 1700000000000000) << i;
  }
  // IF NOT EXISTS: rows 20..59 with v = 2; the 20 that exist keep v = 1, the 20 new ones get 2 (each row
  // alone: a conditional batch of existing and new rows would apply none of them)
  auto n = write_options();
  n.if_not_exists = true;
  auto res = sink_cassandra(rows(20, 40, 2).lazy(), "tug_test", "opts_t", n);
  EXPECT_EQ(res.rows_written, 20);
  EXPECT_EQ(res.rows_not_applied, 20);
  EXPECT_EQ(res.batches, 0);
  EXPECT_EQ(res.requests, 40);
  auto sum = s.query("SELECT count(*), sum(v) FROM tug_test.opts_t");
  auto st = cq::decode_rows(sum.rows, {type_id::int64, type_id::int32}, {}, "");
  EXPECT_EQ(st[0].value<int64_t>(0), 60);
  EXPECT_EQ(st[1].value<int32_t>(0), 40 * 1 + 20 * 2);
  // Cassandra takes no timestamp on a conditional write: refused before anything is written
  n.write_time_us = 1700000000000000;
  try {
    sink_cassandra(rows(100, 5, 9).lazy(), "tug_test", "opts_t", n);
    FAIL();
  } catch (const invalid_argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("if_not_exists with write_time_us 1700000000000000"), std::string::npos)
        << e.what();
  }
  // a plain INSERT overwrites (without the write time above: a later timestamp)
  EXPECT_EQ(sink_cassandra(rows(0, 10, 3).lazy(), "tug_test", "opts_t", write_options()).rows_written, 10);
  sum = s.query("SELECT sum(v) FROM tug_test.opts_t");
  EXPECT_EQ(cq::decode_rows(sum.rows, {type_id::int32}, {}, "")[0].value<int32_t>(0), 10 * 3 + 30 * 1 + 20 * 2);
}

TEST(CassandraServer, RankSharesSplitTheRingWithoutLossOrOverlap) {
  // multi-rank execution (table_source::rank_share): each rank reads the parts of the splits in its
  // 1/size of the ring; together the shares read every row once, each partition key in one share
  cq::session s(client());
  create_table(s, "share_t", "(k int, c int, v int, PRIMARY KEY (k, c))");
  auto ins = s.prepare("INSERT INTO tug_test.share_t (k, c, v) VALUES (?, ?, ?)");
  std::vector<cq::pending_request> reqs;
  const int keys = 400, per_key = 3;
  for (int k = 0; k < keys; ++k)
    for (int c = 0; c < per_key; ++c) {
      cq::byte_writer w;
      for (int v : {k, c, k * 10 + c}) {
        w.i32(4);
        w.i32(v);
      }
      reqs.push_back(s.execute_async(ins, {3, w.out()}));
      if (reqs.size() == 64) {
        for (auto& r : reqs) r.get();
        reqs.clear();
      }
    }
  for (auto& r : reqs) r.get();
  auto so = scan_options();
  so.splits = 7;
  auto src = std::make_shared<io::cassandra_source>("tug_test", "share_t", so);
  EXPECT_THROW(src->rank_share(3, 3), internal_error);
  for (int size : {1, 2, 3, 5}) {
    SCOPED_TRACE("ranks " + std::to_string(size));
    std::map<std::pair<int32_t, int32_t>, int> seen;  // (k, c) -> times read
    std::map<int32_t, int> rank_of_key;
    for (int rank = 0; rank < size; ++rank) {
      auto share = src->rank_share(rank, size);
      ASSERT_NE(share, nullptr);
      lazy_frame lf(plan::scan(share));
      auto t = lf.select({col("k"), col("c")}).collect().to_table();
      const cq::token_range mine = cq::split_ring(size)[static_cast<size_t>(rank)];
      for (int64_t i = 0; i < t.num_rows(); ++i) {
        const int32_t k = t[0].value<int32_t>(i);
        ++seen[{k, t[1].value<int32_t>(i)}];
        auto [it, fresh] = rank_of_key.emplace(k, rank);
        EXPECT_EQ(it->second, rank) << "key " << k << " in two shares";
        cq::byte_writer kb;
        kb.i32(k);
        const int64_t token = cq::murmur3_token(kb.out());
        EXPECT_TRUE(token > mine.start && token <= mine.end) << "key " << k << " token " << token;
      }
      // the whole source's figures (the query's statistics line) are those of the share's read
      EXPECT_EQ(src->last_read_metrics().rows_received, t.num_rows());
      // a count in the share alone reads its rows too
      EXPECT_EQ(lf.select({col("k").count().alias("n")}).collect().to_table()[0].value<int64_t>(0), t.num_rows());
    }
    EXPECT_EQ(static_cast<int>(seen.size()), keys * per_key);
    for (auto& [kc, times] : seen) EXPECT_EQ(times, 1) << kc.first << "," << kc.second;
    if (size > 1) EXPECT_EQ(static_cast<int>(rank_of_key.size()), keys);
  }
  // a read by partition keys: the keys shared out in order, each read by one rank
  std::vector<scalar> wanted;
  for (int k = 0; k < 10; ++k) wanted.push_back(scalar(type_id::int64, int64_t{k * 7}));
  int64_t rows = 0;
  for (int rank = 0; rank < 3; ++rank) {
    lazy_frame lf(plan::scan(src->rank_share(rank, 3)));
    auto t = lf.filter(col("k").is_in(wanted)).select({col("k")}).collect().to_table();
    rows += t.num_rows();
    for (int64_t i = 0; i < t.num_rows(); ++i) {
      const int64_t idx = t[0].value<int32_t>(i) / 7;  // keys [10 r / 3, 10 (r + 1) / 3)
      EXPECT_GE(idx, 10 * rank / 3);
      EXPECT_LT(idx, 10 * (rank + 1) / 3);
    }
  }
  EXPECT_EQ(rows, 10 * per_key);
}

TEST(CassandraServer, UnavailableIsRetriedUnderThePolicyThenTyped) {
  // a keyspace of three replicas on the one node: QUORUM needs two, so the node answers Unavailable; the
  // policy sends the request again after each back-off (idempotent or not: the coordinator ran nothing)
  // and, when the retries run out, the typed error names what the node said
  cq::session setup(client());
  setup.query("CREATE KEYSPACE IF NOT EXISTS tug_test_rf3 WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 3}");
  setup.query("CREATE TABLE IF NOT EXISTS tug_test_rf3.t (p int PRIMARY KEY, v int)");
  for (bool idempotent : {true, false}) {
    SCOPED_TRACE(idempotent ? "idempotent" : "not idempotent");
    auto o = client();
    o.max_retries = 2;
    o.retry_delay_ms = 20;
    cq::session s(o);
    auto ins = s.prepare("INSERT INTO tug_test_rf3.t (p, v) VALUES (?, ?)");
    cq::byte_writer w;
    w.i32(4);
    w.i32(1);
    w.i32(4);
    w.i32(2);
    cq::query_parameters q;
    q.level = cq::consistency::quorum;
    auto before = s.metrics().snapshot();
    try {
      s.execute_async(ins, {2, w.out()}, q, idempotent).get();
      FAIL() << "a QUORUM write with one of three replicas alive succeeded";
    } catch (const cq::unavailable_error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("Unavailable"), std::string::npos) << m;
      EXPECT_NE(m.find("QUORUM: 2 replicas required, 1 alive"), std::string::npos) << m;
      EXPECT_NE(m.find("INSERT INTO tug_test_rf3.t"), std::string::npos) << m;
    }
    auto d = s.metrics().snapshot().since(before);
    EXPECT_EQ(d.requests, 3);  // the first try and two retries
    EXPECT_EQ(d.retries, 2);
    EXPECT_EQ(d.failures, 1);
    // at ONE the same statement succeeds at once
    q.level = cq::consistency::one;
    before = s.metrics().snapshot();
    s.execute_async(ins, {2, w.out()}, q, idempotent).get();
    EXPECT_EQ(s.metrics().snapshot().since(before).retries, 0);
  }
  setup.query("DROP KEYSPACE tug_test_rf3");
}

TEST(CassandraServer, MetricsReachTheQueryStatistics) {
  cq::session s(client());
  create_table(s, "metrics_t", "(p int, c int, v text, PRIMARY KEY (p, c))");
  const int64_t n = 3000;
  std::vector<int32_t> p(n), c(n);
  std::vector<std::optional<std::string>> v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)] = static_cast<int32_t>(i % 50);
    c[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    v[static_cast<size_t>(i)] = "value " + std::to_string(i);
  }
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"v", make_string_column(v)}});
  auto o = write_options();
  o.max_in_flight = 4;
  o.batch_max_rows = 10;
  auto w = sink_cassandra(df.lazy(), "tug_test", "metrics_t", o);
  // writes: every request answered and timed, the wire never held more than the window
  EXPECT_EQ(w.metrics.requests, w.requests);
  EXPECT_EQ(w.metrics.latency_count, w.requests);
  EXPECT_EQ(w.metrics.failures, 0);
  EXPECT_GT(w.metrics.bytes_sent, n * 10);
  EXPECT_GE(w.metrics.max_in_flight, 1);
  EXPECT_LE(w.metrics.max_in_flight, 4);
  EXPECT_GT(w.metrics.latency_us_max, 0);
  EXPECT_GE(w.metrics.latency_us_max, static_cast<int64_t>(w.metrics.mean_latency_ms() * 1000));
  // reads: the scan's figures, in the source and in the query's statistics
  auto so = scan_options();
  so.splits = 6;
  so.reads_in_flight = 3;
  so.fetch_size = 400;
  auto src = std::make_shared<io::cassandra_source>("tug_test", "metrics_t", so);
  auto r = lazy_frame(plan::scan(src)).profile();
  EXPECT_EQ(r.frame.num_rows(), n);
  auto m = src->last_read_metrics();
  EXPECT_EQ(m.rows_received, n);
  EXPECT_GE(m.requests, 8);  // at least one page per split, 400 rows a page: 3000 rows take 8 at least
  EXPECT_EQ(m.latency_count, m.requests);
  EXPECT_LE(m.max_in_flight, 3);
  EXPECT_GE(m.max_in_flight, 1);
  EXPECT_GT(m.bytes_received, n * 10);
  EXPECT_EQ(m.failures, 0);
  EXPECT_NE(r.statistics.find("CASSANDRA SCAN tug_test.metrics_t: requests " + std::to_string(m.requests) +
                              ", retries 0, failures 0, rows 3000"),
            std::string::npos)
      << r.statistics;
  // a request that fails is counted
  int64_t failures = s.metrics().failures;
  EXPECT_THROW(s.query("SELEC nothing"), cq::query_error);
  EXPECT_EQ(s.metrics().failures, failures + 1);
}
