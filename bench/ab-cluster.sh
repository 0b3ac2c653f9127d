#!/usr/bin/env bash
# bench/ab-cluster.sh BIN_A BIN_B: two builds of tair side by side in one
# run, each as its own `tair up` default cluster (3 dataservers, copy
# count 2), compared with bench/anchors/compare.sh (interleaved rounds, the
# median of the per-round ratios A/B). Knobs: ROUNDS (3), TESTS ("SET
# GET"), DATASERVERS (3), COPIES (2), UP_ARGS (more `tair up` flags,
# e.g. "--engine ldb --sync none"), and compare.sh's own.
#
#   git worktree add /tmp/base REV && (cd /tmp/base && go build -o /tmp/tair-base ./cmd/tair)
#   bash bench/ab-cluster.sh bin/tair /tmp/tair-base
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 BIN_A BIN_B" >&2
  exit 2
fi
A=$(realpath "$1")
B=$(realpath "$2")
cd "$(dirname "$0")/.."
. bench/lib.sh
PA=$(free_port)
PB=$(free_port)
for side in A B; do
  bin=$A port=$PA
  [ "$side" = B ] && bin=$B port=$PB
  # shellcheck disable=SC2086
  "$bin" up --port "$port" --dataservers "${DATASERVERS:-3}" --copies "${COPIES:-2}" ${UP_ARGS:-} --log-level warn >"$TMP/$side.log" 2>&1 &
  PIDS+=($!)
done
wait_ping "$PA" && wait_ping "$PB" || { cat "$TMP"/*.log; exit 1; }
sleep 2 # the tables settle
ROUNDS=${ROUNDS:-3} TESTS=${TESTS:-"SET GET"} bash bench/anchors/compare.sh "127.0.0.1:$PA" "127.0.0.1:$PB" \
  "$(basename "$A")" "$(basename "$B")"
