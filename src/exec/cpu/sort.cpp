// CPU sort and top-k. Every key is normalized once into order-preserving unsigned 64-bit words
// (descending folded in by inverting the bits), chunks of (word, row) entries are sorted in parallel on
// the pool, then merged: k-way, split into independent output segments at sampled splitters. Ties
// break on the row number, so the result is always stable and deterministic. The per-row temporaries
// (normalized keys, entries, the radix sort's scratch) come from the query's memory resource, so they
// count against memory_limit (and may make data spill) like the operators' other buffers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

#include "partitioned_gather.hpp"
#include "tug/exec/cpu/require.hpp"
#ifdef TUG_WITH_CUDA
#include "exec/cuda/ops.hpp"
#endif
#include "tug/exec/physical.hpp"
#include "tug/runtime/query_control.hpp"

namespace tug::exec {

using cpu::finish;
using cpu::one;

namespace {

constexpr uint64_t sign_bit = 1ULL << 63;
/// Rows below which splitting work into parallel chunks does not pay.
constexpr int64_t min_chunk_rows = 1 << 14;

/// Length byte of normalized strings longer than 15 bytes (they compare fully on equal words).
constexpr size_t long_string = 16;

/// A row with the normalized value of its first sort key.
struct entry {
  uint64_t k;
  int64_t row;
};

/// Order-preserving unsigned image of a value: a < b iff normalize(a) < normalize(b). Strings and
/// decimals return the high word and put a low word into `lo` (strings: see below). Floats order as
/// Polars: -0.0 == 0.0, NaN above +inf, all NaNs equal.
template <typename T>
uint64_t normalize(T v, uint64_t& lo) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    // bytes 0-7, then bytes 8-14 and the length capped at 16: strings of up to 15 bytes compare fully
    uint64_t p = 0, q = 0;
    size_t m = std::min<size_t>(15, v.size());
    for (size_t i = 0; i < std::min<size_t>(m, 8); ++i) p |= uint64_t{static_cast<unsigned char>(v[i])} << (56 - 8 * i);
    for (size_t i = 8; i < m; ++i) q |= uint64_t{static_cast<unsigned char>(v[i])} << (56 - 8 * (i - 8));
    lo = q | std::min<size_t>(v.size(), long_string);
    return p;
  } else if constexpr (std::is_same_v<T, __int128>) {
    lo = static_cast<uint64_t>(v);
    return static_cast<uint64_t>(v >> 64) ^ sign_bit;
  } else if constexpr (std::is_floating_point_v<T>) {
    double d = static_cast<double>(v);
    if (d == 0) d = 0;
    if (std::isnan(d)) return ~uint64_t{0};
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return (b & sign_bit) ? ~b : (b | sign_bit);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) ^ sign_bit;
  } else {
    return static_cast<uint64_t>(v);
  }
}

/// How a key compares beyond its normalized word.
enum class key_kind : uint8_t {
  word,    ///< the word is the whole value
  string,  ///< equal words compare the low words, then long strings compare fully
  wide,    ///< decimal128: equal high words compare the low words
};

key_kind kind_of(type_id id) {
  if (id == type_id::string) return key_kind::string;
  if (id == type_id::decimal128) return key_kind::wide;
  return key_kind::word;
}

/// Calls sink(row, valid, word, low_word) for rows [begin, end) of `v`, words inverted when descending.
/// Null rows get words 0.
template <typename Sink>
void normalize_rows(const column_view& v, bool descending, int64_t begin, int64_t end, Sink&& sink) {
  type_dispatch(v.type.id, [&]<type_id Id>() {
    using T = storage_t<Id>;
    uint64_t flip = descending ? ~uint64_t{0} : 0;
    for (int64_t i = begin; i < end; ++i) {
      if (!v.is_valid(i)) {
        sink(i, false, uint64_t{0}, uint64_t{0});
        continue;
      }
      uint64_t lo = 0;
      uint64_t k = normalize<T>(v.value<T>(i), lo) ^ flip;
      sink(i, true, k, lo ^ flip);
    }
  });
}

