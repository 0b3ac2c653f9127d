// Package generic implements the whole engines.Engine contract on top of a
// small primitive Store, so that every engine (mdb, rdb, ldb, kdb) has the
// same Tair semantics: version rules, expiry, NX/XX conditions, bounded
// counters, items, hiding, key and value limits, WRONGTYPE and the per-area
// statistics are written once, here. An engine only provides a Store: how
// records are kept, locked, counted, evicted and reclaimed.
//
// # Semantics decided here
//
//   - A record that has expired (engines.Expired) is missing to every
//     operation; a write on it creates a new key at version 1.
//   - Put replaces the whole record: type, value, flags, and it unhides a
//     hidden key. Read-modify-writes (Incr, items, Update) keep Hidden and
//     Flags unless the UpdateFunc changes them.
//   - Cond is checked before the version: an NX put on an existing key is a
//     no-op (version 0, nil error) whatever version it carries.
//   - An unmet condition, a version mismatch or a range error changes
//     nothing, including expiry.
//   - Plain keys and pkeys are separate namespaces (Tair's prefix keys);
//     Count counts a plain key once and a pkey with live skeys once, hidden
//     keys included (they exist; Redis-facing counts filter them).
//   - Item ops on a missing key fail with errs.ErrNotFound (ItemAdd creates
//     it); removing the last item deletes the key.
//   - Option values outside their enums (Cond, Expire.Mode, an
//     UpdateFunc's Action) and counter bounds with Min above Max fail with
//     errs.InvalidArgument and change nothing; so does a restored prefix
//     record whose skeys are not strictly ascending (a duplicate skey).
//   - Statistics count once per key operation: MultiGet counts a get per
//     key, PrefixRange one get, Update a get when it keeps the record and a
//     put otherwise.
package generic

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// MaxArea is the highest area (namespace) number.
const MaxArea = 1023

// ErrClosed is returned by every operation after Close.
var ErrClosed = errs.New(errs.ServerCanNotWork, "engine is closed")

var (
	errBadArea  = errs.New(errs.InvalidArgument, "area out of range 0..1023")
	errOverflow = errs.New(errs.InvalidArgument, "increment or decrement would overflow")
	errNotInt   = errs.New(errs.InvalidArgument, "value is not an integer or out of range")
	errMaxCount = errs.New(errs.InvalidArgument, "item maxcount must be positive")
	errNoItems  = errs.New(errs.InvalidArgument, "no items to add")
	errBounds   = errs.New(errs.InvalidArgument, "counter bounds: min is above max")
	errSkeys    = errs.New(errs.InvalidArgument, "restore: skeys not in strictly ascending order")
)

// Option values outside their enums are refused, not read as some valid
// value (an unknown Cond as CondAlways, an unknown Expire.Mode as
// ExpireNever): a caller that sends one has a bug, and the write it meant
// is not the one that would be done.

func checkExpire(x *engines.Expire) error {
	if x.Mode > engines.ExpireAt {
		return errs.Newf(errs.InvalidArgument, "unknown expire mode %d", x.Mode)
	}
	return nil
}

func checkPutOptions(o *engines.PutOptions) error {
	if o.Cond > engines.CondIfExists {
		return errs.Newf(errs.InvalidArgument, "unknown write condition %d", o.Cond)
	}
	return checkExpire(&o.Expire)
}

// checkIncrOptions also refuses bounds no value satisfies (both set, Min
// above Max).
func checkIncrOptions(o *engines.IncrOptions) error {
	if o.HasMin && o.HasMax && o.Min > o.Max {
		return errBounds
	}
	return checkExpire(&o.Expire)
}

// Config describes the engine built on a store.
type Config struct {
	Name       string
	Persistent bool
	Store      Store
	Options    engines.Options
	// GroupCommit, when set, makes writes durable only at its
	// WaitDurable (engines.GroupCommitter).
	GroupCommit engines.GroupCommitter
	// CacheStats, when set, reports the store's block cache
	// (engines.CacheStatsOf).
	CacheStats func() engines.CacheStats
}

// Engine implements engines.Engine on a Store.
type Engine struct {
	name       string
	persistent bool
	st         Store
	o          engines.Options
	group      engines.GroupCommitter
	cacheStats func() engines.CacheStats
	closed     atomic.Bool
	stats      [MaxArea + 1][statStripes]counters
	// expired counts the expired plain keys a write reclaimed or replaced
	// (lazy expiry); the store counts those its sweeps reclaim.
	expired atomic.Int64
	// copies: the store copies the values it is given (ValueCopier), so
	// Put need not copy the caller's value first.
	copies bool
}

