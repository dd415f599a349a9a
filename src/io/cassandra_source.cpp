#include "tug/io/cassandra_source.hpp"

#include "tug/io/cassandra/token.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/runtime/query_control.hpp"
#include "tug/runtime/task_group.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <thread>

namespace tug::io {

namespace cq = cassandra;

namespace {

cq::bound_values text_values(const std::vector<std::string>& v) {
  cq::byte_writer w;
  for (auto& s : v) w.bytes(s);
  return {static_cast<int16_t>(v.size()), std::move(w.out())};
}

std::string qualified(const std::string& ks, const std::string& t) {
  return cq::quote_identifier(ks) + "." + cq::quote_identifier(t);
}

}  // namespace

std::vector<cassandra_column> load_cassandra_table(cq::session& s, const std::string& keyspace,
                                                   const std::string& table) {
  cq::query_parameters p;
  p.level = cq::consistency::one;
  auto r = s.query("SELECT column_name, kind, position, type FROM system_schema.columns WHERE keyspace_name = ? AND "
                   "table_name = ?",
                   p, text_values({keyspace, table}));
  std::string host = s.hosts().empty() ? "" : s.hosts()[0];
  tug::table t = cq::decode_rows(r.rows, {type_id::string, type_id::string, type_id::int32, type_id::string}, {}, host);
  std::vector<cassandra_column> cols;
  for (int64_t i = 0; i < t.num_rows(); ++i)
    cols.push_back({std::string(t[0].string(i)), cq::parse_type_name(t[3].string(i)), std::string(t[1].string(i)),
                    t[2].value<int32_t>(i)});
  if (cols.empty()) {
    auto k = s.query("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", p, text_values({keyspace}));
    tug::table names = cq::decode_rows(k.rows, {type_id::string}, {}, host);
    if (names.num_rows() == 0) {
      auto ks = s.query("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", p,
                        text_values({keyspace}));
      if (ks.rows.rows_count == 0)
        throw io_error("cassandra " + host + ": keyspace '" + keyspace + "' does not exist");
    }
    std::string list;
    for (int64_t i = 0; i < names.num_rows() && i < 20; ++i) list += (i ? ", " : "") + std::string(names[0].string(i));
    throw io_error("cassandra " + host + ": table '" + keyspace + "." + table + "' does not exist (tables of '" +
                   keyspace + "': " + (list.empty() ? "none" : list) + ")");
  }
  auto rank = [](const std::string& kind) { return kind == "partition_key" ? 0 : kind == "clustering" ? 1 : 2; };
  std::stable_sort(cols.begin(), cols.end(), [&](const cassandra_column& a, const cassandra_column& b) {
    if (rank(a.kind) != rank(b.kind)) return rank(a.kind) < rank(b.kind);
    if (rank(a.kind) < 2) return a.position < b.position;
    return a.name < b.name;
  });
  return cols;
}

cassandra_source::cassandra_source(std::string keyspace, std::string table, cassandra_scan_options options)
    : _keyspace(std::move(keyspace)), _table(std::move(table)), _options(std::move(options)) {
  if (_options.fetch_size < 1) throw invalid_argument_error("scan_cassandra: fetch_size must be at least 1");
  if (_options.reads_in_flight < 1) throw invalid_argument_error("scan_cassandra: reads_in_flight must be at least 1");
  if (_options.splits < 0 || _options.splits_when_unknown < 1 || _options.split_size_mb < 1)
    throw invalid_argument_error("scan_cassandra: splits must be >= 0, splits_when_unknown and split_size_mb >= 1");
  cq::parse_consistency(_options.consistency);
  _session = std::make_shared<cq::session>(_options.client);
  auto all = load_cassandra_table(*_session, _keyspace, _table);
  std::vector<field> fields;
  for (auto& c : all) {
    if (c.kind == "partition_key") _partition_key.push_back(c);
    if (c.kind == "clustering") _clustering.push_back(c);
    data_type t;
    try {
      t = cq::to_tug_type(c.type, "column '" + c.name + "' of " + _keyspace + "." + _table, _options.types);
    } catch (const not_implemented_error&) {
      if (_options.skip_unsupported_columns) continue;
      throw;
    }
    fields.push_back({c.name, t});
    _columns.push_back(c);
  }
  _schema = tug::schema(std::move(fields));
}

cassandra_source::cassandra_source(const cassandra_source& whole, int rank, int size)
    : _keyspace(whole._keyspace),
      _table(whole._table),
      _options(whole._options),
      _session(whole._session),
      _columns(whole._columns),
      _partition_key(whole._partition_key),
      _clustering(whole._clustering),
      _schema(whole._schema),
      _share_rank(rank),
      _share_size(size),
      _local_addresses(local_addresses()),
      _last_read(whole._last_read) {}

std::shared_ptr<const table_source> cassandra_source::rank_share(int rank, int size) const {
  if (size < 1 || rank < 0 || rank >= size)
    throw internal_error("rank_share: rank " + std::to_string(rank) + " of " + std::to_string(size));
  return std::shared_ptr<const cassandra_source>(new cassandra_source(*this, rank, size));
}

double estimated_table_bytes(const std::vector<size_estimate>& rows, const std::string& table) {
  auto token = [&](const std::string& text) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
      throw io_error("scan_cassandra " + table + ": system.size_estimates has the token '" + text +
                     "', which is no Murmur3 token");
    return v;
  };
  double bytes = 0;
  long double covered = 0;  // tokens of the ring the rows' ranges hold
  for (auto& r : rows) {
    bytes += static_cast<double>(r.mean_partition_size) * static_cast<double>(r.partitions_count);
    const uint64_t width = static_cast<uint64_t>(token(r.range_end)) - static_cast<uint64_t>(token(r.range_start));
    covered += width == 0 ? 18446744073709551616.0L : static_cast<long double>(width);  // start == end: all of it
  }
  if (bytes <= 0 || covered <= 0) return bytes;
  const long double fraction = std::min(1.0L, covered / 18446744073709551616.0L);
  return static_cast<double>(static_cast<long double>(bytes) / fraction);
}

