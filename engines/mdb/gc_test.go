package mdb_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/mdb"
)

// loadKeys puts n 16-byte keys with 32-byte values into a fresh mdb engine
// and returns it with the growth of the heap's object count.
func loadKeys(tb testing.TB, n int) (engines.Engine, int64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := mdb.Open(engines.Options{SweepInterval: -1})
	tb.Cleanup(func() { _ = e.Close() })
	val := []byte("0123456789abcdef0123456789abcdef")
	key := make([]byte, 0, 16)
	for i := 0; i < n; i++ {
		key = fmt.Appendf(key[:0], "key:%012d", i)
		if _, err := e.Put(engines.Key{Bucket: uint32(i % 1023), Key: key}, val, engines.PutOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return e, int64(after.HeapObjects) - int64(before.HeapObjects)
}

// TestGCWorkIndependentOfKeys: the records of an mdb engine are not Go
// objects, so the heap's object count (what the collector marks) grows by
// a page per few dozen records, not by objects per record.
func TestGCWorkIndependentOfKeys(t *testing.T) {
	const n = 200_000
	e, objs := loadKeys(t, n)
	t.Logf("%d keys: %d heap objects more (%.3f per key)", n, objs, float64(objs)/n)
	if objs > n/10 { // the old layout added 3 per key
		t.Fatalf("%d keys added %d heap objects: records are Go objects again?", n, objs)
	}
	runtime.KeepAlive(e)
}

// BenchmarkGC1M reports the duration of one full GC with 1M keys loaded
// (a measurement: run with -benchtime=1x).
func BenchmarkGC1M(b *testing.B) {
	e, objs := loadKeys(b, 1_000_000)
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		runtime.GC()
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/GC")
	b.ReportMetric(float64(objs)/1e6, "heapobjs/key")
	runtime.KeepAlive(e)
}
