// `over` windows on the CPU: per spec, rows of all partitions are grouped by the key columns, each
// group is aggregated, and the group's value is broadcast back to its rows. The output keeps the
// input partitions and row order, with one column appended per spec. With one key set, an input
// past a quarter of memory_limit (or force_external) runs in hash buckets of the keys (over_buckets).
#include <functional>
#include <map>
#include <optional>

#include "agg_kernels.hpp"
#include "exec/buckets.hpp"
#include "partitioned_gather.hpp"
#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif

namespace tug::exec {

using cpu::finish;
using cpu::one;

namespace {

class window_op final : public window_node {
 public:
  explicit window_op(std::vector<window_spec> specs) : window_node(std::move(specs)) {
    // specs with the same keys share one grouping
    for (auto& s : _specs) {
      size_t k = 0;
      while (k < _key_sets.size() && _key_sets[k] != s.keys) ++k;
      if (k == _key_sets.size()) _key_sets.push_back(s.keys);
      _key_set_of.push_back(k);
    }
  }
  std::string name() const override { return "window"; }
  std::string detail() const override {
    std::string s;
    for (auto& w : _specs) s += (s.empty() ? "" : ", ") + cpu::describe(w.agg) + " over " + cpu::describe_columns(w.keys);
    return s;
  }
  /// The consumers' work runs on each output partition (out of core: as each is put back in order).
  bool accepts_fused() const override { return true; }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    partition_hook after = std::move(fused);
    fused = nullptr;
    std::vector<table> out;
    // one non-empty key set: an input that may not fit goes out of core (over_buckets)
    if (_key_sets.size() == 1 && !_key_sets[0].empty()) {
      held_partitions in = input_held(0, ctx, spill_priority::buffered);
      if (in.size() == 0) return {};
      if (const size_t count = external_buckets(ctx, in.bytes() + in.rows() * index_scratch_per_row))
        return over_buckets(in, count, after, ctx);
      out = over(in.take(), ctx);
    } else {
      auto parts = input(0, ctx);
      if (parts.empty()) return parts;
      out = over(std::move(parts), ctx);
    }
    apply_after(ctx, after, out, 0);
    return out;
  }

