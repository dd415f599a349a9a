#include "tug/plan/lower.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <initializer_list>
#include <map>

#include "exec/cpu/agg_kernels.hpp"
#include "exec/size_estimate.hpp"
#include "tug/api/user_kernel.hpp"
#include "tug/dist/communicator.hpp"
#include "tug/expr/resolve.hpp"
#include "tug/memory/device.hpp"
#include "tug/memory/memory_resource.hpp"

namespace tug {

namespace {

// Replaces every sub-expression for which `f` returns a value.
template <typename F>
expr rewrite(const expr& e, F&& f) {
  if (auto r = f(e)) return *r;
  const auto& n = e.node();
  if (n.args.empty() && n.partition_by.empty()) return e;
  auto c = std::make_shared<expr_node>(n);
  for (auto& a : c->args)
    a = rewrite(a, f);
  for (auto& a : c->partition_by)
    a = rewrite(a, f);
  return expr(c);
}

// Collects the aggregation nodes of `e` (outside windows), deduplicated by structure.
void collect_aggs(const expr& e, std::vector<expr>& out) {
  const auto& n = e.node();
  if (n.kind == expr_kind::window) return;
  if (n.kind == expr_kind::agg) {
    for (auto& o : out)
      if (equal(o, e)) return;
    out.push_back(e);
    return;
  }
  for (auto& a : n.args)
    collect_aggs(a, out);
}

void collect_windows(const expr& e, std::vector<expr>& out) {
  const auto& n = e.node();
  if (n.kind == expr_kind::window) {
    for (auto& o : out)
      if (equal(o, e)) return;
    out.push_back(e);
    return;
  }
  for (auto& a : n.args)
    collect_windows(a, out);
}

// `e` under `name`: aliased unless it already has that alias.
expr named(const expr& e, const std::string& name) {
  return e->kind == expr_kind::alias && e->name == name ? e : e.alias(name);
}

int index_of_equal(const std::vector<expr>& v, const expr& e) {
  for (size_t i = 0; i < v.size(); ++i)
    if (equal(v[i], e)) return static_cast<int>(i);
  return -1;
}

agg_spec make_agg_spec(const expr& agg_node, int64_t input, const data_type& input_type) {
  const auto& n = agg_node.node();
  agg_spec s;
  s.op = n.agg;
  s.input = input;
  s.input_type = input_type;
  s.output_type = n.agg == agg_op::len ? data_type(type_id::int64) : agg_result_type(n.agg, input_type);
  s.ddof = static_cast<int>(n.i0);
  s.q = n.agg == agg_op::median ? 0.5 : n.d0;
  s.interpolation = n.agg == agg_op::median ? "linear" : (n.s0.empty() ? "nearest" : n.s0);
  return s;
}

struct lowerer {
  const engine_options& opts;
  backend preferred;
  int ranks;  ///< of the world the query runs on (dist::world())
  std::vector<std::string>* fallbacks;
  int tmp = 0;
  std::map<const plan_node*, int> uses;
  std::map<const plan_node*, std::shared_ptr<exec::shared_subplan>> shared;

  std::string temp(const char* prefix) { return std::string("__") + prefix + std::to_string(tmp++); }

  backend choose(const exec::op_request& r) {
    if (preferred == backend::cpu) return preferred;
    std::string reason = exec::backend_unsupported(preferred, r);
    if (reason.empty()) return preferred;
    return fall_back(std::string("operator ") + r.op, reason);
  }

  // A blocking operator that the GPU runs on its whole input at once (a sort, a unique, a window, a
  // one-phase aggregate, a join's sides held whole) runs on the cpu, out of core, when a rank's share of
  // that input may exceed the device budget by its estimate (size_hint rows x estimated_row_bytes):
  // the GPU has no hash buckets or sort ranges of its own yet, and would stop with a memory_error.
  // Inputs whose hint is no estimate stay on the GPU: without a hint, or with a reduction below
  // (hints_reduction).
  backend choose_blocking(const exec::op_request& r, std::initializer_list<const physical_node*> whole) {
    const backend b = choose(r);
    if (b != backend::cuda) return b;
    int64_t rows = 0, bytes = 0;
    for (const physical_node* n : whole) {
      const int64_t h = n->size_hint();
      if (h < 0 || hints_reduction(*n)) return b;
      rows += h;
      bytes += h * exec::estimated_row_bytes(n->output_schema);
    }
    rows /= std::max(ranks, 1);
    bytes /= std::max(ranks, 1);
    const int64_t limit = device_limit();
    if (limit <= 0 || bytes <= limit) return b;
    return fall_back(std::string("operator ") + r.op,
                     "its input, about " + human_bytes(bytes) + " (" + std::to_string(rows) + " rows" +
                         (ranks > 1 ? " a rank" : "") + "), may not fit the device budget (spill_device_limit " +
                         opts.spill_device_limit + ", " + human_bytes(limit) +
                         ") and the GPU holds it whole; the cpu runs it out of core");
  }

