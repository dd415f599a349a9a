#pragma once
/// Type resolution: a copy of an expression with every node's output type in `dtype`, untyped
/// literals typed, and casts inserted so that both operands of arithmetic and comparisons share one
/// type. Backends evaluate resolved expressions only; the rules live here once for CPU and CUDA.
#include "tug/expr/expr.hpp"

namespace tug {

/// Resolves `e` against `input`. @throws column_not_found_error or type_error naming the column or function.
expr resolve(const expr& e, const schema& input);

/// The comparison that holds with its operands swapped (lt <-> gt, le <-> ge); any other function as it is.
fn mirrored(fn f);

}  // namespace tug
