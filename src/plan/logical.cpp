#include "tug/plan/logical.hpp"

#include <map>

#include "tug/api/user_kernel.hpp"
#include "tug/expr/resolve.hpp"

namespace tug {

const char* to_string(plan_kind k) {
  switch (k) {
    case plan_kind::scan: return "SCAN";
    case plan_kind::filter: return "FILTER";
    case plan_kind::select: return "SELECT";
    case plan_kind::with_columns: return "WITH_COLUMNS";
    case plan_kind::group_by: return "AGGREGATE";
    case plan_kind::join: return "JOIN";
    case plan_kind::sort: return "SORT";
    case plan_kind::slice: return "SLICE";
    case plan_kind::unique: return "UNIQUE";
    case plan_kind::concat: return "UNION";
    case plan_kind::with_row_index: return "ROW_INDEX";
    case plan_kind::take: return "TAKE";
    case plan_kind::map_partitions: return "MAP_PARTITIONS";
  }
  return "?";
}

const char* to_string(join_type j) {
  switch (j) {
    case join_type::inner: return "inner";
    case join_type::left: return "left";
    case join_type::right: return "right";
    case join_type::full: return "full";
    case join_type::semi: return "semi";
    case join_type::anti: return "anti";
    case join_type::cross: return "cross";
  }
  return "?";
}

const char* to_string(unique_keep k) {
  switch (k) {
    case unique_keep::any: return "any";
    case unique_keep::first: return "first";
    case unique_keep::last: return "last";
    case unique_keep::none: return "none";
  }
  return "?";
}

namespace plan {

namespace {

std::shared_ptr<plan_node> make(plan_kind k, std::vector<plan_ptr> inputs) {
  auto n = std::make_shared<plan_node>();
  n->kind = k;
  n->inputs = std::move(inputs);
  for (auto& i : n->inputs) TUG_EXPECTS(i != nullptr, "plan input is null");
  return n;
}

void check_no_agg(const expr& e, const char* where) {
  if (contains_agg(e))
    throw invalid_argument_error(std::string("aggregation ") + to_string(e) + " is not allowed in " + where +
                                 "; use group_by().agg() or .over()");
}

// Output fields of a list of projections; checks unique names.
std::vector<field> project_fields(const std::vector<expr>& exprs, const schema& in) {
  std::vector<field> out;
  for (auto& e : exprs) out.push_back({output_name(e), infer_type(e, in)});
  return out;
}

}  // namespace

plan_ptr scan(std::shared_ptr<const table_source> src) {
  auto n = make(plan_kind::scan, {});
  n->schema = src->schema();
  n->source = std::move(src);
  return n;
}

plan_ptr filter(plan_ptr in, expr predicate) {
  check_no_agg(predicate, "filter()");
  data_type t = infer_type(predicate, in->schema);
  if (t.id != type_id::boolean)
    throw type_error("filter predicate must be boolean, got " + to_string(t) + ": " + to_string(predicate));
  auto n = make(plan_kind::filter, {in});
  n->schema = in->schema;
  n->exprs = {std::move(predicate)};
  return n;
}

plan_ptr select(plan_ptr in, std::vector<expr> exprs) {
  auto n = make(plan_kind::select, {in});
  bool any_agg = false, any_rowwise = false;
  for (auto& e : exprs) {
    bool a = contains_agg(e);
    any_agg |= a;
    if (!a && !referenced_columns(e).empty()) any_rowwise = true;
  }
  if (any_agg && any_rowwise)
    throw invalid_argument_error(
        "select() mixes aggregations with row-wise expressions of different lengths; aggregate every column or "
        "use .over()");
  n->schema = schema(project_fields(exprs, in->schema));
  n->exprs = std::move(exprs);
  return n;
}

plan_ptr with_columns(plan_ptr in, std::vector<expr> exprs) {
  auto n = make(plan_kind::with_columns, {in});
  schema s = in->schema;
  schema added;
  for (auto& e : exprs) {
    field f{output_name(e), infer_type(e, in->schema)};
    added.push_back(f);  // duplicate names among the new columns are an error
    s.set(f);
  }
  n->schema = std::move(s);
  n->exprs = std::move(exprs);
  return n;
}

plan_ptr group_by(plan_ptr in, std::vector<expr> keys, std::vector<expr> aggs, bool maintain_order) {
  if (keys.empty()) throw invalid_argument_error("group_by() needs at least one key");
  auto n = make(plan_kind::group_by, {in});
  std::vector<field> fields;
  for (auto& k : keys) {
    check_no_agg(k, "group_by() keys");
    if (contains_window(k)) throw invalid_argument_error("over() is not allowed in group_by() keys");
    fields.push_back({output_name(k), infer_type(k, in->schema)});
  }
  for (auto& a : aggs) {
    if (!contains_agg(a))
      throw invalid_argument_error("expression " + to_string(a) +
                                   " in agg() does not aggregate; tug has no list columns, so every agg() "
                                   "expression must reduce to one value per group (e.g. .first(), .sum())");
    if (contains_window(a)) throw invalid_argument_error("over() is not allowed inside agg(): " + to_string(a));
    fields.push_back({output_name(a), infer_type(a, in->schema)});
  }
  n->schema = schema(std::move(fields));
  n->keys = std::move(keys);
  n->exprs = std::move(aggs);
  n->stable = maintain_order;
  return n;
}

plan_ptr join(plan_ptr left, plan_ptr right, std::vector<expr> left_on, std::vector<expr> right_on, join_type how,
              std::string suffix) {
  auto n = make(plan_kind::join, {left, right});
  if (how == join_type::cross) {
    if (!left_on.empty() || !right_on.empty()) throw invalid_argument_error("a cross join takes no keys");
  } else {
    if (left_on.empty()) throw invalid_argument_error(std::string(to_string(how)) + " join needs at least one key");
    if (left_on.size() != right_on.size())
      throw invalid_argument_error("join: left_on has " + std::to_string(left_on.size()) + " keys but right_on has " +
                                   std::to_string(right_on.size()));
    for (size_t i = 0; i < left_on.size(); ++i) {
      check_no_agg(left_on[i], "join keys");
      check_no_agg(right_on[i], "join keys");
      data_type lt = infer_type(left_on[i], left->schema);
      data_type rt = infer_type(right_on[i], right->schema);
      try {
        common_type(lt, rt, "join");
      } catch (const type_error&) {
        throw type_error("join key types differ: " + to_string(left_on[i]) + " is " + to_string(lt) + " but " +
                         to_string(right_on[i]) + " is " + to_string(rt));
      }
    }
  }
  // Key columns that appear once in the output: both keys plain columns, inner/left/right joins.
  auto coalesced = [&](size_t i) {
    return (how == join_type::inner || how == join_type::left || how == join_type::right) &&
           left_on[i]->kind == expr_kind::column && right_on[i]->kind == expr_kind::column;
  };
  auto is_key = [&](const std::vector<expr>& keys, const std::string& name) {
    for (size_t i = 0; i < keys.size(); ++i)
      if (coalesced(i) && keys[i]->name == name) return true;
    return false;
  };
  schema s;
  auto add_suffixed = [&](field g) {
    if (s.contains(g.name)) g.name += suffix;
    if (s.contains(g.name))
      throw invalid_argument_error("join: column \"" + g.name + "\" exists on both sides even after the suffix \"" +
                                   suffix + "\"; choose another suffix");
    s.push_back(std::move(g));
  };
  if (how == join_type::semi || how == join_type::anti) {
    for (auto& f : left->schema) s.push_back(f);
  } else if (how == join_type::right) {
    // Polars layout: left columns without the join keys, then all right columns
    for (auto& f : left->schema)
      if (!is_key(left_on, f.name)) s.push_back(f);
    for (auto& f : right->schema) add_suffixed(f);
  } else {
    for (auto& f : left->schema) s.push_back(f);
    for (auto& f : right->schema)
      if (!is_key(right_on, f.name)) add_suffixed(f);
  }
  n->schema = std::move(s);
  n->keys = std::move(left_on);
  n->right_keys = std::move(right_on);
  n->how = how;
  n->suffix = std::move(suffix);
  return n;
}

plan_ptr sort(plan_ptr in, std::vector<expr> by, std::vector<bool> descending, std::vector<bool> nulls_last,
              bool stable) {
  if (by.empty()) throw invalid_argument_error("sort() needs at least one key");
  auto broadcast = [&](std::vector<bool>& v, const char* what) {
    if (v.empty()) v.assign(by.size(), false);
    else if (v.size() == 1) v.assign(by.size(), static_cast<bool>(v[0]));
    else if (v.size() != by.size())
      throw invalid_argument_error(std::string("sort(): ") + what + " has " + std::to_string(v.size()) +
                                   " entries for " + std::to_string(by.size()) + " keys");
  };
  broadcast(descending, "descending");
  broadcast(nulls_last, "nulls_last");
  for (auto& e : by) {
    check_no_agg(e, "sort keys");
    infer_type(e, in->schema);
  }
  auto n = make(plan_kind::sort, {in});
  n->schema = in->schema;
  n->exprs = std::move(by);
  n->descending = std::move(descending);
  n->nulls_last = std::move(nulls_last);
  n->stable = stable;
  return n;
}

plan_ptr slice(plan_ptr in, int64_t offset, int64_t length) {
  if (length < -1) throw invalid_argument_error("slice length must be >= 0 (or -1 for all)");
  auto n = make(plan_kind::slice, {in});
  n->schema = in->schema;
  n->offset = offset;
  n->length = length;
  return n;
}

plan_ptr unique(plan_ptr in, std::vector<std::string> subset, unique_keep keep, bool maintain_order) {
  for (auto& s : subset) in->schema.index_of(s);
  auto n = make(plan_kind::unique, {in});
  n->schema = in->schema;
  n->names = std::move(subset);
  n->keep = keep;
  n->stable = maintain_order;
  return n;
}

plan_ptr concat(std::vector<plan_ptr> inputs) {
  if (inputs.empty()) throw invalid_argument_error("concat() needs at least one frame");
  const schema& s0 = inputs[0]->schema;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const schema& s = inputs[i]->schema;
    if (s.size() != s0.size())
      throw type_error("concat: frame " + std::to_string(i) + " has " + std::to_string(s.size()) +
                       " columns, the first has " + std::to_string(s0.size()) + " (" + s0.to_string() + ")");
    for (size_t c = 0; c < s.size(); ++c)
      if (!(s[c] == s0[c]))
        throw type_error("concat: column " + std::to_string(c) + " of frame " + std::to_string(i) + " is \"" +
                         s[c].name + "\": " + to_string(s[c].type) + " but the first frame has \"" + s0[c].name +
                         "\": " + to_string(s0[c].type));
  }
  auto n = make(plan_kind::concat, std::move(inputs));
  n->schema = s0;
  return n;
}

plan_ptr with_row_index(plan_ptr in, std::string name, int64_t offset) {
  auto n = make(plan_kind::with_row_index, {in});
  schema s;
  s.push_back({name, type_id::int64});
  for (auto& f : in->schema) s.push_back(f);
  n->schema = std::move(s);
  n->names = {std::move(name)};
  n->offset = offset;
  return n;
}

plan_ptr take(plan_ptr in, std::shared_ptr<const table_source> src, std::string row_column,
              std::vector<std::string> columns) {
  TUG_EXPECTS(src != nullptr, "take: source is null");
  data_type rt = in->schema[in->schema.index_of(row_column)].type;
  if (rt.id != type_id::int64)
    throw type_error("take: row column \"" + row_column + "\" must be int64, got " + to_string(rt));
  auto n = make(plan_kind::take, {in});
  schema s = in->schema;
  for (auto& c : columns) {
    if (s.contains(c)) throw invalid_argument_error("take: column \"" + c + "\" is already in the input");
    s.push_back(src->schema()[src->schema().index_of(c)]);
  }
  n->schema = std::move(s);
  n->names = {std::move(row_column)};
  n->projection = std::move(columns);
  n->source = std::move(src);
  return n;
}

plan_ptr map_partitions(plan_ptr in, std::shared_ptr<const user_kernel> k) {
  TUG_EXPECTS(k != nullptr, "map_partitions: kernel is null");
  const std::string who = "kernel \"" + k->name() + "\"";
  auto check_column = [&](const std::string& c, const char* what) {
    if (!in->schema.contains(c))
      throw column_not_found_error(who + ": " + what + " column \"" + c + "\" is not in the input (" +
                                   in->schema.to_string() + ")");
  };
  for (auto& c : k->input_names()) check_column(c, "input");
  for (auto& c : k->kept()) check_column(c, "kept");
  if (!k->has_host() && !k->has_device())
    throw invalid_argument_error(who + " has no form to run: give it a host functor, a device functor or CUDA source");
  schema s;
  for (auto& c : k->kept()) s.push_back(in->schema[in->schema.index_of(c)]);
  for (auto& f : k->output_schema()) {
    if (s.contains(f.name))
      throw invalid_argument_error(who + ": output column \"" + f.name + "\" is declared twice (or is also kept)");
    s.push_back(f);
  }
  if (k->source_code()) {
    // a source kernel gets in_column / in_strings / out_column / out_strings views (tug/kernel.cuh)
    for (size_t i = 0; i < k->arguments().size(); ++i)
      if (k->arguments()[i].type().id == type_id::string)
        throw invalid_argument_error(who + ": argument " + std::to_string(i) +
                                     " is a string; CUDA source kernels take numeric and boolean arguments only");
  }
  // a launch CUDA would refuse on every device is named here, before any data moves (what a device
  // refuses beyond these, e.g. its shared memory, is named by the launch and leaves the process usable)
  const launch_config& l = k->launch_cfg();
  if (l.grid < 0 || l.grid > 2147483647 || l.block < 0 || l.block > 1024 || l.shared_bytes < 0 ||
      l.shared_bytes > 4294967295)
    throw invalid_argument_error(who + ": launch (grid " + std::to_string(l.grid) + ", block " +
                                 std::to_string(l.block) + ", shared_bytes " + std::to_string(l.shared_bytes) +
                                 ") is out of range: grid 0 to 2^31-1 blocks, block 0 to 1024 threads, shared_bytes "
                                 "0 to 2^32-1 (0: tug chooses)");
  auto n = make(plan_kind::map_partitions, {in});
  n->schema = std::move(s);
  n->kernel = std::move(k);
  return n;
}

plan_ptr with_inputs(const plan_node& n, std::vector<plan_ptr> inputs) {
  switch (n.kind) {
    case plan_kind::scan: {
      auto c = std::make_shared<plan_node>(n);
      return c;
    }
    case plan_kind::filter: return filter(inputs[0], n.exprs[0]);
    case plan_kind::select: return select(inputs[0], n.exprs);
    case plan_kind::with_columns: return with_columns(inputs[0], n.exprs);
    case plan_kind::group_by: return group_by(inputs[0], n.keys, n.exprs, n.stable);
    case plan_kind::join: return join(inputs[0], inputs[1], n.keys, n.right_keys, n.how, n.suffix);
    case plan_kind::sort: {
      auto s = std::make_shared<plan_node>(*sort(inputs[0], n.exprs, n.descending, n.nulls_last, n.stable));
      s->length = n.length;  // top-k set by the optimizer
      return s;
    }
    case plan_kind::slice: return slice(inputs[0], n.offset, n.length);
    case plan_kind::unique: return unique(inputs[0], n.names, n.keep, n.stable);
    case plan_kind::concat: return concat(std::move(inputs));
    case plan_kind::with_row_index: return with_row_index(inputs[0], n.names[0], n.offset);
    case plan_kind::take:
      return take(inputs[0], n.source, n.names[0], n.projection);
    case plan_kind::map_partitions: return map_partitions(inputs[0], n.kernel);
  }
  throw internal_error("with_inputs: bad plan kind");
}

}  // namespace plan

