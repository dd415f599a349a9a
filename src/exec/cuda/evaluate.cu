// The CUDA expression evaluator: each expression is compiled on the host into a register program
// (expr_compile.cpp) and run by one interpreter kernel, one thread per row. Semantics mirror the CPU
// evaluator (src/exec/cpu/expr); a strict cast that fails, or decimal arithmetic that overflows, is
// re-run on the CPU for its exact error. A string result is written in two passes of the program:
// row lengths and validity, a scan into offsets, then the bytes (string_kernel).
#include <cstring>
#include <limits>

#include "exec/case_mapping.hpp"
#include "exec/cpu/expr/parse_decimal.hpp"
#include "exec/cpu/expr/truncate.hpp"
#include "exec/cuda/common.cuh"
#include "exec/cuda/evaluate.hpp"
#include "exec/cuda/expr_program.hpp"
#include "exec/cuda/regex.hpp"
#include "exec/cuda/strings.hpp"
#include "exec/cuda/table_ops.hpp"
#include "exec/float_text.hpp"
#include "tug/core/temporal.hpp"
#include "tug/exec/cpu/evaluate.hpp"
#include "tug/memory/device.hpp"

namespace tug::cuda {

namespace {

using prog::instr;
using prog::nk;
using prog::op;

/// One register: a 64-bit value (or a string's bytes, or a decimal's low word) and a valid flag.
struct rv {
  union {
    int64_t i;
    uint64_t u;
    double f;
    const char* p;
  };
  int64_t n;  ///< string length; a decimal's high word
  bool v;
};

// ---- decimal128: the unscaled __int128 in (u, n), mirroring cpu::cast and the CPU's decimal kernels

using u128 = unsigned __int128;

__device__ inline __int128 get_d(const rv& r) {
  return static_cast<__int128>((static_cast<u128>(static_cast<uint64_t>(r.n)) << 64) | r.u);
}
__device__ inline void set_d(rv& r, __int128 x) {
  r.u = static_cast<uint64_t>(x);
  r.n = static_cast<int64_t>(static_cast<uint64_t>(static_cast<u128>(x) >> 64));
}
/// 10^e, 0 <= e <= 38.
__device__ inline __int128 pow10_128(int64_t e) {
  __int128 p = 1;
  for (int64_t k = 0; k < e; ++k)
    p *= 10;
  return p;
}
__device__ inline bool add_overflow(__int128 x, __int128 y, __int128& r) {
  r = static_cast<__int128>(static_cast<u128>(x) + static_cast<u128>(y));
  return (x < 0) == (y < 0) && (r < 0) != (x < 0);
}
__device__ inline bool sub_overflow(__int128 x, __int128 y, __int128& r) {
  r = static_cast<__int128>(static_cast<u128>(x) - static_cast<u128>(y));
  return (x < 0) != (y < 0) && (r < 0) != (x < 0);
}
/// x * y wrapped to 128 bits into r; true when the exact product does not fit (__builtin_mul_overflow).
__device__ inline bool mul_overflow(__int128 x, __int128 y, __int128& r) {
  const u128 ux = x < 0 ? 0 - static_cast<u128>(x) : static_cast<u128>(x);
  const u128 uy = y < 0 ? 0 - static_cast<u128>(y) : static_cast<u128>(y);
  const bool neg = (x < 0) != (y < 0);
  const u128 p = ux * uy;
  r = static_cast<__int128>(neg ? 0 - p : p);
  if ((ux >> 64) != 0 || (uy >> 64) != 0)  // both below 2^64 cannot overflow 128 unsigned bits
    if (ux != 0 && p / ux != uy) return true;
  const u128 limit = (static_cast<u128>(1) << 127) - (neg ? 0 : 1);
  return p > limit;
}
/// Rounds x / 10^e half away from zero (the CPU's decimal rescale).
__device__ inline __int128 div_round(__int128 x, int64_t e) {
  const __int128 p = pow10_128(e), q = x / p, r = x % p;
  if (2 * r >= p) return q + 1;
  if (-2 * r >= p) return q - 1;
  return q;
}
__device__ inline bool fits_precision(__int128 x, int64_t precision) {
  const __int128 bound = pow10_128(precision);
  return x < bound && x > -bound;
}
/// static_cast<__int128>(s) for an integral |s| < 2^127.
__device__ inline __int128 from_double(double s) {
  const double a = fabs(s);
  u128 u;
  if (a < 0x1p64) {
    u = __double2ull_rz(a);
  } else {
    const double h = floor(a * 0x1p-64);  // exact: scaling by a power of two, then whole 2^64 units
    u = (static_cast<u128>(__double2ull_rz(h)) << 64) + __double2ull_rz(a - h * 0x1p64);
  }
  return s < 0 ? static_cast<__int128>(0 - u) : static_cast<__int128>(u);
}

__device__ inline bool is_signed_kind(nk t) { return t >= nk::i8 && t <= nk::i64; }
__device__ inline bool is_unsigned_kind(nk t) { return t >= nk::u8 && t <= nk::u64; }
__device__ inline bool is_float_kind(nk t) { return t == nk::f32 || t == nk::f64; }

/// `x` wrapped to the width of integer kind `t` (sign- or zero-extended).
__device__ inline int64_t wrap(uint64_t x, nk t) {
  switch (t) {
    case nk::b:
      return x != 0;
    case nk::i8:
      return static_cast<int8_t>(x);
    case nk::i16:
      return static_cast<int16_t>(x);
    case nk::i32:
      return static_cast<int32_t>(x);
    case nk::u8:
      return static_cast<uint8_t>(x);
    case nk::u16:
      return static_cast<uint16_t>(x);
    case nk::u32:
      return static_cast<uint32_t>(x);
    default:
      return static_cast<int64_t>(x);
  }
}
/// A double rounded to float32 when `t` is f32.
__device__ inline double rf(double x, nk t) { return t == nk::f32 ? static_cast<double>(__double2float_rn(x)) : x; }

__device__ inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
__device__ inline int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }
__device__ inline int64_t wmul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
__device__ inline int64_t wadd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// Polars' total order on floats: NaN equals NaN and is above every number.
__device__ inline bool total_eq(double x, double y) { return (x == y) | ((x != x) & (y != y)); }
__device__ inline bool total_lt(double x, double y) { return (x < y) | ((x == x) & (y != y)); }

__device__ inline int str_cmp(const rv& x, const rv& y) {
  int64_t m = x.n < y.n ? x.n : y.n;
  for (int64_t k = 0; k < m; ++k) {
    unsigned char a = x.p[k], b = y.p[k];
    if (a != b) return a < b ? -1 : 1;
  }
  return x.n < y.n ? -1 : x.n > y.n ? 1 : 0;
}
using strings::bytes_equal;

/// x == y and x < y for registers of kind t.
__device__ inline bool reg_eq(const rv& x, const rv& y, nk t) {
  if (is_float_kind(t)) return total_eq(x.f, y.f);
  if (t == nk::str) return x.n == y.n && bytes_equal(x.p, y.p, x.n);
  if (t == nk::d128) return x.i == y.i && x.n == y.n;
  return x.i == y.i;
}
__device__ inline bool reg_lt(const rv& x, const rv& y, nk t) {
  if (is_float_kind(t)) return total_lt(x.f, y.f);
  if (t == nk::str) return str_cmp(x, y) < 0;
  if (t == nk::d128) return get_d(x) < get_d(y);
  if (is_unsigned_kind(t)) return x.u < y.u;
  return x.i < y.i;
}

/// Range of an integer kind (as signed / unsigned 64-bit bounds).
__device__ inline void int_bounds(nk t, int64_t& lo, uint64_t& hi) {
  switch (t) {
    case nk::i8:
      lo = -128, hi = 127;
      return;
    case nk::i16:
      lo = -32768, hi = 32767;
      return;
    case nk::i32:
      lo = INT32_MIN, hi = INT32_MAX;
      return;
    case nk::i64:
      lo = INT64_MIN, hi = INT64_MAX;
      return;
    case nk::u8:
      lo = 0, hi = 255;
      return;
    case nk::u16:
      lo = 0, hi = 65535;
      return;
    case nk::u32:
      lo = 0, hi = UINT32_MAX;
      return;
    default:
      lo = 0, hi = UINT64_MAX;
      return;
  }
}

/// A cast with a decimal side (instr::cast), as cpu::cast; false when the value does not fit.
__device__ inline bool convert_decimal(const rv& x, const instr& in, rv& out) {
  const nk from = in.t2, to = in.t;
  if (from == nk::d128) {
    const __int128 v = get_d(x);
    if (to == nk::b) {  // the unscaled value
      out.i = v != 0;
      return true;
    }
    if (is_float_kind(to)) {
      // correctly rounded, float32 directly (float_text::decimal_to_float, as cpu::cast)
      out.f = to == nk::f32 ? static_cast<double>(float_text::decimal_to_float<float>(v, static_cast<int>(in.i0)))
                            : float_text::decimal_to_float<double>(v, static_cast<int>(in.i0));
      return true;
    }
    if (to == nk::d128) {
      __int128 r;
      if (in.i1 >= in.i0) {
        if (mul_overflow(v, pow10_128(in.i1 - in.i0), r)) return false;
      } else {
        r = div_round(v, in.i0 - in.i1);
      }
      if (!fits_precision(r, in.i2)) return false;
      set_d(out, r);
      return true;
    }
    const __int128 w = v / pow10_128(in.i0);  // truncates toward zero
    int64_t lo;
    uint64_t hi;
    int_bounds(to, lo, hi);
    if (w < lo || w > static_cast<__int128>(hi)) return false;
    out.i = static_cast<int64_t>(static_cast<uint64_t>(w));
    return true;
  }
  __int128 r;
  if (is_float_kind(from)) {
    const double s = round(__dmul_rn(x.f, in.d0));
    if (!(fabs(s) < 1.7e38)) return false;
    r = from_double(s);
  } else {
    const __int128 w = is_unsigned_kind(from) ? static_cast<__int128>(x.u) : static_cast<__int128>(x.i);
    if (mul_overflow(w, pow10_128(in.i1), r)) return false;
  }
  if (!fits_precision(r, in.i2)) return false;
  set_d(out, r);
  return true;
}

/// Numeric cast of `x` (kind `from`) to kind `to`, as cpu::cast; false when the value does not fit.
__device__ inline bool convert(const rv& x, nk from, nk to, rv& out) {
  const bool f_float = is_float_kind(from), f_unsigned = is_unsigned_kind(from);
  if (to == nk::b) {
    out.i = f_float ? x.f != 0 : x.i != 0;
    return true;
  }
  if (to == nk::f32) {
    out.f = f_float ? __double2float_rn(x.f) : f_unsigned ? __ull2float_rn(x.u) : __ll2float_rn(x.i);
    return true;
  }
  if (to == nk::f64) {
    out.f = f_float ? x.f : f_unsigned ? __ull2double_rn(x.u) : __ll2double_rn(x.i);
    return true;
  }
  int64_t lo;
  uint64_t hi;
  int_bounds(to, lo, hi);
  const bool t_signed = is_signed_kind(to);
  if (f_float) {
    double t = trunc(x.f);
    double dlo = static_cast<double>(lo);
    double dhi = t_signed ? -dlo : 2.0 * (static_cast<double>(hi / 2) + 1);
    if (!(t >= dlo && t < dhi)) return false;
    out.i = t_signed ? static_cast<int64_t>(t) : static_cast<int64_t>(static_cast<uint64_t>(t));
    return true;
  }
  if (f_unsigned) {
    if (x.u > hi) return false;
  } else {
    if (x.i < lo || (x.i >= 0 && static_cast<uint64_t>(x.i) > hi)) return false;
  }
  out.i = x.i;
  return true;
}

// Floats to and from text (float_text.hpp) work on big integers in local memory: out of line, so the
// interpreter's other paths keep their registers, and only in the kernels' `Text` instances (programs
// with program::float_text), so that the others keep a small stack frame: with the big integers,
// interpret_kernel's frame is 1328 bytes instead of 576, and a filter over 1B rows took 65 ms instead
// of 33 on an H100 (session 7).

/// A string to a float64, or to a float32 (held as the exact double) when `f32`.
__device__ __noinline__ bool parse_floating(const rv& x, bool f32, rv& out) {
  if (f32) {
    float f;
    if (!float_text::parse_float(x.p, x.n, f)) return false;
    out.f = f;
    return true;
  }
  return float_text::parse_float(x.p, x.n, out.f);
}

/// A float64 register as format_value writes it, or a float32 (held as the exact double) when `f32`.
__device__ __noinline__ int format_floating(double v, bool f32, char* out) {
  return f32 ? float_text::format_float(static_cast<float>(v), out) : float_text::format_float(v, out);
}

/// A cast from a string (instr::cast with t2 == str), as cpu::cast's parse_column; false when the
/// string does not parse (floats: only in the `Text` instance, see parse_floating).
template <bool Text>
__device__ inline bool parse(const rv& x, const instr& in, const char* chars, rv& out) {
  switch (static_cast<prog::parse_as>(in.i0)) {
    case prog::parse_as::number: {
      if (in.t == nk::b) {
        const bool t = x.n == 4 && strings::bytes_equal(x.p, "true", 4);
        out.i = t;
        return t || (x.n == 5 && strings::bytes_equal(x.p, "false", 5));
      }
      int64_t lo;
      uint64_t hi;
      int_bounds(in.t, lo, hi);
      return strings::parse_int(x.p, x.n, is_signed_kind(in.t), lo, hi, out.i);
    }
    case prog::parse_as::date:
      return strings::parse_date(x.p, x.n, out.i);
    case prog::parse_as::timestamp:
      return temporal::parse_timestamp(x.p, x.n, in.i1, out.i);
    case prog::parse_as::duration: {
      int64_t n = x.n;
      const char* unit = chars + in.i1;
      if (n > in.i2 && strings::bytes_equal(x.p + (n - in.i2), unit, in.i2)) n -= in.i2;
      return strings::parse_int(x.p, n, true, INT64_MIN, INT64_MAX, out.i);
    }
    case prog::parse_as::decimal: {
      __int128 v;
      if (!cpu::detail::parse_decimal(x.p, x.n, static_cast<int>(in.i1), static_cast<int>(in.i2), v)) return false;
      set_d(out, v);
      return true;
    }
    case prog::parse_as::floating:
      if constexpr (Text) return parse_floating(x, in.t == nk::f32, out);
      return false;
  }
  return false;
}

struct env {
  const dcol* cols;
  const dcol* subs;  ///< the columns of the program's sub-programs
  const int64_t* pool;
  const char* chars;
  unsigned long long* err;
};

__device__ inline void load(rv& r, const dcol& c, int64_t i, nk t) {
  r.v = c.valid(i);
  switch (t) {
    case nk::b:
      r.i = c.value<uint8_t>(i) != 0;
      break;
    case nk::i8:
      r.i = c.value<int8_t>(i);
      break;
    case nk::i16:
      r.i = c.value<int16_t>(i);
      break;
    case nk::i32:
      r.i = c.value<int32_t>(i);
      break;
    case nk::i64:
      r.i = c.value<int64_t>(i);
      break;
    case nk::u8:
      r.u = c.value<uint8_t>(i);
      break;
    case nk::u16:
      r.u = c.value<uint16_t>(i);
      break;
    case nk::u32:
      r.u = c.value<uint32_t>(i);
      break;
    case nk::u64:
      r.u = c.value<uint64_t>(i);
      break;
    case nk::f32:
      r.f = c.value<float>(i);
      break;
    case nk::f64:
      r.f = c.value<double>(i);
      break;
    case nk::str: {
      dstring s = c.str(i);
      r.p = s.p;
      r.n = s.n;
      break;
    }
    case nk::d128: {  // two words, low first (8-byte aligned reads)
      const uint64_t* w = static_cast<const uint64_t*>(c.data) + 2 * (c.offset + i);
      r.u = w[0];
      r.n = static_cast<int64_t>(w[1]);
      break;
    }
  }
}

__device__ inline void store(void* data, int64_t i, const rv& r, nk t) {
  switch (t) {
    case nk::b:
      static_cast<uint8_t*>(data)[i] = r.i != 0;
      break;
    case nk::i8:
    case nk::u8:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(r.u);
      break;
    case nk::i16:
    case nk::u16:
      static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(r.u);
      break;
    case nk::i32:
    case nk::u32:
      static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>(r.u);
      break;
    case nk::f32:
      static_cast<float*>(data)[i] = __double2float_rn(r.f);
      break;
    case nk::f64:
      static_cast<double*>(data)[i] = r.f;
      break;
    case nk::d128:
      static_cast<uint64_t*>(data)[2 * i] = r.u;
      static_cast<uint64_t*>(data)[2 * i + 1] = static_cast<uint64_t>(r.n);
      break;
    default:
      static_cast<uint64_t*>(data)[i] = r.u;
      break;
  }
}

/// Decimal + - * (operands of one scale for + -; a product rounded by 10^i0): true on overflow (of 128
/// bits, or of the result's i2 digits), which the CPU raises for rows where both operands are valid.
__device__ inline bool decimal_arith(const instr& in, const rv& x, const rv& y, rv& d) {
  const __int128 a = get_d(x), b = get_d(y);
  __int128 r;
  bool overflow;
  if (in.code == op::add) {
    overflow = add_overflow(a, b, r);
  } else if (in.code == op::sub) {
    overflow = sub_overflow(a, b, r);
  } else {
    overflow = mul_overflow(a, b, r);
    if (in.i0 > 0 && !overflow) {  // as the CPU: half away from zero against p / 2
      const __int128 p = pow10_128(in.i0), half = p / 2, rem = r % p;
      r /= p;
      if (rem >= half)
        ++r;
      else if (-rem >= half)
        --r;
    }
  }
  set_d(d, r);
  return overflow || !fits_precision(r, in.i2);
}

/// Integer and float arithmetic of kind t; clears `ok` for a row the CPU nulls.
__device__ inline void arith(op code, nk t, const rv& x, const rv& y, rv& d, bool& ok) {
  if (is_float_kind(t)) {
    double a = x.f, b = y.f;
    switch (code) {
      case op::add:
        d.f = rf(__dadd_rn(a, b), t);
        break;
      case op::sub:
        d.f = rf(__dsub_rn(a, b), t);
        break;
      case op::mul:
        d.f = rf(__dmul_rn(a, b), t);
        break;
      case op::div:
        d.f = rf(__ddiv_rn(a, b), t);
        break;
      case op::floor_div:
        d.f = floor(rf(__ddiv_rn(a, b), t));
        break;
      case op::mod: {
        double q = floor(rf(__ddiv_rn(a, b), t));
        d.f = rf(__dsub_rn(a, rf(__dmul_rn(b, q), t)), t);
        break;
      }
      default:
        d.f = rf(pow(a, b), t);
        break;  // pow
    }
    return;
  }
  const uint64_t a = x.u, b = y.u;
  const bool s = is_signed_kind(t);
  switch (code) {
    case op::add:
      d.i = wrap(a + b, t);
      return;
    case op::sub:
      d.i = wrap(a - b, t);
      return;
    case op::mul:
      d.i = wrap(a * b, t);
      return;
    case op::floor_div:
    case op::mod: {
      if (b == 0) {
        d.i = 0;
        ok = false;
        return;
      }
      if (!s) {
        d.i = wrap(code == op::mod ? a % b : a / b, t);
        return;
      }
      const int64_t p = x.i, q = y.i;
      if (q == -1) {
        d.i = code == op::mod ? 0 : wrap(0 - a, t);
        return;
      }
      if (code == op::floor_div) {
        d.i = wrap(static_cast<uint64_t>(floor_div(p, q)), t);
      } else {
        int64_t r = p % q;
        if (r != 0 && ((r < 0) != (q < 0))) r += q;
        d.i = wrap(static_cast<uint64_t>(r), t);
      }
      return;
    }
    default: {  // pow (int64)
      if (y.i < 0) {
        d.i = 0;
        ok = false;
        return;
      }
      uint64_t result = 1, base = a, e = b;
      while (e) {
        if (e & 1) result *= base;
        base *= base;
        e >>= 1;
      }
      d.i = static_cast<int64_t>(result);
      return;
    }
  }
}

/// Runs one instruction for row `row`.
template <bool Text>
__device__ inline void step(const instr& in, rv* R, int64_t row, const env& E) {
  rv& d = R[in.dst];
  const rv x = R[in.a];
  const rv y = R[in.b];
  switch (in.code) {
    case op::load_col:
      load(d, (in.flag ? E.subs : E.cols)[in.i0], row, in.t);
      return;
    case op::load_lit:
      d.v = in.flag;
      d.i = in.i0;
      d.n = in.i1;  // string length; decimal high word
      if (in.t == nk::str) d.p = E.chars + in.i0;
      return;
    case op::add:
    case op::sub:
    case op::mul:
    case op::div:
    case op::floor_div:
    case op::mod:
    case op::pow: {
      if (in.t == nk::d128) {
        if (decimal_arith(in, x, y, d) && x.v && y.v) atomicMin(E.err, static_cast<unsigned long long>(row));
        d.v = x.v && y.v;
        return;
      }
      bool ok = true;
      arith(in.code, in.t, x, y, d, ok);
      d.v = x.v && y.v && ok;
      return;
    }
    case op::eq:
      d.i = reg_eq(x, y, in.t);
      break;
    case op::ne:
      d.i = !reg_eq(x, y, in.t);
      break;
    case op::lt:
      d.i = reg_lt(x, y, in.t);
      break;
    case op::le:
      d.i = !reg_lt(y, x, in.t);
      break;
    case op::gt:
      d.i = reg_lt(y, x, in.t);
      break;
    case op::ge:
      d.i = !reg_lt(x, y, in.t);
      break;
    case op::and_:
    case op::or_: {
      // Kleene: a valid operand that decides the result on its own (false for and, true for or)
      const bool is_and = in.code == op::and_;
      bool da = x.v && ((x.i != 0) != is_and), db = y.v && ((y.i != 0) != is_and);
      if (da || db) {
        d.i = !is_and;
        d.v = true;
      } else {
        d.i = x.v && y.v ? is_and : false;
        d.v = x.v && y.v;
      }
      return;
    }
    case op::xor_:
      d.i = (x.i != 0) != (y.i != 0);
      break;
    case op::not_:
      d.i = x.i == 0;
      d.v = x.v;
      return;
    case op::is_null:
      d.i = !x.v;
      d.v = true;
      return;
    case op::is_not_null:
      d.i = x.v;
      d.v = true;
      return;
    case op::is_nan:
      d.i = isnan(x.f);
      d.v = x.v;
      return;
    case op::coalesce:
      d = x.v ? x : y;
      return;
    case op::select:
      d = (x.v && x.i != 0) ? y : R[in.c];
      return;
    case op::is_in: {
      bool hit = false;
      if (in.t == nk::str) {
        for (int64_t k = 0; k < in.i1 && !hit; ++k) {
          rv s;
          s.p = E.chars + E.pool[in.i0 + 2 * k];
          s.n = E.pool[in.i0 + 2 * k + 1];
          hit = reg_eq(x, s, nk::str);
        }
      } else {
        const int64_t w = in.t == nk::d128 ? 2 : 1;  // d128: low and high words
        for (int64_t k = 0; k < in.i1 && !hit; ++k) {
          rv s;
          s.i = E.pool[in.i0 + w * k];
          s.n = w == 2 ? E.pool[in.i0 + w * k + 1] : 0;
          hit = reg_eq(x, s, in.t);
        }
      }
      d.i = hit;
      d.v = x.v;
      return;
    }
    case op::neg:
      if (in.t == nk::d128)
        set_d(d, static_cast<__int128>(0 - static_cast<u128>(get_d(x))));
      else if (is_float_kind(in.t))
        d.f = -x.f;
      else
        d.i = wrap(0 - x.u, in.t);
      d.v = x.v;
      return;
    case op::abs:
      if (in.t == nk::d128)
        set_d(d, get_d(x) < 0 ? static_cast<__int128>(0 - static_cast<u128>(get_d(x))) : get_d(x));
      else if (is_float_kind(in.t))
        d.f = fabs(x.f);
      else
        d.i = is_signed_kind(in.t) && x.i < 0 ? wrap(0 - x.u, in.t) : x.i;
      d.v = x.v;
      return;
    case op::round:
    case op::floor:
    case op::ceil:
      if (in.t == nk::d128) {  // to a multiple of 10^i1: half away from zero, floor or ceil (cpu round_to)
        const __int128 v = get_d(x), p = pow10_128(in.i1);
        __int128 q = v / p;
        const __int128 r = v % p;
        if (in.code == op::round) {
          if (2 * r >= p)
            ++q;
          else if (-2 * r >= p)
            --q;
        } else if (in.code == op::floor) {
          if (r < 0) --q;
        } else if (r > 0) {
          ++q;
        }
        set_d(d, q * p);
        d.v = x.v;
        if (x.v && !fits_precision(q * p, in.i2)) atomicMin(E.err, static_cast<unsigned long long>(row));
        return;
      }
      if (in.code == op::floor) {
        d.f = floor(x.f);
      } else if (in.code == op::ceil) {
        d.f = ceil(x.f);
      } else {
        d.f = in.i0 == 0 ? round(x.f) : rf(__ddiv_rn(round(__dmul_rn(x.f, in.d0)), in.d0), in.t);
      }
      d.v = x.v;
      return;
    case op::sqrt:
      d.f = rf(sqrt(x.f), in.t);
      d.v = x.v;
      return;
    case op::exp:
      d.f = rf(exp(x.f), in.t);
      d.v = x.v;
      return;
    case op::log: {
      double l = rf(log(x.f), in.t);
      d.f = in.d0 == 0 ? l : rf(__ddiv_rn(l, in.d0), in.t);
      d.v = x.v;
      return;
    }
    case op::cast:
    case op::date_to_ts:
    case op::ts_to_date:
    case op::change_unit: {
      bool ok = true;
      if (in.code == op::cast && in.t2 == nk::str) {
        ok = parse<Text>(x, in, E.chars, d);
      } else if (in.code == op::cast) {
        ok = in.t == nk::d128 || in.t2 == nk::d128 ? convert_decimal(x, in, d) : convert(x, in.t2, in.t, d);
      } else if (in.code == op::date_to_ts) {
        __int128 p = static_cast<__int128>(x.i) * in.i0;
        ok = p >= INT64_MIN && p <= INT64_MAX;
        d.i = static_cast<int64_t>(p);
      } else if (in.code == op::ts_to_date) {
        int64_t v = floor_div(x.i, in.i0);
        ok = v >= INT32_MIN && v <= INT32_MAX;
        d.i = static_cast<int32_t>(v);
      } else if (in.i1 >= in.i0) {
        __int128 p = static_cast<__int128>(x.i) * (in.i1 / in.i0);
        ok = p >= INT64_MIN && p <= INT64_MAX;
        d.i = static_cast<int64_t>(p);
      } else {
        int64_t f = in.i0 / in.i1;
        d.i = in.flag2 ? floor_div(x.i, f) : x.i / f;
      }
      d.v = x.v;
      if (!ok) {
        d.i = 0;
        d.n = 0;
        if (x.v) {
          if (in.flag) atomicMin(E.err, static_cast<unsigned long long>(row));
          d.v = false;
        }
      }
      return;
    }
    case op::civil: {
      int64_t days = in.i0 == 0 ? x.i : floor_div(x.i, in.i0);
      int64_t v = days;
      if (in.i1 <= 2) {
        temporal::civil_date c = temporal::civil_from_days(days);
        v = in.i1 == 0 ? c.year : in.i1 == 1 ? int64_t{c.month} : int64_t{c.day};
      } else if (in.i1 == 3) {
        v = floor_mod(days + 3, 7) + 1;
      }
      d.i = static_cast<int32_t>(v);
      d.v = x.v;
      return;
    }
    case op::dt_truncate: {
      const int64_t* w = E.pool + in.i0;
      const cpu::detail::truncate_rule rule{w[0], w[1], w[2], w[3], w[4]};
      d.i = in.flag2 ? int64_t{cpu::detail::truncate_days(static_cast<int32_t>(x.i), rule)}
                     : cpu::detail::truncate_ticks(x.i, rule);
      d.v = x.v;
      return;
    }
    case op::time_of_day:
      d.i = static_cast<int32_t>(floor_mod(x.i, in.i0) / in.i1 % in.i2);
      d.v = x.v;
      return;
    case op::div_trunc:
      d.i = x.i / in.i0;
      d.v = x.v;
      return;
    case op::mul_wrap:
      d.i = wmul(x.i, in.i0);
      d.v = x.v;
      return;
    case op::date_diff:
      d.i = (x.i - y.i) * (86400 * 1000);
      break;
    case op::date_add_dur:
      d.i = static_cast<int32_t>(x.i + floor_div(wmul(y.i, in.i1), in.i0));
      break;
    case op::ts_add_dur:
      d.i = wadd(x.i, wmul(in.i2 ? y.i / in.i2 : y.i, in.i1));
      break;
    case op::str_len_bytes:
      d.i = x.n;
      d.v = x.v;
      return;
    case op::str_len_chars: {
      int64_t c = 0;
      for (int64_t k = 0; k < x.n; ++k)
        c += (static_cast<unsigned char>(x.p[k]) & 0xC0) != 0x80;
      d.i = c;
      d.v = x.v;
      return;
    }
    case op::str_starts_with:
      d.i = y.n <= x.n && bytes_equal(x.p, y.p, y.n);
      break;
    case op::str_ends_with:
      d.i = y.n <= x.n && bytes_equal(x.p + (x.n - y.n), y.p, y.n);
      break;
    case op::str_contains: {
      bool hit = y.n == 0;
      for (int64_t k = 0; !hit && k + y.n <= x.n; ++k)
        hit = bytes_equal(x.p + k, y.p, y.n);
      d.i = hit;
      break;
    }
    case op::str_regex:
      d.i = x.v && regex::search(reinterpret_cast<const uint64_t*>(E.pool + in.i0),
                                 reinterpret_cast<const unsigned char*>(x.p), x.n);
      d.v = x.v;
      return;
    case op::str_slice:
    case op::str_strip:
      d = x;
      if (in.code == op::str_slice)
        strings::slice(d.p, d.n, in.i0, in.i1);
      else
        strings::strip(d.p, d.n, E.chars + in.i0, in.i1);
      return;
  }
  d.v = x.v && y.v;  // binary operations that fall through: null when either operand is
}

/// The program, staged in shared memory (it is read by every row).
__device__ inline const instr* stage_code(const instr* code, int ncode) {
  extern __shared__ int64_t smem[];
  const int words = ncode * static_cast<int>(sizeof(instr) / sizeof(int64_t));
  const int64_t* src = reinterpret_cast<const int64_t*>(code);
  for (int k = threadIdx.x; k < words; k += blockDim.x)
    smem[k] = src[k];
  __syncthreads();
  return reinterpret_cast<const instr*>(smem);
}
static_assert(sizeof(instr) % sizeof(int64_t) == 0, "instr is copied as 64-bit words");

/// Runs the program for each row of a grid-stride loop: `row(i, R)` takes row i's registers and
/// returns its validity, stored into `bitmap` unless it is null.
template <bool Text, typename F>
__device__ inline void for_each_row(const instr* code, int ncode, const env& E, int64_t n, uint32_t* bitmap, F&& row) {
  const instr* staged = stage_code(code, ncode);
  rv R[prog::max_regs] = {};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t i = base + threadIdx.x;
    bool valid = false;
    if (i < n) {
      for (int k = 0; k < ncode; ++k)
        step<Text>(staged[k], R, i, E);
      valid = row(i, static_cast<const rv*>(R));
    }
    if (bitmap && base + (threadIdx.x & ~31u) < n) store_valid_bit(bitmap, i, valid);
  }
}

