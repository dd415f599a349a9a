// Hash join of the CPU backend. Builds a key index over one side and probes the other in parallel,
// in morsels. The right side is the build side, except for inner, left, semi and anti joins whose
// left side has fewer rows: those build over the left rows and probe the right ones, and the output
// is put back in the order of the right-build join (left rows in order, each with its matches in
// right order), so the choice never shows.
#include <algorithm>
#include <atomic>
#include <optional>

#include "exec/pieces.hpp"
#include "partitioned_gather.hpp"
#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif
#include "tug/exec/key_index.hpp"
#include "tug/memory/scratch.hpp"
#include "tug/exec/physical.hpp"

namespace tug::exec {

using cpu::finish;

namespace {

/// Columns `cols` of every partition, concatenated (in parallel) into one table.
table concat_columns(const std::vector<table>& parts, const std::vector<size_t>& cols, exec_context& ctx) {
  std::vector<table> selected;
  selected.reserve(parts.size());
  for (auto& p : parts) selected.push_back(p.select(cols));
  return cpu::concat_partitions(selected, ctx);
}

/// The indexed side: its rows grouped by key (CSR: the rows of group g are rows[offsets[g] ..
/// offsets[g+1]), in row order). Rows with null keys form groups of their own that no probe
/// reaches, since probe rows with null keys are never looked up.
struct build_side {
  std::optional<key_index> index;
  std::vector<int64_t> offsets;
  std::vector<int64_t> rows;
  bool distinct = true;          ///< distinct keys: group g is row g and there is no CSR
  std::vector<uint8_t> matched;  ///< per group, whether a probe row matched it (when tracked)
  scratch_reservation charge;    ///< offsets, rows and matched, counted against the query's memory

  build_side(std::vector<column> keys, bool track_matches) {
    index.emplace(std::move(keys));
    const std::vector<int64_t>& gid = index->group_ids();
    auto groups = static_cast<size_t>(index->num_groups());
    const int64_t csr = groups == gid.size() ? 0 : static_cast<int64_t>((groups + 1 + gid.size()) * sizeof(int64_t));
    charge.resize(csr + (track_matches ? static_cast<int64_t>(groups) : 0), "join build side");
    if (track_matches) matched.assign(groups, 0);
    distinct = groups == gid.size();
    if (distinct) return;
    offsets.assign(groups + 1, 0);
    for (int64_t g : gid) ++offsets[static_cast<size_t>(g) + 1];
    for (size_t g = 0; g < groups; ++g) offsets[g + 1] += offsets[g];
    rows.resize(gid.size());
    std::vector<int64_t> fill(offsets.begin(), offsets.end() - 1);
    for (size_t r = 0; r < gid.size(); ++r)
      rows[static_cast<size_t>(fill[static_cast<size_t>(gid[r])]++)] = static_cast<int64_t>(r);
  }
  int64_t begin(int64_t g) const { return distinct ? g : offsets[static_cast<size_t>(g)]; }
  int64_t end(int64_t g) const { return distinct ? g + 1 : offsets[static_cast<size_t>(g) + 1]; }
  int64_t row_at(int64_t k) const { return distinct ? k : rows[static_cast<size_t>(k)]; }

