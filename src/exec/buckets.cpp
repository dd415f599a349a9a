#include "buckets.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include "tug/exec/key_index.hpp"
#include "tug/runtime/query_control.hpp"

namespace tug::exec {

namespace {
/// The power of two of buckets, in [2, 4096], that gives `bytes` about an eighth of the limit each.
size_t buckets_for(int64_t bytes, int64_t limit) {
  int64_t n = 2;
  if (limit > 0) {
    const int64_t per_bucket = std::max<int64_t>(1, limit / 8);
    n = (bytes + per_bucket - 1) / per_bucket;
  }
  return std::bit_ceil(static_cast<size_t>(std::clamp<int64_t>(n, 2, 4096)));
}
}  // namespace

size_t external_buckets(const exec_context& ctx, int64_t bytes) {
  if (!ctx.memory) return 0;  // nothing could spill
  const int64_t limit = ctx.options.memory_limit;
  if (bucket_fits(ctx, bytes) && !ctx.options.force_external) return 0;
  size_t n = buckets_for(bytes, limit);
  if (ctx.options.force_external) n = std::max<size_t>(n, 4);
  return n;
}

bool bucket_fits(const exec_context& ctx, int64_t bytes) {
  const int64_t limit = ctx.options.memory_limit;
  return limit <= 0 || bytes <= limit / 4;
}

bucket_store::bucket_store(exec_context& ctx, size_t sides, size_t count)
    : _ctx(ctx), _count(count), _pieces(sides, std::vector<std::vector<std::pair<size_t, spillable_ptr>>>(count)) {
  TUG_EXPECTS(count > 0 && sides > 0, "bucket_store needs at least one bucket and one side");
}

void bucket_store::add(size_t side, size_t part, const table& t, const uint32_t* bucket) {
  const int64_t n = t.num_rows();
  if (n == 0) return;
  std::vector<int64_t> start(_count + 1, 0);
  for (int64_t r = 0; r < n; ++r) ++start[bucket[r] + 1];
  for (size_t b = 0; b < _count; ++b) start[b + 1] += start[b];
  // the row numbers of each bucket, from the query's budget (8 bytes a row)
  buffer order(static_cast<size_t>(n) * sizeof(int64_t), _ctx.mr);
  auto* rows = order.as<int64_t>();
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t r = 0; r < n; ++r) rows[fill[bucket[r]]++] = r;
  for (size_t b = 0; b < _count; ++b) {
    const int64_t len = start[b + 1] - start[b];
    if (len == 0) continue;
    table piece = len == n ? t : gather(t, rows + start[b], len, _ctx.mr);
    spillable_ptr s = _ctx.memory->make_spillable(std::move(piece), spill_priority::cold);
    std::lock_guard<std::mutex> g(_mu);
    _pieces.at(side)[b].emplace_back(part, std::move(s));
  }
}

int64_t bucket_store::sum(size_t side, size_t b, int64_t (spillable_table::*f)() const) const {
  std::lock_guard<std::mutex> g(_mu);
  int64_t n = 0;
  for (auto& p : _pieces.at(side).at(b)) n += ((*p.second).*f)();
  return n;
}

int64_t bucket_store::rows(size_t side, size_t b) const { return sum(side, b, &spillable_table::num_rows); }

int64_t bucket_store::bytes(size_t side, size_t b) const { return sum(side, b, &spillable_table::bytes); }

int64_t bucket_store::bytes(size_t b) const {
  int64_t n = 0;
  for (size_t s = 0; s < _pieces.size(); ++s) n += bytes(s, b);
  return n;
}

