package dataserver

import (
	"testing"
	"time"
)

// Migration batches: larger while the destination answers a batch of
// records fast, smaller when it is slow; never above the ceiling; a
// batch of writes alone changes nothing.
func TestMigrationAdapts(t *testing.T) {
	s := &Server{cfg: Config{MigrateBatchMax: 256}}
	st := &stream{s: s, mig: true}
	st.batchMax.Store(64)
	step := func(rtt time.Duration, recs int, wantBatch int64) {
		t.Helper()
		st.adapt(rtt, recs)
		if got := st.batchMax.Load(); got != wantBatch {
			t.Fatalf("rtt %v: batch %d, want %d", rtt, got, wantBatch)
		}
	}
	step(5*time.Millisecond, 64, 128)
	step(5*time.Millisecond, 128, 256)
	step(5*time.Millisecond, 256, 256) // ceiling
	step(200*time.Millisecond, 256, 128)
	step(50*time.Millisecond, 128, 128) // between: hold
	step(200*time.Millisecond, 0, 128)  // writes only
	step(200*time.Millisecond, 128, 64)

	s.clientLat.Store(0)
	for i := 0; i < 100; i++ {
		s.observeClientLatency(8 * time.Millisecond)
	}
	if got := s.clientLatency(); got < 7*time.Millisecond || got > 8*time.Millisecond {
		t.Fatalf("moving average of 8ms batches = %v", got)
	}
}

// The node's copy rate: it halves (to the floor) while the clients'
// latency is above twice the target, grows (to the ceiling) while it is
// below the target, holds in between; batches are spaced at the rate.
func TestPacer(t *testing.T) {
	const floor = 1 << 20
	p := newPacer(floor, 2*time.Millisecond)
	if r := p.currentRate(); r != pacerCeiling*floor {
		t.Fatalf("starts at %v, want the ceiling", r)
	}
	for i, c := range []struct {
		lat  time.Duration
		want float64
	}{
		{10 * time.Millisecond, pacerCeiling * floor / 2},
		{10 * time.Millisecond, pacerCeiling * floor / 4},
		{3 * time.Millisecond, pacerCeiling * floor / 4},
		{10 * time.Millisecond, pacerCeiling * floor / 8},
		{10 * time.Millisecond, pacerCeiling * floor / 16},
		{10 * time.Millisecond, floor},
		{time.Millisecond, 1.5 * floor},
		{time.Millisecond, 2.25 * floor},
	} {
		p.mu.Lock()
		p.adjustLocked(c.lat)
		got := p.rate
		p.mu.Unlock()
		if got != c.want {
			t.Fatalf("step %d (latency %v): rate %v, want %v", i, c.lat, got, c.want)
		}
	}

	// At the floor: 1 MiB/s, so 256 KiB batches go 250 ms apart after
	// the burst allowance.
	p = newPacer(floor, 2*time.Millisecond)
	slow := func() time.Duration { return time.Second }
	for i := 0; i < 5; i++ {
		p.mu.Lock()
		p.adjustLocked(time.Second)
		p.mu.Unlock()
	}
	p.adjusted = time.Now().Add(time.Hour) // no adjustment during the test
	var total time.Duration
	for i := 0; i < 4; i++ {
		total = p.reserve(256<<10, slow)
	}
	if want := 3*250*time.Millisecond - pacerBurst; total < want-10*time.Millisecond || total > want+10*time.Millisecond {
		t.Fatalf("the 4th batch waits %v, want about %v", total, want)
	}
	if d := (*pacer)(nil).reserve(1<<30, slow); d != 0 {
		t.Fatalf("no pacer: wait %v", d)
	}
	if d := newPacer(-1, time.Millisecond).reserve(1<<30, slow); d != 0 {
		t.Fatalf("pacing off: wait %v", d)
	}
}
