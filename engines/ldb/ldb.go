// Package ldb is Tair's persistent LSM engine, registered as "ldb": pebble
// (CockroachDB's LevelDB successor) where Tair's ldb used LevelDB. The Tair
// rules are package generic's, the storage layer (encodings, locking,
// counters, expiry) package sortedkv's; this package is the pebble backend.
//
// # Layout
//
// One pebble keyspace holds everything; sortedkv's key encoding puts each
// Tair bucket, and each area inside it, in a contiguous key range (see
// sortedkv/keys.go). Migration scans one range and DeleteBucket is one
// pebble range deletion; DeleteArea is one range deletion per bucket, all
// in one batch.
// Per-area counters are pebble merge operands written in the same batch as
// the data they count, so they need no read-modify-write of their own and
// stay exact across crashes.
//
// # Durability
//
// Every write is one pebble batch, written to the WAL before it is
// acknowledged. Options.Sync decides when the WAL is fsynced:
//
//   - SyncAlways: each batch commits with pebble.Sync, and Put returns
//     after an fsync of the WAL that covers it. Pebble's WAL writer
//     fsyncs in a loop and every synced batch that arrives while an fsync
//     runs waits for the next one, so concurrent writers share an fsync;
//     but a caller that writes one command after another (a dataserver
//     connection's pipeline) pays one fsync per write: 2.3k SET/s at -P16
//     with fsyncs of ~0.33 ms (issue 16's measurement).
//   - SyncGroup (the default): batches commit with pebble.NoSync and Put
//     returns at once; the engine is an engines.GroupCommitter, and the
//     caller acknowledges a write only after WaitDurable of a ticket taken
//     after it. One fsync (a synced empty LogData, which covers every WAL
//     record before it) serves every ticket taken before it started, so
//     a whole pipelined batch, and every connection's batch of that
//     moment, share it (groupSync).
//   - SyncNone: batches commit with pebble.NoSync: acknowledged once in
//     pebble's WAL buffer, which its flush loop writes to the OS shortly
//     after, and the OS to the disk when it decides. Even a killed process
//     loses the acknowledged writes still in the buffer (the crash test,
//     run with SyncNone, loses some every time); a power loss loses the
//     last seconds.
//
// Close fsyncs the WAL under every policy, so a clean shutdown loses
// nothing.
package ldb

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/ldb/sortedkv"
)

// Name is the registered engine name.
const Name = "ldb"

// Memory per engine: pebble's block cache and memtable size.
var defaultSizes = pebbleSizes{blockCache: 64 << 20, memTable: 32 << 20}

// pebbleSizes are the memory an engine gives pebble (tests shrink them).
type pebbleSizes struct {
	// blockCache is what the block cache keeps for blocks whatever the
	// memtables hold.
	blockCache int64
	// memTable is the largest memtable.
	memTable int64
}

// cacheBytes is the capacity to give pebble's cache. Pebble charges every
// memtable, from its creation until its last reader lets go of it after
// the flush, to the block cache (Cache.Reserve), so a cache of blockCache
// alone held no block at all while a full memtable and the one being
// flushed were alive: every read of a flushed key went to the file and
// decompressed its filter, index and data blocks again. Room for the
// memtables pebble lets queue before it stops writes, plus the one
// flushing readers may still hold, comes on top.
func (z pebbleSizes) cacheBytes(stopWritesThreshold int) int64 {
	return z.blockCache + int64(stopWritesThreshold+1)*z.memTable
}

func init() {
	engines.Register(Name, func(o engines.Options) (engines.Engine, error) { return Open(o) })
}

// Open opens (creating if needed) the ldb engine in o.Dir.
func Open(o engines.Options) (*generic.Engine, error) { return OpenFS(o, vfs.Default) }

// OpenFS is Open on a pebble filesystem (tests pass vfs.NewMem(); o.Dir may
// then be empty).
func OpenFS(o engines.Options, fs vfs.FS) (*generic.Engine, error) {
	o.Adjust()
	if o.Dir == "" && fs == vfs.Default {
		return nil, errors.New("ldb: Options.Dir is required")
	}
	be, err := openPebble(o, fs, defaultSizes)
	if err != nil {
		return nil, err
	}
	st, err := sortedkv.Open(Name, be, o)
	if err != nil {
		return nil, err
	}
	c := generic.Config{Name: Name, Persistent: true, Store: st, Options: o, CacheStats: be.cacheStats}
	if be.group != nil {
		c.GroupCommit = be.group
	}
	return generic.New(c), nil
}

// countersMerger sums the counter deltas sortedkv writes as merge operands.
// Addition is associative and commutative, so a partial merge (during a
// compaction that does not see the base) is as good as a full one. The
// name stays that of the first release, whose operands held keys and
// bytes only (pebble refuses to open a store under another merger's
// name): a merge of such operands alone stays in their form, so that
// sortedkv's Open still sees the record as one to complete (a compaction
// may merge them before Open does).
var countersMerger = &pebble.Merger{
	Name: "tair.counters.v1",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &counterMerge{}
		m.add(value)
		return m, nil
	},
}

type counterMerge struct {
	sum      sortedkv.Counts
	complete bool // an operand had every field
}

func (m *counterMerge) add(v []byte) {
	c, complete := sortedkv.DecodeCounts(v)
	m.sum = m.sum.Add(c)
	m.complete = m.complete || complete
}

func (m *counterMerge) MergeNewer(v []byte) error { m.add(v); return nil }
func (m *counterMerge) MergeOlder(v []byte) error { m.add(v); return nil }
func (m *counterMerge) Finish(bool) ([]byte, io.Closer, error) {
	if !m.complete {
		return sortedkv.EncodeLegacyCounters(m.sum.Keys, m.sum.Bytes), nil, nil
	}
	return m.sum.Encode(), nil, nil
}

