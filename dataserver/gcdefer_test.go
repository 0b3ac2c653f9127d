package dataserver

import (
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/testutil"
)

// Copy work raises the collector's percent (copyGCFactor times) under a
// soft memory limit below the machine's available memory, and both go
// back once copies stop for the idle time (after one cycle at the raised
// percent when the heap is near the old goal already); a collector that is off stays
// off, and a GOGC set by the operator is left alone.
func TestCopyGCDefer(t *testing.T) {
	before := debug.SetGCPercent(100)
	beforeLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(before); debug.SetMemoryLimit(beforeLimit) }()
	avail, ok := memAvailable()
	if !ok {
		t.Skip("no /proc/meminfo MemAvailable here")
	}
	var heapMu sync.Mutex
	heap := heapFigures{live: 100 << 20, objects: 120 << 20}
	setObjects := func(n uint64) { heapMu.Lock(); heap.objects = n; heapMu.Unlock() }
	cycle := make(chan struct{})
	var cycles atomic.Int64
	g := &gcDefer{
		heap:    func() heapFigures { heapMu.Lock(); defer heapMu.Unlock(); return heap },
		collect: func() { <-cycle; cycles.Add(1) },
	}
	g.touch()
	if p := gcPercent(); p != 100*copyGCFactor || !g.raised.Load() {
		t.Fatalf("while copying: GOGC %d, raised %v", p, g.raised.Load())
	}
	if l := debug.SetMemoryLimit(-1); l >= math.MaxInt64 || l > runtimeBytes()+avail {
		t.Fatalf("while copying: memory limit %d, not bounded by the available %d", l, avail)
	}
	g.relax(time.Hour) // copy work just now: stays
	if !g.raised.Load() {
		t.Fatal("relaxed while copies run")
	}
	g.relax(0) // a heap far from the old goal: back at once, no cycle
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 100 || l != math.MaxInt64 || g.raised.Load() || cycles.Load() != 0 {
		t.Fatalf("after the copies: GOGC %d, limit %d, raised %v, %d cycles", p, l, g.raised.Load(), cycles.Load())
	}

	// A heap near the old goal: a cycle at the raised percent first, then
	// back.
	g.touch()
	setObjects(200 << 20) // 1.25 x 200 MiB is past the old goal, 200 MiB
	g.relax(0)
	g.relax(0) // one cycle, however often relax runs
	if p := gcPercent(); p != 100*copyGCFactor || !g.raised.Load() {
		t.Fatalf("before the cycle ran: GOGC %d, raised %v", p, g.raised.Load())
	}
	cycle <- struct{}{}
	testutil.Eventually(t, 5*time.Second, func() bool { return !g.raised.Load() }, "the percent did not go back after the cycle")
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 100 || l != math.MaxInt64 || cycles.Load() != 1 {
		t.Fatalf("after the cycle: GOGC %d, limit %d, %d cycles", p, l, cycles.Load())
	}

	// Copies again while the cycle runs: the percent stays raised.
	g.touch()
	g.relax(0)
	time.Sleep(time.Millisecond) // the cycle began before the copy work below
	g.touch()
	cycle <- struct{}{}
	testutil.Eventually(t, 5*time.Second, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.collecting
	}, "the cycle did not end")
	if p := gcPercent(); p != 100*copyGCFactor || !g.raised.Load() {
		t.Fatalf("copies during the cycle: GOGC %d, raised %v", p, g.raised.Load())
	}
	setObjects(120 << 20)
	g.relax(0)
	if p := gcPercent(); p != 100 || g.raised.Load() {
		t.Fatalf("after the copies and the cycle: GOGC %d, raised %v", p, g.raised.Load())
	}

	debug.SetGCPercent(-1)
	g.touch()
	if p := debug.SetGCPercent(-1); p != -1 || g.raised.Load() {
		t.Fatalf("collector off: GOGC %d after a copy, raised %v", p, g.raised.Load())
	}
	debug.SetGCPercent(100)
	(&gcDefer{off: true}).touch()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GOGC set by the operator: changed to %d", p)
	}
}
