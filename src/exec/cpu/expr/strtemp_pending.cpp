// Placeholders for the string and temporal kernels until strings.cpp / temporal.cpp land (that
// branch deletes this file).
#include "functions.hpp"

namespace tug::cpu::detail {

column eval_string_function(const expr_node& n, const std::vector<column>&, memory_resource*) {
  throw not_implemented_error(std::string("cpu string function ") + to_string(n.func) + " is not implemented yet");
}

column eval_temporal_function(const expr_node& n, const std::vector<column>&, memory_resource*) {
  throw not_implemented_error(std::string("cpu temporal function ") + to_string(n.func) + " is not implemented yet");
}

column eval_temporal_arith(const expr_node& n, const column& a, const column& b, memory_resource*) {
  throw not_implemented_error(std::string("cpu temporal ") + to_string(n.func) + " of " + to_string(a.type()) + " and " +
                              to_string(b.type()) + " is not implemented yet");
}

}  // namespace tug::cpu::detail
