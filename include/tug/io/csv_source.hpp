#pragma once
/// A scan over CSV files (a file, a glob or a directory of .csv files), schema inferred from the first.
#include <string>
#include <vector>

#include "tug/io/csv/csv.hpp"
#include "tug/io/files.hpp"
#include "tug/io/source.hpp"

namespace tug::io {

class csv_source final : public table_source {
 public:
  /// Infers the schema from the first file. @throws io_error naming the file.
  csv_source(const std::string& path, csv::csv_options options);
  const tug::schema& schema() const override { return _schema; }
  std::string describe() const override;
  /// With a `limit`, reads the files in order only until it has `limit` rows, and of the last file
  /// only a prefix that holds them.
  std::vector<table> read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                          const engine_options& options, thread_pool& pool, memory_resource* mr,
                          const partition_hook& hook = {}, int64_t limit = -1) const override;
  /// Multi-rank execution: rank `rank`'s contiguous range of the files (size_t(n * rank / size) ..), in
  /// order; nullptr (every rank reads every file) when there are fewer files than ranks, since a file is
  /// not cut (a quoted field may hold a newline anywhere).
  std::shared_ptr<const table_source> rank_share(int rank, int size) const override;

 private:
  csv_source(const csv_source& whole, std::vector<file_entry> files);

  std::string _path;
  std::vector<file_entry> _files;
  csv::csv_options _options;
  tug::schema _schema;
};

}  // namespace tug::io
