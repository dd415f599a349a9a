#pragma once
// Internal interface between the CPU expression evaluator (evaluate.cpp) and the kernel families it
// dispatches to. Arguments arrive evaluated (literals broadcast to the row count) and already of the
// types `resolve` gave them; `n.dtype` is the result type.
#include <vector>

#include "tug/core/table.hpp"
#include "tug/expr/expr.hpp"

namespace tug::cpu::detail {

/// fn::str_* over string columns (args[0] the subject; patterns/prefixes in args[1]).
column eval_string_function(const expr_node& n, const std::vector<column>& args, memory_resource* mr);

/// fn::dt_* over date32 / timestamp / duration columns.
column eval_temporal_function(const expr_node& n, const std::vector<column>& args, memory_resource* mr);

/// fn::add / fn::sub where an operand is date32, timestamp or duration: temporal - temporal,
/// temporal +/- duration, duration +/- duration (resolve put the temporal operand first for add).
column eval_temporal_arith(const expr_node& n, const column& a, const column& b, memory_resource* mr);

}  // namespace tug::cpu::detail
