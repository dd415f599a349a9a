// Multi-rank execution (include/tug/dist/distribute.hpp). Each node's output has a placement:
//  - split: each rank holds a disjoint share of the rows (a scan's share; after a shuffle);
//  - one:   rank 0 holds every row; what the other ranks hold is not part of the data (a node may make
//           rows from no input there, e.g. a global aggregate's one row) and every exchange ignores it;
//  - all:   every rank holds every row (a source that cannot be split; partial states gathered to all).
// A node's rank_need says where its input must be; an exchange node moves rows between placements
// where the child's is not enough. Joins are placed here: a side that every rank holds needs nothing;
// else both sides are shuffled by the keys or, when the build side is small (broadcast_limit, counted at
// run time over all ranks), that side is copied to every rank. Sorts of split input are placed here too:
// a top-k keeps each rank's first rows before the gather; a full sort routes rows to ranks by ranges of
// its keys (sampled) and sorts each range where it lands, so that its output is split in order.
#include "tug/dist/distribute.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>

#include "tug/core/error.hpp"
#include "tug/exec/key_index.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/memory/device.hpp"
#include "tug/memory/memory_manager.hpp"
#include "tug/memory/scratch.hpp"
#include "tug/runtime/query_control.hpp"
#include "device_link.hpp"
#include "device_split.hpp"
#include "wire.hpp"