 private:
  /// The window out of core: each row gets its position in the input as an extra last column, the
  /// rows are split into hash buckets by the keys (every row of a group in one bucket, in input order
  /// there, as first/last need) and the window runs on one bucket at a time. Its output goes into
  /// buckets of consecutive positions, each put back in input order (a scatter by position) and
  /// emitted in order without the position column, through the consumers' work `after`.
  std::vector<table> over_buckets(held_partitions& in, size_t count, const partition_hook& after, exec_context& ctx) {
    const size_t ncols = children[0]->output_schema.size();
    std::vector<table> plain;
    std::vector<spillable_ptr> spillable;
    int64_t n = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      table t = in.take(i);
      fixed_width_builder<int64_t> pos(type_id::int64, t.num_rows(), ctx.mr);
      for (int64_t r = 0; r < t.num_rows(); ++r) pos.set(r, n + r);
      n += t.num_rows();
      std::vector<column> cols = t.columns();
      t = table();
      cols.push_back(pos.finish());
      table tagged(std::move(cols));
      if (ctx.memory)
        spillable.push_back(ctx.memory->make_spillable(std::move(tagged), spill_priority::buffered));
      else
        plain.push_back(std::move(tagged));
    }
    held_partitions tagged = ctx.memory ? held_partitions(std::move(spillable))
                                        : held_partitions(ctx, std::move(plain), spill_priority::buffered);
    std::vector<size_t> without_pos(ncols);
    for (size_t c = 0; c < ncols; ++c) without_pos[c] = c;
    if (n == 0) {
      std::vector<table> parts = tagged.take();
      for (auto& t : parts) t = t.select(without_pos);
      std::vector<table> out = over(std::move(parts), ctx);
      apply_after(ctx, after, out, 0);
      return out;
    }
    const int64_t tagged_bytes = tagged.bytes();
    hash_buckets hb(ctx, {_key_sets[0]}, count);
    hb.add(0, tagged);
    // a range is put back whole (its pieces, then a copy in order, then the consumers' work): about
    // half a bucket of the output, which is wider than the input by the position and the windows
    const auto widen = static_cast<int64_t>((ncols + 1 + _specs.size() + ncols) / (ncols + 1));
    const auto wanted = static_cast<int64_t>(std::max<size_t>(count, external_buckets(ctx, tagged_bytes * widen)));
    const int64_t ranges = std::max<int64_t>(1, std::min<int64_t>(n, 2 * wanted));
    const int64_t per = (n + ranges - 1) / ranges;
    bucket_store back(ctx, 1, static_cast<size_t>(ranges));
    size_t piece = 0;
    auto put_back = [&](const table& t) {
      const int64_t* p = t[ncols].values<int64_t>();
      std::vector<uint32_t> range(static_cast<size_t>(t.num_rows()));
      for (int64_t r = 0; r < t.num_rows(); ++r) range[static_cast<size_t>(r)] = static_cast<uint32_t>(p[r] / per);
      back.add(0, piece++, t, range.data());
    };
    for_each_bucket(hb, [&](hash_buckets& h, size_t b, bool fits) {
      if (h.rows(0, b) == 0) return;
      // a bucket of one group too large to split runs a piece at a time where its aggregations merge
      // from partial states, else whole all the same (as an aggregate's)
      const std::string sizes = fits ? std::string() : bucket_sizes(h, b, {"input"});
      try {
        if (!fits && over_one_group(h, b, put_back, sizes, ctx)) return;
        for (auto& t : over(h.take(0, b), ctx)) put_back(t);
      } catch (const memory_error& e) {
        if (fits) throw;
        throw unsplittable_bucket(name(), children[0]->output_schema, _key_sets[0], sizes, "does not fit", e);
      }
    });
    std::vector<size_t> kept = without_pos;  // the input's columns, then the windows'
    for (size_t s = 0; s < _specs.size(); ++s) kept.push_back(ncols + 1 + s);
    std::vector<table> out;
    for (int64_t r = 0; r < ranges; ++r) {
      std::vector<table> pieces = back.take(0, static_cast<size_t>(r));
      if (pieces.empty()) continue;
      table all = pieces.size() == 1 ? std::move(pieces[0]) : cpu::concat_partitions(pieces, ctx);
      pieces.clear();
      const int64_t* p = all[ncols].values<int64_t>();
      std::vector<int64_t> order(static_cast<size_t>(all.num_rows()));
      for (int64_t i = 0; i < all.num_rows(); ++i) order[static_cast<size_t>(p[i] - r * per)] = i;
      table t = gather(all.select(kept), order.data(), all.num_rows(), ctx.mr);
      all = table();
      const size_t index = out.size();
      out.push_back(after ? after(std::move(t), index) : std::move(t));
    }
    return out;
  }

