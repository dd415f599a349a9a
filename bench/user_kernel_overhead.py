"""Per-partition launch overhead of user kernels (issue 22, docs/user-kernels.md): an empty kernel on each of
1024 partitions, against the same partitions without a kernel, for each form: a C++ host functor and an
empty CUDA source kernel (tug_bench, bench/user_kernel_overhead.cpp), a Python host callable, and on a GPU a
Python device callable and an empty CuPy RawKernel launched by hand 1024 times (when CuPy is installed).
Overhead per partition = (time with the kernel - time without) / 1024.

    .venv/bin/python bench/user_kernel_overhead.py --build build --out bench/results/DATE-user-kernel-overhead

writes results.json, README.md (the command, the machine, the table) and overhead.png into --out."""
import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

PARTITIONS = 1024
ROWS_PER = (1, 1024)
EMPTY_CU = r"""#include <tug/kernel.cuh>
extern "C" __global__ void empty(long long rows, tug::in_column<long long> x) {}"""


def median_seconds(fn, repeat):
    """The median of `repeat` timed calls, after a warm-up (which compiles and caches a source kernel)."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cpp_benchmarks(build: Path, repeat: int) -> dict:
    exe = build / "tug_bench"
    if not exe.exists():
        sys.exit(f"{exe} is missing: ninja -C {build} tug_bench")
    p = subprocess.run([str(exe), "--benchmark_filter=BM_partitions_", "--benchmark_format=json",
                        f"--benchmark_repetitions={repeat}", "--benchmark_report_aggregates_only=true"],
                       capture_output=True, text=True, check=True)
    out = {}
    for b in json.loads(p.stdout)["benchmarks"]:
        if b.get("aggregate_name") == "median" and not b.get("error_occurred"):
            out[b["run_name"].removesuffix("/real_time")] = b["real_time"] / 1e3  # ms -> s
    return out


def python_benchmarks(repeat: int) -> dict:
    import tug

    out = {}
    gpu = tug.gpu_available()
    for r in ROWS_PER:
        lf = tug.DataFrame({"x": list(range(PARTITIONS * r))}).lazy()
        opts = {"target_partition_rows": r}

        def collect(q, engine):
            return lambda: q.collect(engine=engine, **opts)

        out[f"py_no_kernel/{r}/cpu"] = median_seconds(collect(lf, "cpu"), repeat)
        empty = tug.python_kernel(lambda p: None, name="empty")
        out[f"py_empty_host/{r}"] = median_seconds(
            collect(lf.map_partitions(empty, inputs=["x"], keep=["x"]), "cpu"), repeat)
        out[f"py_no_kernel_1thread/{r}"] = median_seconds(lambda: lf.collect(engine="cpu", num_threads=1, **opts),
                                                         repeat)
        one = lf.map_partitions(empty, inputs=["x"], keep=["x"])
        out[f"py_empty_host_1thread/{r}"] = median_seconds(
            lambda: one.collect(engine="cpu", num_threads=1, **opts), repeat)
        if gpu:
            out[f"py_no_kernel/{r}/gpu"] = median_seconds(collect(lf, "gpu"), repeat)
            dev = tug.python_kernel(device=lambda p: None, name="empty")
            out[f"py_empty_device/{r}"] = median_seconds(
                collect(lf.map_partitions(dev, inputs=["x"], keep=["x"]), "gpu"), repeat)
            src = tug.cuda_kernel(EMPTY_CU, "empty")
            out[f"py_empty_source/{r}"] = median_seconds(
                collect(lf.map_partitions(src, inputs=["x"], keep=["x"]), "gpu"), repeat)
    if gpu:
        try:
            import cupy as cp
        except ImportError:
            cp = None
        if cp is not None:
            raw = cp.RawKernel('extern "C" __global__ void empty(const long long* x, long long n) {}', "empty")
            x = cp.zeros(1024, dtype=cp.int64)

            def by_hand():
                for _ in range(PARTITIONS):
                    raw((4,), (256,), (x, cp.int64(1024)))
                    cp.cuda.get_current_stream().synchronize()

            out["cupy_hand_launch"] = median_seconds(by_hand, repeat)
    return out


def overheads(t: dict) -> dict:
    """Per-partition overhead in microseconds, by form and rows per partition."""
    per = {}

    def add(name, with_kernel, without):
        if with_kernel in t and without in t:
            per[name] = (t[with_kernel] - t[without]) / PARTITIONS * 1e6

    for r in ROWS_PER:
        add(f"C++ host functor, {r} rows", f"BM_partitions_empty_host/{r}", f"BM_partitions_no_kernel/{r}/0")
        add(f"CUDA source (C++), {r} rows", f"BM_partitions_empty_source/{r}", f"BM_partitions_no_kernel/{r}/1")
        add(f"Python host callable, {r} rows", f"py_empty_host/{r}", f"py_no_kernel/{r}/cpu")
        add(f"Python host callable, 1 thread, {r} rows", f"py_empty_host_1thread/{r}", f"py_no_kernel_1thread/{r}")
        add(f"Python device callable, {r} rows", f"py_empty_device/{r}", f"py_no_kernel/{r}/gpu")
        add(f"CUDA source (Python), {r} rows", f"py_empty_source/{r}", f"py_no_kernel/{r}/gpu")
    if "cupy_hand_launch" in t:
        per["CuPy launch + sync by hand"] = t["cupy_hand_launch"] / PARTITIONS * 1e6
    return per


def chart(per: dict, path: Path, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(per)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 1.4))
    bars = ax.barh(names, [per[n] for n in names], color="#4477aa")
    ax.bar_label(bars, labels=[f"{per[n]:.1f}" for n in names], padding=3)
    ax.invert_yaxis()
    ax.set_xlabel("overhead per partition (µs): empty kernel minus no kernel, 1024 partitions")
    ax.set_title(title)
    ax.set_xlim(left=min(0, min(per.values()) * 1.2), right=max(per.values()) * 1.25)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=f"bench/results/{dt.date.today()}-user-kernel-overhead")
    ap.add_argument("--repeat", type=int, default=15)
    a = ap.parse_args()
    build = Path(a.build).resolve()
    sys.path.insert(0, str(build / "python"))
    import tug

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    times = cpp_benchmarks(build, a.repeat)
    times.update(python_benchmarks(a.repeat))
    per = overheads(times)
    load = os.getloadavg()[0]
    machine = (f"{platform.node()}: {os.cpu_count()} cores, GPU {'yes' if tug.gpu_available() else 'none'}, "
               f"load average {load:.1f} at the start")
    command = " ".join([".venv/bin/python", *sys.argv])
    (out / "results.json").write_text(json.dumps({"command": command, "machine": machine, "date": str(dt.date.today()),
                                                  "partitions": PARTITIONS, "seconds": times,
                                                  "overhead_us_per_partition": per}, indent=1) + "\n")
    chart(per, out / "overhead.png", f"tug user kernels: per-partition overhead\n{machine.split(': ')[1]}")
    rows = "\n".join(f"| {n} | {v:.1f} |" for n, v in per.items())
    raw = "\n".join(f"| {n} | {v * 1e3:.2f} |" for n, v in sorted(times.items()))
    (out / "README.md").write_text(
        f"# User kernels: per-partition launch overhead\n\nCommand: `{command}` ({dt.date.today()}; {machine}).\n"
        f"Each time is the median of {a.repeat} runs of a query over {PARTITIONS} partitions; the overhead is "
        "(with an empty kernel - without a kernel) / partitions.\n\n![overhead](overhead.png)\n\n"
        f"| form | µs per partition |\n| --- | --- |\n{rows}\n\n"
        "Python callables run under the GIL: when several partitions run at once their threads hand the GIL "
        "over, and single runs vary by up to 10x (the median is what the table gives); with `num_threads=1` "
        "there is no hand-over.\n\n"
        f"Raw medians:\n\n| run | ms |\n| --- | --- |\n{raw}\n")
    print((out / "README.md").read_text())


if __name__ == "__main__":
    main()
