#!/usr/bin/env bash
# bench/bigkey-move.sh - a bucket holding a hash of FIELDS fields (default
# 1,000,000) moves between dataservers while four writers change it (the big
# hash, a list, small keys, SMOVE between two sets), twice: with the copy
# taken under the bucket's lock in one hold (as moves did before the walk,
# dataserver/migwalk.go) and walked in short holds. Prints the longest wait
# of a write to that bucket during each move beside the aim (100 ms).
#
# It runs the in-process harness of dataserver/migwalk_test.go
# (TestBigKeyMoveBench: three dataservers, strict replication), not
# separate processes: the bucket and the move are chosen exactly.
#
# Knobs: FIELDS (1000000), ENGINES ("rdb ldb"; ldb stores the hash as one
# record per field, which moves in pieces of 2000 too, and digests its
# checksum from snapshots off the freeze; ENGINE=x runs one), RUNS (3).
# Output goes to bench/out/bigkey-move-<time>.md and to stdout.
set -u
cd "$(dirname "$0")/.."
FIELDS=${FIELDS:-1000000}
ENGINES=${ENGINES:-${ENGINE:-rdb ldb}}
RUNS=${RUNS:-3}
mkdir -p bench/out
REPORT=bench/out/bigkey-move-$(date -u +%Y%m%d-%H%M%S).md
{
  echo "# bench/bigkey-move.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, engines $ENGINES, $FIELDS fields, $RUNS runs"
  echo
  for i in $(seq "$RUNS"); do
    for engine in $ENGINES; do
      TAIR_BENCH_BIGKEY=1 TAIR_BENCH_ENGINE=$engine TAIR_BIG_FIELDS=$FIELDS \
        go test -count=1 -timeout 20m -run '^TestBigKeyMoveBench$' -v ./dataserver/ 2>&1 |
        grep -E '^BENCH|^(--- FAIL|FAIL|ok)'
    done
  done
} | tee "$REPORT"
echo "report: $REPORT"
