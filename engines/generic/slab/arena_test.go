package slab

import (
	"bytes"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

const smallPage = 1 << 16 // 64 KiB pages keep page-level tests cheap

func TestClasses(t *testing.T) {
	for ps := MinPageSize; ps <= MaxPageSize; ps *= 2 {
		a := New(Options{PageSize: ps})
		sizes := a.classSize[1:]
		if want := (ps - ps/128) / 8 &^ 7; sizes[0] != MinBlock || int(sizes[len(sizes)-1]) != want || a.MaxBlock() != want {
			t.Fatalf("page %d: classes span %d..%d, want %d..%d", ps, sizes[0], sizes[len(sizes)-1], MinBlock, want)
		}
		for i, s := range sizes {
			if s%8 != 0 {
				t.Fatalf("page %d: class size %d not a multiple of 8", ps, s)
			}
			if i == 0 {
				continue
			}
			prev := sizes[i-1]
			if s <= prev || (s-prev > 8 && s*4 > prev*5) {
				t.Fatalf("page %d: class %d after %d grows more than 1.25x", ps, s, prev)
			}
			// Raised to use the page: one more byte per block would lose a block.
			if a.blockBytes/int(s) == a.blockBytes/int(s+8) {
				t.Fatalf("page %d: class %d could be %d with as many blocks", ps, s, s+8)
			}
		}
		// Every size maps to the smallest class that holds it.
		for n := 1; n <= a.maxBlock; n++ {
			got := a.BlockSize(n)
			c := a.classOf[(n+7)/8]
			if got < n || (c > 1 && int(a.classSize[c-1]) >= n) {
				t.Fatalf("page %d: BlockSize(%d) = %d (class %d)", ps, n, got, c)
			}
		}
		if got := a.BlockSize(a.maxBlock + 1); got != a.maxBlock+1 {
			t.Fatalf("BlockSize beyond the classes = %d", got)
		}
	}
}

func TestAllocFreeReuseEveryClass(t *testing.T) {
	a := New(Options{})
	for c := 1; c < len(a.classSize); c++ {
		size := int(a.classSize[c])
		h1 := a.Alloc(size)
		h2 := a.Alloc(size - 7)
		if h1 == 0 || h2 == 0 {
			t.Fatal("nil handle")
		}
		if h1.class() != c || h2.class() != c || a.Cap(h1) != size || a.Cap(h2) != size {
			t.Fatalf("class %d: handles %#x %#x, caps %d %d", c, h1, h2, a.Cap(h1), a.Cap(h2))
		}
		if h1.page() != h2.page() || h1.offset() != 0 || h2.offset() != uint32(size) {
			t.Fatalf("class %d: blocks at page %d+%d and %d+%d, want consecutive on one page", c, h1.page(), h1.offset(), h2.page(), h2.offset())
		}
		st := a.Stats()
		if st.InUse != int64(2*size) || st.Blocks != 2 || st.Pages != 1 || st.EmptyPages != 0 || st.Reserved != DefaultPageSize {
			t.Fatalf("class %d: stats %+v", c, st)
		}
		a.Free(h1)
		if h := a.Alloc(size); h != h1 {
			t.Fatalf("class %d: freed block not reused: %#x, want %#x", c, h, h1)
		}
		a.Free(h2)
		a.Free(h1)
		st = a.Stats()
		if st.InUse != 0 || st.Blocks != 0 || st.Pages != 1 || st.EmptyPages != 1 {
			t.Fatalf("class %d: after freeing all, stats %+v", c, st)
		}
		checkArena(t, a)
	}
}

func TestBytesAliasing(t *testing.T) {
	a := New(Options{})
	h := a.Alloc(20)
	next := a.Alloc(20)
	copy(a.Bytes(next, 24), bytes.Repeat([]byte{0xEE}, 24))
	b := a.Bytes(h, 20)
	if len(b) != 20 || cap(b) != 20 {
		t.Fatalf("len %d cap %d, want 20 20", len(b), cap(b))
	}
	copy(b, "0123456789abcdefghij")
	if got := string(a.Bytes(h, 10)); got != "0123456789" {
		t.Fatalf("read back %q", got)
	}
	_ = append(b, "overflow"...) // capacity n: copies, never writes the next block
	full := a.Bytes(h, a.Cap(h))
	if len(full) != 24 || string(full[:20]) != "0123456789abcdefghij" {
		t.Fatalf("full block %q", full)
	}
	if got := a.Bytes(next, 24); !bytes.Equal(got, bytes.Repeat([]byte{0xEE}, 24)) {
		t.Fatalf("neighbour changed: %x", got)
	}
	if len(a.Bytes(h, 0)) != 0 {
		t.Fatal("Bytes(h, 0) not empty")
	}
	mustPanic(t, "beyond", func() { a.Bytes(h, 25) })
	mustPanic(t, "", func() { a.Bytes(h, -1) })
}

func TestDedicated(t *testing.T) {
	a := New(Options{PageSize: smallPage})
	n := a.MaxBlock() + 1
	h := a.Alloc(n)
	if h == 0 || h.class() != bigClass || a.Cap(h) != n || a.BlockSize(n) != n {
		t.Fatalf("handle %#x cap %d", h, a.Cap(h))
	}
	b := a.Bytes(h, n)
	b[0], b[n-1] = 1, 2
	if got := a.Bytes(h, n); got[0] != 1 || got[n-1] != 2 {
		t.Fatal("dedicated block does not alias")
	}
	want := Stats{InUse: int64(n), Reserved: int64(n), Dedicated: 1, DedicatedBytes: int64(n)}
	if st := withoutMeta(a.Stats()); st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	h2 := a.Alloc(3 * n)
	a.Free(h)
	if st := withoutMeta(a.Stats()); st.Dedicated != 1 || st.DedicatedBytes != int64(3*n) || st.InUse != int64(3*n) {
		t.Fatalf("after free: %+v", st)
	}
	mustPanic(t, "freed", func() { a.Free(h) })
	if h3 := a.Alloc(2 * n); h3 != h || a.Cap(h3) != 2*n {
		t.Fatalf("freed slot not reused: %#x, want %#x", h3, h)
	}
	mustPanic(t, "beyond", func() { a.Bytes(h, 2*n+1) })
	a.Free(h)
	a.Free(h2)
	if st := withoutMeta(a.Stats()); st != (Stats{}) {
		t.Fatalf("after freeing all: %+v", st)
	}
	checkArena(t, a)
}

func TestDedicatedHalfGiB(t *testing.T) {
	a := New(Options{})
	const n = 512 << 20
	h := a.Alloc(n)
	b := a.Bytes(h, n)
	b[0], b[n-1] = 'a', 'z'
	if a.Cap(h) != n || a.Stats().InUse != n || a.Bytes(h, n)[n-1] != 'z' {
		t.Fatalf("cap %d stats %+v", a.Cap(h), a.Stats())
	}
	a.Free(h)
	if a.Stats().Reserved != 0 {
		t.Fatalf("not released: %+v", a.Stats())
	}
}

func TestAllocSizeOutOfRange(t *testing.T) {
	a := New(Options{})
	tooBig := int64(MaxAlloc) + 1
	for _, n := range []int{0, -1, int(tooBig)} { // int(tooBig) < 0 on 32-bit platforms
		mustPanic(t, "allocation of", func() { a.Alloc(n) })
		mustPanic(t, "allocation of", func() { a.BlockSize(n) })
	}
	mustPanic(t, "page size", func() { New(Options{PageSize: 3 << 16}) })
	mustPanic(t, "page size", func() { New(Options{PageSize: MinPageSize / 2}) })
	mustPanic(t, "page size", func() { New(Options{PageSize: MaxPageSize * 2}) })
}

// TestPagePoolAndRelease fills pages of one class and empties them one at
// a time: emptied pages go to the pool up to the reserve, further ones are
// released, and new pages come from the pool, then from released numbers.
func TestPagePoolAndRelease(t *testing.T) {
	const reserve = 2
	a := New(Options{PageSize: smallPage, ReservePages: reserve})
	size := a.BlockSize(1000)
	per := a.blockBytes / size
	full := int64(per * size) // bytes of a full page's blocks
	var pages [5][]Handle
	for p := range pages {
		for range per {
			h := a.Alloc(size)
			if int(h.page()) != p {
				t.Fatalf("block on page %d, want %d", h.page(), p)
			}
			pages[p] = append(pages[p], h)
		}
	}
	want := Stats{InUse: 5 * full, Reserved: 5 * smallPage, Pages: 5, Blocks: 5 * per}
	if st := withoutMeta(a.Stats()); st != want {
		t.Fatalf("full: %+v, want %+v", st, want)
	}
	if len(a.partial[a.classOf[size/8]]) != 0 {
		t.Fatal("full pages listed as partial")
	}
	for p := range pages {
		for i, h := range pages[p] {
			a.Free(h)
			if i == 0 && len(a.partial[h.class()]) != 1 {
				t.Fatal("page with a free block not listed")
			}
		}
		emptied := p + 1
		pool := min(emptied, reserve)
		want := Stats{
			InUse:      int64(5-emptied) * full,
			Reserved:   int64((5 - emptied + pool) * smallPage),
			Pages:      5 - emptied + pool,
			EmptyPages: pool,
			Blocks:     (5 - emptied) * per,
		}
		if st := withoutMeta(a.Stats()); st != want {
			t.Fatalf("after emptying %d pages: %+v, want %+v", emptied, st, want)
		}
		checkArena(t, a)
	}
	// Pages 0 and 1 are in the pool, 2 to 4 released.
	if a.pages[0] == nil || a.pages[1] == nil || a.pages[2] != nil || a.pages[3] != nil || a.pages[4] != nil {
		t.Fatal("wrong pages released")
	}
	// The pool is taken last in, first out, then released numbers.
	for i, wantPage := range []uint32{1, 0, 4} {
		var h Handle
		for range per {
			h = a.Alloc(size)
		}
		if h.page() != wantPage {
			t.Fatalf("page %d taken, want %d", h.page(), wantPage)
		}
		if st := a.Stats(); st.Pages != 2+max(0, i-1) || st.EmptyPages != max(0, 1-i) {
			t.Fatalf("after taking page %d: %+v", wantPage, st)
		}
	}
	checkArena(t, a)
}

func TestNoReserve(t *testing.T) {
	a := New(Options{PageSize: smallPage, ReservePages: -1})
	h := a.Alloc(100)
	a.Free(h)
	if st := withoutMeta(a.Stats()); st != (Stats{}) {
		t.Fatalf("page kept: %+v", st)
	}
	if h2 := a.Alloc(100); h2 != h {
		t.Fatalf("page number not reused: %#x, want %#x", h2, h)
	}
}

func TestFreedPageReusedByOtherClass(t *testing.T) {
	a := New(Options{})
	h := a.Alloc(16)
	a.Free(h)
	h2 := a.Alloc(5000)
	if h2.page() != h.page() || h2.class() == h.class() || h2.offset() != 0 {
		t.Fatalf("class %d block %#x not on the freed page of %#x", h2.class(), h2, h)
	}
	if a.Cap(h2) != a.BlockSize(5000) || a.Cap(h2) < 5000 {
		t.Fatalf("cap %d", a.Cap(h2))
	}
	want := Stats{InUse: int64(a.Cap(h2)), Reserved: DefaultPageSize, Pages: 1, Blocks: 1}
	if st := withoutMeta(a.Stats()); st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	// The old handle names a block of the wrong class now.
	mustPanic(t, "invalid or freed", func() { a.Free(h) })
	checkArena(t, a)
}

func TestFreeInvalid(t *testing.T) {
	a := New(Options{PageSize: smallPage})
	h := a.Alloc(40)
	h2 := a.Alloc(40)
	a.Free(h)
	for name, bad := range map[string]Handle{
		"double":     h,
		"nil":        0,
		"misaligned": h2 + 8,
		"unused":     h2 + 40,
		"no page":    makeHandle(7, h.class(), 0),
		"class":      makeHandle(0, h.class()+1, 0),
		"big":        makeHandle(0, bigClass, 0),
	} {
		t.Run(name, func(t *testing.T) {
			mustPanic(t, "invalid or freed", func() { a.Free(bad) })
		})
	}
	a.Free(h2)
	mustPanic(t, "invalid or freed", func() { a.Free(h2) }) // page in the pool
	checkArena(t, a)
}

func TestWriteAfterFreeDetected(t *testing.T) {
	a := New(Options{})
	h := a.Alloc(64)
	keep := a.Alloc(64)
	a.Free(h)
	copy(a.Bytes(h, 8), "garbage!") // a bug: writes through a freed handle
	mustPanic(t, "corrupted", func() { a.Alloc(64) })
	_ = keep
}

// TestArenaModel runs random allocations, frees and rewrites against a map
// of the contents every live block should hold.
func TestArenaModel(t *testing.T) {
	for _, reserve := range []int{-1, 1, 4} {
		t.Run(fmt.Sprint("reserve", reserve), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(reserve+10)))
			m := newArenaModel(t, Options{PageSize: smallPage, ReservePages: reserve})
			for i := range 20000 {
				switch op := r.IntN(10); {
				case op < 5 || len(m.live) == 0:
					var n int
					switch r.IntN(20) {
					case 0:
						n = 1 + r.IntN(3*smallPage/8) // sometimes dedicated
					case 1, 2:
						n = 1 + r.IntN(smallPage/8)
					default:
						n = 1 + r.IntN(300)
					}
					m.alloc(n, byte(i))
				case op < 9:
					m.free(r.IntN(len(m.live)))
				default:
					m.rewrite(r.IntN(len(m.live)), byte(i))
				}
				// Phases of mass frees return whole pages.
				if i%5000 == 4000 {
					for len(m.live) > 10 {
						m.free(r.IntN(len(m.live)))
					}
				}
				if i%97 == 0 {
					m.verify()
				}
			}
			for len(m.live) > 0 {
				m.free(0)
			}
			m.verify()
			if st := m.a.Stats(); st.InUse != 0 || st.Pages != st.EmptyPages || st.Reserved != int64(st.Pages)*smallPage {
				t.Fatalf("empty arena: %+v", st)
			}
		})
	}
}

