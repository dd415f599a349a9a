"""Reads a Cassandra table with the DataStax Python driver (PyPI cassandra-driver) and compares it, row by row,
with a Parquet file that tug wrote from scan_cassandra of the same table (the gtest
CassandraServer.ScanEqualsThePythonDriversRead runs this). Exit status 0 when they are equal, 1 with the first
differences otherwise, 2 when the driver is missing.

    compare_with_driver.py PORT KEYSPACE TABLE FILE.parquet"""
import calendar
import sys

try:
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
    from cassandra.query import SimpleStatement, tuple_factory
except ImportError:
    print("the Python driver is missing: scripts/setup.sh installs cassandra-driver into .venv")
    sys.exit(2)
import pyarrow.parquet as pq

COLUMNS = ["k", "c", "d", "s", "ts", "u", "dec", "b"]


def ms(t):
    """A timestamp as milliseconds since the epoch (the driver gives naive UTC datetimes)."""
    if t is None:
        return None
    return calendar.timegm(t.utctimetuple()) * 1000 + t.microsecond // 1000


def main():
    port, keyspace, table, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    profile = ExecutionProfile(row_factory=tuple_factory, request_timeout=120)
    cluster = Cluster(["127.0.0.1"], port=port, auth_provider=PlainTextAuthProvider("cassandra", "cassandra"),
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile}, protocol_version=4)
    session = cluster.connect()
    stmt = SimpleStatement(f"SELECT {', '.join(COLUMNS)} FROM {keyspace}.{table}", fetch_size=5000)
    driver = sorted(((k, c, d, s, ms(ts), None if u is None else str(u), dec, b)
                     for k, c, d, s, ts, u, dec, b in session.execute(stmt)), key=lambda r: (r[0], r[1]))
    cluster.shutdown()

    t = pq.read_table(path, columns=COLUMNS)
    cols = [t.column(n).to_pylist() for n in COLUMNS]
    ts = [ms(v) if v is not None else None for v in cols[4]]
    tug = sorted(zip(cols[0], cols[1], cols[2], cols[3], ts, cols[5], cols[6], cols[7]), key=lambda r: (r[0], r[1]))

    if len(driver) != len(tug):
        print(f"the driver read {len(driver)} rows, tug {len(tug)}")
        sys.exit(1)
    bad = 0
    for a, b in zip(driver, tug):
        # decimals compare by value (tug's scale is decimal_scale, the driver's the stored one)
        if a != b:
            bad += 1
            if bad <= 5:
                print(f"driver {a}\n   tug {b}")
    if bad:
        print(f"{bad} of {len(driver)} rows differ")
        sys.exit(1)
    print(f"{len(driver)} rows equal")


if __name__ == "__main__":
    main()
