#pragma once
/// Physical plan: operators over partitions. Each node runs on one backend (chosen at lowering),
/// pulls its children's partitions, and returns its own. Per-partition operators run partitions in
/// parallel on the thread pool; blocking operators (aggregate, join, sort, unique, window) collect
/// what they need, and are split into phases (partial -> [exchange] -> final) where that pays, so
/// the multi-GPU issue can put exchanges between them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tug/core/table.hpp"
#include "tug/expr/expr.hpp"
#include "tug/memory/memory_manager.hpp"
#include "tug/plan/logical.hpp"
#include "tug/runtime/options.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {

enum class backend : uint8_t { cpu, cuda };
const char* to_string(backend b);

/// Per-operator figures collected during execution.
struct operator_stats {
  std::string name;
  int64_t rows_in = 0;   ///< rows its children gave it (their rows_out)
  int64_t bytes_in = 0;  ///< their bytes_out
  int64_t rows_out = 0;
  int64_t partitions_out = 0;
  int64_t bytes_out = 0;
  /// The most host (memory_limit's budget) and device (spill_device_limit's) bytes the query had in use
  /// just after a reservation of this operator's own work (memory_account): the operator that drove the
  /// query's peak shows it.
  int64_t peak_host_memory = 0;
  int64_t peak_device_memory = 0;
  /// Bytes moved by transfer_direction while this operator's own work ran: spills that its
  /// reservations caused (device -> pinned/host, host -> disk), and restores of what it read back.
  std::array<int64_t, num_transfer_directions> moved{};
  /// Bytes spilled out of the device (to pinned or pageable host memory), and to disk.
  int64_t spilled_from_device() const;
  int64_t spilled_to_disk() const;
  /// wall time inside the operator, children excluded; for an operator fused into its child (name
  /// "... (fused)"), the time of its work summed over the threads that ran it, which the child's
  /// wall time includes
  double seconds = 0;
  int64_t device_waits = 0;   ///< host waits on the device inside the operator, children excluded (device_waits())
  double wait_seconds = 0;    ///< their time, summed over the threads that waited
  bool fused = false;         ///< the operator's work ran inside its child's, partition by partition
};

struct exec_statistics {
  std::mutex mu;
  std::vector<operator_stats> operators;
  int64_t peak_memory = 0;         ///< host bytes (memory_limit's budget)
  int64_t peak_device_memory = 0;  ///< device bytes (spill_device_limit's budget); 0 without a device
  int64_t peak_disk = 0;           ///< bytes of the query's spill file at its largest
  /// Data moved between tiers, one direction a line (memory_manager::transfers_to_string); empty when nothing moved.
  std::string transfers;
  /// The same as a JSON object, one member a direction (memory_manager::transfers_to_json); empty when not known.
  std::string transfers_json;
  double total_seconds = 0;
  /// A table, one operator a line.
  std::string to_string() const;
  /// Everything to_string shows, as a JSON object: {"operators": [{"name", "rows_in", "bytes_in",
  /// "rows_out", "partitions_out", "bytes_out", "seconds", "device_waits", "wait_seconds", "fused",
  /// "peak_host_memory", "peak_device_memory", "moved": {direction: bytes}}], "peak_memory",
  /// "peak_device_memory", "peak_disk", "total_seconds", "transfers": {direction: {"count", "bytes",
  /// "largest", "seconds"}}}.
  std::string to_json() const;
};

/// Bounds how many partitions the GPU engine works on at once (engine_options::num_streams). Each
/// partition's work holds its device temporaries until it ends and every partition fills the GPU on
/// its own, so running them all at once buys no speed and multiplies the memory (a 16-partition join
/// probe held 16 sets of per-row temporaries). A thread that holds a slot takes no second one, so
/// nested per-partition work passes through.
class device_slots {
 public:
  explicit device_slots(int slots) : _free(slots < 1 ? 1 : slots) {}
  device_slots(const device_slots&) = delete;
  device_slots& operator=(const device_slots&) = delete;
  /// Holds one slot for its lifetime (none when `s` is null or the thread already holds one).
  class guard {
   public:
    explicit guard(device_slots* s);
    ~guard();
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

