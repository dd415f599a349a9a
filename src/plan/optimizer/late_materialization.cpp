// Late materialization: a chain of filters, projections and slices over an in-memory frame or Parquet
// files (when the scan's pushed-down predicates prune no rows) carries
// only the columns it reads plus a row index; the columns it merely passes through ("passengers")
// are gathered for the surviving rows at the end by a `take` (docs/gpu.md, "Late materialization
// across PCIe"). The row index also travels through joins (on a side whose rows never turn into
// nulls), so the take can sit above a selective filter above a join; both sides of a join may carry
// their own. A shared node on the way may lose its passengers when its other consumers (an
// aggregate, a select) do not read them. Runs last, on the plan the other passes left.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "tug/io/parquet_source.hpp"
#include "tug/memory/device.hpp"
#include "tug/plan/optimizer.hpp"
#include "util.hpp"

namespace tug::passes {

namespace {

/// The row-index column the rewrite adds (no rewrite when a column of the chain has this name).
constexpr const char* row_column = "__tug_row";

/// Row-preserving nodes of one input the rewrite carries the row index through.
bool in_chain(const plan_node& n) {
  switch (n.kind) {
    case plan_kind::filter:
    case plan_kind::with_columns:
    case plan_kind::slice:
      return true;
    case plan_kind::select: {
      // an aggregating select changes the rows; a select of literals alone has no row-wise input
      bool reads = false;
      for (auto& e : n.exprs) {
        if (contains_agg(e)) return false;
        reads |= !referenced_columns(e).empty();
      }
      return reads;
    }
    default:
      return false;
  }
}

bool is_bare_column(const expr& e, const std::string& name) { return e->kind == expr_kind::column && e->name == name; }

/// Bytes of the columns `names` over all partitions of `src` (a Parquet source's: uncompressed, from
/// the footers).
int64_t column_bytes(const table_source& source, const std::vector<std::string>& names) {
  if (auto* pq = dynamic_cast<const io::parquet_source*>(&source)) return pq->column_bytes(names);
  const auto& src = dynamic_cast<const memory_source&>(source);
  std::vector<size_t> idx;
  for (auto& c : names)
    idx.push_back(src.schema().index_of(c));
  int64_t b = 0;
  for (auto& p : src.partitions())
    for (size_t i : idx)
      b += p[i].memory_usage();
  return b;
}

/// The most rows, as an estimated fraction, a chain over an in-memory frame may keep for the rewrite to
/// pay: the take gathers each kept row's passengers once more (on the host, and across PCIe a second
/// time on the GPU), so it wins only when the chain drops most rows. A filter that keeps nearly all rows
/// (an is_not_null over a column with few nulls) made the seed's group_by + join query 2.7x slower on
/// the GPU.
constexpr double max_kept = 0.5;

/// Fraction of rows a predicate keeps when nothing is known of its columns: PostgreSQL's defaults
/// (DEFAULT_EQ_SEL 0.005, DEFAULT_INEQ_SEL 1/3, DEFAULT_MATCH_SEL 0.005 for string matches,
/// DEFAULT_UNK_SEL 0.005 for is_null; anything else 0.5).
constexpr double default_kept_eq = 0.005;

double default_kept(const expr& e) {
  constexpr double eq = default_kept_eq, range = 1.0 / 3;
  if (e->kind != expr_kind::function) return 0.5;
  switch (e->func) {
    case fn::eq:
      return eq;
    case fn::ne:
      return 1.0 - eq;
    case fn::lt:
    case fn::le:
    case fn::gt:
    case fn::ge:
    case fn::is_between:
      return range;
    case fn::is_in:
      return std::min(0.5, eq * static_cast<double>(e->list.size()));
    case fn::is_null:
      return eq;
    case fn::is_not_null:
      return 1.0 - eq;
    case fn::str_contains:
    case fn::str_starts_with:
    case fn::str_ends_with:
      return eq;
    default:
      return 0.5;
  }
}

/// One piece of a source's rows (a Parquet row group, an in-memory partition) as the estimate sees it:
/// its rows and the statistics of the source columns, by the chain's current names.
struct piece_view {
  double rows = 0;
  std::map<std::string, const column_statistics*> columns;

