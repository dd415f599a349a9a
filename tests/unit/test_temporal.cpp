// Temporal kernels (fn::dt_*, temporal add/sub), called directly through the evaluator's internal interface.
#include <gtest/gtest.h>

#include "../../src/exec/cpu/expr/functions.hpp"
#include "test_util.hpp"
#include "tug/core/temporal.hpp"
#include "tug/expr/resolve.hpp"

using namespace tug;
using tug::cpu::detail::eval_temporal_arith;
using tug::cpu::detail::eval_temporal_function;

namespace {

using opt64 = std::optional<int64_t>;
using opt32 = std::optional<int32_t>;
constexpr auto none = std::nullopt;
const time_unit kUnits[] = {time_unit::s, time_unit::ms, time_unit::us, time_unit::ns};

column dates(const std::vector<opt32>& v) { return make_column<int32_t>(type_id::date32, v); }
column ts(time_unit u, const std::vector<opt64>& v) { return make_column<int64_t>(timestamp(u), v); }
column dur(time_unit u, const std::vector<opt64>& v) { return make_column<int64_t>(duration(u), v); }

/// Resolves `e` over a schema with date "d", "d2", timestamp "t", "t2" of unit `u` and duration "u"
/// of unit `du`, and evaluates its root function over `args`.
column eval(const expr& e, std::vector<column> args, time_unit u = time_unit::us, time_unit du = time_unit::us) {
  schema s({{"d", type_id::date32}, {"d2", type_id::date32}, {"t", timestamp(u)}, {"t2", timestamp(u)},
            {"u", duration(du)}, {"u2", duration(du)}});
  expr r = resolve(e, s);
  if (r->func == fn::add || r->func == fn::sub)
    return eval_temporal_arith(r.node(), args.at(0), args.at(1), default_host_resource());
  return eval_temporal_function(r.node(), args, default_host_resource());
}

/// `us` (microseconds) in ticks of `u`, floored.
int64_t from_us(int64_t us, time_unit u) {
  const int64_t tps = ticks_per_second(u);
  return tps >= 1000000 ? us * (tps / 1000000) : temporal::floor_div(us, 1000000 / tps);
}

// 1969-12-31 23:59:59.5 | 2000-02-29 13:45:30.25 | 1900-03-01 | 1970-01-01 | null
const std::vector<opt64> kInstantsUs = {-500000, 951831930250000, -2203891200000000, 0, none};

column instants(time_unit u) {
  std::vector<opt64> v;
  for (auto x : kInstantsUs) v.push_back(x ? opt64(from_us(*x, u)) : none);
  return ts(u, v);
}

column i32s(const std::vector<opt32>& v) { return i32(v); }

}  // namespace

TEST(Temporal, DateParts) {
  // 2000-02-29 | 1969-12-31 | 1900-01-01 | 2024-12-31 | 1600-02-29 | 1900-03-01 | 1970-01-01 | null
  column d = dates({11016, -1, -25567, 20088, -135081, -25508, 0, none});
  expect_columns_equal(eval(col("d").dt_year(), {d}), i32s({2000, 1969, 1900, 2024, 1600, 1900, 1970, none}));
  expect_columns_equal(eval(col("d").dt_month(), {d}), i32s({2, 12, 1, 12, 2, 3, 1, none}));
  expect_columns_equal(eval(col("d").dt_day(), {d}), i32s({29, 31, 1, 31, 29, 1, 1, none}));
  expect_columns_equal(eval(col("d").dt_weekday(), {d}), i32s({2, 3, 1, 2, 2, 4, 4, none}));
  expect_columns_equal(eval(col("d").dt_date(), {d}), d);
  expect_columns_equal(eval(col("d").dt_year(), {dates({})}), i32s({}));
  expect_columns_equal(eval(col("d").dt_year(), {make_null_column(type_id::date32, 3)}), i32s({none, none, none}));
}

