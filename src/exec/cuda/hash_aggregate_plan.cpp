// Host side of the CUDA hash aggregation: which group-bys hash_aggregate.cu runs, and the accumulator
// programs of its phases (hash_aggregate.hpp). The states and merges mirror the CPU backend's
// partial_states / merge_states (src/exec/cpu/agg_kernels.cpp).
#ifdef TUG_WITH_CUDA
#include <algorithm>
#include <cmath>
#include <cstring>

#include "exec/cpu/agg_kernels.hpp"
#include "exec/cuda/hash_aggregate.hpp"
#include "tug/exec/cpu/evaluate.hpp"
#include "tug/expr/resolve.hpp"

namespace tug::cuda::hash {

namespace {

bool fixed_width_key(type_id id) {
  return is_integer(id) || is_floating(id) || id == type_id::boolean || id == type_id::date32 ||
         id == type_id::timestamp || id == type_id::duration;
}

/// Builds a program: accumulators in any order, then reordered pass 1, computed, pass 2.
class builder {
 public:
  int add(acc_desc a) {
    _p.accs.push_back(a);
    return static_cast<int>(_p.accs.size()) - 1;
  }
  void out(out_desc o) { _p.outs.push_back(std::move(o)); }

  program finish() {
    auto rank = [](const acc_desc& a) { return a.pass == 1 ? 0 : (a.pass == 0 ? 1 : 2); };
    std::vector<int> order(_p.accs.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return rank(_p.accs[static_cast<size_t>(x)]) < rank(_p.accs[static_cast<size_t>(y)]);
    });
    std::vector<int> where(order.size());
    for (size_t i = 0; i < order.size(); ++i)
      where[static_cast<size_t>(order[i])] = static_cast<int>(i);
    auto remap = [&](int& i) {
      if (i >= 0) i = where[static_cast<size_t>(i)];
    };
    program p;
    for (int i : order) {
      acc_desc a = _p.accs[static_cast<size_t>(i)];
      remap(a.a);
      remap(a.b);
      remap(a.lo);
      remap(a.hi);
      p.accs.push_back(a);
      p.pass1 += a.pass == 1;
      p.pass2 += a.pass == 2;
    }
    for (auto o : _p.outs) {
      remap(o.acc);
      remap(o.acc2);
      remap(o.acc3);
      p.outs.push_back(std::move(o));
    }
    return p;
  }

