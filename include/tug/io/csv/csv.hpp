#pragma once
/// tug's CSV reader and writer (RFC 4180 with options). Semantics are documented in docs/csv.md.
#include <cstdint>
#include <string>
#include <vector>

#include "tug/core/error.hpp"
#include "tug/core/table.hpp"
#include "tug/core/types.hpp"
#include "tug/memory/memory_resource.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug::io::csv {

/// Options of the CSV reader and writer.
struct csv_options {
  bool has_header = true;  ///< first record holds column names (else column_1, column_2, ...)
  char delimiter = ',';
  char quote = '"';
  char escape = 0;  ///< 0: quotes inside quoted fields are escaped by doubling; else this char escapes the next one
  std::vector<std::string> null_values = {""};  ///< unquoted fields equal to one of these are null
  char comment = 0;                             ///< 0: none; else records starting with this char are skipped
  int64_t skip_rows = 0;                        ///< physical lines skipped before the header
  int64_t infer_schema_rows =
      1000;  ///< records sampled for type inference (int64, float64, bool, date, timestamp, string)
  std::vector<field> schema_overrides;  ///< by name: force a type
  bool skip_malformed = false;     ///< false: io_error naming file, line and column; true: skip the row and count it
  int64_t chunk_bytes = 16 << 20;  ///< parallel parsing unit
  int64_t n_rows = -1;             ///< read at most this many records (-1: all)
  /// Reading: "utf8": string fields and header names must be valid UTF-8 (else a malformed row:
  /// io_error naming file, line and column, or skipped with skip_malformed); "utf8-lossy": invalid
  /// sequences become U+FFFD. Other values: invalid_argument_error.
  std::string encoding = "utf8";
};

/// Result of `read_csv`: the schema of the returned columns and one table per parsed chunk.
struct read_result {
  tug::schema schema;
  std::vector<table> partitions;
  int64_t skipped_rows = 0;  ///< malformed rows skipped (skip_malformed)
};

/// The schema `read_csv` would return for all columns: header names, inferred types, overrides.
/// @throws io_error when the file cannot be read or a sampled record is malformed.
tug::schema infer_schema(const std::string& path, const csv_options& opts = {});

/// Reads a CSV file. `columns` projects (in the given order; empty = all in file order): only those
/// fields are converted. Parses chunks of `opts.chunk_bytes` in parallel on `pool` (null: the global pool).
/// @throws io_error naming the file, line and column of the first malformed row (unless skip_malformed),
///         or naming a missing/unreadable file; column_not_found_error for an unknown projected column.
read_result read_csv(const std::string& path, const csv_options& opts = {},
                     const std::vector<std::string>& columns = {}, thread_pool* pool = nullptr,
                     memory_resource* mr = default_host_resource());

/// Number of records (rows after the header; empty lines and comments excluded) without converting values.
/// @throws io_error when the file cannot be read or has an unterminated quote.
int64_t count_rows(const std::string& path, const csv_options& opts = {});

/// Writes a header (when opts.has_header) and the rows of `parts`. Nulls are written as
/// opts.null_values[0] ("" by default); fields are quoted when needed; values are formatted like
/// format_value (ISO dates and timestamps, decimals with their scale).
/// @throws io_error when the file cannot be written; invalid_argument_error on column count mismatch.
void write_csv(const std::string& path, const tug::schema& s, const std::vector<table>& parts,
               const csv_options& opts = {});

/// CSV text of the rows (as `write_csv` writes to a file).
std::string to_csv_string(const tug::schema& s, const std::vector<table>& parts, const csv_options& opts = {});

}  // namespace tug::io::csv
