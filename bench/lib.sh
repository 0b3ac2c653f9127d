# bench/lib.sh - shared by the bench scripts (source it after cd to the
# project root): BIN built when missing, free_port, processes in PIDS
# (stop_all) and the scratch directory TMP cleaned up at exit, wait_ping
# PORT, new_report NAME, the steady load's knobs, and starting tair as
# separate processes (start_tair_split, start_cluster).
BIN=${BIN:-$PWD/bin/tair}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tair

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

PIDS=()
TMP=$(mktemp -d)
# stop_all stops every process in PIDS (and waits for them).
stop_all() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  PIDS=()
}
cleanup() {
  stop_all
  rm -rf "$TMP"
}
trap cleanup EXIT

wait_ping() {
  for _ in $(seq 1 200); do
    redis-cli -p "$1" PING 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "port $1 does not answer PING" >&2
  return 1
}

# new_report NAME: STAMP (now, UTC) and REPORT, the report file
# bench/out/NAME-STAMP.md in OUT (bench/out, made).
new_report() {
  OUT=$PWD/bench/out
  mkdir -p "$OUT"
  STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  REPORT=$OUT/$1-$STAMP.md
}

# steady_load_knobs: the knobs of the load bench/migration and
# bench/recovery measure (bench/internal/benchload), with their defaults:
# KEYS, CLIENTS (connections), RATE (requests/s in all), BEFORE (how long
# it is measured before the event).
steady_load_knobs() {
  KEYS=${KEYS:-1000000}
  CLIENTS=${CLIENTS:-20}
  RATE=${RATE:-2000}
  BEFORE=${BEFORE:-10s}
}

