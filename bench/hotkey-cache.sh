#!/usr/bin/env bash
# bench/hotkey-cache.sh - one hot key read through two proxies of one
# cluster (configserver, one dataserver, copy count 1, separate
# processes): one without and one with --hot-cache-ttl 200ms.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
CS=$(free_port); CSH=$(free_port); DS=$(free_port); DSH=$(free_port); P1=$(free_port); P1H=$(free_port); P2=$(free_port); P2H=$(free_port)
$BIN configserver --listen 127.0.0.1:$CS --http 127.0.0.1:$CSH --copies 1 --log-level warn >$TMP/cs.log 2>&1 & PIDS+=($!)
sleep 1
$BIN dataserver --listen 127.0.0.1:$DS --http 127.0.0.1:$DSH --configserver 127.0.0.1:$CS --log-level warn >$TMP/ds.log 2>&1 & PIDS+=($!)
sleep 1
$BIN proxy --listen 127.0.0.1:$P1 --http 127.0.0.1:$P1H --configserver 127.0.0.1:$CS --log-level warn >$TMP/p1.log 2>&1 & PIDS+=($!)
$BIN proxy --listen 127.0.0.1:$P2 --http 127.0.0.1:$P2H --configserver 127.0.0.1:$CS --hot-cache-ttl 200ms --log-level warn >$TMP/p2.log 2>&1 & PIDS+=($!)
wait_ping $P1; wait_ping $P2; sleep 2
redis-cli -p $P1 set key:__rand_int__ xxx >/dev/null
for r in 1 2; do for p in $P1 $P2; do
  echo "port $p ($([ $p = $P2 ] && echo cache || echo nocache)): $(redis-benchmark -p $p -c 50 -P 16 -t get -n 2000000 -q 2>&1 | tr '\r' '\n' | grep 'requests per second' | tail -1)"
done; done
redis-cli -p $P2 info stats | grep hot_cache
