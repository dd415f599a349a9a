#pragma once
/// A CQL native protocol client (v5 where the node offers it, else v4; lz4 compression as an option): connections with stream-id pipelining (many requests in flight on one
/// socket, answered in any order), a small pool per host, STARTUP with PasswordAuthenticator, QUERY /
/// PREPARE / EXECUTE / BATCH, paging, re-preparing on Unprepared, retries with back-off of what may
/// succeed later, and timeouts on connect and on every request, so a dead server gives an error, never
/// a hang. TLS through OpenSSL; the ring from system.local / system.peers_v2 and token-aware routing of
/// prepared statements to replicas; schema agreement; metrics (docs/cassandra.md).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tug/io/cassandra/protocol.hpp"
#include "tug/io/cassandra/topology.hpp"

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
  /// Tries after the first of a request that the retry policy allows to send again
  /// (`server_error::retryable`: Unavailable, Overloaded, Is_bootstrapping, Read_timeout, and
  /// Write_timeout of an idempotent request; and an idempotent one whose connection broke), each after
  /// the back-off `retry_backoff`: `retry_delay_ms`, doubled at every try.
  int max_retries = 3;
  int retry_delay_ms = 100;
  /// Also connect to the nodes that system.peers_v2 (or system.peers) lists, not only the contact points.
  bool discover_nodes = true;
  /// Send a prepared statement (EXECUTE, BATCH) to a replica of its partition key, found from the bound
  /// key values (the prepared metadata's pk_indexes), Murmur3 and the keyspace's replication.
  bool token_aware = true;
  /// A node whose connection failed is skipped for this long (other nodes take its requests).
  int reconnect_delay_ms = 1000;
  /// After a schema change (CREATE, DROP, ALTER) on a cluster of several nodes, wait at most this long
  /// until every node up reports the same schema_version (system.local, system.peers_v2), as the
  /// DataStax drivers do; nodes known down (a DOWN event, a failed connect) are not waited for. Past it
  /// the change is applied and the statement throws schema_agreement_error.
  int schema_agreement_wait_ms = 10000;
  /// Native protocol version: 0 (the default) negotiates it, v5 where the node's SUPPORTED answer offers
  /// "5/v5", else v4; 4 or 5 insist (5 on a node without it is a connection_error). A session speaks the
  /// version its first connection negotiated on all its connections.
  int protocol_version = 0;
  /// Register one control connection for the cluster's STATUS_CHANGE and TOPOLOGY_CHANGE events, so a
  /// node reported down is skipped without a failed request, and taken again once reported up.
  bool topology_events = true;
  /// "lz4": frames compressed with lz4 (v5 segments, or v4 frame bodies); empty: none. A node that does
  /// not offer lz4 is a connection_error.
  std::string compression;
  tls_options tls;
};

/// The retry policy's back-off before retry `attempt` (0: the first): retry_delay_ms * 2^attempt, the
/// exponent at most 10.
inline std::chrono::milliseconds retry_backoff(const client_options& o, int attempt) {
  return std::chrono::milliseconds(static_cast<int64_t>(o.retry_delay_ms) << std::min(std::max(attempt, 0), 10));
}

