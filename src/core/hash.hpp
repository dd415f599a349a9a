#pragma once
/// Hashing shared by the key index (group-by / join keys), the Parquet writer's dictionaries and the
/// CUDA hash tables (mix): MurmurHash3's 64-bit finalizer and a word-at-a-time hash of byte strings
/// built on it (host only).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "exec/host_device.hpp"

namespace tug::hashing {

/// MurmurHash3's 64-bit finalizer.
TUG_HOST_DEVICE inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix(h ^ w) * 0x9e3779b97f4a7c15ULL;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  return mix(h ^ tail);
}

}  // namespace tug::hashing
