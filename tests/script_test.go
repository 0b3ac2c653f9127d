package tests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/internal/luascript"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
)

// keysInBuckets returns n keys of n different buckets (of q).
func keysInBuckets(n int, q uint32) []string {
	seen := map[route.BucketID]bool{}
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("key%d", i)
		if b := route.BucketOf([]byte(k), q); !seen[b] {
			seen[b] = true
			out = append(out, k)
		}
	}
	return out
}

func scriptClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { cl.Close() })
	return cl
}

func wantErr(t *testing.T, err error, prefix string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("error %v, want %q...", err, prefix)
	}
}

// Scripts through two proxies over two dataservers: a script loaded or
// EVAL'd through one runs by sha through the other on any node; keys of
// several buckets are CROSSSLOT; a key of another bucket inside the
// script is Redis Cluster's non local key error.
func TestScriptAcrossProxies(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 1, Proxies: 2, Buckets: 64}})
	p0, p1 := scriptClient(t, c.Proxies[0].Addr()), scriptClient(t, c.Proxies[1].Addr())
	keys := keysInBuckets(8, 64)

	sha, err := p0.ScriptLoad(ctx, "return redis.call('set', KEYS[1], ARGV[1])").Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if v, err := p1.EvalSha(ctx, sha, []string{k}, fmt.Sprint(i)).Result(); err != nil || v != "OK" {
			t.Fatalf("EVALSHA %s: %v %v", k, v, err)
		}
		if v, err := p0.Get(ctx, k).Result(); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("GET %s: %q %v", k, v, err)
		}
	}
	body := "return {KEYS[1], redis.call('get', KEYS[1]), ARGV[1]}"
	if v, err := p1.Eval(ctx, body, []string{keys[3]}, "a").Result(); err != nil || fmt.Sprint(v) != fmt.Sprintf("[%s 3 a]", keys[3]) {
		t.Fatalf("EVAL: %v %v", v, err)
	}
	for _, k := range keys {
		v, err := p0.EvalSha(ctx, sha1hex(body), []string{k}, "b").Result()
		if err != nil {
			t.Fatalf("EVALSHA of an EVAL'd script on %s: %v", k, err)
		}
		if fmt.Sprint(v.([]any)[0]) != k {
			t.Fatalf("EVALSHA on %s: %v", k, v)
		}
	}
	ex, err := p1.ScriptExists(ctx, sha, sha1hex(body), "0000000000000000000000000000000000000000").Result()
	if err != nil || fmt.Sprint(ex) != "[true true false]" {
		t.Fatalf("SCRIPT EXISTS: %v %v", ex, err)
	}
	_, err = p0.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Result()
	wantErr(t, err, "NOSCRIPT No matching script. Please use EVAL.")
	_, err = p0.Eval(ctx, "return 1", []string{keys[0], keys[1]}).Result()
	wantErr(t, err, "CROSSSLOT Keys in request don't hash to the same slot")
	_, err = p0.Eval(ctx, "return redis.call('get', ARGV[1])", []string{keys[0]}, keys[1]).Result()
	wantErr(t, err, "ERR Script attempted to access a non local key in a cluster node script: ")
	_, err = p0.EvalRO(ctx, "return redis.call('set', KEYS[1], 'x')", []string{keys[0]}).Result()
	wantErr(t, err, "ERR Write commands are not allowed from read-only scripts. script: ")
	_, err = p0.Eval(ctx, "return redis.call('publish', 'ch', 'm')", nil).Result()
	wantErr(t, err, "ERR 'publish' is not supported in scripts by this cluster script: ")
	_, err = p0.Eval(ctx, "return redis.call('dbsize')", nil).Result()
	wantErr(t, err, "ERR 'dbsize' is not supported in scripts by this cluster script: ")
	if v, err := p0.Eval(ctx, "return #redis.call('time')", nil).Result(); err != nil || v != int64(2) {
		t.Fatalf("TIME in a script: %v %v", v, err)
	}
	conn := p0.Conn()
	defer conn.Close()
	if err := conn.Do(ctx, "MULTI").Err(); err != nil {
		t.Fatal(err)
	}
	// Inside MULTI a script's keys join the transaction's bucket: one of
	// another bucket is CROSSSLOT when queued, and EXEC aborts.
	if err := conn.Do(ctx, "SET", keys[1], "x").Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, conn.Do(ctx, "EVAL", "return 1", "1", keys[0]).Err(), "CROSSSLOT Keys in request don't hash to the same slot")
	wantErr(t, conn.Do(ctx, "EXEC").Err(), "EXECABORT Transaction discarded because of previous errors.")
	if v, err := p1.Eval(ctx, "return 7", nil).Result(); err != nil || v != int64(7) {
		t.Fatalf("keyless EVAL: %v %v", v, err)
	}
	_, err = p1.Do(ctx, "EVAL", "return 1", "2", "a").Result()
	wantErr(t, err, "ERR Number of keys can't be greater than number of args")
	_, err = p1.Do(ctx, "EVAL", "return 1", "-1").Result()
	wantErr(t, err, "ERR Number of keys can't be negative")

	if err := p1.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ex, err = p0.ScriptExists(ctx, sha).Result()
	if err != nil || ex[0] {
		t.Fatalf("SCRIPT EXISTS after FLUSH: %v %v", ex, err)
	}
	_, err = p0.EvalSha(ctx, sha, []string{keys[2]}, "x").Result()
	wantErr(t, err, "NOSCRIPT")

	// Functions: loaded through one proxy, called through the other.
	lib := "#!lua name=mylib\nredis.register_function('myset', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n" +
		"redis.register_function{function_name='myget', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
	if v, err := p0.FunctionLoad(ctx, lib).Result(); err != nil || v != "mylib" {
		t.Fatalf("FUNCTION LOAD: %v %v", v, err)
	}
	for _, k := range keys {
		if err := p1.FCall(ctx, "myset", []string{k}, "f").Err(); err != nil {
			t.Fatalf("FCALL on %s: %v", k, err)
		}
		if v, err := p0.FCallRO(ctx, "myget", []string{k}).Result(); err != nil || v != "f" {
			t.Fatalf("FCALL_RO on %s: %v %v", k, v, err)
		}
	}
	_, err = p1.FCallRO(ctx, "myset", []string{keys[0]}, "x").Result()
	wantErr(t, err, "ERR Can not execute a script with write flag using *_ro command.")
	_, err = p1.FunctionLoad(ctx, lib).Result()
	wantErr(t, err, "ERR Library 'mylib' already exists")
	if err := p1.FunctionDelete(ctx, "mylib").Err(); err != nil {
		t.Fatal(err)
	}
	_, err = p0.FCall(ctx, "myset", []string{keys[1]}, "x").Result()
	wantErr(t, err, "ERR Function not found")
}

