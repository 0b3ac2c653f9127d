package slab

import "unsafe"

// Index maps keys to Handles without holding a Go pointer per entry. It is
// an open-addressing hash table (linear probing, backward-shift deletion,
// so no tombstones) whose slots hold a key's 64-bit hash beside its
// handle. The Index does not store keys: the caller passes the key's hash
// and an equality callback that compares the key stored at a handle (in
// the Arena, typically) with the key looked up. The callback runs only for
// slots whose stored hash equals the hash looked up, so with a good 64-bit
// hash (xxhash) it runs about once per successful lookup and almost never
// otherwise. Keys with equal hashes are fine; they only cost callbacks.
//
// The whole hash is kept, not a few tag bits, because it is what lets the
// table move an entry (growth) or close a gap (deletion) without reading
// the key back from the arena, a cache miss and a hash computation per
// entry moved. Hashes must be well mixed in their low bits, which pick the
// slot.
//
// # Memory
//
// A slot is 16 bytes. The table is a power of two of slots and grows at a
// load factor of 0.8, so it holds 0.4 to 0.8 entries per slot: 20 to 40
// bytes per entry (28 on average over growth), plus, while a growth is in
// progress, the old table (half as many slots) until it is drained. The
// Index never shrinks: deleting entries frees no slots.
//
// # Growth
//
// Growth is incremental, as in Redis's dict: when an insert would take the
// table past its load factor, the Index allocates a table twice as large,
// sends new entries there, and each following Put and Delete moves the
// entries of at least migrateSlots slots of the old table (finishing the
// run of occupied slots it is in, so that the old table stays a valid
// linear-probing table) before doing its own work. Lookups search both
// tables meanwhile. A write thus moves a few dozen entries, a few hundred
// at worst (runs of occupied slots are that long at most at load 0.8), and
// the old table is drained long before the new one can fill. Get never
// moves anything, so it is safe under a shared lock; an Index that only
// serves Gets keeps its old table until the next write.
//
// The zero Index is empty and ready to use. See the package documentation
// for the locking it expects.
type Index struct {
	cur   []slot // the table new entries go to
	old   []slot // the table being drained into cur; nil when not growing
	moved int    // slots of old drained, from the first one on
	n     int    // entries in old and cur

	budget int // migrateSlots, or less in tests
}

// slot is an entry of a table; a zero handle marks an empty slot.
type slot struct {
	hash uint64
	h    Handle
}

const (
	slotBytes = int(unsafe.Sizeof(slot{}))
	minSlots  = 8
	// migrateSlots is the number of old slots each Put and Delete drains at
	// least while the Index grows. The old table has half as many slots as
	// the new one, which fills from 40% to 80% before it would grow again:
	// draining at least 2 old slots per write would do.
	migrateSlots = 32
	// maxHint caps NewIndex's hint (2^30 entries, 32 GiB of slots).
	maxHint = 1 << 30
)

// maxLoad is the number of entries a table of size slots may hold.
func maxLoad(size int) int { return size * 4 / 5 }

// NewIndex returns an empty Index sized to hold hint entries without
// growing (a hint of 0 or less allocates nothing, more than 2^30 is
// treated as 2^30).
func NewIndex(hint int) *Index {
	x := &Index{}
	if hint > 0 {
		size := minSlots
		for maxLoad(size) < min(hint, maxHint) {
			size *= 2
		}
		x.cur = make([]slot, size)
	}
	return x
}

// Len returns the number of entries.
func (x *Index) Len() int { return x.n }

// Bytes returns the memory of the Index's tables.
func (x *Index) Bytes() int { return (len(x.cur) + len(x.old)) * slotBytes }

// Get returns the handle stored for the key with this hash for which eq
// returns true. It does not mutate the Index.
func (x *Index) Get(hash uint64, eq func(Handle) bool) (Handle, bool) {
	if i := lookup(x.old, hash, eq); i >= 0 {
		return x.old[i].h, true
	}
	if i := lookup(x.cur, hash, eq); i >= 0 {
		return x.cur[i].h, true
	}
	return 0, false
}

