// Host side of the CUDA expression evaluator: checks what it can run (expr_unsupported) and compiles
// a resolved expression tree into a register program (expr_program.hpp). The semantics mirror the CPU
// evaluator (src/exec/cpu/expr); constant subtrees are folded with the CPU evaluator itself.
#ifdef TUG_WITH_CUDA
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "exec/cpu/expr/truncate.hpp"
#include "exec/case_mapping.hpp"
#include "exec/cpu/expr/unicode.hpp"
#include "exec/cuda/expr_program.hpp"
#include "exec/cuda/ops.hpp"
#include "exec/cuda/regex.hpp"
#include "tug/core/scalar.hpp"
#include "tug/core/table.hpp"
#include "tug/exec/cpu/evaluate.hpp"

namespace tug::cuda {

namespace prog {

bool kind_of(const data_type& t, nk& out) {
  switch (t.id) {
    case type_id::boolean:
      out = nk::b;
      return true;
    case type_id::int8:
      out = nk::i8;
      return true;
    case type_id::int16:
      out = nk::i16;
      return true;
    case type_id::int32:
    case type_id::date32:
      out = nk::i32;
      return true;
    case type_id::int64:
    case type_id::timestamp:
    case type_id::duration:
      out = nk::i64;
      return true;
    case type_id::uint8:
      out = nk::u8;
      return true;
    case type_id::uint16:
      out = nk::u16;
      return true;
    case type_id::uint32:
      out = nk::u32;
      return true;
    case type_id::uint64:
      out = nk::u64;
      return true;
    case type_id::float32:
      out = nk::f32;
      return true;
    case type_id::float64:
      out = nk::f64;
      return true;
    case type_id::string:
      out = nk::str;
      return true;
    case type_id::decimal128:
      out = nk::d128;
      return true;
  }
  return false;
}

namespace {

bool is_float_kind(nk k) { return k == nk::f32 || k == nk::f64; }
bool is_int_kind(nk k) { return k != nk::b && k != nk::str && k != nk::d128 && !is_float_kind(k); }
bool is_time_like(type_id id) { return is_temporal(id) || id == type_id::duration; }
int64_t ticks_per_day(const data_type& t) { return 86400 * ticks_per_second(t.unit); }

/// Why a node cannot run on the GPU; caught by check().
struct unsupported_error {
  std::string why;
};

[[noreturn]] void refuse(std::string why) { throw unsupported_error{std::move(why)}; }

/// The 64-bit pattern of row `i` of a host column of kind `k` (fixed width).
int64_t bits_of(const column& c, int64_t i, nk k) {
  switch (k) {
    case nk::b:
      return c.value<bool>(i) ? 1 : 0;
    case nk::i8:
      return c.value<int8_t>(i);
    case nk::i16:
      return c.value<int16_t>(i);
    case nk::i32:
      return c.value<int32_t>(i);
    case nk::i64:
      return c.value<int64_t>(i);
    case nk::u8:
      return c.value<uint8_t>(i);
    case nk::u16:
      return c.value<uint16_t>(i);
    case nk::u32:
      return c.value<uint32_t>(i);
    case nk::u64:
      return static_cast<int64_t>(c.value<uint64_t>(i));
    case nk::f32: {
      double d = c.value<float>(i);
      int64_t r;
      std::memcpy(&r, &d, sizeof r);
      return r;
    }
    case nk::f64: {
      double d = c.value<double>(i);
      int64_t r;
      std::memcpy(&r, &d, sizeof r);
      return r;
    }
    case nk::d128:
      return static_cast<int64_t>(static_cast<uint64_t>(c.value<__int128>(i)));
    case nk::str:
      break;
  }
  throw internal_error("bits_of: a string value");
}
/// The high word of row `i` of a host decimal128 column.
int64_t high_bits_of(const column& c, int64_t i) {
  return static_cast<int64_t>(static_cast<uint64_t>(static_cast<unsigned __int128>(c.value<__int128>(i)) >> 64));
}

class compiler {
 public:
  compiler(const schema& input, bool dry) : _input(input), _dry(dry) {}

  program run(const expr& e) {
    nk out = kind(e);
    if (out == nk::str)
      string_result(e);
    else
      go(e, 0);
    if (_p.code.size() > max_code) refuse("expression too long for the CUDA expression evaluator");
    _p.out = out;
    _p.out_type = e->dtype;
    return std::move(_p);
  }

