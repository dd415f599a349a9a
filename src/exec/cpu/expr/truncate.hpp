#pragma once
// dt.truncate of one tick count, as Polars truncates: the CPU evaluator (temporal.cpp) and the CUDA one
// (evaluate.cu) both call truncate_ticks, so the two engines cannot drift.
#include <cstdint>
#include <string>

#include "exec/host_device.hpp"
#include "tug/core/temporal.hpp"

namespace tug::cpu::detail {

/// How dt.truncate moves a tick count down to the start of its interval (built once a column from the
/// interval string by temporal.cpp's truncate()).
struct truncate_rule {
  enum kind_t : int64_t {
    months = 0,  ///< calendar months of `every` (counted from year 0)
    fixed = 1,   ///< `every` ticks, intervals starting at `origin` (weeks: Monday 1970-01-05)
    nanos = 2,   ///< `every` nanoseconds, not a whole number of ticks of `ns_per_tick` nanoseconds
  };
  int64_t kind = fixed;
  int64_t every = 1;
  int64_t origin = 0;
  int64_t per_day = 86400;  ///< ticks a day (months)
  int64_t ns_per_tick = 1;  ///< (nanos)
};

/// The rule of interval `every` ("1mo", "15m", "2w", ...) for ticks of `tps` a second (1 for dates,
/// truncated as midnight in seconds). @throws invalid_argument_error naming the interval when it is
/// malformed or does not fit the unit. (temporal.cpp)
truncate_rule truncate_rule_of(const std::string& every, int64_t tps);

TUG_HOST_DEVICE constexpr __int128 floor_mod128(__int128 a, __int128 b) {
  __int128 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/// The start of the interval of rule `r` that holds tick count `t`; a start before the unit's range
/// (within an interval of INT64_MIN) wraps around, as Polars' release builds do, without overflow.
TUG_HOST_DEVICE constexpr int64_t truncate_ticks(int64_t t, const truncate_rule& r) {
  using temporal::floor_div;
  using temporal::floor_mod;
  if (r.kind == truncate_rule::months) {
    const auto d = temporal::civil_from_days(floor_div(t, r.per_day));
    int64_t total = d.year * 12 + (d.month - 1);
    total -= floor_mod(total, r.every);
    const int64_t days =
        temporal::days_from_civil(floor_div(total, 12), static_cast<unsigned>(floor_mod(total, 12)) + 1, 1);
    return static_cast<int64_t>(static_cast<__int128>(days) * r.per_day);
  }
  if (r.kind == truncate_rule::fixed) {
    const __int128 x = t;
    return static_cast<int64_t>(x - floor_mod128(x - r.origin, r.every));
  }
  // an interval that is not a whole number of ticks: truncate in nanoseconds, back to ticks (floor)
  const __int128 ns = static_cast<__int128>(t) * r.ns_per_tick;
  const __int128 start = ns - floor_mod128(ns, r.every);
  const __int128 q = start / r.ns_per_tick;
  return static_cast<int64_t>(q - (q * r.ns_per_tick != start && start < 0));
}

/// truncate_ticks of a date32 day count (as midnight in seconds, floored back to whole days).
TUG_HOST_DEVICE constexpr int32_t truncate_days(int32_t days, const truncate_rule& r) {
  return static_cast<int32_t>(temporal::floor_div(truncate_ticks(int64_t{days} * 86400, r), 86400));
}

}  // namespace tug::cpu::detail