// Put stores h for the key with this hash: it replaces the handle of the
// entry for which eq returns true, returning the handle replaced, or adds
// an entry. It panics if h is nil.
func (x *Index) Put(hash uint64, h Handle, eq func(Handle) bool) (old Handle, replaced bool) {
	if h == 0 {
		panic("slab: Index.Put of the nil handle")
	}
	x.migrate()
	for _, t := range [2][]slot{x.old, x.cur} {
		if i := lookup(t, hash, eq); i >= 0 {
			old = t[i].h
			t[i].h = h
			return old, true
		}
	}
	if x.n+1 > maxLoad(len(x.cur)) {
		x.grow()
	}
	insert(x.cur, hash, h)
	x.n++
	return 0, false
}

// Delete removes the entry for the key with this hash for which eq
// returns true and returns its handle.
func (x *Index) Delete(hash uint64, eq func(Handle) bool) (Handle, bool) {
	x.migrate()
	for _, t := range [2][]slot{x.old, x.cur} {
		if i := lookup(t, hash, eq); i >= 0 {
			h := t[i].h
			remove(t, i)
			x.n--
			return h, true
		}
	}
	return 0, false
}

// Range calls fn with every handle, once each, in no particular order,
// until fn returns false. fn must not call Put or Delete: a write may move
// entries between tables, so Range would miss or repeat them. Collect the
// handles to delete and delete them after Range returns.
func (x *Index) Range(fn func(Handle) bool) {
	for _, t := range [2][]slot{x.old, x.cur} {
		for i := range t {
			if h := t[i].h; h != 0 && !fn(h) {
				return
			}
		}
	}
}

// lookup returns the position in t of the entry with this hash for which
// eq returns true, or -1. A table always has an empty slot, which ends the
// probe.
func lookup(t []slot, hash uint64, eq func(Handle) bool) int {
	if len(t) == 0 {
		return -1
	}
	mask := uint64(len(t) - 1)
	for i := hash & mask; ; i = (i + 1) & mask {
		s := &t[i]
		if s.h == 0 {
			return -1
		}
		if s.hash == hash && eq(s.h) {
			return int(i)
		}
	}
}

// insert puts a new entry in the first empty slot from its hash's home.
func insert(t []slot, hash uint64, h Handle) {
	mask := uint64(len(t) - 1)
	i := hash & mask
	for t[i].h != 0 {
		i = (i + 1) & mask
	}
	t[i] = slot{hash, h}
}

// remove empties slot i of t and shifts back the entries after it that
// may move closer to their home, so that every entry stays reachable from
// its home through occupied slots (the linear-probing invariant) without
// tombstones.
func remove(t []slot, i int) {
	mask := len(t) - 1
	j := i // the hole
	for k := (i + 1) & mask; t[k].h != 0; k = (k + 1) & mask {
		home := int(t[k].hash) & mask
		// Move t[k] into the hole unless its home lies in (j, k].
		if (k-home)&mask >= (k-j)&mask {
			t[j] = t[k]
			j = k
		}
	}
	t[j] = slot{}
}

// grow starts moving the entries to a table twice as large.
func (x *Index) grow() {
	for x.old != nil { // not reached unless writes outpace draining
		x.migrate()
	}
	next := make([]slot, max(minSlots, 2*len(x.cur)))
	if x.n == 0 {
		x.cur = next
		return
	}
	x.old, x.cur = x.cur, next
	x.moved = 0
}

// migrate drains at least budget slots of the old table into the current
// one, in slot order, stopping only before an empty slot. Entries are
// cleared from the old table as they move, without backward shifts. The
// old table stays a valid linear-probing table for the entries left: the
// path of such an entry, from its home to its slot, is all occupied, so it
// cannot cross the empty slot where draining stopped (no entry is ever
// inserted into the old table) and never includes a drained slot.
func (x *Index) migrate() {
	if x.old == nil {
		return
	}
	budget := x.budget
	if budget <= 0 {
		budget = migrateSlots
	}
	old := x.old
	for ; x.moved < len(old); x.moved, budget = x.moved+1, budget-1 {
		s := &old[x.moved]
		if s.h == 0 {
			if budget <= 0 {
				return
			}
			continue
		}
		insert(x.cur, s.hash, s.h)
		*s = slot{}
	}
	x.old = nil
}
