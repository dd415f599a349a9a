#pragma once
/// The optimizer: an ordered list of named passes, each a function from plan to plan, switched by flags.
#include <string>
#include <vector>

#include "tug/plan/logical.hpp"
#include "tug/runtime/options.hpp"  // optimizer_flags

namespace tug {

/// One optimizer pass.
struct optimizer_pass {
  const char* name;
  bool optimizer_flags::*flag;
  plan_ptr (*run)(const plan_ptr&);
};

/// The passes in the order `optimize` runs them.
const std::vector<optimizer_pass>& optimizer_passes();

/// Runs the enabled passes. With `check_schema`, raises internal_error naming the pass when a pass
/// changes the output schema.
plan_ptr optimize(const plan_ptr& p, const optimizer_flags& flags = {}, bool check_schema = true);
/// Runs the enabled passes of `passes` in order (tests use it with their own pass lists).
plan_ptr optimize(const plan_ptr& p, const std::vector<optimizer_pass>& passes, const optimizer_flags& flags = {},
                  bool check_schema = true);

namespace passes {
plan_ptr constant_folding(const plan_ptr& p);
plan_ptr predicate_pushdown(const plan_ptr& p);
plan_ptr projection_pushdown(const plan_ptr& p);
plan_ptr slice_pushdown(const plan_ptr& p);
plan_ptr common_subplan(const plan_ptr& p);
plan_ptr late_materialization(const plan_ptr& p);
/// Constant folding of one expression (keeps its output name by aliasing when needed).
expr fold_expression(const expr& e);
}  // namespace passes

}  // namespace tug