// ValueCopier is implemented by stores that copy the values handed to
// them (Update's next entry, Restore) before the call returns, rather
// than keep the caller's slice: the engine then hands them the caller's
// value as is.
type ValueCopier interface {
	CopiesValues() bool
}

// statStripes spreads an area's counters over cache lines (by bucket), so
// that cores counting operations of one area do not contend on one line.
const statStripes = 4

// counters are the operation counters the generic layer keeps (gets are
// hits + misses); keys, bytes and evictions come from the store.
type counters struct {
	puts, hits, misses atomic.Int64
	_                  [40]byte // pad to a cache line
}

var _ engines.Engine = (*Engine)(nil)

// New returns an engine over c.Store; c.Options are adjusted (defaults).
func New(c Config) *Engine {
	c.Options.Adjust()
	vc, ok := c.Store.(ValueCopier)
	return &Engine{name: c.Name, persistent: c.Persistent, st: c.Store, o: c.Options, group: c.GroupCommit,
		cacheStats: c.CacheStats, copies: ok && vc.CopiesValues()}
}

// GroupCommit returns the engine's group committer (nil when writes are
// durable, or never will be, when they return): see
// engines.GroupCommitOf.
func (e *Engine) GroupCommit() engines.GroupCommitter { return e.group }

// Store returns the underlying store (for engine-specific tests and tools).
func (e *Engine) Store() Store { return e.st }

// AccessTracker returns the store's access tracking, nil when it keeps
// none (see engines.AccessOf).
func (e *Engine) AccessTracker() engines.AccessTracker {
	if a, ok := e.st.(engines.AccessTracker); ok {
		return a
	}
	return nil
}

func (e *Engine) Name() string     { return e.name }
func (e *Engine) Persistent() bool { return e.persistent }

func (e *Engine) nowMs() int64 { return e.o.Now().UnixMilli() }

// check validates the key and the engine state shared by every keyed call.
func (e *Engine) check(k engines.Key) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if k.Area > MaxArea {
		return errBadArea
	}
	return e.o.CheckKey(k.Key)
}

// checkPrefix validates a pkey and skey: together they obey the key limit.
func (e *Engine) checkPrefix(k engines.Key, skey []byte) error {
	if err := e.check(k); err != nil {
		return err
	}
	if len(k.Key)+len(skey) > e.o.MaxKeySize {
		return errs.ErrKeyTooLong
	}
	return nil
}

func (e *Engine) counters(k *engines.Key) *counters {
	return &e.stats[k.Area][k.Bucket%statStripes]
}

// Replicated writes (k.Replica) are not counted: the master counted the
// client's operation, and a cluster's statistics sum every node's.
func (e *Engine) countGet(k *engines.Key, hit bool) {
	if k.Replica || k.NoStats {
		return
	}
	if hit {
		e.counters(k).hits.Add(1)
	} else {
		e.counters(k).misses.Add(1)
	}
}

func (e *Engine) countPut(k *engines.Key) {
	if !k.Replica && !k.NoStats {
		e.counters(k).puts.Add(1)
	}
}

// live reports whether a raw record is visible at nowMs.
func live(ent *engines.Entry, exists bool, nowMs int64) bool {
	return exists && !engines.Expired(ent.ExpireAt, nowMs)
}

// get is the read path shared by Get, MultiGet and PrefixGet.
func (e *Engine) get(r Ref) (engines.Entry, error) {
	r.NowMs = e.nowMs()
	ent, ok, err := e.st.Get(r)
	if err != nil {
		return engines.Entry{}, err
	}
	if !live(&ent, ok, r.NowMs) {
		e.countGet(&r.Key, false)
		return engines.Entry{}, errs.ErrNotFound
	}
	e.countGet(&r.Key, true)
	return ent, nil
}

func (e *Engine) Get(k engines.Key) (engines.Entry, error) {
	if err := e.check(k); err != nil {
		return engines.Entry{}, err
	}
	return e.get(Ref{Key: k})
}

func (e *Engine) MultiGet(keys []engines.Key) ([]engines.Entry, []error) {
	ents := make([]engines.Entry, len(keys))
	errv := make([]error, len(keys))
	for i, k := range keys {
		ents[i], errv[i] = e.Get(k)
	}
	return ents, errv
}