TEST(Temporal, TimestampPartsAllUnits) {
  for (time_unit u : kUnits) {
    SCOPED_TRACE(to_string(u));
    column t = instants(u);
    expect_columns_equal(eval(col("t").dt_year(), {t}, u), i32s({1969, 2000, 1900, 1970, none}));
    expect_columns_equal(eval(col("t").dt_month(), {t}, u), i32s({12, 2, 3, 1, none}));
    expect_columns_equal(eval(col("t").dt_day(), {t}, u), i32s({31, 29, 1, 1, none}));
    expect_columns_equal(eval(col("t").dt_weekday(), {t}, u), i32s({3, 2, 4, 4, none}));
    expect_columns_equal(eval(col("t").dt_hour(), {t}, u), i32s({23, 13, 0, 0, none}));
    expect_columns_equal(eval(col("t").dt_minute(), {t}, u), i32s({59, 45, 0, 0, none}));
    expect_columns_equal(eval(col("t").dt_second(), {t}, u), i32s({59, 30, 0, 0, none}));
    expect_columns_equal(eval(col("t").dt_date(), {t}, u), dates({-1, 11016, -25508, 0, none}));
    // sliced input: rows 1..3
    expect_columns_equal(eval(col("t").dt_hour(), {t.slice(1, 3)}, u), i32s({13, 0, 0}));
  }
  // the time zone is metadata: parts are those of the UTC instant
  column tz = make_column<int64_t>(timestamp(time_unit::ms, "Europe/Paris"), std::vector<opt64>{-500});
  schema s({{"t", timestamp(time_unit::ms, "Europe/Paris")}});
  expect_columns_equal(eval_temporal_function(resolve(col("t").dt_hour(), s).node(), {tz}, default_host_resource()),
                       i32s({23}));
}

TEST(Temporal, TruncateTimestampsAllUnits) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"1d", {-86400000000, 951782400000000, -2203891200000000, 0}},
      {"7d", {-604800000000, 951350400000000, -2203891200000000, 0}},
      {"1h", {-3600000000, 951829200000000, -2203891200000000, 0}},
      {"15m", {-900000000, 951831900000000, -2203891200000000, 0}},
      {"1s", {-1000000, 951831930000000, -2203891200000000, 0}},
      {"1w", {-259200000000, 951696000000000, -2204150400000000, -259200000000}},
      {"2w", {-864000000000, 951091200000000, -2204755200000000, -864000000000}},
      {"1mo", {-2678400000000, 949363200000000, -2203891200000000, 0}},
      {"3mo", {-7948800000000, 946684800000000, -2208988800000000, 0}},
      {"1q", {-7948800000000, 946684800000000, -2208988800000000, 0}},
      {"1y", {-31536000000000, 946684800000000, -2208988800000000, 0}},
      {"2y", {-63158400000000, 946684800000000, -2208988800000000, 0}},
      {"1h30m", {-5400000000, 951831000000000, -2203891200000000, 0}},
  };
  for (time_unit u : kUnits) {
    column t = instants(u);
    for (const auto& [every, exp_us] : cases) {
      SCOPED_TRACE(to_string(u) + " " + every);
      std::vector<opt64> exp;
      for (int64_t x : exp_us) exp.push_back(from_us(x, u));
      exp.push_back(none);
      expect_columns_equal(eval(col("t").dt_truncate(every), {t}, u), ts(u, exp));
    }
  }
  // sub-second intervals
  column ms = ts(time_unit::ms, {-500, 951831930250, -1, none});
  expect_columns_equal(eval(col("t").dt_truncate("1ms"), {ms}, time_unit::ms), ms);
  expect_columns_equal(eval(col("t").dt_truncate("1ns"), {ms}, time_unit::ms), ms);
  expect_columns_equal(eval(col("t").dt_truncate("200ms"), {ms}, time_unit::ms),
                       ts(time_unit::ms, {-600, 951831930200, -200, none}));
  // 1.5 ms is not a whole number of ms ticks: truncated in nanoseconds, then floored to ms
  expect_columns_equal(eval(col("t").dt_truncate("1500us"), {ms}, time_unit::ms),
                       ts(time_unit::ms, {-501, 951831930249, -2, none}));
  column ns = ts(time_unit::ns, {-499999999, 1, none, 1999});
  expect_columns_equal(eval(col("t").dt_truncate("250ms"), {ns}, time_unit::ns),
                       ts(time_unit::ns, {-500000000, 0, none, 0}));
  expect_columns_equal(eval(col("t").dt_truncate("1us"), {ns}, time_unit::ns), ts(time_unit::ns, {-500000000, 0, none, 1000}));
}

