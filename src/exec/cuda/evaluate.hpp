#pragma once
// The CUDA expression evaluator (host interface).
#include <vector>

#include "tug/core/table.hpp"
#include "tug/expr/expr.hpp"

namespace tug::cuda {

/// Evaluates resolved, elementwise `exprs` over the device table `t` (schema `input`) into device
/// columns of t.num_rows() rows each; a bare column reference returns that column unchanged.
/// @throws compute_error as the CPU evaluator does (e.g. a strict cast that fails), naming the value.
std::vector<column> evaluate(const std::vector<expr>& exprs, const table& t, const schema& input, memory_resource* mr);

}  // namespace tug::cuda
