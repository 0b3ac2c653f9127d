package memstore

import (
	"testing"
	"unsafe"
)

// TestItemSizeClass: the access word did not grow a record out of its
// 112-byte size class (per-key memory).
func TestItemSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(item{}); n != 112 {
		t.Fatalf("item is %d bytes, want 112", n)
	}
	if off := unsafe.Offsetof(item{}.access); off%8 != 0 {
		t.Fatalf("item.access at offset %d, not 8-byte aligned", off)
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