template <bool Text>
__global__ void interpret_kernel(const instr* code, int ncode, env E, int64_t n, nk out, void* data, uint32_t* bitmap) {
  for_each_row<Text>(code, ncode, E, n, bitmap, [&](int64_t i, const rv* R) {
    store(data, i, R[0], out);
    return R[0].v;
  });
}

// ---- string results ---------------------------------------------------------------------------------

__device__ inline void copy_bytes(char* out, const char* s, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    out[k] = s[k];
}

/// Register `x` (of type `st.from`) as cpu::cast formats it, into `out` (64 bytes); returns the length.
template <bool Text>
__device__ inline int format_register(const prog::string_stage& st, const rv& x, const char* chars, char* out) {
  switch (st.from) {
    case type_id::boolean:
      copy_bytes(out, x.i ? "true" : "false", x.i ? 4 : 5);
      return x.i ? 4 : 5;
    case type_id::date32:
      return strings::format_date(x.i, out);
    case type_id::timestamp:
      return strings::format_timestamp(x.i, st.ticks, out);
    case type_id::decimal128:
      return strings::format_decimal(get_d(x), st.scale, out);
    case type_id::float32:
    case type_id::float64:
      if constexpr (Text) return format_floating(x.f, st.from == type_id::float32, out);
      return 0;
    case type_id::duration: {
      const int m = strings::format_int(x.i, out);
      copy_bytes(out + m, chars + st.text, st.text_len);
      return m + static_cast<int>(st.text_len);
    }
    default:
      return is_unsigned_kind(st.from_kind) ? float_text::write_u64(x.u, 1, out) : strings::format_int(x.i, out);
  }
}

