#pragma once
// A table as the bytes of one exchange message, and back (src/dist/wire.cpp).
#include "tug/core/table.hpp"
#include "tug/dist/communicator.hpp"

namespace tug::dist {

/// Host table `t` as one message: its rows, then per column the type, null count and the buffers of
/// its rows (a sliced column's rows only). Appends to `out` when it is not empty.
message serialize(const table& t);
/// Rows `rows[0..n)` of host table `t`, in that order, as one message (deserialize's format): the
/// same table as serialize(gather(t, rows, n)) without the gathered copy.
message serialize_rows(const table& t, const int64_t* rows, int64_t n);
/// The table of a message made by serialize, its buffers from `mr`.
/// @throws internal_error when the message is truncated or not a table.
table deserialize(const message& m, memory_resource* mr);

}  // namespace tug::dist
