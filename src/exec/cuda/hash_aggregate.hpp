#pragma once
// Host side of the CUDA hash aggregation (hash_aggregate.cu; planning in hash_aggregate_plan.cpp):
// which group-bys it runs, and the accumulator program of its partial and final phases. Host-only.
//
// Every aggregation becomes 64-bit accumulators per group (in a hash table slot) fed by the rows,
// then output columns computed from them. The partial phase runs per partition over the input rows
// and outputs the CPU backend's state columns (cpu::state_types); the final phase runs the program
// of the merge over the concatenated states.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "exec/host_device.hpp"
#include "tug/exec/physical.hpp"

namespace tug::cuda::hash {

/// How an accumulator combines contributions (all accumulators are 64 bits).
enum class acc_kind : uint8_t {
  add_u64,   ///< wrapping integer sum (counts, integer sums); starts at 0
  add_f64,   ///< double sum; starts at 0.0
  or_u64,    ///< bitwise or (any / all flags); starts at 0
  max_u64,   ///< maximum (last row + 1); starts at 0
  min_u64,   ///< minimum (first row); starts at ~0
  best_min,  ///< the row of the smallest valid value of `col` (NaN only when nothing else, ties to the earlier row)
  best_max,  ///< the row of the largest valid value of `col`
  center,    ///< computed after pass 1: moments::center of count `a`, sum `b` and the order keys (order_key,
             ///< cmp_as::f64) of the smallest `lo` and largest `hi` value (var / std, exec/moments.hpp)
};

/// What row r contributes to an accumulator (nulls contribute nothing unless the kind says so).
enum class src_kind : uint8_t {
  none,       ///< computed accumulators
  one,        ///< 1 for every row (len)
  valid,      ///< 1 where `col` is valid (count)
  value,      ///< the value of `col` (as u64 or f64, by the accumulator kind)
  is_true,    ///< 1 where `col` is valid and true
  is_false,   ///< 1 where `col` is valid and false
  candidate,  ///< r where `col` is valid (min / max)
  row,        ///< r (first)
  row1,       ///< r + 1 (last)
  value_key,  ///< the order key (order_key, cmp_as::f64) of the value of `col` as a double (var's range)
  weighted,   ///< count `col` times mean `col2` (merging var states: the sum); nothing where the count is 0
  mean_key,   ///< the order key of mean `col2` where count `col` is not 0 (merging var states: the range)
  dev,        ///< value of `col` - center accumulator `a` (pass 2 of var)
  sq_dev,     ///< (value of `col` - center accumulator `a`)^2 (pass 2 of var)
  wdev,       ///< count `col` * (mean `col2` - center `a`) (pass 2 of merging var states)
  chan,       ///< M2 `col3` + count `col` * (mean `col2` - center `a`)^2 (pass 2 of merging var states)
};

/// One accumulator. Pass 1 runs with the grouping, then `mean` accumulators are computed, then pass 2.
struct acc_desc {
  acc_kind kind = acc_kind::add_u64;
  src_kind src = src_kind::none;
  int col = -1, col2 = -1, col3 = -1;
  int pass = 1;          ///< 1, 0 (computed) or 2
  int a = -1, b = -1;    ///< center: count and sum accumulators; dev / sq_dev / wdev / chan: the center
  int lo = -1, hi = -1;  ///< center: the accumulators of the smallest and largest value's order key
};

/// How an output column is made from a group's accumulators.
enum class out_kind : uint8_t {
  take,         ///< the accumulator's 64 bits as `type` (8 bytes), never null
  first_row,    ///< `col` at the group's first row
  best_row,     ///< `col` at the row in accumulator `acc` (null when none)
  last_row,     ///< `col` at the row in accumulator `acc` minus 1
  mean,         ///< sum `acc` / count `acc2`, null without values
  var,          ///< moments::variance of count `acc` and pass 2's sums `acc2`, `acc3`; null unless count > ddof
  std,          ///< sqrt of var
  moment_mean,  ///< var's partial state: moments::mean of count `acc`, center `acc2`, pass 2's first sum `acc3`
  moment_m2,    ///< var's partial state: moments::m2 of count `acc` and pass 2's sums `acc2`, `acc3`
  any,          ///< `acc` != 0
  all,          ///< `acc` == 0
};

struct out_desc {
  out_kind kind = out_kind::take;
  data_type type;
  int acc = -1, acc2 = -1;
  int col = -1;
  int ddof = 1;
  int acc3 = -1;
};

/// Accumulators (pass 1 first, then computed, then pass 2) and the output columns after the keys.
struct program {
  std::vector<acc_desc> accs;
  std::vector<out_desc> outs;
  int pass1 = 0;  ///< accumulators [0, pass1) are fed by pass 1
  int pass2 = 0;  ///< the last pass2 accumulators are fed by pass 2
};

/// How a fused predicate term compares a column's values with its literal.
enum class cmp_as : uint8_t {
  s64,  ///< signed integers, dates, times (widened to 64 bits)
  u64,  ///< unsigned integers
  f64,  ///< floats (widened to double), Polars' total order: NaN equals NaN and is above every number
};

/// One term of a fused predicate: `column <op> literal`, with the literal in the column's type. A
/// null value makes the term false (Kleene AND of the terms then never selects the row).
struct pred_term {
  size_t col = 0;
  fn op = fn::eq;  ///< eq ne lt le gt ge
  cmp_as as = cmp_as::s64;
  uint64_t literal = 0;  ///< the literal's bits: int64, uint64, or double (f32 widened)
};

/// A value's key in an unsigned order that matches the comparison `as`: signed integers with the sign
/// bit flipped; doubles (f32 widened) in Polars' total order (-0.0 as 0.0, every NaN the largest key).
/// `v` holds the value's bits: an int64, a uint64, or a double.
TUG_HOST_DEVICE inline uint64_t order_key(uint64_t v, cmp_as as) {
  if (as == cmp_as::u64) return v;
  if (as == cmp_as::s64) return v ^ 0x8000000000000000ULL;
  if ((v & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL) return ~0ULL;  // NaN
  if (v == 0x8000000000000000ULL) v = 0;                                   // -0.0
  return (v >> 63) ? ~v : (v | 0x8000000000000000ULL);
}

/// The double whose order key (cmp_as::f64) is `k`: order_key's inverse (-0.0 comes back as 0.0; the
/// largest key, every NaN's, as a NaN).
TUG_HOST_DEVICE inline double from_order_key(uint64_t k) {
  uint64_t v = k == ~0ULL ? 0x7ff8000000000000ULL : (k >> 63) ? (k & 0x7fffffffffffffffULL) : ~k;
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}

/// A term as the order keys where it holds: [lo, hi], or outside it when `outside`; lo > hi is empty.
struct key_range {
  uint64_t lo = 0, hi = ~0ULL;
  bool outside = false;
  bool holds(uint64_t key) const { return (key >= lo && key <= hi) != outside; }
};
key_range range_of(const pred_term& t);

/// The keys of a direct-indexed group table (one integer key whose sampled values lie in a small
/// range): a key's value v (its bits widened to 64: sign-extended int64 or zero-extended uint64) takes
/// slot v - lo when that is below `span` (one unsigned subtraction and compare, for either
/// signedness); the null key takes slot `span`.
struct direct_range {
  uint64_t lo = 0;
  uint64_t span = 0;  ///< 0: no direct table
  TUG_HOST_DEVICE bool holds(uint64_t v) const { return v - lo < span; }
};

/// The direct range [min, max] of a sample whose smallest and largest valid keys are the order keys
/// `min_key` and `max_key` (order_key with `as`: s64 or u64; min_key > max_key when the sample saw no
/// valid key), when its span plus the null key's slot fit in `slots`; else span 0.
direct_range direct_range_of(uint64_t min_key, uint64_t max_key, cmp_as as, int64_t slots);

/// At most this many terms are fused.
constexpr size_t max_fused_terms = 4;

/// The conjunction of `column <op> literal` terms that `pred` is (over input schema `in`), so that the
/// aggregation kernels evaluate it while reading the rows, without a mask column; empty when `pred` has
/// any other shape (the mask path evaluates it then).
std::vector<pred_term> fused_predicate(const expr& pred, const schema& in);

/// Empty when the hash aggregation can run keys `keys` of `in` with `aggs`: fixed-width keys (integers,
/// booleans, floats, dates, timestamps, durations) and decomposable aggregations; else why not.
std::string unfit(const schema& in, const std::vector<size_t>& keys, const std::vector<agg_spec>& aggs);

/// The partial phase over input rows (its outputs are the CPU's state columns, cpu::state_types).
program plan_partial(const std::vector<agg_spec>& aggs);

/// The final phase over state rows: `num_keys` key columns, then each aggregation's state columns.
program plan_final(const std::vector<agg_spec>& aggs, size_t num_keys);

/// HyperLogLog distinct count of the group keys, which sizes the largest table tier to the groups
/// rather than to the rows (a final phase's input has each group once per partition).
constexpr int hll_bits = 12;
constexpr int hll_registers = 1 << hll_bits;

/// The register of 64-bit hash `h` (its top bits) and the rank to raise it to: one more than the
/// leading zeros of the remaining bits (at most 64 - hll_bits + 1).
TUG_HOST_DEVICE inline void hll_place(uint64_t h, uint32_t& reg, uint32_t& rank) {
  reg = static_cast<uint32_t>(h >> (64 - hll_bits));
  uint64_t rest = (h << hll_bits) | (uint64_t{1} << (hll_bits - 1));  // the guard bit bounds the rank
#ifdef __CUDA_ARCH__
  rank = static_cast<uint32_t>(__clzll(static_cast<long long>(rest))) + 1;
#else
  rank = static_cast<uint32_t>(__builtin_clzll(rest)) + 1;
#endif
}

/// The distinct count estimated from `hll_registers` registers (Flajolet et al., with linear counting
/// while registers are still zero); standard error about 1.6%.
double hll_estimate(const uint32_t* registers);

}  // namespace tug::cuda::hash
