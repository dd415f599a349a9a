#pragma once
// String helpers of the CUDA expression evaluator (evaluate.cu), each mirroring its CPU counterpart
// byte for byte: slicing and stripping (src/exec/cpu/expr/strings.cpp), formatting and parsing of
// integers, dates, timestamps and decimals as cpu::cast does (src/exec/cpu/expr/cast.cpp,
// src/core/temporal.cpp, src/core/scalar.cpp); case mapping is exec/case_mapping.hpp, shared with the
// CPU kernel. Strings are (pointer, length) views. Host and device code: tests/unit/test_cuda_strings.cpp checks them against the CPU
// engine without a GPU.
#include <cstdint>

#include "exec/float_text.hpp"
#include "exec/host_device.hpp"
#include "tug/core/temporal.hpp"

namespace tug::cuda::strings {

TUG_HOST_DEVICE inline bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// Code points of s (bytes that are not UTF-8 continuation bytes).
TUG_HOST_DEVICE inline int64_t count_chars(const char* s, int64_t n) {
  int64_t c = 0;
  for (int64_t k = 0; k < n; ++k)
    c += !is_continuation(s[k]);
  return c;
}

/// Byte position `k` code points after byte position `pos` (clamped to the end).
TUG_HOST_DEVICE inline int64_t advance_chars(const char* s, int64_t n, int64_t pos, int64_t k) {
  for (; k > 0 && pos < n; --k) {
    ++pos;
    while (pos < n && is_continuation(s[pos]))
      ++pos;
  }
  return pos;
}

TUG_HOST_DEVICE inline bool bytes_equal(const char* a, const char* b, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    if (a[k] != b[k]) return false;
  return true;
}

/// Code points [offset, offset + length) of (s, n) in place (cpu utf8_slice).
TUG_HOST_DEVICE inline void slice(const char*& s, int64_t& n, int64_t offset, int64_t length) {
  if (offset < 0) {
    offset += count_chars(s, n);
    if (offset < 0) {
      if (length >= 0) length = length + offset > 0 ? length + offset : 0;
      offset = 0;
    }
  }
  const int64_t begin = advance_chars(s, n, 0, offset);
  const int64_t end = length < 0 ? n : advance_chars(s, n, begin, length);
  s += begin;
  n = end - begin;
}

/// Whether the code point (c, len) is one of the code points of `set` (cpu strip_set::match).
TUG_HOST_DEVICE inline bool in_set(const char* c, int64_t len, const char* set, int64_t set_len) {
  for (int64_t i = 0; i < set_len;) {
    const int64_t next = advance_chars(set, set_len, i, 1);
    if (next - i == len && bytes_equal(set + i, c, len)) return true;
    i = next;
  }
  return false;
}

/// (s, n) without leading and trailing code points of `set`, in place (cpu strip_set::strip).
TUG_HOST_DEVICE inline void strip(const char*& s, int64_t& n, const char* set, int64_t set_len) {
  int64_t b = 0, e = n;
  while (b < e) {
    const int64_t next = advance_chars(s, n, b, 1);
    if (!in_set(s + b, next - b, set, set_len)) break;
    b = next;
  }
  while (e > b) {
    int64_t start = e - 1;
    while (start > b && is_continuation(s[start]))
      --start;
    if (!in_set(s + start, e - start, set, set_len)) break;
    e = start;
  }
  s += b;
  n = e - b;
}

// ---- formatting (into a buffer of at least 64 bytes; each returns the length written) ---------------

/// std::to_chars of a signed value.
TUG_HOST_DEVICE inline int format_int(int64_t v, char* out) {
  if (v >= 0) return float_text::write_u64(static_cast<uint64_t>(v), 1, out);
  out[0] = '-';
  return 1 + float_text::write_u64(0 - static_cast<uint64_t>(v), 1, out + 1);
}

/// temporal::format_date: "%04lld-%02u-%02u".
TUG_HOST_DEVICE inline int format_date(int64_t days, char* out) {
  const temporal::civil_date c = temporal::civil_from_days(days);
  int m = 0;
  if (c.year < 0) {
    out[m++] = '-';
    m += float_text::write_u64(0 - static_cast<uint64_t>(c.year), 3, out + m);
  } else {
    m += float_text::write_u64(static_cast<uint64_t>(c.year), 4, out + m);
  }
  out[m++] = '-';
  m += float_text::write_u64(c.month, 2, out + m);
  out[m++] = '-';
  m += float_text::write_u64(c.day, 2, out + m);
  return m;
}

/// temporal::format_timestamp: "YYYY-MM-DD HH:MM:SS[.fraction]" of ticks at `tps` ticks per second.
TUG_HOST_DEVICE inline int format_timestamp(int64_t ticks, int64_t tps, char* out) {
  const int64_t secs = temporal::floor_div(ticks, tps), frac = temporal::floor_mod(ticks, tps);
  const int64_t days = temporal::floor_div(secs, 86400), sod = temporal::floor_mod(secs, 86400);
  int m = format_date(days, out);
  out[m++] = ' ';
  m += float_text::write_u64(static_cast<uint64_t>(sod / 3600), 2, out + m);
  out[m++] = ':';
  m += float_text::write_u64(static_cast<uint64_t>(sod / 60 % 60), 2, out + m);
  out[m++] = ':';
  m += float_text::write_u64(static_cast<uint64_t>(sod % 60), 2, out + m);
  if (frac) {
    out[m++] = '.';
    m += float_text::write_u64(static_cast<uint64_t>(frac), tps == 1000 ? 3 : tps == 1000000 ? 6 : 9, out + m);
  }
  return m;
}

/// decimal_to_string: the digits of |v| with a point before the last `scale` of them (zero padded).
TUG_HOST_DEVICE inline int format_decimal(__int128 v, int64_t scale, char* out) {
  using u128 = unsigned __int128;
  char t[48];
  int k = 0;
  u128 u = v < 0 ? 0 - static_cast<u128>(v) : static_cast<u128>(v);
  do {
    t[k++] = static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  } while (u);
  while (scale > 0 && k <= scale)
    t[k++] = '0';
  int m = 0;
  if (v < 0) out[m++] = '-';
  for (int j = k - 1; j >= 0; --j) {
    out[m++] = t[j];
    if (scale > 0 && j == scale) out[m++] = '.';
  }
  return m;
}

// ---- parsing ------------------------------------------------------------------------------------------

/// std::from_chars of a whole (s, n) after one optional leading '+' (cpu parse_number): an optional
/// '-' when signed, then only digits, within [lo, hi]. The value, sign-extended, into `out`.
TUG_HOST_DEVICE inline bool parse_int(const char* s, int64_t n, bool is_signed, int64_t lo, uint64_t hi, int64_t& out) {
  int64_t i = 0;
  if (n > 0 && s[0] == '+') i = 1;
  const bool neg = is_signed && i < n && s[i] == '-';
  if (neg) ++i;
  if (i == n) return false;
  uint64_t mag = 0;
  for (; i < n; ++i) {
    const unsigned d = static_cast<unsigned char>(s[i]) - '0';
    if (d > 9) return false;
    if (mag > (~uint64_t{0} - d) / 10) return false;  // out of range for any integer type
    mag = mag * 10 + d;
  }
  if (neg) {
    if (mag > 0 - static_cast<uint64_t>(lo)) return false;
    out = static_cast<int64_t>(0 - mag);
    return true;
  }
  if (mag > hi) return false;
  out = static_cast<int64_t>(mag);
  return true;
}

/// temporal::parse_date of (s, n), then cpu parse_value's check that the day number fits date32.
TUG_HOST_DEVICE inline bool parse_date(const char* s, int64_t n, int64_t& days) {
  return temporal::parse_date(s, n, days) && days >= INT32_MIN && days <= INT32_MAX;
}

}  // namespace tug::cuda::strings
