#!/usr/bin/env bash
# bench/cpu-split.sh - where a request's CPU goes, by process: a
# configserver, DATASERVERS dataservers (ENGINE, copy count COPIES) and a
# proxy as separate processes, redis-benchmark -c 50 -P P -t TEST over
# KEYSPACE keys, and for SECS seconds of it each process's CPU time
# (/proc/PID/stat, user + system) divided by the requests the proxy
# served. On a machine whose cores every process shares with the client,
# a ratio between two shapes can be no better than the inverse ratio of
# their totals: this is how issue 16's missed aims show what bounds them.
#
# Knobs: COPIES (2), DATASERVERS (3), ENGINE (rdb), SYNC (group), TEST
# (set), P (16), KEYSPACE (100000), SECS (8), PROFILE=1 to also save
# 8 s CPU profiles of every dataserver and the proxy in bench/out.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
COPIES=${COPIES:-2} N=${DATASERVERS:-3} ENGINE=${ENGINE:-rdb} SYNC=${SYNC:-group}
TEST=${TEST:-set} P=${P:-16} KEYSPACE=${KEYSPACE:-100000} SECS=${SECS:-8}

CLUSTER_ENGINE=$ENGINE start_cluster "$N" "" "--sync $SYNC" --copies "$COPIES" || exit 1
declare -A ROLE=([$CS_PID]=configserver [$PX_PID]=proxy)
DS_HTTP=()
i=0
for nd in ${NODES//,/ }; do # addr=pid=http
  i=$((i + 1))
  rest=${nd#*=}
  ROLE[${rest%%=*}]=dataserver$i
  DS_HTTP+=("${rest#*=}")
done
sleep 2 # the table settles

redis-benchmark -p "$PX" -c 50 -P "$P" -t "$TEST" -r "$KEYSPACE" -n 2000000000 -q >/dev/null 2>&1 &
BENCH=$!
ROLE[$BENCH]=redis-benchmark
sleep 2 # past the connections' start

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
served() { redis-cli -p "$PX" INFO stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" {print $2}'; }
declare -A C0 C1
for p in "${!ROLE[@]}"; do C0[$p]=$(cpu_ticks "$p"); done
n0=$(served); t0=$(date +%s.%N)
if [ -n "${PROFILE:-}" ]; then
  new_report cpu-split
  for h in "${DS_HTTP[@]}"; do
    curl -s -o "$OUT/cpu-split-$STAMP-ds-${h##*:}.pb" "http://$h/debug/pprof/profile?seconds=8" &
  done
  curl -s -o "$OUT/cpu-split-$STAMP-proxy.pb" "http://127.0.0.1:$PX_HTTP/debug/pprof/profile?seconds=8" &
fi
sleep "$SECS"
for p in "${!ROLE[@]}"; do C1[$p]=$(cpu_ticks "$p"); done
n1=$(served); t1=$(date +%s.%N)
kill "$BENCH" 2>/dev/null
[ -n "${PROFILE:-}" ] && sleep 7 # the profiles end

tick=$(getconf CLK_TCK)
reqs=$((n1 - n0))
echo "## cpu-split: $N dataservers ($ENGINE, --sync $SYNC), copy count $COPIES; redis-benchmark -c 50 -P $P -t $TEST -r $KEYSPACE; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo
awk -v r="$reqs" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d requests in %.1f s: %.0f a second\n\n", r, b - a, r / (b - a) }'
echo "| process | cores | CPU µs per request |"
echo "|---|---:|---:|"
total=0
for p in $(printf '%s\n' "${!ROLE[@]}" | sort -n); do
  d=$((C1[$p] - C0[$p])); total=$((total + d))
  awk -v n="${ROLE[$p]}" -v d="$d" -v t="$tick" -v r="$reqs" -v a="$t0" -v b="$t1" \
    'BEGIN { printf "| %s | %.2f | %.3f |\n", n, d / t / (b - a), d / t * 1e6 / r }'
done
awk -v d="$total" -v t="$tick" -v r="$reqs" -v a="$t0" -v b="$t1" \
  'BEGIN { printf "| **all** | %.2f | **%.3f** |\n", d / t / (b - a), d / t * 1e6 / r }'
[ -n "${PROFILE:-}" ] && echo && echo "profiles: $OUT/cpu-split-$STAMP-*.pb"
exit 0
