"""Users' own kernels from Python (docs/user-kernels.md, "From Python"): Python callables on every partition with
numpy / pyarrow / DLPack views of tug's buffers, CUDA source kernels, scalars as plain Python values, and the
checks (schema, errors naming the kernel and the partition). The CPU paths run everywhere; the GPU paths
(NVRTC launches, CuPy RawKernels, Numba kernels on __cuda_array_interface__ columns) skip without a GPU."""
import ctypes
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tug

CPU = {"engine": "cpu"}
gpu = pytest.mark.skipif(not tug.gpu_available(), reason="needs a CUDA GPU (tug built with CUDA)")

AXPY = r"""
#include <tug/kernel.cuh>
extern "C" __global__ void axpy(long long rows, tug::in_column<long long> x, tug::in_column<double> y,
                                tug::out_column<double> z, double a) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
    if (x.is_null(i)) { z[i] = 0; z.set_null(i); }
    else z[i] = a * x[i] + y[i];
  }
}"""


def axpy_host(p):
    """The CPU form of AXPY: numpy views in, the output written in place, nulls where x is null."""
    a = p.args[0]
    z = p.numpy("z", output=True)
    z[:] = a * p.numpy("x") + p.numpy("y")
    p.set_nulls("z", ~p.valid("x"))


def frame(n, nulls=True):
    rng = np.random.default_rng(n)
    x = pa.array(rng.integers(-1000, 1000, n), mask=(np.arange(n) % 7 == 3) if nulls else None, type=pa.int64())
    y = pa.array(rng.random(n))
    return pa.table({"id": np.arange(n, dtype=np.int64), "x": x, "y": y})


def axpy_reference(t, a):
    return pc.add(pc.multiply(pc.cast(t["x"], pa.float64()), a), t["y"])


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1024, 3333])
def test_host_callable_matches_reference_on_every_size(n):
    t = frame(n)
    k = tug.cuda_kernel(AXPY, "axpy", host=axpy_host)
    out = tug.from_arrow(t).lazy().map_partitions(k, inputs=["x", "y"], keep=["id"], args=[2.5],
                                                  schema={"z": tug.Float64}).collect(**CPU, target_partition_rows=1000)
    assert out.columns == ["id", "z"]
    got = out.to_arrow().sort_by("id")
    assert got["id"].to_pylist() == list(range(n))
    assert got["z"].to_pylist() == pytest.approx(axpy_reference(t, 2.5).to_pylist(), nan_ok=True) \
        if n else got["z"].to_pylist() == []
    assert got["z"].null_count == t["x"].null_count


def test_every_partition_is_seen_once_with_its_number():
    seen = []
    lock = threading.Lock()

    def count(p):
        with lock:
            seen.append((p.number, p.rows))

    tug.DataFrame({"v": list(range(2500))}).lazy().foreach_partition(count, engine="cpu", target_partition_rows=1000)
    assert sorted(seen) == [(0, 1000), (1, 1000), (2, 500)]


def test_a_partition_larger_than_a_call_may_use_comes_in_slices():
    # memory_limit 64 KiB over 4 threads: 16 KiB a call, 2048 rows of an int64 input; partitions of 10000
    # rows come as 5 even slices, each with its place in the partition
    seen = []
    lock = threading.Lock()

    def count(p):
        with lock:
            seen.append((p.number, p.first_row, p.rows, p.partition_rows, int(p.numpy("v")[0])))

    tug.DataFrame({"v": list(range(12000))}).lazy().foreach_partition(
        count, engine="cpu", target_partition_rows=10000, memory_limit=64 << 10, num_threads=4)
    assert sorted(seen) == [(0, a, 2000, 10000, a) for a in range(0, 10000, 2000)] + [(1, 0, 2000, 2000, 10000)]


