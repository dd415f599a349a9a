#pragma once
/// Tables (positional columns of equal length) and the basic copying kernels shared by all operators.
#include <cstdint>
#include <vector>

#include "tug/core/column.hpp"

namespace tug {

/// A set of columns with the same number of rows. Cheap to copy (columns share buffers).
class table {
 public:
  table() = default;
  /// @throws internal_error when the columns differ in length.
  explicit table(std::vector<column> columns);
  /// A table of `num_rows` rows and no columns (e.g. the result of selecting only literals).
  static table empty_with_rows(int64_t num_rows);

  int64_t num_rows() const { return _num_rows; }
  size_t num_columns() const { return _columns.size(); }
  const column& operator[](size_t i) const { return _columns[i]; }
  const column& col(size_t i) const { return _columns[i]; }
  const std::vector<column>& columns() const { return _columns; }
  std::vector<column>& columns() { return _columns; }
  table slice(int64_t offset, int64_t length) const;
  /// Keeps the given column indices in order.
  table select(const std::vector<size_t>& indices) const;
  int64_t memory_usage() const;

 private:
  std::vector<column> _columns;
  int64_t _num_rows = 0;
};

/// Rows `indices[i]` of `c`; an index < 0 produces a null row.
column gather(const column& c, const int64_t* indices, int64_t n, memory_resource* mr = default_host_resource());
table gather(const table& t, const int64_t* indices, int64_t n, memory_resource* mr = default_host_resource());
/// Like `gather`, for indices known to be in [0, rows): skips the scan for null (negative) indices.
table gather_in_range(const table& t, const int64_t* indices, int64_t n, memory_resource* mr = default_host_resource());
inline column gather(const column& c, const std::vector<int64_t>& idx, memory_resource* mr = default_host_resource()) {
  return gather(c, idx.data(), static_cast<int64_t>(idx.size()), mr);
}
inline table gather(const table& t, const std::vector<int64_t>& idx, memory_resource* mr = default_host_resource()) {
  return gather(t, idx.data(), static_cast<int64_t>(idx.size()), mr);
}

/// Rows where the boolean `mask` is true (null counts as false).
table filter(const table& t, const column& mask, memory_resource* mr = default_host_resource());
column filter(const column& c, const column& mask, memory_resource* mr = default_host_resource());

/// Concatenation of columns of one type. @throws internal_error on differing types.
column concatenate(const std::vector<column>& parts, memory_resource* mr = default_host_resource());
/// Concatenation of tables with the same column types. An empty list gives an empty table.
table concatenate(const std::vector<table>& parts, memory_resource* mr = default_host_resource());

/// A column of `n` copies of row `row` of `c`.
column repeat_row(const column& c, int64_t row, int64_t n, memory_resource* mr = default_host_resource());

/// Rebuilds `c` as a compact column starting at offset 0 (copies the referenced rows).
column compact(const column& c, memory_resource* mr = default_host_resource());

/// An empty column of `type`.
column make_empty_column(const data_type& type);

/// Total rows of a list of partitions.
int64_t total_rows(const std::vector<table>& parts);

}  // namespace tug