namespace tug::dist {

namespace {

std::atomic<int64_t> g_query{0};

enum class place : uint8_t { split, one, all };

const char* to_string(place p) { return p == place::split ? "split" : p == place::one ? "rank 0" : "every rank"; }

/// What an exchange makes of its input: rows with equal keys on one rank, every row on rank 0, or every
/// row on every rank.
/// A range exchange moves rows to ranks by ranges of sort keys, so that rank r's rows all sort after
/// rank r-1's and equal keys meet on one rank.
enum class target : uint8_t { keys, one, all, range };

/// How a range exchange orders rows: key columns (of its input) with descending / nulls_last per key.
struct sort_order {
  std::vector<size_t> keys;
  std::vector<bool> descending, nulls_last;
};

/// Samples of a range exchange per rank of input: about this many times the number of ranks in all.
constexpr int64_t samples_per_rank = 128;

/// An exchange splits and serializes its input in pieces of at most this many rows, in parallel.
constexpr int64_t piece_rows = int64_t{1} << 18;
/// Bytes of received messages an exchange deserializes at once without a memory_limit (with one: an
/// eighth of it, at least 1 MiB).
constexpr int64_t inbox_batch_bytes = int64_t{64} << 20;
/// Bytes of a result gathered on rank 0 from the other ranks above which rank 0 warns (without a
/// memory_limit; with one, a quarter of it).
constexpr int64_t large_result_bytes = int64_t{1} << 30;

/// Rank of each row of host table `t` by the hash of its keys (rank_of_hash; split_on_device is the
/// same rule for device tables).
std::vector<uint32_t> row_ranks(const table& t, const std::vector<size_t>& keys, int size) {
  std::vector<column> cols;
  for (size_t k : keys) cols.push_back(t.col(k));
  const std::vector<uint64_t> h = hash_rows(cols);
  std::vector<uint32_t> r(h.size());
  for (size_t i = 0; i < h.size(); ++i) r[i] = rank_of_hash(h[i], size);
  return r;
}

/// The rows of each rank (`ranks` from row_ranks), in order: rank r's are rows[start[r], start[r + 1]).
struct rows_by_rank {
  std::vector<int64_t> start, rows;
  rows_by_rank(const std::vector<uint32_t>& ranks, int size) : start(static_cast<size_t>(size) + 1, 0), rows(ranks.size()) {
    for (uint32_t r : ranks) ++start[r + 1];
    for (int r = 0; r < size; ++r) start[static_cast<size_t>(r) + 1] += start[static_cast<size_t>(r)];
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 0; i < ranks.size(); ++i) rows[static_cast<size_t>(fill[ranks[i]]++)] = static_cast<int64_t>(i);
  }
  int64_t count(int r) const { return start[static_cast<size_t>(r) + 1] - start[static_cast<size_t>(r)]; }
  const int64_t* of(int r) const { return rows.data() + start[static_cast<size_t>(r)]; }
};

/// The rows of `t` per rank (`ranks` from row_ranks), in order; empty tables where a rank gets none.
std::vector<table> split_by_rank(const table& t, const std::vector<uint32_t>& ranks, int size, memory_resource* mr) {
  const rows_by_rank by(ranks, size);
  std::vector<table> out(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const int64_t len = by.count(r);
    if (len == 0) continue;
    out[static_cast<size_t>(r)] = len == t.num_rows() ? t : gather(t, by.of(r), len, mr);
  }
  return out;
}

/// True when every buffer of `t` is in device memory (what NCCL can send).
bool wholly_on_device(const table& t) {
  if (t.num_columns() == 0) return false;
  for (auto& c : t.columns())
    for (const buffer_ptr& b : {c.data_buffer(), c.validity_buffer(), c.offsets_buffer()})
      if (b && (!b->resource() || b->resource()->kind() != memory_kind::device)) return false;
  return true;
}

table empty_of(const schema& s, memory_resource* mr) {
  std::vector<column> cols;
  for (auto& f : s) cols.push_back(make_null_column(f.type, 0, mr));
  return cols.empty() ? table::empty_with_rows(0) : table(std::move(cols));
}

/// Sum over all ranks of `v`, through exchange `tag` (every rank calls it alike).
int64_t sum_over_ranks(query_ranks& q, int tag, int64_t v) {
  auto ex = q.comm->open(q.query, tag, q.timeout);
  for (int r = 0; r < q.comm->size(); ++r) {
    message m(8);
    std::memcpy(m.data(), &v, 8);
    ex->send(r, std::move(m));
  }
  ex->finish();
  int64_t total = 0;
  while (auto got = ex->receive()) {
    int64_t x = 0;
    std::memcpy(&x, got->second.data(), 8);
    total += x;
  }
  return total;
}

class exchange_node;

/// A join's choice between shuffling both sides and copying one side to every rank, made once at run
/// time by whichever of its two exchanges runs first: it runs both sides (held spillable) and counts
/// their rows over all ranks. A side is copied when it has at most broadcast_limit rows and copying it
/// moves fewer rows than shuffling both would: the build side of any join, or the probe side of an
/// inner join (each output pair then still comes from the one rank that holds its build row).
struct join_choice {
  std::mutex mu;
  bool decided = false;
  exchange_node* copied = nullptr;  ///< the side copied to every rank; nullptr: both are shuffled
  bool may_shuffle = true;          ///< false: the key types differ, so only copying is right
  bool inner = false;               ///< the probe side may be the copied one
  int64_t limit = 0;                ///< broadcast_limit
  int tags[2] = {-1, -1};           ///< the row counts' exchanges
  exchange_node* probe = nullptr;
  exchange_node* build = nullptr;
  std::shared_ptr<query_ranks> q;
  int64_t probe_rows = -1, build_rows = -1;
  void decide(exec_context& ctx);
};

class exchange_node final : public physical_node {
 public:
  exchange_node(std::shared_ptr<query_ranks> q, place from, target to, std::vector<size_t> keys, int tag)
      : _q(std::move(q)), _from(from), _to(to), _keys(std::move(keys)), _tag(tag) {}
  /// A range exchange by `order`: `tags` are its row counts', its samples' and its rows' exchanges.
  exchange_node(std::shared_ptr<query_ranks> q, sort_order order, const int (&tags)[3])
      : _q(std::move(q)), _from(place::split), _to(target::range), _keys(order.keys), _tag(tags[2]),
        _order(std::move(order)), _count_tag(tags[0]), _sample_tag(tags[1]) {}
  std::string name() const override {
    if (_choice) return _choice->build == this ? "exchange[join build]" : "exchange[join probe]";
    return _to == target::keys    ? "exchange[shuffle]"
           : _to == target::one   ? "exchange[gather]"
           : _to == target::range ? "exchange[range]"
                                  : "exchange[allgather]";
  }
  std::string detail() const override {
    std::string s;
    for (size_t i = 0; i < _keys.size(); ++i) {
      s += (s.empty() ? "by " : ", ") + children[0]->output_schema[_keys[i]].name;
      if (_to == target::range && _order.descending[i]) s += " desc";
      if (_to == target::range && _order.nulls_last[i]) s += " nulls_last";
    }
    if (_choice)
      s += std::string(s.empty() ? "" : "; ") + "shuffled, or copied to every rank when a side has at most " +
           std::to_string(_choice->limit) + " rows" + (_choice->inner ? "" : " (the build side)");
    s += std::string(s.empty() ? "" : "; ") + "from " + to_string(_from) + "; " + std::to_string(_q->comm->size()) + " ranks";
    return s;
  }
  bool sync_point() const override { return true; }
  int64_t size_hint() const override { return children[0]->size_hint(); }
  rank_need input_need(size_t) const override { return {rank_need::kind::any, {}}; }
  void join(std::shared_ptr<join_choice> c) { _choice = std::move(c); }
  /// This exchange gathers the query's result to rank 0 (collect): rank 0 warns when what the other
  /// ranks send is large (large_result_bytes, or a quarter of memory_limit when one is set).
  void gathers_result() { _result = true; }

  /// A side of a join: run the child (once) and hold its partitions, for join_choice; its rows.
  int64_t run_child(exec_context& ctx) {
    _held = input_held(0, ctx, spill_priority::buffered);
    _ran_child = true;
    int64_t rows = 0;
    for (size_t i = 0; i < _held.size(); ++i) rows += _held.get(i).num_rows();
    return rows;
  }

 protected:
  std::vector<table> run(exec_context& ctx) override {
    target to = _to;
    // every rank runs the same exchanges in the same order: the first on the device sets the link up
    if (where == backend::cuda && _q->device_tag >= 0 && ctx.device_mr) _link = device_link_of(*_q, _q->device_tag);
    if (_choice) {
      _choice->decide(ctx);
      if (_choice->copied) {
        if (_choice->copied != this) {  // this side stays where it is
          _ran_child = false;
          return _held.take();
        }
        to = target::all;
      }
    }
    if (!_ran_child) _held = input_held(0, ctx, spill_priority::buffered);
    _ran_child = false;
    held_partitions in = std::move(_held);
    return move_rows(in, to, ctx);
  }

