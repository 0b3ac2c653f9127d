package tests

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/resp"
)

// CLIENT REPLY through the proxy, byte for byte redis-server's: OFF mutes
// every reply (keyed commands included, which the proxy would otherwise
// answer on its fast path) until ON; SKIP mutes itself and the next
// command; SKIP while OFF changes nothing; RESET turns replies back on;
// a bad mode is a syntax error. Each script is sent in one write and the
// replies read until the connection goes quiet.
func TestClientReplyMatchesRedis(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2}})
	proxyAddr := c.Proxies[0].Addr()
	scripts := [][][]string{
		{{"CLIENT", "REPLY", "OFF"}, {"SET", "cr:a", "1"}, {"GET", "cr:a"}, {"INCR", "cr:n"}, {"PING"},
			{"CLIENT", "REPLY", "ON"}, {"GET", "cr:a"}, {"GET", "cr:n"}},
		{{"CLIENT", "REPLY", "SKIP"}, {"SET", "cr:b", "2"}, {"GET", "cr:b"}, {"CLIENT", "REPLY", "SKIP"},
			{"CLIENT", "REPLY", "ON"}, {"GET", "cr:b"}},
		{{"CLIENT", "REPLY", "OFF"}, {"CLIENT", "REPLY", "SKIP"}, {"SET", "cr:c", "3"}, {"GET", "cr:c"},
			{"CLIENT", "REPLY", "ON"}, {"GET", "cr:c"}},
		{{"CLIENT", "REPLY", "OFF"}, {"MSET", "cr:d", "1", "cr:e", "2"}, {"RESET"}, {"MGET", "cr:d", "cr:e"}},
		{{"CLIENT", "REPLY", "MAYBE"}, {"CLIENT", "REPLY"}, {"GET", "cr:a"}},
	}
	for i, script := range scripts {
		var want, got []byte
		for _, addr := range []string{redisAddr, proxyAddr} {
			out := runQuiet(t, addr, script)
			if addr == redisAddr {
				want = out
			} else {
				got = out
			}
		}
		if !bytes.Equal(want, got) {
			t.Errorf("script %d %v\n  redis-server: %q\n  proxy:        %q", i, script, want, got)
		}
	}
}

// runQuiet sends the commands in one write and returns every byte that
// comes back until 500 ms pass without any.
func runQuiet(t *testing.T, addr string, cmds [][]string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b []byte
	for _, cmd := range cmds {
		args := make([][]byte, len(cmd))
		for i, a := range cmd {
			args[i] = []byte(a)
		}
		b = resp.AppendCommand(b, args...)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	var out []byte
	buf := make([]byte, 4096)
	for {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				if !strings.Contains(err.Error(), "EOF") {
					t.Fatalf("%s: %v", addr, err)
				}
			}
			return out
		}
	}
}
