package tests

import (
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// migrateKeys are keys of every Redis type (and one with a TTL), each
// in its own bucket, written the same way wherever they are set up.
var migrateSetup = [][]string{
	{"SET", "mg:s", "value"},
	{"RPUSH", "mg:l", "a", "b", "c"},
	{"HSET", "mg:h", "f1", "v1", "f2", "v2"},
	{"SADD", "mg:st", "x", "y", "z"},
	{"ZADD", "mg:z", "1", "a", "2.5", "b"},
	{"SET", "mg:ttl", "v", "PX", "100000"},
	{"PFADD", "mg:hll", "a", "b", "c"},
}

func migrateKeyNames() []string {
	var out []string
	for _, l := range migrateSetup {
		out = append(out, l[1])
	}
	return out
}

func mustDo(t *testing.T, c *rawConn, args ...string) string {
	t.Helper()
	got, err := c.do(args)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return got
}

// dumps reads each key's value and whether it has a TTL on c, in a form
// that does not depend on the encoding (DUMP's bytes do: the cluster
// writes its own valid encodings, and GET of a HyperLogLog shows its
// cached count): the type, then its elements, sorted where Redis gives
// no order.
func dumps(t *testing.T, c *rawConn, keys []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range keys {
		ttl := mustDo(t, c, "PTTL", k)
		if n, err := strconv.Atoi(strings.TrimSpace(ttl[1:])); err == nil && n > 0 {
			ttl = "ttl"
		}
		typ := mustDo(t, c, "TYPE", k)
		var v string
		switch typ {
		case "+string\r\n":
			v = mustDo(t, c, "GETRANGE", k, "16", "-1") + mustDo(t, c, "STRLEN", k)
		case "+list\r\n":
			v = mustDo(t, c, "LRANGE", k, "0", "-1")
		case "+hash\r\n", "+set\r\n":
			cmd := "HGETALL"
			if typ == "+set\r\n" {
				cmd = "SMEMBERS"
			}
			_, elems := rawElems(mustDo(t, c, cmd, k))
			sort.Strings(elems)
			v = strings.Join(elems, "")
		case "+zset\r\n":
			v = mustDo(t, c, "ZRANGE", k, "0", "-1", "WITHSCORES")
		}
		out[k] = typ + v + " " + ttl
	}
	return out
}

func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// MIGRATE both ways between a redis-server and the cluster: a redis-server
// migrates keys of every type into the cluster through the proxy (its
// SELECT and RESTOREs), and the proxy migrates them out to another
// redis-server; values and TTLs arrive intact (equal DUMPs) and leave
// their source unless COPY. The proxy's replies, errors included, are
// redis-server's for the same MIGRATE between two redis-servers.
func TestMigrateBetweenRedisAndCluster(t *testing.T) {
	redisA, redisB := testutil.StartRedis(t), testutil.StartRedis(t)
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2}})
	proxy := c.Proxies[0].Addr()
	ra, rb, pc := dialRaw(t, redisA), dialRaw(t, redisB), dialRaw(t, proxy)
	keys := migrateKeyNames()
	for _, l := range migrateSetup {
		mustDo(t, ra, l...)
	}
	want := dumps(t, ra, keys)

	// redis-server -> cluster.
	ph, pp := hostPort(t, proxy)
	if got := mustDo(t, ra, append([]string{"MIGRATE", ph, pp, "", "0", "5000", "KEYS"}, keys...)...); got != "+OK\r\n" {
		t.Fatalf("MIGRATE from redis-server into the cluster: %q", got)
	}
	if got := dumps(t, pc, keys); !equalMaps(got, want) {
		t.Fatalf("after MIGRATE into the cluster:\n got %v\nwant %v", got, want)
	}
	if got := mustDo(t, ra, append([]string{"EXISTS"}, keys...)...); got != ":0\r\n" {
		t.Fatalf("the keys are still on the source redis-server: EXISTS %q", got)
	}

	// cluster -> redis-server, COPY first (the keys stay), then a move.
	bh, bp := hostPort(t, redisB)
	if got := mustDo(t, pc, append([]string{"MIGRATE", bh, bp, "", "0", "5000", "COPY", "KEYS"}, keys...)...); got != "+OK\r\n" {
		t.Fatalf("MIGRATE COPY out of the cluster: %q", got)
	}
	if got := dumps(t, pc, keys); !equalMaps(got, want) {
		t.Fatalf("MIGRATE COPY changed the cluster's keys: %v", got)
	}
	if got := dumps(t, rb, keys); !equalMaps(got, want) {
		t.Fatalf("after MIGRATE COPY, the target holds:\n got %v\nwant %v", got, want)
	}
	mustDo(t, rb, "FLUSHALL")
	if got := mustDo(t, pc, append([]string{"MIGRATE", bh, bp, "", "0", "5000", "KEYS"}, append(keys, "mg:missing")...)...); got != "+OK\r\n" {
		t.Fatalf("MIGRATE out of the cluster: %q", got)
	}
	if got := dumps(t, rb, keys); !equalMaps(got, want) {
		t.Fatalf("after MIGRATE out of the cluster, the target holds:\n got %v\nwant %v", got, want)
	}
	if got := mustDo(t, pc, append([]string{"EXISTS"}, keys...)...); got != ":0\r\n" {
		t.Fatalf("the keys are still in the cluster: EXISTS %q", got)
	}

	// The same MIGRATE lines from the proxy and from redisA, to redisB:
	// equal replies, errors included. Each line starts from the same
	// state: mg:s on the source and mg:busy on both.
	refused := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	rh, rp := hostPort(t, refused)
	lines := [][]string{
		{"MIGRATE", bh, bp, "mg:s", "0", "5000"},
		{"MIGRATE", bh, bp, "mg:missing", "0", "5000"},
		{"MIGRATE", bh, bp, "", "0", "5000", "KEYS", "mg:missing", "mg:none"},
		{"MIGRATE", bh, bp, "mg:busy", "0", "5000"},
		{"MIGRATE", bh, bp, "mg:busy", "0", "5000", "REPLACE"},
		{"MIGRATE", bh, bp, "", "0", "5000", "KEYS", "mg:s", "mg:busy"},
		{"MIGRATE", bh, bp, "", "0", "5000", "REPLACE", "KEYS", "mg:busy", "mg:s"},
		{"MIGRATE", bh, bp, "mg:s", "0", "5000", "AUTH", "secret"},
		{"MIGRATE", bh, bp, "mg:s", "0", "5000", "AUTH2", "user", "secret"},
		{"MIGRATE", bh, bp, "mg:s", "3", "5000", "COPY"},
		{"MIGRATE", bh, bp, "mg:s", "0", "0", "COPY", "REPLACE"},
		{"MIGRATE", bh, bp, "mg:s", "x", "5000"},
		{"MIGRATE", bh, bp, "mg:s", "0", "x"},
		{"MIGRATE", bh, bp, "mg:s", "0", "5000", "KEYS", "a"},
		{"MIGRATE", bh, bp, "", "0", "5000", "FOO"},
		{"MIGRATE", bh, bp, "", "0", "5000", "AUTH"},
		{"MIGRATE", bh, bp, "", "0", "5000", "AUTH2", "u"},
		{"MIGRATE", bh, bp, "mg:s", "0", "x", "FOO"},
		{"MIGRATE", rh, rp, "mg:s", "0", "500"},
		{"MIGRATE", rh, rp, "mg:missing", "0", "500"},
		{"MIGRATE", bh, bp, "mg:s"},
	}
	for _, l := range lines {
		var replies [2]string
		for i, src := range []*rawConn{ra, pc} {
			mustDo(t, rb, "FLUSHALL")
			mustDo(t, rb, "SET", "mg:busy", "there")
			mustDo(t, src, "DEL", "mg:s", "mg:busy")
			mustDo(t, src, "SET", "mg:s", "here")
			mustDo(t, src, "SET", "mg:busy", "here")
			replies[i] = mustDo(t, src, l...)
			// What the line left: on the source, on the target.
			replies[i] += " | " + mustDo(t, src, "MGET", "mg:s", "mg:busy") + " | " +
				mustDo(t, rb, "MGET", "mg:s", "mg:busy") + mustDo(t, rb, "SELECT", "3") +
				mustDo(t, rb, "MGET", "mg:s") + mustDo(t, rb, "SELECT", "0")
		}
		if replies[0] != replies[1] {
			t.Errorf("%q\n  redis-server: %q\n  proxy:        %q", l, replies[0], replies[1])
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// WAIT through the proxy: with copy count 2 every acknowledged write is
// on one slave, so WAIT answers 1 at once when asked for at most 1, and
// waits out its timeout when asked for more (no slave can appear); its
// argument errors are redis-server's.
func TestWaitCountsCaughtUpSlaves(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2}})
	rc, pc := dialRaw(t, redisAddr), dialRaw(t, c.Proxies[0].Addr())
	mustDo(t, pc, "SET", "w", "1")
	for _, l := range [][]string{{"WAIT", "0", "0"}, {"WAIT", "1", "0"}, {"WAIT", "-5", "10"}} {
		if got := mustDo(t, pc, l...); got != ":1\r\n" {
			t.Errorf("%q = %q, want :1", l, got)
		}
	}
	start := time.Now()
	if got := mustDo(t, pc, "WAIT", "2", "300"); got != ":1\r\n" {
		t.Errorf("WAIT 2 300 = %q, want :1", got)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("WAIT 2 300 returned after %v, want its timeout", d)
	}
	for _, l := range [][]string{
		{"WAIT", "x", "0"}, {"WAIT", "1", "x"}, {"WAIT", "1", "-1"}, {"WAIT", "1.5", "0"},
		{"WAIT", "1", "1.5"}, {"WAIT", "1"}, {"WAIT", "9223372036854775808", "0"},
	} {
		want, got := mustDo(t, rc, l...), mustDo(t, pc, l...)
		if want != got {
			t.Errorf("%q\n  redis-server: %q\n  proxy:        %q", l, want, got)
		}
	}
}
