package generic

import (
	"time"

	"github.com/tairkv/tair/engines"
)

// SweepEvery calls sweep every interval until stop is closed: the loop of
// a store's background sweep of expired records.
func SweepEvery(every time.Duration, stop <-chan struct{}, sweep func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			sweep()
		case <-stop:
			return
		}
	}
}

// Ref names one stored record: a plain key (Prefix false), or the skey Skey
// of the pkey Key.Key (Prefix true). Plain keys and pkeys are separate
// namespaces, as in Tair: a plain key "a" and a pkey "a" are two records.
// An empty Skey is a valid skey.
type Ref struct {
	engines.Key
	Prefix bool
	Skey   []byte
	// NowMs is the caller's clock reading for the operation (unix ms; 0:
	// none), for stores that record access times: the generic layer
	// reads the clock for each operation anyway.
	NowMs int64
}

// RawUpdate is the store-level read-modify-write. It sees the raw record,
// expired or not (exists reports only whether the store holds one), and
// returns the record to keep, store or delete. The store writes next
// exactly as returned: versions, expiry and hiding are the generic layer's.
// RawUpdate is called exactly once per Store.Update, before Update returns,
// and must not call into the store; the store must not retain it (the
// generic layer pools the state behind it).
type RawUpdate func(cur engines.Entry, exists bool) (next engines.Entry, act engines.Action, err error)

// Store is the primitive storage an engine provides to the generic layer,
// which implements every Tair rule on top of it. A Store knows records,
// their bucket, area and expiry (so that it can reclaim expired records and
// count live ones), and nothing of versions, conditions, items or limits.
//
// # Contracts
//
//   - Values handed to the store (in Update's next entry, Restore) are
//     copied or kept by the store before the call returns; the generic
//     layer passes them uncopied only to a store that says it copies them
//     (ValueCopier), and otherwise hands the store its own copy.
//   - Values the store hands out may alias its memory only while it holds
//     the record still: Get and ForEach return values (and keys) the
//     caller may keep, which an in-memory store whose blocks are reused
//     (memstore) copies under its lock; the cur entry Update passes to
//     RawUpdate, and the skey and entry Range passes to fn, are valid
//     during that call only, and the generic layer copies what it keeps
//     of them (a caller's UpdateFunc gets a copy of cur's value). The
//     generic layer never mutates a value it got from the store.
//   - Objects (Entry.Object) are mutable and owned by the store once
//     stored. A persistent store serialises them with MarshalBinary and
//     rebuilds them with engines.DecodeObject.
//   - "Expired" is engines.Expired(entry.ExpireAt, now) with the clock of
//     engines.Options.Now; a store counts and reclaims with that rule.
//   - Every method is safe for concurrent use; Update is atomic per Ref.
type Store interface {
	// Get returns the raw record at r (expired included).
	Get(r Ref) (engines.Entry, bool, error)
	// Update runs fn atomically on the record at r and applies its action.
	// It returns fn's error, or the store's (for example errs.ErrQuota).
	Update(r Ref, fn RawUpdate) error
	// Range calls fn with the raw skeys of pkey k (expired included) whose
	// skey is within [start, end] (nil: open), in skey byte order, or
	// descending when reverse, until fn returns false. fn must not call
	// into the store and must copy what it keeps: skey, e and e.Value may
	// be reused or alias the store's memory, valid during the call only,
	// and e.Object may change once Range returns.
	Range(k engines.Key, start, end []byte, reverse bool, fn func(skey []byte, e *engines.Entry) bool) error
	// RemovePrefix deletes every skey of pkey k and returns how many were
	// live (not expired).
	RemovePrefix(k engines.Key) (int, error)
	// ForEach calls fn for every record of bucket, raw (expired records and
	// skeys included), one pkey with all its skeys per call (Entry zero,
	// Prefix set), plain keys with Prefix nil.
	ForEach(bucket uint32, fn func(r *engines.Record) error) error
	// Restore writes r as given (version and expiry included), replacing
	// the plain key, or for a pkey record every skey of the pkey; a pkey
	// record marked Merge replaces only the skeys it holds, in one step
	// (the generic layer merges plain records itself).
	Restore(bucket uint32, r *engines.Record) error
	// DeleteBucket removes every record of bucket.
	DeleteBucket(bucket uint32) error
	// DeleteArea removes every record of area and returns how many live
	// keys it held (a pkey counts once).
	DeleteArea(area uint16) (int64, error)
	// Count returns the exact number of live keys of area (a pkey with at
	// least one live skey counts once).
	Count(area uint16) int64
	// CountKeys is engines.Engine.CountKeys: the store keeps the counts
	// per (bucket, area) as it keeps Count's, and reclaims the buckets'
	// expired records before it reads them.
	CountKeys(buckets []uint32, fn func(area uint16, c engines.KeyCounts))
	// Usage returns area's accounted bytes and how many records were
	// evicted from it.
	Usage(area uint16) (bytes, evictions int64)
	// SetQuota sets area's byte quota (0 = none).
	SetQuota(area uint16, bytes int64)
	// Compact reclaims expired and deleted data.
	Compact() error
	// Close releases the store; background work stops before it returns.
	Close() error
}

// StoreSnapshot is a read-only view of a store as it stood when taken:
// ForEach as the Store's (expired records included), on the snapshot,
// but for a pkey's skeys, which may come in several calls (in order).
type StoreSnapshot interface {
	ForEach(bucket uint32, fn func(r *engines.Record) error) error
	Close() error
}

// StoreSnapshotter is implemented by stores that take snapshots cheaply;
// ok is false when this one cannot (its backend takes none).
type StoreSnapshotter interface {
	Snapshot() (snap StoreSnapshot, ok bool, err error)
}
