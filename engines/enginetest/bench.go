package enginetest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
)

// BenchOpenFunc opens a fresh, empty engine for a benchmark.
type BenchOpenFunc func(b *testing.B, o engines.Options) engines.Engine

// BenchKeys is the key count of the data-set benchmarks.
const BenchKeys = 100_000

// benchKeys returns n 16-byte keys with their buckets, and a 32-byte value.
func benchKeys(n int) ([]engines.Key, []byte) {
	keys := make([]engines.Key, n)
	for i := range keys {
		k := []byte(fmt.Sprintf("key:%012d", i))
		keys[i] = engines.Key{Bucket: BucketOf(k), Key: k}
	}
	return keys, []byte("0123456789abcdef0123456789abcdef")
}

func benchOpen(b *testing.B, open BenchOpenFunc) engines.Engine {
	b.Helper()
	o := engines.Options{}
	o.Adjust()
	e := open(b, o)
	b.Cleanup(func() { _ = e.Close() })
	return e
}

// benchFilled is benchOpen with every benchmark key put.
func benchFilled(b *testing.B, open BenchOpenFunc) (engines.Engine, []engines.Key) {
	b.Helper()
	e := benchOpen(b, open)
	keys, val := benchKeys(BenchKeys)
	for _, k := range keys {
		if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return e, keys
}

// BenchInMemory is Bench on an in-memory engine's (rdb, mdb) open.
func BenchInMemory[E engines.Engine](b *testing.B, open func(o engines.Options) E) {
	Bench(b, func(_ *testing.B, o engines.Options) engines.Engine { return open(o) })
}

// Bench runs the engine benchmarks: single-threaded and parallel (16
// goroutines, as the disk engines' PutParallel16) put and get over 100k
// 16-byte keys with 32-byte values, prefix ranges (BenchPrefixRange, the
// disk engines' workload too), and the memory cost per key (engine
// accounting and live heap).
func Bench(b *testing.B, open BenchOpenFunc) {
	b.Run("Put", func(b *testing.B) {
		e := benchOpen(b, open)
		keys, val := benchKeys(BenchKeys)
		b.ReportAllocs()
		b.SetBytes(int64(len(val)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := e.Put(keys[i%len(keys)], val, engines.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutRemove", func(b *testing.B) {
		// A new key and its deletion: the writes that change the key
		// counters (an overwrite of the same hiding and expiry does not).
		e := benchOpen(b, open)
		keys, val := benchKeys(BenchKeys)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := keys[i%len(keys)]
			if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			if err := e.Remove(k, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutRandom1M", func(b *testing.B) {
		// Overwrites in random order over a million keys, as a cluster's
		// SETs land on a dataserver (redis-benchmark -r): each write's
		// record and its neighbours are cache misses, unlike Put's
		// sequential pass.
		e := benchOpen(b, open)
		keys, val := benchKeys(1_000_000)
		for _, k := range keys {
			if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		order := make([]int32, 1<<20)
		for i := range order {
			order[i] = int32(r.IntN(len(keys)))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := e.Put(keys[order[i&(len(order)-1)]], val, engines.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		e, keys := benchFilled(b, open)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := e.Get(keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutParallel", func(b *testing.B) {
		e := benchOpen(b, open)
		keys, val := benchKeys(BenchKeys)
		var seq atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 writers
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := int(seq.Add(1)) * 7919
			for pb.Next() {
				i++
				if _, err := e.Put(keys[i%len(keys)], val, engines.PutOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("GetParallel", func(b *testing.B) {
		e, keys := benchFilled(b, open)
		var seq atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := int(seq.Add(1)) * 7919
			for pb.Next() {
				i++
				if _, err := e.Get(keys[i%len(keys)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("PrefixRange100of10000", func(b *testing.B) {
		BenchPrefixRange(b, benchOpen(b, open))
	})
	b.Run("ForEachBucket", func(b *testing.B) {
		// One bucket's scan (migration, SCAN, DBSIZE) with 100k keys over
		// 1023 buckets: about 98 records per bucket.
		e, _ := benchFilled(b, open)
		n := 0
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := e.ForEach(uint32(i%1023), func(*engines.Record) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)/float64(b.N), "records/op")
	})
	b.Run("DBSize1M", func(b *testing.B) {
		e := benchOpen(b, open)
		FillDBSize(b, e, DBSizeKeys)
		BenchDBSize(b, e)
	})
	b.Run("BytesPerKey", func(b *testing.B) {
		// A measurement, not a timing: it loads the data set once per call
		// whatever b.N is (so -benchtime=Nx stays cheap) and reports the
		// memory per key by the engine's accounting and by the live heap.
		heap, acct := bytesPerKey(b, open)
		b.ReportMetric(heap, "heap-B/key")
		b.ReportMetric(acct, "acct-B/key")
	})
}

// bytesPerKey loads BenchKeys keys into a fresh engine and returns the
// live-heap growth and the engine's accounted bytes per key. The engine is
// closed and unreachable when it returns, so calls do not add up.
func bytesPerKey(b *testing.B, open BenchOpenFunc) (heap, acct float64) {
	keys, val := benchKeys(BenchKeys)
	o := engines.Options{}
	o.Adjust()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := open(b, o)
	for _, k := range keys {
		if _, err := e.Put(k, val, engines.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / BenchKeys
	acct = float64(e.Stats(0).Bytes) / BenchKeys
	_ = e.Close()
	runtime.KeepAlive(keys)
	return heap, acct
}

// Prefix-range workload shared by every engine's benchmarks, so that their
// figures compare: one pkey of PrefixSkeys skeys ("skey%06d", 32-byte
// values), each operation a range of PrefixRangeLen consecutive skeys from
// a random start.
const (
	PrefixSkeys    = 10_000
	PrefixRangeLen = 100
)

// BenchPrefixRange loads the prefix-range workload into e (empty) and
// times the ranges.
func BenchPrefixRange(b *testing.B, e engines.Engine) {
	pk := engines.Key{Bucket: 7, Key: []byte("pkey")}
	val := make([]byte, 32)
	for i := 0; i < PrefixSkeys; i++ {
		binary.LittleEndian.PutUint64(val, uint64(i)*0x9e3779b97f4a7c15)
		if _, err := e.PrefixPut(pk, []byte(fmt.Sprintf("skey%06d", i)), val, engines.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := []byte(fmt.Sprintf("skey%06d", r.IntN(PrefixSkeys-PrefixRangeLen)))
		kvs, err := e.PrefixRange(pk, engines.RangeOptions{Start: start, Limit: PrefixRangeLen})
		if err != nil || len(kvs) != PrefixRangeLen {
			b.Fatalf("%d skeys, %v", len(kvs), err)
		}
	}
}

// DBSizeKeys is the key count of the DBSIZE benchmark.
const DBSizeKeys = 1_000_000

// FillDBSize puts n keys of area 0 over 1023 buckets into e, as DBSIZE
// finds them on a node: one in ten with a TTL, one in a hundred hidden.
func FillDBSize(b *testing.B, e engines.Engine, n int) {
	b.Helper()
	val := []byte("0123456789abcdef0123456789abcdef")
	exp := engines.Expire{Mode: engines.ExpireAt, At: time.Now().Add(time.Hour).UnixMilli()}
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("key:%012d", i))
		key := engines.Key{Bucket: BucketOf(k), Key: k}
		o := engines.PutOptions{}
		if i%10 == 0 {
			o.Expire = exp
		}
		if _, err := e.Put(key, val, o); err != nil {
			b.Fatal(err)
		}
		if i%100 == 1 {
			if err := e.SetHidden(key, true); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchDBSize times one node's DBSIZE of area 0 over the 1023 buckets of
// e: Walk as the dataserver counted before the engines kept key counters
// (ForEach of every bucket, hidden keys left out), Counters with
// CountKeys, which reads them.
func BenchDBSize(b *testing.B, e engines.Engine) {
	buckets := make([]uint32, 1023)
	for i := range buckets {
		buckets[i] = uint32(i)
	}
	var walked, counted int64
	b.Run("Walk", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			walked = 0
			for _, bk := range buckets {
				if err := e.ForEach(bk, func(r *engines.Record) error {
					if r.Area == 0 && !r.Entry.Hidden {
						walked++
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(walked), "keys")
	})
	b.Run("Counters", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			e.CountKeys(buckets, func(area uint16, c engines.KeyCounts) {
				if area == 0 {
					counted = c.Keys
				}
			})
		}
		b.ReportMetric(float64(counted), "keys")
	})
	if walked != 0 && counted != 0 && walked != counted {
		b.Fatalf("DBSIZE: a walk counts %d keys, the counters %d", walked, counted)
	}
}
