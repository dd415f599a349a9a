#pragma once
/// An in-memory table with column names: what `collect()` returns and what `lazy()` starts from.
#include <string>
#include <utility>
#include <vector>

#include "tug/core/table.hpp"

namespace tug {

class lazy_frame;

class data_frame {
 public:
  data_frame() = default;
  /// Partitions must match the schema's column count and types. @throws internal_error otherwise.
  data_frame(tug::schema s, std::vector<table> partitions);
  /// From named columns of equal length. @throws invalid_argument_error on unequal lengths or duplicate names.
  static data_frame from_columns(std::vector<std::pair<std::string, column>> columns);

  const tug::schema& schema() const { return _schema; }
  int64_t num_rows() const { return total_rows(_partitions); }
  size_t num_columns() const { return _schema.size(); }
  const std::vector<table>& partitions() const { return _partitions; }
  /// All rows in one table.
  table to_table() const;
  /// One column, all partitions concatenated. @throws column_not_found_error.
  column operator[](const std::string& name) const;
  /// Splits into partitions of at most `rows` rows (zero-copy slices).
  data_frame repartition(int64_t rows) const;

  /// Starts a lazy query over this frame.
  lazy_frame lazy() const;

  /// Polars-like box rendering of the first and last rows.
  std::string to_string(int64_t max_rows = 10) const;
  /// CSV text (header, then rows; nulls empty), as the CSV writer writes it (io/csv/csv.hpp).
  std::string to_csv() const;

 private:
  tug::schema _schema;
  std::vector<table> _partitions;
};

}  // namespace tug
