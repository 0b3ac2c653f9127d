package configserver

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// moveKey names a move as its source reports it.
type moveKey struct {
	Bucket route.BucketID
	To     string
}

// report is the last progress a source sent for one move.
type report struct {
	wire.MigrationProgress
	At time.Time
}

// nodeState is the live view of one dataserver, from its heartbeats.
type nodeState struct {
	hb       wire.Heartbeat // last heartbeat, Migrations cleared
	lastSeen time.Time
	// heard is false for nodes given a grace period by a new leader and
	// not heard from yet.
	heard   bool
	reports map[moveKey]report
}

// cluster is the leader's view of the dataservers: who is alive, how they
// are labelled, what their moves report. Heartbeat handlers write it; the
// leader loop reads snapshots. It is not persisted: a new leader rebuilds
// it from heartbeats.
type cluster struct {
	mu struct {
		sync.Mutex
		nodes    map[string]*nodeState
		lastJoin time.Time
	}
}

func newCluster() *cluster {
	c := &cluster{}
	c.mu.nodes = map[string]*nodeState{}
	return c
}

// reset starts a leadership term: every node of the table counts as last
// heard at seen (the caller passes a moment ahead, so a new leader does
// not fail the whole cluster before the first heartbeats reach it), with
// its stored incarnation, so the first heartbeat of an unchanged process
// is no restart.
func (c *cluster) reset(seen time.Time, grace []string, m *meta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.nodes = map[string]*nodeState{}
	c.mu.lastJoin = time.Time{}
	for _, addr := range grace {
		c.mu.nodes[addr] = unheardNode(addr, seen, m)
	}
}

// unheardNode is a node of the table a new term has not heard from yet,
// counted as last heard at seen, with its stored labels and incarnation.
func unheardNode(addr string, seen time.Time, m *meta) *nodeState {
	st := &nodeState{lastSeen: seen, reports: map[moveKey]report{}}
	st.hb.Addr = addr
	if nm := m.Nodes[addr]; nm != nil {
		st.hb.Zone, st.hb.Rack = nm.Zone, nm.Rack
		st.hb.Incarnation, st.hb.Persistent = nm.Incarnation, nm.Persistent
	}
	return st
}

// resume starts a leadership term that follows this server's own last
// one: what it heard then still holds, except that no node counts as
// last heard before floor (its heartbeats were refused while nobody
// led). Nodes of the table it never heard from start at floor too.
func (c *cluster) resume(floor time.Time, grace []string, m *meta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.mu.nodes {
		if st.lastSeen.Before(floor) {
			st.lastSeen = floor
		}
	}
	for _, addr := range grace {
		if c.mu.nodes[addr] == nil {
			c.mu.nodes[addr] = unheardNode(addr, floor, m)
		}
	}
}

// heartbeat records hb and reports whether the leader loop should look at
// the cluster now rather than at its next tick: a node joined or came
// back, restarted, or a move finished or failed.
//
// A heartbeat that says the node is unhealthy (wire.Heartbeat.Unhealthy:
// it heartbeats but does not serve, an event loop or a bucket lock
// stalled) counts as a missed one: the node's last-seen time is not
// renewed, so it is down after downAfter and its buckets fail over as a
// dead node's (it does not renew its own master lease either). Only its
// health is recorded. Its first healthy heartbeat brings it back as a
// node that returns.
func (c *cluster) heartbeat(hb *wire.Heartbeat, now time.Time, downAfter time.Duration) (urgent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.mu.nodes[hb.Addr]
	if st != nil && st.heard && st.hb.Incarnation == hb.Incarnation && hb.Seq != 0 && hb.Seq < st.hb.Seq {
		// Built before the one taken last (heartbeats overlap): what it
		// says is older, e.g. a slave reachable that the newer one
		// reports unreachable.
		return false
	}
	if hb.Unhealthy != "" {
		if st != nil {
			st.hb.Health, st.hb.Unhealthy = hb.Health, hb.Unhealthy
		}
		return false
	}
	if st == nil {
		st = &nodeState{reports: map[moveKey]report{}}
		c.mu.nodes[hb.Addr] = st
		c.mu.lastJoin = now
		urgent = true
	} else if !st.heard || now.Sub(st.lastSeen) >= downAfter || st.hb.Incarnation != hb.Incarnation {
		if now.Sub(st.lastSeen) >= downAfter {
			c.mu.lastJoin = now
		}
		urgent = true
	}
	if !slices.Equal(st.hb.UnreachableSlaves, hb.UnreachableSlaves) {
		// A master waits for its slave to be marked behind before it
		// acknowledges degraded writes: reconcile at once.
		urgent = true
	}
	st.hb = *hb
	st.hb.Migrations = nil
	st.lastSeen = now
	st.heard = true
	for _, p := range hb.Migrations {
		k := moveKey{p.Bucket, p.To}
		if (p.Done || p.Failed != "") && !(st.reports[k].Done || st.reports[k].Failed != "") {
			urgent = true
		}
		st.reports[k] = report{MigrationProgress: p, At: now}
	}
	return urgent
}

// forget drops a removed node.
func (c *cluster) forget(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.nodes, addr)
}

// nodeView is a node in a snapshot.
type nodeView struct {
	hb       wire.Heartbeat
	alive    bool
	heard    bool
	lastSeen time.Time
	reports  map[moveKey]report
}

// snapshot copies the view; alive means heard from within downAfter.
func (c *cluster) snapshot(now time.Time, downAfter time.Duration) (map[string]nodeView, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]nodeView, len(c.mu.nodes))
	for addr, st := range c.mu.nodes {
		v := nodeView{hb: st.hb, alive: now.Sub(st.lastSeen) < downAfter, heard: st.heard, lastSeen: st.lastSeen,
			reports: make(map[moveKey]report, len(st.reports))}
		for k, r := range st.reports {
			v.reports[k] = r
		}
		out[addr] = v
	}
	return out, c.mu.lastJoin
}

// sortedKeys is m's keys in order (never nil).
func sortedKeys[V any](m map[string]V) []string {
	out := slices.AppendSeq(make([]string, 0, len(m)), maps.Keys(m))
	slices.Sort(out)
	return out
}
