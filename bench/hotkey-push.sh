#!/usr/bin/env bash
# bench/hotkey-push.sh - issue 16's hot key across proxies: a skewed read
# load (one key takes half the reads, bench/hotkey) through two proxies
# without the hot-key cache and two proxies with it (--hot-cache-ttl 1m,
# kept true by the dataservers' pushes), in alternating rounds, against
# one cluster of two dataservers (rdb, copy count 1) and a configserver,
# as separate processes with GOMAXPROCS=$TAIR_GOMAXPROCS each (default 1,
# as bench/lib.sh start_tair_split). Prints the hot key's GET rate with
# the cache over without it beside the aim (at least 3x).
#
# Knobs: KEYS (100000), CONNS (16 per side), PIPELINE (16), SECS (3),
# ROUNDS (3).
# Output goes to bench/out/hotkey-push-<time>.md and to stdout.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
gmp=${TAIR_GOMAXPROCS-1}
CS=$(free_port); CSH=$(free_port)
"$BIN" configserver --listen "127.0.0.1:$CS" --http "127.0.0.1:$CSH" --copies 1 --log-level warn >"$TMP/cs.log" 2>&1 &
PIDS+=($!)
PROCS="configserver=$!"
sleep 1
for i in 1 2; do
  p=$(free_port); h=$(free_port)
  env ${gmp:+GOMAXPROCS=$gmp} "$BIN" dataserver --listen "127.0.0.1:$p" --http "127.0.0.1:$h" --configserver "127.0.0.1:$CS" \
    --engine rdb --log-level warn >"$TMP/ds$i.log" 2>&1 &
  PIDS+=($!)
  PROCS="$PROCS,dataserver$i=$!"
done
wait_nodes 2
OFF=() ON=()
for i in 1 2 3 4; do
  p=$(free_port); h=$(free_port)
  extra=""
  if [ "$i" -gt 2 ]; then extra="--hot-cache-ttl 1m"; ON+=("127.0.0.1:$p"); else OFF+=("127.0.0.1:$p"); fi
  # shellcheck disable=SC2086
  env ${gmp:+GOMAXPROCS=$gmp} "$BIN" proxy --listen "127.0.0.1:$p" --http "127.0.0.1:$h" --configserver "127.0.0.1:$CS" \
    $extra --log-level warn >"$TMP/proxy$i.log" 2>&1 &
  PIDS+=($!)
  if [ "$i" -gt 2 ]; then PROCS="$PROCS,proxy$i (cache on)=$!"; else PROCS="$PROCS,proxy$i (cache off)=$!"; fi
done
for a in "${OFF[@]}" "${ON[@]}"; do
  for _ in $(seq 1 300); do
    [ "$(redis-cli -p "${a##*:}" SET tair:bench:ready 1 2>/dev/null)" = OK ] && break
    sleep 0.1
  done
done
new_report hotkey-push
{
  echo "# bench/hotkey-push.sh, $STAMP, $(nproc) cores"
  echo
  echo "configserver + 2 dataservers (rdb, copy count 1) + 4 proxies, separate processes, GOMAXPROCS=${gmp:-default} each;"
  echo "proxies ${OFF[*]} without the hot-key cache, ${ON[*]} with --hot-cache-ttl 1m (invalidations pushed by the dataservers)."
  echo
  go run ./bench/hotkey -pids "$PROCS" -off "$(IFS=,; echo "${OFF[*]}")" -on "$(IFS=,; echo "${ON[*]}")" \
    -keys "${KEYS:-100000}" -conns "${CONNS:-16}" -pipeline "${PIPELINE:-16}" -time "${SECS:-3}s" -rounds "${ROUNDS:-3}"
  rc=$?
  if [ $rc -ne 0 ]; then tail -n 30 "$TMP"/*.log; fi
} 2>&1 | tee "$REPORT"
echo "report: $REPORT"
