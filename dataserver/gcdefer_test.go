package dataserver

import (
	"math"
	"runtime/debug"
	"testing"
	"time"
)

// Copy work raises the collector's percent (copyGCFactor times) under a
// soft memory limit below the machine's available memory, and both go
// back once copies stop for the idle time; a collector that is off stays
// off, and a GOGC set by the operator is left alone.
func TestCopyGCDefer(t *testing.T) {
	before := debug.SetGCPercent(100)
	beforeLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(before); debug.SetMemoryLimit(beforeLimit) }()
	avail, ok := memAvailable()
	if !ok {
		t.Skip("no /proc/meminfo MemAvailable here")
	}
	g := &gcDefer{}
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
	g.relax(0)
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 100 || l != math.MaxInt64 || g.raised.Load() {
		t.Fatalf("after the copies: GOGC %d, limit %d, raised %v", p, l, g.raised.Load())
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
