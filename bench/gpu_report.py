#!/usr/bin/env python3
"""Turns the GPU suite's Google Benchmark JSON (tug_bench --benchmark_filter='^tug_gpu/'
--benchmark_out=FILE) into a Markdown table and, when matplotlib is installed, a PNG bar chart.

    python3 bench/gpu_report.py gpu_bench.json [--md table.md] [--png chart.png]

Benchmarks are named tug_gpu/<query>/<gpu|cpu>; each figure is the median over repetitions. The
speed-up compares rows per second, since the CPU peer of an operator query may run on fewer rows
(its label says so). A truncated file (a run stopped by a timeout) is read up to its last complete
benchmark. Uses only the standard library (and matplotlib for the chart).
"""
import argparse
import json
import sys

# Goals of issue 5: fraction of the copy bandwidth for these operator queries, speed-up for the seeds.
BANDWIDTH_GOAL = {"filter_sum_f64": 0.5, "filter_sum_i64": 0.5, "group_by_100_groups": 0.5}
SEED_SPEEDUP_GOAL = 10.0


def load(path):
    """The benchmark list of a JSON file, also from a file cut off in the middle of the list."""
    text = open(path).read()
    try:
        return json.loads(text).get("benchmarks", [])
    except json.JSONDecodeError:
        pass
    start = text.find('"benchmarks"')
    if start < 0:
        return []
    start = text.find("[", start)
    out, dec, i = [], json.JSONDecoder(), start + 1
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            return out
        out.append(obj)


SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def collect(benchmarks):
    """{(query, engine): result} from the median aggregates and the errors."""
    res = {}
    for b in benchmarks:
        parts = b.get("run_name", b.get("name", "")).split("/")
        if len(parts) < 3 or parts[0] != "tug_gpu":
            continue
        key = (parts[1], parts[2])
        if b.get("error_occurred"):
            res.setdefault(key, {"error": b.get("error_message", "error")})
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        r = {
            "seconds": b["real_time"] * SCALE.get(b.get("time_unit", "ns"), 1e-9),
            "gbs": b.get("GB/s"),
            "copy_frac": b.get("copy_frac"),
            "rows": b.get("rows"),
            "label": b.get("label", ""),
            "reps": b.get("repetitions", 1),
        }
        res[key] = r
    return res


def speedup(gpu, cpu):
    if not gpu or not cpu or "seconds" not in gpu or "seconds" not in cpu:
        return None
    if not gpu["rows"] or not cpu["rows"] or not gpu["seconds"] or not cpu["seconds"]:
        return None
    return (gpu["rows"] / gpu["seconds"]) / (cpu["rows"] / cpu["seconds"])


def fmt_s(r):
    if r is None:
        return "-"
    if "error" in r:
        return "error"
    return f"{r['seconds']:.4g}"


def table(res):
    queries = []
    for q, _ in res:
        if q not in queries and q != "d2d_copy":
            queries.append(q)
    copy = res.get(("d2d_copy", "gpu"), {})
    lines = []
    if "seconds" in copy:
        lines.append(f"Device: {copy['label'] or 'GPU'}; device-to-device copy {copy['gbs']:.0f} GB/s "
                     "(bytes read + written, CUDA events, median).")
    elif copy:
        lines.append(f"Device-to-device copy: {copy.get('error', 'not measured')}.")
    lines.append("GB/s = bytes of input read / median time; speed-up = GPU rows/s over CPU rows/s "
                 "(CPU = tug's CPU engine on all host cores).")
    lines.append("")
    lines.append("| query | GPU median (s) | GB/s | % of copy BW | CPU median (s) | CPU rows | speed-up | goal | notes |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for q in queries:
        g, c = res.get((q, "gpu")), res.get((q, "cpu"))
        s = speedup(g, c)
        gbs = f"{g['gbs']:.0f}" if g and g.get("gbs") is not None else "-"
        frac = g.get("copy_frac") if g else None
        pct = f"{100 * frac:.1f}%" if frac is not None else "-"
        goal = ""
        if q in BANDWIDTH_GOAL and frac is not None:
            goal = f"{'met' if frac >= BANDWIDTH_GOAL[q] else 'not met'} (>= {100 * BANDWIDTH_GOAL[q]:.0f}% BW)"
        elif q.startswith("seed_") and s is not None:
            goal = f"{'met' if s >= SEED_SPEEDUP_GOAL else 'not met'} (>= {SEED_SPEEDUP_GOAL:.0f}x)"
        errors = {who: r["error"] for r, who in ((g, "GPU"), (c, "CPU")) if r and "error" in r}
        if len(errors) == 2 and errors["GPU"] == errors["CPU"]:
            errors = {"GPU and CPU": errors["GPU"]}
        notes = [f"{who}: {e}" for who, e in errors.items()]
        if g and g.get("label"):
            notes.append(g["label"])  # the GPU plan's fallbacks, or the seed query's source
        cpu_rows = f"{c['rows']:.3g}" if c and c.get("rows") else "-"
        if g and c and g.get("rows") and c.get("rows") and g["rows"] != c["rows"]:
            cpu_rows += f" (GPU {g['rows']:.3g})"
        note = "; ".join(notes)
        lines.append(f"| {q} | {fmt_s(g)} | {gbs} | {pct} | {fmt_s(c)} | {cpu_rows} | "
                     f"{f'{s:.1f}x' if s is not None else '-'} | {goal} | {note.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def chart(res, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart", file=sys.stderr)
        return False
    queries = [q for q, e in res if e == "gpu" and q != "d2d_copy"]
    queries = list(dict.fromkeys(queries))
    ups = [speedup(res.get((q, "gpu")), res.get((q, "cpu"))) or 0 for q in queries]
    fracs = [100 * ((res.get((q, "gpu")) or {}).get("copy_frac") or 0) for q in queries]
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 0.45 * len(queries) + 1.8), sharey=True)
    y = list(range(len(queries)))
    a.barh(y, [u if u > 0 else float("nan") for u in ups], color="#4c72b0")
    a.set_xscale("log")
    a.axvline(1, color="gray", lw=0.8)
    a.axvline(SEED_SPEEDUP_GOAL, color="#c44e52", ls="--", lw=0.8, label="10x (seed goal)")
    a.set_yticks(y)
    a.set_yticklabels(queries)
    a.invert_yaxis()
    a.set_xlabel("speed-up over the CPU engine (rows/s)")
    a.legend(loc="lower right", fontsize=8)
    b.barh(y, fracs, color="#55a868")
    b.axvline(50, color="#c44e52", ls="--", lw=0.8, label="50% (goal)")
    b.set_xlabel("% of device-to-device copy bandwidth")
    b.legend(loc="lower right", fontsize=8)
    copy = res.get(("d2d_copy", "gpu"), {})
    fig.suptitle(f"tug GPU suite on {copy.get('label') or 'GPU'}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("--md", help="write the table here too (it always goes to stdout)")
    ap.add_argument("--png", help="write the chart here (needs matplotlib)")
    args = ap.parse_args()
    res = collect(load(args.json))
    if not res:
        print(f"no tug_gpu benchmarks in {args.json}", file=sys.stderr)
        return 1
    md = table(res)
    sys.stdout.write(md)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md)
    if args.png:
        chart(res, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