/// The bytes of a string result's row from the registers: written to `out` unless it is null; returns
/// their count.
template <bool Text>
__device__ inline int64_t emit_row(const prog::string_stage& st, const rv* R, const char* chars, char* out) {
  switch (st.kind) {
    case prog::emit::copy:
      if (out) copy_bytes(out, R[0].p, R[0].n);
      return R[0].n;
    case prog::emit::concat: {
      int64_t m = 0;
      for (int k = 0; k < st.args; ++k) {
        if (k) {
          if (out) copy_bytes(out + m, chars + st.text, st.text_len);
          m += st.text_len;
        }
        if (out) copy_bytes(out + m, R[k].p, R[k].n);
        m += R[k].n;
      }
      return m;
    }
    case prog::emit::change_case:
      return unicode::map_case(R[0].p, R[0].n, out,
                               unicode::case_table_of_blob(reinterpret_cast<const uint32_t*>(chars + st.text)));
    case prog::emit::format: {
      char buf[64];
      const int m = format_register<Text>(st, R[0], chars, buf);
      if (out) copy_bytes(out, buf, m);
      return m;
    }
  }
  return 0;
}

/// A string result. Pass 1 (out == nullptr): each row's length (0 when null) into len (len[n] = 0)
/// and its validity into bitmap; pass 2: each valid row's bytes at out + offsets[i].
template <bool Text>
__global__ void string_kernel(const instr* code, int ncode, env E, int64_t n, prog::string_stage st, int64_t* len,
                              uint32_t* bitmap, const int64_t* offsets, char* out) {
  for_each_row<Text>(code, ncode, E, n, out ? nullptr : bitmap, [&](int64_t i, const rv* R) {
    bool valid = R[0].v;
    if (st.kind == prog::emit::concat)
      for (int k = 1; k < st.args; ++k)
        valid = valid && R[k].v;
    if (!out)
      len[i] = valid ? emit_row<Text>(st, R, E.chars, nullptr) : 0;
    else if (valid)
      emit_row<Text>(st, R, E.chars, out + offsets[i]);
    return valid;
  });
  if (!out && blockIdx.x == 0 && threadIdx.x == 0) len[n] = 0;
}

