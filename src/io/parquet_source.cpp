#include "tug/io/parquet_source.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>

#include "memory/concatenate_where.hpp"
#include "row_ids.hpp"
#include "runtime/partition_share.hpp"
#include "tug/exec/cpu/evaluate.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/query_control.hpp"
#ifdef TUG_WITH_CUDA
#include "parquet/gpu_reader.hpp"
#endif

namespace tug::io {

namespace {

/// The CPU engine's scans read the columns their predicates do not read only at the passing rows where
/// at most this fraction of the rows read passes (else every row, and the filter above drops them).
constexpr double selective_fraction = 0.25;
/// Rows of a row group the predicates are first evaluated on (evenly spread), to pass over the full
/// evaluation where clearly many rows pass.
constexpr int64_t sample_rows = 2048;

// Three-way comparison of two valid scalars of one type (scalars hold one canonical alternative).
int compare(const scalar& a, const scalar& b) {
  return std::visit(
      [&](const auto& x) -> int {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>) {
          return 0;
        } else {
          const X& y = std::get<X>(b.value());
          return x < y ? -1 : (y < x ? 1 : 0);
        }
      },
      a.value());
}

// The value of a literal-only expression as a scalar of `type`, or nullopt.
std::optional<scalar> literal_value(const expr& e, const data_type& type) {
  if (!referenced_columns(e).empty() || contains_agg(e) || contains_window(e)) return std::nullopt;
  try {
    column c = cpu::evaluate(e, table::empty_with_rows(1), tug::schema());
    if (!(c.type() == type)) c = cpu::cast(c, type, true);
    scalar v = get_scalar(c, 0);
    if (v.is_null()) return std::nullopt;
    return v;
  } catch (const error&) {
    return std::nullopt;
  }
}

/// Rows in both sorted, disjoint range lists.
std::vector<parquet::row_range> intersect(const std::vector<parquet::row_range>& a,
                                          const std::vector<parquet::row_range>& b) {
  std::vector<parquet::row_range> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].begin, b[j].begin), hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    (a[i].end < b[j].end) ? ++i : ++j;
  }
  return out;
}

}  // namespace

std::vector<parquet::row_range> page_ranges(const parquet::file_reader& r, int rg, const std::vector<expr>& preds,
                                            const tug::schema& s) {
  std::vector<parquet::row_range> keep{{0, r.row_group_num_rows(rg)}};
  std::vector<expr> conjuncts;
  auto split = [&](auto&& self, const expr& e) -> void {
    if (e->kind == expr_kind::function && e->func == fn::and_) {
      self(self, e->args[0]);
      self(self, e->args[1]);
    } else {
      conjuncts.push_back(e);
    }
  };
  for (const expr& p : preds)
    split(split, p);
  for (const expr& p : conjuncts) {
    auto cols = referenced_columns(p);
    if (cols.size() != 1) continue;
    const size_t c = s.index_of(*cols.begin());
    auto pages = r.page_index(rg, c);
    if (pages.empty()) continue;
    std::vector<parquet::row_range> ok;
    for (const auto& pg : pages) {
      const bool may = may_match(p, s, pg.rows.end - pg.rows.begin,
                                 [&](size_t cc) { return cc == c ? pg.stats : parquet::column_statistics{}; });
      if (!may) continue;
      if (!ok.empty() && ok.back().end == pg.rows.begin)
        ok.back().end = pg.rows.end;
      else
        ok.push_back(pg.rows);
    }
    keep = intersect(keep, ok);
  }
  return keep;
}

