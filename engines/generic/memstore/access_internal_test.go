package memstore

import (
	"testing"
	"unsafe"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
)

// TestRecordLayout: a record is one arena block whose access word, at
// offset 0, is 8-aligned (atomics need it), and a 16-byte key with a
// 32-byte value fits the 104-byte class without expiry (per-key memory);
// the header fields do not overlap.
func TestRecordLayout(t *testing.T) {
	st := New(Options{Shards: 1, SweepInterval: -1})
	defer st.Close()
	sh := &st.shards[0]
	for i := 0; i < 1000; i++ {
		h := sh.arena.Alloc(baseHdr + 1 + i%300)
		if p := uintptr(unsafe.Pointer(&sh.arena.Bytes(h, 8)[0])); p%8 != 0 {
			t.Fatalf("block %#x at address %#x, not 8-aligned", h, p)
		}
		sh.arena.Free(h)
	}
	if n := sizer.BlockSize(baseHdr + 16 + 32); n != 104 {
		t.Fatalf("a 16/32 record takes a %d-byte block, want 104", n)
	}
	if Charge(16, 32) != itemOverhead+104 {
		t.Fatalf("Charge(16, 32) = %d", Charge(16, 32))
	}
	// What a record is charged is its real block: store one of every
	// value length up to a few classes and compare the charge with the
	// arena's figures.
	k := engines.Key{Area: 3, Key: []byte("0123456789abcdef")}
	e := generic.New(generic.Config{Name: "t", Store: st, Options: engines.Options{}})
	for n := 0; n < 400; n++ {
		if _, err := e.Put(k, make([]byte, n), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		b, _ := st.Usage(3)
		in := sh.arena.Stats().InUse
		if b != tableOverhead+itemOverhead+in || b != tableOverhead+Charge(16, n) {
			t.Fatalf("value of %d: charged %d, arena in use %d, Charge %d", n, b, in, Charge(16, n))
		}
	}
	ends := []struct{ off, size int }{{offAccess, 8}, {offVersion, 8}, {offPrev, 8}, {offNext, 8}, {offFlags, 4}, {offBucket, 4}, {offVlen, 4}, {offArea, 2}, {offKlen, 2}, {offType, 1}, {offBits, 1}, {offExpire, 8}, {offHeap, 4}}
	for i := 1; i < len(ends); i++ {
		if ends[i].off != ends[i-1].off+ends[i-1].size {
			t.Fatalf("field %d at %d, want %d", i, ends[i].off, ends[i-1].off+ends[i-1].size)
		}
	}
	if baseHdr != offExpire || expHdr != offHeap+4 {
		t.Fatal("header sizes do not match the fields")
	}
}

// TestLFULogIncr: Redis's LFULogIncr (evict.c) with lfu-log-factor 10:
// p = 1/((counter-5)*10+1), certain at or below LFU_INIT_VAL, never past
// 255.
func TestLFULogIncr(t *testing.T) {
	for _, c := range []struct {
		counter uint8
		r       float64
		want    uint8
	}{
		{0, 0.999, 1}, {5, 0.999, 6}, // base 0: p = 1
		{6, 0.0909, 7}, {6, 0.0910, 6}, // p = 1/11 = 0.090909...
		{15, 0.0099, 16}, {15, 0.00991, 15}, // p = 1/101 = 0.00990099...
		{254, 0, 255}, {255, 0, 255},
	} {
		if got := lfuLogIncr(c.counter, c.r); got != c.want {
			t.Errorf("lfuLogIncr(%d, %v) = %d, want %d", c.counter, c.r, got, c.want)
		}
	}
}

// TestLFUDecay: Redis's LFUDecrAndReturn with lfu-decay-time 1: one per
// whole minute since ldt, down to 0, across the 16-bit minute wrap by
// LFUTimeElapsed's formula (65535-ldt+now).
func TestLFUDecay(t *testing.T) {
	for _, c := range []struct {
		counter  uint8
		ldt, now uint16
		want     uint8
	}{
		{10, 100, 100, 10}, {10, 100, 103, 7}, {10, 100, 110, 0}, {10, 100, 200, 0},
		{10, 65530, 2, 3}, // elapsed 65535-65530+2 = 7
		{255, 0, 65535, 0},
	} {
		if got := lfuDecayed(c.counter, c.ldt, c.now); got != c.want {
			t.Errorf("lfuDecayed(%d, %d, %d) = %d, want %d", c.counter, c.ldt, c.now, got, c.want)
		}
	}
}

// TestAccessWord: a touch updates counter, ldt and access time, keeps or
// sets the referenced bit, and OBJECT's view decays without storing.
func TestAccessWord(t *testing.T) {
	defer SetLFURandom(func() float64 { return 0 })()
	const t0 = int64(1_700_000_040_000) // unix ms, on a whole minute (decay counts wall-clock minutes, as Redis)
	w := newAccess(t0)
	if f, idle := accessOf(w, t0); f != 5 || idle != 0 || w.ref() {
		t.Fatalf("new: freq %d idle %d ref %v, want 5 0 false", f, idle, w.ref())
	}
	if f, idle := accessOf(w, t0+59_999); f != 5 || idle != 59 {
		t.Fatalf("after 59.999 s: freq %d idle %d, want 5 59", f, idle)
	}
	if f, idle := accessOf(w, t0+3*60_000); f != 2 || idle != 180 {
		t.Fatalf("after 3 min: freq %d idle %d, want 2 180", f, idle)
	}
	w = touched(w, t0+1000, true)
	if f, idle := accessOf(w, t0+1000); f != 6 || idle != 0 || !w.ref() {
		t.Fatalf("touched: freq %d idle %d ref %v, want 6 0 true", f, idle, w.ref())
	}
	w = touched(w, t0+2000, false)
	if f, _ := accessOf(w, t0+2000); f != 7 || !w.ref() {
		t.Fatalf("touched again: freq %d ref %v, want 7 true (a touch never clears the bit)", f, w.ref())
	}
	// An access after 4 idle minutes decays first, then increments.
	w = touched(w, t0+2000+4*60_000, false)
	if f, _ := accessOf(w, t0+2000+4*60_000); f != 4 {
		t.Fatalf("after 4 min, touched: freq %d, want 7-4+1 = 4", f)
	}
	// A clock set back: idle 0, and the counter reads as decayed across
	// the minute wrap (Redis's LFUTimeElapsed does the same).
	if f, idle := accessOf(w, t0); idle != 0 || f != 0 {
		t.Fatalf("clock set back: freq %d idle %d, want 0 0", f, idle)
	}
}
