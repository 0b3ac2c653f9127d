// Package sortedkv is the generic.Store of Tair's persistent engines over
// any ordered byte store with atomic batches (a Backend): pebble under ldb,
// bbolt under kdb. The Tair rules (versions, conditions, items, limits) are
// package generic's; this package owns what a persistent store adds: the
// key and value encodings (keys.go, value.go), per-key atomicity, the
// persisted per-area counters, quotas, and the expiry index with its
// background sweep.
//
// # Atomicity
//
// Reads do not lock: a backend Get or Scan sees committed batches only. An
// Update reads the record, runs the generic layer's function and commits
// one backend batch while it holds the key's stripe of a striped mutex, so
// two read-modify-writes of one key never interleave. Prefix records lock
// the pkey, not the skey, so "is this the pkey's first (or last) skey?" is
// decided under the same lock as the write that changes the answer.
//
// Every write also holds its bucket's lock shared; DeleteBucket holds it
// exclusively, and DeleteArea every bucket's, so the in-memory counters
// they subtract are exactly those of the data their range deletion removes.
//
// # Counting
//
// Each (bucket, area) has a counters record (Counts: keys, bytes, and the
// hidden and expiring plain keys that CountKeys reports) inside its own
// key range, changed in the same batch as the data it counts (keys.go), and
// mirrored in memory; Open rebuilds the memory copy from the records, so
// counts are exact after a restart or a crash without scanning the data. A
// pkey counts once while it has at least one stored skey; bytes are the
// stored keys plus the stored values. A write knows what it replaces (it
// reads the old record for its version anyway), so keeping the counters
// costs it no read.
//
// Stored records include expired ones until they are reclaimed. Count and
// DeleteArea first reclaim the area's expired records (only in the
// (bucket, area)s whose earliest expiry has passed, which memory tracks),
// so the count they report is of live keys, as the generic layer requires.
//
// # Quota
//
// A write that would grow an area's bytes beyond its quota fails with
// errs.ErrQuota and changes nothing; writes that shrink an area always
// pass. Concurrent writers to different keys of one area may each pass the
// check, so an area can overshoot its quota by the writes in flight.
package sortedkv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/internal/errs"
)

const (
	numAreas      = generic.MaxArea + 1
	keyStripes    = 1024
	bucketStripes = 256
	sweepChunk    = 256
	scanChunk     = 512
)

// ErrClosed is returned by every operation after Close.
var ErrClosed = errs.New(errs.ServerCanNotWork, "sortedkv: store is closed")

// pair holds one (bucket, area)'s counters (Counts) and a lower bound of
// its earliest expiry (0: nothing expires).
type pair struct {
	bucket                     uint32
	area                       uint16
	keys, bytes                atomic.Int64
	hidden, expires, expireSum atomic.Int64
	minExp                     atomic.Int64 // read lock-free; changed under expMu
	// prefix says whether the pair may hold prefix records (mayHoldPrefix).
	prefix atomic.Int32

	expMu  sync.Mutex
	expGen uint64 // counts writes that added expiring records
}

// The states of pair.prefix. A pair starts unknown; a probe of its whole
// prefix family turns that into none or some, and every write that stores
// a prefix record makes it some before it commits. A dropped pair (its
// bucket or area deleted) is replaced by a new, unknown one, and some is
// never taken back: the states only ever err towards a real scan.
const (
	prefixUnknown int32 = iota
	prefixNone
	prefixSome
)

// mayHoldPrefix reports whether (bucket, area) may hold prefix records:
// false only when a probe of its whole prefix family found none and no
// write stored one since. Every plain write of a new key asks whether the
// key is a prefix-stored hash (a Range of one), and without this each of
// those opened a backend iterator: a fifth of the CPU of ldb SETs, on
// stores that hold no such hash at all.
func (s *Store) mayHoldPrefix(bucket uint32, area uint16) (bool, error) {
	v, ok := s.pairs.Load(uint64(bucket)<<16 | uint64(area))
	if !ok {
		return true, nil // nothing known: scan, as before
	}
	p := v.(*pair)
	switch p.prefix.Load() {
	case prefixNone:
		return false, nil
	case prefixSome:
		return true, nil
	}
	lo, hi := kindRange(bucket, area, kindPrefix)
	found := false
	if err := s.be.Scan(lo, hi, false, func(_, _ []byte) bool {
		found = true
		return false
	}); err != nil {
		return true, err
	}
	// A write that stored a prefix record after the scan made the pair
	// some before it committed, so the swap to none fails for it.
	if found {
		p.prefix.CompareAndSwap(prefixUnknown, prefixSome)
	} else {
		p.prefix.CompareAndSwap(prefixUnknown, prefixNone)
	}
	return found, nil
}

// add adds d to p's counters and the area's totals.
func (s *Store) add(p *pair, d Counts) {
	if d == (Counts{}) {
		return
	}
	p.keys.Add(d.Keys)
	p.bytes.Add(d.Bytes)
	if d.Hidden != 0 || d.Expires != 0 || d.ExpireSum != 0 { // most writes neither hide nor expire
		p.hidden.Add(d.Hidden)
		p.expires.Add(d.Expires)
		p.expireSum.Add(d.ExpireSum)
	}
	a := &s.areas[p.area]
	a.keys.Add(d.Keys)
	a.bytes.Add(d.Bytes)
}

