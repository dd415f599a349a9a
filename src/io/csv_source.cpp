#include "tug/io/csv_source.hpp"

#include <algorithm>

#include "tug/runtime/query_control.hpp"

namespace tug::io {

csv_source::csv_source(const std::string& path, csv::csv_options options)
    : _path(path), _files(expand_paths(path, ".csv")), _options(std::move(options)) {
  _schema = csv::infer_schema(_files[0].path, _options);
  // every file is read with the first file's schema, so a differing file fails with its own name
  _options.schema_overrides = _schema.fields();
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