std::vector<std::string> local_replicas_first(const std::vector<std::string>& replicas,
                                              const std::vector<std::string>& local) {
  std::vector<std::string> mine;
  for (auto& r : replicas) {
    std::string address = r.substr(0, r.rfind(':'));
    if (address.size() > 1 && address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
    if (std::find(local.begin(), local.end(), address) != local.end()) mine.push_back(r);
  }
  return mine.empty() ? replicas : mine;
}

std::vector<std::string> local_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    else if (a->ifa_addr->sa_family == AF_INET6)
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text, sizeof text);
    if (text[0] && std::find(out.begin(), out.end(), text) == out.end()) out.emplace_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

std::string cassandra_source::describe() const {
  return "CASSANDRA SCAN " + _keyspace + "." + _table + " at " + _session->hosts()[0] + "; " +
         std::to_string(_schema.size()) + " columns, partition key (" +
         [&] {
           std::string s;
           for (auto& c : _partition_key) s += (s.empty() ? "" : ", ") + c.name;
           return s;
         }() +
         ")";
}

std::vector<std::string> cassandra_source::key_partitioned() const {
  std::vector<std::string> keys;
  for (auto& c : _partition_key) {
    if (_schema.find(c.name) < 0) return {};  // a key column of a type tug leaves out
    keys.push_back(c.name);
  }
  return keys;
}