// bucketKeys returns p's counters as CountKeys sums them.
func (p *pair) bucketKeys() generic.BucketKeys {
	return generic.BucketKeys{Stored: p.keys.Load(), Hidden: p.hidden.Load(), Expires: p.expires.Load(), ExpireSum: p.expireSum.Load()}
}

// addExpiry lowers p's earliest expiry to at after a write committed an
// expiring record.
func (p *pair) addExpiry(at int64) {
	p.expMu.Lock()
	if cur := p.minExp.Load(); cur == 0 || at < cur {
		p.minExp.Store(at)
	}
	p.expGen++
	p.expMu.Unlock()
}

// expiryGen returns the generation resetExpiry compares against.
func (p *pair) expiryGen() uint64 {
	p.expMu.Lock()
	defer p.expMu.Unlock()
	return p.expGen
}

// resetExpiry sets p's earliest expiry to next, read from the index after
// gen was taken, unless a write added an expiring record since: its entry
// may be missing from that read, and the value it left is a lower bound
// still (a bound too low costs a read; one too high, a wrong Count).
func (p *pair) resetExpiry(gen uint64, next int64) {
	p.expMu.Lock()
	if p.expGen == gen {
		p.minExp.Store(next)
	}
	p.expMu.Unlock()
}

// areaState holds an area's totals (sums over its pairs) and its quota.
type areaState struct {
	keys, bytes, quota atomic.Int64
}

// Store is generic.Store over a Backend.
type Store struct {
	be  Backend
	now func() time.Time
	// expired counts the plain keys reclaimed because they had expired.
	expired atomic.Int64

	life   sync.RWMutex // shared by every operation, exclusive for Close
	closed bool

	keyLocks    [keyStripes]sync.Mutex
	bucketLocks [bucketStripes]sync.RWMutex
	// sweepLocks serialise the sweeps of one bucket stripe: a Count that
	// finds a pair due waits for a background sweep of it to finish, so it
	// never sees a reclaim committed but not yet counted.
	sweepLocks [bucketStripes]sync.Mutex

	pairs sync.Map // uint64(bucket)<<16|area -> *pair
	areas [numAreas]areaState

	snapMu sync.Mutex
	snaps  map[*Snapshot]struct{} // open snapshots, closed by Close

	stop chan struct{}
	wg   sync.WaitGroup
}

var _ generic.Store = (*Store)(nil)

// Options configure a Store.
type Options struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// SweepInterval is the period of the background reclaim of expired
	// records (default 1s; negative disables it).
	SweepInterval time.Duration
}

// New returns a Store over be, rebuilding the in-memory counters from the
// persisted ones, and starts the background sweep. On error be is left
// open.
func New(be Backend, o Options) (*Store, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = time.Second
	}
	s := &Store{be: be, now: o.Now, stop: make(chan struct{})}
	if err := s.load(); err != nil {
		return nil, err
	}
	if o.SweepInterval > 0 {
		s.wg.Add(1)
		go s.sweepLoop(o.SweepInterval)
	}
	return s, nil
}

// Open is New on be for the engine name (ldb, kdb) with o's clock and
// sweep interval; when the store cannot load, be is closed and the error
// names the engine and its directory.
func Open(name string, be Backend, o engines.Options) (*Store, error) {
	st, err := New(be, Options{Now: o.Now, SweepInterval: o.SweepInterval})
	if err != nil {
		be.Close()
		return nil, fmt.Errorf("%s: open %s: %w", name, o.Dir, err)
	}
	return st, nil
}

// load reads every counters record and each pair's earliest expiry. It
// does not scan the data: each (bucket, area) range starts with its
// counters record and then its expiry index, so two positioned reads per
// (bucket, area) find both and jump to the next pair.
func (s *Store) load() error {
	var lo []byte
	for {
		k, v, err := s.first(lo, nil)
		if err != nil {
			return err
		}
		if k == nil {
			return nil
		}
		if len(k) < headerLen {
			lo = append(k, 0) // not ours: no key of this package is this short
			continue
		}
		bucket, area := be32(k), be16(k[4:])
		if k[bucketAreaLen] == kindCounters && len(k) == headerLen && area <= generic.MaxArea {
			c, complete := DecodeCounts(v)
			if c.Keys != 0 || c.Bytes != 0 {
				if !complete {
					if c, err = s.completeCounts(k, c); err != nil {
						return err
					}
				}
				p := s.pair(bucket, area)
				s.add(p, c)
				if err := s.resetMinExp(p); err != nil {
					return err
				}
			}
		}
		if _, lo = areaRange(bucket, area); lo == nil {
			return nil
		}
	}
}