TEST(Temporal, TruncateDates) {
  // 1969-12-31 (Wed) | 2000-02-29 (Tue) | 1900-03-01 (Thu) | 1970-01-01 (Thu) | null | 1970-01-02
  column d = dates({-1, 11016, -25508, 0, none, 1});
  expect_columns_equal(eval(col("d").dt_truncate("1w"), {d}), dates({-3, 11015, -25511, -3, none, -3}));
  expect_columns_equal(eval(col("d").dt_truncate("1mo"), {d}), dates({-31, 10988, -25508, 0, none, 0}));
  expect_columns_equal(eval(col("d").dt_truncate("1y"), {d}), dates({-365, 10957, -25567, 0, none, 0}));
  expect_columns_equal(eval(col("d").dt_truncate("1d"), {d}), d);
  expect_columns_equal(eval(col("d").dt_truncate("12h"), {d}), d);
  expect_columns_equal(eval(col("d").dt_truncate("2d"), {d}), dates({-2, 11016, -25508, 0, none, 0}));
  // midnight of day -1 floors to 1969-12-30 21:00 with 7-hour steps from the epoch
  expect_columns_equal(eval(col("d").dt_truncate("7h"), {d.slice(5, 1)}), dates({0}));
  expect_columns_equal(eval(col("d").dt_truncate("7h"), {d.slice(0, 1)}), dates({-2}));
}

TEST(Temporal, TruncateParseErrors) {
  column t = ts(time_unit::us, {1});
  for (std::string bad : {"", "1x", "d", "0d", "1d1h", "1mo1d", "-1d", "1.5h", "99999999999999999999d", "1 d"}) {
    try {
      eval(col("t").dt_truncate(bad), {t});
      FAIL() << "expected invalid_argument_error for \"" << bad << "\"";
    } catch (const invalid_argument_error& e) {
      EXPECT_NE(std::string(e.what()).find("\"" + bad + "\""), std::string::npos) << e.what();
    }
  }
  // fits in microseconds but not in nanoseconds
  EXPECT_NO_THROW(eval(col("t").dt_truncate("200000d"), {t}));
  EXPECT_THROW(eval(col("t").dt_truncate("200000d"), {ts(time_unit::ns, {1})}, time_unit::ns), invalid_argument_error);
}

TEST(Temporal, DurationTotals) {
  // per unit: 1.5 days, -1.5 days, 999 ms, -1 tick, null
  for (time_unit u : kUnits) {
    SCOPED_TRACE(to_string(u));
    const int64_t tps = ticks_per_second(u);
    column d = dur(u, {129600 * tps, -129600 * tps, tps >= 1000 ? 999 * (tps / 1000) : 0, -1, none});
    expect_columns_equal(eval(col("u").dt_total_days(), {d}, u, u), i64({1, -1, 0, 0, none}));
    expect_columns_equal(eval(col("u").dt_total_seconds(), {d}, u, u), i64({129600, -129600, 0, tps == 1 ? -1 : 0, none}));
    expect_columns_equal(eval(col("u").dt_total_milliseconds(), {d}, u, u),
                         i64({129600000, -129600000, tps >= 1000 ? 999 : 0, tps == 1 ? -1000 : tps == 1000 ? -1 : 0, none}));
  }
}

