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

# Queries 12..22 (branch pdsq2) go below, each followed by QUERIES[n] = qn.