@pytest.mark.parametrize("dtype,np_dtype", [
    (pa.bool_(), np.bool_), (pa.int8(), np.int8), (pa.int16(), np.int16), (pa.int32(), np.int32),
    (pa.int64(), np.int64), (pa.uint8(), np.uint8), (pa.uint16(), np.uint16), (pa.uint32(), np.uint32),
    (pa.uint64(), np.uint64), (pa.float32(), np.float32), (pa.float64(), np.float64), (pa.date32(), np.int32),
    (pa.timestamp("us"), np.int64), (pa.duration("ms"), np.int64)])
def test_every_fixed_width_type_is_a_numpy_view_and_round_trips(dtype, np_dtype):
    values = [True, False, True] if dtype == pa.bool_() else [1, 2, 3]
    base = pa.int32() if dtype == pa.date32() else pa.int64()
    t = pa.table({"c": pa.array(values, type=base).cast(dtype) if dtype != pa.bool_() else values})
    views = []
    expected = tug.from_arrow(t).schema["c"]

    def copy(p):
        v = p.numpy("c")
        assert v.dtype == np_dtype and not v.flags.writeable
        views.append(v)
        p.numpy("d", output=True)[:] = v
        assert tug.datatypes.from_tug(p.input("c").dtype) == expected

    out = tug.from_arrow(t).lazy().map_partitions(copy, inputs=["c"], schema={"d": dtype}).collect(**CPU)
    assert out.to_arrow()["d"].to_pylist() == t["c"].to_pylist()
    assert out.to_arrow()["d"].type == t["c"].type
    assert views[0].tolist() == np.asarray(values, dtype=np_dtype).tolist()


def test_numpy_and_dlpack_views_share_tugs_buffer():
    t = pa.table({"x": pa.array(np.arange(100, dtype=np.float64))})
    addresses = {}

    def look(p):
        col = p.input("x")
        addresses["view"] = col.data_ptr
        addresses["numpy"] = p.numpy("x").ctypes.data
        assert col.__dlpack_device__() == (1, 0)
        d = np.from_dlpack(col)
        addresses["dlpack"] = d.ctypes.data
        assert d.tolist() == list(range(100))
        out = np.from_dlpack(p.output("y"))
        out[:] = d * 2

    df = tug.from_arrow(t)
    src = df._buffer_addresses()["x"][0]
    out = df.lazy().map_partitions(look, inputs=["x"], schema={"y": tug.Float64}).collect(**CPU)
    assert addresses == {"view": src, "numpy": src, "dlpack": src}
    assert out.to_arrow()["y"].to_pylist() == [2.0 * i for i in range(100)]


def test_host_columns_have_no_cuda_array_interface():
    def look(p):
        col = p.input("x")
        assert not hasattr(col, "__cuda_array_interface__")
        ai = col.__array_interface__
        assert ai["shape"] == (3,) and ai["typestr"] == "<i8" and ai["data"][1] is True
        assert p.output("y").__array_interface__["data"][1] is False
        assert not p.on_device and p.stream == 0

    tug.DataFrame({"x": [1, 2, 3]}).lazy().map_partitions(look, inputs=["x"], schema={"y": tug.Int64}).collect(**CPU)


def test_sliced_partitions_give_views_at_their_offset():
    t = frame(2500)
    firsts = {}

    def first(p):
        firsts[p.number] = (p.numpy("id")[0], p.valid("x").tolist() == p.to_arrow()["x"].is_valid().to_pylist())

    tug.from_arrow(t).lazy().foreach_partition(first, inputs=["id", "x"], engine="cpu", target_partition_rows=1000)
    assert firsts == {0: (0, True), 1: (1000, True), 2: (2000, True)}


def test_to_arrow_has_every_input_with_strings_and_nulls():
    t = pa.table({"s": pa.array(["a", None, "ccc", ""], type=pa.large_string()), "v": [1, None, 3, 4]})
    seen = []
    tug.from_arrow(t).lazy().foreach_partition(lambda p: seen.append(p.to_arrow()), engine="cpu")
    assert pa.Table.from_batches(seen).equals(t)