/// One key of a multi-key sort, normalized for all rows.
struct sort_key {
  key_kind kind = key_kind::word;
  bool descending = false;
  bool nulls_last = false;
  column_view view;               ///< strings: the full values
  buffer words, low_words, nulls;  ///< what hi, lo and null point into (the query's memory)
  uint64_t* hi = nullptr;         ///< normalized word per row
  uint64_t* lo = nullptr;         ///< string and wide keys: low word per row; else null
  uint8_t* null = nullptr;        ///< 1 for null rows; null when the key has no nulls
};

/// Orders entries of a single fixed-width key without nulls: by word, then row.
struct word_less {
  bool operator()(const entry& a, const entry& b) const { return a.k != b.k ? a.k < b.k : a.row < b.row; }
};

/// -1, 0 or 1 as row `ra` sorts before, with or after row `rb` by all keys (`ka`, `kb`: their words of key 0).
inline int compare_keys(const std::vector<sort_key>& keys, size_t ra, uint64_t ka, size_t rb, uint64_t kb) {
  for (size_t i = 0; i < keys.size(); ++i) {
    const sort_key& key = keys[i];
    if (key.null) {
      bool na = key.null[ra] != 0, nb = key.null[rb] != 0;
      if (na != nb) return na != key.nulls_last ? -1 : 1;
      if (na) continue;
    }
    uint64_t x = i == 0 ? ka : key.hi[ra], y = i == 0 ? kb : key.hi[rb];
    if (x != y) return x < y ? -1 : 1;
    if (key.kind == key_kind::word) continue;
    uint64_t xl = key.lo[ra], yl = key.lo[rb];
    if (xl != yl) return xl < yl ? -1 : 1;
    uint64_t length = (xl ^ (key.descending ? ~uint64_t{0} : 0)) & 0xff;
    if (key.kind == key_kind::string && length == long_string) {
      int c = key.view.string(static_cast<int64_t>(ra)).compare(key.view.string(static_cast<int64_t>(rb)));
      if (c != 0) return (key.descending ? c > 0 : c < 0) ? -1 : 1;
    }
  }
  return 0;
}

/// Orders entries by all keys (the entry carries key 0's word), then row.
struct multi_key_less {
  const std::vector<sort_key>* keys;
  bool operator()(const entry& a, const entry& b) const {
    const int c = compare_keys(*keys, static_cast<size_t>(a.row), a.k, static_cast<size_t>(b.row), b.k);
    return c != 0 ? c < 0 : a.row < b.row;
  }
};

/// `Less` that checks for cancellation every cancel_check_interval comparisons (counted in `*calls`,
/// shared by the copies std::sort makes): a sort of one large chunk stops soon after a cancel.
template <typename Less>
struct cancellable {
  Less less;
  int64_t* calls;
  bool operator()(const entry& a, const entry& b) const {
    check_cancelled_at(++*calls);
    return less(a, b);
  }
};

/// Stable LSD radix sort of entries by word, 11-bit digits, skipping digits that all entries share.
/// Checks for cancellation between passes and while counting.
void radix_sort(entry* a, int64_t n, memory_resource* mr) {
  constexpr int digit_bits = 11, passes = 6;
  constexpr size_t buckets = size_t{1} << digit_bits;
  constexpr uint64_t mask = buckets - 1;
  std::vector<int64_t> hist(passes * buckets, 0);
  for (int64_t i = 0; i < n; ++i) {
    check_cancelled_at(i);
    uint64_t k = a[i].k;
    for (int p = 0; p < passes; ++p) ++hist[static_cast<size_t>(p) * buckets + ((k >> (p * digit_bits)) & mask)];
  }
  buffer tmp(static_cast<size_t>(n) * sizeof(entry), mr);
  entry* src = a;
  entry* dst = tmp.as<entry>();
  for (int p = 0; p < passes; ++p) {
    int64_t* h = hist.data() + static_cast<size_t>(p) * buckets;
    if (std::find(h, h + buckets, n) != h + buckets) continue;  // one digit value: nothing moves
    check_cancelled();
    int64_t sum = 0;
    for (size_t d = 0; d < buckets; ++d) sum += std::exchange(h[d], sum);
    for (int64_t i = 0; i < n; ++i) dst[h[(src[i].k >> (p * digit_bits)) & mask]++] = src[i];
    std::swap(src, dst);
  }
  if (src != a) std::memcpy(a, src, sizeof(entry) * static_cast<size_t>(n));
}

