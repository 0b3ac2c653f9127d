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
#      issue 16's replication aims beside their measurements (copy count
#      2 against 1, the default cluster against twemproxy);
#   5. Go benchmarks of the engines;
#   5b. ldb's durable writes: --sync group against --sync none, and
#      --sync none against rdb, with issue 16's aims beside them;
#   5c. bench/migration.sh: a dataserver joins a loaded cluster, keys
#      moved per second beside the aim (100k keys/s);
#   5d. bench/bigkey-move.sh: a bucket holding a 1M-field hash (rdb, ldb) moves
#      under writes, the longest write wait beside the aim (100 ms);
#   6. bench/recovery.sh: a dataserver of ~1M key copies killed under load,
#      the time until every bucket has its copies again beside the aim
#      (10 s);
#   6b. bench/hotkey-push.sh: one key taking half the reads through two
#      proxies without and two with the hot-key cache (two dataservers),
#      the hot key's rate ratio beside issue 16's aim (at least 3x);
#   7. bench/redis7.sh: EVALSHA against INCR, PUBLISH to 100 subscribers
#      over two proxies against redis-server, PFADD/XADD/SETBIT against
#      redis-server;
#   8. bench/heap.sh: GET p99 under a steady load with 100k and with 10M
#      keys in one dataserver, beside the aim (no worse with 10M).
# Output goes to bench/out/ and to stdout; bench/RESULTS.md records a run.
#
# Knobs: ROUNDS (3), TARGET_SECS (3), SKIP_GO=1 to skip Go benchmarks,
# SKIP_MATRIX=1 to skip the rb.sh matrix, SKIP_ONE=1 to skip the
# one-dataserver comparisons (steps 2 and its pairs), ENGINES_ONLY=1 to run only step 5
# with its redis-server memory anchor (no cluster, no twemproxy),
# BENCHTIME (1s) for the Go benchmarks' -benchtime, SKIP_RECOVERY=1 to
# skip step 6, SKIP_HEAP=1 to skip step 8 (HEAP_SMALL, HEAP_LARGE: its key
# counts), SKIP_DURABLE=1 to skip step 5b, SKIP_MIGRATION=1 to skip step 5c
# (MIGRATION_KEYS, 1000000, its size), SKIP_BIGKEY=1 to skip step 5d (FIELDS,
# 1000000, its hash's size), RECOVERY_KEYS (1000000) for its size,
# SKIP_HOTKEY=1 to skip step 6b (HOTKEY_KEYS, 100000, its other keys), SKIP_REDIS7=1 to skip
# step 7.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh

