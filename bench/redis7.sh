#!/usr/bin/env bash
# bench/redis7.sh - the Redis 7 families side by side in one run
# (`make bench` runs it; `bash bench/redis7.sh` alone too):
#
#   1. EVALSHA of a small read-modify-write script (GET, +1, SET) against
#      plain INCR, both through the default cluster's proxy (tair up: 3
#      dataservers, copy count 2); the aim is EVALSHA at 0.8x INCR or more;
#   2. PUBLISH to 100 subscribers, 50 on each of two proxies of that
#      cluster, against PUBLISH to 100 subscribers of a plain redis-server;
#   3. PFADD, XADD and SETBIT through the cluster against redis-server.
#
# Each pair runs in interleaved rounds (A B A B ...: drifts of a noisy
# machine hit both alike) and is reported as the median of the per-round
# ratios. Knobs: ROUNDS (3), TARGET_SECS (3), CLIENTS (50).
set -u
set -f # the commands' "*" (XADD's id) is no glob
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-3}
TARGET_SECS=${TARGET_SECS:-3}
CLIENTS=${CLIENTS:-50}

# The anchor.
RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no >"$TMP/redis.log" 2>&1 &
PIDS+=($!)
wait_ping "$RPORT"

# The default cluster, and a second proxy on its configserver.
TPORT=$(free_port)
UPFILE=$TMP/up.json
TAIR_UP_FILE=$UPFILE "$BIN" up --port "$TPORT" --log-level warn >"$TMP/up.log" 2>&1 &
PIDS+=($!)
wait_ping "$TPORT"
CS=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(",".join(d.get("configservers") or [d.get("configserver","")]))' "$UPFILE")
TPORT2=$(free_port)
"$BIN" proxy --listen "127.0.0.1:$TPORT2" --http "127.0.0.1:$(free_port)" --configserver "$CS" --log-level warn >"$TMP/proxy2.log" 2>&1 &
PIDS+=($!)
wait_ping "$TPORT2"

# rps PORT N ARGS...: requests per second of redis-benchmark running ARGS
# N times (-c CLIENTS, random keys up to 100000).
rps() {
  local port=$1 n=$2
  shift 2
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$n" -r 100000 --csv "$@" 2>/dev/null |
    awk -F'"' 'NR > 1 && $4 != "" { print $4; exit }'
}

# calibrate PORT ARGS...: a request count that lasts about TARGET_SECS.
calibrate() {
  local port=$1
  shift
  local r
  r=$(rps "$port" 5000 "$@")
  awk -v r="${r:-1000}" -v s="$TARGET_SECS" 'BEGIN { n = int(r * s); if (n < 5000) n = 5000; print n }'
}

# pair LABEL PORT_A "ARGS A" PORT_B "ARGS B" [AIM]: interleaved rounds,
# one row; AIM (the issue's, as a ratio) is printed beside the result.
pair() {
  local label=$1 pa=$2 aa=$3 pb=$4 ab=$5 aim=${6:-}
  # shellcheck disable=SC2086
  local na nb ra rb ratios="" as="" bs=""
  na=$(calibrate "$pa" $aa)
  nb=$(calibrate "$pb" $ab)
  for _ in $(seq 1 "$ROUNDS"); do
    # shellcheck disable=SC2086
    ra=$(rps "$pa" "$na" $aa)
    # shellcheck disable=SC2086
    rb=$(rps "$pb" "$nb" $ab)
    as="$as $ra"
    bs="$bs $rb"
    ratios="$ratios $(awk -v a="$ra" -v b="$rb" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
  done
  med() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  local verdict=""
  if [ -n "$aim" ]; then
    verdict=$(awk -v r="$(med $ratios)" -v a="$aim" 'BEGIN { printf "at least %sx: %s", a, (r >= a ? "met" : "missed") }')
  fi
  printf '| %s | %s | %s | **%s** | %s | %s |\n' "$label" "$(med $as)" "$(med $bs)" "$(med $ratios)" "$(echo $ratios | tr ' ' '/')" "$verdict"
}

echo "## Redis 7 families (bench/redis7.sh), $(date -u +%Y-%m-%dT%H:%MZ), rounds=$ROUNDS clients=$CLIENTS"
echo
echo "| A vs B | A rps | B rps | A/B (median of rounds) | per-round A/B | aim |"
echo "|---|---:|---:|---:|---|---|"

# 1. EVALSHA vs INCR through the proxy.
SCRIPT="local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1 redis.call('SET', KEYS[1], v) return v"
SHA=$(redis-cli -p "$TPORT" SCRIPT LOAD "$SCRIPT")
case $SHA in
  *[!0-9a-f]* | "") echo "| EVALSHA vs INCR (tair) | unsupported: $SHA | | | | |" ;;
  *) pair "EVALSHA (GET, +1, SET) vs INCR, tair" "$TPORT" "EVALSHA $SHA 1 ev:__rand_int__" "$TPORT" "INCR in:__rand_int__" 0.8 ;;
esac

# 2. PUBLISH to 100 subscribers.
subscribe() { # PORT COUNT
  for _ in $(seq 1 "$2"); do
    redis-cli -p "$1" SUBSCRIBE bench:ch >/dev/null 2>&1 &
    PIDS+=($!)
  done
}
subscribe "$TPORT" 50
subscribe "$TPORT2" 50
subscribe "$RPORT" 100
for _ in $(seq 1 100); do
  n=$(redis-cli -p "$TPORT" PUBLISH bench:ch warmup)
  [ "${n:-0}" -ge 100 ] && break
  sleep 0.1
done
rn=$(redis-cli -p "$RPORT" PUBLISH bench:ch warmup)
echo "<!-- subscribers reached by one PUBLISH: tair $n, redis-server $rn -->"
pair "PUBLISH to 100 subscribers (tair: 50 on each of 2 proxies) vs redis-server" "$TPORT" "PUBLISH bench:ch hello" "$RPORT" "PUBLISH bench:ch hello"

# 3. PFADD, XADD, SETBIT: tair vs redis-server.
pair "PFADD, tair vs redis-server" "$TPORT" "PFADD hll:__rand_int__ e__rand_int__" "$RPORT" "PFADD hll:__rand_int__ e__rand_int__"
pair "XADD, tair vs redis-server" "$TPORT" "XADD st:__rand_int__ * f v" "$RPORT" "XADD st:__rand_int__ * f v"
# (__rand_int__ is 12 zero-padded digits, which a bit offset may not be)
pair "SETBIT, tair vs redis-server" "$TPORT" "SETBIT bm:__rand_int__ 4095 1" "$RPORT" "SETBIT bm:__rand_int__ 4095 1"