 private:
  const schema& _input;
  bool _dry;
  program _p;

  static std::string type_reason(const expr& e, const data_type& t) {
    return "the CUDA expression evaluator does not handle type " + to_string(t) + " (in " + to_string(e) + ")";
  }

  nk kind(const expr& e) {
    nk k;
    if (!kind_of(e->dtype, k)) refuse(type_reason(e, e->dtype));
    return k;
  }

  /// Folded on the host (with the CPU evaluator) into a literal.
  static bool is_constant(const expr& e) {
    return e->kind != expr_kind::alias && referenced_columns(e).empty() && !contains_agg(e) && !contains_window(e);
  }

  /// Makes new bytes (not a view of its operand's): a string column made by a sub-program.
  static bool makes_bytes(const expr& e) {
    if (is_constant(e)) return false;
    if (e->kind == expr_kind::cast) return e->dtype.id == type_id::string && e->args[0]->dtype.id != type_id::string;
    return e->kind == expr_kind::function &&
           (e->func == fn::str_to_upper || e->func == fn::str_to_lower || e->func == fn::str_to_title ||
            e->func == fn::str_concat);
  }

  /// Appends bytes to the literal pool; returns their offset.
  int64_t add_chars(std::string_view s) {
    const auto at = static_cast<int64_t>(_p.chars.size());
    _p.chars.append(s);
    return at;
  }

  uint8_t reg(int r) {
    if (r >= max_regs) refuse("expression too deep for the CUDA expression evaluator");
    return static_cast<uint8_t>(r);
  }

  instr& emit(op code, nk t, int dst, int a = 0, int b = 0, int c = 0) {
    instr in;
    in.code = code;
    in.t = t;
    in.dst = reg(dst);
    in.a = reg(a);
    in.b = reg(b);
    in.c = reg(c);
    _p.code.push_back(in);
    return _p.code.back();
  }

  // ---- leaves -------------------------------------------------------------------------------------

  void literal(const expr& e, int r) {
    nk k = kind(e);
    if (_dry) {
      reg(r);
      return;
    }
    column c = cpu::evaluate(e, table::empty_with_rows(1), _input);
    if (!kind_of(c.type(), k)) refuse(type_reason(e, c.type()));
    instr& in = emit(op::load_lit, k, r);
    in.flag = c.is_valid(0);
    if (!in.flag) return;
    if (k == nk::str) {
      std::string_view s = c.view().string(0);
      in.i0 = add_chars(s);
      in.i1 = static_cast<int64_t>(s.size());
    } else {
      in.i0 = bits_of(c, 0, k);
      if (k == nk::d128) in.i1 = high_bits_of(c, 0);
    }
  }

  void column_ref(const expr& e, int r) {
    size_t idx = _input.index_of(e->name);
    nk k = kind(e);
    size_t slot = 0;
    while (slot < _p.columns.size() && _p.columns[slot] != idx)
      ++slot;
    if (slot == _p.columns.size()) _p.columns.push_back(idx);
    emit(op::load_col, k, r).i0 = static_cast<int64_t>(slot);
  }

  // ---- tree walk ----------------------------------------------------------------------------------

  void go(const expr& e, int r) {
    const expr_node& n = e.node();
    if (n.kind == expr_kind::agg || n.kind == expr_kind::window)
      refuse("the CUDA expression evaluator does not run aggregations or windows: " + to_string(e));
    if (is_constant(e)) return literal(e, r);
    if (makes_bytes(e)) return sub_column(e, r);
    switch (n.kind) {
      case expr_kind::column:
        return column_ref(e, r);
      case expr_kind::literal:
        return literal(e, r);
      case expr_kind::alias:
        return go(n.args[0], r);
      case expr_kind::cast:
        return cast(e, r);
      case expr_kind::when: {
        nk k = kind(e);
        go(n.args[0], r);
        go(n.args[1], r + 1);
        go(n.args[2], r + 2);
        emit(op::select, k, r, r, r + 1, r + 2);
        return;
      }
      case expr_kind::function:
        return function(e, r);
      default:
        break;
    }
    refuse("unexpected expression " + to_string(e));
  }

  // ---- strings made before the program: sub-programs whose result is a string -------------------

