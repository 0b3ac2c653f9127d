package rdb_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/rdb"
)

func TestSuites(t *testing.T) { enginetest.RunInMemory(t, rdb.Name, rdb.Open) }

func BenchmarkEngine(b *testing.B) { enginetest.BenchInMemory(b, rdb.Open) }

// TestHotPathAllocations pins the hot path's cost: a Get allocates only
// the copy of the value it returns (the store's block may be reused once
// its lock is released), a Put over an existing key nothing (the store
// copies the value into its arena).
func TestHotPathAllocations(t *testing.T) {
	e := rdb.Open(engines.Options{})
	defer e.Close()
	k := enginetest.K("hot")
	val := []byte("0123456789abcdef0123456789abcdef")
	if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := e.Get(k); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("Get allocates %v times, want 1 (the value)", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Put over an existing key allocates %v times, want 0", n)
	}
}

// AllStats counts every area's keys with one reclaim of the expired
// records (generic.AreaCounter), the same as Stats area by area.
func TestAllStatsMatchesStats(t *testing.T) {
	now := time.Unix(1000, 0)
	e := rdb.Open(engines.Options{Now: func() time.Time { return now }})
	defer e.Close()
	for i, area := range []uint16{0, 0, 3, 3, 3, 1023} {
		k := engines.Key{Area: area, Key: []byte(fmt.Sprintf("k%d", i))}
		opts := engines.PutOptions{}
		if i%2 == 1 {
			opts.Expire = engines.Expire{Mode: engines.ExpireAt, At: now.Add(time.Second).UnixMilli()}
		}
		if _, err := e.Put(k, []byte("v"), opts); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Second) // the odd ones expire
	all := e.AllStats()
	for a := uint16(0); a <= 1023; a++ {
		if s := e.Stats(a); all[a] != s {
			t.Fatalf("area %d: AllStats %+v, Stats %+v", a, all[a], s)
		}
	}
	if all[0].Keys != 1 || all[3].Keys != 2 || all[1023].Keys != 0 {
		t.Fatalf("keys after expiry: %d %d %d", all[0].Keys, all[3].Keys, all[1023].Keys)
	}
}