bool may_match(const expr& pred, const tug::schema& s, int64_t rows,
               const std::function<parquet::column_statistics(size_t)>& stats) {
  const auto& n = pred.node();
  if (n.kind == expr_kind::alias) return may_match(n.args[0], s, rows, stats);
  if (n.kind != expr_kind::function) return true;
  auto column_of = [&](const expr& e) -> int64_t { return e->kind == expr_kind::column ? s.find(e->name) : -1; };
  switch (n.func) {
    case fn::and_:
      return may_match(n.args[0], s, rows, stats) && may_match(n.args[1], s, rows, stats);
    case fn::or_:
      return may_match(n.args[0], s, rows, stats) || may_match(n.args[1], s, rows, stats);
    case fn::is_null: {
      int64_t c = column_of(n.args[0]);
      if (c < 0) return true;
      auto st = stats(static_cast<size_t>(c));
      return !(st.null_count && *st.null_count == 0);
    }
    case fn::is_not_null: {
      int64_t c = column_of(n.args[0]);
      if (c < 0) return true;
      auto st = stats(static_cast<size_t>(c));
      return !(st.null_count && *st.null_count >= rows);
    }
    case fn::eq:
    case fn::lt:
    case fn::le:
    case fn::gt:
    case fn::ge:
    case fn::is_between:
      break;
    default:
      return true;
  }
  // column op literal (either side), column between literals
  fn f = n.func;
  int64_t c = column_of(n.args[0]);
  size_t lit_arg = 1;
  if (c < 0 && f != fn::is_between) {
    c = column_of(n.args[1]);
    lit_arg = 0;
    switch (f) {  // v op x  ->  x op' v
      case fn::lt:
        f = fn::gt;
        break;
      case fn::le:
        f = fn::ge;
        break;
      case fn::gt:
        f = fn::lt;
        break;
      case fn::ge:
        f = fn::le;
        break;
      default:
        break;
    }
  }
  if (c < 0) return true;
  const data_type& t = s[static_cast<size_t>(c)].type;
  bool floating = is_floating(t.id);
  auto st = stats(static_cast<size_t>(c));
  if (st.null_count && *st.null_count >= rows) return false;  // all null: every comparison is null
  if (!st.min || !st.max || st.min->is_null() || st.max->is_null()) return true;
  const scalar& lo = *st.min;
  const scalar& hi = *st.max;
  if (f == fn::is_between) {
    auto a = literal_value(n.args[1], t), b = literal_value(n.args[2], t);
    if (!a || !b || floating) return true;
    bool left = n.s0.empty() || n.s0 == "both" || n.s0 == "left",
         right = n.s0.empty() || n.s0 == "both" || n.s0 == "right";
    if (right ? compare(lo, *b) > 0 : compare(lo, *b) >= 0) return false;
    if (left ? compare(hi, *a) < 0 : compare(hi, *a) <= 0) return false;
    return true;
  }
  auto v = literal_value(n.args[lit_arg], t);
  if (!v) return true;
  if (floating && std::isnan(v->as_double())) return true;
  switch (f) {
    case fn::eq:
      return compare(*v, lo) >= 0 && compare(*v, hi) <= 0;
    case fn::lt:
      return compare(lo, *v) < 0;
    case fn::le:
      return compare(lo, *v) <= 0;
    // NaN is greater than every number (Polars order) and Parquet statistics leave NaN out
    case fn::gt:
      return floating || compare(hi, *v) > 0;
    case fn::ge:
      return floating || compare(hi, *v) >= 0;
    default:
      return true;
  }
}

std::vector<partition_plan> plan_partitions(const std::vector<int64_t>& measure, int64_t target) {
  target = std::max<int64_t>(target, 1);
  std::vector<partition_plan> out;
  int64_t current = 0;
  for (size_t k = 0; k < measure.size(); ++k) {
    const int64_t m = std::max<int64_t>(measure[k], 0);
    if (m >= target) {  // alone, cut into pieces of about `target`
      const auto pieces = std::max<int64_t>(1, std::llround(static_cast<double>(m) / static_cast<double>(target)));
      out.push_back({k, 1, pieces});
      current = 0;
      continue;
    }
    if (!out.empty() && current > 0 && current + m <= target) {
      out.back().count++;
      current += m;
    } else {
      out.push_back({k, 1, 1});
      current = m;
    }
  }
  return out;
}

int64_t memory_bounded_partition_size(const engine_options& o, int threads) {
  if (o.memory_limit <= 0) return 0;
  // a fused filter and projection copy a partition once or twice more, and the next one is decoding
  constexpr int64_t copies_per_thread = 4;
  return std::max(min_target_partition_size, o.memory_limit / (copies_per_thread * std::max(threads, 1)));
}

namespace {

/// `"name" (reason), ...` of unsupported columns.
std::string list_unsupported(const std::vector<parquet::unsupported_column>& cols) {
  std::string out;
  for (const auto& c : cols)
    out += (out.empty() ? "\"" : ", \"") + c.name + "\" (" + c.reason + ")";
  return out;
}

}  // namespace

