#!/usr/bin/env bash
# bench/proxy-vs-twemproxy.sh - the issue's pair alone, in about a minute:
# tair with one dataserver (copy count 1) against twemproxy in front of
# redis-server, through bench/anchors/compare.sh (interleaved rounds).
# By default tair is `tair up` (configserver, dataserver and proxy in one
# process); TOPOLOGY=split runs them as separate processes, as deployed,
# the dataserver and the proxy with GOMAXPROCS=1 each (the thread budget
# of redis-server and twemproxy; TAIR_GOMAXPROCS= for Go's default).
#
#   bench/proxy-vs-twemproxy.sh                 # compare (ROUNDS, TARGET_SECS as compare.sh; TARGET_SECS defaults to 2 here)
#   bench/proxy-vs-twemproxy.sh profile set 16  # CPU profile of tair under redis-benchmark -t set -P 16
#                                               # (8 s, /debug/pprof on the proxy's http port; unless
#                                               # TOPOLOGY=split the dataserver runs in the same process): go tool pprof -top bin/tair FILE
set -u
cd "$(dirname "$0")/.."
MODE=${1:-compare}
. bench/lib.sh
TAIR_PORT=$(free_port)
while [ "$TAIR_PORT" -gt 63000 ]; do TAIR_PORT=$(free_port); done # the proxy's http port is TAIR_PORT+2000
if [ "$MODE" = compare ]; then
  REDIS_PORT=$(free_port); TWEM_PORT=$(free_port); TWEM_STATS=$(free_port)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no >"$TMP/redis.log" 2>&1 &
  PIDS+=($!)
  printf 'alpha:\n  listen: 127.0.0.1:%s\n  redis: true\n  servers:\n   - 127.0.0.1:%s:1\n' "$TWEM_PORT" "$REDIS_PORT" >"$TMP/nutcracker.yml"
  nutcracker -c "$TMP/nutcracker.yml" -a 127.0.0.1 -s "$TWEM_STATS" >"$TMP/nutcracker.log" 2>&1 &
  PIDS+=($!)
fi
if [ "${TOPOLOGY:-up}" = up ]; then
  "$BIN" up --port "$TAIR_PORT" --dataservers 1 --copies 1 --log-level warn >"$TMP/tair1.log" 2>&1 &
  PIDS+=($!)
  wait_ping "$TAIR_PORT" || { cat "$TMP"/*.log; exit 1; }
else
  start_tair_split "$TAIR_PORT" || exit 1
fi
if [ "$MODE" = compare ]; then
  wait_ping "$TWEM_PORT" || { cat "$TMP"/*.log; exit 1; }
  ROUNDS=${ROUNDS:-3} TARGET_SECS=${TARGET_SECS:-2} bash bench/anchors/compare.sh \
    "127.0.0.1:$TAIR_PORT" "127.0.0.1:$TWEM_PORT" tair-1ds twemproxy
else
  T=${2:-set}; P=${3:-1}; S=${4:-8}; OUTF=${5:-bench/out/prof-$T-P$P.pb.gz}
  mkdir -p "$(dirname "$OUTF")"
  redis-benchmark -p "$TAIR_PORT" -c 50 -P "$P" -r 100000 -t set -n 200000 -q >/dev/null 2>&1
  (timeout $((S + 20)) redis-benchmark -p "$TAIR_PORT" -c 50 -P "$P" -r 100000 -t "$T" -n 100000000 -q >/dev/null 2>&1) &
  RB=$!
  sleep 1
  curl -s -o "$OUTF" "http://127.0.0.1:$((TAIR_PORT + 2000))/debug/pprof/profile?seconds=$S"
  kill "$RB" 2>/dev/null
  wait "$RB" 2>/dev/null
  echo "profile: $OUTF (go tool pprof -top $BIN $OUTF)"
fi
