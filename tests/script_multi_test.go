package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
)

// Scripts inside MULTI over two dataservers and two proxies (the
// replies themselves are compared with redis-server in
// testdata/redis-compare.txt): in every bucket the script runs at its
// place in the transaction, on the transaction's master; keyless
// scripts run on the transaction's bucket, so a key of another bucket is
// refused inside them; a transaction of keyless scripts alone runs
// where the first would alone; a PUBLISH inside MULTI reaches a
// subscriber on the other proxy at EXEC; SUBSCRIBE inside MULTI is
// refused.
func TestScriptInsideMulti(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 1, Proxies: 2, Buckets: 64}})
	p0, p1 := scriptClient(t, c.Proxies[0].Addr()), scriptClient(t, c.Proxies[1].Addr())
	keys := keysInBuckets(8, 64)
	incr := "return redis.call('incr', KEYS[1])"
	for i, k := range keys {
		cmds, err := p0.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, k, i, 0)
			pipe.Eval(ctx, incr, []string{k})
			pipe.Do(ctx, "EVAL", "return redis.call('incrby', ARGV[1], 10)", "0", k)
			pipe.EvalSha(ctx, sha1hex(incr), []string{k})
			pipe.Get(ctx, k)
			return nil
		})
		if err != nil {
			t.Fatalf("transaction on %s: %v", k, err)
		}
		want := fmt.Sprint([]string{"OK", fmt.Sprint(i + 1), fmt.Sprint(i + 11), fmt.Sprint(i + 12), fmt.Sprint(i + 12)})
		var got []string
		for _, cmd := range cmds {
			switch v := cmd.(type) {
			case *redis.StatusCmd:
				got = append(got, v.Val())
			case *redis.Cmd:
				got = append(got, fmt.Sprint(v.Val()))
			case *redis.StringCmd:
				got = append(got, v.Val())
			}
		}
		if fmt.Sprint(got) != want {
			t.Fatalf("transaction on %s: %v, want %v", k, got, want)
		}
	}

	// A keyless script reaching out of the transaction's bucket.
	conn := p1.Conn()
	defer conn.Close()
	do := func(args ...any) *redis.Cmd { return conn.Do(ctx, args...) }
	for _, args := range [][]any{{"MULTI"}, {"GET", keys[0]}, {"EVAL", "return redis.call('get', ARGV[1])", "0", keys[1]}} {
		if err := do(args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	v, err := do("EXEC").Slice()
	if err != nil || len(v) != 2 || v[0] != "12" { // keys[0]: 0 + 12 above
		t.Fatalf("EXEC: %v %v", v, err)
	}
	if e, ok := v[1].(error); !ok || e.Error() != "ERR Script attempted to access a non local key in a cluster node script: "+sha1hex("return redis.call('get', ARGV[1])")+", on @user_script:1." {
		t.Fatalf("a non-local key inside a keyless script: %v", v[1])
	}

	// Keyless scripts alone: on the first script's bucket, whose key it
	// may then touch.
	body := "return redis.call('set', ARGV[1], 'k')"
	own := keyOfBucket(route.BucketOf([]byte(sha1hex(body)), 64))
	for _, args := range [][]any{{"MULTI"}, {"EVAL", body, "0", own}, {"ECHO", "e"}} {
		if err := do(args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if v, err := do("EXEC").Slice(); err != nil || fmt.Sprint(v) != "[OK e]" {
		t.Fatalf("EXEC of a keyless script: %v %v", v, err)
	}
	if v, err := p0.Get(ctx, own).Result(); err != nil || v != "k" {
		t.Fatalf("GET %s: %q %v", own, v, err)
	}

	// PUBLISH inside MULTI: delivered at EXEC, to the other proxy too.
	sub := p0.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]any{{"MULTI"}, {"PUBLISH", "news", "m1"}, {"SET", keys[2], "x"}} {
		if err := do(args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	select {
	case m := <-sub.Channel():
		t.Fatalf("published before EXEC: %v", m)
	case <-time.After(200 * time.Millisecond):
	}
	if v, err := do("EXEC").Slice(); err != nil || fmt.Sprint(v) != "[1 OK]" {
		t.Fatalf("EXEC with PUBLISH: %v %v", v, err)
	}
	select {
	case m := <-sub.Channel():
		if m.Channel != "news" || m.Payload != "m1" {
			t.Fatalf("message: %v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no message after EXEC")
	}

	// SUBSCRIBE and the like inside MULTI are refused, and EXEC aborts.
	if err := do("MULTI").Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE"} {
		wantErr(t, do(name, "ch").Err(), "ERR "+strings.ToLower(name)+" is not supported inside MULTI by this cluster")
	}
	wantErr(t, do("SCRIPT", "LOAD", "return 1").Err(), "ERR script is not supported inside MULTI by this cluster")
	wantErr(t, do("EXEC").Err(), "EXECABORT Transaction discarded because of previous errors.")
}

// keyOfBucket is a key of bucket b (of 64).
func keyOfBucket(b route.BucketID) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("k%d", i); route.BucketOf([]byte(k), 64) == b {
			return k
		}
	}
}

// A transaction's script writes reach the slave with the transaction's:
// after the master is stopped, the promoted slave serves them.
func TestScriptInsideMultiSurvivesFailover(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2, Buckets: 16}})
	cl := scriptClient(t, c.Proxies[0].Addr())
	body := "for i = 1, 10 do redis.call('set', KEYS[1] .. i, math.random()) end return redis.call('rpush', KEYS[2], math.random(1000000))"
	if _, err := cl.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "{t}a", "before", 0)
		pipe.Eval(ctx, body, []string{"{t}s", "{t}l"})
		pipe.Append(ctx, "{t}a", "-after")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{"{t}a": "before-after"}
	for i := 1; i <= 10; i++ {
		k := fmt.Sprintf("{t}s%d", i)
		before[k] = cl.Get(ctx, k).Val()
	}
	list := fmt.Sprint(cl.LRange(ctx, "{t}l", 0, -1).Val())
	stopMasterAndWait(t, c, cl, "{t}a")
	for k, v := range before {
		if got := cl.Get(ctx, k).Val(); got != v {
			t.Fatalf("%s after failover: %q, before %q", k, got, v)
		}
	}
	if got := fmt.Sprint(cl.LRange(ctx, "{t}l", 0, -1).Val()); got != list {
		t.Fatalf("list after failover: %v, before %v", got, list)
	}
}