# engines_table RAW REDIS_BPK: the engines' Go benchmark output RAW as one
# table. ops/s is 1e9 / ns/op (with 16 writers: all writers together);
# memory bytes/key is the live heap's growth per key (heap-B/key), disk
# bytes/key the data directory's file sizes per key after Compact and
# Close (file-B/key); REDIS_BPK is redis-server's used_memory per key.
engines_table() {
  awk -v redis="$2" '
    function ops(v) { v = 1e9 / v; if (v >= 1e6) return sprintf("%.2fM", v / 1e6); if (v >= 1e3) return sprintf("%.1fk", v / 1e3); return sprintf("%.0f", v) }
    function us(v) { v /= 1000; if (v < 10) return sprintf("%.2f", v); if (v < 100) return sprintf("%.1f", v); return sprintf("%.0f", v) }
    function cell(e, n) { return ((e, n) in ns) ? ops(ns[e, n]) " ops/s (" us(ns[e, n]) " µs)" : "–" }
    function sync3(e, n) { return "always " cell(e, n "/always") "<br>group " cell(e, n "/group") "<br>none " cell(e, n "/none") }
    function metric(e, n, u) { return ((e, n, u) in m) ? sprintf("%.0f", m[e, n, u]) : "–" }
    /^pkg: / { k = split($2, p, "/"); eng = p[k]; next }
    /^Benchmark/ {
      name = $1; sub(/^Benchmark[A-Za-z]+\//, "", name); sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i += 2) {
        if ($(i + 1) == "ns/op") ns[eng, name] = $i
        else m[eng, name, $(i + 1)] = $i
      }
    }
    END {
      print "| | rdb | mdb | ldb | kdb | redis-server |"
      print "|---|---|---|---|---|---|"
      print "| Put, 1 writer | " cell("rdb", "Put") " | " cell("mdb", "Put") " | " sync3("ldb", "Put") " | " sync3("kdb", "Put") " | |"
      print "| Put, 16 writers | " cell("rdb", "PutParallel") " | " cell("mdb", "PutParallel") " | " sync3("ldb", "PutParallel16") " | " sync3("kdb", "PutParallel16") " | |"
      print "| Get | " cell("rdb", "Get") " | " cell("mdb", "Get") " | " cell("ldb", "Get") " | " cell("kdb", "Get") " | |"
      print "| PrefixRange, 100 of 10,000 skeys | " cell("rdb", "PrefixRange100of10000") " | " cell("mdb", "PrefixRange100of10000") " | " cell("ldb", "PrefixRange100of10000") " | " cell("kdb", "PrefixRange100of10000") " | |"
      print "| bytes/key in memory (live heap) | " metric("rdb", "BytesPerKey", "heap-B/key") " | " metric("mdb", "BytesPerKey", "heap-B/key") " | – | – | " (redis == "" ? "–" : redis) " |"
      print "| bytes/key on disk (file sizes) | – | – | " metric("ldb", "DiskBytesPerKey", "file-B/key") " | " metric("kdb", "DiskBytesPerKey", "file-B/key") " | – |"
    }' "$1"
}

# engines_section: redis-server's memory per key, the anchor of the
# engines' bytes/key (redis-server on REDIS_PORT), then the engines' Go
# benchmarks as a table (engines_table) and as go test printed them.
engines_section() {
  # The memory anchor: redis-server holding 100k keys of 16-byte names
  # and 32-byte values, the engines' shape.
  echo "## redis-server memory per key (100000 keys, 16 B key, 32 B value)"
  redis-cli -p "$REDIS_PORT" FLUSHALL >/dev/null
  local before after bpk raw=$TMP/engines-bench.txt
  before=$(redis-cli -p "$REDIS_PORT" INFO memory | awk -F: '/^used_memory:/{print $2+0}')
  redis-cli -p "$REDIS_PORT" DEBUG POPULATE 100000 k:0123456789a 32 >/dev/null
  after=$(redis-cli -p "$REDIS_PORT" INFO memory | awk -F: '/^used_memory:/{print $2+0}')
  bpk=$(( (after - before) / 100000 ))
  echo "redis-server: $bpk bytes/key (used_memory delta)"
  echo
  [ -n "${SKIP_GO:-}" ] && return 0
  go test -run '^$' -bench . -benchtime "${BENCHTIME:-1s}" ./engines/rdb ./engines/mdb ./engines/ldb ./engines/kdb 2>&1 |
    grep -E '^(Benchmark|ok|FAIL|PASS|goos|goarch|pkg|cpu)' >"$raw"
  echo "## engines (go test -bench . -benchtime ${BENCHTIME:-1s} ./engines/{rdb,mdb,ldb,kdb}, one run)"
  echo
  engines_table "$raw" "$bpk"
  echo
  echo "### issue 16's memory aim, from the table above"
  echo
  echo "| aim | bound | measured | |"
  echo "|---|---|---|---|"
  awk -v redis="$bpk" '
    /^pkg: / { k = split($2, p, "/"); eng = p[k]; next }
    /^BenchmarkEngine\/BytesPerKey/ { for (i = 3; i < NF; i += 2) if ($(i + 1) == "heap-B/key") b[eng] = $i }
    END {
      for (e in b) if (e == "rdb" || e == "mdb")
        printf "| %s bytes/key in memory | at most redis-server'"'"'s (%s) | %.0f | %s |\n", e, redis, b[e], (b[e] + 0 <= redis + 0 ? "met" : "**missed**")
    }' "$raw" | sort
  echo
  echo 'ops/s = 1e9 / ns/op (16 writers: all of them together); memory bytes/key = live-heap growth per key loading 100,000 keys (16 B, 32 B values); disk bytes/key = file sizes in the data directory per key after the same load, Compact and Close; redis-server = used_memory growth per key.'
  echo
  echo '```'
  cat "$raw"
  echo '```'
}

