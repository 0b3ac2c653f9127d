#!/usr/bin/env bash
# bench/recovery.sh - `make bench-recovery`: a dataserver lost under load.
# Starts a configserver, 4 dataservers (rdb, copy count 2, 1023 buckets)
# and a proxy as separate processes, then bench/recovery (Go): loads keys
# (16-byte keys, 32-byte values) through the proxy until one dataserver
# holds about KEYS key copies, runs a paced GET/SET load (CLIENTS
# connections, RATE requests/s in all), measures client latency for
# BEFORE, kills that dataserver with SIGKILL and measures the time until
# every bucket has its full copy count again (aim: 10 s), the detection
# part of it (the first table in which the node masters no bucket), and
# client latency and errors during the recovery.
#
# Knobs: KEYS (1000000), CLIENTS (20), RATE (2000), BEFORE (10s);
# RECOVERY_MOVES_PER_NODE, MOVES_PER_NODE and MAX_MOVES: the
# configserver's move limits (empty: its defaults); HANDOFF (-1s: an rdb
# node killed comes back empty, so its copies are rebuilt at once; empty:
# the configserver's default window); CS_ARGS and DS_ARGS (more
# configserver / dataserver flags); DS_ENV (the dataservers' environment,
# e.g. GODEBUG=gctrace=1); PROFILE=1 (CPU profiles of the survivors, the
# configserver and the proxy for PROFILE_SECONDS (6) from the start of the
# moves, goroutine dumps, heap profiles and the logs, in
# bench/out/recovery-<time>/).
# Output goes to bench/out/recovery-<time>.md and to stdout.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
mkdir -p "$OUT"
. bench/lib.sh

KEYS=${KEYS:-1000000}
CLIENTS=${CLIENTS:-20}
RATE=${RATE:-2000}
BEFORE=${BEFORE:-10s}
RECOVERY_MOVES_PER_NODE=${RECOVERY_MOVES_PER_NODE:-}
MOVES_PER_NODE=${MOVES_PER_NODE:-}
MAX_MOVES=${MAX_MOVES:-}
HANDOFF=${HANDOFF--1s}

CS=$(free_port); CS_HTTP=$(free_port)
# shellcheck disable=SC2086
"$BIN" configserver --listen "127.0.0.1:$CS" --http "127.0.0.1:$CS_HTTP" --copies 2 --buckets 1023 \
  --etcd-dir "$TMP/etcd" --log-level warn ${MOVES_PER_NODE:+--moves-per-node $MOVES_PER_NODE} \
  ${RECOVERY_MOVES_PER_NODE:+--recovery-moves-per-node $RECOVERY_MOVES_PER_NODE} \
  ${MAX_MOVES:+--max-moves $MAX_MOVES} ${HANDOFF:+--handoff-window=$HANDOFF} ${CS_ARGS:-} >"$TMP/cs.log" 2>&1 &
PIDS+=($!)
CS_PID=$!
NODES=""
for i in 1 2 3 4; do
  p=$(free_port); h=$(free_port)
  # shellcheck disable=SC2086
  env ${DS_ENV:-} "$BIN" dataserver --listen "127.0.0.1:$p" --http "127.0.0.1:$h" --configserver "127.0.0.1:$CS" \
    --engine rdb --log-level warn ${DS_ARGS:-} >"$TMP/ds$i.log" 2>&1 &
  PIDS+=($!)
  NODES="$NODES${NODES:+,}127.0.0.1:$p=$!=127.0.0.1:$h"
done
# The proxy starts once the first table names the four dataservers.
for _ in $(seq 1 200); do
  n=$("$BIN" ctl --configserver "127.0.0.1:$CS" nodes 2>/dev/null | grep -c true)
  [ "${n:-0}" -ge 4 ] && "$BIN" ctl --configserver "127.0.0.1:$CS" table >/dev/null 2>&1 && break
  sleep 0.1
done
PX=$(free_port); PX_HTTP=$(free_port)
"$BIN" proxy --listen "127.0.0.1:$PX" --http "127.0.0.1:$PX_HTTP" --configserver "127.0.0.1:$CS" \
  --log-level warn >"$TMP/proxy.log" 2>&1 &
PIDS+=($!)
PX_PID=$!
wait_ping "$PX" || { tail -n 20 "$TMP"/*.log; exit 1; }

STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
REPORT=$OUT/recovery-$STAMP.md
PROF=()
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$OUT/recovery-$STAMP"
  PROF=(--profile "$OUT/recovery-$STAMP" --profile-seconds "${PROFILE_SECONDS:-6}")
fi
{
  echo "# make bench-recovery, $STAMP, $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null)"
  echo
  echo "4 dataservers (rdb, copy count 2, 1023 buckets) + 1 proxy, separate processes; configserver" \
    "--recovery-moves-per-node ${RECOVERY_MOVES_PER_NODE:-default} --moves-per-node ${MOVES_PER_NODE:-default}" \
    "--max-moves ${MAX_MOVES:-default} --handoff-window ${HANDOFF:-default} ${CS_ARGS:-}; dataservers ${DS_ARGS:-} ${DS_ENV:-};"
  echo "keys loaded (16 B keys, 32 B values) until one dataserver holds ~$KEYS key copies;"
  echo "steady load: $CLIENTS connections, $RATE requests/s (half GET, half SET), latency from each request's scheduled time;"
  echo "then that dataserver is killed (SIGKILL)."
  echo
  go run ./bench/recovery --proxy "127.0.0.1:$PX" --configserver "127.0.0.1:$CS" --configserver-http "127.0.0.1:$CS_HTTP" --proxy-http "127.0.0.1:$PX_HTTP" \
    --nodes "$NODES" --pids "configserver=$CS_PID,proxy=$PX_PID" --keys "$KEYS" --clients "$CLIENTS" --rate "$RATE" --before "$BEFORE" "${PROF[@]}"
  rc=$?
  if [ $rc -ne 0 ]; then tail -n 30 "$TMP"/*.log; fi
  if [ -n "${PROFILE:-}" ]; then
    cp "$TMP"/ds*.log "$TMP/cs.log" "$TMP/proxy.log" "$OUT/recovery-$STAMP/" 2>/dev/null
    echo "profiles and logs: $OUT/recovery-$STAMP/"
  fi
} 2>&1 | tee "$REPORT"
echo "report: $REPORT"
