#pragma once
/// Apache Cassandra from the lazy API: scan_cassandra starts a query, sink_cassandra ends one
/// (docs/cassandra.md).
#include <string>
#include <vector>

#include "tug/api/lazy_frame.hpp"
#include "tug/io/cassandra_source.hpp"

namespace tug {

/// Lazily scans the table keyspace.table: split by token range and read in parallel; only the columns the
/// query uses are selected, and filters Cassandra can answer (the whole partition key with =, a
/// clustering prefix of = with ranges on its last column) go into the WHERE clause; tug filters every row
/// again. @throws cassandra::connection_error, cassandra::authentication_error, io_error (no such keyspace
/// or table), not_implemented_error (a column of a collection, tuple or user-defined type).
lazy_frame scan_cassandra(const std::string& keyspace, const std::string& table,
                          const io::cassandra_scan_options& options = {});

/// Options of sink_cassandra.
struct cassandra_write_options {
  io::cassandra::client_options client;
  std::string consistency = "LOCAL_QUORUM";
  /// Requests (single rows or batches) in flight at once; completed in order through a sliding window.
  int max_in_flight = 5;
  /// Unlogged batches hold rows of one partition key only, up to these limits (a lone row goes alone).
  int batch_max_rows = 100;
  int batch_max_bytes = 16 * 1024;
  int ttl_seconds = 0;             ///< > 0: USING TTL
  int64_t write_time_us = -1;      ///< >= 0: USING TIMESTAMP (microseconds since the epoch)
  /// INSERT ... IF NOT EXISTS (lightweight transactions): one row per request (never batched), a
  /// Write_timeout never retried; rows whose key exists count in rows_not_applied. Not with
  /// write_time_us (Cassandra refuses it: invalid_argument_error).
  bool if_not_exists = false;
  double max_rows_per_second = 0;  ///< > 0: a throughput cap
};

/// What a sink did.
struct cassandra_write_result {
  int64_t rows_written = 0;
  /// if_not_exists: rows the server did not apply because their primary key existed (left as they were).
  int64_t rows_not_applied = 0;
  int64_t requests = 0;  ///< single-row EXECUTEs and BATCHes
  int64_t batches = 0;
  int64_t retries = 0;
  int max_in_flight_seen = 0;  ///< the most requests that were in flight at once
  /// The session's figures over the writes: bytes out and in, request (batch) latency, requests on the
  /// wire at most, retries, failures.
  io::cassandra::metrics_snapshot metrics;
  /// The most host memory the query held at once (memory_limit's budget), the encoded rows waiting for
  /// their answers included.
  int64_t peak_memory = 0;
  /// The engine's statistics of the query (as lazy_frame::profile's, with engine_options::statistics),
  /// then the line "CASSANDRA SINK ks.t: rows written ..., batches ..., window at most ...; requests
  /// ..., retries ..., failures ..., ... MiB out, latency ...".
  std::string statistics;
};

/// Runs `q` and writes its rows into keyspace.table with a prepared INSERT. Before the first write, every
/// column of `q` must exist in the table with a type it can take (types.hpp: can_write), and the primary
/// key must be complete; every value is encoded before any is sent. Retryable failures are retried
/// (client.max_retries); when a request still fails, no further request starts, those in flight finish,
/// and the error says how many rows were written and which partition key failed.
/// @throws column_not_found_error, type_error, invalid_argument_error (nothing written); io_error (the
/// server's failure, with the rows written so far).
cassandra_write_result sink_cassandra(const lazy_frame& q, const std::string& keyspace, const std::string& table,
                                      const cassandra_write_options& options = {}, const engine_options& engine = {});

/// Options of join_cassandra.
struct cassandra_join_options {
  io::cassandra::client_options client;
  io::cassandra::type_options types;
  std::string consistency = "LOCAL_ONE";
  /// Lookups in flight at once, completed in order through a sliding window.
  int max_in_flight = 64;
  int fetch_size = 1000;  ///< rows per page of one key's rows
  /// Table columns to bring (empty: all); the `on` columns always come.
  std::vector<std::string> columns;
  /// inner: the frame's rows with a match; left: every frame row, nulls where no row matched.
  join_type how = join_type::inner;
};

/// What the lookups of join_cassandra did.
struct cassandra_join_stats {
  int64_t keys = 0;          ///< distinct non-null keys looked up
  int64_t requests = 0;      ///< EXECUTEs, later pages of a key included
  int64_t rows_fetched = 0;  ///< rows the table returned
  int max_in_flight_seen = 0;
  io::cassandra::metrics_snapshot metrics;  ///< the session's figures over the lookups
};

/// joinWithCassandraTable: runs `frame`, looks up each distinct key of its `on` columns in keyspace.table
/// (SELECT ... WHERE k1 = ? AND ..., prepared, routed to a replica, at most max_in_flight at once), and
/// joins the frame with the rows found on `on` (lazily; the lookups happen in this call). `on` names
/// columns of both: the whole partition key, then optionally a prefix of the clustering columns. Rows
/// whose key has a null match nothing. Table columns that clash with frame columns get the suffix
/// "_right". @throws column_not_found_error, type_error (a frame column the key type cannot take),
/// invalid_argument_error (an incomplete partition key, a clustering column out of order, `how` neither
/// inner nor left), io_error (a lookup that failed after its retries, naming the key).
lazy_frame join_cassandra(const lazy_frame& frame, const std::string& keyspace, const std::string& table,
                          const std::vector<std::string>& on, const cassandra_join_options& options = {},
                          const engine_options& engine = {}, cassandra_join_stats* stats = nullptr);

}  // namespace tug
