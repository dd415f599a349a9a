#pragma once
/// Tokens of Cassandra's Murmur3Partitioner and splits of its ring.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tug::io::cassandra {

/// The Murmur3Partitioner token of a serialized partition key: h1 of MurmurHash3_x64_128 (seed 0) as
/// Cassandra computes it, with the tail bytes taken as signed, and Long.MIN_VALUE mapped to MAX_VALUE.
int64_t murmur3_token(std::string_view key);

/// The partition key bytes that a token hashes: a single component as is; several as
/// <short length><bytes><0x00> each.
std::string routing_key(const std::vector<std::string_view>& components);

/// A range of tokens (start, end]: start excluded, end included.
struct token_range {
  int64_t start, end;
};

/// The whole ring (min token excluded, as no key hashes to it) cut into `n` (>= 1) contiguous ranges of
/// nearly equal width, in token order.
std::vector<token_range> split_ring(int n);

/// The tokens that both ranges hold; nullopt when none.
std::optional<token_range> intersect(const token_range& a, const token_range& b);

}  // namespace tug::io::cassandra