// updateOp carries one Tair-level read-modify-write through Store.Update.
// Ops are pooled and their RawUpdate is bound once, at allocation, so that
// the hot write path (Put) allocates no closures: only the value copy, and
// the record itself when the key is new.
type updateOp struct {
	e       *Engine
	now     int64
	fn      engines.UpdateFunc
	out     engines.Entry
	act     engines.Action
	given   int64     // the version the master gave the record (Key.Versions on a replica); 0: count on
	existed bool      // whether fn saw a live record
	expired bool      // the store held an expired record (reclaimed unless fn failed)
	raw     RawUpdate // op.apply

	// Put's state; putFn is op.putApply.
	value   []byte
	po      engines.PutOptions
	skipped bool
	putFn   engines.UpdateFunc
}

var opPool = sync.Pool{New: func() any {
	op := &updateOp{}
	op.raw = op.apply
	op.putFn = op.putApply
	return op
}}

func (e *Engine) getOp() *updateOp {
	op := opPool.Get().(*updateOp)
	op.e, op.now = e, e.nowMs()
	return op
}

// release drops every reference the op holds and pools it.
func (op *updateOp) release() {
	op.e, op.fn, op.out, op.value, op.po, op.skipped, op.existed, op.expired, op.given = nil, nil, engines.Entry{}, nil, engines.PutOptions{}, false, false, false, 0
	opPool.Put(op)
}

// apply is the RawUpdate of every Tair write: an expired record reads as
// missing (and is reclaimed when the write keeps it), the version is set
// here, string values are checked against the limit.
func (op *updateOp) apply(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
	wasExpired := exists && engines.Expired(cur.ExpireAt, op.now)
	op.expired = wasExpired
	if wasExpired {
		cur, exists = engines.Entry{}, false
	}
	op.existed = exists
	if len(cur.Value) > 0 && !op.isPut() {
		// cur.Value may alias the store's memory, valid only until
		// Update returns (Store's contract), while a caller's fn may
		// keep it and the entry Update returns may be cur itself: fn
		// gets a copy. Put's own fn keeps nothing of cur but its
		// version and expiry.
		cur.Value = append(make([]byte, 0, len(cur.Value)), cur.Value...)
	}
	next, a, err := op.fn(cur, exists)
	if err != nil {
		return engines.Entry{}, engines.Keep, err
	}
	op.act = a
	switch a {
	case engines.Store:
		// Items are checked one by one, Objects element by element (by
		// their package); a string value is checked here.
		if next.Type == engines.TypeString && next.Object == nil {
			if err := op.e.o.CheckValue(next.Value); err != nil {
				return engines.Entry{}, engines.Keep, err
			}
		}
		if op.given != 0 {
			next.Version = op.given // the master's (Key.Versions)
		} else {
			next.Version = engines.NextVersion(cur.Version) // cur is zero when missing
		}
		op.out = next
		return next, engines.Store, nil
	case engines.Delete:
		if !exists && !wasExpired {
			op.act = engines.Keep
			return engines.Entry{}, engines.Keep, nil
		}
		return engines.Entry{}, engines.Delete, nil
	case engines.Keep:
		op.act = engines.Keep
		op.out = cur
		if op.isPut() {
			op.out.Value = nil // may alias the store; put reads the version only
		}
		if wasExpired {
			// Reclaim the expired record while we hold it.
			return engines.Entry{}, engines.Delete, nil
		}
		return engines.Entry{}, engines.Keep, nil
	default:
		op.act = engines.Keep
		return engines.Entry{}, engines.Keep, errs.Newf(errs.InvalidArgument, "unknown update action %d", a)
	}
}

// update runs fn as a Tair-level read-modify-write of r and returns the
// entry as it is after the operation, and what was done.
func (e *Engine) update(r Ref, fn engines.UpdateFunc) (engines.Entry, engines.Action, error) {
	op := e.getOp()
	op.fn = fn
	out, act, err := op.run(r)
	op.release()
	return out, act, err
}

func (op *updateOp) run(r Ref) (engines.Entry, engines.Action, error) {
	op.act = engines.Keep
	r.NowMs = op.now
	vl := r.Versions
	if vl != nil && !r.Prefix && r.Replica {
		op.given = vl.Given(r.Key.Key)
	}
	if err := op.e.st.Update(r, op.raw); err != nil {
		return engines.Entry{}, engines.Keep, err
	}
	if vl != nil && !r.Prefix && !r.Replica && op.act == engines.Store {
		vl.Stored(r.Key.Key, op.out.Version)
	}
	if op.expired && !r.Prefix {
		op.e.expired.Add(1)
	}
	return op.out, op.act, nil
}

// checkVersion applies SPEC §2's version rule to a live record.
func checkVersion(cur *engines.Entry, exists bool, version int64) error {
	if exists && version != 0 && version != cur.Version {
		return errs.ErrVersion
	}
	return nil
}

