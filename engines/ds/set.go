package ds

import (
	"math/rand/v2"
	"sort"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
)

// Set is a Redis set. Members live in a slice indexed by a map so that a
// uniformly random member (SPOP, SRANDMEMBER) costs O(1).
type Set struct {
	idx  map[string]int
	list []string
	size int
	sum  uint64 // ContentSum, kept up to date by Add and Remove
}

var _ engines.Object = (*Set)(nil)

// NewSet returns an empty set.
func NewSet() *Set { return &Set{idx: make(map[string]int)} }

func (s *Set) Type() engines.ValueType { return engines.TypeSet }
func (s *Set) Len() int                { return len(s.list) }
func (s *Set) Size() int               { return objectOverhead + s.size }

func setEntrySize(m string) int { return mapSlotOverhead + stringOverhead + len(m) }

// Has reports whether m is a member.
func (s *Set) Has(m string) bool { _, ok := s.idx[m]; return ok }

// Add adds m and reports whether it is new.
func (s *Set) Add(m string) bool {
	if _, ok := s.idx[m]; ok {
		return false
	}
	s.idx[m] = len(s.list)
	s.list = append(s.list, m)
	s.size += setEntrySize(m)
	s.sum += xxhash.Sum64String(m)
	return true
}

// Remove removes m and reports whether it was there.
func (s *Set) Remove(m string) bool {
	i, ok := s.idx[m]
	if !ok {
		return false
	}
	last := len(s.list) - 1
	if i != last {
		s.list[i] = s.list[last]
		s.idx[s.list[i]] = i
	}
	s.list[last] = ""
	s.list = s.list[:last]
	delete(s.idx, m)
	s.size -= setEntrySize(m)
	s.sum -= xxhash.Sum64String(m)
	if cap(s.list) > 64 && len(s.list) < cap(s.list)/4 {
		s.list = append([]string(nil), s.list...)
	}
	return true
}

// ContentSum is a digest of the members that does not depend on their
// order: the sum (mod 2^64) of their xxhashes, kept as the set changes
// (a moved bucket's checksum, dataserver/migsum.go).
func (s *Set) ContentSum() uint64 { return s.sum + uint64(len(s.list)) }

// Members returns the members (in no particular order); the slice is a
// copy.
func (s *Set) Members() []string { return append([]string(nil), s.list...) }

// Range calls fn for every member until it returns false.
func (s *Set) Range(fn func(m string) bool) {
	for _, m := range s.list {
		if !fn(m) {
			return
		}
	}
}

// Sorted returns the members in byte order.
func (s *Set) Sorted() []string {
	out := s.Members()
	sort.Strings(out)
	return out
}

// At returns the i-th member of the internal order (0 <= i < Len): with a
// random i it is a uniformly random member.
func (s *Set) At(i int) string { return s.list[i] }

// Random returns a uniformly random member ("" when empty).
func (s *Set) Random() string {
	if len(s.list) == 0 {
		return ""
	}
	return s.list[rand.IntN(len(s.list))]
}

// MarshalBinary encodes the set.
func (s *Set) MarshalBinary() ([]byte, error) {
	e := newEncoder(engines.TypeSet, len(s.list), s.size)
	for _, m := range s.list {
		e.str(m)
	}
	return e.b, nil
}

// DecodeSet reverses MarshalBinary.
func DecodeSet(b []byte) (*Set, error) {
	d, n := newDecoder(b, engines.TypeSet)
	s := &Set{idx: make(map[string]int, n), list: make([]string, 0, n)}
	for i := 0; i < n && d.err == nil; i++ {
		s.Add(d.str())
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return s, nil
}
