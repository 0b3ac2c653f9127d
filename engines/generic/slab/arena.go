// Package slab stores records in memory the Go garbage collector never
// scans: an Arena of large pointer-free pages carved into blocks and
// addressed by integer Handles, and an Index, a hash table of handles made
// of pointer-free slots.
//
// # Why
//
// A Go map of keys to per-record structs costs the collector a few
// pointers per record (the struct, its key string, its value slice, the
// map slots), so with millions of records every GC cycle spends most of a
// core marking them and latency follows. Here a record is a block in a
// []byte page and the index holds integers: the collector sees one pointer
// per page (1 MiB by default) and none per record, so its work does not
// grow with the number of records (TestGCWorkIndependentOfEntries,
// BenchmarkGC1M).
//
// # Concurrency
//
// Neither type locks. Reads (Arena.Bytes, Arena.Cap, Arena.BlockSize,
// Arena.Stats, Index.Get, Index.Range, Index.Len) only read and are safe
// from many goroutines at once while no goroutine mutates; mutations
// (Arena.Alloc, Arena.Free, Index.Put, Index.Delete) must be exclusive.
// The intended caller guards both with one sync.RWMutex: shared for
// reads, exclusive for writes. Bytes written through a slice returned by
// Bytes are the caller's to synchronise, like any []byte.
package slab

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// Handle addresses a block of an Arena. The zero Handle is nil: Alloc never
// returns it, so callers may use 0 for "no record".
//
// Layout, from the least significant bit:
//
//	bits  0-23  byte offset of the block in its page (pages are at most 16 MiB)
//	bits 24-31  size class, 1..len(classes); 255 marks a dedicated allocation
//	bits 32-63  page number, or for a dedicated allocation its slot number
//
// The class field is never 0, which is what keeps every handle non-zero.
// A handle carries its class so that Cap needs no table lookup; the page
// keeps its class too, which lets Free reject most stale handles.
type Handle uint64

const (
	offsetBits = 24
	classBits  = 8
	classShift = offsetBits
	pageShift  = offsetBits + classBits
	offsetMask = 1<<offsetBits - 1
	classMask  = 1<<classBits - 1
	bigClass   = classMask // class field of a dedicated allocation
	maxPages   = 1 << (64 - pageShift)
)

func makeHandle(page uint32, class int, off uint32) Handle {
	return Handle(uint64(page)<<pageShift | uint64(class)<<classShift | uint64(off))
}

func (h Handle) page() uint32   { return uint32(h >> pageShift) }
func (h Handle) class() int     { return int(h>>classShift) & classMask }
func (h Handle) offset() uint32 { return uint32(h) & offsetMask }

const (
	// DefaultPageSize is the page size when Options.PageSize is 0.
	DefaultPageSize = 1 << 20
	// MinPageSize and MaxPageSize bound Options.PageSize.
	MinPageSize = 1 << 12
	MaxPageSize = 1 << offsetBits
	// DefaultReservePages is the number of empty pages kept for reuse when
	// Options.ReservePages is 0.
	DefaultReservePages = 8
	// MinBlock is the smallest block; a free block holds its free-list
	// link in its first 8 bytes.
	MinBlock = 16
	// MaxAlloc is the largest request Alloc accepts (4 GiB, or what an int
	// holds on 32-bit platforms). Callers bound record sizes well below
	// it; a request beyond it is a bug and panics.
	MaxAlloc = 1 << 32
	// growth is the target ratio between consecutive size classes: at most
	// 1/8 of a block is lost to rounding a request up to its class.
	growthNum, growthDen = 9, 8
	granule              = 16 // a page's live bitmap has one bit per granule
)

// Options configure an Arena. The zero value gives the defaults.
type Options struct {
	// PageSize is the size of a page, a power of two from MinPageSize to
	// MaxPageSize (0 means DefaultPageSize, 1 MiB). Requests up to about
	// PageSize/8 (Arena.MaxBlock) are carved from pages; larger ones get a
	// dedicated allocation. Every size class that holds records ties up at least one
	// partly used page, so many small arenas want smaller pages.
	PageSize int
	// ReservePages is how many empty pages the arena keeps for any class
	// to take before it releases further empty pages to the Go runtime
	// (0 means DefaultReservePages; negative means none, which makes a
	// class that repeatedly empties and refills its only page allocate a
	// new page each time).
	ReservePages int
}

