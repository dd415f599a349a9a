#!/usr/bin/env python3
"""The benchmark guard (`make bench-check`): run by hand after every change to execution, the optimizer or
I/O; never a CI pass/fail (timings on shared machines are noisy).

It runs, in one go on this machine:
  - PDS-H SF1 on tug's CPU engine with DuckDB and Polars (bench/pdsh.py), and
  - the core micro-benchmarks against the same peers (bench/run.py),
then compares tug's per-query ratio to the fastest peer (measured in the same run, so a slower or busier
machine cancels out) with the last committed results of the same kind of machine under bench/results/,
and prints every query whose ratio got more than --threshold (1.25) times worse, plus the PDS-H goals
(total at most 1.5x the fastest peer's, no query worse than 3x).

usage: bench/check.py [--build build] [--machine 2cores] [--reps 3] [--threshold 1.25] [--out DIR]
                      [--skip-core] [--skip-pdsh] [--baseline-pdsh DIR] [--baseline-core DIR]
       bench/check.py --compare NEW_PDSH_DIR [--baseline-pdsh DIR]   (no run: compare two result dirs)
Exit status: 0 when no query regressed beyond the threshold, 1 otherwise (for scripting, not for CI).
"""
import argparse
import datetime
import fnmatch
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
TUG = "tug-cpu"
PEERS = ["duckdb", "polars"]
GOAL_TOTAL, GOAL_QUERY = 1.5, 3.0


def last_committed(kind, machine, exclude=None):
    """The newest committed results directory of `kind` ("pdsh": PDS-H SF1, "core": the micro-benchmarks)
    from this kind of machine: bench/results/<date>-pdsh-sf1-<machine>, <date>-core-cpu-<machine>, or the
    pdsh/ or core/ folder of a <date>-bench-check[-sf1]-<machine>[-<suffix>] (sessions name theirs, e.g.
    ...-bench-check-sf1-2cores-session19). None when git tracks none."""
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "bench/results"], capture_output=True,
                             text=True, check=True).stdout.split()
    own = {"pdsh": f"*-pdsh-sf1-{machine}", "core": f"*-core-cpu-{machine}"}[kind]
    found = set()
    for f in tracked:
        d = Path(f).parent
        if Path(f).name != "results.json" or len(d.parts) < 3:
            continue
        top = d.parts[2]
        if (len(d.parts) == 3 and fnmatch.fnmatch(top, own)) or \
           (len(d.parts) == 4 and d.name == kind and
            any(fnmatch.fnmatch(top, f"*-bench-check-{form}{machine}{tail}")
                for form in ("", "sf1-") for tail in ("", "-*"))):
            if exclude is None or not (REPO / d).resolve().is_relative_to(Path(exclude).resolve()):
                found.add(d)
    return REPO / max(found, key=lambda d: d.parts[2]) if found else None


def pdsh_ratios(directory):
    """{query: tug median / fastest peer median} and the totals' ratio of a pdsh.py results dir."""
    doc = json.loads((Path(directory) / "results.json").read_text())
    res = doc["results"]
    out, tot_tug, tot_peer = {}, 0.0, {p: 0.0 for p in PEERS}
    for q in map(str, doc["meta"]["queries"]):
        t = res.get(TUG, {}).get(q, {}).get("median_s")
        peers = [res.get(p, {}).get(q, {}).get("median_s") for p in PEERS]
        if t is None or any(p is None for p in peers):
            continue
        out[q] = t / min(peers)
        tot_tug += t
        for p, v in zip(PEERS, peers):
            tot_peer[p] += v
    total = tot_tug / min(tot_peer.values()) if out else None
    return out, total, tot_tug


def core_ratios(directory):
    """{query: tug median / fastest peer median} of a bench/run.py results dir."""
    doc = json.loads((Path(directory) / "results.json").read_text())
    sec = doc["seconds"]
    peers = [e for e in sec if e != "tug"]
    out = {}
    for q, times in sec.get("tug", {}).items():
        pm = [statistics.median(sec[p][q]) for p in peers if sec[p].get(q)]
        if times and pm:
            out[q] = statistics.median(times) / min(pm)
    return out


