"""Runs random differential cases: generates tables and queries, runs them in tug (tools/tug_difftest, one
process per batch) and in DuckDB, and compares the results.

Command line (reproduction): python3 tests/differential/diff_harness.py --seed S [--case I] [--cases N] [-v]
"""
from __future__ import annotations

import argparse
import decimal
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diff_queries import QueryGen  # noqa: E402
from diff_tables import TS, days_of, make_table, ticks_of  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CASES_PER_SEED = 100
REL_TOL = 1e-9
ABS_TOL = 1e-9


def find_binary():
    """The tug_difftest executable: $TUG_BUILD_DIR/tug_difftest, else build/tug_difftest."""
    build = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build"))
    exe = build / "tug_difftest"
    if not exe.is_file():
        raise FileNotFoundError(
            f"tug_difftest not found at {exe}: build it (cmake with TUG_BUILD_TESTS=ON, then `ninja -C {build} "
            "tug_difftest`) or set TUG_BUILD_DIR to the build directory")
    return exe


# ---------------------------------------------------------------------------------------------- cases
def make_case(seed, index):
    """Case `index` of seed `seed`: deterministic in (seed, index)."""
    rng = np.random.default_rng([seed, index])
    t0, cols0, _ = make_table(rng, "a_")
    tables = {"t0": t0}
    colmap = {"t0": cols0}
    if rng.random() < 0.5:
        t1, cols1, _ = make_table(rng, "b_")
        tables["t1"] = t1
        colmap["t1"] = cols1
    plan, sql, types, ordered = QueryGen(rng, colmap).query()
    options = {"target_partition_rows": int(rng.choice([7, 16, 31, 32, 33, 64, 1 << 20]))}
    return {"id": f"{seed}:{index}", "tables": tables, "options": options, "plan": plan,
            "sql": sql, "expected_types": types, "ordered": ordered}