using entry_run = std::span<const entry>;

/// Merges sorted runs, writing the rows of the first `limit` merged entries to `out`.
template <typename Less>
void kway_merge(std::vector<entry_run> runs, int64_t* out, int64_t limit, Less less) {
  std::erase_if(runs, [](const entry_run& r) { return r.empty(); });
  int64_t w = 0;
  if (runs.size() == 1) {
    for (size_t i = 0; w < limit && i < runs[0].size(); ++i) out[w++] = runs[0][i].row;
    return;
  }
  std::vector<size_t> pos(runs.size(), 0);
  std::vector<size_t> heap(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) heap[i] = i;
  auto after = [&](size_t x, size_t y) { return less(runs[y][pos[y]], runs[x][pos[x]]); };
  std::make_heap(heap.begin(), heap.end(), after);
  while (!heap.empty() && w < limit) {
    check_cancelled_at(w);
    std::pop_heap(heap.begin(), heap.end(), after);
    size_t r = heap.back();
    out[w++] = runs[r][pos[r]].row;
    if (++pos[r] < runs[r].size()) std::push_heap(heap.begin(), heap.end(), after);
    else heap.pop_back();
  }
}

/// Merges sorted runs into `out` (their rows), in parallel: sampled splitters cut every run into
/// segments that merge independently.
template <typename Less>
void parallel_merge(const std::vector<entry_run>& runs, int64_t* out, Less less, thread_pool& pool) {
  int64_t total = 0;
  for (auto& r : runs) total += static_cast<int64_t>(r.size());
  int64_t segments = std::clamp<int64_t>(total / min_chunk_rows, 1, int64_t{pool.size()} * 4);
  std::vector<entry> samples;
  int64_t per_run = segments * 8;
  for (auto& r : runs) {
    auto len = static_cast<int64_t>(r.size());
    for (int64_t i = 0; i < std::min(per_run, len); ++i)
      samples.push_back(r[static_cast<size_t>(i * len / std::min(per_run, len))]);
  }
  std::sort(samples.begin(), samples.end(), less);
  // cut[j][r]: where segment j starts in run r
  std::vector<std::vector<size_t>> cut(static_cast<size_t>(segments) + 1, std::vector<size_t>(runs.size(), 0));
  for (size_t r = 0; r < runs.size(); ++r) cut.back()[r] = runs[r].size();
  for (int64_t j = 1; j < segments; ++j) {
    const entry& s = samples[static_cast<size_t>(j) * samples.size() / static_cast<size_t>(segments)];
    for (size_t r = 0; r < runs.size(); ++r)
      cut[static_cast<size_t>(j)][r] =
          static_cast<size_t>(std::lower_bound(runs[r].begin(), runs[r].end(), s, less) - runs[r].begin());
  }
  std::vector<int64_t> start(static_cast<size_t>(segments) + 1, 0);
  for (size_t j = 0; j <= static_cast<size_t>(segments); ++j)
    for (size_t r = 0; r < runs.size(); ++r) start[j] += static_cast<int64_t>(cut[j][r]);
  pool.parallel_for(segments, [&](int64_t js) {
    auto j = static_cast<size_t>(js);
    std::vector<entry_run> parts;
    for (size_t r = 0; r < runs.size(); ++r) parts.push_back(runs[r].subspan(cut[j][r], cut[j + 1][r] - cut[j][r]));
    kway_merge(std::move(parts), out + start[j], start[j + 1] - start[j], less);
  });
}

