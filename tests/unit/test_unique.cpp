// unique() through the lazy API, against a reference built on a map of formatted keys.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sort_test_data.hpp"
#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"

using namespace tug;
using tug::test_data::mixed_frame;

namespace {

/// Key of row `r`: nulls equal nulls, -0.0 == 0.0, NaN == NaN (formatting prints every NaN alike).
std::string ref_key(const table& t, const std::vector<size_t>& cols, int64_t r) {
  std::string s;
  for (size_t c : cols) {
    if (t[c].is_null(r)) {
      s += "\x01null";
    } else {
      std::string v = format_value(t[c], r);
      if (is_floating(t[c].type().id) && v == "-0.0") v = "0.0";
      s += v;
    }
    s += '\x02';
  }
  return s;
}

/// Expected rows of unique(), in input order.
data_frame ref_unique(const data_frame& df, const std::vector<std::string>& subset, unique_keep keep) {
  table t = df.to_table();
  std::vector<size_t> cols;
  for (auto& s : subset) cols.push_back(df.schema().index_of(s));
  if (cols.empty())
    for (size_t c = 0; c < t.num_columns(); ++c) cols.push_back(c);
  std::map<std::string, std::vector<int64_t>> occ;
  for (int64_t r = 0; r < t.num_rows(); ++r) occ[ref_key(t, cols, r)].push_back(r);
  std::vector<int64_t> rows;
  for (auto& [k, v] : occ) {
    if (keep == unique_keep::last) rows.push_back(v.back());
    else if (keep == unique_keep::none) {
      if (v.size() == 1) rows.push_back(v[0]);
    } else {
      rows.push_back(v.front());
    }
  }
  std::sort(rows.begin(), rows.end());
  return data_frame(df.schema(), {gather(t, rows)});
}

/// Only the named columns of `df`.
data_frame only(const data_frame& df, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, column>> cols;
  for (auto& n : names) cols.emplace_back(n, df[n]);
  return data_frame::from_columns(cols);
}

engine_options small_partitions() {
  engine_options o;
  o.target_partition_rows = 7;
  return o;
}

/// Every blocking operator out of core: unique splits its input into hash buckets (unique_node::run).
engine_options external() {
  engine_options o = small_partitions();
  o.force_external = true;
  return o;
}

void check_unique(const data_frame& df, const std::vector<std::string>& subset) {
  for (unique_keep keep : {unique_keep::any, unique_keep::first, unique_keep::last, unique_keep::none})
    for (bool ordered : {false, true})
      for (const engine_options& o : {engine_options{}, small_partitions(), external()}) {
        std::string sub;
        for (auto& s : subset) sub += s + ",";
        SCOPED_TRACE("subset [" + sub + "] keep " + to_string(keep) + (ordered ? " ordered" : "") + " rows " +
                     std::to_string(df.num_rows()) + " part " + std::to_string(o.target_partition_rows) +
                     (o.force_external ? " external" : ""));
        auto out = df.lazy().unique(subset, keep, ordered).collect(o);
        auto expected = ref_unique(df, subset, keep);
        if (keep == unique_keep::any) {
          // any row of each key may be kept: compare the keys only
          auto names = subset.empty() ? df.schema().names() : subset;
          ASSERT_EQ(out.num_rows(), expected.num_rows());
          EXPECT_EQ(sorted_rows(only(out, names)), sorted_rows(only(expected, names)));
        } else if (ordered) {
          expect_frames_equal(out, expected);
        } else {
          EXPECT_EQ(sorted_rows(out), sorted_rows(expected));
        }
      }
}

/// The frame without its row-number column, so that whole rows repeat.
data_frame without_idx(const data_frame& df) {
  auto names = df.schema().names();
  std::erase(names, std::string("idx"));
  return only(df, names);
}

}  // namespace

TEST(Unique, EveryTypeAllSizes) {
  for (int64_t n : {0, 1, 31, 32, 33, 1024}) {
    auto df = mixed_frame(n, 100 + static_cast<uint64_t>(n));
    for (auto& k : {"i64", "i32", "u8", "f64", "f32", "str", "bool", "dec", "date", "ts"}) check_unique(df, {k});
    check_unique(df, {"str", "bool"});
    check_unique(df, {"i32", "date", "f32"});
    check_unique(only(df, {"bool", "i32"}), {});
    check_unique(without_idx(df), {});
  }
}

TEST(Unique, FloatAndNullKeysEqual) {
  auto df = data_frame::from_columns({{"x", f64({0.0, -0.0, std::nan(""), -std::nan(""), std::nullopt, std::nullopt, 1.0})},
                                      {"i", i64({0, 1, 2, 3, 4, 5, 6})}});
  auto first = df.lazy().unique({"x"}, unique_keep::first, true).collect();
  EXPECT_EQ(rows_of(first), (std::vector<std::string>{"0.0|0", "NaN|2", "null|4", "1.0|6"}));
  auto last = df.lazy().unique({"x"}, unique_keep::last, true).collect();
  EXPECT_EQ(rows_of(last), (std::vector<std::string>{"-0.0|1", "NaN|3", "null|5", "1.0|6"}));
  auto none = df.lazy().unique({"x"}, unique_keep::none, true).collect();
  EXPECT_EQ(rows_of(none), (std::vector<std::string>{"1.0|6"}));
  auto all = df.lazy().unique().collect();
  EXPECT_EQ(all.num_rows(), 7);
}

TEST(Unique, AllNullAndSliced) {
  auto nulls = data_frame::from_columns({{"a", make_null_column(type_id::int64, 40)},
                                         {"s", make_null_column(type_id::string, 40)}});
  check_unique(nulls, {});
  check_unique(nulls, {"s"});
  auto df = mixed_frame(300, 8);
  table t = df.to_table();
  for (auto [off, len] : {std::pair<int64_t, int64_t>{0, 0}, {9, 1}, {17, 100}, {101, 199}}) {
    data_frame sliced(df.schema(), {t.slice(off, len)});
    check_unique(sliced, {"i32"});
    check_unique(sliced, {"str", "f64"});
  }
}

TEST(Unique, LargeAndSyncPoint) {
  auto df = mixed_frame(100000, 77);
  check_unique(df, {"i32", "bool", "date"});
  auto res = df.lazy().unique({"str"}, unique_keep::first, true).profile(small_partitions());
  EXPECT_NE(res.physical_plan.find("[sync] unique"), std::string::npos) << res.physical_plan;
  expect_frames_equal(res.frame, ref_unique(df, {"str"}, unique_keep::first));
  for (auto& p : res.frame.partitions()) EXPECT_LE(p.num_rows(), 7);
}