  const column_statistics* of(const expr& e) const {
    if (e->kind != expr_kind::column) return nullptr;
    auto it = columns.find(e->name);
    return it == columns.end() ? nullptr : it->second;
  }
  /// Share of the rows where the column is not null (1 when unknown).
  double valid(const column_statistics& st) const {
    return st.null_count && rows > 0 ? std::clamp(1.0 - static_cast<double>(*st.null_count) / rows, 0.0, 1.0) : 1.0;
  }
};

bool is_numeric_like(type_id t) {
  return is_integer(t) || is_floating(t) || t == type_id::decimal128 || t == type_id::date32 ||
         t == type_id::timestamp || t == type_id::duration;
}

/// The value `v` as a number comparable with the statistics of a column of type `t` (dates, times and
/// decimals by their value); nullopt when it is null or of a type not comparable so.
std::optional<double> number_of(const scalar& v, const data_type& t) {
  if (v.is_null() || !is_numeric_like(t.id)) return std::nullopt;
  const data_type& lt = v.type();
  const bool both_plain = (is_integer(lt.id) || is_floating(lt.id)) && (is_integer(t.id) || is_floating(t.id));
  if (!(lt.id == t.id && lt.scale == t.scale) && !both_plain) return std::nullopt;
  try {
    return v.as_double();
  } catch (const error&) {
    return std::nullopt;
  }
}

/// The literal expression `e` as number_of(), or nullopt when it is not a literal.
std::optional<double> number_of(const expr& e, const data_type& t) {
  const expr& x = e->kind == expr_kind::alias ? e->args[0] : e;
  return x->kind == expr_kind::literal ? number_of(x->value, t) : std::nullopt;
}

/// A comparison of one column with literals, as the range of values it keeps.
struct range_test {
  std::string column;
  double lo = -HUGE_VAL, hi = HUGE_VAL;
  bool point = false;  ///< an equality
};

/// The predicate `f(args)` as a range test over a numeric-like column of the piece, or nullopt.
std::optional<range_test> as_range(fn f, const std::vector<expr>& args, const piece_view& pv) {
  if (args.empty()) return std::nullopt;
  size_t c = 0;
  if (f != fn::is_between && !pv.of(args[0]) && args.size() == 2 && pv.of(args[1])) {
    c = 1;  // literal op column: mirror
    f = f == fn::lt ? fn::gt : f == fn::le ? fn::ge : f == fn::gt ? fn::lt : f == fn::ge ? fn::le : f;
  }
  const column_statistics* st = pv.of(args[c]);
  if (!st || !st->min || st->min->is_null()) return std::nullopt;
  const data_type& t = st->min->type();
  range_test r{args[c]->name};
  auto lit = [&](size_t i) { return i < args.size() ? number_of(args[i], t) : std::nullopt; };
  std::optional<double> a = lit(1 - c), b;
  switch (f) {
    case fn::eq:
      if (!a) return std::nullopt;
      r.lo = r.hi = *a;
      r.point = true;
      return r;
    case fn::lt:
    case fn::le:
      if (!a) return std::nullopt;
      r.hi = *a;
      return r;
    case fn::gt:
    case fn::ge:
      if (!a) return std::nullopt;
      r.lo = *a;
      return r;
    case fn::is_between:
      a = lit(1), b = lit(2);
      if (!a || !b) return std::nullopt;
      r.lo = *a;
      r.hi = *b;
      return r;
    default:
      return std::nullopt;
  }
}

/// `e` as a range test (as above), or nullopt.
std::optional<range_test> as_range(const expr& e, const piece_view& pv) {
  if (e->kind == expr_kind::alias) return as_range(e->args[0], pv);
  if (e->kind != expr_kind::function) return std::nullopt;
  return as_range(e->func, e->args, pv);
}

/// Share of a column's non-null values in [lo, hi], the values spread evenly between the piece's min and
/// max (integers, dates and times as whole steps, so an equality keeps one value of max - min + 1).
double range_share(const column_statistics& st, double lo, double hi, bool point) {
  const double mn = st.min->as_double(), mx = st.max && !st.max->is_null() ? st.max->as_double() : mn;
  const type_id t = st.min->type().id;
  const bool steps = !is_floating(t) && t != type_id::decimal128;
  if (hi < mn || lo > mx || lo > hi) return 0.0;
  if (mx <= mn) return 1.0;  // one value, inside [lo, hi]
  if (point && st.distinct_count) return 1.0 / static_cast<double>(std::max<int64_t>(1, *st.distinct_count));
  if (point) return steps ? 1.0 / (mx - mn + 1.0) : default_kept_eq;
  const double width = mx - mn + (steps ? 1.0 : 0.0);
  const double a = std::max(lo, mn), b = std::min(hi, mx) + (steps ? 1.0 : 0.0);
  return std::clamp((b - a) / width, 0.0, 1.0);
}

/// Share of a column's non-null values equal to the literal `v`: none when `v` lies outside the piece's
/// min and max, else one of its distinct values (strings too, by the dictionary's size); nullopt when
/// the statistics say nothing.
std::optional<double> equal_share(const column_statistics& st, const scalar& v) {
  if (v.is_null()) return 0.0;
  if (st.min && !st.min->is_null() && st.max && !st.max->is_null()) {
    const data_type& t = st.min->type();
    if (t.id == type_id::string && v.type().id == type_id::string) {
      if (v.as_string() < st.min->as_string() || v.as_string() > st.max->as_string()) return 0.0;
    } else if (auto x = number_of(v, t)) {
      return range_share(st, *x, *x, true);
    }
  }
  if (st.distinct_count) return 1.0 / static_cast<double>(std::max<int64_t>(1, *st.distinct_count));
  return std::nullopt;
}

/// `args` as a column of the piece and a literal (either order).
std::optional<std::pair<const column_statistics*, scalar>> column_and_literal(const std::vector<expr>& args,
                                                                              const piece_view& pv) {
  if (args.size() != 2) return std::nullopt;
  for (size_t c : {0, 1}) {
    const expr& other = args[1 - c]->kind == expr_kind::alias ? args[1 - c]->args[0] : args[1 - c];
    if (const column_statistics* st = pv.of(args[c]); st && other->kind == expr_kind::literal)
      return std::make_pair(st, other->value);
  }
  return std::nullopt;
}

double kept_in_piece(const expr& e, const piece_view& pv);

/// Estimated fraction of the piece's rows that all of `parts` keep: range tests of one column
/// intersected, the rest independent.
double kept_conjuncts(const std::vector<expr>& parts, const piece_view& pv) {
  double kept = 1.0;
  std::map<std::string, range_test> ranges;  // per column: the intersection of its range tests
  for (auto& x : parts) {
    if (auto r = as_range(x, pv)) {
      auto [it, fresh] = ranges.emplace(r->column, *r);
      if (!fresh) {
        it->second.lo = std::max(it->second.lo, r->lo);
        it->second.hi = std::min(it->second.hi, r->hi);
        it->second.point |= r->point;
      }
    } else {
      kept *= kept_in_piece(x, pv);
    }
  }
  for (auto& [name, r] : ranges) {
    const column_statistics& st = *pv.columns.at(name);
    kept *= pv.valid(st) * range_share(st, r.lo, r.hi, r.point);
  }
  return kept;
}

/// Estimated fraction of the piece's rows that `e` keeps: conjunctive ranges over one column intersected
/// and spread evenly between its min and max, null counts exactly, other parts independent; textbook
/// fractions where the statistics say nothing.
double kept_in_piece(const expr& e, const piece_view& pv) {
  if (e->kind == expr_kind::alias) return kept_in_piece(e->args[0], pv);
  if (e->kind == expr_kind::literal) {
    if (e->value.is_null()) return 0.0;
    if (auto* b = std::get_if<bool>(&e->value.value())) return *b ? 1.0 : 0.0;
    return 0.5;
  }
  if (e->kind != expr_kind::function) return 0.5;
  switch (e->func) {
    case fn::and_: {
      std::vector<expr> parts;
      opt::split_conjunction(e, parts);
      return kept_conjuncts(parts, pv);
    }
    case fn::or_: {
      double a = kept_in_piece(e->args[0], pv), b = kept_in_piece(e->args[1], pv);
      return a + b - a * b;
    }
    case fn::not_:
      return 1.0 - kept_in_piece(e->args[0], pv);
    case fn::is_null:
    case fn::is_not_null: {
      const column_statistics* st = pv.of(e->args[0]);
      if (!st || !st->null_count) return default_kept(e);
      return e->func == fn::is_null ? 1.0 - pv.valid(*st) : pv.valid(*st);
    }
    case fn::eq:
    case fn::ne: {  // ne: all but an equality's share
      if (auto cl = column_and_literal(e->args, pv))
        if (std::optional<double> eq = equal_share(*cl->first, cl->second))
          return pv.valid(*cl->first) * (e->func == fn::eq ? *eq : 1.0 - *eq);
      return default_kept(e);
    }
    case fn::is_in: {
      const column_statistics* st = pv.of(e->args[0]);
      if (!st) return default_kept(e);
      double kept = 0.0;
      for (auto& v : e->list) {
        std::optional<double> x = equal_share(*st, v);
        if (!x) return default_kept(e);
        kept += *x;
      }
      return pv.valid(*st) * std::min(1.0, kept);
    }
    default:
      if (auto r = as_range(e, pv)) {
        const column_statistics& st = *pv.columns.at(r->column);
        return pv.valid(st) * range_share(st, r->lo, r->hi, r->point);
      }
      return default_kept(e);
  }
}

/// Whether a take of the passengers `moved` of Parquet files, for the estimated fraction `kept` of their
/// rows, costs clearly less (by a fifth) than decoding them in the scan. In bytes of decoded values: the scan decodes every
/// value and its filter copies the kept ones; the take decompresses and walks each data page holding a
/// kept row (with kept rows spread evenly, a page of R rows holds one with probability 1 - (1 - kept)^R),
/// converts the kept values at twice the cost of a sequential decode, and pays for the row index
/// (made and filtered for every scanned row) and for sorting and looking up the kept rows' ids.
bool take_pays(const io::parquet_source& src, const std::vector<std::string>& moved, double kept) {
  constexpr double page_walk = 0.25;  // decompressing and walking a page, per decoded byte
  constexpr double selective = 2.0;   // converting a kept value, per byte
  constexpr double index_bytes = 16;  // the row index, per scanned row
  constexpr double id_bytes = 24;     // a kept row's id
  const auto rows = static_cast<double>(src.num_rows());
  if (rows == 0) return false;
  double scan = 0, take = rows * index_bytes + kept * rows * id_bytes;
  for (auto& c : moved) {
    const data_type& t = src.schema()[src.schema().index_of(c)].type;
    // decoded bytes: fixed-width values, or strings' offsets and bytes (the footer's sizes of dictionary
    // pages say little of the latter: at least 8 bytes a string)
    const double decoded = t.id == type_id::string ? std::max(static_cast<double>(src.column_bytes({c})), rows * 16.0)
                                                   : rows * size_of(t.id);
    const double page_rows = rows / static_cast<double>(std::max<int64_t>(1, src.data_pages(c)));
    const double touched = 1.0 - std::pow(1.0 - kept, page_rows);
    scan += decoded * (1.0 + kept);
    take += decoded * (touched * page_walk + kept * selective);
  }
  // The model is rough: takes it priced just below the scan's cost ran 1.1x to 1.5x slower (PDS-H SF10
  // Q14, Q15, Q19 on one H100, bench/results/2026-11-26-latemat-ab-sf10-h100/interleaved): it must win
  // by a fifth.
  return 1.2 * take < scan;
}

/// The source of scan `n` when a take may gather its columns by row position: an in-memory source in
/// host memory (data already in device memory crosses no link, and the take gathers on the host), or
/// Parquet files whose scan skips no rows by its pushed-down predicates (statistics, page index): its
/// rows then come in file and row group order, so a row index above it is the global row position, and
/// the rewrite (moving the predicates above the row index) does not lose the skipping. Else null.
std::shared_ptr<const table_source> takeable_source(const plan_node& n) {
  if (n.kind != plan_kind::scan) return nullptr;
  if (auto pq = std::dynamic_pointer_cast<const io::parquet_source>(n.source))
    return pq->prunes(n.predicates) ? nullptr : pq;
  auto src = std::dynamic_pointer_cast<const memory_source>(n.source);
  if (!src) return nullptr;
  for (auto& part : src->partitions())
    if (on_device(part)) return nullptr;
  return src;
}

/// Whether every output row of join `j` takes its input `side` columns from one row of that side
/// (never nulls in their place), so that a row index carried through the side stays valid.
bool carries(const plan_node& j, size_t side) {
  switch (j.how) {
    case join_type::inner:
    case join_type::cross:
      return true;
    case join_type::left:
    case join_type::semi:
    case join_type::anti:
      return side == 0;
    case join_type::right:
      return side == 1;
    default:
      return false;
  }
}

/// The columns a node outside a rewrite reads from an input the rewrite narrows, when its output
/// does not depend on the input's other columns (a group_by, a select); nullopt otherwise.
std::optional<std::set<std::string>> consumer_reads(const plan_node& p) {
  if (p.kind != plan_kind::group_by && p.kind != plan_kind::select) return std::nullopt;
  std::set<std::string> r;
  for (auto* v : {&p.keys, &p.exprs})
    for (auto& e : *v)
      for (auto& c : referenced_columns(e))
        r.insert(c);
  return r;
}

/// A part of the plan the rewrite carries row indexes through: link nodes from a top down to
/// in-memory scans, each entered once.
struct region {
  struct member {
    plan_ptr node;
    int parent = -1;        ///< index of the member above (-1: the top)
    std::vector<int> kids;  ///< per input: the member it is, or -1 (rewritten on its own)
  };
  /// A scan whose passengers a take gathers at the top by the row index `row`.
  struct carrier {
    int leaf = 0;
    std::shared_ptr<const table_source> src;
    std::vector<std::string> moved;  ///< the passengers, in the scan's order
    std::string row;
  };
  std::vector<member> members;  ///< members[0] is the top
  std::vector<carrier> carriers;
  std::vector<std::vector<size_t>> carried;  ///< per member: the carriers below it (itself included)

