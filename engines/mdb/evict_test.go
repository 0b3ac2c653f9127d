package mdb_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/generic/memstore"
	"github.com/tairkv/tair/engines/mdb"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/testutil"
)

// openMdb opens an mdb engine on a fake clock with the sweep off unless
// sweep > 0.
func openMdb(t testing.TB, limit int64, sweep time.Duration) (*generic.Engine, *memstore.Store, *enginetest.Clock) {
	clk := enginetest.NewClock()
	if sweep == 0 {
		sweep = -1
	}
	e := mdb.Open(engines.Options{Now: clk.Now, MemoryLimit: limit, SweepInterval: sweep})
	t.Cleanup(func() { _ = e.Close() })
	return e, e.Store().(*memstore.Store), clk
}

func ak(area uint16, format string, args ...any) engines.Key {
	return enginetest.AK(area, fmt.Sprintf(format, args...))
}

// recordBytes is what one string record is charged, checked against the
// engine's accounting of a single record (plus its table).
func recordBytes(t *testing.T, key string, value []byte) int64 {
	e, st, _ := openMdb(t, 0, 0)
	if _, err := e.Put(enginetest.AK(9, key), value, engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := memstore.Charge(len(key), len(value))
	if b, _ := st.Usage(9); b != rec+memstore.TableOverhead() {
		t.Fatalf("one record charged %d, want %d + table %d", b, rec, memstore.TableOverhead())
	}
	if min := int64(len(key) + len(value)); rec < min {
		t.Fatalf("record charged %d bytes, less than its key and value (%d)", rec, min)
	}
	return rec
}

func TestQuotaHoldsUnderLoad(t *testing.T) {
	const quota = 1 << 20
	const writes = 10000
	value := make([]byte, 200)
	rec := recordBytes(t, "key-00000000", value)
	e, st, _ := openMdb(t, 0, 0)
	e.SetQuota(1, quota)
	for i := 0; i < writes; i++ {
		if _, err := e.Put(ak(1, "key-%08d", i), value, engines.PutOptions{}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		// A single writer evicts before returning: the area never stays over.
		if b, _ := st.Usage(1); b > quota {
			t.Fatalf("after write %d the area holds %d bytes, quota %d", i, b, quota)
		}
	}
	s := e.Stats(1)
	// Every record has the same size: the area holds records and the
	// tables they sit in, and eviction stopped as soon as they fit.
	tables := (s.Bytes - s.Keys*rec) / memstore.TableOverhead()
	if s.Bytes != s.Keys*rec+tables*memstore.TableOverhead() || tables <= 0 {
		t.Fatalf("area bytes %d are not %d keys x %d + tables x %d", s.Bytes, s.Keys, rec, memstore.TableOverhead())
	}
	if s.Bytes > quota || s.Bytes <= quota-rec-memstore.TableOverhead() {
		t.Fatalf("area holds %d bytes, want within one record of the quota %d", s.Bytes, quota)
	}
	if s.Keys+s.Evictions != writes {
		t.Fatalf("keys %d + evictions %d != writes %d", s.Keys, s.Evictions, writes)
	}
	// LRU: the newest writes survive, the oldest are gone.
	for i := writes - 100; i < writes; i++ {
		if _, err := e.Get(ak(1, "key-%08d", i)); err != nil {
			t.Fatalf("recent key %d evicted: %v", i, err)
		}
	}
	for i := 0; i < 100; i++ {
		if _, err := e.Get(ak(1, "key-%08d", i)); !errors.Is(err, errs.ErrNotFound) {
			t.Fatalf("old key %d survived: %v", i, err)
		}
	}
	// Other areas are not charged or evicted.
	if s0 := e.Stats(0); s0.Bytes != 0 || s0.Evictions != 0 {
		t.Fatalf("area 0 stats %+v", s0)
	}
	// Lowering the quota evicts at once; raising it evicts nothing.
	e.SetQuota(1, quota/2)
	if b, _ := st.Usage(1); b > quota/2 || b <= quota/2-rec-memstore.TableOverhead() {
		t.Fatalf("after SetQuota(%d) area holds %d bytes", quota/2, b)
	}
	ev := e.Stats(1).Evictions
	e.SetQuota(1, 0)
	if got := e.Stats(1).Evictions; got != ev {
		t.Fatalf("unlimited quota evicted %d more", got-ev)
	}
}

func TestReadsProtectFromEviction(t *testing.T) {
	e, _, _ := openMdb(t, 0, 0)
	e.SetQuota(0, 512<<10)
	value := make([]byte, 100)
	const hot = 50
	for i := 0; i < hot; i++ {
		if _, err := e.Put(ak(0, "hot-%d", i), value, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20000; i++ {
		if _, err := e.Put(ak(0, "cold-%d", i), value, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			for h := 0; h < hot; h++ {
				if _, err := e.Get(ak(0, "hot-%d", h)); err != nil {
					t.Fatalf("hot key %d evicted after %d cold writes: %v", h, i, err)
				}
			}
		}
	}
	if ev := e.Stats(0).Evictions; ev == 0 {
		t.Fatal("no evictions: the test wrote less than the quota")
	}
}

// TestWritesProtectFromEviction: a key overwritten now and then stays
// while cold keys written once around it are evicted (an overwrite marks
// the record referenced rather than moving it in the recency list: the
// CLOCK hand gives it its second chance, as after a read), and the
// oldest key written once, never again, is evicted.
func TestWritesProtectFromEviction(t *testing.T) {
	e, _, _ := openMdb(t, 0, 0)
	e.SetQuota(0, 512<<10)
	value := make([]byte, 100)
	const hot = 50
	for i := 0; i < hot; i++ {
		if _, err := e.Put(ak(0, "hot-%d", i), value, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Put(ak(0, "once"), value, engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20000; i++ {
		if _, err := e.Put(ak(0, "cold-%d", i), value, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			for h := 0; h < hot; h++ {
				if _, err := e.Put(ak(0, "hot-%d", h), value, engines.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if ev := e.Stats(0).Evictions; ev == 0 {
		t.Fatal("no evictions: the test wrote less than the quota")
	}
	for h := 0; h < hot; h++ {
		if _, err := e.Get(ak(0, "hot-%d", h)); err != nil {
			t.Fatalf("hot key %d, overwritten every 100 cold writes, evicted: %v", h, err)
		}
	}
	if _, err := e.Get(ak(0, "once")); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("a key written once before 20000 others survived: %v", err)
	}
}

func TestExpiredEvictedFirst(t *testing.T) {
	const quota = 1 << 20
	value := make([]byte, 200)
	rec := recordBytes(t, "tmp-00000000", value)
	e, _, clk := openMdb(t, 0, 0)
	e.SetQuota(2, quota)
	// Records fit in the quota less the tables (one per shard at most).
	n := int((quota - 256*memstore.TableOverhead()) / rec)
	tmp, perm := n*6/10, n*3/10
	exp := engines.TairExpire(1, clk.Now())
	for i := 0; i < tmp; i++ {
		if _, err := e.Put(ak(2, "tmp-%08d", i), value, engines.PutOptions{Expire: exp}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < perm; i++ {
		if _, err := e.Put(ak(2, "per-%08d", i), value, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Second)
	// Writing as much again fits once the expired records go.
	for i := perm; i < 2*perm; i++ {
		if _, err := e.Put(ak(2, "per-%08d", i), value, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s := e.Stats(2)
	if s.Evictions != 0 || s.Keys != int64(2*perm) {
		t.Fatalf("stats %+v: want no evictions and %d keys", s, 2*perm)
	}
}

func TestRecordLargerThanQuota(t *testing.T) {
	e, _, _ := openMdb(t, 0, 0)
	e.SetQuota(3, 1000)
	if _, err := e.Put(ak(3, "small"), []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Put(ak(3, "big"), make([]byte, 2000), engines.PutOptions{})
	if !errors.Is(err, errs.ErrQuota) {
		t.Fatalf("put larger than the quota: %v, want ErrQuota", err)
	}
	if s := e.Stats(3); s.Keys != 1 || s.Evictions != 0 {
		t.Fatalf("refused put changed the area: %+v", s)
	}
}

func TestMemoryLimitConcurrent(t *testing.T) {
	const limit = 2 << 20
	e, st, _ := openMdb(t, limit, 0)
	const workers, perWorker = 4, 5000
	value := make([]byte, 300)
	var wg sync.WaitGroup
	var maxSeen atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				area := uint16(i % 3)
				if _, err := e.Put(ak(area, "w%d-%d", w, i), value, engines.PutOptions{}); err != nil {
					t.Error(err)
					return
				}
				for tb := st.TotalBytes(); ; {
					m := maxSeen.Load()
					if tb <= m || maxSeen.CompareAndSwap(m, tb) {
						break
					}
				}
			}
		}(w)
	}
	wg.Wait()
	rec := recordBytes(t, "w0-0000", value)
	// While writers race, each may be one record (and the table it opened)
	// over before it evicts.
	if peak, slack := maxSeen.Load(), workers*(rec+memstore.TableOverhead()); peak > limit+slack {
		t.Fatalf("total bytes peaked at %d, limit %d + %d writers x %d", peak, limit, workers, slack/workers)
	}
	if tb := st.TotalBytes(); tb > limit {
		t.Fatalf("at rest total bytes %d > limit %d", tb, limit)
	}
	var keys, ev, bytes int64
	for a := uint16(0); a < 3; a++ {
		s := e.Stats(a)
		keys, ev, bytes = keys+s.Keys, ev+s.Evictions, bytes+s.Bytes
	}
	if keys+ev != workers*perWorker {
		t.Fatalf("keys %d + evictions %d != writes %d", keys, ev, workers*perWorker)
	}
	if bytes != st.TotalBytes() {
		t.Fatalf("area bytes sum %d != total %d", bytes, st.TotalBytes())
	}
}

// TestMemoryBounded checks the real heap, not only the accounting: writing
// over ten times the limit leaves the heap within a quarter of it.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~100 MB")
	}
	const limit = 4 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, st, _ := openMdb(t, limit, 0)
	value := make([]byte, 1000)
	for i := 0; i < 50_000; i++ {
		if _, err := e.Put(ak(0, "k%d", i), value, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if st.TotalBytes() > limit {
		t.Fatalf("accounted %d > limit %d", st.TotalBytes(), limit)
	}
	// The accounting is honest if the live heap is close to it; allow the
	// store's fixed structures (256 shards) and map growth slack.
	if grown > limit*5/4 {
		t.Fatalf("heap grew by %d bytes for a %d byte limit (accounted %d)", grown, limit, st.TotalBytes())
	}
	t.Logf("limit %d, accounted %d, heap growth %d", limit, st.TotalBytes(), grown)
	runtime.KeepAlive(e)
}

func TestSweepReclaimsWithoutReads(t *testing.T) {
	g0 := runtime.NumGoroutine()
	e, st, clk := openMdb(t, 0, 5*time.Millisecond)
	for i := 0; i < 1000; i++ {
		exp := engines.TairExpire(int64(1+i%2), clk.Now())
		if _, err := e.Put(ak(0, "k%d", i), []byte("value"), engines.PutOptions{Expire: exp}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.PrefixPut(ak(1, "p%d", i%10), []byte(fmt.Sprint(i)), []byte("v"), engines.PutOptions{Expire: exp}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Put(ak(0, "keep"), []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	full, _ := st.Usage(0)
	rec := memstore.Charge(len("k999"), len("value")) // every key of area 0 costs the same
	clk.Advance(1001 * time.Millisecond)
	// Half expired: the sweep alone (Usage does not reclaim) frees them.
	testutil.Eventually(t, 2*time.Second, func() bool {
		b, _ := st.Usage(0)
		return b <= full-500*rec
	}, "sweep did not reclaim the first half")
	clk.Advance(time.Second)
	testutil.Eventually(t, 2*time.Second, func() bool {
		b0, _ := st.Usage(0)
		b1, _ := st.Usage(1)
		return b1 == 0 && b0 == memstore.Charge(len("keep"), 1)+memstore.TableOverhead()
	}, "sweep did not reclaim everything expired")
	if n := e.Count(0); n != 1 {
		t.Fatalf("Count(0) = %d, want 1", n)
	}
	if n := e.Count(1); n != 0 {
		t.Fatalf("Count(1) = %d, want 0", n)
	}
	if ev := e.Stats(0).Evictions; ev != 0 {
		t.Fatalf("expiry counted as %d evictions", ev)
	}
	// Close stops the sweep goroutine.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Second, func() bool { return runtime.NumGoroutine() <= g0 }, "sweep goroutine still running after Close")
}
