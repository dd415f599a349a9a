// Hash join of the CUDA backend, mirroring the CPU operator (src/exec/cpu/join.cpp): the right (build)
// partitions are concatenated and indexed by an open-addressing hash table of key groups; each left
// (probe) partition counts its matches per row, scans the counts and fills (left row, right row) pairs,
// which gather the output. Pairs come out left-major with the right rows of a key in right order, and
// a full join's unmatched right rows follow in right order, as on the CPU. Null keys never match.
#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <optional>

#include "exec/cuda/common.cuh"
#include "exec/cuda/hashing.cuh"
#include "exec/cuda/ops.hpp"
#include "exec/cuda/table_ops.hpp"
#include "exec/pieces.hpp"
#include "tug/exec/cpu/require.hpp"
#include "tug/memory/device.hpp"

namespace tug::cuda {

namespace {

/// How a key column's values are hashed and compared on the device.
enum key_kind : int { k_w1, k_w2, k_w4, k_w8, k_w16, k_f32, k_f64, k_str };

/// A key column on the device.
struct dkey {
  dcol col;
  int kind;
};

/// The key kind of `t`; -1 for types the CUDA join does not handle.
int kind_of(const data_type& t) {
  switch (t.id) {
    case type_id::float32:
      return k_f32;
    case type_id::float64:
      return k_f64;
    case type_id::string:
      return k_str;
    case type_id::boolean:
    case type_id::int8:
    case type_id::uint8:
      return k_w1;
    case type_id::int16:
    case type_id::uint16:
      return k_w2;
    case type_id::int32:
    case type_id::uint32:
    case type_id::date32:
      return k_w4;
    case type_id::int64:
    case type_id::uint64:
    case type_id::timestamp:
    case type_id::duration:
      return k_w8;
    case type_id::decimal128:
      return k_w16;
  }
  return -1;
}

__device__ inline uint64_t combine(uint64_t h, uint64_t v) {
  return (h ^ mix(v)) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
}

/// One 64-bit word of a fixed-width key (the low word for 16-byte keys).
__device__ inline uint64_t key_word(const dkey& k, int64_t i) {
  switch (k.kind) {
    case k_w1:
      return k.col.value<uint8_t>(i);
    case k_w2:
      return k.col.value<uint16_t>(i);
    case k_w4:
      return k.col.value<uint32_t>(i);
    case k_w8:
      return k.col.value<uint64_t>(i);
    case k_w16:
      return static_cast<const uint64_t*>(k.col.data)[2 * (k.col.offset + i)];
    case k_f32:
      return float_bits(static_cast<double>(k.col.value<float>(i)));
    case k_f64:
      return float_bits(k.col.value<double>(i));
  }
  return 0;
}

__device__ inline uint64_t high_word(const dkey& k, int64_t i) {
  return static_cast<const uint64_t*>(k.col.data)[2 * (k.col.offset + i) + 1];
}

__device__ uint64_t hash_row(const dkey* keys, int nk, int64_t i) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (int c = 0; c < nk; ++c) {
    const dkey& k = keys[c];
    if (k.kind == k_str) {
      dstring s = k.col.str(i);
      uint64_t f = 0xcbf29ce484222325ULL;
      for (int64_t b = 0; b < s.n; ++b)
        f = (f ^ static_cast<uint8_t>(s.p[b])) * 0x100000001b3ULL;
      h = combine(h, f ^ static_cast<uint64_t>(s.n));
    } else {
      h = combine(h, key_word(k, i));
      if (k.kind == k_w16) h = combine(h, high_word(k, i));
    }
  }
  return h;
}

/// Whether row `i` of keys `a` equals row `j` of keys `b` (neither null).
__device__ bool rows_equal(const dkey* a, int64_t i, const dkey* b, int64_t j, int nk) {
  for (int c = 0; c < nk; ++c) {
    if (a[c].kind == k_str) {
      dstring x = a[c].col.str(i), y = b[c].col.str(j);
      if (x.n != y.n) return false;
      for (int64_t t = 0; t < x.n; ++t)
        if (x.p[t] != y.p[t]) return false;
    } else {
      if (key_word(a[c], i) != key_word(b[c], j)) return false;
      if (a[c].kind == k_w16 && high_word(a[c], i) != high_word(b[c], j)) return false;
    }
  }
  return true;
}

constexpr unsigned long long empty_slot = ~0ULL;

__global__ void hash_kernel(const dkey* keys, int nk, int64_t n, uint64_t* hash, uint8_t* has_null) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    bool null = false;
    for (int c = 0; c < nk; ++c)
      null = null || !keys[c].col.valid(i);
    has_null[i] = null;
    hash[i] = null ? 0 : hash_row(keys, nk, i);
  }
}

