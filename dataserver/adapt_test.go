package dataserver

import (
	"testing"
	"time"
)

// Migration pacing: faster while the destination answers fast and the
// clients are served within the target; slower, with a growing pause
// between batches, while the clients' latency is high; slower when the
// destination is slow; never above the ceiling.
func TestMigrationAdapts(t *testing.T) {
	s := &Server{cfg: Config{MigrateBatchMax: 256, MigrateLatencyTarget: 2 * time.Millisecond}}
	st := &stream{s: s, mig: true}
	st.batchMax.Store(64)
	step := func(clientLat, rtt time.Duration, wantBatch int64, wantPause time.Duration) {
		t.Helper()
		s.clientLat.Store(int64(clientLat))
		st.adapt(rtt)
		if got, p := st.batchMax.Load(), time.Duration(st.pause.Load()); got != wantBatch || p != wantPause {
			t.Fatalf("client %v rtt %v: batch %d pause %v, want %d %v", clientLat, rtt, got, p, wantBatch, wantPause)
		}
	}
	step(100*time.Microsecond, 5*time.Millisecond, 128, 0)
	step(100*time.Microsecond, 5*time.Millisecond, 256, 0)
	step(100*time.Microsecond, 5*time.Millisecond, 256, 0) // ceiling
	step(10*time.Millisecond, 5*time.Millisecond, 128, time.Millisecond)
	step(10*time.Millisecond, 5*time.Millisecond, 64, 3*time.Millisecond)
	step(3*time.Millisecond, 5*time.Millisecond, 64, 3*time.Millisecond) // between target and 2x: hold
	step(100*time.Microsecond, 200*time.Millisecond, 32, 3*time.Millisecond)
	step(100*time.Microsecond, 5*time.Millisecond, 64, 1500*time.Microsecond)

	s.clientLat.Store(0)
	for i := 0; i < 100; i++ {
		s.observeClientLatency(8 * time.Millisecond)
	}
	if got := s.clientLatency(); got < 7*time.Millisecond || got > 8*time.Millisecond {
		t.Fatalf("moving average of 8ms batches = %v", got)
	}
}
