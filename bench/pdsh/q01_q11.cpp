// PDS-H queries 1..11 (TPC-H semantics, the specification's validation parameters) with tug's lazy API.
// Correlated subqueries become aggregations joined back; EXISTS becomes a semi join; scalar subqueries a
// one-row aggregate cross-joined to the rows it filters.
#include "queries.hpp"

namespace tug::pdsh {

namespace {

/// l_extendedprice * (1 - l_discount): the revenue of a line item.
expr disc_price() { return col("l_extendedprice") * (1 - col("l_discount")); }

sort_options descending(std::vector<bool> desc) { return sort_options{std::move(desc), {}, false}; }

// Q1, pricing summary report. DELTA = 90 days.
lazy_frame q01(const tables& t) {
  return t.lineitem.filter(col("l_shipdate") <= lit_date(1998, 12, 1) - lit_days(90))
      .group_by({"l_returnflag", "l_linestatus"})
      .agg({
          col("l_quantity").sum().alias("sum_qty"),
          col("l_extendedprice").sum().alias("sum_base_price"),
          disc_price().sum().alias("sum_disc_price"),
          (disc_price() * (1 + col("l_tax"))).sum().alias("sum_charge"),
          col("l_quantity").mean().alias("avg_qty"),
          col("l_extendedprice").mean().alias("avg_price"),
          col("l_discount").mean().alias("avg_disc"),
          len().alias("count_order"),
      })
      .sort({col("l_returnflag"), col("l_linestatus")});
}

// Q2, minimum cost supplier. SIZE = 15, TYPE = BRASS, REGION = EUROPE.
lazy_frame q02(const tables& t) {
  lazy_frame europe_supply = t.partsupp.join(t.supplier, {col("ps_suppkey")}, {col("s_suppkey")})
                                 .join(t.nation, {col("s_nationkey")}, {col("n_nationkey")})
                                 .join(t.region.filter(col("r_name") == "EUROPE"), {col("n_regionkey")},
                                       {col("r_regionkey")});
  lazy_frame candidates = t.part.filter((col("p_size") == 15) & col("p_type").str_ends_with("BRASS"))
                              .join(europe_supply, {col("p_partkey")}, {col("ps_partkey")});
  // The subquery's minimum is over the part's European suppliers: the same rows, grouped by part.
  lazy_frame min_cost =
      candidates.group_by({"p_partkey"}).agg({col("ps_supplycost").min().alias("min_supplycost")});
  return candidates.join(min_cost, {col("p_partkey"), col("ps_supplycost")}, {col("p_partkey"), col("min_supplycost")})
      .select({col("s_acctbal"), col("s_name"), col("n_name"), col("p_partkey"), col("p_mfgr"), col("s_address"),
               col("s_phone"), col("s_comment")})
      .sort({col("s_acctbal"), col("n_name"), col("s_name"), col("p_partkey")}, descending({true, false, false, false}))
      .limit(100);
}

// Q3, shipping priority. SEGMENT = BUILDING, DATE = 1995-03-15.
lazy_frame q03(const tables& t) {
  expr date = lit_date(1995, 3, 15);
  return t.customer.filter(col("c_mktsegment") == "BUILDING")
      .join(t.orders.filter(col("o_orderdate") < date), {col("c_custkey")}, {col("o_custkey")})
      .join(t.lineitem.filter(col("l_shipdate") > date), {col("o_orderkey")}, {col("l_orderkey")})
      .group_by({col("o_orderkey").alias("l_orderkey"), col("o_orderdate"), col("o_shippriority")})
      .agg({disc_price().sum().alias("revenue")})
      .select({col("l_orderkey"), col("revenue"), col("o_orderdate"), col("o_shippriority")})
      .sort({col("revenue"), col("o_orderdate")}, descending({true, false}))
      .limit(10);
}

// Q4, order priority checking. DATE = 1993-07-01.
lazy_frame q04(const tables& t) {
  lazy_frame late = t.lineitem.filter(col("l_commitdate") < col("l_receiptdate"));
  return t.orders.filter((col("o_orderdate") >= lit_date(1993, 7, 1)) & (col("o_orderdate") < lit_date(1993, 10, 1)))
      .join(late, {col("o_orderkey")}, {col("l_orderkey")}, join_type::semi)
      .group_by({"o_orderpriority"})
      .agg({len().alias("order_count")})
      .sort("o_orderpriority");
}

// Q5, local supplier volume. REGION = ASIA, DATE = 1994-01-01.
lazy_frame q05(const tables& t) {
  return t.customer
      .join(t.orders.filter((col("o_orderdate") >= lit_date(1994, 1, 1)) & (col("o_orderdate") < lit_date(1995, 1, 1))),
            {col("c_custkey")}, {col("o_custkey")})
      .join(t.lineitem, {col("o_orderkey")}, {col("l_orderkey")})
      .join(t.supplier, {col("l_suppkey"), col("c_nationkey")}, {col("s_suppkey"), col("s_nationkey")})
      .join(t.nation, {col("c_nationkey")}, {col("n_nationkey")})
      .join(t.region.filter(col("r_name") == "ASIA"), {col("n_regionkey")}, {col("r_regionkey")})
      .group_by({"n_name"})
      .agg({disc_price().sum().alias("revenue")})
      .sort("revenue", true);
}

// Q6, forecasting revenue change. DATE = 1994-01-01, DISCOUNT = 0.06, QUANTITY = 24.
lazy_frame q06(const tables& t) {
  return t.lineitem
      .filter((col("l_shipdate") >= lit_date(1994, 1, 1)) & (col("l_shipdate") < lit_date(1995, 1, 1)) &
              col("l_discount").is_between(lit(0.05), lit(0.07)) & (col("l_quantity") < 24))
      .select({(col("l_extendedprice") * col("l_discount")).sum().alias("revenue")});
}

// Q7, volume shipping. NATION1 = FRANCE, NATION2 = GERMANY.
lazy_frame q07(const tables& t) {
  lazy_frame pair_nations = t.nation.filter((col("n_name") == "FRANCE") | (col("n_name") == "GERMANY"));
  lazy_frame supp_nation = pair_nations.select({col("n_nationkey").alias("s_nk"), col("n_name").alias("supp_nation")});
  lazy_frame cust_nation = pair_nations.select({col("n_nationkey").alias("c_nk"), col("n_name").alias("cust_nation")});
  return t.lineitem
      .filter((col("l_shipdate") >= lit_date(1995, 1, 1)) & (col("l_shipdate") <= lit_date(1996, 12, 31)))
      .join(t.supplier, {col("l_suppkey")}, {col("s_suppkey")})
      .join(supp_nation, {col("s_nationkey")}, {col("s_nk")})
      .join(t.orders, {col("l_orderkey")}, {col("o_orderkey")})
      .join(t.customer, {col("o_custkey")}, {col("c_custkey")})
      .join(cust_nation, {col("c_nationkey")}, {col("c_nk")})
      .filter(col("supp_nation") != col("cust_nation"))
      .group_by({col("supp_nation"), col("cust_nation"), col("l_shipdate").dt_year().alias("l_year")})
      .agg({disc_price().sum().alias("revenue")})
      .sort({col("supp_nation"), col("cust_nation"), col("l_year")});
}

// Q8, national market share. NATION = BRAZIL, REGION = AMERICA, TYPE = ECONOMY ANODIZED STEEL.
lazy_frame q08(const tables& t) {
  lazy_frame america = t.nation.join(t.region.filter(col("r_name") == "AMERICA"), {col("n_regionkey")},
                                     {col("r_regionkey")});
  lazy_frame supp_nation = t.nation.select({col("n_nationkey").alias("s_nk"), col("n_name").alias("nation")});
  return t.part.filter(col("p_type") == "ECONOMY ANODIZED STEEL")
      .join(t.lineitem, {col("p_partkey")}, {col("l_partkey")})
      .join(t.orders.filter((col("o_orderdate") >= lit_date(1995, 1, 1)) &
                            (col("o_orderdate") <= lit_date(1996, 12, 31))),
            {col("l_orderkey")}, {col("o_orderkey")})
      .join(t.customer, {col("o_custkey")}, {col("c_custkey")})
      .join(america, {col("c_nationkey")}, {col("n_nationkey")}, join_type::semi)
      .join(t.supplier, {col("l_suppkey")}, {col("s_suppkey")})
      .join(supp_nation, {col("s_nationkey")}, {col("s_nk")})
      .with_columns({col("o_orderdate").dt_year().alias("o_year"), disc_price().alias("volume")})
      .group_by({"o_year"})
      .agg({(when(col("nation") == "BRAZIL").then(col("volume")).otherwise(lit(0.0)).sum() / col("volume").sum())
                .alias("mkt_share")})
      .sort("o_year");
}

// Q9, product type profit measure. COLOR = green.
lazy_frame q09(const tables& t) {
  return t.part.filter(col("p_name").str_contains("green"))
      .join(t.lineitem, {col("p_partkey")}, {col("l_partkey")})
      .join(t.partsupp, {col("l_suppkey"), col("p_partkey")}, {col("ps_suppkey"), col("ps_partkey")})
      .join(t.supplier, {col("l_suppkey")}, {col("s_suppkey")})
      .join(t.orders, {col("l_orderkey")}, {col("o_orderkey")})
      .join(t.nation, {col("s_nationkey")}, {col("n_nationkey")})
      .group_by({col("n_name").alias("nation"), col("o_orderdate").dt_year().alias("o_year")})
      .agg({(disc_price() - col("ps_supplycost") * col("l_quantity")).sum().alias("sum_profit")})
      .sort({col("nation"), col("o_year")}, descending({false, true}));
}

// Q10, returned item reporting. DATE = 1993-10-01.
lazy_frame q10(const tables& t) {
  return t.customer
      .join(t.orders.filter((col("o_orderdate") >= lit_date(1993, 10, 1)) & (col("o_orderdate") < lit_date(1994, 1, 1))),
            {col("c_custkey")}, {col("o_custkey")})
      .join(t.lineitem.filter(col("l_returnflag") == "R"), {col("o_orderkey")}, {col("l_orderkey")})
      .join(t.nation, {col("c_nationkey")}, {col("n_nationkey")})
      .group_by({"c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment"})
      .agg({disc_price().sum().alias("revenue")})
      .select({col("c_custkey"), col("c_name"), col("revenue"), col("c_acctbal"), col("n_name"), col("c_address"),
               col("c_phone"), col("c_comment")})
      .sort({col("revenue"), col("c_custkey")}, descending({true, false}))
      .limit(20);
}

// Q11, important stock identification. NATION = GERMANY, FRACTION = 0.0001.
lazy_frame q11(const tables& t) {
  lazy_frame german = t.partsupp.join(t.supplier, {col("ps_suppkey")}, {col("s_suppkey")})
                          .join(t.nation.filter(col("n_name") == "GERMANY"), {col("s_nationkey")}, {col("n_nationkey")})
                          .with_columns({(col("ps_supplycost") * col("ps_availqty")).alias("value")});
  lazy_frame threshold = german.select({(col("value").sum() * 0.0001).alias("threshold")});
  return german.group_by({"ps_partkey"})
      .agg({col("value").sum().alias("value")})
      .cross_join(threshold)
      .filter(col("value") > col("threshold"))
      .select({col("ps_partkey"), col("value")})
      .sort("value", true);
}

[[maybe_unused]] const bool registered = register_query(1, q01) && register_query(2, q02) && register_query(3, q03) &&
                                         register_query(4, q04) && register_query(5, q05) && register_query(6, q06) &&
                                         register_query(7, q07) && register_query(8, q08) && register_query(9, q09) &&
                                         register_query(10, q10) && register_query(11, q11);

}  // namespace

}  // namespace tug::pdsh