// condHolds reports whether an NX/XX condition allows the write.
func condHolds(c engines.Cond, exists bool) bool {
	switch c {
	case engines.CondIfMissing:
		return !exists
	case engines.CondIfExists:
		return exists
	}
	return true
}

// isPut reports whether op runs Put's or PrefixPut's fn (putApply): put
// always sets a non-nil value.
func (op *updateOp) isPut() bool { return op.value != nil }

// putApply is the UpdateFunc of Put and PrefixPut.
func (op *updateOp) putApply(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
	if !condHolds(op.po.Cond, exists) {
		op.skipped = true
		return cur, engines.Keep, nil
	}
	if err := checkVersion(&cur, exists, op.po.Version); err != nil {
		return cur, engines.Keep, err
	}
	return engines.Entry{
		Type:     engines.TypeString,
		Value:    op.value,
		ExpireAt: op.po.Expire.Apply(cur.ExpireAt),
		Flags:    op.po.Flags,
	}, engines.Store, nil
}

// cloneBytes copies b: the store owns what it is given and callers may
// reuse their buffers.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	c := make([]byte, len(b))
	copy(c, b)
	return c
}

func (e *Engine) Put(k engines.Key, value []byte, o engines.PutOptions) (int64, error) {
	if err := e.check(k); err != nil {
		return 0, err
	}
	if err := e.o.CheckValue(value); err != nil {
		return 0, err
	}
	if err := checkPutOptions(&o); err != nil {
		return 0, err
	}
	return e.put(Ref{Key: k}, value, &o)
}

func (e *Engine) put(r Ref, value []byte, o *engines.PutOptions) (int64, error) {
	op := e.getOp()
	v := value
	if !e.copies || v == nil {
		v = cloneBytes(value)
	}
	op.fn, op.value, op.po = op.putFn, v, *o
	ent, _, err := op.run(r)
	skipped := op.skipped
	op.release()
	e.countPut(&r.Key)
	if err != nil || skipped {
		return 0, err
	}
	return ent.Version, nil
}

// removeFunc is the UpdateFunc of Remove and PrefixRemove.
func removeFunc(version int64) engines.UpdateFunc {
	return func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, errs.ErrNotFound
		}
		if err := checkVersion(&cur, exists, version); err != nil {
			return cur, engines.Keep, err
		}
		return engines.Entry{}, engines.Delete, nil
	}
}

func (e *Engine) Remove(k engines.Key, version int64) error {
	if err := e.check(k); err != nil {
		return err
	}
	_, _, err := e.update(Ref{Key: k}, removeFunc(version))
	e.countPut(&k)
	return err
}

// ParseInt parses a Redis integer: canonical decimal, no sign '+', no
// leading zeros, no spaces, within int64.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	// Reject non-canonical forms ("+1", "01", "-0") as Redis does.
	var buf [24]byte
	if string(strconv.AppendInt(buf[:0], n, 10)) != string(b) {
		return 0, false
	}
	return n, true
}

// addInt64 returns a+b and whether it overflowed.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0)
}

func (e *Engine) Incr(k engines.Key, delta int64, o engines.IncrOptions) (int64, int64, error) {
	if err := e.check(k); err != nil {
		return 0, 0, err
	}
	if err := checkIncrOptions(&o); err != nil {
		return 0, 0, err
	}
	var result int64
	ent, _, err := e.update(Ref{Key: k}, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		base := o.Init
		if exists {
			if cur.Type != engines.TypeString {
				return cur, engines.Keep, errs.ErrWrongType
			}
			if err := checkVersion(&cur, exists, o.Version); err != nil {
				return cur, engines.Keep, err
			}
			n, ok := ParseInt(cur.Value)
			if !ok {
				return cur, engines.Keep, errNotInt
			}
			base = n
		}
		v, overflow := addInt64(base, delta)
		if overflow {
			return cur, engines.Keep, errOverflow
		}
		if (o.HasMin && v < o.Min) || (o.HasMax && v > o.Max) {
			return cur, engines.Keep, errs.ErrCounterOutOfRange
		}
		result = v
		next := cur
		next.Type = engines.TypeString
		next.Object = nil
		next.Value = strconv.AppendInt(make([]byte, 0, 20), v, 10)
		next.ExpireAt = o.Expire.Apply(cur.ExpireAt)
		return next, engines.Store, nil
	})
	e.countPut(&k)
	if err != nil {
		return 0, 0, err
	}
	return result, ent.Version, nil
}