/// Equal chunk boundaries of [0, n): at most one chunk per pool thread, none under min_chunk_rows.
std::vector<int64_t> chunk_bounds(int64_t n, thread_pool& pool) {
  int64_t chunks = std::clamp<int64_t>(n / min_chunk_rows, 1, pool.size());
  std::vector<int64_t> b(static_cast<size_t>(chunks) + 1);
  for (int64_t c = 0; c <= chunks; ++c) b[static_cast<size_t>(c)] = n * c / chunks;
  return b;
}

/// Rows of the first min(limit, n) entries of `e` in `less` order (limit < 0: all). Reorders `e`;
/// scratch from `mr`.
template <typename Less>
std::vector<int64_t> sorted_rows(entry* e, int64_t n, int64_t limit, Less less, thread_pool& pool, memory_resource* mr) {
  int64_t want = limit < 0 ? n : std::min(limit, n);
  std::vector<int64_t> rows(static_cast<size_t>(want));
  if (want == 0) return rows;
  auto bounds = chunk_bounds(n, pool);
  auto chunks = static_cast<int64_t>(bounds.size()) - 1;
  std::vector<entry_run> runs(static_cast<size_t>(chunks));
  // each chunk sorts its first `want` entries (all when not limited)
  pool.parallel_for(chunks, [&](int64_t c) {
    entry* b = e + bounds[static_cast<size_t>(c)];
    int64_t len = bounds[static_cast<size_t>(c) + 1] - bounds[static_cast<size_t>(c)];
    int64_t keep = std::min(len, want);
    int64_t calls = 0;
    const cancellable<Less> checked{less, &calls};
    if (keep < len) std::nth_element(b, b + keep, b + len, checked);
    // entries of one word key start in row order, so the stable radix sort orders them as `less`
    if constexpr (std::is_same_v<Less, word_less>) {
      if (keep == len) radix_sort(b, len, mr);
      else std::sort(b, b + keep, checked);
    } else {
      std::sort(b, b + keep, checked);
    }
    runs[static_cast<size_t>(c)] = entry_run(b, static_cast<size_t>(keep));
  });
  if (chunks == 1 || want < min_chunk_rows) {
    kway_merge(runs, rows.data(), want, less);
    return rows;
  }
  // a large limit merges all chunk prefixes in parallel, then cuts
  size_t merged = 0;
  for (auto& r : runs) merged += r.size();
  rows.resize(merged);
  parallel_merge(runs, rows.data(), less, pool);
  rows.resize(static_cast<size_t>(want));
  return rows;
}

class sort_op final : public sort_node {
 public:
  using sort_node::sort_node;

 protected:
  std::vector<table> sort_partitions(const std::vector<table>& parts, int64_t n, exec_context& ctx) override {
    // only the key columns are concatenated; the other columns are gathered once at the end
    std::vector<table> key_parts;
    for (auto& p : parts) key_parts.push_back(p.select(_keys));
    table keys = cpu::concat_partitions(key_parts, ctx);
    std::vector<int64_t> rows = _keys.size() == 1 && kind_of(keys[0].type().id) == key_kind::word
                                    ? order_one_word(keys[0].view(), ctx)
                                    : order_multi(keys, ctx);
    return cpu::gather_rows(parts, rows, ctx);
  }

