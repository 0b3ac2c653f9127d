package tests

// COMMAND through a real proxy against redis-server 7.0: COMMAND INFO of
// every command both have, COMMAND GETKEYS and GETKEYSANDFLAGS of many
// argument lists, compared raw (RESP2 and RESP3); and cluster clients
// (go-redis ClusterClient, redis-py RedisCluster when installed) routing
// the commands whose keys depend on their arguments.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/resp"
)

// getkeysLines are argument lists for COMMAND GETKEYS and GETKEYSANDFLAGS
// (besides one made up for every command from its arity).
var getkeysLines = []string{
	"get k", "set k v", "set k v EX 10 GET", "set k v get", "set k v NX", "mset a 1 b 2 c 3", "mget a b c", "del a b c",
	"lmpop 2 a b LEFT", "lmpop 1 a RIGHT COUNT 2", "lmpop 3 a b LEFT", "lmpop 0 a LEFT", "lmpop x a LEFT", "lmpop -1 a LEFT",
	"blmpop 0 2 a b LEFT", "blmpop 1.5 1 a RIGHT", "blmpop 0 5 a LEFT",
	"zmpop 2 a b MIN", "zmpop 1 a MAX COUNT 3", "bzmpop 0 2 a b MIN", "bzmpop 0 9 a MIN",
	"sintercard 2 a b", "sintercard 2 a b LIMIT 1", "sintercard 3 a b", "zintercard 2 a b LIMIT 0",
	"zunionstore d 2 a b", "zunionstore d 2 a b WEIGHTS 1 2 AGGREGATE MAX", "zunionstore d 3 a b",
	"zinterstore d 1 a", "zdiffstore d 2 a b", "zunion 2 a b WITHSCORES", "zinter 1 a", "zdiff 2 a b",
	"sort k", "sort k STORE d", "sort k BY w* GET # GET h->f LIMIT 0 10 STORE d", "sort k LIMIT 0 1 ALPHA DESC",
	"sort_ro k BY w*", "sort k STORE d1 STORE d2", "blpop a b c 0", "brpop a 1", "bzpopmin a b 0", "blmove a b LEFT RIGHT 0",
	"brpoplpush a b 0", "lmove a b LEFT LEFT", "rpoplpush a b", "smove a b m",
	"sinterstore d a b", "sunion a b c", "sdiff a", "bitop AND d a b c", "bitop NOT d a",
	"copy a b", "copy a b REPLACE", "rename a b", "renamenx a b", "lcs a b LEN",
	"georadius k 1 2 3 m", "georadius k 1 2 3 m STORE d", "georadius k 1 2 3 m STOREDIST d COUNT 2",
	"georadiusbymember k m 3 km STORE d", "geosearchstore d s FROMMEMBER m BYRADIUS 1 km",
	"geosearch s FROMMEMBER m BYRADIUS 1 km", "pfcount a b", "pfmerge d a b", "pfdebug getreg k",
	"object encoding k", "object freq k", "object help", "memory usage k", "memory usage k SAMPLES 5",
	"watch a b", "exists a b", "touch a", "unlink a b", "expire k 10", "getex k PERSIST",
	"hset h f v", "zadd z 1 m", "zrangestore d s 0 -1", "restore k 0 x", "dump k",
	"ping", "nosuchcommand k", "get", "get a b", "lmpop", "object", "object nosuch k", "msetnx a 1 b 2",
	"bitfield k GET u8 0", "bitfield k GET u8 0 OVERFLOW SAT", "bitfield k SET u8 0 1", "bitfield k GET u8", "bitfield_ro k GET u8 0", "setrange k 0 v", "lpos k v RANK 1",
}