// completeCounts fills in the counts a first-release counters record
// (keys and bytes only) lacks, from one walk of the pair's plain records,
// and writes the record whole, so that this walk happens once per pair.
func (s *Store) completeCounts(countersKey []byte, c Counts) (Counts, error) {
	lo, hi := kindRange(be32(countersKey), be16(countersKey[4:]), kindPlain)
	var plain generic.BucketKeys
	var ferr error
	err := s.be.Scan(lo, hi, false, func(_, v []byte) bool {
		r, err := decodeValue(v)
		if err != nil {
			ferr = err
			return false
		}
		plain.AddPlain(r.hidden, r.expireAt, 1)
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return c, err
	}
	c.Hidden, c.Expires, c.ExpireSum = plain.Hidden, plain.Expires, plain.ExpireSum
	var b Batch
	b.Set(countersKey, c.Encode())
	return c, s.be.Commit(&b)
}

// first returns a copy of the first key in [lo, hi) and its value.
func (s *Store) first(lo, hi []byte) (k, v []byte, err error) {
	err = s.be.Scan(lo, hi, false, func(kk, vv []byte) bool {
		k, v = bytes.Clone(kk), bytes.Clone(vv)
		return false
	})
	return k, v, err
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

func (s *Store) pair(bucket uint32, area uint16) *pair {
	id := uint64(bucket)<<16 | uint64(area)
	if p, ok := s.pairs.Load(id); ok {
		return p.(*pair)
	}
	p, _ := s.pairs.LoadOrStore(id, &pair{bucket: bucket, area: area})
	return p.(*pair)
}

// pairsOf returns the pairs that match, by bucket then area.
func (s *Store) pairsOf(match func(p *pair) bool) []*pair {
	var out []*pair
	s.pairs.Range(func(_, v any) bool {
		if p := v.(*pair); match(p) {
			out = append(out, p)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].bucket != out[j].bucket {
			return out[i].bucket < out[j].bucket
		}
		return out[i].area < out[j].area
	})
	return out
}

// enter guards an operation against a concurrent Close.
func (s *Store) enter() error {
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Store) leave() { s.life.RUnlock() }

func (s *Store) keyLock(lockKey []byte) *sync.Mutex {
	return &s.keyLocks[xxhash.Sum64(lockKey)%keyStripes]
}

func (s *Store) bucketLock(bucket uint32) *sync.RWMutex {
	return &s.bucketLocks[bucket%bucketStripes]
}

// locked runs fn holding bucket shared and lockKey's stripe.
func (s *Store) locked(bucket uint32, lockKey []byte, fn func() error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	bl := s.bucketLock(bucket)
	bl.RLock()
	defer bl.RUnlock()
	kl := s.keyLock(lockKey)
	kl.Lock()
	defer kl.Unlock()
	return fn()
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// ---- records ----

// slot is a key's stored state as a write sees it.
type slot struct {
	key  []byte
	phys bool   // a record is stored (it may be expired)
	rec  record // when phys
	size int    // len(stored value), when phys
}

func (s *Store) read(key []byte) (slot, error) {
	sl := slot{key: key}
	v, found, err := s.be.Get(key)
	if err != nil {
		return sl, errs.Wrap(errs.Unknown, err)
	}
	if !found {
		return sl, nil
	}
	r, err := decodeValue(v)
	if err != nil {
		return sl, errs.Wrap(errs.Unknown, err)
	}
	sl.phys, sl.rec, sl.size = true, r, len(v)
	return sl, nil
}

// errPkeyTooLong refuses a pkey the u16 length of the prefix encoding
// cannot hold (only reachable with Options.MaxKeySize above 65535).
var errPkeyTooLong = errs.New(errs.KeyTooLong, "sortedkv: pkey longer than 65535 bytes")

func checkPkey(pkey []byte) error {
	if len(pkey) > maxPkeyLen {
		return errPkeyTooLong
	}
	return nil
}

// refKey returns the encoded key of r and the key its lock is taken on.
func refKey(r *generic.Ref) (key, lockKey []byte) {
	if !r.Prefix {
		key = plainKey(r.Bucket, r.Area, r.Key.Key)
		return key, key
	}
	pfx := pkeyPrefix(r.Bucket, r.Area, r.Key.Key)
	return append(pfx[:len(pfx):len(pfx)], r.Skey...), pfx
}

// write collects one atomic change to a (bucket, area).
type write struct {
	s             *Store
	bucket        uint32
	area          uint16
	noQuota       bool // a replica's copy or a restore: the master decided
	b             Batch
	dKeys, dBytes int64
	dPlain        generic.BucketKeys // the change to Hidden, Expires, ExpireSum
	minExp        int64              // earliest expiry this write adds (0: none)
	prefix        bool               // it stores a prefix record (pair.prefix)
}

func (s *Store) newWrite(bucket uint32, area uint16) *write {
	return &write{s: s, bucket: bucket, area: area}
}

// set stores r at sl.key, replacing what sl holds. countKey: the record is
// a plain key, counted with its hidden bit and expiry, and a new one adds
// a key (for skeys the caller counts the pkey).
func (w *write) set(sl *slot, r *record, countKey bool) {
	v := appendValue(make([]byte, 0, 16+len(r.payload)), r)
	w.b.Set(sl.key, v)
	if sl.key[bucketAreaLen] == kindPrefix {
		w.prefix = true
	}
	w.dBytes += int64(len(sl.key) + len(v))
	if sl.phys {
		w.dBytes -= int64(len(sl.key) + sl.size)
		if sl.rec.expireAt != 0 && sl.rec.expireAt != r.expireAt {
			w.b.Delete(expiryKey(sl.key, sl.rec.expireAt))
		}
		if countKey {
			w.dPlain.AddPlain(sl.rec.hidden, sl.rec.expireAt, -1)
		}
	} else if countKey {
		w.dKeys++
	}
	if countKey {
		w.dPlain.AddPlain(r.hidden, r.expireAt, 1)
	}
	if r.expireAt != 0 {
		if !sl.phys || sl.rec.expireAt != r.expireAt {
			w.b.Set(expiryKey(sl.key, r.expireAt), nil)
		}
		if w.minExp == 0 || r.expireAt < w.minExp {
			w.minExp = r.expireAt
		}
	}
}

// del removes what sl holds.
func (w *write) del(sl *slot, countKey bool) {
	if !sl.phys {
		return
	}
	w.b.Delete(sl.key)
	w.dBytes -= int64(len(sl.key) + sl.size)
	if sl.rec.expireAt != 0 {
		w.b.Delete(expiryKey(sl.key, sl.rec.expireAt))
	}
	if countKey {
		w.dKeys--
		w.dPlain.AddPlain(sl.rec.hidden, sl.rec.expireAt, -1)
	}
}

// commit checks the quota, commits the batch and updates the counters.
func (w *write) commit() error {
	if w.b.Empty() {
		return nil
	}
	s := w.s
	a := &s.areas[w.area]
	if q := a.quota.Load(); q > 0 && !w.noQuota && w.dBytes > 0 && a.bytes.Load()+w.dBytes > q {
		return errs.ErrQuota
	}
	d := Counts{Keys: w.dKeys, Bytes: w.dBytes, Hidden: w.dPlain.Hidden, Expires: w.dPlain.Expires, ExpireSum: w.dPlain.ExpireSum}
	if d != (Counts{}) {
		w.b.Counters = append(w.b.Counters, CounterDelta{Key: countersKey(w.bucket, w.area),
			Keys: d.Keys, Bytes: d.Bytes, Hidden: d.Hidden, Expires: d.Expires, ExpireSum: d.ExpireSum})
	}
	p := s.pair(w.bucket, w.area)
	if w.prefix {
		p.prefix.Store(prefixSome) // before the commit: see mayHoldPrefix
	}
	if err := s.be.Commit(&w.b); err != nil {
		return errs.Wrap(errs.Unknown, err)
	}
	s.add(p, d)
	// After the commit, so that a sweep that did not see the new index
	// entry sees the new generation (see resetExpiry).
	if w.minExp != 0 {
		p.addExpiry(w.minExp)
	}
	return nil
}

// otherSkeys reports whether the pkey with prefix pfx has a stored skey
// other than except.
func (s *Store) otherSkeys(pfx, except []byte) (bool, error) {
	found := false
	err := s.be.Scan(pfx, PrefixEnd(pfx), false, func(k, _ []byte) bool {
		if !bytes.Equal(k, except) {
			found = true
			return false
		}
		return true
	})
	if err != nil {
		return false, errs.Wrap(errs.Unknown, err)
	}
	return found, nil
}

// setSkey stores an skey, counting its pkey when it is the first skey.
func (s *Store) setSkey(w *write, pfx []byte, sl *slot, r *record) error {
	if !sl.phys {
		others, err := s.otherSkeys(pfx, sl.key)
		if err != nil {
			return err
		}
		if !others {
			w.dKeys++
		}
	}
	w.set(sl, r, false)
	return nil
}

// delSkey removes an skey, uncounting its pkey when it was the last one.
func (s *Store) delSkey(w *write, pfx []byte, sl *slot) error {
	others, err := s.otherSkeys(pfx, sl.key)
	if err != nil {
		return err
	}
	w.del(sl, false)
	if !others {
		w.dKeys--
	}
	return nil
}

// ---- generic.Store ----

// Get returns the stored record at r, expired included.
func (s *Store) Get(r generic.Ref) (engines.Entry, bool, error) {
	if err := s.enter(); err != nil {
		return engines.Entry{}, false, err
	}
	defer s.leave()
	if r.Prefix {
		if err := checkPkey(r.Key.Key); err != nil {
			return engines.Entry{}, false, err
		}
	}
	key, _ := refKey(&r)
	sl, err := s.read(key)
	if err != nil || !sl.phys {
		return engines.Entry{}, false, err
	}
	ent, err := sl.rec.entry()
	if err != nil {
		return engines.Entry{}, false, errs.Wrap(errs.Unknown, err)
	}
	return ent, true, nil
}

// Update runs fn on the record at r and commits its action in one batch.
func (s *Store) Update(r generic.Ref, fn generic.RawUpdate) error {
	if r.Prefix {
		if err := checkPkey(r.Key.Key); err != nil {
			return err
		}
	}
	key, lockKey := refKey(&r)
	return s.locked(r.Bucket, lockKey, func() error {
		sl, err := s.read(key)
		if err != nil {
			return err
		}
		var cur engines.Entry
		if sl.phys {
			if cur, err = sl.rec.entry(); err != nil {
				return errs.Wrap(errs.Unknown, err)
			}
		}
		next, act, err := fn(cur, sl.phys)
		if err != nil {
			return err
		}
		w := s.newWrite(r.Bucket, r.Area)
		w.noQuota = r.Replica
		switch act {
		case engines.Keep:
			return nil
		case engines.Delete:
			if !sl.phys {
				return nil
			}
			if !r.Prefix {
				w.del(&sl, true)
			} else if err := s.delSkey(w, lockKey, &sl); err != nil {
				return err
			}
		case engines.Store:
			rec, err := recordOf(&next)
			if err != nil {
				return err
			}
			if !r.Prefix {
				w.set(&sl, &rec, true)
			} else if err := s.setSkey(w, lockKey, &sl, &rec); err != nil {
				return err
			}
		default:
			return errs.Newf(errs.InvalidArgument, "sortedkv: unknown action %d", act)
		}
		return w.commit()
	})
}

// Range calls fn with the stored skeys of pkey k within [start, end] (nil:
// open), in skey order or reverse. It is one bounded backend scan.
func (s *Store) Range(k engines.Key, start, end []byte, reverse bool, fn func(skey []byte, e *engines.Entry) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := checkPkey(k.Key); err != nil {
		return err
	}
	if may, err := s.mayHoldPrefix(k.Bucket, k.Area); err != nil {
		return errs.Wrap(errs.Unknown, err)
	} else if !may {
		return nil
	}
	pfx := pkeyPrefix(k.Bucket, k.Area, k.Key)
	lo := append(pfx[:len(pfx):len(pfx)], start...)
	hi := PrefixEnd(pfx)
	if end != nil {
		// end is inclusive: the first key after pfx+end is pfx+end+0x00.
		hi = append(append(pfx[:len(pfx):len(pfx)], end...), 0)
	}
	if hi != nil && bytes.Compare(lo, hi) >= 0 {
		return nil
	}
	var ferr error
	err := s.be.Scan(lo, hi, reverse, func(key, v []byte) bool {
		r, err := decodeValue(v)
		if err != nil {
			ferr = err
			return false
		}
		ent, err := r.entry()
		if err != nil {
			ferr = err
			return false
		}
		return fn(key[len(pfx):], &ent)
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return errs.Wrap(errs.Unknown, err)
	}
	return nil
}

// RemovePrefix deletes every skey of pkey k in one batch and returns how
// many were live.
func (s *Store) RemovePrefix(k engines.Key) (int, error) {
	if err := checkPkey(k.Key); err != nil {
		return 0, err
	}
	pfx := pkeyPrefix(k.Bucket, k.Area, k.Key)
	n := 0
	err := s.locked(k.Bucket, pfx, func() error {
		w := s.newWrite(k.Bucket, k.Area)
		var err error
		if n, err = s.removeAllLocked(w, pfx); err != nil {
			return err
		}
		return w.commit()
	})
	return n, err
}

// removeAllLocked adds the deletion of every skey under pfx (and the
// pkey's count) to w and returns how many skeys were live.
func (s *Store) removeAllLocked(w *write, pfx []byte) (int, error) {
	now := s.nowMs()
	var slots []slot
	var ferr error
	err := s.be.Scan(pfx, PrefixEnd(pfx), false, func(key, v []byte) bool {
		r, err := decodeValue(v)
		if err != nil {
			ferr = err
			return false
		}
		slots = append(slots, slot{key: bytes.Clone(key), phys: true, rec: record{expireAt: r.expireAt}, size: len(v)})
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return 0, errs.Wrap(errs.Unknown, err)
	}
	n := 0
	for i := range slots {
		w.del(&slots[i], false)
		if !engines.Expired(slots[i].rec.expireAt, now) {
			n++
		}
	}
	if len(slots) > 0 {
		w.dKeys--
	}
	return n, nil
}

// Restore writes r as given, replacing the plain key or every skey of the
// pkey (or, merged, the skeys it holds), in one batch.
func (s *Store) Restore(bucket uint32, r *engines.Record) error {
	if r.Prefix == nil {
		ref := generic.Ref{Key: engines.Key{Bucket: bucket, Area: r.Area, Key: r.Key}}
		key, _ := refKey(&ref)
		rec, err := recordOf(&r.Entry)
		if err != nil {
			return err
		}
		return s.locked(bucket, key, func() error {
			sl, err := s.read(key)
			if err != nil {
				return err
			}
			w := s.newWrite(bucket, r.Area)
			w.noQuota = true // a migrated copy: its source accepted it
			w.set(&sl, &rec, true)
			return w.commit()
		})
	}
	if err := checkPkey(r.Key); err != nil {
		return err
	}
	recs := make([]record, len(r.Prefix))
	for i := range r.Prefix {
		if i > 0 && bytes.Compare(r.Prefix[i-1].Key, r.Prefix[i].Key) >= 0 {
			return errs.New(errs.InvalidArgument, "sortedkv: restore: skeys not in strictly ascending order")
		}
		var err error
		if recs[i], err = recordOf(&r.Prefix[i].Entry); err != nil {
			return err
		}
	}
	pfx := pkeyPrefix(bucket, r.Area, r.Key)
	if r.Merge {
		return s.mergeSkeys(bucket, r, pfx, recs)
	}
	return s.locked(bucket, pfx, func() error {
		w := s.newWrite(bucket, r.Area)
		w.noQuota = true
		if _, err := s.removeAllLocked(w, pfx); err != nil {
			return err
		}
		// removeAllLocked took the old skeys (and the pkey) out of the
		// accounting, so each new skey is written as new and the pkey
		// counted once more if it gets any.
		if len(recs) > 0 {
			w.dKeys++
		}
		for i := range recs {
			sl := slot{key: append(pfx[:len(pfx):len(pfx)], r.Prefix[i].Key...)}
			w.set(&sl, &recs[i], false)
		}
		return w.commit()
	})
}

// mergeSkeys writes the skeys of a merged prefix record (r.Merge: a big
// pkey's later piece in a move) over the pkey's, keeping its others, in
// one batch; the pkey is counted when it had no skey stored.
func (s *Store) mergeSkeys(bucket uint32, r *engines.Record, pfx []byte, recs []record) error {
	return s.locked(bucket, pfx, func() error {
		had, err := s.otherSkeys(pfx, nil)
		if err != nil {
			return err
		}
		w := s.newWrite(bucket, r.Area)
		w.noQuota = true
		for i := range recs {
			sl, err := s.read(append(pfx[:len(pfx):len(pfx)], r.Prefix[i].Key...))
			if err != nil {
				return err
			}
			w.set(&sl, &recs[i], false)
		}
		if !had && len(recs) > 0 {
			w.dKeys++
		}
		return w.commit()
	})
}

// ForEach calls fn for every stored record of bucket: plain keys one by one,
// a pkey with all its skeys in one call. The bucket is read in chunks so
// that no backend snapshot or read transaction stays open while fn runs (a
// long bbolt read transaction would stall writers that grow the file).
func (s *Store) ForEach(bucket uint32, fn func(r *engines.Record) error) error {
	return s.bucketFamilies(bucket, func(_ uint16, _ byte, lo, hi []byte) error {
		return s.forEachRange(lo, hi, fn)
	})
}

// bucketFamilies calls fn with the key range of each record family
// (plain, then prefix) of each area bucket holds, by area.
func (s *Store) bucketFamilies(bucket uint32, fn func(area uint16, kind byte, lo, hi []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	pairs := s.pairsOf(func(p *pair) bool { return p.bucket == bucket })
	s.leave()
	for _, p := range pairs {
		for _, kind := range []byte{kindPlain, kindPrefix} {
			lo, hi := kindRange(bucket, p.area, kind)
			if err := fn(p.area, kind, lo, hi); err != nil {
				return err
			}
		}
	}
	return nil
}

// BucketKeys is engines.KeyLister: bucket's plain keys and pkeys, read
// in chunks (no backend snapshot stays open while fn runs); a pkey's skeys
// are skipped with one seek past them.
func (s *Store) BucketKeys(bucket uint32, fn func(area uint16, key []byte, prefix bool) error) error {
	return s.bucketFamilies(bucket, func(area uint16, kind byte, lo, hi []byte) error {
		for lo != nil {
			if err := s.enter(); err != nil {
				return err
			}
			var keys [][]byte
			var next []byte
			var perr error
			err := s.be.Scan(lo, hi, false, func(k, _ []byte) bool {
				d, err := parseDataKey(k)
				if err != nil {
					perr = err
					return false
				}
				keys = append(keys, bytes.Clone(d.key))
				if kind == kindPrefix {
					next = PrefixEnd(pkeyPrefix(bucket, area, d.key))
				} else {
					next = append(bytes.Clone(k), 0)
				}
				return kind == kindPlain && len(keys) < scanChunk
			})
			s.leave()
			if err == nil {
				err = perr
			}
			if err != nil {
				return errs.Wrap(errs.Unknown, err)
			}
			for _, k := range keys {
				if err := fn(area, k, kind == kindPrefix); err != nil {
					return err
				}
			}
			if len(keys) == 0 || (kind == kindPlain && len(keys) < scanChunk) {
				break
			}
			lo = next
		}
		return nil
	})
}

type rawKV struct{ k, v []byte }

// forEachRange walks [lo, hi) of plain or prefix records in chunks.
func (s *Store) forEachRange(lo, hi []byte, fn func(r *engines.Record) error) error {
	return s.forEachIn(s.be.Scan, lo, hi, false, fn)
}

// forEachIn is forEachRange on scan (the backend's, or a snapshot's),
// over a range of data keys; the index and counter keys of a range that
// spans a whole bucket are skipped. With pieces, a pkey's skeys come in
// calls of up to scanChunk each (in order), not all in one: a pkey of a
// million skeys is not gathered in memory.
func (s *Store) forEachIn(scan func(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error, lo, hi []byte, pieces bool, fn func(r *engines.Record) error) error {
	var pending *engines.Record // the pkey being gathered, across chunks
	flush := func() error {
		if pending == nil {
			return nil
		}
		r := pending
		pending = nil
		return fn(r)
	}
	for {
		if err := s.enter(); err != nil {
			return err
		}
		var chunk []rawKV
		err := scan(lo, hi, false, func(k, v []byte) bool {
			chunk = append(chunk, rawKV{bytes.Clone(k), bytes.Clone(v)})
			return len(chunk) < scanChunk
		})
		s.leave()
		if err != nil {
			return errs.Wrap(errs.Unknown, err)
		}
		for _, kv := range chunk {
			if len(kv.k) > bucketAreaLen && (kv.k[bucketAreaLen] == kindCounters || kv.k[bucketAreaLen] == kindExpiry) {
				continue
			}
			d, err := parseDataKey(kv.k)
			if err != nil {
				return errs.Wrap(errs.Unknown, err)
			}
			r, err := decodeValue(kv.v)
			if err != nil {
				return errs.Wrap(errs.Unknown, err)
			}
			ent, err := r.entry()
			if err != nil {
				return errs.Wrap(errs.Unknown, err)
			}
			if d.kind == kindPlain {
				// (after the last pkey of the area before, in a scan of a whole bucket)
				if err := flush(); err != nil {
					return err
				}
				if err := fn(&engines.Record{Area: d.area, Key: d.key, Entry: ent}); err != nil {
					return err
				}
				continue
			}
			if pending != nil && (pending.Area != d.area || !bytes.Equal(pending.Key, d.key)) {
				if err := flush(); err != nil {
					return err
				}
			}
			if pending == nil {
				pending = &engines.Record{Area: d.area, Key: d.key}
			}
			pending.Prefix = append(pending.Prefix, engines.KV{Key: d.skey, Entry: ent})
			if pieces && len(pending.Prefix) >= scanChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if len(chunk) < scanChunk {
			break
		}
		lo = append(chunk[len(chunk)-1].k, 0)
	}
	return flush()
}

// Snapshot is a read-only view of the store as it stood when taken
// (generic.StoreSnapshot): its ForEach reads the snapshot, whatever was
// written since. Close releases it; the store's Close closes those still
// open.
type Snapshot struct {
	s    *Store
	snap BackendSnapshot
	once sync.Once
	err  error
}

// Snapshot takes a snapshot, when the backend takes them
// (SnapshotBackend); ok is false when it does not.
func (s *Store) Snapshot() (generic.StoreSnapshot, bool, error) {
	sb, ok := s.be.(SnapshotBackend)
	if !ok {
		return nil, false, nil
	}
	if err := s.enter(); err != nil {
		return nil, true, err
	}
	defer s.leave()
	bs, err := sb.Snapshot()
	if err != nil {
		return nil, true, errs.Wrap(errs.Unknown, err)
	}
	snap := &Snapshot{s: s, snap: bs}
	s.snapMu.Lock()
	if s.snaps == nil {
		s.snaps = map[*Snapshot]struct{}{}
	}
	s.snaps[snap] = struct{}{}
	s.snapMu.Unlock()
	return snap, true, nil
}

// ForEach is Store.ForEach on the snapshot: every stored record of
// bucket (expired ones included), plain keys one by one, by area; a
// pkey's skeys in order, in calls of a few hundred (generic.StoreSnapshot).
func (p *Snapshot) ForEach(bucket uint32, fn func(r *engines.Record) error) error {
	lo := binary.BigEndian.AppendUint32(nil, bucket)
	return p.s.forEachIn(p.snap.Scan, lo, PrefixEnd(lo), true, fn)
}

// Close releases the snapshot (again: nothing).
func (p *Snapshot) Close() error {
	p.once.Do(func() {
		p.s.snapMu.Lock()
		delete(p.s.snaps, p)
		p.s.snapMu.Unlock()
		p.err = p.snap.Close()
	})
	return p.err
}

// DeleteBucket removes every record of bucket with one range deletion.
func (s *Store) DeleteBucket(bucket uint32) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	bl := s.bucketLock(bucket)
	bl.Lock()
	defer bl.Unlock()
	var b Batch
	lo, hi := bucketRange(bucket)
	b.DeleteRange(lo, hi)
	if err := s.be.Commit(&b); err != nil {
		return errs.Wrap(errs.Unknown, err)
	}
	for _, p := range s.pairsOf(func(p *pair) bool { return p.bucket == bucket }) {
		s.dropPair(p)
	}
	return nil
}

// dropPair forgets p after its range was deleted; the bucket lock is held
// exclusively.
func (s *Store) dropPair(p *pair) {
	a := &s.areas[p.area]
	a.keys.Add(-p.keys.Load())
	a.bytes.Add(-p.bytes.Load())
	s.pairs.Delete(uint64(p.bucket)<<16 | uint64(p.area))
}

// DeleteArea removes area from every bucket that holds it and returns how
// many live keys it held. The deletion is one backend commit (one range
// deletion per bucket, in one pebble batch or one bbolt transaction), so
// readers, which do not lock, and a crash see the area whole or gone,
// never gone from some buckets only. It holds every bucket stripe
// exclusively meanwhile: no write runs, so the counters it drops are
// exactly those of the data deleted. Expired records are reclaimed first
// (commits of their own, invisible to readers) so that the count returned
// is of live keys.
func (s *Store) DeleteArea(area uint16) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	// In stripe order; every other path holds one bucket stripe at a time.
	for i := range s.bucketLocks {
		s.bucketLocks[i].Lock()
	}
	defer func() {
		for i := range s.bucketLocks {
			s.bucketLocks[i].Unlock()
		}
	}()
	now := s.nowMs()
	pairs := s.pairsOf(func(p *pair) bool { return p.area == area })
	if len(pairs) == 0 {
		return 0, nil
	}
	var b Batch
	for _, p := range pairs {
		if err := s.sweepPairLocked(p, now, false); err != nil {
			return 0, errs.Wrap(errs.Unknown, err)
		}
		lo, hi := areaRange(p.bucket, area)
		b.DeleteRange(lo, hi)
	}
	if err := s.be.Commit(&b); err != nil {
		return 0, errs.Wrap(errs.Unknown, err)
	}
	var n int64
	for _, p := range pairs {
		n += p.keys.Load()
		s.dropPair(p)
	}
	return n, nil
}

// Count returns area's live keys: it reclaims the area's expired records
// first, so the stored count is the live count.
func (s *Store) Count(area uint16) int64 {
	if area > generic.MaxArea || s.enter() != nil {
		return 0
	}
	defer s.leave()
	now := s.nowMs()
	for _, p := range s.pairsOf(func(p *pair) bool { return p.area == area && due(p, now) }) {
		bl := s.bucketLock(p.bucket)
		bl.RLock()
		_ = s.sweepPairLocked(p, now, true)
		bl.RUnlock()
	}
	return s.areas[area].keys.Load()
}

// CountKeys sums the buckets' pairs by area, after reclaiming the expired
// records of those that are due (as Count does).
func (s *Store) CountKeys(buckets []uint32, fn func(area uint16, c engines.KeyCounts)) {
	if s.enter() != nil {
		return
	}
	defer s.leave()
	want := make(map[uint32]bool, len(buckets))
	for _, b := range buckets {
		want[b] = true
	}
	now := s.nowMs()
	tally := generic.KeyTally{}
	for _, p := range s.pairsOf(func(p *pair) bool { return want[p.bucket] }) {
		if due(p, now) {
			bl := s.bucketLock(p.bucket)
			bl.RLock()
			_ = s.sweepPairLocked(p, now, true)
			bl.RUnlock()
		}
		tally.Add(p.area, p.bucketKeys())
	}
	tally.Report(now, fn)
}

// Usage returns area's stored bytes; a persistent store never evicts.
func (s *Store) Usage(area uint16) (int64, int64) {
	if area > generic.MaxArea {
		return 0, 0
	}
	return s.areas[area].bytes.Load(), 0
}

// ExpiredKeys returns how many plain keys the sweeps reclaimed because
// they had expired.
func (s *Store) ExpiredKeys() int64 { return s.expired.Load() }

// SetQuota sets area's byte quota (0 = none). Quotas live in memory: the
// dataserver applies them from the configserver when it starts.
func (s *Store) SetQuota(area uint16, nbytes int64) {
	if area > generic.MaxArea {
		return
	}
	s.areas[area].quota.Store(max(nbytes, 0))
}

// Compact reclaims every expired record, then has the backend reclaim the
// space of deleted data.
func (s *Store) Compact() error {
	if err := s.sweep(true); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return s.be.Compact()
}

// Checkpoint writes a consistent copy of the store to dir, through the
// backend's own checkpoint; engines.ErrNoCheckpoint when it has none.
func (s *Store) Checkpoint(dir string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	cp, ok := s.be.(engines.Checkpointer)
	if !ok {
		return engines.ErrNoCheckpoint
	}
	return cp.Checkpoint(dir)
}

// Close stops the sweep and closes the backend; operations after Close fail
// with ErrClosed. Close is idempotent.
func (s *Store) Close() error {
	s.life.Lock()
	if s.closed {
		s.life.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.life.Unlock()
	s.wg.Wait()
	s.snapMu.Lock()
	open := make([]*Snapshot, 0, len(s.snaps))
	for p := range s.snaps {
		open = append(open, p)
	}
	s.snapMu.Unlock()
	for _, p := range open {
		_ = p.Close()
	}
	return s.be.Close()
}
