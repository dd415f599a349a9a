#pragma once
/// Random numbers of the data generators: splitmix64 streams, one per (seed, table, chunk), so a chunk's
/// data depends only on those three and never on which thread generates it or in which order.
#include <cstdint>
#include <string_view>

namespace tug::gen {

/// The splitmix64 finalizer: a bijective 64-bit mix.
inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// FNV-1a of a name: the stream id of a table.
inline uint64_t name_hash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

/// The seed of chunk `chunk` of table `table` in a data set generated from `seed`.
inline uint64_t chunk_seed(uint64_t seed, std::string_view table, int64_t chunk) {
  return mix64(mix64(mix64(seed) ^ name_hash(table)) ^ static_cast<uint64_t>(chunk));
}

/// splitmix64: small, fast, good enough for generated data.
class rng {
 public:
  /// The seed is mixed first, so consecutive seeds give unrelated streams.
  explicit rng(uint64_t seed) : _s(mix64(seed) ^ 0x632be59bd9b4e5ULL) {}
  uint64_t next() {
    uint64_t z = (_s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [lo, hi] (both included).
  int64_t range(int64_t lo, int64_t hi) {
    auto span = static_cast<unsigned __int128>(static_cast<uint64_t>(hi - lo) + 1);
    return lo + static_cast<int64_t>((static_cast<unsigned __int128>(next()) * span) >> 64);
  }
  /// True with probability p.
  bool chance(double p) { return uniform() < p; }

 private:
  uint64_t _s;
};

}  // namespace tug::gen
