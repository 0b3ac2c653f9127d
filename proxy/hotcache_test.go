package proxy

import (
	"context"
	"strings"
	"testing"
	"time"
)

// makeHot sends GETs of key until the hot-key detector has published it
// (its window is 1 s and a key needs 1000 requests/s and 1 % of all).
func makeHot(t *testing.T, e *env, key string) {
	t.Helper()
	ctx := context.Background()
	c := e.client()
	deadline := time.Now().Add(5 * time.Second)
	for !e.p.hot.IsHot(0, []byte(key)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never became hot", key)
		}
		pl := c.Pipeline()
		for i := 0; i < 500; i++ {
			pl.Get(ctx, key)
		}
		if _, err := pl.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// With --hot-cache-ttl a hot key's GETs are answered by the proxy; a
// write through the proxy is seen at once, a write elsewhere within the
// TTL.
func TestHotCacheServesHotKeys(t *testing.T) {
	const ttl = 700 * time.Millisecond
	e := newEnv(t, 1, false, func(c *Config) { c.HotCacheTTL = ttl })
	f := e.fakes[0]
	rc := e.raw()
	if got := rc.do("SET", "hk", "v1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	makeHot(t, e, "hk")
	// The first GET fills the cache, the next ones do not reach the
	// dataserver.
	if got := rc.do("GET", "hk"); got != "$2\r\nv1\r\n" {
		t.Fatalf("GET hk = %q", got)
	}
	before := f.calls.Load()
	for i := 0; i < 50; i++ {
		if got := rc.do("GET", "hk"); got != "$2\r\nv1\r\n" {
			t.Fatalf("cached GET hk = %q", got)
		}
	}
	if n := f.calls.Load() - before; n != 0 {
		t.Fatalf("%d GETs of a cached hot key reached the dataserver", n)
	}
	info := rc.do("INFO", "stats")
	if !strings.Contains(info, "hot_cache_keys:1\r\n") || strings.Contains(info, "hot_cache_hits:0\r\n") {
		t.Fatalf("INFO stats:\n%s", info)
	}
	// A write through this proxy: the next GET sees it.
	if got := rc.do("SET", "hk", "v2"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rc.do("GET", "hk"); got != "$2\r\nv2\r\n" {
		t.Fatalf("GET after SET through the proxy = %q", got)
	}
	// The GET after the SET refilled the cache (the key is still hot).
	if got := rc.do("GET", "hk"); got != "$2\r\nv2\r\n" {
		t.Fatalf("GET = %q", got)
	}
	// A write elsewhere (another proxy): stale until the TTL, not after.
	f.mu.Lock()
	f.data[f.key("0", []byte("hk"))] = []byte("v3")
	f.mu.Unlock()
	written := time.Now()
	if got := rc.do("GET", "hk"); got != "$2\r\nv2\r\n" {
		t.Fatalf("GET within the TTL = %q, want the cached v2", got)
	}
	for {
		got := rc.do("GET", "hk")
		if got == "$2\r\nv3\r\n" {
			break
		}
		if time.Since(written) > ttl+200*time.Millisecond {
			t.Fatalf("GET %v after a write elsewhere = %q (TTL %v)", time.Since(written), got, ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// DEL (a multi-key write, split per bucket) drops the entry at once too.
	_ = rc.do("GET", "hk")
	if got := rc.do("DEL", "hk"); got != ":1\r\n" {
		t.Fatalf("DEL = %q", got)
	}
	if got := rc.do("GET", "hk"); got != "$-1\r\n" {
		t.Fatalf("GET after DEL = %q", got)
	}
	// Another area is another key.
	if got := rc.do("SELECT", "3"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rc.do("GET", "hk"); got != "$-1\r\n" {
		t.Fatalf("GET hk in area 3 = %q", got)
	}
}

// The cache is off unless asked for: every GET of a hot key reaches the
// dataserver and INFO shows no cache.
func TestHotCacheOffByDefault(t *testing.T) {
	e := newEnv(t, 1, false)
	f := e.fakes[0]
	rc := e.raw()
	_ = rc.do("SET", "hk", "v1")
	makeHot(t, e, "hk")
	before := f.calls.Load()
	for i := 0; i < 20; i++ {
		if got := rc.do("GET", "hk"); got != "$2\r\nv1\r\n" {
			t.Fatal(got)
		}
	}
	if n := f.calls.Load() - before; n != 20 {
		t.Fatalf("%d of 20 GETs reached the dataserver", n)
	}
	if info := rc.do("INFO", "stats"); strings.Contains(info, "hot_cache") {
		t.Fatalf("INFO shows a cache that is off:\n%s", info)
	}
}
