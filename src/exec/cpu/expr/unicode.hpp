#pragma once
// Unicode data of the string functions, shared by the CPU kernels (strings.cpp) and the CUDA
// evaluator, so both backends treat the same characters alike (case mapping: exec/case_mapping.hpp).
#include <cstdint>
#include <string_view>

namespace tug::cpu::detail {

/// Unicode White_Space, as Rust's str::trim: what strip_chars removes when given no characters.
inline constexpr std::string_view unicode_white_space =
    "\t\n\v\f\r \u0085\u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A"
    "\u2028\u2029\u202F\u205F\u3000";

}  // namespace tug::cpu::detail
