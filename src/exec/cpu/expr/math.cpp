// Unary math kernels: neg, abs (wrapping for integers), round (half away from zero), floor, ceil
// (integers unchanged, decimals to whole units; a decimal result past the type's precision raises),
// sqrt, log (any base), exp.
#include <cmath>

#include "kernels.hpp"

namespace tug::cpu::detail {

namespace {

template <typename T, typename Op>
void unary(const operand& a, T* out, int64_t rows, Op op) {
  const T* x = a.col.values<T>();
  if (a.scalar) {
    for (int64_t i = 0; i < rows; ++i) out[i] = op(x[0]);
  } else {
    for (int64_t i = 0; i < rows; ++i) out[i] = op(x[i]);
  }
}

// Rounds an unscaled decimal to a multiple of `p`: mode 0 half away from zero, -1 floor, +1 ceil.
__int128 round_to(__int128 v, __int128 p, int mode) {
  __int128 q = v / p, r = v % p;
  if (mode == 0) {
    if (2 * r >= p) ++q;
    else if (-2 * r >= p) --q;
  } else if (mode < 0) {
    if (r < 0) --q;
  } else if (r > 0) {
    ++q;
  }
  return q * p;
}

template <typename T>
T round_float(T v, int64_t decimals) {
  if (decimals == 0) return std::round(v);
  // Polars: scale, round half away from zero, unscale
  const double f = std::pow(10.0, static_cast<double>(decimals));
  return static_cast<T>(std::round(static_cast<double>(v) * f) / f);
}

}  // namespace

column eval_math(const expr_node& n, const operand& a, int64_t rows, memory_resource* mr) {
  if (a.null_scalar()) return make_null_column(n.dtype, rows, mr);
  null_mask m(rows, mr);
  m.and_with(a);
  const data_type& type = a.col.type();
  const fn f = n.func;
  return type_dispatch(type.id, [&]<type_id Id>() -> column {
    using T = storage_t<Id>;
    constexpr bool is_dec = Id == type_id::decimal128;
    constexpr bool is_signed = (is_int_v<T> && std::is_signed_v<T>) || is_dec;
    if constexpr (is_int_v<T> || is_float_v<T> || is_dec) {
      output<T> out(rows, mr);
      T* o = out.p;
      switch (f) {
        case fn::neg:
          if constexpr (is_float_v<T>) unary<T>(a, o, rows, [](T x) { return -x; });
          else unary<T>(a, o, rows, [](T x) { return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x)); });
          break;
        case fn::abs:
          if constexpr (is_float_v<T>) unary<T>(a, o, rows, [](T x) { return std::fabs(x); });
          else if constexpr (is_signed)
            unary<T>(a, o, rows, [](T x) {
              return x < 0 ? static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x)) : x;
            });
          else unary<T>(a, o, rows, [](T x) { return x; });
          break;
        case fn::round:
        case fn::floor:
        case fn::ceil: {
          if constexpr (is_float_v<T>) {
            if (f == fn::round) unary<T>(a, o, rows, [d = n.i0](T x) { return round_float(x, d); });
            else if (f == fn::floor) unary<T>(a, o, rows, [](T x) { return std::floor(x); });
            else unary<T>(a, o, rows, [](T x) { return std::ceil(x); });
          } else if constexpr (is_dec) {
            int64_t keep = f == fn::round ? std::max<int64_t>(n.i0, 0) : 0;
            if (keep >= type.scale) {
              unary<T>(a, o, rows, [](T x) { return x; });
            } else {
              __int128 p = pow10_i128(type.scale - static_cast<int>(keep));
              int mode = f == fn::round ? 0 : f == fn::floor ? -1 : 1;
              unary<T>(a, o, rows, [p, mode](T x) { return round_to(x, p, mode); });
              // the type grew a digit (resolve), so only a result past 38 digits does not fit
              for (int64_t i = 0; i < rows; ++i)
                if (!fits_precision(o[i], n.dtype.precision) && m.is_valid(i))
                  decimal_overflow(n, decimal_text(a.col.values<T>()[a.scalar ? 0 : i], type.scale) + " rounds to " +
                                          decimal_text(o[i], n.dtype.scale) + ", which does not fit");
            }
          } else {
            unary<T>(a, o, rows, [](T x) { return x; });
          }
          break;
        }
        case fn::sqrt:
        case fn::log:
        case fn::exp:
          if constexpr (is_float_v<T>) {
            if (f == fn::sqrt) unary<T>(a, o, rows, [](T x) { return std::sqrt(x); });
            else if (f == fn::exp) unary<T>(a, o, rows, [](T x) { return std::exp(x); });
            else if (n.d0 == 0) unary<T>(a, o, rows, [](T x) { return std::log(x); });
            else unary<T>(a, o, rows, [d = std::log(n.d0)](T x) { return static_cast<T>(std::log(x) / d); });
          } else {
            throw internal_error(std::string(to_string(f)) + " of " + to_string(type) + " reached the evaluator");
          }
          break;
        default: throw internal_error(std::string("eval_math: unexpected function ") + to_string(f));
      }
      return out.finish(n.dtype, rows, m);
    } else if constexpr (Id == type_id::duration) {
      if (f != fn::neg && f != fn::abs) throw internal_error(std::string(to_string(f)) + " of a duration");
      output<int64_t> out(rows, mr);
      if (f == fn::neg) unary<int64_t>(a, out.p, rows, [](int64_t x) { return static_cast<int64_t>(-static_cast<uint64_t>(x)); });
      else unary<int64_t>(a, out.p, rows, [](int64_t x) { return x < 0 ? static_cast<int64_t>(-static_cast<uint64_t>(x)) : x; });
      return out.finish(n.dtype, rows, m);
    } else {
      throw internal_error(std::string(to_string(f)) + " of " + to_string(type) + " reached the evaluator");
    }
  });
}

}  // namespace tug::cpu::detail
