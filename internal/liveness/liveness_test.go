package liveness

import (
	"sync"
	"testing"
	"time"
)

func TestStallsCountOnlyABusyStampThatDoesNotMove(t *testing.T) {
	var s Stalls[string]
	var p Progress
	t0 := time.Unix(0, 0)
	// Each look is one round of the watchdog, which sweeps after it.
	look := func(at time.Time) time.Duration { defer s.Sweep(); return s.Look("w", &p, at) }
	if d := look(t0); d != 0 {
		t.Fatalf("idle: %v", d)
	}
	p.Enter()
	if d := look(t0); d != 0 {
		t.Fatalf("just entered: %v", d)
	}
	if d := look(t0.Add(3 * time.Second)); d != 3*time.Second {
		t.Fatalf("busy 3 s without moving: %v", d)
	}
	p.Step()
	if d := look(t0.Add(4 * time.Second)); d != 0 {
		t.Fatalf("stepped: %v", d)
	}
	if d := look(t0.Add(6 * time.Second)); d != 2*time.Second {
		t.Fatalf("busy 2 s since the step: %v", d)
	}
	p.Leave()
	if d := look(t0.Add(9 * time.Second)); d != 0 {
		t.Fatalf("left: %v", d)
	}
	if len(s.seen) != 0 {
		t.Fatalf("an idle stamp is remembered after a sweep: %v", s.seen)
	}
}

func TestWaitTimeout(t *testing.T) {
	var wg sync.WaitGroup
	if !WaitTimeout(&wg, time.Second) {
		t.Fatal("an empty group timed out")
	}
	wg.Add(1)
	if WaitTimeout(&wg, 10*time.Millisecond) {
		t.Fatal("a waiting group did not time out")
	}
	wg.Done()
}
