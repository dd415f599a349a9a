"""Chart of a multi-rank run (scripts/pdsh-ranks-gpu.sh): per query, the speed-up of N ranks over one
(median warm times from g<N>.json), and the total. usage: ranks_chart.py DIR  ->  DIR/speedup.png"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(d):
    runs = {}
    for p in glob.glob(os.path.join(d, "g*.json")):
        g = int(os.path.basename(p)[1:-5])
        runs[g] = {q["query"]: q.get("median_s") for q in json.load(open(p))["queries"]}
    if 1 not in runs:
        sys.exit("no g1.json in " + d)
    counts = sorted(g for g in runs if g != 1)
    queries = [q for q in sorted(runs[1]) if runs[1][q] and all(runs[g].get(q) for g in counts)]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.8 / max(1, len(counts))
    for k, g in enumerate(counts):
        ups = [runs[1][q] / runs[g][q] for q in queries]
        ax.bar([i + k * width for i in range(len(queries))], ups, width, label=f"{g} GPUs")
        total = sum(runs[1][q] for q in queries) / sum(runs[g][q] for q in queries)
        ax.axhline(total, linestyle="--", linewidth=1, color=f"C{k}", label=f"{g} GPUs, total {total:.2f}x")
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_xticks([i + width * (len(counts) - 1) / 2 for i in range(len(queries))], [f"Q{q}" for q in queries])
    ax.set_ylabel("speed-up over 1 GPU (median warm)")
    ax.set_title(os.path.basename(os.path.normpath(d)))
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(d, "speedup.png"), dpi=110)
    print(os.path.join(d, "speedup.png"))


if __name__ == "__main__":
    main(sys.argv[1])
