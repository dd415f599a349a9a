#pragma once
// Buckets of a blocking operator's input: how the CPU engine's joins, aggregates and sorts run out of
// core. An input that may not fit is split into buckets (by the hash of its keys, or by ranges of its
// sort keys) whose pieces spill separately; the operator's in-memory kernel then runs on one bucket at
// a time. A hash bucket that alone still does not fit is split again on the next bits of the hash.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tug/exec/physical.hpp"

namespace tug::exec {

/// Buckets a blocking operator splits `bytes` of input into: 0 (keep it whole) unless the input exceeds
/// a quarter of `memory_limit` or `force_external` is set; then a power of two such that a bucket
/// holds about an eighth of the limit (at least 4 with force_external, at most 4096).
size_t external_buckets(const exec_context& ctx, int64_t bytes);

/// True when `bytes` of one bucket may be processed at once: no `memory_limit`, or at most a quarter of it.
bool bucket_fits(const exec_context& ctx, int64_t bytes);

/// Rows sorted into `count` buckets, on one or more sides (a join's left and right input, an
/// aggregate's or a sort's one input): each piece (the rows of one input partition in one bucket) is a
/// spillable table (cold: processed last, spilled first).
class bucket_store {
 public:
  bucket_store(exec_context& ctx, size_t sides, size_t count);
  size_t count() const { return _count; }
  const exec_context& context() const { return _ctx; }
  /// Puts row r of `t`, partition `part` of side `side`, into bucket `bucket[r]` (< count()).
  void add(size_t side, size_t part, const table& t, const uint32_t* bucket);
  /// Rows of bucket `b` on side `side`.
  int64_t rows(size_t side, size_t b) const;
  /// Bytes of bucket `b` on every side together (as the pieces were made, wherever they are now).
  int64_t bytes(size_t b) const;
  /// Bytes of bucket `b` on side `side`.
  int64_t bytes(size_t side, size_t b) const;
  /// The pieces of bucket `b` on side `side`, in input order, still spillable (none when no row fell
  /// there); the store no longer holds them.
  std::vector<spillable_ptr> pieces(size_t side, size_t b);
  /// The pieces of bucket `b` on side `side`, brought back, in input order; the store no longer holds them.
  std::vector<table> take(size_t side, size_t b);

 protected:
  exec_context& _ctx;

 private:
  /// `f` summed over the pieces of bucket `b` on side `side`.
  int64_t sum(size_t side, size_t b, int64_t (spillable_table::*f)() const) const;

  size_t _count;
  mutable std::mutex _mu;
  /// per side, per bucket: (input partition, piece)
  std::vector<std::vector<std::vector<std::pair<size_t, spillable_ptr>>>> _pieces;
};

/// Rows split by bits of the hash of their key columns (hash_rows): bucket = bits [64 - shift - log2(count),
/// 64 - shift) of the hash. Equal keys, and every null key, land in the same bucket on every side,
/// provided the key types of the sides are equal.
class hash_buckets : public bucket_store {
 public:
  /// `keys[s]`: the key columns of side s; `count`: a power of two, at least 2; `shift`: hash bits
  /// already used by the buckets this one splits.
  hash_buckets(exec_context& ctx, std::vector<std::vector<size_t>> keys, size_t count, int shift = 0);
  /// Splits every partition of `in` into the buckets (partitions brought back one at a time, in
  /// parallel); `in` is empty afterwards.
  void add(size_t side, held_partitions& in);
  /// True when every row of bucket `b`, on every side, has one hash: one key value (or only null keys),
  /// which no split can separate.
  bool one_hash(size_t b) const;
  /// Bucket `b` split on the next bits of the hash into enough buckets that each may fit (bucket_fits);
  /// `b` is empty afterwards. Null (and `b` left as it is) when it fits, has one hash, or no bits are left.
  std::unique_ptr<hash_buckets> split(size_t b);
  /// Key columns of side `side`.
  const std::vector<size_t>& keys(size_t side) const { return _keys.at(side); }
  /// What processing bucket `b` whole needs: its bytes on every side, and a key index over its rows
  /// (index_scratch_per_row).
  int64_t need(size_t b) const;

 private:
  void add_table(size_t side, size_t part, const table& t);

