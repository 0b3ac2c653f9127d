package slab

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// keyStore plays the arena for Index tests: the key of each handle.
type keyStore map[Handle]string

func (s keyStore) eq(key string) func(Handle) bool {
	return func(h Handle) bool { return s[h] == key }
}

func TestIndexBasic(t *testing.T) {
	var x Index // the zero Index is ready
	keys := keyStore{1: "a", 2: "b", 3: "a"}
	hash := func(k string) uint64 { return xxhash.Sum64String(k) }
	if h, ok := x.Get(hash("a"), keys.eq("a")); ok || h != 0 {
		t.Fatalf("Get on empty = %#x, %v", h, ok)
	}
	if old, replaced := x.Put(hash("a"), 1, keys.eq("a")); replaced || old != 0 {
		t.Fatalf("first Put = %#x, %v", old, replaced)
	}
	if old, replaced := x.Put(hash("b"), 2, keys.eq("b")); replaced || old != 0 {
		t.Fatalf("second Put = %#x, %v", old, replaced)
	}
	if h, ok := x.Get(hash("a"), keys.eq("a")); !ok || h != 1 {
		t.Fatalf("Get a = %#x, %v", h, ok)
	}
	// A new record for "a" replaces the handle.
	if old, replaced := x.Put(hash("a"), 3, keys.eq("a")); !replaced || old != 1 {
		t.Fatalf("replacing Put = %#x, %v", old, replaced)
	}
	delete(keys, 1)
	if h, ok := x.Get(hash("a"), keys.eq("a")); !ok || h != 3 || x.Len() != 2 {
		t.Fatalf("Get a = %#x, %v, Len %d", h, ok, x.Len())
	}
	if h, ok := x.Delete(hash("a"), keys.eq("a")); !ok || h != 3 {
		t.Fatalf("Delete a = %#x, %v", h, ok)
	}
	if h, ok := x.Delete(hash("a"), keys.eq("a")); ok || h != 0 {
		t.Fatalf("second Delete a = %#x, %v", h, ok)
	}
	if _, ok := x.Get(hash("a"), keys.eq("a")); ok || x.Len() != 1 {
		t.Fatalf("a still found, Len %d", x.Len())
	}
	var seen []Handle
	x.Range(func(h Handle) bool { seen = append(seen, h); return true })
	if len(seen) != 1 || seen[0] != 2 {
		t.Fatalf("Range saw %v", seen)
	}
	mustPanic(t, "nil handle", func() { x.Put(hash("c"), 0, keys.eq("c")) })
	if x.Bytes() != minSlots*slotBytes {
		t.Fatalf("Bytes = %d", x.Bytes())
	}
}

func TestNewIndexHint(t *testing.T) {
	for _, c := range []struct{ hint, slots int }{{-1, 0}, {0, 0}, {1, 8}, {6, 8}, {7, 16}, {819, 1024}, {820, 2048}} {
		x := NewIndex(c.hint)
		if len(x.cur) != c.slots {
			t.Errorf("NewIndex(%d): %d slots, want %d", c.hint, len(x.cur), c.slots)
		}
		keys := keyStore{}
		for i := range c.hint {
			keys[Handle(i+1)] = fmt.Sprint(i)
			x.Put(uint64(i)*0x9E3779B97F4A7C15, Handle(i+1), keys.eq(fmt.Sprint(i)))
		}
		if x.old != nil || (c.hint > 0 && len(x.cur) != c.slots) {
			t.Errorf("NewIndex(%d) grew after %d entries", c.hint, c.hint)
		}
	}
}

// TestIndexEqualHashes stores keys that all have the same hash: the
// callback tells them apart, and deletions in the middle of the run keep
// the others reachable.
func TestIndexEqualHashes(t *testing.T) {
	var x Index
	keys := keyStore{}
	for i := range 100 {
		h := Handle(i + 1)
		keys[h] = fmt.Sprint("k", i)
		x.Put(42, h, keys.eq(keys[h]))
	}
	for i := 0; i < 100; i += 3 {
		if h, ok := x.Delete(42, keys.eq(fmt.Sprint("k", i))); !ok || h != Handle(i+1) {
			t.Fatalf("Delete k%d = %#x, %v", i, h, ok)
		}
		checkIndex(t, &x)
	}
	for i := range 100 {
		h, ok := x.Get(42, keys.eq(fmt.Sprint("k", i)))
		if want := i%3 != 0; ok != want || (ok && h != Handle(i+1)) {
			t.Fatalf("Get k%d = %#x, %v", i, h, ok)
		}
	}
}

