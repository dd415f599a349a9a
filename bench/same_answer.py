"""Exit 0 when two query results (CSV files) are equal: the same fields, numbers within a relative 1e-9
(sums taken in another order differ in the last digits). usage: same_answer.py A.csv B.csv"""
import math
import re
import sys

NUM = re.compile(r"-?\d+\.\d+(e-?\d+)?$")


def rows(path):
    with open(path, encoding="latin-1") as f:
        return [line.rstrip("\n").split(",") for line in f]


def same(a, b):
    return len(a) == len(b) and all(
        len(x) == len(y) and all(u == v or (NUM.match(u) and NUM.match(v) and math.isclose(float(u), float(v), rel_tol=1e-9))
                                 for u, v in zip(x, y))
        for x, y in zip(a, b))


if __name__ == "__main__":
    sys.exit(0 if same(rows(sys.argv[1]), rows(sys.argv[2])) else 1)
