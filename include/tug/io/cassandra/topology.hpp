#pragma once
/// The cluster's topology: the nodes and their tokens (system.local, system.peers_v2 or system.peers), the
/// replicas of every token range under a keyspace's replication strategy, and splits of the ring that
/// each lie on one set of replicas.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tug/io/cassandra/protocol.hpp"
#include "tug/io/cassandra/token.hpp"

namespace tug::io::cassandra {

/// A node as system.local / system.peers describe it.
struct node_info {
  std::string host;  ///< its native protocol address, "address:port"
  std::string datacenter, rack;
  std::vector<int64_t> tokens;
};

/// How a keyspace places its replicas (system_schema.keyspaces.replication).
struct replication_strategy {
  enum class kind { simple, network_topology, local, everywhere };
  kind strategy = kind::simple;
  int factor = 1;                                ///< SimpleStrategy
  std::map<std::string, int> per_datacenter;     ///< NetworkTopologyStrategy
  /// From the replication map ("class" and the factors). @throws invalid_argument_error naming the keyspace
  /// for an unknown class or a factor that is no number.
  static replication_strategy parse(const std::map<std::string, std::string>& replication, const std::string& keyspace);
};

/// Every node's tokens, and the ranges between them. Immutable once built.
class token_ring {
 public:
  /// A range of tokens (start, end] that one node's token ends; `owner` indexes nodes().
  struct range {
    token_range tokens;
    size_t owner;
    size_t position;  ///< index of its end token in the sorted ring (a wrapped range: the first token's)
  };
  token_ring() = default;
  /// @throws invalid_argument_error for a node without tokens or a token two nodes hold.
  explicit token_ring(std::vector<node_info> nodes);

  const std::vector<node_info>& nodes() const { return _nodes; }
  bool empty() const { return _tokens.empty(); }
  /// The ranges covering the whole ring (min token excluded) in token order, none wrapping: the range
  /// that wraps around is cut in two at the largest token, both parts owned by the lowest token's node.
  const std::vector<range>& ranges() const { return _ranges; }
  /// The index into ranges() of the range holding token t.
  size_t range_of(int64_t t) const;
  /// The replicas (indices into nodes(), the owner of the token first) of each sorted ring position
  /// under `s`: SimpleStrategy takes the next distinct nodes clockwise, NetworkTopologyStrategy the next
  /// distinct nodes of each datacenter until its factor (racks are not considered), Everywhere every
  /// node, LocalStrategy none (any node answers).
  std::vector<std::vector<size_t>> replicas_by_position(const replication_strategy& s) const;

 private:
  std::vector<node_info> _nodes;
  std::vector<std::pair<int64_t, size_t>> _tokens;  // sorted: token, node
  std::vector<range> _ranges;
};

/// A split of the ring for reading: token ranges that share one set of replicas.
struct ring_split {
  std::vector<token_range> ranges;  ///< in token order
  std::vector<size_t> replicas;     ///< indices into the ring's nodes; empty when not known
};

/// About `n` (>= 1) splits of the ring whose ranges each lie on one set of replicas, ordered by their first
/// token: each range of the ring is cut into pieces of about 1/n of the ring, and the pieces of one
/// replica set are packed into splits of about that width. There is at least one split per replica set.
/// An empty ring gives split_ring(n) without replicas. @throws invalid_argument_error when n < 1.
std::vector<ring_split> plan_splits(const token_ring& ring, const replication_strategy& s, int n);

/// The values of the columns of each row of a Rows result, undecoded; std::nullopt for null.
/// @throws connection_error naming `host` when malformed.
std::vector<std::vector<std::optional<std::string_view>>> raw_rows(const rows_result& rows, const std::string& host);
/// The elements of a list<text> / set<text> value. @throws connection_error naming `host` when malformed.
std::vector<std::string> decode_text_collection(std::string_view value, const std::string& host);
/// The entries of a map<text, text> value. @throws connection_error naming `host` when malformed.
std::map<std::string, std::string> decode_text_map(std::string_view value, const std::string& host);

/// The values of a statement's bound values (`count` [value]s), undecoded; std::nullopt for null or unset.
/// @throws connection_error when malformed.
std::vector<std::optional<std::string_view>> split_values(int16_t count, std::string_view bytes);

}  // namespace tug::io::cassandra