namespace {

struct pushed_term {
  fn op;  ///< a comparison, or is_in
  scalar value;
  std::vector<scalar> list;  ///< is_in
};

/// A literal encoded as a key column's CQL type, and as CQL text (for describe).
struct encoded_value {
  std::string bytes, text;
};

/// The column a side of a comparison reads: a column, or a signed integer column under a cast to a signed
/// integer type at least as wide (which keeps every value, so comparing the column itself is the same).
const expr_node* column_of(const expr& e, const tug::schema& s) {
  const expr_node* n = &e.node();
  if (n->kind == expr_kind::cast && !n->args.empty() && n->args[0]->kind == expr_kind::column) {
    int64_t i = s.find(n->args[0]->name);
    if (i < 0) return nullptr;
    type_id from = s[static_cast<size_t>(i)].type.id, to = n->dtype.id;
    if (!is_signed_integer(from) || !is_signed_integer(to) || size_of(to) < size_of(from)) return nullptr;
    n = &n->args[0].node();
  }
  return n->kind == expr_kind::column ? n : nullptr;
}

void conjuncts(const expr& e, std::vector<expr>& out) {
  if (e->kind == expr_kind::function && e->func == fn::and_ && e->args.size() == 2) {
    conjuncts(e->args[0], out);
    conjuncts(e->args[1], out);
  } else {
    out.push_back(e);
  }
}

const char* cql_op(fn f) {
  switch (f) {
    case fn::eq: return "=";
    case fn::lt: return "<";
    case fn::le: return "<=";
    case fn::gt: return ">";
    default: return ">=";
  }
}

/// Encodes a literal as the CQL type of a key column; false when the pairing is not one the scan pushes
/// (tug then filters it alone).
bool encode_literal(const scalar& v, const cq::cql_type& t, cq::byte_writer& w, std::string& text) {
  if (v.is_null()) return false;
  const auto& val = v.value();
  int width = 0;
  switch (t.code) {
    case cq::type_code::tinyint: width = 1; break;
    case cq::type_code::smallint: width = 2; break;
    case cq::type_code::int_: width = 4; break;
    case cq::type_code::bigint: width = 8; break;
    default: break;
  }
  if (width > 0 || t.code == cq::type_code::varint) {
    if (!is_integer(v.type().id) || !std::holds_alternative<int64_t>(val)) return false;
    int64_t x = std::get<int64_t>(val);
    if (width > 0 && width < 8) {
      int64_t lim = int64_t(1) << (8 * width - 1);
      if (x < -lim || x >= lim) return false;
    }
    if (width == 0) {
      w.bytes(cq::encode_varint(x));
    } else {
      w.i32(width);
      for (int i = width - 1; i >= 0; --i) w.u8(static_cast<uint8_t>(static_cast<uint64_t>(x) >> (8 * i)));
    }
    text = std::to_string(x);
    return true;
  }
  if (t.code == cq::type_code::varchar || t.code == cq::type_code::ascii) {
    if (v.type().id != type_id::string) return false;
    const std::string& s = std::get<std::string>(val);
    if (t.code == cq::type_code::ascii && std::any_of(s.begin(), s.end(), [](char c) { return c & 0x80; })) return false;
    w.bytes(s);
    text = "'";
    for (char c : s) text += c == '\'' ? std::string("''") : std::string(1, c);
    text += "'";
    return true;
  }
  if (t.code == cq::type_code::boolean && v.type().id == type_id::boolean) {
    w.i32(1);
    w.u8(std::get<bool>(val) ? 1 : 0);
    text = std::get<bool>(val) ? "true" : "false";
    return true;
  }
  return false;
}

}  // namespace

