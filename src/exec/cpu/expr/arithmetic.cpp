// Arithmetic kernels: + - * / floor_div mod pow over equal-typed integer, floating and decimal
// operands (resolve inserted the casts), and duration * int64. Semantics in docs/types.md.
#include <cmath>
#include <limits>

#include "kernels.hpp"

namespace tug::cpu::detail {

namespace {

// Unsigned type of the promoted operation, for wrapping (two's complement) integer arithmetic.
template <typename T>
using wrap_t = std::make_unsigned_t<decltype(T{} + T{})>;

template <typename T> T wrap_add(T x, T y) { return static_cast<T>(static_cast<wrap_t<T>>(x) + static_cast<wrap_t<T>>(y)); }
template <typename T> T wrap_sub(T x, T y) { return static_cast<T>(static_cast<wrap_t<T>>(x) - static_cast<wrap_t<T>>(y)); }
template <typename T> T wrap_mul(T x, T y) { return static_cast<T>(static_cast<wrap_t<T>>(x) * static_cast<wrap_t<T>>(y)); }

// Floor division with the divisor's sign for the remainder; y == 0 gives 0 (the row is nulled).
template <typename T>
T int_floor_div(T x, T y) {
  if (y == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return wrap_sub<T>(0, x);
    T q = static_cast<T>(x / y);
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return q;
  } else {
    return static_cast<T>(x / y);
  }
}
template <typename T>
T int_mod(T x, T y) {
  if (y == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return 0;
    T r = static_cast<T>(x % y);
    if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
    return r;
  } else {
    return static_cast<T>(x % y);
  }
}

// Integer power by squaring, wrapping on overflow; a negative exponent gives 0 (the row is nulled).
int64_t int_pow(int64_t base, int64_t e) {
  if (e < 0) return 0;
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  auto ue = static_cast<uint64_t>(e);
  while (ue) {
    if (ue & 1) result *= b;
    b *= b;
    ue >>= 1;
  }
  return static_cast<int64_t>(result);
}

template <typename T, typename R, typename Op>
void binary(const operand& a, const operand& b, R* out, int64_t rows, Op op) {
  with_readers<T>(a, b, [&](auto x, auto y) {
    for (int64_t i = 0; i < rows; ++i) out[i] = op(x[i], y[i]);
  });
}

// Nulls the rows whose right operand satisfies `bad` (zero divisors, negative exponents).
template <typename T, typename Bad>
void null_where(const operand& b, int64_t rows, null_mask& m, Bad bad) {
  const T* y = b.col.values<T>();
  if (b.scalar) {
    if (bad(y[0]))
      for (int64_t i = 0; i < rows; ++i) m.clear(i);
    return;
  }
  for (int64_t i = 0; i < rows; ++i)
    if (bad(y[i])) m.clear(i);
}

// Decimal + - *: an exact result that does not fit 128 bits, or has more digits than the result type's
// precision, raises compute_error (as Polars) naming the expression and the values.
column decimal_arith(const expr_node& n, const operand& a, const operand& b, int64_t rows, null_mask& m,
                     memory_resource* mr) {
  output<__int128> out(rows, mr);
  const int sa = a.col.type().scale, sb = b.col.type().scale, precision = n.dtype.precision;
  const char* sym = n.func == fn::add ? " + " : n.func == fn::sub ? " - " : " * ";
  // a product's scale s1 + s2 above the result's is rounded half away from zero
  const int excess = n.func == fn::mul ? sa + sb - n.dtype.scale : 0;
  const __int128 p = excess > 0 ? pow10_i128(excess) : 1, half = p / 2;
  with_readers<__int128>(a, b, [&](auto x, auto y) {
    for (int64_t i = 0; i < rows; ++i) {
      __int128 r;
      bool wide;
      switch (n.func) {
        case fn::add:
          wide = __builtin_add_overflow(x[i], y[i], &r);
          break;
        case fn::sub:
          wide = __builtin_sub_overflow(x[i], y[i], &r);
          break;
        case fn::mul:
          wide = __builtin_mul_overflow(x[i], y[i], &r);
          break;
        default:
          throw internal_error(std::string("decimal ") + to_string(n.func) + " reached the evaluator");
      }
      if (excess > 0 && !wide) {
        __int128 q = r / p, rem = r % p;
        if (rem >= half)
          ++q;
        else if (-rem >= half)
          --q;
        r = q;
      }
      out.p[i] = r;
      // rows that are null may hold any value: never let them raise
      if ((wide || !fits_precision(r, precision)) && m.is_valid(i)) {
        std::string values = decimal_text(x[i], sa) + sym + decimal_text(y[i], sb);
        decimal_overflow(n, wide ? values + " does not fit in 128 bits"
                                 : values + " = " + decimal_text(r, n.dtype.scale) + " does not fit");
      }
    }
  });
  return out.finish(n.dtype, rows, m);
}

}  // namespace

column eval_arith(const expr_node& n, const operand& a, const operand& b, int64_t rows, memory_resource* mr) {
  if (a.null_scalar() || b.null_scalar()) return make_null_column(n.dtype, rows, mr);
  null_mask m(rows, mr);
  m.and_with(a);
  m.and_with(b);
  const type_id id = a.col.type().id;
  if (id == type_id::decimal128) return decimal_arith(n, a, b, rows, m, mr);
  if (id == type_id::duration) {
    TUG_EXPECTS(n.func == fn::mul && b.col.type().id == type_id::int64, "duration arithmetic reached eval_arith");
    output<int64_t> out(rows, mr);
    binary<int64_t>(a, b, out.p, rows, [](auto x, auto y) { return wrap_mul<int64_t>(x, y); });
    return out.finish(n.dtype, rows, m);
  }
  return type_dispatch(id, [&]<type_id Id>() -> column {
    using T = storage_t<Id>;
    if constexpr (is_int_v<T> || is_float_v<T>) {
      output<T> out(rows, mr);
      T* o = out.p;
      switch (n.func) {
        case fn::add:
          if constexpr (is_int_v<T>) binary<T>(a, b, o, rows, [](auto x, auto y) { return wrap_add<T>(x, y); });
          else binary<T>(a, b, o, rows, [](T x, T y) { return x + y; });
          break;
        case fn::sub:
          if constexpr (is_int_v<T>) binary<T>(a, b, o, rows, [](auto x, auto y) { return wrap_sub<T>(x, y); });
          else binary<T>(a, b, o, rows, [](T x, T y) { return x - y; });
          break;
        case fn::mul:
          if constexpr (is_int_v<T>) binary<T>(a, b, o, rows, [](auto x, auto y) { return wrap_mul<T>(x, y); });
          else binary<T>(a, b, o, rows, [](T x, T y) { return x * y; });
          break;
        case fn::div:
          if constexpr (is_float_v<T>) binary<T>(a, b, o, rows, [](T x, T y) { return x / y; });
          else throw internal_error("integer true division reached the evaluator (resolve casts to float)");
          break;
        case fn::floor_div:
          if constexpr (is_int_v<T>) {
            binary<T>(a, b, o, rows, [](auto x, auto y) { return int_floor_div<T>(x, y); });
            null_where<T>(b, rows, m, [](T y) { return y == 0; });
          } else {
            binary<T>(a, b, o, rows, [](T x, T y) { return std::floor(x / y); });
          }
          break;
        case fn::mod:
          if constexpr (is_int_v<T>) {
            binary<T>(a, b, o, rows, [](auto x, auto y) { return int_mod<T>(x, y); });
            null_where<T>(b, rows, m, [](T y) { return y == 0; });
          } else {
            // Polars: x - y * floor(x / y)
            binary<T>(a, b, o, rows, [](T x, T y) { return x - y * std::floor(x / y); });
          }
          break;
        case fn::pow:
          if constexpr (std::is_same_v<T, int64_t>) {
            binary<T>(a, b, o, rows, [](T x, T y) { return int_pow(x, y); });
            null_where<T>(b, rows, m, [](T y) { return y < 0; });
          } else if constexpr (is_float_v<T>) {
            binary<T>(a, b, o, rows, [](T x, T y) { return static_cast<T>(std::pow(x, y)); });
          } else {
            throw internal_error("pow of " + to_string(a.col.type()) + " reached the evaluator");
          }
          break;
        default: throw internal_error(std::string("eval_arith: unexpected function ") + to_string(n.func));
      }
      return out.finish(n.dtype, rows, m);
    } else {
      throw internal_error(std::string("arithmetic ") + to_string(n.func) + " on " + to_string(a.col.type()) +
                           " reached the evaluator");
    }
  });
}

}  // namespace tug::cpu::detail