  // True when `n` or a node below it reduces rows by an amount that size hints do not know (an
  // aggregate, a unique, a top-k, a slice): its hint, its input's rows, is a bound and no estimate (the
  // groups of a group-by over 60M rows may be 4).
  static bool hints_reduction(const physical_node& n) {
    const std::string name = n.name();
    if (name.find("aggregate") != std::string::npos || name == "unique" || name == "top_k" || name == "slice")
      return true;
    if (const physical_node* shared = exec::cached_subplan(n)) return hints_reduction(*shared);
    for (auto& c : n.children)
      if (hints_reduction(*c)) return true;
    return false;
  }

  // The device budget, asked once (the GPU engine only): spill_device_limit of the device's memory.
  int64_t device_limit() {
    if (device_budget < 0) device_budget = parse_device_limit(opts.spill_device_limit, current_device_info().total_memory);
    return device_budget;
  }
  int64_t device_budget = -1;

  // `what` cannot run on the preferred backend for `reason`: runs on the cpu per fallback_mode.
  backend fall_back(const std::string& what, const std::string& reason) {
    std::string why = what + " cannot run on " + to_string(preferred) + ": " + reason + "; it runs on the cpu";
    if (opts.fallback == fallback_mode::raise) throw not_implemented_error(why + " (fallback_mode=raise)");
    if (fallbacks) fallbacks->push_back(why);
    if (opts.fallback == fallback_mode::warn) std::cerr << "tug warning: " << why << "\n";
    return backend::cpu;
  }

  // A user kernel runs on the GPU when the engine prefers it and the kernel has a device form, else on
  // the cpu with a host functor; a kernel with neither form for the engine is an error.
  backend choose_kernel(const user_kernel& k) {
    const std::string who = "kernel \"" + k.name() + "\"";
    if (preferred == backend::cuda && k.has_device()) return backend::cuda;
    if (!k.has_host())
      throw not_implemented_error(who + " has only a GPU form (" + (k.source_code() ? "CUDA source" : "a device functor") +
                                  ") and the query runs on the cpu (" +
                                  (gpu_available() ? "the engine is the cpu" : "no CUDA device is visible") +
                                  "); give the kernel a host functor as well (user_kernel::host)");
    if (preferred == backend::cuda) return fall_back(who, "it has only a host functor");
    return backend::cpu;
  }

  static exec::op_request window_request(const schema& in, const std::vector<window_spec>& specs) {
    exec::op_request r{"window", &in};
    for (auto& w : specs) {
      r.aggs.push_back(w.agg);
      for (size_t k : w.keys)
        if (std::find(r.keys.begin(), r.keys.end(), k) == r.keys.end()) r.keys.push_back(k);
    }
    return r;
  }

  void count_uses(const plan_ptr& p) {
    if (uses[p.get()]++ > 0) return;
    for (auto& i : p->inputs)
      count_uses(i);
  }

  physical_ptr project(physical_ptr child, const std::vector<expr>& exprs) {
    // let the child skip columns this projection does not read (e.g. a filter's predicate-only
    // columns, or a join's keys: through projections, which pass the narrowing on)
    narrow_to_used(*child, exprs);
    const schema& in = child->output_schema;
    std::vector<expr> resolved;
    std::vector<field> fields;
    for (auto& e : exprs) {
      resolved.push_back(resolve(e, in));
      fields.push_back({output_name(e), resolved.back()->dtype});
    }
    // decide the backend before the arguments below are moved from; a projection that only picks
    // and renames columns moves no data: it runs where its input is (no copy of a cpu operator's
    // output to the device and back only to reorder columns), except over a scan, which copies its
    // partitions to the device itself for a cuda consumer while it reads the next ones
    bool picks_columns = std::all_of(resolved.begin(), resolved.end(), [](const expr& e) {
      return e->kind == expr_kind::column || (e->kind == expr_kind::alias && e->args[0]->kind == expr_kind::column);
    });
    backend b_project = picks_columns && child->name() != "scan" ? child->where : choose({"project", &in, resolved});
    return exec::make_project(b_project, std::move(child), std::move(resolved), schema(std::move(fields)));
  }

