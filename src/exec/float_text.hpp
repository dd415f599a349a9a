#pragma once
// Floats to and from text: one definition for the CPU (format_value in src/core/scalar.cpp,
// cpu::cast's parse_number in src/exec/cpu/expr/cast.cpp) and the CUDA expression evaluator
// (src/exec/cuda/evaluate.cu), so both engines write and read the same bytes.
//
// Formatting (format_float) follows format_value's rules: "NaN", "inf", "-inf"; for |v| == 0 or
// 1e-4 <= |v| < 1e16 the plain decimal with the fewest digits after the point (1 to 20, correctly
// rounded as printf "%.*f") that reads back as the same value, trailing zeros stripped but one digit
// kept after the point; otherwise printf "%.*g" with the fewest significant digits (1 to 17) that
// read back. "Reads back" is exact: the digits are generated from the binary value with exact big
// integer arithmetic (Steele & White / Dragon4 with the half-gaps to the neighbouring floats as
// margins), so a candidate is accepted when it lies strictly inside the value's rounding interval,
// or on its edge when the value's significand is even (round half to even reads it back).
//
// Parsing (parse_float) follows std::from_chars(chars_format::general) over the whole string after one
// optional '+': an optional '-', then "inf" / "infinity" / "nan" (any case), or digits with an
// optional point and an optional exponent; correctly rounded (float32 directly from the decimal);
// false when malformed or out of range (a finite result that overflows, or a nonzero one that rounds
// to zero), as libstdc++ reports result_out_of_range. Short inputs take Clinger's exact fast path;
// the rest divide exactly with big integers (at most 800 significant digits are kept: a halfway point
// between two doubles has at most 767, the dropped digits only act as a sticky bit).
//
// Decimals to floats (decimal_to_float): unscaled / 10^scale correctly rounded (to nearest, ties to
// even), the value parse_float reads from the decimal's text; the one conversion of decimals that the
// casts, comparisons with floats and aggregations (mean, std, var, median, quantile) of both engines use.
#include <cstdint>
#include <cstring>

#include "exec/host_device.hpp"