 private:
  program _p;
};

/// var / std (exec/moments.hpp): count, sum and the range of the values (pass 1), the center, and the
/// deviation sums around it (pass 2). Rows or partial states, by the sources of the accumulators.
struct moments {
  int n, center, d1, d2;
};
moments add_moments(builder& b, acc_desc count, acc_desc sum, acc_desc range, acc_desc d1, acc_desc d2) {
  moments m{};
  m.n = b.add(count);
  int s = b.add(sum);
  range.kind = acc_kind::min_u64;
  int lo = b.add(range);
  range.kind = acc_kind::max_u64;
  int hi = b.add(range);
  acc_desc c;
  c.kind = acc_kind::center;
  c.pass = 0;
  c.a = m.n;
  c.b = s;
  c.lo = lo;
  c.hi = hi;
  m.center = b.add(c);
  d1.pass = d2.pass = 2;
  d1.a = d2.a = m.center;
  m.d1 = b.add(d1);
  m.d2 = b.add(d2);
  return m;
}

// What every phase shares: min / max / first / last / any / all over column `c` (the input column in
// the partial phase, the state column in the final one, whose state is the aggregate itself).
bool add_selection(builder& b, const agg_spec& s, int c) {
  switch (s.op) {
    case agg_op::min:
    case agg_op::max: {
      int a = b.add(acc_desc{s.op == agg_op::min ? acc_kind::best_min : acc_kind::best_max, src_kind::candidate, c});
      b.out(out_desc{out_kind::best_row, s.output_type, a, -1, c});
      return true;
    }
    case agg_op::first:
      b.out(out_desc{out_kind::first_row, s.output_type, -1, -1, c});
      return true;
    case agg_op::last:
      b.out(out_desc{out_kind::last_row, s.output_type, b.add(acc_desc{acc_kind::max_u64, src_kind::row1}), -1, c});
      return true;
    case agg_op::any:
      b.out(out_desc{out_kind::any, s.output_type, b.add(acc_desc{acc_kind::or_u64, src_kind::is_true, c})});
      return true;
    case agg_op::all:
      b.out(out_desc{out_kind::all, s.output_type, b.add(acc_desc{acc_kind::or_u64, src_kind::is_false, c})});
      return true;
    default:
      return false;
  }
}

acc_kind sum_kind(const data_type& t) { return is_floating(t.id) ? acc_kind::add_f64 : acc_kind::add_u64; }

[[noreturn]] void not_planned(const agg_spec& s) {
  throw internal_error(std::string("CUDA hash aggregation: no program for ") + to_string(s.op));
}

/// How a fused term compares values of type `t`; false when it cannot.
bool comparison_of(const data_type& t, cmp_as* as) {
  if (t.id == type_id::uint64) *as = cmp_as::u64;
  else if (is_floating(t.id)) *as = cmp_as::f64;
  else if (is_integer(t.id) || t.id == type_id::boolean || is_temporal(t.id) || t.id == type_id::duration) *as = cmp_as::s64;
  else return false;
  return true;
}

bool constant(const expr& e) { return referenced_columns(e).empty() && !contains_agg(e) && !contains_window(e); }

/// Adds the terms of `e` (a conjunction of column-vs-constant comparisons) to `out`; false otherwise.
bool add_terms(const expr& e, const schema& in, std::vector<pred_term>& out) {
  const expr_node& n = e.node();
  if (n.kind != expr_kind::function) return false;
  if (n.func == fn::and_) return add_terms(n.args[0], in, out) && add_terms(n.args[1], in, out);
  if (n.func != fn::eq && n.func != fn::ne && n.func != fn::lt && n.func != fn::le && n.func != fn::gt &&
      n.func != fn::ge)
    return false;
  bool left = n.args[0]->kind == expr_kind::column && constant(n.args[1]);
  bool right = n.args[1]->kind == expr_kind::column && constant(n.args[0]);
  if ((!left && !right) || out.size() >= max_fused_terms) return false;
  const expr& c = left ? n.args[0] : n.args[1];
  const expr& k = left ? n.args[1] : n.args[0];
  pred_term t;
  t.col = in.index_of(c->name);
  const data_type& type = in[t.col].type;
  if (!(k->dtype == type) || !comparison_of(type, &t.as)) return false;  // resolved: both sides one type
  column lit = cpu::evaluate(k, table::empty_with_rows(1), in);
  if (!(lit.type() == type) || lit.size() != 1 || !lit.is_valid(0)) return false;
  scalar v = get_scalar(lit, 0);
  if (t.as == cmp_as::f64) {
    double d = v.as_double();
    std::memcpy(&t.literal, &d, sizeof d);
  } else if (t.as == cmp_as::u64) {
    t.literal = std::get<uint64_t>(v.value());
  } else {
    t.literal = static_cast<uint64_t>(v.as_int64());
  }
  t.op = left ? n.func : mirrored(n.func);
  out.push_back(t);
  return true;
}

}  // namespace

double hll_estimate(const uint32_t* registers) {
  constexpr double m = hll_registers;
  double sum = 0;
  int zeros = 0;
  for (int i = 0; i < hll_registers; ++i) {
    sum += std::ldexp(1.0, -static_cast<int>(registers[i]));
    zeros += registers[i] == 0;
  }
  double e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
  if (e <= 2.5 * m && zeros > 0) e = m * std::log(m / zeros);
  return e;
}

key_range range_of(const pred_term& t) {
  const uint64_t k = order_key(t.literal, t.as), top = ~0ULL;
  key_range r;
  switch (t.op) {
    case fn::eq:
    case fn::ne:
      r.lo = r.hi = k;
      r.outside = t.op == fn::ne;
      break;
    case fn::lt:  // nothing is below the smallest key
      if (k == 0) r.lo = 1, r.hi = 0;
      else r.hi = k - 1;
      break;
    case fn::le:
      r.hi = k;
      break;
    case fn::gt:
      if (k == top) r.lo = 1, r.hi = 0;
      else r.lo = k + 1;
      break;
    case fn::ge:
      r.lo = k;
      break;
    default:
      throw internal_error(std::string("fused predicate: unexpected comparison ") + to_string(t.op));
  }
  return r;
}

direct_range direct_range_of(uint64_t min_key, uint64_t max_key, cmp_as as, int64_t slots) {
  TUG_EXPECTS(as != cmp_as::f64, "direct group table: float keys have no range");
  direct_range r;
  // the keys' span plus the null key's slot: max - min + 2 <= slots (without overflowing)
  if (min_key > max_key || slots < 2 || max_key - min_key > static_cast<uint64_t>(slots - 2)) return r;
  r.lo = as == cmp_as::s64 ? min_key ^ 0x8000000000000000ULL : min_key;
  r.span = max_key - min_key + 1;
  return r;
}

std::vector<pred_term> fused_predicate(const expr& pred, const schema& in) {
  std::vector<pred_term> terms;
  if (!add_terms(pred, in, terms)) terms.clear();
  return terms;
}

