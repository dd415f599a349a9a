#include "tug/api/cassandra.hpp"

#include <chrono>
#include <algorithm>
#include <deque>
#include <thread>
#include <unordered_map>

#include "api/forked_ranks.hpp"
#include "api/in_order.hpp"
#include "tug/core/scalar.hpp"
#include "tug/dist/distribute.hpp"
#include "tug/io/cassandra/token.hpp"
#include "tug/memory/memory_resource.hpp"
#include "tug/plan/logical.hpp"
#include "tug/plan/optimizer.hpp"

namespace tug {

namespace cq = io::cassandra;

lazy_frame scan_cassandra(const std::string& keyspace, const std::string& table,
                          const io::cassandra_scan_options& options) {
  return lazy_frame(plan::scan(std::make_shared<io::cassandra_source>(keyspace, table, options)));
}

namespace {

/// Bytes counted against a memory budget while they live (the encoded rows of sink_cassandra). Move-only.
class charge {
 public:
  charge() = default;
  charge(memory_budget* b, int64_t bytes) : _b(b), _bytes(b ? bytes : 0) {}
  charge(charge&& o) noexcept : _b(o._b), _bytes(o._bytes) { o._bytes = 0; }
  charge& operator=(charge&& o) noexcept {
    if (this != &o) {
      release();
      _b = o._b;
      _bytes = o._bytes;
      o._bytes = 0;
    }
    return *this;
  }
  charge(const charge&) = delete;
  charge& operator=(const charge&) = delete;
  ~charge() { release(); }
  /// Moves `bytes` of this charge into a charge of their own.
  charge split(int64_t bytes) {
    if (!_b) return {};
    _bytes -= bytes;
    return charge(_b, bytes);
  }

 private:
  void release() {
    if (_b && _bytes) _b->release(_bytes);
    _bytes = 0;
  }
  memory_budget* _b = nullptr;
  int64_t _bytes = 0;
};

/// The budget the query's partitions are counted against (memory_limit), found through `t`'s buffers;
/// nullptr when they come from an unbudgeted resource.
memory_budget* budget_of(const table& t) {
  for (size_t c = 0; c < t.num_columns(); ++c)
    for (const buffer_ptr* b : {&t[c].data_buffer(), &t[c].offsets_buffer(), &t[c].validity_buffer()})
      if (*b)
        if (auto* h = dynamic_cast<const host_memory_resource*>((*b)->resource()); h && h->budget()) return h->budget();
  return nullptr;
}

/// The statistics' line of a sink: "CASSANDRA SINK ks.t: rows written 20000, batches 900, window at most 5;
/// requests ...".
std::string sink_statistics_line(const std::string& target, const cassandra_write_result& r) {
  return "CASSANDRA SINK " + target + ": rows written " + std::to_string(r.rows_written) +
         (r.rows_not_applied ? ", rows not applied (IF NOT EXISTS) " + std::to_string(r.rows_not_applied) : "") +
         ", batches " +
         std::to_string(r.batches) + ", window at most " + std::to_string(r.max_in_flight_seen) + "; " +
         r.metrics.to_string();
}

/// One write request: rows of one partition key of one partition.
struct write_unit {
  std::vector<cq::bound_values> values;
  int64_t first = 0;  ///< its first row in the partition (in the result once the partition is sent)
  int64_t rows = 0;
  std::string key_text;
  charge held;  ///< its encoded bytes, against memory_limit
};

/// The requests of one partition of the result, encoded.
struct encoded_partition {
  std::vector<write_unit> units;
  int64_t rows = 0;
};

/// sink_cassandra's streaming writer: the partitions of the result are taken in order, one at a time;
/// each is encoded whole (a bad value fails before any of its rows is sent; the encoded bytes count
/// against memory_limit until their request is answered), then sent through one sliding window of at
/// most max_in_flight requests (seed 004's awaitSliding). At most `bound` partitions wait to be
/// written, so the query's readers wait for the writes and the result is never held whole.
class cassandra_writer final : public partition_writer {
 public:
  cassandra_writer(cq::session& s, std::shared_ptr<const cq::prepared_statement> stmt,
                   const cassandra_write_options& o, std::vector<const io::cassandra_column*> target_cols,
                   std::vector<size_t> key_index, tug::schema out_schema, size_t bound)
      : _s(s), _stmt(std::move(stmt)), _o(o), _target_cols(std::move(target_cols)), _key_index(std::move(key_index)),
        _schema(std::move(out_schema)),
        _order(
            [this](table& t) {
              encoded_partition p = encode(t);
              t = table{};  // the rows live on encoded
              send(p);
            },
            bound),
        _started(std::chrono::steady_clock::now()) {
    _params.level = cq::parse_consistency(o.consistency);
  }