  /// Register r = the column a sub-program makes of `e` (a string expression that makes bytes).
  void sub_column(const expr& e, int r) {
    program sub = compiler(_input, _dry).run(e);
    _p.subs.push_back(std::move(sub));
    instr& in = emit(op::load_col, nk::str, r);
    in.flag = true;
    in.i0 = static_cast<int64_t>(_p.subs.size() - 1);
  }

  /// A string result: its operands into registers 0.. and the stage that writes its bytes.
  void string_result(const expr& e) {
    const expr* x = &e;
    while ((*x)->kind == expr_kind::alias)
      x = &(*x)->args[0];
    const expr_node& n = x->node();
    string_stage& st = _p.stage;
    if (!makes_bytes(*x)) {
      st.kind = emit::copy;
      return go(*x, 0);
    }
    if (n.kind == expr_kind::cast) return format(*x);
    if (n.func == fn::str_concat) {
      st.kind = emit::concat;
      st.args = static_cast<int>(n.args.size());
      for (size_t k = 0; k < n.args.size(); ++k) {
        if (kind(n.args[k]) != nk::str) refuse("concat_str of a non-string operand: " + to_string(*x));
        go(n.args[k], static_cast<int>(k));
      }
      st.text_len = static_cast<int64_t>(n.s0.size());
      st.text = add_chars(n.s0);
      return;
    }
    // str_to_upper / str_to_lower / str_to_title: the case tables as one blob of 32-bit words, 4-byte aligned
    st.kind = emit::change_case;
    go(n.args[0], 0);
    if (_dry) return;
    const unicode::case_kind kind = n.func == fn::str_to_upper   ? unicode::case_kind::upper
                                    : n.func == fn::str_to_lower ? unicode::case_kind::lower
                                                                 : unicode::case_kind::title;
    const std::vector<uint32_t> blob = unicode::case_table_blob(kind);
    _p.chars.resize((_p.chars.size() + 3) & ~size_t{3});
    st.text = add_chars(std::string_view(reinterpret_cast<const char*>(blob.data()), blob.size() * sizeof(uint32_t)));
  }

  /// A cast to a string at the root: register 0 formatted as cpu::cast does.
  void format(const expr& e) {
    const data_type& from = e->args[0]->dtype;
    string_stage& st = _p.stage;
    st.kind = emit::format;
    st.from = from.id;
    st.from_kind = kind(e->args[0]);
    _p.float_text = _p.float_text || is_float_kind(st.from_kind);
    if (from.id == type_id::timestamp) st.ticks = ticks_per_second(from.unit);
    if (from.id == type_id::decimal128) st.scale = from.scale;
    if (from.id == type_id::duration) {
      const std::string unit = to_string(from.unit);
      st.text_len = static_cast<int64_t>(unit.size());
      st.text = add_chars(unit);
    }
    go(e->args[0], 0);
  }

  /// A cast from a string: parsed as cpu::cast's parse_column.
  void parse(const expr& e, int r) {
    const data_type& to = e->dtype;
    nk kt = kind(e);
    parse_as how;
    if (kt == nk::b || (is_int_kind(kt) && !is_time_like(to.id)))
      how = parse_as::number;
    else if (to.id == type_id::date32)
      how = parse_as::date;
    else if (to.id == type_id::timestamp)
      how = parse_as::timestamp;
    else if (to.id == type_id::duration)
      how = parse_as::duration;
    else if (to.id == type_id::decimal128)
      how = parse_as::decimal;
    else if (is_float_kind(kt)) {
      how = parse_as::floating;
      _p.float_text = true;
    } else
      refuse("the CUDA expression evaluator does not parse " + to_string(to) +
             " from strings: " + to_string(e));
    go(e->args[0], r);
    instr& in = emit(op::cast, kt, r, r);
    in.t2 = nk::str;
    in.flag = e->flag;
    _p.can_fail = _p.can_fail || e->flag;
    in.i0 = static_cast<int64_t>(how);
    if (how == parse_as::decimal) {
      in.i1 = to.scale;
      in.i2 = to.precision;
    } else if (how == parse_as::timestamp) {
      in.i1 = ticks_per_second(to.unit);
    } else if (how == parse_as::duration) {
      const std::string unit = to_string(to.unit);
      in.i2 = static_cast<int64_t>(unit.size());
      in.i1 = add_chars(unit);
    }
  }

