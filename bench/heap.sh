#!/usr/bin/env bash
# bench/heap.sh - make bench's step 8: issue 16's heap aim. Two clusters
# side by side, each a configserver, one dataserver (rdb, Go's default
# GOMAXPROCS) and a proxy as separate processes, copy count 1;
# bench/heap loads HEAP_SMALL keys (100000) into one and HEAP_LARGE keys
# (10000000) into the other, runs one paced steady load that alternates
# between them in 1 s slices (so the machine's noise falls on both alike),
# and prints the GET p99 ratio beside the aim (no worse with the large
# count). PROFILE=1 also takes a CPU profile of the large count's
# dataserver during the run (bench/out/heap-<time>.cpu.pb). Then the same
# driver runs on two plain redis-servers (the anchor; SKIP_ANCHOR=1 skips
# it), so the ratio shows beside what redis-server gets on this machine.
# Knobs: HEAP_SMALL, HEAP_LARGE, CLIENTS (20), RATE (4000), WINDOW (15s),
# ENGINE (rdb).
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
HEAP_SMALL=${HEAP_SMALL:-100000}
HEAP_LARGE=${HEAP_LARGE:-10000000}
CLIENTS=${CLIENTS:-20}
RATE=${RATE:-4000}
WINDOW=${WINDOW:-15s}
ENGINE=${ENGINE:-rdb}

# start_cluster NAME: a configserver, one dataserver and a proxy; sets
# PX_<NAME> and DSH_<NAME> (the proxy's port, the dataserver's HTTP port).
start_cluster() {
  local name=$1 cs csh ds dsh px pxh
  cs=$(free_port); csh=$(free_port); ds=$(free_port); dsh=$(free_port); px=$(free_port); pxh=$(free_port)
  "$BIN" configserver --listen "127.0.0.1:$cs" --http "127.0.0.1:$csh" --copies 1 --etcd-dir "$TMP/etcd-$name" --log-level warn >"$TMP/cs-$name.log" 2>&1 &
  PIDS+=($!)
  "$BIN" dataserver --listen "127.0.0.1:$ds" --http "127.0.0.1:$dsh" --configserver "127.0.0.1:$cs" --engine "$ENGINE" --log-level warn >"$TMP/ds-$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 200); do
    "$BIN" ctl --configserver "127.0.0.1:$cs" table >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$BIN" proxy --listen "127.0.0.1:$px" --http "127.0.0.1:$pxh" --configserver "127.0.0.1:$cs" --log-level warn >"$TMP/proxy-$name.log" 2>&1 &
  PIDS+=($!)
  wait_ping "$px" || { tail -n 20 "$TMP"/*.log; exit 1; }
  for _ in $(seq 1 300); do
    [ "$(redis-cli -p "$px" SET tair:bench:ready 1 2>/dev/null)" = OK ] && break
    sleep 0.1
  done
  printf -v "PX_$name" %s "$px"
  printf -v "DSH_$name" %s "$dsh"
}
start_cluster small
start_cluster large

new_report heap
{
  echo "# heap (bench/heap.sh), $STAMP, $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null)"
  echo
  echo "two clusters side by side, each one dataserver ($ENGINE, copy count 1) + proxy, separate processes; 16 B keys, 32 B values;"
  echo "steady load: $CLIENTS connections per cluster, $RATE requests/s (half GET, half SET), alternating between the clusters in 1 s slices, $WINDOW of it for each;"
  echo "latency from each request's scheduled time."
  echo
  go run ./bench/heap --proxy "127.0.0.1:$PX_small" --dataserver-http "127.0.0.1:$DSH_small" \
    --proxy-large "127.0.0.1:$PX_large" --dataserver-http-large "127.0.0.1:$DSH_large" --small "$HEAP_SMALL" --large "$HEAP_LARGE" \
    --clients "$CLIENTS" --rate "$RATE" --window "$WINDOW" ${PROFILE:+--profile "$OUT/heap-$STAMP.cpu.pb"} || tail -n 30 "$TMP"/*.log
  [ -n "${SKIP_ANCHOR:-}" ] && exit 0
  # The anchor: the same driver, the same key counts and load, on two
  # plain redis-servers (Debian's package) side by side, the clusters
  # above stopped first (its Go-heap columns read 0). What a store that keeps no Go heap gets on this
  # machine when one of its two instances holds 10M keys.
  stop_all
  echo
  echo "## the anchor: two redis-servers side by side, the same driver and load"
  echo
  R1=$(free_port); R2=$(free_port)
  for r in "$R1" "$R2"; do
    redis-server --port "$r" --bind 127.0.0.1 --save "" --appendonly no >"$TMP/redis-$r.log" 2>&1 &
    PIDS+=($!)
    wait_ping "$r" || exit 1
  done
  go run ./bench/heap --label redis-server --proxy "127.0.0.1:$R1" --dataserver-http none \
    --proxy-large "127.0.0.1:$R2" --dataserver-http-large none --small "$HEAP_SMALL" --large "$HEAP_LARGE" \
    --clients "$CLIENTS" --rate "$RATE" --window "$WINDOW"
} | tee "$REPORT"