   private:
    device_slots* _s = nullptr;
  };
  /// Gives the calling thread's slot back (when it holds one) while it lives and takes one again when
  /// it ends, for a thread that must wait for something that is not the device while its guard lives:
  /// a sink's producers wait for room in its queue, and the producer of the partition the queue needs
  /// next may be waiting for a slot (16 threads, 4 slots: every slot held by a waiting producer hung
  /// the seed 4-way join at 95M rows). Take no lock across it.
  class lend {
   public:
    lend();
    ~lend();
    lend(const lend&) = delete;
    lend& operator=(const lend&) = delete;

   private:
    device_slots* _s = nullptr;
  };
  /// The most partitions that were in flight at once (statistics and tests).
  int peak() const { return _peak; }

 private:
  void take();
  void give_back();
  std::mutex _mu;
  std::condition_variable _cv;
  int _free;
  int _held = 0, _peak = 0;
};

/// What an executing operator needs: options, the thread pool, the memory resource, statistics.
struct exec_context {
  const engine_options& options;
  thread_pool& pool;
  memory_resource* mr;
  exec_statistics* stats = nullptr;
  /// Device memory for CUDA operators (nullptr when the plan has none).
  memory_resource* device_mr = nullptr;
  /// The budget device_mr allocates against (nullptr: none), for operators that choose a plan by the
  /// memory left.
  memory_budget* device_budget = nullptr;
  /// Pinned host memory for data on its way to the device (nullptr: pageable `mr` is used).
  memory_resource* staging_mr = nullptr;
  /// Partitions CUDA operators work on at once (nullptr: no bound).
  device_slots* partition_slots = nullptr;
  /// The query's memory manager: data held for later can spill through it (nullptr: nothing spills).
  memory_manager* memory = nullptr;
};

/// Partitions kept while other work runs (a join's probe side while its build side executes, the
/// inputs of a concat, a shared subplan's result): spillable through the query's memory manager, so
/// that the other work can use their memory.
class held_partitions {
 public:
  held_partitions() = default;
  /// Holds `parts` (plainly when the context has no memory manager).
  held_partitions(exec_context& ctx, std::vector<table> parts, spill_priority p);
  /// Holds tables already made spillable, in this order.
  explicit held_partitions(std::vector<spillable_ptr> parts) : _spillable(std::move(parts)) {}
  /// Number of partitions held.
  size_t size() const { return _plain.size() + _spillable.size(); }
  /// Bytes of the partitions as they were made (wherever they are now), and their rows.
  int64_t bytes() const;
  int64_t rows() const;
  /// Rows of partition `i` (known without bringing it back; 0 once taken).
  int64_t rows(size_t i) const;
  /// Partition `i`, brought back; the holder keeps an empty place for it.
  table take(size_t i);
  /// A copy of partition `i`, brought back; the holder keeps it (it spills again once the copy is gone).
  table get(size_t i) const;
  /// A holder of the same partitions whose take() hands out copies (get) and leaves these in place:
  /// what a shared subplan gives each of its consumers.
  held_partitions view() const;
  bool is_view() const { return _view; }
  /// The partitions, in order, brought back from wherever they spilled to; the holder is empty afterwards.
  std::vector<table> take();
  /// Copies of the partitions, in order, brought back; the holder keeps them (and they spill again once
  /// the copies are gone).
  std::vector<table> get() const;

 private:
  std::vector<table> _plain;
  std::vector<spillable_ptr> _spillable;
  bool _view = false;
};

class physical_node;
using physical_ptr = std::unique_ptr<physical_node>;
class table_source;

/// How a node needs the rows of one of its inputs spread over the ranks when a query runs on several
/// (docs/architecture.md, "Multi-rank execution"): src/dist/distribute.cpp puts an exchange below a
/// node whose input is not spread that way.
struct rank_need {
  enum class kind : uint8_t {
    any,   ///< anywhere: the node works on each partition alone
    keys,  ///< rows with equal values of `keys` (input columns; every column when empty) on one rank
    one,   ///< every row on rank 0, in order (a sort, a slice, a window); the other ranks get none
    all,   ///< every row on every rank (a global aggregate's partial states)
  };
  kind k = kind::one;
  std::vector<size_t> keys;
};

