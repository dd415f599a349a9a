// Null handling: validity bitmaps shared by every kernel, is_null / is_not_null / is_nan /
// fill_null / coalesce, and the row blend used by fill_null, coalesce and when.
#include <cmath>

#include "kernels.hpp"
#include "tug/core/scalar.hpp"

namespace tug::cpu::detail {

void copy_bits(const uint8_t* src, int64_t src_off, uint8_t* dst, int64_t n) {
  if (n <= 0) return;
  const int64_t nbytes = bits::bytes_for(n);
  const uint8_t* s = src + (src_off >> 3);
  const int shift = static_cast<int>(src_off & 7);
  if (shift == 0) {
    std::memcpy(dst, s, static_cast<size_t>(nbytes));
    return;
  }
  const int64_t last = (shift + n - 1) >> 3;  // last source byte holding a wanted bit
  for (int64_t j = 0; j < nbytes; ++j) {
    unsigned v = s[j] >> shift;
    if (j + 1 <= last) v |= static_cast<unsigned>(s[j + 1]) << (8 - shift);
    dst[j] = static_cast<uint8_t>(v);
  }
}

void null_mask::init_all_valid() {
  _buf = make_buffer(static_cast<size_t>(bits::bytes_for(_n)), _mr);
  _bits = _buf->as<uint8_t>();
  std::memset(_bits, 0xff, _buf->size());
}

void null_mask::and_with(const column& c) {
  if (!c.has_nulls()) return;
  const uint8_t* v = c.view().validity;
  if (!_bits) {
    _buf = make_buffer(static_cast<size_t>(bits::bytes_for(_n)), _mr);
    _bits = _buf->as<uint8_t>();
    copy_bits(v, c.offset(), _bits, _n);
    return;
  }
  uint8_t tmp[512];
  for (int64_t done = 0; done < _n; done += 512 * 8) {
    int64_t k = std::min<int64_t>(512 * 8, _n - done);
    copy_bits(v, c.offset() + done, tmp, k);
    uint8_t* d = _bits + (done >> 3);
    for (int64_t j = 0; j < bits::bytes_for(k); ++j) d[j] &= tmp[j];
  }
}

__int128 pow10_i128(int e) {
  static const auto table = [] {
    std::vector<__int128> p(39);
    p[0] = 1;
    for (int i = 1; i < 39; ++i) p[static_cast<size_t>(i)] = p[static_cast<size_t>(i) - 1] * 10;
    return p;
  }();
  TUG_EXPECTS(e >= 0 && e <= 38, "decimal power of ten out of range");
  return table[static_cast<size_t>(e)];
}

std::string decimal_text(__int128 v, int scale) {
  unsigned __int128 u = v < 0 ? 0 - static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u);
  if (scale > 0) {
    if (digits.size() <= static_cast<size_t>(scale))
      digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
    digits.insert(digits.size() - static_cast<size_t>(scale), 1, '.');
  }
  return v < 0 ? "-" + digits : digits;
}

void decimal_overflow(const expr_node& n, const std::string& detail) {
  throw compute_error("decimal overflow in " + to_string(expr(std::make_shared<expr_node>(n))) + ": " + detail + " (" +
                      to_string(n.dtype) + " holds " + std::to_string(n.dtype.precision) + " digits)");
}

std::string describe_value(const column& c, int64_t i) {
  std::string v = format_value(c, i);
  return c.type().id == type_id::string ? "\"" + v + "\"" : v;
}

