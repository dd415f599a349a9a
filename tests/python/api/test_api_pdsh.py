"""The 22 PDS-H queries of bench/pdsh/polars_queries.py, unchanged, through tug's Python API: the module's
`pl` is swapped for `tug`, so the very same query text runs on both, and the answers must equal Polars'
(SF 0.01)."""
import importlib.util
import os
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import tug

from api_data import align_widths

REPO = Path(__file__).resolve().parents[3]
PDSH = REPO / "bench" / "pdsh"
BUILD = Path(os.environ.get("TUG_BUILD_DIR", REPO / "build"))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pdsh_data = _load("pdsh_data", PDSH / "data.py")
polars_queries = _load("pdsh_polars_queries", PDSH / "polars_queries.py")
tug_queries = _load("pdsh_tug_queries", PDSH / "polars_queries.py")
tug_queries.pl = tug  # the functions look `pl` up when they run


@pytest.fixture(scope="module")
def sf001(tmp_path_factory):
    where = os.environ.get("TUG_PDSH_DATA") or tmp_path_factory.mktemp("pdsh-py") / "sf0.01"
    return pdsh_data.ensure_data(where, 0.01, BUILD)


@pytest.mark.parametrize("q", range(1, 23))
def test_pdsh_query_same_as_polars(sf001, q):
    tables = {t: f"{sf001}/{t}/*.parquet" for t in polars_queries.TABLE_NAMES}
    want = polars_queries.QUERIES[q](polars_queries.Tables(**{t: pl.scan_parquet(p) for t, p in tables.items()}))
    got = tug_queries.QUERIES[q](tug_queries.Tables(**{t: tug.scan_parquet(p) for t, p in tables.items()}))
    want = want.collect()
    got = align_widths(got.collect(engine="cpu").to_polars(), want)
    # the queries sort by their ORDER BY; ties may come in another order, so rows compare as multisets
    assert_frame_equal(got, want, check_row_order=False, rel_tol=1e-9, abs_tol=1e-9)
