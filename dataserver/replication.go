package dataserver

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
)

// Replication, as the write path sees it: a write that ran as a bucket's
// master appends its effects to the bucket's streams with replicateLocked
// (under the bucket's lock, so that every copy gets the writes in the
// order they ran), and its reply is held until release has awaited their
// acknowledgement. Everything else is behind those two calls:
//
//   - the streams to slaves and migration destinations, their batching,
//     acknowledgements and reconnects (replstream.go);
//   - the slave's side, which applies what a stream brings in order
//     (replapply.go);
//   - full copies when a slave diverged or fell too far behind
//     (replresync.go);
//   - the cutover when a table changes who holds a bucket (cutover.go).
//
// The acknowledgement rules (release, await, awaitBehind, refusedWrite):
// in strict mode a write is acknowledged when every slave applied it; in
// degraded mode a slave that does not answer within the replication
// timeout is reported to the configserver, and the write is acknowledged
// once the table names that slave behind (it can then never be promoted
// without the write). A slave that refuses a write has a newer table.
// Anything that leaves the outcome open is answered as a write that may
// have applied (envelope.Unsure): it never is NOTMASTER, which would have
// the proxy run it again elsewhere.

// pending is one reply of a pipeline, held until its replication is done.
type pending struct {
	start, end int // reply bytes in the batch buffer
	waits      []waiter
	write      bool // a write served as master: lease checked on release
	bucket     route.BucketID
	migrating  bool // the write went to a migration stream too
	// onLoop: the command runs on an event loop, where it must not wait;
	// bailed: it stopped for that reason without a reply, and runs again
	// off the loop (replApply).
	onLoop, bailed bool
	// pushed: the invalidations the write pushed to proxies' caches
	// (tracking.go), written before the reply is.
	pushed []chan struct{}
}

type waiter struct {
	st     *stream
	e      *entry
	strict bool
}

// entry returns one of the write's stream entries (each carries the
// write's commands), nil when it has none.
func (p *pending) entry() *entry {
	for _, w := range p.waits {
		if w.e != nil {
			return w.e
		}
	}
	return nil
}

// replicateLocked appends propagated commands to bucket bk's streams;
// bk.mu is held.
func (s *Server) replicateLocked(bk *bucket, rt *routing, area uint16, prop [][][]byte, p *pending) {
	if s.track.count.Load() > 0 {
		if ch := s.track.keysChanged(area, prop); ch != nil {
			p.pushed = append(p.pushed, ch)
		}
	}
	if len(rt.slaves[bk.id]) == 0 && bk.mig == nil {
		return // a single copy and no migration: nothing to send
	}
	pl := cmdsPayload(prop)
	degraded := s.cfg.ReplicationMode == ReplicationDegraded
	for _, st := range rt.slaves[bk.id] {
		// Degraded: a slave the table already names behind this master
		// is not waited for (it may not be promoted; its backlog replays
		// when it is back). One merely unreachable is waited for, until
		// the configserver has marked it behind (await).
		skip := degraded && st.unreachable.Load() && s.behindCovers(rt.t, st)
		e := st.pushItem(bk.id, area, kindCmds, pl, skip)
		if skip {
			continue
		}
		p.waits = append(p.waits, waiter{st: st, e: e})
	}
	if m := bk.mig; m != nil {
		p.migrating = true
		m.walk.noteLocked(area, prop)
		e := m.st.push(bk.id, area, kindCmds, pl)
		if m.synced {
			p.waits = append(p.waits, waiter{st: m.st, e: e, strict: true})
		}
	}
	s.m.replEntries.Add(float64(len(rt.slaves[bk.id])))
}

// release waits for p's replication and checks the lease; a non-nil error
// replaces the reply.
func (s *Server) release(p *pending) error {
	if len(p.pushed) > 0 {
		awaitPushes(p.pushed)
	}
	if len(p.waits) > 0 {
		var timer *time.Timer
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		refused := 0
		var dropped []string // slaves whose copy a newer table dropped
		for _, w := range p.waits {
			err := s.await(w, &timer)
			switch {
			case err == errSlaveRefused:
				refused++
			case err == errSlaveDropped:
				dropped = append(dropped, w.st.to)
			case err != nil:
				return err
			}
		}
		if refused > 0 || len(dropped) > 0 {
			if err := s.refusedWrite(p, refused, dropped); err != nil {
				return err
			}
		}
	}
	if p.write && !s.leaseOK() {
		s.m.leaseRefusals.Inc()
		return envelope.Unsure(fmt.Sprintf("lease expired before the write to bucket %d was acknowledged", p.bucket))
	}
	return nil
}

