#include "tug/io/cassandra/topology.hpp"

#include <algorithm>
#include <limits>
#include <set>

namespace tug::io::cassandra {

namespace {
constexpr int64_t min_token = std::numeric_limits<int64_t>::min();
constexpr int64_t max_token = std::numeric_limits<int64_t>::max();

int parse_factor(const std::string& v, const std::string& keyspace) {
  // "3", or "3/1" with transient replicas (the full count comes first)
  std::string n = v.substr(0, v.find('/'));
  try {
    size_t used = 0;
    int f = std::stoi(n, &used);
    if (used == n.size() && f >= 0) return f;
  } catch (const std::exception&) {
  }
  throw invalid_argument_error("cassandra: keyspace '" + keyspace + "' has replication factor '" + v +
                               "', which is no number");
}
}  // namespace

replication_strategy replication_strategy::parse(const std::map<std::string, std::string>& replication,
                                                 const std::string& keyspace) {
  auto it = replication.find("class");
  std::string cls = it == replication.end() ? "" : it->second;
  cls = cls.substr(cls.rfind('.') + 1);
  replication_strategy s;
  if (cls == "SimpleStrategy") {
    s.strategy = kind::simple;
    auto f = replication.find("replication_factor");
    s.factor = f == replication.end() ? 1 : parse_factor(f->second, keyspace);
  } else if (cls == "NetworkTopologyStrategy") {
    s.strategy = kind::network_topology;
    for (auto& [k, v] : replication)
      if (k != "class") s.per_datacenter[k] = parse_factor(v, keyspace);
  } else if (cls == "LocalStrategy" || cls == "MetaStrategy") {
    s.strategy = kind::local;
  } else if (cls == "EverywhereStrategy") {
    s.strategy = kind::everywhere;
  } else {
    throw invalid_argument_error("cassandra: keyspace '" + keyspace + "' has replication class '" + cls +
                                 "', which the client does not know (SimpleStrategy, NetworkTopologyStrategy, "
                                 "LocalStrategy, EverywhereStrategy)");
  }
  return s;
}

token_ring::token_ring(std::vector<node_info> nodes) : _nodes(std::move(nodes)) {
  for (size_t i = 0; i < _nodes.size(); ++i) {
    if (_nodes[i].tokens.empty())
      throw invalid_argument_error("cassandra: node " + _nodes[i].host + " has no tokens");
    for (int64_t t : _nodes[i].tokens) _tokens.emplace_back(t, i);
  }
  std::sort(_tokens.begin(), _tokens.end());
  for (size_t i = 1; i < _tokens.size(); ++i)
    if (_tokens[i].first == _tokens[i - 1].first)
      throw invalid_argument_error("cassandra: token " + std::to_string(_tokens[i].first) + " is held by both " +
                                   _nodes[_tokens[i - 1].second].host + " and " + _nodes[_tokens[i].second].host);
  if (_tokens.empty()) return;
  // (min, t0], (t0, t1], ..., (t_last, max]: the last part of the range that wraps around belongs to t0's node
  int64_t start = min_token;
  for (size_t i = 0; i < _tokens.size(); ++i) {
    if (_tokens[i].first != start) _ranges.push_back({{start, _tokens[i].first}, _tokens[i].second, i});
    start = _tokens[i].first;
  }
  if (start != max_token) _ranges.push_back({{start, max_token}, _tokens[0].second, 0});
}

size_t token_ring::range_of(int64_t t) const {
  auto it = std::lower_bound(_ranges.begin(), _ranges.end(), t,
                             [](const range& r, int64_t v) { return r.tokens.end < v; });
  return it == _ranges.end() ? _ranges.size() - 1 : static_cast<size_t>(it - _ranges.begin());
}

std::vector<std::vector<size_t>> token_ring::replicas_by_position(const replication_strategy& s) const {
  const size_t n = _tokens.size();
  std::vector<std::vector<size_t>> out(n);
  std::map<std::string, int> dc_nodes;
  for (auto& node : _nodes) ++dc_nodes[node.datacenter];
  for (size_t p = 0; p < n; ++p) {
    auto& r = out[p];
    switch (s.strategy) {
      case replication_strategy::kind::local: break;
      case replication_strategy::kind::everywhere:
      case replication_strategy::kind::simple: {
        size_t want = s.strategy == replication_strategy::kind::everywhere
                          ? _nodes.size()
                          : std::min(_nodes.size(), static_cast<size_t>(std::max(s.factor, 0)));
        for (size_t j = 0; j < n && r.size() < want; ++j) {
          size_t node = _tokens[(p + j) % n].second;
          if (std::find(r.begin(), r.end(), node) == r.end()) r.push_back(node);
        }
        break;
      }
      case replication_strategy::kind::network_topology: {
        std::map<std::string, int> need;
        int left = 0;
        for (auto& [dc, f] : s.per_datacenter) {
          auto it = dc_nodes.find(dc);
          need[dc] = std::min(f, it == dc_nodes.end() ? 0 : it->second);
          left += need[dc];
        }
        for (size_t j = 0; j < n && left > 0; ++j) {
          size_t node = _tokens[(p + j) % n].second;
          auto it = need.find(_nodes[node].datacenter);
          if (it == need.end() || it->second == 0 || std::find(r.begin(), r.end(), node) != r.end()) continue;
          r.push_back(node);
          --it->second;
          --left;
        }
        break;
      }
    }
  }
  return out;
}

std::vector<ring_split> plan_splits(const token_ring& ring, const replication_strategy& s, int n) {
  if (n < 1) throw invalid_argument_error("cassandra: split count " + std::to_string(n) + " must be at least 1");
  std::vector<ring_split> out;
  if (ring.empty()) {
    for (auto& r : split_ring(n)) out.push_back({{r}, {}});
    return out;
  }
  const __int128 total = static_cast<__int128>(max_token) - min_token;
  auto width = [](const token_range& r) { return static_cast<__int128>(r.end) - r.start; };
  auto reps = ring.replicas_by_position(s);
  // the ranges of each replica set, in token order
  std::map<std::vector<size_t>, std::vector<token_range>> groups;
  for (auto& r : ring.ranges()) groups[reps[r.position]].push_back(r.tokens);
  for (auto& [replicas, ranges] : groups) {
    __int128 group_width = 0;
    for (auto& r : ranges) group_width += width(r);
    // m splits of about total / n each; a piece goes to the split its middle falls in
    auto m = static_cast<int64_t>((group_width * n + total / 2) / total);
    m = std::max<int64_t>(m, 1);
    std::vector<ring_split> parts(static_cast<size_t>(m));
    __int128 done = 0;
    for (auto& r : ranges) {
      __int128 w = width(r);
      auto k = static_cast<int64_t>(std::max<__int128>((w * n + total / 2) / total, 1));
      for (int64_t i = 0; i < k; ++i) {
        token_range piece{static_cast<int64_t>(r.start + w * i / k), static_cast<int64_t>(r.start + w * (i + 1) / k)};
        __int128 mid = done + width(piece) / 2;
        done += width(piece);
        auto& split = parts[static_cast<size_t>(std::min<__int128>(mid * m / group_width, m - 1))];
        if (!split.ranges.empty() && split.ranges.back().end == piece.start)
          split.ranges.back().end = piece.end;
        else
          split.ranges.push_back(piece);
      }
    }
    for (auto& p : parts) {
      if (p.ranges.empty()) continue;
      p.replicas = replicas;
      out.push_back(std::move(p));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ring_split& a, const ring_split& b) { return a.ranges[0].start < b.ranges[0].start; });
  return out;
}

std::vector<std::vector<std::optional<std::string_view>>> raw_rows(const rows_result& rows, const std::string& host) {
  byte_reader r(rows.rows, host);
  std::vector<std::vector<std::optional<std::string_view>>> out(static_cast<size_t>(std::max(rows.rows_count, 0)));
  for (auto& row : out) {
    row.reserve(static_cast<size_t>(rows.metadata.columns_count));
    for (int32_t c = 0; c < rows.metadata.columns_count; ++c) row.push_back(r.bytes());
  }
  return out;
}

std::vector<std::string> decode_text_collection(std::string_view value, const std::string& host) {
  byte_reader r(value, host);
  int32_t n = r.i32();
  if (n < 0 || static_cast<size_t>(n) > value.size() / 4) r.malformed("collection of " + std::to_string(n) + " elements");
  std::vector<std::string> out;
  for (int32_t i = 0; i < n; ++i) {
    auto v = r.bytes();
    out.emplace_back(v ? *v : std::string_view());
  }
  return out;
}

std::map<std::string, std::string> decode_text_map(std::string_view value, const std::string& host) {
  byte_reader r(value, host);
  int32_t n = r.i32();
  if (n < 0 || static_cast<size_t>(n) > value.size() / 8) r.malformed("map of " + std::to_string(n) + " entries");
  std::map<std::string, std::string> out;
  for (int32_t i = 0; i < n; ++i) {
    auto k = r.bytes();
    auto v = r.bytes();
    out[std::string(k ? *k : std::string_view())] = std::string(v ? *v : std::string_view());
  }
  return out;
}

std::vector<std::optional<std::string_view>> split_values(int16_t count, std::string_view bytes) {
  static const std::string what = "bound values";
  byte_reader r(bytes, what);
  std::vector<std::optional<std::string_view>> out;
  for (int16_t i = 0; i < count; ++i) out.push_back(r.bytes());
  return out;
}

}  // namespace tug::io::cassandra