TEST(Temporal, DateArithmetic) {
  column a = dates({11016, -1, 0, none, 5});
  column b = dates({-1, 11016, 0, 3, none});
  const int64_t day_ms = 86400000;
  expect_columns_equal(eval(col("d") - col("d2"), {a, b}),
                       dur(time_unit::ms, {11017 * day_ms, -11017 * day_ms, 0, none, none}));
  // date +/- duration: the day of the resulting instant
  for (time_unit u : kUnits) {
    SCOPED_TRACE(to_string(u));
    const int64_t tps = ticks_per_second(u);
    column d = dur(u, {43200 * tps, 86400 * tps, -43200 * tps, 1, -1});  // 12h, 1d, -12h, +-1 tick
    column x = dates({0, -1, 11016, 0, none});
    expect_columns_equal(eval(col("d") + col("u"), {x, d}, u, u), dates({0, 0, 11015, 0, none}));
    expect_columns_equal(eval(col("d") - col("u"), {x, d}, u, u), dates({-1, -2, 11016, -1, none}));
    // duration + date is normalized by resolve to date + duration
    expect_columns_equal(eval(col("u") + col("d"), {x, d}, u, u), dates({0, 0, 11015, 0, none}));
  }
}

TEST(Temporal, TimestampArithmetic) {
  for (time_unit u : kUnits) {
    SCOPED_TRACE(to_string(u));
    column t = ts(u, {100, -5, none, 0});
    column t2 = ts(u, {-50, 10, 1, none});
    expect_columns_equal(eval(col("t") - col("t2"), {t, t2}, u), dur(u, {150, -15, none, none}));
    column d = dur(u, {7, -7, 1, 2});
    expect_columns_equal(eval(col("t") + col("u"), {t, d}, u, u), ts(u, {107, -12, none, 2}));
    expect_columns_equal(eval(col("t") - col("u"), {t, d}, u, u), ts(u, {93, 2, none, -2}));
    expect_columns_equal(eval(col("u") - col("u2"), {d.slice(0, 3), d.slice(1, 3)}, u, u),
                         dur(u, {14, -8, -1}));
    expect_columns_equal(eval(col("u") + col("u2"), {d, dur(u, {1, none, 1, 1})}, u, u), dur(u, {8, none, 2, 3}));
  }
  // mixed units: a finer duration truncates toward zero to the timestamp's unit
  column tms = ts(time_unit::ms, {1000, 1000, 1000});
  column dns = dur(time_unit::ns, {1999999, -1999999, 500});
  expect_columns_equal(eval(col("t") + col("u"), {tms, dns}, time_unit::ms, time_unit::ns), ts(time_unit::ms, {1001, 999, 1000}));
  expect_columns_equal(eval(col("t") - col("u"), {tms, dns}, time_unit::ms, time_unit::ns), ts(time_unit::ms, {999, 1001, 1000}));
  // a coarser duration scales up
  column tns = ts(time_unit::ns, {5, -5});
  column ds = dur(time_unit::s, {2, -1});
  expect_columns_equal(eval(col("t") + col("u"), {tns, ds}, time_unit::ns, time_unit::s), ts(time_unit::ns, {2000000005, -1000000005}));
  expect_columns_equal(eval(col("t") - col("u"), {tns, ds}, time_unit::ns, time_unit::s), ts(time_unit::ns, {-1999999995, 999999995}));
}

