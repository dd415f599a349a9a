#include "tug/io/csv_source.hpp"

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
                                    const partition_hook& hook) const {
  std::vector<table> out;
  for (auto& f : _files) {
    csv::read_result r = csv::read_csv(f.path, _options, columns, &pool, mr);
    for (auto& p : r.partitions)
      out.push_back(std::move(p));
  }
  apply_partition_hook(out, hook, pool);
  return out;
}

}  // namespace tug::io
