// Package memstore is the in-memory generic.Store under mdb and rdb: sharded
// tables with one RWMutex per shard, whose records live in memory the Go
// garbage collector does not walk (package slab), an ordered skey list per
// pkey, an expiry heap per shard and CLOCK (second-chance LRU) eviction per
// area.
//
// # Layout
//
// A record lives in the shard of its bucket (bucket mod Shards), so that
// ForEach and DeleteBucket (migration, SCAN) visit one shard: with
// the default 256 shards and 1023 buckets, a bucket scan reads about four
// buckets' records and filters on the bucket each record carries. Inside a
// shard, records are grouped by area, so DeleteArea drops whole tables.
//
// Each shard owns one slab.Arena of 4 KiB pages and a record is ONE block
// of it: a packed little-endian header (access word, version, CLOCK
// links, flags, bucket, lengths, area, type, bits, and for a record with
// an expiry its expiry time and heap index; see record.go) followed by
// the key and the value. A table's plain keys are a slab.Index (xxhash of
// the key to the record's handle); its pkeys a Go map to their skey lists
// (skeys.go: sorted chunks of handles, compared by the skeys in the
// arena). The expiry heap is a slice of (expireAt, handle) and the CLOCK
// lists are linked through the headers. Records whose value is an
// engines.Object keep it in a per-shard side map by handle: Objects are
// Go data structures, and few next to string keys. So the collector sees
// a pointer per page, per table and per pkey, not several per record,
// and its work does not grow with the number of keys
// (TestGCWorkIndependentOfKeys).
//
// The number of partitions trades scan cost against memory: every area
// that has records in a shard pays for a table there, so partitions per
// (bucket, area) would make scans exact but cost a small, spread-out
// area's quota in tables. Point operations need no more stripes than
// buckets: the dataserver serialises the commands of one bucket anyway.
// SubShards > 1 spreads each bucket over that many shards by key hash, for
// clusters with few buckets, at that factor in scan cost.
//
// A key has one bucket: callers always pass the bucket the cluster computes
// for the key (route.BucketOf), as the dataserver does.
//
// # Values leave the store as copies
//
// An arena block is freed and reused when its record is overwritten with
// another size class, deleted, reclaimed at expiry or evicted, the last
// two by other goroutines (the sweep, a writer of another bucket), so a
// slice of the arena is only valid while the shard's lock is held. Get
// and ForEach therefore hand out values (and ForEach and BucketKeys keys)
// copied under the lock; Update's fn and Range's fn see values aliasing
// the arena, valid during the call only (the generic layer copies what it
// keeps). Values handed to the store (Update's next entry, Restore) are
// copied into the arena: the caller keeps its slice.
//
// # Expiry
//
// Every record with an expiry sits in its shard's min-heap by expiry time.
// Reclaiming pops expired records from the heaps (the background sweep, and
// before Count, CountKeys and eviction), so Count is exact: after a reclaim
// at time now every stored record is live at now.
//
// # Key counts
//
// Besides its area's totals, each table keeps one generic.BucketKeys per
// bucket it holds records of (stored, hidden and expiring keys), changed
// under the shard's exclusive lock by the places a record is inserted,
// changed or removed (putLocked, removeLocked), so every write, expiry,
// eviction, restore and deletion keeps them exact. CountKeys (DBSIZE, INFO
// keyspace) reads them under the shared lock. A table holds few buckets
// (about buckets/Shards), so they are a small slice searched linearly,
// allocated with the table and charged with it (tableAlloc) for the first
// bucket; those of further buckets (40 bytes each) are not charged.
//
// # Memory accounting and eviction
//
// Each record is charged its arena block (the block size its header, key
// and value round up to; a record is moved to another block whenever its
// size class changes, so the charge is always its block), plus
// itemOverhead for its index slot, plus Object.Size() for an Object;
// pkeys and per-shard tables are charged too. Arena pages that are not
// full are not charged to any area (a shard's pages serve all its areas).
// BenchmarkEngine/BytesPerKey compares the sum with the live heap. When a
// write leaves its area over its quota, or the store over its MemoryLimit,
// the writer reclaims expired records first and then evicts by CLOCK: each
// (shard, area) keeps a recency list, reads only set a referenced bit (under
// the shared lock, so reads never serialise), writes move records to the
// front, and the evictor gives referenced records at the tail a second
// chance. Victim shards are taken round-robin, so the store evicts
// approximately the least recently used records overall; the record a
// write stores is never that write's own victim. A record that alone
// exceeds the quota or the limit is refused with errs.ErrQuota rather than
// stored and evicted at once.
//
// # Access tracking
//
// Each record also keeps Redis's LFU counter and its last access time,
// which OBJECT FREQ and OBJECT IDLETIME answer (engines.AccessTracker):
// reads update them under the shared lock, with the referenced bit, in
// one atomic word at the start of the record's block (access.go).
package memstore

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/generic/slab"
	"github.com/tairkv/tair/internal/errs"
)

// Options configure a Store.
type Options struct {
	// Shards is the number of lock stripes, a power of two (default 256).
	Shards int
	// SubShards is how many shards one bucket spreads over, a power of two
	// no larger than Shards (default 1; see Layout).
	SubShards int
	// MemoryLimit bounds the accounted bytes of all areas (0 = none).
	MemoryLimit int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// SweepInterval is the period of the background reclaim of expired
	// records (default 1s; negative disables the sweep).
	SweepInterval time.Duration
}

const numAreas = generic.MaxArea + 1

// arenaOptions are every shard's arena's: 4 KiB pages and one empty page
// kept (a key written and deleted again would otherwise allocate a page
// each time). A shard holds 1/256 of the data by default and every size class
// in use ties up a partly used page in each shard, so large pages would
// hold far more than the data of a small store (TestMemoryBounded: a
// 4 MiB limit over 256 shards); records beyond the largest class (504
// bytes) become dedicated allocations, one Go object each, which large
// values amortise.
var arenaOptions = slab.Options{PageSize: 1 << 12, ReservePages: 1}

// sizer answers BlockSize for the charge of a record before it is
// allocated; it never allocates (every arena has the same classes).
var sizer = slab.New(arenaOptions)

