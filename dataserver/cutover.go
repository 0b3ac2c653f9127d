package dataserver

import (
	"maps"
	"slices"
	"time"

	"github.com/tairkv/tair/internal/route"
)

// The cutover: what a master does when a table changes who holds its
// buckets, before the table is published and writes go by it.
//
//   - Moves of this node that end with the table: the migration stream is
//     drained, so the destination receives the bucket's changes in order
//     (the migration stream first, then as a slave or not at all). A move
//     dropped rather than completed (its destination left the row, e.g. it
//     died) is not drained: nobody will serve that copy. A synced slave
//     copy that moved away keeps passing on what its master sends before
//     the master learns of the switch (a relay).
//   - Buckets this node masters whose slave set changes: what was sent to
//     a slave that leaves must be acknowledged (by it, or passed on by it
//     to the new slave) before writes go to the new slaves directly, or a
//     new slave could apply them out of order. An unreachable slave is not
//     waited for (what it missed is refused or lost with it).
//
// The waits do not hold the bucket's lock: the bucket is marked in
// cutover first (its writes get TRYAGAIN, which proxies retry within
// milliseconds; reads go on), the streams drain, and only then is the
// lock taken, to check that nothing more came in, change the bucket's
// state and publish the table before writes get in again. The waits share
// one deadline of a replication timeout: this runs on the heartbeat
// goroutine, and a node that stops heartbeating loses its lease.

// cutoverWork is one bucket's part of a cutover.
type cutoverWork struct {
	bk        *bucket
	mv        route.Move // the move that ends (moveEnds)
	moveEnds  bool
	completed bool // the move ended with its destination holding a copy
	mig       *migration
	leaving   []*stream // slaves that leave with writes still unacknowledged
}

// cutover prepares the buckets of old→t's cutover and returns them
// locked, their state changed; the caller publishes t's routing and then
// calls endCutover.
func (s *Server) cutover(old, t *route.Table) []*bucket {
	if old == nil {
		return nil
	}
	s.markDeposed(old, t)
	work := s.cutoverWork(old, t)
	if len(work) == 0 {
		return nil
	}
	deadline := time.Now().Add(s.cfg.ReplicationTimeout)
	// Refuse the buckets' writes, then wait for their streams unlocked.
	for _, w := range work {
		w.bk.lock()
		w.bk.cutover.Store(true)
		w.mig = w.bk.mig
		w.bk.unlock()
	}
	for _, w := range work {
		w.drain(deadline)
	}
	held := make([]*bucket, 0, len(work))
	me := s.addr
	for _, w := range work {
		bk := w.bk
		bk.lock()
		held = append(held, bk)
		// What came in meanwhile (a slave copy's stream still takes what
		// its master sends) drains too, now under the lock: almost
		// always nothing.
		if bk.mig == w.mig {
			w.drain(deadline)
		} else {
			w.mig = bk.mig
		}
		if !w.moveEnds {
			continue
		}
		mv := w.mv
		if w.completed && old.IsMaster(mv.Bucket, me) && !t.IsMaster(mv.Bucket, me) {
			bk.handedOff.Store(true)
		}
		m := bk.mig
		if m == nil {
			continue
		}
		bk.mig = nil
		bk.frozen.Store(false)
		if master := t.Master(mv.Bucket); m.synced && master != "" && master != me && !holds(t, mv.Bucket, me) {
			// A slave copy moved away: keep passing on what its master
			// sends before it learns of the switch.
			st := m.st
			m.st = nil // the relay owns the stream now
			bk.relay = &relay{st: st, master: master, switchVer: t.Version}
			time.AfterFunc(s.cfg.ForwardGrace, func() {
				bk.lock()
				if bk.relay != nil && bk.relay.st == st {
					bk.relay = nil
				}
				bk.unlock()
				st.close(s.cfg.ReplicationTimeout)
			})
		}
	}
	return held
}

