#pragma once
/// Lowering: optimized logical plan -> physical plan. Chooses the backend per node, decomposes
/// aggregations and windows into pre-projection, operator and post-projection, and resolves
/// expressions so the backends evaluate typed trees.
#include <string>
#include <vector>

#include "tug/exec/physical.hpp"
#include "tug/memory/device.hpp"
#include "tug/plan/logical.hpp"
#include "tug/runtime/options.hpp"

namespace tug {

/// Lowers `p` for `opts.engine`. Nodes that cannot run on the GPU fall back to the CPU according to
/// `opts.fallback` (warn: a message in `fallbacks` and on stderr; raise: not_implemented_error; silent).
/// First checks `opts` (validate_options): @throws invalid_argument_error naming a bad option.
physical_ptr lower(const plan_ptr& p, const engine_options& opts, std::vector<std::string>* fallbacks = nullptr);

}  // namespace tug
