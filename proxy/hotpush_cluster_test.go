package proxy_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/proxy"
)

// The hot-key cache across proxies, against real dataservers: a write
// through one proxy reaches every proxy's cached copy at once, pushed by
// the key's master. Every proxy caches for a minute, so a test that
// passes within its few hundred milliseconds proves the push, not the TTL.

const hotTTL = time.Minute

// pushWithin bounds how long another proxy may serve the old value.
const pushWithin = 300 * time.Millisecond

func hotCluster(t *testing.T, o cluster.Options) *testcluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	user := o.Proxy
	o.Proxy = func(i int, cfg *proxy.Config) {
		cfg.HotCacheTTL = hotTTL
		if user != nil {
			user(i, cfg)
		}
	}
	if o.Engine == "" {
		o.Engine = "mdb"
	}
	if o.Buckets == 0 {
		o.Buckets = 16
	}
	return testcluster.New(t, testcluster.Options{Options: o})
}

func infoStat(t *testing.T, cl *redis.Client, field string) int64 {
	t.Helper()
	info, err := cl.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("INFO stats has no %s:\n%s", field, info)
	return 0
}

// get reads key: its value, or "<nil>".
func get(t *testing.T, cl *redis.Client, key string) string {
	t.Helper()
	v, err := cl.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return "<nil>"
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

// cached hammers keys through cl until each is hot and its next GET is
// answered from the proxy's cache (hot_cache_hits rises) with its value
// in want.
func cached(t *testing.T, cl *redis.Client, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Second)
	for key, w := range want {
		for {
			if time.Now().After(deadline) {
				t.Fatalf("%s never served from the hot-key cache", key)
			}
			pl := cl.Pipeline()
			for i := 0; i < 600; i++ {
				for k := range want {
					pl.Get(ctx, k)
				}
			}
			if _, err := pl.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
			before := infoStat(t, cl, "hot_cache_hits")
			got := get(t, cl, key)
			if infoStat(t, cl, "hot_cache_hits") > before {
				if got != w {
					t.Fatalf("cached GET %s = %q, want %q", key, got, w)
				}
				break
			}
		}
	}
}

