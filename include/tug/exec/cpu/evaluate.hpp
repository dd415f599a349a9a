#pragma once
/// CPU evaluation of resolved elementwise expressions (see tug/expr/resolve.hpp).
#include "tug/core/table.hpp"
#include "tug/expr/expr.hpp"

namespace tug::cpu {

/// Evaluates `e` (resolved against `input`; no aggregations, no windows) over `t`, whose columns are
/// positional in `input`. Literal-only expressions are broadcast to `t.num_rows()` rows.
/// @throws compute_error for values the expression cannot handle (e.g. a failing strict cast).
column evaluate(const expr& e, const table& t, const schema& input, memory_resource* mr = default_host_resource());

/// Casts `c` to `to`. Strict: a value that does not fit or parse raises compute_error naming it;
/// otherwise such values become null. Float -> integer truncates toward zero.
column cast(const column& c, const data_type& to, bool strict, memory_resource* mr = default_host_resource());

}  // namespace tug::cpu
