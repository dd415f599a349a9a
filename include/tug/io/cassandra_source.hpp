#pragma once
/// A scan of an Apache Cassandra table (scan_cassandra): the token ring split into ranges read in
/// parallel, the query's columns in the SELECT, and the predicates Cassandra can answer pushed into the
/// WHERE clause (docs/cassandra.md).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tug/io/cassandra/client.hpp"
#include "tug/io/cassandra/types.hpp"
#include "tug/io/source.hpp"

namespace tug::io {

/// Options of scan_cassandra.
struct cassandra_scan_options {
  cassandra::client_options client;
  cassandra::type_options types;
  int fetch_size = 1000;                   ///< rows per page
  std::string consistency = "LOCAL_ONE";   ///< of every read
  /// Target bytes of one split, against system.size_estimates.
  int64_t split_size_mb = 512;
  /// Splits of the ring when system.size_estimates knows nothing of the table (fresh data).
  int splits_when_unknown = 16;
  /// > 0: exactly this many splits, whatever the estimates say.
  int splits = 0;
  int reads_in_flight = 8;  ///< splits read at once (each one page request at a time)
  /// Partition keys that = and IN on every partition key column may name (the product of the IN lists'
  /// sizes) for the scan to read them one by one; above it the scan reads token ranges.
  int max_key_lookups = 1000;
  /// Leave out columns of types tug cannot represent (collections, UDTs, tuples) instead of raising.
  bool skip_unsupported_columns = false;
};

/// A column of a Cassandra table as system_schema.columns describes it.
struct cassandra_column {
  std::string name;
  cassandra::cql_type type;
  std::string kind;  ///< partition_key, clustering, regular, static
  int position = -1;
};

/// The columns of ks.table: partition key, clustering columns (both in key order), then the others by
/// name (the order of SELECT *). @throws io_error naming the keyspace or the table when missing.
std::vector<cassandra_column> load_cassandra_table(cassandra::session& s, const std::string& keyspace,
                                                   const std::string& table);

/// What a read sends: the statement and the values bound to it.
struct cassandra_read_plan {
  std::string cql;
  /// Without token ranges: the partition keys read, one request each (the partition key columns' values
  /// in key order, the product of the pushed = and IN lists); none when no row can match (an empty IN).
  std::vector<cassandra::bound_values> keys;
  cassandra::bound_values pushed;  ///< values of the pushed clustering predicates (after the key's)
  bool token_ranges = true;        ///< whether the statement ends with the two token bounds
  std::vector<std::string> pushed_text;  ///< the pushed predicates, for describe
};

/// A split of a scan: token ranges that lie on the same replicas, read from one of them.
struct cassandra_split {
  std::vector<cassandra::token_range> ranges;  ///< in token order
  std::vector<std::string> replicas;           ///< "address:port"; empty when the ring is unknown
};

class cassandra_source final : public table_source {
 public:
  /// Connects and reads the table's columns. @throws connection_error, authentication_error, io_error
  /// (missing keyspace or table), not_implemented_error (a column of an unsupported type).
  cassandra_source(std::string keyspace, std::string table, cassandra_scan_options options);
  const tug::schema& schema() const override { return _schema; }
  std::string describe() const override;
  /// Reads the splits, at most reads_in_flight at once, each from one of its replicas, one partition per
  /// split (rows of one Cassandra partition never span two partitions). @throws the client's errors.
  std::vector<table> read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                          const engine_options& options, thread_pool& pool, memory_resource* mr,
                          const partition_hook& hook = {}, int64_t limit = -1) const override;
  /// The partition key's columns: read() never puts rows of one Cassandra partition into two
  /// partitions (spanBy), so a group_by on the partition key needs no merge.
  std::vector<std::string> key_partitioned() const override;
  /// "CQL: <the statement read() sends>" with the pushed values (columns empty: what a count reads).
  std::string describe_read(const std::vector<std::string>& columns, const std::vector<expr>& predicates) const override;
  /// The statement read() sends for these columns and predicates.
  cassandra_read_plan plan_read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                                int64_t limit = -1) const;
  /// The number of splits asked for: `splits`, else the table's bytes (estimated_table_bytes of the
  /// coordinator's system.size_estimates) over split_size_mb, else splits_when_unknown.
  int split_count() const;
  /// The splits read() reads (cassandra::plan_splits over the session's ring and the keyspace's
  /// replication): about split_count(), at least one per set of replicas, ordered by their first token.
  std::vector<cassandra_split> splits() const;
  cassandra::session& session() const { return *_session; }
  /// What the last read() did (of this source or of one of its rank shares): requests, retries,
  /// failures, rows and bytes read, requests in flight at most, latency.
  cassandra::metrics_snapshot last_read_metrics() const;
  /// "CASSANDRA SCAN ks.t: " and last_read_metrics().
  std::string read_statistics() const override;
  /// Multi-rank execution: rank `rank`'s share of the rows (of `size` ranks), on the same session. A read
  /// by token ranges keeps the parts of its splits' ranges that lie in the rank's 1/size of the ring
  /// (cassandra::split_ring(size)[rank]): every token, so every Cassandra partition, is in exactly one
  /// share whatever splits each rank plans, and the shares follow in token order, as one rank reads
  /// them. Each split of a share is read from a replica on this machine where it has one
  /// (`local_replicas_first`): a rank co-located with a node reads its share's ranges that node holds
  /// from it. A read by partition keys keeps keys [n rank / size, n (rank + 1) / size) of its n keys.
  /// @throws internal_error for a rank outside [0, size).
  std::shared_ptr<const table_source> rank_share(int rank, int size) const override;

 private:
  cassandra_source(const cassandra_source& whole, int rank, int size);
  std::string _keyspace, _table;
  cassandra_scan_options _options;
  std::shared_ptr<cassandra::session> _session;
  std::vector<cassandra_column> _columns;  // those in the schema, in its order
  std::vector<cassandra_column> _partition_key, _clustering;
  tug::schema _schema;
  int _share_rank = 0, _share_size = 1;     // rank_share: this rank's share of size; 1: all rows
  std::vector<std::string> _local_addresses;  // rank_share: this machine's addresses
  struct last_read {
    std::mutex mutex;
    cassandra::metrics_snapshot metrics;
  };
  // the last read's figures; shared with the rank shares, so the whole source (whose statistics the
  // query asks for) reports the read of this rank's share
  std::shared_ptr<last_read> _last_read = std::make_shared<last_read>();
};

/// One row of a node's system.size_estimates: a token range (start, end] it owns (text, as the table
/// keeps tokens) and the table's partitions in it.
struct size_estimate {
  std::string range_start, range_end;
  int64_t mean_partition_size = 0, partitions_count = 0;
};

/// The bytes of a whole table from one node's system.size_estimates rows: their partitions times mean
/// size, divided by the fraction of the ring their ranges cover, since each node records only the ranges
/// it owns (as the Spark connector's DataSizeEstimates); 0 when the rows know nothing. A range whose
/// start equals its end is the whole ring. @throws io_error naming `table` for a token that is no number.
double estimated_table_bytes(const std::vector<size_estimate>& rows, const std::string& table);

/// The replicas ("address:port") whose address is one of `local` (addresses of this machine), or all of
/// `replicas` when none is.
std::vector<std::string> local_replicas_first(const std::vector<std::string>& replicas,
                                              const std::vector<std::string>& local);

/// The IPv4 and IPv6 addresses of this machine's network interfaces, as text (getifaddrs).
std::vector<std::string> local_addresses();

}  // namespace tug::io
