// The take operator of late materialization: columns of an in-memory source gathered by global row
// positions (the rows a filter chain kept), appended to each input partition.
#include <algorithm>

#include "tug/exec/cpu/require.hpp"
#include "tug/exec/physical.hpp"
#include "tug/memory/device.hpp"

namespace tug::exec {

namespace {

class take_op final : public physical_node {
 public:
  take_op(std::shared_ptr<const memory_source> src, std::vector<std::string> columns, std::string row_column)
      : _src(std::move(src)), _columns(std::move(columns)), _row_column(std::move(row_column)) {
    std::vector<size_t> idx;
    for (auto& c : _columns)
      idx.push_back(_src->schema().index_of(c));
    for (auto& p : _src->partitions()) {
      if (p.num_rows() == 0) continue;
      if (on_device(p)) throw internal_error("take: the source's columns are in device memory");
      _parts.push_back(p.select(idx));
      _starts.push_back(_starts.back() + p.num_rows());
    }
    for (size_t i : idx)
      _types.push_back(_src->schema()[i].type);
  }
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
    return map_partitions(ctx, in, [&](const table& t) {
      table g = rows(t[row], ctx.mr);
      std::vector<column> cols = t.columns();
      for (auto& c : g.columns())
        cols.push_back(c);
      return table(std::move(cols));
    });
  }

 private:
  /// The passenger columns at the global positions `ids`, in order (any order, repeats allowed).
  /// Ids whose source partitions follow the partitions' order (ascending ids, as a filter chain
  /// leaves them) are gathered one piece per run; otherwise (after a join) by partition, then put
  /// back in the ids' order by one more gather.
  table rows(const column& ids, memory_resource* mr) const {
    int64_t n = ids.size();
    if (ids.has_nulls()) throw internal_error("take: the row column " + _row_column + " has nulls");
    if (n == 0) {
      std::vector<column> empty;
      for (auto& t : _types)
        empty.push_back(make_null_column(t, 0, mr));
      return table(std::move(empty));
    }
    const int64_t* id = ids.values<int64_t>();
    int64_t total = _starts.back();
    std::vector<int64_t> local(static_cast<size_t>(n));
    std::vector<size_t> part(static_cast<size_t>(n));
    size_t cur = 0;
    bool in_order = true;
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = id[i];
      if (r < 0 || r >= total)
        throw internal_error("take: row " + std::to_string(r) + " is outside the source's " + std::to_string(total) +
                             " rows");
      if (r < _starts[cur] || r >= _starts[cur + 1]) {
        auto next = static_cast<size_t>(std::upper_bound(_starts.begin(), _starts.end(), r) - _starts.begin() - 1);
        in_order &= next > cur;
        cur = next;
      }
      local[static_cast<size_t>(i)] = r - _starts[cur];
      part[static_cast<size_t>(i)] = cur;
    }
    if (in_order) return gather_runs(local, part, mr);
    // counting sort by partition (stable), then the inverse permutation
    std::vector<int64_t> start(_parts.size() + 1, 0);
    for (size_t p : part)
      ++start[p + 1];
    for (size_t p = 0; p < _parts.size(); ++p)
      start[p + 1] += start[p];
    std::vector<int64_t> sorted_local(static_cast<size_t>(n)), back(static_cast<size_t>(n));
    std::vector<size_t> sorted_part(static_cast<size_t>(n));
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      auto at = static_cast<size_t>(start[part[i]]++);
      sorted_local[at] = local[i];
      sorted_part[at] = part[i];
      back[i] = static_cast<int64_t>(at);
    }
    table grouped = gather_runs(sorted_local, sorted_part, mr);
    return gather_in_range(grouped, back.data(), n, mr);
  }

  /// Rows `local[i]` of partitions `part[i]`, one gather per run of equal partitions.
  table gather_runs(const std::vector<int64_t>& local, const std::vector<size_t>& part, memory_resource* mr) const {
    std::vector<table> pieces;
    size_t begin = 0;
    for (size_t i = 1; i <= local.size(); ++i) {
      if (i < local.size() && part[i] == part[begin]) continue;
      pieces.push_back(gather_in_range(_parts[part[begin]], local.data() + begin, static_cast<int64_t>(i - begin), mr));
      begin = i;
    }
    return pieces.size() == 1 ? pieces[0] : concatenate(pieces, mr);
  }

  std::shared_ptr<const memory_source> _src;
  std::vector<std::string> _columns;
  std::string _row_column;
  std::vector<table> _parts;        ///< the non-empty source partitions, passenger columns only
  std::vector<int64_t> _starts{0};  ///< first global row of each of _parts, then the total
  std::vector<data_type> _types;
};

}  // namespace

physical_ptr make_take(backend b, physical_ptr child, std::shared_ptr<const memory_source> src,
                       std::vector<std::string> columns, std::string row_column, schema out) {
  cpu::require_cpu(b, "take");
  TUG_EXPECTS(src != nullptr, "take: source is null");
  return cpu::finish(std::make_unique<take_op>(std::move(src), std::move(columns), std::move(row_column)), b,
                     cpu::one(std::move(child)), std::move(out));
}

}  // namespace tug::exec
