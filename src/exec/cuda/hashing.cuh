#pragma once
// Hashing of key values on the device, shared by the hash join (join.cu) and the hash aggregation
// (hash_aggregate.cu). Included only from .cu files.
#include <cstdint>

#include "core/hash.hpp"

namespace tug::cuda {

/// MurmurHash3's 64-bit finalizer (core/hash.hpp, the host's too).
using hashing::mix;

/// Bits of a float key that are equal exactly when the keys are (-0.0 == 0.0, all NaNs equal), as
/// the CPU key index compares them (through double).
__device__ inline uint64_t float_bits(double d) {
  if (d != d) return 0x7ff8000000000000ULL;
  if (d == 0) d = 0;
  return static_cast<uint64_t>(__double_as_longlong(d));
}

}  // namespace tug::cuda
