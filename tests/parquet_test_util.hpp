#pragma once
// Helpers of the Parquet tests: canonical text of values (as tests/data/make_parquet.py writes them),
// reading every row group of a file.
#include <cstdio>
#include <optional>
#include <string>

#include "tug/core/column.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug::parquet_test {

inline std::string int128_to_string(__int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string s;
  while (u) {
    s.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (neg) s.push_back('-');
  return {s.rbegin(), s.rend()};
}

/// The canonical text of make_parquet.py for row `i` of `c` (nullopt for null).
inline std::optional<std::string> canon(const column& c, int64_t i) {
  if (c.is_null(i)) return std::nullopt;
  return type_dispatch(c.type().id, [&]<type_id Id>() -> std::string {
    using T = storage_t<Id>;
    T v = c.value<T>(i);
    if constexpr (Id == type_id::boolean)
      return v ? "true" : "false";
    else if constexpr (Id == type_id::float32 || Id == type_id::float64) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
      return buf;
    } else if constexpr (Id == type_id::decimal128)
      return int128_to_string(v);
    else if constexpr (Id == type_id::string) {
      static const char* hex = "0123456789abcdef";
      std::string s;
      for (unsigned char ch : v) {
        s.push_back(hex[ch >> 4]);
        s.push_back(hex[ch & 15]);
      }
      return s;
    } else
      return std::to_string(v);
  });
}

/// Indices of all of a reader's columns.
inline std::vector<size_t> all_columns(const io::parquet::file_reader& r) {
  std::vector<size_t> all;
  for (size_t c = 0; c < r.schema().size(); ++c)
    all.push_back(c);
  return all;
}

/// Every row group of a file, all columns.
inline std::vector<table> read_row_groups(const io::parquet::file_reader& r) {
  std::vector<table> parts;
  for (int g = 0; g < r.num_row_groups(); ++g)
    parts.push_back(r.read_row_group(g, all_columns(r)));
  return parts;
}

}  // namespace tug::parquet_test
