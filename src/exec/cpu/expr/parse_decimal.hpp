#pragma once
// Decimal text to an unscaled decimal128: one definition for cpu::cast (cast.cpp) and the CUDA
// expression evaluator (evaluate.cu), so both accept and round the same strings.
#include <cstdint>

#include "exec/host_device.hpp"

namespace tug::cpu::detail {

/// "[-+]digits[.digits]" (s, n) to an unscaled value of `scale`, extra digits rounding half away from
/// zero; false when malformed or when the value needs more than `precision` (<= 38) digits.
TUG_HOST_DEVICE inline bool parse_decimal(const char* s, int64_t n, int scale, int precision, __int128& out) {
  using u128 = unsigned __int128;
  u128 bound = 1;  // 10^precision
  for (int k = 0; k < precision; ++k)
    bound *= 10;
  // a magnitude above 10^38 can only grow: it fails every precision, and 10 times it still fits 128 bits
  const u128 cap = static_cast<u128>(10000000000000000000ull) * 10000000000000000000ull;
  int64_t i = 0;
  bool neg = false;
  if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  u128 v = 0;
  int digits = 0, frac = 0;
  bool dot = false, round_up = false;
  for (; i < n; ++i) {
    const char ch = s[i];
    if (ch == '.' && !dot) {
      dot = true;
      continue;
    }
    if (ch < '0' || ch > '9') return false;
    ++digits;
    if (dot && frac >= scale) {  // the first dropped digit decides the rounding; the rest are only checked
      if (frac++ == scale) round_up = ch >= '5';
      continue;
    }
    if (dot) ++frac;
    v = v * 10 + static_cast<unsigned>(ch - '0');
    if (v > cap) return false;
  }
  if (digits == 0) return false;
  for (; frac < scale; ++frac) {
    v *= 10;
    if (v > cap) return false;
  }
  if (round_up) ++v;
  if (v >= bound) return false;
  out = neg ? -static_cast<__int128>(v) : static_cast<__int128>(v);
  return true;
}

}  // namespace tug::cpu::detail
