package storetest

import (
	"encoding/binary"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
)

// Benchmark shapes: SPEC's typical small record, a 16-byte key and a
// 32-byte value, in one area, spread over 1023 buckets.
const (
	benchKeyLen   = 16
	benchValueLen = 32
	benchBuckets  = 1023
)

// benchKey is the i-th benchmark key: 16 bytes that look random (a
// counter through a bijective mixer), so neither pebble's prefix
// compression nor snappy gets more out of them than out of real keys.
func benchKey(i uint64) engines.Key {
	k := make([]byte, benchKeyLen)
	binary.BigEndian.PutUint64(k, mix(i))
	binary.BigEndian.PutUint64(k[8:], mix(i^0x9e3779b97f4a7c15))
	return engines.Key{Bucket: uint32(i % benchBuckets), Key: k}
}

// benchValue is a 32-byte value of key i, random-looking for the same
// reason.
func benchValue(i uint64) []byte {
	v := make([]byte, benchValueLen)
	for j := 0; j < benchValueLen; j += 8 {
		binary.LittleEndian.PutUint64(v[j:], mix(i*4+uint64(j)))
	}
	return v
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// RunBenchmarks runs the shared benchmarks against open.
func RunBenchmarks(b *testing.B, open OpenFunc) {
	for _, p := range []engines.SyncPolicy{engines.SyncAlways, engines.SyncGroup, engines.SyncNone} {
		b.Run("Put/"+string(p), func(b *testing.B) { benchPut(b, open, p, false) })
		b.Run("PutParallel16/"+string(p), func(b *testing.B) { benchPut(b, open, p, true) })
	}
	b.Run("PutRemove/none", func(b *testing.B) { benchPutRemove(b, open) })
	b.Run("Get", func(b *testing.B) { benchGet(b, open) })
	b.Run("PrefixRange100of10000", func(b *testing.B) { benchPrefixRange(b, open) })
	b.Run("DiskBytesPerKey", func(b *testing.B) { benchDisk(b, open) })
	b.Run("DBSize1M", func(b *testing.B) { benchDBSize(b, open) })
}

func openBench(b *testing.B, open OpenFunc, p engines.SyncPolicy) (engines.Engine, string) {
	dir := b.TempDir()
	e, err := open(dir, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e, dir
}

// benchPut measures one writer, or 16 concurrent ones (where group commit
// shows), overwriting and creating keys.
func benchPut(b *testing.B, open OpenFunc, p engines.SyncPolicy, parallel bool) {
	e, _ := openBench(b, open, p)
	b.SetBytes(benchKeyLen + benchValueLen)
	b.ResetTimer()
	if !parallel {
		for i := 0; i < b.N; i++ {
			if _, err := e.Put(benchKey(uint64(i)), benchValue(uint64(i)), engines.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(8) // 8 x GOMAXPROCS(2) = 16 writers
	var next atomicCounter
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.add()
			if _, err := e.Put(benchKey(i), benchValue(i), engines.PutOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchPutRemove puts a new key and deletes it: the writes that change the
// key counters, without fsync so that their own cost shows.
func benchPutRemove(b *testing.B, open OpenFunc) {
	e, _ := openBench(b, open, engines.SyncNone)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := benchKey(uint64(i))
		if _, err := e.Put(k, benchValue(uint64(i)), engines.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := e.Remove(k, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDBSize loads enginetest's DBSIZE data set, reopens the engine
// (logging how long reading the counters back, which a restart costs,
// takes) and times DBSIZE by a walk and by the counters.
func benchDBSize(b *testing.B, open OpenFunc) {
	dir := b.TempDir()
	e, err := open(dir, engines.SyncNone, nil)
	if err != nil {
		b.Fatal(err)
	}
	enginetest.FillDBSize(b, e, enginetest.DBSizeKeys)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if e, err = open(dir, engines.SyncNone, nil); err != nil {
		b.Fatal(err)
	}
	opened := time.Since(start)
	b.Cleanup(func() { _ = e.Close() })
	b.Logf("reopen with %d keys: %v", enginetest.DBSizeKeys, opened)
	enginetest.BenchDBSize(b, e)
}

// fill writes n benchmark keys with SyncNone-speed batches of writers.
func fill(b *testing.B, e engines.Engine, n int) {
	for i := 0; i < n; i++ {
		if _, err := e.Put(benchKey(uint64(i)), benchValue(uint64(i)), engines.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

const benchKeys = 100_000

func benchGet(b *testing.B, open OpenFunc) {
	e, _ := openBench(b, open, engines.SyncNone)
	fill(b, e, benchKeys)
	if err := e.Compact(); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Get(benchKey(r.Uint64N(benchKeys))); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPrefixRange reads 100 consecutive skeys of a 10,000-skey pkey: the
// workload of the in-memory engines' benchmark (enginetest.BenchPrefixRange).
func benchPrefixRange(b *testing.B, open OpenFunc) {
	e, _ := openBench(b, open, engines.SyncNone)
	enginetest.BenchPrefixRange(b, e)
}

// benchDisk writes 100k keys, compacts, closes and reports the data
// directory per key, as du counts it (allocated blocks: disk-B/key) and as
// ls does (file sizes: file-B/key), against the 48 bytes of payload. The
// log line breaks the size down by file kind.
func benchDisk(b *testing.B, open OpenFunc) {
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		e, err := open(dir, engines.SyncNone, nil)
		if err != nil {
			b.Fatal(err)
		}
		fill(b, e, benchKeys)
		if err := e.Compact(); err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		alloc, size, kinds := dirSize(b, dir)
		b.ReportMetric(float64(alloc)/benchKeys, "disk-B/key")
		b.ReportMetric(float64(size)/benchKeys, "file-B/key")
		b.Logf("file bytes by kind: %v", kinds)
	}
}

// dirSize returns the allocated and apparent bytes of the files under dir,
// and the apparent bytes per file extension.
func dirSize(b *testing.B, dir string) (alloc, size int64, kinds map[string]int64) {
	kinds = map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			alloc += st.Blocks * 512
		} else {
			alloc += info.Size()
		}
		ext := filepath.Ext(path)
		if ext == "" {
			ext = filepath.Base(path)
		}
		kinds[ext] += info.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return alloc, size, kinds
}

type atomicCounter struct{ n atomic.Uint64 }

func (c *atomicCounter) add() uint64 { return c.n.Add(1) }