// Arena is a block allocator over pointer-free pages.
//
// A request is rounded up to a size class (16 bytes to MaxBlock, each
// class a multiple of 8 and about 1/8 larger than the one below, see
// makeClasses) and served from a page of that class. Each page belongs to
// one class while it has live blocks and keeps its own free list and live
// count; each class keeps a list of its pages that have a free block. A
// page whose last block is freed goes back to a pool of empty pages that
// any class can take, so memory freed by one class serves another (unlike
// memcached, whose pages stay in the class that first took them); empty
// pages beyond Options.ReservePages are dropped for the Go runtime to
// reclaim. The arena never moves blocks: a page stays held while any of
// its blocks lives, so scattered survivors of a mass deletion keep their
// pages until they are freed too.
//
// Free lists are intrusive and pointer-free: a free block's first 8 bytes
// hold the offset of the next free block of its page and its complement,
// so that Alloc detects (and panics on) a free list overwritten by a write
// through a freed handle. A bitmap of live blocks (1 bit per 16 bytes of
// page, kept at its end: 1/128 of it) lets Free panic on a double free or a
// handle that was never allocated instead of corrupting the free list.
// Blocks are not zeroed: a reused block holds whatever was written to it.
//
// Requests above MaxBlock get a dedicated []byte each, also addressed by
// a Handle and released to the runtime at once when freed.
//
// An Arena must be created with New. See the package documentation for
// the locking it expects.
type Arena struct {
	pageSize   int
	blockBytes int // bytes of a page for blocks: pageSize less the live bitmap
	maxBlock   int // largest class
	reserve    int

	classSize []uint32   // block size by class; classSize[0] is unused
	classOf   []uint8    // class by (n+7)/8, for 1 <= n <= maxBlock
	partial   [][]uint32 // by class: its pages with a free block; allocation takes the last

	// pages holds the pages by page number, nil once released. A page is
	// blockBytes of blocks followed by its live bitmap: a bit per granule
	// of the page, set for the granule where a live block starts (1/128
	// of the page). Keeping the bitmap in the page costs no allocation or
	// pointer of its own, and no array of bitmaps to copy as the arena
	// grows.
	pages    [][]byte
	meta     []pageMeta // by page number
	empty    []uint32   // pool of empty pages (held, class 0), taken last in first out
	released []uint32   // page numbers whose page was released, reused first

	big     [][]byte // dedicated allocations by slot; nil when free
	bigFree []uint32 // free slots of big

	inUse    int64 // bytes of live blocks at class size plus dedicated bytes
	bigBytes int64
	blocks   int // live blocks in pages
	held     int // pages held, carved or empty
	bigCount int
}

// pageMeta is the state of one page. A page is in one of three states:
// released (pages[p] == nil, number in released), empty (class 0, in the
// empty pool) or carved (class > 0, live > 0).
type pageMeta struct {
	live  uint32 // live blocks
	free  uint32 // 1 + offset of the first block of the free list; 0 when the list is empty
	bump  uint32 // offset of the first never allocated block: blocks from here on are free without being listed
	pos   uint32 // 1 + index in partial[class]; 0 when not listed
	class uint8  // 0 unless carved
}

// Stats describe an Arena's memory.
type Stats struct {
	// InUse is the bytes of live blocks, each counted at its class size,
	// plus the bytes of live dedicated allocations.
	InUse int64
	// Reserved is the bytes of pages held (carved or empty) plus the
	// bytes of dedicated allocations: what the arena takes from the heap.
	Reserved int64
	// Metadata approximates the bytes of the arena's bookkeeping outside
	// its pages (page table, class lists), not included in Reserved. (The
	// pages' live bitmaps are in the pages: 1/128 of Reserved.)
	Metadata int64
	// Pages is the number of pages held, EmptyPages of them in the pool.
	Pages, EmptyPages int
	// Blocks is the number of live blocks in pages.
	Blocks int
	// Dedicated is the number of live dedicated allocations and
	// DedicatedBytes their total size (also in InUse and Reserved).
	Dedicated      int
	DedicatedBytes int64
}

