#include "tug/io/csv_source.hpp"

#include <algorithm>

#include "tug/core/error.hpp"
#include "tug/runtime/query_control.hpp"

namespace tug::io {

csv_source::csv_source(const std::string& path, csv::csv_options options)
    : _path(path), _files(expand_paths(path, ".csv")), _options(std::move(options)) {
  _schema = csv::infer_schema(_files[0].path, _options);
  // every file is read with the first file's schema, so a differing file fails with its own name
  _options.schema_overrides = _schema.fields();
}

csv_source::csv_source(const csv_source& whole, std::vector<file_entry> files)
    : _path(whole._path), _files(std::move(files)), _options(whole._options), _schema(whole._schema) {}

std::shared_ptr<const table_source> csv_source::rank_share(int rank, int size) const {
  if (size < 1 || rank < 0 || rank >= size)
    throw internal_error("rank_share: rank " + std::to_string(rank) + " of " + std::to_string(size));
  const auto n = static_cast<int64_t>(_files.size());
  if (n < size) return nullptr;
  const int64_t lo = n * rank / size, hi = n * (rank + 1) / size;
  return std::shared_ptr<const table_source>(
      new csv_source(*this, std::vector<file_entry>(_files.begin() + lo, _files.begin() + hi)));
}

std::string csv_source::describe() const {
  return "CSV SCAN " + _path + "; " + std::to_string(_files.size()) + " files, " + std::to_string(_schema.size()) +
         " columns";
}

std::vector<table> csv_source::read(const std::vector<std::string>& columns, const std::vector<expr>&,
                                    const engine_options&, thread_pool& pool, memory_resource* mr,
                                    const partition_hook& hook, int64_t limit) const {
  std::vector<table> out;
  csv::csv_options o = _options;
  for (auto& f : _files) {
    if (limit == 0) break;
    check_cancelled();  // between files (the reader checks between chunks: thread_pool)
    // with a limit, only a prefix of the file (the reader reads a growing prefix until it has n_rows)
    if (limit > 0) o.n_rows = _options.n_rows >= 0 ? std::min(_options.n_rows, limit) : limit;
    csv::read_result r = csv::read_csv(f.path, o, columns, &pool, mr);
    for (auto& p : r.partitions) {
      if (limit > 0) limit -= std::min(limit, p.num_rows());
      out.push_back(std::move(p));
    }
  }
  apply_partition_hook(out, hook, pool);
  return out;
}

}  // namespace tug::io