  std::vector<std::vector<size_t>> _keys;
  int _shift, _bits;
  mutable std::mutex _range_mu;
  std::vector<uint64_t> _lo, _hi;  ///< smallest and largest hash per bucket (lo > hi: empty)
};

/// Calls `f(buckets, b, fits)` for every bucket of `hb` in order, after splitting a bucket that does
/// not fit, recursively (hash_buckets::split), so `f` sees the sub-buckets in its place. `fits` is
/// false for a bucket that does not fit and cannot be split (one key value, or every hash bit used):
/// `f` then processes it a piece at a time where it can, or raises memory_error naming the key.
void for_each_bucket(hash_buckets& hb, const std::function<void(hash_buckets&, size_t, bool)>& f);

/// The rows and bytes of bucket `b` on each side, named by `sides` (e.g. "3 left rows (48 B), 0 right
/// rows (0 B)"): for the memory_error of a bucket that does not fit and cannot be split.
std::string bucket_sizes(const bucket_store& s, size_t b, const std::vector<std::string>& sides);

/// The memory_error of operator `op` for a hash bucket that does not fit and cannot be split further:
/// names the key columns (`keys` of `in`), the bucket's `sizes` (bucket_sizes), what did not fit and
/// the `cause` (the budget's error, which names the limit and the options).
memory_error unsplittable_bucket(const std::string& op, const schema& in, const std::vector<size_t>& keys,
                                 const std::string& sizes, const std::string& what, const memory_error& cause);

/// Bytes a row that a key index over the rows (key_index, and a join's row lists) needs besides the
/// rows, about: 8 for its group id, up to 8 for a first row and up to 32 for its hash table slots when the
/// keys are distinct. It counts against the query's memory (memory/scratch.hpp), so that the operators
/// that index their input count it with the input's bytes when they choose between memory and hash
/// buckets, and when a bucket is checked against a quarter of the limit (hash_buckets::need).
inline constexpr int64_t index_scratch_per_row = 48;

/// Bytes a row that the CPU sort kernel needs besides its input, at most: (word, row) entries and the
/// radix sort's scratch, 16 each, and per key its normalized words and null flags, 17, from the query's
/// memory; the output's row numbers, 8. A sort runs in memory, and out of core a range is sorted
/// whole, when its bytes and these fit (bucket_fits).
inline int64_t sort_scratch_per_row(size_t keys) { return 40 + 17 * static_cast<int64_t>(keys); }

/// A sort out of core (the CPU's): boundaries sampled from the input split its rows into ranges of
/// sort keys, held as spillable pieces, then sorted range by range in order with the in-memory kernel.
/// A range of rows equal to a boundary needs no sorting (its rows are in input order, as a stable sort
/// leaves them); one between two boundaries that does not fit (bucket_fits) is split again from its
/// own samples. The output is the kernel's on each range, in order, cut at `limit`. With a limit (top-k)
/// each partition is first cut to its own first `limit` rows, which are sorted whole when they fit.
struct range_sort {
  range_sort(exec_context& c, std::vector<size_t> k, int64_t l) : ctx(c), keys(std::move(k)), limit(l) {}
  exec_context& ctx;
  std::vector<size_t> keys;  ///< the sort key columns
  int64_t limit = -1;        ///< rows wanted (< 0: all)
  /// Where each row of a table of key columns falls among `bounds` (key columns of sorted, distinct
  /// rows): 2j when it sorts after bound j-1 and before bound j, 2j+1 when it equals bound j.
  std::function<std::vector<uint32_t>(const table& keys, const table& bounds)> locate;
  /// The in-memory kernel: the first min(limit, n) of the `n` > 0 rows of `parts`, sorted, stably.
  std::function<std::vector<table>(const std::vector<table>& parts, int64_t n)> sort;
  /// The consumers' fused work, run on each output partition (may be empty).
  partition_hook after;

  /// The sorted rows of `in` (emptied), split first into about `count` ranges (with a limit, as many as
  /// the partitions' first rows need).
  std::vector<table> run(held_partitions& in, size_t count);

 private:
  void split(held_partitions& in, size_t count, int depth, std::vector<table>& out);
  void emit(std::vector<table> sorted, std::vector<table>& out);
  int64_t _emitted = 0;
};

}  // namespace tug::exec