// New returns an empty Arena. It panics if opts.PageSize is neither 0 nor
// a power of two from MinPageSize to MaxPageSize.
func New(opts Options) *Arena {
	ps := opts.PageSize
	if ps == 0 {
		ps = DefaultPageSize
	}
	if ps < MinPageSize || ps > MaxPageSize || ps&(ps-1) != 0 {
		panic(fmt.Sprintf("slab: page size %d is not a power of two in [%d, %d]", ps, MinPageSize, MaxPageSize))
	}
	reserve := opts.ReservePages
	switch {
	case reserve == 0:
		reserve = DefaultReservePages
	case reserve < 0:
		reserve = 0
	}
	blockBytes := ps - ps/granule/8
	sizes := makeClasses(blockBytes)
	maxBlock := int(sizes[len(sizes)-1])
	a := &Arena{
		pageSize:   ps,
		blockBytes: blockBytes,
		maxBlock:   maxBlock,
		reserve:    reserve,
		classSize:  sizes,
		classOf:    make([]uint8, maxBlock/8+1),
		partial:    make([][]uint32, len(sizes)),
	}
	c := 1
	for i := 1; i < len(a.classOf); i++ {
		for int(sizes[c]) < i*8 {
			c++
		}
		a.classOf[i] = uint8(c)
	}
	return a
}

// makeClasses returns the block sizes of the classes for pages of
// blockBytes bytes of blocks, preceded by an unused 0 for class 0. Sizes
// grow by about 1/8 (at least 8 bytes, at most 1/4) from MinBlock to an
// eighth of a page, and each is raised to the largest multiple of 8 that
// still fits as many blocks in a page, so that no page wastes a tail it
// could have spread over its blocks.
func makeClasses(blockBytes int) []uint32 {
	sizes := []uint32{0}
	for s := MinBlock; s <= blockBytes/8; {
		sizes = append(sizes, uint32(s))
		next := max(s+8, (s*growthNum/growthDen+7)&^7)
		n := blockBytes / next // blocks per page at the next size
		t := blockBytes / n &^ 7
		// Near the top, where a page holds few blocks, raising a size to
		// fill its page may overshoot the growth: take one block more.
		if u := blockBytes / (n + 1) &^ 7; t*4 > s*5 && u > s {
			t = u
		}
		s = t
	}
	if len(sizes) > bigClass {
		panic("slab: too many size classes") // unreachable for valid page sizes
	}
	return sizes
}

// BlockSize returns the usable size of the block Alloc(n) would return,
// which is what it adds to Stats().InUse, for callers that account memory
// before allocating. It panics like Alloc on n out of range.
func (a *Arena) BlockSize(n int) int {
	checkSize(n)
	if n > a.maxBlock {
		return n
	}
	return int(a.classSize[a.classOf[(n+7)>>3]])
}

func checkSize(n int) {
	if n < 1 || uint64(n) > MaxAlloc {
		panic(fmt.Sprintf("slab: allocation of %d bytes, want 1 to %d", n, uint64(MaxAlloc)))
	}
}

// Alloc returns a block of at least n bytes (exactly n for a dedicated
// allocation). The block is not zeroed. It panics if n is less than 1 or
// more than MaxAlloc, or if it finds a page's free list overwritten (a
// write through a freed handle).
func (a *Arena) Alloc(n int) Handle {
	checkSize(n)
	if n > a.maxBlock {
		return a.allocBig(n)
	}
	return a.allocBlock(int(a.classOf[(n+7)>>3]))
}

func (a *Arena) allocBlock(c int) Handle {
	if len(a.partial[c]) == 0 {
		a.carve(c)
	}
	list := a.partial[c]
	p := list[len(list)-1]
	m := &a.meta[p]
	size := a.classSize[c]
	var off uint32
	if m.free != 0 {
		off = m.free - 1
		m.free = a.nextFree(p, off, size)
	} else {
		off = m.bump
		m.bump += size
	}
	m.live++
	b, bit := a.liveBit(p, off)
	*b |= bit
	if m.free == 0 && int(m.bump+size) > a.blockBytes {
		a.partial[c] = list[:len(list)-1] // full: it was the last listed
		m.pos = 0
	}
	a.blocks++
	a.inUse += int64(size)
	return makeHandle(p, c, off)
}

