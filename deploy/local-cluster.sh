#!/usr/bin/env bash
# deploy/local-cluster.sh - the same cluster as `tair up`, as separate
# processes (one configserver, three ldb dataservers, one proxy), for
# trying failures by hand: kill -9 a dataserver and watch `tair ctl table`.
set -eu
BIN=${BIN:-bin/tair}
DIR=${DIR:-$(mktemp -d)}
trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT INT TERM
$BIN configserver --listen 127.0.0.1:5198 --http 127.0.0.1:8198 --etcd-dir "$DIR/etcd" &
sleep 2
for i in 1 2 3; do
  $BIN dataserver --listen 127.0.0.1:519$i --http 127.0.0.1:819$i --configserver 127.0.0.1:5198 \
    --engine ldb --dir "$DIR/ds$i" &
done
sleep 2
$BIN proxy --listen 127.0.0.1:6379 --http 127.0.0.1:8379 --configserver 127.0.0.1:5198 &
echo "data in $DIR; redis-cli -p 6379; $BIN ctl table"
wait
