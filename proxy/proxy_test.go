package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/resp"
)

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPipelineInOrderAcrossBackends(t *testing.T) {
	e := newEnv(t, 3, false)
	rc := e.raw()
	// 600 commands in one write: SET/GET/INCR interleaved over keys of
	// every bucket; replies must come back in order.
	var buf []byte
	var want []string
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("k%d", i)
		for _, c := range [][]string{{"SET", k, fmt.Sprintf("v%d", i)}, {"GET", k}, {"INCR", "n" + k}} {
			var b strings.Builder
			fmt.Fprintf(&b, "*%d\r\n", len(c))
			for _, a := range c {
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
			}
			buf = append(buf, b.String()...)
		}
		want = append(want, "+OK\r\n", fmt.Sprintf("$%d\r\nv%d\r\n", len(fmt.Sprint(i))+1, i), ":1\r\n")
	}
	if _, err := rc.c.Write(buf); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got := rc.read(); got != w {
			t.Fatalf("reply %d = %q, want %q", i, got, w)
		}
	}
	used := 0
	for _, f := range e.fakes {
		if f.envelopes.Load() > 0 {
			used++
		}
	}
	if used != 3 {
		t.Fatalf("%d backends used, want 3", used)
	}
}

// One write mixes commands the event loop forwards itself (SET, GET,
// INCR of one key) with commands the session goroutine runs (PING, ECHO,
// SELECT, MSET and MGET over several buckets, an unknown command): the
// replies come back in order, the goroutine's SELECT holds for the loop's
// commands after it, and the commands run in order (a GET after an MSET
// sees the MSET's value, whichever path each took).
func TestPipelineMixesLoopAndSessionCommands(t *testing.T) {
	e := newEnv(t, 3, false)
	rc := e.raw()
	cmds := [][]string{
		{"SET", "x", "1"},
		{"PING"},
		{"GET", "x"},
		{"MSET", "x", "2", "y", "2", "z", "2"},
		{"GET", "x"},
		{"INCR", "n"},
		{"SELECT", "1"},
		{"GET", "x"},
		{"SET", "x", "area1"},
		{"MGET", "x", "y", "z"},
		{"SELECT", "0"},
		{"GET", "x"},
		{"NOSUCHCMD", "a"},
		{"INCR", "n"},
		{"ECHO", "bye"},
		{"GET", "x"},
	}
	want := []string{
		"+OK\r\n", "+PONG\r\n", "$1\r\n1\r\n", "+OK\r\n", "$1\r\n2\r\n", ":1\r\n",
		"+OK\r\n", "$-1\r\n", "+OK\r\n", "*3\r\n$5\r\narea1\r\n$-1\r\n$-1\r\n",
		"+OK\r\n", "$1\r\n2\r\n",
		"-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' \r\n",
		":2\r\n", "$3\r\nbye\r\n", "$1\r\n2\r\n",
	}
	var buf []byte
	for _, c := range cmds {
		buf = resp.AppendArray(buf, len(c))
		for _, a := range c {
			buf = resp.AppendBulk(buf, []byte(a))
		}
	}
	// Twice: once in one write, once a byte at a time (the loop sees
	// partial commands and hands over batches of every size).
	for round := 0; round < 2; round++ {
		if round == 0 {
			if _, err := rc.c.Write(buf); err != nil {
				t.Fatal(err)
			}
		} else {
			rc.do("DEL", "x", "y", "z", "n")
			rc.do("SELECT", "1")
			rc.do("DEL", "x")
			rc.do("SELECT", "0")
			go func() {
				for i := range buf {
					if _, err := rc.c.Write(buf[i : i+1]); err != nil {
						return
					}
				}
			}()
		}
		for i, w := range want {
			if got := rc.read(); got != w {
				t.Fatalf("round %d: reply %d to %v = %q, want %q", round, i, cmds[i], got, w)
			}
		}
	}
}

// INFO stats counts which path commands took: forwarded by the event
// loop, or run in batches by the session goroutine (INFO itself is one).
func TestInfoCountsPaths(t *testing.T) {
	e := newEnv(t, 1, false)
	rc := e.raw()
	rc.do("SET", "a", "1")
	rc.do("GET", "a")
	rc.do("PING")
	info := rc.do("INFO", "stats")
	for _, want := range []string{"proxy_loop_forwarded:2\r\n", "proxy_session_batches:2\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO stats lacks %q:\n%s", want, info)
		}
	}
}

