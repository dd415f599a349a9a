#pragma once
// Reference aggregations for the aggregate and window tests: plain loops over optional values, with
// Polars semantics, to compare the engine's results against.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"

namespace tug::agg_ref {

/// An expected cell: null, an exact text (formatted as format_value does) or a float (compared with a
/// relative tolerance, NaN equal to NaN).
using cell = std::optional<std::variant<std::string, double>>;

inline cell text(std::string s) { return cell(std::in_place, std::move(s)); }
inline cell num(double d) { return cell(std::in_place, d); }
template <typename T>
cell opt_text(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) return text(*v);
  else if constexpr (std::is_same_v<T, bool>) return text(*v ? "true" : "false");
  else return text(std::to_string(*v));
}
inline cell opt_num(const std::optional<double>& v) { return v ? num(*v) : cell(); }

/// Asserts that cell (c, r) of `t` matches `e`.
inline void expect_cell(const table& t, size_t c, int64_t r, const cell& e, const std::string& what) {
  const column& col = t[c];
  if (!e) {
    EXPECT_TRUE(col.is_null(r)) << what << ": expected null, got " << format_value(col, r);
    return;
  }
  ASSERT_FALSE(col.is_null(r)) << what << ": unexpected null";
  if (auto* s = std::get_if<std::string>(&*e)) {
    EXPECT_EQ(format_value(col, r), *s) << what;
    return;
  }
  double want = std::get<double>(*e);
  ASSERT_EQ(col.type().id, type_id::float64) << what;
  double got = col.value<double>(r);
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": expected NaN, got " << got;
  } else {
    EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::abs(want))) << what;
  }
}

/// Compares groups: `expected` holds one row per group, the first `num_keys` cells being the key (as
/// text). With `ordered`, the rows must come in the same order; otherwise any order.
inline void expect_groups(const data_frame& actual, const std::vector<std::vector<cell>>& expected, size_t num_keys,
                          bool ordered) {
  table t = actual.to_table();
  ASSERT_EQ(t.num_rows(), static_cast<int64_t>(expected.size()));
  auto key_of_actual = [&](int64_t r) {
    std::string k;
    for (size_t c = 0; c < num_keys; ++c) k += format_value(t[c], r) + "|";
    return k;
  };
  auto key_of_expected = [&](const std::vector<cell>& row) {
    std::string k;
    for (size_t c = 0; c < num_keys; ++c) k += (row[c] ? std::get<std::string>(*row[c]) : "null") + "|";
    return k;
  };
  std::map<std::string, size_t> where;
  for (size_t i = 0; i < expected.size(); ++i) where[key_of_expected(expected[i])] = i;
  for (int64_t r = 0; r < t.num_rows(); ++r) {
    std::string k = key_of_actual(r);
    auto it = where.find(k);
    ASSERT_NE(it, where.end()) << "unexpected group " << k;
    if (ordered) ASSERT_EQ(it->second, static_cast<size_t>(r)) << "group " << k << " out of order";
    const auto& row = expected[it->second];
    ASSERT_EQ(row.size(), t.num_columns());
    for (size_t c = num_keys; c < row.size(); ++c)
      expect_cell(t, c, r, row[c], "group " + k + " column " + actual.schema()[c].name);
  }
}

/// Values of one group, for the reference computations.
template <typename T>
std::vector<T> non_null(const std::vector<std::optional<T>>& v) {
  std::vector<T> out;
  for (auto& x : v)
    if (x) out.push_back(*x);
  return out;
}

template <typename T>
std::optional<double> mean(const std::vector<std::optional<T>>& v) {
  auto x = non_null(v);
  if (x.empty()) return std::nullopt;
  double s = 0;
  for (auto a : x) s += static_cast<double>(a);
  return s / static_cast<double>(x.size());
}

template <typename T>
std::optional<double> var(const std::vector<std::optional<T>>& v, int ddof) {
  auto x = non_null(v);
  if (static_cast<int64_t>(x.size()) <= ddof) return std::nullopt;
  double m = *mean(v), s = 0;
  for (auto a : x) s += (static_cast<double>(a) - m) * (static_cast<double>(a) - m);
  return s / static_cast<double>(static_cast<int64_t>(x.size()) - ddof);
}

