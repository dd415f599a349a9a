// What the CUDA backend can run: the lowering asks before placing a node on the GPU, and names the
// returned reason in its fallback message. One section per operator; keep each next to its truth.
#ifdef TUG_WITH_CUDA
#include <string>

#include "exec/cuda/ops.hpp"

namespace tug::cuda {

namespace {

std::string type_unsupported(const schema& s, const std::vector<size_t>& cols, const char* what) {
  for (size_t c : cols)
    if (s[c].type.id == type_id::decimal128)
      return std::string(what) + " column " + s[c].name + " has type decimal128, which the CUDA backend does not handle";
  return {};
}

}  // namespace

std::string unsupported(const exec::op_request& r) {
  std::string op = r.op;
  if (r.input)
    for (auto& e : r.exprs) {
      std::string why = expr_unsupported(e, *r.input);
      if (!why.empty()) return why;
    }
  if (op == "filter" || op == "project") return {};
  if (op == "aggregate" || op == "window") {
    if (r.input) {
      std::string why = type_unsupported(*r.input, r.keys, "key");
      if (!why.empty()) return why;
    }
    return "no CUDA implementation yet";
  }
  if (op == "join") return "no CUDA implementation yet";
  // sort.cu: keys of every type (strings by bytes, decimal128 by both words), top-k, any subset
  if (op == "sort" || op == "unique") return {};
  // reshape_ops.cu: zero-copy slices and partition lists, a kernel for the index column
  if (op == "slice" || op == "concat" || op == "row_index") return {};
  return "no CUDA implementation of " + op;
}

}  // namespace tug::cuda
#endif