class tls_context;
class tls_stream;
struct session_metrics;

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
  /// `metrics`, when given, counts this connection's requests in flight.
  connection(const std::string& host, const client_options& options, std::shared_ptr<const tls_context> tls = nullptr,
             session_metrics* metrics = nullptr);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Sends a request; the future gets its response (an ERROR one included). Waits while all stream ids
  /// are in use. @throws connection_error when the connection is broken.
  std::future<response> send(opcode op, std::string_view body, uint8_t flags = 0);
  /// Waits for `f` at most request_timeout_ms; an ERROR response becomes its typed exception (message
  /// with `context`). A timeout closes the connection (its stream ids cannot be trusted any more).
  /// @throws server_error subclasses, connection_error.
  response wait(std::future<response>& f, opcode sent, const std::string& context);
  /// send + wait.
  response request(opcode op, std::string_view body, const std::string& context);

  const std::string& host() const { return _host; }
  /// The protocol version the connection speaks (4 or 5), and whether its frames are lz4-compressed.
  uint8_t version() const { return _version.load(); }
  bool compressed() const { return _lz4; }
  bool defunct() const { return _defunct.load(); }
  int in_flight() const { return _in_flight.load(); }
  /// Marks the connection broken, wakes every waiter with `why`.
  void close(const std::string& why);
  /// Sends REGISTER for `events` and hands each EVENT body the node pushes to `handler`, on the reader
  /// thread (it must not block). @throws what request throws.
  void register_events(const std::vector<std::string>& events, std::function<void(const std::string&)> handler);

 private:
  void read_loop();
  void fail_all(const std::string& why);
  /// STARTUP and authentication; TLS refusals and plain connections to a TLS port get their own message.
  void startup();
  void authenticate();
  /// Sends a start-up request (OPTIONS, STARTUP, AUTH_RESPONSE) and waits at most connect_timeout_ms for
  /// its answer. @throws connection_error (silence), the typed error of an ERROR answer (with `context`).
  response startup_exchange(opcode op, std::string_view body, const std::string& context);
  /// OPTIONS / SUPPORTED before STARTUP: picks the protocol version and checks the compression.
  void negotiate();
  /// Hands a response to the request of its stream (decompressing a v4 lz4 body).
  void deliver(frame_header h, std::unique_ptr<std::string> body);
  /// v5: reads one segment and delivers the envelopes it completes; false when the connection ended.
  bool read_segment();
  /// Reads exactly n bytes (decrypted under TLS); false when the connection ended, _read_error says why.
  bool read_bytes(uint8_t* p, size_t n);

  std::string _host;
  client_options _options;
  int _fd = -1;
  std::unique_ptr<tls_stream> _tls;  // null without TLS
  session_metrics* _metrics = nullptr;
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
  std::atomic<uint8_t> _version{protocol_version};
  bool _lz4 = false;                      // set before STARTUP, read-only afterwards
  std::atomic<bool> _frame_after_next{false};  // v5: the answer to STARTUP is the last unframed frame
  std::atomic<bool> _framed{false};       // v5 segments from now on, both ways
  std::string _inbox;                     // reader thread only: envelope bytes of segments not yet delivered
  std::function<void(const std::string&)> _on_event;  // guarded by _mutex
};

/// A prepared statement: its id and the metadata of its bind markers and result.
struct prepared_statement {
  std::string cql;
  std::string id;
  std::string result_metadata_id;  ///< v5: sent with every EXECUTE
  result_metadata bind;
  result_metadata result;
};

/// The decoded answer to QUERY / EXECUTE / BATCH.
struct result {
  response frame;
  std::string host;  ///< the node that answered
  std::string tracing_id;  ///< with query_parameters::tracing: the trace's session id (uuid text)
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

/// A copy of a session's counters at one moment; `since` gives what happened between two.
struct metrics_snapshot {
  int64_t requests = 0;        ///< requests sent (tries after the first included)
  int64_t retries = 0;         ///< tries after the first (and re-prepared statements)
  int64_t failures = 0;        ///< requests that failed after their retries
  int64_t bytes_sent = 0;      ///< frames, headers included
  int64_t bytes_received = 0;
  int64_t rows_received = 0;   ///< rows of Rows results
  int64_t pages = 0;           ///< Rows results (pages of rows; a write's answer is none)
  int64_t latency_us_total = 0, latency_count = 0;  ///< from sending to the answer, requests that succeeded
  int64_t latency_us_max = 0;  ///< since the interval began (session_metrics::begin_interval)
  int max_in_flight = 0;       ///< requests on the wire at once, at most, since the interval began
  /// The counters minus `before`'s; the maxima as they are.
  metrics_snapshot since(const metrics_snapshot& before) const;
  double mean_latency_ms() const { return latency_count ? latency_us_total / 1000.0 / latency_count : 0; }
  /// "requests 12, retries 0, failures 0, rows 10000, pages 10, 1.2 MiB in, 0.1 MiB out, in flight at most 8,
  /// latency mean 1.20 ms max 5.00 ms".
  std::string to_string() const;
};

/// Statistics a session keeps, as the Spark connector's: requests, retries, failures, bytes each way,
/// rows read, request latency and requests in flight.
struct session_metrics {
  std::atomic<int64_t> requests{0}, retries{0}, failures{0}, bytes_sent{0}, bytes_received{0}, rows_received{0},
      pages{0};
  std::atomic<int64_t> latency_us_total{0}, latency_count{0}, latency_us_max{0};
  std::atomic<int> in_flight{0}, max_in_flight{0};
  metrics_snapshot snapshot() const;
  /// Starts an interval for the maxima (latency, in flight) and returns the counters now.
  metrics_snapshot begin_interval();
  void record_latency(int64_t us);
  void add_in_flight(int delta);
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
  /// EXECUTE of a prepared statement; prepares it again where a node answers Unprepared. It goes to one of
  /// `hosts` ("address:port", tried in turn from a rotating start) when given, else to a replica of its
  /// partition key (client_options::token_aware), else to any node.
  result execute(const prepared_statement& stmt, const bound_values& values, const query_parameters& params = {},
                 const std::vector<std::string>& hosts = {});
  /// Sends an EXECUTE now; `pending_request::get` waits for it (with retries and re-prepare).
  pending_request execute_async(std::shared_ptr<const prepared_statement> stmt, const bound_values& values,
                                const query_parameters& params = {}, bool idempotent = true);
  /// Sends an unlogged BATCH of executions of one prepared statement (routed by its first row's key).
  pending_request batch_async(std::shared_ptr<const prepared_statement> stmt, const std::vector<bound_values>& rows,
                              consistency level, bool idempotent = true);

