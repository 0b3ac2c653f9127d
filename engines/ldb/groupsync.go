package ldb

import (
	"sync"
	"sync/atomic"
)

// groupSync is SyncGroup's engines.GroupCommitter: commits count up a
// ticket, and WaitDurable runs one fsync for every waiter of its time
// (the first waiter that finds none running starts it; the others wait
// for it, or for the next one when theirs came after it started).
type groupSync struct {
	sync    func() error // fsyncs the WAL up to every commit before the call
	commits atomic.Uint64
	synced  atomic.Uint64

	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	err     error // a failed fsync: nothing after it is known durable
}

func newGroupSync(fsync func() error) *groupSync {
	g := &groupSync{sync: fsync}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// committed counts a commit (after it returned, so that a ticket taken
// after it covers it).
func (g *groupSync) committed() { g.commits.Add(1) }

func (g *groupSync) CommitTicket() uint64 { return g.commits.Load() }

func (g *groupSync) Durable(ticket uint64) bool { return g.synced.Load() >= ticket }

func (g *groupSync) WaitDurable(ticket uint64) error {
	if g.Durable(ticket) {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.synced.Load() < ticket {
		if g.err != nil {
			return g.err
		}
		if g.running {
			g.cond.Wait()
			continue
		}
		// Everything committed by now is covered by the fsync that
		// starts now.
		g.running = true
		target := g.commits.Load()
		g.mu.Unlock()
		err := g.sync()
		g.mu.Lock()
		g.running = false
		if err != nil {
			g.err = err
		} else if target > g.synced.Load() {
			g.synced.Store(target)
		}
		g.cond.Broadcast()
	}
	return nil
}