  void write(table t, size_t index) override { _order.put(std::move(t), index); }
  void finish(size_t n) override {
    _order.finish(n);
    drain();
  }

  /// Waits for every request still in flight (after a failure too).
  void drain() {
    std::lock_guard g(_mu);
    while (!_window.empty()) complete_front();
  }
  /// Rows acknowledged, requests sent, ...; valid after drain().
  const cassandra_write_result& result() const { return _res; }
  /// "rows 120.. (3 rows of partition key p=7): <the server's error>" of the first request that failed
  /// after its retries, then, when requests in flight failed too, "; N rows of M partition keys failed
  /// in all: p=7, p=8, ..." (the first 20 keys named); empty when none failed.
  std::string failure() const {
    if (_failed_keys.size() <= 1) return _failure_text;
    std::string keys;
    for (size_t i = 0; i < std::min<size_t>(_failed_keys.size(), 20); ++i) keys += (i ? ", " : "") + _failed_keys[i];
    if (_failed_keys.size() > 20) keys += ", and " + std::to_string(_failed_keys.size() - 20) + " more";
    return _failure_text + "; " + std::to_string(_failed_rows) + " rows of " + std::to_string(_failed_keys.size()) +
           " partition keys failed in all: " + keys;
  }

 private:
  encoded_partition encode(const table& part) {
    encoded_partition out;
    const int64_t n = part.num_rows();
    out.rows = n;
    std::vector<cq::bound_values> rows(static_cast<size_t>(n));
    std::vector<std::string> keys(static_cast<size_t>(n));
    int64_t bytes = 0;
    std::vector<std::pair<size_t, size_t>> spans(part.num_columns());
    for (int64_t r = 0; r < n; ++r) {
      cq::byte_writer w;
      for (size_t c = 0; c < part.num_columns(); ++c) {
        size_t start = w.size();
        cq::encode_value(w, part[c], r, _target_cols[c]->type, _schema[c].name);
        spans[c] = {start + 4, w.size() - start - 4};
      }
      std::vector<std::string_view> comps;
      for (size_t k : _key_index) {
        if (part[k].is_null(r))
          throw invalid_argument_error("sink_cassandra: row " + std::to_string(_base + r) +
                                       " has a null in key column '" + _schema[k].name + "'");
        comps.push_back(std::string_view(w.out()).substr(spans[k].first, spans[k].second));
      }
      keys[static_cast<size_t>(r)] = cq::routing_key(comps);
      bytes += static_cast<int64_t>(w.size());
      rows[static_cast<size_t>(r)] = {static_cast<int16_t>(part.num_columns()), std::move(w.out())};
    }
    // the encoded rows count against memory_limit until their requests are answered (they outlive `part`)
    memory_budget* budget = n > 0 ? budget_of(part) : nullptr;
    if (budget) budget->reserve(bytes, "sink_cassandra's encoded rows");
    charge all(budget, bytes);
    // rows of one partition key together, in the order keys first appear; IF NOT EXISTS: one row per
    // request (a conditional batch applies all its rows or none: one existing row would drop the others)
    const int max_rows = _o.if_not_exists ? 1 : _o.batch_max_rows;
    std::unordered_map<std::string, size_t> open;  // key -> index of its unit still filling
    std::vector<int64_t> unit_bytes;
    for (int64_t r = 0; r < n; ++r) {
      auto& key = keys[static_cast<size_t>(r)];
      auto it = open.find(key);
      const auto b = static_cast<int64_t>(rows[static_cast<size_t>(r)].bytes.size());
      if (it != open.end()) {
        auto& u = out.units[it->second];
        if (static_cast<int>(u.values.size()) < max_rows && unit_bytes[it->second] + b <= _o.batch_max_bytes) {
          u.values.push_back(std::move(rows[static_cast<size_t>(r)]));
          unit_bytes[it->second] += b;
          continue;
        }
      }
      write_unit u;
      u.first = _base + r;
      for (size_t k : _key_index)
        u.key_text += (u.key_text.empty() ? "" : ", ") + _schema[k].name + "=" + get_scalar(part[k], r).to_string();
      u.values.push_back(std::move(rows[static_cast<size_t>(r)]));
      open[key] = out.units.size();
      unit_bytes.push_back(b);
      out.units.push_back(std::move(u));
    }
    for (size_t i = 0; i < out.units.size(); ++i) {  // each unit releases its bytes when answered
      out.units[i].rows = static_cast<int64_t>(out.units[i].values.size());
      out.units[i].held = all.split(unit_bytes[i]);
    }
    return out;
  }