  /// The members from `leaf` up to the top.
  std::vector<int> path(int leaf) const {
    std::vector<int> out;
    for (int j = leaf; j >= 0; j = members[static_cast<size_t>(j)].parent)
      out.push_back(j);
    return out;
  }
  const plan_node& at(int i) const { return *members[static_cast<size_t>(i)].node; }
  /// The input of member `i` that member `kid` is.
  size_t input_of(int i, int kid) const {
    const std::vector<int>& k = members[static_cast<size_t>(i)].kids;
    return static_cast<size_t>(std::find(k.begin(), k.end(), kid) - k.begin());
  }
};

struct rewriter {
  std::map<const plan_node*, std::vector<const plan_node*>> parents;  ///< one entry per edge
  opt::plan_memo done;
  /// Members of regions being rewritten (their top excepted): reached from elsewhere (a consumer
  /// such as the aggregate of a shared subplan), they are rewritten as the region's members.
  std::map<const plan_node*, std::pair<region*, int>> pending;
  /// takeable_source() of the scans asked about (a Parquet source plans its reads from the footers).
  mutable std::map<const plan_node*, std::shared_ptr<const table_source>> sources;
  /// table_source::statistics() asked for (a Parquet source reads dictionary page headers): a scan is
  /// estimated again for every region that reaches it.
  mutable std::map<std::pair<const table_source*, std::vector<std::string>>, std::vector<piece_statistics>> stats;

