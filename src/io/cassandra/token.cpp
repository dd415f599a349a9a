#include "tug/io/cassandra/token.hpp"

#include <algorithm>
#include <limits>

#include "core/hash.hpp"
#include "tug/core/error.hpp"

namespace tug::io::cassandra {

namespace {
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t block(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];  // little-endian
  return v;
}
/// A tail byte as Cassandra's Java code reads it: a signed byte widened to long.
inline uint64_t sbyte(uint8_t b) { return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(b))); }
}  // namespace

int64_t murmur3_token(std::string_view key) {
  const auto* data = reinterpret_cast<const uint8_t*>(key.data());
  const size_t len = key.size();
  const size_t nblocks = len / 16;
  uint64_t h1 = 0, h2 = 0;
  const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
  for (size_t i = 0; i < nblocks; ++i) {
    uint64_t k1 = block(data + i * 16), k2 = block(data + i * 16 + 8);
    k1 *= c1;
    k1 = rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
    h1 = rotl(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= c2;
    k2 = rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
    h2 = rotl(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  const uint8_t* tail = data + nblocks * 16;
  uint64_t k1 = 0, k2 = 0;
  switch (len & 15) {
    case 15: k2 ^= sbyte(tail[14]) << 48; [[fallthrough]];
    case 14: k2 ^= sbyte(tail[13]) << 40; [[fallthrough]];
    case 13: k2 ^= sbyte(tail[12]) << 32; [[fallthrough]];
    case 12: k2 ^= sbyte(tail[11]) << 24; [[fallthrough]];
    case 11: k2 ^= sbyte(tail[10]) << 16; [[fallthrough]];
    case 10: k2 ^= sbyte(tail[9]) << 8; [[fallthrough]];
    case 9:
      k2 ^= sbyte(tail[8]);
      k2 *= c2;
      k2 = rotl(k2, 33);
      k2 *= c1;
      h2 ^= k2;
      [[fallthrough]];
    case 8: k1 ^= sbyte(tail[7]) << 56; [[fallthrough]];
    case 7: k1 ^= sbyte(tail[6]) << 48; [[fallthrough]];
    case 6: k1 ^= sbyte(tail[5]) << 40; [[fallthrough]];
    case 5: k1 ^= sbyte(tail[4]) << 32; [[fallthrough]];
    case 4: k1 ^= sbyte(tail[3]) << 24; [[fallthrough]];
    case 3: k1 ^= sbyte(tail[2]) << 16; [[fallthrough]];
    case 2: k1 ^= sbyte(tail[1]) << 8; [[fallthrough]];
    case 1:
      k1 ^= sbyte(tail[0]);
      k1 *= c1;
      k1 = rotl(k1, 31);
      k1 *= c2;
      h1 ^= k1;
  }
  h1 ^= len;
  h2 ^= len;
  h1 += h2;
  h2 += h1;
  h1 = hashing::mix(h1);
  h2 = hashing::mix(h2);
  h1 += h2;
  auto t = static_cast<int64_t>(h1);
  return t == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : t;
}

std::string routing_key(const std::vector<std::string_view>& components) {
  if (components.size() == 1) return std::string(components[0]);
  std::string out;
  for (auto c : components) {
    if (c.size() > 0xffff)
      throw invalid_argument_error("cassandra: a partition key component of " + std::to_string(c.size()) +
                                   " bytes exceeds 65535");
    out.push_back(static_cast<char>(c.size() >> 8));
    out.push_back(static_cast<char>(c.size() & 0xff));
    out.append(c);
    out.push_back('\0');
  }
  return out;
}

std::vector<token_range> split_ring(int n) {
  if (n < 1) throw invalid_argument_error("cassandra: split count " + std::to_string(n) + " must be at least 1");
  // the ring spans 2^64 tokens from min (excluded) to max; cut it with 128-bit arithmetic
  const __int128 lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const __int128 width = hi - lo;
  std::vector<token_range> out;
  __int128 start = lo;
  for (int i = 1; i <= n; ++i) {
    __int128 end = i == n ? hi : lo + width * i / n;
    out.push_back({static_cast<int64_t>(start), static_cast<int64_t>(end)});
    start = end;
  }
  return out;
}

std::optional<token_range> intersect(const token_range& a, const token_range& b) {
  const int64_t start = std::max(a.start, b.start), end = std::min(a.end, b.end);
  if (start >= end) return std::nullopt;
  return token_range{start, end};
}

}  // namespace tug::io::cassandra