func (e *Engine) SetHidden(k engines.Key, hidden bool) error {
	if err := e.check(k); err != nil {
		return err
	}
	now := e.nowMs()
	err := e.st.Update(Ref{Key: k}, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !live(&cur, exists, now) {
			return cur, engines.Keep, errs.ErrNotFound
		}
		// Hiding is not a write of the value: the version stays.
		cur.Hidden = hidden
		return cur, engines.Store, nil
	})
	e.countPut(&k)
	return err
}

func (e *Engine) Update(k engines.Key, fn engines.UpdateFunc) (engines.Entry, error) {
	if err := e.check(k); err != nil {
		return engines.Entry{}, err
	}
	return e.userUpdate(Ref{Key: k}, fn)
}

func (e *Engine) userUpdate(r Ref, fn engines.UpdateFunc) (engines.Entry, error) {
	op := e.getOp()
	op.fn = fn
	ent, act, err := op.run(r)
	existed := op.existed
	op.release()
	if err == nil && act == engines.Keep {
		e.countGet(&r.Key, existed)
	} else {
		e.countPut(&r.Key)
	}
	return ent, err
}

// Prefix operations.

func (e *Engine) PrefixPut(k engines.Key, skey, value []byte, o engines.PutOptions) (int64, error) {
	if err := e.checkPrefix(k, skey); err != nil {
		return 0, err
	}
	if err := e.o.CheckValue(value); err != nil {
		return 0, err
	}
	if err := checkPutOptions(&o); err != nil {
		return 0, err
	}
	return e.put(Ref{Key: k, Prefix: true, Skey: skey}, value, &o)
}

func (e *Engine) PrefixGet(k engines.Key, skey []byte) (engines.Entry, error) {
	if err := e.checkPrefix(k, skey); err != nil {
		return engines.Entry{}, err
	}
	return e.get(Ref{Key: k, Prefix: true, Skey: skey})
}

func (e *Engine) PrefixRemove(k engines.Key, skey []byte, version int64) error {
	if err := e.checkPrefix(k, skey); err != nil {
		return err
	}
	_, _, err := e.update(Ref{Key: k, Prefix: true, Skey: skey}, removeFunc(version))
	e.countPut(&k)
	return err
}

func (e *Engine) PrefixRange(k engines.Key, o engines.RangeOptions) ([]engines.KV, error) {
	if err := e.check(k); err != nil {
		return nil, err
	}
	if o.Limit < 0 {
		return nil, errs.New(errs.InvalidArgument, "limit must not be negative")
	}
	now := e.nowMs()
	var out []engines.KV // sized at the first skey: most probes find none
	var keyBuf []byte    // one allocation for many skeys and values; earlier slices keep old arrays
	start, end := o.Start, o.End
	if len(start) == 0 {
		start = nil
	}
	if len(end) == 0 {
		end = nil
	}
	err := e.st.Range(k, start, end, o.Reverse, func(skey []byte, ent *engines.Entry) bool {
		if engines.Expired(ent.ExpireAt, now) {
			return true
		}
		// skey and ent.Value may alias the store's memory, valid during
		// this call only: both are copied.
		n := len(skey) + len(ent.Value)
		if cap(keyBuf)-len(keyBuf) < n {
			keyBuf = make([]byte, 0, max(512, n))
		}
		keyBuf = append(keyBuf, skey...)
		kv := engines.KV{Key: keyBuf[len(keyBuf)-len(skey) : len(keyBuf) : len(keyBuf)], Entry: *ent}
		if ent.Value != nil {
			keyBuf = append(keyBuf, ent.Value...)
			kv.Entry.Value = keyBuf[len(keyBuf)-len(ent.Value) : len(keyBuf) : len(keyBuf)]
		}
		if out == nil && o.Limit > 0 {
			out = make([]engines.KV, 0, min(o.Limit, 256))
		}
		out = append(out, kv)
		return o.Limit == 0 || len(out) < o.Limit
	})
	if err != nil {
		return nil, err
	}
	e.countGet(&k, len(out) > 0)
	return out, nil
}

func (e *Engine) PrefixRemoveAll(k engines.Key) (int, error) {
	if err := e.check(k); err != nil {
		return 0, err
	}
	n, err := e.st.RemovePrefix(k)
	e.countPut(&k)
	return n, err
}

func (e *Engine) PrefixUpdate(k engines.Key, skey []byte, fn engines.UpdateFunc) (engines.Entry, error) {
	if err := e.checkPrefix(k, skey); err != nil {
		return engines.Entry{}, err
	}
	return e.userUpdate(Ref{Key: k, Prefix: true, Skey: skey}, fn)
}

// Items.