/// Inserts every build row with non-null keys: the first row of a key claims a slot; `slot_of[r]` is
/// the slot of row r's key (`cap` for null keys) and `counts[s]` the number of rows with the key of s.
__global__ void insert_kernel(const dkey* keys, int nk, int64_t n, const uint64_t* hash, const uint8_t* has_null,
                              unsigned long long* slots, uint64_t mask, uint64_t* slot_of, unsigned long long* counts) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < n; r += stride) {
    if (has_null[r]) {
      slot_of[r] = mask + 1;
      continue;
    }
    uint64_t h = hash[r];
    uint64_t s = h & mask;
    while (true) {
      unsigned long long prev = atomicCAS(slots + s, empty_slot, static_cast<unsigned long long>(r));
      if (prev == empty_slot || (hash[prev] == h && rows_equal(keys, static_cast<int64_t>(prev), keys, r, nk))) {
        slot_of[r] = s;
        atomicAdd(counts + s, 1ULL);
        break;
      }
      s = (s + 1) & mask;
    }
  }
}

__global__ void iota_kernel(int64_t n, int64_t* out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = i;
}

/// What a probe keeps of each left row.
enum probe_mode : int { m_inner, m_outer, m_semi, m_anti };

/// Looks up each probe row: `slot[i]` is its key's slot or -1, `cnt[i]` its number of output rows.
__global__ void probe_kernel(const dkey* pk, const dkey* bk, int nk, int64_t n, const uint64_t* phash,
                             const uint8_t* pnull, const unsigned long long* slots, uint64_t mask,
                             const uint64_t* bhash, const unsigned long long* counts, int mode, int64_t* slot,
                             int64_t* cnt) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t found = -1;
    if (!pnull[i]) {
      uint64_t h = phash[i];
      uint64_t s = h & mask;
      while (true) {
        unsigned long long r = slots[s];
        if (r == empty_slot) break;
        if (bhash[r] == h && rows_equal(pk, i, bk, static_cast<int64_t>(r), nk)) {
          found = static_cast<int64_t>(s);
          break;
        }
        s = (s + 1) & mask;
      }
    }
    slot[i] = found;
    int64_t c = found >= 0 ? static_cast<int64_t>(counts[found]) : 0;
    if (mode == m_outer && c == 0) c = 1;
    if (mode == m_semi) c = found >= 0;
    if (mode == m_anti) c = found < 0;
    cnt[i] = c;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) cnt[n] = 0;
}

/// Writes the output pairs of each probe row at `pos[i]`; marks matched slots (full joins).
__global__ void fill_kernel(int64_t n, const int64_t* slot, const int64_t* pos, const unsigned long long* counts,
                            const int64_t* offsets, const int64_t* rows, int mode, int64_t* left_idx,
                            int64_t* right_idx, uint8_t* matched) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t p = pos[i];
    if (mode == m_semi || mode == m_anti) {
      if (pos[i + 1] > p) left_idx[p] = i;
      continue;
    }
    int64_t x = slot[i];
    if (x >= 0) {
      auto c = static_cast<int64_t>(counts[x]);
      const int64_t* g = rows + offsets[x];
      for (int64_t k = 0; k < c; ++k) {
        left_idx[p + k] = i;
        right_idx[p + k] = g[k];
      }
      if (matched) matched[x] = 1;
    } else if (mode == m_outer) {
      left_idx[p] = i;
      right_idx[p] = -1;
    }
  }
}