func TestGoRedisPipelineAndConcurrency(t *testing.T) {
	e := newEnv(t, 3, false)
	c := e.client(func(o *redis.Options) { o.PoolSize = 8; o.Protocol = 3 })
	ctx := tctx(t)
	done := make(chan error, 8)
	for w := 0; w < 8; w++ {
		go func(w int) {
			for round := 0; round < 20; round++ {
				pipe := c.Pipeline()
				var gets []*redis.StringCmd
				for i := 0; i < 50; i++ {
					k := fmt.Sprintf("w%d:%d", w, i)
					pipe.Set(ctx, k, fmt.Sprint(round, i), 0)
					gets = append(gets, pipe.Get(ctx, k))
				}
				if _, err := pipe.Exec(ctx); err != nil {
					done <- err
					return
				}
				for i, g := range gets {
					if g.Val() != fmt.Sprint(round, i) {
						done <- fmt.Errorf("worker %d round %d get %d = %q", w, round, i, g.Val())
						return
					}
				}
			}
			done <- nil
		}(w)
	}
	for w := 0; w < 8; w++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if e.fakes[0].lastProto.Load() != 3 {
		t.Fatalf("dataserver saw proto %d, want 3 (HELLO 3)", e.fakes[0].lastProto.Load())
	}
}

func TestMultiKeySplitMerge(t *testing.T) {
	e := newEnv(t, 3, false)
	c := e.client()
	ctx := tctx(t)
	var kv []any
	var keys []string
	for i := 0; i < 40; i++ {
		k := fmt.Sprintf("mk%d", i)
		keys = append(keys, k)
		kv = append(kv, k, fmt.Sprint(i))
	}
	if err := c.MSet(ctx, kv...).Err(); err != nil {
		t.Fatal(err)
	}
	q := append(append([]string{}, keys[:20]...), "missing")
	q = append(q, keys[20:]...)
	vals, err := c.MGet(ctx, q...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		switch {
		case i < 20 && v != fmt.Sprint(i), i > 20 && v != fmt.Sprint(i-1):
			t.Fatalf("MGET[%d] = %v", i, v)
		case i == 20 && v != nil:
			t.Fatalf("MGET missing = %v", v)
		}
	}
	// A read goes as one part per node.
	before0 := e.fakes[0].envelopes.Load() + e.fakes[1].envelopes.Load() + e.fakes[2].envelopes.Load()
	if err := c.MGet(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if n := e.fakes[0].envelopes.Load() + e.fakes[1].envelopes.Load() + e.fakes[2].envelopes.Load() - before0; n != 3 {
		t.Fatalf("MGET of 40 keys on 3 nodes sent %d parts, want 3", n)
	}
	if n, err := c.Exists(ctx, append(keys, "nope")...).Result(); err != nil || n != 40 {
		t.Fatalf("EXISTS = %d %v", n, err)
	}
	if n, err := c.Del(ctx, keys[:10]...).Result(); err != nil || n != 10 {
		t.Fatalf("DEL = %d %v", n, err)
	}
	if n, err := c.Unlink(ctx, keys[:20]...).Result(); err != nil || n != 10 {
		t.Fatalf("UNLINK = %d %v", n, err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 20 {
		t.Fatalf("DBSIZE = %d %v", n, err)
	}
	// Atomic commands across buckets are refused.
	rc := e.raw()
	if got := rc.do("MSET", "mk1", "a", "mk2"); got != "-ERR wrong number of arguments for 'mset' command\r\n" {
		t.Fatalf("MSET with a key and no value = %q", got)
	}
	if got := rc.do("MSETNX", "mk1", "a", "mk2", "b"); got != "-CROSSSLOT Keys in request don't hash to the same slot\r\n" {
		t.Fatalf("MSETNX across buckets = %q", got)
	}
	// A split write with one key or value over the limits is refused
	// whole: no part reaches a dataserver.
	long := strings.Repeat("k", 1025)
	sent := e.fakes[0].envelopes.Load() + e.fakes[1].envelopes.Load() + e.fakes[2].envelopes.Load()
	if got := rc.do("MSET", "mk1", "x", long, "y", "mk2", "z"); got != "-KEYTOOLONG key too long (tair -5)\r\n" {
		t.Fatalf("MSET with a long key = %q", got)
	}
	if got := rc.do("DEL", "mk1", "mk2", long); got != "-KEYTOOLONG key too long (tair -5)\r\n" {
		t.Fatalf("DEL with a long key = %q", got)
	}
	if got := rc.do("MSET", "mk1", "x", "mk2", strings.Repeat("v", 1<<20+1)); got != "-VALUETOOLONG value too long (tair -6)\r\n" {
		t.Fatalf("MSET with a long value = %q", got)
	}
	if n := e.fakes[0].envelopes.Load() + e.fakes[1].envelopes.Load() + e.fakes[2].envelopes.Load(); n != sent {
		t.Fatalf("refused split writes sent %d parts", n-sent)
	}
	if v, err := c.Get(ctx, "mk1").Result(); err != redis.Nil {
		t.Fatalf("mk1 after the refused writes = %q, %v; want nil (deleted above)", v, err)
	}
	// Hash tags keep keys together: one sub-command.
	before := e.fakes[0].envelopes.Load() + e.fakes[1].envelopes.Load() + e.fakes[2].envelopes.Load()
	if got := rc.do("MSET", "{u1}a", "1", "{u1}b", "2", "{u1}c", "3"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	after := e.fakes[0].envelopes.Load() + e.fakes[1].envelopes.Load() + e.fakes[2].envelopes.Load()
	if after-before != 1 {
		t.Fatalf("tagged MSET sent %d sub-commands, want 1", after-before)
	}
}

func TestNotMasterRefreshesAndRetries(t *testing.T) {
	e := newEnv(t, 3, true)
	c := e.client()
	ctx := tctx(t)
	// Move every bucket: the configserver and the dataservers get a new
	// table; the proxy learns it from NOTMASTER (or its long poll).
	addrs := []string{e.fakes[1].addr, e.fakes[2].addr, e.fakes[0].addr}
	next := makeTable(e.table.Version+1, 64, addrs...)
	for _, f := range e.fakes {
		f.table.Store(next)
	}
	e.cs.table.Store(next)
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("moved%d", i)
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("set %s after the move: %v", k, err)
		}
	}
	if v := e.p.TableVersion(); v != next.Version {
		t.Fatalf("proxy table version %d, want %d", v, next.Version)
	}
	// A stale table of the same version (SetTable) is corrected by a
	// forced fetch on NOTMASTER.
	stale := next.Clone()
	for b := range stale.Serving {
		stale.Serving[b] = []string{e.fakes[0].addr}
	}
	_ = e.p.SetTable(stale)
	for i := 0; i < 50; i++ {
		if err := c.Set(ctx, fmt.Sprintf("stale%d", i), fmt.Sprint(i), 0).Err(); err != nil {
			t.Fatalf("set through a stale table: %v", err)
		}
	}
	// A read grouped by a stale table's node is split again per bucket.
	_ = e.p.SetTable(stale)
	var ks []string
	for i := 0; i < 50; i++ {
		ks = append(ks, fmt.Sprintf("stale%d", i))
	}
	vals, err := c.MGet(ctx, ks...).Result()
	if err != nil {
		t.Fatalf("MGET through a stale table: %v", err)
	}
	for i, v := range vals {
		if v != fmt.Sprint(i) {
			t.Fatalf("MGET[%d] through a stale table = %v", i, v)
		}
	}
	if n := e.p.stats.resplits.Load(); n == 0 {
		t.Fatal("the stale MGET was not split again")
	}
	// A transient NOTMASTER is retried.
	e.fakes[0].notMaster.Store(3)
	e.fakes[1].notMaster.Store(3)
	e.fakes[2].notMaster.Store(3)
	for i := 0; i < 20; i++ {
		if err := c.Get(ctx, fmt.Sprintf("stale%d", i)).Err(); err != nil {
			t.Fatalf("get after transient NOTMASTER: %v", err)
		}
	}
}

func TestTryAgainRetriedThenBudget(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.RetryBudget = 300 * time.Millisecond })
	rc := e.raw()
	e.fakes[0].tryAgain.Store(5)
	if got := rc.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET during a short freeze = %q", got)
	}
	refuseUntilBudget(t, rc, &e.fakes[0].tryAgain, "-TRYAGAIN bucket ", "(tair -3984)\r\n", 250*time.Millisecond, 3*time.Second)
}

