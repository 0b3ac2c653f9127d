#!/usr/bin/env bash
# bench/heap.sh - make bench's step 8: issue 16's heap aim. A configserver,
# one dataserver (rdb, Go's default GOMAXPROCS) and a proxy as separate
# processes, copy count 1; bench/heap loads HEAP_SMALL keys (100000),
# measures GET latency under a paced steady load, loads up to HEAP_LARGE
# keys (10000000) and measures again, then prints the p99 ratio beside
# the aim (no worse with the large count). PROFILE=1 also takes a CPU
# profile of the dataserver during the large window
# (bench/out/heap-<time>.cpu.pb).
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

CS=$(free_port); CSH=$(free_port); DS=$(free_port); DSH=$(free_port); PX=$(free_port); PXH=$(free_port)
"$BIN" configserver --listen "127.0.0.1:$CS" --http "127.0.0.1:$CSH" --copies 1 --etcd-dir "$TMP/etcd" --log-level warn >"$TMP/cs.log" 2>&1 &
PIDS+=($!)
"$BIN" dataserver --listen "127.0.0.1:$DS" --http "127.0.0.1:$DSH" --configserver "127.0.0.1:$CS" --engine "$ENGINE" --log-level warn >"$TMP/ds.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 200); do
  "$BIN" ctl --configserver "127.0.0.1:$CS" table >/dev/null 2>&1 && break
  sleep 0.1
done
"$BIN" proxy --listen "127.0.0.1:$PX" --http "127.0.0.1:$PXH" --configserver "127.0.0.1:$CS" --log-level warn >"$TMP/proxy.log" 2>&1 &
PIDS+=($!)
wait_ping "$PX" || { tail -n 20 "$TMP"/*.log; exit 1; }
for _ in $(seq 1 300); do
  [ "$(redis-cli -p "$PX" SET tair:bench:ready 1 2>/dev/null)" = OK ] && break
  sleep 0.1
done

new_report heap
{
  echo "# heap (bench/heap.sh), $STAMP, $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null)"
  echo
  echo "one dataserver ($ENGINE, copy count 1) + proxy, separate processes; 16 B keys, 32 B values;"
  echo "steady load: $CLIENTS connections, $RATE requests/s (half GET, half SET), latency from each request's scheduled time, $WINDOW per window."
  echo
  go run ./bench/heap --proxy "127.0.0.1:$PX" --dataserver-http "127.0.0.1:$DSH" --small "$HEAP_SMALL" --large "$HEAP_LARGE" \
    --clients "$CLIENTS" --rate "$RATE" --window "$WINDOW" ${PROFILE:+--profile "$OUT/heap-$STAMP.cpu.pb"} || tail -n 30 "$TMP"/*.log
  [ -n "${PROFILE:-}" ] && echo && echo "CPU profile of the dataserver in the large window: $OUT/heap-$STAMP.cpu.pb"
} | tee "$REPORT"
