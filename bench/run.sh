#!/usr/bin/env bash
# bench/run.sh - `make bench`: the cluster side by side with what users would
# pick instead, measured in one run as interleaved ratios (the only figures
# worth quoting on a noisy 2-core machine).
#
#   1. anchors: a plain redis-server, and twemproxy (nutcracker) in front of
#      a redis-server, both from Debian packages;
#   2. tair up with 1 dataserver, copy count 1 (the proxy's own cost);
#   3. tair up with 3 dataservers, copy count 2 (the default cluster);
#   4. bench/anchors/compare.sh for each pair, bench/anchors/rb.sh matrix;
#   5. Go benchmarks of the engines.
# Output goes to bench/out/ and to stdout; bench/RESULTS.md records a run.
#
# Knobs: ROUNDS (3), TARGET_SECS (3), SKIP_GO=1 to skip Go benchmarks,
# SKIP_MATRIX=1 to skip the rb.sh matrix.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
mkdir -p "$OUT"
. bench/lib.sh

REDIS_PORT=$(free_port)
TWEM_PORT=$(free_port)
TWEM_STATS=$(free_port)
TAIR1_PORT=$(free_port)
TAIR3_PORT=$(free_port)

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --enable-debug-command local >"$TMP/redis.log" 2>&1 &
PIDS+=($!)
printf 'alpha:\n  listen: 127.0.0.1:%s\n  redis: true\n  servers:\n   - 127.0.0.1:%s:1\n' "$TWEM_PORT" "$REDIS_PORT" >"$TMP/nutcracker.yml"
nutcracker -c "$TMP/nutcracker.yml" -a 127.0.0.1 -s "$TWEM_STATS" >"$TMP/nutcracker.log" 2>&1 &
PIDS+=($!)
"$BIN" up --port "$TAIR1_PORT" --dataservers 1 --copies 1 --log-level warn >"$TMP/tair1.log" 2>&1 &
TAIR1_PID=$!
PIDS+=($!)
wait_ping "$REDIS_PORT" && wait_ping "$TWEM_PORT" && wait_ping "$TAIR1_PORT" || { cat "$TMP"/*.log; exit 1; }

STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
REPORT=$OUT/report-$STAMP.md
{
  echo "# make bench, $STAMP, $(nproc) cores"
  echo
  echo "## tair (1 dataserver, copy count 1) vs twemproxy in front of redis-server"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR1_PORT" "127.0.0.1:$TWEM_PORT" tair-1ds twemproxy
  echo
  echo "## tair (1 dataserver, copy count 1) vs plain redis-server"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR1_PORT" "127.0.0.1:$REDIS_PORT" tair-1ds redis
  echo
} | tee "$REPORT"

# The same pair with tair as deployed: configserver, dataserver and proxy
# as separate processes, GOMAXPROCS=1 for the dataserver and the proxy
# (bench/lib.sh start_tair_split).
TAIRS_PORT=$(free_port)
while [ "$TAIRS_PORT" -gt 63000 ]; do TAIRS_PORT=$(free_port); done
start_tair_split "$TAIRS_PORT" || exit 1
{
  echo "## tair as separate processes (1 dataserver, copy count 1, GOMAXPROCS=1 each) vs twemproxy in front of redis-server"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIRS_PORT" "127.0.0.1:$TWEM_PORT" tair-1ds-split twemproxy
  echo
} | tee -a "$REPORT"
kill "${PIDS[-1]}" "${PIDS[-2]}" "${PIDS[-3]}" 2>/dev/null

# The default cluster: 3 dataservers, copy count 2 (synchronous replication).
kill "$TAIR1_PID" 2>/dev/null
wait "$TAIR1_PID" 2>/dev/null
"$BIN" up --port "$TAIR3_PORT" --dataservers 3 --copies 2 --log-level warn >"$TMP/tair3.log" 2>&1 &
PIDS+=($!)
wait_ping "$TAIR3_PORT" || { cat "$TMP/tair3.log"; exit 1; }
"$BIN" up --port "$TAIR1_PORT" --dataservers 3 --copies 1 --log-level warn >"$TMP/tair1c.log" 2>&1 &
PIDS+=($!)
wait_ping "$TAIR1_PORT" || { cat "$TMP/tair1c.log"; exit 1; }
{
  echo "## tair 3 dataservers: copy count 2 vs copy count 1"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR3_PORT" "127.0.0.1:$TAIR1_PORT" tair-3ds-c2 tair-3ds-c1
  echo
  echo "## tair 3 dataservers copy count 2 vs plain redis-server"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR3_PORT" "127.0.0.1:$REDIS_PORT" tair-3ds-c2 redis
  echo
  if [ -z "${SKIP_MATRIX:-}" ]; then
    echo "## redis-benchmark matrix (rb.sh)"
    TARGET_SECS=2 bash bench/anchors/rb.sh 127.0.0.1 "$TAIR3_PORT" tair-3ds-c2
    TARGET_SECS=2 bash bench/anchors/rb.sh 127.0.0.1 "$REDIS_PORT" redis
    echo
  fi
  # The memory anchor for the engines' bytes/key: redis-server holding
  # 100k keys of 16-byte names and 32-byte values, the engines' shape.
  echo "## redis-server memory per key (100000 keys, 16 B key, 32 B value)"
  redis-cli -p "$REDIS_PORT" FLUSHALL >/dev/null
  before=$(redis-cli -p "$REDIS_PORT" INFO memory | awk -F: '/^used_memory:/{print $2+0}')
  redis-cli -p "$REDIS_PORT" DEBUG POPULATE 100000 k:0123456789a 32 >/dev/null
  after=$(redis-cli -p "$REDIS_PORT" INFO memory | awk -F: '/^used_memory:/{print $2+0}')
  echo "redis-server: $(( (after - before) / 100000 )) bytes/key (used_memory delta)"
  echo
  if [ -z "${SKIP_GO:-}" ]; then
    echo "## engines (go test -bench, one run)"
    echo '```'
    go test -run '^$' -bench . -benchtime 1s ./engines/... 2>&1 | grep -E '^(Benchmark|ok|PASS|goos|cpu)'
    echo '```'
  fi
} | tee -a "$REPORT"
echo "report: $REPORT"
