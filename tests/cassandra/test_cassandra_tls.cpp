// The Cassandra client over TLS against a real Apache Cassandra node with client encryption required
// (scripts/cassandra.sh start DIR PORT tls: a test CA, the node's certificate for 127.0.0.1, client
// certificates, expired ones). ctest starts the node (fixture cassandra_tls); run directly, the first
// test of the suite starts it and the binary stops it at the end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "tug/api/cassandra.hpp"
#include "tug/api/data_frame.hpp"
#include "lazy_server.hpp"

extern char** environ;

using namespace tug;
namespace cq = tug::io::cassandra;

namespace {

const std::string tls_dir = TUG_CASSANDRA_TLS_DIR;
const std::string certs = tls_dir + "/certs/";
int tls_port = 0;
auto* tls_server =
    tug::testing::add_lazy_server(tls_dir, "start " + tls_dir + " auto tls", "stop " + tls_dir, "status " + tls_dir);

int read_port(const std::string& dir) {
  std::ifstream f(dir + "/port");
  int p = 0;
  f >> p;
  return p;
}

class CassandraTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tls_port = tls_server->ensure();
    ASSERT_GT(tls_port, 0) << "could not start the TLS Cassandra node (scripts/cassandra.sh)";
  }

  /// Options that connect: the test CA, the client certificate, the superuser.
  static cq::client_options good() {
    cq::client_options o;
    o.port = tls_port;
    o.username = "cassandra";
    o.password = "cassandra";
    o.connect_timeout_ms = 5000;
    o.request_timeout_ms = 20000;
    o.max_retries = 1;
    o.tls.enabled = true;
    o.tls.ca_file = certs + "ca.pem";
    o.tls.cert_file = certs + "client.pem";
    o.tls.key_file = certs + "client.key";
    return o;
  }
};

/// Runs `f`, which must throw E within 30 s; returns the message.
template <class E, class F>
std::string error_of(F f) {
  auto t0 = std::chrono::steady_clock::now();
  std::string m;
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    m = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another error: " << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << m;
  return m;
}

/// A free TCP port on 127.0.0.1 (bound and released).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool listening(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

TEST_F(CassandraTls, TrustedCertificatesConnectAndCarryData) {
  cq::session s(good());
  s.query("CREATE KEYSPACE IF NOT EXISTS tug_tls WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
  s.query("DROP TABLE IF EXISTS tug_tls.t");
  s.query("CREATE TABLE tug_tls.t (p int, c int, v text, PRIMARY KEY (p, c))");
  // enough rows and bytes for many TLS records each way, over pipelined connections
  const int64_t n = 5000;
  std::vector<int32_t> p(n), c(n);
  std::vector<std::optional<std::string>> v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)] = static_cast<int32_t>(i % 101);
    c[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    v[static_cast<size_t>(i)] = std::string(static_cast<size_t>(i % 300), static_cast<char>('a' + i % 26));
  }
  auto df = data_frame::from_columns({{"p", make_column<int32_t>(type_id::int32, p)},
                                      {"c", make_column<int32_t>(type_id::int32, c)},
                                      {"v", make_string_column(v)}});
  cassandra_write_options w;
  w.client = good();
  w.consistency = "ONE";
  w.max_in_flight = 16;
  EXPECT_EQ(sink_cassandra(df.lazy(), "tug_tls", "t", w).rows_written, n);
  io::cassandra_scan_options r;
  r.client = good();
  r.splits = 8;
  r.fetch_size = 200;
  auto back = scan_cassandra("tug_tls", "t", r).sort("c").collect().to_table();
  ASSERT_EQ(back.num_rows(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(back[1].value<int32_t>(i), i);
    ASSERT_EQ(back[2].string(i), *v[static_cast<size_t>(i)]);
  }
  // the node's certificate names 127.0.0.1: host verification passes there, fails for "localhost"
  auto o = good();
  o.tls.verify_host = true;
  EXPECT_NO_THROW(cq::session{o});
  o.contact_points = {"localhost"};
  std::string m = error_of<cq::tls_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("not trusted"), std::string::npos) << m;
  EXPECT_NE(m.find("verify_host"), std::string::npos) << m;
}

