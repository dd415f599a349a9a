#!/usr/bin/env bash
# Apache Cassandra for tug's tests, fetched from Maven Central (no other download): a single node, a node that
# requires TLS, and a three-node ring on 127.0.0.1, .2 and .3.
#   scripts/cassandra.sh fetch              jars into $TUG_CASSANDRA_HOME/lib (idempotent)
#   scripts/cassandra.sh start DIR PORT     a node on 127.0.0.1:PORT (PORT "auto": a free one) with its data,
#                                           log, pid and port in DIR; waits until the native port answers and
#                                           the superuser can log in
#                                           (PasswordAuthenticator on, superuser cassandra/cassandra). A node
#                                           already running in DIR is kept.
#   scripts/cassandra.sh start DIR PORT tls the same with client encryption required (TLS with client
#                                           certificates): DIR/certs gets a test CA and certificates (certs)
#   scripts/cassandra.sh certs DIR          a CA (ca.pem), the node's certificate for 127.0.0.1 (server.pem,
#                                           .key, .p12) and truststore.p12, a client certificate (client.pem,
#                                           .key), expired ones (client-expired, server-expired) and a
#                                           second CA that signed none of them (other-ca.pem); openssl CLI
#   scripts/cassandra.sh ring DIR PORT      a three-node ring on 127.0.0.1, .2 and .3 (DIR/n1..n3), all on PORT
#                                           ("auto": one free on the three addresses), 256 MB heaps
#                                           (TUG_CASSANDRA_RING_HEAP); ring-stop DIR, ring-status DIR;
#                                           ring-node DIR I start|stop: node I alone, its data kept
#                                           (I = 4: a fourth node on 127.0.0.4 joins the ring, with
#                                           TUG_CASSANDRA_INITIAL_TOKEN as its one token when set);
#                                           ring-node DIR I decommission: node I leaves the ring (nodetool
#                                           over the node's local JMX port, PORT + 10 + I), then stops
#                                           and its directory goes (a later start joins afresh);
#                                           ring-node DIR I nodetool ARGS: nodetool ARGS on node I
#   scripts/cassandra.sh stop DIR           stops the node started in DIR
#   scripts/cassandra.sh status DIR         exit 0 while it runs
# Needs Java 17 and Maven (scripts/setup.sh installs both). Heap: TUG_CASSANDRA_HEAP (default 512M).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
home="${TUG_CASSANDRA_HOME:-$root/.cache/cassandra}"
version=5.0.4

source "$root/scripts/lib/maven-fetch.sh"
fetch() { maven_fetch "$root/scripts/cassandra/pom.xml" "$home/lib" "$version"; }

free_port() { free_port_after 17099; }
free_port_after() {
  local p
  for p in $(seq $(( $1 + 1 )) $(( $1 + 900 ))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}

# certs DIR: test certificates, made with the openssl CLI (keytool for the node's PKCS12 truststore)
certs() {
  local d="$1" pass=tugtest
  [ -f "$d/.complete" ] && return 0
  mkdir -p "$d/newcerts"
  : > "$d/index.txt"
  echo 1000 > "$d/serial"
  cat > "$d/ca.cnf" <<CNF
[ ca ]
default_ca = tug
[ tug ]
database = $d/index.txt
new_certs_dir = $d/newcerts
serial = $d/serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[ any ]
commonName = supplied
CNF
  local q=(-batch -config "$d/ca.cnf" -cert "$d/ca.pem" -keyfile "$d/ca.key" -notext)
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.pem" -days 3650 -subj "/CN=tug test CA" 2>/dev/null
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/other-ca.key" -out "$d/other-ca.pem" -days 3650 \
    -subj "/CN=tug other CA" 2>/dev/null
  local name cn
  for name in server client server-expired client-expired; do
    cn="tug client"
    case "$name" in server*) cn="127.0.0.1" ;; esac
    local ext=()
    case "$name" in server*) ext=(-addext "subjectAltName=IP:127.0.0.1") ;; esac
    openssl req -new -newkey rsa:2048 -nodes -keyout "$d/$name.key" -out "$d/$name.csr" -subj "/CN=$cn" "${ext[@]}" 2>/dev/null
    case "$name" in
      *-expired) openssl ca "${q[@]}" -in "$d/$name.csr" -out "$d/$name.pem" -startdate 20200101000000Z \
                   -enddate 20200102000000Z 2>/dev/null ;;
      *) openssl ca "${q[@]}" -in "$d/$name.csr" -out "$d/$name.pem" -days 3650 2>/dev/null ;;
    esac
  done
  openssl pkcs12 -export -in "$d/server.pem" -inkey "$d/server.key" -certfile "$d/ca.pem" -name node \
    -out "$d/server.p12" -passout "pass:$pass"
  rm -f "$d/truststore.p12"
  keytool -importcert -noprompt -alias ca -file "$d/ca.pem" -keystore "$d/truststore.p12" -storetype PKCS12 \
    -storepass "$pass" >/dev/null 2>&1
  touch "$d/.complete"
}