// await waits for one replication entry; *timer (created on first need)
// bounds the waits of one reply to ReplicationTimeout in all.
func (s *Server) await(w waiter, timer **time.Timer) error {
	strict := w.strict || s.cfg.ReplicationMode == ReplicationStrict
	check := func() error {
		if ok, err := w.e.answered(); ok {
			return err
		}
		if strict {
			return errs.Newf(errs.Timeout, "slave %s: %v", w.st.to, w.e.err)
		}
		return nil
	}
	done, wake := w.st.entryDone(w.e)
	if done {
		return check()
	}
	if strict && w.st.unreachable.Load() && !w.strict {
		return errs.Newf(errs.Timeout, "slave %s is unreachable", w.st.to)
	}
	if *timer == nil {
		*timer = time.NewTimer(s.cfg.ReplicationTimeout)
	}
	var down <-chan struct{}
	if !strict {
		down = w.st.downSignal()
	}
	for {
		select {
		case <-wake:
			if done, wake = w.st.entryDone(w.e); done {
				return check()
			}
			continue
		case <-down:
			// Degraded, and the slave is unreachable already: as after a
			// timeout, wait only until the table names it behind.
			return s.awaitBehind(w)
		case <-(*timer).C:
			// Later waits of this reply find the timer spent: one more
			// millisecond each.
			(*timer).Reset(time.Millisecond)
			if !w.st.setUnreachable(true) {
				s.log.Warn("slave unreachable; asking the configserver to mark it behind", "slave", w.st.to)
			}
			s.m.replTimeouts.Inc()
			if strict {
				return errs.Newf(errs.Timeout, "slave %s did not apply the write within %v", w.st.to, s.cfg.ReplicationTimeout)
			}
			return s.awaitBehind(w)
		}
	}
}

// awaitBehind holds a degraded write whose slave did not apply it until
// the slave applies it after all, or the table says the slave is behind
// this master (so it can never be promoted without the write) or no
// longer its slave. The heartbeat that reports the slave goes out now;
// the wait is bounded by the lease: past it the write fails as one that
// may have applied.
func (s *Server) awaitBehind(w waiter) error {
	s.kickHeartbeat()
	timeout := time.NewTimer(s.cfg.LeaseTimeout)
	defer timeout.Stop()
	expired := false
	for {
		done, wake := w.st.entryDone(w.e)
		if done {
			if ok, err := w.e.answered(); ok {
				return err
			}
		}
		changed := s.tableChange()
		t := s.Table()
		switch {
		case t == nil:
		case !t.IsMaster(w.e.bucket, s.addr):
			// Demoted meanwhile: the new master may lack the write.
			s.markDivergedEntry(w.e.bucket, w.e)
			return envelope.Unsure(fmt.Sprintf("slave %s did not apply the write and this node is no longer the master of bucket %d", w.st.to, w.e.bucket))
		case s.behindCovers(t, w.st) || !t.IsSlave(w.e.bucket, w.st.to):
			return nil
		}
		if expired {
			return envelope.Unsure(fmt.Sprintf("slave %s did not apply the write and the configserver has not marked it behind", w.st.to))
		}
		select {
		case <-wake: // nil once done: a failed entry waits for the table
		case <-changed:
		case <-timeout.C:
			expired = true
		}
	}
}

// refusedWrite answers a write that ran here but that slaves refused:
// they have a newer table. refused counts the slaves that refused it
// outright; dropped names those that refused it only because that table
// dropped their copy, this node staying the bucket's master (droppedBy in
// replapply.go: an extra copy removed once the others caught up). This
// node learns the table (for up to 200 ms), then:
//
//   - no longer the bucket's master: when nothing else took the write (no
//     other slave, no migration's destination, and the role did not go to
//     the destination of a move this node sourced, which copied the
//     write), the write ran only on this now stale copy (marked diverged:
//     it is dropped or copied again), so the real master has not seen it:
//     NOTMASTER, and the proxy sends it there. Otherwise -TIMEOUT;
//   - still its master, only dropped copies refused, and the table no
//     longer names them: the write stands when every slave the table names
//     took it (droppedWrite);
//   - otherwise it may have applied somewhere: -TIMEOUT; a write that only
//     dropped copies refused marks this copy diverged then (a copy the
//     table names may lack it; outright refusals marked it already).
func (s *Server) refusedWrite(p *pending, refused int, dropped []string) error {
	s.kickHeartbeat()
	timeout := time.NewTimer(200 * time.Millisecond)
	defer timeout.Stop()
	for {
		changed := s.tableChange()
		t := s.Table()
		switch {
		case t == nil:
		case !t.IsMaster(p.bucket, s.addr):
			s.markDivergedEntry(p.bucket, p.entry())
			if refused+len(dropped) == len(p.waits) && !p.migrating && !s.bucket(p.bucket).handedOff.Load() {
				return envelope.NotMasterOf(p.bucket, t.Version).Err()
			}
			return errRefusedUnsure(p.bucket)
		case refused == 0 && !slices.ContainsFunc(dropped, func(to string) bool { return holds(t, p.bucket, to) }):
			return s.droppedWrite(p, t)
		}
		select {
		case <-changed:
		case <-timeout.C:
			if refused == 0 {
				s.markDivergedEntry(p.bucket, p.entry())
			}
			return errRefusedUnsure(p.bucket)
		}
	}
}

func errRefusedUnsure(b route.BucketID) error {
	return envelope.Unsure(fmt.Sprintf("a slave refused the write to bucket %d (it has a newer table)", b))
}

