#pragma once
/// Reading and writing files from the lazy API: scan_parquet / scan_csv start a query, sink_* end one.
#include <string>

#include "tug/api/lazy_frame.hpp"
#include "tug/io/csv/csv.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug {

/// Lazily scans Parquet: a file, a glob ("data/*.parquet") or a directory (every .parquet file below
/// it; hive-style `key=value` directories become string columns). Only the columns the query uses
/// are read, and row groups whose statistics rule out the query's filters are skipped.
/// @throws io_error naming the file (missing, corrupt, or a schema that differs between files);
/// not_implemented_error naming the file and the columns tug cannot represent (nested, decimals of
/// precision above 38), unless `options.skip_unsupported_columns` leaves them out.
lazy_frame scan_parquet(const std::string& path, const io::parquet::read_options& options = {});
/// Lazily scans CSV files (a file, glob or directory of .csv files).
lazy_frame scan_csv(const std::string& path, const io::csv::csv_options& options = {});

/// Runs `q` and writes its result as Parquet, each partition as soon as it is ready (a scan and the
/// per-partition operators above it stream into the file; one file keeps the result's order). A path
/// ending in '/' (or an existing directory) gets one file per output partition with rows, named by
/// its index, `part-00000.parquet`, ... (one empty file when no partition has rows). On several ranks
/// one file is written on rank 0, and a directory gets each rank's own share without gathering, named
/// by rank and index (`part-r0001-00000.parquet`; in name order, the result's rows in order). An output
/// that is not finished because the query failed is removed.
void sink_parquet(const lazy_frame& q, const std::string& path, const io::parquet::write_options& options = {},
                  const engine_options& engine = {});
/// Runs `q` and writes its result as CSV (one file), each partition as soon as it is ready, in order.
void sink_csv(const lazy_frame& q, const std::string& path, const io::csv::csv_options& options = {},
              const engine_options& engine = {});

}  // namespace tug
