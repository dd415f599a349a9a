// Hash join of the CPU backend: builds a key index over the right (build) side, then probes the
// left partitions in parallel, in morsels, and gathers the output rows.
#include <algorithm>
#include <atomic>
#include <optional>

#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif
#include "tug/exec/key_index.hpp"
#include "tug/exec/physical.hpp"

namespace tug::exec {

using cpu::finish;

namespace {

/// Empty table with the column types of `s`.
table empty_table(const schema& s) {
  std::vector<column> cols;
  for (auto& f : s) cols.push_back(make_empty_column(f.type));
  return cols.empty() ? table::empty_with_rows(0) : table(std::move(cols));
}

/// The right side prepared for probing: every right row, grouped by key (CSR: the rows of group g
/// are rows[offsets[g] .. offsets[g+1]), in right order). Rows with null keys form groups of their
/// own that no probe reaches, since probe rows with null keys are never looked up.
struct build_side {
  table right;      ///< all right partitions concatenated
  table payload;    ///< the right columns that go to the output
  std::optional<key_index> index;
  std::vector<int64_t> offsets;
  std::vector<int64_t> rows;
  std::vector<uint8_t> matched;  ///< full joins: per group, whether a left row matched it
};

/// A contiguous range of rows of one left partition, probed by one task.
struct morsel {
  size_t part;
  int64_t offset, length;
};

class join_op final : public physical_node {
 public:
  explicit join_op(join_spec spec) : _spec(std::move(spec)) {}
  std::string name() const override { return std::string("hash_join[") + to_string(_spec.how) + "]"; }
  std::string detail() const override {
    std::string s;
    for (size_t i = 0; i < _spec.left_keys.size(); ++i)
      s += (i ? ", " : "") + children[0]->output_schema[_spec.left_keys[i]].name + " = " +
           children[1]->output_schema[_spec.right_keys[i]].name;
    return s.empty() ? s : "on " + s;
  }
  bool sync_point() const override { return true; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    std::vector<table> left = input(0, ctx);
    std::vector<table> right_parts = input(1, ctx);
    build_side b;
    b.right = right_parts.empty() ? empty_table(children[1]->output_schema) : concatenate(right_parts, ctx.mr);
    right_parts.clear();
    b.payload = b.right.select(_spec.right_columns);
    if (_spec.how != join_type::cross) build(b);

    int64_t target = std::max<int64_t>(1, ctx.options.target_partition_rows);
    int64_t cross_rows = _spec.how == join_type::cross ? b.right.num_rows() : 0;
    std::vector<morsel> tasks = split(left, ctx, target, cross_rows);
    std::vector<std::vector<table>> outs(tasks.size());
    ctx.pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t t) {
      const morsel& m = tasks[static_cast<size_t>(t)];
      table slice = left[m.part].slice(m.offset, m.length);
      outs[static_cast<size_t>(t)] =
          _spec.how == join_type::cross ? cross(slice, b, target, ctx.mr) : probe(slice, b, target, ctx.mr);
    });

    std::vector<table> result;
    for (auto& o : outs)
      for (auto& p : o)
        if (p.num_rows() > 0) result.push_back(std::move(p));
    if (_spec.how == join_type::full) unmatched_right(b, target, ctx.mr, result);
    if (result.empty()) result.push_back(empty_table(output_schema));
    return result;
  }

 private:
  join_spec _spec;

  void build(build_side& b) const {
    std::vector<column> keys;
    for (size_t k : _spec.right_keys) keys.push_back(b.right.col(k));
    b.index.emplace(std::move(keys));
    const std::vector<int64_t>& gid = b.index->group_ids();
    auto groups = static_cast<size_t>(b.index->num_groups());
    if (_spec.how == join_type::full) b.matched.assign(groups, 0);
    if (groups == gid.size()) return;  // distinct keys: group g is row g, probe needs no CSR
    b.offsets.assign(groups + 1, 0);
    for (int64_t g : gid) ++b.offsets[static_cast<size_t>(g) + 1];
    for (size_t g = 0; g < groups; ++g) b.offsets[g + 1] += b.offsets[g];
    b.rows.resize(gid.size());
    std::vector<int64_t> fill(b.offsets.begin(), b.offsets.end() - 1);
    for (size_t r = 0; r < gid.size(); ++r)
      b.rows[static_cast<size_t>(fill[static_cast<size_t>(gid[r])]++)] = static_cast<int64_t>(r);
  }

