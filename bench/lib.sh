# bench/lib.sh - shared by the bench scripts (source it after cd to the
# project root): BIN built when missing, free_port, processes in PIDS and
# the scratch directory TMP cleaned up at exit, wait_ping PORT.
BIN=${BIN:-$PWD/bin/tair}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tair

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

PIDS=()
TMP=$(mktemp -d)
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

wait_ping() {
  for _ in $(seq 1 200); do
    redis-cli -p "$1" PING 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "port $1 does not answer PING" >&2
  return 1
}

# start_tair_split PORT: a configserver, one dataserver (rdb) and a proxy on
# PORT as separate processes, as they are deployed (copy count 1). Each
# dataserver and proxy process gets GOMAXPROCS=$TAIR_GOMAXPROCS (default 1:
# one event loop, the thread budget of twemproxy and redis-server, one
# each, on a machine whose cores they share with redis-benchmark; empty:
# Go's default, every core) and --event-loops $TAIR_EVENT_LOOPS when set.
# The binary adds one P for the Go runtime beside its loops
# (internal/gnetx reserve). The proxy's /debug/pprof is on PORT+2000.
start_tair_split() {
  local port=$1 cs cshttp ds dshttp
  cs=$(free_port); cshttp=$(free_port); ds=$(free_port); dshttp=$(free_port)
  local gmp=${TAIR_GOMAXPROCS-1} loops=${TAIR_EVENT_LOOPS:-}
  "$BIN" configserver --listen "127.0.0.1:$cs" --http "127.0.0.1:$cshttp" --copies 1 \
    --log-level warn >"$TMP/configserver-$port.log" 2>&1 &
  PIDS+=($!)
  env ${gmp:+GOMAXPROCS=$gmp} "$BIN" dataserver --configserver "127.0.0.1:$cs" \
    --listen "127.0.0.1:$ds" --http "127.0.0.1:$dshttp" ${loops:+--event-loops $loops} --log-level warn >"$TMP/dataserver-$port.log" 2>&1 &
  PIDS+=($!)
  env ${gmp:+GOMAXPROCS=$gmp} "$BIN" proxy --configserver "127.0.0.1:$cs" \
    --listen "127.0.0.1:$port" --http "127.0.0.1:$((port + 2000))" ${loops:+--event-loops $loops} --log-level warn >"$TMP/proxy-$port.log" 2>&1 &
  PIDS+=($!)
  # Ready when a write goes through (the proxy has a table naming the
  # dataserver).
  for _ in $(seq 1 300); do
    [ "$(redis-cli -p "$port" SET tair:bench:ready 1 2>/dev/null)" = OK ] && return 0
    sleep 0.1
  done
  echo "tair on port $port never took a write" >&2
  cat "$TMP"/*-"$port".log >&2
  return 1
}
