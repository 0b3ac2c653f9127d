#!/usr/bin/env bash
# bench/hooks-ab.sh - what the dataserver's default hooks (stats,quota)
# cost: two clusters of one build as separate processes (start_tair_split:
# configserver, one dataserver, proxy; GOMAXPROCS=1 each), one switched to
# no hooks with `tair ctl hooks set ""`, compared with
# bench/anchors/compare.sh (ROUNDS, default 5; TARGET_SECS 2; PIPELINES
# "1 16"). The ratio is hooks on / hooks off.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
port() { local p; p=$(free_port); while [ "$p" -gt 63000 ]; do p=$(free_port); done; echo "$p"; }
ON=$(port); OFF=$(port)
start_tair_split "$ON" || exit 1
start_tair_split "$OFF" || exit 1
# start_tair_split's configserver of OFF: the one its proxy was given.
cs=$(ps -o args= -p "${PIDS[3]}" | sed -n 's/.*--listen \(127.0.0.1:[0-9]*\).*/\1/p')
"$BIN" ctl --configserver "$cs" hooks set "" || exit 1
sleep 2
"$BIN" ctl --configserver "$cs" hooks
PIPELINES=${PIPELINES:-"1 16"} ROUNDS=${ROUNDS:-5} TARGET_SECS=${TARGET_SECS:-2} \
  bash bench/anchors/compare.sh "127.0.0.1:$ON" "127.0.0.1:$OFF" hooks-default hooks-none
