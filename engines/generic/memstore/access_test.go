package memstore_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/generic/memstore"
	"github.com/tairkv/tair/internal/errs"
)

func openTracked(t *testing.T) (*generic.Engine, engines.AccessTracker, *enginetest.Clock) {
	t.Helper()
	clk := enginetest.NewClock()
	o := engines.Options{Now: clk.Now, SweepInterval: -1}
	e := generic.New(generic.Config{Name: "memstore", Store: memstore.New(memstore.Options{Now: clk.Now, SweepInterval: -1}), Options: o})
	t.Cleanup(func() { _ = e.Close() })
	a := engines.AccessOf(e)
	if a == nil {
		t.Fatal("a memstore engine offers no AccessTracker")
	}
	return e, a, clk
}

func wantAccess(t *testing.T, a engines.AccessTracker, k engines.Key, freq uint8, idle int64) {
	t.Helper()
	f, i, ok := a.Access(k)
	if !ok || f != freq || i != idle {
		t.Fatalf("Access(%s) = %d, %d, %v; want %d, %d, true", k.Key, f, i, ok, freq, idle)
	}
}

// TestAccessTracking: what each kind of operation does to a record's
// frequency and idle time (Redis's lookupKey with an LFU policy, counter
// increments made certain).
func TestAccessTracking(t *testing.T) {
	defer memstore.SetLFURandom(func() float64 { return 0 })()
	e, a, clk := openTracked(t)
	k := engines.Key{Bucket: 3, Area: 1, Key: []byte("k")}
	if _, _, ok := a.Access(k); ok {
		t.Fatal("Access of a missing key: ok")
	}
	if _, err := e.Put(k, []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 5, 0) // LFU_INIT_VAL
	clk.Advance(7 * time.Second)
	wantAccess(t, a, k, 5, 7) // Access is no access
	if _, err := e.Get(k); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 6, 0)

	// NoTouch reads and writes leave it alone.
	clk.Advance(3 * time.Second)
	nt := k
	nt.NoTouch = true
	if _, err := e.Get(nt); err != nil {
		t.Fatal(err)
	}
	keep := func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return cur, engines.Keep, nil
	}
	if _, err := e.Update(nt, keep); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Put(nt, []byte("w"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 6, 3)

	// An Update that keeps (a read of an Object), one that stores, and
	// one that fails after finding the key (WRONGTYPE) each count once.
	if _, err := e.Update(k, keep); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 7, 0)
	clk.Advance(time.Second)
	if _, err := e.Put(k, []byte("x"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 8, 0)
	clk.Advance(time.Second)
	_, err := e.Update(k, func(engines.Entry, bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{}, engines.Keep, errs.ErrWrongType
	})
	if err == nil {
		t.Fatal("the failing update did not fail")
	}
	wantAccess(t, a, k, 9, 0)

	// Decay: one per idle minute, applied at the next access.
	clk.Advance(4*time.Minute + 30*time.Second)
	wantAccess(t, a, k, 5, 270)
	if _, err := e.Get(k); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 6, 0)

	// A key written over after it expired is a new key; an expired key
	// has no access.
	if _, err := e.Put(k, []byte("v"), engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireAt, At: clk.NowMs() + 1000}}); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 7, 0)
	clk.Advance(2 * time.Second)
	if _, _, ok := a.Access(k); ok {
		t.Fatal("Access of an expired key: ok")
	}
	if _, err := e.Put(k, []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 5, 0)

	// Restore (migration, TAIR.RESTOREREC) makes a new record.
	for i := 0; i < 3; i++ {
		_, _ = e.Get(k)
	}
	if err := e.Restore(k.Bucket, &engines.Record{Area: k.Area, Key: k.Key, Entry: engines.Entry{Value: []byte("r"), Version: 4}}); err != nil {
		t.Fatal(err)
	}
	wantAccess(t, a, k, 5, 0)

	// SetAccess (RENAME, RESTORE's FREQ and IDLETIME); negative: a new
	// record's.
	if a.SetAccess(engines.Key{Bucket: k.Bucket, Area: k.Area, Key: []byte("nope")}, 1, 1) {
		t.Fatal("SetAccess of a missing key: true")
	}
	if !a.SetAccess(k, 100, 30) {
		t.Fatal("SetAccess: false")
	}
	wantAccess(t, a, k, 100, 30)
	clk.Advance(2 * time.Second)
	wantAccess(t, a, k, 100, 32)
	a.SetAccess(k, -1, -1)
	wantAccess(t, a, k, 5, 0)
	a.SetAccess(k, 300, 0)
	wantAccess(t, a, k, 255, 0)
}

// TestAccessLogarithmic: with Redis's random increments, the counter
// grows as Redis's table for lfu-log-factor 10 says (100 hits: ~10, 1000
// hits: ~18).
//
// The draws come from a seeded generator: with the process's random source
// the counter after 1000 hits is itself random (22 turned up in CI, which
// a fixed bound cannot allow for), and the test checks the curve, not luck.
func TestAccessLogarithmic(t *testing.T) {
	defer memstore.SetLFURandom(rand.New(rand.NewPCG(1, 2)).Float64)()
	e, a, _ := openTracked(t)
	for i, c := range []struct {
		hits   int
		lo, hi uint8
	}{{100, 8, 13}, {1000, 15, 21}} {
		k := engines.Key{Bucket: uint32(i), Key: []byte{'k', byte(i)}}
		if _, err := e.Put(k, []byte("v"), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		for range c.hits {
			if _, err := e.Get(k); err != nil {
				t.Fatal(err)
			}
		}
		if f, _, _ := a.Access(k); f < c.lo || f > c.hi {
			t.Errorf("after %d hits: freq %d, want %d..%d", c.hits, f, c.lo, c.hi)
		}
	}
}

// TestAccessConcurrentReads: readers touch under the shared lock while a
// writer rewrites the key (the race detector checks the word's accesses).
func TestAccessConcurrentReads(t *testing.T) {
	e, a, clk := openTracked(t)
	k := engines.Key{Key: []byte("hot")}
	if _, err := e.Put(k, []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if _, err := e.Get(k); err != nil {
					t.Error(err)
					return
				}
				if g == 0 && i%100 == 0 {
					clk.Advance(time.Second)
					_, _ = e.Put(k, []byte("w"), engines.PutOptions{})
				}
			}
		}()
	}
	wg.Wait()
	if f, idle, ok := a.Access(k); !ok || f <= 5 || idle != 0 {
		t.Fatalf("after 8000 reads: freq %d idle %d ok %v", f, idle, ok)
	}
}