def test_string_columns_expose_offsets_and_chars():
    t = pa.table({"s": pa.array(["ab", "", "cde"], type=pa.large_string())})

    def look(p):
        s = p.input("s")
        assert tug.kernels._numpy(s.offsets).tolist() == [0, 2, 2, 5]
        assert bytes(tug.kernels._numpy(s.chars)) == b"abcde"
        with pytest.raises(tug.NotSupportedError, match='column "s" of kernel "look".* is str: no array protocol'):
            s.__array_interface__

    tug.from_arrow(t).lazy().foreach_partition(look, engine="cpu")


TEXT_LEN = r"""
#include <tug/kernel.cuh>
extern "C" __global__ void text_len(long long rows, tug::in_strings s, tug::out_column<long long> n,
                                    tug::out_column<int> spaces) {
  for (long long i = tug::first_row(); i < rows; i += tug::row_stride()) {
    if (s.is_null(i)) { n[i] = 0; spaces[i] = 0; n.set_null(i); spaces.set_null(i); continue; }
    int k = 0;
    const char* c = s.data(i);
    for (long long j = 0; j < s.length(i); ++j) k += c[j] == ' ';
    n[i] = s.length(i);
    spaces[i] = k;
  }
}"""


def text_len_host(p):
    """The CPU form of TEXT_LEN, from the column's offsets and chars (numpy views of tug's buffers)."""
    s = p.input("s")
    off = np.asarray(s.offsets)
    chars = np.asarray(s.chars)
    assert off.dtype == np.int64 and chars.dtype == np.uint8 and len(off) == p.rows + 1
    before = np.concatenate([[0], np.cumsum(chars == ord(" "))])  # spaces before each byte
    p.numpy("n", output=True)[:] = np.diff(off)
    p.numpy("spaces", output=True)[:] = before[off[1:]] - before[off[:-1]]
    p.set_nulls("n", ~p.valid("s"))
    p.set_nulls("spaces", ~p.valid("s"))


def texts(n):
    words = ["", "a b", "tug", "über alles", " ", None, "x  y z"]
    return pa.table({"id": np.arange(n, dtype=np.int64),
                     "s": pa.array([words[i % 7] for i in range(n)], type=pa.large_string())})


def text_len_reference(t):
    n = [None if v is None else len(v.encode()) for v in t["s"].to_pylist()]
    spaces = [None if v is None else v.count(" ") for v in t["s"].to_pylist()]
    return n, spaces


TEXT_LEN_SCHEMA = {"n": tug.Int64, "spaces": tug.Int32}


@pytest.mark.parametrize("n", [0, 1, 31, 33, 1024])
def test_a_source_kernel_reads_strings_and_its_host_form_the_same_offsets_and_chars(n):
    t = texts(n)
    k = tug.cuda_kernel(TEXT_LEN, "text_len", host=text_len_host)
    out = tug.from_arrow(t).lazy().map_partitions(k, inputs=["s"], keep=["id"], schema=TEXT_LEN_SCHEMA).collect(
        **CPU, target_partition_rows=10)  # partitions are slices: offsets start past 0
    got = out.to_arrow().sort_by("id")
    assert (got["n"].to_pylist(), got["spaces"].to_pylist()) == text_len_reference(t)
    # a column whose rows are all empty or null: no chars at all
    t = pa.table({"id": [0, 1], "s": pa.array(["", None], type=pa.large_string())})
    out = tug.from_arrow(t).lazy().map_partitions(k, inputs=["s"], keep=["id"], schema=TEXT_LEN_SCHEMA).collect(**CPU)
    assert out.to_dict() == {"id": [0, 1], "n": [0, None], "spaces": [0, None]}


def test_a_string_kernel_compiles_without_a_gpu(tmp_path):
    if not tug.built_with_cuda:
        pytest.skip("tug was built without CUDA")
    c = tug.compile_cuda_source(TEXT_LEN, "text_len", "sm_90", cache_dir=str(tmp_path))
    assert c["cubin"][:4] == b"\x7fELF"


