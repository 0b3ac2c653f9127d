// Package memstore is the in-memory generic.Store under mdb and rdb: sharded
// hash maps with one RWMutex per shard, an ordered tree per pkey, an expiry
// heap per shard and CLOCK (second-chance LRU) eviction per area.
//
// # Layout
//
// A record lives in the shard of its bucket (bucket mod Shards), so that
// ForEach and DeleteBucket (migration, SCAN) visit one shard: with
// the default 256 shards and 1023 buckets, a bucket scan reads about four
// buckets' records and filters on the bucket each record carries. Inside a
// shard, records are grouped by area, so DeleteArea drops whole tables.
//
// The number of partitions trades scan cost against memory: every area
// that has records in a shard pays for a table there (two Go maps), so
// partitions per (bucket, area) would make scans exact but cost a third of
// a small, spread-out area's quota in tables. Point operations need no more
// stripes than buckets: the dataserver serialises the commands of one
// bucket anyway. SubShards > 1 spreads each bucket over that many shards by
// key hash, for clusters with few buckets, at that factor in scan cost.
//
// A key has one bucket: callers always pass the bucket the cluster computes
// for the key (route.BucketOf), as the dataserver does.
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
// under the shard's exclusive lock by the three places a record is
// inserted, changed or removed (insertLocked, setLocked, removeLocked), so
// every write, expiry, eviction, restore and deletion keeps them exact.
// CountKeys (DBSIZE, INFO keyspace) reads them under the shared lock. A
// table holds few buckets (about buckets/Shards), so they are a small
// slice searched linearly, allocated with the table and charged with it
// (tableAlloc) for the first bucket; those of further buckets (40 bytes
// each) are not charged.
//
// # Memory accounting and eviction
//
// Each record is charged the allocation sizes of its key and value,
// Object.Size(), and a fixed overhead for the record header and its map or
// tree slot; pkeys and per-shard tables are charged too (see itemOverhead;
// BenchmarkEngine/BytesPerKey compares the sum with the live heap). When a
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
// one atomic word (access.go).
package memstore

