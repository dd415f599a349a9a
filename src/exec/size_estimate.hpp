#pragma once
// Size estimates of data not yet made, from a node's schema and its row count hint (size_hint), and
// what the operators hold whole by those hints.
#include <cstdint>

#include "tug/core/types.hpp"
#include "tug/plan/logical.hpp"

namespace tug::exec {

/// Bytes a row of `s` takes about (strings 24: an offset and 16 characters).
inline int64_t estimated_row_bytes(const schema& s) {
  int64_t width = 0;
  for (auto& f : s) width += f.type.id == type_id::string ? 24 : size_of(f.type.id);
  return width;
}

/// Whether a join takes both sides whole (join_node::run): when the left side may be the smaller (its
/// rows hint below the right's, or either unknown) and the join type lets the backend index either side;
/// otherwise the right side is indexed and the left streams through the probe.
inline bool join_may_hold_both_sides(join_type how, int64_t left_rows, int64_t right_rows) {
  const bool swappable =
      how == join_type::inner || how == join_type::left || how == join_type::semi || how == join_type::anti;
  return swappable && (left_rows < 0 || right_rows < 0 || left_rows < right_rows);
}

}  // namespace tug::exec