@pytest.mark.parametrize("how", ["dict", "batch", "array", "set_output"])
def test_a_kernel_may_return_its_outputs_of_any_length(how):
    def evens(p):
        v = p.numpy("v")
        keep = v[v % 2 == 0]
        names = pa.array([f"n{x}" for x in keep], type=pa.large_string())
        if how == "dict":
            return {"e": keep, "name": names}
        if how == "batch":
            return pa.record_batch([pa.array(keep), names], names=["e", "name"])
        if how == "array":
            return None if p.set_output("name", names) else {"e": pa.array(keep)}
        p.set_output("e", keep)
        p.set_output("name", names)

    out = tug.DataFrame({"v": list(range(25))}).lazy().map_partitions(
        evens, inputs=["v"], schema={"e": tug.Int64, "name": tug.String}).collect(**CPU, target_partition_rows=10)
    got = out.to_arrow().sort_by("e")
    assert got["e"].to_pylist() == list(range(0, 25, 2))
    assert got["name"].to_pylist() == [f"n{x}" for x in range(0, 25, 2)]


def test_one_output_may_come_back_as_one_array():
    out = tug.DataFrame({"v": [1, 2, 3]}).lazy().map_partitions(
        lambda p: p.numpy("v") * 10, inputs=["v"], schema={"w": tug.Int64}, keep=["v"]).collect(**CPU)
    assert out.to_dict() == {"v": [1, 2, 3], "w": [10, 20, 30]}


def test_python_scalars_are_taken_as_they_are():
    got = []
    k = tug.python_kernel(lambda p: got.append(p.args), name="args")
    tug.DataFrame({"v": [1]}).lazy().foreach_partition(k, args=(2, 2.5, True, "s", np.float32(1.5), 1 << 63),
                                                       engine="cpu")
    assert got == [(2, 2.5, True, "s", np.float32(1.5), 1 << 63)]
    lf = tug.DataFrame({"v": [1]}).lazy()
    for bad, what in ((None, "NoneType"), ([1], "list"), (1 << 64, "does not fit")):
        with pytest.raises(tug.InvalidArgumentError, match=what):
            lf.foreach_partition(k, args=(bad,), engine="cpu")


def test_scalar_types_reach_a_source_kernel_as_their_c_types():
    k = tug.cuda_kernel(AXPY, "axpy", host=axpy_host)
    lf = tug.DataFrame({"x": [1], "y": [1.0]}).lazy()
    plan = lf.map_partitions(k, args=[2.5, 3, np.int32(4), np.float32(0.5), True],
                             schema={"z": tug.Float64}).explain(engine="cpu")
    assert 'map_partitions' in plan and "args [2.5, 3, 4, 0.5, true]" in plan
    with pytest.raises(tug.InvalidArgumentError, match="axpy"):  # strings reach host functors only
        lf.map_partitions(k, args=["s"], schema={"z": tug.Float64})


def test_a_source_kernel_without_gpu_or_host_form_raises_naming_it():
    if tug.gpu_available():
        pytest.skip("a GPU is visible: the kernel runs there")
    k = tug.cuda_kernel(AXPY, "axpy")
    lf = tug.DataFrame({"x": [1], "y": [1.0]}).lazy().map_partitions(k, args=[2.0], schema={"z": tug.Float64})
    with pytest.raises(tug.NotSupportedError, match='kernel "axpy".*host'):
        lf.collect()


def test_a_wrong_output_type_names_the_kernel_the_partition_and_the_column():
    def wrong(p):
        return {"z": np.zeros(p.rows, dtype=np.int64)}

    lf = tug.DataFrame({"x": [1, 2]}).lazy().map_partitions(wrong, inputs=["x"], schema={"z": tug.Float64})
    with pytest.raises(tug.SchemaError, match=r'kernel "wrong", partition #0 \(2 rows\): output "z" is i64'):
        lf.collect(**CPU)


def test_unequal_output_lengths_are_an_error():
    lf = tug.DataFrame({"x": [1, 2]}).lazy().map_partitions(
        lambda p: {"a": [1], "b": [1, 2]}, inputs=["x"], schema={"a": tug.Int64, "b": tug.Int64})
    with pytest.raises(tug.ComputeError, match='output "b" has 2 rows but output "a" 1'):
        lf.collect(**CPU)