parquet_source::parquet_source(const std::string& path, const parquet::read_options& options)
    : _path(path), _files(expand_paths(path, ".parquet")) {
  for (auto& f : _files)
    _readers.push_back(std::make_shared<parquet::file_reader>(parquet::file_reader::open(f.path)));
  // Columns tug cannot represent are an error unless the scan skips them; the skip is reported once.
  std::vector<parquet::unsupported_column> skipped;  // distinct over the files
  std::vector<std::string> skipped_in;               // the files that have any
  for (const auto& r : _readers) {
    const auto& u = r->unsupported_columns();
    if (u.empty()) continue;
    if (!options.skip_unsupported_columns)
      throw not_implemented_error(r->path() + ": tug cannot read the column(s) " + list_unsupported(u) +
                                  "; set the Parquet scan option skip_unsupported_columns (tug CLI: "
                                  "--skip-unsupported-columns) to read the other columns without them");
    if (r->schema().size() == 0)
      throw not_implemented_error(r->path() + ": every column is one tug cannot read: " + list_unsupported(u) +
                                  "; with skip_unsupported_columns nothing would be left to read");
    skipped_in.push_back(r->path());
    for (const auto& c : u)
      if (std::none_of(skipped.begin(), skipped.end(), [&](const auto& k) { return k.name == c.name; }))
        skipped.push_back(c);
  }
  if (!skipped.empty()) {
    _skip_note = "skipped unsupported columns " + list_unsupported(skipped) + " of ";
    if (_files.size() == 1) {
      _skip_note += skipped_in[0];
    } else {
      _skip_note += std::to_string(skipped_in.size()) + " of " + std::to_string(_files.size()) + " files (";
      for (size_t i = 0; i < skipped_in.size() && i < 3; ++i)
        _skip_note += (i ? ", " : "") + skipped_in[i];
      _skip_note += skipped_in.size() > 3 ? ", ...)" : ")";
    }
    std::cerr << "tug warning: scan_parquet " + _skip_note + "\n";
  }
  const tug::schema& first = _readers[0]->schema();
  for (size_t i = 1; i < _readers.size(); ++i) {
    const tug::schema& s = _readers[i]->schema();
    if (s == first) continue;
    std::string why;
    for (size_t c = 0; c < std::max(s.size(), first.size()) && why.empty(); ++c) {
      if (c >= s.size())
        why = "column \"" + first[c].name + "\" is missing";
      else if (c >= first.size())
        why = "extra column \"" + s[c].name + "\"";
      else if (!(s[c] == first[c]))
        why = "column " + std::to_string(c) + " is \"" + s[c].name + "\": " + to_string(s[c].type) + " but \"" +
              first[c].name + "\": " + to_string(first[c].type) + " in " + _files[0].path;
    }
    throw io_error("schema of " + _files[i].path + " differs from the first file's: " + why);
  }
  for (auto& f : _files) {
    bool same = f.hive.size() == _files[0].hive.size();
    for (size_t i = 0; same && i < f.hive.size(); ++i)
      same = f.hive[i].first == _files[0].hive[i].first;
    if (!same)
      throw io_error("hive partition directories differ: " + f.path + " does not have the key=value directories of " +
                     _files[0].path);
  }
  _schema = first;
  _file_columns = first.size();
  for (auto& [k, v] : _files[0].hive)
    _schema.push_back({k, type_id::string});
}

std::string parquet_source::describe() const {
  int64_t rows = 0, groups = 0;
  for (auto& r : _readers) {
    rows += r->num_rows();
    groups += r->num_row_groups();
  }
  return "Parquet SCAN " + _path + "; " + std::to_string(_readers.size()) + " files, " + std::to_string(groups) +
         " row groups, " + std::to_string(rows) + " rows" + (_skip_note.empty() ? "" : "; " + _skip_note);
}

tug::schema parquet_source::file_schema() const {
  tug::schema s;
  for (size_t i = 0; i < _file_columns; ++i)
    s.push_back(_schema[i]);
  return s;
}

std::vector<parquet_source::rg_task> parquet_source::plan_reads(const std::vector<expr>& predicates,
                                                                int64_t* skipped) const {
  // predicates over file columns only, resolved once
  const tug::schema fs = file_schema();
  std::vector<expr> preds;
  for (auto& p : predicates) {
    bool file_only = true;
    for (auto& c : referenced_columns(p))
      file_only &= fs.contains(c);
    if (file_only) preds.push_back(resolve(p, fs));
  }
  std::vector<rg_task> tasks;
  int64_t base = 0;  // global row of the row group's first row
  for (size_t f = 0; f < _readers.size(); ++f) {
    const auto& r = *_readers[f];
    for (int rg = 0; rg < r.num_row_groups(); ++rg) {
      int64_t rows = r.row_group_num_rows(rg);
      // a rank's share: the row group's rows within it, if any
      const int64_t share_lo = _share_end < 0 ? 0 : std::clamp<int64_t>(_share_begin - base, 0, rows);
      const int64_t share_hi = _share_end < 0 ? rows : std::clamp<int64_t>(_share_end - base, 0, rows);
      base += rows;
      if (share_lo >= share_hi) continue;
      bool keep = rows > 0;
      for (auto& p : preds) {
        if (!keep) break;
        keep = may_match(p, fs, rows, [&](size_t c) { return r.statistics(rg, c); });
      }
      std::vector<parquet::row_range> ranges;
      if (keep && !preds.empty()) {
        ranges = page_ranges(r, rg, preds, fs);
        keep = !ranges.empty();
        if (ranges.size() == 1 && ranges[0].begin == 0 && ranges[0].end == rows) ranges.clear();
      }
      if (keep && (share_lo > 0 || share_hi < rows)) {
        if (ranges.empty()) ranges.push_back({0, rows});
        std::vector<parquet::row_range> within;
        for (auto& x : ranges)
          if (std::max(x.begin, share_lo) < std::min(x.end, share_hi))
            within.push_back({std::max(x.begin, share_lo), std::min(x.end, share_hi)});
        ranges = std::move(within);
        keep = !ranges.empty();
      }
      if (keep) {
        int64_t wanted = 0;
        for (auto& x : ranges)
          wanted += x.end - x.begin;
        tasks.push_back({f, rg, ranges, ranges.empty() ? rows : wanted});
      } else {
        ++*skipped;
      }
    }
  }
  return tasks;
}

