#pragma once
// Variance and standard deviation: one algorithm for the CPU backend (src/exec/cpu/agg_kernels.cpp)
// and the CUDA backend (src/exec/cuda/aggregate.cu sort-based, hash_aggregate.cu hash-based), so the
// CPU tests exercise the arithmetic the GPU runs.
//
// Values are read as float64 first (integers and decimals converted as Polars does); the algorithm is
// the corrected two-pass one (Chan, Golub & LeVeque), over "items" of weight w, mean mu and M2: a row
// is (1, x, 0), a partial state of another partition (count, mean, M2).
// - Pass 1: W = sum w, S = sum w mu, lo / hi = the smallest / largest mu (NaN ignored; items of weight
//   0 ignored). The center c = S / W clamped into [lo, hi] (center()): the true mean lies there, and a
//   group of identical values gets c equal to them exactly, however S rounded.
// - Pass 2: D1 = sum w (mu - c), D2 = sum M2 + w (mu - c)^2 (contributions: deviation()).
// - Then M2 = D2 - D1^2 / W (m2(), exact in real arithmetic for any c; the correction term removes the
//   error of an inexact c), the mean c + D1 / W (mean()), var = M2 / (W - ddof) (variance()).
// Identical values give exactly 0; a NaN, or an infinity (inf - inf), gives NaN, as Polars. Merging
// partial states this way is Chan's parallel formula over all partitions at once, in two passes, which
// the GPU's atomic accumulators can run (one 64-bit word per accumulator). The backends add the
// contributions in different orders (and compilers may fuse a multiply-add), so their results agree to
// rounding, and exactly where the algorithm is exact.
#include <cmath>
#include <cstdint>

#include "exec/host_device.hpp"

namespace tug::moments {

/// The center of pass 2: sum / weight clamped into [lo, hi] (a NaN stays NaN); 0 without weight.
TUG_HOST_DEVICE inline double center(double sum, double weight, double lo, double hi) {
  if (!(weight > 0)) return 0.0;
  double c = sum / weight;
  if (c < lo) c = lo;
  if (c > hi) c = hi;
  return c;
}

/// Pass 2's first sum for an item: w (mu - c).
TUG_HOST_DEVICE inline double deviation(double w, double mu, double c) { return w * (mu - c); }

/// Pass 2's second sum for an item: M2 + w (mu - c)^2 (a row: (x - c)^2).
TUG_HOST_DEVICE inline double squared_deviation(double w, double mu, double m2, double c) {
  const double d = mu - c;
  return m2 + w * (d * d);
}

/// M2 from pass 2's sums over total weight w > 0: d2 - d1^2 / w, at least 0 (a NaN stays NaN).
TUG_HOST_DEVICE inline double m2(double d1, double d2, double w) {
  const double r = d2 - d1 * (d1 / w);
  return r < 0 ? 0.0 : r;
}

/// The mean from the center and pass 2's first sum over total weight w > 0.
TUG_HOST_DEVICE inline double mean(double c, double d1, double w) { return c + d1 / w; }

/// Whether a group of n values has a variance with `ddof` (n > ddof; null otherwise).
TUG_HOST_DEVICE inline bool has_variance(int64_t n, int ddof) { return n > ddof; }

/// The variance of n values (has_variance) with sum of squared deviations m2; its square root when `root`
/// (the standard deviation).
TUG_HOST_DEVICE inline double variance(double m2, int64_t n, int ddof, bool root) {
  const double v = m2 / static_cast<double>(n - ddof);
#ifdef __CUDA_ARCH__
  return root ? ::sqrt(v) : v;
#else
  return root ? std::sqrt(v) : v;
#endif
}

}  // namespace tug::moments