/// Polars' quantile over the sorted non-null values.
template <typename T>
std::optional<double> quantile(const std::vector<std::optional<T>>& v, double q, const std::string& method) {
  auto raw = non_null(v);
  if (raw.empty()) return std::nullopt;
  std::vector<double> x(raw.begin(), raw.end());
  std::sort(x.begin(), x.end());
  auto n = static_cast<int64_t>(x.size());
  double f = static_cast<double>(n - 1) * q;
  auto at = [&](double i) { return x[static_cast<size_t>(std::min<int64_t>(n - 1, static_cast<int64_t>(i)))]; };
  if (method == "nearest") return at(std::round(f));
  if (method == "lower") return at(std::floor(f));
  if (method == "higher") return at(std::ceil(f));
  double lo = at(std::floor(f)), hi = at(std::ceil(f));
  if (method == "midpoint") return std::floor(f) == std::ceil(f) ? lo : (lo + hi) / 2;
  return lo + (hi - lo) * (f - std::floor(f));
}

template <typename T>
std::optional<T> min(const std::vector<std::optional<T>>& v) {
  auto x = non_null(v);
  if (x.empty()) return std::nullopt;
  return *std::min_element(x.begin(), x.end());
}
template <typename T>
std::optional<T> max(const std::vector<std::optional<T>>& v) {
  auto x = non_null(v);
  if (x.empty()) return std::nullopt;
  return *std::max_element(x.begin(), x.end());
}
template <typename T>
int64_t n_unique(const std::vector<std::optional<T>>& v) {
  return static_cast<int64_t>(std::set<std::optional<T>>(v.begin(), v.end()).size());
}

/// Random data: int keys with nulls, string keys with nulls, int and float values with nulls, bools.
struct agg_data {
  std::vector<std::optional<int64_t>> k1, x;
  std::vector<std::optional<std::string>> k2;
  std::vector<std::optional<double>> f;
  std::vector<std::optional<bool>> b;

  agg_data(int64_t n, int key_cardinality, uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int m) { return static_cast<int>(rng() % static_cast<uint64_t>(m)); };
    for (int64_t i = 0; i < n; ++i) {
      k1.push_back(pick(10) == 0 ? std::nullopt : std::optional<int64_t>(pick(key_cardinality)));
      k2.push_back(pick(10) == 0 ? std::nullopt : std::optional<std::string>(std::string(1, char('a' + pick(3)))));
      x.push_back(pick(4) == 0 ? std::nullopt : std::optional<int64_t>(pick(2001) - 1000));
      f.push_back(pick(4) == 0 ? std::nullopt : std::optional<double>((pick(20001) - 10000) / 8.0));
      b.push_back(pick(3) == 0 ? std::nullopt : std::optional<bool>(pick(2) == 0));
    }
  }
  data_frame frame() const {
    return data_frame::from_columns({{"k1", i64(k1)}, {"k2", str(k2)}, {"x", i64(x)}, {"f", f64(f)}, {"b", boolean(b)}});
  }
  std::string key(size_t i) const {
    return (k1[i] ? std::to_string(*k1[i]) : "null") + "|" + (k2[i] ? *k2[i] : "null");
  }
};

/// One aggregation under test: the expression (aliased) and its reference over a group's rows.
struct agg_case {
  expr e;
  std::function<cell(const agg_data&, const std::vector<size_t>&)> ref;
};

template <typename T>
std::vector<std::optional<T>> pick_rows(const std::vector<std::optional<T>>& v, const std::vector<size_t>& rows) {
  std::vector<std::optional<T>> out;
  for (size_t r : rows) out.push_back(v[r]);
  return out;
}

