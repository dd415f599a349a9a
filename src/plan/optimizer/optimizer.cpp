#include "tug/plan/optimizer.hpp"

namespace tug {

const std::vector<optimizer_pass>& optimizer_passes() {
  static const std::vector<optimizer_pass> passes = {};
  return passes;
}

plan_ptr optimize(const plan_ptr& p, const optimizer_flags& flags, bool check_schema) {
  plan_ptr cur = p;
  for (auto& pass : optimizer_passes()) {
    if (!(flags.*(pass.flag))) continue;
    plan_ptr next = pass.run(cur);
    if (check_schema && !(next->schema == cur->schema))
      throw internal_error(std::string("optimizer pass ") + pass.name + " changed the output schema from [" +
                           cur->schema.to_string() + "] to [" + next->schema.to_string() + "]");
    cur = next;
  }
  return cur;
}

}  // namespace tug
