package slab

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

const benchRecords = 1000000

// BenchmarkIndexGet looks up random keys among 1M records, hashing the key
// and comparing it in the arena as a store would.
func BenchmarkIndexGet(b *testing.B) {
	a, x := buildSlab(benchRecords)
	keys := make([][testKeyLen]byte, 1<<16)
	for i := range keys {
		keys[i] = testKey(int(uint64(i) * 0x9E3779B97F4A7C15 % benchRecords))
	}
	i := 0
	for b.Loop() {
		k := &keys[i&(len(keys)-1)]
		i++
		if _, ok := x.Get(xxhash.Sum64(k[:]), func(o Handle) bool { return bytes.Equal(a.Bytes(o, testKeyLen), k[:]) }); !ok {
			b.Fatal("missing key")
		}
	}
}

// BenchmarkIndexPut inserts distinct keys into an Index that starts empty,
// so it includes every incremental growth.
func BenchmarkIndexPut(b *testing.B) {
	x := NewIndex(0)
	never := func(Handle) bool { return false } // keys are distinct
	i := uint64(0)
	for b.Loop() {
		i++
		x.Put(xxhash.Sum64(binaryKey(i)), Handle(i), never)
	}
	b.ReportMetric(float64(x.Bytes())/float64(x.Len()), "B/entry")
}

func binaryKey(i uint64) []byte {
	var k [8]byte
	for j := range k {
		k[j] = byte(i >> (8 * j))
	}
	return k[:]
}

func BenchmarkArenaAlloc(b *testing.B) {
	b.Run("alloc+free", func(b *testing.B) {
		a := New(Options{})
		keep := a.Alloc(48) // keeps the page carved
		for b.Loop() {
			a.Free(a.Alloc(48))
		}
		a.Free(keep)
	})
	b.Run("alloc", func(b *testing.B) {
		a := New(Options{})
		hs := make([]Handle, 0, 1<<20)
		for b.Loop() {
			if len(hs) == cap(hs) {
				for _, h := range hs {
					a.Free(h)
				}
				hs = hs[:0]
			}
			hs = append(hs, a.Alloc(48))
		}
	})
	b.Run("mixed-sizes", func(b *testing.B) {
		a := New(Options{})
		var ring [4096]Handle
		i := 0
		for b.Loop() {
			j := i & (len(ring) - 1)
			if ring[j] != 0 {
				a.Free(ring[j])
			}
			ring[j] = a.Alloc(16 + (i*7919)%2000)
			i++
		}
	})
}

// mapEntry is the baseline record: what a store keeps per key in Go
// objects (compare memstore's item).
type mapEntry struct {
	key      string
	val      []byte
	expireAt int64
	next     *mapEntry
}

// BenchmarkGC1M times runtime.GC() with 1M records live, stored in an
// Arena and Index, and in a Go map of pointers to entries.
func BenchmarkGC1M(b *testing.B) {
	b.Run("slab", func(b *testing.B) {
		a, x := buildSlab(benchRecords)
		benchGC(b)
		runtime.KeepAlive(a)
		runtime.KeepAlive(x)
	})
	b.Run("map", func(b *testing.B) {
		m := make(map[string]*mapEntry)
		for i := range benchRecords {
			k, v := testKey(i), testValue(i)
			m[string(k[:])] = &mapEntry{key: string(k[:]), val: append([]byte(nil), v[:]...)}
		}
		benchGC(b)
		runtime.KeepAlive(m)
	})
}

func benchGC(b *testing.B) {
	runtime.GC() // collect the garbage of building
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		runtime.GC()
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/GC")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapObjects), "heap-objects")
}