/// Pairs [a, a + len) of a cross join with `nr` right rows, left-major.
__global__ void cross_kernel(int64_t a, int64_t len, int64_t nr, int64_t* left_idx, int64_t* right_idx) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < len; i += stride) {
    left_idx[i] = (a + i) / nr;
    right_idx[i] = (a + i) % nr;
  }
}

/// 1 for build rows no probe row matched (null keys included).
__global__ void unmatched_kernel(int64_t n, const uint64_t* slot_of, uint64_t cap, const uint8_t* matched,
                                 int64_t* flag) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < n; r += stride)
    flag[r] = slot_of[r] == cap || !matched[slot_of[r]];
  if (blockIdx.x == 0 && threadIdx.x == 0) flag[n] = 0;
}

__global__ void select_kernel(int64_t n, const int64_t* pos, int64_t* out) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    if (pos[i + 1] > pos[i]) out[pos[i]] = i;
}

/// Exclusive scan of `v` (n + 1 entries, the last 0) into a new buffer; `*total` = the sum. Waits.
dbuf<int64_t> exclusive_scan(const int64_t* v, int64_t n, int64_t* total, memory_resource* mr) {
  dbuf<int64_t> out;
  out.buf = scan_offsets(v, n, total, mr);
  out.p = out.buf->as<int64_t>();
  return out;
}

/// Device descriptors of key columns `idx` of `t`.
dbuf<dkey> key_views(const table& t, const std::vector<size_t>& idx, memory_resource* mr) {
  std::vector<dkey> host;
  for (size_t k : idx) {
    int kind = kind_of(t[k].type());
    if (kind < 0) throw internal_error("cuda join: unsupported key type " + to_string(t[k].type()));
    host.push_back({view_of(t[k]), kind});
  }
  dbuf<dkey> d(static_cast<int64_t>(host.size()), mr);
  upload(d.p, host.data(), host.size() * sizeof(dkey));
  return d;
}

/// The build side: all right rows (their key columns, then their payload columns), and their hash
/// table of key groups. Slot s holds the first row of a key; its rows (ascending) are
/// rows[offsets[s] .. offsets[s] + counts[s]).
struct build_side {
  table right;
  table payload;
  std::vector<size_t> key_cols;  ///< the key columns of `right`
  int64_t n = 0;
  uint64_t mask = 0;
  dbuf<dkey> keys;
  dbuf<uint64_t> hash;
  dbuf<unsigned long long> slots, counts;
  dbuf<uint64_t> slot_of;
  dbuf<int64_t> offsets, rows;
  dbuf<uint8_t> matched;  ///< full joins: per slot, whether a left row matched it
};

/// The CUDA join: the output layout is join_node's (empty host tables from join_node::empty_table need
/// no device memory: device views of empty columns point at nothing). Where the left (probe) side and
/// the output may not fit the device budget whole (may_exceed_device), the probe streams: the right side is indexed
/// first, then each left partition is probed as its producer makes it (fused into the left child) and
/// its output handed on at once, so the left side never exists whole on the device.
class join_op final : public join_node, public exec::piece_producer {
 public:
  using join_node::join_node;

 protected:
  std::vector<table> join_partitions(std::vector<table> left, std::vector<table> right_parts,
                                     exec_context& ctx) override {
    memory_resource* mr = ctx.device_mr;
    build_side b;
    build_right(b, std::move(right_parts), ctx);
    int64_t target = target_rows(ctx);
    std::vector<std::vector<table>> outs(left.size());
    std::vector<size_t> lcols = left_columns();
    for_partitions(ctx, static_cast<int64_t>(left.size()), [&](int64_t p) {
      nvtx_range r{"join probe"};
      const table& l = left[static_cast<size_t>(p)];
      if (l.num_rows() > 0)
        outs[static_cast<size_t>(p)] =
            _spec.how == join_type::cross ? cross(l.select(lcols), b, target, mr) : probe(l, lcols, b, target, mr);
      sync();
    });
    std::vector<table> result;
    for (auto& o : outs)
      for (auto& t : o)
        if (t.num_rows() > 0) result.push_back(std::move(t));
    if (_spec.how == join_type::full) unmatched_right(b, target, mr, result);
    if (result.empty()) result.push_back(to_device(empty_table(output_schema), mr));
    sync();
    return result;
  }