func FuzzArena(f *testing.F) {
	f.Add([]byte{0, 10, 0, 20, 1, 0, 0, 200, 2, 0, 1, 1})
	f.Add([]byte{0, 255, 255, 0, 1, 0, 0, 3, 1, 0, 0, 3, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newArenaModel(t, Options{PageSize: smallPage, ReservePages: 1})
		for len(data) >= 3 {
			op, arg := data[0], int(data[1])<<8|int(data[2])
			data = data[3:]
			switch {
			case op%4 <= 1 || len(m.live) == 0:
				// Sizes up to 2^16: small, page-sized and dedicated.
				m.alloc(1+arg>>(op/4%8*2), op)
			case op%4 == 2:
				m.free(arg % len(m.live))
			default:
				m.rewrite(arg%len(m.live), op)
			}
		}
		m.verify()
		for len(m.live) > 0 {
			m.free(len(m.live) - 1)
		}
		m.verify()
	})
}

// arenaModel tracks what every live block of an Arena should contain.
type arenaModel struct {
	t    testing.TB
	a    *Arena
	live []Handle
	data map[Handle][]byte
}

func newArenaModel(t testing.TB, opts Options) *arenaModel {
	return &arenaModel{t: t, a: New(opts), data: map[Handle][]byte{}}
}