// endCutover lets writes into the buckets cutover returned.
func (s *Server) endCutover(held []*bucket) {
	for _, bk := range held {
		bk.cutover.Store(false)
		bk.unlock()
	}
}

// cutoverWork lists the buckets whose streams must drain before t is
// published: this node's moves that end, and its buckets whose slaves
// leave with writes unacknowledged.
func (s *Server) cutoverWork(old, t *route.Table) []*cutoverWork {
	me := s.addr
	var work []*cutoverWork
	for _, mv := range old.Migrating {
		if nm, ok := t.MoveOf(mv.Bucket); mv.From != me || (ok && nm == mv) {
			continue
		}
		work = append(work, &cutoverWork{bk: s.bucket(mv.Bucket), mv: mv, moveEnds: true,
			completed: t.IsMaster(mv.Bucket, mv.To) || t.IsSlave(mv.Bucket, mv.To)})
	}
	ort := s.rt.Load()
	for b := range route.BucketID(t.Buckets) {
		if !old.IsMaster(b, me) || !t.IsMaster(b, me) || ort == nil || int(b) >= len(ort.slaves) {
			continue
		}
		var leaving []*stream
		for _, st := range ort.slaves[b] {
			if !t.IsSlave(b, st.to) && !st.unreachable.Load() && st.pendingFor(b) {
				leaving = append(leaving, st)
			}
		}
		if len(leaving) == 0 {
			continue
		}
		bk := s.bucket(b)
		if i := slices.IndexFunc(work, func(w *cutoverWork) bool { return w.bk == bk }); i >= 0 {
			work[i].leaving = leaving
			continue
		}
		work = append(work, &cutoverWork{bk: bk, leaving: leaving})
	}
	return work
}

// drain waits, until deadline, for the completed move's stream to deliver
// everything and for the leaving slaves to acknowledge the bucket's
// writes.
func (w *cutoverWork) drain(deadline time.Time) {
	if w.moveEnds && w.completed && w.mig != nil && w.mig.st != nil {
		w.mig.st.waitDrained(deadline, nil)
	}
	b := w.bk.id
	for _, st := range w.leaving {
		st.waitUntil(func() bool { return !st.pendingFor(b) }, deadline, nil)
	}
}

// markDeposed marks diverged the buckets this node mastered and now
// holds as a slave (a handoff: it was judged down, e.g. cut off, and a
// slave took over) when a stream it could not reach still holds writes
// of them: this node applied them, its clients saw them time out, and
// the new master never got them. Marked before the table is published,
// the copy asks the new master for a full copy at once (resyncDiverged,
// right after the publish), and every heartbeat from this table on
// already knows it; waiting for the stream's close or the new master's
// refusal to tell left a window in which the copy, with those writes and
// without the new master's, passed for caught up.
func (s *Server) markDeposed(old, t *route.Table) {
	rt := s.rt.Load()
	if rt == nil {
		return
	}
	me := s.addr
	for b := route.BucketID(0); t.Contains(b) && int(b) < len(rt.slaves); b++ {
		if !old.IsMaster(b, me) || t.IsMaster(b, me) || !t.IsSlave(b, me) {
			continue
		}
		for _, st := range rt.slaves[b] {
			if st.unreachable.Load() && st.pendingFor(b) {
				// The keys of every write of the bucket some slave has
				// not acknowledged: the new master may lack any of them.
				set := map[walkName]struct{}{}
				ok := true
				for _, x := range rt.slaves[b] {
					if ok = x.pendingNames(b, set); !ok {
						break
					}
				}
				names := slices.Collect(maps.Keys(set))
				ok = ok && len(names) > 0
				s.log.Warn("deposed with writes its slave never acknowledged: this copy will be repaired from the new master",
					"bucket", b, "slave", st.to, "new_master", t.Master(b), "keys", len(names), "whole", !ok)
				s.markDivergedNames(b, names, ok)
				break
			}
		}
	}
}
