#!/usr/bin/env python3
"""A/B of two tug_pdsh configurations on PDS-H, interleaved so that both see the same machine: for each
query, round after round, one tug_pdsh process runs it with A's flags and one with B's (the order
alternating), each timing `--reps` warm runs after its cold one. A and B may also be two builds (a
change's before and after: --build for A, --b-build for B). Both sides must return the same number of
rows. Prints and writes (--out) a Markdown table of the medians over all warm runs of each side and
their ratio B/A, per query and in total.

usage: bench/pdsh_ab.py --data DIR [--build build] [--b-build DIR] [--queries all] [--rounds 3] [--reps 2]
                        [--a "--engine cpu"] [--b "--engine cpu --no-late-materialization"]
                        [--labels "A,B"] [--out FILE.md]
  e.g. before/after a change: --build /tmp/base/build --b-build build --a "--engine cpu"
       --b "--engine cpu" --labels "main,change"
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(build, data, q, flags, reps):
    with tempfile.NamedTemporaryFile(suffix=".json") as js:
        cmd = [str(Path(build) / "tug_pdsh"), "--data", str(data), "--query", str(q), "--reps", str(reps),
               "--json", js.name] + shlex.split(flags)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        rec = json.loads(Path(js.name).read_text())["queries"][0]
    if "error" in rec:
        raise RuntimeError(f"q{q} {flags}: {rec['error']}")
    return rec["times_s"], rec["rows"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--build", default=str(REPO / "build"), help="A's build (and B's unless --b-build)")
    ap.add_argument("--b-build", help="B's build (default: --build)")
    ap.add_argument("--queries", default="all")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--a", default="--engine cpu")
    ap.add_argument("--b", default="--engine cpu --no-late-materialization")
    ap.add_argument("--labels", default="A,B", help="names of the two sides in the table")
    ap.add_argument("--out")
    args = ap.parse_args()
    b_build = args.b_build or args.build
    la, lb = (args.labels.split(",") + ["B"])[:2]
    if args.queries == "all":
        out = subprocess.run([str(Path(args.build) / "tug_pdsh"), "--list"], capture_output=True, text=True,
                             check=True).stdout
        queries = [int(x) for x in out.split()]
    else:
        queries = [int(x) for x in args.queries.split(",")]
    lines = [f"{la}: `{args.a}` ({args.build}); {lb}: `{args.b}` ({b_build}); {args.rounds} rounds of "
             f"{args.reps} warm runs each, interleaved; medians in seconds; data {args.data}", "",
             f"| query | {la} | {lb} | {lb} / {la} |", "| --- | --- | --- | --- |"]
    tot_a = tot_b = 0.0
    for q in queries:
        ta, tb = [], []
        for r in range(args.rounds):
            sides = [(args.build, args.a, ta), (b_build, args.b, tb)]
            rows = set()
            for build, flags, acc in (sides if r % 2 == 0 else sides[::-1]):
                times, n = run(build, args.data, q, flags, args.reps)
                acc += times
                rows.add(n)
            if len(rows) != 1:
                raise RuntimeError(f"q{q}: {la} and {lb} return different row counts {sorted(rows)}")
        ma, mb = statistics.median(ta), statistics.median(tb)
        tot_a, tot_b = tot_a + ma, tot_b + mb
        lines.append(f"| Q{q} | {ma:.4f} | {mb:.4f} | {mb / ma:.2f} |")
        print(lines[-1], flush=True)
    lines.append(f"| total | {tot_a:.3f} | {tot_b:.3f} | {tot_b / tot_a:.2f} |")
    print(lines[-1])
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
