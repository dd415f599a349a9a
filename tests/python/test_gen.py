"""`tug_gen`: PDS-H at SF 0.01 follows the TPC-H specification (row counts, keys, formulas, word lists),
checked with DuckDB over the written files; the layout and types are the query writers' contract
(read with pyarrow); the same arguments give the same bytes whatever the thread count; the seed-002
data sets (wholesale, AIS) have their row counts, schemas and join keys."""
import subprocess
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]


def gen(tug_gen, *args):
    p = subprocess.run([tug_gen, *map(str, args), "--quiet"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def file_bytes(root):
    return {str(f.relative_to(root)): f.read_bytes() for f in sorted(Path(root).rglob("*.parquet"))}


@pytest.fixture(scope="module")
def sf001(tug_gen, tmp_path_factory):
    out = tmp_path_factory.mktemp("pdsh")
    # small chunks: several files per table, so the chunking and the thread pool are exercised
    gen(tug_gen, "pdsh", "--sf", "0.01", "--chunk-rows", "4000", "--threads", "2", "--out", out)
    return out


@pytest.fixture(scope="module")
def db(sf001):
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"create view {t} as select * from read_parquet('{sf001}/{t}/*.parquet')")
    return con


def one(con, sql):
    return con.execute(sql).fetchone()[0]


def test_layout_and_types_are_the_contract(sf001):
    i64, f64, s, d = pa.int64(), pa.float64(), pa.string(), pa.date32()
    expected = {
        "region": [("r_regionkey", i64), ("r_name", s), ("r_comment", s)],
        "nation": [("n_nationkey", i64), ("n_name", s), ("n_regionkey", i64), ("n_comment", s)],
        "supplier": [("s_suppkey", i64), ("s_name", s), ("s_address", s), ("s_nationkey", i64), ("s_phone", s),
                     ("s_acctbal", f64), ("s_comment", s)],
        "customer": [("c_custkey", i64), ("c_name", s), ("c_address", s), ("c_nationkey", i64), ("c_phone", s),
                     ("c_acctbal", f64), ("c_mktsegment", s), ("c_comment", s)],
        "part": [("p_partkey", i64), ("p_name", s), ("p_mfgr", s), ("p_brand", s), ("p_type", s), ("p_size", i64),
                 ("p_container", s), ("p_retailprice", f64), ("p_comment", s)],
        "partsupp": [("ps_partkey", i64), ("ps_suppkey", i64), ("ps_availqty", i64), ("ps_supplycost", f64),
                     ("ps_comment", s)],
        "orders": [("o_orderkey", i64), ("o_custkey", i64), ("o_orderstatus", s), ("o_totalprice", f64),
                   ("o_orderdate", d), ("o_orderpriority", s), ("o_clerk", s), ("o_shippriority", i64),
                   ("o_comment", s)],
        "lineitem": [("l_orderkey", i64), ("l_partkey", i64), ("l_suppkey", i64), ("l_linenumber", i64),
                     ("l_quantity", f64), ("l_extendedprice", f64), ("l_discount", f64), ("l_tax", f64),
                     ("l_returnflag", s), ("l_linestatus", s), ("l_shipdate", d), ("l_commitdate", d),
                     ("l_receiptdate", d), ("l_shipinstruct", s), ("l_shipmode", s), ("l_comment", s)],
    }
    assert sorted(p.name for p in sf001.iterdir()) == sorted(TABLES)
    for table, cols in expected.items():
        files = sorted((sf001 / table).iterdir())
        assert files and all(f.name == f"part-{i:05d}.parquet" for i, f in enumerate(files)), files
        for f in files:
            schema = pq.read_schema(f)
            assert [(x.name, x.type) for x in schema] == cols, (table, schema)
            meta = pq.ParquetFile(f).metadata
            assert meta.row_group(0).column(0).compression == "SNAPPY"
    assert len(list((sf001 / "lineitem").iterdir())) == 4  # 15000 orders in chunks of 4000


def test_row_counts_per_spec(db):
    counts = {t: one(db, f"select count(*) from {t}") for t in TABLES}
    assert {k: v for k, v in counts.items() if k != "lineitem"} == {
        "region": 5, "nation": 25, "supplier": 100, "customer": 1500, "part": 2000, "partsupp": 8000,
        "orders": 15000}
    # 1..7 lines per order, 4 on average
    assert 0.97 * 60000 < counts["lineitem"] < 1.03 * 60000
    assert db.execute("select min(c), max(c) from (select count(*) c from lineitem group by l_orderkey)").fetchone() \
        == (1, 7)
    # line numbers are 1..n within each order
    assert one(db, "select count(*) from (select l_orderkey from lineitem group by l_orderkey "
                   "having min(l_linenumber) <> 1 or max(l_linenumber) <> count(*) "
                   "or count(distinct l_linenumber) <> count(*))") == 0


def test_primary_keys_are_unique_and_dense(db):
    for table, key, n in [("region", "r_regionkey", 5), ("nation", "n_nationkey", 25), ("supplier", "s_suppkey", 100),
                          ("customer", "c_custkey", 1500), ("part", "p_partkey", 2000)]:
        lo, hi, distinct = db.execute(f"select min({key}), max({key}), count(distinct {key}) from {table}").fetchone()
        start = 0 if table in ("region", "nation") else 1
        assert (lo, hi, distinct) == (start, start + n - 1, n), table
    assert one(db, "select count(*) - count(distinct (ps_partkey, ps_suppkey)) from partsupp") == 0
    assert one(db, "select count(*) - count(distinct (l_orderkey, l_linenumber)) from lineitem") == 0


def test_orderkeys_are_sparse(db):
    # the first 8 of every 32 keys: 1..7, 32..39, 64..71, ...; exactly the keys of orders 1..15000
    assert one(db, "select count(*) from orders where o_orderkey % 32 >= 8 or o_orderkey <= 0") == 0
    assert one(db, """select count(*) from (select ((i >> 3) << 5) | (i & 7) k from range(1, 15001) t(i))
                      full join orders on k = o_orderkey where k is null or o_orderkey is null""") == 0
    assert one(db, "select max(o_orderkey) from orders") == 60000


def test_every_foreign_key_matches_a_primary_key(db):
    fks = [("nation", "n_regionkey", "region", "r_regionkey"), ("supplier", "s_nationkey", "nation", "n_nationkey"),
           ("customer", "c_nationkey", "nation", "n_nationkey"), ("partsupp", "ps_partkey", "part", "p_partkey"),
           ("partsupp", "ps_suppkey", "supplier", "s_suppkey"), ("orders", "o_custkey", "customer", "c_custkey"),
           ("lineitem", "l_orderkey", "orders", "o_orderkey"), ("lineitem", "l_partkey", "part", "p_partkey"),
           ("lineitem", "l_suppkey", "supplier", "s_suppkey")]
    for child, fk, parent, pk in fks:
        assert one(db, f"select count(*) from {child} anti join {parent} on {fk} = {pk}") == 0, (child, fk)
    # every order has lineitems, every part 4 suppliers, (l_partkey, l_suppkey) is a partsupp row
    assert one(db, "select count(*) from orders anti join lineitem on o_orderkey = l_orderkey") == 0
    assert one(db, "select count(*) from lineitem anti join partsupp on l_partkey = ps_partkey "
                   "and l_suppkey = ps_suppkey") == 0
    assert db.execute("select min(c), max(c) from (select count(distinct ps_suppkey) c from partsupp "
                      "group by ps_partkey)").fetchone() == (4, 4)


def test_key_formulas(db):
    # o_custkey is never divisible by 3, so a third of the customers have no orders
    assert one(db, "select count(*) from orders where o_custkey % 3 = 0") == 0
    assert one(db, "select count(distinct o_custkey) from orders") > 900
    # ps_suppkey = (ps_partkey + (i * (S/4 + (ps_partkey - 1) / S))) mod S + 1 for i = 0..3, S = 100
    assert one(db, """select count(*) from partsupp anti join
                      (select p_partkey pk, (p_partkey + i * (25 + (p_partkey - 1) // 100)) % 100 + 1 sk
                       from part, range(4) t(i)) on ps_partkey = pk and ps_suppkey = sk""") == 0
    # p_retailprice = (90000 + ((p_partkey/10) mod 20001) + 100 * (p_partkey mod 1000)) / 100
    assert one(db, "select count(*) from part where abs(p_retailprice - "
                   "(90000 + (p_partkey // 10) % 20001 + 100 * (p_partkey % 1000)) / 100) > 1e-9") == 0
    # l_extendedprice = l_quantity * p_retailprice
    assert one(db, "select count(*) from lineitem join part on l_partkey = p_partkey "
                   "where abs(l_extendedprice - l_quantity * p_retailprice) > 1e-6") == 0


def test_totalprice_and_status_follow_the_lineitems(db):
    # O_TOTALPRICE = sum(L_EXTENDEDPRICE * (1 + L_TAX) * (1 - L_DISCOUNT)), rounded to cents per line
    assert one(db, """select count(*) from orders join (select l_orderkey, count(*) n,
                        sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)) s,
                        count(*) filter (where l_linestatus = 'F') f from lineitem group by l_orderkey)
                      on o_orderkey = l_orderkey
                      where abs(o_totalprice - s) > 0.005 * n + 1e-6
                         or o_orderstatus <> case when f = n then 'F' when f = 0 then 'O' else 'P' end""") == 0
    assert db.execute("select count(distinct o_orderstatus) from orders").fetchone()[0] == 3


def test_dates_flags_and_value_ranges(db):
    assert db.execute("select min(o_orderdate), max(o_orderdate) from orders").fetchone() == \
        db.execute("select date '1992-01-01', date '1998-08-02'").fetchone()
    bad = """select count(*) from lineitem join orders on l_orderkey = o_orderkey where
               l_shipdate - o_orderdate not between 1 and 121 or l_commitdate - o_orderdate not between 30 and 90
               or l_receiptdate - l_shipdate not between 1 and 30
               or l_returnflag <> 'N' and l_receiptdate > date '1995-06-17'
               or l_returnflag = 'N' and l_receiptdate <= date '1995-06-17'
               or l_linestatus <> case when l_shipdate > date '1995-06-17' then 'O' else 'F' end
               or l_quantity not between 1 and 50 or l_quantity <> round(l_quantity)
               or l_discount not between 0 and 0.1 or l_tax not between 0 and 0.08
               or abs(round(l_discount * 100) - l_discount * 100) > 1e-9"""
    assert one(db, bad) == 0
    assert [r[0] for r in db.execute("select distinct l_returnflag from lineitem order by 1").fetchall()] == \
        ["A", "N", "R"]
    assert db.execute("select min(c_acctbal) >= -999.99, max(c_acctbal) <= 9999.99 from customer").fetchone() == \
        (True, True)
    assert db.execute("select min(p_size), max(p_size) from part").fetchone() == (1, 50)
    assert db.execute("select min(ps_availqty) >= 1, max(ps_availqty) <= 9999, min(ps_supplycost) >= 1, "
                      "max(ps_supplycost) <= 1000 from partsupp").fetchone() == (True, True, True, True)
    assert one(db, "select count(*) from customer join nation on c_nationkey = n_nationkey "
                   "where substr(c_phone, 1, 2) <> cast(n_nationkey + 10 as varchar)") == 0


def distinct(db, sql):
    return {r[0] for r in db.execute(sql).fetchall()}


def test_word_lists_are_the_specs(db):
    s1 = {"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"}
    s2 = {"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"}
    s3 = {"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"}
    assert distinct(db, "select p_type from part") == {f"{a} {b} {c}" for a in s1 for b in s2 for c in s3}
    c1, c2 = {"SM", "LG", "MED", "JUMBO", "WRAP"}, {"CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"}
    assert distinct(db, "select p_container from part") == {f"{a} {b}" for a in c1 for b in c2}
    assert distinct(db, "select c_mktsegment from customer") == \
        {"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"}
    assert distinct(db, "select o_orderpriority from orders") == \
        {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
    assert distinct(db, "select l_shipinstruct from lineitem") == \
        {"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
    assert distinct(db, "select l_shipmode from lineitem") == {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
    assert distinct(db, "select p_brand from part") == {f"Brand#{m}{n}" for m in range(1, 6) for n in range(1, 6)}
    assert distinct(db, "select p_mfgr from part") == {f"Manufacturer#{m}" for m in range(1, 6)}
    # p_name: 5 distinct colors of the 92; each color in about 5/92 of the names (Q9 '%green%')
    names = [r[0].split(" ") for r in db.execute("select p_name from part").fetchall()]
    assert all(len(n) == 5 and len(set(n)) == 5 for n in names)
    assert len({w for n in names for w in n}) == 92
    green = sum("green" in n for n in names) / len(names)
    assert 0.035 < green < 0.075
    # nations and regions are the fixed 25 and 5
    assert db.execute("select n_name, r_name from nation join region on n_regionkey = r_regionkey "
                      "where n_nationkey in (7, 24)order by n_nationkey").fetchall() == \
        [("GERMANY", "EUROPE"), ("UNITED STATES", "AMERICA")]
    assert db.execute("select count(distinct n_regionkey), min(c), max(c) from "
                      "(select n_regionkey, count(*) over (partition by n_regionkey) c from nation)").fetchone() == \
        (5, 5, 5)
    # comments come from the grammar (Q13 looks for '%special%requests%')
    assert 0 < one(db, "select count(*) from orders where o_comment like '%special%requests%'") < 15000 * 0.05


def test_same_seed_same_bytes_for_any_thread_count(tug_gen, sf001, tmp_path):
    gen(tug_gen, "pdsh", "--sf", "0.01", "--chunk-rows", "4000", "--threads", "1", "--out", tmp_path / "a")
    assert file_bytes(tmp_path / "a") == file_bytes(sf001)
    gen(tug_gen, "pdsh", "--sf", "0.01", "--chunk-rows", "4000", "--seed", "2", "--out", tmp_path / "b")
    other = file_bytes(tmp_path / "b")
    assert other.keys() == file_bytes(sf001).keys()
    assert other["lineitem/part-00000.parquet"] != file_bytes(sf001)["lineitem/part-00000.parquet"]
    # a rerun into the same directory replaces the files (no stale parts from a larger run)
    gen(tug_gen, "pdsh", "--sf", "0.01", "--out", tmp_path / "b")
    assert len(list((tmp_path / "b" / "lineitem").iterdir())) == 1


def test_wholesale(tug_gen, tmp_path):
    out = gen(tug_gen, "wholesale", "--scale", "0.0001", "--chunk-rows", "3000", "--threads", "2", "--out",
              tmp_path / "a")
    assert "lineitem: 9500 rows" in out
    gen(tug_gen, "wholesale", "--scale", "0.0001", "--chunk-rows", "3000", "--threads", "1", "--out", tmp_path / "b")
    assert file_bytes(tmp_path / "a") == file_bytes(tmp_path / "b")
    con = duckdb.connect()
    for t in ["lineitem", "orders", "customer", "supplier"]:
        con.execute(f"create view {t} as select * from read_parquet('{tmp_path}/a/{t}/*.parquet')")
    assert [one(con, f"select count(*) from {t}") for t in ["lineitem", "orders", "customer", "supplier"]] == \
        [9500, 2375, 237, 20]
    assert pq.read_schema(next((tmp_path / "a" / "lineitem").iterdir())).names == \
        ["l_orderkey", "l_suppkey", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate"]
    # the 4-way join keeps every lineitem
    assert one(con, """select count(*) from lineitem join orders on l_orderkey = o_orderkey
                       join customer on o_custkey = c_custkey join supplier on l_suppkey = s_suppkey""") == 9500


def test_ais(tug_gen, tmp_path):
    gen(tug_gen, "ais", "--rows", "20000", "--chunk-rows", "6000", "--out", tmp_path)
    t = pq.read_table(tmp_path / "ais")
    assert t.num_rows == 20000
    assert t.column_names == ["MMSI", "BaseDateTime", "LAT", "LON", "SOG", "COG", "Heading", "VesselName", "IMO",
                              "CallSign", "VesselType", "Status", "Length", "Width", "Draft", "Cargo",
                              "TransceiverClass"]
    assert t.schema.field("BaseDateTime").type == pa.timestamp("us")
    con = duckdb.connect()
    types = con.execute("select VesselType, count(*) c from t where VesselType is not null "
                        "group by 1 order by c desc").fetchall()
    # a few types dominate: the most frequent one has over a fifth of the rows, the top 3 over 40%
    assert types[0][1] > 0.2 * 20000 and sum(c for _, c in types[:3]) > 0.4 * 20000
    nulls = con.execute("select count(*) filter (where VesselType is null), count(*) filter (where Status is null), "
                        "count(*) filter (where SOG > 100), count(*) filter (where Heading = 511) from t").fetchone()
    assert all(n > 0 for n in nulls), nulls
