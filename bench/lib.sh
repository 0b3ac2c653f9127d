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