// TestIndexIncrementalGrowth checks that growing moves a bounded number of
// entries per write, that lookups find every entry in either table
// meanwhile, and that the old table is drained before the next growth.
func TestIndexIncrementalGrowth(t *testing.T) {
	var x Index
	keys := keyStore{}
	put := func(i int) {
		h := Handle(i + 1)
		keys[h] = fmt.Sprint(i)
		if _, replaced := x.Put(xxhash.Sum64String(keys[h]), h, keys.eq(keys[h])); replaced {
			t.Fatalf("key %d replaced", i)
		}
	}
	i := 0
	for ; x.old == nil || len(x.old) < 1<<16; i++ {
		put(i)
	}
	// The Put that started this growth moved nothing.
	if got := countSlots(x.cur); got != 1 {
		t.Fatalf("growth moved %d entries at once", got-1)
	}
	longest := longestRun(x.old)
	writes := 1
	for x.old != nil {
		moved := x.moved
		put(i)
		i++
		if x.old == nil {
			break
		}
		if d := x.moved - moved; d < migrateSlots || d > migrateSlots+longest {
			t.Fatalf("a write drained %d slots, want %d to %d", d, migrateSlots, migrateSlots+longest)
		}
		if i%101 == 0 {
			for j := 0; j < i; j += 7 {
				if h, ok := x.Get(xxhash.Sum64String(fmt.Sprint(j)), keys.eq(fmt.Sprint(j))); !ok || h != Handle(j+1) {
					t.Fatalf("key %d not found while growing: %#x, %v", j, h, ok)
				}
			}
			checkIndex(t, &x)
		}
		writes++
	}
	if x.n > maxLoad(len(x.cur))*3/4 {
		t.Fatalf("old table drained late: %d entries in %d slots", x.n, len(x.cur))
	}
	t.Logf("drained %d old slots in %d writes; longest run %d", 1<<16, writes, longest)
	checkIndex(t, &x)
}

func countSlots(t []slot) int {
	n := 0
	for _, s := range t {
		if s.h != 0 {
			n++
		}
	}
	return n
}

func longestRun(t []slot) int {
	longest, run := 0, 0
	for _, s := range append(t, t...) { // runs may wrap around
		if s.h == 0 {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

// TestIndexModel runs random writes and lookups against a Go map, through
// many incremental growths, with a good hash and with one that collides
// all the time.
func TestIndexModel(t *testing.T) {
	for _, c := range []struct {
		name   string
		keys   int
		ops    int
		budget int
		hash   func(string) uint64
	}{
		{"xxhash", 5000, 60000, 0, xxhash.Sum64String},
		{"xxhash/budget1", 3000, 30000, 1, xxhash.Sum64String},
		{"64hashes", 600, 8000, 1, func(k string) uint64 { return xxhash.Sum64String(k) & 63 }},
		{"lowbits0", 2000, 20000, 0, func(k string) uint64 { return xxhash.Sum64String(k) &^ 0xFF }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(c.keys)))
			m := newIndexModel(t, c.hash)
			m.x.budget = c.budget
			for i := range c.ops {
				k := r.IntN(c.keys)
				// Phases that mostly insert, then mostly delete.
				insertBias := 6
				if i/(c.ops/6)%2 == 1 {
					insertBias = 3
				}
				switch op := r.IntN(10); {
				case op < insertBias:
					m.put(k)
				case op < 9:
					m.del(k)
				default:
					m.get(k)
				}
				if i%max(113, c.keys/10) == 0 { // verify costs a lookup per key
					m.verify()
				}
			}
			m.verify()
		})
	}
}

func FuzzIndex(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 1, 2, 2, 1})
	f.Add([]byte{1, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0, 10, 0, 11, 1, 6, 1, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		hash := xxhash.Sum64String
		if data[0]%2 == 1 { // 16 hashes: long runs, equal hashes
			hash = func(k string) uint64 { return xxhash.Sum64String(k) & 15 }
		}
		m := newIndexModel(t, hash)
		m.x.budget = 1 + int(data[0]/2%4)
		data = data[1:]
		for ; len(data) >= 2; data = data[2:] {
			switch k := int(data[1]); data[0] % 4 {
			case 0, 1:
				m.put(k)
			case 2:
				m.del(k)
			default:
				m.get(k)
			}
			if len(data)%16 == 0 {
				m.verify()
			}
		}
		m.verify()
	})
}