 private:
  std::vector<table> move_rows(held_partitions& in, target to, exec_context& ctx) {
    const int me = _q->comm->rank(), size = _q->comm->size();
    const schema& s = children[0]->output_schema;
    std::vector<size_t> keys = _keys;
    if (to == target::keys && keys.empty())
      for (size_t i = 0; i < s.size(); ++i) keys.push_back(i);
    // a range exchange: the ranks' boundaries, from samples of every rank's rows
    std::unique_ptr<range_router> ranges;
    if (to == target::range) ranges = std::make_unique<range_router>(*this, in, ctx);
    // per source rank, the partitions that arrive from it, in order
    std::vector<std::vector<table>> by_rank(static_cast<size_t>(size));
    std::vector<table>& mine = by_rank[static_cast<size_t>(me)];
    const bool contributes = _from == place::split || (_from == place::one && me == 0);
    const bool talks = _from != place::all && !(_from == place::one && to == target::one);
    if (!talks) {
      // every rank holds what it needs already: rank 0 keeps one's rows, each rank its keys' share of all's
      for (size_t i = 0; i < in.size(); ++i) {
        if (_from == place::one && me != 0) break;
        table t = in.take(i);
        if (_from == place::all && to == target::one && me != 0) break;
        if (_from == place::all && to == target::keys) {
          if (t.num_rows() == 0) continue;
          t = to_host(t, ctx.mr);
          t = std::move(split_by_rank(t, row_ranks(t, keys, size), size, ctx.mr)[static_cast<size_t>(me)]);
          if (t.num_rows() == 0) continue;
        }
        mine.push_back(std::move(t));
      }
      return output(by_rank, ctx);
    }
    auto ex = _q->comm->open(_q->query, _tag, _q->timeout);
    auto send = [&](int r, message m) {
      _q->add_sent(_tag, name(), static_cast<int64_t>(m.size()));
      ex->send(r, std::move(m));
    };
    // device tables for other ranks go as layouts, their buffers over NCCL once every message is in
    // (device_link.hpp): the spans to send to each rank, in order, and the tables that hold them
    std::vector<std::vector<span>> device_sends(static_cast<size_t>(size));
    std::vector<table> device_parts;
    int64_t device_bytes = 0;
    if (contributes) {
      // batches of pieces of at most piece_rows rows (a GPU operator may output one large partition):
      // split and serialized in parallel, then sent in order from this thread
      const size_t batch = static_cast<size_t>(std::max(1, 2 * ctx.pool.size()));
      size_t next = 0;
      while (next < in.size()) {
        check_cancelled();
        std::vector<table> pieces;
        while (next < in.size() && pieces.size() < batch) {
          const table t = in.take(next++);
          // a device table whose buffers go over NCCL is split on the device whole (pieces would cost a
          // split's launches and waits each: 2300 pieces a rank for lineitem at SF100)
          const bool whole = _link && to != target::range && wholly_on_device(t);
          for (int64_t at = 0; at < t.num_rows(); at += piece_rows)
            if (whole || (at == 0 && t.num_rows() <= piece_rows)) {
              pieces.push_back(t);
              break;
            } else {
              pieces.push_back(t.slice(at, std::min(piece_rows, t.num_rows() - at)));
            }
        }
        const size_t n = pieces.size();
        std::vector<std::vector<message>> out(n, std::vector<message>(static_cast<size_t>(size)));
        std::vector<std::vector<std::vector<span>>> spans(n, std::vector<std::vector<span>>(static_cast<size_t>(size)));
        std::vector<table> local(n), sent_from_device(n);
        ctx.pool.parallel_for(static_cast<int64_t>(n), [&](int64_t k) {
          const auto i = static_cast<size_t>(k);
          table t = std::move(pieces[i]);
          auto& m = out[i];
          // a table for rank r: a device table's layout when the ranks' devices are linked, else its bytes
          // in host memory
          const bool linked = _link && wholly_on_device(t);
          auto message_of = [&](const table& part, int r) {
            if (!linked) return serialize(to_host(part, ctx.mr));
            return serialize_layout(part, spans[i][static_cast<size_t>(r)], read_device);
          };
          // what stays whole on this rank (a gather's on rank 0, a copy's own) stays where it is (a
          // GPU operator's, on the device); what is split or sent is copied to host memory first
          if (to == target::one) {
            if (me == 0) {
              local[i] = std::move(t);
            } else {
              m[0] = message_of(t, 0);
              if (linked) sent_from_device[i] = t;
            }
          } else if (to == target::all) {
            message once = linked ? message() : serialize(to_host(t, ctx.mr));
            for (int r = 0; r < size; ++r)
              if (r != me) m[static_cast<size_t>(r)] = linked ? message_of(t, r) : once;
            if (linked) sent_from_device[i] = t;
            local[i] = std::move(t);
          } else if (on_device(t) && !ranges) {
            // a device table is split on the device: this rank's rows stay there, the others' go by
            // rank (contiguous) over NCCL, or are copied to host memory and serialized
            device_slots::guard slot(ctx.partition_slots);
            const rank_split by = split_on_device(t, keys, size, ctx.device_mr);
            for (int r = 0; r < size; ++r) {
              const int64_t first = by.start[static_cast<size_t>(r)], len = by.start[static_cast<size_t>(r) + 1] - first;
              if (len == 0) continue;
              table part = len == t.num_rows() ? by.rows : by.rows.slice(first, len);
              if (r == me) local[i] = std::move(part);
              else m[static_cast<size_t>(r)] = message_of(part, r);
            }
            if (linked) {
              sent_from_device[i] = by.rows;
              wait_for_this_thread();  // the split is read by the NCCL group on the exchange's thread
            }
          } else {
            // each other rank's rows are serialized straight from `t`; this rank's are gathered
            t = to_host(t, ctx.mr);
            const rows_by_rank by(ranges ? ranges->ranks(t, ctx) : row_ranks(t, keys, size), size);
            for (int r = 0; r < size; ++r) {
              const int64_t len = by.count(r);
              if (len == 0) continue;
              if (r == me) local[i] = len == t.num_rows() ? t : gather(t, by.of(r), len, ctx.mr);
              else m[static_cast<size_t>(r)] = len == t.num_rows() ? serialize(t) : serialize_rows(t, by.of(r), len);
            }
          }
        });
        // the batch's messages count on the query's budget until they are handed to the communicator
        int64_t outgoing = 0;
        for (auto& per_rank : out)
          for (auto& m : per_rank) outgoing += static_cast<int64_t>(m.size());
        scratch_reservation outbox(outgoing, "exchange: rows serialized for other ranks");
        for (size_t i = 0; i < n; ++i) {
          for (int r = 0; r < size; ++r) {
            if (out[i][static_cast<size_t>(r)].empty()) continue;
            auto& to_r = device_sends[static_cast<size_t>(r)];
            for (const span& sp : spans[i][static_cast<size_t>(r)]) {
              to_r.push_back(sp);
              device_bytes += static_cast<int64_t>(sp.bytes);
              _q->add_sent(_tag, name(), static_cast<int64_t>(sp.bytes), static_cast<int64_t>(sp.bytes));
            }
            send(r, std::move(out[i][static_cast<size_t>(r)]));
          }
          if (local[i].num_rows() > 0) mine.push_back(std::move(local[i]));
          if (sent_from_device[i].num_columns() > 0) device_parts.push_back(std::move(sent_from_device[i]));
        }
      }
    }
    ex->finish();
    // what arrives, per sender in order. Host tables: deserialized in parallel batches as they come,
    // the raw messages counted on the query's budget until then (inbox_batch_bytes), the tables held
    // spillable while more arrive. Device tables: their buffers allocated in each sender's order and
    // filled over NCCL once everything is here.
    struct arrival {
      int from;
      table t;               ///< a device table (filled over NCCL), or a host one without a memory manager
      spillable_ptr held;    ///< a host table, spillable
    };
    std::vector<arrival> arrived;
    std::vector<std::pair<size_t, message>> raw;  // (arrival, its bytes) not yet deserialized
    scratch_reservation inbox;
    const int64_t batch_bytes = ctx.options.memory_limit > 0
                                    ? std::max<int64_t>(ctx.options.memory_limit / 8, int64_t{1} << 20)
                                    : inbox_batch_bytes;
    auto deserialize_raw = [&] {
      ctx.pool.parallel_for(static_cast<int64_t>(raw.size()), [&](int64_t k) {
        auto& [at, bytes] = raw[static_cast<size_t>(k)];
        table t = deserialize(bytes, ctx.mr);
        bytes = message();
        if (ctx.memory) arrived[at].held = ctx.memory->make_spillable(std::move(t), spill_priority::buffered);
        else arrived[at].t = std::move(t);
      });
      raw.clear();
      inbox.resize(0, nullptr);
    };
    std::vector<std::vector<landing>> device_recvs(static_cast<size_t>(size));
    std::vector<rebase> rebases;
    bool any_layout = false;
    int64_t received = 0;
    while (auto m = ex->receive()) {
      check_cancelled();
      const auto bytes = static_cast<int64_t>(m->second.size());
      received += bytes;
      if (is_layout(m->second)) {
        if (!_link)
          throw distributed_error("rank " + std::to_string(m->first) + " sent a device table over NCCL, which rank " +
                                  std::to_string(me) + " cannot use (" + _q->comm->device_why + ")");
        arrived.push_back({m->first, deserialize_layout(m->second, ctx.device_mr, device_recvs[static_cast<size_t>(m->first)], rebases), nullptr});
        any_layout = true;
        continue;
      }
      inbox.add(bytes, "exchange: rows received from other ranks");
      arrived.push_back({m->first, table(), nullptr});
      raw.emplace_back(arrived.size() - 1, std::move(m->second));
      if (inbox.bytes() >= batch_bytes) deserialize_raw();
    }
    deserialize_raw();
    const int64_t large = ctx.options.memory_limit > 0 ? ctx.options.memory_limit / 4 : large_result_bytes;
    if (_result && me == 0 && received > large)
      std::cerr << "tug warning: the result gathered on rank 0 came to " + human_bytes(received) + " from the " +
                       std::to_string(size - 1) + " other ranks" +
                       (ctx.options.memory_limit > 0 ? " (over a quarter of memory_limit)" : "") +
                       ": collect() holds every row on rank 0; a directory sink (sink_parquet to a "
                       "directory) writes each rank's share where it is\n";
    if (_link && (any_layout || device_bytes > 0)) move_on_device(*_link, *_q, _tag, device_sends, device_recvs, rebases);
    device_parts.clear();
    for (arrival& a : arrived) by_rank[static_cast<size_t>(a.from)].push_back(a.held ? a.held->take() : std::move(a.t));
    return output(by_rank, ctx);
  }