namespace tug::float_text {

/// The decimal digits of u (at least `width` of them, at most 24, zero padded) at out, as
/// std::to_chars / "%0*llu"; returns their count. (Also the CUDA evaluator's integer, date and time
/// formatting: exec/cuda/strings.hpp.)
TUG_HOST_DEVICE inline int write_u64(uint64_t u, int width, char* out) {
  char t[24];
  int k = 0;
  do {
    t[k++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u);
  while (k < width)
    t[k++] = '0';
  for (int j = 0; j < k; ++j)
    out[j] = t[k - 1 - j];
  return k;
}

namespace detail {

using u128 = unsigned __int128;

/// An unsigned big integer of at most L 32-bit limbs, little-endian; w[n - 1] != 0 when n > 0.
template <int L>
struct big {
  uint32_t w[L];
  int n = 0;
};

template <int L>
TUG_HOST_DEVICE inline void set(big<L>& b, uint64_t v) {
  b.n = 0;
  while (v) {
    b.w[b.n++] = static_cast<uint32_t>(v);
    v >>= 32;
  }
}

template <int L>
TUG_HOST_DEVICE inline void trim(big<L>& b) {
  while (b.n > 0 && b.w[b.n - 1] == 0)
    --b.n;
}

/// b = b * f + a
template <int L>
TUG_HOST_DEVICE inline void mul_add(big<L>& b, uint32_t f, uint32_t a = 0) {
  uint64_t carry = a;
  for (int i = 0; i < b.n; ++i) {
    const uint64_t p = uint64_t{b.w[i]} * f + carry;
    b.w[i] = static_cast<uint32_t>(p);
    carry = p >> 32;
  }
  if (carry && b.n < L) b.w[b.n++] = static_cast<uint32_t>(carry);  // the sizes above never need more
}

TUG_HOST_DEVICE inline uint32_t pow10_u32(int k) {
  uint32_t p = 1;
  while (k-- > 0)
    p *= 10;
  return p;
}

TUG_HOST_DEVICE inline uint32_t pow5_u32(int k) {
  uint32_t p = 1;
  while (k-- > 0)
    p *= 5;
  return p;
}

template <int L>
TUG_HOST_DEVICE inline void mul_pow10(big<L>& b, int k) {
  for (; k >= 9; k -= 9)
    mul_add(b, 1000000000u);
  if (k > 0) mul_add(b, pow10_u32(k));
}

template <int L>
TUG_HOST_DEVICE inline void shl(big<L>& b, int bits) {
  if (b.n == 0 || bits == 0) return;
  const int limbs = bits / 32, r = bits % 32;
  int n = b.n + limbs + 1;
  b.w[n - 1] = 0;
  for (int i = b.n - 1; i >= 0; --i) {
    const uint32_t x = b.w[i];
    b.w[i + limbs + 1] |= r ? x >> (32 - r) : 0;
    b.w[i + limbs] = x << r;
  }
  for (int i = 0; i < limbs; ++i)
    b.w[i] = 0;
  b.n = n;
  trim(b);
}

template <int L>
TUG_HOST_DEVICE inline int bitlen(const big<L>& b) {
  if (b.n == 0) return 0;
  const uint32_t top = b.w[b.n - 1];
  int k = 0;
  while (k < 32 && (top >> k))
    ++k;
  return 32 * (b.n - 1) + k;
}

template <int L>
TUG_HOST_DEVICE inline int cmp(const big<L>& a, const big<L>& b) {
  if (a.n != b.n) return a.n < b.n ? -1 : 1;
  for (int i = a.n - 1; i >= 0; --i)
    if (a.w[i] != b.w[i]) return a.w[i] < b.w[i] ? -1 : 1;
  return 0;
}

/// out = a + b (out may alias neither)
template <int L>
TUG_HOST_DEVICE inline void add(const big<L>& a, const big<L>& b, big<L>& out) {
  const int n = a.n > b.n ? a.n : b.n;
  uint64_t carry = 0;
  for (int i = 0; i < n; ++i) {
    carry += uint64_t{i < a.n ? a.w[i] : 0u} + (i < b.n ? b.w[i] : 0u);
    out.w[i] = static_cast<uint32_t>(carry);
    carry >>= 32;
  }
  out.n = n;
  if (carry) out.w[out.n++] = static_cast<uint32_t>(carry);
}

/// a -= q * b, where q * b <= a.
template <int L>
TUG_HOST_DEVICE inline void sub_mul(big<L>& a, const big<L>& b, uint64_t q) {
  u128 carry = 0;
  uint32_t borrow = 0;
  for (int i = 0; i < a.n; ++i) {
    const u128 p = (i < b.n ? static_cast<u128>(b.w[i]) * q : 0) + carry;
    carry = p >> 32;
    const uint64_t sub = uint64_t{static_cast<uint32_t>(p)} + borrow;
    borrow = a.w[i] < sub;
    a.w[i] = static_cast<uint32_t>(a.w[i] - sub);
  }
  trim(a);
}

/// Bits [pos, pos + 128) of b.
template <int L>
TUG_HOST_DEVICE inline u128 bits_at(const big<L>& b, int pos) {
  const int first = pos / 32, r = pos % 32;
  u128 lo = 0;
  for (int k = 3; k >= 0; --k) {
    const int i = first + k;
    lo = (lo << 32) | (i < b.n ? b.w[i] : 0u);
  }
  const uint32_t hi = first + 4 < b.n ? b.w[first + 4] : 0u;
  return r ? (lo >> r) | (static_cast<u128>(hi) << (128 - r)) : lo;
}

/// The quotient floor(a / b) (it must be below 2^64); a becomes the remainder.
template <int L>
TUG_HOST_DEVICE inline uint64_t divmod(big<L>& a, const big<L>& b) {
  const int sb = bitlen(b);
  if (sb <= 64) {  // then a < 2^128
    const u128 x = bits_at(a, 0);
    const uint64_t y = static_cast<uint64_t>(bits_at(b, 0));
    const u128 q = x / y, r = x % y;
    set(a, static_cast<uint64_t>(r));
    return static_cast<uint64_t>(q);
  }
  // estimate from the top 64 bits of b (rounded up) and the same bits of a: never above the quotient,
  // below it by a few at most
  const int sh = sb - 64;
  const uint64_t t = static_cast<uint64_t>(bits_at(b, sh));
  uint64_t q = static_cast<uint64_t>(bits_at(a, sh) / (static_cast<u128>(t) + 1));
  sub_mul(a, b, q);
  while (cmp(a, b) >= 0) {
    sub_mul(a, b, 1);
    ++q;
  }
  return q;
}

/// Bits needed for x.
TUG_HOST_DEVICE inline int bit_length(u128 x) {
  const auto hi = static_cast<uint64_t>(x >> 64), lo = static_cast<uint64_t>(x);
#ifdef __CUDA_ARCH__
  return hi ? 128 - __clzll(static_cast<long long>(hi)) : lo ? 64 - __clzll(static_cast<long long>(lo)) : 0;
#else
  return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
#endif
}

// ---- IEEE layouts ------------------------------------------------------------------------------------

template <typename F>
struct layout;
template <>
struct layout<double> {
  using bits_t = uint64_t;
  static constexpr int mant = 53;     ///< significand bits, the hidden one included
  static constexpr int emin = -1074;  ///< exponent of the lowest subnormal bit
  static constexpr int max_biased = 2047;
  static constexpr int bias = 1023;
  static constexpr int max_dec = 309;   ///< 10^max_dec is above the largest finite value
  static constexpr int min_dec = -325;  ///< 10^min_dec is below half the smallest subnormal
  static constexpr int fast_pow = 22;   ///< Clinger: 10^k exact for k <= fast_pow
};
template <>
struct layout<float> {
  using bits_t = uint32_t;
  static constexpr int mant = 24;
  static constexpr int emin = -149;
  static constexpr int max_biased = 255;
  static constexpr int bias = 127;
  static constexpr int max_dec = 39;
  static constexpr int min_dec = -46;
  static constexpr int fast_pow = 10;
};

template <typename F>
TUG_HOST_DEVICE inline typename layout<F>::bits_t to_bits(F v) {
  typename layout<F>::bits_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

template <typename F>
TUG_HOST_DEVICE inline F from_bits(typename layout<F>::bits_t b) {
  F v;
  memcpy(&v, &b, sizeof v);
  return v;
}

// ---- formatting --------------------------------------------------------------------------------------

constexpr int format_limbs = 40;  // 1280 bits: r, s and the margins of a subnormal double over 18 digits
constexpr int max_digits = 40;

/// Exact digit generation for m * 2^e (m > 0) from the position 10^(X + 1) down, where 10^X <= v <
/// 10^(X + 1): the first digit is 0. After each digit, r / s is the remainder in units of that digit,
/// mp / s and mm / s the half-gaps to the next float above and below.
struct digit_gen {
  big<format_limbs> r, s, mp, mm, t;
  int X = 0;
  bool even = true;  ///< the significand is even: a candidate on the edge of the interval reads back
  char g[max_digits];
  int n = 0;  ///< digits generated into g

  TUG_HOST_DEVICE void init(uint64_t m, int e, bool asym) {
    even = (m & 1) == 0;
    const int e2 = e + bit_length(m) - 1;  // 2^e2 <= v < 2^(e2 + 1)
    // floor(e2 * log10(2)): X or X - 1; 78913 / 2^18 is log10(2) to 7 digits
    int x = static_cast<int>((static_cast<int64_t>(e2) * 78913) >> 18);
    // v = r / s, margins scaled by 4 so the asymmetric lower gap (at a power of two) stays integral
    if (e >= 0) {
      set(r, m);
      shl(r, e + 2);
      set(s, 4);
      set(mp, 2);
      shl(mp, e);
      set(mm, asym ? 1 : 2);
      shl(mm, e);
    } else {
      set(r, m);
      shl(r, 2);
      set(s, 4);
      shl(s, -e);
      set(mp, 2);
      set(mm, asym ? 1 : 2);
    }
    if (x >= 0) {
      mul_pow10(s, x);
    } else {
      mul_pow10(r, -x);
      mul_pow10(mp, -x);
      mul_pow10(mm, -x);
    }
    for (;;) {  // settle 1 <= r / s < 10
      t = s;
      mul_add(t, 10);
      if (cmp(r, t) >= 0) {
        s = t;
        ++x;
      } else if (cmp(r, s) < 0) {
        mul_add(r, 10);
        mul_add(mp, 10);
        mul_add(mm, 10);
        --x;
      } else {
        break;
      }
    }
    X = x;
    mul_add(s, 10);  // the first digit is at 10^(X + 1): 0
  }

  /// One more digit into g.
  TUG_HOST_DEVICE void next() {
    if (n > 0) {
      mul_add(r, 10);
      mul_add(mp, 10);
      mul_add(mm, 10);
    }
    g[n++] = static_cast<char>('0' + divmod(r, s));
  }

  /// The digits so far, rounded at the last one (half to even on exact ties, as printf), into out
  /// (n digits, the first at 10^(X + 1)); whether that value reads back as v.
  TUG_HOST_DEVICE bool round(char* out) {
    for (int k = 0; k < n; ++k)
      out[k] = g[k];
    add(r, r, t);
    const int c = cmp(t, s);
    const bool up = c > 0 || (c == 0 && ((g[n - 1] - '0') & 1));
    bool ok;
    if (up) {
      add(r, mp, t);
      const int c2 = cmp(t, s);
      ok = c2 > 0 || (c2 == 0 && even);
      int k = n - 1;
      for (; k >= 0 && out[k] == '9'; --k)
        out[k] = '0';
      if (k >= 0) out[k] = static_cast<char>(out[k] + 1);  // the leading digit is 0: never all nines
    } else {
      const int c2 = cmp(r, mm);
      ok = c2 < 0 || (c2 == 0 && even);
    }
    return ok;
  }
};

/// Writes the decimal digits g[0, n) (g[0] at 10^lead, not all zero) with sign as printf "%g" does with
/// trailing zeros stripped: plain, or (`sci`) as "d.ddde+XX".
TUG_HOST_DEVICE inline int write_digits(bool neg, const char* g, int n, int lead, bool sci, char* out) {
  int f = 0, l = n - 1;
  while (f < n - 1 && g[f] == '0')
    ++f;
  while (l > f && g[l] == '0')
    --l;
  int m = 0;
  if (neg) out[m++] = '-';
  const int top = lead - f;  // exponent of the first significant digit
  if (sci) {
    out[m++] = g[f];
    if (l > f) {
      out[m++] = '.';
      for (int k = f + 1; k <= l; ++k)
        out[m++] = g[k];
    }
    out[m++] = 'e';
    out[m++] = top < 0 ? '-' : '+';
    const int a = top < 0 ? -top : top;
    if (a >= 100) out[m++] = static_cast<char>('0' + a / 100);
    out[m++] = static_cast<char>('0' + a / 10 % 10);
    out[m++] = static_cast<char>('0' + a % 10);
    return m;
  }
  const int bottom = lead - l;  // exponent of the last significant digit
  auto digit_at = [&](int pos) { return pos > top || pos < bottom ? '0' : g[lead - pos]; };
  for (int pos = top > 0 ? top : 0; pos >= 0; --pos)
    out[m++] = digit_at(pos);
  if (bottom < 0) {
    out[m++] = '.';
    for (int pos = -1; pos >= bottom; --pos)
      out[m++] = digit_at(pos);
  }
  return m;
}


/// m * 2^e (zero, or 1e-4 <= value < 1e16, so e >= -66) as "%.*f" with the fewest digits p after the
/// point that read back, trailing zeros stripped to one. Exact in 128 bits: P = value * 10^p * 2^k
/// stays below 2^122.
TUG_HOST_DEVICE inline int format_plain(uint64_t m, int e, bool asym, bool neg, char* out) {
  const int k = e < 0 ? -e : 0;
  u128 P = e < 0 ? u128{m} : u128{m} << e, pow = 1, q = 0;
  const u128 low = k ? (u128{1} << k) - 1 : 0, half = k ? u128{1} << (k - 1) : 0;
  const bool even = (m & 1) == 0;
  int p = 1;
  for (;; ++p) {
    P *= 10;
    pow *= 10;
    const u128 rem = P & low;
    q = P >> k;
    const bool up = rem > half || (rem == half && k && (q & 1));
    // |q * 2^k - P| against the half-gap to the neighbour on that side: 10^p / 2 (10^p / 4 below a power of 2)
    const u128 diff = up ? low + 1 - rem : rem;
    if (up) ++q;
    const u128 twice = (up || !asym ? 2 : 4) * diff;
    if (twice < pow || (twice == pow && even) || p == 20) break;
  }
  int n = 0;
  if (neg) out[n++] = '-';
  const u128 ip = q / pow;
  u128 fr = q - ip * pow;
  n += write_u64(static_cast<uint64_t>(ip), 1, out + n);
  out[n++] = '.';
  int digits = p;
  while (digits > 1 && fr % 10 == 0) {
    fr /= 10;
    --digits;
  }
  // fr < 10^digits <= 10^20: two halves of at most 10 digits
  const uint64_t tens = 10000000000ull;
  if (digits > 10) {
    n += write_u64(static_cast<uint64_t>(fr / tens), digits - 10, out + n);
    n += write_u64(static_cast<uint64_t>(fr % tens), 10, out + n);
  } else {
    n += write_u64(static_cast<uint64_t>(fr), digits, out + n);
  }
  return n;
}

}  // namespace detail

/// Longest text format_float writes.
constexpr int max_format_length = 48;

/// `v` as format_value writes a float64 or float32 (see the top of this file), into `out` (at least
/// max_format_length bytes); returns the length.
template <typename F>
TUG_HOST_DEVICE inline int format_float(F v, char* out) {
  using lay = detail::layout<F>;
  using bits_t = typename lay::bits_t;
  const bits_t b = detail::to_bits(v);
  const bool neg = (b >> (sizeof(bits_t) * 8 - 1)) & 1;
  const int biased = static_cast<int>((b >> (lay::mant - 1)) & lay::max_biased);
  const uint64_t frac = b & ((bits_t{1} << (lay::mant - 1)) - 1);
  if (biased == lay::max_biased) {
    if (frac) {
      memcpy(out, "NaN", 3);
      return 3;
    }
    if (neg) out[0] = '-';
    memcpy(out + neg, "inf", 3);
    return 3 + neg;
  }
  const uint64_t m = biased ? frac | (uint64_t{1} << (lay::mant - 1)) : frac;
  const int e = biased ? biased - lay::bias - (lay::mant - 1) : m ? lay::emin : 0;
  const bool asym = biased > 1 && frac == 0;
  // |v| == 0 or 1e-4 <= |v| < 1e16, compared as doubles for float32 too
  const double a = neg ? -static_cast<double>(v) : static_cast<double>(v);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) return detail::format_plain(m, e, asym, neg, out);
  detail::digit_gen gen;
  gen.init(m, e, asym);
  char rounded[detail::max_digits];
  int p = 1;
  for (; p <= 17; ++p) {
    while (gen.n < p + 1)
      gen.next();
    if (gen.round(rounded) || p == 17) break;
  }
  const int lead = rounded[0] != '0' ? gen.X + 1 : gen.X;  // exponent after rounding
  const bool sci = !(p > lead && lead >= -4);
  return detail::write_digits(neg, rounded, gen.n, gen.X + 1, sci, out);
}

// ---- parsing -----------------------------------------------------------------------------------------

namespace detail {

// 2816 bits: the kept digits (< 10^800, 2658 bits), or 5^1125 (2613 bits) shifted left by 63
constexpr int parse_limbs = 88;
constexpr int kept_digits = 800;  // significant digits kept; the rest only act as a sticky bit

TUG_HOST_DEVICE inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

/// (s, n) equals `word` (lower case) in any case.
TUG_HOST_DEVICE inline bool equals_nocase(const char* s, int64_t n, const char* word, int64_t len) {
  if (n != len) return false;
  for (int64_t k = 0; k < n; ++k)
    if (lower(s[k]) != word[k]) return false;
  return true;
}

/// The float nearest q * 2^b2 (q != 0; `sticky`: the true value is a little above it), as bits
/// without the sign; false when it overflows or rounds to zero.
template <typename F>
TUG_HOST_DEVICE inline bool assemble(uint64_t q, int64_t b2, bool sticky, typename layout<F>::bits_t& out) {
  using lay = layout<F>;
  const int bl = bit_length(q);
  int64_t drop = bl - lay::mant;
  if (lay::emin - b2 > drop) drop = lay::emin - b2;
  uint64_t M;
  if (drop <= 0) {
    M = q << -drop;
  } else {
    bool half = false, rest = sticky;
    if (drop > 64) {
      M = 0;
      rest = true;
    } else if (drop == 64) {
      M = 0;
      half = q >> 63;
      rest = rest || (q << 1) != 0;
    } else {
      M = q >> drop;
      half = (q >> (drop - 1)) & 1;
      rest = rest || (q & ((uint64_t{1} << (drop - 1)) - 1)) != 0;
    }
    if (half && (rest || (M & 1))) ++M;
  }
  int64_t e2 = b2 + drop;
  if (M >> lay::mant) {
    M >>= 1;
    ++e2;
  }
  if (M == 0) return false;
  using bits_t = typename layout<F>::bits_t;
  if (M >> (lay::mant - 1)) {
    const int64_t biased = e2 + (lay::mant - 1) + lay::bias;
    if (biased >= lay::max_biased) return false;
    out = (static_cast<bits_t>(biased) << (lay::mant - 1)) |
          static_cast<bits_t>(M & ((uint64_t{1} << (lay::mant - 1)) - 1));
  } else {
    out = static_cast<bits_t>(M);  // subnormal: e2 == emin
  }
  return true;
}

}  // namespace detail

/// std::from_chars(chars_format::general) of the whole (s, n) after one optional leading '+', as
/// cpu::cast's parse_number (see the top of this file); false when it does not parse or is out of range.
template <typename F>
TUG_HOST_DEVICE inline bool parse_float(const char* s, int64_t n, F& out) {
  using lay = detail::layout<F>;
  using bits_t = typename lay::bits_t;
  int64_t i = 0;
  if (n > 0 && s[0] == '+') i = 1;
  if (i == n) return false;
  const bool neg = s[i] == '-';
  if (neg) ++i;
  const bits_t sign = neg ? bits_t{1} << (sizeof(bits_t) * 8 - 1) : 0;
  const char* w = s + i;
  const int64_t wn = n - i;
  if (detail::equals_nocase(w, wn, "inf", 3) || detail::equals_nocase(w, wn, "infinity", 8)) {
    out = detail::from_bits<F>(sign | (static_cast<bits_t>(lay::max_biased) << (lay::mant - 1)));
    return true;
  }
  if (wn >= 3 && detail::equals_nocase(w, 3, "nan", 3)) {
    if (wn > 3) {  // "nan(chars)" with letters, digits and '_'
      if (w[3] != '(' || w[wn - 1] != ')') return false;
      for (int64_t k = 4; k < wn - 1; ++k) {
        const char c = detail::lower(w[k]);
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
      }
    }
    out = detail::from_bits<F>(sign | (static_cast<bits_t>(lay::max_biased) << (lay::mant - 1)) |
                               (bits_t{1} << (lay::mant - 2)));
    return true;
  }
  // digits [.digits] [(e|E)[+-]digits]
  int64_t k = i, mant_end, dot = -1, first = -1, last = -1, count = 0;
  for (; k < n; ++k) {
    const char c = s[k];
    if (c == '.' && dot < 0) {
      dot = k;
    } else if (c >= '0' && c <= '9') {
      ++count;
      if (c != '0') {
        if (first < 0) first = k;
        last = k;
      }
    } else {
      break;
    }
  }
  if (count == 0) return false;
  mant_end = k;
  int64_t exp10 = 0;
  if (k < n) {
    if (s[k] != 'e' && s[k] != 'E') return false;
    ++k;
    bool eneg = false;
    if (k < n && (s[k] == '+' || s[k] == '-')) eneg = s[k++] == '-';
    if (k == n) return false;
    for (; k < n; ++k) {
      const unsigned d = static_cast<unsigned>(s[k] - '0');
      if (d > 9) return false;
      if (exp10 < 1000000000000LL) exp10 = exp10 * 10 + d;
    }
    if (eneg) exp10 = -exp10;
  }
  if (first < 0) {  // zero
    out = detail::from_bits<F>(sign);
    return true;
  }
  if (dot < 0) dot = mant_end;
  // position of a digit at index j: its power of ten is (dot - j - 1) when j < dot, else (dot - j)
  auto power = [dot](int64_t j) { return j < dot ? dot - j - 1 : dot - j; };
  // keep kept_digits significant digits: from `first` to `stop` (inclusive)
  int64_t stop = first, taken = 0;
  for (int64_t j = first; j <= last && taken < detail::kept_digits; ++j) {
    if (s[j] == '.') continue;
    stop = j;
    ++taken;
  }
  bool sticky = false;
  for (int64_t j = stop + 1; j <= last && !sticky; ++j)
    sticky = s[j] != '0' && s[j] != '.';
  // trailing zeros of the kept digits
  while (stop > first && (s[stop] == '0' || s[stop] == '.')) {
    if (s[stop] != '.') --taken;
    --stop;
  }
  const int64_t E = exp10 + power(stop);  // value = D * 10^E (+ sticky), D has `taken` digits
  const int64_t nd = taken;
  if (nd - 1 + E >= lay::max_dec) return false;  // >= 10^max_dec: overflows
  if (nd + E <= lay::min_dec) return false;      // < 10^min_dec: rounds to zero
  const int de = static_cast<int>(E);
  bits_t bits;
  if (nd <= 19 && de >= -19 && de <= 19) {  // D < 10^19 (so nothing was dropped) and 10^|E| fit 64 bits
    uint64_t D = 0, pw = 1;
    for (int64_t j = first; j <= stop; ++j)
      if (s[j] != '.') D = D * 10 + static_cast<unsigned>(s[j] - '0');
    for (int q = de < 0 ? -de : de; q > 0; --q)
      pw *= 10;
    if (D <= (uint64_t{1} << lay::mant) && de >= -lay::fast_pow && de <= lay::fast_pow) {
      // Clinger: both operands exact, one correctly rounded operation
      const F x = static_cast<F>(D), p = static_cast<F>(pw);
      const F r = de < 0 ? x / p : x * p;
      out = detail::from_bits<F>(sign | detail::to_bits(r));
      return true;
    }
    // exact in 128 bits: D * 10^E, or D * 2^shift / 10^-E with a quotient of 63 or 64 bits
    uint64_t q;
    int64_t b2 = 0;
    bool rest = false;
    if (de >= 0) {
      const detail::u128 x = static_cast<detail::u128>(D) * pw;
      const int bl = detail::bit_length(x);
      if (bl > 64) {
        b2 = bl - 64;
        rest = (x & ((static_cast<detail::u128>(1) << b2) - 1)) != 0;
      }
      q = static_cast<uint64_t>(x >> b2);
    } else {
      const int shift = 63 + detail::bit_length(pw) - detail::bit_length(D);  // in [3, 124]
      const detail::u128 x = static_cast<detail::u128>(D) << shift;
      q = static_cast<uint64_t>(x / pw);
      rest = x % pw != 0;
      b2 = -shift;
    }
    if (!detail::assemble<F>(q, b2, rest, bits)) return false;
    out = detail::from_bits<F>(sign | bits);
    return true;
  }
  detail::big<detail::parse_limbs> N, Dv;
  set(N, 0);
  uint32_t chunk = 0;
  int in_chunk = 0;
  for (int64_t j = first; j <= stop; ++j) {
    if (s[j] == '.') continue;
    chunk = chunk * 10 + static_cast<unsigned>(s[j] - '0');
    if (++in_chunk == 9) {
      detail::mul_add(N, 1000000000u, chunk);
      chunk = 0;
      in_chunk = 0;
    }
  }
  if (in_chunk) detail::mul_add(N, detail::pow10_u32(in_chunk), chunk);
  uint64_t q;
  int64_t b2;
  if (E >= 0) {
    detail::mul_pow10(N, de);
    const int bl = detail::bitlen(N);
    if (bl <= 64) {
      q = static_cast<uint64_t>(detail::bits_at(N, 0));
      b2 = 0;
    } else {
      b2 = bl - 64;
      q = static_cast<uint64_t>(detail::bits_at(N, static_cast<int>(b2)));
      for (int j = 0; j < N.n && 32 * j < b2 && !sticky; ++j) {  // the bits below b2
        const int below = static_cast<int>(b2) - 32 * j;
        const uint32_t mask = below >= 32 ? ~0u : (1u << below) - 1;
        sticky = (N.w[j] & mask) != 0;
      }
    }
  } else {
    // D / 10^k = (D / 5^k) * 2^-k
    detail::set(Dv, 1);
    for (int k = -de; k > 0; k -= 13)
      detail::mul_add(Dv, k >= 13 ? 1220703125u : detail::pow5_u32(k));
    const int shift = 63 + detail::bitlen(Dv) - detail::bitlen(N);  // the quotient in [2^62, 2^64)
    if (shift >= 0)
      detail::shl(N, shift);
    else
      detail::shl(Dv, -shift);
    q = detail::divmod(N, Dv);
    sticky = sticky || N.n != 0;
    b2 = -shift + de;
  }
  if (!detail::assemble<F>(q, b2, sticky, bits)) return false;
  out = detail::from_bits<F>(sign | bits);
  return true;
}

/// The float nearest the decimal unscaled / 10^scale (0 <= scale <= 38; ties to even), as parse_float
/// reads the decimal's text: float32 directly, not through a double. Zero is +0.
template <typename F>
TUG_HOST_DEVICE inline F decimal_to_float(__int128 unscaled, int scale) {
  using lay = detail::layout<F>;
  using bits_t = typename lay::bits_t;
  using detail::u128;
  const bool neg = unscaled < 0;
  const u128 u = neg ? 0 - static_cast<u128>(unscaled) : static_cast<u128>(unscaled);
  if (u == 0) return F(0);
  const bits_t sign = neg ? bits_t{1} << (sizeof(bits_t) * 8 - 1) : 0;
  if (u <= (static_cast<u128>(1) << lay::mant) && scale <= lay::fast_pow) {
    // Clinger: both operands exact, one correctly rounded division
    F p = 1;
    for (int k = 0; k < scale; ++k)
      p *= 10;
    const F r = static_cast<F>(static_cast<uint64_t>(u)) / p;
    return detail::from_bits<F>(sign | detail::to_bits(r));
  }
  // u / 10^scale = u / 5^scale * 2^-scale. q = floor(u * 2^k / 5^scale) with 63 or 64 bits, the rest as
  // a sticky bit, in 128-bit arithmetic (5^38 < 2^89): u * 2^k (up to 152 bits) is divided as a long
  // division by one 64-bit digit (5^scale < 2^64) or two 32-bit ones
  u128 D = 1;
  for (int e = scale; e > 0; e -= 13)
    D *= e >= 13 ? 1220703125u : detail::pow5_u32(e);
  const int k = 63 + detail::bit_length(D) - detail::bit_length(u);  // the quotient in [2^62, 2^64)
  uint64_t q;
  bool sticky;
  if (k <= 0) {
    const u128 div = D << -k;  // below 2^64
    q = static_cast<uint64_t>(u / div);
    sticky = u != q * div;
  } else {
    // u * 2^k = n1 * 2^64 + n0 with n1 < D (the quotient is below 2^64), then two 32-bit digits
    const u128 n1 = k >= 64 ? u << (k - 64) : u >> (64 - k);
    const uint64_t n0 = k >= 64 ? 0 : static_cast<uint64_t>(u << k);
    if (D >> 64 == 0) {  // one 64-bit digit: n1 * 2^64 + n0 < D * 2^64 <= 2^128
      const u128 t = (n1 << 64) | n0;
      q = static_cast<uint64_t>(t / D);
      sticky = t != q * D;
    } else {
      u128 r = n1;
      q = 0;
      for (int part = 1; part >= 0; --part) {
        const u128 t = (r << 32) | ((n0 >> (32 * part)) & 0xffffffffu);  // r < D < 2^89
        const u128 digit = t / D;
        q = (q << 32) | static_cast<uint64_t>(digit);
        r = t - digit * D;
      }
      sticky = r != 0;
    }
  }
  const int64_t b2 = -static_cast<int64_t>(k) - scale;
  bits_t bits = 0;
  detail::assemble<F>(q, b2, sticky, bits);  // |value| is within [1e-38, 1e38]: never out of range
  return detail::from_bits<F>(sign | bits);
}

}  // namespace tug::float_text