std::string unfit(const schema& in, const std::vector<size_t>& keys, const std::vector<agg_spec>& aggs) {
  for (size_t k : keys)
    if (!fixed_width_key(in[k].type.id))
      return "key column " + in[k].name + " has type " + to_string(in[k].type) + " (hashing takes fixed-width keys)";
  for (auto& a : aggs) {
    if (!cpu::is_decomposable(a.op)) return std::string("aggregation ") + to_string(a.op) + " is not decomposable";
    if (a.input >= 0 && a.input_type.id == type_id::decimal128)
      return std::string("aggregation ") + to_string(a.op) + " of a decimal128 column";
  }
  return {};
}

program plan_partial(const std::vector<agg_spec>& aggs) {
  builder b;
  data_type i64(type_id::int64), f64(type_id::float64);
  for (auto& s : aggs) {
    int c = static_cast<int>(s.input);
    if (s.op == agg_op::len) {
      b.out(out_desc{out_kind::take, s.output_type, b.add(acc_desc{acc_kind::add_u64, src_kind::one})});
      continue;
    }
    TUG_EXPECTS(c >= 0, std::string("aggregation ") + to_string(s.op) + " needs an input column");
    if (add_selection(b, s, c)) continue;
    switch (s.op) {
      case agg_op::count:
        b.out(out_desc{out_kind::take, s.output_type, b.add(acc_desc{acc_kind::add_u64, src_kind::valid, c})});
        break;
      case agg_op::sum:
        b.out(out_desc{out_kind::take, s.output_type, b.add(acc_desc{sum_kind(s.input_type), src_kind::value, c})});
        break;
      case agg_op::mean:  // states: sum, count
        b.out(out_desc{out_kind::take, f64, b.add(acc_desc{acc_kind::add_f64, src_kind::value, c})});
        b.out(out_desc{out_kind::take, i64, b.add(acc_desc{acc_kind::add_u64, src_kind::valid, c})});
        break;
      case agg_op::var:
      case agg_op::std: {  // states: count, mean, M2
        moments m = add_moments(
            b, acc_desc{acc_kind::add_u64, src_kind::valid, c}, acc_desc{acc_kind::add_f64, src_kind::value, c},
            acc_desc{acc_kind::min_u64, src_kind::value_key, c}, acc_desc{acc_kind::add_f64, src_kind::dev, c},
            acc_desc{acc_kind::add_f64, src_kind::sq_dev, c});
        b.out(out_desc{out_kind::take, i64, m.n});
        out_desc mean{out_kind::moment_mean, f64, m.n, m.center};
        mean.acc3 = m.d1;
        b.out(mean);
        out_desc m2{out_kind::moment_m2, f64, m.n, m.d1};
        m2.acc3 = m.d2;
        b.out(m2);
        break;
      }
      default:
        not_planned(s);
    }
  }
  return b.finish();
}

program plan_final(const std::vector<agg_spec>& aggs, size_t num_keys) {
  builder b;
  int p = static_cast<int>(num_keys);  // the first state column of the current aggregation
  for (auto& s : aggs) {
    int width = static_cast<int>(cpu::state_types(s).size());
    if (!add_selection(b, s, p)) {
      switch (s.op) {
        case agg_op::len:
        case agg_op::count:
          b.out(out_desc{out_kind::take, s.output_type, b.add(acc_desc{acc_kind::add_u64, src_kind::value, p})});
          break;
        case agg_op::sum:
          b.out(out_desc{out_kind::take, s.output_type, b.add(acc_desc{sum_kind(s.output_type), src_kind::value, p})});
          break;
        case agg_op::mean:
          b.out(out_desc{out_kind::mean, s.output_type, b.add(acc_desc{acc_kind::add_f64, src_kind::value, p}),
                         b.add(acc_desc{acc_kind::add_u64, src_kind::value, p + 1})});
          break;
        case agg_op::var:
        case agg_op::std: {
          moments m = add_moments(b, acc_desc{acc_kind::add_u64, src_kind::value, p},
                                  acc_desc{acc_kind::add_f64, src_kind::weighted, p, p + 1},
                                  acc_desc{acc_kind::min_u64, src_kind::mean_key, p, p + 1},
                                  acc_desc{acc_kind::add_f64, src_kind::wdev, p, p + 1},
                                  acc_desc{acc_kind::add_f64, src_kind::chan, p, p + 1, p + 2});
          out_desc o = out_desc{s.op == agg_op::var ? out_kind::var : out_kind::std, s.output_type, m.n, m.d1};
          o.acc3 = m.d2;
          o.ddof = s.ddof;
          b.out(o);
          break;
        }
        default:
          not_planned(s);
      }
    }
    p += width;
  }
  return b.finish();
}

}  // namespace tug::cuda::hash
#endif