  // Projection of all input columns plus `extra` (named by their aliases).
  physical_ptr append_columns(physical_ptr child, const std::vector<expr>& extra) {
    if (extra.empty()) return child;
    std::vector<expr> all;
    for (auto& f : child->output_schema)
      all.push_back(col(f.name));
    for (auto& e : extra)
      all.push_back(e);
    return project(std::move(child), all);
  }

  // Keeps the named columns in order.
  physical_ptr keep_columns(physical_ptr child, const std::vector<std::string>& names) {
    if (child->output_schema.names() == names) return child;
    std::vector<expr> v;
    for (auto& n : names)
      v.push_back(col(n));
    return project(std::move(child), v);
  }

  // Computes the windows of `exprs` as temporary columns appended to `child`; returns `exprs` with each
  // window replaced by a reference to its column.
  std::vector<expr> lower_windows(physical_ptr& child, const std::vector<expr>& exprs) {
    std::vector<expr> windows;
    for (auto& e : exprs)
      collect_windows(e, windows);
    if (windows.empty()) return exprs;
    // pre-projection: keys and aggregation inputs of every window
    std::vector<expr> pre;
    struct plan_w {
      std::vector<std::string> keys;
      std::vector<std::pair<expr, std::string>> aggs;  // agg node -> input column ("" for len)
      expr inner;
    };
    std::vector<plan_w> plans;
    for (auto& w : windows) {
      plan_w pw;
      for (auto& k : w->partition_by) {
        if (k->kind == expr_kind::column) {
          pw.keys.push_back(k->name);
        } else {
          std::string t = temp("wk");
          pre.push_back(k.alias(t));
          pw.keys.push_back(t);
        }
      }
      std::vector<expr> aggs;
      collect_aggs(w->args[0], aggs);
      for (auto& a : aggs) {
        std::string in;
        if (a->agg != agg_op::len) {
          // a column is read where it is, and an input several windows share is computed once (a
          // column per window was copied per window into the hash buckets out of core)
          const expr& arg = a->args[0];
          if (arg->kind == expr_kind::column) in = arg->name;
          for (size_t i = 0; in.empty() && i < pre.size(); ++i)
            if (pre[i]->kind == expr_kind::alias && equal(pre[i]->args[0], arg)) in = pre[i]->name;
          if (in.empty()) {
            in = temp("wi");
            pre.push_back(arg.alias(in));
          }
        }
        pw.aggs.emplace_back(a, in);
      }
      pw.inner = w->args[0];
      plans.push_back(std::move(pw));
    }
    child = append_columns(std::move(child), pre);
    // window operator
    const schema& in = child->output_schema;
    std::vector<window_spec> specs;
    schema out = in;
    std::vector<expr> replaced;  // per window: inner with aggs replaced
    for (auto& pw : plans) {
      std::vector<size_t> keys;
      for (auto& k : pw.keys)
        keys.push_back(in.index_of(k));
      std::vector<std::pair<expr, std::string>> agg_cols;
      for (auto& [a, input_col] : pw.aggs) {
        window_spec ws;
        ws.keys = keys;
        int64_t idx = input_col.empty() ? -1 : static_cast<int64_t>(in.index_of(input_col));
        ws.agg = make_agg_spec(a, idx, idx < 0 ? data_type(type_id::int64) : in[static_cast<size_t>(idx)].type);
        std::string name = temp("w");
        out.push_back({name, ws.agg.output_type});
        specs.push_back(std::move(ws));
        agg_cols.emplace_back(a, name);
      }
      replaced.push_back(rewrite(pw.inner, [&](const expr& e) -> std::optional<expr> {
        if (e->kind != expr_kind::agg) return std::nullopt;
        for (auto& [a, name] : agg_cols)
          if (equal(a, e)) return col(name);
        return std::nullopt;
      }));
    }
    if (!specs.empty()) {
      // decide the backend before the arguments below are moved from
      backend b_window = choose_blocking(window_request(child->output_schema, specs), {child.get()});
      child = exec::make_window(b_window, std::move(child), std::move(specs), std::move(out));
    }
    std::vector<expr> result;
    for (auto& e : exprs) {
      result.push_back(rewrite(e, [&](const expr& x) -> std::optional<expr> {
        if (x->kind != expr_kind::window) return std::nullopt;
        int i = index_of_equal(windows, x);
        return replaced[static_cast<size_t>(i)];
      }));
    }
    return result;
  }

