"""The Python API's overhead over the C++ API on PDS-H: each query of bench/pdsh/polars_queries.py, unchanged
(its `pl` swapped for `tug`), through the Python API, and the C++ query of the same number (tug_pdsh), in the
same run, interleaved query by query; medians of --reps runs after a warm one (docs/python.md).

    .venv/bin/python bench/pdsh_python.py --data bench/data/pdsh-sf1 [--build build] [--reps 3]
"""
import argparse
import importlib.util
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--engine", default="cpu")
    a = ap.parse_args()
    import sys

    sys.path.insert(0, str(Path(a.build) / "python"))
    import tug

    spec = importlib.util.spec_from_file_location("pq", REPO / "bench" / "pdsh" / "polars_queries.py")
    pq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pq)
    pq.pl = tug
    tables = pq.Tables(**{n: tug.scan_parquet(f"{a.data}/{n}/*.parquet") for n in pq.TABLE_NAMES})
    total_cpp = total_py = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for q in sorted(pq.QUERIES):
            try:
                pq.QUERIES[q](tables).collect(engine=a.engine)
            except tug.TugError as e:
                print(f"q{q:02d} skipped: the Python form does not run on tug ({e})")
                continue
            out = Path(tmp) / "c.json"
            subprocess.run([str(Path(a.build) / "tug_pdsh"), "--data", a.data, "--query", str(q), "--engine",
                            a.engine, "--reps", str(a.reps), "--json", str(out)], capture_output=True, check=True)
            cpp = json.loads(out.read_text())["queries"][0]["median_s"]
            times = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                pq.QUERIES[q](tables).collect(engine=a.engine)
                times.append(time.perf_counter() - t0)
            py = statistics.median(times)
            total_cpp += cpp
            total_py += py
            print(f"q{q:02d} C++ {cpp:.3f} s  Python {py:.3f} s  ratio {py / cpp:.2f}", flush=True)
    print(f"total C++ {total_cpp:.2f} s  Python {total_py:.2f} s  ratio {total_py / total_cpp:.3f}")


if __name__ == "__main__":
    main()