  /// A range exchange's boundaries: every rank samples its rows at one rate (from the row count over
  /// all ranks), the samples are copied to every rank and sorted there alike (rank order, then input
  /// order), and the samples at the size - 1 quantiles, each value once, are the boundaries. A row
  /// goes to the rank of the range it falls in; a row equal to a boundary to the rank above it.
  struct range_router {
    physical_ptr sorter;  ///< a CPU sort of the key columns, for its kernels
    table bounds;         ///< the key columns of the sorted, distinct boundaries

    range_router(exchange_node& x, held_partitions& in, exec_context& ctx) {
      query_ranks& q = *x._q;
      const int size = q.comm->size();
      const schema& s = x.children[0]->output_schema;
      schema key_schema;
      std::vector<size_t> key_cols;
      for (size_t i = 0; i < x._order.keys.size(); ++i) {
        key_schema.push_back(s[x._order.keys[i]]);
        key_cols.push_back(i);
      }
      sorter = exec::make_sort(backend::cpu, exec::make_concat(backend::cpu, {}, key_schema), key_cols,
                               x._order.descending, x._order.nulls_last, true, -1);
      int64_t mine = 0;
      for (size_t i = 0; i < in.size(); ++i) mine += in.get(i).num_rows();
      const int64_t total = sum_over_ranks(q, x._count_tag, mine);
      const int64_t stride = std::max<int64_t>(1, total / (samples_per_rank * size));
      // this rank's samples: every stride-th row of its rows, counted across its partitions
      std::vector<table> picked;
      int64_t at = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const table t = to_host(in.get(i).select(x._order.keys), ctx.mr);
        std::vector<int64_t> idx;
        for (int64_t r = (stride - at % stride) % stride; r < t.num_rows(); r += stride) idx.push_back(r);
        at += t.num_rows();
        if (!idx.empty()) picked.push_back(gather(t, idx, ctx.mr));
      }
      auto ex = q.comm->open(q.query, x._sample_tag, q.timeout);
      std::vector<std::vector<table>> by_rank(static_cast<size_t>(size));
      if (!picked.empty()) {
        table t = concatenate(picked, ctx.mr);
        message m = serialize(t);
        for (int r = 0; r < size; ++r)
          if (r != q.comm->rank()) ex->send(r, m);
        by_rank[static_cast<size_t>(q.comm->rank())].push_back(std::move(t));
      }
      ex->finish();
      while (auto got = ex->receive()) by_rank[static_cast<size_t>(got->first)].push_back(deserialize(got->second, ctx.mr));
      std::vector<table> samples;
      for (auto& v : by_rank)
        for (auto& t : v) samples.push_back(std::move(t));
      int64_t n = 0;
      for (auto& t : samples) n += t.num_rows();
      if (n == 0) {
        bounds = empty_of(key_schema, ctx.mr);
        return;
      }
      auto& sort = static_cast<sort_node&>(*sorter);
      const table sorted = concatenate(sort.sort_partitions(samples, n, ctx), ctx.mr);
      std::vector<int64_t> quantiles;
      for (int64_t r = 1; r < size; ++r) {
        const int64_t i = r * n / size;
        if (quantiles.empty() || quantiles.back() != i) quantiles.push_back(i);
      }
      const table candidates = gather(sorted, quantiles, ctx.mr);
      const std::vector<uint32_t> self = sort.locate(candidates, candidates, ctx);
      std::vector<int64_t> distinct;
      for (size_t i = 0; i < self.size(); ++i)
        if (self[i] == 2 * i + 1) distinct.push_back(static_cast<int64_t>(i));
      bounds = gather(candidates, distinct, ctx.mr);
      _keys = x._order.keys;
    }

