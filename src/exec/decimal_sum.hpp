#pragma once
// Exact sums of decimals, for the sum aggregation of both backends (cpu agg_kernels.cpp, CUDA
// aggregate.cu): the unscaled values add up in 192 bits, so no order of additions wraps, and a sum
// past the result's 38 digits raises (as Polars and DuckDB) instead of wrapping in 128 bits.
#include <cstdint>

#include "exec/host_device.hpp"

namespace tug {

/// A 192-bit two's complement sum of __int128 values (a low 128-bit word, a high 64-bit word): exact
/// for any 2^63 of them, in any order.
struct decimal_sum {
  unsigned __int128 lo = 0;
  int64_t hi = 0;

  decimal_sum() = default;
  TUG_HOST_DEVICE explicit decimal_sum(__int128 v) : lo(static_cast<unsigned __int128>(v)), hi(v < 0 ? -1 : 0) {}

  TUG_HOST_DEVICE decimal_sum& operator+=(const decimal_sum& o) {
    const unsigned __int128 l = lo + o.lo;
    hi += o.hi + (l < lo ? 1 : 0);
    lo = l;
    return *this;
  }
  TUG_HOST_DEVICE friend decimal_sum operator+(decimal_sum a, const decimal_sum& b) {
    a += b;
    return a;
  }

  /// Whether the sum fits in 128 bits; its value in `out` then.
  TUG_HOST_DEVICE bool to_int128(__int128& out) const {
    out = static_cast<__int128>(lo);
    return hi == (out < 0 ? -1 : 0);
  }

  /// Whether the sum has at most `precision` (<= 38) digits.
  TUG_HOST_DEVICE bool fits(int precision) const {
    __int128 v;
    if (!to_int128(v)) return false;
    __int128 bound = 1;
    for (int k = 0; k < precision; ++k)
      bound *= 10;
    return v < bound && v > -bound;
  }
};

}  // namespace tug