  std::shared_ptr<const table_source> source_of(const plan_node& n) const {
    if (n.kind != plan_kind::scan) return nullptr;
    auto it = sources.find(&n);
    if (it == sources.end()) it = sources.emplace(&n, takeable_source(n)).first;
    return it->second;
  }

  /// Nodes a row index can travel through (input by input for joins) or start at.
  bool is_link(const plan_node& n) const { return in_chain(n) || n.kind == plan_kind::join || source_of(n) != nullptr; }

  void index_parents(const plan_ptr& p, std::set<const plan_node*>& seen) {
    if (!seen.insert(p.get()).second) return;
    for (auto& i : p->inputs) {
      parents[i.get()].push_back(p.get());
      index_parents(i, seen);
    }
  }

  const std::vector<const plan_node*>& parents_of(const plan_node& n) const {
    static const std::vector<const plan_node*> none;
    auto it = parents.find(&n);
    return it == parents.end() ? none : it->second;
  }

  plan_ptr go(const plan_ptr& p) {
    auto it = pending.find(p.get());
    if (it != pending.end()) return member(*it->second.first, it->second.second);
    return opt::memoized(done, p, [&](const plan_ptr& n) { return node(n); });
  }

  plan_ptr node(const plan_ptr& p) {
    if (is_link(*p)) {
      region r = collect(p);
      if (choose(r)) return build_top(r);
    }
    std::vector<plan_ptr> ins;
    bool same = true;
    for (auto& i : p->inputs) {
      ins.push_back(go(i));
      same &= ins.back() == i;
    }
    return same ? p : plan::with_inputs(*p, std::move(ins));
  }

