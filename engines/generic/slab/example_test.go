package slab_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines/generic/slab"
)

// store keeps each record in one arena block, [key length][key][value],
// indexed by the key's hash; one RWMutex guards both structures.
type store struct {
	mu    sync.RWMutex
	arena *slab.Arena
	index *slab.Index
}

// keyAt returns the key of the record at h.
func (s *store) keyAt(h slab.Handle) []byte {
	n := int(binary.LittleEndian.Uint32(s.arena.Bytes(h, 4)))
	return s.arena.Bytes(h, 4+n)[4:]
}

func (s *store) set(key, val []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.arena.Alloc(4 + len(key) + len(val))
	b := s.arena.Bytes(h, 4+len(key)+len(val))
	binary.LittleEndian.PutUint32(b, uint32(len(key)))
	copy(b[4+copy(b[4:], key):], val)
	old, replaced := s.index.Put(xxhash.Sum64(key), h, func(o slab.Handle) bool { return bytes.Equal(s.keyAt(o), key) })
	if replaced {
		s.arena.Free(old)
	}
}

// get returns a copy of the value: the block may be freed once the lock
// is released.
func (s *store) get(key []byte, vlen int) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.index.Get(xxhash.Sum64(key), func(o slab.Handle) bool { return bytes.Equal(s.keyAt(o), key) })
	if !ok {
		return nil, false
	}
	return bytes.Clone(s.arena.Bytes(h, 4+len(key)+vlen)[4+len(key):]), true
}

func Example() {
	s := &store{arena: slab.New(slab.Options{}), index: slab.NewIndex(0)}
	s.set([]byte("greeting"), []byte("hello"))
	s.set([]byte("greeting"), []byte("howdy"))
	v, ok := s.get([]byte("greeting"), 5)
	fmt.Println(string(v), ok, s.index.Len(), s.arena.Stats().Blocks)
	// Output: howdy true 1 1
}