  void cast(const expr& e, int r) {
    const data_type& from = e->args[0]->dtype;
    const data_type& to = e->dtype;
    if (from == to) return go(e->args[0], r);
    if (from.id == type_id::string) return parse(e, r);
    if (to.id == type_id::string)  // go() and string_result() take casts to strings elsewhere
      throw internal_error("cuda::prog: a cast to a string outside a string result: " + to_string(e));
    nk kt = kind(e), kf = kind(e->args[0]);
    go(e->args[0], r);
    const bool strict = e->flag;
    auto checked = [&](op code) -> instr& {
      instr& in = emit(code, kt, r, r);
      in.flag = strict;
      in.t2 = kf;
      _p.can_fail = _p.can_fail || strict;
      return in;
    };
    if (is_time_like(from.id) && is_time_like(to.id)) {
      if (from.id == type_id::date32 && to.id == type_id::timestamp) {
        checked(op::date_to_ts).i0 = ticks_per_day(to);
      } else if (from.id == type_id::timestamp && to.id == type_id::date32) {
        checked(op::ts_to_date).i0 = ticks_per_day(from);
      } else if (from.id == to.id && from.unit != to.unit) {
        instr& in = checked(op::change_unit);
        in.i0 = ticks_per_second(from.unit);
        in.i1 = ticks_per_second(to.unit);
        in.flag2 = from.id == type_id::timestamp;
      } else if (from.id != to.id) {
        refuse("the CUDA expression evaluator does not cast " + to_string(from) + " to " + to_string(to));
      }
      return;  // same unit: only the time zone label changes
    }
    instr& in = checked(op::cast);
    if (kf == nk::d128 || kt == nk::d128) {
      // as cpu::cast: float -> decimal scales by the target's power of ten as the host's double
      if ((kf != nk::d128 && kf != nk::b && !is_int_kind(kf) && !is_float_kind(kf)) ||
          (kt != nk::d128 && kt != nk::b && !is_int_kind(kt) && !is_float_kind(kt)) || is_time_like(from.id) ||
          is_time_like(to.id))
        refuse("the CUDA expression evaluator does not cast " + to_string(from) + " to " + to_string(to));
      in.i0 = kf == nk::d128 ? from.scale : 0;
      in.i1 = kt == nk::d128 ? to.scale : 0;
      in.i2 = kt == nk::d128 ? to.precision : 0;
      in.d0 = std::pow(10.0, static_cast<double>(to.scale));
    }
  }

  void binary(const expr& e, int r, op code, nk t) {
    go(e->args[0], r);
    go(e->args[1], r + 1);
    emit(code, t, r, r, r + 1);
  }

  void temporal_arith(const expr& e, int r) {
    const data_type &a = e->args[0]->dtype, &b = e->args[1]->dtype;
    const bool sub = e->func == fn::sub;
    const int64_t sign = sub ? -1 : 1;
    if (sub && a.id == type_id::date32 && b.id == type_id::date32) return binary(e, r, op::date_diff, nk::i64);
    if (sub && a.id == type_id::timestamp && b.id == type_id::timestamp) return binary(e, r, op::sub, nk::i64);
    if (a.id == type_id::date32 && b.id == type_id::duration) {
      binary(e, r, op::date_add_dur, nk::i32);
      _p.code.back().i0 = ticks_per_day(b);
      _p.code.back().i1 = sign;
      return;
    }
    if (a.id == type_id::timestamp && b.id == type_id::duration) {
      const int64_t ta = ticks_per_second(a.unit), tb = ticks_per_second(b.unit);
      binary(e, r, op::ts_add_dur, nk::i64);
      instr& in = _p.code.back();
      if (tb > ta) {
        in.i2 = tb / ta;
        in.i1 = sign;
      } else {
        in.i1 = sign * (ta / tb);
      }
      return;
    }
    if (a.id == type_id::duration && b.id == type_id::duration && a.unit == b.unit)
      return binary(e, r, sub ? op::sub : op::add, nk::i64);
    refuse(std::string("the CUDA expression evaluator does not apply ") + to_string(e->func) + " to " + to_string(a) +
           " and " + to_string(b));
  }