  // Wraps aggregations outside windows into windows over no keys (with_columns broadcast semantics).
  static expr broadcast_aggs(const expr& e) {
    return rewrite(e, [](const expr& x) -> std::optional<expr> {
      if (x->kind == expr_kind::window) return x;
      if (x->kind != expr_kind::agg) return std::nullopt;
      auto n = std::make_shared<expr_node>();
      n->kind = expr_kind::window;
      n->args = {x};
      return expr(n);
    });
  }

  // Group-by (or global, with no keys) aggregation: pre-project, aggregate, post-project.
  physical_ptr aggregate(physical_ptr child, const std::vector<expr>& keys, const std::vector<expr>& outputs,
                         bool maintain_order) {
    std::vector<expr> aggs;
    for (auto& e : outputs)
      collect_aggs(e, aggs);
    std::vector<expr> pre;
    std::vector<std::string> key_names;
    for (auto& k : keys) {
      key_names.push_back(output_name(k));
      pre.push_back(k);
    }
    std::vector<std::string> agg_inputs;
    for (auto& a : aggs) {
      if (a->agg == agg_op::len) {
        agg_inputs.push_back("");
        continue;
      }
      std::string t = temp("ai");
      pre.push_back(a->args[0].alias(t));
      agg_inputs.push_back(t);
    }
    if (pre.empty()) pre.push_back(lit(true).alias(temp("row")));  // keep the row count
    child = project(std::move(child), pre);
    const schema& in = child->output_schema;
    std::vector<size_t> key_idx;
    for (size_t i = 0; i < keys.size(); ++i)
      key_idx.push_back(i);
    std::vector<agg_spec> specs;
    schema out;
    for (size_t i = 0; i < keys.size(); ++i)
      out.push_back(in[i]);
    std::vector<std::string> agg_names;
    for (size_t i = 0; i < aggs.size(); ++i) {
      int64_t idx = agg_inputs[i].empty() ? -1 : static_cast<int64_t>(in.index_of(agg_inputs[i]));
      specs.push_back(
          make_agg_spec(aggs[i], idx, idx < 0 ? data_type(type_id::int64) : in[static_cast<size_t>(idx)].type));
      agg_names.push_back(temp("a"));
      out.push_back({agg_names.back(), specs.back().output_type});
    }
    // decide the backend before the arguments below are moved from
    // (the hash aggregate's partial phase runs per partition, so only a one-phase aggregate holds its
    // whole input on the GPU)
    const bool two_phases =
        preferred == backend::cuda &&
        exec::backend_unsupported(backend::cuda, {"aggregate in two phases", &child->output_schema, {}, specs, key_idx})
            .empty();
    backend b_aggregate = two_phases ? choose({"aggregate", &child->output_schema, {}, specs, key_idx})
                                     : choose_blocking({"aggregate", &child->output_schema, {}, specs, key_idx},
                                                       {child.get()});
    // on several ranks, a group-by whose aggregations merge from partial states exchanges those states,
    // not its input rows: where the GPU would aggregate in one phase (string keys, decimals), the CPU
    // aggregates in two, unless the ranks' GPUs exchange device tables over NCCL (then the rows move
    // device to device, faster than the CPU aggregates them: SF10 Q1 on 2 H200s, 0.9 s on the CPU)
    if (b_aggregate == backend::cuda && ranks > 1 && !dist::device_exchanges_possible() &&
        std::all_of(specs.begin(), specs.end(), [](const agg_spec& a) { return cpu::is_decomposable(a.op); }) &&
        !exec::backend_unsupported(backend::cuda, {"aggregate in two phases", &child->output_schema, {}, specs, key_idx})
             .empty())
      b_aggregate = backend::cpu;
    // spanBy: when the input keeps the rows of some of the group keys together (a Cassandra scan
    // grouped by its partition key), each partition is aggregated alone, with no merge (CPU only)
    std::vector<std::string> together = child->key_partitioned();
    bool partitionwise = b_aggregate == backend::cpu && !together.empty();
    for (auto& k : together)
      partitionwise = partitionwise && std::find(key_names.begin(), key_names.end(), k) != key_names.end();
    if (partitionwise)
      child = exec::make_partitionwise_aggregate(b_aggregate, std::move(child), std::move(key_idx), std::move(specs),
                                                 std::move(out));
    else
      child = exec::make_aggregate(b_aggregate, std::move(child), std::move(key_idx), std::move(specs), maintain_order,
                                   std::move(out));
    std::vector<expr> post;
    for (auto& k : key_names)
      post.push_back(col(k));
    for (auto& e : outputs) {
      expr r = rewrite(e, [&](const expr& x) -> std::optional<expr> {
        if (x->kind != expr_kind::agg) return std::nullopt;
        return col(agg_names[static_cast<size_t>(index_of_equal(aggs, x))]);
      });
      post.push_back(named(r, output_name(e)));
    }
    return project(std::move(child), post);
  }

