// Boolean logic with Kleene three-valued semantics (false & null = false, true | null = true), not,
// xor, and when/then/otherwise.
#include "kernels.hpp"

namespace tug::cpu::detail {

column kleene(fn f, const column& a, const column& b, memory_resource* mr) {
  const int64_t rows = a.size();
  const bool* x = a.values<bool>();
  const bool* y = b.values<bool>();
  output<bool> out(rows, mr);
  null_mask m(rows, mr);
  const bool is_and = f == fn::and_;
  if (!a.has_nulls() && !b.has_nulls()) {
    if (is_and) for (int64_t i = 0; i < rows; ++i) out.p[i] = x[i] & y[i];
    else for (int64_t i = 0; i < rows; ++i) out.p[i] = x[i] | y[i];
    return out.finish(type_id::boolean, rows, m);
  }
  auto va = a.view(), vb = b.view();
  for (int64_t i = 0; i < rows; ++i) {
    bool pa = va.is_valid(i), pb = vb.is_valid(i);
    // a valid operand that decides the result on its own: false for and, true for or
    bool da = pa && (x[i] != is_and), db = pb && (y[i] != is_and);
    if (da || db) out.p[i] = !is_and;
    else if (pa && pb) out.p[i] = is_and;  // both valid and neither decides: and of trues / or of falses
    else {
      out.p[i] = false;
      m.clear(i);
    }
  }
  return out.finish(type_id::boolean, rows, m);
}

column eval_logic(fn f, const std::vector<operand>& args, int64_t rows, memory_resource* mr) {
  if (f == fn::not_) {
    if (args[0].null_scalar()) return make_null_column(type_id::boolean, rows, mr);
    const column& c = args[0].col;
    const bool* x = c.values<bool>();
    null_mask m(rows, mr);
    m.and_with(args[0]);
    output<bool> out(rows, mr);
    for (int64_t i = 0; i < rows; ++i) out.p[i] = !x[args[0].scalar ? 0 : i];
    return out.finish(type_id::boolean, rows, m);
  }
  if (f == fn::xor_) {
    if (args[0].null_scalar() || args[1].null_scalar()) return make_null_column(type_id::boolean, rows, mr);
    null_mask m(rows, mr);
    m.and_with(args[0]);
    m.and_with(args[1]);
    output<bool> out(rows, mr);
    with_readers<bool>(args[0], args[1], [&](auto x, auto y) {
      for (int64_t i = 0; i < rows; ++i) out.p[i] = x[i] != y[i];
    });
    return out.finish(type_id::boolean, rows, m);
  }
  if (f == fn::and_ || f == fn::or_)
    return kleene(f, materialize(args[0], rows, mr), materialize(args[1], rows, mr), mr);
  throw internal_error(std::string("eval_logic: unexpected function ") + to_string(f));
}

column eval_when(const expr_node& n, const std::vector<operand>& args, int64_t rows, memory_resource* mr) {
  const operand& cond = args[0];
  if (cond.scalar) {
    bool take = cond.col.is_valid(0) && cond.col.value<bool>(0);
    return materialize(args[take ? 1 : 2], rows, mr);
  }
  std::vector<uint8_t> pick(static_cast<size_t>(rows));
  auto cv = cond.col.view();
  const bool* c = cond.col.values<bool>();
  for (int64_t i = 0; i < rows; ++i) pick[static_cast<size_t>(i)] = c[i] && cv.is_valid(i);
  return blend(pick, materialize(args[1], rows, mr), materialize(args[2], rows, mr), rows, mr);
}

}  // namespace tug::cpu::detail
