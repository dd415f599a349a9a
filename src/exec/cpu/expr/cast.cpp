// Casts between types (rules in docs/types.md). Numeric casts run in two one-level dispatches over
// chunks of rows: the source type widens a chunk into a canonical form (int64, uint64, double or
// unscaled int128), then the target type narrows it with range checks. This keeps to one dispatch
// level and still runs tight loops.
#include <charconv>
#include <cmath>
#include <limits>

#include "exec/float_text.hpp"
#include "kernels.hpp"
#include "parse_decimal.hpp"
#include "tug/core/scalar.hpp"
#include "tug/core/temporal.hpp"
#include "tug/exec/cpu/evaluate.hpp"

namespace tug::cpu {

namespace detail {
namespace {

constexpr int64_t chunk_rows = 1024;

enum class canon : uint8_t { i64, u64, f64, i128 };

struct chunk {
  canon kind = canon::i64;
  int scale = 0;  ///< i128 only
  union {
    int64_t i[chunk_rows];
    uint64_t u[chunk_rows];
    double f[chunk_rows];
    __int128 d[chunk_rows];
  };
  chunk() {}
};

// Bookkeeping of one cast: the output validity and the failure policy.
struct cast_state {
  const column& src;
  const data_type& to;
  bool strict;
  null_mask mask;

