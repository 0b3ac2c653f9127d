package ds

import (
	"encoding/binary"
	"sort"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
)

// Hash is a Redis hash: field -> value.
type Hash struct {
	m    map[string]string
	size int
	sum  uint64 // ContentSum, kept up to date by Set and Delete
}

var _ engines.Object = (*Hash)(nil)

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{m: make(map[string]string)} }

func (h *Hash) Type() engines.ValueType { return engines.TypeHash }
func (h *Hash) Len() int                { return len(h.m) }
func (h *Hash) Size() int               { return objectOverhead + h.size }

func hashEntrySize(f, v string) int { return mapSlotOverhead + len(f) + len(v) }

// Get returns field's value.
func (h *Hash) Get(field string) (string, bool) {
	v, ok := h.m[field]
	return v, ok
}

// Set sets field to value and reports whether the field is new.
func (h *Hash) Set(field, value string) bool {
	old, ok := h.m[field]
	if ok {
		h.size -= len(old)
		h.size += len(value)
		h.sum -= PairSum(field, old)
	} else {
		h.size += hashEntrySize(field, value)
	}
	h.sum += PairSum(field, value)
	h.m[field] = value
	return !ok
}

// Delete removes field and reports whether it was there.
func (h *Hash) Delete(field string) bool {
	v, ok := h.m[field]
	if ok {
		h.size -= hashEntrySize(field, v)
		h.sum -= PairSum(field, v)
		delete(h.m, field)
	}
	return ok
}

// Range calls fn for every field (in no particular order) until it returns
// false.
func (h *Hash) Range(fn func(field, value string) bool) {
	for f, v := range h.m {
		if !fn(f, v) {
			return
		}
	}
}

// Fields returns the fields in byte order.
func (h *Hash) Fields() []string {
	out := make([]string, 0, len(h.m))
	for f := range h.m {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// Random returns one field (Go map order: arbitrary, not uniform).
func (h *Hash) Random() (string, string, bool) {
	for f, v := range h.m {
		return f, v, true
	}
	return "", "", false
}

// ContentSum is a digest of the hash's fields and values that does not
// depend on their order: the sum (mod 2^64) of PairSum over them, kept
// as the hash changes, so reading it costs nothing (a moved bucket's
// checksum, dataserver/migsum.go).
func (h *Hash) ContentSum() uint64 { return h.sum + uint64(len(h.m)) }

// PairSum digests one field and its value (ContentSum).
func PairSum(f, v string) uint64 {
	var d xxhash.Digest
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], uint64(len(f)))
	_, _ = d.Write(lb[:])
	_, _ = d.WriteString(f)
	_, _ = d.WriteString(v)
	return d.Sum64()
}

// MarshalBinary encodes the hash.
func (h *Hash) MarshalBinary() ([]byte, error) {
	e := newEncoder(engines.TypeHash, len(h.m), h.size)
	for f, v := range h.m {
		e.str(f)
		e.str(v)
	}
	return e.b, nil
}

// DecodeHash reverses MarshalBinary.
func DecodeHash(b []byte) (*Hash, error) {
	d, n := newDecoder(b, engines.TypeHash)
	h := &Hash{m: make(map[string]string, n)}
	for i := 0; i < n && d.err == nil; i++ {
		f := d.str()
		h.Set(f, d.str())
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return h, nil
}
