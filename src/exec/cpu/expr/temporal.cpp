// Temporal kernels (fn::dt_*, date/timestamp/duration arithmetic) of the CPU expression evaluator.
// Time zones are metadata only: tz-aware timestamps are computed in UTC. Semantics:
// docs/strings_temporal.md.
#include <cctype>

#include "functions.hpp"
#include "strtemp_util.hpp"
#include "truncate.hpp"
#include "tug/core/temporal.hpp"

namespace tug::cpu::detail {

namespace {

using temporal::floor_div;
using temporal::floor_mod;

constexpr int64_t seconds_per_day = 86400;

// Two's complement wrap-around (as Polars' release builds), without signed-overflow UB.
inline int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
inline int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
inline int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

/// Ticks per second of a temporal column: date32 counts days and is handled through seconds.
int64_t tps_of(const column& c) { return ticks_per_second(c.type().unit); }

/// A date32 or timestamp column mapped through `f(day number) -> Out`.
template <typename Out, typename F>
column per_day(const column& c, const data_type& out, memory_resource* mr, F f) {
  if (c.type().id == type_id::date32) {
    const int32_t* v = c.values<int32_t>();
    return map_rows<Out>(out, c.size(), {&c}, mr, [&](int64_t i) { return static_cast<Out>(f(int64_t{v[i]})); });
  }
  const int64_t* v = c.values<int64_t>();
  const int64_t tpd = seconds_per_day * tps_of(c);
  return map_rows<Out>(out, c.size(), {&c}, mr, [&](int64_t i) { return static_cast<Out>(f(floor_div(v[i], tpd))); });
}

/// An int64 column (timestamp or duration) mapped through `f(ticks) -> Out`.
template <typename Out, typename F>
column per_tick(const column& c, const data_type& out, memory_resource* mr, F f) {
  const int64_t* v = c.values<int64_t>();
  return map_rows<Out>(out, c.size(), {&c}, mr, [&](int64_t i) { return static_cast<Out>(f(v[i])); });
}

// ---- truncate ---------------------------------------------------------------------------------------

/// A truncation interval, as Polars splits durations: calendar months, weeks, days and a fixed part.
struct every_spec {
  int64_t months = 0, weeks = 0, days = 0, nanos = 0;
};

[[noreturn]] void bad_every(const std::string& every, const std::string& why) {
  throw invalid_argument_error("dt.truncate: invalid duration \"" + every + "\": " + why +
                               " (expected one or more <n><unit> with units y, q, mo, w, d, h, m, s, ms, us, ns, "
                               "e.g. \"1d\", \"15m\", \"1mo\")");
}

/// Parses "<n><unit>[<n><unit>...]". @throws invalid_argument_error naming the string.
every_spec parse_every(const std::string& s) {
  every_spec e;
  size_t i = 0;
  if (s.empty()) bad_every(s, "it is empty");
  while (i < s.size()) {
    int64_t v = 0;
    size_t j = i;
    for (; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j)
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[j] - '0', &v)) bad_every(s, "number too large");
    if (j == i) bad_every(s, "expected a number at position " + std::to_string(i));
    size_t k = j;
    while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
    const std::string_view u(s.data() + j, k - j);
    int64_t* field = &e.nanos;
    int64_t mult = 1;
    if (u == "y") field = &e.months, mult = 12;
    else if (u == "q") field = &e.months, mult = 3;
    else if (u == "mo") field = &e.months;
    else if (u == "w") field = &e.weeks;
    else if (u == "d") field = &e.days;
    else if (u == "h") mult = 3600'000'000'000;
    else if (u == "m") mult = 60'000'000'000;
    else if (u == "s") mult = 1'000'000'000;
    else if (u == "ms") mult = 1'000'000;
    else if (u == "us") mult = 1'000;
    else if (u != "ns") bad_every(s, u.empty() ? "missing unit" : "unknown unit \"" + std::string(u) + "\"");
    if (__builtin_mul_overflow(v, mult, &v) || __builtin_add_overflow(*field, v, field)) bad_every(s, "too large");
    i = k;
  }
  const int parts = (e.months > 0) + (e.weeks > 0) + (e.days > 0) + (e.nanos > 0);
  if (parts == 0) bad_every(s, "it must be positive");
  if (parts > 1) bad_every(s, "it may not mix months, weeks, days and time units");
  return e;
}