  void is_in(const expr& e, int r) {
    const data_type& type = e->args[0]->dtype;
    nk k = kind(e->args[0]);
    go(e->args[0], r);
    instr& in = emit(op::is_in, k, r, r);
    in.i0 = static_cast<int64_t>(_p.pool.size());
    if (_dry) return;
    // as the CPU: the list as values of x's type; values that do not convert exactly cannot match
    int64_t count = 0;
    for (const scalar& v : e->list) {
      if (v.is_null()) continue;
      column c = cpu::cast(v.to_column(1), type, false);
      if (c.is_null(0)) continue;
      bool both_float = is_floating(type.id) && is_floating(v.type().id);
      if (!both_float && get_scalar(cpu::cast(c, v.type(), false), 0) != v) continue;
      if (k == nk::str) {
        std::string_view s = c.view().string(0);
        _p.pool.push_back(add_chars(s));
        _p.pool.push_back(static_cast<int64_t>(s.size()));
      } else {
        _p.pool.push_back(bits_of(c, 0, k));
        if (k == nk::d128) _p.pool.push_back(high_bits_of(c, 0));
      }
      ++count;
    }
    _p.code.back().i1 = count;
  }

  void is_between(const expr& e, int r) {
    const std::string closed = e->s0.empty() ? std::string("both") : e->s0;
    bool left = closed == "both" || closed == "left", right = closed == "both" || closed == "right";
    if (!left && !right && closed != "none") refuse("is_between with closed=\"" + closed + "\"");
    nk k = kind(e->args[0]);
    go(e->args[0], r);
    go(e->args[1], r + 1);
    go(e->args[2], r + 2);
    emit(left ? op::ge : op::gt, k, r + 1, r, r + 1);
    emit(right ? op::le : op::lt, k, r + 2, r, r + 2);
    emit(op::and_, nk::b, r, r + 1, r + 2);
  }

  void unary(const expr& e, int r, op code, nk t) {
    go(e->args[0], r);
    emit(code, t, r, r);
  }

  static bool has_regex_meta(std::string_view s) {
    return s.find_first_of("\\^$.|?*+()[]{}") != std::string_view::npos;
  }

  /// str.contains with a regular expression: a constant pattern compiled to an automaton (regex.hpp).
  void regex_contains(const expr& e, int r) {
    const expr& p = e->args[1];
    if (p->kind != expr_kind::literal)
      refuse("the CUDA expression evaluator runs regular expressions with a constant pattern only: " + to_string(e));
    regex::automaton a = regex::compile(p->value.as_string());
    if (!a.why.empty())
      refuse("the CUDA expression evaluator does not run this regular expression (" + a.why + "): " + to_string(e));
    go(e->args[0], r);
    emit(op::str_regex, nk::b, r, r).i0 = static_cast<int64_t>(_p.pool.size());
    if (!_dry) _p.pool.insert(_p.pool.end(), a.table.begin(), a.table.end());
  }

