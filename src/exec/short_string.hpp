#pragma once
// Strings of at most 7 bytes as integers, shared by the key index (short string keys pack like
// integers) and the string membership kernel (is_in compares one integer per row).
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

namespace tug {

/// Longest string short_string_code encodes.
inline constexpr size_t short_string_max = 7;

/// A string of at most 7 bytes as an integer: its bytes, and its length in the top byte, so two
/// codes are equal exactly when the strings are. UINT64_MAX (no string's code) for longer strings.
/// Reads only the string's bytes.
inline uint64_t short_string_code(std::string_view s) {
  size_t n = s.size();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  uint64_t w = 0;
  if (n >= 4) {  // two overlapping 4-byte loads
    if (n > short_string_max) return std::numeric_limits<uint64_t>::max();
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    w = lo | (static_cast<uint64_t>(hi) << (8 * (n - 4)));
  } else if (n > 0) {  // bytes 0, n/2 and n-1 cover lengths 1 to 3
    w = static_cast<uint64_t>(p[0]) | (static_cast<uint64_t>(p[n / 2]) << (8 * (n / 2))) |
        (static_cast<uint64_t>(p[n - 1]) << (8 * (n - 1)));
  }
  return w | (static_cast<uint64_t>(n) << 56);
}

}  // namespace tug