  /// Sends a partition's requests (the partitions in order, one at a time).
  void send(encoded_partition& p) {
    std::lock_guard g(_mu);
    const bool idempotent = !_o.if_not_exists;
    for (auto& u : p.units) {
      if (_o.max_rows_per_second > 0) {
        double due = static_cast<double>(_res.rows_written) / _o.max_rows_per_second;
        auto now = std::chrono::duration<double>(std::chrono::steady_clock::now() - _started).count();
        if (due > now) std::this_thread::sleep_for(std::chrono::duration<double>(due - now));
      }
      while (static_cast<int>(_window.size()) >= _o.max_in_flight) complete_front();
      if (!_failure_text.empty()) throw io_error("sink_cassandra: a write failed");  // sink_cassandra says which
      if (u.values.size() == 1) {
        _window.push_back({_s.execute_async(_stmt, u.values[0], _params, idempotent), std::move(u)});
      } else {
        _window.push_back({_s.batch_async(_stmt, u.values, _params.level, idempotent), std::move(u)});
        ++_res.batches;
      }
      _window.back().unit.values = {};  // the request holds its own copy; the charge stays until the answer
      ++_res.requests;
      _res.max_in_flight_seen = std::max(_res.max_in_flight_seen, static_cast<int>(_window.size()));
    }
    _base += p.rows;
  }

  /// Completes the oldest request: the sliding window of seed 004 (awaitSliding). Under _mu.
  void complete_front() {
    in_flight f = std::move(_window.front());
    _window.pop_front();
    try {
      cq::result r = f.req.get();
      if (_o.if_not_exists && r.kind == cq::result_kind::rows) {
        // a conditional write answers a row whose first column, [applied], says whether it was written
        auto rows = cq::raw_rows(r.rows, r.host);
        const bool applied = !rows.empty() && !rows[0].empty() && rows[0][0] && !rows[0][0]->empty() &&
                             (*rows[0][0])[0] != 0;
        if (!applied) {
          _res.rows_not_applied += f.unit.rows;
          return;
        }
      }
      _res.rows_written += f.unit.rows;
    } catch (const std::exception& e) {
      if (_failure_text.empty())
        _failure_text = "rows " + std::to_string(f.unit.first) + ".. (" + std::to_string(f.unit.rows) +
                        " rows of partition key " + f.unit.key_text + "): " + e.what();
      _failed_rows += f.unit.rows;
      if (std::find(_failed_keys.begin(), _failed_keys.end(), f.unit.key_text) == _failed_keys.end())
        _failed_keys.push_back(f.unit.key_text);
    }
  }

