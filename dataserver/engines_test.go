package dataserver

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	_ "github.com/tairkv/tair/engines/ldb"
	_ "github.com/tairkv/tair/engines/mdb"
)

// Every engine replicates and migrates every kind of record unchanged:
// strings with versions and expiry, data structures, prefix keys, items,
// hidden keys. Reads on the slave and, after a move, on the new master
// answer exactly what the old master answered.
func TestEnginesReplicateAndMove(t *testing.T) {
	for _, eng := range []string{"rdb", "mdb", "ldb"} {
		t.Run(eng, func(t *testing.T) {
			cs := newFakeCS(t)
			nodes := startEngineNodes(t, cs, eng, 3)
			a, b, c := nodes[0], nodes[1], nodes[2]
			t1 := ringTable(1, q, 2, a.Addr(), b.Addr())
			cs.setTable(t1)
			waitVersion(t, 1, nodes...)
			k := func(name string) string { return keyIn(name, 0, q, 0) }
			exp := time.Now().Add(time.Hour).Unix()
			writes := [][]string{
				{"SET", k("s"), "v"},
				{"SET", k("sx"), "v", "EXAT", itoa(exp)},
				{"TAIR.PUTV", k("tv"), "v1", "0"},
				{"TAIR.PUTV", k("tv"), "v2", "1"},
				{"INCR", k("n")},
				{"HSET", k("h"), "f1", "a", "f2", "b"},
				{"RPUSH", k("l"), "1", "2", "3"},
				{"SADD", k("set"), "x", "y"},
				{"ZADD", k("z"), "1", "a", "2.5", "b"},
				{"TAIR.PPUT", k("p"), "s1", "v1"},
				{"TAIR.PPUT", k("p"), "s2", "v2"},
				{"TAIR.ITEMADD", k("it"), "10", "i1", "i2"},
				{"SET", k("hid"), "secret"},
				{"TAIR.HIDE", k("hid")},
			}
			reads := [][]string{
				{"GET", k("s")}, {"PEXPIRETIME", k("sx")}, {"TAIR.GETV", k("tv")}, {"GET", k("n")},
				{"HGETALL", k("h")}, {"LRANGE", k("l"), "0", "-1"}, {"SMEMBERS", k("set")},
				{"ZRANGE", k("z"), "0", "-1", "WITHSCORES"}, {"TAIR.PRANGE", k("p"), "", ""},
				{"TAIR.ITEMGET", k("it"), "0", "10"}, {"GET", k("hid")}, {"TAIR.GETHIDDEN", k("hid")},
				{"TYPE", k("h")}, {"DBSIZE"},
			}
			ca := dial(t, a.Addr())
			for _, w := range writes {
				if r := ca.do(x(1, w...)...); strings.HasPrefix(r, "-") {
					t.Fatalf("%v: %s", w, r)
				}
			}
			want := make([]string, len(reads))
			for i, r := range reads {
				want[i] = ca.do(x(1, r...)...)
			}
			t.Logf("reads: %q", want)
			// Field and member order is the engine's: compare as sets.
			norm := func(r string) string {
				parts := strings.Split(r, "\r\n")
				if len(parts) > 1 {
					sort.Strings(parts[1:])
				}
				return strings.Join(parts, "\r\n")
			}
			// The slave answers the same (TAIR.XR reads; DBSIZE counts masters only).
			cb := dial(t, b.Addr())
			for i, r := range reads[:len(reads)-1] {
				if got := cb.do(append([]string{"TAIR.XR", "0", "1", "2"}, r...)...); norm(got) != norm(want[i]) {
					t.Errorf("slave %v: %q, master said %q", r, got, want[i])
				}
			}
			// Move bucket 0 from a to c.
			moveBucket(t, cs, t1, 0, a, c, c)
			v := cs.getTable().Version
			// The old master forwards to the new one during the grace
			// period (a proxy still on table 1).
			if got := ca.do(x(1, "GET", k("s"))...); got != want[0] {
				t.Errorf("old master, forwarded GET: %q, want %q", got, want[0])
			}
			if got := ca.do(x(1, "SET", k("fw"), "1")...); got != "+OK" {
				t.Errorf("old master, forwarded SET: %q", got)
			}
			if got, _ := engineGet(c, k("fw")); got != "1" {
				t.Errorf("forwarded SET did not reach the new master: %q", got)
			}
			cc := dial(t, c.Addr())
			for i, r := range reads {
				if r[0] == "DBSIZE" {
					continue
				}
				if got := cc.do(x(v, r...)...); norm(got) != norm(want[i]) {
					t.Errorf("new master %v: %q, old master said %q", r, got, want[i])
				}
			}
		})
	}
}

func itoa(n int64) string { return strconvFormat(n) }

