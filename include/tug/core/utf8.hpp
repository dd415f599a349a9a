#pragma once
/// UTF-8 validation and lossy repair of byte strings (tug strings hold UTF-8: readers check what they
/// take in, the Parquet writer checks what it writes as STRING).
#include <cstddef>
#include <string>
#include <string_view>

#include "tug/core/column.hpp"

namespace tug {

/// The position of the first byte of `s` that does not start a well-formed UTF-8 sequence (Unicode
/// Table 3-7: no overlong forms, surrogates or code points above U+10FFFF), or `s.size()` when all of
/// `s` is valid. Runs of ASCII are passed over 32 bytes at a time.
size_t find_invalid_utf8(std::string_view s);

/// Whether all of `s` is valid UTF-8.
inline bool is_valid_utf8(std::string_view s) { return find_invalid_utf8(s) == s.size(); }

/// Appends `s` to `out` with every maximal ill-formed subpart replaced by U+FFFD (the Unicode
/// "substitution of maximal subparts", as Rust's String::from_utf8_lossy and Polars'
/// encoding="utf8-lossy"); returns the number of replacements.
size_t append_utf8_lossy(std::string_view s, std::string& out);

/// The first row of the host string column `v` whose (non-null) value is not valid UTF-8, or -1.
/// One pass over the chars of all rows plus a look at each value's first byte when they are valid
/// (values that start at a sequence boundary of valid chars are valid each); row by row otherwise.
int64_t first_invalid_utf8_row(const column_view& v);

}  // namespace tug