  struct in_flight {
    cq::pending_request req;
    write_unit unit;
  };
  cq::session& _s;
  std::shared_ptr<const cq::prepared_statement> _stmt;
  const cassandra_write_options& _o;
  std::vector<const io::cassandra_column*> _target_cols;
  std::vector<size_t> _key_index;
  tug::schema _schema;
  cq::query_parameters _params;
  std::mutex _mu;  // the window and the figures
  std::deque<in_flight> _window;
  cassandra_write_result _res;
  std::string _failure_text;
  std::vector<std::string> _failed_keys;  // of every request that failed, in the order they were sent
  int64_t _failed_rows = 0;
  int64_t _base = 0;  // rows of the partitions sent before
  in_order<table> _order;
  std::chrono::steady_clock::time_point _started;
};

/// Throws the exception being handled again, as the same tug error type (Cassandra's own errors as
/// their base io_error) with `note` after its message; any other exception as it is.
[[noreturn]] void rethrow_noting(const std::string& note) {
  try {
    throw;
  } catch (const column_not_found_error& e) {
    throw column_not_found_error(e.what() + note);
  } catch (const type_error& e) {
    throw type_error(e.what() + note);
  } catch (const compute_error& e) {
    throw compute_error(e.what() + note);
  } catch (const invalid_argument_error& e) {
    throw invalid_argument_error(e.what() + note);
  } catch (const io_error& e) {
    throw io_error(e.what() + note);
  } catch (const memory_error& e) {
    throw memory_error(e.what() + note);
  } catch (const cancelled_error& e) {
    throw cancelled_error(e.what() + note);
  } catch (const resource_error& e) {
    throw resource_error(e.what() + note);
  } catch (const not_implemented_error& e) {
    throw not_implemented_error(e.what() + note);
  } catch (const internal_error& e) {
    throw internal_error(e.what() + note);
  }
}

/// The rows join_cassandra fetched, as a source: a memory source that adds the lookups' figures to the
/// statistics of the query that reads it ("CASSANDRA JOIN ks.t: keys ..., requests ..., ...").
class cassandra_join_source final : public table_source {
 public:
  cassandra_join_source(std::shared_ptr<const memory_source> rows, std::string target, const cassandra_join_stats& st)
      : _rows(std::move(rows)), _target(std::move(target)), _stats(st) {}
  const tug::schema& schema() const override { return _rows->schema(); }
  std::string describe() const override { return "CASSANDRA JOIN " + _target + " rows; " + _rows->describe(); }
  std::vector<table> read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                          const engine_options& options, thread_pool& pool, memory_resource* mr,
                          const partition_hook& hook = {}, int64_t limit = -1) const override {
    return _rows->read(columns, predicates, options, pool, mr, hook, limit);
  }
  std::vector<table> take_rows(const std::vector<std::string>& columns, const std::vector<column>& ids,
                               thread_pool& pool, memory_resource* mr) const override {
    return _rows->take_rows(columns, ids, pool, mr);
  }
  std::vector<piece_statistics> statistics(const std::vector<std::string>& columns) const override {
    return _rows->statistics(columns);
  }
  std::string read_statistics() const override {
    return "CASSANDRA JOIN " + _target + ": keys " + std::to_string(_stats.keys) + ", rows fetched " +
           std::to_string(_stats.rows_fetched) + ", window at most " + std::to_string(_stats.max_in_flight_seen) +
           "; " + _stats.metrics.to_string();
  }

 private:
  std::shared_ptr<const memory_source> _rows;
  std::string _target;
  cassandra_join_stats _stats;
};

}  // namespace