// refuseUntilBudget makes a fake refuse every SET (refusals) and checks
// that the proxy passes the refusal on (prefix ... suffix) once its
// retry budget is spent: after min at the earliest, max at the latest.
func refuseUntilBudget(t *testing.T, rc *rawConn, refusals *atomic.Int32, prefix, suffix string, min, max time.Duration) {
	t.Helper()
	refusals.Store(1 << 30)
	defer refusals.Store(0)
	start := time.Now()
	got := rc.do("SET", "k", "v")
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
		t.Fatalf("SET after the budget = %q", got)
	}
	if d := time.Since(start); d < min || d > max {
		t.Fatalf("gave up after %v, want %v..%v", d, min, max)
	}
}

// TestLapsedLeaseRetriedForTheBudget: a master whose lease lapsed, or
// that has yet to learn the table that made it master, answers NOTMASTER
// while the proxy's table rightly names it; the proxy retries that for
// its time budget, past NOTMASTER's attempt limit, and then passes the
// refusal on.
func TestLapsedLeaseRetriedForTheBudget(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.RetryBudget = 2 * time.Second; c.RetryAttempts = 3 })
	rc := e.raw()
	e.fakes[0].lapsed.Store(10)
	if got := rc.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET while the lease lapsed 10 times = %q", got)
	}
	e.fakes[0].behind.Store(10)
	if got := rc.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET while the master was 10 times behind the proxy's table = %q", got)
	}
	e.fakes[0].notMaster.Store(10)
	if got := rc.do("SET", "k", "v"); !strings.HasPrefix(got, "-NOTMASTER bucket ") {
		t.Fatalf("SET after 10 plain NOTMASTERs = %q, want NOTMASTER after 3 attempts", got)
	}
	e.fakes[0].notMaster.Store(0)
	refuseUntilBudget(t, rc, &e.fakes[0].lapsed, "-NOTMASTER bucket ", "master lease lapsed (tair -3986)\r\n", 1900*time.Millisecond, 4*time.Second)
}