std::shared_ptr<const table_source> parquet_source::rank_share(int rank, int size) const {
  if (size < 1 || rank < 0 || rank >= size) throw internal_error("rank_share: rank " + std::to_string(rank) + " of " + std::to_string(size));
  auto share = std::make_shared<parquet_source>(*this);
  const int64_t n = num_rows();
  share->_share_begin = n * rank / size;
  share->_share_end = n * (rank + 1) / size;
  return share;
}

bool parquet_source::prunes(const std::vector<expr>& predicates) const {
  int64_t skipped = 0, rows = 0;
  for (const rg_task& t : plan_reads(predicates, &skipped))
    rows += t.rows;
  return rows != num_rows();
}

int64_t parquet_source::num_rows() const {
  int64_t rows = 0;
  for (auto& r : _readers)
    rows += r->num_rows();
  return rows;
}

int64_t parquet_source::column_bytes(const std::vector<std::string>& columns) const {
  std::vector<size_t> idx;
  for (auto& c : columns)
    if (!is_hive_column(c)) idx.push_back(_schema.index_of(c));
  int64_t b = 0;
  for (auto& r : _readers)
    for (int rg = 0; rg < r->num_row_groups(); ++rg)
      b += r->row_group_uncompressed_bytes(rg, idx);
  return b;
}