func (e *Engine) ItemAdd(k engines.Key, maxCount int, items [][]byte, o engines.PutOptions) (int, error) {
	if err := e.check(k); err != nil {
		return 0, err
	}
	if maxCount <= 0 {
		return 0, errMaxCount
	}
	if err := checkPutOptions(&o); err != nil {
		return 0, err
	}
	if len(items) == 0 {
		return 0, errNoItems
	}
	for _, it := range items {
		if err := e.o.CheckValue(it); err != nil {
			return 0, err
		}
	}
	var count int
	_, _, err := e.update(Ref{Key: k}, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !condHolds(o.Cond, exists) {
			// No write; report the items there are (0 for another type).
			if exists && cur.Type == engines.TypeItems {
				items, err := DecodeItems(cur.Value)
				count = len(items)
				return cur, engines.Keep, err
			}
			return cur, engines.Keep, nil
		}
		var old [][]byte
		if exists {
			if cur.Type != engines.TypeItems {
				return cur, engines.Keep, errs.ErrWrongType
			}
			if err := checkVersion(&cur, exists, o.Version); err != nil {
				return cur, engines.Keep, err
			}
			var err error
			if old, err = DecodeItems(cur.Value); err != nil {
				return cur, engines.Keep, err
			}
		}
		all := make([][]byte, 0, len(old)+len(items))
		all = append(append(all, old...), items...)
		if len(all) > maxCount {
			all = all[len(all)-maxCount:]
		}
		count = len(all)
		next := cur
		next.Type = engines.TypeItems
		next.Object = nil
		next.Value = EncodeItems(all) // copies the caller's items
		next.ExpireAt = o.Expire.Apply(cur.ExpireAt)
		if !exists {
			next.Flags = o.Flags
		}
		return next, engines.Store, nil
	})
	e.countPut(&k)
	if err != nil {
		return 0, err
	}
	return count, nil
}

// readItems returns the live items of k.
func (e *Engine) readItems(k engines.Key) ([][]byte, error) {
	ent, ok, err := e.st.Get(Ref{Key: k})
	if err != nil {
		return nil, err
	}
	if !live(&ent, ok, e.nowMs()) {
		return nil, errs.ErrNotFound
	}
	if ent.Type != engines.TypeItems {
		return nil, errs.ErrWrongType
	}
	return DecodeItems(ent.Value)
}

func (e *Engine) ItemGet(k engines.Key, offset, count int) ([][]byte, error) {
	if err := e.check(k); err != nil {
		return nil, err
	}
	items, err := e.readItems(k)
	e.countGet(&k, err == nil)
	if err != nil {
		return nil, err
	}
	lo, hi, err := itemWindow(len(items), offset, count)
	if err != nil {
		return nil, err
	}
	return cloneItems(items[lo:hi]), nil
}

func cloneItems(items [][]byte) [][]byte {
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = cloneBytes(it)
	}
	return out
}

// itemTake removes the window (offset, count) atomically and returns the
// removed items.
func (e *Engine) itemTake(k engines.Key, offset, count int) ([][]byte, error) {
	if err := e.check(k); err != nil {
		return nil, err
	}
	var removed [][]byte
	_, _, err := e.update(Ref{Key: k}, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, errs.ErrNotFound
		}
		if cur.Type != engines.TypeItems {
			return cur, engines.Keep, errs.ErrWrongType
		}
		items, err := DecodeItems(cur.Value)
		if err != nil {
			return cur, engines.Keep, err
		}
		lo, hi, err := itemWindow(len(items), offset, count)
		if err != nil {
			return cur, engines.Keep, err
		}
		if lo == hi {
			return cur, engines.Keep, nil
		}
		removed = cloneItems(items[lo:hi])
		rest := make([][]byte, 0, len(items)-(hi-lo))
		rest = append(append(rest, items[:lo]...), items[hi:]...)
		if len(rest) == 0 {
			return engines.Entry{}, engines.Delete, nil
		}
		next := cur
		next.Value = EncodeItems(rest)
		return next, engines.Store, nil
	})
	e.countPut(&k)
	if err != nil {
		return nil, err
	}
	if removed == nil {
		removed = [][]byte{}
	}
	return removed, nil
}

func (e *Engine) ItemDelete(k engines.Key, offset, count int) (int, error) {
	removed, err := e.itemTake(k, offset, count)
	return len(removed), err
}

func (e *Engine) ItemGetDelete(k engines.Key, offset, count int) ([][]byte, error) {
	return e.itemTake(k, offset, count)
}

func (e *Engine) ItemCount(k engines.Key) (int, error) {
	if err := e.check(k); err != nil {
		return 0, err
	}
	items, err := e.readItems(k)
	e.countGet(&k, err == nil)
	if err != nil {
		return 0, err
	}
	return len(items), nil
}