class physical_node {
 public:
  virtual ~physical_node() = default;
  /// Operator name as explain() shows it, e.g. "hash_aggregate[partial]".
  virtual std::string name() const = 0;
  /// Parameters for explain().
  virtual std::string detail() const { return {}; }
  /// True where all partitions meet (group_by, join, sort, distinct, over): the multi-GPU engine puts
  /// an exchange before this node.
  virtual bool sync_point() const { return false; }
  /// Runs the operator (and its children) and returns its output partitions, in order.
  std::vector<table> execute(exec_context& ctx);
  /// A rough size of the output in rows, known before running, for choosing a join's build side: the
  /// rows of the largest source below (filters and joins are not estimated); -1 when unknown.
  virtual int64_t size_hint() const;
  /// Output columns that keep their rows together: all rows with equal values of these columns (taken
  /// together) are in one output partition (table_source::key_partitioned, passed on by filters and by
  /// projections that keep the columns). Empty when nothing is known (the default).
  virtual std::vector<std::string> key_partitioned() const { return {}; }
  /// Asks the operator to output only the named columns (a subset of its output, in its order), so
  /// that work on columns no consumer reads is skipped. Returns false when it cannot.
  virtual bool narrow_output(const std::vector<std::string>& names) { return false; }
  /// Multi-rank execution: how the rows of child `i` must be spread over the ranks for this node to
  /// give the one-rank answer. Default: `any` for per_partition() nodes, else `one` (gathered to rank
  /// 0, always right). Joins are placed by src/dist/distribute.cpp itself.
  virtual rank_need input_need(size_t i) const;
  /// Multi-rank execution, scans: from now on read only this rank's share of the source
  /// (table_source::rank_share). False when the source cannot be split: every rank then reads all of it.
  virtual bool read_rank_share(int rank, int size) { return false; }

  /// True for per-partition operators (filter, project, a partial aggregate): process_partition gives
  /// the output of one input partition, and the operator fuses into a child that accepts_fused().
  virtual bool per_partition() const { return false; }
  /// True when the node honours `fused` (scans, and per-partition operators, which pass it on).
  virtual bool accepts_fused() const { return per_partition(); }
  /// Set by a per-partition consumer before it executes this node: the consumer's work (then its own
  /// consumer's, ...), applied to each output partition as soon as it is ready. A scan and the
  /// per-partition operators above it thus run partition by partition: the scan's whole output never
  /// exists at once, only the chain's. Cleared when the node has run.
  partition_hook fused;

  backend where = backend::cpu;
  /// Set by a CUDA consumer before it executes this node: its partitions are wanted in device memory.
  /// A node that completes partitions one by one (a scan) copies each itself as soon as it is ready,
  /// so the copies overlap producing the others; `input` copies whatever is still on the host.
  bool output_to_device = false;
  /// Set by a CPU consumer that holds this node's output (hold_output): a node whose output is held
  /// already (a shared subplan's result) puts a view of it here and returns no partitions, so the
  /// consumer's copies stay spillable. Cleared when the node has run.
  held_partitions* share_into = nullptr;
  schema output_schema;
  std::vector<physical_ptr> children;
  /// Executes `child` (one of `children`, a shared subplan, or a plan's root for its result) for a CPU
  /// consumer, as input_held: its partitions in host memory, each held spillable as soon as it is ready.
  static held_partitions hold_output(physical_node& child, exec_context& ctx, spill_priority p);

