// CPU expression evaluator: walks a resolved expression tree column-at-a-time and dispatches each
// node to its kernel family (kernels.hpp, functions.hpp).
#include "tug/exec/cpu/evaluate.hpp"

#include "functions.hpp"
#include "kernels.hpp"

namespace tug::cpu {

namespace {

using detail::operand;

bool is_temporal_or_duration(type_id id) { return is_temporal(id) || id == type_id::duration; }

struct evaluator {
  const table& t;
  const schema& input;
  memory_resource* mr;

  operand eval(const expr& e) {
    const expr_node& n = e.node();
    switch (n.kind) {
      case expr_kind::column: return {t[input.index_of(n.name)], false};
      case expr_kind::literal: return {n.value.to_column(1, mr), true};
      case expr_kind::alias: return eval(n.args[0]);
      case expr_kind::cast: {
        operand a = eval(n.args[0]);
        return {cast(a.col, n.dtype, n.flag, mr), a.scalar};
      }
      case expr_kind::when: return function_like(n, [&](std::vector<operand>& args, int64_t rows) {
        return detail::eval_when(n, args, rows, mr);
      });
      case expr_kind::function: return function_like(n, [&](std::vector<operand>& args, int64_t rows) {
        return function(n, args, rows);
      });
      case expr_kind::agg:
      case expr_kind::window:
        throw internal_error("cpu::evaluate reached an aggregation or window expression (the lowering must remove them): " +
                             to_string(e));
    }
    throw internal_error("cpu::evaluate: bad expression kind");
  }

  // Evaluates the arguments, runs `k` and marks the result scalar when every argument was.
  template <typename K>
  operand function_like(const expr_node& n, K&& k) {
    std::vector<operand> args;
    args.reserve(n.args.size());
    bool all_scalar = true;
    for (auto& a : n.args) {
      args.push_back(eval(a));
      all_scalar = all_scalar && args.back().scalar;
    }
    int64_t rows = all_scalar ? 1 : t.num_rows();
    return {k(args, rows), all_scalar};
  }

  std::vector<column> materialized(const std::vector<operand>& args, int64_t rows) {
    std::vector<column> cols;
    cols.reserve(args.size());
    for (auto& a : args) cols.push_back(detail::materialize(a, rows, mr));
    return cols;
  }

  column function(const expr_node& n, std::vector<operand>& args, int64_t rows) {
    switch (n.func) {
      case fn::add:
      case fn::sub:
        if (is_temporal_or_duration(args[0].col.type().id) || is_temporal_or_duration(args[1].col.type().id)) {
          auto cols = materialized(args, rows);
          return detail::eval_temporal_arith(n, cols[0], cols[1], mr);
        }
        return detail::eval_arith(n, args[0], args[1], rows, mr);
      case fn::mul: case fn::div: case fn::floor_div: case fn::mod: case fn::pow:
        return detail::eval_arith(n, args[0], args[1], rows, mr);
      case fn::eq: case fn::ne: case fn::lt: case fn::le: case fn::gt: case fn::ge:
        return detail::eval_compare(n.func, args[0], args[1], rows, mr);
      case fn::and_: case fn::or_: case fn::xor_: case fn::not_:
        return detail::eval_logic(n.func, args, rows, mr);
      case fn::is_null: case fn::is_not_null: case fn::fill_null: case fn::coalesce: case fn::is_nan:
        return detail::eval_nulls(n, args, rows, mr);
      case fn::is_in: case fn::is_between:
        return detail::eval_membership(n, args, rows, mr);
      case fn::neg: case fn::abs: case fn::round: case fn::floor: case fn::ceil: case fn::sqrt: case fn::log:
      case fn::exp:
        return detail::eval_math(n, args[0], rows, mr);
      case fn::str_len_chars: case fn::str_len_bytes: case fn::str_starts_with: case fn::str_ends_with:
      case fn::str_contains: case fn::str_slice: case fn::str_to_upper: case fn::str_to_lower: case fn::str_to_title:
      case fn::str_strip: case fn::str_concat:
        return detail::eval_string_function(n, materialized(args, rows), mr);
      case fn::dt_year: case fn::dt_month: case fn::dt_day: case fn::dt_hour: case fn::dt_minute: case fn::dt_second:
      case fn::dt_weekday: case fn::dt_truncate: case fn::dt_date: case fn::dt_total_days: case fn::dt_total_seconds:
      case fn::dt_total_milliseconds:
        return detail::eval_temporal_function(n, materialized(args, rows), mr);
    }
    throw internal_error(std::string("cpu::evaluate: unhandled function ") + to_string(n.func));
  }
};

}  // namespace

column evaluate(const expr& e, const table& t, const schema& input, memory_resource* mr) {
  evaluator ev{t, input, mr};
  operand r = ev.eval(e);
  return detail::materialize(r, t.num_rows(), mr);
}

namespace detail {

column materialize(const operand& o, int64_t rows, memory_resource* mr) {
  if (!o.scalar || rows == 1) return o.col;
  if (o.col.is_null(0)) return make_null_column(o.col.type(), rows, mr);
  return repeat_row(o.col, 0, rows, mr);
}

}  // namespace detail

}  // namespace tug::cpu
