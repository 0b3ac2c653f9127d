package dataserver

import (
	"sync"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/timeheap"
)

// fieldIndex is this node's index of the TairHash keys that have field
// expiries, by bucket, so that the active expiry (fieldexpiry.go) finds
// the keys with due fields without scanning the data: for each key, when
// its earliest field expires (a lower bound: exec reports it after every
// write of a TairHash, on masters and slaves alike), and per bucket a
// min-heap of keys by when to look at them.
//
// An entry may outlive its key (DEL, FLUSHDB, the key's own expiry do not
// report): it is dropped when it comes due and the key is found gone. A
// heap item is current while its key's entry still holds its at; the
// others are stale, skipped when they surface, and the heap is rebuilt
// when they outnumber the keys.
type fieldIndex struct {
	mu      sync.Mutex
	buckets map[uint32]*bucketFields
	// scanAll: the engine held data when the process started (a
	// persistent engine's), which no write reported: each bucket is
	// scanned once (scanned) before the node expires its fields.
	scanAll bool
	scanned map[uint32]bool
}

type fieldKey struct {
	area uint16
	key  string
}

// dueItem schedules a look at key at `when` (unix ms); at is the key's
// earliest field expiry it was scheduled for.
type dueItem struct {
	when, at int64
	k        fieldKey
}

func (it dueItem) When() int64 { return it.when }

type bucketFields struct {
	at   map[fieldKey]int64
	heap []dueItem // min-heap by when
}

// set records that the TairHash at (bucket, area, key) has its earliest
// field expiry at at (0: none, or the key is gone).
func (x *fieldIndex) set(bucket uint32, area uint16, key []byte, at int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.setLocked(bucket, fieldKey{area, string(key)}, at, at)
}

// lower is set keeping an earlier at already recorded: for what a scan
// read without the bucket's lock, which a write since may have made
// earlier.
func (x *fieldIndex) lower(bucket uint32, area uint16, key []byte, at int64) {
	if at == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := fieldKey{area, string(key)}
	if bf := x.buckets[bucket]; bf != nil {
		if cur, ok := bf.at[k]; ok && cur <= at {
			return
		}
	}
	x.setLocked(bucket, k, at, at)
}

// recheck schedules another look at a key taken from the index (take),
// at when, keeping at as its earliest field expiry: a key the master
// could not expire now, or a slave's key whose master has not yet.
func (x *fieldIndex) recheck(bucket uint32, k fieldKey, at, when int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if bf := x.buckets[bucket]; bf != nil {
		if _, ok := bf.at[k]; ok {
			return // written since it was taken: that report wins
		}
	}
	x.setLocked(bucket, k, at, when)
}

func (x *fieldIndex) setLocked(bucket uint32, k fieldKey, at, when int64) {
	bf := x.buckets[bucket]
	if at == 0 {
		if bf != nil {
			delete(bf.at, k)
			if len(bf.at) == 0 {
				delete(x.buckets, bucket)
			}
		}
		return
	}
	if bf == nil {
		if x.buckets == nil {
			x.buckets = map[uint32]*bucketFields{}
		}
		bf = &bucketFields{at: map[fieldKey]int64{}}
		x.buckets[bucket] = bf
	}
	if cur, ok := bf.at[k]; ok && cur == at && when == at {
		return // scheduled already
	}
	bf.at[k] = at
	bf.push(dueItem{when: when, at: at, k: k})
	if len(bf.heap) > 2*len(bf.at)+64 {
		bf.rebuild()
	}
}

// take removes from the index and returns up to max keys of bucket due
// at nowMs (scheduled before it), with the at each was indexed with.
func (x *fieldIndex) take(bucket uint32, nowMs int64, max int) []dueItem {
	x.mu.Lock()
	defer x.mu.Unlock()
	bf := x.buckets[bucket]
	if bf == nil {
		return nil
	}
	var out []dueItem
	for len(bf.heap) > 0 && len(out) < max && bf.heap[0].when < nowMs {
		it := bf.pop()
		if at, ok := bf.at[it.k]; !ok || at != it.at {
			continue // stale
		}
		delete(bf.at, it.k)
		out = append(out, it)
	}
	if len(bf.at) == 0 {
		delete(x.buckets, bucket)
	}
	return out
}

// dueBuckets returns the buckets with a key to look at before nowMs.
func (x *fieldIndex) dueBuckets(nowMs int64) []uint32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []uint32
	for b, bf := range x.buckets {
		if len(bf.heap) > 0 && bf.heap[0].when < nowMs {
			out = append(out, b)
		}
	}
	return out
}

// drop forgets bucket (its copy left this node, or is being replaced).
func (x *fieldIndex) drop(bucket uint32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.buckets, bucket)
}

// nextUnscanned returns a bucket node masters in t whose data was not
// scanned yet, if any.
func (x *fieldIndex) nextUnscanned(t *route.Table, node string) (route.BucketID, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.scanAll {
		return 0, false
	}
	for b := range route.BucketID(t.Buckets) {
		if !x.scanned[uint32(b)] && t.IsMaster(b, node) {
			return b, true
		}
	}
	return 0, false
}

// markScanned records that bucket's data is indexed: it was scanned, or
// an incoming copy replaces it (its records are indexed as they come).
func (x *fieldIndex) markScanned(bucket uint32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.scanAll {
		return
	}
	if x.scanned == nil {
		x.scanned = map[uint32]bool{}
	}
	x.scanned[bucket] = true
}

// keys counts the indexed keys (for metrics and tests).
func (x *fieldIndex) keys() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, bf := range x.buckets {
		n += len(bf.at)
	}
	return n
}

func (bf *bucketFields) push(it dueItem) { bf.heap = timeheap.Push(bf.heap, it) }

func (bf *bucketFields) pop() dueItem {
	var top dueItem
	bf.heap, top = timeheap.Pop(bf.heap)
	return top
}

// rebuild drops the stale items (one per key, at its recorded at: a
// recheck's later when is lost, which only makes the look earlier).
func (bf *bucketFields) rebuild() {
	h := make([]dueItem, 0, len(bf.at))
	for k, at := range bf.at {
		h = append(h, dueItem{when: at, at: at, k: k})
	}
	timeheap.Init(h)
	bf.heap = h
}
