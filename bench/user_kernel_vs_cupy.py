"""A user kernel over a billion rows through tug's map_partitions on the GPU engine, against the same kernel
launched by hand with CuPy on the same data (issue 22's benchmark; docs/user-kernels.md). The kernel is seed
000's dew point (examples/seed000_cassandra_kernel.hpp): two inputs (f64 temperature, f32 humidity), two
outputs (f64 dew point, bool fog), a log and two divisions a row.

The data starts and ends in host memory, as it does for seed 000's users (rows from Cassandra, results back):
- tug: `from_arrow(table).lazy().map_partitions(cuda_kernel(...)).collect(engine="gpu")`, partitions of
  `--partition-rows` rows; tug copies each partition to the device, launches, and copies the outputs back.
- CuPy by hand: what seed 000 does per partition: for each chunk of the same rows, `cp.asarray` the inputs,
  launch a RawKernel of the same code (plain pointers instead of tug's column views), `.get()` the outputs
  into preallocated numpy arrays.
- CuPy, kernel only: the RawKernel over all rows already on the device (no copies; a floor, when they fit).
Both results are compared value by value. Medians of --repeat runs after a warm-up (compiles and caches).
When the rows do not fit half the host's available memory (inputs, both results and tug's copy of a
partition), fewer are used and the reason is printed.

    python3 bench/user_kernel_vs_cupy.py --build build-gpu --out /tmp/out/user-kernel-vs-cupy [--rows N]

--cpu rehearses the whole script without a GPU or CuPy (tests/python/test_user_kernel_bench.py runs it at a
small size): tug's CPU engine runs the kernel's numpy host form, and numpy over the same chunks stands in for
the CuPy launch; the results must be equal there too. Its times say nothing about the GPU.

writes results.json, README.md (the command, the machine, the table) and user-kernel-vs-cupy.png into --out.
Needs a CUDA build of the Python module (scripts/gpu-kernel-bench.sh builds one), CuPy, pyarrow, numpy and
matplotlib (all on the project's GPU machines)."""
import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

B, C, FOG_SPREAD = 17.62, 243.12, 2.0

# One body for both launches: `t`, `rh` in; `dew`, `fog` out (row i).
BODY = r"""
    double g = log(rh / 100.0) + b * t / (c + t);
    double d = c * g / (b - g);
    dew = d;
    fog = t - d <= fog_spread;
"""

TUG_SOURCE = r"""#include <tug/kernel.cuh>
extern "C" __global__ void dew_point(long long rows, tug::in_column<double> temp_c, tug::in_column<float> humidity,
                                     tug::out_column<double> dew_point_c, tug::out_column<bool> fog_out,
                                     double b, double c, double fog_spread) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
    double t = temp_c[i], rh = humidity[i];
    double& dew = dew_point_c[i];
    bool& fog = fog_out[i];
""" + BODY + "  }\n}\n"

HAND = "CuPy by hand (copy in, launch, copy out)"
HAND_CPU = "numpy by hand (the --cpu rehearsal)"

CUPY_SOURCE = r"""extern "C" __global__ void dew_point(long long rows, const double* temp_c, const float* humidity,
                                     double* dew_point_c, bool* fog_out, double b, double c, double fog_spread) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows;
       i += (long long)gridDim.x * blockDim.x) {
    double t = temp_c[i], rh = humidity[i];
    double& dew = dew_point_c[i];
    bool& fog = fog_out[i];
""" + BODY + "  }\n}\n"


def host_dew_point(t, rh, np):
    """The kernel's body in numpy: what the CPU rehearsal runs for both sides."""
    g = np.log(rh.astype(np.float64) / 100.0) + B * t / (C + t)
    d = C * g / (B - g)
    return d, t - d <= FOG_SPREAD


def host_kernel(p):
    """tug's host form of the kernel (the CPU rehearsal)."""
    import numpy as np

    d, fog = host_dew_point(p.numpy("temp_c"), p.numpy("humidity"), np)
    p.numpy("dew_point_c", output=True)[:] = d
    p.numpy("fog", output=True)[:] = fog


def fitting_rows(rows):
    """`rows`, or fewer (and why) when inputs and results (12 + 2 * 9 bytes a row) exceed half the host's
    available memory."""
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return rows, None
    per_row = 8 + 4 + 2 * (8 + 1)
    most = int(0.5 * avail) // per_row
    if rows <= most:
        return rows, None
    return most, (f"{rows:,} rows need {rows * per_row / 2**30:.1f} GiB of host memory; half the available "
                  f"{avail / 2**30:.1f} GiB holds {most:,}")


