#!/usr/bin/env python3
"""Reads a Parquet file with pyarrow and writes its columns' tug type names and values in the
canonical text form of make_parquet.py as JSON. Usage: read_parquet.py IN.parquet OUT.json"""
import json
import os
import sys

import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_parquet import expected_of  # noqa: E402

t = pq.read_table(sys.argv[1])
md = pq.ParquetFile(sys.argv[1]).metadata
# Statistics of row group 0 as pyarrow sees them: null count, whether min/max are usable, and for
# integer columns the values.
stats = {}
for i in range(md.num_columns):
    c = md.row_group(0).column(i)
    s = c.statistics
    entry = {"null_count": s.null_count if s is not None else None,
             "has_min_max": bool(s is not None and s.has_min_max)}
    if s is not None and s.has_min_max and s.logical_type.type == "INT":
        entry["min"], entry["max"] = str(s.min), str(s.max)
    stats[c.path_in_schema] = entry
with open(sys.argv[2], "w") as f:
    json.dump({"rows": t.num_rows, "row_groups": md.num_row_groups, "columns": expected_of(t), "stats": stats}, f)
