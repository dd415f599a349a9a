"""Differential test: random queries on random tables, run by tug and by DuckDB. tug runs them twice: through
the C++ API (tools/tug_difftest) and through the Python API (the same plans built with tug.col,
LazyFrame.filter, ... over tug.from_arrow tables: diff_polars.run_case_python).

Fixed seeds 0..19 (100 cases each) plus one fresh seed per run, printed; set TUG_DIFF_SEED=S to rerun
seed S as the fresh one. Reproduce one case with
    python3 tests/differential/diff_harness.py --seed S --case I [--oracle python] -v
A missing tug_difftest binary, or a missing Python package (TUG_BUILD_DIR/python, else an installed one),
fails the tests (they never skip): build it, or set TUG_BUILD_DIR.
"""
import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import diff_harness  # noqa: E402

FIXED_SEEDS = list(range(20))
FRESH_SEED = int(os.environ.get("TUG_DIFF_SEED") or random.SystemRandom().randrange(1000, 2**31))
MAX_REPORTED = 10


def _check(seed, oracle="tug"):
    how = "" if oracle == "tug" else f" --oracle {oracle}"
    print(f"\ndifferential seed {seed} (rerun with TUG_DIFF_SEED={seed} or "
          f"python3 tests/differential/diff_harness.py --seed {seed}{how})")
    failures, stats = diff_harness.run_seed(seed, oracle=oracle)
    summary = (f"seed {seed}: {stats['cases']} cases, {stats['matched']} matched, {len(failures)} mismatches "
               f"({stats['not_implemented']} raised not_implemented_error)")
    print(summary)
    if failures:
        shown = "\n".join(failures[:MAX_REPORTED])
        more = f"\n... and {len(failures) - MAX_REPORTED} more" if len(failures) > MAX_REPORTED else ""
        pytest.fail(f"{summary}\n{shown}{more}", pytrace=False)


def test_binary_present():
    """Fails (does not skip) when tug_difftest has not been built."""
    diff_harness.find_binary()


@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_fixed_seed(seed):
    _check(seed)


def test_fresh_seed():
    _check(FRESH_SEED)


# The Python API runs in this process: the ranks of TUG_DIFFTEST_RANKS are tug_difftest's (mpirun)
python_api = pytest.mark.skipif(os.environ.get("TUG_DIFFTEST_RANKS", "1").strip() not in ("", "1"),
                                reason="TUG_DIFFTEST_RANKS runs tug_difftest on ranks; the Python API runs in-process")


@python_api
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_fixed_seed_python_api(seed):
    _check(seed, "python")


@python_api
def test_fresh_seed_python_api():
    _check(FRESH_SEED, "python")


def test_python_api_results_have_their_own_types():
    """The Python path reports the types of tug's result (as tug_difftest does), not the expected ones: a
    case that expects another type fails."""
    import diff_polars

    case = diff_harness.make_case(0, 0)
    res = diff_polars.run_case_python(case)
    assert "error" not in res, res
    assert diff_harness.compare(case, res, diff_harness.run_duckdb(diff_harness.duck_connect(), case)) is None
    name, t = case["expected_types"][0]
    wrong = dict(case, expected_types=[[name, "str" if t != "str" else "i64"]] + case["expected_types"][1:])
    assert "column types differ" in diff_harness.compare(wrong, res, [])
    # errors come back under tug_difftest's names (a missing column: the C++ column_not_found_error)
    bad = dict(case, plan={"op": "select", "input": case["plan"], "exprs": [{"col": "no_such_column"}]})
    assert diff_polars.run_case_python(bad)["error"] == "column_not_found_error"


def test_harness_detects_differences():
    """The comparison itself must be able to fail: a wrong value, a wrong row count and a wrong order."""
    case = {"expected_types": [["a", "i64"], ["b", "f64"]], "ordered": True}
    res = {"schema": [{"name": "a", "type": "i64"}, {"name": "b", "type": "f64"}], "rows": [[1, 1.0], [2, None]]}
    assert diff_harness.compare(case, res, [(1, 1.0), (2, None)]) is None
    assert diff_harness.compare(case, res, [(1, 1.0 + 1e-12), (2, None)]) is None
    assert diff_harness.compare(case, res, [(1, 1.001), (2, None)]) is not None
    assert diff_harness.compare(case, res, [(2, None), (1, 1.0)]) is not None
    assert diff_harness.compare(case, res, [(1, 1.0)]) is not None
    assert diff_harness.compare(dict(case, ordered=False), res, [(2, None), (1, 1.0)]) is None
    assert diff_harness.compare(case, {"error": "type_error", "message": "x"}, []) is not None
    bad_type = dict(res, schema=[{"name": "a", "type": "i32"}, {"name": "b", "type": "f64"}])
    assert diff_harness.compare(case, bad_type, [(1, 1.0), (2, None)]) is not None