  void function(const expr& e, int r) {
    const expr_node& n = e.node();
    const char* name = to_string(n.func);
    nk k = kind(e);
    auto arg_kind = [&](size_t i) { return kind(n.args[i]); };
    auto need = [&](bool ok) {
      if (!ok) refuse(std::string("the CUDA expression evaluator does not run ") + name + " here: " + to_string(e));
    };
    switch (n.func) {
      case fn::add:
      case fn::sub:
        if (is_time_like(n.args[0]->dtype.id) || is_time_like(n.args[1]->dtype.id)) return temporal_arith(e, r);
        need(is_int_kind(k) || is_float_kind(k) || k == nk::d128);
        _p.can_fail = _p.can_fail || k == nk::d128;  // decimal overflow raises
        binary(e, r, n.func == fn::add ? op::add : op::sub, k);
        if (k == nk::d128) _p.code.back().i2 = e->dtype.precision;
        return;
      case fn::mul:
        need(is_int_kind(k) || is_float_kind(k) || k == nk::d128);
        binary(e, r, op::mul, k);
        if (k == nk::d128) {
          need(arg_kind(0) == nk::d128 && arg_kind(1) == nk::d128);
          _p.can_fail = true;
          _p.code.back().i0 = n.args[0]->dtype.scale + n.args[1]->dtype.scale - e->dtype.scale;
          _p.code.back().i2 = e->dtype.precision;
        }
        return;
      case fn::div:
        need(is_float_kind(k));
        return binary(e, r, op::div, k);
      case fn::floor_div:
      case fn::mod:
        need(is_int_kind(k) || is_float_kind(k));
        return binary(e, r, n.func == fn::mod ? op::mod : op::floor_div, k);
      case fn::pow:
        need(k == nk::i64 || is_float_kind(k));
        return binary(e, r, op::pow, k);
      case fn::eq:
        return binary(e, r, op::eq, arg_kind(0));
      case fn::ne:
        return binary(e, r, op::ne, arg_kind(0));
      case fn::lt:
        return binary(e, r, op::lt, arg_kind(0));
      case fn::le:
        return binary(e, r, op::le, arg_kind(0));
      case fn::gt:
        return binary(e, r, op::gt, arg_kind(0));
      case fn::ge:
        return binary(e, r, op::ge, arg_kind(0));
      case fn::and_:
        return binary(e, r, op::and_, nk::b);
      case fn::or_:
        return binary(e, r, op::or_, nk::b);
      case fn::xor_:
        return binary(e, r, op::xor_, nk::b);
      case fn::not_:
        return unary(e, r, op::not_, nk::b);
      case fn::is_null:
        kind(n.args[0]);
        return unary(e, r, op::is_null, nk::b);
      case fn::is_not_null:
        kind(n.args[0]);
        return unary(e, r, op::is_not_null, nk::b);
      case fn::is_nan:
        need(is_float_kind(arg_kind(0)));
        return unary(e, r, op::is_nan, arg_kind(0));
      case fn::fill_null:
      case fn::coalesce:
        go(n.args[0], r);
        for (size_t i = 1; i < n.args.size(); ++i) {
          go(n.args[i], r + 1);
          emit(op::coalesce, k, r, r, r + 1);
        }
        return;
      case fn::is_in:
        return is_in(e, r);
      case fn::is_between:
        return is_between(e, r);
      case fn::neg:
      case fn::abs:
        need(is_int_kind(k) || is_float_kind(k) || k == nk::d128);
        return unary(e, r, n.func == fn::neg ? op::neg : op::abs, k);
      case fn::round:
      case fn::floor:
      case fn::ceil: {
        need(is_int_kind(k) || is_float_kind(k) || k == nk::d128);
        if (is_int_kind(k)) return go(n.args[0], r);  // integers are unchanged
        const op code = n.func == fn::round ? op::round : n.func == fn::floor ? op::floor : op::ceil;
        if (k == nk::d128) {  // as the CPU: to a multiple of 10^(scale - kept digits)
          const int64_t keep = n.func == fn::round ? std::max<int64_t>(n.i0, 0) : 0, scale = e->dtype.scale;
          if (keep >= scale) return go(n.args[0], r);
          unary(e, r, code, k);
          _p.code.back().i1 = scale - keep;
          _p.code.back().i2 = e->dtype.precision;  // a result past it raises, as on the CPU
          _p.can_fail = true;
          return;
        }
        unary(e, r, code, k);
        _p.code.back().i0 = n.i0;
        _p.code.back().d0 = std::pow(10.0, static_cast<double>(n.i0));
        return;
      }
      case fn::sqrt:
        need(is_float_kind(k));
        return unary(e, r, op::sqrt, k);
      case fn::exp:
        need(is_float_kind(k));
        return unary(e, r, op::exp, k);
      case fn::log:
        need(is_float_kind(k));
        unary(e, r, op::log, k);
        _p.code.back().d0 = n.d0 == 0 ? 0.0 : std::log(n.d0);
        return;
      case fn::str_len_bytes:
      case fn::str_len_chars:
        need(arg_kind(0) == nk::str);
        return unary(e, r, n.func == fn::str_len_bytes ? op::str_len_bytes : op::str_len_chars, nk::i64);
      case fn::str_starts_with:
      case fn::str_ends_with:
        need(arg_kind(0) == nk::str && arg_kind(1) == nk::str);
        return binary(e, r, n.func == fn::str_starts_with ? op::str_starts_with : op::str_ends_with, nk::b);
      case fn::str_contains: {
        need(arg_kind(0) == nk::str && arg_kind(1) == nk::str);
        const expr& p = n.args[1];
        if (!n.flag &&
            !(p->kind == expr_kind::literal && (p->value.is_null() || !has_regex_meta(p->value.as_string()))))
          return regex_contains(e, r);
        return binary(e, r, op::str_contains, nk::b);
      }
      case fn::str_slice:
        need(arg_kind(0) == nk::str);
        unary(e, r, op::str_slice, nk::str);
        _p.code.back().i0 = n.i0;
        _p.code.back().i1 = n.i1;
        return;
      case fn::str_strip: {
        need(arg_kind(0) == nk::str);
        const std::string_view set = n.s0.empty() ? cpu::detail::unicode_white_space : std::string_view(n.s0);
        unary(e, r, op::str_strip, nk::str);
        _p.code.back().i1 = static_cast<int64_t>(set.size());
        _p.code.back().i0 = add_chars(set);
        return;
      }
      case fn::dt_year:
      case fn::dt_month:
      case fn::dt_day:
      case fn::dt_weekday:
      case fn::dt_date: {
        const data_type& t = n.args[0]->dtype;
        need(t.id == type_id::date32 || t.id == type_id::timestamp);
        if (n.func == fn::dt_date && t.id == type_id::date32) return go(n.args[0], r);
        unary(e, r, op::civil, nk::i32);
        _p.code.back().i0 = t.id == type_id::date32 ? 0 : ticks_per_day(t);
        _p.code.back().i1 = n.func == fn::dt_year      ? 0
                            : n.func == fn::dt_month   ? 1
                            : n.func == fn::dt_day     ? 2
                            : n.func == fn::dt_weekday ? 3
                                                       : 4;
        return;
      }
      case fn::dt_truncate: {
        const data_type& t = n.args[0]->dtype;
        need(t.id == type_id::date32 || t.id == type_id::timestamp);
        const bool date = t.id == type_id::date32;
        // a malformed interval raises when the program is compiled to run, as the CPU's evaluation
        // does (not while the plan is checked: explain() works on both engines)
        cpu::detail::truncate_rule rule;
        if (!_dry) rule = cpu::detail::truncate_rule_of(n.s0, date ? 1 : ticks_per_second(t.unit));
        unary(e, r, op::dt_truncate, k);
        instr& in = _p.code.back();
        in.i0 = static_cast<int64_t>(_p.pool.size());
        in.flag2 = date;
        if (!_dry)
          _p.pool.insert(_p.pool.end(), {rule.kind, rule.every, rule.origin, rule.per_day, rule.ns_per_tick});
        return;
      }
      case fn::dt_hour:
      case fn::dt_minute:
      case fn::dt_second: {
        const data_type& t = n.args[0]->dtype;
        need(t.id == type_id::timestamp);
        const int64_t tps = ticks_per_second(t.unit);
        unary(e, r, op::time_of_day, nk::i32);
        instr& in = _p.code.back();
        in.i0 = ticks_per_day(t);
        in.i1 = tps * (n.func == fn::dt_hour ? 3600 : n.func == fn::dt_minute ? 60 : 1);
        in.i2 = n.func == fn::dt_hour ? 24 : 60;
        return;
      }
      case fn::dt_total_days:
      case fn::dt_total_seconds:
      case fn::dt_total_milliseconds: {
        const data_type& t = n.args[0]->dtype;
        need(t.id == type_id::duration);
        const int64_t tps = ticks_per_second(t.unit);
        if (n.func == fn::dt_total_milliseconds && tps < 1000) {
          unary(e, r, op::mul_wrap, nk::i64);
          _p.code.back().i0 = 1000 / tps;
          return;
        }
        unary(e, r, op::div_trunc, nk::i64);
        _p.code.back().i0 = n.func == fn::dt_total_days      ? 86400 * tps
                            : n.func == fn::dt_total_seconds ? tps
                                                             : tps / 1000;
        return;
      }
      default:
        break;
    }
    refuse(std::string("the CUDA expression evaluator does not implement ") + name);
  }
};

}  // namespace

std::string check(const expr& e, const schema& input) {
  try {
    compiler(input, true).run(e);
  } catch (const unsupported_error& u) {
    return u.why;
  }
  return {};
}

program compile(const expr& e, const schema& input) {
  try {
    return compiler(input, false).run(e);
  } catch (const unsupported_error& u) {
    throw internal_error("cuda::evaluate reached an expression it cannot run: " + u.why);
  }
}

}  // namespace prog

std::string expr_unsupported(const expr& e, const schema& input) {
  const expr* x = &e;
  while ((*x)->kind == expr_kind::alias)
    x = &(*x)->args[0];
  if ((*x)->kind == expr_kind::column) {  // passed through unchanged
    return {};
  }
  return prog::check(e, input);
}

}  // namespace tug::cuda
#endif
