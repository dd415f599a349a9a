#pragma once
/// A CQL native protocol v4 client: connections with stream-id pipelining (many requests in flight on one
/// socket, answered in any order), a small pool per host, STARTUP with PasswordAuthenticator, QUERY /
/// PREPARE / EXECUTE / BATCH, paging, re-preparing on Unprepared, retries with back-off of what may
/// succeed later, and timeouts on connect and on every request, so a dead server gives an error, never
/// a hang.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tug/io/cassandra/protocol.hpp"

namespace tug::io::cassandra {

/// TLS (through OpenSSL) on every connection, as Cassandra's client_encryption_options expect it.
struct tls_options {
  bool enabled = false;
  /// PEM file of the certificate authorities that sign the nodes' certificates; empty: the system's
  /// default trust store.
  std::string ca_file;
  /// A client certificate (PEM, its chain after it) and its private key (PEM, unencrypted), for nodes with
  /// require_client_auth; both or neither.
  std::string cert_file, key_file;
  /// Check the node's certificate against ca_file (validity period included). Off: any certificate is
  /// accepted (encryption without authentication of the server).
  bool verify_certificate = true;
  /// Also check that the certificate names the host connected to (its IP address or DNS name), as the
  /// DataStax drivers' PEER_IDENTITY. Off by default, as in those drivers and the Spark connector.
  bool verify_host = false;
};

/// How to reach and talk to a cluster.
struct client_options {
  /// Nodes to connect to, "host" or "host:port" (`port` when none is given). Requests are spread over
  /// every contact point that answers.
  std::vector<std::string> contact_points = {"127.0.0.1"};
  int port = 9042;
  /// PasswordAuthenticator credentials; empty when the cluster does not ask for them.
  std::string username, password;
  int connect_timeout_ms = 5000;   ///< TCP connect plus STARTUP / authentication
  int request_timeout_ms = 12000;  ///< from sending a request to its answer
  int connections_per_host = 2;
  int max_requests_per_connection = 1024;  ///< stream ids in use at once on one connection
  /// Tries after the first of a request that failed with a timeout, Unavailable or Overloaded (and of an
  /// idempotent one whose connection broke), with exponential back-off from `retry_delay_ms`.
  int max_retries = 3;
  int retry_delay_ms = 100;
  tls_options tls;
};

class tls_context;
class tls_stream;

/// A response frame: header and body.
struct response {
  frame_header header;
  std::unique_ptr<std::string> body;  ///< stable address: results point into it
};

/// One TCP connection to one node, set up (STARTUP, authentication) when constructed. Thread-safe:
/// any thread may send; a reader thread hands each answer to the request of its stream id.
class connection {
 public:
  /// Connects to `host` (address:port), over TLS when options.tls.enabled (with `tls`, or a context made
  /// from options.tls when null). @throws connection_error (refused, unreachable, no answer within
  /// connect_timeout_ms), tls_error (certificate not trusted or rejected, no TLS on the other side) or
  /// authentication_error (wrong credentials, or credentials missing).
  connection(const std::string& host, const client_options& options, std::shared_ptr<const tls_context> tls = nullptr);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Sends a request; the future gets its response (an ERROR one included). Waits while all stream ids
  /// are in use. @throws connection_error when the connection is broken.
  std::future<response> send(opcode op, std::string_view body);
  /// Waits for `f` at most request_timeout_ms; an ERROR response becomes its typed exception (message
  /// with `context`). A timeout closes the connection (its stream ids cannot be trusted any more).
  /// @throws server_error subclasses, connection_error.
  response wait(std::future<response>& f, opcode sent, const std::string& context);
  /// send + wait.
  response request(opcode op, std::string_view body, const std::string& context);

  const std::string& host() const { return _host; }
  bool defunct() const { return _defunct.load(); }
  int in_flight() const { return _in_flight.load(); }
  /// Marks the connection broken, wakes every waiter with `why`.
  void close(const std::string& why);

 private:
  void read_loop();
  void fail_all(const std::string& why);
  /// STARTUP and authentication; TLS refusals and plain connections to a TLS port get their own message.
  void startup();
  void authenticate();
  /// Reads exactly n bytes (decrypted under TLS); false when the connection ended, _read_error says why.
  bool read_bytes(uint8_t* p, size_t n);