cassandra_write_result sink_cassandra(const lazy_frame& q, const std::string& keyspace, const std::string& table,
                                      const cassandra_write_options& options, const engine_options& engine) {
  if (options.max_in_flight < 1) throw invalid_argument_error("sink_cassandra: max_in_flight must be at least 1");
  if (options.batch_max_rows < 1 || options.batch_max_bytes < 1)
    throw invalid_argument_error("sink_cassandra: batch_max_rows and batch_max_bytes must be at least 1");
  if (options.if_not_exists && options.write_time_us >= 0)
    throw invalid_argument_error("sink_cassandra: if_not_exists with write_time_us " +
                                 std::to_string(options.write_time_us) +
                                 ": Cassandra takes no timestamp on a conditional write (IF NOT EXISTS)");
  cq::parse_consistency(options.consistency);  // a bad name fails before anything connects
  const std::string target = keyspace + "." + table;
  const plan_ptr p = optimize(q.plan(), dist::flags_for_ranks(engine.optimizer, query_ranks_for(engine)), engine.check_optimizer_schema);
  validate_options(engine);
  const tug::schema& out_schema = p->schema;

  cq::session s(options.client);
  auto cols = io::load_cassandra_table(s, keyspace, table);
  // the schema check, before any data moves
  std::vector<const io::cassandra_column*> target_cols;
  for (auto& f : out_schema) {
    auto it = std::find_if(cols.begin(), cols.end(), [&](auto& c) { return c.name == f.name; });
    if (it == cols.end()) {
      std::string names;
      for (auto& c : cols) names += (names.empty() ? "" : ", ") + c.name;
      throw column_not_found_error("sink_cassandra: column '" + f.name + "' does not exist in " + target +
                                   " (its columns: " + names + ")");
    }
    if (!cq::can_write(f.type, it->type))
      throw type_error("sink_cassandra: column '" + f.name + "' of type " + to_string(f.type) +
                       " cannot be written to " + target + "." + f.name + " of type " + it->type.to_string());
    target_cols.push_back(&*it);
  }
  std::vector<size_t> key_index;  // positions in the frame of the partition key columns, in key order
  for (auto& c : cols) {
    if (c.kind != "partition_key" && c.kind != "clustering") continue;
    int64_t i = out_schema.find(c.name);
    if (i < 0)
      throw invalid_argument_error("sink_cassandra: primary key column '" + c.name + "' of " + target +
                                   " is missing from the frame");
    if (c.kind == "partition_key") key_index.push_back(static_cast<size_t>(i));
  }

  std::string cql = "INSERT INTO " + cq::quote_identifier(keyspace) + "." + cq::quote_identifier(table) + " (";
  for (size_t i = 0; i < out_schema.size(); ++i) cql += (i ? ", " : "") + cq::quote_identifier(out_schema[i].name);
  cql += ") VALUES (";
  for (size_t i = 0; i < out_schema.size(); ++i) cql += i ? ", ?" : "?";
  cql += ")";
  if (options.if_not_exists) cql += " IF NOT EXISTS";
  std::string using_;
  if (options.ttl_seconds > 0) using_ += " TTL " + std::to_string(options.ttl_seconds);
  if (options.write_time_us >= 0) using_ += std::string(using_.empty() ? "" : " AND") + " TIMESTAMP " + std::to_string(options.write_time_us);
  if (!using_.empty()) cql += " USING" + using_;

  auto stmt = s.prepare(cql);
  const cq::metrics_snapshot before = s.metrics().begin_interval();
  // at most one partition per worker waits to be written
  auto w = std::make_shared<cassandra_writer>(s, stmt, options, target_cols, key_index, out_schema,
                                              static_cast<size_t>(global_thread_pool(engine.num_threads).size()));
  query_result r;
  try {
    r = run_plan(p, engine, w);
  } catch (...) {
    w->drain();  // what was sent is answered before the error says what was written
    const int64_t written = w->result().rows_written;
    if (!w->failure().empty())
      throw io_error("sink_cassandra " + target + ": wrote " + std::to_string(written) + " rows, then the write of " +
                     w->failure());
    if (written == 0) throw;  // nothing written: the error as it is (a bad value, the query's failure)
    // the query failed (a bad value, a kernel, a read) after some partitions were written
    rethrow_noting(" (sink_cassandra " + target + ": " + std::to_string(written) +
                   " rows were written before this error)");
  }
  cassandra_write_result res = w->result();
  if (!w->failure().empty())
    throw io_error("sink_cassandra " + target + ": wrote " + std::to_string(res.rows_written) +
                   " rows, then the write of " + w->failure());
  res.retries = s.metrics().retries.load();
  res.metrics = s.metrics().snapshot().since(before);
  res.peak_memory = r.peak_memory;
  res.statistics = r.statistics;
  if (engine.statistics)
    res.statistics += (res.statistics.empty() || res.statistics.back() == '\n' ? "" : "\n") +
                      sink_statistics_line(target, res) + "\n";
  return res;
}

