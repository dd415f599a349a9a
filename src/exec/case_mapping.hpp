#pragma once
// Unicode case mapping of str.to_uppercase / str.to_lowercase / str.to_titlecase, as Polars does it
// (Rust's str::to_uppercase / to_lowercase): full mappings, where one character may become several
// ("ß" -> "SS", "ŉ" -> "ʼN"), and Final_Sigma ("Σ" lowercases to "ς" at the end of a word); titlecase
// maps the first character of each word by the titlecase mapping ("ß" -> "Ss", "ǆ" -> "ǅ") and
// lowercases the others, a word being a run of alphabetic characters ("o'neil 3d" -> "O'Neil 3D"). One definition
// for both backends: the CPU kernel (src/exec/cpu/expr/strings.cpp) and the CUDA evaluator
// (evaluate.cu, which gets the tables as one uploaded blob) call map_case; tests/unit/
// test_case_mapping.cpp checks it on the CPU. The tables are generated from Polars by
// scripts/gen_case_mapping.py (src/exec/case_mapping_data.hpp).
#include <cstdint>
#include <vector>

#include "exec/host_device.hpp"

namespace tug::unicode {

/// What a case mapping maps strings to.
enum class case_kind : uint32_t { upper = 0, lower = 1, title = 2 };

/// The tables of one case mapping (views of host arrays, or of a blob in device memory).
struct case_table {
  const uint32_t* from = nullptr;  ///< code points whose mapping is not themselves, ascending (title: lowercase)
  const uint32_t* to = nullptr;    ///< their mappings: a code point, or multi_flag | index into `multi`
  const uint32_t* multi = nullptr;  ///< mappings to several code points, 3 each (0-padded)
  uint32_t size = 0;                ///< entries of `from` and `to`
  const uint32_t* ignorable = nullptr;  ///< Case_Ignorable, inclusive ranges (Final_Sigma)
  uint32_t n_ignorable = 0;             ///< ranges in `ignorable`
  const uint32_t* cased = nullptr;      ///< Cased, inclusive ranges (Final_Sigma)
  uint32_t n_cased = 0;                 ///< ranges in `cased`
  const uint32_t* title_from = nullptr;   ///< title only: the titlecase mapping of a word's first character,
  const uint32_t* title_to = nullptr;     ///< as from / to / multi / size
  const uint32_t* title_multi = nullptr;
  uint32_t title_size = 0;
  const uint32_t* word = nullptr;  ///< title only: the characters that continue a word, inclusive ranges
  uint32_t n_word = 0;             ///< ranges in `word`
  case_kind kind = case_kind::upper;  ///< lower and title (inside words): Final_Sigma applies
};

inline constexpr uint32_t case_multi_flag = 0x80000000u;
inline constexpr uint32_t invalid_code_point = 0xFFFFFFFFu;

/// The host tables of to_uppercase, to_lowercase or to_titlecase.
const case_table& host_case_table(case_kind kind);
/// The same tables as one array of 32-bit words (case_table_of_blob reads it), to upload to a device.
std::vector<uint32_t> case_table_blob(case_kind kind);

/// The tables within a blob made by case_table_blob (4-byte aligned).
TUG_HOST_DEVICE inline case_table case_table_of_blob(const uint32_t* b) {
  case_table t;
  t.kind = static_cast<case_kind>(b[0]);
  t.size = b[1];
  const uint32_t n_multi = b[2];
  t.n_ignorable = b[3];
  t.n_cased = b[4];
  t.title_size = b[5];
  const uint32_t n_title_multi = b[6];
  t.n_word = b[7];
  t.from = b + 8;
  t.to = t.from + t.size;
  t.multi = t.to + t.size;
  t.ignorable = t.multi + n_multi;
  t.cased = t.ignorable + 2 * t.n_ignorable;
  t.title_from = t.cased + 2 * t.n_cased;
  t.title_to = t.title_from + t.title_size;
  t.title_multi = t.title_to + t.title_size;
  t.word = t.title_multi + n_title_multi;
  return t;
}

/// The code point of the well-formed UTF-8 sequence at s[i] (Unicode Table 3-7), its length in `len`;
/// invalid_code_point and len 1 for a byte that starts none.
TUG_HOST_DEVICE inline uint32_t decode_utf8(const unsigned char* s, int64_t n, int64_t i, int* len) {
  const unsigned b = s[i];
  *len = 1;
  if (b < 0x80) return b;
  int k = b >= 0xC2 && b < 0xE0 ? 2 : b >= 0xE0 && b < 0xF0 ? 3 : b >= 0xF0 && b < 0xF5 ? 4 : 0;
  if (k == 0 || i + k > n) return invalid_code_point;
  uint32_t cp = b & (0x7Fu >> k);
  for (int j = 1; j < k; ++j) {
    const unsigned c = s[i + j];
    if ((c & 0xC0) != 0x80) return invalid_code_point;
    cp = (cp << 6) | (c & 0x3F);
  }
  // overlong forms, surrogates, beyond U+10FFFF
  if ((k == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return invalid_code_point;
  *len = k;
  return cp;
}

/// The code point that ends at s[i - 1] (or invalid_code_point for a byte there that ends none), its
/// length in `len`.
TUG_HOST_DEVICE inline uint32_t decode_utf8_before(const unsigned char* s, int64_t i, int* len) {
  int64_t j = i - 1;
  while (j > 0 && i - j < 4 && (s[j] & 0xC0) == 0x80)
    --j;
  int k = 1;
  const uint32_t cp = decode_utf8(s, i, j, &k);
  if (cp != invalid_code_point && j + k == i) {
    *len = k;
    return cp;
  }
  *len = 1;
  return invalid_code_point;
}

/// Writes code point `cp` as UTF-8 at `out` (unless it is null); returns its length.
TUG_HOST_DEVICE inline int encode_utf8(uint32_t cp, char* out) {
  if (cp < 0x80) {
    if (out) out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    if (out) {
      out[0] = static_cast<char>(0xC0 | (cp >> 6));
      out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    }
    return 2;
  }
  if (cp < 0x10000) {
    if (out) {
      out[0] = static_cast<char>(0xE0 | (cp >> 12));
      out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    }
    return 3;
  }
  if (out) {
    out[0] = static_cast<char>(0xF0 | (cp >> 18));
    out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  }
  return 4;
}

/// Whether `cp` lies in one of the `n` inclusive ranges of `r` (ascending).
TUG_HOST_DEVICE inline bool in_ranges(const uint32_t* r, uint32_t n, uint32_t cp) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (r[2 * mid + 1] < cp) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && r[2 * lo] <= cp;
}

/// Rust's case_ignorable_then_cased over the code points of s[..i) backwards (`forward` false) or
/// s[i..n) forwards: skips Case_Ignorable ones and tells whether the next one is Cased.
TUG_HOST_DEVICE inline bool ignorable_then_cased(const case_table& t, const unsigned char* s, int64_t n, int64_t i,
                                                 bool forward) {
  while (forward ? i < n : i > 0) {
    int len = 1;
    const uint32_t cp = forward ? decode_utf8(s, n, i, &len) : decode_utf8_before(s, i, &len);
    if (cp == invalid_code_point) return false;
    if (!in_ranges(t.ignorable, t.n_ignorable, cp)) return in_ranges(t.cased, t.n_cased, cp);
    i += forward ? len : -len;
  }
  return false;
}

/// The titlecase mapping of a title table `t` as a table of its own (its from / to / multi / size).
TUG_HOST_DEVICE inline case_table title_mapping(const case_table& t) {
  case_table m;
  m.from = t.title_from;
  m.to = t.title_to;
  m.multi = t.title_multi;
  m.size = t.title_size;
  return m;
}

/// The mapping of code point `cp` into `out` (up to 3 code points); returns their count.
TUG_HOST_DEVICE inline int map_code_point(const case_table& t, uint32_t cp, uint32_t* out) {
  uint32_t lo = 0, hi = t.size;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (t.from[mid] < cp) lo = mid + 1;
    else hi = mid;
  }
  if (lo == t.size || t.from[lo] != cp) {
    out[0] = cp;
    return 1;
  }
  const uint32_t m = t.to[lo];
  if (!(m & case_multi_flag)) {
    out[0] = m;
    return 1;
  }
  const uint32_t* x = t.multi + 3 * (m & ~case_multi_flag);
  int k = 0;
  while (k < 3 && x[k] != 0) {
    out[k] = x[k];
    ++k;
  }
  return k;
}

/// One row's UTF-8 bytes s[0, n) case-mapped (written to `out` unless it is null); returns the length
/// of the result. Bytes that start no well-formed sequence are copied (and end a word for titlecase).
TUG_HOST_DEVICE inline int64_t map_case(const char* str, int64_t n, char* out, const case_table& t) {
  const auto* s = reinterpret_cast<const unsigned char*>(str);
  const bool title = t.kind == case_kind::title;
  const bool lower = t.kind != case_kind::upper;  // title: inside a word
  bool word_start = true;  // title: the next character starts a word
  int64_t m = 0;
  int64_t i = 0;
  while (i < n) {
    const unsigned b = s[i];
    if (b < 0x80) {  // ASCII
      unsigned c = b;
      const bool letter = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
      if (letter) c = (title ? !word_start : lower) ? (c | 0x20) : (c & ~0x20u);
      word_start = !letter;
      if (out) out[m] = static_cast<char>(c);
      ++m;
      ++i;
      continue;
    }
    int len = 1;
    const uint32_t cp = decode_utf8(s, n, i, &len);
    if (cp == invalid_code_point) {
      if (out) out[m] = static_cast<char>(b);
      ++m;
      ++i;
      word_start = true;
      continue;
    }
    const bool to_title = title && word_start;
    if (title) word_start = !in_ranges(t.word, t.n_word, cp);
    if (lower && !to_title && cp == 0x3A3) {  // Final_Sigma (Unicode 3.13, as Rust's to_lowercase)
      const bool final = ignorable_then_cased(t, s, n, i, false) && !ignorable_then_cased(t, s, n, i + len, true);
      m += encode_utf8(final ? 0x3C2 : 0x3C3, out ? out + m : nullptr);
      i += len;
      continue;
    }
    uint32_t mapped[3];
    const int k = map_code_point(to_title ? title_mapping(t) : t, cp, mapped);
    for (int j = 0; j < k; ++j)
      m += encode_utf8(mapped[j], out ? out + m : nullptr);
    i += len;
  }
  return m;
}

}  // namespace tug::unicode
