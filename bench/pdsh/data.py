"""PDS-H data directories for the tests and the harness: DIR/<table>/part-00000.parquet with the contract
types of bench/pdsh/queries.hpp (integers int64, money/quantities float64, dates date32, text string).

`ensure_data(dir, sf, build_dir)` generates DIR when it has no lineitem table yet: with `tug_gen pdsh` when
that program exists in the build directory, else with tpchgen-cli (the fallback and cross-check generator,
requirements-dev.txt), whose decimals and integers DuckDB casts to the contract types.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]


def tug_gen_path(build_dir):
    exe = Path(build_dir) / "tug_gen"
    return exe if exe.exists() else None


def tpchgen_path():
    """tpchgen-cli beside the running Python (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    return str(beside) if beside.exists() else shutil.which("tpchgen-cli")


def _contract_type(duck_type):
    t = duck_type.upper()
    if t.startswith("DECIMAL") or t in ("FLOAT", "DOUBLE"):
        return "DOUBLE"
    if t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "HUGEINT"):
        return "BIGINT"
    if t == "DATE":
        return "DATE"
    return "VARCHAR"


def convert_tpchgen(raw_dir, out_dir):
    """Rewrites tpchgen-cli's RAW_DIR/<table>.parquet as OUT_DIR/<table>/part-00000.parquet in contract types."""
    import duckdb

    con = duckdb.connect()
    for table in TABLES:
        src = Path(raw_dir) / f"{table}.parquet"
        cols = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{src}')").fetchall()
        select = ", ".join(f'CAST("{name}" AS {_contract_type(typ)}) AS "{name}"' for name, typ, *_ in cols)
        (Path(out_dir) / table).mkdir(parents=True, exist_ok=True)
        dst = Path(out_dir) / table / "part-00000.parquet"
        con.execute(f"COPY (SELECT {select} FROM read_parquet('{src}')) TO '{dst}' (FORMAT PARQUET)")


def generate(out_dir, sf, build_dir):
    """Generates the PDS-H tables at scale factor `sf` into OUT_DIR; returns the generator used."""
    out_dir = Path(out_dir)
    gen = tug_gen_path(build_dir)
    if gen is not None:
        subprocess.run([str(gen), "pdsh", "--sf", str(sf), "--out", str(out_dir)], check=True)
        return "tug_gen"
    cli = tpchgen_path()
    if cli is None:
        raise RuntimeError("neither tug_gen (build it) nor tpchgen-cli (pip install tpchgen-cli) is available")
    with tempfile.TemporaryDirectory() as raw:
        subprocess.run([cli, "parquet", "-s", str(sf), "--output-dir", raw], check=True, capture_output=True)
        convert_tpchgen(raw, out_dir)
    return "tpchgen-cli"


def ensure_data(out_dir, sf, build_dir):
    """OUT_DIR, generated first when its lineitem table is missing."""
    if not (Path(out_dir) / "lineitem").exists():
        os.makedirs(out_dir, exist_ok=True)
        generate(out_dir, sf, build_dir)
    return Path(out_dir)