// eventually reads key through cl until it is want, within d of from.
func eventually(t *testing.T, cl *redis.Client, key, want string, from time.Time, d time.Duration, what string) {
	t.Helper()
	for {
		got := get(t, cl, key)
		if got == want {
			return
		}
		if time.Since(from) > d {
			t.Fatalf("%s: GET %s through the other proxy = %q %v later, want %q", what, key, got, time.Since(from).Round(time.Millisecond), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Every kind of write through proxy 0 reaches proxy 1's cached copy.
func TestHotCachePushAcrossProxies(t *testing.T) {
	c := hotCluster(t, cluster.Options{DataServers: 2, Copies: 2, Proxies: 2})
	ctx := context.Background()
	p0, p1 := c.Client(0), c.Client(1)
	const key = "hk"
	for _, w := range []struct {
		name  string
		write func() error
		want  string
	}{
		{"SET", func() error { return p0.Set(ctx, key, "set", 0).Err() }, "set"},
		{"APPEND", func() error { return p0.Append(ctx, key, "+app").Err() }, "base+app"},
		{"DEL", func() error { return p0.Del(ctx, key).Err() }, "<nil>"},
		{"EXPIRE 0", func() error { return p0.Do(ctx, "EXPIRE", key, 0).Err() }, "<nil>"},
		{"MULTI/EXEC", func() error {
			_, err := p0.TxPipelined(ctx, func(pl redis.Pipeliner) error {
				pl.Set(ctx, key, "multi", 0)
				pl.Incr(ctx, "{hk}n")
				return nil
			})
			return err
		}, "multi"},
		{"EVAL", func() error {
			return p0.Eval(ctx, "redis.call('SET', KEYS[1], ARGV[1]) return 1", []string{key}, "eval").Err()
		}, "eval"},
		{"FLUSHALL", func() error { return p0.FlushAll(ctx).Err() }, "<nil>"},
	} {
		if err := p0.Set(ctx, key, "base", 0).Err(); err != nil {
			t.Fatal(err)
		}
		cached(t, p1, map[string]string{key: "base"})
		cached(t, p0, map[string]string{key: "base"})
		inv := infoStat(t, p1, "hot_cache_invalidations") + infoStat(t, p1, "hot_cache_clears")
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		wrote := time.Now()
		eventually(t, p1, key, w.want, wrote, pushWithin, w.name)
		if got := get(t, p0, key); got != w.want {
			t.Fatalf("%s: GET through the writing proxy = %q, want %q", w.name, got, w.want)
		}
		if n := infoStat(t, p1, "hot_cache_invalidations") + infoStat(t, p1, "hot_cache_clears"); n == inv {
			t.Fatalf("%s: proxy 1 received no invalidation", w.name)
		}
	}
	var pushes int64
	for _, ds := range c.DataServers {
		_, p, _ := ds.TrackingStats()
		pushes += p
	}
	if pushes == 0 {
		t.Fatal("the dataservers pushed nothing")
	}
}

// A cached key's expiry is pushed too: proxy 1 holds the value until the
// key expires on its master, and not after.
func TestHotCachePushesExpiry(t *testing.T) {
	c := hotCluster(t, cluster.Options{DataServers: 2, Copies: 2, Proxies: 2})
	ctx := context.Background()
	p0, p1 := c.Client(0), c.Client(1)
	if err := p0.Set(ctx, "hk", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cached(t, p1, map[string]string{"hk": "v"})
	const life = 2500 * time.Millisecond
	if err := p0.PExpire(ctx, "hk", life).Err(); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	// The EXPIRE is a write: pushed; the next fill registers the key
	// with its expiry.
	cached(t, p1, map[string]string{"hk": "v"})
	if time.Since(set) > life-300*time.Millisecond {
		t.Skipf("refilling took %v, too close to the expiry to tell", time.Since(set))
	}
	eventually(t, p1, "hk", "<nil>", set, life+pushWithin, "expiry")
	if time.Since(set) < life-50*time.Millisecond {
		t.Fatalf("hk gone %v after PEXPIRE %v", time.Since(set), life)
	}
}

// A failover: the key's master stops, its slave takes over and takes a
// write through proxy 0; proxy 1, which cached the key from the old
// master, serves the new value.
func TestHotCacheFailover(t *testing.T) {
	c := hotCluster(t, cluster.Options{DataServers: 2, Copies: 2, Proxies: 2})
	ctx := context.Background()
	p0, p1 := c.Client(0), c.Client(1)
	if err := p0.Set(ctx, "hk", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cached(t, p1, map[string]string{"hk": "v1"})
	tb := c.Table()
	master := tb.Master(tb.Bucket([]byte("hk")))
	stopped := -1
	for i, ds := range c.DataServers {
		if ds != nil && ds.Addr() == master {
			stopped = i
		}
	}
	if stopped < 0 {
		t.Fatalf("no dataserver at %s", master)
	}
	if err := c.StopDataServer(stopped); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := p0.Set(ctx, "hk", "v2", 0).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SET after the failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	eventually(t, p1, "hk", "v2", time.Now(), pushWithin, "after the failover")
	// And the new master's pushes work: cached again, written again.
	cached(t, p1, map[string]string{"hk": "v2"})
	if err := p0.Set(ctx, "hk", "v3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, p1, "hk", "v3", time.Now(), pushWithin, "a write on the new master")
}

// The tracking table's cap: with room for 2 keys, 3 hot keys cached by
// proxy 1 keep at most 2 tracked, the others' registrations dropped by
// pushing their invalidation, so no copy goes stale.
func TestHotCacheTrackingCap(t *testing.T) {
	c := hotCluster(t, cluster.Options{DataServers: 1, Copies: 1, Proxies: 2,
		DataServer: func(i int, cfg *dataserver.Config) { cfg.TrackingMaxKeys = 2 }})
	ctx := context.Background()
	p0, p1 := c.Client(0), c.Client(1)
	keys := map[string]string{"k1": "a1", "k2": "a2", "k3": "a3"}
	for k, v := range keys {
		if err := p0.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cached(t, p1, keys)
	ds := c.DataServers[0]
	tracked, _, evicted := ds.TrackingStats()
	if tracked > 2 || evicted == 0 {
		t.Fatalf("tracking %d keys with room for 2, %d evicted", tracked, evicted)
	}
	for k := range keys {
		if err := p0.Set(ctx, k, "b"+k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wrote := time.Now()
	for k := range keys {
		eventually(t, p1, k, "b"+k, wrote, pushWithin, "capped table")
	}
}

// Evictions: the engine names no key it evicts, so any eviction on a node
// drops every registration there (invalidate-all); proxy 1 never serves a
// value its master evicted.
func TestHotCacheEvictionClears(t *testing.T) {
	c := hotCluster(t, cluster.Options{DataServers: 1, Copies: 1, Proxies: 2,
		DataServer: func(i int, cfg *dataserver.Config) { cfg.MemoryLimit = 4 << 20 }})
	ctx := context.Background()
	p0, p1 := c.Client(0), c.Client(1)
	if err := p0.Set(ctx, "hk", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cached(t, p1, map[string]string{"hk": "v"})
	clears := infoStat(t, p1, "hot_cache_clears")
	// Fill the node past its memory limit.
	val := strings.Repeat("x", 200)
	for i := 0; i < 200; i++ {
		pl := p0.Pipeline()
		for j := 0; j < 200; j++ {
			pl.Set(ctx, "fill:"+strconv.Itoa(i*200+j), val, 0)
		}
		if _, err := pl.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var evicted int64
	for _, st := range c.DataServers[0].Engine().AllStats() {
		evicted += st.Evictions
	}
	if evicted == 0 {
		t.Fatal("nothing evicted: the test filled too little")
	}
	deadline := time.Now().Add(2 * time.Second)
	for infoStat(t, p1, "hot_cache_clears") == clears {
		if time.Now().After(deadline) {
			t.Fatal("evictions on the node did not clear proxy 1's cache")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// What proxy 1 answers is the node's value (or its absence).
	want := get(t, p0, "hk")
	if got := get(t, p1, "hk"); got != want {
		t.Fatalf("GET hk through proxy 1 = %q, the node has %q", got, want)
	}
}

// Buckets moved away (a third dataserver joins and takes some): the keys'
// new masters have no registrations; their old masters, still in the
// table with their links up, pushed for the keys they no longer master,
// and the proxies dropped what they cached of buckets whose master
// changed. Proxy 1 serves the writes made on the new masters.
func TestHotCacheBucketMoved(t *testing.T) {
	c := hotCluster(t, cluster.Options{DataServers: 2, Copies: 1, Proxies: 2, Buckets: 8})
	ctx := context.Background()
	p0, p1 := c.Client(0), c.Client(1)
	tb := c.Table()
	keys := map[string]string{}
	byBucket := map[uint32]bool{}
	for i := 0; len(byBucket) < int(tb.Buckets); i++ {
		k := "hk:" + strconv.Itoa(i)
		if b := uint32(tb.Bucket([]byte(k))); !byBucket[b] {
			byBucket[b] = true
			keys[k] = "v1"
		}
	}
	for k, v := range keys {
		if err := p0.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cached(t, p1, keys)
	old := map[string]string{}
	for k := range keys {
		old[k] = tb.Master(tb.Bucket([]byte(k)))
	}
	if _, err := c.StartDataServer(2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		tb = c.Table()
		if len(tb.Nodes()) == 3 && len(tb.Migrating) == 0 &&
			c.Proxies[0].TableVersion() == tb.Version && c.Proxies[1].TableVersion() == tb.Version {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table never settled: %d nodes, %d moves", len(tb.Nodes()), len(tb.Migrating))
		}
		time.Sleep(50 * time.Millisecond)
	}
	moved := 0
	for k := range keys {
		if m := tb.Master(tb.Bucket([]byte(k))); m != old[k] {
			moved++
			if !slices.Contains(tb.Nodes(), old[k]) {
				t.Fatalf("%s's old master %s left the table", k, old[k])
			}
		}
	}
	if moved == 0 {
		t.Fatal("no bucket moved to the new node")
	}
	for k := range keys {
		if err := p0.Set(ctx, k, "v2", 0).Err(); err != nil {
			t.Fatal(err)
		}
		eventually(t, p1, k, "v2", time.Now(), pushWithin, "after the move ("+k+")")
	}
	t.Logf("%d of %d keys' buckets moved", moved, len(keys))
}
