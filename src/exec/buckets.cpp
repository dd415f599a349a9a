#include "buckets.hpp"

#include <algorithm>

#include "tug/exec/key_index.hpp"

namespace tug::exec {

size_t external_buckets(const exec_context& ctx, int64_t bytes) {
  if (!ctx.memory) return 0;  // nothing could spill
  const int64_t limit = ctx.options.memory_limit;
  const bool over = limit > 0 && bytes > limit / 4;
  if (!over && !ctx.options.force_external) return 0;
  int64_t n = 0;
  if (limit > 0) {
    const int64_t per_bucket = std::max<int64_t>(1, limit / 8);
    n = (bytes + per_bucket - 1) / per_bucket;
  }
  if (ctx.options.force_external) n = std::max<int64_t>(n, 4);
  return static_cast<size_t>(std::clamp<int64_t>(n, 2, 4096));
}

hash_buckets::hash_buckets(exec_context& ctx, size_t count) : _ctx(ctx), _pieces(count) {
  TUG_EXPECTS(count > 0, "hash_buckets needs at least one bucket");
}

void hash_buckets::add(held_partitions& in, const std::vector<size_t>& keys) {
  TUG_EXPECTS(!keys.empty(), "hash_buckets needs key columns");
  const auto n = static_cast<uint64_t>(_pieces.size());
  _ctx.pool.parallel_for(static_cast<int64_t>(in.size()), [&](int64_t pi) {
    const auto part = static_cast<size_t>(pi);
    table t = in.take(part);
    if (t.num_rows() == 0) return;
    std::vector<column> cols;
    for (size_t k : keys) cols.push_back(t.col(k));
    // the hash's high bits pick the bucket: the key index's slots come from its own multiplicative hash
    const std::vector<uint64_t> h = hash_rows(cols);
    cols.clear();
    std::vector<uint32_t> bucket(h.size());
    std::vector<int64_t> start(n + 1, 0);
    for (size_t r = 0; r < h.size(); ++r) {
      bucket[r] = static_cast<uint32_t>(((h[r] >> 32) * n) >> 32);
      ++start[bucket[r] + 1];
    }
    for (uint64_t b = 0; b < n; ++b) start[b + 1] += start[b];
    std::vector<int64_t> rows(h.size());
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (size_t r = 0; r < h.size(); ++r) rows[static_cast<size_t>(fill[bucket[r]]++)] = static_cast<int64_t>(r);
    for (uint64_t b = 0; b < n; ++b) {
      const int64_t len = start[b + 1] - start[b];
      if (len == 0) continue;
      table piece = len == t.num_rows() ? t : gather(t, rows.data() + start[b], len, _ctx.mr);
      spillable_ptr s = _ctx.memory->make_spillable(std::move(piece), spill_priority::cold);
      std::lock_guard<std::mutex> g(_mu);
      _pieces[b].emplace_back(part, std::move(s));
    }
  });
}

std::vector<table> hash_buckets::take(size_t b) {
  std::vector<std::pair<size_t, spillable_ptr>> pieces;
  {
    std::lock_guard<std::mutex> g(_mu);
    pieces = std::move(_pieces.at(b));
    _pieces[b].clear();
  }
  std::sort(pieces.begin(), pieces.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
  std::vector<table> out;
  out.reserve(pieces.size());
  for (auto& p : pieces) out.push_back(p.second->take());
  return out;
}

}  // namespace tug::exec