 protected:
  virtual std::vector<table> run(exec_context& ctx) = 0;
  /// Executes child `i`, with its partitions moved to this node's memory (device for CUDA nodes).
  std::vector<table> input(size_t i, exec_context& ctx);
  /// input(i), held spillable: on the CPU, each partition becomes spillable as soon as the child has it
  /// (through the child's `fused` hook when it accepts_fused()), so a blocking operator's input never
  /// has to fit in memory at once while it is produced.
  held_partitions input_held(size_t i, exec_context& ctx, spill_priority p);
  /// Applies a consumer's fused work `after` (if any) to out[first..] in parallel, in place; the
  /// partitions' indices are their positions in `out`.
  void apply_after(exec_context& ctx, const partition_hook& after, std::vector<table>& out, size_t first) const;
  /// Applies `f` to every partition in parallel, keeping order (see for_partitions).
  std::vector<table> map_partitions(exec_context& ctx, const std::vector<table>& in,
                                    const std::function<table(const table&)>& f) const;
  /// Runs f(i) for i in [0, n) on the thread pool; on a CUDA node each call holds a device slot, so at
  /// most `num_streams` partitions have device work in flight.
  void for_partitions(exec_context& ctx, int64_t n, const std::function<void(int64_t)>& f) const;
  /// The output of one input partition (in this node's memory), for per_partition() nodes.
  virtual table process_partition(const table& t, exec_context& ctx);
  /// The same, knowing the partition's index among its input's partitions (streaming sinks write in
  /// that order); process_partition unless overridden.
  virtual table process_indexed(const table& t, size_t index, exec_context& ctx) { return process_partition(t, ctx); }
  /// run() of a per_partition() node: fused into child 0 when it accepts_fused(), else over the
  /// child's partitions; `fused` is applied to every output either way.
  std::vector<table> run_per_partition(exec_context& ctx);

 private:
  /// Set when this node's work ran inside its child's: its time and device waits there (statistics).
  struct fused_totals;
  std::shared_ptr<fused_totals> _fused;
  /// While it runs with statistics on: what its own work reserved and moved.
  std::shared_ptr<memory_account> _account;
  /// Its line in exec_statistics::operators once it ran (its consumer's rows_in).
  int64_t _stats_line = -1;
};

/// What the filters of every backend share: the predicate, and which input columns the output keeps
/// (narrow_output: the predicate may read columns no consumer needs). A backend filters one partition.
class filter_node : public physical_node {
 public:
  explicit filter_node(expr pred) : _pred(std::move(pred)) {}
  std::string name() const override { return "filter"; }
  std::string detail() const override;
  bool narrow_output(const std::vector<std::string>& names) override;
  bool per_partition() const override { return true; }
  /// The child's: a filter keeps rows where they are.
  std::vector<std::string> key_partitioned() const override;
  const expr& predicate() const { return _pred; }
  /// Input columns the output keeps, in order (empty: all of them).
  const std::vector<size_t>& kept() const { return _keep; }

 protected:
  std::vector<table> run(exec_context& ctx) final { return run_per_partition(ctx); }
  table process_partition(const table& t, exec_context& ctx) final;
  /// The rows of partition `t` (whose schema is `in`) where the predicate is true, kept_columns(t)
  /// only. Called for every partition in parallel.
  virtual table filter_partition(const table& t, const schema& in, exec_context& ctx) const = 0;
  /// The columns of input partition `t` that the output keeps.
  table kept_columns(const table& t) const { return _keep.empty() ? t : t.select(_keep); }
  expr _pred;

 private:
  std::vector<size_t> _keep;
};

/// Asks `child` to output only the columns that `exprs` read (in the child's order), when they are
/// some but not all of its columns; the expressions refer to columns by name, so they still resolve.
void narrow_to_used(physical_node& child, const std::vector<expr>& exprs);

/// True when any node of the plan runs on `b`.
bool uses_backend(const physical_node& root, backend b);

/// Indented physical plan with backends and sync points.
std::string to_string(const physical_node& root);

/// One simple aggregation over an input column (or over rows, for len).
struct agg_spec {
  agg_op op = agg_op::sum;
  int64_t input = -1;                     ///< column index in the operator's input; -1 for len
  data_type input_type;                   ///< type of the input column
  data_type output_type;                  ///< result type (agg_result_type)
  int ddof = 1;                           ///< std / var
  double q = 0.5;                         ///< quantile
  std::string interpolation = "nearest";  ///< quantile
};

/// One `over` column: an aggregation per group of key columns, broadcast to every row.
struct window_spec {
  std::vector<size_t> keys;  ///< key column indices in the input
  agg_spec agg;
};

/// How a join combines its inputs. Right joins are lowered to left joins with the sides swapped.
struct join_spec {
  join_type how = join_type::inner;  ///< inner, left, full, semi, anti or cross
  std::vector<size_t> left_keys;     ///< key column indices on the left (same types as right_keys)
  std::vector<size_t> right_keys;
  /// Right columns appended after all left columns (inner/left/full/cross); ignored for semi/anti.
  std::vector<size_t> right_columns;
};