  std::string _host;
  client_options _options;
  int _fd = -1;
  std::unique_ptr<tls_stream> _tls;  // null without TLS
  std::string _read_error;           // reader thread only
  std::thread _reader;
  std::mutex _write_mutex;
  std::mutex _mutex;  // guards _pending, _free, _close_reason
  std::condition_variable _free_cv;
  std::vector<std::optional<std::promise<response>>> _pending;  // by stream id
  std::vector<int16_t> _free;
  std::string _close_reason;
  std::atomic<bool> _defunct{false};
  std::atomic<int> _in_flight{0};
};

/// A prepared statement: its id and the metadata of its bind markers and result.
struct prepared_statement {
  std::string cql;
  std::string id;
  result_metadata bind;
  result_metadata result;
};

/// The decoded answer to QUERY / EXECUTE / BATCH.
struct result {
  response frame;
  std::string host;  ///< the node that answered
  result_kind kind = result_kind::void_;
  rows_result rows;  ///< kind rows only; points into frame.body
};

/// Bound values of one statement, encoded: `count` [value]s.
struct bound_values {
  int16_t count = 0;
  std::string bytes;
};

/// A request sent and not yet waited for (see session::execute_async).
class pending_request;

/// Statistics a session keeps (rows and bytes, requests, retries, failures).
struct session_metrics {
  std::atomic<int64_t> requests{0}, retries{0}, failures{0}, bytes_sent{0}, bytes_received{0};
};

/// Connections to the contact points of one cluster, and the statements prepared on them.
class session {
 public:
  /// Connects to every contact point (at least one must answer). @throws connection_error listing each
  /// contact point and why it failed; authentication_error.
  explicit session(client_options options);
  ~session();

  /// Runs a statement with QUERY. @throws server_error subclasses (naming the host and the statement),
  /// connection_error.
  result query(const std::string& cql, const query_parameters& params = {}, const bound_values& values = {});
  /// Prepares `cql` (once per session; later calls return the cached statement).
  std::shared_ptr<const prepared_statement> prepare(const std::string& cql);
  /// EXECUTE of a prepared statement; prepares it again where a node answers Unprepared.
  result execute(const prepared_statement& stmt, const bound_values& values, const query_parameters& params = {});
  /// Sends an EXECUTE now; `pending_request::get` waits for it (with retries and re-prepare).
  pending_request execute_async(std::shared_ptr<const prepared_statement> stmt, const bound_values& values,
                                const query_parameters& params = {}, bool idempotent = true);
  /// Sends an unlogged BATCH of executions of one prepared statement.
  pending_request batch_async(std::shared_ptr<const prepared_statement> stmt, const std::vector<bound_values>& rows,
                              consistency level, bool idempotent = true);

  const client_options& options() const { return _options; }
  session_metrics& metrics() { return _metrics; }
  /// The hosts connected, "address:port".
  std::vector<std::string> hosts() const;

 private:
  friend class pending_request;
  struct host_pool {
    std::string host;
    std::mutex mutex;
    std::vector<std::shared_ptr<connection>> connections;
  };
  /// A live connection (reconnecting a broken one), preferring the least loaded; round robin over hosts.
  std::shared_ptr<connection> acquire();
  std::shared_ptr<connection> acquire_on(host_pool& h);
  void reprepare(connection& c, const std::string& id);

  client_options _options;
  std::shared_ptr<const tls_context> _tls;  // null without TLS
  std::vector<std::unique_ptr<host_pool>> _hosts;
  std::atomic<uint64_t> _next_host{0};
  std::mutex _prepared_mutex;
  std::unordered_map<std::string, std::shared_ptr<const prepared_statement>> _prepared;  // by cql
  std::unordered_map<std::string, std::shared_ptr<const prepared_statement>> _by_id;
  session_metrics _metrics;
};

class pending_request {
 public:
  pending_request() = default;
  pending_request(pending_request&&) = default;
  pending_request& operator=(pending_request&&) = default;
  /// Waits for the answer, re-preparing on Unprepared and retrying what session::options allow.
  /// @throws server_error subclasses, connection_error.
  result get();
  bool valid() const { return _session != nullptr; }

 private:
  friend class session;
  void send();
  session* _session = nullptr;
  opcode _op = opcode::query;
  std::string _body;
  std::string _context;
  bool _idempotent = true;
  std::shared_ptr<connection> _conn;
  std::future<response> _future;
};

/// Decodes a RESULT response. @throws connection_error when malformed.
result decode_result(response r, const std::string& host);

}  // namespace tug::io::cassandra
