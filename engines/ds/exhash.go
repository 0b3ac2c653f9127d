package ds

import (
	"sort"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/timeheap"
)

// ExField is one TairHash field: its value, its own version (1 after the
// first write, +1 per write) and its absolute expiry in unix milliseconds
// (0 = never).
type ExField struct {
	Value    string
	Version  int64
	ExpireAt int64
}

// Expired reports whether the field is expired at nowMs (engines.Expired's
// rule: a field lives up to and including its expiry millisecond).
func (f *ExField) Expired(nowMs int64) bool { return engines.Expired(f.ExpireAt, nowMs) }

// ExHash is a TairHash: a hash whose fields carry a version and an expiry.
// Expired fields stay in the map until PurgeDue or ExpireDue removes
// them; readers filter them with Get/Range(now).
type ExHash struct {
	m    map[string]*ExField
	size int
	// due is a min-heap of the fields' expiries, so that the fields due at
	// a moment are found and removed without looking at the others (the
	// TairHash module keeps a sorted expiry index per key for the same
	// reason): a key with a million fields costs its active expiry only
	// the fields that are due. An entry is current while its field still
	// expires at its time; one left behind by a rewrite or a delete is
	// stale and dropped when it comes to the top. expiring counts the
	// fields with an expiry, and due is rebuilt from the map when stale
	// entries outnumber them (compactDue), so it stays O(fields).
	due      []dueEntry
	expiring int
	// AutoExpire is the key expiry the dataserver last derived from the
	// fields (the latest field expiry when every field expires), so that
	// a key whose fields all expire goes away on its own. 0 = none.
	AutoExpire int64
}

// dueEntry is one scheduled field expiry of ExHash.due.
type dueEntry struct {
	at    int64
	field string // shares its bytes with the map's key
}

func (e dueEntry) When() int64 { return e.at }

// dueEntrySize is what Size counts for an entry of due.
const dueEntrySize = 24

var _ engines.Object = (*ExHash)(nil)

// NewExHash returns an empty TairHash.
func NewExHash() *ExHash { return &ExHash{m: make(map[string]*ExField)} }

func (h *ExHash) Type() engines.ValueType { return engines.TypeExHash }

// Len counts every field, expired ones not yet purged included.
func (h *ExHash) Len() int { return len(h.m) }

// Size counts an expiry entry per expiring field, not the heap's stale
// ones: it changes only with the fields, as an engine that accounts the
// size after a write that stored the hash expects (dropping stale entries
// is not such a write).
func (h *ExHash) Size() int { return objectOverhead + h.size + dueEntrySize*h.expiring }

func exEntrySize(f string, v *ExField) int { return mapSlotOverhead + 40 + len(f) + len(v.Value) }

// Get returns field unless it is missing or expired at nowMs. The returned
// field must not be modified: use Set.
func (h *ExHash) Get(field string, nowMs int64) *ExField {
	f := h.m[field]
	if f == nil || f.Expired(nowMs) {
		return nil
	}
	return f
}

// Set stores f under field (replacing any older field).
func (h *ExHash) Set(field string, f ExField) {
	old := h.m[field]
	if old != nil {
		h.size -= exEntrySize(field, old)
		if old.ExpireAt != 0 {
			h.expiring--
		}
	}
	nf := f
	h.m[field] = &nf
	h.size += exEntrySize(field, &nf)
	if nf.ExpireAt != 0 {
		h.expiring++
		// A field that keeps its expiry keeps its entry.
		if old == nil || old.ExpireAt != nf.ExpireAt {
			h.pushDue(nf.ExpireAt, field)
		}
	}
	h.compactDue()
}

// PurgeDue removes every field expired at nowMs and returns how many; it
// costs O(1) when none is due.
func (h *ExHash) PurgeDue(nowMs int64) int { return h.ExpireDue(nowMs, 0, nil) }

// ExpireDue removes the fields expired at nowMs, earliest expiry first,
// at most limit of them (0: no limit), calling fn (when not nil) with
// each removed field's name, and returns how many it removed. Its cost
// is that of the due fields, not of the hash.
func (h *ExHash) ExpireDue(nowMs int64, limit int, fn func(field string)) int {
	n := 0
	for len(h.due) > 0 && (limit <= 0 || n < limit) {
		top := h.due[0]
		if !engines.Expired(top.at, nowMs) {
			break
		}
		h.popDue()
		if f := h.m[top.field]; f == nil || f.ExpireAt != top.at {
			continue // stale
		}
		h.Delete(top.field)
		n++
		if fn != nil {
			fn(top.field)
		}
	}
	return n
}