  physical_ptr join(const plan_node& n) {
    physical_ptr left = go(n.inputs[0]);
    physical_ptr right = go(n.inputs[1]);
    const schema& ls = n.inputs[0]->schema;
    const schema& rs = n.inputs[1]->schema;
    join_spec spec;
    spec.how = n.how;
    // key columns: plain columns of equal type are used as they are, others are computed
    std::vector<expr> lpre, rpre;
    for (size_t i = 0; i < n.keys.size(); ++i) {
      data_type lt = infer_type(n.keys[i], ls), rt = infer_type(n.right_keys[i], rs);
      data_type t = common_type(lt, rt, "join");
      auto key = [&](const expr& k, const data_type& kt, const schema& s, std::vector<expr>& pre) -> size_t {
        if (k->kind == expr_kind::column && kt == t) return s.index_of(k->name);
        pre.push_back(k.cast(t, false).alias(temp("jk")));
        return s.size() + pre.size() - 1;
      };
      spec.left_keys.push_back(key(n.keys[i], lt, ls, lpre));
      spec.right_keys.push_back(key(n.right_keys[i], rt, rs, rpre));
    }
    left = append_columns(std::move(left), lpre);
    right = append_columns(std::move(right), rpre);
    bool swap = n.how == join_type::right;
    if (swap) {
      spec.how = join_type::left;
      std::swap(left, right);
      std::swap(spec.left_keys, spec.right_keys);
    }
    // build-side columns to output, and how the logical output maps to the physical columns
    const schema& probe_s = left->output_schema;
    const schema& build_s = right->output_schema;
    auto coalesced = [&](size_t i) {
      return (n.how == join_type::inner || n.how == join_type::left || n.how == join_type::right) &&
             n.keys[i]->kind == expr_kind::column && n.right_keys[i]->kind == expr_kind::column;
    };
    // original build-side columns (without temporaries) minus coalesced keys
    const schema& build_orig = swap ? ls : rs;
    const std::vector<expr>& build_keys = swap ? n.keys : n.right_keys;
    std::vector<int64_t> build_pos(build_orig.size(), -1);
    if (spec.how != join_type::semi && spec.how != join_type::anti) {
      for (size_t j = 0; j < build_orig.size(); ++j) {
        bool drop = false;
        for (size_t i = 0; i < build_keys.size(); ++i)
          if (coalesced(i) && build_keys[i]->name == build_orig[j].name) drop = true;
        if (drop) continue;
        build_pos[j] = static_cast<int64_t>(spec.right_columns.size());
        spec.right_columns.push_back(j);
      }
    }
    schema out;
    std::vector<std::string> probe_names, build_names;
    for (size_t i = 0; i < probe_s.size(); ++i) {
      probe_names.push_back(temp("p"));
      out.push_back({probe_names.back(), probe_s[i].type});
    }
    for (size_t j : spec.right_columns) {
      build_names.push_back(temp("b"));
      out.push_back({build_names.back(), build_s[j].type});
    }
    // decide the backend before the arguments below are moved from
    // the GPU join holds its right side whole, and its left side too where that may be the smaller
    // (join_node::run); the left side streams through the probe otherwise
    const bool both_whole = exec::join_may_hold_both_sides(spec.how, left->size_hint(), right->size_hint());
    const exec::op_request join_request{"join", &left->output_schema, {}, {}, spec.left_keys};
    backend b_join = both_whole ? choose_blocking(join_request, {left.get(), right.get()})
                                : choose_blocking(join_request, {right.get()});
    physical_ptr j = exec::make_join(b_join, std::move(left), std::move(right), spec, std::move(out));
    // post-projection to the logical layout
    std::vector<expr> post;
    const schema& probe_orig = swap ? rs : ls;
    size_t k = 0;
    auto from_probe = [&](size_t i) { return col(probe_names[i]).alias(n.schema[k++].name); };
    auto from_build = [&](size_t jdx) {
      return col(build_names[static_cast<size_t>(build_pos[jdx])]).alias(n.schema[k++].name);
    };
    if (!swap) {
      for (size_t i = 0; i < probe_orig.size(); ++i)
        post.push_back(from_probe(i));
      for (size_t jdx = 0; jdx < build_orig.size(); ++jdx)
        if (build_pos[jdx] >= 0) post.push_back(from_build(jdx));
    } else {
      for (size_t jdx = 0; jdx < build_orig.size(); ++jdx)
        if (build_pos[jdx] >= 0) post.push_back(from_build(jdx));
      for (size_t i = 0; i < probe_orig.size(); ++i)
        post.push_back(from_probe(i));
    }
    TUG_EXPECTS(k == n.schema.size(), "join lowering: output layout mismatch");
    return project(std::move(j), post);
  }