  /// Calls f(g, offset, len) for consecutive chunks of the rows of `t`, g[i] being the group of row
  /// offset + i keyed by columns `keys` (-1 where absent or a key is null). Chunks are small so the
  /// scratch memory is reused rather than allocated per probe row.
  template <typename F>
  void probe_chunks(const table& t, const std::vector<size_t>& keys, F&& f) const {
    constexpr int64_t chunk = 16384;
    std::vector<int64_t> g(static_cast<size_t>(std::min(chunk, t.num_rows())));
    std::vector<column> cols(keys.size());
    for (int64_t off = 0; off < t.num_rows(); off += chunk) {
      int64_t len = std::min(chunk, t.num_rows() - off);
      bool nulls = false;
      for (size_t k = 0; k < keys.size(); ++k) {
        cols[k] = t.col(keys[k]).slice(off, len);
        nulls |= cols[k].has_nulls();
      }
      index->find(cols, g.data());
      if (nulls) {
        std::vector<uint8_t> null_row = any_null(cols);
        for (int64_t i = 0; i < len; ++i)
          if (null_row[static_cast<size_t>(i)]) g[static_cast<size_t>(i)] = -1;
      }
      f(static_cast<const int64_t*>(g.data()), off, len);
    }
  }
  /// Marks the groups of `g[0, n)` as matched (probes run in parallel).
  void mark(const int64_t* g, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      if (g[i] < 0) continue;
      std::atomic_ref<uint8_t> flag(matched[static_cast<size_t>(g[i])]);
      if (!flag.load(std::memory_order_relaxed)) flag.store(1, std::memory_order_relaxed);
    }
  }
};

/// A contiguous range of rows of one partition, probed by one task.
struct morsel {
  size_t part;
  int64_t offset, length;
};

class join_op final : public join_node, public piece_producer {
 public:
  using join_node::join_node;

 protected:
  std::vector<table> join_partitions(std::vector<table> left, std::vector<table> right, exec_context& ctx) override {
    int64_t nl = total_rows(left), nr = total_rows(right);
    bool swappable = _spec.how == join_type::inner || _spec.how == join_type::left ||
                     _spec.how == join_type::semi || _spec.how == join_type::anti;
    std::vector<table> result = swappable && nl > 0 && nl < nr ? run_left_build(left, right, ctx)
                                                                : run_right_build(left, right, ctx);
    if (result.empty()) result.push_back(empty_table(output_schema));
    return result;
  }

  /// Under a memory_limit. Without one the whole-input form is faster on many threads: a streamed probe
  /// gives one output partition per input partition (its morsels' outputs concatenated), so a scan of a
  /// few large row groups leaves the operators above with few partitions to run in parallel (PDS-H SF10
  /// on 16 threads: Q2 1.5x, Q7 1.3x slower streamed).
  bool streams_probe(const exec_context& ctx) const override { return ctx.options.memory_limit > 0; }

  void start_probe(std::vector<table> right_parts, exec_context& ctx) override {
    _probe.emplace(index_right(right_parts, ctx));
  }