// indexModel checks an Index against a map of key to handle.
type indexModel struct {
	t     testing.TB
	x     *Index
	hash  func(string) uint64
	keys  keyStore // key of every handle ever stored
	want  map[string]Handle
	nextH Handle
}

func newIndexModel(t testing.TB, hash func(string) uint64) *indexModel {
	return &indexModel{t: t, x: NewIndex(0), hash: hash, keys: keyStore{}, want: map[string]Handle{}}
}

func (m *indexModel) put(k int) {
	key := fmt.Sprint("key", k)
	m.nextH++
	h := m.nextH<<20 | 1 // handles with high bits set
	m.keys[h] = key
	old, replaced := m.x.Put(m.hash(key), h, m.keys.eq(key))
	prev, had := m.want[key]
	if replaced != had || old != prev {
		m.t.Fatalf("Put %s = %#x, %v; want %#x, %v", key, old, replaced, prev, had)
	}
	m.want[key] = h
}

func (m *indexModel) del(k int) {
	key := fmt.Sprint("key", k)
	h, ok := m.x.Delete(m.hash(key), m.keys.eq(key))
	m.expect("Delete", key, h, ok)
	delete(m.want, key)
}

func (m *indexModel) get(k int) {
	key := fmt.Sprint("key", k)
	h, ok := m.x.Get(m.hash(key), m.keys.eq(key))
	m.expect("Get", key, h, ok)
}

// expect checks that op found key's handle h (ok) as the model has it.
func (m *indexModel) expect(op, key string, h Handle, ok bool) {
	prev, had := m.want[key]
	if ok != had || h != prev {
		m.t.Fatalf("%s %s = %#x, %v; want %#x, %v", op, key, h, ok, prev, had)
	}
}

func (m *indexModel) verify() {
	if m.x.Len() != len(m.want) {
		m.t.Fatalf("Len %d, want %d", m.x.Len(), len(m.want))
	}
	for key, want := range m.want {
		if h, ok := m.x.Get(m.hash(key), m.keys.eq(key)); !ok || h != want {
			m.t.Fatalf("Get %s = %#x, %v; want %#x", key, h, ok, want)
		}
	}
	seen := map[Handle]bool{}
	m.x.Range(func(h Handle) bool {
		if seen[h] || m.want[m.keys[h]] != h {
			m.t.Fatalf("Range: handle %#x repeated or not stored", h)
		}
		seen[h] = true
		return true
	})
	if len(seen) != len(m.want) {
		m.t.Fatalf("Range saw %d handles, want %d", len(seen), len(m.want))
	}
	n := 0
	m.x.Range(func(Handle) bool { n++; return n < 3 })
	if n != min(3, len(m.want)) {
		m.t.Fatalf("Range did not stop: %d calls", n)
	}
	checkIndex(m.t, m.x)
}

// checkIndex verifies the Index's internal invariants.
func checkIndex(t testing.TB, x *Index) {
	t.Helper()
	n := 0
	for _, tab := range [2][]slot{x.old, x.cur} {
		mask := len(tab) - 1
		for i, s := range tab {
			if s.h == 0 {
				continue
			}
			n++
			// Every slot from the entry's home to it is occupied.
			for j := int(s.hash) & mask; j != i; j = (j + 1) & mask {
				if tab[j].h == 0 {
					t.Fatalf("index invariant: entry at %d of %d unreachable from home %d", i, len(tab), int(s.hash)&mask)
				}
			}
		}
	}
	if n != x.n || n > maxLoad(len(x.cur)) {
		t.Fatalf("index invariant: %d entries, n %d, %d slots", n, x.n, len(x.cur))
	}
	if x.old != nil {
		if len(x.cur) != 2*len(x.old) {
			t.Fatalf("index invariant: growing from %d to %d slots", len(x.old), len(x.cur))
		}
		for i := range x.moved {
			if x.old[i].h != 0 {
				t.Fatalf("index invariant: drained slot %d occupied", i)
			}
		}
	}
}
