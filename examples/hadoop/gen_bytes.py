"""Input data for the histogram64 job (examples/hadoop/histogram.sh): --rows random byte values, one a line,
split over --files text files in --out (made anew)."""
import argparse
import os
import shutil

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, required=True)
p.add_argument("--out", required=True)
p.add_argument("--files", type=int, default=4)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
shutil.rmtree(a.out, ignore_errors=True)
os.makedirs(a.out)
values = np.random.default_rng(a.seed).integers(0, 256, a.rows)
for i, part in enumerate(np.array_split(values, max(a.files, 1))):
    np.savetxt(os.path.join(a.out, f"part-{i:05d}.txt"), part, fmt="%d")