  physical_ptr go(const plan_ptr& p) {
    if (uses[p.get()] > 1) {
      auto it = shared.find(p.get());
      if (it == shared.end()) it = shared.emplace(p.get(), exec::make_shared_subplan(go_node(*p))).first;
      return exec::make_cache(it->second);
    }
    return go_node(*p);
  }

  physical_ptr go_node(const plan_node& n) {
    switch (n.kind) {
      case plan_kind::scan: {
        const schema& src = n.source->schema();
        std::vector<std::string> cols = n.projection.empty() ? src.names() : n.projection;
        schema out;
        for (auto& c : cols)
          out.push_back(src[src.index_of(c)]);
        physical_ptr scan =
            exec::make_scan(backend::cpu, n.source, std::move(cols), n.predicates, n.length, std::move(out));
        if (!n.predicates.empty()) {
          // one filter for the whole conjunction: each filter copies the surviving rows
          expr all = n.predicates[0];
          for (size_t i = 1; i < n.predicates.size(); ++i)
            all = all & n.predicates[i];
          expr pred = resolve(all, scan->output_schema);
          // decide the backend before the arguments below are moved from
          backend b_filter = choose({"filter", &scan->output_schema, {pred}});
          scan = exec::make_filter(b_filter, std::move(scan), std::move(pred));
        }
        // pushed-down predicates may use columns the projection then drops
        return keep_columns(std::move(scan), n.schema.names());
      }
      case plan_kind::filter: {
        physical_ptr c = go(n.inputs[0]);
        std::vector<std::string> names = c->output_schema.names();
        auto rewritten = lower_windows(c, {n.exprs[0]});
        expr pred = resolve(rewritten[0], c->output_schema);
        // decide the backend before the arguments below are moved from
        backend b_filter = choose({"filter", &c->output_schema, {pred}});
        c = exec::make_filter(b_filter, std::move(c), std::move(pred));
        return keep_columns(std::move(c), names);
      }
      case plan_kind::select: {
        physical_ptr c = go(n.inputs[0]);
        bool agg = false;
        for (auto& e : n.exprs)
          agg |= contains_agg(e);
        auto exprs = lower_windows(c, n.exprs);
        if (agg) return aggregate(std::move(c), {}, exprs, false);
        return project(std::move(c), exprs);
      }
      case plan_kind::with_columns: {
        physical_ptr c = go(n.inputs[0]);
        std::vector<expr> added;
        for (auto& e : n.exprs)
          added.push_back(named(broadcast_aggs(e), output_name(e)));
        auto exprs = lower_windows(c, added);
        std::vector<expr> all;
        for (auto& f : n.schema) {
          int found = -1;
          for (size_t i = 0; i < n.exprs.size(); ++i)
            if (output_name(n.exprs[i]) == f.name) found = static_cast<int>(i);
          all.push_back(found >= 0 ? exprs[static_cast<size_t>(found)] : col(f.name));
        }
        return project(std::move(c), all);
      }
      case plan_kind::group_by:
        return aggregate(go(n.inputs[0]), n.keys, n.exprs, n.stable);
      case plan_kind::join:
        return join(n);
      case plan_kind::sort: {
        physical_ptr c = go(n.inputs[0]);
        std::vector<std::string> names = c->output_schema.names();
        std::vector<expr> pre;
        std::vector<std::string> key_names;
        for (auto& e : n.exprs) {
          if (e->kind == expr_kind::column) {
            key_names.push_back(e->name);
          } else {
            key_names.push_back(temp("sk"));
            pre.push_back(e.alias(key_names.back()));
          }
        }
        pre = lower_windows(c, pre);
        c = append_columns(std::move(c), pre);
        std::vector<size_t> keys;
        for (auto& k : key_names)
          keys.push_back(c->output_schema.index_of(k));
        // decide the backend before the arguments below are moved from
        backend b_sort = choose_blocking({"sort", &c->output_schema, {}, {}, keys}, {c.get()});
        c = exec::make_sort(b_sort, std::move(c), std::move(keys), n.descending, n.nulls_last, n.stable, n.length);
        return keep_columns(std::move(c), names);
      }
      case plan_kind::slice: {
        physical_ptr c = go(n.inputs[0]);
        // decide the backend before the arguments below are moved from
        backend b_slice = choose({"slice", &c->output_schema});
        return exec::make_slice(b_slice, std::move(c), n.offset, n.length);
      }
      case plan_kind::unique: {
        physical_ptr c = go(n.inputs[0]);
        std::vector<size_t> subset;
        for (auto& s : n.names)
          subset.push_back(c->output_schema.index_of(s));
        // decide the backend before the arguments below are moved from
        backend b_unique = choose_blocking({"unique", &c->output_schema, {}, {}, subset}, {c.get()});
        return exec::make_unique(b_unique, std::move(c), std::move(subset), n.keep, n.stable);
      }
      case plan_kind::concat: {
        std::vector<physical_ptr> kids;
        for (auto& i : n.inputs)
          kids.push_back(go(i));
        // decide the backend before the arguments below are moved from
        backend b_concat = choose({"concat", &n.schema});
        return exec::make_concat(b_concat, std::move(kids), n.schema);
      }
      case plan_kind::with_row_index: {
        physical_ptr c = go(n.inputs[0]);
        // decide the backend before the arguments below are moved from
        backend b_row_index = choose({"row_index", &c->output_schema});
        return exec::make_row_index(b_row_index, std::move(c), n.offset, n.schema);
      }
      case plan_kind::map_partitions: {
        physical_ptr c = go(n.inputs[0]);
        backend b_kernel = choose_kernel(*n.kernel);
        return exec::make_map_partitions(b_kernel, std::move(c), n.kernel, n.schema);
      }
      case plan_kind::take: {
        // gathers from host memory: always on the cpu, like scans (its input comes back to the host)
        physical_ptr c = go(n.inputs[0]);
        return exec::make_take(backend::cpu, std::move(c), n.source, n.projection, n.names[0], n.schema);
      }
    }
    throw internal_error(std::string("lowering: unhandled plan node ") + to_string(n.kind));
  }
};

}  // namespace

physical_ptr lower(const plan_ptr& p, const engine_options& opts, std::vector<std::string>* fallbacks) {
  validate_options(opts);  // every query passes here before anything runs
  backend preferred = backend::cpu;
  if (opts.engine == engine_kind::gpu) {
    if (!gpu_available()) {
      std::string why = "engine=gpu was requested but no CUDA device is visible (or tug was built without CUDA)";
      if (opts.fallback == fallback_mode::raise) throw not_implemented_error(why);
      if (fallbacks) fallbacks->push_back(why + "; running on the cpu");
      if (opts.fallback == fallback_mode::warn) std::cerr << "tug warning: " << why << "; running on the cpu\n";
    } else {
      preferred = backend::cuda;
    }
  } else if (opts.engine == engine_kind::automatic && gpu_available()) {
    // TUG_ENGINE=cpu keeps `automatic` on the CPU (e.g. to compare engines with one test binary)
    const char* env = std::getenv("TUG_ENGINE");
    if (!env || std::string(env) != "cpu") preferred = backend::cuda;
  }
  lowerer l{opts, preferred, dist::world()->size(), fallbacks, 0, {}, {}};
  l.count_uses(p);
  return l.go(p);
}

}  // namespace tug
