// PDS-H queries 12..22 (TPC-H semantics, the specification's validation parameters) with tug's lazy API.
// Correlated subqueries become aggregations joined back; IN / EXISTS become semi joins, NOT IN / NOT
// EXISTS anti joins; scalar subqueries a one-row aggregate joined or cross-joined to the rows they filter.
#include "queries.hpp"

namespace tug::pdsh {

namespace {

/// l_extendedprice * (1 - l_discount): the revenue of a line item.
expr disc_price() { return col("l_extendedprice") * (1 - col("l_discount")); }

sort_options descending(std::vector<bool> desc) { return sort_options{std::move(desc), {}, false}; }

/// String literals for `is_in`.
std::vector<scalar> strings(std::initializer_list<const char*> values) {
  std::vector<scalar> out;
  for (const char* v : values)
    out.emplace_back(type_id::string, std::string(v));
  return out;
}

/// Integer literals for `is_in`.
std::vector<scalar> integers(std::initializer_list<int64_t> values) {
  std::vector<scalar> out;
  for (int64_t v : values)
    out.emplace_back(type_id::int64, v);
  return out;
}

/// SQL's SUM: null over no rows (where Polars and tug's `sum` give 0).
expr sql_sum(const expr& e) { return when(e.count() > 0).then(e.sum()); }

/// `lo <= e < hi`, for date ranges.
expr in_range(const expr& e, const expr& lo, const expr& hi) { return e.is_between(lo, hi, "left"); }

// Q12, shipping modes and order priority. SHIPMODE1 = MAIL, SHIPMODE2 = SHIP, DATE = 1994-01-01.
lazy_frame q12(const tables& t) {
  expr high = col("o_orderpriority").is_in(strings({"1-URGENT", "2-HIGH"}));
  lazy_frame late =
      t.lineitem.filter(col("l_shipmode").is_in(strings({"MAIL", "SHIP"})) &
                        (col("l_commitdate") < col("l_receiptdate")) & (col("l_shipdate") < col("l_commitdate")) &
                        in_range(col("l_receiptdate"), lit_date(1994, 1, 1), lit_date(1995, 1, 1)));
  return t.orders.join(late, {col("o_orderkey")}, {col("l_orderkey")})
      .group_by({"l_shipmode"})
      .agg({
          when(high).then(1).otherwise(0).sum().alias("high_line_count"),
          when(high).then(0).otherwise(1).sum().alias("low_line_count"),
      })
      .sort("l_shipmode");
}

// Q13, customer distribution. WORD1 = special, WORD2 = requests.
lazy_frame q13(const tables& t) {
  lazy_frame orders = t.orders.filter(!col("o_comment").str_contains("special.*requests", false));
  return t.customer.join(orders, {col("c_custkey")}, {col("o_custkey")}, join_type::left)
      .group_by({"c_custkey"})
      .agg({col("o_orderkey").count().alias("c_count")})
      .group_by({"c_count"})
      .agg({len().alias("custdist")})
      .sort({col("custdist"), col("c_count")}, descending({true, true}));
}

// Q14, promotion effect. DATE = 1995-09-01.
lazy_frame q14(const tables& t) {
  return t.lineitem.filter(in_range(col("l_shipdate"), lit_date(1995, 9, 1), lit_date(1995, 10, 1)))
      .join(t.part, {col("l_partkey")}, {col("p_partkey")})
      .select({(100.0 * when(col("p_type").str_starts_with("PROMO")).then(disc_price()).otherwise(0.0).sum() /
                sql_sum(disc_price()))
                   .alias("promo_revenue")});
}

// Q15, top supplier. DATE = 1996-01-01. The view revenue0 is one subplan, computed once (common
// subplan elimination), so the maximum equals one of its values exactly.
lazy_frame q15(const tables& t) {
  lazy_frame revenue = t.lineitem.filter(in_range(col("l_shipdate"), lit_date(1996, 1, 1), lit_date(1996, 4, 1)))
                           .group_by({col("l_suppkey").alias("supplier_no")})
                           .agg({disc_price().sum().alias("total_revenue")});
  lazy_frame top = revenue.join(revenue.select({col("total_revenue").max().alias("max_revenue")}),
                                {col("total_revenue")}, {col("max_revenue")}, join_type::semi);
  return t.supplier.join(top, {col("s_suppkey")}, {col("supplier_no")})
      .select({col("s_suppkey"), col("s_name"), col("s_address"), col("s_phone"), col("total_revenue")})
      .sort("s_suppkey");
}

// Q16, parts/supplier relationship. BRAND = Brand#45, TYPE = MEDIUM POLISHED, SIZEs 49, 14, 23, 45, 19,
// 3, 36, 9.
lazy_frame q16(const tables& t) {
  lazy_frame complaints = t.supplier.filter(col("s_comment").str_contains("Customer.*Complaints", false));
  lazy_frame parts = t.part.filter((col("p_brand") != "Brand#45") & !col("p_type").str_starts_with("MEDIUM POLISHED") &
                                   col("p_size").is_in(integers({49, 14, 23, 45, 19, 3, 36, 9})));
  return t.partsupp.join(complaints, {col("ps_suppkey")}, {col("s_suppkey")}, join_type::anti)
      .join(parts, {col("ps_partkey")}, {col("p_partkey")})
      .group_by({"p_brand", "p_type", "p_size"})
      .agg({col("ps_suppkey").n_unique().alias("supplier_cnt")})
      .sort({col("supplier_cnt"), col("p_brand"), col("p_type"), col("p_size")},
            descending({true, false, false, false}));
}

// Q17, small-quantity-order revenue. BRAND = Brand#23, CONTAINER = MED BOX. The correlated average is
// over all line items of the part: grouped by part over the qualifying parts' line items.
lazy_frame q17(const tables& t) {
  lazy_frame items = t.lineitem.join(t.part.filter((col("p_brand") == "Brand#23") & (col("p_container") == "MED BOX")),
                                     {col("l_partkey")}, {col("p_partkey")});
  lazy_frame threshold =
      items.group_by({"l_partkey"}).agg({(0.2 * col("l_quantity").mean()).alias("quantity_threshold")});
  return items.join(threshold, {"l_partkey"})
      .filter(col("l_quantity") < col("quantity_threshold"))
      .select({(sql_sum(col("l_extendedprice")) / 7.0).alias("avg_yearly")});
}

// Q18, large volume customer. QUANTITY = 300. The outer sum per order equals the subquery's sum, so the
// large orders' sums are joined to their orders and customers.
lazy_frame q18(const tables& t) {
  lazy_frame large = t.lineitem.group_by({"l_orderkey"})
                         .agg({col("l_quantity").sum().alias("sum_quantity")})
                         .filter(col("sum_quantity") > 300);
  return t.orders.join(large, {col("o_orderkey")}, {col("l_orderkey")})
      .join(t.customer, {col("o_custkey")}, {col("c_custkey")})
      .select({col("c_name"), col("o_custkey").alias("c_custkey"), col("o_orderkey"), col("o_orderdate"),
               col("o_totalprice"), col("sum_quantity").alias("sum(l_quantity)")})
      .sort({col("o_totalprice"), col("o_orderdate")}, descending({true, false}))
      .limit(100);
}

// Q19, discounted revenue. QUANTITY1 = 1, QUANTITY2 = 10, QUANTITY3 = 20, BRAND1 = Brand#12, BRAND2 =
// Brand#23, BRAND3 = Brand#34.
lazy_frame q19(const tables& t) {
  auto branch = [](const char* brand, std::initializer_list<const char*> containers, int64_t quantity,
                   int64_t max_size) {
    return (col("p_brand") == lit(brand)) & col("p_container").is_in(strings(containers)) &
           col("l_quantity").is_between(lit(quantity), lit(quantity + 10)) &
           col("p_size").is_between(lit(int64_t{1}), lit(max_size));
  };
  return t.lineitem
      .filter(col("l_shipmode").is_in(strings({"AIR", "AIR REG"})) & (col("l_shipinstruct") == "DELIVER IN PERSON"))
      .join(t.part, {col("l_partkey")}, {col("p_partkey")})
      .filter(branch("Brand#12", {"SM CASE", "SM BOX", "SM PACK", "SM PKG"}, 1, 5) |
              branch("Brand#23", {"MED BAG", "MED BOX", "MED PKG", "MED PACK"}, 10, 10) |
              branch("Brand#34", {"LG CASE", "LG BOX", "LG PACK", "LG PKG"}, 20, 15))
      .select({sql_sum(disc_price()).alias("revenue")});
}

// Q20, potential part promotion. COLOR = forest, DATE = 1994-01-01, NATION = CANADA. A part-supplier
// without shipments in the year has a null subquery result and does not qualify: an inner join.
lazy_frame q20(const tables& t) {
  lazy_frame shipped = t.lineitem.filter(in_range(col("l_shipdate"), lit_date(1994, 1, 1), lit_date(1995, 1, 1)))
                           .group_by({"l_partkey", "l_suppkey"})
                           .agg({(0.5 * col("l_quantity").sum()).alias("half_quantity")});
  lazy_frame excess = t.partsupp
                          .join(t.part.filter(col("p_name").str_starts_with("forest")), {col("ps_partkey")},
                                {col("p_partkey")}, join_type::semi)
                          .join(shipped, {col("ps_partkey"), col("ps_suppkey")}, {col("l_partkey"), col("l_suppkey")})
                          .filter(col("ps_availqty") > col("half_quantity"));
  return t.supplier.join(t.nation.filter(col("n_name") == "CANADA"), {col("s_nationkey")}, {col("n_nationkey")})
      .join(excess, {col("s_suppkey")}, {col("ps_suppkey")}, join_type::semi)
      .select({col("s_name"), col("s_address")})
      .sort("s_name");
}

// Q21, suppliers who kept orders waiting. NATION = SAUDI ARABIA. The candidates l1 (late lines of the
// nation's suppliers on F orders) come first, so that only their orders are grouped. EXISTS another
// supplier on the order: its smallest and largest supplier differ. NOT EXISTS another late supplier: its
// late lines (l1 is one of them) have one supplier, the smallest equal to the largest.
lazy_frame q21(const tables& t) {
  lazy_frame items =
      t.lineitem.select({col("l_orderkey"), col("l_suppkey"), col("l_receiptdate"), col("l_commitdate")});
  expr late = col("l_receiptdate") > col("l_commitdate");
  lazy_frame suppliers =
      t.supplier.join(t.nation.filter(col("n_name") == "SAUDI ARABIA"), {col("s_nationkey")}, {col("n_nationkey")});
  lazy_frame l1 = items.filter(late)
                      .join(suppliers, {col("l_suppkey")}, {col("s_suppkey")})
                      .join(t.orders.filter(col("o_orderstatus") == "F"), {col("l_orderkey")}, {col("o_orderkey")},
                            join_type::semi);
  expr late_supplier = when(late).then(col("l_suppkey"));
  lazy_frame waiting =
      items.join(l1, {"l_orderkey"}, join_type::semi)
          .group_by({"l_orderkey"})
          .agg({col("l_suppkey").min().alias("min_supp"), col("l_suppkey").max().alias("max_supp"),
                late_supplier.min().alias("min_late_supp"), late_supplier.max().alias("max_late_supp")})
          .filter((col("min_supp") != col("max_supp")) & (col("min_late_supp") == col("max_late_supp")));
  return l1.join(waiting, {"l_orderkey"}, join_type::semi)
      .group_by({"s_name"})
      .agg({len().alias("numwait")})
      .sort({col("numwait"), col("s_name")}, descending({true, false}))
      .limit(100);
}

// Q22, global sales opportunity. I1..I7 = 13, 31, 23, 29, 30, 18, 17.
lazy_frame q22(const tables& t) {
  lazy_frame customers = t.customer.with_columns({col("c_phone").str_slice(0, 2).alias("cntrycode")})
                             .filter(col("cntrycode").is_in(strings({"13", "31", "23", "29", "30", "18", "17"})));
  lazy_frame average = customers.filter(col("c_acctbal") > 0.0).select({col("c_acctbal").mean().alias("avg_acctbal")});
  return customers.join(t.orders, {col("c_custkey")}, {col("o_custkey")}, join_type::anti)
      .cross_join(average)
      .filter(col("c_acctbal") > col("avg_acctbal"))
      .group_by({"cntrycode"})
      .agg({len().alias("numcust"), col("c_acctbal").sum().alias("totacctbal")})
      .sort("cntrycode");
}

[[maybe_unused]] const bool registered =
    register_query(12, q12) && register_query(13, q13) && register_query(14, q14) && register_query(15, q15) &&
    register_query(16, q16) && register_query(17, q17) && register_query(18, q18) && register_query(19, q19) &&
    register_query(20, q20) && register_query(21, q21) && register_query(22, q22);

}  // namespace

}  // namespace tug::pdsh
