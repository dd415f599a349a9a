#pragma once
/// Hashing shared by the key index (group-by / join keys), the Parquet writer's dictionaries and the
/// CUDA hash tables (mix): MurmurHash3's 64-bit finalizer and a word-at-a-time hash of byte strings
/// built on it (host: word loads; hash_bytes_bytewise is the same for device code), and the
/// per-type key hashes of hash_rows, shared with the device.
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

/// What a null key hashes to in a row hash (hash_rows; dist's device split too).
constexpr uint64_t null_hash = 0x5bd1e9955bd1e995ULL;

/// A row hash so far combined with the next key column's hash of the row (hash_rows).
TUG_HOST_DEVICE inline uint64_t combine(uint64_t h, uint64_t x) { return mix(h * 0x9e3779b97f4a7c15ULL + x); }

/// The hash of a floating-point key (float keys as double): equal for -0.0 and 0.0, and for all NaNs.
TUG_HOST_DEVICE inline uint64_t hash_double(double d) {
  if (d != d) return 0x7ff8000000000000ULL * 31;
  if (d == 0) d = 0;
  uint64_t b;
  memcpy(&b, &d, 8);
  return mix(b);
}

/// The hash of a decimal128 key.
TUG_HOST_DEVICE inline uint64_t hash_int128(__int128 v) {
  return mix(static_cast<uint64_t>(v) ^ mix(static_cast<uint64_t>(v >> 64)));
}

/// The hash of an integral key (signed values sign-extended to 64 bits).
template <typename T>
TUG_HOST_DEVICE inline uint64_t hash_integral(T v) {
  return mix(static_cast<uint64_t>(v));
}

/// The hash of a byte string (hash_bytes), reading one byte at a time: the same words on a
/// little-endian machine, for device code (memcpy of unaligned words).
TUG_HOST_DEVICE inline uint64_t hash_bytes_bytewise(const char* p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    for (int k = 0; k < 8; ++k) w |= static_cast<uint64_t>(static_cast<uint8_t>(p[i + k])) << (8 * k);
    h = mix(h ^ w) * 0x9e3779b97f4a7c15ULL;
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < n; ++k) tail |= static_cast<uint64_t>(static_cast<uint8_t>(p[i + k])) << (8 * k);
  return mix(h ^ tail);
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