 private:
  /// A single fixed-width key: (word, row) entries of the valid rows; null rows keep input order.
  std::vector<int64_t> order_one_word(const column_view& v, exec_context& ctx) const {
    thread_pool& pool = ctx.pool;
    int64_t n = v.size;
    auto bounds = chunk_bounds(n, pool);
    size_t chunks = bounds.size() - 1;
    std::vector<int64_t> valid_at(chunks + 1, 0), null_at(chunks + 1, 0);
    for (size_t c = 0; c < chunks; ++c) {
      int64_t len = bounds[c + 1] - bounds[c];
      int64_t valid = v.validity ? bits::count_set(v.validity, v.offset + bounds[c], len) : len;
      valid_at[c + 1] = valid_at[c] + valid;
      null_at[c + 1] = null_at[c] + len - valid;
    }
    auto nn = null_at[chunks], nv = valid_at[chunks];
    bool last = _nulls_last[0];
    int64_t want_valid = _limit < 0 ? -1 : last ? _limit : std::max<int64_t>(0, _limit - nn);
    std::vector<int64_t> nulls(static_cast<size_t>(nn));
    std::vector<int64_t> sorted;
    if (want_valid >= 0 && want_valid * 8 < nv) {
      // small top-k: a bounded max-heap per chunk, no entry per row
      std::vector<std::vector<entry>> heaps(chunks);
      pool.parallel_for(static_cast<int64_t>(chunks), [&](int64_t c) {
        auto ci = static_cast<size_t>(c);
        auto& h = heaps[ci];
        h.reserve(static_cast<size_t>(want_valid));
        int64_t u = null_at[ci];
        word_less less;
        normalize_rows(v, _descending[0], bounds[ci], bounds[ci + 1], [&](int64_t i, bool valid, uint64_t k, uint64_t) {
          check_cancelled_at(i);
          if (!valid) {
            nulls[static_cast<size_t>(u++)] = i;
          } else if (static_cast<int64_t>(h.size()) < want_valid) {
            h.push_back(entry{k, i});
            std::push_heap(h.begin(), h.end(), less);
          } else if (!h.empty() && less(entry{k, i}, h.front())) {
            std::pop_heap(h.begin(), h.end(), less);
            h.back() = entry{k, i};
            std::push_heap(h.begin(), h.end(), less);
          }
        });
        std::sort_heap(h.begin(), h.end(), less);
      });
      std::vector<entry_run> runs(heaps.begin(), heaps.end());
      sorted.resize(static_cast<size_t>(want_valid));
      kway_merge(std::move(runs), sorted.data(), want_valid, word_less{});
    } else {
      buffer entries(static_cast<size_t>(nv) * sizeof(entry), ctx.mr);
      entry* e = entries.as<entry>();
      pool.parallel_for(static_cast<int64_t>(chunks), [&](int64_t c) {
        auto ci = static_cast<size_t>(c);
        int64_t w = valid_at[ci], u = null_at[ci];
        normalize_rows(v, _descending[0], bounds[ci], bounds[ci + 1], [&](int64_t i, bool valid, uint64_t k, uint64_t) {
          if (valid) e[static_cast<size_t>(w++)] = entry{k, i};
          else nulls[static_cast<size_t>(u++)] = i;
        });
      });
      sorted = sorted_rows(e, nv, want_valid, word_less{}, pool, ctx.mr);
    }
    if (nn == 0) return sorted;
    std::vector<int64_t> rows;
    if (last) {
      rows = std::move(sorted);
      rows.insert(rows.end(), nulls.begin(), nulls.end());
    } else {
      rows = std::move(nulls);
      rows.insert(rows.end(), sorted.begin(), sorted.end());
    }
    if (_limit >= 0 && static_cast<int64_t>(rows.size()) > _limit) rows.resize(static_cast<size_t>(_limit));
    return rows;
  }

 protected:
  /// Where each row of `keys` falls among the sorted, distinct rows `bounds` (both: the key columns):
  /// 2j after bound j-1 and before bound j, 2j+1 equal to bound j (sort_node::locate).
  std::vector<uint32_t> locate(const table& keys, const table& bounds, exec_context& ctx) const override {
    const int64_t m = bounds.num_rows(), n = keys.num_rows();
    const table all = cpu::concat_partitions({bounds, keys}, ctx);
    const std::vector<sort_key> k = normalized_keys(all, ctx);
    const uint64_t* word = k[0].hi;
    std::vector<uint32_t> out(static_cast<size_t>(n));
    auto bounds_chunks = chunk_bounds(n, ctx.pool);
    ctx.pool.parallel_for(static_cast<int64_t>(bounds_chunks.size()) - 1, [&](int64_t c) {
      for (int64_t i = bounds_chunks[static_cast<size_t>(c)]; i < bounds_chunks[static_cast<size_t>(c) + 1]; ++i) {
        check_cancelled_at(i);
        const auto r = static_cast<size_t>(m + i);
        int64_t lo = 0, hi = m;  // the first bound not below the row
        while (lo < hi) {
          const int64_t mid = (lo + hi) / 2;
          const auto b = static_cast<size_t>(mid);
          if (compare_keys(k, b, word[b], r, word[r]) < 0) lo = mid + 1;
          else hi = mid;
        }
        const bool equal = lo < m && compare_keys(k, static_cast<size_t>(lo), word[static_cast<size_t>(lo)], r, word[r]) == 0;
        out[static_cast<size_t>(i)] = static_cast<uint32_t>(2 * lo + (equal ? 1 : 0));
      }
    });
    return out;
  }

