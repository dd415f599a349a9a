#include "tug/api/io.hpp"
#include "tug/dist/distribute.hpp"

#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

#include "api/forked_ranks.hpp"
#include "api/in_order.hpp"
#include "tug/io/csv_source.hpp"
#include "tug/io/parquet_source.hpp"
#include "tug/plan/optimizer.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {

lazy_frame scan_parquet(const std::string& path, const io::parquet::read_options& options) {
  return lazy_frame(plan::scan(std::make_shared<io::parquet_source>(path, options)));
}

lazy_frame scan_csv(const std::string& path, const io::csv::csv_options& options) {
  return lazy_frame(plan::scan(std::make_shared<io::csv_source>(path, options)));
}

namespace {

/// One Parquet file: partitions appended in order (row groups cut across them).
class parquet_file_sink final : public partition_writer {
 public:
  parquet_file_sink(const std::string& path, const schema& s, const io::parquet::write_options& o, thread_pool* pool)
      : _w(path, s, o, pool), _order([this](table& t) { _w.append(t); }, 2 * static_cast<size_t>(pool->size())) {}
  void write(table t, size_t index) override { _order.put(std::move(t), index); }
  void finish(size_t n) override {
    _order.finish(n);
    _w.close();
  }

 private:
  io::parquet::file_writer _w;
  in_order<table> _order;
};

/// A directory: one file per non-empty partition, named by its index (part-00000.parquet, ...), written
/// as each arrives; one empty file when no partition has rows (the schema, for readers). On several
/// ranks every rank writes its own share's files, named by rank and index (part-r0001-00000.parquet:
/// in name order they are the result's rows in order), and rank 0 writes the empty file when it has no
/// rows. A query that fails leaves none of the files it wrote (they are removed when the sink goes
/// unfinished), so the directory never holds part of a result.
class parquet_directory_sink final : public dist::rank_share_writer {
 public:
  parquet_directory_sink(std::string dir, schema s, io::parquet::write_options o, thread_pool* pool, int rank, int ranks)
      : _dir(std::move(dir)), _s(std::move(s)), _o(std::move(o)), _pool(pool), _rank(rank), _ranks(ranks) {}
  ~parquet_directory_sink() override {
    if (_finished) return;
    std::error_code ec;
    for (auto& f : _files) std::filesystem::remove(f, ec);
  }
  void write(table t, size_t index) override {
    if (t.num_rows() == 0) return;
    const std::string f = name(index);
    {
      std::lock_guard<std::mutex> g(_mu);
      _files.push_back(f);  // before it exists: a write that fails half way is removed too
    }
    io::parquet::write_parquet(f, _s, {t}, _o, _pool);
  }
  void finish(size_t) override {
    bool none;
    {
      std::lock_guard<std::mutex> g(_mu);
      none = _files.empty();
    }
    if (none && _rank == 0) io::parquet::write_parquet(name(0), _s, {}, _o, _pool);
    _finished = true;
  }

 private:
  std::string name(size_t i) const {
    char n[64];  // "part-r" + up to 10 digits + "-" + up to 20 digits + ".parquet"
    if (_ranks > 1) std::snprintf(n, sizeof n, "part-r%04d-%05zu.parquet", _rank, i);
    else std::snprintf(n, sizeof n, "part-%05zu.parquet", i);
    return (std::filesystem::path(_dir) / n).string();
  }
  std::string _dir;
  schema _s;
  io::parquet::write_options _o;
  thread_pool* _pool;
  int _rank, _ranks;
  std::mutex _mu;
  std::vector<std::string> _files;  ///< written (or being written) by this rank
  bool _finished = false;
};

/// One CSV file: each partition formatted by the thread that delivers it, the texts written in order.
class csv_file_sink final : public partition_writer {
 public:
  csv_file_sink(const std::string& path, schema s, const io::csv::csv_options& o, thread_pool& pool)
      : _path(path), _s(std::move(s)), _o(o),
        _order([this](std::string& text) { put(text); }, 2 * static_cast<size_t>(pool.size())) {
    _rows = _o;
    _rows.has_header = false;
    std::string header = io::csv::to_csv_string(_s, {}, _o);  // checks the options before the file exists
    _f = std::fopen(path.c_str(), "wb");
    if (!_f) throw io_error("cannot open '" + path + "' for writing: " + std::strerror(errno));
    put(header);
  }
  ~csv_file_sink() override {
    if (!_f) return;
    std::fclose(_f);
    if (!_closed) std::remove(_path.c_str());  // an unfinished file is not the result
  }
  void write(table t, size_t index) override {
    std::string text = t.num_rows() > 0 ? io::csv::to_csv_string(_s, {t}, _rows) : std::string();
    _order.put(std::move(text), index);
  }
  void finish(size_t n) override {
    _order.finish(n);
    if (std::fflush(_f) != 0) throw io_error("cannot write '" + _path + "': " + std::strerror(errno));
    _closed = true;
  }

 private:
  void put(const std::string& text) {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), _f) != text.size())
      throw io_error("cannot write '" + _path + "': " + std::strerror(errno));
  }
  std::string _path;
  schema _s;
  io::csv::csv_options _o, _rows;
  std::FILE* _f = nullptr;
  bool _closed = false;
  in_order<std::string> _order;
};

}  // namespace

void sink_parquet(const lazy_frame& q, const std::string& path, const io::parquet::write_options& options,
                  const engine_options& engine) {
  // the engine's worker threads encode the files, and within each the column chunks (nested
  // parallel_for: a waiting thread runs other files' work); partitions are written as they are ready
  thread_pool& pool = global_thread_pool(engine.num_threads);
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool dir = (!path.empty() && path.back() == '/') || fs::is_directory(path, ec);
  auto comm = dist::world();
  const plan_ptr p = optimize(q.plan(), dist::flags_for_ranks(engine.optimizer, query_ranks_for(engine)), engine.check_optimizer_schema);
  validate_options(engine);
  if (comm->rank() != 0 && !dir) {
    run_plan(p, engine);  // on several ranks, rank 0 writes one file: this rank's rows go there
    return;
  }
  std::shared_ptr<partition_writer> w;
  if (dir) {  // on several ranks, each writes its own share's files
    fs::create_directories(path, ec);
    if (ec) throw io_error("cannot create directory " + path + ": " + ec.message());
    w = std::make_shared<parquet_directory_sink>(path, p->schema, options, &pool, comm->rank(), comm->size());
  } else {
    w = std::make_shared<parquet_file_sink>(path, p->schema, options, &pool);
  }
  run_plan(p, engine, w);
}

void sink_csv(const lazy_frame& q, const std::string& path, const io::csv::csv_options& options,
              const engine_options& engine) {
  auto comm = dist::world();
  const plan_ptr p = optimize(q.plan(), dist::flags_for_ranks(engine.optimizer, query_ranks_for(engine)), engine.check_optimizer_schema);
  validate_options(engine);
  if (comm->rank() != 0) {
    run_plan(p, engine);  // on several ranks, rank 0 writes: this rank's rows go there
    return;
  }
  run_plan(p, engine, std::make_shared<csv_file_sink>(path, p->schema, options, global_thread_pool(engine.num_threads)));
}

}  // namespace tug