// Bucket and area operations.

func (e *Engine) ForEach(bucket uint32, fn func(r *engines.Record) error) error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.forEachLive(e.st.ForEach, bucket, fn)
}

// forEachLive is ForEach over forEach (the store's, or a snapshot's).
func (e *Engine) forEachLive(forEach func(uint32, func(*engines.Record) error) error, bucket uint32, fn func(r *engines.Record) error) error {
	now := e.nowMs()
	return forEach(bucket, func(r *engines.Record) error {
		if r.Prefix == nil {
			if engines.Expired(r.Entry.ExpireAt, now) {
				return nil
			}
			return fn(r)
		}
		// Drop expired skeys in place; skip a pkey with none left.
		kept := r.Prefix[:0]
		for _, kv := range r.Prefix {
			if !engines.Expired(kv.Entry.ExpireAt, now) {
				kept = append(kept, kv)
			}
		}
		if len(kept) == 0 {
			return nil
		}
		r.Prefix = kept
		return fn(r)
	})
}

// BucketKeys is engines.KeyLister: through the store's own lister when
// it has one, else its ForEach.
func (e *Engine) BucketKeys(bucket uint32, fn func(area uint16, key []byte, prefix bool) error) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if kl, ok := e.st.(engines.KeyLister); ok {
		return kl.BucketKeys(bucket, fn)
	}
	return e.st.ForEach(bucket, func(r *engines.Record) error { return fn(r.Area, r.Key, r.Prefix != nil) })
}

func (e *Engine) Restore(bucket uint32, r *engines.Record) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if r == nil {
		return errs.New(errs.InvalidArgument, "nil record")
	}
	if err := e.check(engines.Key{Bucket: bucket, Area: r.Area, Key: r.Key}); err != nil {
		return err
	}
	for i, kv := range r.Prefix {
		if len(r.Key)+len(kv.Key) > e.o.MaxKeySize {
			return errs.ErrKeyTooLong
		}
		// Every engine refuses a duplicate (or misplaced) skey alike,
		// rather than one keeping the last copy and another refusing.
		if i > 0 && bytes.Compare(r.Prefix[i-1].Key, kv.Key) >= 0 {
			return errSkeys
		}
	}
	if r.Merge && r.Prefix == nil {
		return e.restoreMerge(bucket, r)
	}
	return e.st.Restore(bucket, r)
}

var errMergeNotPiece = errs.New(errs.InvalidArgument, "restore: a merged record must be a pkey's skeys or an object sent in pieces")

// restoreMerge merges r, a plain record marked Merge, into what its key
// holds (engines.Record.Merge; a prefix record's merge is the store's
// Restore): the record's object's elements added to the stored object
// (engines.PieceMerger), which takes the record's version, expiry, flags
// and hidden bit. A key that is missing or of another type takes the
// record as it is. An expired one is merged into all the same: the
// source sends a piece only while its own key lives, and a copy may have
// made its expiry earlier for a moment (a TairHash's, derived from the
// fields it holds so far).
func (e *Engine) restoreMerge(bucket uint32, r *engines.Record) error {
	now := e.nowMs()
	k := engines.Key{Bucket: bucket, Area: r.Area, Key: r.Key, Replica: true}
	piece, ok := r.Entry.Object.(engines.PieceMerger)
	if !ok {
		return errMergeNotPiece
	}
	return e.st.Update(Ref{Key: k, NowMs: now}, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		next := r.Entry
		next.Value = nil
		if exists && cur.Type == r.Entry.Type {
			if m, ok := cur.Object.(engines.PieceMerger); ok {
				if err := m.MergePiece(piece); err != nil {
					return cur, engines.Keep, err
				}
				next.Object = m
			}
		}
		return next, engines.Store, nil
	})
}

func (e *Engine) DeleteBucket(bucket uint32) error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.st.DeleteBucket(bucket)
}

func (e *Engine) DeleteArea(area uint16) (int64, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	if area > MaxArea {
		return 0, errBadArea
	}
	return e.st.DeleteArea(area)
}

// Snapshot takes a snapshot of the engine (engines.SnapshotOf) when its
// store takes them (StoreSnapshotter); ok is false when it does not.
func (e *Engine) Snapshot() (engines.Snapshot, bool, error) {
	t, ok := e.st.(StoreSnapshotter)
	if !ok {
		return nil, false, nil
	}
	if e.closed.Load() {
		return nil, true, ErrClosed
	}
	snap, ok, err := t.Snapshot()
	if !ok || err != nil {
		return nil, ok, err
	}
	return &snapshot{e: e, st: snap}, true, nil
}

