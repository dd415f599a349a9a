#include "tug/exec/cpu/evaluate.hpp"

namespace tug::cpu {

column evaluate(const expr& e, const table& t, const schema& input, memory_resource* mr) {
  const auto& n = e.node();
  switch (n.kind) {
    case expr_kind::column: return t[input.index_of(n.name)];
    case expr_kind::literal: return n.value.to_column(t.num_rows(), mr);
    case expr_kind::alias: return evaluate(n.args[0], t, input, mr);
    default: break;
  }
  throw not_implemented_error("cpu evaluation of " + to_string(e) + " is not implemented yet");
}

column cast(const column& c, const data_type& to, bool, memory_resource*) {
  if (c.type() == to) return c;
  throw not_implemented_error("cpu cast from " + to_string(c.type()) + " to " + to_string(to) + " is not implemented yet");
}

}  // namespace tug::cpu