std::vector<piece_statistics> parquet_source::statistics(const std::vector<std::string>& columns) const {
  std::vector<size_t> idx;
  for (auto& c : columns)
    idx.push_back(_schema.index_of(c));
  std::vector<piece_statistics> out;
  for (size_t f = 0; f < _readers.size(); ++f) {
    const auto& r = *_readers[f];
    for (int rg = 0; rg < r.num_row_groups(); ++rg) {
      piece_statistics p{r.row_group_num_rows(rg), {}};
      for (size_t i : idx) {
        if (i < _file_columns) {
          p.columns.push_back(r.statistics(rg, i, true));
        } else {
          scalar v(type_id::string, _files[f].hive[i - _file_columns].second);
          p.columns.push_back({v, v, 0, 1});
        }
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

int64_t parquet_source::data_pages(const std::string& column) const {
  const size_t c = _schema.index_of(column);
  if (c >= _file_columns) return 0;
  constexpr int64_t page_bytes = 1 << 20;  // the default page size of tug, pyarrow, DuckDB and Polars
  int64_t pages = 0;
  for (auto& r : _readers)
    for (int rg = 0; rg < r->num_row_groups(); ++rg) {
      const std::vector<parquet::page_stats> index = r->page_index(rg, c);
      pages += !index.empty() ? static_cast<int64_t>(index.size())
                              : std::max<int64_t>(1, (r->row_group_uncompressed_bytes(rg, {c}) + page_bytes - 1) / page_bytes);
    }
  return pages;
}

std::vector<table> parquet_source::read(const std::vector<std::string>& columns, const std::vector<expr>& predicates,
                                        const engine_options& options, thread_pool& pool, memory_resource* mr,
                                        const partition_hook& hook, int64_t limit) const {
  return read_parts(columns, predicates, options, pool, mr, nullptr, hook, limit);
}

std::vector<table> parquet_source::read_device(const std::vector<std::string>& columns,
                                               const std::vector<expr>& predicates, const engine_options& options,
                                               thread_pool& pool, memory_resource* device_mr,
                                               memory_resource* staging_mr, const partition_hook& hook,
                                               int64_t limit) const {
#ifdef TUG_WITH_CUDA
  if (options.gpu_parquet_reader && gpu_available())
    return read_parts(columns, predicates, options, pool, staging_mr, device_mr, hook, limit);
#endif
  return table_source::read_device(columns, predicates, options, pool, device_mr, staging_mr, hook, limit);
}

std::vector<table> parquet_source::read_parts(const std::vector<std::string>& columns,
                                              const std::vector<expr>& predicates, const engine_options& options,
                                              thread_pool& pool, memory_resource* mr, memory_resource* device_mr,
                                              const partition_hook& hook, int64_t limit) const {
  std::vector<size_t> file_cols, hive_cols;
  std::vector<int> from_hive;  // per requested column: -1 file column, else hive index
  for (auto& c : columns) {
    size_t i = _schema.index_of(c);
    if (i < _file_columns) {
      from_hive.push_back(-1);
      file_cols.push_back(i);
    } else {
      from_hive.push_back(static_cast<int>(i - _file_columns));
    }
  }
  int64_t skipped = 0;
  std::vector<rg_task> tasks = plan_reads(predicates, &skipped);
  _counters->row_groups_skipped += skipped;
  if (limit >= 0 && predicates.empty()) {
    // only the row groups that hold the first `limit` rows, of the last only its first rows (the data
    // pages after them are not decoded)
    size_t k = 0;
    for (int64_t left = limit; k < tasks.size() && left > 0; ++k) {
      if (tasks[k].rows > left) tasks[k] = {tasks[k].file, tasks[k].rg, {{0, left}}, left};
      left -= tasks[k].rows;
    }
    tasks.resize(k);
  }
  // The CPU engine evaluates the pushed-down predicates over file columns while it reads: it decodes
  // their columns first, and where few rows pass (selective_fraction), the other columns only at those
  // rows (read_row_group_rows passes over pages without any). The filter above still runs: the rows
  // dropped here are only rows it would drop.
  std::vector<expr> row_preds;
  std::vector<size_t> pred_cols;  // file columns the predicates read, ascending
  tug::schema pred_schema;
  if (!device_mr && !file_cols.empty()) {
    const tug::schema fs = file_schema();
    for (auto& p : predicates) {
      const auto cols = referenced_columns(p);
      if (cols.empty() || contains_agg(p) || contains_window(p)) continue;
      bool file_only = true;
      for (auto& c : cols)
        file_only &= fs.contains(c);
      if (!file_only) continue;
      row_preds.push_back(p);
      for (auto& c : cols)
        pred_cols.push_back(fs.index_of(c));
    }
    std::sort(pred_cols.begin(), pred_cols.end());
    pred_cols.erase(std::unique(pred_cols.begin(), pred_cols.end()), pred_cols.end());
    // only where some column is left to read at the passing rows
    bool others = false;
    for (size_t c : file_cols)
      others |= !std::binary_search(pred_cols.begin(), pred_cols.end(), c);
    if (!others) row_preds.clear();
    for (size_t c : pred_cols)
      pred_schema.push_back(fs[c]);
    for (expr& e : row_preds)
      e = resolve(e, pred_schema);  // as the filter resolves them (casts of literals to the columns' types)
  }
  // Per row of `t` (the predicates' columns), whether it passes every predicate (null: no).
  auto passing = [&](const table& t) {
    const int64_t n = t.num_rows();
    std::vector<uint8_t> pass(static_cast<size_t>(n), 1);
    for (const expr& e : row_preds) {
      const column m = cpu::evaluate(e, t, pred_schema, mr);
      if (m.type().id != type_id::boolean || m.size() != n) continue;  // not a row mask: the filter decides
      const column_view v = m.view();
      const bool* b = v.values<bool>();  // booleans are bytes 0 or 1
      if (!v.validity) {
        for (int64_t i = 0; i < n; ++i)
          pass[static_cast<size_t>(i)] &= static_cast<uint8_t>(b[i]);
      } else {
        for (int64_t i = 0; i < n; ++i)
          pass[static_cast<size_t>(i)] &= static_cast<uint8_t>(v.is_valid(i) && b[i]);
      }
    }
    return pass;
  };
  // Row group `rg` of `r`, the rows in `ranges`, read as above (the file columns `file_cols`, in order).
  auto read_where = [&](const parquet::file_reader& r, int rg, const std::vector<parquet::row_range>& ranges,
                        int64_t* pages_skipped) {
    const table p = r.read_row_group_ranges(rg, pred_cols, ranges, mr, pages_skipped, &pool);
    const int64_t n = p.num_rows();
    std::vector<size_t> other_cols;
    for (size_t c : file_cols)
      if (!std::binary_search(pred_cols.begin(), pred_cols.end(), c)) other_cols.push_back(c);
    auto assemble = [&](const table& preds, const table& others) {
      std::vector<column> cols;
      for (size_t c : file_cols) {
        const auto in_preds = std::lower_bound(pred_cols.begin(), pred_cols.end(), c);
        if (in_preds != pred_cols.end() && *in_preds == c) {
          cols.push_back(preds[static_cast<size_t>(in_preds - pred_cols.begin())]);
        } else {
          cols.push_back(others[static_cast<size_t>(std::find(other_cols.begin(), other_cols.end(), c) - other_cols.begin())]);
        }
      }
      return table(std::move(cols));
    };
    auto read_others_whole = [&] {
      // every row, for the filter above to drop (its compaction is faster than a gather of many rows)
      return assemble(p, r.read_row_group_ranges(rg, other_cols, ranges, mr, pages_skipped, &pool));
    };
    // a sample of every (n / sample_rows)-th row first: where clearly more than selective_fraction of it
    // passes, the row group is read whole without evaluating the rest
    if (n > 4 * sample_rows) {
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < n; i += n / sample_rows) idx.push_back(i);
      const std::vector<uint8_t> ok = passing(gather(p, idx, mr));
      const auto passed = std::count(ok.begin(), ok.end(), uint8_t{1});
      if (static_cast<double>(passed) > 2 * selective_fraction * static_cast<double>(idx.size()))
        return read_others_whole();
    }
    const std::vector<uint8_t> pass = passing(p);
    std::vector<int64_t> at;  // positions among the rows read that pass
    for (int64_t i = 0; i < n; ++i)
      if (pass[static_cast<size_t>(i)]) at.push_back(i);
    if (static_cast<double>(at.size()) > selective_fraction * static_cast<double>(n)) return read_others_whole();
    table others, preds;
    if (!ranges.empty()) {
      // rows the page index narrowed down already: those pages are decoded, the passing rows gathered
      others = gather(r.read_row_group_ranges(rg, other_cols, ranges, mr, pages_skipped, &pool), at, mr);
      preds = gather(p, at, mr);
    } else {
      // the positions are the passing rows' numbers in the row group
      others = r.read_row_group_rows(rg, other_cols, at, mr, pages_skipped, &pool);
      preds = gather(p, at, mr);
    }
    return assemble(preds, others);
  };
  // Task k's rows (`piece` of `pieces` of them; the row group is counted as read with piece 0).
  auto decode = [&](size_t k, int64_t piece = 0, int64_t pieces = 1) {
    check_cancelled();  // between row groups
    const rg_task& t = tasks[k];
    const auto& r = *_readers[t.file];
    const int64_t lo = t.rows * piece / pieces, hi = t.rows * (piece + 1) / pieces;
    const std::vector<parquet::row_range> ranges =
        pieces == 1 ? t.ranges : parquet::sub_ranges(t.ranges, lo, hi);
    int64_t pages_skipped = 0;
    table part;
    if (file_cols.empty()) {
      part = table::empty_with_rows(hi - lo);
    } else if (device_mr) {
#ifdef TUG_WITH_CUDA
      parquet::device_read_counters d;
      part = parquet::read_row_group_device(r, t.rg, file_cols, ranges, options.gpu_parquet_device_decompression,
                                            device_mr, mr, &d);
      _counters->device_chunks += d.device_chunks;
      _counters->device_host_chunks += d.host_chunks;
      _counters->device_pages += d.device_pages;
      _counters->host_pages += d.host_pages;
      _counters->device_read_ns += d.read_ns;
      _counters->device_submit_ns += d.submit_ns;
      _counters->device_wait_ns += d.wait_ns;
      pages_skipped = d.pages_skipped;
#endif
    } else if (!row_preds.empty()) {
      part = read_where(r, t.rg, ranges, &pages_skipped);
    } else {
      part = r.read_row_group_ranges(t.rg, file_cols, ranges, mr, &pages_skipped, &pool);
    }
    _counters->pages_skipped += pages_skipped;
    if (piece == 0) {
      _counters->row_groups_read++;
      _counters->bytes_read += r.row_group_uncompressed_bytes(t.rg, file_cols);
    }
    std::vector<column> cols;
    size_t next_file = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (from_hive[i] < 0) {
        cols.push_back(part[next_file++]);
      } else {
        const std::string& v = _files[t.file].hive[static_cast<size_t>(from_hive[i])].second;
        column h = scalar(type_id::string, v).to_column(part.num_rows(), mr);
        cols.push_back(device_mr ? to_device(table({h}), device_mr)[0] : h);
      }
    }
    return cols.empty() ? part : table(std::move(cols));
  };
  // Row groups become partitions near the target size: consecutive small ones are coalesced, a large
  // one is cut into row ranges (slices of the row group decoded once). The plan needs only metadata, so
  // each pool task decodes, assembles and hands over (`hook`) its own partitions: a GPU consumer's
  // copies overlap the decoding of other partitions.
  // What partitions aim at: target_partition_size uncompressed bytes of the columns read, else
  // target_partition_rows rows; under a memory_limit, memory_bounded_partition_size decoded bytes where
  // such a partition would decode to more.
  const bool by_bytes = options.target_partition_size > 0 && !file_cols.empty();
  // rows a partition aims at: the option, else (automatic) more where the GPU reader decodes, since
  // every partition costs the device's operators launches and synchronizations
  const int64_t rows_target =
      options.target_partition_rows == 0 && device_mr ? gpu_scan_partition_rows : partition_rows(options);
  const int64_t bound = file_cols.empty() ? 0 : memory_bounded_partition_size(options, pool.size());
  int64_t rows_all = 0, bytes_all = 0, decoded_all = 0;  // of the whole row groups read
  std::vector<int64_t> decoded(tasks.size());
  for (size_t k = 0; k < tasks.size(); ++k) {
    const auto& r = *_readers[tasks[k].file];
    rows_all += r.row_group_num_rows(tasks[k].rg);
    if (bound > 0) {
      decoded[k] = r.row_group_decoded_bytes(tasks[k].rg, file_cols);
      decoded_all += decoded[k];
      if (by_bytes) bytes_all += r.row_group_uncompressed_bytes(tasks[k].rg, file_cols);
    }
  }
  const double plain_decoded =  // decoded bytes of a partition at the plain target
      by_bytes ? static_cast<double>(options.target_partition_size) * static_cast<double>(decoded_all) /
                     static_cast<double>(std::max<int64_t>(bytes_all, 1))
               : static_cast<double>(rows_target) * static_cast<double>(decoded_all) /
                     static_cast<double>(std::max<int64_t>(rows_all, 1));
  const bool bounded = bound > 0 && plain_decoded > static_cast<double>(bound);
  std::vector<int64_t> measure(tasks.size());
  for (size_t k = 0; k < tasks.size(); ++k) {
    const rg_task& t = tasks[k];
    const auto& r = *_readers[t.file];
    const int64_t rows = r.row_group_num_rows(t.rg);
    const int64_t m = bounded    ? decoded[k]  // of the whole row group
                      : by_bytes ? r.row_group_uncompressed_bytes(t.rg, file_cols)
                                 : rows;
    measure[k] =
        t.rows == rows
            ? m
            : static_cast<int64_t>(static_cast<double>(m) * static_cast<double>(t.rows) / static_cast<double>(rows));
  }
  int64_t target = bounded ? bound : by_bytes ? options.target_partition_size : rows_target;
  if (!device_mr) {
    // The CPU engine: fewer partitions than threads would leave threads idle in the operators after
    // the scan (a table of two row groups was one partition); the target shrinks to an even share per
    // thread, not below 16384 rows' worth. The GPU engine keeps large partitions (each fills the device).
    int64_t total = 0, rows_read = 0;
    for (size_t k = 0; k < tasks.size(); ++k) {
      total += measure[k];
      rows_read += tasks[k].rows;
    }
    if (rows_read > 0)
      target = share_per_thread(target, total, pool.size(),
                                static_cast<int64_t>(static_cast<double>(total) * min_rows_per_thread_share /
                                                     static_cast<double>(rows_read)));
  }
  const auto plan = plan_partitions(measure, target);
  std::vector<size_t> first_out(plan.size() + 1, 0);
  for (size_t i = 0; i < plan.size(); ++i)
    first_out[i + 1] = first_out[i] + static_cast<size_t>(plan[i].pieces);
  std::vector<table> out(first_out.back());
  auto emit = [&](size_t o, table t) { out[o] = hook ? hook(std::move(t), o) : std::move(t); };
  // The CPU engine, coalescing into fewer partitions than threads, decodes every row group in parallel
  // first (no overlap with the hook, but every thread busy; on 2 cores 10% faster on PDS-H SF1 Q13 than
  // the nested decoding below). The GPU reader decodes a coalesced partition's row groups in parallel
  // (nested tasks), so that only the partitions in flight are held on the device.
  std::vector<table> pre;
  if (!device_mr && tasks.size() > plan.size() && plan.size() < 2 * static_cast<size_t>(pool.size())) {
    pre.resize(tasks.size());
    pool.parallel_for(static_cast<int64_t>(tasks.size()),
                      [&](int64_t k) { pre[static_cast<size_t>(k)] = decode(static_cast<size_t>(k)); });
  }
  auto get = [&](size_t k) { return pre.empty() ? decode(k) : std::move(pre[k]); };
  // Work items: (plan entry, piece). Under a memory_limit a row group cut into pieces is decoded piece
  // by piece, each piece an item of its own (the pages before a piece are passed over undecoded), so no
  // thread holds a whole row group; otherwise it is decoded once and sliced (piece -1: the whole entry).
  const bool piecewise = bounded && pre.empty();
  std::vector<std::pair<size_t, int64_t>> items;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (piecewise && plan[i].count == 1 && plan[i].pieces > 1 && plan[i].pieces <= tasks[plan[i].first].rows)
      for (int64_t j = 0; j < plan[i].pieces; ++j)
        items.emplace_back(i, j);
    else
      items.emplace_back(i, -1);
  }
  pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t x) {
    const auto [i, piece] = items[static_cast<size_t>(x)];
    const partition_plan& p = plan[i];
    const size_t o = first_out[i];
    if (piece >= 0) {
      emit(o + static_cast<size_t>(piece), decode(p.first, piece, p.pieces));
      return;
    }
    if (p.count == 1) {
      const table t = get(p.first);
      const int64_t n = t.num_rows();
      // the pieces' consumers (the hook) run as tasks of their own, not one after another here
      pool.parallel_for(p.pieces, [&](int64_t j) {
        const int64_t lo = n * j / p.pieces, hi = n * (j + 1) / p.pieces;
        emit(o + static_cast<size_t>(j), p.pieces == 1 ? t : t.slice(lo, hi - lo));
      });
      return;
    }
    std::vector<table> parts(p.count);
    if (!pre.empty() || !device_mr) {
      for (size_t j = 0; j < p.count; ++j)
        parts[j] = get(p.first + j);
    } else {  // the GPU reader: the partition's row groups in parallel (nested tasks)
      pool.parallel_for(static_cast<int64_t>(p.count),
                        [&](int64_t j) { parts[static_cast<size_t>(j)] = decode(p.first + static_cast<size_t>(j)); });
    }
    if (columns.empty()) {
      int64_t rows = 0;
      for (auto& t : parts)
        rows += t.num_rows();
      emit(o, table::empty_with_rows(rows));
    } else {
      emit(o, concatenate_where_they_are(parts, mr, device_mr));
    }
  });
  _counters->partitions += static_cast<int64_t>(out.size());
  return out;
}