func TestBackendDownThenBack(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.RetryBudget = 300 * time.Millisecond })
	rc := e.raw()
	if got := rc.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	addr := e.fakes[0].addr
	e.fakes[0].stop()
	got := rc.do("GET", "k")
	if !strings.HasPrefix(got, "-CLUSTERDOWN") && !strings.HasPrefix(got, "-TIMEOUT") {
		t.Fatalf("GET with the dataserver down = %q", got)
	}
	// Back on the same address: requests flow again.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot rebind %s: %v", addr, err)
	}
	f := e.fakes[0]
	f.srv = nil
	srv := newFakeOn(t, f, ln)
	_ = srv
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = rc.do("GET", "k")
		if got == "$1\r\nv\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET after the dataserver came back = %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A dataserver that dies with a request in flight: a write that may have
// run and is not idempotent gets an error reply at once (not silence and
// not a second run); an idempotent SET and a read are sent again; the
// connection stays usable.
func TestBackendLostMidRequest(t *testing.T) {
	e := newEnv(t, 1, false)
	rc := e.raw()
	f := e.fakes[0]
	f.hangUp.Store(1)
	start := time.Now()
	got := rc.do("INCR", "n")
	if want := "-TIMEOUT proxy: backend connection closed"; !strings.HasPrefix(got, want) || !strings.Contains(got, "the write may have applied") {
		t.Fatalf("INCR through a dataserver that hung up = %q, want %q...", got, want)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the error took %v", d)
	}
	if got := rc.do("INCR", "n"); got != ":1\r\n" {
		t.Fatalf("next INCR = %q (the first must not have been resent)", got)
	}
	f.hangUp.Store(1)
	if got := rc.do("SET", "k", "v2"); got != "+OK\r\n" {
		t.Fatalf("SET through a dataserver that hung up once = %q (an idempotent write is retried)", got)
	}
	f.hangUp.Store(1)
	if got := rc.do("GET", "k"); got != "$2\r\nv2\r\n" {
		t.Fatalf("GET through a dataserver that hung up once = %q (a read is retried)", got)
	}
	if f.hangUp.Load() > 0 {
		t.Fatal("the fake did not hang up")
	}
}

func TestIdempotentWrite(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want bool
	}{
		{"SET k v", true}, {"set k v EX 10", true}, {"SET k v PXAT 99 KEEPTTL", true},
		{"SET k v NX", false}, {"SET k v xx", false}, {"SET k v GET", false},
		{"MSET a 1 b 2", true}, {"HMSET h f v", true}, {"SETEX k 10 v", true}, {"PSETEX k 10 v", true},
		{"INCR k", false}, {"DEL k", false}, {"HSET h f v", false}, {"LPUSH l a", false}, {"APPEND k v", false},
	} {
		var args [][]byte
		for _, a := range strings.Fields(c.cmd) {
			args = append(args, []byte(a))
		}
		if got := idempotentWrite(args); got != c.want {
			t.Errorf("idempotentWrite(%s) = %v, want %v", c.cmd, got, c.want)
		}
	}
}