// snapshot is an engine's snapshot: the store's, read as ForEach reads.
type snapshot struct {
	e  *Engine
	st StoreSnapshot
}

func (p *snapshot) ForEach(bucket uint32, fn func(r *engines.Record) error) error {
	return p.e.forEachLive(p.st.ForEach, bucket, fn)
}

func (p *snapshot) Close() error { return p.st.Close() }

func (e *Engine) Count(area uint16) int64 {
	if area > MaxArea || e.closed.Load() {
		return 0
	}
	return e.st.Count(area)
}

func (e *Engine) CountKeys(buckets []uint32, fn func(area uint16, c engines.KeyCounts)) {
	if e.closed.Load() {
		return
	}
	e.st.CountKeys(buckets, fn)
}

func (e *Engine) Stats(area uint16) engines.AreaStats {
	if area > MaxArea {
		return engines.AreaStats{}
	}
	return e.stats1(area, -1)
}

// stats1 is area's stats; keys >= 0 is its key count, known already.
func (e *Engine) stats1(area uint16, keys int64) engines.AreaStats {
	var s engines.AreaStats
	for i := range e.stats[area] {
		c := &e.stats[area][i]
		s.Puts += c.puts.Load()
		s.Hits += c.hits.Load()
		s.Misses += c.misses.Load()
	}
	s.Gets = s.Hits + s.Misses
	if !e.closed.Load() {
		if s.Keys = keys; keys < 0 {
			s.Keys = e.st.Count(area)
		}
		s.Bytes, s.Evictions = e.st.Usage(area)
	}
	return s
}

// Evictions returns the records evicted in every area (the store's
// counts; atomic loads, cheap enough to poll: the dataserver's tracking
// watches it).
func (e *Engine) Evictions() int64 {
	if e.closed.Load() {
		return 0
	}
	var n int64
	for a := uint16(0); a <= MaxArea; a++ {
		_, ev := e.st.Usage(a)
		n += ev
	}
	return n
}

// CacheStats returns the store's block cache figures (engines.CacheStatsOf);
// ok is false when the store has no block cache or the engine is closed.
func (e *Engine) CacheStats() (engines.CacheStats, bool) {
	if e.cacheStats == nil || e.closed.Load() {
		return engines.CacheStats{}, false
	}
	return e.cacheStats(), true
}

// ExpiredKeys returns how many expired records were reclaimed: by writes
// that found them (lazy expiry) and by the store's own sweeps when it
// counts them (an ExpiryCounter).
func (e *Engine) ExpiredKeys() int64 {
	n := e.expired.Load()
	if ec, ok := e.st.(ExpiryCounter); ok {
		n += ec.ExpiredKeys()
	}
	return n
}

// ExpiryCounter is a Store that counts the expired records it reclaims.
type ExpiryCounter interface {
	ExpiredKeys() int64
}

// AreaCounter is a Store that counts every area's live keys at once: one
// reclaim of expired records for all of them, not one per area (AllStats
// runs at every dataserver heartbeat).
type AreaCounter interface {
	// CountAreas sets counts[a] to Count(a) for every area.
	CountAreas(counts *[MaxArea + 1]int64)
}

// AllStats returns the stats of every area that holds data or has seen an
// operation.
func (e *Engine) AllStats() map[uint16]engines.AreaStats {
	out := map[uint16]engines.AreaStats{}
	var counts *[MaxArea + 1]int64
	if ac, ok := e.st.(AreaCounter); ok && !e.closed.Load() {
		counts = new([MaxArea + 1]int64)
		ac.CountAreas(counts)
	}
	for a := uint16(0); a <= MaxArea; a++ {
		keys := int64(-1)
		if counts != nil {
			keys = counts[a]
		}
		s := e.stats1(a, keys)
		if s != (engines.AreaStats{}) {
			out[a] = s
		}
	}
	return out
}

func (e *Engine) SetQuota(area uint16, bytes int64) {
	if area > MaxArea || e.closed.Load() {
		return
	}
	if bytes < 0 {
		bytes = 0
	}
	e.st.SetQuota(area, bytes)
}

func (e *Engine) Compact() error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.st.Compact()
}

// Checkpoint writes a consistent copy of the engine's data to dir (see
// engines.Checkpointer); engines.ErrNoCheckpoint when its store takes none.
func (e *Engine) Checkpoint(dir string) error {
	if e.closed.Load() {
		return ErrClosed
	}
	cp, ok := e.st.(engines.Checkpointer)
	if !ok {
		return engines.ErrNoCheckpoint
	}
	return cp.Checkpoint(dir)
}

// Close closes the store once; later calls return nil.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.st.Close()
}