std::vector<table> parquet_source::take_rows(const std::vector<std::string>& columns, const std::vector<column>& ids,
                                             thread_pool& pool, memory_resource* mr) const {
  std::vector<size_t> file_cols;
  std::vector<data_type> types;
  for (auto& c : columns) {
    if (is_hive_column(c))
      throw invalid_argument_error("take: \"" + c + "\" is a hive partition column of " + _path +
                                   ", not a column of its files");
    file_cols.push_back(_schema.index_of(c));
    types.push_back(_schema[file_cols.back()].type);
  }
  // the row groups in file order and their first global rows (then the total)
  std::vector<std::pair<size_t, int>> groups;
  std::vector<int64_t> starts{0};
  for (size_t f = 0; f < _readers.size(); ++f)
    for (int rg = 0; rg < _readers[f]->num_row_groups(); ++rg) {
      groups.emplace_back(f, rg);
      starts.push_back(starts.back() + _readers[f]->row_group_num_rows(rg));
    }
  io_detail::check_row_ids(ids, starts.back(), describe());
  // the ids of all partitions, sorted and unique: row `i` of the fetched rows is the row at position u[i]
  std::vector<int64_t> u;
  for (auto& c : ids)
    u.insert(u.end(), c.values<int64_t>(), c.values<int64_t>() + c.size());
  std::sort(u.begin(), u.end());
  u.erase(std::unique(u.begin(), u.end()), u.end());
  std::vector<table> out(ids.size());
  if (u.empty() || columns.empty()) {
    for (size_t i = 0; i < ids.size(); ++i)
      out[i] = columns.empty() ? table::empty_with_rows(ids[i].size()) : io_detail::empty_table(types, mr);
    return out;
  }
  // per row group holding ids: its rows (local positions, ascending)
  struct fetch {
    size_t group;
    std::vector<int64_t> rows;
  };
  std::vector<fetch> fetches;
  for (size_t i = 0, g = 0; i < u.size(); ++i) {
    if (u[i] >= starts[g + 1] || fetches.empty()) {
      g = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), u[i]) - starts.begin() - 1);
      fetches.push_back({g, {}});
    }
    fetches.back().rows.push_back(u[i] - starts[g]);
  }
  std::vector<table> got(fetches.size());
  pool.parallel_for(static_cast<int64_t>(fetches.size()), [&](int64_t k) {
    const fetch& f = fetches[static_cast<size_t>(k)];
    const auto& [file, rg] = groups[f.group];
    const parquet::file_reader& r = *_readers[file];
    int64_t pages_skipped = 0;
    got[static_cast<size_t>(k)] = static_cast<int64_t>(f.rows.size()) == r.row_group_num_rows(rg)
                                      ? r.read_row_group_ranges(rg, file_cols, {}, mr, nullptr, &pool)
                                      : r.read_row_group_rows(rg, file_cols, f.rows, mr, &pages_skipped, &pool);
    _counters->take_row_groups++;
    _counters->take_pages_skipped += pages_skipped;
  });
  const table fetched = got.size() == 1 ? got[0] : concatenate(got, mr);
  // each partition's rows from the fetched ones: a slice where its ids are consecutive among the
  // fetched (ascending unique ids, as a filter chain leaves them), else a gather
  pool.parallel_for(static_cast<int64_t>(ids.size()), [&](int64_t i) {
    const column& c = ids[static_cast<size_t>(i)];
    const int64_t n = c.size();
    if (n == 0) {
      out[static_cast<size_t>(i)] = io_detail::empty_table(types, mr);
      return;
    }
    const int64_t* id = c.values<int64_t>();
    std::vector<int64_t> at(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      at[static_cast<size_t>(j)] = std::lower_bound(u.begin(), u.end(), id[j]) - u.begin();
    bool run = true;
    for (int64_t j = 1; j < n && run; ++j)
      run = at[static_cast<size_t>(j)] == at[static_cast<size_t>(j - 1)] + 1;
    out[static_cast<size_t>(i)] = run ? fetched.slice(at[0], n) : gather_in_range(fetched, at.data(), n, mr);
  });
  return out;
}

}  // namespace tug::io
