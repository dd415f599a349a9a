#pragma once
// Size estimates of data not yet made, from a node's schema and its row count hint (size_hint).
#include <cstdint>

#include "tug/core/types.hpp"

namespace tug::exec {

/// Bytes a row of `s` takes about (strings 24: an offset and 16 characters).
inline int64_t estimated_row_bytes(const schema& s) {
  int64_t width = 0;
  for (auto& f : s) width += f.type.id == type_id::string ? 24 : size_of(f.type.id);
  return width;
}

}  // namespace tug::exec
