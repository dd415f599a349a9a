// The take operator of late materialization: columns of a source (in memory or Parquet) gathered by
// global row positions (the rows a filter chain kept), appended to each input partition. The source
// fetches the rows (table_source::take_rows), the ids of all input partitions at once.
#include "tug/exec/cpu/require.hpp"
#include "tug/exec/physical.hpp"

namespace tug::exec {

namespace {

class take_op final : public physical_node {
 public:
  take_op(std::shared_ptr<const table_source> src, std::vector<std::string> columns, std::string row_column)
      : _src(std::move(src)), _columns(std::move(columns)), _row_column(std::move(row_column)) {}
  std::string name() const override { return "take"; }
  std::string detail() const override {
    std::string s;
    for (auto& c : _columns)
      s += (s.empty() ? "" : ", ") + c;
    return "[" + s + "] by " + _row_column + " of " + _src->describe();
  }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    std::vector<table> in = input(0, ctx);
    size_t row = children[0]->output_schema.index_of(_row_column);
    std::vector<column> ids;
    for (auto& t : in)
      ids.push_back(t[row]);
    std::vector<table> got = _src->take_rows(_columns, ids, ctx.pool, ctx.mr);
    for (size_t i = 0; i < in.size(); ++i) {
      std::vector<column> cols = in[i].columns();
      for (auto& c : got[i].columns())
        cols.push_back(c);
      in[i] = table(std::move(cols));
    }
    return in;
  }

 private:
  std::shared_ptr<const table_source> _src;
  std::vector<std::string> _columns;
  std::string _row_column;
};

}  // namespace

physical_ptr make_take(backend b, physical_ptr child, std::shared_ptr<const table_source> src,
                       std::vector<std::string> columns, std::string row_column, schema out) {
  cpu::require_cpu(b, "take");
  TUG_EXPECTS(src != nullptr, "take: source is null");
  return cpu::finish(std::make_unique<take_op>(std::move(src), std::move(columns), std::move(row_column)), b,
                     cpu::one(std::move(child)), std::move(out));
}

}  // namespace tug::exec
