package dataserver

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/internal/liveness"
)

// # Watchdog
//
// A node whose heartbeats go on while it serves nothing (an event loop
// wedged in a command, a bucket lock never released) would keep its
// buckets for ever: the configserver judges liveness by heartbeats,
// which run on their own goroutine. So the work that serves stamps its
// progress, and a watchdog goroutine looks at the stamps:
//
//   - each connection's batches: the loop (or the connection's runner
//     goroutine) moves the connection's stamp on entering runBatch, after
//     each command, and on leaving it;
//   - each bucket's lock: bucket.lock and bucket.unlock move the bucket's
//     stamp.
//
// A stamp is odd while its work runs. One that stays odd and unchanged
// for StallTimeout (several heartbeat periods) is a stall: a command that
// does not end, a lock that is not released. While one lasts the node is
// unhealthy: its heartbeats say so (wire.Heartbeat.Unhealthy, Health
// "unhealthy") and no longer renew its master lease, so it acknowledges
// no write as a master once the lease runs out, and the configserver
// treats such heartbeats as missed ones (the node is down, its buckets'
// masters move to caught-up slaves); GET /healthz answers 503 with the
// reason. When the stall ends the node is healthy again and rejoins as a
// node that came back.

// closeWait bounds Close's wait for the connections' goroutines after
// the event loops were stopped (gnetx waits up to 5 s for those): the
// connections of a wedged loop are never closed.
const closeWait = 5 * time.Second

// lock takes the bucket's lock, stamping its progress.
func (bk *bucket) lock() {
	bk.mu.Lock()
	bk.held.Enter()
}

// unlock releases the bucket's lock, stamping its progress.
func (bk *bucket) unlock() {
	bk.held.Leave()
	bk.mu.Unlock()
}

// watchdog tracks the connections' stamps and remembers, per stamp seen
// odd, since when it has not moved.
type watchdog struct {
	mu    sync.Mutex
	conns map[*dsConn]struct{}
	seen  liveness.Stalls[*liveness.Progress]
	// unhealthy is the reason the node is unhealthy ("" when healthy).
	unhealthy atomic.Pointer[string]
}

func (w *watchdog) add(dc *dsConn) {
	w.mu.Lock()
	if w.conns == nil {
		w.conns = map[*dsConn]struct{}{}
	}
	w.conns[dc] = struct{}{}
	w.mu.Unlock()
}

func (w *watchdog) remove(dc *dsConn) {
	w.mu.Lock()
	delete(w.conns, dc)
	w.mu.Unlock()
}

// stallReason is why the node is unhealthy, "" when it is not.
func (s *Server) stallReason() string {
	if r := s.wd.unhealthy.Load(); r != nil {
		return *r
	}
	return ""
}

// watchdogLoop samples the stamps until done is closed.
func (s *Server) watchdogLoop(done <-chan struct{}) {
	everyUntil(done, min(s.cfg.HeartbeatInterval, s.cfg.StallTimeout/4), s.checkStalls)
}

// everyUntil calls fn with the time every period until done is closed.
func everyUntil(done <-chan struct{}, period time.Duration, fn func(now time.Time)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			fn(now)
		}
	}
}

// checkStalls looks at every stamp once and publishes the verdict.
func (s *Server) checkStalls(now time.Time) {
	w := &s.wd
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst time.Duration
	var what string
	look := func(p *liveness.Progress, name func() string) {
		if d := w.seen.Look(p, p, now); d > worst {
			worst, what = d, name()
		}
	}
	for dc := range w.conns {
		look(&dc.runs, func() string { return "a connection's command has run" })
	}
	for _, bk := range s.buckets() {
		look(&bk.held, func() string { return fmt.Sprintf("bucket %d's lock has been held", bk.id) })
	}
	w.seen.Sweep()
	var reason string
	if worst >= s.cfg.StallTimeout {
		reason = fmt.Sprintf("stalled: %s for %v without progress", what, worst.Round(time.Millisecond))
	}
	old := s.wd.unhealthy.Load()
	switch {
	case reason != "" && old == nil:
		s.log.Error("serving stalled: reporting unhealthy (the configserver moves this node's buckets away)", "reason", reason)
		s.m.stalls.Inc()
		s.kickHeartbeat()
	case reason == "" && old != nil:
		s.log.Warn("serving progresses again: reporting healthy", "was", *old)
		s.kickHeartbeat()
	}
	if reason == "" {
		w.unhealthy.Store(nil)
	} else {
		w.unhealthy.Store(&reason)
	}
}