start() {
  local dir="$1" port="$2" mode="${3:-plain}"
  if status "$dir"; then
    echo "cassandra.sh: already running in $dir on port $(cat "$dir/port")"
    return 0
  fi
  fetch
  rm -rf "$dir"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  if [ "$port" = auto ]; then
    if [ "$mode" = tls ]; then port="$(free_port_after 17299)"; else port="$(free_port)"; fi
  fi
  local storage_port
  storage_port="$(free_port_after "$port")"
  start_node "$dir" 127.0.0.1 "$port" "$storage_port" "$mode" "${TUG_CASSANDRA_HEAP:-512M}" || return 1
  # the node answers before its login exists: the default superuser is created a moment later, and a client
  # that comes first gets Bad_credentials
  local i
  for i in $(seq 1 120); do
    grep -q "Created default superuser role" "$dir/server.log" 2>/dev/null && return 0
    sleep 0.25
  done
  echo "cassandra.sh: no default superuser role after 30 s; see $dir/server.log" >&2
  return 1
}

# a port free on 127.0.0.1, .2 and .3 whose next port is free too (native and storage port of the ring)
free_ring_port() {
  local p a used
  for p in $(seq 17501 17900); do
    used=0
    for a in 127.0.0.1 127.0.0.2 127.0.0.3; do
      (exec 3<>"/dev/tcp/$a/$p") 2>/dev/null && used=1
      (exec 3<>"/dev/tcp/$a/$((p + 1))") 2>/dev/null && used=1
    done
    [ "$used" = 0 ] && { echo "$p"; return 0; }
  done
  return 1
}