// nextFree reads the free-list link stored in the free block at off and
// checks that it is one Free wrote and that it names a free block.
func (a *Arena) nextFree(p, off, size uint32) uint32 {
	link := binary.LittleEndian.Uint64(a.pages[p][off:])
	next := uint32(link)
	m := &a.meta[p]
	ok := uint32(link>>32) == ^next
	if ok && next != 0 {
		o := next - 1
		ok = o%size == 0 && o < m.bump && !a.isLive(p, o)
	}
	if !ok {
		panic(fmt.Sprintf("slab: free list of page %d corrupted at offset %d (written after Free?)", p, off))
	}
	return next
}

// liveBit returns the byte of page p's live bitmap holding the bit of the
// block at off, and that bit.
func (a *Arena) liveBit(p, off uint32) (*byte, byte) {
	i := off / granule
	return &a.pages[p][a.blockBytes+int(i/8)], 1 << (i % 8)
}

func (a *Arena) isLive(p, off uint32) bool {
	b, bit := a.liveBit(p, off)
	return *b&bit != 0
}

// carve gives class c a page from the empty pool, or a released page
// number with a new page, or a new page number.
func (a *Arena) carve(c int) {
	var p uint32
	switch {
	case len(a.empty) > 0:
		p = a.empty[len(a.empty)-1]
		a.empty = a.empty[:len(a.empty)-1]
	case len(a.released) > 0:
		p = a.released[len(a.released)-1]
		a.released = a.released[:len(a.released)-1]
		a.pages[p] = a.newPage()
		a.held++
	default:
		if uint64(len(a.pages)) >= maxPages {
			panic("slab: arena out of page numbers")
		}
		p = uint32(len(a.pages))
		a.pages = append(a.pages, a.newPage())
		a.meta = append(a.meta, pageMeta{})
		a.held++
	}
	a.partial[c] = append(a.partial[c], p)
	a.meta[p] = pageMeta{class: uint8(c), pos: uint32(len(a.partial[c]))}
}

func (a *Arena) newPage() []byte { return make([]byte, a.pageSize) }

func (a *Arena) allocBig(n int) Handle {
	b := make([]byte, n)
	var slot uint32
	if k := len(a.bigFree); k > 0 {
		slot = a.bigFree[k-1]
		a.bigFree = a.bigFree[:k-1]
		a.big[slot] = b
	} else {
		if uint64(len(a.big)) >= maxPages {
			panic("slab: arena out of dedicated slots")
		}
		slot = uint32(len(a.big))
		a.big = append(a.big, b)
	}
	a.bigCount++
	a.bigBytes += int64(n)
	a.inUse += int64(n)
	return makeHandle(slot, bigClass, 0)
}

// Free returns the block of h to the arena; h and every slice Bytes
// returned for it are invalid from then on. It panics if h is nil, was
// already freed, or was not returned by this arena's Alloc (stale handles
// whose block was allocated again cannot be told apart and free the new
// owner's block).
func (a *Arena) Free(h Handle) {
	p, c, off := h.page(), h.class(), h.offset()
	if c == bigClass {
		a.freeBig(h, p)
		return
	}
	if !a.valid(p, c, off) {
		panic(fmt.Sprintf("slab: Free of invalid or freed handle %#x", uint64(h)))
	}
	m := &a.meta[p]
	size := a.classSize[c]
	b, bit := a.liveBit(p, off)
	*b &^= bit
	binary.LittleEndian.PutUint64(a.pages[p][off:], uint64(m.free)|uint64(^m.free)<<32)
	m.free = off + 1
	m.live--
	a.blocks--
	a.inUse -= int64(size)
	switch {
	case m.live == 0:
		a.unlist(p)
		a.retire(p)
	case m.pos == 0: // was full
		a.partial[c] = append(a.partial[c], p)
		m.pos = uint32(len(a.partial[c]))
	}
}

