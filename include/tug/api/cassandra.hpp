#pragma once
/// Apache Cassandra from the lazy API: scan_cassandra starts a query, sink_cassandra ends one
/// (docs/cassandra.md).
#include <string>

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
  bool if_not_exists = false;      ///< INSERT ... IF NOT EXISTS (lightweight transactions; never retried)
  double max_rows_per_second = 0;  ///< > 0: a throughput cap
};

/// What a sink did.
struct cassandra_write_result {
  int64_t rows_written = 0;
  int64_t requests = 0;  ///< single-row EXECUTEs and BATCHes
  int64_t batches = 0;
  int64_t retries = 0;
  int max_in_flight_seen = 0;  ///< the most requests that were in flight at once
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

}  // namespace tug