// TestSlaveAppliesOverItsQuota: an area's bytes differ between a master
// and its slave (they hold different buckets), so a slave over the
// area's quota must still apply what its master accepted; refusing it
// would leave an acknowledged write on the master alone.
func TestSlaveAppliesOverItsQuota(t *testing.T) {
	cs := newFakeCS(t)
	var nodes []*Server
	for i := 0; i < 2; i++ {
		c := testConfig(cs.addr())
		c.Engine = "ldb"
		c.Dir = t.TempDir()
		c.ReplicationMode = ReplicationStrict
		nodes = append(nodes, startNode(t, c))
	}
	a, b := nodes[0], nodes[1]
	cs.setTable(ringTable(1, q, 2, a.Addr(), b.Addr()))
	waitVersion(t, 1, nodes...)
	b.eng.SetQuota(0, 1) // the slave's area 0 is full
	key := keyIn("quota", 0, q, 0)
	if got := dial(t, a.Addr()).do(x(1, "SET", key, "value")...); got != "+OK" {
		t.Fatalf("SET on the master: %q", got)
	}
	if v, ok := engineGet(b, key); !ok || v != "value" {
		t.Fatalf("slave over its quota holds %q, %v; want the master's write", v, ok)
	}
}

// TestUnsyncedDataAfterCrashCountsAsLost: with --sync none a node that
// did not stop cleanly may have lost acknowledged writes, so it starts
// empty and reports itself not persistent (the configserver then treats
// its copies as lost and rebuilds them); after a clean stop, or with a
// syncing policy, it keeps its data and says so.
func TestUnsyncedDataAfterCrashCountsAsLost(t *testing.T) {
	cs := newFakeCS(t)
	dir := t.TempDir()
	run := func(sync engines.SyncPolicy, crash bool, write bool) (kept bool, keys int64) {
		t.Helper()
		c := testConfig(cs.addr())
		c.Engine = "ldb"
		c.Dir = dir
		c.Sync = sync
		s, err := New(c, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		kept, keys = s.dataKept, s.eng.Count(0)
		if write {
			if _, err := s.eng.Put(engineKey(0, "k"), []byte("v"), engines.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if crash {
			// What a kill -9 leaves: no clean-shutdown marker.
			if err := os.Remove(filepath.Join(dir, cleanMarker)); err != nil {
				t.Fatal(err)
			}
		}
		return kept, keys
	}
	if kept, _ := run(engines.SyncNone, false, true); kept {
		t.Fatal("a new data directory claims to hold copies")
	}
	if kept, keys := run(engines.SyncNone, true, false); !kept || keys != 1 {
		t.Fatalf("after a clean stop: kept %v, %d keys; want true, 1", kept, keys)
	}
	if kept, keys := run(engines.SyncGroup, true, false); !kept || keys != 1 {
		t.Fatalf("syncing policy after a crash: kept %v, %d keys; want true, 1", kept, keys)
	}
	if kept, keys := run(engines.SyncNone, false, false); kept || keys != 0 {
		t.Fatalf("--sync none after a crash: kept %v, %d keys; want false, 0", kept, keys)
	}
}

// TestBlockCacheMetrics: an ldb node exports its block cache at /metrics
// (hits counting the reads it served from the cache, its capacity, the
// memtables' reservation); an in-memory engine, which has no block
// cache, exports none of those series.
func TestBlockCacheMetrics(t *testing.T) {
	cs := newFakeCS(t)
	c := testConfig(cs.addr())
	c.Engine = "ldb"
	c.Dir = t.TempDir()
	ldbNode := startNode(t, c)
	rdbNode := startNode(t, testConfig(cs.addr()))
	cs.setTable(ringTable(1, q, 1, ldbNode.Addr()))
	waitVersion(t, 1, ldbNode)

	metric := func(s *Server, name string) (float64, bool) {
		t.Helper()
		r, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		for _, ln := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(ln, name+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("%s: %q", name, ln)
				}
				return f, true
			}
		}
		return 0, false
	}
	ca := dial(t, ldbNode.Addr())
	key := keyIn("cache", 0, q, 0)
	if got := ca.do(x(1, "SET", key, "v")...); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	// The write goes to an sstable, so that reads go through the cache.
	if err := ldbNode.eng.(interface{ Compact() error }).Compact(); err != nil {
		t.Fatal(err)
	}
	hits0, _ := metric(ldbNode, "tair_dataserver_block_cache_hits_total")
	for i := 0; i < 10; i++ {
		if got := ca.do(x(1, "GET", key)...); got != "$1\r\nv" {
			t.Fatalf("GET: %q", got)
		}
	}
	hits, ok := metric(ldbNode, "tair_dataserver_block_cache_hits_total")
	if !ok || hits < hits0+9 {
		t.Fatalf("block cache hits %v (exported %v) after 10 GETs of a flushed key, from %v; want at least 9 more", hits, ok, hits0)
	}
	if capacity, _ := metric(ldbNode, "tair_dataserver_block_cache_capacity_bytes"); capacity <= 0 {
		t.Fatalf("block cache capacity %v", capacity)
	}
	if mem, ok := metric(ldbNode, "tair_dataserver_memtable_bytes"); !ok || mem <= 0 {
		t.Fatalf("memtable bytes %v (exported %v); pebble always has a memtable", mem, ok)
	}
	for _, name := range []string{"tair_dataserver_block_cache_hits_total", "tair_dataserver_block_cache_capacity_bytes"} {
		if v, ok := metric(rdbNode, name); ok {
			t.Fatalf("rdb exports %s = %v; it has no block cache", name, v)
		}
	}
}