def compare(kind, new, old, threshold):
    """Prints a table of ratios (new against old) and returns the keys that got worse than threshold."""
    worse = []
    print(f"\n{kind}: tug / fastest peer, this run against the baseline (worse than {threshold}x is flagged)")
    print(f"{'query':>14} {'now':>7} {'before':>7} {'change':>7}")
    for q in sorted(new, key=lambda k: (len(k), k)):
        b = old.get(q)
        if b is None:
            print(f"{q:>14} {new[q]:7.2f} {'-':>7}")
            continue
        change = new[q] / b
        flag = "  WORSE" if change > threshold else ""
        if flag:
            worse.append(q)
        print(f"{q:>14} {new[q]:7.2f} {b:7.2f} {change:7.2f}{flag}")
    return worse


def check_pdsh(new_dir, base_dir, threshold):
    new, total, tug_s = pdsh_ratios(new_dir)
    print(f"\nPDS-H SF1: {new_dir}")
    if base_dir is None:
        print("  no committed baseline of this machine kind: nothing to compare with")
        worse = []
    else:
        print(f"  baseline: {base_dir}")
        old, old_total, _ = pdsh_ratios(base_dir)
        worse = compare("PDS-H", new, old, threshold)
        if old_total:
            print(f"{'total':>14} {total:7.2f} {old_total:7.2f} {total / old_total:7.2f}")
    bad = [q for q, r in new.items() if r > GOAL_QUERY]
    print(f"\n  goal: total at most {GOAL_TOTAL}x the fastest peer: {total:.2f}x "
          f"({'met' if total <= GOAL_TOTAL else 'NOT met'}; tug {tug_s:.2f} s)")
    print(f"  goal: no query worse than {GOAL_QUERY}x: "
          + ("met" if not bad else "NOT met: " + ", ".join(f"Q{q} {new[q]:.2f}x" for q in bad)))
    return [f"Q{q}" for q in worse]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--machine", default=f"{os.cpu_count()}cores",
                    help="machine kind: names the output and picks the baseline (default <cores>cores)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=1.25)
    ap.add_argument("--out", help="default bench/results/<date>-bench-check-<machine>")
    ap.add_argument("--skip-core", action="store_true")
    ap.add_argument("--skip-pdsh", action="store_true")
    ap.add_argument("--baseline-pdsh", help="default: the last committed *-pdsh-sf1-<machine> or bench-check")
    ap.add_argument("--baseline-core", help="default: the last committed *-core-cpu-<machine> or bench-check")
    ap.add_argument("--compare", metavar="NEW_PDSH_DIR", help="compare an existing PDS-H results dir, run nothing")
    args = ap.parse_args()

    def baseline(kind, given, exclude):
        return Path(given) if given else last_committed(kind, args.machine, exclude)

    if args.compare:
        worse = check_pdsh(args.compare, baseline("pdsh", args.baseline_pdsh, args.compare), args.threshold)
        return 1 if worse else 0

    date = datetime.date.today().isoformat()
    out = Path(args.out or RESULTS / f"{date}-bench-check-{args.machine}")
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    worse = []
    if not args.skip_pdsh:
        base = baseline("pdsh", args.baseline_pdsh, out)
        cmd = [py, str(REPO / "bench" / "pdsh.py"), "--sf", "1", "--reps", str(args.reps), "--engines",
               ",".join([TUG] + PEERS), "--build", args.build, "--machine", args.machine, "--out", str(out / "pdsh")]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=REPO)
        worse += check_pdsh(out / "pdsh", base, args.threshold)
    if not args.skip_core:
        base = baseline("core", args.baseline_core, out)
        cmd = [py, str(REPO / "bench" / "run.py"), "--build", args.build, "--reps", str(max(args.reps, 5)),
               "--out", str(out / "core")]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=REPO)
        new = core_ratios(out / "core")
        if base is None:
            print("\ncore: no committed baseline of this machine kind: nothing to compare with")
        else:
            print(f"\ncore micro-benchmarks: {out / 'core'}\n  baseline: {base}")
            worse += compare("core", new, core_ratios(base), args.threshold)
    print("\n" + ("no query got more than {:.2f}x worse".format(args.threshold) if not worse
                  else "got more than {:.2f}x worse: {}".format(args.threshold, ", ".join(worse))))
    print(f"results: {out}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