  bool streams_probe(const exec_context& ctx) const override {
    // join_partitions holds the left side and the whole output on the device: both count
    return _spec.how != join_type::cross && may_exceed_device(*children[0], ctx, &output_schema);
  }

  void start_probe(std::vector<table> right, exec_context& ctx) override {
    _probe.emplace();
    build_right(*_probe, std::move(right), ctx);
  }

  /// One left partition's output, in tables of at most target_rows() rows, each handed on as it is
  /// (run_per_partition calls this for a piece_producer; the CUDA join has no bucketed path that would
  /// call process_partition).
  void process_pieces(const table& left, size_t, exec_context& ctx,
                      const std::function<void(table, bool)>& emit) override {
    std::vector<table> out = probe_streamed(left, ctx);
    for (size_t i = 0; i < out.size(); ++i) emit(std::move(out[i]), i + 1 == out.size());
  }

  std::vector<table> finish_probe(exec_context& ctx) override {
    std::vector<table> out;
    if (_spec.how == join_type::full) unmatched_right(*_probe, target_rows(ctx), ctx.device_mr, out);
    _probe.reset();
    return out;
  }

 private:
  std::optional<build_side> _probe;  ///< while streaming (start_probe .. finish_probe)

  /// The output of probing the indexed right side with one left partition (never empty: an empty
  /// table when no row comes out).
  std::vector<table> probe_streamed(const table& left, exec_context& ctx) {
    nvtx_range r{"join probe"};
    std::vector<table> out;
    if (left.num_rows() > 0) out = probe(left, left_columns(), *_probe, target_rows(ctx), ctx.device_mr);
    if (out.empty()) out.push_back(to_device(empty_table(output_schema), ctx.device_mr));
    return out;
  }

  /// Concatenates the right partitions' needed columns (keys, then the payload the output keeps) into
  /// `b` and indexes them (but for cross joins); the partitions are released.
  void build_right(build_side& b, std::vector<table> right_parts, exec_context& ctx) const {
    nvtx_range r{"join build"};
    std::vector<size_t> needed = build_columns();
    for (auto& p : right_parts)
      p = p.select(needed);
    b.right = right_parts.empty() ? empty_table(children[1]->output_schema).select(needed)
                                  : cuda::concatenate(right_parts, ctx.device_mr);
    right_parts.clear();
    size_t nk = needed.size() - _spec.right_columns.size();
    std::vector<size_t> payload_cols;
    for (size_t i = nk; i < needed.size(); ++i)
      payload_cols.push_back(i);
    for (size_t i = 0; i < nk; ++i)
      b.key_cols.push_back(i);
    b.payload = b.right.select(payload_cols);
    b.n = b.right.num_rows();
    if (_spec.how != join_type::cross) build(b, ctx.device_mr);
    sync();
  }