def test_a_python_exception_becomes_a_compute_error_naming_the_kernel():
    def boom(p):
        raise ValueError("bad value in my kernel")

    lf = tug.DataFrame({"x": list(range(10))}).lazy()
    with pytest.raises(tug.ComputeError, match=r'kernel "boom", partition #\d \(\d+ rows\) raised.*ValueError.*'
                                               r'bad value in my kernel'):
        lf.foreach_partition(boom, engine="cpu", target_partition_rows=4)
    # the process and the package stay usable
    assert lf.map_partitions(lambda p: p.numpy("x") + 1, schema={"y": tug.Int64}).collect(**CPU).height == 10


def test_undeclared_returns_and_missing_columns_are_errors():
    lf = tug.DataFrame({"x": [1]}).lazy()
    with pytest.raises(tug.ComputeError, match="'q', which it does not declare"):
        lf.map_partitions(lambda p: {"q": [1]}, inputs=["x"], schema={"y": tug.Int64}).collect(**CPU)
    with pytest.raises(tug.ComputeError, match="declares 2 outputs"):
        lf.map_partitions(lambda p: [1], schema={"y": tug.Int64, "z": tug.Int64}).collect(**CPU)
    with pytest.raises(tug.ColumnNotFoundError, match="nope"):
        lf.map_partitions(lambda p: None, inputs=["nope"], schema={"y": tug.Int64})
    with pytest.raises(tug.ComputeError, match='no input column "nope"'):
        lf.foreach_partition(lambda p: p.input("nope"), engine="cpu")
    with pytest.raises(tug.ComputeError, match="set_nulls.*shape"):
        lf.map_partitions(lambda p: p.set_nulls("y", [True, False]), schema={"y": tug.Int64}).collect(**CPU)


def test_the_partition_is_not_usable_after_the_kernel_returns_but_its_views_are():
    kept = []

    def keep(p):
        kept.append((p, p.numpy("x")))

    tug.DataFrame({"x": [5, 6]}).lazy().foreach_partition(keep, engine="cpu")
    p, view = kept[0]
    assert view.tolist() == [5, 6]
    with pytest.raises(tug.InvalidArgumentError, match="used after the kernel returned"):
        p.rows


def test_kernel_declarations_are_checked():
    with pytest.raises(tug.InvalidArgumentError, match="no form"):
        tug.Kernel("k")
    with pytest.raises(tug.InvalidArgumentError, match="source is empty"):
        tug.cuda_kernel("  ", "k")
    with pytest.raises(tug.InvalidArgumentError, match="launch"):
        tug.cuda_kernel(AXPY, "axpy", launch=(1,))
    with pytest.raises(tug.InvalidArgumentError, match="takes a tug.Kernel"):
        tug.DataFrame({"x": [1]}).lazy().map_partitions(42)


def test_eager_frames_have_the_same_methods():
    df = tug.DataFrame({"x": [1, 2, 3]})
    out = df.map_partitions(lambda p: p.numpy("x") * 2, inputs="x", schema={"y": tug.Int64}, keep="x")
    assert out.to_dict() == {"x": [1, 2, 3], "y": [2, 4, 6]}
    total = []
    df.foreach_partition(lambda p: total.append(int(p.numpy("x").sum())))
    assert total == [6]


def test_compile_errors_carry_nvrtcs_log_with_line_numbers(tmp_path):
    if not tug.built_with_cuda:
        pytest.skip("tug was built without CUDA")
    bad = "extern \"C\" __global__ void k(long long rows) {\n  undefined_name = 1;\n}\n"
    with pytest.raises(tug.InvalidArgumentError, match=r"k\.cu\(2\): error: identifier \"undefined_name\""):
        tug.compile_cuda_source(bad, "k", "sm_90", cache_dir=str(tmp_path))
    a = tug.compile_cuda_source(AXPY, "axpy", "sm_90", cache_dir=str(tmp_path))
    b = tug.compile_cuda_source(AXPY, "axpy", "sm_90", cache_dir=str(tmp_path))
    assert a["cubin"] == b["cubin"] and not a["from_cache"] and b["from_cache"] and a["arch"] == "sm_90"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's dladdr")