/// Decomposable aggregations (run as partial + final) over every column kind of agg_data.
inline std::vector<agg_case> decomposable_cases() {
  using rd = agg_data;
  using rows = std::vector<size_t>;
  return {
      {col("x").sum().alias("sum"),
       [](const rd& d, const rows& r) {
         int64_t s = 0;
         for (auto v : non_null(pick_rows(d.x, r))) s += v;
         return text(std::to_string(s));
       }},
      {col("x").mean().alias("mean"), [](const rd& d, const rows& r) { return opt_num(mean(pick_rows(d.x, r))); }},
      {col("x").min().alias("min"), [](const rd& d, const rows& r) { return opt_text(min(pick_rows(d.x, r))); }},
      {col("x").max().alias("max"), [](const rd& d, const rows& r) { return opt_text(max(pick_rows(d.x, r))); }},
      {col("x").count().alias("count"),
       [](const rd& d, const rows& r) { return text(std::to_string(non_null(pick_rows(d.x, r)).size())); }},
      {len().alias("len"), [](const rd&, const rows& r) { return text(std::to_string(r.size())); }},
      {col("x").first().alias("first"),
       [](const rd& d, const rows& r) { return r.empty() ? cell() : opt_text(d.x[r.front()]); }},
      {col("x").last().alias("last"),
       [](const rd& d, const rows& r) { return r.empty() ? cell() : opt_text(d.x[r.back()]); }},
      {col("x").std().alias("std"),
       [](const rd& d, const rows& r) {
         auto v = var(pick_rows(d.x, r), 1);
         return v ? num(std::sqrt(*v)) : cell();
       }},
      {col("x").var(0).alias("var0"), [](const rd& d, const rows& r) { return opt_num(var(pick_rows(d.x, r), 0)); }},
      {col("f").sum().alias("fsum"),
       [](const rd& d, const rows& r) {
         double s = 0;
         for (auto v : non_null(pick_rows(d.f, r))) s += v;
         return num(s);
       }},
      {col("f").mean().alias("fmean"), [](const rd& d, const rows& r) { return opt_num(mean(pick_rows(d.f, r))); }},
      {col("f").min().alias("fmin"), [](const rd& d, const rows& r) { return opt_num(min(pick_rows(d.f, r))); }},
      {col("f").max().alias("fmax"), [](const rd& d, const rows& r) { return opt_num(max(pick_rows(d.f, r))); }},
      {col("f").var().alias("fvar"), [](const rd& d, const rows& r) { return opt_num(var(pick_rows(d.f, r), 1)); }},
      {col("b").any().alias("any"),
       [](const rd& d, const rows& r) {
         auto v = non_null(pick_rows(d.b, r));
         return text(std::find(v.begin(), v.end(), true) != v.end() ? "true" : "false");
       }},
      {col("b").all().alias("all"),
       [](const rd& d, const rows& r) {
         auto v = non_null(pick_rows(d.b, r));
         return text(std::find(v.begin(), v.end(), false) == v.end() ? "true" : "false");
       }},
      {col("b").sum().alias("bsum"),
       [](const rd& d, const rows& r) {
         auto v = non_null(pick_rows(d.b, r));
         return text(std::to_string(std::count(v.begin(), v.end(), true)));
       }},
      {col("b").first().alias("bfirst"),
       [](const rd& d, const rows& r) { return r.empty() ? cell() : opt_text(d.b[r.front()]); }},
  };
}

/// Aggregations that need all values of a group at once (run as one hash_aggregate).
inline std::vector<agg_case> holistic_cases() {
  using rd = agg_data;
  using rows = std::vector<size_t>;
  std::vector<agg_case> v = {
      {col("x").n_unique().alias("nu"),
       [](const rd& d, const rows& r) { return text(std::to_string(n_unique(pick_rows(d.x, r)))); }},
      {col("f").median().alias("fmedian"),
       [](const rd& d, const rows& r) { return opt_num(quantile(pick_rows(d.f, r), 0.5, "linear")); }},
      {col("x").last().alias("xlast"),
       [](const rd& d, const rows& r) { return r.empty() ? cell() : opt_text(d.x[r.back()]); }},
  };
  for (std::string m : {"nearest", "lower", "higher", "midpoint", "linear"}) {
    v.push_back({col("x").quantile(0.3, m).alias("q_" + m), [m](const rd& d, const rows& r) {
                   return opt_num(quantile(pick_rows(d.x, r), 0.3, m));
                 }});
  }
  return v;
}

}  // namespace tug::agg_ref
