#include "tug/api/io.hpp"

#include <cstdio>
#include <filesystem>

#include "tug/io/csv_source.hpp"
#include "tug/io/parquet_source.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {

lazy_frame scan_parquet(const std::string& path, const io::parquet::read_options& options) {
  return lazy_frame(plan::scan(std::make_shared<io::parquet_source>(path, options)));
}

lazy_frame scan_csv(const std::string& path, const io::csv::csv_options& options) {
  return lazy_frame(plan::scan(std::make_shared<io::csv_source>(path, options)));
}

void sink_parquet(const lazy_frame& q, const std::string& path, const io::parquet::write_options& options,
                  const engine_options& engine) {
  data_frame df = q.collect(engine);
  // the engine's worker threads encode the files, and within each the column chunks (nested
  // parallel_for: a waiting thread runs other files' work)
  thread_pool& pool = global_thread_pool(engine.num_threads);
  namespace fs = std::filesystem;
  std::error_code ec;
  bool dir = (!path.empty() && path.back() == '/') || fs::is_directory(path, ec);
  if (!dir) {
    io::parquet::write_parquet(path, df.schema(), df.partitions(), options, &pool);
    return;
  }
  fs::create_directories(path, ec);
  if (ec) throw io_error("cannot create directory " + path + ": " + ec.message());
  const auto& parts = df.partitions();
  pool.parallel_for(static_cast<int64_t>(std::max<size_t>(parts.size(), 1)), [&](int64_t i) {
    char name[48];  // "part-" + up to 20 digits + ".parquet"
    std::snprintf(name, sizeof name, "part-%05zu.parquet", static_cast<size_t>(i));
    std::vector<table> one;
    if (static_cast<size_t>(i) < parts.size()) one.push_back(parts[static_cast<size_t>(i)]);
    io::parquet::write_parquet((fs::path(path) / name).string(), df.schema(), one, options, &pool);
  });
}

void sink_csv(const lazy_frame& q, const std::string& path, const io::csv::csv_options& options,
              const engine_options& engine) {
  data_frame df = q.collect(engine);
  io::csv::write_csv(path, df.schema(), df.partitions(), options);
}

}  // namespace tug