def test_the_module_exports_no_cpp_runtime_of_its_own():
    # where the toolchain links libstdc++ statically (the GPU machines' GCC), the module's copy stays
    # private: exported, its unique symbols (the locale facets' ids) bound across to the process's own
    # libstdc++ (pyarrow's, NVRTC's builtins') and crashed it (free(): invalid pointer, a segfault in
    # compile_cuda_source)
    class DlInfo(ctypes.Structure):
        _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p), ("sname", ctypes.c_char_p),
                    ("saddr", ctypes.c_void_p)]

    libc = ctypes.CDLL(None)
    module = ctypes.CDLL(tug._tug.__file__)  # looks in the module first, then in the libraries it loads
    for name in ("__cxa_throw", "_ZdlPv", "_ZNSt6localeC1Ev", "_ZNSt7__cxx118numpunctIcE2idE"):
        try:
            address = ctypes.cast(getattr(module, name), ctypes.c_void_p)
        except AttributeError:
            continue  # defined nowhere in the module's reach: not exported by it either
        info = DlInfo()
        assert libc.dladdr(address, ctypes.byref(info)), name
        assert b"_tug" not in info.fname, (name, info.fname)


# --------------------------------------------------------------------------------------------------------
# GPU: run on a machine with a CUDA GPU (the lead's GPU check); skipped here


@gpu
@pytest.mark.parametrize("n", [0, 1, 33, 1024, 3333])
def test_gpu_source_kernel_matches_the_cpu_form(n, tmp_path):
    t = frame(n)
    k = tug.cuda_kernel(AXPY, "axpy", host=axpy_host, cache_dir=str(tmp_path))
    lf = tug.from_arrow(t).lazy().map_partitions(k, inputs=["x", "y"], keep=["id"], args=[2.5],
                                                 schema={"z": tug.Float64})
    gpu_out = lf.collect(engine="gpu", target_partition_rows=1000).to_arrow().sort_by("id")
    cpu_out = lf.collect(engine="cpu", target_partition_rows=1000).to_arrow().sort_by("id")
    assert gpu_out.equals(cpu_out)


@gpu
@pytest.mark.parametrize("n", [0, 1, 33, 3333])
def test_gpu_source_kernel_reads_strings(n, tmp_path):
    t = texts(n)
    k = tug.cuda_kernel(TEXT_LEN, "text_len", host=text_len_host, cache_dir=str(tmp_path))
    lf = tug.from_arrow(t).lazy().map_partitions(k, inputs=["s"], keep=["id"], schema=TEXT_LEN_SCHEMA)
    got = lf.collect(engine="gpu", target_partition_rows=1000).to_arrow().sort_by("id")
    assert (got["n"].to_pylist(), got["spaces"].to_pylist()) == text_len_reference(t)


@gpu
def test_gpu_device_columns_have_a_cuda_array_interface():
    seen = []

    def look(p):
        col = p.input("x")
        ai = col.__cuda_array_interface__
        seen.append((ai["shape"], ai["typestr"], ai["data"][1], ai["stream"] == p.stream, col.__dlpack_device__()[0],
                     hasattr(col, "__array_interface__")))

    tug.DataFrame({"x": [1, 2, 3]}).lazy().foreach_partition(tug.python_kernel(device=look), engine="gpu")
    assert seen == [((3,), "<i8", True, True, 2, False)]