  void build(build_side& b, memory_resource* mr) const {
    int64_t n = b.n;
    auto nk = static_cast<int>(_spec.right_keys.size());
    uint64_t cap = 2;
    while (cap < 2 * static_cast<uint64_t>(n))
      cap <<= 1;
    b.mask = cap - 1;
    b.keys = key_views(b.right, b.key_cols, mr);
    b.hash = dbuf<uint64_t>(n, mr);
    dbuf<uint8_t> nulls(n, mr);
    b.slots = dbuf<unsigned long long>(static_cast<int64_t>(cap), mr);
    b.counts = dbuf<unsigned long long>(static_cast<int64_t>(cap) + 1, mr);
    b.slot_of = dbuf<uint64_t>(n, mr);
    TUG_CUDA_TRY(cudaMemsetAsync(b.slots.p, 0xff, cap * sizeof(unsigned long long), stream()));
    TUG_CUDA_TRY(cudaMemsetAsync(b.counts.p, 0, (cap + 1) * sizeof(unsigned long long), stream()));
    if (n > 0) {
      hash_kernel<<<grid_for(n), 256, 0, stream()>>>(b.keys.p, nk, n, b.hash.p, nulls.p);
      TUG_CUDA_CHECK_LAUNCH();
      insert_kernel<<<grid_for(n), 256, 0, stream()>>>(b.keys.p, nk, n, b.hash.p, nulls.p, b.slots.p, b.mask,
                                                       b.slot_of.p, b.counts.p);
      TUG_CUDA_CHECK_LAUNCH();
    }
    // rows grouped by slot, ascending within a slot (radix sort is stable); null keys (slot cap) last
    dbuf<int64_t> iota(n, mr);
    b.rows = dbuf<int64_t>(n, mr);
    dbuf<uint64_t> sorted_slots(n, mr);
    if (n > 0) {
      iota_kernel<<<grid_for(n), 256, 0, stream()>>>(n, iota.p);
      TUG_CUDA_CHECK_LAUNCH();
      int end_bit = 1;
      while ((uint64_t{1} << end_bit) <= cap)
        ++end_bit;
      size_t temp_bytes = 0;
      TUG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, b.slot_of.p, sorted_slots.p, iota.p, b.rows.p,
                                                   n, 0, end_bit, stream()));
      dbuf<uint8_t> temp(static_cast<int64_t>(temp_bytes), mr);
      TUG_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.p, temp_bytes, b.slot_of.p, sorted_slots.p, iota.p, b.rows.p, n,
                                                   0, end_bit, stream()));
    }
    // counts[cap] is 0, so the scan's last entry is the number of rows with non-null keys
    int64_t total = 0;
    b.offsets = exclusive_scan(reinterpret_cast<const int64_t*>(b.counts.p), static_cast<int64_t>(cap), &total, mr);
    if (_spec.how == join_type::full) {
      b.matched = dbuf<uint8_t>(static_cast<int64_t>(cap), mr);
      TUG_CUDA_TRY(cudaMemsetAsync(b.matched.p, 0, cap, stream()));
    }
    sync();
  }

  /// Output tables of the pairs (left_idx[i], right_idx[i]), at most `target` rows each; -1 = nulls.
  static void emit(const table& left, const int64_t* left_idx, const table& right, const int64_t* right_idx, int64_t n,
                   int64_t target, memory_resource* mr, std::vector<table>& out) {
    for (int64_t a = 0; a < n; a += target) {
      int64_t len = std::min(target, n - a);
      out.push_back(
          join_columns(cuda::gather(left, left_idx + a, len, mr), cuda::gather(right, right_idx + a, len, mr)));
    }
  }

  /// The output rows of probing `b` with the rows of `left` (its columns `lcols` kept).
  std::vector<table> probe(const table& left, const std::vector<size_t>& lcols, build_side& b, int64_t target,
                           memory_resource* mr) const {
    int64_t n = left.num_rows();
    auto nk = static_cast<int>(_spec.left_keys.size());
    dbuf<dkey> keys = key_views(left, _spec.left_keys, mr);
    dbuf<uint64_t> hash(n, mr);
    dbuf<uint8_t> nulls(n, mr);
    dbuf<int64_t> slot(n, mr), cnt(n + 1, mr);
    int mode = _spec.how == join_type::inner  ? m_inner
               : _spec.how == join_type::semi ? m_semi
               : _spec.how == join_type::anti ? m_anti
                                              : m_outer;
    hash_kernel<<<grid_for(n), 256, 0, stream()>>>(keys.p, nk, n, hash.p, nulls.p);
    TUG_CUDA_CHECK_LAUNCH();
    probe_kernel<<<grid_for(n), 256, 0, stream()>>>(keys.p, b.keys.p, nk, n, hash.p, nulls.p, b.slots.p, b.mask,
                                                    b.hash.p, b.counts.p, mode, slot.p, cnt.p);
    TUG_CUDA_CHECK_LAUNCH();
    int64_t total = 0;
    dbuf<int64_t> pos = exclusive_scan(cnt.p, n, &total, mr);
    bool filter = mode == m_semi || mode == m_anti;
    table kept = left.select(lcols);
    if (filter && total == n) return {kept};
    dbuf<int64_t> left_idx(total, mr), right_idx(filter ? 0 : total, mr);
    fill_kernel<<<grid_for(n), 256, 0, stream()>>>(n, slot.p, pos.p, b.counts.p, b.offsets.p, b.rows.p, mode,
                                                   left_idx.p, right_idx.p, b.matched.p);
    TUG_CUDA_CHECK_LAUNCH();
    std::vector<table> out;
    if (filter) {
      if (total > 0) out.push_back(cuda::gather(kept, left_idx.p, total, mr));
    } else {
      emit(kept, left_idx.p, b.payload, right_idx.p, total, target, mr, out);
    }
    sync();
    return out;
  }

  /// Every pair of a left row and a right row, left-major, about `target` rows per table.
  static std::vector<table> cross(const table& left, const build_side& b, int64_t target, memory_resource* mr) {
    int64_t nr = b.payload.num_rows();
    int64_t total = left.num_rows() * nr;
    std::vector<table> out;
    for (int64_t a = 0; a < total; a += target) {
      int64_t len = std::min(target, total - a);
      dbuf<int64_t> left_idx(len, mr), right_idx(len, mr);
      cross_kernel<<<grid_for(len), 256, 0, stream()>>>(a, len, nr, left_idx.p, right_idx.p);
      TUG_CUDA_CHECK_LAUNCH();
      emit(left, left_idx.p, b.payload, right_idx.p, len, target, mr, out);
      sync();
    }
    return out;
  }

  /// Full joins: right rows no left row matched, with nulls on the left, in right order.
  void unmatched_right(const build_side& b, int64_t target, memory_resource* mr, std::vector<table>& out) const {
    int64_t n = b.n;
    dbuf<int64_t> flag(n + 1, mr);
    unmatched_kernel<<<grid_for(n), 256, 0, stream()>>>(n, b.slot_of.p, b.mask + 1, b.matched.p, flag.p);
    TUG_CUDA_CHECK_LAUNCH();
    int64_t total = 0;
    dbuf<int64_t> pos = exclusive_scan(flag.p, n, &total, mr);
    if (total == 0) return;
    dbuf<int64_t> idx(total, mr), none(total, mr);
    select_kernel<<<grid_for(n), 256, 0, stream()>>>(n, pos.p, idx.p);
    TUG_CUDA_CHECK_LAUNCH();
    TUG_CUDA_TRY(cudaMemsetAsync(none.p, 0xff, static_cast<size_t>(total) * sizeof(int64_t), stream()));
    emit(empty_table(children[0]->output_schema).select(left_columns()), none.p, b.payload, idx.p, total, target, mr,
         out);
    sync();
  }
};

}  // namespace

std::string join_key_unsupported(const schema& s, const std::vector<size_t>& keys) {
  for (size_t k : keys)
    if (kind_of(s[k].type) < 0)
      return "join key column " + s[k].name + " has type " + to_string(s[k].type) +
             ", which the CUDA join does not handle";
  return {};
}

physical_ptr make_join(physical_ptr left, physical_ptr right, join_spec spec, schema out) {
  std::vector<physical_ptr> kids;
  kids.push_back(std::move(left));
  kids.push_back(std::move(right));
  return cpu::finish(std::make_unique<join_op>(std::move(spec)), backend::cuda, std::move(kids), std::move(out));
}

}  // namespace tug::cuda
