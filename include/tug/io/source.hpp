#pragma once
/// Table sources: what a scan reads. In-memory partitions, Parquet and CSV files implement the same
/// interface, so the optimizer pushes projections and predicates into any of them alike.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tug/core/scalar.hpp"
#include "tug/core/table.hpp"
#include "tug/expr/expr.hpp"
#include "tug/runtime/options.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {

/// Applied by a source to each partition as soon as it is complete, on the pool thread that made it,
/// with the partition's index in the output (a GPU consumer copies partitions to the device here, so
/// copies overlap the decoding of others; per-partition operators and streaming sinks run here).
using partition_hook = std::function<table(table, size_t index)>;

/// Applies `hook` (when set) to every partition of `parts` in parallel on `pool`.
inline void apply_partition_hook(std::vector<table>& parts, const partition_hook& hook, thread_pool& pool) {
  if (!hook) return;
  pool.parallel_for(static_cast<int64_t>(parts.size()),
                    [&](int64_t i) {
                      parts[static_cast<size_t>(i)] = hook(std::move(parts[static_cast<size_t>(i)]), static_cast<size_t>(i));
                    });
}

/// What is known of one column in a piece of a source's rows (a Parquet column chunk, an in-memory
/// partition) without reading its values: each part absent when unknown. min and max are typed as the
/// column and leave out nulls (and NaN).
struct column_statistics {
  std::optional<scalar> min, max;
  std::optional<int64_t> null_count;
  /// Distinct non-null values, or a lower bound of them (a Parquet chunk's dictionary size).
  std::optional<int64_t> distinct_count;
};

/// The statistics of some columns over one piece of a source's rows.
struct piece_statistics {
  int64_t rows = 0;
  std::vector<column_statistics> columns;  ///< in the order asked for
};

/// A source of partitions with a schema known before any data is read.
class table_source {
 public:
  virtual ~table_source() = default;
  virtual const tug::schema& schema() const = 0;
  /// One line for explain(): what and where, e.g. `DF; 17 columns, 2000000 rows in 2 partitions`.
  virtual std::string describe() const = 0;
  /// Reads the named columns, in that order, as partitions. A source may use `predicates` (boolean
  /// expressions over its columns) to skip data that cannot match, e.g. Parquet row groups by their
  /// statistics; the caller still filters every row, so skipping is an optimization only.
  /// Partitions are allocated from `mr`; `hook`, when set, maps every output partition on the thread
  /// that completed it. With `limit` >= 0 (slice pushdown; never with predicates) only the first
  /// `limit` rows are needed: a source reads as little as it can that holds them (it may return more,
  /// always the source's first rows in order). @throws io_error (files) naming the file and what is wrong.
  virtual std::vector<table> read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                                  const engine_options& options, thread_pool& pool, memory_resource* mr,
                                  const partition_hook& hook = {}, int64_t limit = -1) const = 0;
  /// read() for a GPU scan: partitions in device memory from `device_mr`, staged through `staging_mr`
  /// (pinned host memory where there is some). The default reads into `staging_mr`; without a `hook` it
  /// copies each partition to the device as it is complete, with one it hands the staged partition to
  /// the hook, whose GPU consumer copies it under its device slot (so that a thread waiting for a slot
  /// holds no device memory). The Parquet source decodes on the device (engine_options::gpu_parquet_reader).
  virtual std::vector<table> read_device(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                                         const engine_options& options, thread_pool& pool, memory_resource* device_mr,
                                         memory_resource* staging_mr, const partition_hook& hook = {},
                                         int64_t limit = -1) const;
  /// Late materialization (the `take` operator): the columns `columns` at global row positions, where
  /// position i is the i-th row of read() without predicates (its partitions concatenated in order).
  /// One table per `ids` column (int64 without nulls; any order, repeats allowed), its rows in that
  /// order. @throws not_implemented_error when the source cannot fetch rows by position (the default);
  /// internal_error for a position outside the source; io_error (files) naming the file.
  virtual std::vector<table> take_rows(const std::vector<std::string>& columns, const std::vector<column>& ids,
                                       thread_pool& pool, memory_resource* mr) const;
  /// What the source knows of the columns `columns` without reading data, piece by piece (the
  /// optimizer's selectivity estimates); empty when it knows nothing (the default).
  virtual std::vector<piece_statistics> statistics(const std::vector<std::string>& columns) const { return {}; }
  /// Columns that keep their rows together: all rows with equal values of these columns (taken
  /// together) are in one partition of read() (a Cassandra scan: the partition key, what the Spark
  /// connector's spanBy relies on). A group_by on all of them then aggregates each partition alone, with
  /// no merge of partitions (docs/architecture.md). Empty when nothing is known (the default).
  virtual std::vector<std::string> key_partitioned() const { return {}; }
  /// What read(columns, predicates) will ask its storage for, for explain() (a Cassandra scan: the CQL
  /// statement); empty when there is nothing to add (the default).
  virtual std::string describe_read(const std::vector<std::string>& columns, const std::vector<expr>& predicates) const {
    return {};
  }
  /// Multi-rank execution: a source that reads only rank `rank`'s share of this one's rows (of `size`
  /// ranks), the shares contiguous and in rank order, so that rank 0's rows come first; nullptr when
  /// the source cannot be split (the default: every rank then reads all of it). The scan still asks the
  /// whole source for statistics and size hints, so that every rank plans alike.
  virtual std::shared_ptr<const table_source> rank_share(int rank, int size) const { return nullptr; }
  /// One line on what the last read() did beyond its rows (requests, bytes, retries, latency), which the
  /// query's statistics append; empty when the source has nothing to add (the default).
  virtual std::string read_statistics() const { return {}; }
};

/// Partitions held in memory (what `data_frame::lazy()` scans).
class memory_source final : public table_source {
 public:
  memory_source(tug::schema s, std::vector<table> partitions)
      : _schema(std::move(s)), _partitions(std::move(partitions)) {}
  const tug::schema& schema() const override { return _schema; }
  std::string describe() const override;
  /// Slices of at most `target_partition_rows` rows, and enough of them to keep every thread busy;
  /// with a `limit`, exactly the first `limit` rows.
  std::vector<table> read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                          const engine_options& options, thread_pool& pool, memory_resource* mr,
                          const partition_hook& hook = {}, int64_t limit = -1) const override;
  /// Gathers from the partitions, one piece per run of ids in one partition.
  std::vector<table> take_rows(const std::vector<std::string>& columns, const std::vector<column>& ids,
                               thread_pool& pool, memory_resource* mr) const override;
  /// Per partition: its rows and the columns' exact null counts (no min or max).
  std::vector<piece_statistics> statistics(const std::vector<std::string>& columns) const override;
  const std::vector<table>& partitions() const { return _partitions; }
  /// Rows [N * rank / size, N * (rank + 1) / size) of the N rows, as slices of the partitions.
  std::shared_ptr<const table_source> rank_share(int rank, int size) const override;

 private:
  tug::schema _schema;
  std::vector<table> _partitions;
};

}  // namespace tug