// Parts, truncation, arithmetic over generated rows of boundary sizes, plain and sliced (offset 3),
// against a reference that walks the calendar one day at a time.
class TemporalSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(TemporalSizes, PartsAndArithmetic) {
  const int64_t n = GetParam(), total = n + 3;
  const int64_t first = -40000, step = 71;  // 1860-07-08 onward, past 2100 (not a leap year)
  struct civil { int64_t y, m, d, wd; };
  auto leap = [](int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; };
  auto month_days = [&](int64_t y, int64_t m) {
    static const int len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : len[m - 1];
  };
  civil c{1970, 1, 1, 4};
  for (int64_t k = 0; k > first; --k) {  // walk back to `first`
    c.wd = c.wd == 1 ? 7 : c.wd - 1;
    if (--c.d == 0) {
      if (--c.m == 0) c.m = 12, --c.y;
      c.d = month_days(c.y, c.m);
    }
  }
  std::vector<civil> ref;
  std::vector<opt32> days;
  for (int64_t i = 0; i < total; ++i) {
    ref.push_back(c);
    days.push_back(i % 4 == 2 ? opt32() : opt32(static_cast<int32_t>(first + i * step)));
    for (int64_t k = 0; k < step; ++k) {
      c.wd = c.wd % 7 + 1;
      if (++c.d > month_days(c.y, c.m)) {
        c.d = 1;
        if (++c.m == 13) c.m = 1, ++c.y;
      }
    }
  }
  column dfull = dates(days);
  for (time_unit u : kUnits) {
    const int64_t tps = ticks_per_second(u);
    std::vector<opt64> ticks;
    for (int64_t i = 0; i < total; ++i)
      ticks.push_back(days[i] ? opt64((*days[i] * int64_t{86400} + (i * 7919) % 86400) * tps + (tps > 1 ? i % tps : 0)) : none);
    column tfull = ts(u, ticks);
    for (int64_t off : {int64_t{0}, int64_t{3}}) {
      SCOPED_TRACE(to_string(u) + " offset " + std::to_string(off));
      column d = dfull.slice(off, n), t = tfull.slice(off, n);
      std::vector<opt32> year, month, day, wd, hour, minute, second, date;
      std::vector<opt64> trunc_mo, plus_day;
      std::vector<opt32> date_minus;
      for (int64_t i = off; i < off + n; ++i) {
        if (!days[i]) {
          for (auto* v : {&year, &month, &day, &wd, &hour, &minute, &second, &date, &date_minus}) v->push_back(none);
          trunc_mo.push_back(none), plus_day.push_back(none);
          continue;
        }
        const civil& r = ref[static_cast<size_t>(i)];
        const int64_t sod = (i * 7919) % 86400;
        year.push_back(r.y), month.push_back(r.m), day.push_back(r.d), wd.push_back(r.wd);
        hour.push_back(sod / 3600), minute.push_back(sod / 60 % 60), second.push_back(sod % 60), date.push_back(*days[i]);
        trunc_mo.push_back((*days[i] - (r.d - 1)) * 86400 * tps);
        plus_day.push_back(*ticks[i] + 86400 * tps);
        date_minus.push_back(*days[i] - 1);  // minus 1 tick lands on the previous day
      }
      expect_columns_equal(eval(col("d").dt_year(), {d}), i32s(year), "date year");
      expect_columns_equal(eval(col("d").dt_month(), {d}), i32s(month), "date month");
      expect_columns_equal(eval(col("d").dt_day(), {d}), i32s(day), "date day");
      expect_columns_equal(eval(col("d").dt_weekday(), {d}), i32s(wd), "date weekday");
      expect_columns_equal(eval(col("t").dt_year(), {t}, u), i32s(year), "year");
      expect_columns_equal(eval(col("t").dt_month(), {t}, u), i32s(month), "month");
      expect_columns_equal(eval(col("t").dt_day(), {t}, u), i32s(day), "day");
      expect_columns_equal(eval(col("t").dt_weekday(), {t}, u), i32s(wd), "weekday");
      expect_columns_equal(eval(col("t").dt_hour(), {t}, u), i32s(hour), "hour");
      expect_columns_equal(eval(col("t").dt_minute(), {t}, u), i32s(minute), "minute");
      expect_columns_equal(eval(col("t").dt_second(), {t}, u), i32s(second), "second");
      expect_columns_equal(eval(col("t").dt_date(), {t}, u), dates(date), "date");
      expect_columns_equal(eval(col("t").dt_truncate("1mo"), {t}, u), ts(u, trunc_mo), "truncate 1mo");
      column one_day = scalar(duration(u), int64_t{86400 * tps}).to_column(n);
      expect_columns_equal(eval(col("t") + col("u"), {t, one_day}, u, u), ts(u, plus_day), "t + 1d");
      column one_tick = scalar(duration(u), int64_t{1}).to_column(n);
      expect_columns_equal(eval(col("d") - col("u"), {d, one_tick}, u, u), dates(date_minus), "d - 1 tick");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, TemporalSizes, ::testing::Values(0, 1, 31, 32, 33, 1024));
