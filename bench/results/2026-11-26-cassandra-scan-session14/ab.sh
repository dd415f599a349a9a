#!/bin/bash
# interleaved A/B of tug's scans: $BEFORE and $AFTER (tug_bench binaries), 8 rounds; run from the repository root
# BEFORE, AFTER: two tug_bench binaries; a node on TUG_BENCH_CASSANDRA_PORT holding tug_bench.w_tug (cassandra_throughput.py --only scan writes it)
BEFORE=${BEFORE:?a tug_bench} AFTER=${AFTER:?a tug_bench}
export TUG_BENCH_CASSANDRA_PORT=${TUG_BENCH_CASSANDRA_PORT:?the node} TUG_BENCH_CASSANDRA_ROWS=200000 TUG_BENCH_CASSANDRA_FETCH=5000
for round in 1 2 3 4 5 6 7 8; do
  for v in before after; do
    exe=$BEFORE; [ $v = after ] && exe=$AFTER
    $exe --benchmark_filter='BM_cassandra_scan' --benchmark_format=json 2>/dev/null |
      .venv/bin/python -c "import json,sys; [print('$v', b['run_name'], round(b['real_time'],1)) for b in json.load(sys.stdin)['benchmarks']]"
  done
done