func sha1hex(s string) string { return luascript.Sha1Hex([]byte(s)) }

// A dataserver that joins after SCRIPT LOAD runs the script by sha.
func TestScriptOnLaterDataServer(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Buckets: 64}})
	cl := scriptClient(t, c.Proxies[0].Addr())
	sha, err := cl.ScriptLoad(ctx, "return redis.call('incr', KEYS[1])").Result()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.StartDataServer(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitTable(2, time.Minute); err != nil {
		t.Fatal(err)
	}
	tb, err := c.Cluster.Table(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, k := range keysInBuckets(64, 64) {
		if tb.Master(route.BucketOf([]byte(k), 64)) != ds.Addr() {
			continue
		}
		if v, err := cl.EvalSha(ctx, sha, []string{k}).Result(); err != nil || v != int64(1) {
			t.Fatalf("EVALSHA on the new node (%s): %v %v", k, v, err)
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("the new dataserver masters no bucket")
	}
}

// A script past busy-reply-threshold makes its bucket's requests answer
// BUSY; SCRIPT KILL through the proxy stops it while it wrote nothing,
// answers UNKILLABLE once it wrote, NOTBUSY when none runs.
func TestScriptBusyAndKill(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Buckets: 64,
		DataServer: func(_ int, cfg *dataserver.Config) {
			cfg.BusyReplyThreshold = 300 * time.Millisecond
			// A script holding its bucket's lock past the stall timeout
			// makes the node unhealthy: keep it well above the scripts
			// here, which the race detector slows down.
			cfg.StallTimeout = time.Minute
		}}})
	a, b := scriptClient(t, c.Proxies[0].Addr()), scriptClient(t, c.Proxies[0].Addr())
	wantErr(t, b.ScriptKill(ctx).Err(), "NOTBUSY No scripts in execution right now.")

	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = a.Eval(ctx, "while true do end", []string{"k"}).Err()
	}()
	time.Sleep(800 * time.Millisecond)
	wantErr(t, b.Get(ctx, "k").Err(), "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	if err := b.ScriptKill(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT KILL: %v", err)
	}
	wg.Wait()
	wantErr(t, runErr, "ERR Script killed by user with SCRIPT KILL... script: ")
	if err := b.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("after the kill: %v", err)
	}

	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = a.Eval(ctx, "redis.call('set', KEYS[1], 'w') local x = 0 for i = 1, 1e7 do x = x + 1 end return x", []string{"k"}).Err()
	}()
	time.Sleep(300 * time.Millisecond)
	wantErr(t, b.ScriptKill(ctx).Err(), "UNKILLABLE Sorry the script already executed write commands against the dataset.")
	wg.Wait()
	if runErr != nil {
		t.Fatalf("the unkillable script: %v", runErr)
	}
	if v, err := b.Get(ctx, "k").Result(); err != nil || v != "w" {
		t.Fatalf("GET after it: %q %v", v, err)
	}
}