    /// The rank of each row of `t`: (range + 1) / 2 of sort_node::locate's ranges, which is at most the
    /// number of boundaries (< size).
    std::vector<uint32_t> ranks(const table& t, exec_context& ctx) const {
      if (bounds.num_rows() == 0) return std::vector<uint32_t>(static_cast<size_t>(t.num_rows()), 0);
      std::vector<uint32_t> r = static_cast<const sort_node&>(*sorter).locate(t.select(_keys), bounds, ctx);
      for (auto& x : r) x = (x + 1) / 2;
      return r;
    }

   private:
    std::vector<size_t> _keys;
  };

  std::vector<table> output(std::vector<std::vector<table>>& by_rank, exec_context& ctx) {
    std::vector<table> out;
    for (auto& v : by_rank)
      for (auto& t : v) out.push_back(std::move(t));
    if (out.empty()) out.push_back(empty_of(output_schema, ctx.mr));
    return out;
  }

  std::shared_ptr<query_ranks> _q;
  place _from;
  target _to;
  std::vector<size_t> _keys;
  int _tag;
  sort_order _order;   ///< a range exchange's order
  int _count_tag = -1;  ///< a range exchange's row count's exchange
  int _sample_tag = -1;  ///< a range exchange's samples' exchange
  std::shared_ptr<join_choice> _choice;
  held_partitions _held;
  std::shared_ptr<device_link> _link;  ///< the ranks' devices over NCCL (null: through host memory)
  bool _ran_child = false;
  bool _result = false;  ///< gathers the query's result to rank 0 (gathers_result)
};