  /// The options; protocol_version holds the version the session negotiated.
  const client_options& options() const { return _options; }
  session_metrics& metrics() { return _metrics; }
  /// The nodes requests may go to, "address:port": the contact points that answered, then the nodes
  /// discovered (client_options::discover_nodes), then those that joined later.
  std::vector<std::string> hosts() const;
  /// The nodes and tokens, read at connection and again after the cluster reports a topology change
  /// (empty when token_aware and discover_nodes are both off, or the partitioner is not Murmur3).
  token_ring ring() const;
  /// The replication of a keyspace (read once, then cached). @throws io_error naming a missing keyspace.
  replication_strategy replication(const std::string& keyspace);
  /// The replicas of a token in a keyspace, "address:port", the owner of the token first; empty when the
  /// ring is unknown or the strategy is LocalStrategy.
  std::vector<std::string> replicas(const std::string& keyspace, int64_t token);
  /// The replicas of the partition key of a prepared statement's bound values (empty when the statement's
  /// metadata has no partition key indexes, a key value is null, or the ring is unknown).
  std::vector<std::string> route(const prepared_statement& stmt, const bound_values& values);
  /// False while the cluster reports the node ("address:port") down (client_options::topology_events):
  /// requests go to the other nodes, and to it only when none is up.
  bool is_up(const std::string& host) const;
  /// The events the cluster pushed, in order: "DOWN 127.0.0.3:9042", "UP ...", "NEW_NODE ...",
  /// "REMOVED_NODE ...". A topology change (or UP of a node the session does not know) has the next
  /// request read the ring again (system.local, system.peers_v2): a node that joined takes requests and
  /// its token ranges.
  std::vector<std::string> events() const;
  /// How many times the ring was read (1 after connecting, when it was read).
  int ring_reads() const { return _ring_reads.load(); }