func TestLocalCommands(t *testing.T) {
	e := newEnv(t, 2, false)
	rc := e.raw()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"PING", "hi"}, "$2\r\nhi\r\n"},
		{[]string{"ECHO", "x"}, "$1\r\nx\r\n"},
		{[]string{"ASKING"}, "+OK\r\n"},
		{[]string{"READONLY"}, "+OK\r\n"},
		{[]string{"SELECT", "1024"}, "-ERR DB index is out of range\r\n"},
		{[]string{"SELECT", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"FOO", "a", "b"}, "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n"},
		{[]string{"FOO"}, "-ERR unknown command 'FOO', with args beginning with: \r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"CLUSTER", "KEYSLOT", "foo"}, ":12182\r\n"},
		{[]string{"CLUSTER", "KEYSLOT", "{user1000}.following"}, ":3443\r\n"},
		{[]string{"CLIENT", "SETNAME", "bob"}, "+OK\r\n"},
		{[]string{"CLIENT", "GETNAME"}, "$3\r\nbob\r\n"},
		{[]string{"CLIENT", "SETNAME", "a b"}, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
		{[]string{"AUTH", "x"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"HELLO", "4"}, "-NOPROTO unsupported protocol version\r\n"},
		{[]string{"CONFIG", "GET", "proto-max-bulk-len"}, "*2\r\n$18\r\nproto-max-bulk-len\r\n$9\r\n536870912\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "maxmemory-policy"}, "*2\r\n$16\r\nmaxmemory-policy\r\n$11\r\nallkeys-lru\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "bogus"}, "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "ALLKEYS-LFU"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "maxmemory-policy"}, "*2\r\n$16\r\nmaxmemory-policy\r\n$11\r\nallkeys-lfu\r\n"},
		{[]string{"CONFIG", "SET", "appendonly", "maybe"}, "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'\r\n"},
		{[]string{"CONFIG", "SET", "zset-max-listpack-entries", "x"}, "-ERR CONFIG SET failed (possibly related to argument 'zset-max-listpack-entries') - argument couldn't be parsed into an integer\r\n"},
		{[]string{"CONFIG", "GET", "hash-max-listpack-entries"}, "*2\r\n$25\r\nhash-max-listpack-entries\r\n$3\r\n512\r\n"},
		{[]string{"CLIENT", "NOSUCH"}, "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n"},
		{[]string{"CLIENT", "GETNAME", "x"}, "-ERR wrong number of arguments for 'client|getname' command\r\n"},
		{[]string{"COMMAND", "COUNT", "x"}, "-ERR wrong number of arguments for 'command|count' command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "GET"}, "-ERR wrong number of arguments for 'command|getkeys' command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "PING", "x"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"COMMAND", "GETKEYS", "GET", "a", "b"}, "-ERR Invalid number of arguments specified for command\r\n"},
		{[]string{"COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"EXEC", "x"}, "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"BLMPOP", "1", "0", "l", "LEFT"}, "-ERR numkeys should be greater than 0\r\n"},
		{[]string{"BZMPOP", "x", "y", "l", "MIN"}, "-ERR numkeys should be greater than 0\r\n"},
		{[]string{"SELECT", "7"}, "+OK\r\n"},
		{[]string{"SET", "a", "area7"}, "+OK\r\n"},
		{[]string{"SELECT", "0"}, "+OK\r\n"},
		{[]string{"GET", "a"}, "$-1\r\n"},
	}
	for _, c := range cases {
		if got := rc.do(c.args...); got != c.want {
			t.Fatalf("%v = %q, want %q", c.args, got, c.want)
		}
	}
	for _, args := range [][]string{{"COMMAND", "COUNT"}, {"CLIENT", "ID"}} {
		if got := rc.do(args...); !strings.HasPrefix(got, ":") {
			t.Fatalf("%v = %q", args, got)
		}
	}
	for _, args := range [][]string{{"INFO"}, {"INFO", "commandstats"}, {"CLIENT", "LIST"}, {"CLUSTER", "NODES"}, {"CLUSTER", "INFO"}} {
		if got := rc.do(args...); !strings.HasPrefix(got, "$") {
			t.Fatalf("%v = %q", args, got)
		}
	}
	if got := rc.do("INFO", "commandstats"); !strings.Contains(got, "cmdstat_get:calls=1") {
		t.Fatalf("INFO commandstats lacks get: %q", got)
	}
	if got := rc.do("INFO", "latencystats"); !strings.Contains(got, "latency_percentiles_usec_get:p50=") {
		t.Fatalf("INFO latencystats lacks get: %q", got)
	}
	// Redis's default sections, in Redis's order.
	info := rc.do("INFO")
	last := -1
	for _, sec := range []string{"# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU", "# Cluster", "# Keyspace"} {
		i := strings.Index(info, sec+"\r\n")
		if i < 0 || i < last {
			t.Fatalf("INFO: section %q missing or out of order in %q", sec, info)
		}
		last = i
	}
	if got := rc.do("INFO", "replication"); !strings.Contains(got, "role:master\r\n") || !strings.Contains(got, "tair_table_version:") {
		t.Fatalf("INFO replication = %q", got)
	}
	if got := rc.do("INFO", "cpu"); !strings.Contains(got, "used_cpu_user:") {
		t.Fatalf("INFO cpu = %q", got)
	}
	for _, args := range [][]string{{"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}, {"COMMAND", "DOCS", "get"}, {"COMMAND", "INFO", "get"}, {"TIME"}, {"SLOWLOG", "GET"}} {
		if got := rc.do(args...); !strings.HasPrefix(got, "*") {
			t.Fatalf("%v = %q", args, got)
		}
	}
	// HELLO 3 switches to RESP3 and replies with a map.
	if got := rc.do("HELLO", "3"); !strings.HasPrefix(got, "%7\r\n$6\r\nserver\r\n") {
		t.Fatalf("HELLO 3 = %q", got)
	}
	if got := rc.do("GET", "nokey"); got != "_\r\n" {
		t.Fatalf("RESP3 null = %q", got)
	}
	if got := rc.do("QUIT"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	_ = rc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := rc.c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after QUIT read = %v, want EOF", err)
	}
}

