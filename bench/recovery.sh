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
. bench/lib.sh
steady_load_knobs
RECOVERY_MOVES_PER_NODE=${RECOVERY_MOVES_PER_NODE:-}
MOVES_PER_NODE=${MOVES_PER_NODE:-}
MAX_MOVES=${MAX_MOVES:-}
HANDOFF=${HANDOFF--1s}

# shellcheck disable=SC2086
start_cluster 4 "${DS_ENV:-}" "${DS_ARGS:-}" ${MOVES_PER_NODE:+--moves-per-node $MOVES_PER_NODE} \
  ${RECOVERY_MOVES_PER_NODE:+--recovery-moves-per-node $RECOVERY_MOVES_PER_NODE} \
  ${MAX_MOVES:+--max-moves $MAX_MOVES} ${HANDOFF:+--handoff-window=$HANDOFF} ${CS_ARGS:-} || exit 1

new_report recovery
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
