#!/usr/bin/env python3
"""Seeds the corpora of the Parquet fuzz targets.

Usage: make_seeds.py PARQUET_DIR FOOTER_CORPUS PAGE_CORPUS

Writes a few tiny pyarrow files into PARQUET_DIR (next to the files of tests/data/make_parquet.py,
which the caller writes there first), then copies every file of PARQUET_DIR up to 64 KiB into
FOOTER_CORPUS and, for PAGE_CORPUS, each flat column chunk of up to 16 KiB behind the 5-byte prefix
that fuzz/parquet_page_fuzzer.cpp reads (physical type, optional|codec<<1, type length, rows - 1).
"""
import os
import shutil
import struct
import sys

import pyarrow as pa
import pyarrow.parquet as pq

TYPES = ["BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"]
CODECS = ["UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"]


def tiny_files(out):
    t = pa.table({"i": pa.array([1, None, 3, 4, 4, 4, 7], pa.int64()),
                  "j": pa.array([5, 6, 7, 8, 9, 10, 11], pa.int32()),
                  "b": pa.array([True, False, None, True, True, False, True]),
                  "f": pa.array([1.5, 2.5, None, -1.0, 0.0, 3.25, 9.0], pa.float64()),
                  "s": pa.array(["a", "bb", None, "a", "ccc", "a", ""]),
                  "x": pa.array([b"0123", b"abcd", None, b"zzzz", b"0123", b"abcd", b"qqqq"], pa.binary(4))})
    for version in ["1.0", "2.0"]:
        for codec in ["none", "snappy", "gzip", "zstd", "lz4"]:
            for dictionary in [True, False]:
                pq.write_table(t, os.path.join(out, "tiny_v%s_%s_%s.parquet" % (version[0], codec, int(dictionary))),
                               data_page_version=version, compression=codec, use_dictionary=dictionary,
                               row_group_size=4)
        enc = {"i": "DELTA_BINARY_PACKED", "j": "BYTE_STREAM_SPLIT", "f": "BYTE_STREAM_SPLIT",
               "s": "DELTA_BYTE_ARRAY", "x": "DELTA_BYTE_ARRAY"}
        pq.write_table(t, os.path.join(out, "tiny_v%s_delta.parquet" % version[0]), data_page_version=version,
                       use_dictionary=False, column_encoding=enc, compression="none")
        pq.write_table(t.select(["s"]), os.path.join(out, "tiny_v%s_dlba.parquet" % version[0]),
                       data_page_version=version, use_dictionary=False, compression="none",
                       column_encoding={"s": "DELTA_LENGTH_BYTE_ARRAY"})


def main():
    src, footer_dir, page_dir = sys.argv[1:4]
    os.makedirs(footer_dir, exist_ok=True)
    os.makedirs(page_dir, exist_ok=True)
    tiny_files(src)
    n_pages = 0
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if not name.endswith(".parquet") or os.path.getsize(path) > 65536:
            continue
        shutil.copy(path, os.path.join(footer_dir, name))
        md = pq.ParquetFile(path).metadata
        data = open(path, "rb").read()
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            for c in range(rg.num_columns):
                col = rg.column(c)
                sc = md.schema.column(c)
                if sc.max_repetition_level > 0 or "." in col.path_in_schema or col.num_values == 0:
                    continue
                if col.total_compressed_size > 16384 or col.num_values > 4096:
                    continue
                start = col.data_page_offset
                if col.has_dictionary_page and col.dictionary_page_offset:
                    start = min(start, col.dictionary_page_offset)
                chunk = data[start:start + col.total_compressed_size]
                head = struct.pack("<BBBH", TYPES.index(col.physical_type),
                                   (sc.max_definition_level > 0) | (CODECS.index(col.compression) << 1),
                                   (sc.length or 0) & 0xFF, (col.num_values - 1) % 4096)
                with open(os.path.join(page_dir, "%s_rg%d_c%d" % (name, g, c)), "wb") as f:
                    f.write(head + chunk)
                n_pages += 1
    print("seeds: %d files, %d column chunks" % (len(os.listdir(footer_dir)), n_pages))


if __name__ == "__main__":
    main()