func (m *arenaModel) alloc(n int, fill byte) {
	h := m.a.Alloc(n)
	if h == 0 {
		m.t.Fatal("Alloc returned the nil handle")
	}
	if _, dup := m.data[h]; dup {
		m.t.Fatalf("Alloc returned live handle %#x", h)
	}
	if c := m.a.Cap(h); c < n || c != m.a.BlockSize(n) {
		m.t.Fatalf("Alloc(%d): cap %d, BlockSize %d", n, c, m.a.BlockSize(n))
	}
	m.live = append(m.live, h)
	m.write(h, n, fill)
}

func (m *arenaModel) write(h Handle, n int, fill byte) {
	b := m.a.Bytes(h, n)
	for i := range b {
		b[i] = fill + byte(i)
	}
	m.data[h] = append([]byte(nil), b...)
}

func (m *arenaModel) free(i int) {
	h := m.live[i]
	m.live[i] = m.live[len(m.live)-1]
	m.live = m.live[:len(m.live)-1]
	if got := m.a.Bytes(h, len(m.data[h])); !bytes.Equal(got, m.data[h]) {
		m.t.Fatalf("block %#x changed before Free", h)
	}
	delete(m.data, h)
	m.a.Free(h)
}

func (m *arenaModel) rewrite(i int, fill byte) {
	h := m.live[i]
	m.write(h, 1+int(fill)%m.a.Cap(h), fill)
}