/// What the projections of every backend share: the expressions, name, detail, and the output of
/// a partition (one column per expression; no expressions: the partition's rows and no columns). A
/// backend evaluates the expressions over one partition.
class project_node : public physical_node {
 public:
  explicit project_node(std::vector<expr> exprs) : _exprs(std::move(exprs)) {}
  std::string name() const override { return "project"; }
  std::string detail() const override;
  /// Drops the expressions of the other columns and narrows the child to the columns the rest read.
  bool narrow_output(const std::vector<std::string>& names) override;
  bool per_partition() const override { return true; }
  /// The child's, renamed as the expressions pass them on (plain columns, maybe aliased); empty when
  /// one of them is not passed on.
  std::vector<std::string> key_partitioned() const override;
  const std::vector<expr>& exprs() const { return _exprs; }

 protected:
  std::vector<table> run(exec_context& ctx) final { return run_per_partition(ctx); }
  table process_partition(const table& t, exec_context& ctx) final;
  /// One column per expression over partition `t`, whose schema is `in`. Called for every partition
  /// in parallel.
  virtual std::vector<column> evaluate_partition(const table& t, const schema& in, exec_context& ctx) const = 0;

 private:
  std::vector<expr> _exprs;
};

/// What the slices of every backend share: the window of rows [offset, offset+length) of the
/// concatenated input (Polars semantics: a negative offset counts from the end, the window is clipped
/// to the rows that exist; length -1 = all). A backend's subclass runs `window` over its partitions.
class slice_node : public physical_node {
 public:
  slice_node(int64_t offset, int64_t length) : _offset(offset), _length(length) {}
  std::string name() const override { return "slice"; }
  std::string detail() const override;
  int64_t offset() const { return _offset; }
  int64_t length() const { return _length; }

 protected:
  /// The window as zero-copy slices of `parts`, in order; one empty slice of parts[0] when no row is
  /// in it (none when there are no partitions).
  std::vector<table> window(const std::vector<table>& parts) const;

 private:
  int64_t _offset, _length;
};

/// What the row indexes of every backend share: each partition's first index (the offset plus the
/// rows before it), and the output layout (the int64 index column, then the input columns). A backend
/// supplies the index column of one partition.
class row_index_node : public physical_node {
 public:
  explicit row_index_node(int64_t offset) : _offset(offset) {}
  std::string name() const override { return "row_index"; }
  /// On the CPU the consumers' work runs on each indexed partition as it is made: the input is held
  /// spillable as it is produced, and each partition comes back alone once every row count is known.
  bool accepts_fused() const override { return where == backend::cpu; }

 protected:
  std::vector<table> run(exec_context& ctx) final;
  /// The non-null int64 column start, start + 1, ..., start + n - 1, in this backend's memory.
  /// Called for every partition in parallel.
  virtual column index_column(int64_t start, int64_t n, exec_context& ctx) const = 0;

 private:
  int64_t _offset;
};

/// What the joins of every backend share: the spec (checked), name, detail, and the output layout:
/// left_columns() then `right_columns` (inner, left, full, cross), or left_columns() alone (semi,
/// anti); the left columns are null in a full join's unmatched right rows. left_columns() is every
/// left column unless narrow_output kept fewer (narrowing also drops entries of `right_columns`): key
/// columns still match rows but are gathered into the output only when kept. A backend's subclass
/// joins in join_partitions().
class join_node : public physical_node {
 public:
  explicit join_node(join_spec spec);
  std::string name() const override;
  std::string detail() const override;
  bool sync_point() const override { return true; }
  /// A consumer's per-partition work runs on each output partition: as it is probed, when the
  /// backend streams_probe(), else on the outputs of join_partitions.
  bool accepts_fused() const override { return true; }
  bool narrow_output(const std::vector<std::string>& names) override;
  const join_spec& spec() const { return _spec; }
  /// Left input columns the output holds, in order (all of them unless narrowed).
  std::vector<size_t> left_columns() const;