// quietLogger drops pebble's informational messages; fatal ones still stop
// the process, as pebble requires.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

// store is sortedkv.Backend on pebble.
type store struct {
	db    *pebble.DB
	wo    *pebble.WriteOptions
	group *groupSync // SyncGroup only
	// cacheCapacity is the block cache's size, memtables' share included.
	cacheCapacity int64
}

func openPebble(o engines.Options, fs vfs.FS, sizes pebbleSizes) (*store, error) {
	po := &pebble.Options{
		FS:     fs,
		Merger: countersMerger,
		Logger: quietLogger{},
		// pebble's 4 MiB default memtable makes a steady writer flush,
		// and stall behind flushes, every few ten thousand puts; with
		// 32 MiB a NoSync put went from 29 to 19 µs in the benchmark.
		// Pebble starts small and grows memtables up to this size, so
		// an idle engine does not hold it.
		MemTableSize: uint64(sizes.memTable),
	}
	// Bloom filters make a Get of a missing key (every first put) skip the
	// sstables that cannot hold it.
	po.Levels = make([]pebble.LevelOptions, 7)
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	wo := pebble.Sync
	switch o.Sync {
	case engines.SyncAlways:
	case engines.SyncGroup, engines.SyncNone:
		wo = pebble.NoSync
	default:
		return nil, fmt.Errorf("ldb: unknown sync policy %q", o.Sync)
	}
	po.EnsureDefaults()
	// pebble's 8 MiB default block cache misses on random reads of even
	// the 100k-key benchmark (22 µs per Get, mostly pread); 64 MiB holds
	// its blocks, index and filters, beside the memtables' share.
	capacity := sizes.cacheBytes(po.MemTableStopWritesThreshold)
	cache := pebble.NewCache(capacity)
	defer cache.Unref() // pebble holds its own reference while open
	po.Cache = cache
	db, err := pebble.Open(o.Dir, po)
	if err != nil {
		return nil, fmt.Errorf("ldb: open %s: %w", o.Dir, err)
	}
	st := &store{db: db, wo: wo, cacheCapacity: capacity}
	if o.Sync == engines.SyncGroup {
		st.group = newGroupSync(func() error { return db.LogData(nil, pebble.Sync) })
	}
	return st, nil
}

// cacheStats reads pebble's block cache and memtable figures.
func (s *store) cacheStats() engines.CacheStats {
	m := s.db.Metrics()
	return engines.CacheStats{
		Hits: m.BlockCache.Hits, Misses: m.BlockCache.Misses,
		CachedBytes: m.BlockCache.Size, CapacityBytes: s.cacheCapacity,
		MemtableBytes: int64(m.MemTable.Size + m.MemTable.ZombieSize),
	}
}

func (s *store) Get(key []byte) ([]byte, bool, error) {
	v, c, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, c.Close()
}

func (s *store) Scan(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error {
	return scan(s.db, lo, hi, reverse, fn)
}

// Snapshot is a pebble snapshot (sortedkv.SnapshotBackend).
func (s *store) Snapshot() (sortedkv.BackendSnapshot, error) {
	return pebbleSnapshot{s.db.NewSnapshot()}, nil
}

type pebbleSnapshot struct{ snap *pebble.Snapshot }

func (p pebbleSnapshot) Scan(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error {
	return scan(p.snap, lo, hi, reverse, fn)
}

func (p pebbleSnapshot) Close() error { return p.snap.Close() }

// scan is Scan on r, the database or a snapshot of it.
func scan(r pebble.Reader, lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	step := it.Next
	ok := it.First()
	if reverse {
		step, ok = it.Prev, it.Last()
	}
	for ; ok; ok = step() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if !fn(it.Key(), v) {
			break
		}
	}
	return it.Close()
}

func (s *store) Commit(b *sortedkv.Batch) error {
	pb := s.db.NewBatch()
	defer pb.Close()
	for i := range b.Ops {
		op := &b.Ops[i]
		var err error
		switch op.Kind {
		case sortedkv.OpSet:
			err = pb.Set(op.Key, op.Value, nil)
		case sortedkv.OpDelete:
			err = pb.Delete(op.Key, nil)
		case sortedkv.OpDeleteRange:
			end := op.End
			if end == nil {
				end = maxKey
			}
			err = pb.DeleteRange(op.Key, end, nil)
		}
		if err != nil {
			return err
		}
	}
	for _, c := range b.Counters {
		if err := pb.Merge(c.Key, c.Counts().Encode(), nil); err != nil {
			return err
		}
	}
	if err := pb.Commit(s.wo); err != nil {
		return err
	}
	if s.group != nil {
		s.group.committed()
	}
	return nil
}

// maxKey is above every key sortedkv writes (they start with a 4-byte
// bucket).
var maxKey = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Compact flushes the memtable and compacts the whole keyspace, which drops
// deleted and overwritten data and range deletions.
func (s *store) Compact() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	return s.db.Compact([]byte{}, maxKey, true)
}

// Close closes pebble, which writes and fsyncs the rest of the WAL (also
// under SyncNone), so a clean shutdown loses nothing.
func (s *store) Close() error { return s.db.Close() }

// Checkpoint writes a pebble checkpoint of the database to dir (which
// must not exist): hard links to the sstables and a copy of the rest,
// taken at one sequence number, with the WAL flushed first so that every
// write acknowledged before it is in the copy. Writes go on meanwhile.
func (s *store) Checkpoint(dir string) error {
	return s.db.Checkpoint(dir, pebble.WithFlushedWAL())
}