# redis7_section: bench/redis7.sh (unless SKIP_REDIS7) appended to REPORT,
# on a machine without the processes started before.
redis7_section() {
  [ -n "${SKIP_REDIS7:-}" ] && return 0
  stop_all
  { echo; bash bench/redis7.sh; } | tee -a "$REPORT"
}

REDIS_PORT=$(free_port)
if [ -n "${ENGINES_ONLY:-}" ]; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --enable-debug-command local >"$TMP/redis.log" 2>&1 &
  PIDS+=($!)
  wait_ping "$REDIS_PORT" || { cat "$TMP/redis.log"; exit 1; }
  new_report engines
  {
    echo "# make bench, engines only, $STAMP, $(nproc) cores"
    echo
    engines_section
  } | tee "$REPORT"
  redis7_section
  echo "report: $REPORT"
  exit 0
fi
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

new_report report
echo "# make bench, $STAMP, $(nproc) cores" | tee "$REPORT"
echo | tee -a "$REPORT"
if [ -z "${SKIP_ONE:-}" ]; then
{
  echo "## tair (1 dataserver, copy count 1) vs twemproxy in front of redis-server"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR1_PORT" "127.0.0.1:$TWEM_PORT" tair-1ds twemproxy
  echo
  echo "## tair (1 dataserver, copy count 1) vs plain redis-server"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR1_PORT" "127.0.0.1:$REDIS_PORT" tair-1ds redis
  echo
} | tee -a "$REPORT"

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
fi

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
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR3_PORT" "127.0.0.1:$TAIR1_PORT" tair-3ds-c2 tair-3ds-c1 | tee "$TMP/c2c1.md"
  echo
  echo "## tair up's default cluster (3 dataservers, copy count 2) vs twemproxy in front of redis-server"
  bash bench/anchors/compare.sh "127.0.0.1:$TAIR3_PORT" "127.0.0.1:$TWEM_PORT" tair-3ds-c2 twemproxy | tee "$TMP/c2twem.md"
  echo
  echo "### issue 16's replication aims, from the two tables above"
  echo
  echo "| aim | bound | measured | |"
  echo "|---|---|---|---|"
  aim_ratio "$TMP/c2c1.md" SET 1 0.8 "copy count 2 / copy count 1, SET -P1"
  aim_ratio "$TMP/c2c1.md" SET 16 0.8 "copy count 2 / copy count 1, SET -P16"
  for p in 1 16; do
    aim_ratio "$TMP/c2twem.md" SET "$p" 0.8 "default cluster / twemproxy, SET -P$p"
    aim_ratio "$TMP/c2twem.md" GET "$p" 1.0 "default cluster / twemproxy, GET -P$p"
    aim_p99 "$TMP/c2twem.md" SET "$p" 1.5 "default cluster / twemproxy, SET p99 -P$p"
  done
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
  engines_section
} | tee -a "$REPORT"

