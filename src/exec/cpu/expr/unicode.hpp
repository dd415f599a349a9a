#pragma once
// Unicode data of the string functions, shared by the CPU kernels (strings.cpp) and the CUDA
// evaluator (expr_compile.cpp uploads the same tables), so both backends map the same characters.
#include <array>
#include <cstdint>
#include <string_view>

namespace tug::cpu::detail {

/// Unicode White_Space, as Rust's str::trim: what strip_chars removes when given no characters.
inline constexpr std::string_view unicode_white_space =
    "\t\n\v\f\r \u0085\u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A"
    "\u2028\u2029\u202F\u205F\u3000";

/// Simple case mappings of the code points below U+0800 (the 1- and 2-byte UTF-8 range) whose
/// mapping stays in the same range, so a mapping never changes a string's byte length.
struct case_tables {
  std::array<uint16_t, 0x800> upper{}, lower{};

  case_tables() {
    for (unsigned c = 0; c < 0x800; ++c)
      upper[c] = lower[c] = static_cast<uint16_t>(c);
    auto pair = [&](unsigned up, unsigned lo) {
      lower[up] = static_cast<uint16_t>(lo);
      upper[lo] = static_cast<uint16_t>(up);
    };
    auto shifted = [&](unsigned first_up, unsigned last_up, unsigned delta) {
      for (unsigned c = first_up; c <= last_up; ++c)
        pair(c, c + delta);
    };
    auto alternating = [&](unsigned first_up, unsigned last_lo) {  // U, l, U, l, ...
      for (unsigned c = first_up; c < last_lo; c += 2)
        pair(c, c + 1);
    };
    shifted('A', 'Z', 0x20);
    shifted(0xC0, 0xDE, 0x20);  // Latin-1 letters, minus the multiplication sign below
    lower[0xD7] = 0xD7;
    upper[0xF7] = 0xF7;
    pair(0x178, 0xFF);          // Y diaeresis
    upper[0xB5] = 0x39C;        // micro sign -> Greek capital mu
    alternating(0x100, 0x12F);  // Latin Extended-A
    alternating(0x132, 0x137);
    alternating(0x139, 0x148);
    alternating(0x14A, 0x177);
    alternating(0x179, 0x17E);
    shifted(0x391, 0x3AB, 0x20);  // Greek capitals
    lower[0x3A2] = 0x3A2;         // unassigned
    upper[0x3C2] = 0x3A3;         // final sigma
    pair(0x386, 0x3AC);
    shifted(0x388, 0x38A, 0x25);
    pair(0x38C, 0x3CC);
    shifted(0x38E, 0x38F, 0x3F);
    shifted(0x410, 0x42F, 0x20);  // Cyrillic
    shifted(0x400, 0x40F, 0x50);
    alternating(0x460, 0x481);
    alternating(0x48A, 0x4BF);
    alternating(0x4D0, 0x4FF);
    shifted(0x531, 0x556, 0x30);  // Armenian
  }
};

/// The tables, built once.
inline const case_tables& case_mapping() {
  static const case_tables tables;
  return tables;
}

}  // namespace tug::cpu::detail