// A script's random writes reach the slave as their effects: after the
// master is stopped, the promoted slave serves the same values.
func TestScriptWritesSurviveFailover(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2, Buckets: 16}})
	cl := scriptClient(t, c.Proxies[0].Addr())
	body := "for i = 1, 20 do redis.call('set', KEYS[1] .. i, math.random()) redis.call('rpush', KEYS[2], math.random(1000000)) end " +
		"redis.call('set', KEYS[1] .. 'ttl', 'v', 'EX', 1000) return redis.call('llen', KEYS[2])"
	if v, err := cl.Eval(ctx, body, []string{"{t}s", "{t}l"}).Result(); err != nil || v != int64(20) {
		t.Fatalf("EVAL: %v %v", v, err)
	}
	before := map[string]string{}
	for i := 1; i <= 20; i++ {
		k := fmt.Sprintf("{t}s%d", i)
		before[k] = cl.Get(ctx, k).Val()
	}
	list := cl.LRange(ctx, "{t}l", 0, -1).Val()
	stopMasterAndWait(t, c, cl, "{t}s1")
	for k, v := range before {
		if got := cl.Get(ctx, k).Val(); got != v {
			t.Fatalf("%s after failover: %q, before %q", k, got, v)
		}
	}
	if got := cl.LRange(ctx, "{t}l", 0, -1).Val(); fmt.Sprint(got) != fmt.Sprint(list) {
		t.Fatalf("list after failover: %v, before %v", got, list)
	}
	if ttl := cl.TTL(ctx, "{t}sttl").Val(); ttl <= 0 || ttl > 1000*time.Second {
		t.Fatalf("TTL after failover: %v", ttl)
	}
}

// stopMasterAndWait stops the dataserver that masters key's bucket and
// waits, up to a minute, until key is served again (by the slave
// promoted in its place); the caller compares the values.
func stopMasterAndWait(t *testing.T, c *testcluster.Cluster, cl *redis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	tb, err := c.Cluster.Table(ctx)
	if err != nil {
		t.Fatal(err)
	}
	master := tb.Master(route.BucketOf([]byte(key), tb.Buckets))
	for i, ds := range c.DataServers {
		if ds != nil && ds.Addr() == master {
			if err := c.StopDataServer(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cl.Get(ctx, key).Result()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