// NextExpire is a lower bound of the earliest field expiry (unix ms; 0:
// no field expires), exact after ExpireDue: it may be the time of a field
// since rewritten or deleted, never later than a field's expiry.
func (h *ExHash) NextExpire() int64 {
	if len(h.due) == 0 {
		return 0
	}
	return h.due[0].at
}

// Delete removes field and reports whether it was there (expired or not).
func (h *ExHash) Delete(field string) bool {
	old := h.m[field]
	if old == nil {
		return false
	}
	h.size -= exEntrySize(field, old)
	delete(h.m, field)
	if old.ExpireAt != 0 {
		h.expiring--
		h.compactDue()
	}
	return true
}

// Live counts the fields not expired at nowMs.
func (h *ExHash) Live(nowMs int64) int {
	n := 0
	for _, f := range h.m {
		if !f.Expired(nowMs) {
			n++
		}
	}
	return n
}

// MaxExpire returns the latest field expiry when every field has one, else
// 0 (some field never expires, or the hash is empty).
func (h *ExHash) MaxExpire() int64 {
	var mx int64
	for _, f := range h.m {
		if f.ExpireAt == 0 {
			return 0
		}
		mx = max(mx, f.ExpireAt)
	}
	return mx
}

// Range calls fn for every field live at nowMs (no particular order) until
// it returns false.
func (h *ExHash) Range(nowMs int64, fn func(field string, f *ExField) bool) {
	for k, f := range h.m {
		if f.Expired(nowMs) {
			continue
		}
		if !fn(k, f) {
			return
		}
	}
}

// RangeAll calls fn for every field, expired ones not yet purged
// included (no particular order), until it returns false: what a move's
// pieces send, so that the copy holds what Len counts.
func (h *ExHash) RangeAll(fn func(field string, f *ExField) bool) {
	for k, f := range h.m {
		if !fn(k, f) {
			return
		}
	}
}

// MergePiece sets piece's fields (a *ExHash) as they are, version and
// expiry included, and takes its AutoExpire (engines.PieceMerger).
func (h *ExHash) MergePiece(piece engines.Object) error {
	p, ok := piece.(*ExHash)
	if !ok {
		return errs.ErrWrongType
	}
	for k, f := range p.m {
		h.Set(k, *f)
	}
	h.AutoExpire = p.AutoExpire
	return nil
}

// Fields returns the fields live at nowMs in byte order.
func (h *ExHash) Fields(nowMs int64) []string {
	out := make([]string, 0, len(h.m))
	h.Range(nowMs, func(k string, _ *ExField) bool { out = append(out, k); return true })
	sort.Strings(out)
	return out
}

// MarshalBinary encodes the TairHash (expired fields included).
func (h *ExHash) MarshalBinary() ([]byte, error) {
	e := newEncoder(engines.TypeExHash, len(h.m), h.size)
	e.varint(h.AutoExpire)
	for k, f := range h.m {
		e.str(k)
		e.str(f.Value)
		e.varint(f.Version)
		e.varint(f.ExpireAt)
	}
	return e.b, nil
}

// DecodeExHash reverses MarshalBinary.
func DecodeExHash(b []byte) (*ExHash, error) {
	d, n := newDecoder(b, engines.TypeExHash)
	h := &ExHash{m: make(map[string]*ExField, n)}
	h.AutoExpire = d.varint()
	for i := 0; i < n && d.err == nil; i++ {
		k := d.str()
		var f ExField
		f.Value = d.str()
		f.Version = d.varint()
		f.ExpireAt = d.varint()
		if d.err == nil {
			h.Set(k, f)
		}
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return h, nil
}

// compactDue rebuilds due from the map when its stale entries outnumber
// the current ones (a rewrite or a delete leaves one behind), and empties
// it when no field expires.
func (h *ExHash) compactDue() {
	if h.expiring == 0 {
		clear(h.due)
		h.due = h.due[:0] // every entry is stale: NextExpire is exact
		return
	}
	if len(h.due) <= 2*h.expiring+32 {
		return
	}
	due := make([]dueEntry, 0, h.expiring)
	for k, f := range h.m {
		if f.ExpireAt != 0 {
			due = append(due, dueEntry{at: f.ExpireAt, field: k})
		}
	}
	timeheap.Init(due)
	h.due = due
}

func (h *ExHash) pushDue(at int64, field string) {
	h.due = timeheap.Push(h.due, dueEntry{at: at, field: field})
}

// popDue removes the top of due.
func (h *ExHash) popDue() {
	h.due, _ = timeheap.Pop(h.due)
}