namespace {
std::string exprs_str(const std::vector<expr>& v) {
  std::string s;
  for (auto& e : v) s += (s.empty() ? "" : ", ") + to_string(e);
  return "[" + s + "]";
}

std::string names_str(const std::vector<std::string>& v) {
  std::string s;
  for (auto& c : v) s += (s.empty() ? "" : ", ") + c;
  return "[" + s + "]";
}

std::string bools_str(const std::vector<bool>& v) {
  std::string s;
  for (bool b : v) s += (s.empty() ? "" : ", ") + std::string(b ? "true" : "false");
  return "[" + s + "]";
}

bool any_of(const std::vector<bool>& v) {
  for (bool b : v)
    if (b) return true;
  return false;
}


// The node's own line, without inputs.
std::string node_line(const plan_node& n) {
  std::string line = to_string(n.kind);
  switch (n.kind) {
    case plan_kind::scan: {
      line = n.source->describe();
      if (!n.projection.empty())
        line += "; project " + std::to_string(n.projection.size()) + "/" + std::to_string(n.source->schema().size()) +
                " columns " + names_str(n.projection);
      if (!n.predicates.empty()) line += "; selection: " + exprs_str(n.predicates);
      if (n.length >= 0) line += "; first " + std::to_string(n.length) + " rows";
      if (n.schema.size() != (n.projection.empty() ? n.source->schema().size() : n.projection.size()))
        line += "; output " + names_str(n.schema.names());
      break;
    }
    case plan_kind::filter: line += " " + to_string(n.exprs[0]); break;
    case plan_kind::select:
    case plan_kind::with_columns: line += " " + exprs_str(n.exprs); break;
    case plan_kind::group_by:
      line += " " + exprs_str(n.exprs) + " BY " + exprs_str(n.keys);
      if (n.stable) line += " maintain_order";
      break;
    case plan_kind::join:
      line += std::string(" ") + to_string(n.how);
      if (n.how != join_type::cross) line += " LEFT ON " + exprs_str(n.keys) + " RIGHT ON " + exprs_str(n.right_keys);
      if (n.suffix != "_right") line += " suffix \"" + n.suffix + "\"";
      break;
    case plan_kind::sort:
      line += " BY " + exprs_str(n.exprs);
      if (any_of(n.descending)) line += " descending " + bools_str(n.descending);
      if (any_of(n.nulls_last)) line += " nulls_last " + bools_str(n.nulls_last);
      if (n.stable) line += " stable";
      if (n.length >= 0) line += "; top-k " + std::to_string(n.length);
      break;
    case plan_kind::slice:
      line += " offset " + std::to_string(n.offset) + " len " + (n.length < 0 ? "all" : std::to_string(n.length));
      break;
    case plan_kind::unique:
      line += " subset " + names_str(n.names) + " keep " + to_string(n.keep);
      if (n.stable) line += " maintain_order";
      break;
    case plan_kind::with_row_index:
      line += " " + n.names[0];
      if (n.offset != 0) line += " offset " + std::to_string(n.offset);
      break;
    case plan_kind::take:
      line += " " + names_str(n.projection) + " BY " + n.names[0] + " FROM " + n.source->describe();
      break;
    case plan_kind::map_partitions: line += " " + n.kernel->describe(); break;
    case plan_kind::concat: break;
  }
  return line;
}

struct renderer {
  std::map<const plan_node*, int> uses;
  std::map<const plan_node*, int> ids;  // shared nodes, numbered in print order
  std::string out;

  void count(const plan_ptr& p) {
    if (uses[p.get()]++ > 0) return;
    for (auto& i : p->inputs) count(i);
  }

  void render(const plan_ptr& p, int depth) {
    std::string pad(static_cast<size_t>(depth) * 2, ' ');
    if (uses[p.get()] > 1) {
      auto it = ids.find(p.get());
      if (it != ids.end()) {
        out += pad + "SHARED #" + std::to_string(it->second) + " (executed once, see above)\n";
        return;
      }
      int id = static_cast<int>(ids.size()) + 1;
      ids.emplace(p.get(), id);
      out += pad + node_line(*p) + "  [shared #" + std::to_string(id) + "]\n";
    } else {
      out += pad + node_line(*p) + "\n";
    }
    for (auto& i : p->inputs) render(i, depth + 1);
  }
};
}  // namespace

std::string to_string(const plan_ptr& p) {
  renderer r;
  r.count(p);
  r.render(p, 0);
  return r.out;
}

}  // namespace tug