// valid reports whether (p, c, off) names a live block.
func (a *Arena) valid(p uint32, c int, off uint32) bool {
	if c == 0 || int(p) >= len(a.pages) || a.pages[p] == nil {
		return false
	}
	m := &a.meta[p]
	return int(m.class) == c && off%a.classSize[c] == 0 && off < m.bump && a.isLive(p, off)
}

// unlist removes page p from its class's partial list, if it is listed.
func (a *Arena) unlist(p uint32) {
	m := &a.meta[p]
	if m.pos == 0 {
		return
	}
	list := a.partial[m.class]
	last := list[len(list)-1]
	list[m.pos-1] = last
	a.meta[last].pos = m.pos
	a.partial[m.class] = list[:len(list)-1]
	m.pos = 0
}

// retire moves the empty page p to the pool, or releases it to the Go
// runtime when the pool is at its reserve.
func (a *Arena) retire(p uint32) {
	a.meta[p] = pageMeta{}
	if len(a.empty) < a.reserve {
		a.empty = append(a.empty, p)
		return
	}
	a.pages[p] = nil
	a.released = append(a.released, p)
	a.held--
}

func (a *Arena) freeBig(h Handle, slot uint32) {
	if h.offset() != 0 || int(slot) >= len(a.big) || a.big[slot] == nil {
		panic(fmt.Sprintf("slab: Free of invalid or freed handle %#x", uint64(h)))
	}
	n := int64(len(a.big[slot]))
	a.big[slot] = nil
	a.bigFree = append(a.bigFree, slot)
	a.bigCount--
	a.bigBytes -= n
	a.inUse -= n
}

// Bytes returns the first n bytes of h's block, aliasing the arena: writes
// through it change the block, and it is valid until h is freed. Its
// capacity is n, so appending to it copies rather than overwriting the
// next block. It panics if n is negative or more than Cap(h). An invalid
// handle may panic or return another block's bytes; Bytes does not check
// liveness, to stay a couple of loads.
func (a *Arena) Bytes(h Handle, n int) []byte {
	p, c, off := h.page(), h.class(), int(h.offset())
	if c == bigClass {
		b := a.big[p]
		if uint(n) > uint(len(b)) {
			panic(fmt.Sprintf("slab: Bytes(%d) beyond a %d-byte block", n, len(b)))
		}
		return b[:n:n]
	}
	if uint(n) > uint(a.classSize[c]) {
		panic(fmt.Sprintf("slab: Bytes(%d) beyond a %d-byte block", n, a.classSize[c]))
	}
	return a.pages[p][off : off+n : off+n]
}

// Cap returns the usable size of h's block: a record that grows within it
// can be rewritten in place. It does not check that h is live.
func (a *Arena) Cap(h Handle) int {
	if c := h.class(); c != bigClass {
		return int(a.classSize[c])
	}
	return len(a.big[h.page()])
}

// PageSize returns the arena's page size.
func (a *Arena) PageSize() int { return a.pageSize }

// MaxBlock returns the largest class: Alloc serves larger requests with
// dedicated allocations. It is PageSize/8 less 1/128 (130,048 bytes for
// 1 MiB pages).
func (a *Arena) MaxBlock() int { return a.maxBlock }

// Stats returns the arena's memory figures.
func (a *Arena) Stats() Stats {
	meta := cap(a.pages)*int(unsafe.Sizeof([]byte(nil))) +
		cap(a.meta)*int(unsafe.Sizeof(pageMeta{})) +
		(cap(a.empty)+cap(a.released)+cap(a.bigFree))*4 +
		cap(a.big)*int(unsafe.Sizeof([]byte(nil))) +
		len(a.classOf) + len(a.classSize)*4
	for _, l := range a.partial {
		meta += int(unsafe.Sizeof(l)) + cap(l)*4
	}
	return Stats{
		InUse:          a.inUse,
		Reserved:       int64(a.held)*int64(a.pageSize) + a.bigBytes,
		Metadata:       int64(meta),
		Pages:          a.held,
		EmptyPages:     len(a.empty),
		Blocks:         a.blocks,
		Dedicated:      a.bigCount,
		DedicatedBytes: a.bigBytes,
	}
}