 private:
  /// Every sort key of `all` (the key columns) normalized for all rows.
  std::vector<sort_key> normalized_keys(const table& all, exec_context& ctx) const {
    thread_pool& pool = ctx.pool;
    auto rows_n = static_cast<size_t>(all.num_rows());
    std::vector<sort_key> keys(_keys.size());
    for (size_t i = 0; i < _keys.size(); ++i) {
      const column& c = all[i];
      sort_key& k = keys[i];
      k.kind = kind_of(c.type().id);
      k.descending = _descending[i];
      k.nulls_last = _nulls_last[i];
      k.view = c.view();
      k.words = buffer(rows_n * sizeof(uint64_t), ctx.mr);
      k.hi = k.words.as<uint64_t>();
      if (k.kind != key_kind::word) {
        k.low_words = buffer(rows_n * sizeof(uint64_t), ctx.mr);
        k.lo = k.low_words.as<uint64_t>();
      }
      if (c.has_nulls()) {
        k.nulls = buffer(rows_n, ctx.mr);
        k.null = k.nulls.as<uint8_t>();
        std::memset(k.null, 0, rows_n);
      }
    }
    auto bounds = chunk_bounds(all.num_rows(), pool);
    pool.parallel_for(static_cast<int64_t>(bounds.size()) - 1, [&](int64_t c) {
      auto ci = static_cast<size_t>(c);
      for (sort_key& k : keys) {
        normalize_rows(k.view, k.descending, bounds[ci], bounds[ci + 1],
                       [&](int64_t i, bool valid, uint64_t hi, uint64_t lo) {
                         auto r = static_cast<size_t>(i);
                         k.hi[r] = hi;
                         if (k.lo) k.lo[r] = lo;
                         if (!valid) k.null[r] = 1;
                       });
      }
    });
    return keys;
  }

  /// Several keys, or a string/decimal key: per-key normalized words and a comparator over them.
  /// `all` holds the key columns.
  std::vector<int64_t> order_multi(const table& all, exec_context& ctx) const {
    thread_pool& pool = ctx.pool;
    const int64_t n = all.num_rows();
    const std::vector<sort_key> keys = normalized_keys(all, ctx);
    buffer entries(static_cast<size_t>(n) * sizeof(entry), ctx.mr);
    entry* e = entries.as<entry>();
    auto bounds = chunk_bounds(n, pool);
    pool.parallel_for(static_cast<int64_t>(bounds.size()) - 1, [&](int64_t c) {
      for (int64_t i = bounds[static_cast<size_t>(c)]; i < bounds[static_cast<size_t>(c) + 1]; ++i)
        e[static_cast<size_t>(i)] = entry{keys[0].hi[static_cast<size_t>(i)], i};
    });
    return sorted_rows(e, n, _limit, multi_key_less{&keys}, pool, ctx.mr);
  }
};

}  // namespace

physical_ptr make_sort(backend b, physical_ptr child, std::vector<size_t> keys, std::vector<bool> descending,
                       std::vector<bool> nulls_last, bool stable, int64_t limit) {
  TUG_DISPATCH_CUDA(b, make_sort(std::move(child), std::move(keys), std::move(descending), std::move(nulls_last), stable, limit));
  schema s = child->output_schema;
  return finish(std::make_unique<sort_op>(std::move(keys), std::move(descending), std::move(nulls_last), stable, limit),
                b, one(std::move(child)), std::move(s));
}

}  // namespace tug::exec