  /// Left partitions cut into morsels small enough to keep every thread busy.
  static std::vector<morsel> split(const std::vector<table>& left, exec_context& ctx, int64_t target,
                                   int64_t cross_rows) {
    int64_t total = total_rows(left);
    int64_t per_thread = (total + 4 * ctx.pool.size() - 1) / (4 * ctx.pool.size());
    int64_t size = std::min(target, std::max<int64_t>(int64_t{1} << 14, per_thread));
    std::vector<morsel> out;
    for (size_t p = 0; p < left.size(); ++p) {
      int64_t n = left[p].num_rows();
      int64_t step = size;
      // cross joins: about `target` output rows per task
      if (cross_rows > 0) step = std::max<int64_t>(1, std::min(step, target / cross_rows));
      for (int64_t off = 0; off < n; off += step) out.push_back({p, off, std::min(step, n - off)});
    }
    return out;
  }

  /// Output tables of the rows (left_idx[i], right_idx[i]), at most `target` rows each. An empty
  /// `left_idx` means left rows 0..n-1 in order; -1 gives nulls.
  static std::vector<table> emit(const table& left, const std::vector<int64_t>& left_idx, const table& right,
                                 const std::vector<int64_t>& right_idx, int64_t target, memory_resource* mr) {
    std::vector<table> out;
    auto n = static_cast<int64_t>(right_idx.size());
    for (int64_t a = 0; a < n; a += target) {
      int64_t len = std::min(target, n - a);
      table l = left_idx.empty() ? left.slice(a, len) : gather(left, left_idx.data() + a, len, mr);
      table r = gather(right, right_idx.data() + a, len, mr);
      std::vector<column> cols = l.columns();
      for (auto& c : r.columns()) cols.push_back(c);
      out.emplace_back(std::move(cols));
    }
    return out;
  }

  /// Left rows with (semi) or without (anti) a match.
  static std::vector<table> filter_rows(const table& left, const std::vector<int64_t>& g, bool keep_matched,
                                        memory_resource* mr) {
    std::vector<int64_t> idx;
    idx.reserve(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      if ((g[i] >= 0) == keep_matched) idx.push_back(static_cast<int64_t>(i));
    if (idx.size() == g.size()) return {left};
    return {gather(left, idx, mr)};
  }

  std::vector<table> probe(const table& left, build_side& b, int64_t target, memory_resource* mr) const {
    std::vector<column> keys;
    for (size_t k : _spec.left_keys) keys.push_back(left.col(k));
    std::vector<int64_t> g = b.index->find(keys);
    bool nulls = false;
    for (auto& k : keys) nulls |= k.has_nulls();
    if (nulls) {
      std::vector<uint8_t> null_row = any_null(keys);
      for (size_t i = 0; i < g.size(); ++i)
        if (null_row[i]) g[i] = -1;
    }
    if (_spec.how == join_type::semi || _spec.how == join_type::anti)
      return filter_rows(left, g, _spec.how == join_type::semi, mr);

    bool keep_unmatched = _spec.how != join_type::inner;
    // the right rows of group x are row_at(k) for k in [begin(x), end(x)); with distinct right keys
    // group x is right row x (groups are numbered in row order) and there is no CSR
    bool distinct = b.index->num_groups() == b.right.num_rows();
    const int64_t* off = b.offsets.data();
    const int64_t* rows = b.rows.data();
    auto begin = [&](int64_t x) { return distinct ? x : off[x]; };
    auto end = [&](int64_t x) { return distinct ? x + 1 : off[x + 1]; };
    auto row_at = [&](int64_t k) { return distinct ? k : rows[k]; };
    // count pass: output size, and whether each left row appears exactly once (then no left gather)
    int64_t count = 0, most = 0;
    for (int64_t x : g) {
      int64_t c = x >= 0 ? end(x) - begin(x) : 0;
      if (c == 0 && keep_unmatched) c = 1;
      count += c;
      most = std::max(most, c);
    }
    bool identity = count == left.num_rows() && most <= 1;
    std::vector<int64_t> left_idx(identity ? 0 : static_cast<size_t>(count)), right_idx(static_cast<size_t>(count));
    size_t pos = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      int64_t x = g[i];
      if (x < 0 && !keep_unmatched) continue;
      int64_t k0 = x >= 0 ? begin(x) : 0, k1 = x >= 0 ? end(x) : 0;
      if (k0 == k1) {
        if (!identity) left_idx[pos] = static_cast<int64_t>(i);
        right_idx[pos++] = -1;
      }
      for (int64_t k = k0; k < k1; ++k) {
        if (!identity) left_idx[pos] = static_cast<int64_t>(i);
        right_idx[pos++] = row_at(k);
      }
    }
    if (!b.matched.empty()) {
      for (int64_t x : g) {
        if (x < 0) continue;
        std::atomic_ref<uint8_t> flag(b.matched[static_cast<size_t>(x)]);
        if (!flag.load(std::memory_order_relaxed)) flag.store(1, std::memory_order_relaxed);
      }
    }
    return emit(left, left_idx, b.payload, right_idx, target, mr);
  }

