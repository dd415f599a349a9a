#pragma once
// Pieces of one partition: a producer whose output for one input partition may be much larger than
// that partition (the CPU join's streamed probe) hands it to its consumers' fused hook in several
// pieces, one call per piece, all with the input partition's index, in order, from one thread. A
// consumer that keeps the partitions' order (a streaming sink, hold_output) asks last_piece() during
// the call: false while more pieces of the same index follow.
#include <functional>

#include "tug/core/table.hpp"

namespace tug {
struct exec_context;
}

namespace tug::exec {

/// A per-partition operator whose output for one input partition may be much larger than it: run_per_partition
/// hands each input partition to process_pieces instead of process_indexed.
class piece_producer {
 public:
  virtual ~piece_producer() = default;
  /// The output of input partition `index`, `t`, handed to `emit` in one or more pieces in order,
  /// `last` on the last.
  virtual void process_pieces(const table& t, size_t index, exec_context& ctx,
                              const std::function<void(table, bool last)>& emit) = 0;
};

namespace detail {
/// Producers on this thread's stack that have more pieces of the current partition to hand over.
inline thread_local int pieces_to_follow = 0;
}  // namespace detail

/// True unless a producer below the current hook call has more pieces of this partition to hand over.
inline bool last_piece() { return detail::pieces_to_follow == 0; }

/// Marks, while it lives, that the piece being handed over is not its partition's last (when `more`).
class more_pieces {
 public:
  explicit more_pieces(bool more) : _more(more) {
    if (_more) ++detail::pieces_to_follow;
  }
  ~more_pieces() {
    if (_more) --detail::pieces_to_follow;
  }
  more_pieces(const more_pieces&) = delete;
  more_pieces& operator=(const more_pieces&) = delete;

 private:
  bool _more;
};

}  // namespace tug::exec