# start_tair_split PORT: a configserver, one dataserver (rdb) and a proxy on
# PORT as separate processes, as they are deployed (copy count 1). Each
# dataserver and proxy process gets GOMAXPROCS=$TAIR_GOMAXPROCS (default 1:
# one event loop, the thread budget of twemproxy and redis-server, one
# each, on a machine whose cores they share with redis-benchmark; empty:
# Go's default, every core) and --event-loops $TAIR_EVENT_LOOPS when set.
# The binary adds one P for the Go runtime beside its loops
# (internal/gnetx reserve). The proxy's /debug/pprof is on PORT+2000.
start_tair_split() {
  local port=$1 cs cshttp ds dshttp
  cs=$(free_port); cshttp=$(free_port); ds=$(free_port); dshttp=$(free_port)
  local gmp=${TAIR_GOMAXPROCS-1} loops=${TAIR_EVENT_LOOPS:-}
  "$BIN" configserver --listen "127.0.0.1:$cs" --http "127.0.0.1:$cshttp" --copies 1 \
    --log-level warn >"$TMP/configserver-$port.log" 2>&1 &
  PIDS+=($!)
  env ${gmp:+GOMAXPROCS=$gmp} "$BIN" dataserver --configserver "127.0.0.1:$cs" \
    --listen "127.0.0.1:$ds" --http "127.0.0.1:$dshttp" ${loops:+--event-loops $loops} --log-level warn >"$TMP/dataserver-$port.log" 2>&1 &
  PIDS+=($!)
  env ${gmp:+GOMAXPROCS=$gmp} "$BIN" proxy --configserver "127.0.0.1:$cs" \
    --listen "127.0.0.1:$port" --http "127.0.0.1:$((port + 2000))" ${loops:+--event-loops $loops} --log-level warn >"$TMP/proxy-$port.log" 2>&1 &
  PIDS+=($!)
  # Ready when a write goes through (the proxy has a table naming the
  # dataserver).
  for _ in $(seq 1 300); do
    [ "$(redis-cli -p "$port" SET tair:bench:ready 1 2>/dev/null)" = OK ] && return 0
    sleep 0.1
  done
  echo "tair on port $port never took a write" >&2
  cat "$TMP"/*-"$port".log >&2
  return 1
}

# wait_nodes N: waits (20 s at most) until the configserver at 127.0.0.1:$CS
# has N live dataservers and serves a table.
wait_nodes() {
  local up
  for _ in $(seq 1 200); do
    up=$("$BIN" ctl --configserver "127.0.0.1:$CS" nodes 2>/dev/null | grep -c true)
    [ "${up:-0}" -ge "$1" ] && "$BIN" ctl --configserver "127.0.0.1:$CS" table >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

# start_cluster N DS_ENV DS_ARGS [CONFIGSERVER_FLAG...]: as separate
# processes, a configserver (copy count 2, 1023 buckets, its etcd in TMP)
# with the flags given, N dataservers of the engine $CLUSTER_ENGINE
# (default rdb; data in TMP/ds<i>; environment DS_ENV, more flags DS_ARGS,
# both split on spaces) and, once the first table names them all, a
# proxy. Sets CS, CS_HTTP, CS_PID, NODES (addr=pid=http,...), PX, PX_HTTP
# and PX_PID; logs in TMP (cs.log, ds1.log..., proxy.log).
start_cluster() {
  local n=$1 ds_env=$2 ds_args=$3 i p h
  shift 3
  CS=$(free_port); CS_HTTP=$(free_port)
  "$BIN" configserver --listen "127.0.0.1:$CS" --http "127.0.0.1:$CS_HTTP" --copies 2 --buckets 1023 \
    --etcd-dir "$TMP/etcd" --log-level warn "$@" >"$TMP/cs.log" 2>&1 &
  PIDS+=($!)
  CS_PID=$!
  NODES=""
  for i in $(seq 1 "$n"); do
    p=$(free_port); h=$(free_port)
    # shellcheck disable=SC2086
    env $ds_env "$BIN" dataserver --listen "127.0.0.1:$p" --http "127.0.0.1:$h" --configserver "127.0.0.1:$CS" \
      --engine "${CLUSTER_ENGINE:-rdb}" --dir "$TMP/ds$i" --log-level warn $ds_args >"$TMP/ds$i.log" 2>&1 &
    PIDS+=($!)
    NODES="$NODES${NODES:+,}127.0.0.1:$p=$!=127.0.0.1:$h"
  done
  # The proxy starts once the first table names every dataserver.
  wait_nodes "$n"
  PX=$(free_port); PX_HTTP=$(free_port)
  "$BIN" proxy --listen "127.0.0.1:$PX" --http "127.0.0.1:$PX_HTTP" --configserver "127.0.0.1:$CS" \
    --log-level warn >"$TMP/proxy.log" 2>&1 &
  PIDS+=($!)
  PX_PID=$!
  wait_ping "$PX" || { tail -n 20 "$TMP"/*.log; return 1; }
}

# aim_ratio FILE TEST P MIN LABEL: from compare.sh's table in FILE, the
# median A/B ratio of TEST at -P P beside the aim "at least MIN", as a
# row of an aims table.
aim_ratio() {
  awk -F'|' -v t="$2" -v p="$3" -v min="$4" -v label="$5" '
    { gsub(/ /, "", $2); gsub(/ /, "", $3) }
    $2 == t && $3 == p {
      r = $6; gsub(/[* ]/, "", r)
      verdict = (r ~ /^[0-9.]+$/ && r + 0 >= min) ? "met" : "**missed**"
      printf "| %s | at least %sx | %s | %s |\n", label, min, r, verdict; found = 1; exit
    }
    END { if (!found) printf "| %s | at least %sx | – | not measured |\n", label, min }' "$1"
}

# aim_p99 FILE TEST P MAX LABEL: A's p99 over B's for TEST at -P P
# beside the aim "at most MAX times".
aim_p99() {
  awk -F'|' -v t="$2" -v p="$3" -v max="$4" -v label="$5" '
    { gsub(/ /, "", $2); gsub(/ /, "", $3) }
    $2 == t && $3 == p {
      split($10, a, "/"); split($11, b, "/")
      if (b[2] + 0 > 0 && a[2] ~ /[0-9]/) {
        r = a[2] / b[2]
        printf "| %s | at most %sx | %.2f (%.2f / %.2f ms) | %s |\n", label, max, r, a[2], b[2], (r <= max ? "met" : "**missed**")
      } else printf "| %s | at most %sx | – | not measured |\n", label, max
      found = 1; exit
    }
    END { if (!found) printf "| %s | at most %sx | – | not measured |\n", label, max }' "$1"
}