# ---------------------------------------------------------------------------------------------- DuckDB
def arrow_column(t, values):
    if t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        typ = {"i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(), "u8": pa.uint8(),
               "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64()}[t]
        return pa.array([None if v is None else int(v) for v in values], typ)
    if t in ("f32", "f64"):  # "NaN", "inf" and "-inf" come as strings
        return pa.array([None if v is None else float(v) for v in values], pa.float32() if t == "f32" else pa.float64())
    if t == "bool":
        return pa.array(values, pa.bool_())
    if t == "str":
        return pa.array(values, pa.string())
    if t == "date":
        return pa.array(values, pa.int32()).cast(pa.date32())
    if t == TS:
        return pa.array(values, pa.int64()).cast(pa.timestamp("us"))
    if t.startswith("decimal["):
        p, s = (int(x) for x in t[8:-1].split(","))
        return pa.array([None if v is None else decimal.Decimal(v) for v in values], pa.decimal128(p, s))
    raise ValueError(t)


def duck_connect():
    """A DuckDB connection set up as the oracle: division by zero gives null, one thread."""
    con = duckdb.connect()
    con.execute("SET error_on_division_by_zero=false")
    con.execute("SET threads=1")
    # DuckDB 2.0.1's compressed materialization sums a UTINYINT column modulo 256 over a left join with
    # an empty right side (seed 21 case 17 once the tables had numerically hard columns): off
    con.execute("SET disabled_optimizers = 'compressed_materialization'")
    return con


def run_duckdb(con, case):
    for name, t in case["tables"].items():
        arrays = [arrow_column(f["type"], col) for f, col in zip(t["schema"], t["columns"])]
        n = len(t["columns"][0]) if t["columns"] else 0
        arrays.append(pa.array(range(n), pa.int64()))
        names = [f["name"] for f in t["schema"]] + ["__ord"]
        con.register(f"__arrow_{name}", pa.Table.from_arrays(arrays, names=names))
        con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS SELECT * FROM "__arrow_{name}"')
        con.unregister(f"__arrow_{name}")
    return con.execute(case["sql"]).fetchall()


def canon_duck(v, t):
    """A DuckDB value in tug_difftest's output form for tug type t."""
    if v is None:
        return None
    if t == "date":
        return days_of(v)
    if t == TS:
        return ticks_of(v)
    if t.startswith("decimal["):
        return decimal.Decimal(v)
    if t in ("f32", "f64"):
        return float(v)
    return v


def canon_tug(v, t):
    if v is None:
        return None
    if t.startswith("decimal["):
        return decimal.Decimal(v)
    if t in ("f32", "f64"):
        return float(v)  # "NaN", "inf" parse too
    return v


def sort_key(row):
    key = []
    for v in row:
        if v is None:
            key.append((0, 0, ""))
        elif isinstance(v, bool):
            key.append((1, int(v), ""))
        elif isinstance(v, float):
            key.append((1, float(f"{v:.8g}") if math.isfinite(v) else (v if not math.isnan(v) else math.inf), ""))
        elif isinstance(v, (int, decimal.Decimal)):
            key.append((1, v, ""))
        else:
            key.append((2, 0, str(v)))
    return key


def values_equal(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b and type(a) is type(b) if isinstance(a, bool) or isinstance(b, bool) else a == b


def compare(case, result, duck_rows):
    """None when tug's result matches DuckDB's, else a description of the first difference."""
    if "error" in result:
        return f"tug raised {result['error']}: {result['message']}"
    exp = case["expected_types"]
    got = [(f["name"], f["type"]) for f in result["schema"]]
    if [n for n, _ in got] != [n for n, _ in exp]:
        return f"column names differ: tug {[n for n, _ in got]} expected {[n for n, _ in exp]}"
    if got != [tuple(e) for e in exp]:
        return f"column types differ: tug {got} expected {[tuple(e) for e in exp]}"
    types = [t for _, t in exp]
    tug_rows = [[canon_tug(v, t) for v, t in zip(r, types)] for r in result["rows"]]
    duck = [[canon_duck(v, t) for v, t in zip(r, types)] for r in duck_rows]
    if len(tug_rows) != len(duck):
        extra = ""
        if not case["ordered"]:
            tug_rows.sort(key=sort_key)
            duck.sort(key=sort_key)
        return (f"row counts differ: tug {len(tug_rows)}, DuckDB {len(duck)}{extra}\n  tug first rows: "
                f"{tug_rows[:5]}\n  duckdb first rows: {duck[:5]}")
    if not case["ordered"]:
        tug_rows.sort(key=sort_key)
        duck.sort(key=sort_key)
    for i, (a, b) in enumerate(zip(tug_rows, duck)):
        if len(a) != len(b) or not all(values_equal(x, y) for x, y in zip(a, b)):
            lo = max(0, i - 1)
            return (f"row {i} differs ({'in order' if case['ordered'] else 'after sorting both'}):\n"
                    f"  tug:    {tug_rows[lo:i + 2]}\n  duckdb: {duck[lo:i + 2]}")
    return None


# ---------------------------------------------------------------------------------------------- running
def launcher(key=""):
    """mpirun and its arguments when TUG_DIFFTEST_RANKS asks for ranks (docs/architecture.md, "Multi-rank
    execution"); else nothing. TUG_DIFFTEST_RANKS=N (N > 1): every batch of cases on N ranks; a list such
    as 1,2,4: each batch on one of those counts, picked by `key` (the batch's seed), under mpirun even for
    1 rank."""
    spec = os.environ.get("TUG_DIFFTEST_RANKS", "1").strip()
    counts = [int(x) for x in spec.split(",") if x.strip()]
    if not counts or any(c < 1 for c in counts):
        raise RuntimeError(f"TUG_DIFFTEST_RANKS={spec!r}: a rank count, or a comma-separated list of them, each at least 1")
    if len(counts) == 1 and counts[0] <= 1:
        return []
    n = counts[(int(key) if key.isdigit() else zlib.crc32(key.encode())) % len(counts)]
    mpirun = shutil.which(os.environ.get("MPIRUN", "mpirun"))
    if not mpirun:
        raise RuntimeError("TUG_DIFFTEST_RANKS is set but mpirun is not on PATH (scripts/setup.sh installs openmpi-bin)")
    args = [mpirun, "--oversubscribe", "-np", str(n)]
    if os.geteuid() == 0:
        args.append("--allow-run-as-root")
    return args


def run_tug(cases, exe):
    payload = {"cases": [{k: c[k] for k in ("id", "tables", "options", "plan")} for c in cases]}
    with tempfile.TemporaryDirectory() as d:
        inp, out = Path(d) / "cases.json", Path(d) / "results.json"
        inp.write_text(json.dumps(payload))
        ranks = launcher(cases[0]["id"].split(":")[0] if cases else "")
        proc = subprocess.run(ranks + [str(exe), str(inp), str(out)], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not out.exists():
            where = f" on {ranks[ranks.index('-np') + 1]} ranks" if ranks else ""
            raise RuntimeError(f"tug_difftest failed{where} (exit {proc.returncode}): {proc.stderr[-4000:]}")
        results = json.loads(out.read_text())["results"]
    if len(results) != len(cases):
        raise RuntimeError(f"tug_difftest returned {len(results)} results for {len(cases)} cases")
    return results


def describe(case, why, oracle="tug"):
    seed, index = case["id"].split(":")
    how = "" if oracle == "tug" else f" --oracle {oracle}"
    return (f"--- case {case['id']} MISMATCH: {why}\n"
            f"reproduce: python3 tests/differential/diff_harness.py --seed {seed} --case {index}{how} -v\n"
            f"plan: {json.dumps(case['plan'])}\n"
            f"options: {json.dumps(case['options'])}\n"
            f"sql:\n{case['sql']}\n")


def run_cases(cases, exe=None, oracle="tug"):
    """Runs cases in one tug_difftest process ("tug"), through tug's Python API in this process ("python"),
    or through Polars ("polars", to check the harness); returns (failures, stats)."""
    if oracle == "polars":
        import diff_polars
        results = [diff_polars.run_case(c) for c in cases]
        for r in results:
            if "names" in r and r["names"] != [f["name"] for f in r["schema"]]:
                r["schema"] = [{"name": n, "type": "?"} for n in r["names"]]
    elif oracle == "python":
        import diff_polars
        results = [diff_polars.run_case_python(c) for c in cases]
    else:
        results = run_tug(cases, exe or find_binary())
    con = duck_connect()
    failures = []
    stats = {"cases": len(cases), "not_implemented": 0, "matched": 0, "both_raised": 0}
    for case, res in zip(cases, results):
        try:
            duck = run_duckdb(con, case)
        except (duckdb.OutOfRangeException, duckdb.ConversionException) as e:
            # a value out of its type's range (a decimal past 38 digits): tug must raise too
            if res.get("error") == "compute_error":
                stats["both_raised"] += 1
                stats["matched"] += 1
            else:
                failures.append(describe(case, f"DuckDB raised {type(e).__name__}: {e}\n  tug gave: "
                                               f"{res.get('error') or str(res.get('rows'))[:300]}", oracle))
            continue
        except Exception as e:  # the oracle must accept every other generated query: a harness bug otherwise
            failures.append(describe(case, f"DuckDB failed: {type(e).__name__}: {e}", oracle))
            continue
        if res.get("error") == "not_implemented_error":
            stats["not_implemented"] += 1
        why = compare(case, res, duck)
        if why is None:
            stats["matched"] += 1
        else:
            failures.append(describe(case, why, oracle))
    con.close()
    return failures, stats


def run_seed(seed, n=CASES_PER_SEED, only=None, oracle="tug"):
    idx = [only] if only is not None else range(n)
    cases = [make_case(seed, i) for i in idx]
    return run_cases(cases, oracle=oracle)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--case", type=int)
    ap.add_argument("--cases", type=int, default=CASES_PER_SEED)
    ap.add_argument("-v", "--verbose", action="store_true", help="print the case's tables and both results")
    ap.add_argument("--oracle", choices=["tug", "python", "polars"], default="tug",
                    help="what runs the plans: tug (tug_difftest, the C++ API), python (tug's Python API; the "
                         "package of $TUG_BUILD_DIR/python) or polars (checks the harness)")
    ap.add_argument("--dump", help="write the cases JSON (tug_difftest input) to this file")
    args = ap.parse_args()
    idx = [args.case] if args.case is not None else range(args.cases)
    cases = [make_case(args.seed, i) for i in idx]
    if args.dump:
        Path(args.dump).write_text(json.dumps({"cases": cases}, indent=1))
    failures, stats = run_cases(cases, oracle=args.oracle)
    if args.verbose and args.case is not None:
        c = cases[0]
        print("tables:", json.dumps(c["tables"]))
        print("plan:", json.dumps(c["plan"], indent=1))
        print("sql:", c["sql"])
        print("tug:", json.dumps(run_tug(cases, find_binary())[0])[:20000])
        print("duckdb:", run_duckdb(duck_connect(), c)[:200])
    for f in failures:
        print(f)
    print(f"{stats['cases']} cases, {stats['matched']} matched ({stats['both_raised']} raised on both sides), "
          f"{len(failures)} mismatches ({stats['not_implemented']} not implemented in tug)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
