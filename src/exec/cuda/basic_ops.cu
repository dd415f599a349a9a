// Per-partition operators of the CUDA backend: filter and project (their plumbing is filter_node's
// and project_node's, shared with the CPU).
#include "exec/cuda/common.cuh"
#include "exec/cuda/evaluate.hpp"
#include "exec/cuda/ops.hpp"
#include "exec/cuda/table_ops.hpp"
#include "tug/exec/cpu/require.hpp"

namespace tug::cuda {

namespace {

class filter_op final : public filter_node {
 public:
  using filter_node::filter_node;

 protected:
  table filter_partition(const table& t, const schema& in, exec_context& ctx) const override {
    nvtx_range r{"filter"};
    column mask = evaluate({_pred}, t, in, ctx.device_mr)[0];
    table out = cuda::filter(kept_columns(t), mask, ctx.device_mr);
    sync();
    return out;
  }
};

class project_op final : public project_node {
 public:
  using project_node::project_node;

 protected:
  std::vector<column> evaluate_partition(const table& t, const schema& in, exec_context& ctx) const override {
    nvtx_range r{"project"};
    std::vector<column> cols = evaluate(exprs(), t, in, ctx.device_mr);
    sync();
    return cols;
  }
};

/// The column a bare reference (under aliases) names; nullptr for any other expression.
const std::string* bare_column(const expr& e) {
  const expr* x = &e;
  while ((*x)->kind == expr_kind::alias)
    x = &(*x)->args[0];
  return (*x)->kind == expr_kind::column ? &(*x)->name : nullptr;
}

}  // namespace

std::optional<filter_project> take_filter_project(physical_ptr& node) {
  // Look through CUDA projections of plain (possibly renamed) columns down to a CUDA filter; `map`
  // takes a column of `node`'s output to a column of the current node's output.
  std::vector<size_t> map(node->output_schema.size());
  for (size_t i = 0; i < map.size(); ++i)
    map[i] = i;
  physical_node* at = node.get();
  while (auto* project = dynamic_cast<project_op*>(at)) {
    if (project->where != backend::cuda || project->children.size() != 1) return std::nullopt;
    const schema& in = project->children[0]->output_schema;
    std::vector<size_t> to_in;
    for (auto& e : project->exprs()) {
      const std::string* name = bare_column(e);
      if (!name || !in.contains(*name)) return std::nullopt;
      to_in.push_back(in.index_of(*name));
    }
    for (auto& m : map)
      m = to_in[m];
    at = project->children[0].get();
  }
  auto* filter = dynamic_cast<filter_op*>(at);
  if (!filter || filter->where != backend::cuda || filter->children.size() != 1) return std::nullopt;
  filter_project f;
  const std::vector<size_t>& kept = filter->kept();  // the filter's output columns in its input
  for (size_t m : map)
    f.columns.push_back(kept.empty() ? m : kept[m]);
  f.predicate = filter->predicate();
  f.input = std::move(filter->children[0]);
  node.reset();
  return f;
}

physical_ptr make_filter(physical_ptr child, expr predicate) {
  schema s = child->output_schema;
  return cpu::finish(std::make_unique<filter_op>(std::move(predicate)), backend::cuda, cpu::one(std::move(child)),
                     std::move(s));
}

physical_ptr make_project(physical_ptr child, std::vector<expr> exprs, schema out) {
  return cpu::finish(std::make_unique<project_op>(std::move(exprs)), backend::cuda, cpu::one(std::move(child)),
                     std::move(out));
}

}  // namespace tug::cuda