 protected:
  std::vector<table> run(exec_context& ctx) final;
  /// Joins the left (child 0) and right (child 1) partitions.
  virtual std::vector<table> join_partitions(std::vector<table> left, std::vector<table> right, exec_context& ctx) = 0;
  /// True when the backend streams the left side: run() then executes the right (build) side first and
  /// hands it to start_probe, then probes each left partition as it is ready (process_partition, fused
  /// into the left child: a scan's partitions are probed as they are decoded and never all exist at
  /// once), then calls finish_probe. Else run() gives both sides to join_partitions.
  virtual bool streams_probe(const exec_context&) const { return false; }
  /// Streaming: indexes the build side for process_partition.
  virtual void start_probe(std::vector<table> right, exec_context& ctx) {
    (void)right;
    (void)ctx;
  }
  /// Streaming, after the last left partition: the output rows that depend on every probe (a full
  /// join's unmatched right rows; none for the other joins). Releases the build side.
  virtual std::vector<table> finish_probe(exec_context& ctx) {
    (void)ctx;
    return {};
  }
  /// Both sides split into `count` hash buckets by their keys (spillable), then joined bucket by
  /// bucket with join_partitions: a join whose input does not fit in memory (exec::external_buckets).
  /// The output is in bucket order, not the input's; `after` runs on each output partition.
  std::vector<table> join_buckets(held_partitions& left, held_partitions& right, size_t count,
                                  const partition_hook& after, exec_context& ctx);
  /// Semi and anti joins: the output is the left rows that have (semi) or lack (anti) a match.
  bool filtering() const { return _spec.how == join_type::semi || _spec.how == join_type::anti; }
  /// Rows per output partition (options.target_partition_rows, at least 1).
  static int64_t target_rows(const exec_context& ctx);
  /// Empty host table with the column types of `s` (no columns: zero rows).
  static table empty_table(const schema& s);
  /// An output table: the columns of `left`, then those of `right` (equal row counts); a table of
  /// left's rows when neither has columns.
  static table join_columns(const table& left, const table& right);
  /// The right input columns a build side needs: the keys (none for cross joins), then `right_columns`.
  std::vector<size_t> build_columns() const;
  join_spec _spec;

 private:
  bool _narrowed = false;
  std::vector<size_t> _left_keep;  ///< left_columns() once narrowed
};

/// What the sorts of every backend share: the keys with descending / nulls_last per key (checked),
/// stable, the limit (top-k: >= 0 keeps the first `limit` rows), name and detail, and the cases that
/// need no sorting (no partitions, no rows, limit 0). A backend sorts the rest.
class sort_node : public physical_node {
 public:
  sort_node(std::vector<size_t> keys, std::vector<bool> descending, std::vector<bool> nulls_last, bool stable,
            int64_t limit);
  std::string name() const override { return _limit >= 0 ? "top_k" : "sort"; }
  std::string detail() const override;
  bool sync_point() const override { return true; }
  /// On the CPU a consumer's per-partition work runs on each output partition (of each range, out of core).
  bool accepts_fused() const override { return where == backend::cpu; }
  const std::vector<size_t>& keys() const { return _keys; }
  const std::vector<bool>& descending() const { return _descending; }
  const std::vector<bool>& nulls_last() const { return _nulls_last; }
  bool stable() const { return _stable; }
  int64_t limit() const { return _limit; }
  /// Where each row of `keys` (the key columns of some rows) falls among `bounds` (the key columns of
  /// sorted, distinct rows): 2j when it sorts after bound j-1 and before bound j, 2j+1 when it equals
  /// bound j. The CPU's (exec::range_sort); other backends do not sort out of core.
  virtual std::vector<uint32_t> locate(const table& keys, const table& bounds, exec_context& ctx) const {
    throw internal_error("operator " + name() + " has no range buckets on this backend");
  }
  /// Sorts the `n` > 0 rows of `parts` (at least one partition; limit != 0) and returns the first
  /// rows_wanted(n) of them, in order.
  virtual std::vector<table> sort_partitions(const std::vector<table>& parts, int64_t n, exec_context& ctx) = 0;

 protected:
  /// An input that may not fit (exec::external_buckets) is sorted out of core on the CPU, in ranges
  /// (exec::range_sort); else sort_partitions sorts it whole.
  std::vector<table> run(exec_context& ctx) final;
  /// How many rows the output has for `n` input rows: all, or the limit when smaller.
  int64_t rows_wanted(int64_t n) const { return _limit < 0 ? n : std::min(_limit, n); }