# Durable writes (issue 16): ldb under --sync group against --sync none,
# and ldb --sync none against rdb, one dataserver, copy count 1 each, on a
# machine without the clusters above.
if [ -z "${SKIP_DURABLE:-}" ]; then
  stop_all
  declare -A DPORT
  for shape in rdb ldb-group ldb-none; do
    DPORT[$shape]=$(free_port)
    engine=${shape%%-*} sync=${shape#*-}
    [ "$engine" = rdb ] && sync=group
    "$BIN" up --port "${DPORT[$shape]}" --dataservers 1 --copies 1 --engine "$engine" --sync "$sync" --log-level warn >"$TMP/$shape.log" 2>&1 &
    PIDS+=($!)
  done
  for shape in rdb ldb-group ldb-none; do
    wait_ping "${DPORT[$shape]}" || { cat "$TMP/$shape.log"; exit 1; }
  done
  {
    echo
    echo "## durable writes: ldb --sync group vs --sync none (1 dataserver, copy count 1)"
    TESTS=SET bash bench/anchors/compare.sh "127.0.0.1:${DPORT[ldb-group]}" "127.0.0.1:${DPORT[ldb-none]}" ldb-group ldb-none | tee "$TMP/group.md"
    echo
    echo "## ldb --sync none vs rdb (1 dataserver, copy count 1)"
    TESTS=SET bash bench/anchors/compare.sh "127.0.0.1:${DPORT[ldb-none]}" "127.0.0.1:${DPORT[rdb]}" ldb-none rdb | tee "$TMP/none.md"
    echo
    echo "### issue 16's durable-write aims, from the two tables above"
    echo
    echo "| aim | bound | measured | |"
    echo "|---|---|---|---|"
    aim_ratio "$TMP/group.md" SET 16 0.5 "ldb --sync group / --sync none, SET -P16"
    aim_ratio "$TMP/none.md" SET 1 0.6 "ldb --sync none / rdb, SET -P1"
    aim_ratio "$TMP/none.md" SET 16 0.6 "ldb --sync none / rdb, SET -P16"
  } | tee -a "$REPORT"
fi

# own_cluster_section SKIP KEYS SCRIPT TITLE: a script that starts its
# own cluster (KEYS keys), run on a machine without the clusters above,
# its output appended to the report under TITLE; skipped when SKIP is set.
own_cluster_section() {
  local skip=$1 keys=$2 script=$3 title=$4
  [ -n "$skip" ] && return
  stop_all
  {
    echo
    echo "## $title ($script)"
    KEYS=$keys bash "$script" | grep -v '^report: '
  } | tee -a "$REPORT"
}

# An online migration under load: keys moved per second beside issue 16's
# aim.
own_cluster_section "${SKIP_MIGRATION:-}" "${MIGRATION_KEYS:-1000000}" bench/migration.sh \
  "migration: a 4th dataserver joins 3 holding ~${MIGRATION_KEYS:-1000000} keys, under load"

# A bucket holding a 1M-field hash moves under writes: the longest write
# wait beside issue 16's aim (100 ms), the walk against the old copy
# under one hold.
own_cluster_section "${SKIP_BIGKEY:-}" "" bench/bigkey-move.sh \
  "big keys: a bucket holding a ${FIELDS:-1000000}-field hash moves under writes"

# A dataserver lost under load.
own_cluster_section "${SKIP_RECOVERY:-}" "${RECOVERY_KEYS:-1000000}" bench/recovery.sh \
  "recovery: a dataserver of ~${RECOVERY_KEYS:-1000000} key copies killed under load"
# Hot keys across proxies (issue 16): the hot-key cache off and on side
# by side, the hot key's rate ratio beside the aim.
own_cluster_section "${SKIP_HOTKEY:-}" "${HOTKEY_KEYS:-100000}" bench/hotkey-push.sh \
  "hot keys across proxies: one key taking half the reads, cache off and on"
# The Redis 7 families (bench/redis7.sh), on a machine without the
# clusters above.
redis7_section

# Issue 16's heap aim: GET p99 with HEAP_LARGE keys in one dataserver
# against HEAP_SMALL.
own_cluster_section "${SKIP_HEAP:-}" "" bench/heap.sh \
  "heap: GET latency with ${HEAP_SMALL:-100000} and ${HEAP_LARGE:-10000000} keys in one dataserver"
echo "report: $REPORT"