// Fixed overheads, in bytes, on top of records' arena blocks.
// itemOverhead is a record's slot in its table's index (16-byte slots at
// a load of 0.4 to 0.8) or in its pkey's skey list; psetOverhead is a
// pkey's header, its map slot and its first chunk; tableOverhead is an
// area's table in a shard: its struct, its index header and first slots,
// and its slot in the shard's map; mapOverhead is the pkey map a table
// grows at its first pkey. BenchmarkEngine/BytesPerKey compares the sum
// with the live heap.
var (
	itemOverhead  = int64(28)
	psetOverhead  = allocSize(int(unsafe.Sizeof(pset{}))) + 32 + 64
	mapOverhead   = int64(48 + 208)
	tableOverhead = allocSize(int(unsafe.Sizeof(tableAlloc{}))) + allocSize(int(unsafe.Sizeof(slab.Index{}))) + 32
)

// sizeClasses are the Go allocator's small size classes
// (internal/runtime/gc.SizeClassToSize, stable since Go 1.5 in shape).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocSize is the heap bytes a Go allocation of n bytes really takes:
// its size class, or whole 8 KiB pages beyond the largest class.
func allocSize(n int) int64 {
	if n <= 0 {
		return 0
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return int64((n + 8191) &^ 8191)
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return int64(sizeClasses[lo])
}

// Store is the in-memory store. It is safe for concurrent use.
type Store struct {
	shards  []shard
	mask    uint32
	subMask uint32
	subBits uint32
	now     func() time.Time
	limit   int64

	total atomic.Int64 // accounted bytes of all areas
	areas [numAreas]areaState
	// expired counts the plain keys reclaimed because they expired (the
	// dataserver's redis_expired_keys_total).
	expired atomic.Int64

	evictMu sync.Mutex // one evictor at a time; writers queue behind it
	cursor  uint32     // round-robin victim shard, guarded by evictMu

	stop chan struct{}
	wg   sync.WaitGroup
}

// areaState holds an area's totals; counters change under the lock of the
// shard whose records they count.
type areaState struct {
	quota     atomic.Int64
	bytes     atomic.Int64
	keys      atomic.Int64 // stored plain keys + pkeys with stored skeys
	evictions atomic.Int64
}

type shard struct {
	mu     sync.RWMutex
	arena  *slab.Arena
	objs   map[slab.Handle]objRec // the Objects of records holding one
	tables map[uint16]*table      // by area
	exp    []expEntry             // min-heap by expireAt
	minExp atomic.Int64           // exp[0].expireAt, 0 when exp is empty
	_      [64]byte               // keep hot shards on separate cache lines
}

// objRec is a record's Object and the Object size it was charged.
type objRec struct {
	obj  engines.Object
	size int64
}

// expEntry is a record in its shard's expiry heap.
type expEntry struct {
	expireAt int64
	h        slab.Handle
}

// tableAlloc is a table allocated with room for the counters of its first
// bucket, which every table has: one allocation where two would be, and
// the first counters charged with the table.
type tableAlloc struct {
	table
	first [1]bucketCounts
}

func newTable() *table {
	ta := &tableAlloc{}
	ta.counts = ta.first[:0:1]
	return &ta.table
}

// table holds one area's records within a shard.
type table struct {
	keys   slab.Index       // plain keys by xxhash
	pkeys  map[string]*pset // nil until the first pkey
	psets  []*pset          // by id (a skey record's bucket field)
	freeID []uint32         // ids of psets free for reuse
	lru    lruList
	counts []bucketCounts // one per bucket with records here
}

// bucketCounts are one bucket's key counters in a table.
type bucketCounts struct {
	bucket uint32
	generic.BucketKeys
}

// countsOf returns bucket's counters in tab, adding them when missing. The
// pointer is valid until the next change of tab.counts.
func (tab *table) countsOf(bucket uint32) *generic.BucketKeys {
	for i := range tab.counts {
		if tab.counts[i].bucket == bucket {
			return &tab.counts[i].BucketKeys
		}
	}
	tab.counts = append(tab.counts, bucketCounts{bucket: bucket})
	return &tab.counts[len(tab.counts)-1].BucketKeys
}

// uncountKey takes a stored key (a plain key, or a pkey whose last skey
// goes) out of bucket's counters, a plain one with its hidden bit and
// expiry, and forgets the counters once they count no key: the bucket has
// no record left in the table.
func (tab *table) uncountKey(bucket uint32, plain bool, hidden bool, expireAt int64) {
	for i := range tab.counts {
		c := &tab.counts[i]
		if c.bucket != bucket {
			continue
		}
		if plain {
			c.AddPlain(hidden, expireAt, -1)
		}
		if c.Stored--; c.Stored == 0 {
			last := len(tab.counts) - 1
			tab.counts[i] = tab.counts[last]
			tab.counts = tab.counts[:last]
		}
		return
	}
}

// pset is a pkey: its skeys in byte order.
type pset struct {
	name   string
	list   skeyList
	bucket uint32
	id     uint32
}

var _ generic.Store = (*Store)(nil)

// OpenEngine is the in-memory engine registered as name (rdb, mdb): the
// generic layer over a new Store of the given shard count, which takes
// its memory limit, clock and sweep interval from o (adjusted).
func OpenEngine(name string, shards int, o engines.Options) *generic.Engine {
	o.Adjust()
	st := New(Options{
		Shards:        shards,
		MemoryLimit:   o.MemoryLimit,
		Now:           o.Now,
		SweepInterval: o.SweepInterval,
	})
	return generic.New(generic.Config{Name: name, Store: st, Options: o})
}

// New returns a store; it starts the background sweep unless disabled.
func New(o Options) *Store {
	if o.Shards <= 0 || o.Shards&(o.Shards-1) != 0 {
		o.Shards = 256
	}
	if o.SubShards <= 0 || o.SubShards&(o.SubShards-1) != 0 || o.SubShards > o.Shards {
		o.SubShards = 1
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = time.Second
	}
	s := &Store{
		shards:  make([]shard, o.Shards),
		mask:    uint32(o.Shards - 1),
		subMask: uint32(o.SubShards - 1),
		now:     o.Now,
		limit:   o.MemoryLimit,
		stop:    make(chan struct{}),
	}
	for n := o.SubShards; n > 1; n >>= 1 {
		s.subBits++
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.tables = map[uint16]*table{}
		sh.objs = map[slab.Handle]objRec{}
		sh.arena = slab.New(arenaOptions)
	}
	if o.SweepInterval > 0 {
		s.wg.Add(1)
		go s.sweepLoop(o.SweepInterval)
	}
	return s
}

// CopiesValues tells the generic layer that the store copies the values
// it is given (generic.ValueCopier).
func (s *Store) CopiesValues() bool { return true }

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// refNow is the clock for an operation on r: the caller's reading, taken
// for the operation anyway, or the store's own.
func (s *Store) refNow(r *generic.Ref) int64 {
	if r.NowMs != 0 {
		return r.NowMs
	}
	return s.nowMs()
}

// shardIndex places key of bucket: bucket picks a group of SubShards
// consecutive shards, the key's hash one shard of the group.
func (s *Store) shardIndex(bucket uint32, key []byte) uint32 {
	i := bucket << s.subBits
	if s.subMask != 0 {
		i |= uint32(xxhash.Sum64(key)) & s.subMask
	}
	return i & s.mask
}

func (s *Store) shardOf(bucket uint32, key []byte) *shard {
	return &s.shards[s.shardIndex(bucket, key)]
}

// bucketShards calls fn for each distinct shard that can hold bucket.
func (s *Store) bucketShards(bucket uint32, fn func(sh *shard) error) error {
	seen := uint32(0)
	for j := uint32(0); j <= s.subMask; j++ {
		i := (bucket<<s.subBits | j) & s.mask
		if j > 0 && i == seen {
			break // fewer shards than a group: wrapped around
		}
		if j == 0 {
			seen = i
		}
		if err := fn(&s.shards[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) sweepLoop(every time.Duration) {
	defer s.wg.Done()
	generic.SweepEvery(every, s.stop, s.reclaimExpired)
}

// Close stops the background sweep. The data stays reachable until the
// store is dropped: the engine refuses calls after Close.
func (s *Store) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
	return nil
}

// lookupLocked finds the record of r (0 when missing); ps is r's pkey
// when r is a prefix ref and the pkey exists.
func (sh *shard) lookupLocked(r *generic.Ref) (tab *table, ps *pset, h slab.Handle) {
	tab = sh.tables[r.Area]
	if tab == nil {
		return nil, nil, 0
	}
	if !r.Prefix {
		h, _ = tab.keys.Get(xxhash.Sum64(r.Key.Key), sh.keyEq(r.Key.Key))
		return tab, nil, h
	}
	ps = tab.pkeys[string(r.Key.Key)]
	if ps == nil {
		return tab, nil, 0
	}
	return tab, ps, ps.list.get(sh, r.Skey)
}

// Get returns the stored record, its value copied under the shared lock;
// it only records the access (and marks the record referenced), unless
// r.NoTouch.
func (s *Store) Get(r generic.Ref) (engines.Entry, bool, error) {
	sh := s.shardOf(r.Bucket, r.Key.Key)
	sh.mu.RLock()
	_, _, h := sh.lookupLocked(&r)
	if h == 0 {
		sh.mu.RUnlock()
		return engines.Entry{}, false, nil
	}
	ent := sh.entry(h, true)
	if !r.NoTouch {
		touch(sh.access(h), s.refNow(&r), true)
	}
	sh.mu.RUnlock()
	return ent, true, nil
}

// maxRecordKey is the longest key (or skey) a record holds: its header
// keeps the length in 16 bits. The engines' key limit (MaxKeySize, 1024 by
// default) is far below, but it is an operator's setting.
const maxRecordKey = 1<<16 - 1

// recordKey is the key r's record stores: the skey of a prefix ref.
func recordKey(r *generic.Ref) []byte {
	if r.Prefix {
		return r.Skey
	}
	return r.Key.Key
}

// checkRecordKey refuses a key longer than a record can hold.
func checkRecordKey(key []byte) error {
	if len(key) > maxRecordKey {
		return errs.ErrKeyTooLong
	}
	return nil
}

// recordSize is what a record is charged: its arena block, its slot and
// its Object.
func recordSize(key []byte, e *engines.Entry) int64 {
	n := itemOverhead + blockCharge(sizer.BlockSize(hdrLen(e.ExpireAt != 0)+len(key)+len(e.Value)))
	if e.Object != nil {
		n += int64(e.Object.Size())
	}
	return n
}

// Charge is the bytes a string record without expiry, with a key of
// keyLen bytes and a value of valueLen bytes, is charged (tables and
// pkeys are charged apart).
func Charge(keyLen, valueLen int) int64 {
	return itemOverhead + blockCharge(sizer.BlockSize(baseHdr+keyLen+valueLen))
}

// blockCharge is what an arena block of n bytes (its Cap) takes: n in a
// page, or for a dedicated allocation (beyond MaxBlock) the Go heap's
// allocation of n bytes.
func blockCharge(n int) int64 {
	if n > sizer.MaxBlock() {
		return allocSize(n)
	}
	return int64(n)
}

// TableOverhead is the charge of one (bucket, area) table of a shard, paid
// by the area while the table holds records.
func TableOverhead() int64 { return tableOverhead }

// checkFits refuses a record that could never fit its area's quota or the
// store's limit.
func (s *Store) checkFits(area uint16, size int64) error {
	if q := s.areas[area].quota.Load(); q > 0 && size > q {
		return errs.ErrQuota
	}
	if s.limit > 0 && size > s.limit {
		return errs.ErrQuota
	}
	return nil
}

// chargeOf is what h is charged now.
func (sh *shard) chargeOf(h slab.Handle) int64 {
	n := itemOverhead + blockCharge(sh.arena.Cap(h))
	if sh.bits(h)&bitObj != 0 {
		n += sh.objs[h].size
	}
	return n
}

// Update runs fn under the shard's exclusive lock and applies its action;
// it evicts afterwards, outside the lock, when the write left the area or
// the store over budget. fn's cur.Value aliases the arena: valid during
// fn only.
func (s *Store) Update(r generic.Ref, fn generic.RawUpdate) error {
	if err := checkRecordKey(recordKey(&r)); err != nil {
		return err
	}
	now := s.refNow(&r)
	sh := s.shardOf(r.Bucket, r.Key.Key)
	sh.mu.Lock()
	tab, ps, h := sh.lookupLocked(&r)
	var cur engines.Entry
	if h != 0 {
		cur = sh.entry(h, false)
	}
	// An access, as Redis's lookupKey: whatever fn decides, even to
	// fail (a WRONGTYPE found the key), the live record it saw is
	// touched; an expired one is replaced, and the write makes a new
	// record.
	live := h != 0 && !engines.Expired(cur.ExpireAt, now)
	next, act, err := fn(cur, h != 0)
	if err != nil {
		if live && !r.NoTouch {
			touch(sh.access(h), now, true)
		}
		sh.mu.Unlock()
		return err
	}
	var written slab.Handle // spared by the eviction this write triggers
	switch act {
	case engines.Store:
		key := recordKey(&r)
		size := recordSize(key, &next)
		if err := s.checkFits(r.Area, size); err != nil {
			sh.mu.Unlock()
			return err
		}
		h = s.putLocked(sh, tab, ps, &r, key, h, &next, size)
		switch {
		case !live:
			sh.access(h).Store(uint64(newAccess(now)))
		case !r.NoTouch:
			touch(sh.access(h), now, false) // the write moved it to the front
		}
		written = h
	case engines.Delete:
		if h != 0 {
			s.removeLocked(sh, h)
		}
	case engines.Keep:
		if live && !r.NoTouch {
			touch(sh.access(h), now, true) // a read
		}
	}
	sh.mu.Unlock()
	if act == engines.Store && s.overBudget(r.Area) {
		s.evict(r.Area, sh, written)
	}
	return nil
}

// putLocked stores e as the record of r (key is its key or skey), which
// is h (0: missing), charging size: it creates the record (table and
// pkey as needed), rewrites it in its block, or moves it to a block of
// its new size class; it returns the record's handle. e.Value may alias
// h's block.
func (s *Store) putLocked(sh *shard, tab *table, ps *pset, r *generic.Ref, key []byte, h slab.Handle, e *engines.Entry, size int64) slab.Handle {
	a := &s.areas[r.Area]
	exp := e.ExpireAt != 0
	need := hdrLen(exp) + len(key) + len(e.Value)
	var oldCharge int64
	oldExp, oldHidden := int64(0), false
	fresh := h == 0
	if fresh {
		if tab == nil {
			tab = newTable()
			sh.tables[r.Area] = tab
			a.bytes.Add(tableOverhead)
			s.total.Add(tableOverhead)
		}
		if r.Prefix && ps == nil {
			ps = s.newPsetLocked(tab, r)
		}
		h = sh.arena.Alloc(need)
		b := sh.arena.Bytes(h, need)
		clear(b[:baseHdr])
		bucket := r.Bucket
		var bits uint8
		if r.Prefix {
			bucket, bits = ps.id, bitSkey
		}
		le.PutUint32(b[offBucket:], bucket)
		le.PutUint16(b[offArea:], r.Area)
		le.PutUint16(b[offKlen:], uint16(len(key)))
		le.PutUint32(b[offVlen:], uint32(len(e.Value)))
		b[offBits] = bits
		if exp {
			b[offBits] |= bitExp
			le.PutUint64(b[offExpire:], 0)
			le.PutUint32(b[offHeap:], ^uint32(0))
		}
		hl := hdrLen(exp)
		copy(b[hl:], key)
		copy(b[hl+len(key):], e.Value)
		if r.Prefix {
			p, _ := ps.list.search(sh, key)
			ps.list.insertAt(p, h)
		} else {
			tab.keys.Put(xxhash.Sum64(key), h, sh.keyEq(key))
			a.keys.Add(1)
			tab.countsOf(r.Bucket).Stored++ // not hidden, no expiry yet: counted below
		}
		tab.lru.pushFront(sh, h)
	} else {
		oldCharge = sh.chargeOf(h)
		oldExp, oldHidden = sh.expOf(h), sh.hidden(h)
		oldHasExp := sh.bits(h)&bitExp != 0
		if oldHasExp != exp || sh.arena.Cap(h) != sh.arena.BlockSize(need) {
			h = sh.moveLocked(tab, ps, h, key, e.Value, exp)
		} else {
			b := sh.arena.Bytes(h, need)
			le.PutUint32(b[offVlen:], uint32(len(e.Value)))
			copy(b[hdrLen(exp)+len(key):], e.Value) // memmove: e.Value may be this very value
		}
		if sh.bits(h)&bitObj != 0 {
			delete(sh.objs, h)
		}
		// Not moved to the front of the recency list now (its
		// neighbours' headers are two more cache misses per write): its
		// referenced bit, set below, moves it there when the eviction's
		// CLOCK hand reaches it, as a read does.
	}
	b := sh.hdr(h)
	le.PutUint64(b[offVersion:], uint64(e.Version))
	le.PutUint32(b[offFlags:], e.Flags)
	b[offType] = uint8(e.Type)
	bits := b[offBits] &^ (bitHidden | bitObj)
	if e.Hidden {
		bits |= bitHidden
	}
	if e.Object != nil {
		bits |= bitObj
		sh.objs[h] = objRec{obj: e.Object, size: int64(e.Object.Size())}
	}
	b[offBits] = bits
	if !r.Prefix && (oldHidden != e.Hidden || oldExp != e.ExpireAt) {
		c := tab.countsOf(r.Bucket)
		c.AddPlain(oldHidden, oldExp, -1)
		c.AddPlain(e.Hidden, e.ExpireAt, 1)
	}
	if exp {
		sh.setExp(h, e.ExpireAt)
		if i := sh.heapIdx(h); i < 0 {
			sh.heapPush(h, e.ExpireAt)
		} else if oldExp != e.ExpireAt {
			sh.exp[i].expireAt = e.ExpireAt
			sh.heapFix(i)
		}
		sh.syncMinExp()
	}
	if d := size - oldCharge; d != 0 {
		a.bytes.Add(d)
		s.total.Add(d)
	}
	if fresh {
		sh.clearRef(h)
	} else {
		sh.setRef(h)
	}
	return h
}

// newPsetLocked creates r's pkey in tab.
func (s *Store) newPsetLocked(tab *table, r *generic.Ref) *pset {
	a := &s.areas[r.Area]
	if tab.pkeys == nil {
		tab.pkeys = map[string]*pset{}
		a.bytes.Add(mapOverhead)
		s.total.Add(mapOverhead)
	}
	ps := &pset{name: string(r.Key.Key), bucket: r.Bucket}
	if n := len(tab.freeID); n > 0 {
		ps.id = tab.freeID[n-1]
		tab.freeID = tab.freeID[:n-1]
		tab.psets[ps.id] = ps
	} else {
		ps.id = uint32(len(tab.psets))
		tab.psets = append(tab.psets, ps)
	}
	tab.pkeys[ps.name] = ps
	a.keys.Add(1)
	tab.countsOf(r.Bucket).Stored++
	n := psetOverhead + allocSize(len(ps.name))
	a.bytes.Add(n)
	s.total.Add(n)
	return ps
}

// moveLocked moves record h to a new block for a value of len(value)
// bytes, with or without the expiry part (exp), and relinks it
// everywhere; value may alias h's block, which it frees last. The
// expiry part, when added, is left for the caller to fill.
func (sh *shard) moveLocked(tab *table, ps *pset, h slab.Handle, key, value []byte, exp bool) slab.Handle {
	ob := sh.hdr(h)
	oldExp := ob[offBits]&bitExp != 0
	var oldAt int64
	oldIdx := -1
	if oldExp {
		oldAt, oldIdx = sh.expOf(h), sh.heapIdx(h)
	}
	hl := hdrLen(exp)
	need := hl + len(key) + len(value)
	nh := sh.arena.Alloc(need)
	nb := sh.arena.Bytes(nh, need)
	copy(nb[:baseHdr], ob)
	le.PutUint32(nb[offVlen:], uint32(len(value)))
	nb[offBits] &^= bitExp
	if exp {
		nb[offBits] |= bitExp
		if oldExp {
			le.PutUint64(nb[offExpire:], uint64(oldAt))
			le.PutUint32(nb[offHeap:], uint32(int32(oldIdx)))
		} else {
			le.PutUint32(nb[offHeap:], ^uint32(0))
		}
	}
	copy(nb[hl:], sh.keyOf(h))
	copy(nb[hl+len(key):], value)
	// Relink: CLOCK neighbours, heap, index or skey list, Object.
	if p := sh.prev(nh); p != 0 {
		sh.setNext(p, nh)
	} else {
		tab.lru.head = nh
	}
	if n := sh.next(nh); n != 0 {
		sh.setPrev(n, nh)
	} else {
		tab.lru.tail = nh
	}
	if oldIdx >= 0 {
		if exp {
			sh.exp[oldIdx].h = nh
		} else {
			sh.heapRemove(oldIdx)
			sh.syncMinExp()
		}
	}
	if ob[offBits]&bitSkey != 0 {
		p, _ := ps.list.search(sh, key)
		ps.list.chunks[p.c][p.i] = nh
	} else {
		tab.keys.Put(xxhash.Sum64(key), nh, func(o slab.Handle) bool { return o == h })
	}
	if ob[offBits]&bitObj != 0 {
		sh.objs[nh] = sh.objs[h]
		delete(sh.objs, h)
	}
	sh.arena.Free(h)
	return nh
}

// removeLocked unlinks h from every structure, uncharges and frees it; it
// drops the pkey and the table that it leaves empty.
func (s *Store) removeLocked(sh *shard, h slab.Handle) {
	area := sh.areaOf(h)
	a := &s.areas[area]
	tab := sh.tables[area]
	charge := sh.chargeOf(h)
	bits := sh.bits(h)
	if bits&bitSkey == 0 {
		key := sh.keyOf(h)
		tab.keys.Delete(xxhash.Sum64(key), func(o slab.Handle) bool { return o == h })
		a.keys.Add(-1)
		tab.uncountKey(sh.bucketOf(h), true, bits&bitHidden != 0, sh.expOf(h))
	} else {
		ps := tab.psets[sh.bucketOf(h)]
		p, _ := ps.list.search(sh, sh.keyOf(h))
		ps.list.deleteAt(p)
		if ps.list.n == 0 {
			delete(tab.pkeys, ps.name)
			tab.psets[ps.id] = nil
			tab.freeID = append(tab.freeID, ps.id)
			a.keys.Add(-1)
			tab.uncountKey(ps.bucket, false, false, 0)
			n := psetOverhead + allocSize(len(ps.name))
			a.bytes.Add(-n)
			s.total.Add(-n)
		}
	}
	if i := sh.heapIdx(h); i >= 0 {
		sh.heapRemove(i)
		sh.syncMinExp()
	}
	tab.lru.remove(sh, h)
	if bits&bitObj != 0 {
		delete(sh.objs, h)
	}
	sh.arena.Free(h)
	a.bytes.Add(-charge)
	s.total.Add(-charge)
	if tab.lru.n == 0 {
		delete(sh.tables, area)
		n := tableOverhead
		if tab.pkeys != nil {
			n += mapOverhead
		}
		a.bytes.Add(-n)
		s.total.Add(-n)
	}
}

// Range calls fn with the skeys of k in order; the skey and the entry's
// value alias the arena and are valid during the call only.
func (s *Store) Range(k engines.Key, start, end []byte, reverse bool, fn func(skey []byte, e *engines.Entry) bool) error {
	sh := s.shardOf(k.Bucket, k.Key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	tab := sh.tables[k.Area]
	if tab == nil {
		return nil
	}
	ps := tab.pkeys[string(k.Key)]
	if ps == nil {
		return nil
	}
	var ent engines.Entry // one for the whole range: fn must not retain it
	if !reverse {
		p := pos{}
		if start != nil {
			p, _ = ps.list.search(sh, start)
		}
		ps.list.ascend(p, func(h slab.Handle) bool {
			key := sh.keyOf(h)
			if end != nil && bytes.Compare(key, end) > 0 {
				return false
			}
			ent = sh.entry(h, false)
			return fn(key, &ent)
		})
		return nil
	}
	p := ps.list.end()
	if end != nil {
		var found bool
		p, found = ps.list.search(sh, end)
		if found { // end is inclusive: start after it
			p.i++
		}
	}
	ps.list.descend(p, func(h slab.Handle) bool {
		key := sh.keyOf(h)
		if start != nil && bytes.Compare(key, start) < 0 {
			return false
		}
		ent = sh.entry(h, false)
		return fn(key, &ent)
	})
	return nil
}

func (s *Store) RemovePrefix(k engines.Key) (int, error) {
	sh := s.shardOf(k.Bucket, k.Key)
	now := s.nowMs()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tab := sh.tables[k.Area]
	if tab == nil {
		return 0, nil
	}
	ps := tab.pkeys[string(k.Key)]
	if ps == nil {
		return 0, nil
	}
	return s.removePsetLocked(sh, ps, now), nil
}

// removePsetLocked removes every skey of ps and returns how many were live.
func (s *Store) removePsetLocked(sh *shard, ps *pset, now int64) int {
	n := 0
	for _, h := range ps.list.all() {
		if !engines.Expired(sh.expOf(h), now) {
			n++
		}
		s.removeLocked(sh, h)
	}
	return n
}

// ForEach yields bucket's records shard by shard. Records are copied out
// under the shard's shared lock, their keys and values into one buffer
// allocated for the shard's batch (callers may keep them), and handed to
// fn after the lock is released, so that a slow consumer (a migration
// sending over the network) does not stall writers; records holding an
// Object are handed to fn under the lock, since the Object may change
// once it is released. Nothing is allocated per plain record.
func (s *Store) ForEach(bucket uint32, fn func(r *engines.Record) error) error {
	bp := recordBatches.Get().(*[]engines.Record)
	defer func() {
		clear((*bp)[:cap(*bp)]) // drop the references to keys and values
		*bp = (*bp)[:0]
		recordBatches.Put(bp)
	}()
	return s.bucketShards(bucket, func(sh *shard) error {
		batch := (*bp)[:0]
		sh.mu.RLock()
		// Size the buffer first: it must not move once sliced.
		total := 0
		for _, tab := range sh.tables {
			tab.keys.Range(func(h slab.Handle) bool {
				if sh.bucketOf(h) == bucket {
					total += sh.klen(h) + sh.vlen(h)
				}
				return true
			})
			for _, ps := range tab.pkeys {
				if ps.bucket == bucket {
					total += len(ps.name)
					ps.list.ascend(pos{}, func(h slab.Handle) bool { total += sh.klen(h) + sh.vlen(h); return true })
				}
			}
		}
		buf := make([]byte, 0, total)
		cp := func(b []byte) []byte {
			buf = append(buf, b...)
			return buf[len(buf)-len(b) : len(buf) : len(buf)]
		}
		entry := func(h slab.Handle) engines.Entry {
			e := sh.entry(h, false)
			if e.Value != nil {
				e.Value = cp(e.Value)
			}
			return e
		}
		var err error
		for area, tab := range sh.tables {
			tab.keys.Range(func(h slab.Handle) bool {
				if sh.bucketOf(h) != bucket {
					return true
				}
				batch = append(batch, engines.Record{Area: area, Key: cp(sh.keyOf(h)), Entry: entry(h)})
				if batch[len(batch)-1].Entry.Object == nil {
					return true
				}
				// Handed over under the lock, its slot reused.
				r := batch[len(batch)-1]
				batch = batch[:len(batch)-1]
				err = objFn(fn, r)
				return err == nil
			})
			if err != nil {
				sh.mu.RUnlock()
				return err
			}
			for _, ps := range tab.pkeys {
				if ps.bucket != bucket {
					continue
				}
				r := engines.Record{Area: area, Key: cp([]byte(ps.name)), Prefix: make([]engines.KV, 0, ps.list.n)}
				hasObj := false
				ps.list.ascend(pos{}, func(h slab.Handle) bool {
					kv := engines.KV{Key: cp(sh.keyOf(h)), Entry: entry(h)}
					hasObj = hasObj || kv.Entry.Object != nil
					r.Prefix = append(r.Prefix, kv)
					return true
				})
				if !hasObj {
					batch = append(batch, r)
				} else if err := fn(&r); err != nil {
					sh.mu.RUnlock()
					return err
				}
			}
		}
		sh.mu.RUnlock()
		*bp = batch
		for i := range batch {
			if err := fn(&batch[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// objFn calls fn with a copy of r, so that r itself stays on the stack.
func objFn(fn func(r *engines.Record) error, r engines.Record) error { return fn(&r) }

// BucketKeys is engines.KeyLister: the keys of bucket are copied shard by
// shard under the shard's shared lock (no value is read) into one buffer
// per shard and handed to fn once it is released.
func (s *Store) BucketKeys(bucket uint32, fn func(area uint16, key []byte, prefix bool) error) error {
	type ref struct {
		area   uint16
		key    []byte
		prefix bool
	}
	var batch []ref
	return s.bucketShards(bucket, func(sh *shard) error {
		batch = batch[:0]
		sh.mu.RLock()
		total := 0
		for _, tab := range sh.tables {
			tab.keys.Range(func(h slab.Handle) bool {
				if sh.bucketOf(h) == bucket {
					total += sh.klen(h)
				}
				return true
			})
			for _, ps := range tab.pkeys {
				if ps.bucket == bucket {
					total += len(ps.name)
				}
			}
		}
		buf := make([]byte, 0, total)
		cp := func(b []byte) []byte {
			buf = append(buf, b...)
			return buf[len(buf)-len(b) : len(buf) : len(buf)]
		}
		for area, tab := range sh.tables {
			tab.keys.Range(func(h slab.Handle) bool {
				if sh.bucketOf(h) == bucket {
					batch = append(batch, ref{area, cp(sh.keyOf(h)), false})
				}
				return true
			})
			for _, ps := range tab.pkeys {
				if ps.bucket == bucket {
					batch = append(batch, ref{area, cp([]byte(ps.name)), true})
				}
			}
		}
		sh.mu.RUnlock()
		for _, r := range batch {
			if err := fn(r.area, r.key, r.prefix); err != nil {
				return err
			}
		}
		return nil
	})
}

// recordBatches recycles ForEach's record batches.
var recordBatches = sync.Pool{New: func() any { return new([]engines.Record) }}

// Restore replaces the record (or the whole pkey; merged, the skeys r
// holds) with r, as given, as a new record: its access frequency and
// time start afresh (Redis's RESTORE and MIGRATE do the same without
// IDLETIME or FREQ). Values are copied into the arena.
func (s *Store) Restore(bucket uint32, r *engines.Record) error {
	if err := checkRecordKey(r.Key); err != nil {
		return err
	}
	for i := range r.Prefix {
		if err := checkRecordKey(r.Prefix[i].Key); err != nil {
			return err
		}
	}
	now := s.nowMs()
	sh := s.shardOf(bucket, r.Key)
	sh.mu.Lock()
	ref := generic.Ref{Key: engines.Key{Bucket: bucket, Area: r.Area, Key: r.Key}}
	var keep slab.Handle
	if r.Prefix == nil {
		tab, _, h := sh.lookupLocked(&ref)
		ent := r.Entry
		size := recordSize(r.Key, &ent)
		if err := s.checkFits(r.Area, size); err != nil {
			sh.mu.Unlock()
			return err
		}
		h = s.putLocked(sh, tab, nil, &ref, r.Key, h, &ent, size)
		sh.access(h).Store(uint64(newAccess(now))) // a new record: RESTORE makes one
		keep = h
	} else {
		for i := range r.Prefix {
			if err := s.checkFits(r.Area, recordSize(r.Prefix[i].Key, &r.Prefix[i].Entry)); err != nil {
				sh.mu.Unlock()
				return err
			}
		}
		if tab := sh.tables[r.Area]; tab != nil && !r.Merge {
			if ps := tab.pkeys[string(r.Key)]; ps != nil {
				s.removePsetLocked(sh, ps, 0)
			}
		}
		ref.Prefix = true
		for i := range r.Prefix {
			kv := &r.Prefix[i]
			ent := kv.Entry
			ref.Skey = kv.Key
			tab, ps, h := sh.lookupLocked(&ref)
			h = s.putLocked(sh, tab, ps, &ref, kv.Key, h, &ent, recordSize(kv.Key, &ent))
			sh.access(h).Store(uint64(newAccess(now)))
		}
	}
	sh.mu.Unlock()
	if s.overBudget(r.Area) {
		s.evict(r.Area, sh, keep)
	}
	return nil
}

// dropLocked removes the records of tab that keep says to, and returns how
// many live keys (a pkey once) it removed at now.
func (s *Store) dropLocked(sh *shard, tab *table, now int64, keep func(bucket uint32) bool) int64 {
	var n int64
	var hs []slab.Handle
	tab.keys.Range(func(h slab.Handle) bool {
		if !keep(sh.bucketOf(h)) {
			hs = append(hs, h)
			if !engines.Expired(sh.expOf(h), now) {
				n++
			}
		}
		return true
	})
	var pss []*pset
	for _, ps := range tab.pkeys {
		if !keep(ps.bucket) {
			pss = append(pss, ps)
		}
	}
	for _, h := range hs {
		s.removeLocked(sh, h)
	}
	for _, ps := range pss {
		if s.removePsetLocked(sh, ps, now) > 0 {
			n++
		}
	}
	return n
}

func (s *Store) DeleteBucket(bucket uint32) error {
	now := s.nowMs()
	keep := func(b uint32) bool { return b != bucket }
	return s.bucketShards(bucket, func(sh *shard) error {
		// Looked for under the shared lock first: a migration's first
		// step deletes a bucket that is usually not there, and the
		// exclusive lock would hold up the shard's other buckets.
		sh.mu.RLock()
		found := sh.holdsLocked(bucket)
		sh.mu.RUnlock()
		if !found {
			return nil
		}
		sh.mu.Lock()
		defer sh.mu.Unlock()
		tabs := make([]*table, 0, len(sh.tables))
		for _, tab := range sh.tables {
			tabs = append(tabs, tab)
		}
		for _, tab := range tabs {
			s.dropLocked(sh, tab, now, keep)
		}
		return nil
	})
}

// holdsLocked reports whether the shard has a record of bucket (sh.mu
// held, shared or not).
func (sh *shard) holdsLocked(bucket uint32) bool {
	for _, tab := range sh.tables {
		for i := range tab.counts {
			if tab.counts[i].bucket == bucket {
				return true
			}
		}
	}
	return false
}

func (s *Store) DeleteArea(area uint16) (int64, error) {
	now := s.nowMs()
	all := func(uint32) bool { return false }
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if tab := sh.tables[area]; tab != nil {
			n += s.dropLocked(sh, tab, now, all)
		}
		sh.mu.Unlock()
	}
	return n, nil
}

// Count reclaims expired records, then reads the area's key counter: exact
// at the time of the call.
func (s *Store) Count(area uint16) int64 {
	s.reclaimExpired()
	return s.areas[area].keys.Load()
}

// CountKeys reclaims the buckets' expired records, then sums their tables'
// counters by area: one visit of each table of the buckets' shards.
func (s *Store) CountKeys(buckets []uint32, fn func(area uint16, c engines.KeyCounts)) {
	now := s.nowMs()
	tally := generic.KeyTally{}
	for _, b := range buckets {
		_ = s.bucketShards(b, func(sh *shard) error {
			s.reclaimShard(sh, now)
			sh.mu.RLock()
			for area, tab := range sh.tables {
				for i := range tab.counts {
					if tab.counts[i].bucket == b {
						tally.Add(area, tab.counts[i].BucketKeys)
						break
					}
				}
			}
			sh.mu.RUnlock()
			return nil
		})
	}
	tally.Report(now, fn)
}

// CountAreas implements generic.AreaCounter.
func (s *Store) CountAreas(counts *[generic.MaxArea + 1]int64) {
	s.reclaimExpired()
	for a := range counts {
		counts[a] = s.areas[a].keys.Load()
	}
}

func (s *Store) Usage(area uint16) (bytes, evictions int64) {
	a := &s.areas[area]
	return a.bytes.Load(), a.evictions.Load()
}

// ExpiredKeys returns how many records the store reclaimed because they
// had expired.
func (s *Store) ExpiredKeys() int64 { return s.expired.Load() }

// TotalBytes returns the accounted bytes of all areas.
func (s *Store) TotalBytes() int64 { return s.total.Load() }

// ArenaStats sums the shards' arena figures (tests, diagnostics).
func (s *Store) ArenaStats() slab.Stats {
	var t slab.Stats
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		st := sh.arena.Stats()
		sh.mu.RUnlock()
		t.InUse += st.InUse
		t.Reserved += st.Reserved
		t.Metadata += st.Metadata
		t.Pages += st.Pages
		t.EmptyPages += st.EmptyPages
		t.Blocks += st.Blocks
		t.Dedicated += st.Dedicated
		t.DedicatedBytes += st.DedicatedBytes
	}
	return t
}

// SetQuota sets area's quota and evicts at once down to it.
func (s *Store) SetQuota(area uint16, bytes int64) {
	s.areas[area].quota.Store(bytes)
	if s.overBudget(area) {
		s.evict(area, nil, 0)
	}
}

// Compact reclaims expired records.
func (s *Store) Compact() error {
	s.reclaimExpired()
	return nil
}

// reclaimExpired removes every record expired at now; shards whose earliest
// expiry is still ahead are skipped without locking.
func (s *Store) reclaimExpired() {
	now := s.nowMs()
	for i := range s.shards {
		s.reclaimShard(&s.shards[i], now)
	}
}

// reclaimShard removes sh's records expired at now, without locking when
// none is.
func (s *Store) reclaimShard(sh *shard, now int64) {
	if m := sh.minExp.Load(); m == 0 || !engines.Expired(m, now) {
		return
	}
	sh.mu.Lock()
	for len(sh.exp) > 0 && engines.Expired(sh.exp[0].expireAt, now) {
		h := sh.exp[0].h
		if !sh.isSkey(h) {
			s.expired.Add(1)
		}
		s.removeLocked(sh, h)
	}
	sh.mu.Unlock()
}

// overBudget reports whether area is over its quota or the store over its
// limit.
func (s *Store) overBudget(area uint16) bool {
	if q := s.areas[area].quota.Load(); q > 0 && s.areas[area].bytes.Load() > q {
		return true
	}
	return s.limit > 0 && s.total.Load() > s.limit
}

// evict brings area under its quota and the store under its limit:
// expired records go first, then CLOCK victims taken round-robin over the
// shards. The record keep of shard keepSh (the record whose write called
// evict, or none) is never the victim: a write that fits is not
// acknowledged and then evicted by its own eviction, which a fresh record
// alone in its shard's table (CLOCK victim there) would otherwise be
// whenever the round-robin reached its shard first. keep may have been
// freed (and its block reused) since: sparing another record once is
// harmless.
func (s *Store) evict(area uint16, keepSh *shard, keep slab.Handle) {
	s.evictMu.Lock()
	defer s.evictMu.Unlock()
	if !s.overBudget(area) {
		return // another writer's eviction already made room
	}
	s.reclaimExpired()
	for {
		victimArea := -1 // any area
		if q := s.areas[area].quota.Load(); q > 0 && s.areas[area].bytes.Load() > q {
			victimArea = int(area)
		} else if !(s.limit > 0 && s.total.Load() > s.limit) {
			return
		}
		if !s.evictOne(victimArea, keepSh, keep) {
			return // nothing left to evict
		}
	}
}

// evictOne evicts one record of area (any area when area < 0) from the
// next shard that holds an unreferenced one; it reports false when no shard
// holds any record. Two rounds suffice: the first clears every bit.
func (s *Store) evictOne(area int, keepSh *shard, keep slab.Handle) bool {
	for tries := 0; tries < 2*len(s.shards)+1; tries++ {
		sh := &s.shards[s.cursor&s.mask]
		s.cursor++
		k := slab.Handle(0)
		if sh == keepSh {
			k = keep
		}
		sh.mu.Lock()
		var victim slab.Handle
		if area >= 0 {
			if tab := sh.tables[uint16(area)]; tab != nil {
				victim = tab.lru.clockVictim(sh, k)
			}
		} else {
			for _, tab := range sh.tables {
				if victim = tab.lru.clockVictim(sh, k); victim != 0 {
					break
				}
			}
		}
		if victim == 0 {
			sh.mu.Unlock()
			continue
		}
		s.areas[sh.areaOf(victim)].evictions.Add(1)
		s.removeLocked(sh, victim)
		sh.mu.Unlock()
		return true
	}
	return false
}

func (sh *shard) syncMinExp() {
	if len(sh.exp) == 0 {
		sh.minExp.Store(0)
	} else {
		sh.minExp.Store(sh.exp[0].expireAt)
	}
}

// lruList is a doubly linked recency list through the records' headers.
type lruList struct {
	head, tail slab.Handle
	n          int
}

func (l *lruList) pushFront(sh *shard, h slab.Handle) {
	l.n++
	sh.setPrev(h, 0)
	sh.setNext(h, l.head)
	if l.head != 0 {
		sh.setPrev(l.head, h)
	} else {
		l.tail = h
	}
	l.head = h
}

func (l *lruList) remove(sh *shard, h slab.Handle) {
	l.n--
	p, n := sh.prev(h), sh.next(h)
	if p != 0 {
		sh.setNext(p, n)
	} else {
		l.head = n
	}
	if n != 0 {
		sh.setPrev(n, p)
	} else {
		l.tail = p
	}
	sh.setPrev(h, 0)
	sh.setNext(h, 0)
}

func (l *lruList) moveToFront(sh *shard, h slab.Handle) {
	if l.head == h {
		return
	}
	l.remove(sh, h)
	l.pushFront(sh, h)
}

// clockVictim returns the least recently used record that was not read
// since it last reached the front, giving read records a second chance
// (their bit is cleared and they move to the front). It returns 0 when
// every record of the list had been read: the evictor then tries another
// shard, so a shard holding only hot records keeps them. keep is never
// returned (it moves to the front, its bit unchanged).
func (l *lruList) clockVictim(sh *shard, keep slab.Handle) slab.Handle {
	for n := l.n; n > 0; n-- {
		h := l.tail
		if h == keep {
			l.moveToFront(sh, h)
			continue
		}
		if !sh.referenced(h) {
			return h
		}
		sh.clearRef(h)
		l.moveToFront(sh, h)
	}
	return 0
}

// The expiry heap: a min-heap of (expireAt, handle), each record keeping
// its index in its header.

func (sh *shard) heapSwap(i, j int) {
	e := sh.exp
	e[i], e[j] = e[j], e[i]
	sh.setHeapIdx(e[i].h, i)
	sh.setHeapIdx(e[j].h, j)
}

func (sh *shard) heapUp(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if sh.exp[i].expireAt <= sh.exp[j].expireAt {
			break
		}
		sh.heapSwap(i, j)
		j = i
	}
}

func (sh *shard) heapDown(i0 int) bool {
	n := len(sh.exp)
	i := i0
	for {
		j := 2*i + 1
		if j >= n || j < 0 {
			break
		}
		if r := j + 1; r < n && sh.exp[r].expireAt < sh.exp[j].expireAt {
			j = r
		}
		if sh.exp[j].expireAt >= sh.exp[i].expireAt {
			break
		}
		sh.heapSwap(i, j)
		i = j
	}
	return i > i0
}

func (sh *shard) heapPush(h slab.Handle, at int64) {
	sh.exp = append(sh.exp, expEntry{at, h})
	sh.setHeapIdx(h, len(sh.exp)-1)
	sh.heapUp(len(sh.exp) - 1)
}

func (sh *shard) heapFix(i int) {
	if !sh.heapDown(i) {
		sh.heapUp(i)
	}
}

// heapRemove removes the entry at i; the record's index is not reset
// (the caller frees or moves the record).
func (sh *shard) heapRemove(i int) {
	n := len(sh.exp) - 1
	if n != i {
		sh.heapSwap(i, n)
		sh.exp = sh.exp[:n]
		sh.heapFix(i)
	} else {
		sh.exp = sh.exp[:n]
	}
}