func ciDo(t *testing.T, conn net.Conn, r *bufio.Reader, args ...string) string {
	t.Helper()
	var b []byte
	b = resp.AppendArray(b, len(args))
	for _, a := range args {
		b = resp.AppendBulkString(b, a)
	}
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
	reply, err := testutil.ReadReply(r)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// withoutPolicyTips removes the request_policy and response_policy tips
// from Redis's COMMAND INFO entry (and its subcommands'): the proxy leaves
// them out on purpose (proxy/command.go: every proxy serves the whole
// cluster, so no command is to be fanned out to every proxy).
func withoutPolicyTips(v any) any {
	e, ok := v.([]any)
	if !ok || len(e) != 10 {
		return v
	}
	out := append([]any(nil), e...)
	var tips []any
	for _, tip := range e[7].([]any) {
		s := fmt.Sprint(tip)
		if !strings.HasPrefix(s, "request_policy:") && !strings.HasPrefix(s, "response_policy:") {
			tips = append(tips, tip)
		}
	}
	if tips == nil {
		tips = []any{}
	}
	out[7] = tips
	var subs []any
	for _, s := range e[9].([]any) {
		subs = append(subs, withoutPolicyTips(s))
	}
	// Redis lists subcommands in its hash table's order.
	sort.Slice(subs, func(i, j int) bool { return fmt.Sprint(subs[i]) < fmt.Sprint(subs[j]) })
	if subs == nil {
		subs = []any{}
	}
	out[9] = subs
	return out
}

// TestCommandInfoAgainstRedis: the proxy's COMMAND INFO of every command
// that redis-server also has equals redis-server's (name, arity, flags,
// key range, ACL categories, tips but the policy ones, key specifications,
// subcommands), and COMMAND GETKEYS / GETKEYSANDFLAGS answer exactly what
// redis-server answers, RESP2 and RESP3, byte for byte.
func TestCommandInfoAgainstRedis(t *testing.T) {
	c, err := cluster.Start(cluster.Options{DataServers: 1, Copies: 1, Buckets: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raddr := testutil.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, proto := range []int{2, 3} {
		ours := redis.NewClient(&redis.Options{Addr: c.Proxies[0].Addr(), Protocol: proto, MaxRetries: -1})
		theirs := redis.NewClient(&redis.Options{Addr: raddr, Protocol: proto})
		defer ours.Close()
		defer theirs.Close()
		compared := 0
		for _, s := range command.All() {
			want, err := theirs.Do(ctx, "command", "info", s.Name).Slice()
			if err != nil {
				t.Fatal(err)
			}
			if want[0] == nil {
				continue // a Tair command
			}
			got, err := ours.Do(ctx, "command", "info", s.Name).Slice()
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := infoDifferences[s.Name]; ok {
				t.Logf("COMMAND INFO %s: not compared: %s", s.Name, d)
				continue
			}
			if w := withoutPolicyTips(want[0]); !reflect.DeepEqual(withoutPolicyTips(got[0]), w) {
				t.Errorf("RESP%d COMMAND INFO %s:\n got %v\nwant %v", proto, s.Name, got[0], w)
			}
			compared++
		}
		if compared < 150 {
			t.Errorf("only %d commands compared", compared)
		}
	}

	lines := append([]string(nil), getkeysLines...)
	for _, s := range command.All() {
		n := s.Arity
		if n < 0 {
			n = -n + 1
		}
		l := s.Name
		for i := 1; i < n; i++ {
			l += " a" + strconv.Itoa(i)
		}
		lines = append(lines, l)
	}
	for _, proto := range []string{"2", "3"} {
		oc, or := testutil.Dial(t, c.Proxies[0].Addr())
		rc, rr := testutil.Dial(t, raddr)
		if proto == "3" {
			ciDo(t, oc, or, "HELLO", "3")
			ciDo(t, rc, rr, "HELLO", "3")
		}
		for _, extra := range [][]string{
			{"command", "count", "x"}, {"command", "getkeys"}, {"command", "nosuch"}, {"command", "list", "filterby"},
			{"command", "list", "filterby", "nosuch", "x"}, {"command", "list", "filterby", "module", "x"},
			{"command", "info", "nosuch", "get"}, {"command", "info", "object|encoding"}, {"command", "info", "object|nosuch"},
			{"command", "docs", "nosuch"}, {"command", "help"},
		} {
			if got, want := ciDo(t, oc, or, extra...), ciDo(t, rc, rr, extra...); got != want {
				t.Errorf("RESP%s %q:\n got %q\nwant %q", proto, extra, got, want)
			}
		}
		for _, l := range lines {
			name := strings.Fields(l)[0]
			if command.Lookup([]byte(name)) != nil {
				if d, ok := getkeysDifferences[l]; ok {
					t.Logf("%s: not compared: %s", l, d)
					continue
				}
			}
			for _, sub := range []string{"getkeys", "getkeysandflags"} {
				args := append([]string{"command", sub}, strings.Fields(l)...)
				got := ciDo(t, oc, or, args...)
				want := ciDo(t, rc, rr, args...)
				if want == "-ERR Invalid command specified\r\n" && command.Lookup([]byte(name)) != nil {
					continue // a Tair command: Redis has none to compare with
				}
				if got != want {
					t.Errorf("RESP%s COMMAND %s %s:\n got %q\nwant %q", proto, sub, l, got, want)
				}
			}
		}
		t.Logf("RESP%s: %d GETKEYS lines compared", proto, len(lines))
	}
}

// infoDifferences are the commands whose COMMAND INFO differs from Redis
// 7.0's on purpose.
var infoDifferences = map[string]string{
	"zrank":    "arity -3: ZRANK key member [WITHSCORE] (Redis 7.2's form) is served",
	"zrevrank": "arity -3: ZREVRANK key member [WITHSCORE] (Redis 7.2's form) is served",
}

// getkeysDifferences are the argument lists whose keys differ from
// Redis's on purpose.
var getkeysDifferences = map[string]string{
	"zrank a1 a2 a3":    "ZRANK key member WITHSCORE is served (Redis 7.2)",
	"zrevrank a1 a2 a3": "ZREVRANK key member WITHSCORE is served (Redis 7.2)",
	"sort k STORE d1 STORE d2": "every STORE destination is a key here (the table's sortKeys: they must " +
		"share the sorted key's bucket); Redis stores into the last one and names only it",
}

// TestClusterClientsRouteMovableKeys: go-redis's ClusterClient (and
// redis-py's RedisCluster, when python3 has redis) routes the commands
// whose keys depend on their arguments through the proxy, and their
// replies are Redis's.
func TestClusterClientsRouteMovableKeys(t *testing.T) {
	c, err := cluster.Start(cluster.Options{DataServers: 2, Copies: 1, Buckets: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Proxies[0].Addr()}, MaxRedirects: 0})
	defer cc.Close()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("RPUSH", cc.RPush(ctx, "{t}l1", "a", "b", "c").Err())
	must("RPUSH", cc.RPush(ctx, "{t}l2", "x").Err())
	must("ZADD", cc.ZAdd(ctx, "{t}z1", redis.Z{Score: 1, Member: "m1"}, redis.Z{Score: 2, Member: "m2"}, redis.Z{Score: 3, Member: "m3"}).Err())
	must("ZADD", cc.ZAdd(ctx, "{t}z2", redis.Z{Score: 2, Member: "m2"}, redis.Z{Score: 5, Member: "m5"}).Err())
	must("SADD", cc.SAdd(ctx, "{t}s1", "a", "b", "c").Err())
	must("SADD", cc.SAdd(ctx, "{t}s2", "b", "c", "d").Err())
	must("RPUSH", cc.RPush(ctx, "{t}n", "3", "1", "2").Err())

	// Raw Do forms: go-redis routes them by COMMAND's key positions.
	check := func(want any, args ...any) {
		t.Helper()
		got, err := cc.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%v = %v; want %v", args, got, want)
		}
	}
	check("[{t}l1 [a b]]", "lmpop", 2, "{t}nosuch", "{t}l1", "left", "count", 2)
	check("[{t}z1 [[m1 1]]]", "zmpop", 2, "{t}z1", "{t}z2", "min")
	check(2, "sintercard", 2, "{t}s1", "{t}s2")
	check(1, "sintercard", 2, "{t}s1", "{t}s2", "limit", 1)
	check(1, "zintercard", 2, "{t}z1", "{t}z2")
	check(3, "sort", "{t}n", "store", "{t}sorted")
	check("[1 2 3]", "lrange", "{t}sorted", 0, -1)
	check("[{t}z2 [[m5 5]]]", "bzmpop", 1, 2, "{t}nosuch", "{t}z2", "max")
	check(2, "zunionstore", "{t}u", 2, "{t}z1", "{t}z2")

	// Typed forms.
	k, v, err := cc.LMPop(ctx, "right", 1, "{t}l1").Result()
	if err != nil || k != "{t}l1" || !reflect.DeepEqual(v, []string{"c"}) {
		t.Fatalf("LMPop = %q %q %v", k, v, err)
	}
	n, err := cc.SInterCard(ctx, 0, "{t}s1", "{t}s2").Result()
	if err != nil || n != 2 {
		t.Fatalf("SInterCard = %d %v", n, err)
	}
	n, err = cc.ZInterCard(ctx, 0, "{t}z1", "{t}z2").Result()
	if err != nil || n != 1 {
		t.Fatalf("ZInterCard = %d %v", n, err)
	}
	if err := cc.Do(ctx, "bzmpop", 0.2, 1, "{t}empty", "min").Err(); err != redis.Nil {
		t.Fatalf("BZMPOP on an empty key = %v; want nil after the timeout", err)
	}

	t.Run("redis-py", func(t *testing.T) {
		py := ""
		for _, p := range []string{"python3", "/usr/bin/python3"} {
			if exec.Command(p, "-c", "import redis.cluster").Run() == nil {
				py = p
				break
			}
		}
		if py == "" {
			t.Skip("python3 has no redis module (apt-get install python3-redis): redis-py's RedisCluster not tried")
		}
		host, port, _ := net.SplitHostPort(c.Proxies[0].Addr())
		cmd := exec.CommandContext(ctx, py, "testdata/redispy_cluster.py", host, port)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("redis-py: %v\n%s", err, out)
		}
		t.Logf("redis-py: %s", strings.TrimSpace(string(out)))
	})
}
