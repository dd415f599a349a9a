// join_cassandra (joinWithCassandraTable) against the real node of test_cassandra_server.cpp, which that
// file's environment (or ctest's fixture) starts.
#include <gtest/gtest.h>

#include <optional>

#include "node_client.hpp"
#include "tug/api/cassandra.hpp"
#include "tug/api/data_frame.hpp"

using namespace tug;
namespace cq = tug::io::cassandra;

namespace {

cq::client_options client() { return tug::testing::node_client(); }

class JoinCassandra : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cq::session s(client());
    s.query("CREATE KEYSPACE IF NOT EXISTS tug_test WITH replication = {'class': 'SimpleStrategy', "
            "'replication_factor': 1}");
    s.query("DROP TABLE IF EXISTS tug_test.join_t");
    s.query("CREATE TABLE tug_test.join_t (p int, q text, c int, v double, w text, PRIMARY KEY ((p, q), c))");
    auto ins = s.prepare("INSERT INTO tug_test.join_t (p, q, c, v, w) VALUES (?, ?, ?, ?, ?)");
    std::vector<cq::pending_request> reqs;
    for (int p = 0; p < 200; ++p)
      for (int c = 0; c < 5; ++c) {
        cq::byte_writer w;
        w.i32(4);
        w.i32(p);
        w.bytes("q" + std::to_string(p % 3));
        w.i32(4);
        w.i32(c);
        w.i32(8);
        double v = p * 10 + c;
        int64_t bits;
        std::memcpy(&bits, &v, 8);
        w.i64(bits);
        w.bytes("w");
        reqs.push_back(s.execute_async(ins, {5, w.out()}));
      }
    for (auto& r : reqs) r.get();
  }

  /// 301 rows: p = i % 250 (keys 200..249 are not in the table, keys 0..49 twice), one null p; x = i.
  static data_frame left(bool with_c = false) {
    std::vector<std::optional<int32_t>> p, c;
    std::vector<std::optional<std::string>> q;
    std::vector<int64_t> x;
    for (int i = 0; i < 300; ++i) {
      p.push_back(i % 250);
      q.push_back("q" + std::to_string((i % 250) % 3));
      c.push_back(i % 5);
      x.push_back(i);
    }
    p.push_back(std::nullopt);
    q.push_back("q0");
    c.push_back(0);
    x.push_back(300);
    std::vector<std::pair<std::string, column>> cols = {{"p", make_column<int32_t>(type_id::int32, p)},
                                                        {"q", make_string_column(q)},
                                                        {"x", make_column<int64_t>(type_id::int64, x)}};
    if (with_c) cols.push_back({"c", make_column<int32_t>(type_id::int32, c)});
    return data_frame::from_columns(std::move(cols)).repartition(64);
  }

  static cassandra_join_options options() {
    cassandra_join_options o;
    o.client = client();
    return o;
  }
};

}  // namespace

TEST_F(JoinCassandra, LooksUpEveryDistinctKeyWithBoundedInFlight) {
  auto o = options();
  o.max_in_flight = 7;
  cassandra_join_stats st;
  auto joined = join_cassandra(left().lazy(), "tug_test", "join_t", {"p", "q"}, o, {}, &st);
  auto profiled = joined.profile();
  auto df = profiled.frame;
  // the lookups' figures in the statistics of the query that reads the joined frame
  EXPECT_NE(profiled.statistics.find("CASSANDRA JOIN tug_test.join_t: keys 250, rows fetched 1000, window at most 7; "
                                     "requests 250, retries 0, failures 0, rows 1000, pages 250"),
            std::string::npos)
      << profiled.statistics;
  EXPECT_EQ(st.keys, 250);      // distinct, non-null
  EXPECT_EQ(st.requests, 250);  // one page each
  EXPECT_EQ(st.rows_fetched, 1000);
  EXPECT_EQ(st.max_in_flight_seen, 7);
  EXPECT_EQ(st.metrics.requests, 250);
  EXPECT_EQ(st.metrics.rows_received, 1000);
  EXPECT_LE(st.metrics.max_in_flight, 7);  // on the wire, too
  EXPECT_EQ(st.metrics.latency_count, 250);
  // left rows with p < 200: 0..199 once, 0..49 a second time (i = 250..299); five table rows each
  EXPECT_EQ(df.num_rows(), (200 + 50) * 5);
  EXPECT_EQ(df.schema().to_string(), "p: i32, q: str, x: i64, c: i32, v: f64, w: str");
  auto t = df.to_table();
  double sum_v = 0, expected_v = 0;
  int64_t sum_x = 0, expected_x = 0;
  for (int64_t r = 0; r < t.num_rows(); ++r) {
    ASSERT_EQ(t[0].value<int32_t>(r) * 10 + t[3].value<int32_t>(r), t[4].value<double>(r));
    sum_v += t[4].value<double>(r);
    sum_x += t[2].value<int64_t>(r);
  }
  for (int i = 0; i < 300; ++i)
    if (i % 250 < 200)
      for (int c = 0; c < 5; ++c) expected_v += (i % 250) * 10 + c, expected_x += i;
  EXPECT_EQ(sum_v, expected_v);
  EXPECT_EQ(sum_x, expected_x);
}

