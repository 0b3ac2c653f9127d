#!/usr/bin/env bash
# bench/migration.sh - `make bench-migration`: an online migration under
# load. Starts a configserver, 3 dataservers (rdb, copy count 2, 1023
# buckets) and a proxy as separate processes, then bench/migration (Go):
# loads KEYS keys (16-byte keys, 32-byte values) through the proxy, runs a
# paced GET/SET load (CLIENTS connections, RATE requests/s in all), measures
# client latency for BEFORE, starts a 4th dataserver and measures keys moved
# per second and client latency until the table has settled.
#
# Knobs: KEYS (1000000), CLIENTS (20), RATE (2000), BEFORE (10s), AFTER (5s),
# MOVES_PER_NODE (the configserver's --moves-per-node; its default when unset).
# Output goes to bench/out/migration-<time>.md and to stdout.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
steady_load_knobs

start_cluster 3 "" "" ${MOVES_PER_NODE:+--moves-per-node $MOVES_PER_NODE} || exit 1

DS4=$(free_port); DS4_HTTP=$(free_port)
new_report migration
{
  echo "# make bench-migration, $STAMP, $(nproc) cores"
  echo
  echo "3 dataservers (rdb, copy count 2, 1023 buckets) + 1 proxy; $KEYS keys (16 B keys, 32 B values);"
  echo "steady load: $CLIENTS connections, $RATE requests/s (half GET, half SET), latency from each request's scheduled time;"
  echo "then a 4th dataserver joins (configserver --moves-per-node ${MOVES_PER_NODE:-default})."
  echo
  go run ./bench/migration --proxy "127.0.0.1:$PX" --configserver "127.0.0.1:$CS" --tair "$BIN" \
    --keys "$KEYS" --clients "$CLIENTS" --rate "$RATE" --before "$BEFORE" --after "${AFTER:-5s}" --ds-log "$TMP/ds4.log" \
    --ds-args "--listen 127.0.0.1:$DS4 --http 127.0.0.1:$DS4_HTTP --configserver 127.0.0.1:$CS --engine rdb --log-level warn"
  rc=$?
  if [ $rc -ne 0 ]; then tail -n 30 "$TMP"/*.log; fi
} 2>&1 | tee "$REPORT"
echo "report: $REPORT"
