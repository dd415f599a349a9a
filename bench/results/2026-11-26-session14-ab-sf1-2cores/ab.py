#!/usr/bin/env python3
"""Interleaved A/B of two tug_pdsh binaries (A: session 14's start, 6bd95a4; B: HEAD) on PDS-H SF1,
CPU engine: for each
round and query, A and B run one after the other (the order alternating), each timing `reps` warm runs
after its cold one; the table gives the median of all warm runs of each side and B/A.
usage: ab.py A_BUILD B_BUILD DATA [rounds] [reps] > table.md"""
import json, statistics, subprocess, sys, tempfile

a_build, b_build, data = sys.argv[1:4]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
reps = int(sys.argv[5]) if len(sys.argv) > 5 else 2


def run(build, q):
    with tempfile.NamedTemporaryFile(suffix=".json") as js:
        subprocess.run([f"{build}/tug_pdsh", "--data", data, "--query", str(q), "--engine", "cpu", "--reps",
                        str(reps), "--json", js.name], check=True, stdout=subprocess.DEVNULL)
        rec = json.load(open(js.name))["queries"][0]
    assert "error" not in rec, rec
    return rec["times_s"], rec["rows"]


times = {q: {"A": [], "B": []} for q in range(1, 23)}
for r in range(rounds):
    for q in range(1, 23):
        order = ["A", "B"] if (r + q) % 2 == 0 else ["B", "A"]
        rows = {}
        for side in order:
            t, rows[side] = run(a_build if side == "A" else b_build, q)
            times[q][side] += t
        assert rows["A"] == rows["B"], (q, rows)
print("| query | A (6bd95a4) | B (HEAD) | B/A |\n| --- | --- | --- | --- |")
ta = tb = 0.0
for q in range(1, 23):
    a, b = statistics.median(times[q]["A"]), statistics.median(times[q]["B"])
    ta += a
    tb += b
    print(f"| Q{q} | {a:.4f} | {b:.4f} | {b / a:.2f} |")
print(f"| **total** | {ta:.3f} | {tb:.3f} | {tb / ta:.2f} |")
