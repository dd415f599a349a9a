"""Apache Cassandra: ``tug.scan_cassandra`` starts a query on a table, ``LazyFrame.sink_cassandra`` writes a
query's rows into one, and ``tug.cassandra_execute`` runs one CQL statement (a CREATE TABLE before a sink).
They are the C++ API's (include/tug/api/cassandra.hpp; docs/cassandra.md) with its option names.

Connection options, accepted by all three as keywords: ``contact_points`` (a host or a list of "host" /
"host:port"; default "127.0.0.1"), ``port`` (9042), ``username``, ``password``, ``connect_timeout_ms``,
``request_timeout_ms``, ``connections_per_host``, ``max_requests_per_connection``, ``max_retries``,
``retry_delay_ms``, ``discover_nodes``, ``token_aware``, ``reconnect_delay_ms``, ``schema_agreement_wait_ms``
and ``tls`` (True, or a dict of ``ca_file``, ``cert_file``, ``key_file``, ``verify_certificate``,
``verify_host``). An unknown option is an InvalidArgumentError naming it.
"""
from __future__ import annotations

from . import _tug


def scan_cassandra(keyspace: str, table: str, **options):
    """A LazyFrame over the Cassandra table ``keyspace.table``: read by token range in parallel, only the
    columns the query uses, with the filters Cassandra can answer pushed into the WHERE clause (tug checks
    every row again). Scan options besides the connection's: ``consistency`` ("LOCAL_ONE"), ``fetch_size``
    (1000 rows a page), ``split_size_mb`` (512), ``splits_when_unknown`` (16), ``splits`` (0: from the
    table's size), ``reads_in_flight`` (8), ``skip_unsupported_columns`` (False: a collection, tuple or
    user-defined column raises NotSupportedError), ``decimal_scale`` (10). It connects now to read the
    table's schema: a missing keyspace or table raises IOError naming it, wrong credentials IOError."""
    from .frame import LazyFrame

    return LazyFrame(_tug.scan_cassandra(keyspace, table, options))


def cassandra_execute(cql: str, **options) -> None:
    """Runs one CQL statement (CREATE KEYSPACE / TABLE, INSERT, DROP, ...) on a new session and discards any
    rows it returns; read tables with scan_cassandra. Raises IOError with the server's message."""
    _tug.cassandra_execute(cql, options)
