#include "tug/gen/dataset.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <regex>

#include "tug/core/error.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug::gen {

namespace fs = std::filesystem;

int64_t chunk_count(int64_t rows, int64_t chunk_rows) {
  return std::max<int64_t>(1, (rows + chunk_rows - 1) / chunk_rows);
}

namespace {

/// (generator, chunk) pairs in schedule order.
std::vector<std::pair<size_t, int64_t>> tasks_of(const dataset& d) {
  std::vector<std::pair<size_t, int64_t>> tasks;
  for (size_t g = 0; g < d.generators.size(); ++g)
    for (int64_t c = 0; c < d.generators[g].chunks; ++c)
      tasks.emplace_back(g, c);
  return tasks;
}

std::vector<table> run_chunk(const chunked_generator& g, int64_t chunk) {
  std::vector<table> parts = g.generate(chunk);
  if (parts.size() != g.tables.size())
    throw internal_error("generator of " + g.tables.front().name + " returned " + std::to_string(parts.size()) +
                         " tables for " + std::to_string(g.tables.size()));
  return parts;
}

std::string part_name(int64_t chunk) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "part-%05lld.parquet", static_cast<long long>(chunk));
  return buf;
}

/// Creates out/<table> and removes the part files an earlier run left there.
void prepare_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw io_error("cannot create directory " + dir.string() + ": " + ec.message());
  static const std::regex part(R"(part-\d+\.parquet)");
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && std::regex_match(e.path().filename().string(), part)) fs::remove(e.path());
}

}  // namespace

write_summary write_dataset(const dataset& d, const write_config& config) {
  auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const fs::path out(config.out);
  write_summary summary;
  for (const auto& g : d.generators)
    for (const auto& t : g.tables) {
      prepare_directory(out / t.name);
      summary.tables[t.name];
    }
  auto tasks = tasks_of(d);
  std::mutex mu;  // guards summary and the progress line
  int64_t done = 0;
  double last_report = 0;
  thread_pool pool(config.threads);
  pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t k) {
    auto [gi, chunk] = tasks[static_cast<size_t>(k)];
    const chunked_generator& g = d.generators[gi];
    std::vector<table> parts = run_chunk(g, chunk);
    std::vector<std::pair<int64_t, int64_t>> written;  // rows, bytes per table
    for (size_t t = 0; t < parts.size(); ++t) {
      fs::path file = out / g.tables[t].name / part_name(chunk);
      io::parquet::write_parquet(file.string(), g.tables[t].schema, {parts[t]}, config.parquet);
      written.emplace_back(parts[t].num_rows(), static_cast<int64_t>(fs::file_size(file)));
      parts[t] = table();  // release the chunk's memory early
    }
    std::lock_guard<std::mutex> lock(mu);
    for (size_t t = 0; t < written.size(); ++t) {
      auto& s = summary.tables[g.tables[t].name];
      s.rows += written[t].first;
      s.bytes += written[t].second;
      s.files += 1;
      summary.rows += written[t].first;
      summary.bytes += written[t].second;
    }
    ++done;
    double now = seconds_since_start();
    if (config.progress && (now - last_report >= 2.0 || done == static_cast<int64_t>(tasks.size()))) {
      last_report = now;
      std::fprintf(stderr, "%s: %lld/%zu chunks, %.2fM rows, %.1f MB, %.1f s\n", d.name.c_str(),
                   static_cast<long long>(done), tasks.size(), static_cast<double>(summary.rows) / 1e6,
                   static_cast<double>(summary.bytes) / 1e6, now);
    }
  });
  summary.seconds = seconds_since_start();
  return summary;
}

std::map<std::string, data_frame> generate_dataset(const dataset& d, int threads) {
  auto tasks = tasks_of(d);
  std::vector<std::vector<table>> results(tasks.size());
  global_thread_pool(threads).parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t k) {
    auto [gi, chunk] = tasks[static_cast<size_t>(k)];
    results[static_cast<size_t>(k)] = run_chunk(d.generators[gi], chunk);
  });
  std::map<std::string, std::vector<table>> parts;
  for (size_t k = 0; k < tasks.size(); ++k) {
    const auto& g = d.generators[tasks[k].first];
    for (size_t t = 0; t < g.tables.size(); ++t)
      parts[g.tables[t].name].push_back(std::move(results[k][t]));
  }
  std::map<std::string, data_frame> out;
  for (const auto& g : d.generators)
    for (const auto& t : g.tables)
      out.emplace(t.name, data_frame(t.schema, std::move(parts[t.name])));
  return out;
}

}  // namespace tug::gen