  // ---- finding the region ----

  /// Whether input `side` of `n` may carry a row index up to `n`.
  static bool carrying_input(const plan_node& n, size_t side) { return n.kind != plan_kind::join || carries(n, side); }

  bool available(const plan_node& n) const { return is_link(n) && !done.count(&n) && !pending.count(&n); }

  /// The nodes a region from `n` could hold.
  void reachable(const plan_node& n, std::set<const plan_node*>& out) const {
    if (!out.insert(&n).second) return;
    for (size_t s = 0; s < n.inputs.size(); ++s)
      if (carrying_input(n, s) && available(*n.inputs[s])) reachable(*n.inputs[s], out);
  }

  /// Whether `n`, an input of `from`, may join the region: its other parents lie outside the region
  /// and keep their output when `n` loses columns they do not read (the aggregate of a shared subplan).
  bool enterable(const plan_node& n, const plan_node& from, const std::set<const plan_node*>& reach) const {
    if (!available(n)) return false;
    int from_edges = 0;
    for (auto* q : parents_of(n)) {
      if (q == &from) {
        if (++from_edges > 1) return false;  // both inputs of one join
      } else if (reach.count(q) || !consumer_reads(*q)) {
        return false;
      }
    }
    return true;
  }

  region collect(const plan_ptr& top) const {
    std::set<const plan_node*> reach;
    reachable(*top, reach);
    region r;
    add(r, top, -1, reach);
    return r;
  }

