#!/usr/bin/env python3
"""A/B of two tug_pdsh configurations on PDS-H, interleaved so that both see the same machine: for each
query, round after round, one tug_pdsh process runs it with A's flags and one with B's (the order
alternating), each timing `--reps` warm runs after its cold one. Prints and writes (--out) a Markdown
table of the medians over all warm runs of each side and their ratio B/A, per query and in total.

usage: bench/pdsh_ab.py --data DIR [--build build] [--queries all] [--rounds 3] [--reps 2]
                        [--a "--engine cpu"] [--b "--engine cpu --no-late-materialization"] [--out FILE.md]
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
    return rec["times_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--queries", default="all")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--a", default="--engine cpu")
    ap.add_argument("--b", default="--engine cpu --no-late-materialization")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.queries == "all":
        out = subprocess.run([str(Path(args.build) / "tug_pdsh"), "--list"], capture_output=True, text=True,
                             check=True).stdout
        queries = [int(x) for x in out.split()]
    else:
        queries = [int(x) for x in args.queries.split(",")]
    lines = [f"A: `{args.a}`; B: `{args.b}`; {args.rounds} rounds of {args.reps} warm runs each, interleaved; "
             f"medians in seconds; data {args.data}", "",
             "| query | A | B | B / A |", "| --- | --- | --- | --- |"]
    tot_a = tot_b = 0.0
    for q in queries:
        ta, tb = [], []
        for r in range(args.rounds):
            sides = [(args.a, ta), (args.b, tb)]
            for flags, acc in (sides if r % 2 == 0 else sides[::-1]):
                acc += run(args.build, args.data, q, flags, args.reps)
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
