// Package liveness is what a role's watchdog needs to tell a worker that
// is busy from one that is stuck: a progress stamp the worker moves, and
// a tracker that remembers since when a busy stamp has not moved. The
// dataserver watches its connections and bucket locks with it, the proxy
// its event loops.
package liveness

import (
	"sync"
	"sync/atomic"
	"time"
)

// Progress is one worker's stamp: odd while its work runs. The worker
// calls Enter and Leave around the work, and Step within it when the work
// is many steps (a batch of commands), so that only one step that does
// not end counts as a stall.
type Progress struct{ n atomic.Uint64 }

func (p *Progress) Enter() { p.n.Add(1) }
func (p *Progress) Leave() { p.n.Add(1) }

// Step records progress within the work (the stamp stays odd).
func (p *Progress) Step() { p.n.Add(2) }

// Stalls remembers, for each stamp seen busy, the value it had and since
// when. Not safe for concurrent use: one watchdog goroutine owns it.
type Stalls[K comparable] struct {
	seen   map[K]seen
	looked map[K]bool
}

type seen struct {
	n     uint64
	since time.Time
}

// Look samples p (known as k) at now and returns how long it has been
// busy without moving: 0 when it is idle or moved since the last look.
func (s *Stalls[K]) Look(k K, p *Progress, now time.Time) time.Duration {
	if s.seen == nil {
		s.seen, s.looked = map[K]seen{}, map[K]bool{}
	}
	n := p.n.Load()
	if n%2 == 0 {
		return 0
	}
	s.looked[k] = true
	old, ok := s.seen[k]
	if !ok || old.n != n {
		s.seen[k] = seen{n: n, since: now}
		return 0
	}
	return now.Sub(old.since)
}

// Sweep forgets the stamps not found busy since the last Sweep (idle, or
// their workers gone).
func (s *Stalls[K]) Sweep() {
	for k := range s.seen {
		if !s.looked[k] {
			delete(s.seen, k)
		}
	}
	clear(s.looked)
}

// WaitTimeout waits for wg up to d; false when it timed out. Close uses
// it for the goroutines of connections a wedged event loop never closes.
func WaitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