  std::vector<size_t> _keys;
  std::vector<bool> _descending;
  std::vector<bool> _nulls_last;
  bool _stable;  ///< informational: both backends always sort stably
  int64_t _limit;
};

/// What the `over` window operators of every backend share: their specs. Each appends one column per
/// spec to its input's columns, keeping the input's partitions and row order. On several ranks, a CPU
/// window whose specs share one key set runs where a shuffle by those keys puts its rows, and its output
/// is put back in input order (src/dist/distribute.cpp); others gather every row to rank 0.
class window_node : public physical_node {
 public:
  explicit window_node(std::vector<window_spec> specs) : _specs(std::move(specs)) {}
  bool sync_point() const override { return true; }
  const std::vector<window_spec>& specs() const { return _specs; }

 protected:
  std::vector<window_spec> _specs;
};

/// What the distinct operators of every backend share: the subset of key columns (empty: all), which
/// row of a group survives, maintain_order (informational: both backends keep input order), name and
/// detail. A backend deduplicates the partitions (none when there are no partitions).
class unique_node : public physical_node {
 public:
  unique_node(std::vector<size_t> subset, unique_keep keep, bool maintain_order)
      : _subset(std::move(subset)), _keep(keep), _maintain_order(maintain_order) {}
  std::string name() const override { return "unique"; }
  std::string detail() const override;
  bool sync_point() const override { return true; }
  /// Rows with equal subset columns on one rank; all rows on rank 0 with maintain_order.
  rank_need input_need(size_t i) const override;

 protected:
  std::vector<table> run(exec_context& ctx) final;
  /// The surviving rows of `parts` (at least one partition), in input order.
  virtual std::vector<table> unique_partitions(std::vector<table> parts, exec_context& ctx) = 0;
  std::vector<size_t> _subset;
  unique_keep _keep;
  bool _maintain_order;
};

/// The children's partitions one after another, moved to this node's memory: the same on every backend.
class concat_node final : public physical_node {
 public:
  std::string name() const override { return "concat"; }

 protected:
  std::vector<table> run(exec_context& ctx) override;
};

/// Where a streaming sink sends a query's result: partition by partition, as each is ready.
class partition_writer {
 public:
  virtual ~partition_writer() = default;
  /// Partition `index` of the result, in host memory; called once for each index 0..n-1, from several
  /// threads at once and in any order.
  virtual void write(table t, size_t index) = 0;
  /// After the last partition, with their number. A writer that is destroyed without finish() leaves
  /// no partial output behind where it can (a file that is not complete is removed).
  virtual void finish(size_t n) = 0;
};