lazy_frame join_cassandra(const lazy_frame& frame, const std::string& keyspace, const std::string& table,
                          const std::vector<std::string>& on, const cassandra_join_options& options,
                          const engine_options& engine, cassandra_join_stats* stats) {
  const std::string target = keyspace + "." + table;
  if (options.how != join_type::inner && options.how != join_type::left)
    throw invalid_argument_error("join_cassandra " + target + ": how must be inner or left");
  if (options.max_in_flight < 1 || options.fetch_size < 1)
    throw invalid_argument_error("join_cassandra " + target + ": max_in_flight and fetch_size must be at least 1");
  if (on.empty()) throw invalid_argument_error("join_cassandra " + target + ": no `on` columns");
  cq::query_parameters params;
  params.level = cq::parse_consistency(options.consistency);
  params.page_size = options.fetch_size;
  const tug::schema left_schema = frame.schema();

  cq::session s(options.client);
  auto cols = io::load_cassandra_table(s, keyspace, table);
  auto find = [&](const std::string& name) -> const io::cassandra_column* {
    auto it = std::find_if(cols.begin(), cols.end(), [&](auto& c) { return c.name == name; });
    return it == cols.end() ? nullptr : &*it;
  };
  // `on`: the whole partition key, then a prefix of the clustering columns
  std::vector<const io::cassandra_column*> key_cols;
  std::vector<size_t> key_index;  // positions in the frame
  std::string key_names;
  for (auto& c : cols)
    if (c.kind == "partition_key" || c.kind == "clustering") key_names += (key_names.empty() ? "" : ", ") + c.name;
  for (auto& name : on) {
    int64_t i = left_schema.find(name);
    if (i < 0) throw column_not_found_error("join_cassandra " + target + ": `on` column '" + name + "' is not in the frame");
    const io::cassandra_column* c = find(name);
    if (!c) throw column_not_found_error("join_cassandra " + target + ": `on` column '" + name + "' is not in the table");
    if (c->kind != "partition_key" && c->kind != "clustering")
      throw invalid_argument_error("join_cassandra " + target + ": `on` column '" + name +
                                   "' is no key column (the primary key: " + key_names + ")");
    const data_type& t = left_schema[static_cast<size_t>(i)].type;
    if (!cq::can_write(t, c->type))
      throw type_error("join_cassandra " + target + ": `on` column '" + name + "' of type " + to_string(t) +
                       " cannot be compared with the table's " + c->type.to_string());
    key_cols.push_back(c);
    key_index.push_back(static_cast<size_t>(i));
  }
  size_t clustering_used = 0;
  for (auto& c : cols) {
    bool used = std::find(on.begin(), on.end(), c.name) != on.end();
    if (c.kind == "partition_key" && !used)
      throw invalid_argument_error("join_cassandra " + target + ": `on` lacks partition key column '" + c.name +
                                   "' (the partition key must be complete)");
    if (c.kind == "clustering" && used) ++clustering_used;
  }
  for (auto& c : cols) {
    if (c.kind != "clustering") continue;
    if (c.position >= static_cast<int>(clustering_used) && std::find(on.begin(), on.end(), c.name) != on.end())
      throw invalid_argument_error("join_cassandra " + target + ": `on` clustering column '" + c.name +
                                   "' comes after one that is missing (clustering columns: a prefix)");
  }
  // the columns to bring, in the table's order, the key columns always
  std::vector<const io::cassandra_column*> fetch;
  for (auto& name : options.columns)
    if (!find(name)) throw column_not_found_error("join_cassandra " + target + ": column '" + name + "' is not in the table");
  for (auto& c : cols) {
    bool wanted = options.columns.empty() || std::find(options.columns.begin(), options.columns.end(), c.name) != options.columns.end() ||
                  std::find(on.begin(), on.end(), c.name) != on.end();
    if (wanted) fetch.push_back(&c);
  }
  std::vector<field> fields;
  std::vector<data_type> types;
  std::string select;
  for (auto* c : fetch) {
    types.push_back(cq::to_tug_type(c->type, "column '" + c->name + "' of " + target, options.types));
    fields.push_back({c->name, types.back()});
    select += (select.empty() ? "" : ", ") + cq::quote_identifier(c->name);
  }
  std::string cql = "SELECT " + select + " FROM " + cq::quote_identifier(keyspace) + "." + cq::quote_identifier(table);
  for (size_t k = 0; k < on.size(); ++k) cql += (k ? " AND " : " WHERE ") + cq::quote_identifier(on[k]) + " = ?";

  data_frame left = frame.collect(engine);
  // the distinct keys, encoded as bound values; a null key matches nothing
  std::vector<cq::bound_values> keys;
  std::vector<std::string> key_text;
  {
    std::unordered_map<std::string, size_t> seen;
    for (auto& part : left.partitions())
      for (int64_t r = 0; r < part.num_rows(); ++r) {
        if (std::any_of(key_index.begin(), key_index.end(), [&](size_t k) { return part[k].is_null(r); })) continue;
        cq::byte_writer w;
        for (size_t k = 0; k < key_index.size(); ++k) cq::encode_value(w, part[key_index[k]], r, key_cols[k]->type, on[k]);
        if (!seen.emplace(w.out(), keys.size()).second) continue;
        std::string kt;
        for (size_t k = 0; k < key_index.size(); ++k) kt += (kt.empty() ? "" : ", ") + on[k] + "=" + get_scalar(part[key_index[k]], r).to_string();
        keys.push_back({static_cast<int16_t>(on.size()), std::move(w.out())});
        key_text.push_back(std::move(kt));
      }
  }

  cassandra_join_stats st;
  st.keys = static_cast<int64_t>(keys.size());
  const cq::metrics_snapshot before = s.metrics().begin_interval();
  std::vector<tug::table> found;
  if (!keys.empty()) {
    auto stmt = s.prepare(cql);
    std::deque<std::pair<cq::pending_request, size_t>> window;
    std::exception_ptr failure;
    std::string failure_text;
    int64_t done = 0;
    auto complete_front = [&] {
      auto [req, k] = std::move(window.front());
      window.pop_front();
      if (failure) {  // drain: the answers no longer matter
        try {
          req.get();
        } catch (...) {
        }
        return;
      }
      try {
        cq::result r = req.get();
        cq::query_parameters p = params;
        while (true) {
          tug::table t = cq::decode_rows(r.rows, types, options.types, r.host);
          st.rows_fetched += t.num_rows();
          if (t.num_rows() > 0) found.push_back(std::move(t));
          if (!r.rows.metadata.paging_state) break;
          p.paging_state = r.rows.metadata.paging_state;  // a key with more rows than a page
          r = s.execute(*stmt, keys[k], p);
          ++st.requests;
        }
        ++done;
      } catch (const std::exception& e) {
        failure = std::current_exception();
        failure_text = "the lookup of key " + key_text[k] + " failed after " + std::to_string(done) + " of " +
                       std::to_string(keys.size()) + " keys: " + e.what();
      }
    };
    for (size_t k = 0; k < keys.size() && !failure; ++k) {
      while (static_cast<int>(window.size()) >= options.max_in_flight) complete_front();
      if (failure) break;
      window.emplace_back(s.execute_async(stmt, keys[k], params), k);
      ++st.requests;
      st.max_in_flight_seen = std::max(st.max_in_flight_seen, static_cast<int>(window.size()));
    }
    while (!window.empty()) complete_front();
    if (failure) throw io_error("join_cassandra " + target + ": " + failure_text);
  }
  st.metrics = s.metrics().snapshot().since(before);
  if (stats) *stats = st;
  if (found.empty()) {
    std::vector<column> empty;
    for (auto& t : types) empty.push_back(make_null_column(t, 0));
    found.push_back(tug::table(std::move(empty)));
  }
  // the table's key columns take the frame's types: a fetched key equals a frame key, so the cast is exact
  std::vector<expr> casts;
  for (size_t k = 0; k < on.size(); ++k) casts.push_back(col(on[k]).cast(left_schema[key_index[k]].type).alias(on[k]));
  auto rows = std::make_shared<const memory_source>(tug::schema(std::move(fields)), std::move(found));
  lazy_frame right =
      lazy_frame(plan::scan(std::make_shared<cassandra_join_source>(rows, target, st))).with_columns(casts);
  return left.lazy().join(right, on, options.how, "_right");
}

}  // namespace tug
