package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
)

// loopForwarded is the proxy's count of commands forwarded on its event
// loops' pipelined connections (INFO's proxy_loop_forwarded).
func loopForwarded(t *testing.T, cl *redis.Client) int64 {
	t.Helper()
	info, err := cl.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "proxy_loop_forwarded:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no proxy_loop_forwarded in INFO:\n%s", info)
	return 0
}

// EVALSHA with keys takes the proxy's pipelined connections once the
// node has run the script (every call of a warm script is forwarded on
// the loop); a script that runs long is sent back to a script
// connection and answers the same, its writes made once.
func TestScriptPipelinedThroughProxy(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2, Buckets: 16}})
	cl := scriptClient(t, c.Proxies[0].Addr())
	incr := "local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1 redis.call('SET', KEYS[1], v) return v"
	sha, err := cl.ScriptLoad(ctx, incr).Result()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := cl.EvalSha(ctx, sha, []string{"{p}k"}).Result(); err != nil || v != int64(1) {
		t.Fatalf("first EVALSHA: %v %v", v, err)
	}
	time.Sleep(1100 * time.Millisecond) // past the proxy's scriptOffFor
	before := loopForwarded(t, cl)
	for i := 2; i <= 41; i++ {
		if v, err := cl.EvalSha(ctx, sha, []string{"{p}k"}).Result(); err != nil || v != int64(i) {
			t.Fatalf("EVALSHA %d: %v %v", i, v, err)
		}
	}
	if n := loopForwarded(t, cl) - before; n != 40 {
		t.Fatalf("%d of 40 EVALSHAs of a warm script were forwarded on the loop", n)
	}

	// Long scripts: the same replies and one write each, whichever
	// connection ran them.
	late := "local x = 0 for i = 1, 3e6 do x = x + 1 end return redis.call('INCR', KEYS[1])"
	lateSha, err := cl.ScriptLoad(ctx, late).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if v, err := cl.EvalSha(ctx, lateSha, []string{"{p}n"}).Result(); err != nil || v != int64(i) {
			t.Fatalf("long EVALSHA %d: %v %v", i, v, err)
		}
		time.Sleep(1100 * time.Millisecond)
	}
	if v, err := cl.Get(ctx, "{p}n").Result(); err != nil || v != fmt.Sprint(3) {
		t.Fatalf("GET after the long scripts: %q %v", v, err)
	}
}
