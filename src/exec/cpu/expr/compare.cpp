// Comparison kernels (eq ne lt le gt ge on every type) and membership (is_in, is_between).
// Floats use Polars' total order: NaN equals NaN and is greater than every number.
#include <algorithm>
#include <cmath>

#include "../../short_string.hpp"
#include "kernels.hpp"
#include "tug/core/scalar.hpp"
#include "tug/exec/cpu/evaluate.hpp"

namespace tug::cpu::detail {

namespace {

// Bitwise rather than short-circuit operators: branch-free, so random data does not mispredict and
// the loops vectorize.
template <typename T>
bool total_eq(T x, T y) {
  if constexpr (is_float_v<T>) return (x == y) | ((x != x) & (y != y));
  else return x == y;
}
template <typename T>
bool total_lt(T x, T y) {
  if constexpr (is_float_v<T>) return (x < y) | ((x == x) & (y != y));
  else return x < y;
}

/// Strings equal (or not) to a constant of at most 7 bytes: one integer comparison a row. False when
/// the operands are not a column and such a constant.
bool short_string_equality(fn f, const operand& a, const operand& b, bool* out, int64_t rows) {
  if ((f != fn::eq && f != fn::ne) || a.scalar == b.scalar) return false;
  const operand& c = a.scalar ? b : a;
  std::string_view k = (a.scalar ? a : b).col.string(0);
  if (k.size() > short_string_max) return false;
  const uint64_t code = short_string_code(k);
  const column_view v = c.col.view();
  const bool want = f == fn::eq;
  for (int64_t i = 0; i < rows; ++i) out[i] = (short_string_code(v.string(i)) == code) == want;
  return true;
}

template <typename T>
void compare_loop(fn f, const operand& a, const operand& b, bool* out, int64_t rows) {
  if constexpr (std::is_same_v<T, std::string_view>)
    if (short_string_equality(f, a, b, out, rows)) return;
  with_readers<T>(a, b, [&](auto x, auto y) {
    switch (f) {
      case fn::eq: for (int64_t i = 0; i < rows; ++i) out[i] = total_eq<T>(x[i], y[i]); break;
      case fn::ne: for (int64_t i = 0; i < rows; ++i) out[i] = !total_eq<T>(x[i], y[i]); break;
      case fn::lt: for (int64_t i = 0; i < rows; ++i) out[i] = total_lt<T>(x[i], y[i]); break;
      case fn::le: for (int64_t i = 0; i < rows; ++i) out[i] = !total_lt<T>(y[i], x[i]); break;
      case fn::gt: for (int64_t i = 0; i < rows; ++i) out[i] = total_lt<T>(y[i], x[i]); break;
      case fn::ge: for (int64_t i = 0; i < rows; ++i) out[i] = !total_lt<T>(x[i], y[i]); break;
      default: throw internal_error(std::string("eval_compare: unexpected function ") + to_string(f));
    }
  });
}

column is_in(const expr_node& n, const operand& x, int64_t rows, memory_resource* mr) {
  if (x.null_scalar()) return make_null_column(type_id::boolean, rows, mr);
  const data_type& type = x.col.type();
  // The list as a column of x's type; values that do not convert (and nulls) cannot match.
  std::vector<column> parts;
  for (const scalar& v : n.list) {
    if (v.is_null()) continue;
    column c = cast(v.to_column(1), type, false, mr);
    if (c.is_null(0)) continue;
    // a lossy conversion (2.5 into an integer column) cannot match
    bool both_float = is_floating(type.id) && is_floating(v.type().id);
    if (!both_float && get_scalar(cast(c, v.type(), false, mr), 0) != v) continue;
    parts.push_back(c);
  }
  null_mask m(rows, mr);
  m.and_with(x);
  output<bool> out(rows, mr);
  type_dispatch(type.id, [&]<type_id Id>() {
    using T = storage_t<Id>;
    std::vector<T> set;
    for (auto& c : parts) set.push_back(c.value<T>(0));
    std::sort(set.begin(), set.end(), [](T p, T q) { return total_lt<T>(p, q); });
    reader<T, false> xs(x.col);
    const int64_t step = x.scalar ? 0 : 1;
    if constexpr (std::is_same_v<T, std::string_view>) {
      // a few strings of at most 7 bytes: one integer comparison per list entry
      bool short_set = set.size() <= 8;
      std::vector<uint64_t> codes;
      for (auto& s : set) {
        codes.push_back(short_string_code(s));
        short_set = short_set && s.size() <= short_string_max;
      }
      if (short_set) {
        for (int64_t i = 0; i < rows; ++i) {
          uint64_t c = short_string_code(xs[i * step]);
          bool hit = false;
          for (uint64_t s : codes) hit |= s == c;
          out.p[i] = hit;
        }
        return;
      }
    }
    auto contains = [&](T v) {
      auto it = std::lower_bound(set.begin(), set.end(), v, [](T p, T q) { return total_lt<T>(p, q); });
      return it != set.end() && total_eq<T>(*it, v);
    };
    if (set.size() <= 8) {
      for (int64_t i = 0; i < rows; ++i) {
        T v = xs[i * step];
        bool hit = false;
        for (const T& s : set) hit |= total_eq<T>(s, v);
        out.p[i] = hit;
      }
    } else {
      for (int64_t i = 0; i < rows; ++i) out.p[i] = m.is_valid(i) && contains(xs[i * step]);
    }
  });
  return out.finish(type_id::boolean, rows, m);
}

column is_between(const expr_node& n, const std::vector<operand>& args, int64_t rows, memory_resource* mr) {
  const std::string& closed = n.s0.empty() ? std::string("both") : n.s0;
  bool left = closed == "both" || closed == "left", right = closed == "both" || closed == "right";
  if (!left && !right && closed != "none")
    throw invalid_argument_error("is_between: closed must be both, left, right or none, got \"" + closed + "\"");
  column lo = eval_compare(left ? fn::ge : fn::gt, args[0], args[1], rows, mr);
  column hi = eval_compare(right ? fn::le : fn::lt, args[0], args[2], rows, mr);
  return kleene(fn::and_, lo, hi, mr);
}

}  // namespace

column eval_compare(fn f, const operand& a, const operand& b, int64_t rows, memory_resource* mr) {
  if (a.null_scalar() || b.null_scalar()) return make_null_column(type_id::boolean, rows, mr);
  TUG_EXPECTS(a.col.type().id == b.col.type().id, "comparison of different types reached the evaluator");
  null_mask m(rows, mr);
  m.and_with(a);
  m.and_with(b);
  output<bool> out(rows, mr);
  type_dispatch(a.col.type().id, [&]<type_id Id>() { compare_loop<storage_t<Id>>(f, a, b, out.p, rows); });
  return out.finish(type_id::boolean, rows, m);
}

column eval_membership(const expr_node& n, const std::vector<operand>& args, int64_t rows, memory_resource* mr) {
  if (n.func == fn::is_in) return is_in(n, args[0], rows, mr);
  if (n.func == fn::is_between) return is_between(n, args, rows, mr);
  throw internal_error(std::string("eval_membership: unexpected function ") + to_string(n.func));
}

}  // namespace tug::cpu::detail