/// `a * b`, or invalid_argument_error naming the interval when it does not fit in int64 ticks.
int64_t checked_ticks(int64_t a, int64_t b, const std::string& every) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) bad_every(every, "too large for the column's time unit");
  return r;
}

}  // namespace

truncate_rule truncate_rule_of(const std::string& every, int64_t tps) {
  const every_spec e = parse_every(every);
  const int64_t tpd = seconds_per_day * tps;
  truncate_rule r;
  r.per_day = tpd;
  if (e.months) {
    r.kind = truncate_rule::months;
    r.every = e.months;
  } else if (e.weeks) {
    r.every = checked_ticks(e.weeks * 7, tpd, every);
    r.origin = 4 * tpd;  // 1970-01-01 is a Thursday: weeks count from Monday 1970-01-05
  } else if (e.days) {
    r.every = checked_ticks(e.days, tpd, every);
  } else if (e.nanos % (1'000'000'000 / tps) == 0) {
    r.every = e.nanos / (1'000'000'000 / tps);
  } else {
    r.kind = truncate_rule::nanos;
    r.every = e.nanos;
    r.ns_per_tick = 1'000'000'000 / tps;
  }
  return r;
}

namespace {

column truncate(const expr_node& n, const column& c, memory_resource* mr) {
  if (c.type().id == type_id::date32) {
    const truncate_rule r = truncate_rule_of(n.s0, 1);
    const int32_t* v = c.values<int32_t>();
    return map_rows<int32_t>(c.type(), c.size(), {&c}, mr, [&](int64_t i) { return truncate_days(v[i], r); });
  }
  const truncate_rule r = truncate_rule_of(n.s0, tps_of(c));
  return per_tick<int64_t>(c, c.type(), mr, [&](int64_t t) { return truncate_ticks(t, r); });
}

// ---- durations --------------------------------------------------------------------------------------

column total(fn f, const column& c, memory_resource* mr) {
  const int64_t tps = tps_of(c);
  switch (f) {
    case fn::dt_total_days: {
      const int64_t tpd = seconds_per_day * tps;
      return per_tick<int64_t>(c, type_id::int64, mr, [=](int64_t t) { return t / tpd; });
    }
    case fn::dt_total_seconds: return per_tick<int64_t>(c, type_id::int64, mr, [=](int64_t t) { return t / tps; });
    default: break;
  }
  if (tps >= 1000) {
    const int64_t div = tps / 1000;
    return per_tick<int64_t>(c, type_id::int64, mr, [=](int64_t t) { return t / div; });
  }
  const int64_t mul = 1000 / tps;
  return per_tick<int64_t>(c, type_id::int64, mr, [=](int64_t t) { return wrap_mul(t, mul); });
}

/// Two fixed-width columns zipped through `f(a, b) -> Out`.
template <typename Out, typename A, typename B, typename F>
column zip(const data_type& out, const column& a, const column& b, memory_resource* mr, F f) {
  const A* x = a.values<A>();
  const B* y = b.values<B>();
  return map_rows<Out>(out, a.size(), {&a, &b}, mr, [&](int64_t i) { return static_cast<Out>(f(x[i], y[i])); });
}

}  // namespace

column eval_temporal_function(const expr_node& n, const std::vector<column>& args, memory_resource* mr) {
  TUG_EXPECTS(args.size() == 1, std::string(to_string(n.func)) + " takes one argument");
  const column& c = args[0];
  const type_id id = c.type().id;
  const bool calendar = id == type_id::date32 || id == type_id::timestamp;
  auto need = [&](bool ok) {
    if (!ok) throw type_error(std::string(to_string(n.func)) + " is not supported for type " + to_string(c.type()));
  };
  const data_type i32 = type_id::int32;
  switch (n.func) {
    case fn::dt_year:
      need(calendar);
      return per_day<int32_t>(c, i32, mr, [](int64_t d) { return temporal::civil_from_days(d).year; });
    case fn::dt_month:
      need(calendar);
      return per_day<int32_t>(c, i32, mr, [](int64_t d) { return temporal::civil_from_days(d).month; });
    case fn::dt_day:
      need(calendar);
      return per_day<int32_t>(c, i32, mr, [](int64_t d) { return temporal::civil_from_days(d).day; });
    case fn::dt_weekday:
      need(calendar);
      return per_day<int32_t>(c, i32, mr, [](int64_t d) { return temporal::iso_weekday(d); });
    case fn::dt_date:
      need(calendar);
      if (id == type_id::date32) return c;
      return per_day<int32_t>(c, type_id::date32, mr, [](int64_t d) { return d; });
    case fn::dt_hour:
    case fn::dt_minute:
    case fn::dt_second: {
      need(id == type_id::timestamp);
      const int64_t tps = tps_of(c), tpd = seconds_per_day * tps;
      const int64_t per = tps * (n.func == fn::dt_hour ? 3600 : n.func == fn::dt_minute ? 60 : 1);
      const int64_t wrap = n.func == fn::dt_hour ? 24 : 60;
      return per_tick<int32_t>(c, i32, mr, [=](int64_t t) { return floor_mod(t, tpd) / per % wrap; });
    }
    case fn::dt_truncate: need(calendar); return truncate(n, c, mr);
    case fn::dt_total_days:
    case fn::dt_total_seconds:
    case fn::dt_total_milliseconds: need(id == type_id::duration); return total(n.func, c, mr);
    default: break;
  }
  throw internal_error(std::string("eval_temporal_function: ") + to_string(n.func) + " is not a temporal function");
}

column eval_temporal_arith(const expr_node& n, const column& a, const column& b, memory_resource* mr) {
  TUG_EXPECTS(n.func == fn::add || n.func == fn::sub, "eval_temporal_arith: not add/sub");
  TUG_EXPECTS(a.size() == b.size(), "eval_temporal_arith: operand lengths differ");
  const bool sub = n.func == fn::sub;
  const int64_t sign = sub ? -1 : 1;
  const type_id x = a.type().id, y = b.type().id;
  if (sub && x == type_id::date32 && y == type_id::date32) {
    return zip<int64_t, int32_t, int32_t>(n.dtype, a, b, mr, [](int64_t p, int64_t q) {
      return (p - q) * (seconds_per_day * 1000);
    });
  }
  if (sub && x == type_id::timestamp && y == type_id::timestamp) {
    TUG_EXPECTS(a.type().unit == b.type().unit, "timestamp - timestamp: units differ after resolve");
    return zip<int64_t, int64_t, int64_t>(n.dtype, a, b, mr, [](int64_t p, int64_t q) { return wrap_sub(p, q); });
  }
  if (x == type_id::date32 && y == type_id::duration) {
    // the result is the day of the instant date + duration (floor)
    const int64_t tpd = seconds_per_day * tps_of(b);
    return zip<int32_t, int32_t, int64_t>(n.dtype, a, b, mr, [=](int64_t d, int64_t dur) {
      return d + floor_div(wrap_mul(dur, sign), tpd);
    });
  }
  if (x == type_id::timestamp && y == type_id::duration) {
    const int64_t ta = tps_of(a), tb = tps_of(b);
    if (tb > ta) {  // a finer duration is truncated toward zero to the timestamp's unit, as a cast
      const int64_t div = tb / ta;
      return zip<int64_t, int64_t, int64_t>(n.dtype, a, b, mr, [=](int64_t t, int64_t dur) {
        return wrap_add(t, wrap_mul(dur / div, sign));
      });
    }
    const int64_t mul = sign * (ta / tb);
    return zip<int64_t, int64_t, int64_t>(n.dtype, a, b, mr, [=](int64_t t, int64_t dur) {
      return wrap_add(t, wrap_mul(dur, mul));
    });
  }
  if (x == type_id::duration && y == type_id::duration) {
    TUG_EXPECTS(a.type().unit == b.type().unit, "duration +/- duration: units differ after resolve");
    return zip<int64_t, int64_t, int64_t>(n.dtype, a, b, mr, [=](int64_t p, int64_t q) {
      return wrap_add(p, wrap_mul(q, sign));
    });
  }
  throw type_error(std::string("cannot apply ") + to_string(n.func) + " to " + to_string(a.type()) + " and " +
                   to_string(b.type()));
}

}  // namespace tug::cpu::detail
