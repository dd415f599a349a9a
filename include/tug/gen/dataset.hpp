#pragma once
/// Generated data sets: tables produced in fixed chunks, each chunk a pure function of (seed, table,
/// chunk index). Written chunk by chunk as DIR/<table>/part-NNNNN.parquet on a thread pool (memory
/// bounded by threads x chunk size; same bytes for any thread count), or collected in memory.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tug/api/data_frame.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug::gen {

/// One output table: its name (the directory under the output) and its schema.
struct table_spec {
  std::string name;
  tug::schema schema;
};

/// Generates one or more tables in `chunks` chunks: `generate(i)` returns partition i of each table of
/// `tables`, in that order. Tables generated together share a chunk (e.g. orders and their lineitems).
struct chunked_generator {
  std::vector<table_spec> tables;
  int64_t chunks = 0;
  std::function<std::vector<table>(int64_t chunk)> generate;
};

/// A data set: its generators, largest first (they are scheduled in this order).
struct dataset {
  std::string name;
  std::vector<chunked_generator> generators;
};

/// Options of `write_dataset`.
struct write_config {
  std::string out;       ///< output directory; each table goes to out/<table>/
  int threads = 0;       ///< 0: hardware concurrency
  bool progress = true;  ///< progress lines on stderr
  io::parquet::write_options parquet;
};

/// What `write_dataset` wrote.
struct write_summary {
  struct table_stats {
    int64_t rows = 0, files = 0, bytes = 0;
  };
  std::map<std::string, table_stats> tables;
  int64_t rows = 0, bytes = 0;
  double seconds = 0;
};

/// Writes every chunk of every table as out/<table>/part-NNNNN.parquet (NNNNN = chunk index). Existing
/// part-*.parquet files of those tables are removed first.
/// @throws io_error when a directory or file cannot be written.
write_summary write_dataset(const dataset& d, const write_config& config);

/// Generates every chunk in memory: table name -> frame with one partition per chunk.
std::map<std::string, data_frame> generate_dataset(const dataset& d, int threads = 0);

/// Number of chunks of `rows` rows split into chunks of `chunk_rows` (at least 1).
int64_t chunk_count(int64_t rows, int64_t chunk_rows);

}  // namespace tug::gen