# ring DIR PORT: three nodes on 127.0.0.1, .2 and .3 (DIR/n1..n3), one native port and one storage port
ring() {
  local dir="$1" port="$2"
  if ring_status "$dir"; then
    echo "cassandra.sh: ring already running in $dir on port $(cat "$dir/port")"
    return 0
  fi
  fetch
  ring_stop "$dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [ "$port" = auto ] && port="$(free_ring_port)"
  echo "$port" > "$dir/port"
  local i
  for i in 1 2 3; do
    # one after the other: a node joins the ring of those already up (auto_bootstrap off: the ring is empty)
    start_node "$dir/n$i" "127.0.0.$i" "$port" "$((port + 1))" ring "${TUG_CASSANDRA_RING_HEAP:-256M}" || {
      ring_stop "$dir"
      return 1
    }
  done
}
ring_stop() { local d; for d in "$1"/n*; do [ -d "$d" ] && stop "$d"; done; return 0; }
# ring-node DIR I start|stop: one node of a running ring (its data kept: a stopped node comes back)
ring_node() {
  local dir="$1" i="$2" port
  port="$(cat "$dir/port")"
  case "$3" in
    stop) stop "$dir/n$i" ;;
    start) status "$dir/n$i" || start_node "$dir/n$i" "127.0.0.$i" "$port" "$((port + 1))" ring "${TUG_CASSANDRA_RING_HEAP:-256M}" ;;
    decommission)
      # streams the node's ranges to the others and leaves the ring, so it is gone from system.peers
      local opens=()
      java_opens
      java "${opens[@]}" -cp "$home/lib/*" org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$((port + 10 + i))" decommission \
        >"$dir/n$i/decommission.log" 2>&1 || { tail -20 "$dir/n$i/decommission.log" >&2; return 1; }
      stop "$dir/n$i"
      rm -rf "${dir:?}/n$i" ;;  # a decommissioned node does not rejoin with its data: start it afresh
    nodetool)  # nodetool ARGS... against node I (its local JMX port)
      local opens=()
      java_opens
      java "${opens[@]}" -cp "$home/lib/*" org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$((port + 10 + i))" "${@:4}" ;;
    *) echo "ring-node DIR I start|stop|decommission|nodetool ARGS" >&2; return 2 ;;
  esac
}
ring_status() { status "$1/n1" && status "$1/n2" && status "$1/n3"; }

# java_opens: the module flags Cassandra (and nodetool) need on Java 17, into the caller's array `opens`
java_opens() {
  local m
  for m in java.lang java.lang.module java.lang.reflect java.io java.nio java.math java.net java.util \
           java.util.concurrent java.util.concurrent.atomic jdk.internal.loader jdk.internal.ref \
           jdk.internal.reflect jdk.internal.math jdk.internal.module jdk.internal.util.jar sun.nio.ch; do
    opens+=(--add-opens "java.base/$m=ALL-UNNAMED")
  done
  for m in java.base/jdk.internal.misc java.base/jdk.internal.ref java.base/sun.nio.ch \
           java.management.rmi/com.sun.jmx.remote.internal.rmi java.rmi/sun.rmi.registry \
           java.rmi/sun.rmi.server java.sql/java.sql; do
    opens+=(--add-exports "$m=ALL-UNNAMED")
  done
  opens+=(--add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED)
}

