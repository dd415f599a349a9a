#include "tug/plan/optimizer.hpp"

namespace tug {

const std::vector<optimizer_pass>& optimizer_passes() {
  static const std::vector<optimizer_pass> list = {
      {"constant_folding", &optimizer_flags::constant_folding, &passes::constant_folding},
      {"predicate_pushdown", &optimizer_flags::predicate_pushdown, &passes::predicate_pushdown},
      {"projection_pushdown", &optimizer_flags::projection_pushdown, &passes::projection_pushdown},
      {"slice_pushdown", &optimizer_flags::slice_pushdown, &passes::slice_pushdown},
      {"common_subplan", &optimizer_flags::common_subplan, &passes::common_subplan},
      {"late_materialization", &optimizer_flags::late_materialization, &passes::late_materialization},
  };
  return list;
}

plan_ptr optimize(const plan_ptr& p, const std::vector<optimizer_pass>& passes, const optimizer_flags& flags,
                  bool check_schema) {
  plan_ptr cur = p;
  for (auto& pass : passes) {
    if (!(flags.*(pass.flag))) continue;
    plan_ptr next = pass.run(cur);
    if (check_schema && !(next->schema == cur->schema))
      throw internal_error(std::string("optimizer pass ") + pass.name + " changed the output schema from [" +
                           cur->schema.to_string() + "] to [" + next->schema.to_string() + "]");
    cur = next;
  }
  return cur;
}

plan_ptr optimize(const plan_ptr& p, const optimizer_flags& flags, bool check_schema) {
  return optimize(p, optimizer_passes(), flags, check_schema);
}

}  // namespace tug