/// Operator factories. The backend is chosen by the lowering; `backend::cuda` throws
/// not_implemented_error until the GPU issue lands, and the lowering falls back per `fallback_mode`.
namespace exec {
/// input_need of a group-by's blocking phase (both backends): rows with equal keys on one rank; with
/// maintain_order, every row on rank 0 (groups in order of first appearance); without keys, the partial
/// states on every rank when the input is partial states (`merges_states`), else every row on rank 0.
rank_need aggregate_need(const std::vector<size_t>& keys, bool maintain_order, bool merges_states);
/// What the lowering asks a backend before placing a node on it.
struct op_request {
  const char* op;                 ///< the factory's name: "filter", "project", "aggregate", ...
  const schema* input = nullptr;  ///< the node's (first) input schema
  std::vector<expr> exprs{};      ///< resolved expressions the node evaluates
  std::vector<agg_spec> aggs{};   ///< aggregations (aggregate, window)
  std::vector<size_t> keys{};     ///< key columns in `input` (aggregate, join, sort, unique, window)
};
/// Empty when backend `b` can run `r`, else the reason it cannot (named in fallback messages).
std::string backend_unsupported(backend b, const op_request& r);
/// A subplan shared by several consumers: the first consumer to execute it runs it, the others get
/// the same partitions. Create one `shared_subplan` per shared logical node, then one node per use.
struct shared_subplan;
std::shared_ptr<shared_subplan> make_shared_subplan(physical_ptr child);
physical_ptr make_cache(const std::shared_ptr<shared_subplan>& shared);
/// The root of the shared subplan that `n` reads when it is a cache node, else nullptr (the subplan is
/// no child of its cache nodes: walks of the plan that count operators visit it through this, once).
const physical_node* cached_subplan(const physical_node& n);
/// The same, for changing the subplan before it runs (multi-rank execution puts exchanges into it);
/// nullptr when `n` is no cache node.
physical_ptr* cached_subplan_root(physical_node& n);
/// Reads `columns` of a source; `predicates` let the source skip data (the lowering filters after);
/// `limit` >= 0: only the first `limit` rows are needed (table_source::read; the slice stays above).
physical_ptr make_scan(backend b, std::shared_ptr<const table_source> src, std::vector<std::string> columns,
                       std::vector<expr> predicates, int64_t limit, schema out);
/// Keeps rows where the resolved boolean `predicate` is true.
physical_ptr make_filter(backend b, physical_ptr child, expr predicate);
/// Evaluates resolved, elementwise `exprs` (no aggregations, no windows) per partition.
physical_ptr make_project(backend b, physical_ptr child, std::vector<expr> exprs, schema out);
/// Group-by aggregation: output = key columns, then one column per agg. With no keys, one row.
/// `maintain_order` keeps groups in order of first appearance.
physical_ptr make_aggregate(backend b, physical_ptr child, std::vector<size_t> keys, std::vector<agg_spec> aggs,
                            bool maintain_order, schema out);
/// Group-by aggregation of each partition alone, for input whose key_partitioned() columns are among
/// `keys` (no group spans two partitions): one output partition per input partition, fused into the
/// scan, no merge; groups in order of first appearance. CPU only: the lowering places it on backend::cpu.
physical_ptr make_partitionwise_aggregate(backend b, physical_ptr child, std::vector<size_t> keys,
                                          std::vector<agg_spec> aggs, schema out);
/// Appends one column per window spec, rows in input order.
physical_ptr make_window(backend b, physical_ptr child, std::vector<window_spec> specs, schema out);
/// Joins child 0 (left, probe) with child 1 (right, build).
physical_ptr make_join(backend b, physical_ptr left, physical_ptr right, join_spec spec, schema out);
/// Sorts by key columns; `limit` >= 0 keeps only the first `limit` rows (top-k).
physical_ptr make_sort(backend b, physical_ptr child, std::vector<size_t> keys, std::vector<bool> descending,
                       std::vector<bool> nulls_last, bool stable, int64_t limit);
/// Rows [offset, offset+length) of the concatenated input; negative offset counts from the end; length -1 = all.
physical_ptr make_slice(backend b, physical_ptr child, int64_t offset, int64_t length);
/// Distinct rows over `subset` columns (all when empty).
physical_ptr make_unique(backend b, physical_ptr child, std::vector<size_t> subset, unique_keep keep,
                         bool maintain_order);
physical_ptr make_concat(backend b, std::vector<physical_ptr> children, schema out);
/// Hands each partition of the child's output to `w` as soon as it is ready (on the host), then
/// finish(); outputs nothing. Fused into a scan and the per-partition operators above it, the result
/// is written while it is read.
physical_ptr make_sink(physical_ptr child, std::shared_ptr<partition_writer> w);
/// Prepends an int64 row index starting at `offset`.
physical_ptr make_row_index(backend b, physical_ptr child, int64_t offset, schema out);
/// Appends `columns` of `src`, gathered by the child's int64 column `row_column` (global row positions
/// in src's partitions concatenated; table_source::take_rows). CPU only: the lowering places it on backend::cpu.
physical_ptr make_take(backend b, physical_ptr child, std::shared_ptr<const table_source> src,
                       std::vector<std::string> columns, std::string row_column, schema out);
/// Runs user kernel `k` on every partition as it is read (a per-partition node, fused into the scan):
/// the kept input columns, then the kernel's declared outputs (src/exec/user_kernel.cpp).
physical_ptr make_map_partitions(backend b, physical_ptr child, std::shared_ptr<const user_kernel> k, schema out);
}  // namespace exec

}  // namespace tug