void join_choice::decide(exec_context& ctx) {
  std::lock_guard<std::mutex> g(mu);
  if (decided) return;
  probe_rows = sum_over_ranks(*q, tags[0], probe->run_child(ctx));
  build_rows = sum_over_ranks(*q, tags[1], build->run_child(ctx));
  const int64_t ranks = q->comm->size(), both = probe_rows + build_rows;
  // copying n rows moves n * (ranks - 1); shuffling both sides about both * (ranks - 1) / ranks
  auto worth = [&](int64_t n) { return n <= limit && (n * ranks <= both || !may_shuffle); };
  if (inner && probe_rows < build_rows && worth(probe_rows)) copied = probe;
  else if (worth(build_rows) || !may_shuffle) copied = build;
  decided = true;
}

class placer {
 public:
  placer(std::shared_ptr<query_ranks> q, const engine_options& o) : _q(std::move(q)), _opts(o) {}

  place go(physical_ptr& n) {
    if (physical_ptr* root = exec::cached_subplan_root(*n)) {
      auto it = _shared.find(root->get());
      if (it != _shared.end()) return it->second;
      const place p = go(*root);
      _shared[root->get()] = p;
      return p;
    }
    if (n->children.empty()) return n->read_rank_share(_q->comm->rank(), _q->comm->size()) ? place::split : place::all;
    if (auto* j = dynamic_cast<join_node*>(n.get())) return join(*n, *j);
    if (auto* s = dynamic_cast<sort_node*>(n.get())) return sort(n, *s);
    if (auto* s = dynamic_cast<slice_node*>(n.get())) return slice(n, *s);
    if (auto* w = dynamic_cast<window_node*>(n.get())) return window(n, *w);
    std::vector<place> in;
    for (auto& c : n->children) in.push_back(go(c));
    for (size_t i = 0; i < n->children.size(); ++i) {
      const rank_need need = n->input_need(i);
      switch (need.k) {
        case rank_need::kind::any: break;
        case rank_need::kind::keys:
          if (in[i] == place::split) in[i] = move(n->children[i], in[i], target::keys, need.keys, n->where);
          break;
        case rank_need::kind::one:
          if (in[i] == place::split) in[i] = move(n->children[i], in[i], target::one, {}, n->where);
          break;
        case rank_need::kind::all:
          if (in[i] != place::all) in[i] = move(n->children[i], in[i], target::all, {}, n->where);
          break;
      }
    }
    return combine(in);
  }

  /// Where the result must be: on rank 0, on every rank, or where it is when split (`leave_split`).
  physical_ptr finish(physical_ptr root, place p, bool every_rank, bool leave_split) {
    if (leave_split && p == place::split) return root;
    if (every_rank && p == place::all) return root;
    physical_ptr x = wrap(std::move(root), p, every_rank ? target::all : target::one, {});
    if (!every_rank) static_cast<exchange_node&>(*x).gathers_result();
    return x;
  }

 private:
  static place combine(const std::vector<place>& in) {
    if (std::find(in.begin(), in.end(), place::split) != in.end()) return place::split;
    if (std::find(in.begin(), in.end(), place::one) != in.end()) return place::one;
    return place::all;
  }

  int tag() { return _q->take_tag(); }

  /// An exchange runs on its child's backend: it holds a GPU child's output on the device, and only
  /// the rows that move to other ranks cross host memory (the rows that stay, and every row of a join
  /// side that another side's copy leaves in place, stay on the device).
  /// A scan (a leaf) below an exchange to a GPU consumer reads into device memory (the GPU Parquet reader
  /// decodes there), so that its rows cross to other ranks device to device: the exchange is on the GPU.
  static backend where_for(const physical_node& child, backend consumer = backend::cpu) {
    const bool device = child.where == backend::cuda || (child.children.empty() && consumer == backend::cuda);
    return device ? backend::cuda : backend::cpu;
  }
  /// Exchange `x`, placed: one on the device may move device tables over NCCL, whose link the query
  /// sets up through a tag of its own unless an earlier query did (device_link_of).
  void note_device_exchange(const physical_node& x) {
    if (x.where == backend::cuda && _q->device_tag < 0) _q->device_tag = tag();
  }

  physical_ptr wrap(physical_ptr child, place from, target to, std::vector<size_t> keys, backend consumer = backend::cpu) {
    auto x = std::make_unique<exchange_node>(_q, from, to, std::move(keys), tag());
    x->output_schema = child->output_schema;
    x->where = where_for(*child, consumer);
    note_device_exchange(*x);
    x->children.push_back(std::move(child));
    return x;
  }

  place move(physical_ptr& child, place from, target to, std::vector<size_t> keys, backend consumer = backend::cpu) {
    child = wrap(std::move(child), from, to, std::move(keys), consumer);
    return to == target::all ? place::all : to == target::one ? place::one : place::split;
  }