  void add(region& r, const plan_ptr& n, int parent, const std::set<const plan_node*>& reach) const {
    int at = static_cast<int>(r.members.size());
    r.members.push_back({n, parent, {}});
    for (size_t s = 0; s < n->inputs.size(); ++s) {
      int kid = -1;
      if (carrying_input(*n, s) && enterable(*n->inputs[s], *n, reach)) {
        kid = static_cast<int>(r.members.size());
        add(r, n->inputs[s], at, reach);
      }
      r.members[static_cast<size_t>(at)].kids.push_back(kid);
    }
  }

  /// The passenger columns of the scan `path[0]` (a path up to the region's top), in the scan's
  /// order: not read anywhere on the path nor by the other consumers of its shared nodes, and
  /// reaching the top unchanged, under their name.
  std::vector<std::string> passengers(const region& r, const std::vector<int>& path) const {
    const plan_node& leaf = r.at(path[0]);
    std::set<std::string> out;
    for (auto& f : leaf.schema)
      out.insert(f.name);
    auto drop_reads = [&](const expr& e) {
      for (auto& c : referenced_columns(e))
        out.erase(c);
    };
    for (size_t k = 0; k < path.size(); ++k) {
      const plan_node& n = r.at(path[k]);
      if (k + 1 < path.size()) {  // below the top: n loses the passengers, its other consumers must not read them
        const plan_node* up = &r.at(path[k + 1]);
        for (auto* q : parents_of(n)) {
          if (q == up) continue;
          std::optional<std::set<std::string>> reads = consumer_reads(*q);  // a consumer (enterable())
          for (auto& c : *reads)
            out.erase(c);
        }
      }
      switch (n.kind) {
        case plan_kind::scan:
          for (auto& e : n.predicates)
            drop_reads(e);
          break;
        case plan_kind::filter:
          for (auto& e : n.exprs)
            drop_reads(e);
          break;
        case plan_kind::with_columns:
          for (auto& e : n.exprs) {
            drop_reads(e);
            out.erase(output_name(e));
          }
          break;
        case plan_kind::select: {
          std::set<std::string> passed;
          for (auto& e : n.exprs) {
            if (e->kind == expr_kind::column)
              passed.insert(e->name);
            else
              drop_reads(e);
          }
          for (auto it = out.begin(); it != out.end();)
            it = passed.count(*it) ? std::next(it) : out.erase(it);
          break;
        }
        case plan_kind::join: {
          size_t side = r.input_of(path[k], path[k - 1]);
          for (auto& e : side == 0 ? n.keys : n.right_keys)
            drop_reads(e);
          // a passenger keeps its name; and the other side's columns keep theirs without it
          std::map<std::string, opt::join_origin> origin = opt::join_origins(n);
          for (auto it = out.begin(); it != out.end();) {
            auto o = origin.find(*it);
            bool same = o != origin.end() && o->second.side == static_cast<int>(side) && o->second.name == *it;
            it = same ? std::next(it) : out.erase(it);
          }
          if (n.how != join_type::semi && n.how != join_type::anti)
            for (auto& f : n.inputs[1 - side]->schema)
              out.erase(f.name);
          break;
        }
        default:
          break;
      }
    }
    std::vector<std::string> ordered;
    for (auto& f : leaf.schema)
      if (out.count(f.name)) ordered.push_back(f.name);
    return ordered;
  }

