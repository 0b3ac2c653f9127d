package proxy

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hotCached fills the hot-key cache with key's value and checks that the
// next GETs are answered from it (no call reaches the fake).
func hotCached(t *testing.T, e *env, rc *rawConn, key, want string) {
	t.Helper()
	makeHot(t, e, key)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_ = rc.do("GET", key) // fills, once the link is up
		before := callsOf(e)
		got := rc.do("GET", key)
		if got != want {
			t.Fatalf("GET %s = %q, want %q", key, got, want)
		}
		if callsOf(e) == before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never served from the hot-key cache", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func callsOf(e *env) int64 {
	var n int64
	for _, f := range e.fakes {
		n += f.calls.Load()
	}
	return n
}

// pollGET asks for key until it reads want, within d.
func pollGET(t *testing.T, rc *rawConn, key, want string, d time.Duration, what string) {
	t.Helper()
	start := time.Now()
	for {
		got := rc.do("GET", key)
		if got == want {
			return
		}
		if time.Since(start) > d {
			t.Fatalf("%s: GET %s = %q %v later, want %q", what, key, got, time.Since(start), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A dropped invalidation link clears the cache: pushes may have been
// missed while it was down. (The TTL is a minute: a pass is the clear.)
func TestHotCacheLinkDropClears(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.HotCacheTTL = time.Minute })
	f := e.fakes[0]
	rc := e.raw()
	if got := rc.do("SET", "hk", "v1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	hotCached(t, e, rc, "hk", "$2\r\nv1\r\n")
	// A write the proxy does not see, and whose push is lost.
	f.mu.Lock()
	f.data[f.key("0", []byte("hk"))] = []byte("v2")
	f.mu.Unlock()
	if got := rc.do("GET", "hk"); got != "$2\r\nv1\r\n" {
		t.Fatalf("GET before the drop = %q, want the cached v1", got)
	}
	if n := f.dropTracking(); n != 1 {
		t.Fatalf("%d invalidation links to the dataserver, want 1", n)
	}
	pollGET(t, rc, "hk", "$2\r\nv2\r\n", 300*time.Millisecond, "after the link dropped")
	if info := rc.do("INFO", "stats"); !strings.Contains(info, "hot_cache_clears:") || strings.Contains(info, "hot_cache_clears:0\r\n") {
		t.Fatalf("INFO stats after a dropped link:\n%s", info)
	}
	// The link comes back, and the cache serves again.
	hotCached(t, e, rc, "hk", "$2\r\nv2\r\n")
}

// No link, no cache: a GET of a hot key is not cached from a dataserver
// whose pushes could not reach the proxy.
func TestHotCacheNeedsTheLink(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.HotCacheTTL = time.Minute })
	rc := e.raw()
	_ = rc.do("SET", "hk", "v1")
	makeHot(t, e, "hk")
	for _, n := range e.p.r.allNodes() {
		n.trackUp.Store(false) // as while the link is down
	}
	e.p.hotCache.Clear()
	before := callsOf(e)
	for i := 0; i < 20; i++ {
		if got := rc.do("GET", "hk"); got != "$2\r\nv1\r\n" {
			t.Fatal(got)
		}
	}
	if n := callsOf(e) - before; n != 20 {
		t.Fatalf("%d of 20 GETs reached the dataserver without a link", n)
	}
}

// A table that gives the key's bucket another master clears the cache:
// the new master has no registrations and would push nothing.
func TestHotCacheMasterChangeClears(t *testing.T) {
	e := newEnv(t, 2, false, func(c *Config) { c.HotCacheTTL = time.Minute })
	rc := e.raw()
	if got := rc.do("SET", "hk", "v1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	hotCached(t, e, rc, "hk", "$2\r\nv1\r\n")
	b := e.table.Bucket([]byte("hk"))
	old := e.table.Master(b)
	var next *fakeDS
	for _, f := range e.fakes {
		if f.addr != old {
			next = f
		}
	}
	// The new master has the key's newer value (written there after a
	// failover, say).
	next.mu.Lock()
	next.data[next.key("0", []byte("hk"))] = []byte("v2")
	next.mu.Unlock()
	t2 := makeTable(e.table.Version+1, e.table.Buckets, e.fakes[1].addr, e.fakes[0].addr)
	if t2.Master(b) != next.addr {
		t.Fatalf("the new table keeps %s as the master of bucket %d", t2.Master(b), b)
	}
	for _, f := range e.fakes {
		f.table.Store(t2)
	}
	if err := e.p.SetTable(t2); err != nil {
		t.Fatal(err)
	}
	if got := rc.do("GET", "hk"); got != "$2\r\nv2\r\n" {
		t.Fatalf("GET after the master changed = %q, want v2", got)
	}
}

// A table that gives one bucket another master drops only that bucket's
// cached keys: a hot key of a bucket whose master stays is still served
// from the cache (its master's pushes still come).
func TestHotCacheMasterChangeKeepsOtherBuckets(t *testing.T) {
	e := newEnv(t, 2, false, func(c *Config) { c.HotCacheTTL = time.Minute })
	rc := e.raw()
	moved, kept := "hk", ""
	b := e.table.Bucket([]byte(moved))
	for i := 0; kept == ""; i++ {
		if k := fmt.Sprintf("other%d", i); e.table.Bucket([]byte(k)) != b {
			kept = k
		}
	}
	for _, k := range []string{moved, kept} {
		if got := rc.do("SET", k, "v1"); got != "+OK\r\n" {
			t.Fatal(got)
		}
		hotCached(t, e, rc, k, "$2\r\nv1\r\n")
	}
	t2 := e.table.Clone()
	t2.Version++
	row := t2.Serving[b]
	t2.Serving[b] = []string{row[1], row[0]} // bucket b's master changes, no other
	for _, f := range e.fakes {
		f.table.Store(t2)
	}
	if err := e.p.SetTable(t2); err != nil {
		t.Fatal(err)
	}
	before := callsOf(e)
	if got := rc.do("GET", kept); got != "$2\r\nv1\r\n" {
		t.Fatalf("GET %s = %q", kept, got)
	}
	if n := callsOf(e) - before; n != 0 {
		t.Fatalf("a hot key of a bucket whose master stayed left the cache: %d dataserver calls", n)
	}
	if _, ok := e.p.hotCache.Get(0, []byte(moved)); ok {
		t.Fatalf("%s, of the bucket whose master changed, is still cached", moved)
	}
}

// The race of a fill with a write elsewhere: the fill reads the old value,
// the write's invalidation reaches the proxy before the fill's reply.
// The old value must not be cached (hotkey.Cache's sequence).
func TestHotCacheInvalidationBeforeFillReply(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) { c.HotCacheTTL = time.Minute })
	f := e.fakes[0]
	rc := e.raw()
	if got := rc.do("SET", "hk", "v1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	hotCached(t, e, rc, "hk", "$2\r\nv1\r\n")
	// Drop the cached copy (a pushed invalidation), so that the next GET
	// fills.
	invalidate := []byte("*3\r\n$10\r\ninvalidate\r\n$1\r\n0\r\n$2\r\nhk\r\n")
	if n := f.push(invalidate); n != 1 {
		t.Fatalf("%d links", n)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(rc.do("INFO", "stats"), "hot_cache_keys:0\r\n") {
		if time.Now().After(deadline) {
			t.Fatal("the pushed invalidation did not drop the key")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var raced atomic.Bool
	hook := func(args [][]byte) {
		if len(args) < 6 || !strings.EqualFold(string(args[4]), "GET") || !strings.Contains(string(args[3]), "t") || raced.Swap(true) {
			return
		}
		// The fill has read v1; a write elsewhere changes the key and its
		// invalidation arrives first.
		f.mu.Lock()
		f.data[f.key("0", []byte("hk"))] = []byte("v2")
		f.mu.Unlock()
		f.push(invalidate)
		time.Sleep(50 * time.Millisecond)
	}
	f.beforeReply.Store(&hook)
	if got := rc.do("GET", "hk"); got != "$2\r\nv1\r\n" {
		t.Fatalf("the raced fill = %q, want v1 (read before the write)", got)
	}
	if !raced.Load() {
		t.Fatal("the GET was not a fill")
	}
	f.beforeReply.Store(nil)
	if got := rc.do("GET", "hk"); got != "$2\r\nv2\r\n" {
		t.Fatalf("GET after the raced fill = %q, want v2: the fill cached a value its invalidation had already dropped", got)
	}
}