def median_seconds(fn, repeat):
    fn()  # warm-up: compiles, loads, touches the memory
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def generate(rows, np):
    """temp_c in [-20, 40), humidity in [0.5, 100.5): cheap, deterministic, no nulls (the hand launch has no
    validity bitmaps)."""
    temp = np.empty(rows, dtype=np.float64)
    hum = np.empty(rows, dtype=np.float32)
    step = 1 << 24
    for a in range(0, rows, step):
        i = np.arange(a, min(a + step, rows), dtype=np.float64)
        temp[a:a + len(i)] = -20.0 + 60.0 * np.modf(i * 0.6180339887498949)[0]
        hum[a:a + len(i)] = 0.5 + 100.0 * np.modf(i * 0.4142135623730951)[0]
    return temp, hum


def launch_config(rows, cp):
    """tug's default (tug/api/user_kernel.hpp, launch_config): 256 threads, one a row, at most 16 blocks a SM."""
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    return (max(1, min((rows + 255) // 256, 16 * sms)),), (256,)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--out", default=f"/tmp/{dt.date.today()}-user-kernel-vs-cupy")
    ap.add_argument("--rows", type=int, default=1_000_000_000)
    ap.add_argument("--partition-rows", default="1048576,16777216",
                    help="rows per partition (tug) and per chunk (CuPy by hand), comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", action="store_true",
                    help="rehearse without a GPU: tug's CPU engine and numpy stand in (the results must be equal)")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(a.build).resolve() / "python"))
    import numpy as np
    import pyarrow as pa

    import tug

    cp = None
    if not a.cpu:
        import cupy as cp

        if not tug.gpu_available():
            sys.exit("no GPU visible to tug (a CUDA build of the Python module and a CUDA device are needed)")
    engine = "cpu" if a.cpu else "gpu"
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, why = fitting_rows(a.rows)
    if why:
        print(f"fewer rows: {why}", flush=True)
    t0 = time.perf_counter()
    temp, hum = generate(rows, np)
    print(f"generated {rows:,} rows ({(temp.nbytes + hum.nbytes) / 2**30:.1f} GiB) in {time.perf_counter() - t0:.1f} s",
          flush=True)
    frame = tug.from_arrow(pa.table({"temp_c": pa.array(temp), "humidity": pa.array(hum)}))  # shares the buffers
    kernel = tug.cuda_kernel(TUG_SOURCE, "dew_point", host=host_kernel if a.cpu else None)
    query = frame.lazy().map_partitions(kernel, inputs=["temp_c", "humidity"], args=[B, C, FOG_SPREAD],
                                        schema={"dew_point_c": tug.Float64, "fog": tug.Boolean})
    raw = None if a.cpu else cp.RawKernel(CUPY_SOURCE, "dew_point")
    dew_hand = np.empty(rows, dtype=np.float64)
    fog_hand = np.empty(rows, dtype=np.bool_)

    results = []  # (name, partition rows, median seconds, all seconds)
    tug_result = None
    for part in [int(p) for p in a.partition_rows.split(",")]:
        def run_tug():
            nonlocal tug_result
            tug_result = None  # free the last result first
            tug_result = query.collect(engine=engine, target_partition_rows=part)

        def run_hand():
            for s in range(0, rows, part):
                e = min(s + part, rows)
                n = e - s
                if a.cpu:  # numpy stands in for the device
                    dew_hand[s:e], fog_hand[s:e] = host_dew_point(temp[s:e], hum[s:e], np)
                    continue
                d_t, d_h = cp.asarray(temp[s:e]), cp.asarray(hum[s:e])
                d_dew, d_fog = cp.empty(n, dtype=cp.float64), cp.empty(n, dtype=cp.bool_)
                grid, block = launch_config(n, cp)
                raw(grid, block, (cp.int64(n), d_t, d_h, d_dew, d_fog, cp.float64(B), cp.float64(C),
                                  cp.float64(FOG_SPREAD)))
                d_dew.get(out=dew_hand[s:e])
                d_fog.get(out=fog_hand[s:e])

        m, ts = median_seconds(run_tug, a.repeat)
        results.append(("tug map_partitions (numpy host form, --cpu)" if a.cpu else "tug map_partitions (CUDA source)",
                        part, m, ts))
        print(f"tug, {part:,} rows a partition: {m:.3f} s", flush=True)
        m, ts = median_seconds(run_hand, a.repeat)
        results.append((HAND_CPU if a.cpu else HAND, part, m, ts))
        print(f"{'numpy' if a.cpu else 'CuPy'} by hand, {part:,} rows a chunk: {m:.3f} s", flush=True)

    # the same values from both (the last runs of each)
    got = tug_result.to_arrow()
    dew_tug = got.column("dew_point_c").to_numpy()
    fog_tug = got.column("fog").to_numpy()
    dew_diff = float(np.max(np.abs(dew_tug - dew_hand) / np.maximum(1.0, np.abs(dew_hand))))
    fog_diff = int(np.count_nonzero(fog_tug != fog_hand))
    equal = dew_diff <= 1e-12 and fog_diff == 0 and got.num_rows == rows
    print(f"tug vs {'numpy' if a.cpu else 'CuPy'}: {got.num_rows:,} rows, largest relative dew point difference "
          f"{dew_diff:.3g}, "
          f"{fog_diff} fog flags differ", flush=True)
    del got, dew_tug, fog_tug
    tug_result = None

    # the kernel alone on device-resident data, when inputs and outputs fit in 80 % of the free memory
    need = rows * (8 + 4 + 8 + 1)
    free = 0 if a.cpu else cp.cuda.Device().mem_info[0]
    if a.cpu:
        print("kernel-only run skipped: no device (--cpu)", flush=True)
    elif need <= 0.8 * free:
        d_t, d_h = cp.asarray(temp), cp.asarray(hum)
        d_dew, d_fog = cp.empty(rows, dtype=cp.float64), cp.empty(rows, dtype=cp.bool_)
        grid, block = launch_config(rows, cp)

        def run_device():
            raw(grid, block, (cp.int64(rows), d_t, d_h, d_dew, d_fog, cp.float64(B), cp.float64(C),
                              cp.float64(FOG_SPREAD)))
            cp.cuda.get_current_stream().synchronize()

        m, ts = median_seconds(run_device, a.repeat)
        results.append(("CuPy, kernel only (data on the device)", rows, m, ts))
        print(f"CuPy kernel alone: {m:.4f} s", flush=True)
        del d_t, d_h, d_dew, d_fog
    else:
        print(f"kernel-only run skipped: {need / 2**30:.1f} GiB > 80 % of {free / 2**30:.1f} GiB free", flush=True)

    # the table, the chart, the files
    hand = {p: m for n, p, m, _ in results if n in (HAND, HAND_CPU)}
    lines = []
    for name, part, m, _ in results:
        vs = f"{m / hand[part]:.2f}x" if name.startswith("tug") and part in hand else ""
        lines.append(f"| {name} | {part:,} | {m:.3f} | {rows / m / 1e9:.2f} | {vs} |")
    table = ("| run | rows a partition | s (median) | G rows/s | tug / hand |\n| --- | --- | --- | --- | --- |\n"
             + "\n".join(lines))
    gpu_name = "CPU rehearsal (no GPU)" if a.cpu else cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    machine = f"{platform.node()}: {gpu_name}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    command = " ".join(["python3", *sys.argv])
    chart(results, rows, out / "user-kernel-vs-cupy.png", f"dew point kernel over {rows:,} rows, {gpu_name}")
    (out / "results.json").write_text(json.dumps({
        "command": command, "machine": machine, "date": str(dt.date.today()), "rows": rows,
        "requested_rows": a.rows, "fewer_rows_because": why,
        "runs": [{"name": n, "partition_rows": p, "median_s": m, "seconds": ts} for n, p, m, ts in results],
        "equal": equal, "max_relative_dew_point_difference": dew_diff, "fog_differences": fog_diff}, indent=1) + "\n")
    (out / "README.md").write_text(
        f"# A user kernel over {rows:,} rows: tug against CuPy by hand\n\nCommand: `{command}` ({dt.date.today()}; "
        f"{machine}). Medians of {a.repeat} runs after a warm-up; data in host memory before and after (the "
        "kernel-only row excepted). bench/user_kernel_vs_cupy.py says what each run does.\n\n"
        f"![chart](user-kernel-vs-cupy.png)\n\n{table}\n\n"
        f"Results equal: {'yes' if equal else 'NO'} (largest relative dew point difference {dew_diff:.3g}, "
        f"{fog_diff} fog flags differ).{' Fewer rows: ' + why + '.' if why else ''}\n")
    print(table)
    if not equal:
        sys.exit("tug's results differ from CuPy's")


def chart(results, rows, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"{n}\n{p:,} rows a partition" if "kernel only" not in n else n for n, p, _, _ in results]
    secs = [m for _, _, m, _ in results]
    colors = ["#4477aa" if n.startswith("tug") else "#cc6677" for n, _, _, _ in results]
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(names) + 1.5))
    bars = ax.barh(names, secs, color=colors)
    ax.bar_label(bars, labels=[f"{s:.3f} s" for s in secs], padding=3)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (median), lower is better")
    ax.set_xlim(right=max(secs) * 1.25)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
