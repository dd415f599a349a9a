#include "tug/api/io.hpp"

#include <cstdio>
#include <filesystem>

#include "tug/io/csv_source.hpp"
#include "tug/io/parquet_source.hpp"

namespace tug {

lazy_frame scan_parquet(const std::string& path) {
  return lazy_frame(plan::scan(std::make_shared<io::parquet_source>(path)));
}

lazy_frame scan_csv(const std::string& path, const io::csv::csv_options& options) {
  return lazy_frame(plan::scan(std::make_shared<io::csv_source>(path, options)));
}

void sink_parquet(const lazy_frame& q, const std::string& path, const io::parquet::write_options& options,
                  const engine_options& engine) {
  data_frame df = q.collect(engine);
  namespace fs = std::filesystem;
  std::error_code ec;
  bool dir = (!path.empty() && path.back() == '/') || fs::is_directory(path, ec);
  if (!dir) {
    io::parquet::write_parquet(path, df.schema(), df.partitions(), options);
    return;
  }
  fs::create_directories(path, ec);
  if (ec) throw io_error("cannot create directory " + path + ": " + ec.message());
  const auto& parts = df.partitions();
  for (size_t i = 0; i < std::max<size_t>(parts.size(), 1); ++i) {
    char name[48];  // "part-" + up to 20 digits + ".parquet"
    std::snprintf(name, sizeof name, "part-%05zu.parquet", i);
    std::vector<table> one;
    if (i < parts.size()) one.push_back(parts[i]);
    io::parquet::write_parquet((fs::path(path) / name).string(), df.schema(), one, options);
  }
}

void sink_csv(const lazy_frame& q, const std::string& path, const io::csv::csv_options& options,
              const engine_options& engine) {
  data_frame df = q.collect(engine);
  io::csv::write_csv(path, df.schema(), df.partitions(), options);
}

}  // namespace tug