func TestGoRedisClusterClient(t *testing.T) {
	e := newEnv(t, 3, false)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{e.p.Addr()}})
	defer cc.Close()
	ctx := tctx(t)
	for i := 0; i < 50; i++ {
		if err := cc.Set(ctx, fmt.Sprint("c", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := cc.Get(ctx, "c7").Result(); err != nil || v != "7" {
		t.Fatalf("cluster get = %q %v", v, err)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) {
		c.RequirePass = "secret"
		c.Users = map[string]string{"alice": "wonder"}
	})
	rc := e.raw()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, "-NOAUTH Authentication required.\r\n"},
		{[]string{"PING"}, "-NOAUTH Authentication required.\r\n"},
		{[]string{"AUTH", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{[]string{"AUTH", "alice", "nope"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{[]string{"AUTH", "secret"}, "+OK\r\n"},
		{[]string{"SET", "k", "v"}, "+OK\r\n"},
		{[]string{"RESET"}, "+RESET\r\n"},
		{[]string{"GET", "k"}, "-NOAUTH Authentication required.\r\n"},
		{[]string{"AUTH", "alice", "wonder"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
	} {
		if got := rc.do(c.args...); got != c.want {
			t.Fatalf("%v = %q, want %q", c.args, got, c.want)
		}
	}
	// go-redis with a password uses HELLO 3 AUTH.
	c := e.client(func(o *redis.Options) { o.Password = "secret"; o.Protocol = 3 })
	if v, err := c.Get(tctx(t), "k").Result(); err != nil || v != "v" {
		t.Fatalf("go-redis with password: %q %v", v, err)
	}
	// Unauthenticated clients cannot send big requests.
	rc2 := e.raw()
	big := strings.Repeat("x", 20000)
	rc2.send("AUTH", big)
	if got := rc2.read(); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("big unauthenticated bulk = %q", got)
	}
}

func TestProtocolLimits(t *testing.T) {
	e := newEnv(t, 1, false)
	check := func(payload, want string) {
		t.Helper()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		c, err := net.Dial("tcp", e.p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(payload)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("reply to %q = %q, %v; want %q", payload[:min(len(payload), 40)], line, err, want)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("connection not closed after a protocol error: %v", err)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if grown := int64(after.TotalAlloc) - int64(before.TotalAlloc); grown > 64<<20 {
			t.Fatalf("refusing the request allocated %d bytes", grown)
		}
	}
	check("*1\r\n$1073741824\r\n", "-ERR Protocol error: invalid bulk length\r\n")
	check("*10000000\r\n$3\r\nGET\r\n", "-ERR Protocol error: invalid multibulk length\r\n")
	check("*2\r\n$3\r\nGET\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n")
	check("*1\r\n+GET\r\n", "-ERR Protocol error: expected '$', got '+'\r\n")
	check(strings.Repeat("a", 70<<10), "-ERR Protocol error: too big inline request\r\n")
	check("GET \"k\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n")
	// Replies before the bad command are still written.
	c, _ := net.Dial("tcp", e.p.Addr())
	defer c.Close()
	_, _ = c.Write([]byte("PING\r\n*1\r\n$99999999999\r\n"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	all, _ := io.ReadAll(c)
	if string(all) != "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("pipeline with a bad command: %q", all)
	}
	// The limit is configurable.
	rc := e.raw()
	if got := rc.do("CONFIG", "SET", "proto-max-bulk-len", "2mb"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c3, err := net.Dial("tcp", e.p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	go func() {
		// The proxy closes mid-write: the write may fail.
		_, _ = c3.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3145728\r\n" + strings.Repeat("v", 3<<20) + "\r\n"))
	}()
	_ = c3.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, _ := bufio.NewReader(c3).ReadString('\n'); line != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("3 MiB bulk over a 2mb limit = %q", line)
	}
}

func TestMaxClients(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.MaxClients = 2 })
	a, b := e.raw(), e.raw()
	a.do("PING")
	b.do("PING")
	c, _ := net.Dial("tcp", e.p.Addr())
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	if line != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third client got %q", line)
	}
}

func TestIdleTimeout(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	rc := e.raw()
	rc.do("PING")
	_ = rc.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := rc.c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle client: read = %v, want EOF", err)
	}
}

// A client that sends many commands and never reads is closed once its
// output stays over the limit; the proxy's memory stays bounded.
func TestNonReadingClientBounded(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) {
		c.MaxOutputBuffer = 1 << 20
		c.WriteTimeout = 300 * time.Millisecond
	})
	setup := e.raw()
	if got := setup.do("SET", "big", strings.Repeat("x", 256<<10)); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c := e.nonReader()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req := []byte("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n")
	batch := []byte(strings.Repeat(string(req), 100))
	// Write ~100 MB of replies' worth of requests; the proxy must stop
	// reading (backpressure) and close us.
	closed := false
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 4000 && time.Now().Before(deadline); i++ {
		_ = c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Write(batch); err != nil {
			closed = true
			break
		}
	}
	if !closed {
		// Writes may still fit in socket buffers; the proxy must close.
		time.Sleep(time.Second)
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 64<<20 {
		t.Fatalf("heap grew by %d MiB for a non-reading client", grown>>20)
	}
	// The proxy closed the connection (or the socket is at least dead).
	waitClosed := time.Now().Add(5 * time.Second)
	for e.p.clients.Load() > 1 && time.Now().Before(waitClosed) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.p.clients.Load(); n > 1 {
		t.Fatalf("%d clients connected; the non-reading client was not closed", n)
	}
}

func TestMultiExec(t *testing.T) {
	e := newEnv(t, 3, false)
	rc := e.raw()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"SET", "{t}a", "1"}, "+QUEUED\r\n"},
		{[]string{"INCR", "{t}n"}, "+QUEUED\r\n"},
		{[]string{"PING"}, "+QUEUED\r\n"},
		{[]string{"GET", "{t}a"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*4\r\n+OK\r\n:1\r\n+PONG\r\n$1\r\n1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"SET", "x1", "1"}, "+QUEUED\r\n"},
		{[]string{"SET", "x2", "1"}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		{[]string{"GET", "x1"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"GET", "x1"}, "$-1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DISCARD"}, "+OK\r\n"},
		{[]string{"DISCARD"}, "-ERR DISCARD without MULTI\r\n"},
	} {
		if got := rc.do(c.args...); got != c.want {
			t.Fatalf("%v = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestBlockingPop(t *testing.T) {
	e := newEnv(t, 2, false)
	rc := e.raw()
	start := time.Now()
	if got := rc.do("BLPOP", "q", "0.2"); got != "*-1\r\n" {
		t.Fatalf("BLPOP timeout = %q", got)
	}
	if d := time.Since(start); d < 190*time.Millisecond || d > 2*time.Second {
		t.Fatalf("BLPOP waited %v, want about 200ms", d)
	}
	// Another client pushes while this one waits; others are not stalled.
	go func() {
		time.Sleep(100 * time.Millisecond)
		other := e.raw()
		other.do("RPUSH", "q", "hello")
	}()
	other2 := e.raw()
	rc.send("BLPOP", "q", "5")
	if got := other2.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
	if got := rc.read(); got != "*2\r\n$1\r\nq\r\n$5\r\nhello\r\n" {
		t.Fatalf("BLPOP = %q", got)
	}
	if got := rc.do("BLPOP", "q", "-1"); got != "-ERR timeout is negative\r\n" {
		t.Fatal(got)
	}
}

func TestScanKeysDBSizeFlush(t *testing.T) {
	e := newEnv(t, 3, false)
	c := e.client()
	ctx := tctx(t)
	want := map[string]bool{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("s:%d", i)
		want[k] = true
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, "s:*", 20).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			got[k]++
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	if len(got) != 300 {
		t.Fatalf("SCAN found %d keys, want 300", len(got))
	}
	for k, n := range got {
		if n != 1 || !want[k] {
			t.Fatalf("SCAN returned %s %d times", k, n)
		}
	}
	if ks, err := c.Keys(ctx, "s:1*").Result(); err != nil || len(ks) != 111 {
		t.Fatalf("KEYS s:1* = %d keys, %v", len(ks), err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 300 {
		t.Fatalf("DBSIZE = %d %v", n, err)
	}
	if k, err := c.RandomKey(ctx).Result(); err != nil || !want[k] {
		t.Fatalf("RANDOMKEY = %q %v", k, err)
	}
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after FLUSHDB = %d %v", n, err)
	}
	if k, err := c.RandomKey(ctx).Result(); err != redis.Nil {
		t.Fatalf("RANDOMKEY on empty = %q %v", k, err)
	}
}

func TestHTTPEndpoints(t *testing.T) {
	e := newEnv(t, 1, false)
	e.raw().do("SET", "k", "v")
	for path, want := range map[string]string{
		"/healthz":      "ok",
		"/status":       `"kind":"proxy"`,
		"/metrics":      "tair_proxy_commands_total{cmd=\"set\"} 1",
		"/debug/pprof/": "goroutine",
	} {
		res, err := http.Get("http://" + e.p.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Fatalf("%s lacks %q:\n%s", path, want, body)
		}
	}
}

func TestWatch(t *testing.T) {
	e := newEnv(t, 2, false)
	a, b := e.raw(), e.raw()
	for _, step := range []struct {
		c    *rawConn
		args []string
		want string
	}{
		{a, []string{"WATCH", "{w}k"}, "+OK\r\n"},
		{a, []string{"MULTI"}, "+OK\r\n"},
		{a, []string{"SET", "{w}k", "mine"}, "+QUEUED\r\n"},
		{a, []string{"EXEC"}, "*1\r\n+OK\r\n"},
		{a, []string{"WATCH", "{w}k"}, "+OK\r\n"},
		{b, []string{"SET", "{w}k", "theirs"}, "+OK\r\n"},
		{a, []string{"MULTI"}, "+OK\r\n"},
		{a, []string{"SET", "{w}k", "mine"}, "+QUEUED\r\n"},
		{a, []string{"EXEC"}, "*-1\r\n"},
		{a, []string{"GET", "{w}k"}, "$6\r\ntheirs\r\n"},
		{a, []string{"WATCH", "{w}k", "other"}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
	} {
		if got := step.c.do(step.args...); got != step.want {
			t.Fatalf("%v = %q, want %q", step.args, got, step.want)
		}
	}
}

func TestReadFromSlave(t *testing.T) {
	e := newEnv(t, 3, false, func(c *Config) { c.ReadFromSlave = true })
	ctx := tctx(t)
	var clients []*redis.Client
	for i := 0; i < 6; i++ {
		clients = append(clients, e.client())
	}
	if err := clients[0].Set(ctx, "r", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The fakes do not replicate: a slave has no copy, so the value
	// read back shows where reads went; writes always reach the master.
	for _, c := range clients {
		for i := 0; i < 10; i++ {
			if err := c.Get(ctx, "r").Err(); err != nil && err != redis.Nil {
				t.Fatal(err)
			}
			if err := c.Set(ctx, "w", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var slaveReads int64
	for _, f := range e.fakes {
		slaveReads += f.slaveReads.Load()
	}
	if slaveReads == 0 {
		t.Fatal("no read went to a slave")
	}

	// Slaves the table marks behind their masters serve no reads.
	behind := e.p.Table().Clone()
	behind.Version++
	for _, row := range behind.Serving {
		for _, sl := range row[1:] {
			behind.SetBehind(row[0], sl, true)
		}
	}
	for _, f := range e.fakes {
		f.table.Store(behind)
		f.slaveReads.Store(0)
	}
	if err := e.p.SetTable(behind); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		for i := 0; i < 10; i++ {
			if err := c.Get(ctx, "r").Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range e.fakes {
		if n := f.slaveReads.Load(); n != 0 {
			t.Fatalf("%d reads went to a slave behind its master", n)
		}
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Two proxies that know each other share the slots in CLUSTER SLOTS, and
// a cluster client spreads its commands over both.
func TestClusterPeers(t *testing.T) {
	f := newFakeDS(t)
	tb := makeTable(1, 64, f.addr)
	f.table.Store(tb)
	a, b := freeAddr(t), freeAddr(t)
	var proxies []*Server
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		cfg := DefaultConfig()
		cfg.Listen, cfg.HTTP, cfg.Advertise, cfg.Peers = pair[0], "", pair[0], []string{pair[1]}
		p, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = p.SetTable(tb)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		proxies = append(proxies, p)
	}
	ctx := tctx(t)
	cl := redis.NewClient(&redis.Options{Addr: a})
	defer cl.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		slots, err := cl.ClusterSlots(ctx).Result()
		if err == nil && len(slots) == 2 {
			if slots[0].Start != 0 || slots[0].End != 8191 || slots[1].Start != 8192 || slots[1].End != 16383 {
				t.Fatalf("slots = %+v", slots)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CLUSTER SLOTS = %v, %v; want two proxies", slots, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a}})
	defer cc.Close()
	for i := 0; i < 100; i++ {
		if err := cc.Set(ctx, fmt.Sprint("peer", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range proxies {
		if n := p.m.stat("set").calls.Load(); n == 0 {
			t.Fatalf("proxy %d served no SET", i)
		}
	}
}