cassandra_read_plan cassandra_source::plan_read(const std::vector<std::string>& columns,
                                                const std::vector<expr>& predicates, int64_t limit) const {
  // the comparisons and IN lists of key columns with literals, by column
  std::map<std::string, std::vector<pushed_term>> terms;
  std::vector<expr> cs;
  for (auto& p : predicates) conjuncts(p, cs);
  for (auto& c : cs) {
    if (c->kind != expr_kind::function) continue;
    if (c->func == fn::is_in && c->args.size() == 1) {
      if (const expr_node* col = column_of(c->args[0], _schema)) terms[col->name].push_back({fn::is_in, {}, c->list});
      continue;
    }
    if (c->args.size() != 2) continue;
    fn f = c->func;
    if (f != fn::eq && f != fn::lt && f != fn::le && f != fn::gt && f != fn::ge) continue;
    const expr_node* col = column_of(c->args[0], _schema);
    const expr_node* lit = &c->args[1].node();
    if (!col) {
      col = column_of(c->args[1], _schema);
      lit = &c->args[0].node();
      f = mirrored(f);
    }
    if (!col || lit->kind != expr_kind::literal) continue;
    terms[col->name].push_back({f, lit->value, {}});
  }
  // the values a key column may take under = or IN: encoded, distinct, in the order given (key columns
  // are never null, so a null in an IN list matches nothing); nullopt when nothing is pushable
  auto value_set = [&](const cassandra_column& c) -> std::optional<std::vector<encoded_value>> {
    auto it = terms.find(c.name);
    if (it == terms.end()) return std::nullopt;
    for (auto& t : it->second) {
      if (t.op != fn::eq && t.op != fn::is_in) continue;
      std::vector<encoded_value> out;
      bool ok = true;
      for (const scalar& v : t.op == fn::eq ? std::vector<scalar>{t.value} : t.list) {
        if (t.op == fn::is_in && v.is_null()) continue;
        encoded_value e;
        cq::byte_writer w;
        if (!encode_literal(v, c.type, w, e.text)) {
          ok = false;
          break;
        }
        e.bytes = std::move(w.out());
        if (std::none_of(out.begin(), out.end(), [&](const encoded_value& o) { return o.bytes == e.bytes; }))
          out.push_back(std::move(e));
      }
      if (ok) return out;
    }
    return std::nullopt;
  };
  auto listed = [](const std::vector<encoded_value>& vs) {
    std::string s;
    for (auto& v : vs) s += (s.empty() ? "" : ", ") + v.text;
    return "(" + s + ")";
  };
  cassandra_read_plan plan;
  std::vector<std::string> where;
  // the whole partition key with = or IN: its partitions one by one (routed to their replicas), no
  // token ranges
  std::vector<std::vector<encoded_value>> key_sets;
  size_t combinations = 1;
  for (auto& c : _partition_key) {
    auto vs = value_set(c);
    if (!vs) {
      key_sets.clear();
      break;
    }
    combinations = vs->empty() ? 0 : combinations * vs->size();
    if (combinations > static_cast<size_t>(_options.max_key_lookups)) {
      key_sets.clear();
      break;
    }
    key_sets.push_back(std::move(*vs));
  }
  bool nothing = false;
  if (!_partition_key.empty() && key_sets.size() == _partition_key.size()) {
    plan.token_ranges = false;
    for (size_t k = 0; k < _partition_key.size(); ++k) {
      where.push_back(cq::quote_identifier(_partition_key[k].name) + " = ?");
      plan.pushed_text.push_back(_partition_key[k].name +
                                 (key_sets[k].size() == 1 ? " = " + key_sets[k][0].text : " IN " + listed(key_sets[k])));
    }
    nothing = combinations == 0;
    // the product of the columns' values, the last column varying fastest
    std::vector<size_t> at(key_sets.size(), 0);
    for (size_t n = 0; n < combinations; ++n) {
      cq::bound_values key;
      for (size_t k = 0; k < key_sets.size(); ++k) key.bytes += key_sets[k][at[k]].bytes;
      key.count = static_cast<int16_t>(key_sets.size());
      plan.keys.push_back(std::move(key));
      for (size_t k = key_sets.size(); k-- > 0;) {
        if (++at[k] < key_sets[k].size()) break;
        at[k] = 0;
      }
    }
  }
  // a clustering prefix: = or IN on the first columns, then ranges on the next one
  cq::byte_writer w;
  int16_t count = 0;
  for (auto& c : _clustering) {
    if (auto vs = value_set(c)) {
      if (vs->empty()) {
        nothing = true;
        break;
      }
      std::string marks;
      for (auto& v : *vs) {
        w.raw(v.bytes);
        ++count;
        marks += (marks.empty() ? "?" : ", ?");
      }
      const bool one = vs->size() == 1;
      where.push_back(cq::quote_identifier(c.name) + (one ? " = ?" : " IN (" + marks + ")"));
      plan.pushed_text.push_back(c.name + (one ? " = " + (*vs)[0].text : " IN " + listed(*vs)));
      continue;
    }
    auto it = terms.find(c.name);
    if (it != terms.end())
      for (auto& t : it->second) {
        if (t.op == fn::eq || t.op == fn::is_in) continue;
        cq::byte_writer one;
        std::string text;
        if (!encode_literal(t.value, c.type, one, text)) continue;
        w.raw(one.out());
        ++count;
        where.push_back(cq::quote_identifier(c.name) + " " + cql_op(t.op) + " ?");
        plan.pushed_text.push_back(c.name + " " + cql_op(t.op) + " " + text);
      }
    break;
  }
  if (nothing) {
    // an empty IN list: no row can match, nothing is read
    plan.token_ranges = false;
    plan.keys.clear();
  }
  const bool filtering = plan.token_ranges && !where.empty();
  std::string select;
  std::vector<std::string> cols = columns;
  if (cols.empty()) cols.push_back(_partition_key.at(0).name);  // a count: the key alone, dropped after decoding
  for (auto& c : cols) select += (select.empty() ? "" : ", ") + cq::quote_identifier(c);
  std::string token;
  for (auto& c : _partition_key) token += (token.empty() ? "" : ", ") + cq::quote_identifier(c.name);
  if (plan.token_ranges) {
    where.push_back("token(" + token + ") > ?");
    where.push_back("token(" + token + ") <= ?");
  }
  plan.cql = "SELECT " + select + " FROM " + qualified(_keyspace, _table);
  for (size_t i = 0; i < where.size(); ++i) plan.cql += (i ? " AND " : " WHERE ") + where[i];
  if (limit >= 0) plan.cql += " LIMIT " + std::to_string(std::max<int64_t>(limit, 1));
  if (filtering) plan.cql += " ALLOW FILTERING";
  plan.pushed = {count, std::move(w.out())};
  return plan;
}