  /// Every pair of a left row and a right row, left-major.
  static std::vector<table> cross(const table& left, const build_side& b, int64_t target, memory_resource* mr) {
    int64_t nr = b.payload.num_rows();
    std::vector<int64_t> left_idx(static_cast<size_t>(left.num_rows() * nr)),
        right_idx(static_cast<size_t>(left.num_rows() * nr));
    size_t pos = 0;
    for (int64_t i = 0; i < left.num_rows(); ++i)
      for (int64_t j = 0; j < nr; ++j) {
        left_idx[pos] = i;
        right_idx[pos++] = j;
      }
    if (nr == 1) left_idx.clear();  // left rows in order
    return emit(left, left_idx, b.payload, right_idx, target, mr);
  }

  /// Full joins: right rows no left row matched, with nulls on the left, in right order.
  void unmatched_right(const build_side& b, int64_t target, memory_resource* mr, std::vector<table>& out) const {
    const std::vector<int64_t>& gid = b.index->group_ids();
    std::vector<int64_t> idx;
    for (size_t r = 0; r < gid.size(); ++r)
      if (!b.matched[static_cast<size_t>(gid[r])]) idx.push_back(static_cast<int64_t>(r));
    const schema& ls = children[0]->output_schema;
    auto n = static_cast<int64_t>(idx.size());
    for (int64_t a = 0; a < n; a += target) {
      int64_t len = std::min(target, n - a);
      std::vector<column> cols;
      for (auto& f : ls) cols.push_back(make_null_column(f.type, len, mr));
      for (auto& c : b.payload.columns()) cols.push_back(gather(c, idx.data() + a, len, mr));
      out.emplace_back(std::move(cols));
    }
  }
};

}  // namespace

physical_ptr make_join(backend b, physical_ptr left, physical_ptr right, join_spec spec, schema out) {
  TUG_DISPATCH_CUDA(b, make_join(std::move(left), std::move(right), std::move(spec), std::move(out)));
  TUG_EXPECTS(spec.left_keys.size() == spec.right_keys.size(), "join: key counts differ");
  TUG_EXPECTS(spec.how != join_type::right, "join: right joins must be lowered to left joins");
  TUG_EXPECTS(spec.how == join_type::cross || !spec.left_keys.empty(), "join: no keys");
  std::vector<physical_ptr> kids;
  kids.push_back(std::move(left));
  kids.push_back(std::move(right));
  return finish(std::make_unique<join_op>(std::move(spec)), b, std::move(kids), std::move(out));
}

}  // namespace tug::exec