  /// A sort of split input: a top-k first keeps each rank's first `limit` rows (a local top-k below
  /// the gather: every row of the answer is among its rank's first), and the gathered survivors, in
  /// rank order, are sorted again on rank 0; ties keep input order, as shares are in rank order. A full
  /// sort moves its rows by ranges of its keys and sorts each rank's rows, which arrive in input order:
  /// its output is split and in order.
  place sort(physical_ptr& n, sort_node& s) {
    const place in = go(n->children[0]);
    if (in != place::split) return in;
    sort_order order{s.keys(), s.descending(), s.nulls_last()};
    const int64_t limit = s.limit();
    if (limit >= 0) {
      physical_ptr local = exec::make_sort(n->where, std::move(n->children[0]), order.keys, order.descending,
                                           order.nulls_last, s.stable(), limit);
      n->children[0] = std::move(local);
      return move(n->children[0], place::split, target::one, {}, n->where);
    }
    range_exchange(n->children[0], std::move(order));
    return place::split;
  }

  /// A range exchange by `order` put above `child` (its rows split over the ranks by ranges of the keys).
  void range_exchange(physical_ptr& child, sort_order order) {
    const int tags[3] = {tag(), tag(), tag()};
    auto x = std::make_unique<exchange_node>(_q, std::move(order), tags);
    x->output_schema = child->output_schema;
    x->where = where_for(*child);
    x->children.push_back(std::move(child));
    child = std::move(x);
  }

  /// A window (`over`) of split input whose specs share one key set, on the CPU: each row gets its
  /// position, (rank << 40) + its row number on its rank (row_index), so that positions follow the
  /// one-rank order (shares are in rank order); the rows are shuffled by the keys, so each key's rows
  /// meet on one rank in that order (an exchange keeps each sender's rows in order and receives in rank
  /// order); a window over them appends its columns there; a range exchange by position and a sort put
  /// the rows back in input order, split over the ranks; a projection drops the position. Other
  /// windows (several key sets, no keys, or the GPU's, not yet run on several GPUs) gather every row
  /// to rank 0.
  place window(physical_ptr& n, window_node& w) {
    const place in = go(n->children[0]);
    if (in != place::split) return in;
    const std::vector<window_spec>& specs = w.specs();
    bool one_key_set = n->where == backend::cpu && n->children[0]->where == backend::cpu && !specs.empty();
    for (const window_spec& s : specs) one_key_set = one_key_set && !s.keys.empty() && s.keys == specs[0].keys;
    if (!one_key_set) return move(n->children[0], place::split, target::one, {}, n->where);
    const schema& child_schema = n->children[0]->output_schema;
    std::string pos = "__tug_rank_position";
    while (true) {  // a name no column has
      bool taken = false;
      for (const field& f : n->output_schema) taken = taken || f.name == pos;
      if (!taken) break;
      pos += "_";
    }
    std::vector<field> tagged{{pos, data_type(type_id::int64)}};
    for (const field& f : child_schema) tagged.push_back(f);
    physical_ptr x = exec::make_row_index(backend::cpu, std::move(n->children[0]),
                                          static_cast<int64_t>(_q->comm->rank()) << 40, schema(tagged));
    // the specs' columns move one to the right, behind the position
    std::vector<window_spec> shifted = specs;
    for (window_spec& s : shifted) {
      for (size_t& k : s.keys) ++k;
      if (s.agg.input >= 0) ++s.agg.input;
    }
    move(x, place::split, target::keys, shifted[0].keys);
    std::vector<field> windowed = tagged;
    for (size_t i = child_schema.size(); i < n->output_schema.size(); ++i) windowed.push_back(n->output_schema[i]);
    x = exec::make_window(backend::cpu, std::move(x), std::move(shifted), schema(windowed));
    sort_order order{{0}, {false}, {false}};
    x = exec::make_sort(backend::cpu, std::move(x), order.keys, order.descending, order.nulls_last, true, -1);
    range_exchange(x->children[0], std::move(order));
    std::vector<expr> columns;
    for (const field& f : n->output_schema) columns.push_back(resolve(col(f.name), x->output_schema));
    n = exec::make_project(backend::cpu, std::move(x), std::move(columns), n->output_schema);
    return place::split;
  }

  /// A slice (head, tail, slice) of split input: each rank first keeps the rows of its share that can
  /// be in the window, its first offset + length rows (its last -offset rows for an offset from the
  /// end), and those are gathered to rank 0 in rank order, where the slice runs on them: the shares are
  /// in rank order, so the window's rows are among them, in order. Only an offset from the start with
  /// no length (every row after it) gathers every row.
  place slice(physical_ptr& n, slice_node& s) {
    const place in = go(n->children[0]);
    if (in != place::split) return in;
    const int64_t offset = s.offset(), length = s.length();
    if (offset < 0 || length >= 0) {
      const int64_t keep_offset = offset < 0 ? offset : 0;
      const int64_t keep_length =
          offset < 0 || length > std::numeric_limits<int64_t>::max() - offset ? -1 : offset + length;
      n->children[0] = exec::make_slice(n->where, std::move(n->children[0]), keep_offset, keep_length);
    }
    return move(n->children[0], place::split, target::one, {}, n->where);
  }