column blend(const std::vector<uint8_t>& pick, const column& a, const column& b, int64_t rows, memory_resource* mr) {
  const data_type& type = a.type();
  TUG_EXPECTS(type == b.type() && a.size() == rows && b.size() == rows, "blend of mismatched columns");
  const uint8_t* pk = pick.data();
  null_mask m(rows, mr);
  if (a.has_nulls() || b.has_nulls())
    for (int64_t i = 0; i < rows; ++i)
      if (pk[i] ? a.is_null(i) : b.is_null(i)) m.clear(i);
  return type_dispatch(type.id, [&]<type_id Id>() -> column {
    using T = storage_t<Id>;
    if constexpr (Id == type_id::string) {
      auto va = a.view(), vb = b.view();
      string_builder sb(rows, 0, mr);
      for (int64_t i = 0; i < rows; ++i) {
        if (!m.is_valid(i)) sb.append_null();
        else sb.append(pk[i] ? va.string(i) : vb.string(i));
      }
      return sb.finish(type);
    } else {
      output<T> out(rows, mr);
      const T* x = a.values<T>();
      const T* y = b.values<T>();
      for (int64_t i = 0; i < rows; ++i) out.p[i] = pk[i] ? x[i] : y[i];
      return out.finish(type, rows, m);
    }
  });
}

namespace {

column validity_column(const operand& a, int64_t rows, bool want_valid, memory_resource* mr) {
  output<bool> out(rows, mr);
  const column& c = a.col;
  if (a.scalar) {
    std::memset(out.p, c.is_valid(0) == want_valid ? 1 : 0, static_cast<size_t>(rows));
  } else if (!c.has_nulls()) {
    std::memset(out.p, want_valid ? 1 : 0, static_cast<size_t>(rows));
  } else {
    auto v = c.view();
    for (int64_t i = 0; i < rows; ++i) out.p[i] = v.is_valid(i) == want_valid;
  }
  null_mask none(rows, mr);
  return out.finish(type_id::boolean, rows, none);
}

column is_nan(const operand& a, int64_t rows, memory_resource* mr) {
  null_mask m(rows, mr);
  if (a.null_scalar()) return make_null_column(type_id::boolean, rows, mr);
  m.and_with(a);
  output<bool> out(rows, mr);
  type_dispatch(a.col.type().id, [&]<type_id Id>() {
    using T = storage_t<Id>;
    if constexpr (is_float_v<T>) {
      const T* x = a.col.values<T>();
      for (int64_t i = 0; i < rows; ++i) out.p[i] = std::isnan(x[a.scalar ? 0 : i]);
    } else {
      throw internal_error("is_nan of a non-floating column reached the evaluator");
    }
  });
  return out.finish(type_id::boolean, rows, m);
}

// First valid of `x`, else `v` (a full column, or a non-null scalar).
column fill(const column& x, const operand& v, int64_t rows, memory_resource* mr) {
  if (!x.has_nulls()) return x;
  auto xv = x.view();
  if (v.scalar && x.type().id != type_id::string) {
    return type_dispatch(x.type().id, [&]<type_id Id>() -> column {
      using T = storage_t<Id>;
      if constexpr (Id == type_id::string) {
        throw internal_error("fill_null: string scalar path");
      } else {
        output<T> out(rows, mr);
        const T* p = x.values<T>();
        const T f = v.col.value<T>(0);
        for (int64_t i = 0; i < rows; ++i) out.p[i] = xv.is_valid(i) ? p[i] : f;
        null_mask none(rows, mr);
        return out.finish(x.type(), rows, none);
      }
    });
  }
  std::vector<uint8_t> pick(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) pick[static_cast<size_t>(i)] = xv.is_valid(i);
  return blend(pick, x, materialize(v, rows, mr), rows, mr);
}

}  // namespace

column eval_nulls(const expr_node& n, const std::vector<operand>& args, int64_t rows, memory_resource* mr) {
  switch (n.func) {
    case fn::is_null: return validity_column(args[0], rows, false, mr);
    case fn::is_not_null: return validity_column(args[0], rows, true, mr);
    case fn::is_nan: return is_nan(args[0], rows, mr);
    case fn::fill_null:
    case fn::coalesce: {
      column acc = materialize(args[0], rows, mr);
      for (size_t k = 1; k < args.size() && acc.has_nulls(); ++k) {
        if (args[k].null_scalar()) continue;
        acc = fill(acc, args[k], rows, mr);
      }
      return acc;
    }
    default: break;
  }
  throw internal_error(std::string("eval_nulls: unexpected function ") + to_string(n.func));
}

}  // namespace tug::cpu::detail