// droppedWrite answers a write that only copies table t dropped refused,
// t naming this node the bucket's master still: it stands when every
// slave t names is one the write waited for and that answered (the copies
// t serves agree; the refusing ones are no copies any more). Otherwise a
// slave t names may lack it: -TIMEOUT, and this copy is marked diverged
// (its slaves get a full copy).
//
// A slave t names that the write did not wait for (a copy's new holder:
// the write went to its old one, which refused it as dropped) is sent
// this node's records of the write's keys, and the write stands once it
// has applied them (repairNewSlaves).
func (s *Server) droppedWrite(p *pending, t *route.Table) error {
	var missing []string
	for _, to := range t.Slaves(p.bucket) {
		if !slices.ContainsFunc(p.waits, func(w waiter) bool { return w.st.to == to && !w.strict }) {
			missing = append(missing, to)
		}
	}
	if len(missing) > 0 {
		if err := s.repairNewSlaves(p, t, missing); err != nil {
			s.log.Info("a write refused by a dropped copy did not reach the copy's new holder", "bucket", p.bucket, "slaves", missing, "err", err)
			s.markDivergedEntry(p.bucket, p.entry())
			return envelope.Unsure(fmt.Sprintf("slave %s of bucket %d in table %d never had the write", missing[0], p.bucket, t.Version))
		}
		s.m.repairedWrites.Inc()
	}
	s.m.replDroppedWrites.Inc()
	return nil
}

// errNoRepair: repairNewSlaves cannot bring the slaves the write.
var errNoRepair = errors.New("the write's keys or the slaves' streams are unknown here")

// repairNewSlaves brings the slaves (missing) that table t names for p's
// bucket, and that p's write did not reach, the write: this node's
// records of its keys (replrepair.go), pushed on their streams under the
// bucket's lock and waited for as the write's own entries are. It fails
// when the write's keys are unknown, this node's routing is not t's, or a
// slave's stream is missing or its copy moving.
func (s *Server) repairNewSlaves(p *pending, t *route.Table, missing []string) error {
	names, ok := entryNames(p.entry())
	bk := s.bucket(p.bucket)
	if !ok || bk == nil {
		return errNoRepair
	}
	var waits []waiter
	err := func() error {
		s.bulkMu.Lock()
		defer s.bulkMu.Unlock()
		bk.lock()
		defer bk.unlock()
		rt := s.rt.Load()
		if rt == nil || rt.t.Version != t.Version || !rt.t.IsMaster(p.bucket, s.addr) {
			return errNoRepair
		}
		var streams []*stream
		for _, to := range missing {
			i := slices.IndexFunc(rt.slaves[p.bucket], func(x *stream) bool { return x.to == to })
			if i < 0 || slaveCopyMoving(rt.t, p.bucket, to) {
				return errNoRepair
			}
			streams = append(streams, rt.slaves[p.bucket][i])
		}
		for _, st := range streams {
			c := &chunker{st: st, b: p.bucket}
			for _, n := range names {
				if _, err := s.sendNameLocked(c, nil, p.bucket, n, true, false); err != nil {
					return err
				}
			}
			c.flush()
			s.m.repairedNames.Add(float64(len(names)))
			waits = append(waits, waiter{st: st, e: c.last, strict: true})
		}
		return nil
	}()
	if err != nil {
		return err
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for _, w := range waits {
		if err := s.await(w, &timer); err != nil {
			return err
		}
	}
	return nil
}

// errSlaveRefused is await's word for a slave that refused the write
// (release turns it into the client's error); errSlaveDropped for one
// that refused it because a newer table dropped its copy (refusedWrite).
var (
	errSlaveRefused = errors.New("dataserver: slave refused the write")
	errSlaveDropped = errors.New("dataserver: a dropped copy refused the write")
)

// answered is the slave's answer to the write that pushed e, once e is
// done: nil when it applied e, errSlaveRefused when it refused it. An
// entry the stream failed otherwise (given up, stopped) has no answer
// (ok false): the write's replication mode decides.
func (e *entry) answered() (ok bool, err error) {
	switch e.err {
	case nil:
		return true, nil
	case errRefused:
		return true, errSlaveRefused
	case errDropped:
		return true, errSlaveDropped
	}
	return false, nil
}

// tableChange returns a channel that closes when the next table is
// published (publishTable): what waits for the table to say something
// waits on it instead of polling.
func (s *Server) tableChange() <-chan struct{} {
	s.tableSig.Lock()
	defer s.tableSig.Unlock()
	if s.tableSig.ch == nil {
		s.tableSig.ch = make(chan struct{})
	}
	return s.tableSig.ch
}

// publishTable makes rt the routing writes and reads go by, and wakes
// the waiters of tableChange.
func (s *Server) publishTable(rt *routing) {
	old := s.rt.Swap(rt)
	s.trackTable(old, rt)
	s.tableSig.Lock()
	if s.tableSig.ch != nil {
		close(s.tableSig.ch)
		s.tableSig.ch = nil
	}
	s.tableSig.Unlock()
}