  /// Estimated fraction of the scan's rows (`path` as `passengers`) that reach the top: the filters
  /// on the path (and the scan's pushed-down predicates), over the statistics the source has of each
  /// piece of its rows (kept_conjuncts), weighted by the pieces' rows; a join counts 1 (its effect on
  /// the rows is not estimated).
  double estimated_kept(const region& r, const std::vector<int>& path, const table_source& src) const {
    // the chain's names of the source's columns (dropped where the chain redefines them), and every
    // predicate on the path over the source's names (another column gets a name no source has)
    std::map<std::string, std::string> names;
    for (auto& f : src.schema())
      names[f.name] = f.name;
    std::vector<expr> preds;
    std::set<std::string> used;
    auto add = [&](const expr& e) {
      std::map<std::string, expr> to_source;
      for (auto& c : referenced_columns(e)) {
        auto it = names.find(c);
        to_source[c] = col(it == names.end() ? std::string("\x01" "derived") : it->second);
        if (it != names.end()) used.insert(it->second);
      }
      opt::split_conjunction(opt::substitute_columns(e, to_source), preds);
    };
    for (size_t k = 0; k < path.size(); ++k) {
      const plan_node& n = r.at(path[k]);
      if (n.kind == plan_kind::scan) {
        for (auto& e : n.predicates)
          add(e);
      } else if (n.kind == plan_kind::filter) {
        for (auto& e : n.exprs)
          add(e);
      } else if (n.kind == plan_kind::with_columns) {
        for (auto& e : n.exprs)
          if (!is_bare_column(e, output_name(e))) names.erase(output_name(e));
      } else if (n.kind == plan_kind::select) {
        std::map<std::string, std::string> kept_names;
        for (auto& e : n.exprs) {
          const expr& inner = e->kind == expr_kind::alias ? e->args[0] : e;
          auto at = inner->kind == expr_kind::column ? names.find(inner->name) : names.end();
          if (at != names.end()) kept_names[output_name(e)] = at->second;
        }
        names = std::move(kept_names);
      } else if (n.kind == plan_kind::join) {
        auto side = static_cast<int>(r.input_of(path[k], path[k - 1]));
        std::map<std::string, std::string> renamed;
        for (auto& [name, o] : opt::join_origins(n)) {
          auto at = o.side == side ? names.find(o.name) : names.end();
          if (at != names.end()) renamed[name] = at->second;
        }
        names = std::move(renamed);
      }
    }
    if (preds.empty()) return 1.0;
    const std::vector<std::string> cols(used.begin(), used.end());
    auto key = std::make_pair(&src, cols);
    auto cached = stats.find(key);
    if (cached == stats.end()) cached = stats.emplace(key, src.statistics(cols)).first;
    std::vector<piece_statistics> pieces = cached->second;
    if (pieces.empty()) pieces.push_back({1, std::vector<column_statistics>(cols.size())});
    double rows = 0, kept = 0;
    for (const piece_statistics& p : pieces) {
      piece_view pv{static_cast<double>(p.rows), {}};
      for (size_t i = 0; i < cols.size(); ++i)
        pv.columns[cols[i]] = &p.columns[i];
      rows += pv.rows;
      kept += pv.rows * kept_conjuncts(preds, pv);
    }
    return rows > 0 ? kept / rows : 1.0;
  }

  /// Picks the region's scans whose rewrite pays (selective enough, passengers holding most of the
  /// bytes) and names their row indexes; false when there is none.
  bool choose(region& r) const {
    for (int i = 0; i < static_cast<int>(r.members.size()); ++i) {
      const plan_node& leaf = r.at(i);
      auto src = source_of(leaf);
      if (!src) continue;
      std::vector<int> path = r.path(i);
      std::vector<std::string> moved = passengers(r, path);
      if (auto pq = std::dynamic_pointer_cast<const io::parquet_source>(src))  // the files' columns only
        moved.erase(std::remove_if(moved.begin(), moved.end(), [&](auto& c) { return pq->is_hive_column(c); }),
                    moved.end());
      if (moved.empty()) continue;
      std::vector<std::string> scanned = leaf.projection.empty() ? src->schema().names() : leaf.projection;
      if (moved.size() == scanned.size() || 2 * column_bytes(*src, moved) < column_bytes(*src, scanned)) continue;
      const double kept = estimated_kept(r, path, *src);
      if (auto pq = std::dynamic_pointer_cast<const io::parquet_source>(src)) {
        if (!take_pays(*pq, moved, kept)) continue;
      } else if (kept > max_kept) {
        continue;
      }
      std::string row = row_column;
      if (!r.carriers.empty()) row += std::to_string(r.carriers.size());
      r.carriers.push_back({i, src, std::move(moved), std::move(row)});
    }
    // the row indexes' names are new everywhere in the region
    for (auto& c : r.carriers) {
      for (auto& m : r.members)
        if (m.node->schema.contains(c.row)) return false;
      for (auto& d : r.carriers)
        if (d.src->schema().contains(c.row)) return false;
    }
    r.carried.assign(r.members.size(), {});
    for (size_t c = 0; c < r.carriers.size(); ++c)
      for (int j : r.path(r.carriers[c].leaf))
        r.carried[static_cast<size_t>(j)].push_back(c);
    return !r.carriers.empty();
  }

