#pragma once
/// Row hashing and the key index shared by group_by, join, unique, over and n_unique: assigns each
/// distinct key tuple a dense id in first-seen order, and looks up rows of other tables. An index's
/// memory counts against the query's memory_limit while it lives (scratch_reservation).
#include <cstdint>
#include <memory>
#include <vector>

#include "tug/core/table.hpp"

namespace tug {

/// 64-bit hash of every row of `keys` (nulls hash to a fixed value; -0.0 == 0.0; all NaNs equal).
std::vector<uint64_t> hash_rows(const std::vector<column>& keys);
/// hash_rows into `out` (one word per row of `keys`).
void hash_rows(const std::vector<column>& keys, uint64_t* out);

/// Hash index over key columns. Null keys compare equal to each other (grouping semantics); callers
/// that need SQL join semantics skip rows with null keys themselves (see `any_null`).
class key_index {
 public:
  /// Indexes all rows of `keys` (at least one column, all the same length).
  explicit key_index(std::vector<column> keys);
  /// Indexes all rows of `keys`, writing the group id of each row to `group_ids_out` (one per row)
  /// instead of keeping them (group_ids() is then empty).
  key_index(std::vector<column> keys, int64_t* group_ids_out);
  ~key_index();
  key_index(key_index&&) noexcept;
  key_index& operator=(key_index&&) noexcept;

  /// Number of distinct key tuples.
  int64_t num_groups() const { return static_cast<int64_t>(_first_row.size()); }
  /// Dense group id of each indexed row, ids in first-seen order.
  const std::vector<int64_t>& group_ids() const { return _group_of_row; }
  /// Moves the group ids out (group_ids() is empty afterwards; their memory is the caller's to count).
  std::vector<int64_t> take_group_ids();
  /// First row of each group.
  const std::vector<int64_t>& first_rows() const { return _first_row; }
  /// Key columns, one row per group (in group id order).
  std::vector<column> group_keys(memory_resource* mr = default_host_resource()) const;
  /// Group id of each row of `probe` (same column types as the index), or -1 when absent.
  std::vector<int64_t> find(const std::vector<column>& probe) const;
  /// Like find(probe), into `out` (one entry per probe row).
  void find(const std::vector<column>& probe, int64_t* out) const;

 private:
  void build(std::vector<column> keys, int64_t* ids);
  void build_tables(std::vector<column> keys, int64_t* ids);
  /// Counts what the index holds against the query's memory (memory/scratch.hpp).
  void count_memory();
  struct impl;
  std::unique_ptr<impl> _impl;
  std::vector<int64_t> _group_of_row;
  std::vector<int64_t> _first_row;
};

/// True for each row where any of `keys` is null.
std::vector<uint8_t> any_null(const std::vector<column>& keys);

}  // namespace tug