int width_of(nk k) {
  switch (k) {
    case nk::b:
    case nk::i8:
    case nk::u8:
      return 1;
    case nk::i16:
    case nk::u16:
      return 2;
    case nk::i32:
    case nk::u32:
    case nk::f32:
      return 4;
    case nk::d128:
      return 16;
    default:
      return 8;
  }
}

size_t align8(size_t x) { return (x + 7) & ~size_t{7}; }

/// Raises the CPU evaluator's error when the GPU flagged a row (a strict cast failed or decimal
/// arithmetic overflowed): the CPU raises the same error, with the same value, as it would have.
void raise_flagged(const unsigned long long* err, const expr& e, const table& t, const schema& input) {
  unsigned long long row = 0;
  read_back(err, &row);
  if (row == std::numeric_limits<unsigned long long>::max()) return;
  table host = to_host(t, default_host_resource());
  cpu::evaluate(e, host, input);
  throw internal_error("the GPU flagged an error (strict cast or decimal overflow) at row " + std::to_string(row) +
                       " but the CPU evaluator raised none: " + to_string(e));
}

/// Runs `p` (compiled from `e`, or from a subexpression of `e` whose errors `e` raises on the CPU)
/// over `t`.
column run_program(const prog::program& p, const expr& e, const table& t, const schema& input, memory_resource* mr) {
  const int64_t n = t.num_rows();
  std::vector<column> subs;
  for (const prog::program& sub : p.subs)
    subs.push_back(run_program(sub, e, t, input, mr));
  // one upload: program, column views (inputs, then sub-programs' columns), pool, literal bytes
  std::vector<dcol> views;
  for (size_t c : p.columns)
    views.push_back(view_of(t[c]));
  for (const column& c : subs)
    views.push_back(view_of(c));
  const size_t code_bytes = p.code.size() * sizeof(instr), view_bytes = views.size() * sizeof(dcol),
               pool_bytes = p.pool.size() * sizeof(int64_t);
  const size_t o_views = align8(code_bytes), o_pool = align8(o_views + view_bytes), o_chars = o_pool + pool_bytes;
  std::vector<unsigned char> blob(o_chars + p.chars.size());
  if (code_bytes) std::memcpy(blob.data(), p.code.data(), code_bytes);
  if (view_bytes) std::memcpy(blob.data() + o_views, views.data(), view_bytes);
  if (pool_bytes) std::memcpy(blob.data() + o_pool, p.pool.data(), pool_bytes);
  if (!p.chars.empty()) std::memcpy(blob.data() + o_chars, p.chars.data(), p.chars.size());
  dbuf<unsigned char> dev(static_cast<int64_t>(blob.size()), mr);
  upload(dev.p, blob.data(), blob.size());
  dbuf<unsigned long long> err(1, mr);
  TUG_CUDA_TRY(cudaMemsetAsync(err.p, 0xff, sizeof(unsigned long long), stream()));

  const auto* cols = reinterpret_cast<const dcol*>(dev.p + o_views);
  env E{cols, cols + p.columns.size(), reinterpret_cast<const int64_t*>(dev.p + o_pool),
        reinterpret_cast<const char*>(dev.p + o_chars), err.p};
  const auto* code = reinterpret_cast<const instr*>(dev.p);
  const int ncode = static_cast<int>(p.code.size());
  dbuf<uint32_t> bitmap = make_bitmap(n, mr);
  if (p.out != nk::str) {
    dbuf<unsigned char> data(n * width_of(p.out), mr);
    (p.float_text ? interpret_kernel<true> : interpret_kernel<false>)<<<grid_for(n), 256, code_bytes, stream()>>>(
        code, ncode, E, n, p.out, data.p, bitmap.p);
    TUG_CUDA_CHECK_LAUNCH();
    if (p.can_fail) raise_flagged(err.p, e, t, input);
    return make_device_column(p.out_type, n, data.buf, bitmap.buf);
  }
  dbuf<int64_t> len(n + 1, mr);
  auto* kernel = p.float_text ? string_kernel<true> : string_kernel<false>;
  kernel<<<grid_for(n), 256, code_bytes, stream()>>>(code, ncode, E, n, p.stage, len.p, bitmap.p, nullptr, nullptr);
  TUG_CUDA_CHECK_LAUNCH();
  if (p.can_fail) raise_flagged(err.p, e, t, input);
  int64_t total = 0;
  buffer_ptr offsets = scan_offsets(len.p, n, &total, mr);
  dbuf<char> chars(total, mr);
  if (total > 0) {
    kernel<<<grid_for(n), 256, code_bytes, stream()>>>(code, ncode, E, n, p.stage, nullptr, nullptr,
                                                       offsets->as<int64_t>(), chars.p);
    TUG_CUDA_CHECK_LAUNCH();
  }
  return make_device_column(p.out_type, n, chars.buf, bitmap.buf, std::move(offsets));
}

}  // namespace

std::vector<column> evaluate(const std::vector<expr>& exprs, const table& t, const schema& input, memory_resource* mr) {
  std::vector<column> out;
  out.reserve(exprs.size());
  for (const expr& e : exprs) {
    const expr* x = &e;
    while ((*x)->kind == expr_kind::alias)
      x = &(*x)->args[0];
    if ((*x)->kind == expr_kind::column) {  // a bare reference: the input column, unchanged
      out.push_back(t[input.index_of((*x)->name)]);
      continue;
    }
    prog::program p = prog::compile(e, input);
    out.push_back(run_program(p, e, t, input, mr));
  }
  return out;
}

}  // namespace tug::cuda