@gpu
def test_gpu_cupy_raw_kernel_on_tugs_partitions():
    cp = pytest.importorskip("cupy")
    raw = cp.RawKernel(r"""
    extern "C" __global__ void scale(const double* x, double* y, double a, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i];
    }""", "scale")

    def scale(p):
        x = cp.asarray(p.input("x"))  # zero-copy through __cuda_array_interface__
        y = cp.asarray(p.output("y"))
        assert x.data.ptr == p.input("x").data_ptr
        with cp.cuda.ExternalStream(p.stream):
            raw(((p.rows + 255) // 256,), (256,), (x, y, cp.float64(p.args[0]), cp.int64(p.rows)))

    t = pa.table({"x": np.arange(5000, dtype=np.float64)})
    out = tug.from_arrow(t).lazy().map_partitions(tug.python_kernel(device=scale), inputs=["x"], args=[3.0],
                                                  keep=["x"], schema={"y": tug.Float64})
    got = out.collect(engine="gpu", target_partition_rows=1024).to_arrow().sort_by("x")
    assert got["y"].to_pylist() == [3.0 * i for i in range(5000)]


@gpu
def test_gpu_cupy_from_dlpack_on_tugs_partitions():
    cp = pytest.importorskip("cupy")

    def double(p):
        y = cp.from_dlpack(p.output("y"))
        with cp.cuda.ExternalStream(p.stream):
            y[...] = cp.from_dlpack(p.input("x")) * 2

    out = tug.DataFrame({"x": [1.0, 2.0, 3.0]}).lazy().map_partitions(
        tug.python_kernel(device=double), inputs=["x"], schema={"y": tug.Float64}).collect(engine="gpu")
    assert out.to_dict()["y"] == [2.0, 4.0, 6.0]


@gpu
def test_gpu_numba_kernel_on_tugs_partitions(monkeypatch):
    numba_cuda = pytest.importorskip("numba.cuda")
    # numba-cuda 0.30 (the last release; its maintainers keep it as it is) registers an overload of np.row_stack
    # when it compiles its first kernel, and numpy 2.5 removed that alias of np.vstack (NVIDIA/numba-cuda#907):
    # the GPU machines' python3 has both. The alias back for this test; nothing of tug's depends on it.
    monkeypatch.setattr(np, "row_stack", np.vstack, raising=False)

    @numba_cuda.jit
    def add_one(x, y):
        i = numba_cuda.grid(1)
        if i < x.size:
            y[i] = x[i] + 1

    def run(p):
        x = numba_cuda.as_cuda_array(p.input("x"))
        y = numba_cuda.as_cuda_array(p.output("y"))
        add_one[(p.rows + 127) // 128, 128, numba_cuda.external_stream(p.stream)](x, y)

    out = tug.DataFrame({"x": list(range(1000))}).lazy().map_partitions(
        tug.python_kernel(device=run), inputs=["x"], keep=["x"], schema={"y": tug.Int64}).collect(engine="gpu")
    got = out.to_arrow().sort_by("x")
    assert got["y"].to_pylist() == list(range(1, 1001))


def test_a_frame_holding_a_kernel_is_freed_at_exit():
    # the kernel's function reaches the module globals that hold the frame: a cycle through C++ that the
    # garbage collector cannot see, broken at exit (nanobind reports instances still alive then as leaks)
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import tug\nlf = tug.DataFrame({'x': [1, 2]}).lazy()\n"
            "q = lf.map_partitions(lambda p: None, inputs=['x'], keep=['x'])\nprint(q.collect().height)\n")
    env = dict(os.environ, PYTHONPATH=str(Path(tug.__file__).parents[1]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and p.stdout == "2\n" and "leaked" not in p.stderr, p.stderr


def test_dlpack_capsules_of_both_versions_and_the_read_only_flag():
    import ctypes

    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    seen = []

    def look(p):
        c = p.input("x")
        seen.append((is_valid(c.__dlpack__(), b"dltensor"),
                     is_valid(c.__dlpack__(max_version=(0, 8)), b"dltensor"),
                     is_valid(c.__dlpack__(max_version=(1, 0)), b"dltensor_versioned"),
                     np.from_dlpack(c).flags.writeable, np.from_dlpack(p.output("y")).flags.writeable))

    tug.DataFrame({"x": [1, 2]}).lazy().map_partitions(look, inputs=["x"], schema={"y": tug.Int64}).collect(**CPU)
    assert seen == [(1, 1, 1, False, True)]
