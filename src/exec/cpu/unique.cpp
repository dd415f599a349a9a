// CPU unique: distinct rows over key columns with the key_index (nulls equal nulls, -0.0 == 0.0,
// NaN == NaN). For keep any/first/last every partition is first deduplicated on its own in parallel,
// which keeps the surviving rows in input order, then the survivors are deduplicated together.
#include "partitioned_gather.hpp"
#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif
#include "tug/exec/key_index.hpp"
#include "tug/exec/physical.hpp"

namespace tug::exec {

using cpu::finish;
using cpu::one;

namespace {

class unique_op final : public unique_node {
 public:
  using unique_node::unique_node;
  /// The consumers' work runs on each output partition (out of core: as each bucket's is ready).
  bool accepts_fused() const override { return true; }

 protected:
  std::vector<table> unique_partitions(std::vector<table> parts, exec_context& ctx) override {
    // a row kept globally under any/first/last is also kept within its partition
    if (_keep != unique_keep::none && parts.size() > 1)
      parts = map_partitions(ctx, parts, [&](const table& t) {
        auto rows = kept_rows(t);
        return static_cast<int64_t>(rows.size()) == t.num_rows() ? t : gather(t, rows, ctx.mr);
      });
    table all = cpu::concat_partitions(parts, ctx);
    return cpu::gather_partitions(all, kept_rows(all), ctx);
  }

 private:
  /// Rows of `t` that survive, in input order (the order of first appearance for any/first).
  std::vector<int64_t> kept_rows(const table& t) const {
    int64_t n = t.num_rows();
    if (n == 0) return {};
    std::vector<column> keys = _subset.empty() ? t.columns() : t.select(_subset).columns();
    std::vector<int64_t> group_of_row, first_rows;
    if (keys.empty()) {  // no columns: every row is the same key
      group_of_row.assign(static_cast<size_t>(n), 0);
      first_rows = {0};
    } else {
      key_index index(std::move(keys));
      group_of_row = index.group_ids();
      first_rows = index.first_rows();
    }
    if (_keep == unique_keep::any || _keep == unique_keep::first) return first_rows;
    std::vector<int64_t> rows;
    if (_keep == unique_keep::last) {
      std::vector<int64_t> last(first_rows.size());
      for (int64_t i = 0; i < n; ++i) last[static_cast<size_t>(group_of_row[static_cast<size_t>(i)])] = i;
      std::vector<uint8_t> kept(static_cast<size_t>(n), 0);
      for (int64_t r : last) kept[static_cast<size_t>(r)] = 1;
      for (int64_t i = 0; i < n; ++i)
        if (kept[static_cast<size_t>(i)]) rows.push_back(i);
      return rows;
    }
    std::vector<int64_t> count(first_rows.size(), 0);
    for (int64_t g : group_of_row) ++count[static_cast<size_t>(g)];
    for (int64_t i = 0; i < n; ++i)
      if (count[static_cast<size_t>(group_of_row[static_cast<size_t>(i)])] == 1) rows.push_back(i);
    return rows;
  }
};

}  // namespace

physical_ptr make_unique(backend b, physical_ptr child, std::vector<size_t> subset, unique_keep keep,
                         bool maintain_order) {
  TUG_DISPATCH_CUDA(b, make_unique(std::move(child), std::move(subset), keep, maintain_order));
  schema s = child->output_schema;
  return finish(std::make_unique<unique_op>(std::move(subset), keep, maintain_order), b, one(std::move(child)),
                std::move(s));
}

}  // namespace tug::exec
