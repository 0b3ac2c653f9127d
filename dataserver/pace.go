package dataserver

import (
	"sync"
	"time"
)

// pacer spreads the snapshot bytes of every bucket copy this node sends
// (all its outgoing migrations together) over time at an adaptive rate,
// so that the copies yield to the node's clients without stalling a
// recovery: every pacerTick the rate halves while the clients' mean
// latency (clientLatency) is above twice MigrateLatencyTarget and grows
// by half while it is below the target, between MigrateMinBytesPerSec
// (the floor: a lost copy must be rebuilt, however busy the clients) and
// pacerCeiling times it. A stream charges each batch's snapshot bytes
// before sending it (reserve) and waits the delay it is given; writes
// logged during a copy are not paced (the copy must catch up).
// A cap (copyCap) limits each move on top of this.
type pacer struct {
	floor, ceiling float64 // bytes/s; floor 0: no pacing
	target         time.Duration

	mu       sync.Mutex
	rate     float64   // bytes/s allowed now
	next     time.Time // when the next batch may go
	adjusted time.Time
}

const (
	// pacerTick is how often the rate follows the clients' latency.
	pacerTick = 100 * time.Millisecond
	// pacerCeiling is the ceiling as a multiple of the floor.
	pacerCeiling = 16
	// pacerBurst is how far the schedule may lag behind the clock: a
	// node that copied nothing for a while sends its next batches at
	// once, up to this much of the rate.
	pacerBurst = 50 * time.Millisecond
)

func newPacer(floor int64, target time.Duration) *pacer {
	p := &pacer{floor: float64(floor), ceiling: pacerCeiling * float64(floor), target: target}
	p.rate = p.ceiling
	return p
}

// reserve charges n snapshot bytes and returns how long to wait before
// sending them; lat is the clients' mean latency, read once a tick.
func (p *pacer) reserve(n int, lat func() time.Duration) time.Duration {
	if p == nil || p.floor <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.adjusted) >= pacerTick {
		p.adjustLocked(lat())
		p.adjusted = now
	}
	if earliest := now.Add(-pacerBurst); p.next.Before(earliest) {
		p.next = earliest
	}
	wait := p.next.Sub(now)
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	return max(wait, 0)
}

// adjustLocked moves the rate after the clients' latency lat.
func (p *pacer) adjustLocked(lat time.Duration) {
	switch {
	case lat > 2*p.target:
		p.rate = max(p.rate/2, p.floor)
	case lat < p.target:
		p.rate = min(p.rate*1.5, p.ceiling)
	}
}

// currentRate is the rate allowed now, in bytes per second (0: no pacing).
func (p *pacer) currentRate() float64 {
	if p == nil || p.floor <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// copyCap caps each move's copy rate on top of the pacer: the operator's
// cluster-wide cap (`tair ctl migrate rate`, in every heartbeat reply)
// when one is set, else the node's own MigrateBytesPerSec. A change
// wakes the moves waiting on the old cap, so that lifting a cap of a few
// kB/s speeds up a move at once rather than after its current wait.
type copyCap struct {
	own int64

	mu      sync.Mutex
	rate    int64         // bytes/s; 0: no cap
	changed chan struct{} // closed (and replaced) when rate changes
}

func newCopyCap(own int64) *copyCap {
	return &copyCap{own: own, rate: own, changed: make(chan struct{})}
}

// set applies the configserver's cap (nil: none set, the node's own).
func (c *copyCap) set(cluster *int64) {
	r := c.own
	if cluster != nil {
		r = *cluster
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r != c.rate {
		c.rate = r
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

func (c *copyCap) get() (int64, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate, c.changed
}

// wait waits before a batch of n snapshot bytes goes: the pacer's delay
// d, and at least n bytes' time at the cap, taken anew when the cap
// changes. It reports false if stop closed first.
func (c *copyCap) wait(n int, d time.Duration, stop <-chan struct{}) bool {
	start := time.Now()
	for {
		rate, changed := c.get()
		w := d
		if rate > 0 {
			w = max(w, time.Duration(float64(n)/float64(rate)*float64(time.Second)))
		}
		w -= time.Since(start)
		if w <= 0 {
			return true
		}
		t := time.NewTimer(w)
		select {
		case <-t.C:
			return true
		case <-changed:
			t.Stop()
		case <-stop:
			t.Stop()
			return false
		}
	}
}
