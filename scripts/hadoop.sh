#!/usr/bin/env bash
# Hadoop Streaming with the local job runner, for tug's Hadoop tests and driver (docs/user-kernels.md,
# "Inside Hadoop"); the jars come from Maven Central (no other download).
#   scripts/hadoop.sh fetch                 jars into $TUG_HADOOP_HOME/lib (default .cache/hadoop; idempotent)
#   scripts/hadoop.sh streaming ARGS...     org.apache.hadoop.streaming.HadoopStreaming ARGS on the local job
#                                           runner and the local file system (generic -D options first)
#   scripts/hadoop.sh classpath             the jars' class path (for `hadoop jar` on a cluster, use its own)
# Needs Java 17 and Maven (scripts/setup.sh installs both).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
home="${TUG_HADOOP_HOME:-$root/.cache/hadoop}"
version=3.3.4  # the newest hadoop-streaming Maven Central serves here; pinned in scripts/hadoop/pom.xml

source "$root/scripts/lib/maven-fetch.sh"
fetch() { maven_fetch "$root/scripts/hadoop/pom.xml" "$home/lib" "$version"; }

streaming() {
  fetch
  # -D options must come before the streaming options; the local runner keeps its staging under $home/tmp
  exec java -Xmx512m -cp "$home/lib/*" org.apache.hadoop.streaming.HadoopStreaming \
    -D mapreduce.framework.name=local -D fs.defaultFS=file:/// \
    -D hadoop.tmp.dir="$home/tmp" -D mapreduce.cluster.local.dir="$home/tmp/local" "$@"
}

case "${1:-}" in
  fetch) fetch ;;
  streaming) shift; streaming "$@" ;;
  classpath) fetch; echo "$home/lib/*" ;;
  *) sed -n '2,8p' "$0" >&2; exit 2 ;;
esac