  cast_state(const column& c, const data_type& t, bool s, memory_resource* mr)
      : src(c), to(t), strict(s), mask(c.size(), mr) {
    mask.and_with(c);
  }
  /// Row `i` does not convert: raise when strict, else null it. Null rows never fail.
  void fail(int64_t i) {
    if (!mask.is_valid(i)) return;
    if (strict)
      throw compute_error("strict cast from " + to_string(src.type()) + " to " + to_string(to) + " failed for value " +
                          describe_value(src, i) + " (use a non-strict cast to get null instead)");
    mask.clear(i);
  }
};

// Rescales an unscaled decimal from scale `from` to `to`, rounding half away from zero.
bool rescale(__int128 v, int from, int to, __int128& out) {
  if (to >= from) return !__builtin_mul_overflow(v, pow10_i128(to - from), &out);
  __int128 p = pow10_i128(from - to), q = v / p, r = v % p;
  if (2 * r >= p) ++q;
  else if (-2 * r >= p) --q;
  out = q;
  return true;
}

// ---- stage 1: source values -> canonical chunk ---------------------------------------------------

using load_fn = void (*)(const column& c, int64_t start, int64_t len, chunk& ch);

template <typename T>
void load(const column& c, int64_t start, int64_t len, chunk& ch) {
  const T* x = c.values<T>() + start;
  if constexpr (std::is_same_v<T, __int128>) {
    ch.kind = canon::i128;
    ch.scale = c.type().scale;
    for (int64_t i = 0; i < len; ++i) ch.d[i] = x[i];
  } else if constexpr (is_float_v<T>) {
    ch.kind = canon::f64;
    for (int64_t i = 0; i < len; ++i) ch.f[i] = x[i];
  } else if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
    ch.kind = canon::u64;
    for (int64_t i = 0; i < len; ++i) ch.u[i] = x[i];
  } else {
    ch.kind = canon::i64;
    for (int64_t i = 0; i < len; ++i) ch.i[i] = x[i];
  }
}

load_fn loader_for(type_id id) {
  return type_dispatch(id, [&]<type_id Id>() -> load_fn {
    if constexpr (Id == type_id::string) throw internal_error("numeric cast from a string column");
    else return &load<storage_t<Id>>;
  });
}

// ---- stage 2: canonical chunk -> target values ---------------------------------------------------

template <typename T>
bool int_from_double(double v, T& out) {
  double t = std::trunc(v);
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  // 2^bits (unsigned) or 2^(bits-1) (signed): exact in double
  constexpr double hi = std::is_signed_v<T> ? -lo : 2.0 * (static_cast<double>(std::numeric_limits<T>::max() / 2) + 1);
  if (!(t >= lo && t < hi)) return false;  // also rejects NaN
  out = static_cast<T>(t);
  return true;
}

template <typename T, typename V>
bool int_in_range(V v) {
  const __int128 w = v;
  return w >= static_cast<__int128>(std::numeric_limits<T>::min()) &&
         w <= static_cast<__int128>(std::numeric_limits<T>::max());
}

// Converts one canonical value to T; false when it does not fit.
template <typename T, typename K>
bool convert(K v, int from_scale, const data_type& to, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    out = v != 0;
    return true;
  } else if constexpr (is_float_v<T>) {
    if constexpr (std::is_same_v<K, __int128>)
      out = float_text::decimal_to_float<T>(v, from_scale);
    else out = static_cast<T>(v);
    return true;
  } else if constexpr (std::is_same_v<T, __int128>) {
    __int128 r;
    if constexpr (std::is_same_v<K, double>) {
      double s = std::round(v * std::pow(10.0, to.scale));
      if (!(std::fabs(s) < 1.7e38)) return false;
      r = static_cast<__int128>(s);
    } else if constexpr (std::is_same_v<K, __int128>) {
      if (!rescale(v, from_scale, to.scale, r)) return false;
    } else {
      if (__builtin_mul_overflow(static_cast<__int128>(v), pow10_i128(to.scale), &r)) return false;
    }
    if (!fits_precision(r, to.precision)) return false;
    out = r;
    return true;
  } else {
    if constexpr (std::is_same_v<K, double>) {
      return int_from_double<T>(v, out);
    } else {
      if constexpr (std::is_same_v<K, __int128>) v /= pow10_i128(from_scale);  // truncates toward zero
      if (!int_in_range<T>(v)) return false;
      out = static_cast<T>(v);
      return true;
    }
  }
}

template <typename T, typename K>
void store_from(const K* src, int from_scale, T* dst, int64_t base, int64_t len, cast_state& st) {
  for (int64_t i = 0; i < len; ++i)
    if (!convert<T, K>(src[i], from_scale, st.to, dst[i])) {
      dst[i] = T{};
      st.fail(base + i);
    }
}

column numeric_cast(const column& c, const data_type& to, bool strict, memory_resource* mr) {
  const int64_t n = c.size();
  cast_state st(c, to, strict, mr);
  load_fn ld = loader_for(c.type().id);
  auto ch = std::make_unique<chunk>();
  return type_dispatch(to.id, [&]<type_id Id>() -> column {
    using T = storage_t<Id>;
    if constexpr (Id == type_id::string) {
      throw internal_error("numeric cast to a string column");
    } else {
      output<T> out(n, mr);
      for (int64_t start = 0; start < n; start += chunk_rows) {
        int64_t len = std::min(chunk_rows, n - start);
        ld(c, start, len, *ch);
        T* d = out.p + start;
        switch (ch->kind) {
          case canon::i64: store_from<T>(ch->i, 0, d, start, len, st); break;
          case canon::u64: store_from<T>(ch->u, 0, d, start, len, st); break;
          case canon::f64: store_from<T>(ch->f, 0, d, start, len, st); break;
          case canon::i128: store_from<T>(ch->d, ch->scale, d, start, len, st); break;
        }
      }
      return out.finish(to, n, st.mask);
    }
  });
}

// ---- temporal <-> temporal -------------------------------------------------------------------

// Ticks of `from` (int64) into `to` units: multiply for a finer unit, divide (floor, or toward zero
// for durations) for a coarser one.
bool change_unit(int64_t v, int64_t from_tps, int64_t to_tps, bool floor, int64_t& out) {
  if (to_tps >= from_tps) return !__builtin_mul_overflow(v, to_tps / from_tps, &out);
  int64_t f = from_tps / to_tps;
  out = floor ? temporal::floor_div(v, f) : v / f;
  return true;
}

column temporal_cast(const column& c, const data_type& to, bool strict, memory_resource* mr) {
  const data_type& from = c.type();
  const int64_t n = c.size();
  cast_state st(c, to, strict, mr);
  if (from.id == type_id::date32) {  // -> timestamp
    output<int64_t> out(n, mr);
    const int32_t* x = c.values<int32_t>();
    const int64_t day = 86400 * ticks_per_second(to.unit);
    for (int64_t i = 0; i < n; ++i)
      if (__builtin_mul_overflow(static_cast<int64_t>(x[i]), day, &out.p[i])) st.fail(i);
    return out.finish(to, n, st.mask);
  }
  const int64_t* x = c.values<int64_t>();
  if (to.id == type_id::date32) {  // timestamp ->
    output<int32_t> out(n, mr);
    const int64_t day = 86400 * ticks_per_second(from.unit);
    for (int64_t i = 0; i < n; ++i) {
      int64_t d = temporal::floor_div(x[i], day);
      out.p[i] = static_cast<int32_t>(d);
      if (!int_in_range<int32_t>(d)) st.fail(i);
    }
    return out.finish(to, n, st.mask);
  }
  TUG_EXPECTS(from.id == to.id, "temporal cast between " + to_string(from) + " and " + to_string(to));
  if (from.unit == to.unit)  // only the time zone label changes
    return column(to, n, c.data_buffer(), c.validity_buffer(), c.null_count(), {}, c.offset());
  output<int64_t> out(n, mr);
  const int64_t ft = ticks_per_second(from.unit), tt = ticks_per_second(to.unit);
  const bool floor = from.id == type_id::timestamp;
  for (int64_t i = 0; i < n; ++i)
    if (!change_unit(x[i], ft, tt, floor, out.p[i])) st.fail(i);
  return out.finish(to, n, st.mask);
}

// ---- anything -> string ----------------------------------------------------------------------

column format_column(const column& c, const data_type& to, memory_resource* mr) {
  const int64_t n = c.size();
  string_builder sb(n, n * 8, mr);
  type_dispatch(c.type().id, [&]<type_id Id>() {
    using T = storage_t<Id>;
    if constexpr (is_int_v<T> && Id != type_id::date32 && Id != type_id::timestamp && Id != type_id::duration) {
      const T* x = c.values<T>();
      char buf[24];
      for (int64_t i = 0; i < n; ++i) {
        if (c.is_null(i)) {
          sb.append_null();
          continue;
        }
        auto r = std::to_chars(buf, buf + sizeof buf, x[i]);
        sb.append(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
      }
    } else if constexpr (Id == type_id::boolean) {
      const bool* x = c.values<bool>();
      for (int64_t i = 0; i < n; ++i) {
        if (c.is_null(i)) sb.append_null();
        else sb.append(x[i] ? "true" : "false");
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (c.is_null(i)) sb.append_null();
        else sb.append(format_value(c, i));
      }
    }
  });
  return sb.finish(to);
}

// ---- string -> anything ----------------------------------------------------------------------

/// An optional '+', then std::from_chars over the whole string. Floats: the CUDA evaluator's
/// float_text::parse_float gives the same results (FloatText.Parse* test it against from_chars);
/// from_chars is 2 to 7 times faster on the host.
template <typename T>
bool parse_number(std::string_view s, T& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

template <type_id Id>
bool parse_value(std::string_view s, const data_type& to, storage_t<Id>& out) {
  using T = storage_t<Id>;
  if constexpr (Id == type_id::boolean) {
    if (s == "true") out = true;
    else if (s == "false") out = false;
    else return false;
    return true;
  } else if constexpr (Id == type_id::decimal128) {
    return parse_decimal(s.data(), static_cast<int64_t>(s.size()), to.scale, to.precision, out);
  } else if constexpr (Id == type_id::date32) {
    int64_t days;
    if (!temporal::parse_date(std::string(s), days) || !int_in_range<int32_t>(days)) return false;
    out = static_cast<int32_t>(days);
    return true;
  } else if constexpr (Id == type_id::timestamp) {
    return temporal::parse_timestamp(std::string(s), ticks_per_second(to.unit), out);
  } else if constexpr (Id == type_id::duration) {
    std::string unit = to_string(to.unit);
    if (s.size() > unit.size() && s.substr(s.size() - unit.size()) == unit) s.remove_suffix(unit.size());
    return parse_number<int64_t>(s, out);
  } else if constexpr (is_int_v<T> || is_float_v<T>) {
    return parse_number<T>(s, out);
  } else {
    return false;
  }
}

column parse_column(const column& c, const data_type& to, bool strict, memory_resource* mr) {
  const int64_t n = c.size();
  cast_state st(c, to, strict, mr);
  auto v = c.view();
  return type_dispatch(to.id, [&]<type_id Id>() -> column {
    using T = storage_t<Id>;
    if constexpr (Id == type_id::string) {
      return c;
    } else {
      output<T> out(n, mr);
      for (int64_t i = 0; i < n; ++i) {
        out.p[i] = T{};
        if (st.mask.is_valid(i) && !parse_value<Id>(v.string(i), to, out.p[i])) st.fail(i);
      }
      return out.finish(to, n, st.mask);
    }
  });
}

bool is_time_like(type_id id) { return is_temporal(id) || id == type_id::duration; }

}  // namespace
}  // namespace detail

column cast(const column& c, const data_type& to, bool strict, memory_resource* mr) {
  const data_type& from = c.type();
  if (from == to) return c;
  if (to.id == type_id::string) return detail::format_column(c, to, mr);
  if (from.id == type_id::string) return detail::parse_column(c, to, strict, mr);
  if (detail::is_time_like(from.id) && detail::is_time_like(to.id)) return detail::temporal_cast(c, to, strict, mr);
  return detail::numeric_cast(c, to, strict, mr);
}

}  // namespace tug::cpu
