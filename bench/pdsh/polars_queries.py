"""The 22 PDS-H queries in native lazy Polars (TPC-H semantics, the specification's validation parameters),
for the harness bench/pdsh.py. Each query takes a `Tables` of lazy scans and returns a LazyFrame whose
columns and order are those of the SQL in bench/pdsh/sql. QUERIES maps query numbers to functions.
"""
from dataclasses import dataclass
from datetime import date

import polars as pl

TABLE_NAMES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]


@dataclass
class Tables:
    region: pl.LazyFrame
    nation: pl.LazyFrame
    supplier: pl.LazyFrame
    customer: pl.LazyFrame
    part: pl.LazyFrame
    partsupp: pl.LazyFrame
    orders: pl.LazyFrame
    lineitem: pl.LazyFrame


def scan_tables(data_dir):
    return Tables(**{t: pl.scan_parquet(f"{data_dir}/{t}/*.parquet") for t in TABLE_NAMES})


def disc_price():
    return pl.col("l_extendedprice") * (1 - pl.col("l_discount"))


def q1(t):
    return (
        t.lineitem.filter(pl.col("l_shipdate") <= date(1998, 9, 2))  # 1998-12-01 - 90 days
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            pl.col("l_extendedprice").sum().alias("sum_base_price"),
            disc_price().sum().alias("sum_disc_price"),
            (disc_price() * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            pl.col("l_extendedprice").mean().alias("avg_price"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
    )


def q2(t):
    europe_supply = (
        t.partsupp.join(t.supplier, left_on="ps_suppkey", right_on="s_suppkey")
        .join(t.nation, left_on="s_nationkey", right_on="n_nationkey")
        .join(t.region.filter(pl.col("r_name") == "EUROPE"), left_on="n_regionkey", right_on="r_regionkey")
    )
    candidates = t.part.filter((pl.col("p_size") == 15) & pl.col("p_type").str.ends_with("BRASS")).join(
        europe_supply, left_on="p_partkey", right_on="ps_partkey")
    return (
        candidates.filter(pl.col("ps_supplycost") == pl.col("ps_supplycost").min().over("p_partkey"))
        .select("s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment")
        .sort(["s_acctbal", "n_name", "s_name", "p_partkey"], descending=[True, False, False, False])
        .head(100)
    )


def q3(t):
    d = date(1995, 3, 15)
    return (
        t.customer.filter(pl.col("c_mktsegment") == "BUILDING")
        .join(t.orders.filter(pl.col("o_orderdate") < d), left_on="c_custkey", right_on="o_custkey")
        .join(t.lineitem.filter(pl.col("l_shipdate") > d), left_on="o_orderkey", right_on="l_orderkey")
        .group_by(pl.col("o_orderkey").alias("l_orderkey"), "o_orderdate", "o_shippriority")
        .agg(disc_price().sum().alias("revenue"))
        .select("l_orderkey", "revenue", "o_orderdate", "o_shippriority")
        .sort(["revenue", "o_orderdate"], descending=[True, False])
        .head(10)
    )


def q4(t):
    late = t.lineitem.filter(pl.col("l_commitdate") < pl.col("l_receiptdate"))
    return (
        t.orders.filter(pl.col("o_orderdate").is_between(date(1993, 7, 1), date(1993, 10, 1), closed="left"))
        .join(late, left_on="o_orderkey", right_on="l_orderkey", how="semi")
        .group_by("o_orderpriority")
        .agg(pl.len().alias("order_count"))
        .sort("o_orderpriority")
    )


def q5(t):
    return (
        t.customer.join(
            t.orders.filter(pl.col("o_orderdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left")),
            left_on="c_custkey", right_on="o_custkey")
        .join(t.lineitem, left_on="o_orderkey", right_on="l_orderkey")
        .join(t.supplier, left_on=["l_suppkey", "c_nationkey"], right_on=["s_suppkey", "s_nationkey"])
        .join(t.nation, left_on="c_nationkey", right_on="n_nationkey")
        .join(t.region.filter(pl.col("r_name") == "ASIA"), left_on="n_regionkey", right_on="r_regionkey")
        .group_by("n_name")
        .agg(disc_price().sum().alias("revenue"))
        .sort("revenue", descending=True)
    )


def q6(t):
    return t.lineitem.filter(
        pl.col("l_shipdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left")
        & pl.col("l_discount").is_between(0.05, 0.07)
        & (pl.col("l_quantity") < 24)
    ).select((pl.col("l_extendedprice") * pl.col("l_discount")).sum().alias("revenue"))


def q7(t):
    pair = t.nation.filter(pl.col("n_name").is_in(["FRANCE", "GERMANY"]))
    supp_nation = pair.select(pl.col("n_nationkey").alias("s_nk"), pl.col("n_name").alias("supp_nation"))
    cust_nation = pair.select(pl.col("n_nationkey").alias("c_nk"), pl.col("n_name").alias("cust_nation"))
    return (
        t.lineitem.filter(pl.col("l_shipdate").is_between(date(1995, 1, 1), date(1996, 12, 31)))
        .join(t.supplier, left_on="l_suppkey", right_on="s_suppkey")
        .join(supp_nation, left_on="s_nationkey", right_on="s_nk")
        .join(t.orders, left_on="l_orderkey", right_on="o_orderkey")
        .join(t.customer, left_on="o_custkey", right_on="c_custkey")
        .join(cust_nation, left_on="c_nationkey", right_on="c_nk")
        .filter(pl.col("supp_nation") != pl.col("cust_nation"))
        .group_by("supp_nation", "cust_nation", pl.col("l_shipdate").dt.year().alias("l_year"))
        .agg(disc_price().sum().alias("revenue"))
        .sort("supp_nation", "cust_nation", "l_year")
    )


def q8(t):
    america = t.nation.join(t.region.filter(pl.col("r_name") == "AMERICA"), left_on="n_regionkey",
                            right_on="r_regionkey")
    supp_nation = t.nation.select(pl.col("n_nationkey").alias("s_nk"), pl.col("n_name").alias("nation"))
    return (
        t.part.filter(pl.col("p_type") == "ECONOMY ANODIZED STEEL")
        .join(t.lineitem, left_on="p_partkey", right_on="l_partkey")
        .join(t.orders.filter(pl.col("o_orderdate").is_between(date(1995, 1, 1), date(1996, 12, 31))),
              left_on="l_orderkey", right_on="o_orderkey")
        .join(t.customer, left_on="o_custkey", right_on="c_custkey")
        .join(america, left_on="c_nationkey", right_on="n_nationkey", how="semi")
        .join(t.supplier, left_on="l_suppkey", right_on="s_suppkey")
        .join(supp_nation, left_on="s_nationkey", right_on="s_nk")
        .with_columns(pl.col("o_orderdate").dt.year().alias("o_year"), disc_price().alias("volume"))
        .group_by("o_year")
        .agg((pl.when(pl.col("nation") == "BRAZIL").then(pl.col("volume")).otherwise(0.0).sum()
              / pl.col("volume").sum()).alias("mkt_share"))
        .sort("o_year")
    )


def q9(t):
    return (
        t.part.filter(pl.col("p_name").str.contains("green", literal=True))
        .join(t.lineitem, left_on="p_partkey", right_on="l_partkey")
        .join(t.partsupp, left_on=["l_suppkey", "p_partkey"], right_on=["ps_suppkey", "ps_partkey"])
        .join(t.supplier, left_on="l_suppkey", right_on="s_suppkey")
        .join(t.orders, left_on="l_orderkey", right_on="o_orderkey")
        .join(t.nation, left_on="s_nationkey", right_on="n_nationkey")
        .group_by(pl.col("n_name").alias("nation"), pl.col("o_orderdate").dt.year().alias("o_year"))
        .agg((disc_price() - pl.col("ps_supplycost") * pl.col("l_quantity")).sum().alias("sum_profit"))
        .sort(["nation", "o_year"], descending=[False, True])
    )


def q10(t):
    return (
        t.customer.join(
            t.orders.filter(pl.col("o_orderdate").is_between(date(1993, 10, 1), date(1994, 1, 1), closed="left")),
            left_on="c_custkey", right_on="o_custkey")
        .join(t.lineitem.filter(pl.col("l_returnflag") == "R"), left_on="o_orderkey", right_on="l_orderkey")
        .join(t.nation, left_on="c_nationkey", right_on="n_nationkey")
        .group_by("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment")
        .agg(disc_price().sum().alias("revenue"))
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment")
        .sort(["revenue", "c_custkey"], descending=[True, False])
        .head(20)
    )


def q11(t):
    german = (
        t.partsupp.join(t.supplier, left_on="ps_suppkey", right_on="s_suppkey")
        .join(t.nation.filter(pl.col("n_name") == "GERMANY"), left_on="s_nationkey", right_on="n_nationkey")
        .with_columns((pl.col("ps_supplycost") * pl.col("ps_availqty")).alias("value"))
    )
    threshold = german.select((pl.col("value").sum() * 0.0001).alias("threshold"))
    return (
        german.group_by("ps_partkey")
        .agg(pl.col("value").sum())
        .join(threshold, how="cross")
        .filter(pl.col("value") > pl.col("threshold"))
        .select("ps_partkey", "value")
        .sort("value", descending=True)
    )


QUERIES = {1: q1, 2: q2, 3: q3, 4: q4, 5: q5, 6: q6, 7: q7, 8: q8, 9: q9, 10: q10, 11: q11}

# Queries 12..22 (the same plans as bench/pdsh/q12_q22.cpp).


def sql_sum(e):
    """SQL's SUM: null over no rows (Polars' sum gives 0)."""
    return pl.when(e.count() > 0).then(e.sum())


def q12(t):
    high = pl.col("o_orderpriority").is_in(["1-URGENT", "2-HIGH"])
    late = t.lineitem.filter(
        pl.col("l_shipmode").is_in(["MAIL", "SHIP"])
        & (pl.col("l_commitdate") < pl.col("l_receiptdate"))
        & (pl.col("l_shipdate") < pl.col("l_commitdate"))
        & pl.col("l_receiptdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left")
    )
    return (
        t.orders
        .join(late, left_on="o_orderkey", right_on="l_orderkey")
        .group_by("l_shipmode")
        .agg(
            pl.when(high).then(1).otherwise(0).sum().alias("high_line_count"),
            pl.when(high).then(0).otherwise(1).sum().alias("low_line_count"),
        )
        .sort("l_shipmode")
    )


def q13(t):
    orders = t.orders.filter(~pl.col("o_comment").str.contains("special.*requests"))
    return (
        t.customer
        .join(orders, left_on="c_custkey", right_on="o_custkey", how="left")
        .group_by("c_custkey")
        .agg(pl.col("o_orderkey").count().alias("c_count"))
        .group_by("c_count")
        .agg(pl.len().alias("custdist"))
        .sort(["custdist", "c_count"], descending=[True, True])
    )


def q14(t):
    promo = pl.when(pl.col("p_type").str.starts_with("PROMO")).then(disc_price()).otherwise(0.0)
    return (
        t.lineitem
        .filter(pl.col("l_shipdate").is_between(date(1995, 9, 1), date(1995, 10, 1), closed="left"))
        .join(t.part, left_on="l_partkey", right_on="p_partkey")
        .select((100.0 * promo.sum() / sql_sum(disc_price())).alias("promo_revenue"))
    )


def q15(t):
    revenue = (
        t.lineitem
        .filter(pl.col("l_shipdate").is_between(date(1996, 1, 1), date(1996, 4, 1), closed="left"))
        .group_by(pl.col("l_suppkey").alias("supplier_no"))
        .agg(disc_price().sum().alias("total_revenue"))
    )
    top = revenue.filter(pl.col("total_revenue") == pl.col("total_revenue").max())
    return (
        t.supplier
        .join(top, left_on="s_suppkey", right_on="supplier_no")
        .select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")
        .sort("s_suppkey")
    )


def q16(t):
    complaints = t.supplier.filter(pl.col("s_comment").str.contains("Customer.*Complaints"))
    parts = t.part.filter(
        (pl.col("p_brand") != "Brand#45")
        & ~pl.col("p_type").str.starts_with("MEDIUM POLISHED")
        & pl.col("p_size").is_in([49, 14, 23, 45, 19, 3, 36, 9])
    )
    return (
        t.partsupp
        .join(complaints, left_on="ps_suppkey", right_on="s_suppkey", how="anti")
        .join(parts, left_on="ps_partkey", right_on="p_partkey")
        .group_by("p_brand", "p_type", "p_size")
        .agg(pl.col("ps_suppkey").n_unique().alias("supplier_cnt"))
        .sort(["supplier_cnt", "p_brand", "p_type", "p_size"], descending=[True, False, False, False])
    )


def q17(t):
    parts = t.part.filter((pl.col("p_brand") == "Brand#23") & (pl.col("p_container") == "MED BOX"))
    items = t.lineitem.join(parts, left_on="l_partkey", right_on="p_partkey")
    threshold = items.group_by("l_partkey").agg((0.2 * pl.col("l_quantity").mean()).alias("quantity_threshold"))
    return (
        items.join(threshold, on="l_partkey")
        .filter(pl.col("l_quantity") < pl.col("quantity_threshold"))
        .select((sql_sum(pl.col("l_extendedprice")) / 7.0).alias("avg_yearly"))
    )


def q18(t):
    large = (
        t.lineitem
        .group_by("l_orderkey")
        .agg(pl.col("l_quantity").sum().alias("sum_quantity"))
        .filter(pl.col("sum_quantity") > 300)
    )
    return (
        t.orders
        .join(large, left_on="o_orderkey", right_on="l_orderkey")
        .join(t.customer, left_on="o_custkey", right_on="c_custkey")
        .select(
            "c_name",
            pl.col("o_custkey").alias("c_custkey"),
            "o_orderkey",
            "o_orderdate",
            "o_totalprice",
            pl.col("sum_quantity").alias("sum(l_quantity)"),
        )
        .sort(["o_totalprice", "o_orderdate"], descending=[True, False])
        .head(100)
    )


def q19(t):
    def branch(brand, containers, quantity, max_size):
        return (
            (pl.col("p_brand") == brand)
            & pl.col("p_container").is_in(containers)
            & pl.col("l_quantity").is_between(quantity, quantity + 10)
            & pl.col("p_size").is_between(1, max_size)
        )

    return (
        t.lineitem
        .filter(pl.col("l_shipmode").is_in(["AIR", "AIR REG"]) & (pl.col("l_shipinstruct") == "DELIVER IN PERSON"))
        .join(t.part, left_on="l_partkey", right_on="p_partkey")
        .filter(
            branch("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
            | branch("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 10)
            | branch("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 15)
        )
        .select(sql_sum(disc_price()).alias("revenue"))
    )


def q20(t):
    shipped = (
        t.lineitem
        .filter(pl.col("l_shipdate").is_between(date(1994, 1, 1), date(1995, 1, 1), closed="left"))
        .group_by("l_partkey", "l_suppkey")
        .agg((0.5 * pl.col("l_quantity").sum()).alias("half_quantity"))
    )
    excess = (
        t.partsupp
        .join(
            t.part.filter(pl.col("p_name").str.starts_with("forest")),
            left_on="ps_partkey",
            right_on="p_partkey",
            how="semi",
        )
        .join(shipped, left_on=["ps_partkey", "ps_suppkey"], right_on=["l_partkey", "l_suppkey"])
        .filter(pl.col("ps_availqty") > pl.col("half_quantity"))
    )
    return (
        t.supplier
        .join(t.nation.filter(pl.col("n_name") == "CANADA"), left_on="s_nationkey", right_on="n_nationkey")
        .join(excess, left_on="s_suppkey", right_on="ps_suppkey", how="semi")
        .select("s_name", "s_address")
        .sort("s_name")
    )


def q21(t):
    items = t.lineitem.select("l_orderkey", "l_suppkey", "l_receiptdate", "l_commitdate")
    late = pl.col("l_receiptdate") > pl.col("l_commitdate")
    suppliers = t.supplier.join(
        t.nation.filter(pl.col("n_name") == "SAUDI ARABIA"), left_on="s_nationkey", right_on="n_nationkey"
    )
    l1 = (
        items.filter(late)
        .join(suppliers, left_on="l_suppkey", right_on="s_suppkey")
        .join(t.orders.filter(pl.col("o_orderstatus") == "F"), left_on="l_orderkey", right_on="o_orderkey", how="semi")
    )
    late_supplier = pl.when(late).then(pl.col("l_suppkey"))
    waiting = (
        items.join(l1, on="l_orderkey", how="semi")
        .group_by("l_orderkey")
        .agg(
            pl.col("l_suppkey").min().alias("min_supp"),
            pl.col("l_suppkey").max().alias("max_supp"),
            late_supplier.min().alias("min_late_supp"),
            late_supplier.max().alias("max_late_supp"),
        )
        .filter((pl.col("min_supp") != pl.col("max_supp")) & (pl.col("min_late_supp") == pl.col("max_late_supp")))
    )
    return (
        l1.join(waiting, on="l_orderkey", how="semi")
        .group_by("s_name")
        .agg(pl.len().alias("numwait"))
        .sort(["numwait", "s_name"], descending=[True, False])
        .head(100)
    )


def q22(t):
    customers = t.customer.with_columns(pl.col("c_phone").str.slice(0, 2).alias("cntrycode")).filter(
        pl.col("cntrycode").is_in(["13", "31", "23", "29", "30", "18", "17"])
    )
    average = customers.filter(pl.col("c_acctbal") > 0.0).select(pl.col("c_acctbal").mean().alias("avg_acctbal"))
    return (
        customers.join(t.orders, left_on="c_custkey", right_on="o_custkey", how="anti")
        .join(average, how="cross")
        .filter(pl.col("c_acctbal") > pl.col("avg_acctbal"))
        .group_by("cntrycode")
        .agg(pl.len().alias("numcust"), pl.col("c_acctbal").sum().alias("totacctbal"))
        .sort("cntrycode")
    )


QUERIES.update({12: q12, 13: q13, 14: q14, 15: q15, 16: q16, 17: q17, 18: q18, 19: q19, 20: q20, 21: q21, 22: q22})