# start_node DIR ADDRESS PORT STORAGE_PORT MODE HEAP: MODE plain, tls or ring (seed 127.0.0.1, no bootstrap)
start_node() {
  local dir="$1" address="$2" port="$3" storage_port="$4" mode="$5" heap="$6"
  mkdir -p "$dir"
  echo "$port" > "$dir/port"
  local seed="$address"
  [ "$mode" = ring ] && seed=127.0.0.1
  # TUG_CASSANDRA_INITIAL_TOKEN: one token of the caller's choice (a node that joins a running ring takes
  # the range up to it, and no other), else 16 random ones
  local num_tokens=16
  [ -n "${TUG_CASSANDRA_INITIAL_TOKEN:-}" ] && num_tokens=1
  cat > "$dir/cassandra.yaml" <<YAML
cluster_name: tug_test
num_tokens: $num_tokens
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
authenticator: PasswordAuthenticator
authorizer: AllowAllAuthorizer
role_manager: CassandraRoleManager
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_directory: $dir/commitlog
data_file_directories: [$dir/data]
saved_caches_directory: $dir/saved_caches
hints_directory: $dir/hints
cdc_raw_directory: $dir/cdc_raw
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$seed:$storage_port"
listen_address: $address
storage_port: $storage_port
rpc_address: $address
start_native_transport: true
native_transport_port: $port
endpoint_snitch: SimpleSnitch
concurrent_reads: 8
concurrent_writes: 8
concurrent_counter_writes: 8
disk_access_mode: mmap_index_only
YAML
  if [ "$mode" = tls ]; then
    certs "$dir/certs"
    cat >> "$dir/cassandra.yaml" <<YAML
client_encryption_options:
  enabled: true
  optional: false
  keystore: $dir/certs/server.p12
  keystore_password: tugtest
  truststore: $dir/certs/truststore.p12
  truststore_password: tugtest
  store_type: PKCS12
  require_client_auth: true
YAML
  fi
  [ -n "${TUG_CASSANDRA_INITIAL_TOKEN:-}" ] && echo "initial_token: $TUG_CASSANDRA_INITIAL_TOKEN" >> "$dir/cassandra.yaml"
  if [ "$mode" = ring ]; then
    echo "auto_bootstrap: false" >> "$dir/cassandra.yaml"
    # system_auth has one replica: once a node that holds the login role's row stops, every check of it
    # fails (Unauthorized: "Cannot achieve consistency level QUORUM"); the nodes keep what they read once
    cat >> "$dir/cassandra.yaml" <<YAML
roles_validity: 1h
roles_update_interval: 1h
credentials_validity: 1h
credentials_update_interval: 1h
permissions_validity: 1h
permissions_update_interval: 1h
YAML
  fi
  local opens=()
  java_opens
  # ring nodes: a local JMX port for nodetool (ring-node DIR I decommission), PORT + 10 + the last octet
  [ "$mode" = ring ] && opens+=(-Dcassandra.jmx.local.port="$((port + 10 + ${address##*.}))")
  nohup java -Xms"$heap" -Xmx"$heap" -Xss512k -XX:+UseG1GC -XX:ActiveProcessorCount=2 -XX:TieredStopAtLevel=1 \
    -Djdk.attach.allowAttachSelf=true -Djava.net.preferIPv4Stack=true "${opens[@]}" \
    -Dcassandra.config="file://$dir/cassandra.yaml" -Dcassandra.storagedir="$dir" -Dcassandra-foreground=yes \
    -Dcassandra.logdir="$dir" -Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.skip_wait_for_gossip_to_settle=0 \
    -Dcassandra.ring_delay_ms=0 \
    -cp "$home/lib/*" org.apache.cassandra.service.CassandraDaemon >"$dir/server.log" 2>&1 &
  echo $! > "$dir/pid"
  local i
  for i in $(seq 1 240); do
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "cassandra.sh: the server exited; last lines of $dir/server.log:" >&2
      tail -20 "$dir/server.log" >&2
      return 1
    fi
    if grep -q "Starting listening for CQL clients" "$dir/server.log" 2>/dev/null; then
      echo "cassandra.sh: listening on $address:$port (pid $(cat "$dir/pid"))"
      return 0
    fi
    sleep 0.5
  done
  echo "cassandra.sh: no native port after 120 s; see $dir/server.log" >&2
  stop "$dir"
  return 1
}

stop() {
  local dir="$1"
  [ -f "$dir/pid" ] || return 0
  local pid
  pid="$(cat "$dir/pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$dir/pid"
}

status() { [ -f "$1/pid" ] && kill -0 "$(cat "$1/pid")" 2>/dev/null; }

case "${1:-}" in
  fetch) fetch ;;
  start) start "${2:?DIR}" "${3:?PORT}" "${4:-plain}" ;;
  certs) certs "${2:?DIR}" ;;
  ring) ring "${2:?DIR}" "${3:?PORT}" ;;
  ring-stop) ring_stop "${2:?DIR}" ;;
  ring-status) ring_status "${2:?DIR}" ;;
  ring-node) ring_node "${2:?DIR}" "${3:?I}" "${4:?start|stop}" "${@:5}" ;;
  stop) stop "${2:?DIR}" ;;
  status) status "${2:?DIR}" ;;
  *) echo "usage: $0 fetch | start DIR PORT [tls] | certs DIR | stop DIR | status DIR | ring DIR PORT | ring-stop DIR | ring-status DIR | ring-node DIR I start|stop|decommission" >&2
     exit 2 ;;
esac