  /// One left partition probed, in morsels on the pool; its output rows in one table, gathered once
  /// from the morsels' row indices (no output is copied twice).
  table process_partition(const table& left, exec_context& ctx) override {
    build_state& s = *_probe;
    const int64_t tgt = target_rows(ctx);
    if (_spec.how != join_type::cross) {
      probe_rows all = probe_partition(left, ctx);
      const auto n = static_cast<int64_t>(all.left_idx.size());
      std::vector<table> out = emit_rows(left, s.lcols, all, s.payload, std::max<int64_t>(1, n), ctx.mr);
      return out.empty() ? empty_table(output_schema) : std::move(out[0]);
    }
    std::vector<morsel> tasks = split({left}, ctx, tgt, s.cross_rows);
    std::vector<std::vector<table>> outs(tasks.size());
    ctx.pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t t) {
      const morsel& m = tasks[static_cast<size_t>(t)];
      outs[static_cast<size_t>(t)] = probe_morsel(left.slice(m.offset, m.length), s, tgt, ctx.mr);
    });
    std::vector<table> parts;
    for (auto& o : outs)
      for (auto& p : o)
        if (p.num_rows() > 0) parts.push_back(std::move(p));
    if (parts.empty()) return empty_table(output_schema);
    return parts.size() == 1 ? std::move(parts[0]) : cpu::concat_partitions(parts, ctx);
  }

  /// The same in pieces of at most piece_rows() rows, each gathered when the one before has gone on:
  /// a partition whose output is much wider than itself (a large table probing one with long strings)
  /// never exists whole. Cross joins give one piece.
  void process_pieces(const table& left, size_t index, exec_context& ctx,
                      const std::function<void(table, bool)>& emit) override {
    if (_spec.how == join_type::cross) return emit(process_indexed(left, index, ctx), true);
    build_state& s = *_probe;
    probe_rows all = probe_partition(left, ctx);
    const auto n = static_cast<int64_t>(all.left_idx.size());
    table kept = left.select(s.lcols);
    if (n == left.num_rows() && all.most <= 1) all.left_idx.clear();  // every left row once, in order
    const int64_t step = piece_rows(kept, s.payload, n, ctx);
    if (n == 0) return emit(empty_table(output_schema), true);
    for (int64_t a = 0; a < n; a += step) {
      const int64_t len = std::min(step, n - a);
      table l = all.left_idx.empty() ? kept.slice(a, len)
                                     : filtering() ? gather_in_range(kept, all.left_idx.data() + a, len, ctx.mr)
                                                   : gather(kept, all.left_idx.data() + a, len, ctx.mr);
      emit(filtering() ? std::move(l) : join_columns(l, gather(s.payload, all.right_idx.data() + a, len, ctx.mr)),
           a + len >= n);
    }
  }

  std::vector<table> finish_probe(exec_context& ctx) override {
    std::vector<table> out;
    if (_spec.how == join_type::full) unmatched_right(*_probe->b, _probe->payload, target_rows(ctx), ctx.mr, out);
    _probe.reset();
    return out;
  }

 private:
  /// The right side ready to be probed: its payload columns and, but for cross joins, its keys indexed.
  struct build_state {
    table payload;
    std::optional<build_side> b;
    int64_t cross_rows = 0;  ///< cross joins: the right rows each left row pairs with
    std::vector<size_t> lcols;
  };
  std::optional<build_state> _probe;  ///< while streaming (start_probe .. finish_probe)

  /// Concatenates and indexes the right partitions (they are released).
  build_state index_right(std::vector<table>& right_parts, exec_context& ctx) const {
    // the key columns, then the payload columns, of all right partitions
    size_t nk = _spec.how == join_type::cross ? 0 : _spec.right_keys.size();
    std::vector<size_t> needed = build_columns();
    table right = right_parts.empty() ? empty_table(children[1]->output_schema).select(needed)
                                      : concat_columns(right_parts, needed, ctx);
    right_parts.clear();
    std::vector<size_t> payload_cols(_spec.right_columns.size());
    for (size_t i = 0; i < payload_cols.size(); ++i) payload_cols[i] = nk + i;
    build_state s;
    s.payload = right.select(payload_cols);
    if (_spec.how != join_type::cross) {
      std::vector<column> keys(right.columns().begin(), right.columns().begin() + static_cast<std::ptrdiff_t>(nk));
      s.b.emplace(std::move(keys), _spec.how == join_type::full);
    }
    s.cross_rows = _spec.how == join_type::cross ? right.num_rows() : 0;
    s.lcols = left_columns();
    return s;
  }

  /// The output of one morsel of left rows.
  std::vector<table> probe_morsel(const table& slice, build_state& s, int64_t tgt, memory_resource* mr) const {
    return _spec.how == join_type::cross ? cross(slice.select(s.lcols), s.payload, tgt, mr)
                                         : probe(slice, s.lcols, *s.b, s.payload, tgt, mr);
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
      out.push_back(join_columns(l, gather(right, right_idx.data() + a, len, mr)));
    }
    return out;
  }

  /// Rows per task that keep every thread busy when `total` rows are split: at most `target`.
  static int64_t morsel_rows(int64_t total, exec_context& ctx, int64_t target) {
    int64_t per_thread = (total + 4 * ctx.pool.size() - 1) / (4 * ctx.pool.size());
    return std::min(target, std::max<int64_t>(int64_t{1} << 14, per_thread));
  }

  /// Partitions cut into morsels small enough to keep every thread busy; with `cross_rows`, about
  /// `target` output rows per morsel.
  static std::vector<morsel> split(const std::vector<table>& parts, exec_context& ctx, int64_t target,
                                   int64_t cross_rows) {
    int64_t size = morsel_rows(total_rows(parts), ctx, target);
    std::vector<morsel> out;
    for (size_t p = 0; p < parts.size(); ++p) {
      int64_t n = parts[p].num_rows();
      int64_t step = size;
      if (cross_rows > 0) step = std::max<int64_t>(1, std::min(step, target / cross_rows));
      for (int64_t off = 0; off < n; off += step) out.push_back({p, off, std::min(step, n - off)});
    }
    return out;
  }

  /// The right side indexed (or only concatenated, for cross joins); the left partitions probe it.
  std::vector<table> run_right_build(const std::vector<table>& left, std::vector<table>& right_parts,
                                     exec_context& ctx) {
    build_state s = index_right(right_parts, ctx);
    int64_t tgt = target_rows(ctx);
    std::vector<morsel> tasks = split(left, ctx, tgt, s.cross_rows);
    std::vector<std::vector<table>> outs(tasks.size());
    ctx.pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t t) {
      const morsel& m = tasks[static_cast<size_t>(t)];
      outs[static_cast<size_t>(t)] = probe_morsel(left[m.part].slice(m.offset, m.length), s, tgt, ctx.mr);
    });

    std::vector<table> result;
    for (auto& o : outs)
      for (auto& p : o)
        if (p.num_rows() > 0) result.push_back(std::move(p));
    if (_spec.how == join_type::full) unmatched_right(*s.b, s.payload, tgt, ctx.mr, result);
    return result;
  }

  /// The output rows of probing `b` with the rows of `left`: left row left_idx[i] with right row
  /// right_idx[i] (-1: nulls); semi/anti joins give the kept left rows only. `most`: the most output
  /// rows of one left row.
  struct probe_rows {
    std::vector<int64_t> left_idx, right_idx;
    int64_t most = 0;
    scratch_reservation charge;  ///< a whole partition's pairs, counted against the query's memory
  };
  probe_rows probe_indices(const table& left, build_side& b) const {
    bool keep_matched = _spec.how == join_type::semi;
    bool keep_unmatched = _spec.how != join_type::inner;
    probe_rows r;
    b.probe_chunks(left, _spec.left_keys, [&](const int64_t* g, int64_t off, int64_t len) {
      if (filtering()) {  // semi/anti: left rows with (semi) or without (anti) a match
        for (int64_t i = 0; i < len; ++i)
          if ((g[i] >= 0) == keep_matched) r.left_idx.push_back(off + i);
        return;
      }
      for (int64_t i = 0; i < len; ++i) {
        int64_t x = g[i];
        if (x < 0 && !keep_unmatched) continue;
        int64_t k0 = x >= 0 ? b.begin(x) : 0, k1 = x >= 0 ? b.end(x) : 0;
        r.most = std::max(r.most, std::max<int64_t>(1, k1 - k0));
        if (k0 == k1) {
          r.left_idx.push_back(off + i);
          r.right_idx.push_back(-1);
        }
        for (int64_t k = k0; k < k1; ++k) {
          r.left_idx.push_back(off + i);
          r.right_idx.push_back(b.row_at(k));
        }
      }
      if (!b.matched.empty()) b.mark(g, len);
    });
    return r;
  }

  /// The output rows of probing the build side with one left partition, found in morsels on the pool.
  probe_rows probe_partition(const table& left, exec_context& ctx) {
    std::vector<morsel> tasks = split({left}, ctx, target_rows(ctx), 0);
    std::vector<probe_rows> found(tasks.size());
    ctx.pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t t) {
      const morsel& m = tasks[static_cast<size_t>(t)];
      probe_rows& r = found[static_cast<size_t>(t)];
      r = probe_indices(left.slice(m.offset, m.length), *_probe->b);
      for (int64_t& i : r.left_idx) i += m.offset;
    });
    probe_rows all;
    size_t n = 0;
    for (auto& r : found) n += r.left_idx.size();
    all.charge.resize(static_cast<int64_t>(n * (filtering() ? 1 : 2) * sizeof(int64_t)), "join probe rows");
    all.left_idx.reserve(n);
    if (!filtering()) all.right_idx.reserve(n);
    for (auto& r : found) {
      all.left_idx.insert(all.left_idx.end(), r.left_idx.begin(), r.left_idx.end());
      all.right_idx.insert(all.right_idx.end(), r.right_idx.begin(), r.right_idx.end());
      all.most = std::max(all.most, r.most);
      r = probe_rows{};
    }
    return all;
  }

  /// Output rows per piece of a streamed probe: at most target_partition_rows, and, under a
  /// memory_limit or a target_partition_size, about a sixteenth of the limit (or the target size) in
  /// bytes, estimated from the kept left columns' and the payload's bytes per row.
  int64_t piece_rows(const table& kept, const table& payload, int64_t n, const exec_context& ctx) const {
    int64_t rows = std::max<int64_t>(1, std::min(n, target_rows(ctx)));
    int64_t bytes = ctx.options.target_partition_size;
    if (ctx.options.memory_limit > 0)
      bytes = bytes > 0 ? std::min(bytes, ctx.options.memory_limit / 16) : ctx.options.memory_limit / 16;
    if (bytes <= 0) return rows;
    auto per_row = [](const table& t) { return t.num_rows() > 0 ? t.memory_usage() / t.num_rows() : 0; };
    const int64_t row_bytes = std::max<int64_t>(1, per_row(kept) + (filtering() ? 0 : per_row(payload)));
    return std::clamp<int64_t>(bytes / row_bytes, 1, rows);
  }

  /// The output of `r` over `left` (its columns `lcols` kept), in tables of at most `target` rows.
  std::vector<table> emit_rows(const table& left, const std::vector<size_t>& lcols, probe_rows& r, const table& payload,
                               int64_t target, memory_resource* mr) const {
    table kept = left.select(lcols);
    if (filtering()) {
      if (static_cast<int64_t>(r.left_idx.size()) == left.num_rows()) return {kept};
      return {gather_in_range(kept, r.left_idx.data(), static_cast<int64_t>(r.left_idx.size()), mr)};
    }
    // each left row exactly once, in order: no left gather
    if (static_cast<int64_t>(r.left_idx.size()) == left.num_rows() && r.most <= 1) r.left_idx.clear();
    return emit(kept, r.left_idx, payload, r.right_idx, target, mr);
  }

  /// The output rows of probing `b` with the rows of `left` (its columns `lcols` kept).
  std::vector<table> probe(const table& left, const std::vector<size_t>& lcols, build_side& b, const table& payload,
                           int64_t target, memory_resource* mr) const {
    probe_rows r = probe_indices(left, b);
    return emit_rows(left, lcols, r, payload, target, mr);
  }

  /// Every pair of a left row and a right row, left-major.
  static std::vector<table> cross(const table& left, const table& payload, int64_t target, memory_resource* mr) {
    int64_t nr = payload.num_rows();
    std::vector<int64_t> left_idx(static_cast<size_t>(left.num_rows() * nr)),
        right_idx(static_cast<size_t>(left.num_rows() * nr));
    size_t pos = 0;
    for (int64_t i = 0; i < left.num_rows(); ++i)
      for (int64_t j = 0; j < nr; ++j) {
        left_idx[pos] = i;
        right_idx[pos++] = j;
      }
    if (nr == 1) left_idx.clear();  // left rows in order
    return emit(left, left_idx, payload, right_idx, target, mr);
  }

  /// Full joins: right rows no left row matched, with nulls on the left, in right order.
  void unmatched_right(const build_side& b, const table& payload, int64_t target, memory_resource* mr,
                       std::vector<table>& out) const {
    const std::vector<int64_t>& gid = b.index->group_ids();
    std::vector<int64_t> idx;
    for (size_t r = 0; r < gid.size(); ++r)
      if (!b.matched[static_cast<size_t>(gid[r])]) idx.push_back(static_cast<int64_t>(r));
    const schema& ls = children[0]->output_schema;
    auto n = static_cast<int64_t>(idx.size());
    for (int64_t a = 0; a < n; a += target) {
      int64_t len = std::min(target, n - a);
      std::vector<column> cols;
      for (size_t c : left_columns())
        cols.push_back(make_null_column(ls[c].type, len, mr));
      for (auto& c : payload.columns()) cols.push_back(gather(c, idx.data() + a, len, mr));
      out.push_back(cols.empty() ? table::empty_with_rows(len) : table(std::move(cols)));
    }
  }

  /// Inner, left, semi and anti joins with the smaller left side indexed and the right side probing.
  std::vector<table> run_left_build(const std::vector<table>& left, const std::vector<table>& right,
                                    exec_context& ctx) {
    table lkeys = concat_columns(left, _spec.left_keys, ctx);
    build_side b(lkeys.columns(), filtering());
    std::vector<morsel> tasks = split(right, ctx, target_rows(ctx), 0);
    if (filtering()) {
      ctx.pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t t) {
        const morsel& m = tasks[static_cast<size_t>(t)];
        b.probe_chunks(right[m.part].slice(m.offset, m.length), _spec.right_keys,
                       [&](const int64_t* g, int64_t, int64_t len) { b.mark(g, len); });
      });
      return filter_left(left, b, ctx);
    }
    return pair_left_build(left, right, tasks, b, ctx);
  }

  /// Semi/anti joins over an indexed left side: the left rows whose group was (not) matched.
  std::vector<table> filter_left(const std::vector<table>& left, const build_side& b, exec_context& ctx) const {
    bool keep_matched = _spec.how == join_type::semi;
    const std::vector<int64_t>& gid = b.index->group_ids();
    std::vector<int64_t> base(left.size() + 1, 0);
    for (size_t p = 0; p < left.size(); ++p) base[p + 1] = base[p] + left[p].num_rows();
    std::vector<table> out(left.size());
    std::vector<size_t> lcols = left_columns();
    ctx.pool.parallel_for(static_cast<int64_t>(left.size()), [&](int64_t pi) {
      auto p = static_cast<size_t>(pi);
      std::vector<int64_t> idx;
      for (int64_t i = 0, n = left[p].num_rows(); i < n; ++i)
        if ((b.matched[static_cast<size_t>(gid[static_cast<size_t>(base[p] + i)])] != 0) == keep_matched)
          idx.push_back(i);
      table kept = left[p].select(lcols);
      out[p] = static_cast<int64_t>(idx.size()) == left[p].num_rows()
                   ? kept
                   : gather_in_range(kept, idx.data(), static_cast<int64_t>(idx.size()), ctx.mr);
    });
    std::vector<table> result;
    for (auto& t : out)
      if (t.num_rows() > 0) result.push_back(std::move(t));
    return result;
  }

  /// Inner/left joins over an indexed left side. Each right morsel lists its (left row, matched
  /// right row) pairs and gathers its matched right rows; a counting sort by left row then puts
  /// the pairs in left order (each left row's matches stay in right order).
  std::vector<table> pair_left_build(const std::vector<table>& left, const std::vector<table>& right,
                                     const std::vector<morsel>& tasks, const build_side& b, exec_context& ctx) const {
    struct matches {
      std::vector<int64_t> left_row, picked_at;  ///< per pair: left row, index into `picked`
      table picked;                              ///< the matched right rows' payload columns
    };
    std::vector<matches> found(tasks.size());
    ctx.pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t t) {
      const morsel& m = tasks[static_cast<size_t>(t)];
      table slice = right[m.part].slice(m.offset, m.length);
      matches& f = found[static_cast<size_t>(t)];
      std::vector<int64_t> rows;
      b.probe_chunks(slice, _spec.right_keys, [&](const int64_t* g, int64_t off, int64_t len) {
        for (int64_t i = 0; i < len; ++i) {
          int64_t x = g[i];
          if (x < 0) continue;
          auto at = static_cast<int64_t>(rows.size());
          rows.push_back(off + i);
          for (int64_t k = b.begin(x), k1 = b.end(x); k < k1; ++k) {
            f.left_row.push_back(b.row_at(k));
            f.picked_at.push_back(at);
          }
        }
      });
      f.picked =
          gather_in_range(slice.select(_spec.right_columns), rows.data(), static_cast<int64_t>(rows.size()), ctx.mr);
    });

    // counting sort by left row; left joins give unmatched left rows one pair with no right row
    int64_t nl = total_rows(left);
    bool keep_unmatched = _spec.how == join_type::left;
    std::vector<int64_t> start(static_cast<size_t>(nl) + 1, 0);
    for (auto& f : found)
      for (int64_t l : f.left_row) ++start[static_cast<size_t>(l) + 1];
    bool identity = true;  // every left row exactly once: no left gather
    for (size_t l = 1; l <= static_cast<size_t>(nl); ++l) {
      int64_t c = start[l];
      if (c == 0 && keep_unmatched) c = 1;
      identity = identity && c == 1;
      start[l] = start[l - 1] + c;
    }
    auto count = static_cast<size_t>(start[static_cast<size_t>(nl)]);
    std::vector<int64_t> right_idx(count, -1), next(start.begin(), start.end() - 1);
    int64_t picked_base = 0;
    std::vector<table> picked;
    for (auto& f : found) {
      for (size_t i = 0; i < f.left_row.size(); ++i)
        right_idx[static_cast<size_t>(next[static_cast<size_t>(f.left_row[i])]++)] = picked_base + f.picked_at[i];
      picked_base += f.picked.num_rows();
      if (f.picked.num_rows() > 0) picked.push_back(std::move(f.picked));
      f = matches{};
    }
    table payload = picked.empty() ? empty_table(children[1]->output_schema).select(_spec.right_columns)
                                   : cpu::concat_partitions(picked, ctx);
    std::vector<int64_t> left_idx;
    if (!identity) {
      left_idx.resize(count);
      for (size_t l = 0; l < static_cast<size_t>(nl); ++l)
        std::fill(left_idx.begin() + start[l], left_idx.begin() + start[l + 1], static_cast<int64_t>(l));
    }
    table lall = concat_columns(left, left_columns(), ctx);
    int64_t tgt = morsel_rows(static_cast<int64_t>(count), ctx, target_rows(ctx));  // output partitions in parallel
    auto chunks = static_cast<int64_t>((count + static_cast<size_t>(tgt) - 1) / static_cast<size_t>(tgt));
    std::vector<table> out(static_cast<size_t>(chunks));
    ctx.pool.parallel_for(chunks, [&](int64_t c) {
      int64_t a = c * tgt, len = std::min<int64_t>(tgt, static_cast<int64_t>(count) - a);
      table l = identity ? lall.slice(a, len) : gather_in_range(lall, left_idx.data() + a, len, ctx.mr);
      out[static_cast<size_t>(c)] = join_columns(l, gather(payload, right_idx.data() + a, len, ctx.mr));
    });
    return out;
  }
};

}  // namespace

physical_ptr make_join(backend b, physical_ptr left, physical_ptr right, join_spec spec, schema out) {
  TUG_DISPATCH_CUDA(b, make_join(std::move(left), std::move(right), std::move(spec), std::move(out)));
  std::vector<physical_ptr> kids;
  kids.push_back(std::move(left));
  kids.push_back(std::move(right));
  return finish(std::make_unique<join_op>(std::move(spec)), b, std::move(kids), std::move(out));
}

}  // namespace tug::exec
