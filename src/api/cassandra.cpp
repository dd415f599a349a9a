#include "tug/api/cassandra.hpp"

#include <chrono>
#include <algorithm>
#include <deque>
#include <thread>
#include <unordered_map>

#include "tug/core/scalar.hpp"
#include "tug/io/cassandra/token.hpp"
#include "tug/plan/logical.hpp"

namespace tug {

namespace cq = io::cassandra;

lazy_frame scan_cassandra(const std::string& keyspace, const std::string& table,
                          const io::cassandra_scan_options& options) {
  return lazy_frame(plan::scan(std::make_shared<io::cassandra_source>(keyspace, table, options)));
}

namespace {

/// One write request: rows [first, first + rows) of the frame, all of one partition key.
struct write_unit {
  std::vector<cq::bound_values> values;
  int64_t first = 0;
  std::string key_text;
};

}  // namespace

cassandra_write_result sink_cassandra(const lazy_frame& q, const std::string& keyspace, const std::string& table,
                                      const cassandra_write_options& options, const engine_options& engine) {
  if (options.max_in_flight < 1) throw invalid_argument_error("sink_cassandra: max_in_flight must be at least 1");
  if (options.batch_max_rows < 1 || options.batch_max_bytes < 1)
    throw invalid_argument_error("sink_cassandra: batch_max_rows and batch_max_bytes must be at least 1");
  const cq::consistency level = cq::parse_consistency(options.consistency);
  const std::string target = keyspace + "." + table;
  const tug::schema out_schema = q.schema();

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

  data_frame df = q.collect(engine);

  // every value encoded before anything is sent: a bad value fails with nothing written
  std::vector<write_unit> units;
  int64_t base = 0;
  for (auto& part : df.partitions()) {
    const int64_t n = part.num_rows();
    std::vector<cq::bound_values> rows(static_cast<size_t>(n));
    std::vector<std::string> keys(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      cq::byte_writer w;
      std::vector<std::pair<size_t, size_t>> spans(part.num_columns());
      for (size_t c = 0; c < part.num_columns(); ++c) {
        size_t start = w.size();
        cq::encode_value(w, part[c], r, target_cols[c]->type, out_schema[c].name);
        spans[c] = {start + 4, w.size() - start - 4};
      }
      std::vector<std::string_view> comps;
      for (size_t k : key_index) {
        if (part[k].is_null(r))
          throw invalid_argument_error("sink_cassandra: row " + std::to_string(base + r) + " has a null in key column '" +
                                       out_schema[k].name + "'");
        comps.push_back(std::string_view(w.out()).substr(spans[k].first, spans[k].second));
      }
      keys[static_cast<size_t>(r)] = cq::routing_key(comps);
      rows[static_cast<size_t>(r)] = {static_cast<int16_t>(part.num_columns()), std::move(w.out())};
    }
    // rows of one partition key together, in the order keys first appear
    std::unordered_map<std::string, size_t> open;  // key -> index of its unit still filling
    std::vector<int64_t> unit_bytes;
    size_t first_unit = units.size();
    for (int64_t r = 0; r < n; ++r) {
      auto& key = keys[static_cast<size_t>(r)];
      auto it = open.find(key);
      size_t bytes = rows[static_cast<size_t>(r)].bytes.size();
      if (it != open.end()) {
        auto& u = units[it->second];
        if (static_cast<int>(u.values.size()) < options.batch_max_rows &&
            unit_bytes[it->second - first_unit] + static_cast<int64_t>(bytes) <= options.batch_max_bytes) {
          u.values.push_back(std::move(rows[static_cast<size_t>(r)]));
          unit_bytes[it->second - first_unit] += static_cast<int64_t>(bytes);
          continue;
        }
      }
      write_unit u;
      u.first = base + r;
      std::string kt;
      for (size_t k : key_index) kt += (kt.empty() ? "" : ", ") + out_schema[k].name + "=" + get_scalar(part[k], r).to_string();
      u.key_text = kt;
      u.values.push_back(std::move(rows[static_cast<size_t>(r)]));
      open[key] = units.size();
      unit_bytes.push_back(static_cast<int64_t>(bytes));
      units.push_back(std::move(u));
    }
    base += n;
  }

  auto stmt = s.prepare(cql);
  const cq::metrics_snapshot before = s.metrics().begin_interval();
  cq::query_parameters params;
  params.level = level;
  const bool idempotent = !options.if_not_exists;
  cassandra_write_result res;
  const int64_t total = df.num_rows();
  struct in_flight {
    cq::pending_request req;
    size_t unit;
  };
  std::deque<in_flight> window;
  std::exception_ptr failure;
  std::string failure_text;
  auto started = std::chrono::steady_clock::now();
  // completes the oldest request: the sliding window of seed 004 (awaitSliding)
  auto complete_front = [&] {
    in_flight f = std::move(window.front());
    window.pop_front();
    try {
      f.req.get();
      res.rows_written += static_cast<int64_t>(units[f.unit].values.size());
    } catch (const std::exception& e) {
      if (!failure) {
        failure = std::current_exception();
        const auto& u = units[f.unit];
        failure_text = "rows " + std::to_string(u.first) + ".. (" + std::to_string(u.values.size()) +
                       " rows of partition key " + u.key_text + "): " + e.what();
      }
    }
  };
  for (size_t i = 0; i < units.size() && !failure; ++i) {
    if (options.max_rows_per_second > 0) {
      double due = static_cast<double>(res.rows_written) / options.max_rows_per_second;
      auto now = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (due > now) std::this_thread::sleep_for(std::chrono::duration<double>(due - now));
    }
    while (static_cast<int>(window.size()) >= options.max_in_flight) complete_front();
    if (failure) break;
    auto& u = units[i];
    if (u.values.size() == 1) {
      window.push_back({s.execute_async(stmt, u.values[0], params, idempotent), i});
    } else {
      window.push_back({s.batch_async(stmt, u.values, level, idempotent), i});
      ++res.batches;
    }
    ++res.requests;
    res.max_in_flight_seen = std::max(res.max_in_flight_seen, static_cast<int>(window.size()));
  }
  while (!window.empty()) complete_front();
  res.retries = s.metrics().retries.load();
  res.metrics = s.metrics().snapshot().since(before);
  if (failure)
    throw io_error("sink_cassandra " + target + ": wrote " + std::to_string(res.rows_written) + " of " +
                   std::to_string(total) + " rows, then the write of " + failure_text);
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
  lazy_frame right = data_frame(tug::schema(std::move(fields)), std::move(found)).lazy().with_columns(casts);
  return left.lazy().join(right, on, options.how, "_right");
}

}  // namespace tug