func (m *arenaModel) verify() {
	var inUse int64
	for h, want := range m.data {
		if got := m.a.Bytes(h, len(want)); !bytes.Equal(got, want) {
			m.t.Fatalf("block %#x holds %x..., want %x...", h, got[:min(8, len(got))], want[:min(8, len(want))])
		}
		inUse += int64(m.a.Cap(h))
	}
	if st := m.a.Stats(); st.InUse != inUse || st.Blocks+st.Dedicated != len(m.data) {
		m.t.Fatalf("stats %+v, model holds %d blocks of %d bytes", st, len(m.data), inUse)
	}
	checkArena(m.t, m.a)
}

// checkArena verifies the Arena's internal invariants.
func checkArena(t testing.TB, a *Arena) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("arena invariant: "+format, args...)
	}
	inPool := map[uint32]bool{}
	for _, p := range a.empty {
		inPool[p] = true
	}
	released := map[uint32]bool{}
	for _, p := range a.released {
		released[p] = true
	}
	if len(a.empty) > a.reserve || len(inPool) != len(a.empty) || len(released) != len(a.released) {
		fail("pool %v (reserve %d), released %v", a.empty, a.reserve, a.released)
	}
	var inUse int64
	held, blocks := 0, 0
	for p := range a.pages {
		p := uint32(p)
		m := a.meta[p]
		switch {
		case a.pages[p] == nil:
			if !released[p] || m != (pageMeta{}) || a.liveCount(p) != 0 {
				fail("released page %d: meta %+v, listed %v, %d live bits", p, m, released[p], a.liveCount(p))
			}
			continue
		case m.class == 0:
			if !inPool[p] || m != (pageMeta{}) || a.liveCount(p) != 0 {
				fail("empty page %d: meta %+v, pooled %v, %d live bits", p, m, inPool[p], a.liveCount(p))
			}
		default:
			if inPool[p] || released[p] || m.live == 0 || int(m.live) != a.liveCount(p) {
				fail("carved page %d: meta %+v, %d live bits", p, m, a.liveCount(p))
			}
			size := a.classSize[m.class]
			listed := 0
			for f := m.free; f != 0; {
				o := f - 1
				if o%size != 0 || o >= m.bump || a.isLive(p, o) || listed > a.blockBytes/int(size) {
					fail("page %d: bad free block %d", p, o)
				}
				listed++
				f = a.nextFree(p, o, size)
			}
			if int(m.live)+listed != int(m.bump/size) {
				fail("page %d: %d live + %d free != %d carved", p, m.live, listed, m.bump/size)
			}
			hasFree := m.free != 0 || int(m.bump+size) <= a.blockBytes
			list := a.partial[m.class]
			if hasFree != (m.pos != 0) || (m.pos != 0 && (int(m.pos) > len(list) || list[m.pos-1] != p)) {
				fail("page %d: has free %v, pos %d in %v", p, hasFree, m.pos, list)
			}
			blocks += int(m.live)
			inUse += int64(m.live) * int64(size)
		}
		held++
	}
	listed := 0
	for c, list := range a.partial {
		for _, p := range list {
			if int(a.meta[p].class) != c {
				fail("page %d of class %d listed in class %d", p, a.meta[p].class, c)
			}
		}
		listed += len(list)
	}
	var bigBytes int64
	bigCount := 0
	for _, b := range a.big {
		if b != nil {
			bigCount++
			bigBytes += int64(len(b))
		}
	}
	if bigCount+len(a.bigFree) != len(a.big) {
		fail("%d dedicated + %d free slots != %d", bigCount, len(a.bigFree), len(a.big))
	}
	if held != a.held || blocks != a.blocks || inUse+bigBytes != a.inUse || bigBytes != a.bigBytes || bigCount != a.bigCount {
		fail("counters: held %d/%d blocks %d/%d inUse %d/%d big %d/%d", held, a.held, blocks, a.blocks, inUse+bigBytes, a.inUse, bigCount, a.bigCount)
	}
}

func (a *Arena) liveCount(p uint32) int {
	n := 0
	if a.pages[p] == nil {
		return 0
	}
	for _, x := range a.pages[p][a.blockBytes:] {
		n += bits.OnesCount8(x)
	}
	return n
}

func withoutMeta(s Stats) Stats {
	s.Metadata = 0
	return s
}

func mustPanic(t *testing.T, substr string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", substr)
		}
		if !strings.Contains(fmt.Sprint(r), substr) {
			t.Fatalf("panic %q, want one containing %q", r, substr)
		}
	}()
	fn()
}
