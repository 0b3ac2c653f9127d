package ds

import (
	"sort"

	"github.com/tairkv/tair/engines"
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
// Expired fields stay in the map until Purge removes them; readers filter
// them with Get/Range(now).
type ExHash struct {
	m    map[string]*ExField
	size int
	// minExp is a lower bound of the earliest field expiry (0: none), so
	// that PurgeDue is O(1) when nothing is due.
	minExp int64
	// AutoExpire is the key expiry the dataserver last derived from the
	// fields (the latest field expiry when every field expires), so that
	// a key whose fields all expire goes away on its own. 0 = none.
	AutoExpire int64
}

var _ engines.Object = (*ExHash)(nil)

// NewExHash returns an empty TairHash.
func NewExHash() *ExHash { return &ExHash{m: make(map[string]*ExField)} }

func (h *ExHash) Type() engines.ValueType { return engines.TypeExHash }

// Len counts every field, expired ones not yet purged included.
func (h *ExHash) Len() int  { return len(h.m) }
func (h *ExHash) Size() int { return objectOverhead + h.size }

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
	if old := h.m[field]; old != nil {
		h.size -= exEntrySize(field, old)
	}
	nf := f
	h.m[field] = &nf
	h.size += exEntrySize(field, &nf)
	if nf.ExpireAt != 0 && (h.minExp == 0 || nf.ExpireAt < h.minExp) {
		h.minExp = nf.ExpireAt
	}
}

// PurgeDue is Purge when some field may be expired at nowMs, else a no-op
// costing O(1).
func (h *ExHash) PurgeDue(nowMs int64) int {
	if h.minExp == 0 || !engines.Expired(h.minExp, nowMs) {
		return 0
	}
	return h.Purge(nowMs)
}

// Delete removes field and reports whether it was there (expired or not).
func (h *ExHash) Delete(field string) bool {
	old := h.m[field]
	if old == nil {
		return false
	}
	h.size -= exEntrySize(field, old)
	delete(h.m, field)
	return true
}

// Purge removes the fields expired at nowMs and returns how many.
func (h *ExHash) Purge(nowMs int64) int {
	n := 0
	h.minExp = 0
	for k, f := range h.m {
		if f.Expired(nowMs) {
			h.Delete(k)
			n++
		} else if f.ExpireAt != 0 && (h.minExp == 0 || f.ExpireAt < h.minExp) {
			h.minExp = f.ExpireAt
		}
	}
	return n
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
