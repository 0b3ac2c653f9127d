package dataserver

import (
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// # Garbage collection during bucket copies
//
// A dataserver's heap is its data: a million keys are millions of small
// objects, and each collection cycle marks them all. During a recovery
// the copies a survivor takes are new live data, and with GOGC 100 the
// collector ran often enough that marking took about 45 % of a
// survivor's CPU in the rebuild window (bench/recovery.sh with
// PROFILE=1; 2 cores shared by every process).
//
// While a node snapshots or restores copies, it therefore collects at
// copyGCFactor times its GOGC (100 -> 300: the heap may grow to four
// times the live heap instead of twice before a cycle), and goes back
// once no copy work came for copyGCIdle. That memory must not be the
// machine's last: a node killed for memory during a recovery is the
// second failure the recovery is racing. So the percent is raised only
// together with a soft memory limit of what the process holds now plus
// half the memory the machine has available (/proc/meminfo
// MemAvailable; never above a limit already set): near it the runtime
// collects as often as it must, whatever the percent. Where the
// available memory cannot be read, nothing is changed. A process started
// with GOGC set (or the collector off) is left as configured. The
// setting is the process's, shared by the servers of one process (tair
// up, tests). Measured (bench/recovery.sh, 2 cores): client service p99
// during the rebuild 41-52 ms against 87-107 ms, 1,750-2,330 requests/s
// served of 2,000 against 1,100-1,450, and the rebuild 0.5-1 s shorter.
const (
	copyGCFactor = 3
	copyGCIdle   = time.Second
)

// Going back at once after a big copy started a collection at once, and
// a late one: the heap had grown to near four times the live heap, past
// the goal of the old percent (twice the live heap), so the pacer had
// every allocating goroutine assist the marking until it was done, and
// the requests of that moment waited on it (the stall after a
// rebalance: GET/SET p99 of 300-900 ms in the 20 s after the table
// settled, bench/migration.sh; gctrace put 862 ms of mutator assist in
// one such cycle; with this, 118-175 ms, bench/RESULTS.md). So when the heap holds more than the old percent's
// goal less a quarter (stepRunway), relax first has one cycle run at the
// raised percent, whose goal the heap is far below, so the pacer asks
// little of the mutators; once it has run (and no copy came meanwhile),
// the old percent and limit are back, over a heap that is its live data.
const stepRunway = 1.25

type gcDefer struct {
	off    bool // GOGC was set by the operator: leave it
	raised atomic.Bool
	last   atomic.Int64 // unix ns of the last copy work
	mu     sync.Mutex
	prev   int   // the percent to go back to
	limit  int64 // the memory limit to go back to
	// collecting: relax's cycle at the raised percent is running.
	collecting bool
	// heap reads the collector's figures and collect runs a cycle
	// (runtime.GC); tests replace both.
	heap    func() heapFigures
	collect func()
}

// heapFigures: the heap marked live by the last cycle and the bytes its
// objects take now (live and not yet swept).
type heapFigures struct {
	live, objects uint64
}

func readHeapFigures() heapFigures {
	s := []rtmetrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	rtmetrics.Read(s)
	var f heapFigures
	for i, p := range []*uint64{&f.live, &f.objects} {
		if s[i].Value.Kind() == rtmetrics.KindUint64 {
			*p = s[i].Value.Uint64()
		}
	}
	return f
}

var copyGC = gcDefer{off: os.Getenv("GOGC") != "", heap: readHeapFigures, collect: runtime.GC}

// gcPercent reads the current GOGC without changing it (SetGCPercent(-1)
// to read it would wait for a running mark to finish).
func gcPercent() int {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return -1
	}
	return int(s[0].Value.Uint64())
}

// touch records copy work, raising the percent if it is not.
func (g *gcDefer) touch() {
	if g.off {
		return
	}
	g.last.Store(time.Now().UnixNano())
	if g.raised.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raised.Load() {
		return
	}
	prev := gcPercent()
	if prev <= 0 {
		return // the collector is off (GOGC=off via debug.SetGCPercent)
	}
	avail, ok := memAvailable()
	if !ok {
		return
	}
	limit := debug.SetMemoryLimit(-1) // reads it
	g.prev, g.limit = prev, limit
	debug.SetMemoryLimit(min(limit, runtimeBytes()+avail/2))
	debug.SetGCPercent(prev * copyGCFactor)
	g.raised.Store(true)
}

// relax goes back to the percent of before once no copy work came for
// idle (zero: at once), after a cycle at the raised percent when the
// heap is near the old percent's goal already (see stepRunway).
func (g *gcDefer) relax(idle time.Duration) {
	if !g.raised.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.raised.Load() || g.collecting || time.Since(time.Unix(0, g.last.Load())) < idle {
		return
	}
	if !g.late() {
		g.lower()
		return
	}
	g.collecting = true
	start := time.Now().UnixNano()
	go func() {
		g.collect()
		g.mu.Lock()
		defer g.mu.Unlock()
		g.collecting = false
		if g.last.Load() <= start {
			g.lower() // else copies came meanwhile: stay raised
		}
	}()
}

// lower sets the percent and limit of before (g.mu held).
func (g *gcDefer) lower() {
	debug.SetGCPercent(g.prev)
	debug.SetMemoryLimit(g.limit)
	g.raised.Store(false)
}

// late reports whether the heap's objects, with a quarter more, would be
// past the goal of the old percent: going back to it now would start a
// cycle that is late already.
func (g *gcDefer) late() bool {
	f := g.heap()
	return f.live > 0 && float64(f.objects)*stepRunway > float64(f.live)*(1+float64(g.prev)/100)
}

// runtimeBytes is the memory the Go runtime holds from the OS.
func runtimeBytes() int64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// memAvailable is the machine's MemAvailable in bytes (Linux).
func memAvailable() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 {
					return kb << 10, true
				}
			}
		}
	}
	return 0, false
}