  place join(physical_node& n, join_node& j) {
    const join_spec& spec = j.spec();
    place l = go(n.children[0]), r = go(n.children[1]);
    const bool local_or_all = [&] { return l != place::split && r != place::split; }();
    if (local_or_all) return l == place::all && r == place::all ? place::all : place::one;
    const join_type how = spec.how;
    // every rank holds the whole build side: each probe row meets all of it where it is (not full: the
    // unmatched build rows would come once per rank)
    if (r == place::all && how != join_type::full) return l;
    // every rank holds the whole probe side, and the output is pairs of rows: each build row is on one rank
    if (l == place::all && (how == join_type::inner || how == join_type::cross)) return place::split;
    if (l == place::one) {
      move(n.children[1], r, target::one, {}, n.where);
      return place::one;
    }
    bool same_types = true;
    for (size_t k = 0; k < spec.left_keys.size(); ++k)
      same_types = same_types && n.children[0]->output_schema[spec.left_keys[k]].type ==
                                     n.children[1]->output_schema[spec.right_keys[k]].type;
    if (r == place::one) {
      if (how != join_type::full) {
        move(n.children[1], r, target::all, {}, n.where);
        return l;
      }
      move(n.children[0], l, target::one, {}, n.where);
      return place::one;
    }
    if (how == join_type::cross) {
      move(n.children[1], r, target::all, {}, n.where);
      return l;
    }
    if (how == join_type::full || l == place::all) {
      // l is split or all, r is split: both by the keys (all's share is taken where it is)
      if (!same_types) {
        move(n.children[0], l, target::one, {}, n.where);
        move(n.children[1], r, target::one, {}, n.where);
        return place::one;
      }
      move(n.children[0], l, target::keys, spec.left_keys, n.where);
      move(n.children[1], r, target::keys, spec.right_keys, n.where);
      return place::split;
    }
    // both split, inner / left / semi / anti: shuffle both, or broadcast the build side (run time)
    auto choice = std::make_shared<join_choice>();
    choice->may_shuffle = same_types;
    choice->inner = how == join_type::inner;
    choice->limit = _opts.broadcast_limit;
    choice->q = _q;
    choice->tags[0] = tag();
    choice->tags[1] = tag();
    auto probe = std::make_unique<exchange_node>(_q, l, target::keys, spec.left_keys, tag());
    auto build = std::make_unique<exchange_node>(_q, r, target::keys, spec.right_keys, tag());
    choice->probe = probe.get();
    choice->build = build.get();
    probe->join(choice);
    build->join(choice);
    probe->where = where_for(*n.children[0], n.where);
    build->where = where_for(*n.children[1], n.where);
    note_device_exchange(*probe);
    note_device_exchange(*build);
    probe->output_schema = n.children[0]->output_schema;
    build->output_schema = n.children[1]->output_schema;
    probe->children.push_back(std::move(n.children[0]));
    build->children.push_back(std::move(n.children[1]));
    n.children[0] = std::move(probe);
    n.children[1] = std::move(build);
    return place::split;
  }

  std::shared_ptr<query_ranks> _q;
  const engine_options& _opts;
  std::map<const physical_node*, place> _shared;
};

}  // namespace

int query_ranks::take_tag() {
  if (next_tag >= max_exchanges)
    throw not_implemented_error("the query needs more than " + std::to_string(max_exchanges) +
                                " exchanges between ranks");
  return next_tag++;
}

void query_ranks::add_sent(int tag, const std::string& name, int64_t bytes, int64_t device) {
  std::lock_guard<std::mutex> g(sent_mu);
  auto& e = sent[tag];
  e.first = name;
  e.second += bytes;
  device_bytes += device;
}

std::string query_ranks::sent_to_string() const {
  std::string s;
  int64_t total = 0;
  for (auto& [tag, e] : sent) {
    s += (s.empty() ? "" : ", ") + std::string("#") + std::to_string(tag) + " " + e.first + " " +
         std::to_string(e.second / 1024) + " KiB";
    total += e.second;
  }
  if (s.empty()) return s;
  return "exchanges (rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) + "): sent " +
         std::to_string(total / 1024) + " KiB to other ranks" +
         (device_bytes > 0 ? " (" + std::to_string(device_bytes / 1024) + " KiB device to device over NCCL)" : "") +
         ": " + s;
}

std::string query_ranks::sent_to_json() const {
  // (names are exchange_node::name()'s: "exchange[shuffle]" and the like, nothing to escape)
  std::string list;
  int64_t total = 0;
  for (auto& [tag, e] : sent) {
    list += (list.empty() ? "" : ", ") + std::string("{\"exchange\": ") + std::to_string(tag) + ", \"name\": \"" +
            e.first + "\", \"bytes\": " + std::to_string(e.second) + "}";
    total += e.second;
  }
  return "{\"rank\": " + std::to_string(comm->rank()) + ", \"ranks\": " + std::to_string(comm->size()) +
         ", \"sent_bytes\": " + std::to_string(total) +
         ", \"device_bytes\": " + std::to_string(device_bytes) + ", \"sent\": [" + list + "]}";
}

int64_t next_query_number() { return g_query++; }

int64_t sum_over_ranks(int64_t v, double timeout) {
  auto comm = world();
  if (comm->size() == 1) return v;
  query_ranks q;
  q.comm = comm;
  q.query = next_query_number();
  q.timeout = timeout;
  return sum_over_ranks(q, q.take_tag(), v);
}

optimizer_flags flags_for_ranks(optimizer_flags flags, int ranks) {
  if (ranks > 1) flags.late_materialization = false;
  return flags;
}

physical_ptr distribute(physical_ptr root, std::shared_ptr<query_ranks> q, const engine_options& opts,
                        bool leave_split) {
  placer p(q, opts);
  const place where = p.go(root);
  return p.finish(std::move(root), where, opts.collect_on_every_rank && !leave_split, leave_split);
}

}  // namespace tug::dist