 private:
  friend class pending_request;
  struct host_pool {
    std::string host;
    std::mutex mutex;
    std::vector<std::shared_ptr<connection>> connections;
    std::atomic<int64_t> down_until_ms{0};  // steady clock; a failed connect skips the node until then
    std::atomic<bool> reported_down{false};  // a STATUS_CHANGE DOWN (or REMOVED_NODE) event, until UP
  };
  /// The control connection for events, (re)opened on a node up when there is none or it broke.
  void watch_events();
  /// Applies an EVENT body (reader thread of the control connection).
  void on_event(const std::string& body, const std::string& host);
  /// Whether the control connection broke (under the lock).
  bool control_broken() const {
    std::lock_guard lk(_events_mutex);
    return !_control || _control->defunct();
  }
  /// A live connection (reconnecting a broken one), preferring the least loaded: on one of `preferred`
  /// when one is up, else round robin over the nodes up (over all of them when none is).
  std::shared_ptr<connection> acquire(const std::vector<std::string>& preferred = {});
  std::shared_ptr<connection> acquire_on(host_pool& h);
  void reprepare(connection& c, const std::string& id);
  /// A PREPARE body for `cql` in the session's protocol version.
  std::string prepare_body(const std::string& cql) const;
  /// A QUERY at consistency ONE on that connection, without retries (system tables of that node).
  static result query_on(connection& c, const std::string& cql);
  /// The hosts, their lookup by "address:port" and the ring; replaced whole when the ring is read again,
  /// so a request works on one consistent copy. Host pools are never removed.
  struct topology_view {
    std::vector<host_pool*> hosts;
    std::unordered_map<std::string, host_pool*> by_host;
    std::shared_ptr<const token_ring> ring = std::make_shared<const token_ring>();
  };
  std::shared_ptr<const topology_view> view() const {
    std::lock_guard lk(_view_mutex);
    return _view;
  }
  /// Reads system.local and system.peers(_v2) through `c`; adds the peers' pools (discover_nodes) and
  /// publishes the new view. Returns false when a peer had no tokens yet (joining: read again later).
  bool load_ring(connection& c);
  /// Reads the ring again after a topology change (one thread at a time; on failure, again after
  /// reconnect_delay_ms).
  void refresh_ring();
  /// Waits (schema_agreement_wait_ms at most) until `host` and its peers that are not known down (a DOWN
  /// event, a failed connect) report one schema version. @throws schema_agreement_error past the wait,
  /// naming `statement`, the nodes and their versions.
  void wait_for_schema_agreement(const std::string& host, const std::string& statement);
  /// The replicas of each position of `ring` under the keyspace's replication (cached per ring).
  std::shared_ptr<const std::vector<std::vector<size_t>>> replica_table(const std::string& keyspace,
                                                                        const std::shared_ptr<const token_ring>& ring);

  client_options _options;
  uint8_t _version = protocol_version;  // negotiated by the first connection; every connection speaks it
  std::shared_ptr<const tls_context> _tls;  // null without TLS
  std::vector<std::unique_ptr<host_pool>> _pools;  // owns the pools; grows under _view_mutex
  mutable std::mutex _view_mutex;
  std::shared_ptr<const topology_view> _view = std::make_shared<const topology_view>();
  std::atomic<bool> _ring_stale{false};  // a topology event came: read the ring again
  std::atomic<int64_t> _ring_retry_ms{0};
  std::atomic<int> _ring_reads{0};
  std::mutex _refresh_mutex;
  // addresses of nodes an event announced (NEW_NODE, UP) that the ring did not hold: the ring is read
  // again until they are in it (a node appears in system.peers some time after its event), a bounded
  // number of times
  std::mutex _awaited_mutex;
  std::vector<std::string> _awaited;
  int _awaited_reads = 0;
  struct replica_entry {
    replication_strategy strategy;
    std::shared_ptr<const token_ring> ring;  // the ring the table was computed on
    std::shared_ptr<const std::vector<std::vector<size_t>>> table;
  };
  std::mutex _replication_mutex;
  std::unordered_map<std::string, replica_entry> _replication;  // by keyspace
  std::atomic<uint64_t> _next_host{0};
  std::mutex _prepared_mutex;
  std::unordered_map<std::string, std::shared_ptr<const prepared_statement>> _prepared;  // by cql
  std::unordered_map<std::string, std::shared_ptr<const prepared_statement>> _by_id;
  session_metrics _metrics;
  mutable std::mutex _events_mutex;  // guards _control's replacement and _events
  std::shared_ptr<connection> _control;
  std::atomic<int64_t> _control_retry_ms{0};
  std::atomic<bool> _control_up{false};
  std::vector<std::string> _events;
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
  uint8_t _flags = 0;                   // frame flags (tracing)
  std::chrono::steady_clock::time_point _sent_at;
  std::vector<std::string> _preferred;  // replicas, or the hosts the caller chose
  std::shared_ptr<connection> _conn;
  std::future<response> _future;
};

/// Decodes a RESULT response. @throws connection_error when malformed.
result decode_result(response r, const std::string& host);

}  // namespace tug::io::cassandra