import (
	"container/heap"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/google/btree"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
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

// Fixed overheads, in bytes, on top of the allocation sizes of keys and
// values. itemOverhead is the item struct plus its slot in a Go map (key
// string header, pointer, control byte, at the maps' load factor) or in a
// pkey's B-tree node; psetOverhead is a pkey's header, its map slot and its
// tree's root node; tableOverhead is an area's table in a shard: its
// struct, its key map's header and first group, and its slot in the
// shard's map; mapOverhead is the pkey map a table grows at its first
// pkey. BenchmarkEngine/BytesPerKey compares the sum with the live heap.
var (
	itemOverhead  = allocSize(int(unsafe.Sizeof(item{}))) + 36
	psetOverhead  = allocSize(int(unsafe.Sizeof(pset{}))) + 32 + 64
	mapOverhead   = int64(48 + 208)
	tableOverhead = allocSize(int(unsafe.Sizeof(tableAlloc{}))) + mapOverhead + 32
)

// sizeClasses are the Go allocator's small size classes
// (internal/runtime/gc.SizeClassToSize, stable since Go 1.5 in shape).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocSize is the heap bytes an allocation of n bytes really takes: its
// size class, or whole 8 KiB pages beyond the largest class.
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
	tables map[uint16]*table // by area
	exp    expHeap
	minExp atomic.Int64 // exp[0].expireAt, 0 when exp is empty
	_      [64]byte     // keep hot shards on separate cache lines
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
	keys   map[string]*item
	pkeys  map[string]*pset
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
// goes) out of bucket's counters, plain with its hidden bit and expiry,
// and forgets the counters once they count no key: the bucket has no
// record left in the table.
func (tab *table) uncountKey(bucket uint32, plain *item) {
	for i := range tab.counts {
		c := &tab.counts[i]
		if c.bucket != bucket {
			continue
		}
		if plain != nil {
			c.AddPlain(plain.hidden, plain.expireAt, -1)
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
	tree   *btree.BTreeG[*item]
	bucket uint32
}

// item is one record: a plain key, or one skey of a pkey (ps != nil).
// Its fields change under the shard's exclusive lock, but access, which
// readers update under the shared lock. It is laid out to fit the 112-byte
// size class (TestItemSizeClass): the value is a pointer and a length
// (values are immutable, so their capacity is of no use once stored), the
// charge a uint32, and the access frequency, the access time and the
// CLOCK bit share one word.
type item struct {
	key      string
	val      *byte // the value's first byte; nil for an empty value
	obj      engines.Object
	version  int64
	expireAt int64
	ps       *pset
	prev     *item // recency list of (shard, area), head = most recent
	next     *item
	access   atomic.Uint64 // an accessWord (access.go)
	vlen     uint32
	size     uint32 // bytes charged to the area (saturates at 4 GiB)
	heapIdx  int32  // index in the shard's expiry heap, -1 when absent
	flags    uint32
	bucket   uint32
	area     uint16
	typ      engines.ValueType
	hidden   bool
}

// referenced reports whether it was read since it last reached the head
// of its recency list (CLOCK's second chance).
func (it *item) referenced() bool { return accessWord(it.access.Load()).ref() }

// clearRef clears the referenced bit (under the shard's exclusive lock).
func (it *item) clearRef() {
	if w := it.access.Load(); w&accessRefBit != 0 {
		it.access.Store(w &^ accessRefBit)
	}
}

// value returns the stored value; it aliases the stored bytes.
func (it *item) value() []byte {
	if it.val == nil {
		return nil
	}
	return unsafe.Slice(it.val, it.vlen)
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
		s.shards[i].tables = map[uint16]*table{}
	}
	if o.SweepInterval > 0 {
		s.wg.Add(1)
		go s.sweepLoop(o.SweepInterval)
	}
	return s
}

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

// lookupLocked finds the record of r; ps is r's pkey when r is a prefix ref.
func (sh *shard) lookupLocked(r *generic.Ref) (tab *table, ps *pset, it *item) {
	tab = sh.tables[r.Area]
	if tab == nil {
		return nil, nil, nil
	}
	if !r.Prefix {
		return tab, nil, tab.keys[string(r.Key.Key)]
	}
	ps = tab.pkeys[string(r.Key.Key)]
	if ps == nil {
		return tab, nil, nil
	}
	it, _ = ps.tree.Get(&item{key: string(r.Skey)})
	return tab, ps, it
}

func (it *item) entry() engines.Entry {
	return engines.Entry{
		Type:     it.typ,
		Value:    it.value(),
		Object:   it.obj,
		Version:  it.version,
		ExpireAt: it.expireAt,
		Hidden:   it.hidden,
		Flags:    it.flags,
	}
}

// Get returns the stored record; under the shared lock, it only records
// the access (and marks the record referenced), unless r.NoTouch.
func (s *Store) Get(r generic.Ref) (engines.Entry, bool, error) {
	sh := s.shardOf(r.Bucket, r.Key.Key)
	sh.mu.RLock()
	tab := sh.tables[r.Area]
	var it *item
	if tab != nil {
		if !r.Prefix {
			it = tab.keys[string(r.Key.Key)]
		} else if ps := tab.pkeys[string(r.Key.Key)]; ps != nil {
			probe := item{key: string(r.Skey)}
			it, _ = ps.tree.Get(&probe)
		}
	}
	if it == nil {
		sh.mu.RUnlock()
		return engines.Entry{}, false, nil
	}
	ent := it.entry()
	if !r.NoTouch {
		touch(&it.access, s.refNow(&r), true)
	}
	sh.mu.RUnlock()
	return ent, true, nil
}

func itemLess(a, b *item) bool { return a.key < b.key }

// recordSize is what a record is charged.
func recordSize(key []byte, e *engines.Entry) int64 {
	n := itemOverhead + allocSize(len(key)) + allocSize(cap(e.Value))
	if e.Object != nil {
		n += int64(e.Object.Size())
	}
	return n
}

// Charge is the bytes a string record with a key of keyLen bytes and a
// value of valueCap bytes is charged (tables and pkeys are charged apart).
func Charge(keyLen, valueCap int) int64 {
	return itemOverhead + allocSize(keyLen) + allocSize(valueCap)
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

// Update runs fn under the shard's exclusive lock and applies its action;
// it evicts afterwards, outside the lock, when the write left the area or
// the store over budget.
func (s *Store) Update(r generic.Ref, fn generic.RawUpdate) error {
	now := s.refNow(&r)
	sh := s.shardOf(r.Bucket, r.Key.Key)
	sh.mu.Lock()
	tab, ps, it := sh.lookupLocked(&r)
	var cur engines.Entry
	if it != nil {
		cur = it.entry()
	}
	// An access, as Redis's lookupKey: whatever fn decides, even to
	// fail (a WRONGTYPE found the key), the live record it saw is
	// touched; an expired one is replaced, and the write makes a new
	// record.
	live := it != nil && !engines.Expired(it.expireAt, now)
	next, act, err := fn(cur, it != nil)
	if err != nil {
		if live && !r.NoTouch {
			touch(&it.access, now, true)
		}
		sh.mu.Unlock()
		return err
	}
	var written *item // spared by the eviction this write triggers
	switch act {
	case engines.Store:
		key := r.Key.Key
		if r.Prefix {
			key = r.Skey
		}
		size := recordSize(key, &next)
		if err := s.checkFits(r.Area, size); err != nil {
			sh.mu.Unlock()
			return err
		}
		if it == nil {
			it = s.insertLocked(sh, tab, ps, &r)
		}
		s.setLocked(sh, it, &next, size)
		switch {
		case !live:
			it.access.Store(uint64(newAccess(now)))
		case !r.NoTouch:
			touch(&it.access, now, false) // the write moved it to the front
		}
		written = it
	case engines.Delete:
		if it != nil {
			s.removeLocked(sh, it)
		}
	case engines.Keep:
		if live && !r.NoTouch {
			touch(&it.access, now, true) // a read
		}
	}
	sh.mu.Unlock()
	if act == engines.Store && s.overBudget(r.Area) {
		s.evict(r.Area, written)
	}
	return nil
}

// insertLocked creates an empty record for r (table and pkey as needed)
// and links it at the head of its recency list.
func (s *Store) insertLocked(sh *shard, tab *table, ps *pset, r *generic.Ref) *item {
	a := &s.areas[r.Area]
	if tab == nil {
		tab = newTable()
		sh.tables[r.Area] = tab
		a.bytes.Add(tableOverhead)
		s.total.Add(tableOverhead)
	}
	it := &item{heapIdx: -1, bucket: r.Bucket, area: r.Area}
	if !r.Prefix {
		if tab.keys == nil {
			tab.keys = map[string]*item{}
		}
		it.key = string(r.Key.Key)
		tab.keys[it.key] = it
		a.keys.Add(1)
		tab.countsOf(r.Bucket).Stored++ // not hidden, no expiry yet: setLocked counts those
	} else {
		if ps == nil {
			if tab.pkeys == nil {
				tab.pkeys = map[string]*pset{}
				a.bytes.Add(mapOverhead)
				s.total.Add(mapOverhead)
			}
			ps = &pset{name: string(r.Key.Key), tree: btree.NewG(16, itemLess), bucket: r.Bucket}
			tab.pkeys[ps.name] = ps
			a.keys.Add(1)
			tab.countsOf(r.Bucket).Stored++
			n := psetOverhead + allocSize(len(ps.name))
			a.bytes.Add(n)
			s.total.Add(n)
		}
		it.key = string(r.Skey)
		it.ps = ps
		ps.tree.ReplaceOrInsert(it)
	}
	tab.lru.pushFront(it)
	return it
}

// setLocked stores e into it, charging size, and refreshes its recency and
// expiry position.
func (s *Store) setLocked(sh *shard, it *item, e *engines.Entry, size int64) {
	it.typ, it.obj = e.Type, e.Object
	it.val, it.vlen = unsafe.SliceData(e.Value), uint32(len(e.Value))
	if len(e.Value) == 0 {
		it.val = nil
	}
	tab := sh.tables[it.area]
	if it.ps == nil && (it.hidden != e.Hidden || it.expireAt != e.ExpireAt) {
		c := tab.countsOf(it.bucket)
		c.AddPlain(it.hidden, it.expireAt, -1)
		c.AddPlain(e.Hidden, e.ExpireAt, 1)
	}
	it.version, it.hidden, it.flags = e.Version, e.Hidden, e.Flags
	size = min(size, math.MaxUint32)
	a := &s.areas[it.area]
	if d := size - int64(it.size); d != 0 {
		a.bytes.Add(d)
		s.total.Add(d)
		it.size = uint32(size)
	}
	if it.expireAt != e.ExpireAt {
		it.expireAt = e.ExpireAt
		sh.exp.set(it)
		sh.syncMinExp()
	}
	tab.lru.moveToFront(it)
	it.clearRef()
}

// removeLocked unlinks it from every structure and uncharges it; it drops
// the pkey and the table that it leaves empty.
func (s *Store) removeLocked(sh *shard, it *item) {
	a := &s.areas[it.area]
	tab := sh.tables[it.area]
	if it.ps == nil {
		delete(tab.keys, it.key)
		a.keys.Add(-1)
		tab.uncountKey(it.bucket, it)
	} else {
		it.ps.tree.Delete(it)
		if it.ps.tree.Len() == 0 {
			delete(tab.pkeys, it.ps.name)
			a.keys.Add(-1)
			tab.uncountKey(it.bucket, nil)
			n := psetOverhead + allocSize(len(it.ps.name))
			a.bytes.Add(-n)
			s.total.Add(-n)
		}
	}
	if it.heapIdx >= 0 {
		heap.Remove(&sh.exp, int(it.heapIdx))
		sh.syncMinExp()
	}
	tab.lru.remove(it)
	a.bytes.Add(-int64(it.size))
	s.total.Add(-int64(it.size))
	if tab.lru.n == 0 {
		delete(sh.tables, it.area)
		n := tableOverhead
		if tab.pkeys != nil {
			n += mapOverhead
		}
		a.bytes.Add(-n)
		s.total.Add(-n)
	}
}

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
	visit := func(it *item) bool {
		ent = it.entry()
		return fn(unsafe.Slice(unsafe.StringData(it.key), len(it.key)), &ent)
	}
	if !reverse {
		iter := func(it *item) bool {
			if end != nil && it.key > string(end) {
				return false
			}
			return visit(it)
		}
		if start == nil {
			ps.tree.Ascend(iter)
		} else {
			ps.tree.AscendGreaterOrEqual(&item{key: string(start)}, iter)
		}
		return nil
	}
	iter := func(it *item) bool {
		if start != nil && it.key < string(start) {
			return false
		}
		return visit(it)
	}
	if end == nil {
		ps.tree.Descend(iter)
	} else {
		ps.tree.DescendLessOrEqual(&item{key: string(end)}, iter)
	}
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
	its := make([]*item, 0, ps.tree.Len())
	ps.tree.Ascend(func(it *item) bool { its = append(its, it); return true })
	n := 0
	for _, it := range its {
		if !engines.Expired(it.expireAt, now) {
			n++
		}
		s.removeLocked(sh, it)
	}
	return n
}

// ForEach yields bucket's records shard by shard. Items and prefix
// records are copied out under the shard's shared lock and handed to fn
// after it is released, so that a slow consumer (a migration sending over
// the network) does not stall writers; records holding an Object are
// handed to fn under the lock, since the Object may change once it is
// released. Keys alias the stored key strings and values the stored,
// immutable slices: fn must not modify them. Nothing is allocated per
// record (a bucket copy is a migration's bulk; the batch of records is
// reused).
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
		for area, tab := range sh.tables {
			for _, it := range tab.keys {
				if it.bucket != bucket {
					continue
				}
				if it.obj == nil {
					batch = append(batch, engines.Record{Area: area, Key: keyBytes(it.key), Entry: it.entry()})
					continue
				}
				r := engines.Record{Area: area, Key: keyBytes(it.key), Entry: it.entry()}
				if err := fn(&r); err != nil {
					sh.mu.RUnlock()
					return err
				}
			}
			for _, ps := range tab.pkeys {
				if ps.bucket != bucket {
					continue
				}
				r := engines.Record{Area: area, Key: keyBytes(ps.name), Prefix: make([]engines.KV, 0, ps.tree.Len())}
				hasObj := false
				ps.tree.Ascend(func(it *item) bool {
					hasObj = hasObj || it.obj != nil
					r.Prefix = append(r.Prefix, engines.KV{Key: keyBytes(it.key), Entry: it.entry()})
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

// BucketKeys is engines.KeyLister: the keys of bucket are gathered
// shard by shard under the shard's shared lock (no value is read or
// copied: the key strings are immutable) and handed to fn once it is
// released.
func (s *Store) BucketKeys(bucket uint32, fn func(area uint16, key []byte, prefix bool) error) error {
	type ref struct {
		area   uint16
		key    string
		prefix bool
	}
	var batch []ref
	return s.bucketShards(bucket, func(sh *shard) error {
		batch = batch[:0]
		sh.mu.RLock()
		for area, tab := range sh.tables {
			for _, it := range tab.keys {
				if it.bucket == bucket {
					batch = append(batch, ref{area, it.key, false})
				}
			}
			for _, ps := range tab.pkeys {
				if ps.bucket == bucket {
					batch = append(batch, ref{area, ps.name, true})
				}
			}
		}
		sh.mu.RUnlock()
		for _, r := range batch {
			if err := fn(r.area, keyBytes(r.key), r.prefix); err != nil {
				return err
			}
		}
		return nil
	})
}

// recordBatches recycles ForEach's record batches.
var recordBatches = sync.Pool{New: func() any { return new([]engines.Record) }}

// keyBytes is a stored key as bytes, aliasing its string (read-only).
func keyBytes(k string) []byte {
	if k == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(k), len(k))
}

func cloneEntry(e engines.Entry) engines.Entry {
	if e.Value != nil {
		v := make([]byte, len(e.Value))
		copy(v, e.Value)
		e.Value = v
	}
	return e
}

// Restore replaces the record (or the whole pkey) with r, as given, as a
// new record: its access frequency and time start afresh (Redis's
// RESTORE and MIGRATE do the same without IDLETIME or FREQ).
func (s *Store) Restore(bucket uint32, r *engines.Record) error {
	now := s.nowMs()
	sh := s.shardOf(bucket, r.Key)
	sh.mu.Lock()
	ref := generic.Ref{Key: engines.Key{Bucket: bucket, Area: r.Area, Key: r.Key}}
	if r.Prefix == nil {
		tab, _, it := sh.lookupLocked(&ref)
		ent := cloneEntry(r.Entry)
		size := recordSize(r.Key, &ent)
		if err := s.checkFits(r.Area, size); err != nil {
			sh.mu.Unlock()
			return err
		}
		if it == nil {
			it = s.insertLocked(sh, tab, nil, &ref)
		}
		s.setLocked(sh, it, &ent, size)
		it.access.Store(uint64(newAccess(now))) // a new record: RESTORE makes one
	} else {
		for i := range r.Prefix {
			if err := s.checkFits(r.Area, recordSize(r.Prefix[i].Key, &r.Prefix[i].Entry)); err != nil {
				sh.mu.Unlock()
				return err
			}
		}
		if tab := sh.tables[r.Area]; tab != nil {
			if ps := tab.pkeys[string(r.Key)]; ps != nil {
				s.removePsetLocked(sh, ps, 0)
			}
		}
		ref.Prefix = true
		for i := range r.Prefix {
			kv := &r.Prefix[i]
			ent := cloneEntry(kv.Entry)
			ref.Skey = kv.Key
			tab, ps, it := sh.lookupLocked(&ref)
			if it == nil {
				it = s.insertLocked(sh, tab, ps, &ref)
			}
			s.setLocked(sh, it, &ent, recordSize(kv.Key, &ent))
			it.access.Store(uint64(newAccess(now)))
		}
	}
	sh.mu.Unlock()
	if s.overBudget(r.Area) {
		s.evict(r.Area, nil)
	}
	return nil
}

// dropLocked removes the records of tab that keep says to, and returns how
// many live keys (a pkey once) it removed at now.
func (s *Store) dropLocked(sh *shard, tab *table, now int64, keep func(bucket uint32) bool) int64 {
	var n int64
	var its []*item
	for _, it := range tab.keys {
		if !keep(it.bucket) {
			its = append(its, it)
			if !engines.Expired(it.expireAt, now) {
				n++
			}
		}
	}
	var pss []*pset
	for _, ps := range tab.pkeys {
		if !keep(ps.bucket) {
			pss = append(pss, ps)
		}
	}
	for _, it := range its {
		s.removeLocked(sh, it)
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
		for _, it := range tab.keys {
			if it.bucket == bucket {
				return true
			}
		}
		for _, ps := range tab.pkeys {
			if ps.bucket == bucket {
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

// SetQuota sets area's quota and evicts at once down to it.
func (s *Store) SetQuota(area uint16, bytes int64) {
	s.areas[area].quota.Store(bytes)
	if s.overBudget(area) {
		s.evict(area, nil)
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
		if it := sh.exp[0]; it.ps == nil {
			s.expired.Add(1)
		}
		s.removeLocked(sh, sh.exp[0])
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
// shards. keep (the record whose write called evict, or nil) is never the
// victim: a write that fits is not acknowledged and then evicted by its
// own eviction, which a fresh record alone in its shard's table (CLOCK
// victim there) would otherwise be whenever the round-robin reached its
// shard first.
func (s *Store) evict(area uint16, keep *item) {
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
		if !s.evictOne(victimArea, keep) {
			return // nothing left to evict
		}
	}
}

// evictOne evicts one record of area (any area when area < 0) from the
// next shard that holds an unreferenced one; it reports false when no shard
// holds any record. Two rounds suffice: the first clears every bit.
func (s *Store) evictOne(area int, keep *item) bool {
	for tries := 0; tries < 2*len(s.shards)+1; tries++ {
		sh := &s.shards[s.cursor&s.mask]
		s.cursor++
		sh.mu.Lock()
		var victim *item
		if area >= 0 {
			if tab := sh.tables[uint16(area)]; tab != nil {
				victim = tab.lru.clockVictim(keep)
			}
		} else {
			for _, tab := range sh.tables {
				if victim = tab.lru.clockVictim(keep); victim != nil {
					break
				}
			}
		}
		if victim == nil {
			sh.mu.Unlock()
			continue
		}
		s.areas[victim.area].evictions.Add(1)
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

// lruList is an intrusive doubly linked recency list.
type lruList struct {
	head, tail *item
	n          int
}

func (l *lruList) pushFront(it *item) {
	l.n++
	it.prev, it.next = nil, l.head
	if l.head != nil {
		l.head.prev = it
	} else {
		l.tail = it
	}
	l.head = it
}

func (l *lruList) remove(it *item) {
	l.n--
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		l.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		l.tail = it.prev
	}
	it.prev, it.next = nil, nil
}

func (l *lruList) moveToFront(it *item) {
	if l.head == it {
		return
	}
	l.remove(it)
	l.pushFront(it)
}

// clockVictim returns the least recently used record that was not read
// since it last reached the front, giving read records a second chance
// (their bit is cleared and they move to the front). It returns nil when
// every record of the list had been read: the evictor then tries another
// shard, so a shard holding only hot records keeps them. keep is never
// returned (it moves to the front, its bit unchanged).
func (l *lruList) clockVictim(keep *item) *item {
	for n := l.n; n > 0; n-- {
		it := l.tail
		if it == keep {
			l.moveToFront(it)
			continue
		}
		if !it.referenced() {
			return it
		}
		it.clearRef()
		l.moveToFront(it)
	}
	return nil
}

// expHeap is a min-heap of records by expiry time; items track their index.
type expHeap []*item

func (h expHeap) Len() int           { return len(h) }
func (h expHeap) Less(i, j int) bool { return h[i].expireAt < h[j].expireAt }
func (h expHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i)
	h[j].heapIdx = int32(j)
}
func (h *expHeap) Push(x any) {
	it := x.(*item)
	it.heapIdx = int32(len(*h))
	*h = append(*h, it)
}
func (h *expHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.heapIdx = -1
	return it
}

// set places it according to its (new) expireAt: in, out of, or moved
// within the heap.
func (h *expHeap) set(it *item) {
	switch {
	case it.expireAt == 0 && it.heapIdx >= 0:
		heap.Remove(h, int(it.heapIdx))
	case it.expireAt != 0 && it.heapIdx < 0:
		heap.Push(h, it)
	case it.expireAt != 0:
		heap.Fix(h, int(it.heapIdx))
	}
}