  /// The window over bucket `b` of `h`, whose rows all have one hash, a piece at a time, when every
  /// spec's aggregation merges from partial states (else false, and the bucket is left as it is): each
  /// piece is brought back alone for its partial states, which merge into one value per spec; then each
  /// piece again, with the values appended, goes to `emit`. A piece whose keys are not all the first
  /// row's (two key values of one hash) raises the unsplittable bucket's memory_error (`sizes`).
  bool over_one_group(hash_buckets& h, size_t b, const std::function<void(const table&)>& emit,
                      const std::string& sizes, exec_context& ctx) {
    for (auto& w : _specs)
      if (!cpu::is_decomposable(w.agg.op)) return false;
    if (!h.one_hash(b)) return false;
    const std::vector<size_t>& keys = _key_sets[0];
    std::vector<spillable_ptr> pieces = h.pieces(0, b);
    std::vector<std::vector<std::vector<column>>> states(_specs.size());  // per spec, per piece
    std::vector<column> first_key;                                        // the bucket's first row's
    for (auto& piece : pieces) {
      check_cancelled();
      spillable_table::pin pin = piece->acquire();
      const table& t = pin.get();
      std::vector<column> with_first;
      for (size_t i = 0; i < keys.size(); ++i) {
        if (first_key.size() < keys.size()) first_key.push_back(t[keys[i]].slice(0, 1));
        with_first.push_back(concatenate({first_key[i], t[keys[i]]}, ctx.mr));
      }
      if (cpu::group_rows(with_first, nullptr).num_groups() != 1)
        throw memory_error("operator " + name() + ": a hash bucket of key column(s) " +
                           cpu::describe_columns(keys) + " (" + sizes +
                           ") holds two key values of one hash, cannot be split and does not fit");
      with_first.clear();
      for (size_t s = 0; s < _specs.size(); ++s) {
        const agg_spec& a = _specs[s].agg;
        const column* input = a.input < 0 ? nullptr : &t[static_cast<size_t>(a.input)];
        states[s].push_back(cpu::partial_states(a, input, {nullptr, t.num_rows(), 1}, ctx.mr));
      }
    }
    std::vector<column> values(_specs.size());
    const auto n = static_cast<int64_t>(pieces.size());
    for (size_t s = 0; s < _specs.size(); ++s) {
      std::vector<column> merged;
      for (size_t j = 0; j < states[s][0].size(); ++j) {
        std::vector<column> of_pieces;
        for (auto& st : states[s]) of_pieces.push_back(st[j]);
        merged.push_back(concatenate(of_pieces, ctx.mr));
      }
      values[s] = cpu::merge_states(_specs[s].agg, merged, {nullptr, n, 1}, ctx.mr);
    }
    states.clear();
    for (auto& piece : pieces) {
      check_cancelled();
      table t = piece->take();
      piece.reset();
      const int64_t rows = t.num_rows();
      std::vector<column> cols = t.columns();
      t = table();
      for (auto& v : values) cols.push_back(repeat_row(v, 0, rows, ctx.mr));
      emit(table(std::move(cols)));
    }
    return true;
  }