std::vector<spillable_ptr> bucket_store::pieces(size_t side, size_t b) {
  std::vector<std::pair<size_t, spillable_ptr>> pieces;
  {
    std::lock_guard<std::mutex> g(_mu);
    pieces = std::move(_pieces.at(side).at(b));
    _pieces[side][b].clear();
  }
  std::sort(pieces.begin(), pieces.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
  std::vector<spillable_ptr> out;
  out.reserve(pieces.size());
  for (auto& p : pieces) out.push_back(std::move(p.second));
  return out;
}

std::vector<table> bucket_store::take(size_t side, size_t b) {
  std::vector<table> out;
  for (auto& p : pieces(side, b)) out.push_back(p->take());
  return out;
}

hash_buckets::hash_buckets(exec_context& ctx, std::vector<std::vector<size_t>> keys, size_t count, int shift)
    : bucket_store(ctx, keys.size(), count),
      _keys(std::move(keys)),
      _shift(shift),
      _bits(std::countr_zero(count)),
      _lo(count, std::numeric_limits<uint64_t>::max()),
      _hi(count, 0) {
  TUG_EXPECTS(count >= 2 && std::has_single_bit(count), "hash_buckets needs a power of two of buckets");
  TUG_EXPECTS(shift >= 0 && shift + _bits <= 64, "hash_buckets: more hash bits than the hash has");
  for (auto& k : _keys) TUG_EXPECTS(!k.empty(), "hash_buckets needs key columns");
}

void hash_buckets::add_table(size_t side, size_t part, const table& t) {
  if (t.num_rows() == 0) return;
  std::vector<column> cols;
  for (size_t k : _keys.at(side)) cols.push_back(t.col(k));
  // bits of the hash below those already used pick the bucket: the key index's slots come from its
  // own multiplicative hash. The hashes and bucket numbers (12 bytes a row) come from the query's budget.
  const auto n = static_cast<size_t>(t.num_rows());
  buffer hashes(n * sizeof(uint64_t), _ctx.mr), buckets(n * sizeof(uint32_t), _ctx.mr);
  uint64_t* h = hashes.as<uint64_t>();
  auto* bucket = buckets.as<uint32_t>();
  hash_rows(cols, h);
  cols.clear();
  std::vector<uint64_t> lo(count(), std::numeric_limits<uint64_t>::max()), hi(count(), 0);
  for (size_t r = 0; r < n; ++r) {
    const auto b = static_cast<uint32_t>((h[r] << _shift) >> (64 - _bits));
    bucket[r] = b;
    lo[b] = std::min(lo[b], h[r]);
    hi[b] = std::max(hi[b], h[r]);
  }
  {
    std::lock_guard<std::mutex> g(_range_mu);
    for (size_t b = 0; b < count(); ++b) {
      _lo[b] = std::min(_lo[b], lo[b]);
      _hi[b] = std::max(_hi[b], hi[b]);
    }
  }
  hashes = buffer();
  bucket_store::add(side, part, t, bucket);
}

void hash_buckets::add(size_t side, held_partitions& in) {
  // a partition being split takes about three times its size at once (itself brought back, its hashes,
  // bucket numbers and row numbers, its pieces until they are held): under a memory limit, at most as
  // many at once as fit half of it (two at a time on 2 threads, with a sink's buffers beside them,
  // failed now and then under 16 MiB)
  const auto n = static_cast<int64_t>(in.size());
  int64_t at_once = n;
  if (const int64_t limit = _ctx.options.memory_limit; limit > 0 && n > 0)
    at_once = std::clamp<int64_t>(limit / 2 / std::max<int64_t>(1, 3 * in.bytes() / n), 1, n);
  for (int64_t first = 0; first < n; first += at_once)
    _ctx.pool.parallel_for(std::min(at_once, n - first), [&](int64_t k) {
      const auto part = static_cast<size_t>(first + k);
      add_table(side, part, in.take(part));
    });
}

bool hash_buckets::one_hash(size_t b) const {
  std::lock_guard<std::mutex> g(_range_mu);
  return _lo.at(b) == _hi.at(b);
}

int64_t hash_buckets::need(size_t b) const {
  int64_t n = bytes(b);
  for (size_t side = 0; side < _keys.size(); ++side) n += rows(side, b) * index_scratch_per_row;
  return n;
}

std::unique_ptr<hash_buckets> hash_buckets::split(size_t b) {
  const int64_t size = need(b);
  if (bucket_fits(_ctx, size) || one_hash(b)) return nullptr;
  const int left = 64 - _shift - _bits;
  if (left <= 0) return nullptr;
  const int bits = std::min(left, std::countr_zero(buckets_for(size, _ctx.options.memory_limit)));
  auto sub = std::make_unique<hash_buckets>(_ctx, _keys, size_t{1} << bits, _shift + _bits);
  for (size_t side = 0; side < _keys.size(); ++side) {
    // each piece of the bucket comes back alone and is split; its sub-pieces keep its partition number
    std::vector<std::pair<size_t, spillable_ptr>> got;
    {
      std::vector<spillable_ptr> p = pieces(side, b);
      for (size_t i = 0; i < p.size(); ++i) got.emplace_back(i, std::move(p[i]));
    }
    _ctx.pool.parallel_for(static_cast<int64_t>(got.size()), [&](int64_t i) {
      auto& [part, piece] = got[static_cast<size_t>(i)];
      table t = piece->take();
      piece.reset();
      sub->add_table(side, part, t);
    });
  }
  return sub;
}

void for_each_bucket(hash_buckets& hb, const std::function<void(hash_buckets&, size_t, bool)>& f) {
  for (size_t b = 0; b < hb.count(); ++b) {
    check_cancelled();
    if (std::unique_ptr<hash_buckets> sub = hb.split(b)) {
      for_each_bucket(*sub, f);
      continue;
    }
    f(hb, b, bucket_fits(hb.context(), hb.need(b)));
  }
}

std::string bucket_sizes(const bucket_store& s, size_t b, const std::vector<std::string>& sides) {
  std::string out;
  for (size_t i = 0; i < sides.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s.rows(i, b)) + " " + sides[i] + " rows (" + human_bytes(s.bytes(i, b)) + ")";
  return out;
}

std::vector<table> range_sort::run(held_partitions& in, size_t count) {
  std::vector<table> out;
  _emitted = 0;
  if (limit < 0) {
    split(in, count, 0, out);
    return out;
  }
  // top-k: only each partition's first `limit` rows (the kernel's heap) can be in the output; they are
  // held again, and sorted whole when they fit (else in ranges, as is everything under force_external)
  std::vector<spillable_ptr> kept(in.size());
  ctx.pool.parallel_for(static_cast<int64_t>(in.size()), [&](int64_t pi) {
    table t = in.take(static_cast<size_t>(pi));
    if (t.num_rows() > limit) {
      std::vector<table> first = sort({t}, t.num_rows());
      t = first.size() == 1 ? std::move(first[0]) : concatenate(first, ctx.mr);
    }
    kept[static_cast<size_t>(pi)] = ctx.memory->make_spillable(std::move(t), spill_priority::buffered);
  });
  held_partitions top(std::move(kept));
  if (const size_t ranges = external_buckets(ctx, top.bytes() + top.rows() * sort_scratch_per_row(keys.size()))) {
    split(top, ranges, 0, out);
    return out;
  }
  std::vector<table> parts = top.take();
  const int64_t n = total_rows(parts);
  if (n > 0) emit(sort(parts, n), out);
  if (out.empty()) {
    out.push_back(parts.at(0).slice(0, 0));
    if (after) out[0] = after(std::move(out[0]), 0);
  }
  return out;
}

void range_sort::emit(std::vector<table> sorted, std::vector<table>& out) {
  const size_t first = out.size();
  for (auto& t : sorted) {
    if (limit >= 0 && _emitted >= limit) break;
    const int64_t n = limit < 0 ? t.num_rows() : std::min(t.num_rows(), limit - _emitted);
    if (n == 0) continue;
    _emitted += n;
    out.push_back(n == t.num_rows() ? std::move(t) : t.slice(0, n));
  }
  if (!after) return;
  ctx.pool.parallel_for(static_cast<int64_t>(out.size() - first), [&](int64_t i) {
    const size_t k = first + static_cast<size_t>(i);
    out[k] = after(std::move(out[k]), k);
  });
}

void range_sort::split(held_partitions& in, size_t count, int depth, std::vector<table>& out) {
  // samples: evenly spaced rows of every partition, about 64 per range in all
  const size_t np = in.size();
  const int64_t per_part = std::max<int64_t>(1, static_cast<int64_t>((count * 64 + np - 1) / std::max<size_t>(np, 1)));
  std::vector<table> samples(np);
  ctx.pool.parallel_for(static_cast<int64_t>(np), [&](int64_t pi) {
    const table t = in.get(static_cast<size_t>(pi));
    const int64_t rows = t.num_rows(), m = std::min(rows, per_part);
    if (m == 0) return;
    std::vector<int64_t> idx(static_cast<size_t>(m));
    for (int64_t j = 0; j < m; ++j) idx[static_cast<size_t>(j)] = j * rows / m;
    samples[static_cast<size_t>(pi)] = gather(t, idx, ctx.mr);
  });
  std::erase_if(samples, [](const table& t) { return t.num_rows() == 0; });
  if (samples.empty()) {  // no rows: the output is one empty partition
    if (depth == 0 && np > 0) {
      out.push_back(in.take(0).slice(0, 0));
      if (after) out[0] = after(std::move(out[0]), 0);
    }
    return;
  }
  int64_t ns = 0;
  for (auto& t : samples) ns += t.num_rows();
  table sorted = concatenate(sort(samples, ns), ctx.mr).select(keys);
  samples.clear();
  // boundaries: the samples at count - 1 quantiles, each value once
  const int64_t s = sorted.num_rows();
  std::vector<int64_t> at;
  for (size_t q = 1; q < count; ++q) {
    const auto i = static_cast<int64_t>(q) * s / static_cast<int64_t>(count);
    if (at.empty() || at.back() != i) at.push_back(i);
  }
  table candidates = gather(sorted, at, ctx.mr);
  const std::vector<uint32_t> self = locate(candidates, candidates);
  std::vector<int64_t> distinct;
  for (size_t i = 0; i < self.size(); ++i)
    if (self[i] == 2 * i + 1) distinct.push_back(static_cast<int64_t>(i));
  const table bounds = gather(candidates, distinct, ctx.mr);
  const size_t ranges = 2 * distinct.size() + 1;
  bucket_store store(ctx, 1, ranges);
  ctx.pool.parallel_for(static_cast<int64_t>(np), [&](int64_t pi) {
    const table t = in.take(static_cast<size_t>(pi));
    const int64_t rows = t.num_rows();
    if (rows == 0) return;
    // a large partition is located a slice at a time: the kernel's temporaries (sort_scratch_per_row,
    // with the slice's keys concatenated to the boundaries) stay within a sixteenth of the limit
    const table k = t.select(keys);
    int64_t slice = rows;
    if (ctx.options.memory_limit > 0) {
      const int64_t per_row = k.memory_usage() / rows + sort_scratch_per_row(keys.size());
      slice = std::clamp<int64_t>(ctx.options.memory_limit / 16 / std::max<int64_t>(1, per_row), 1024, rows);
    }
    std::vector<uint32_t> r;
    r.reserve(static_cast<size_t>(rows));
    for (int64_t at = 0; at < rows; at += slice) {
      const std::vector<uint32_t> part = locate(k.slice(at, std::min(slice, rows - at)), bounds);
      r.insert(r.end(), part.begin(), part.end());
    }
    store.add(0, static_cast<size_t>(pi), t, r.data());
  });
  for (size_t r = 0; r < ranges; ++r) {
    check_cancelled();
    if (limit >= 0 && _emitted >= limit) return;
    const int64_t n = store.rows(0, r);
    if (n == 0) continue;
    if (r % 2 == 1) {
      // rows equal to a boundary: in input order, a piece at a time
      for (auto& piece : store.pieces(0, r)) {
        table t = piece->take();
        piece.reset();
        emit({std::move(t)}, out);
      }
      continue;
    }
    const int64_t bytes = store.bytes(0, r) + n * sort_scratch_per_row(keys.size());
    if (!bucket_fits(ctx, bytes) && depth < 8) {
      held_partitions sub(store.pieces(0, r));
      split(sub, buckets_for(bytes, ctx.options.memory_limit), depth + 1, out);
      continue;
    }
    emit(sort(store.take(0, r), n), out);
  }
}

memory_error unsplittable_bucket(const std::string& op, const schema& in, const std::vector<size_t>& keys,
                                 const std::string& sizes, const std::string& what, const memory_error& cause) {
  std::string names;
  for (size_t k : keys) names += (names.empty() ? "" : ", ") + in[k].name;
  return memory_error("operator " + op + ": a hash bucket of one value of key column(s) [" + names + "] (" + sizes +
                      ") cannot be split further and " + what + ": " + cause.what());
}

}  // namespace tug::exec