  // ---- rewriting it ----

  plan_ptr build_top(region& r) {
    for (size_t i = 1; i < r.members.size(); ++i)
      if (!r.carried[i].empty()) pending[r.members[i].node.get()] = {&r, static_cast<int>(i)};
    plan_ptr cur = build(r, 0);
    for (size_t i = 1; i < r.members.size(); ++i)
      pending.erase(r.members[i].node.get());
    for (auto& c : r.carriers)
      cur = plan::take(cur, c.src, c.row, c.moved);
    std::vector<expr> out;
    for (auto& f : r.members[0].node->schema)
      out.push_back(col(f.name));
    return plan::select(cur, std::move(out));
  }

  /// Member `i` rewritten once (a shared member is reached from each of its parents).
  plan_ptr member(region& r, int i) {
    return opt::memoized(done, r.members[static_cast<size_t>(i)].node, [&](const plan_ptr&) { return build(r, i); });
  }

  /// Member `i` over the rewritten members below it: without the passengers of the carriers below,
  /// with their row indexes.
  plan_ptr build(region& r, int i) {
    const region::member& m = r.members[static_cast<size_t>(i)];
    const plan_node& n = *m.node;
    const std::vector<size_t>& below = r.carried[static_cast<size_t>(i)];
    if (source_of(n)) return narrow_scan(n, r.carriers[below[0]]);
    std::vector<plan_ptr> ins;
    for (size_t s = 0; s < n.inputs.size(); ++s) {
      int kid = m.kids[s];
      ins.push_back(kid >= 0 && !r.carried[static_cast<size_t>(kid)].empty() ? member(r, kid) : go(n.inputs[s]));
    }
    if (n.kind != plan_kind::select) return plan::with_inputs(n, std::move(ins));
    // the passengers come back with the take; the row indexes go up with the rest
    std::set<std::string> moved;
    for (size_t c : below)
      moved.insert(r.carriers[c].moved.begin(), r.carriers[c].moved.end());
    std::vector<expr> exprs;
    for (auto& e : n.exprs)
      if (e->kind != expr_kind::column || !moved.count(e->name)) exprs.push_back(e);
    for (size_t c : below)
      exprs.push_back(col(r.carriers[c].row));
    return plan::select(ins[0], std::move(exprs));
  }

  /// The scan reading only the columns that are not passengers, with the row index first: no
  /// pushed-down predicates (a source may drop rows by them, which would shift the row index), so
  /// they become a filter above the row index.
  static plan_ptr narrow_scan(const plan_node& scan, const region::carrier& c) {
    const table_source& src = *c.src;
    std::vector<std::string> scanned = scan.projection.empty() ? src.schema().names() : scan.projection;
    std::vector<std::string> narrow;
    for (auto& name : scanned)
      if (std::find(c.moved.begin(), c.moved.end(), name) == c.moved.end()) narrow.push_back(name);
    auto s = std::make_shared<plan_node>(scan);
    s->projection = narrow;
    s->predicates.clear();
    tug::schema ss;
    for (auto& name : narrow)
      ss.push_back(src.schema()[src.schema().index_of(name)]);
    s->schema = std::move(ss);
    plan_ptr cur = plan::with_row_index(s, c.row, 0);
    cur = opt::filter_all(cur, scan.predicates);
    std::vector<std::string> wanted{c.row};
    for (auto& f : scan.schema)
      if (std::find(c.moved.begin(), c.moved.end(), f.name) == c.moved.end()) wanted.push_back(f.name);
    if (cur->schema.names() == wanted) return cur;
    std::vector<expr> cols;
    for (auto& name : wanted)
      cols.push_back(col(name));
    return plan::select(cur, std::move(cols));
  }
};

}  // namespace

plan_ptr late_materialization(const plan_ptr& p) {
  rewriter r;
  std::set<const plan_node*> seen;
  r.index_parents(p, seen);
  return r.go(p);
}

}  // namespace tug::passes