TEST_F(JoinCassandra, LeftJoinKeepsRowsWithoutMatch) {
  auto o = options();
  o.how = join_type::left;
  o.columns = {"v"};
  auto df = join_cassandra(left().lazy(), "tug_test", "join_t", {"p", "q"}, o).collect();
  EXPECT_EQ(df.schema().to_string(), "p: i32, q: str, x: i64, v: f64");
  // 250 matched rows x 5, 50 rows of missing keys and the null key once each
  EXPECT_EQ(df.num_rows(), 250 * 5 + 51);
  auto t = df.to_table();
  int64_t nulls = 0;
  for (int64_t r = 0; r < t.num_rows(); ++r) nulls += t[3].is_null(r);
  EXPECT_EQ(nulls, 51);
}

TEST_F(JoinCassandra, ClusteringPrefixAndPagesOfOneKey) {
  auto o = options();
  cassandra_join_stats st;
  auto df = join_cassandra(left(true).lazy(), "tug_test", "join_t", {"p", "q", "c"}, o, {}, &st).collect();
  EXPECT_EQ(df.num_rows(), 250);  // one row per matched left row
  EXPECT_EQ(st.keys, 250);        // (p, c) pairs: i % 250 and i % 5 repeat together
  // pages of two rows: a key's five rows take three requests
  o.fetch_size = 2;
  auto paged = join_cassandra(left().lazy(), "tug_test", "join_t", {"p", "q"}, o, {}, &st).collect();
  EXPECT_EQ(paged.num_rows(), 250 * 5);
  EXPECT_EQ(st.requests, 200 * 3 + 50);
  // an empty frame: no lookups, the columns of the join
  auto none = join_cassandra(left().lazy().filter(col("x") < 0), "tug_test", "join_t", {"p", "q"}, o, {}, &st).collect();
  EXPECT_EQ(none.num_rows(), 0);
  EXPECT_EQ(st.keys, 0);
  EXPECT_EQ(none.schema().to_string(), "p: i32, q: str, x: i64, c: i32, v: f64, w: str");
}

TEST_F(JoinCassandra, BadKeysAreNamedErrors) {
  auto o = options();
  auto l = left(true).lazy();
  auto msg = [&](auto f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THROW(join_cassandra(l, "tug_test", "join_t", {"p"}, o), invalid_argument_error);
  EXPECT_NE(msg([&] { join_cassandra(l, "tug_test", "join_t", {"p"}, o); }).find("partition key column 'q'"),
            std::string::npos);
  EXPECT_THROW(join_cassandra(l, "tug_test", "join_t", {"p", "q", "x"}, o), column_not_found_error);
  EXPECT_THROW(join_cassandra(l.with_column(col("x").alias("v")), "tug_test", "join_t", {"p", "q", "v"}, o),
               invalid_argument_error);
  EXPECT_THROW(join_cassandra(l.with_column(col("x").alias("p")), "tug_test", "join_t", {"p", "q"}, o), type_error);
  EXPECT_THROW(join_cassandra(l, "tug_test", "no_such_t", {"p", "q"}, o), io_error);
  o.columns = {"nope"};
  EXPECT_THROW(join_cassandra(l, "tug_test", "join_t", {"p", "q"}, o), column_not_found_error);
}
