// The generator library (tug/gen): chunked data sets are the same for any thread count, PDS-H key
// formulas and row counts follow the TPC-H specification, bad arguments name themselves. The files
// written by tug_gen are checked against DuckDB in tests/python/test_gen.py.
#include <gtest/gtest.h>

#include <set>

#include "test_util.hpp"
#include "tug/core/error.hpp"
#include "tug/gen/pdsh.hpp"
#include "tug/gen/seed_data.hpp"

using namespace tug;

TEST(GenPdsh, KeyFormulasFollowTheSpec) {
  // sparse order keys: 1..7, 32..39, 64..71
  std::vector<int64_t> keys;
  for (int64_t i = 1; i <= 16; ++i)
    keys.push_back(gen::pdsh::order_key(i));
  EXPECT_EQ(keys, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 32, 33, 34, 35, 36, 37, 38, 39, 64}));
  EXPECT_EQ(gen::pdsh::retail_price_cents(1), 90100);  // p_retailprice 901.00 for part 1
  EXPECT_EQ(gen::pdsh::retail_price_cents(200000), 90000 + 20000 % 20001);
  // every part has 4 distinct suppliers in [1, S] (there are 20 parts per supplier)
  for (int64_t s : {100, 10000}) {
    for (int64_t p = 1; p <= 20 * s; p += 7) {
      std::set<int64_t> supp;
      for (int64_t i = 0; i < 4; ++i)
        supp.insert(gen::pdsh::part_supplier(p, i, s));
      EXPECT_EQ(supp.size(), 4u);
      EXPECT_GE(*supp.begin(), 1);
      EXPECT_LE(*supp.rbegin(), s);
    }
  }
}

TEST(GenPdsh, RowCountsPerScaleFactor) {
  auto c = gen::pdsh::counts_for(1);
  EXPECT_EQ(c.supplier, 10000);
  EXPECT_EQ(c.customer, 150000);
  EXPECT_EQ(c.part, 200000);
  EXPECT_EQ(c.partsupp, 800000);
  EXPECT_EQ(c.orders, 1500000);
  auto small = gen::pdsh::counts_for(0.01);
  EXPECT_EQ(small.supplier, 100);
  EXPECT_EQ(small.orders, 15000);
  EXPECT_EQ(gen::pdsh::counts_for(100).orders, 150000000);
  EXPECT_THROW(gen::pdsh::counts_for(0), invalid_argument_error);
  EXPECT_THROW(gen::pdsh::make_dataset(0.01, 1, 0), invalid_argument_error);
}

TEST(GenPdsh, InMemoryIsTheSameForAnyThreadCountAndChunked) {
  auto d = gen::pdsh::make_dataset(0.002, 5, 1000);  // 3000 orders in 3 chunks
  auto one = gen::generate_dataset(d, 1), two = gen::generate_dataset(d, 2);
  ASSERT_EQ(one.size(), 8u);
  for (const auto& [name, frame] : one)
    expect_frames_equal(frame, two.at(name));
  EXPECT_EQ(one.at("orders").partitions().size(), 3u);
  EXPECT_EQ(one.at("orders").num_rows(), 3000);
  EXPECT_EQ(one.at("partsupp").num_rows(), 4 * one.at("part").num_rows());
  auto other = gen::generate_dataset(gen::pdsh::make_dataset(0.002, 6, 1000), 2);
  EXPECT_NE(rows_of(other.at("lineitem")), rows_of(one.at("lineitem")));
}

TEST(GenSeedData, RowCountsAndDeterminism) {
  auto w = gen::wholesale_tables(9500, 7, 2000);
  EXPECT_EQ(w.lineitem.num_rows(), 9500);
  EXPECT_EQ(w.orders.num_rows(), 2375);
  EXPECT_EQ(w.customer.num_rows(), 237);
  EXPECT_EQ(w.supplier.num_rows(), 20);
  EXPECT_EQ(w.lineitem.partitions().size(), 5u);
  expect_frames_equal(gen::ais(3000, 1, 1000), gen::generate_dataset(gen::ais_dataset(3000, 1, 1000), 1).at("ais"));
  EXPECT_EQ(gen::ais(0).num_rows(), 0);
  EXPECT_THROW(gen::ais(-1), invalid_argument_error);
  EXPECT_THROW(gen::wholesale_tables(10, 7, 0), invalid_argument_error);
}
