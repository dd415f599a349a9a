#pragma once
// Internal interface of the CPU expression kernels (arithmetic.cpp, compare.cpp, logic.cpp,
// nulls.cpp, math.cpp, cast.cpp) and the helpers they share. The dispatcher (evaluate.cpp) evaluates
// arguments into `operand`s: a literal stays a one-row scalar, so binary kernels can loop over one
// column against a constant without broadcasting it.
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tug/core/table.hpp"
#include "tug/expr/expr.hpp"

namespace tug::cpu::detail {

/// An evaluated argument: `rows` values, or one value broadcast to every row when `scalar`.
struct operand {
  column col;
  bool scalar = false;

  bool null_scalar() const { return scalar && col.is_null(0); }
};

/// The operand as a full column of `rows` rows (a scalar is repeated).
column materialize(const operand& o, int64_t rows, memory_resource* mr);

/// Copies `n` validity bits starting at bit `src_off` of `src` into `dst` from bit 0 (whole bytes
/// written; the bits past `n` in the last byte are unspecified).
void copy_bits(const uint8_t* src, int64_t src_off, uint8_t* dst, int64_t n);

/// The validity of a result of `n` rows: starts all valid, ANDs input validities, clears single rows.
/// The bitmap is only allocated once a null appears.
class null_mask {
 public:
  null_mask(int64_t n, memory_resource* mr) : _n(n), _mr(mr) {}
  /// ANDs the validity of `c` (`n` rows; a no-op when it has no nulls).
  void and_with(const column& c);
  /// ANDs the validity of a non-scalar operand.
  void and_with(const operand& o) {
    if (!o.scalar) and_with(o.col);
  }
  void clear(int64_t i) {
    if (!_bits) init_all_valid();
    bits::clear(_bits, i);
  }
  bool is_valid(int64_t i) const { return !_bits || bits::get(_bits, i); }
  bool has_bitmap() const { return _bits != nullptr; }
  /// The bitmap (nullptr when every row is valid); the mask is empty afterwards.
  buffer_ptr release() {
    _bits = nullptr;
    return std::move(_buf);
  }

 private:
  void init_all_valid();
  int64_t _n;
  memory_resource* _mr;
  buffer_ptr _buf;
  uint8_t* _bits = nullptr;
};

/// An uninitialized output value buffer of `n` values of `T`.
template <typename T>
struct output {
  buffer_ptr data;
  T* p;
  output(int64_t n, memory_resource* mr) : data(make_buffer(sizeof(T) * static_cast<size_t>(n), mr)), p(data->as<T>()) {}
  column finish(const data_type& type, int64_t n, null_mask& m) { return column(type, n, std::move(data), m.release(), -1); }
};

/// Element access of an operand's values: index i, or always index 0 for a scalar.
template <typename T, bool Scalar>
struct reader {
  const T* p;
  explicit reader(const column& c) : p(c.values<T>()) {}
  T operator[](int64_t i) const {
    if constexpr (Scalar) return p[0];
    else return p[i];
  }
};
template <bool Scalar>
struct reader<std::string_view, Scalar> {
  column_view v;
  std::string_view s0;
  explicit reader(const column& c) : v(c.view()) {
    if (Scalar && c.size() > 0 && c.is_valid(0)) s0 = v.string(0);
  }
  std::string_view operator[](int64_t i) const {
    if constexpr (Scalar) return s0;
    else return v.string(i);
  }
};

/// Calls `f(reader<T, Sa>, reader<T, Sb>)` for the scalar-ness of the two operands (both scalar is
/// handled as two one-row columns).
template <typename T, typename F>
void with_readers(const operand& a, const operand& b, F&& f) {
  if (a.scalar && !b.scalar) f(reader<T, true>(a.col), reader<T, false>(b.col));
  else if (b.scalar && !a.scalar) f(reader<T, false>(a.col), reader<T, true>(b.col));
  else f(reader<T, false>(a.col), reader<T, false>(b.col));
}

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T>;
template <typename T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, __int128>;

/// Powers of ten as __int128, 10^0 .. 10^38.
__int128 pow10_i128(int e);

/// Whether an unscaled decimal has at most `precision` (<= 38) digits.
inline bool fits_precision(__int128 v, int precision) {
  const __int128 bound = pow10_i128(precision);
  return v < bound && v > -bound;
}

/// Text of an unscaled decimal at `scale` with any number of digits ("-1.50"), for messages about
/// values that do not fit their type.
std::string decimal_text(__int128 v, int scale);

/// Raises compute_error for decimal function node `n` whose result does not fit its type: names the
/// expression, then `detail` (the operands and the result).
[[noreturn]] void decimal_overflow(const expr_node& n, const std::string& detail);

/// Text of a value for error messages (quoted for strings).
std::string describe_value(const column& c, int64_t i);

// Kernel families. `rows` is the result length (1 when every operand is a scalar); `n.dtype` the
// result type.

/// add, sub (non-temporal), mul (incl. duration * int64), div, floor_div, mod, pow.
column eval_arith(const expr_node& n, const operand& a, const operand& b, int64_t rows, memory_resource* mr);
/// eq, ne, lt, le, gt, ge. Floats order NaN above every number and equal to itself.
column eval_compare(fn f, const operand& a, const operand& b, int64_t rows, memory_resource* mr);
/// is_in (n.list) and is_between (args x, lo, hi; n.s0 closed).
column eval_membership(const expr_node& n, const std::vector<operand>& args, int64_t rows, memory_resource* mr);
/// and_, or_, xor_ (Kleene), not_.
column eval_logic(fn f, const std::vector<operand>& args, int64_t rows, memory_resource* mr);
/// Kleene `a & b` / `a | b` over full boolean columns.
column kleene(fn f, const column& a, const column& b, memory_resource* mr);
/// when(cond, then, otherwise): a null condition counts as false.
column eval_when(const expr_node& n, const std::vector<operand>& args, int64_t rows, memory_resource* mr);
/// is_null, is_not_null, is_nan, fill_null, coalesce.
column eval_nulls(const expr_node& n, const std::vector<operand>& args, int64_t rows, memory_resource* mr);
/// neg, abs, round, floor, ceil, sqrt, log, exp.
column eval_math(const expr_node& n, const operand& a, int64_t rows, memory_resource* mr);

/// Row i of the result is `a[i]` (with its validity) where `pick[i]`, else `b[i]`. Both full columns
/// of `type` and `rows` rows.
column blend(const std::vector<uint8_t>& pick, const column& a, const column& b, int64_t rows, memory_resource* mr);

}  // namespace tug::cpu::detail