std::string cassandra_source::describe_read(const std::vector<std::string>& columns,
                                           const std::vector<expr>& predicates) const {
  cassandra_read_plan plan = plan_read(columns, predicates);
  std::string s = "CQL: " + plan.cql;
  if (!plan.pushed_text.empty()) {
    s += " with ";
    for (size_t i = 0; i < plan.pushed_text.size(); ++i) s += (i ? ", " : "") + plan.pushed_text[i];
  }
  if (plan.token_ranges) s += ", per token range split";
  else if (plan.keys.empty()) s += ", nothing read (an empty IN list)";
  else if (plan.keys.size() > 1) s += ", one request per partition key (" + std::to_string(plan.keys.size()) + ")";
  return s;
}

int cassandra_source::split_count() const {
  if (_options.splits > 0) return _options.splits;
  cq::query_parameters p;
  p.level = cq::consistency::one;
  auto r = _session->query("SELECT range_start, range_end, mean_partition_size, partitions_count FROM "
                           "system.size_estimates WHERE keyspace_name = ? AND table_name = ?",
                           p, text_values({_keyspace, _table}));
  tug::table t = cq::decode_rows(r.rows, {type_id::string, type_id::string, type_id::int64, type_id::int64}, {},
                                 r.host);
  std::vector<size_estimate> rows;
  for (int64_t i = 0; i < t.num_rows(); ++i)
    rows.push_back({std::string(t[0].string(i)), std::string(t[1].string(i)), t[2].value<int64_t>(i),
                    t[3].value<int64_t>(i)});
  const double bytes = estimated_table_bytes(rows, _keyspace + "." + _table);
  if (bytes <= 0) return _options.splits_when_unknown;
  double n = std::ceil(bytes / (static_cast<double>(_options.split_size_mb) * 1024 * 1024));
  return static_cast<int>(std::clamp(n, 1.0, 100000.0));
}

