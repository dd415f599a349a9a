#pragma once
// Helpers of the sources' take_rows (late materialization): checks of the row ids.
#include <string>
#include <vector>

#include "tug/core/error.hpp"
#include "tug/core/table.hpp"

namespace tug::io_detail {

/// Throws internal_error unless every column of `ids` is int64 without nulls, each id in [0, total).
inline void check_row_ids(const std::vector<column>& ids, int64_t total, const std::string& source) {
  for (auto& c : ids) {
    if (c.type().id != type_id::int64) throw internal_error("take: the row ids are not int64");
    if (c.has_nulls()) throw internal_error("take: the row ids have nulls");
    const int64_t* id = c.values<int64_t>();
    for (int64_t i = 0; i < c.size(); ++i)
      if (id[i] < 0 || id[i] >= total)
        throw internal_error("take: row " + std::to_string(id[i]) + " is outside the " + std::to_string(total) +
                             " rows of " + source);
  }
}

/// A table of no rows with the given column types.
inline table empty_table(const std::vector<data_type>& types, memory_resource* mr) {
  std::vector<column> cols;
  for (auto& t : types)
    cols.push_back(make_null_column(t, 0, mr));
  return table(std::move(cols));
}

}  // namespace tug::io_detail