TEST_F(CassandraTls, UntrustedCaIsAClearError) {
  auto o = good();
  o.tls.ca_file = certs + "other-ca.pem";
  std::string m = error_of<cq::tls_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("127.0.0.1:" + std::to_string(tls_port)), std::string::npos) << m;
  EXPECT_NE(m.find("certificate is not trusted"), std::string::npos) << m;
  EXPECT_NE(m.find("other-ca.pem"), std::string::npos) << m;
  // without verification the same CA file connects (encryption without server authentication)
  o.tls.verify_certificate = false;
  EXPECT_NO_THROW(cq::session{o});
}

TEST_F(CassandraTls, ExpiredOrMissingClientCertificateIsRefused) {
  auto o = good();
  o.tls.cert_file = certs + "client-expired.pem";
  o.tls.key_file = certs + "client-expired.key";
  std::string m = error_of<cq::tls_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("refused the TLS connection"), std::string::npos) << m;
  EXPECT_NE(m.find("certificate expired"), std::string::npos) << m;
  EXPECT_NE(m.find("client-expired.pem"), std::string::npos) << m;
  o.tls.cert_file.clear();
  o.tls.key_file.clear();
  m = error_of<cq::tls_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("refused the TLS connection"), std::string::npos) << m;
  EXPECT_NE(m.find("tls.cert_file"), std::string::npos) << m;
}

TEST_F(CassandraTls, ExpiredServerCertificateIsNotTrusted) {
  // a TLS server (openssl s_server) presenting a certificate of the test CA that expired in 2020: the
  // handshake fails on the client's check, before any CQL
  int port = free_port();
  std::string accept = "127.0.0.1:" + std::to_string(port), cert = certs + "server-expired.pem",
              key = certs + "server-expired.key";
  std::vector<std::string> args = {"timeout", "60", "openssl", "s_server", "-quiet", "-accept", accept, "-cert", cert,
                                   "-key", key};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;  // s_server reports the client's alert on stderr
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "timeout", &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  ASSERT_EQ(rc, 0);
  for (int i = 0; i < 100 && !listening(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto o = good();
  o.contact_points = {accept};
  std::string m = error_of<cq::tls_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("certificate is not trusted: certificate has expired"), std::string::npos) << m;
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

TEST_F(CassandraTls, WrongCredentialsOverTls) {
  auto o = good();
  o.password = "wrong";
  std::string m = error_of<cq::authentication_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("Bad_credentials"), std::string::npos) << m;
}

TEST_F(CassandraTls, PlainAndTlsMismatchAreClearErrors) {
  // no TLS against the TLS port: the node closes the connection; the message suggests tls.enabled
  auto o = good();
  o.tls.enabled = false;
  o.max_retries = 0;
  std::string m = error_of<cq::connection_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("tls.enabled"), std::string::npos) << m;
  // TLS against the plain node of the other tests
  int plain = read_port(TUG_CASSANDRA_DIR);
  if (plain > 0 && listening(plain)) {
    o = good();
    o.port = plain;
    m = error_of<cq::connection_error>([&] { cq::session{o}; });
    EXPECT_NE(m.find("client_encryption_options"), std::string::npos) << m;
  }
  // options that cannot work are named before any connection
  o = good();
  o.tls.key_file.clear();
  m = error_of<invalid_argument_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("tls.key_file"), std::string::npos) << m;
  o = good();
  o.tls.ca_file = certs + "no-such-ca.pem";
  m = error_of<invalid_argument_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("no-such-ca.pem"), std::string::npos) << m;
  o = good();
  o.tls.key_file = certs + "ca.key";  // a key, but not the certificate's
  m = error_of<invalid_argument_error>([&] { cq::session{o}; });
  EXPECT_NE(m.find("is not the key of tls.cert_file"), std::string::npos) << m;
}