  /// The window over `parts` (at least one partition), all in memory: the input's partitions and rows
  /// with one column appended per spec.
  std::vector<table> over(std::vector<table> parts, exec_context& ctx) {
    const schema& in = children[0]->output_schema;
    int64_t rows = total_rows(parts);
    // group ids per key set (none for a window without keys: one group); keys are grouped
    // partition by partition, without concatenating them
    std::vector<std::optional<cpu::row_groups>> groupings(_key_sets.size());
    for (size_t i = 0; i < _key_sets.size(); ++i) {
      if (_key_sets[i].empty()) continue;
      std::vector<std::vector<column>> chunks;
      for (auto& p : parts) {
        chunks.emplace_back();
        for (size_t k : _key_sets[i]) chunks.back().push_back(p[k]);
      }
      groupings[i] = chunks.size() == 1 ? cpu::group_rows(chunks[0], &ctx.pool) : cpu::group_chunks(chunks, ctx.pool);
    }
    auto groups_of = [&](size_t spec) {
      const auto& g = groupings[_key_set_of[spec]];
      return g ? g->num_groups() : int64_t{1};
    };
    std::vector<int64_t> start(parts.size() + 1, 0);
    for (size_t p = 0; p < parts.size(); ++p) start[p + 1] = start[p] + parts[p].num_rows();
    // decomposable aggregations over few groups: partial states per partition (in parallel, no
    // concatenated input), merged; the others aggregate the concatenated input
    auto num_parts = static_cast<int64_t>(parts.size());
    // (not first/last: a partition's state of a group absent from it would be a null value)
    std::vector<uint8_t> by_part(_specs.size());
    for (size_t s = 0; s < _specs.size(); ++s) {
      agg_op op = _specs[s].agg.op;
      by_part[s] = num_parts > 1 && rows > 0 && cpu::is_decomposable(op) && op != agg_op::first &&
                   op != agg_op::last && groups_of(s) * num_parts * 4 <= rows;
    }
    std::map<size_t, column> all;
    for (size_t s = 0; s < _specs.size(); ++s)
      if (!by_part[s] && _specs[s].agg.input >= 0) all[static_cast<size_t>(_specs[s].agg.input)];
    std::vector<size_t> used;
    for (auto& [c, _] : all) used.push_back(c);
    std::vector<column> cols(used.size());
    ctx.pool.parallel_for(static_cast<int64_t>(used.size()), [&](int64_t i) {
      auto u = static_cast<size_t>(i);
      cols[u] = cpu::concat_columns(parts, in, {used[u]}, ctx.mr)[0];
    });
    for (size_t i = 0; i < used.size(); ++i) all[used[i]] = cols[i];
    // group map of rows [from, from + n) for a spec
    auto map_of = [&](size_t spec, int64_t from, int64_t n) {
      const auto& g = groupings[_key_set_of[spec]];
      return cpu::group_map{g ? g->ids.data() + from : nullptr, n, groups_of(spec)};
    };
    // one value per group and spec
    std::vector<column> per_group(_specs.size());
    ctx.pool.parallel_for(static_cast<int64_t>(_specs.size()), [&](int64_t i) {
      auto s = static_cast<size_t>(i);
      if (by_part[s]) return;
      const agg_spec& a = _specs[s].agg;
      const column* input = a.input < 0 ? nullptr : &all[static_cast<size_t>(a.input)];
      per_group[s] = cpu::aggregate_groups(a, input, map_of(s, 0, rows), ctx.mr);
    });
    for (size_t s = 0; s < _specs.size(); ++s) {
      if (!by_part[s]) continue;
      const agg_spec& a = _specs[s].agg;
      std::vector<std::vector<column>> states(parts.size());
      ctx.pool.parallel_for(num_parts, [&](int64_t p) {
        auto q = static_cast<size_t>(p);
        const column* input = a.input < 0 ? nullptr : &parts[q][static_cast<size_t>(a.input)];
        states[q] = cpu::partial_states(a, input, map_of(s, start[q], parts[q].num_rows()), ctx.mr);
      });
      std::vector<column> merged;
      for (size_t j = 0; j < states[0].size(); ++j) {
        std::vector<column> pieces;
        for (auto& st : states) pieces.push_back(st[j]);
        merged.push_back(concatenate(pieces, ctx.mr));
      }
      // state row p * groups + g belongs to group g
      int64_t groups = groups_of(s);
      std::vector<int64_t> ids(static_cast<size_t>(groups * num_parts));
      for (size_t r = 0; r < ids.size(); ++r) ids[r] = static_cast<int64_t>(r) % groups;
      per_group[s] = cpu::merge_states(a, merged, {ids.data(), groups * num_parts, groups}, ctx.mr);
    }
    // broadcast to the rows of every partition
    return map_partitions(ctx, parts, [&](const table& t) {
      size_t p = static_cast<size_t>(&t - parts.data());  // map_partitions passes elements of `parts`
      std::vector<column> out = t.columns();
      for (size_t s = 0; s < _specs.size(); ++s) {
        const auto& g = groupings[_key_set_of[s]];
        if (g) out.push_back(gather(per_group[s], g->ids.data() + start[p], t.num_rows(), ctx.mr));
        else out.push_back(repeat_row(per_group[s], 0, t.num_rows(), ctx.mr));
      }
      return table(std::move(out));
    });
  }

  std::vector<std::vector<size_t>> _key_sets;
  std::vector<size_t> _key_set_of;
};

}  // namespace

physical_ptr make_window(backend b, physical_ptr child, std::vector<window_spec> specs, schema out) {
  TUG_DISPATCH_CUDA(b, make_window(std::move(child), std::move(specs), std::move(out)));
  for (auto& s : specs) cpu::check_agg_spec(s.agg);
  return finish(std::make_unique<window_op>(std::move(specs)), b, one(std::move(child)), std::move(out));
}

}  // namespace tug::exec
