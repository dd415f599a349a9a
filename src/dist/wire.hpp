#pragma once
// A table as the bytes of one exchange message, and back (src/dist/wire.cpp).
#include <functional>

#include "tug/core/table.hpp"
#include "tug/dist/communicator.hpp"

namespace tug::dist {

/// Host table `t` as one message: its rows, then per column the type, null count and the buffers of
/// its rows (a sliced column's rows only). Appends to `out` when it is not empty.
message serialize(const table& t);
/// Rows `rows[0..n)` of host table `t`, in that order, as one message (deserialize's format): the
/// same table as serialize(gather(t, rows, n)) without the gathered copy.
message serialize_rows(const table& t, const int64_t* rows, int64_t n);
/// Where one buffer's bytes are (host or device memory), and where they go.
struct span {
  const void* p;
  size_t bytes;
};
struct landing {
  void* p;
  size_t bytes;
};
/// String offsets that arrived as the sender had them: `n` of them at `p`, `base` to subtract from each.
struct rebase {
  int64_t* p;
  int64_t n;
  int64_t base;
};
/// Copies `bytes` from `src` (host or device memory) to host memory `dst`.
using read_fn = std::function<void(void* dst, const void* src, size_t bytes)>;

/// Table `t` (host or device memory) as a layout message: the message serialize would make without
/// the buffers' bytes, which travel apart (device to device over NCCL); appends where they are to
/// `spans`, in the order deserialize_layout wants them. Reads each string column's first and last
/// offsets with `read`.
message serialize_layout(const table& t, std::vector<span>& spans, const read_fn& read);
/// True when `m` was made by serialize_layout.
bool is_layout(const message& m);
/// The table of layout message `m`, its buffers allocated from `mr` and not yet filled: appends where
/// each buffer's bytes go to `spans` (in serialize_layout's order) and the string offsets to rebase
/// once they are there to `rebases`. @throws internal_error when the message is not a layout.
table deserialize_layout(const message& m, memory_resource* mr, std::vector<landing>& spans, std::vector<rebase>& rebases);

/// The table of a message made by serialize, its buffers from `mr`.
/// @throws internal_error when the message is truncated or not a table.
table deserialize(const message& m, memory_resource* mr);

}  // namespace tug::dist