std::vector<cassandra_split> cassandra_source::splits() const {
  const auto& ring = _session->ring();
  auto planned = cq::plan_splits(ring, ring.empty() ? cq::replication_strategy{} : _session->replication(_keyspace),
                                 split_count());
  std::vector<cassandra_split> out;
  for (auto& p : planned) {
    cassandra_split s{std::move(p.ranges), {}};
    for (size_t n : p.replicas) s.replicas.push_back(ring.nodes()[n].host);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<table> cassandra_source::read(const std::vector<std::string>& columns,
                                          const std::vector<expr>& predicates, const engine_options&,
                                          thread_pool& pool, memory_resource* mr, const partition_hook& hook,
                                          int64_t limit) const {
  cassandra_read_plan plan = plan_read(columns, predicates, limit);
  std::vector<data_type> types;
  for (auto& c : columns) types.push_back(_schema.type_of(c));
  const bool count_only = columns.empty();
  if (count_only) types.push_back(cq::to_tug_type(_partition_key[0].type, "partition key", _options.types));
  auto stmt = _session->prepare(plan.cql);
  // token ranges split by split; or the partition keys one by one, each request routed by the session to
  // a replica of its key (one tug partition per Cassandra partition)
  std::vector<cassandra_split> ranges;
  if (plan.token_ranges) {
    ranges = splits();
    if (_share_size > 1) {  // a rank's share: the splits' parts in its 1/size of the ring
      const cq::token_range mine = cq::split_ring(_share_size)[static_cast<size_t>(_share_rank)];
      std::vector<cassandra_split> kept;
      for (auto& s : ranges) {
        cassandra_split k{{}, local_replicas_first(s.replicas, _local_addresses)};
        for (auto& r : s.ranges)
          if (auto part = cq::intersect(r, mine)) k.ranges.push_back(*part);
        if (!k.ranges.empty()) kept.push_back(std::move(k));
      }
      ranges = std::move(kept);
    }
  } else {
    if (_share_size > 1) {  // a rank's share of the keys
      const size_t n = plan.keys.size();
      const size_t lo = n * static_cast<size_t>(_share_rank) / static_cast<size_t>(_share_size);
      const size_t hi = n * static_cast<size_t>(_share_rank + 1) / static_cast<size_t>(_share_size);
      plan.keys = std::vector<cq::bound_values>(plan.keys.begin() + static_cast<std::ptrdiff_t>(lo),
                                                plan.keys.begin() + static_cast<std::ptrdiff_t>(hi));
    }
    ranges.resize(plan.keys.size(), cassandra_split{{{0, 0}}, {}});
  }
  // the figures of the data's requests (not the statement's preparation or the replication lookup)
  const cq::metrics_snapshot before = _session->metrics().begin_interval();
  cq::query_parameters params;
  params.level = cq::parse_consistency(_options.consistency);
  params.page_size = _options.fetch_size;
  params.skip_metadata = false;

  auto read_split = [&](size_t i, int64_t row_limit) {
    std::vector<table> pages;
    int64_t rows = 0;
    for (const cq::token_range& range : ranges[i].ranges) {
      cq::bound_values v = plan.pushed;
      if (!plan.token_ranges) {
        v.count = static_cast<int16_t>(v.count + plan.keys[i].count);
        v.bytes = plan.keys[i].bytes + v.bytes;
      } else {
        cq::byte_writer w;
        w.i32(8);
        w.i64(range.start);
        w.i32(8);
        w.i64(range.end);
        v.count = static_cast<int16_t>(v.count + 2);
        v.bytes += w.out();
      }
      cq::query_parameters p = params;
      while (row_limit < 0 || rows < row_limit) {
        cq::result r = _session->execute(*stmt, v, p, ranges[i].replicas);
        table t = cq::decode_rows(r.rows, types, _options.types, r.host, mr);
        rows += t.num_rows();
        if (count_only) t = table::empty_with_rows(t.num_rows());
        if (t.num_rows() > 0) pages.push_back(std::move(t));
        if (!r.rows.metadata.paging_state) break;
        p.paging_state = r.rows.metadata.paging_state;
      }
    }
    if (pages.size() == 1) return std::move(pages[0]);
    if (pages.empty()) return table{};
    if (count_only) {
      int64_t n = 0;
      for (auto& pg : pages) n += pg.num_rows();
      return table::empty_with_rows(n);
    }
    return concatenate(pages, mr);
  };

  // a split without rows: no columns from read_split, the right ones here
  auto typed = [&](table t) {
    if (t.num_columns() > 0 || t.num_rows() > 0) return t;
    std::vector<column> cols;
    for (auto& c : columns) cols.push_back(make_null_column(_schema.type_of(c), 0, mr));
    return cols.empty() ? table::empty_with_rows(0) : table(std::move(cols));
  };
  std::vector<table> parts(ranges.size());
  const bool streamed = hook && limit < 0;
  if (limit >= 0) {
    // splits in token order until the limit's rows are in
    int64_t have = 0;
    for (size_t i = 0; i < ranges.size() && have < limit; ++i) {
      parts[i] = read_split(i, limit - have);
      have += parts[i].num_rows();
    }
  } else {
    // reads_in_flight threads, each reading whole splits (its pages one after the other); the
    // requests of all of them share the session's pipelined connections. With a hook, each split goes
    // to it as soon as it is read (one partition per split, empty ones included): a streaming sink
    // writes it while the next are read, and the scan never holds the whole table.
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::exception_ptr> errors(ranges.size());
    query_control* control = query_control::current();
    task_group readers;  // a split that fails wakes the others' hooks waiting on it (a streaming sink)
    memory_account* account = memory_account::current();  // the scan's (per-operator statistics)
    auto worker = [&] {
      query_control::scope in_query(control);  // cancellation reaches the hook's operators
      task_group::scope in_group(&readers);
      memory_account::scope on_account(account);
      while (!failed) {
        size_t i = next++;
        if (i >= ranges.size()) return;
        try {
          parts[i] = read_split(i, -1);
          if (streamed) parts[i] = hook(typed(std::move(parts[i])), i);
        } catch (...) {
          errors[i] = std::current_exception();
          failed = true;
          readers.fail(errors[i]);
        }
      }
    };
    int n = std::min<int>(_options.reads_in_flight, static_cast<int>(ranges.size()));
    std::vector<std::thread> threads;
    for (int k = 1; k < n; ++k) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
  std::vector<table> out;
  if (streamed) {
    out = std::move(parts);
  } else {
    for (auto& t : parts)
      if (t.num_rows() > 0) out.push_back(std::move(t));
    if (out.empty()) out.push_back(typed(table{}));  // no rows: one empty partition of the right columns
  }
  {
    std::lock_guard lk(_last_read->mutex);
    _last_read->metrics = _session->metrics().snapshot().since(before);
  }
  if (!streamed) apply_partition_hook(out, hook, pool);
  return out;
}

cq::metrics_snapshot cassandra_source::last_read_metrics() const {
  std::lock_guard lk(_last_read->mutex);
  return _last_read->metrics;
}

std::string cassandra_source::read_statistics() const {
  return "CASSANDRA SCAN " + _keyspace + "." + _table + ": " + last_read_metrics().to_string();
}

}  // namespace tug::io
