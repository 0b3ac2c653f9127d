package dataserver

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// migration is one outgoing bucket move (Tair's online migration).
//
// Steps, each restartable from the top (a new attempt starts a new stream
// session whose first item tells the destination to drop its partial
// copy, or, when it holds enough of the bucket, to keep it: the attempt
// then resumes it, migresume.go):
//  1. under the bucket's lock: stream "begin" and attach the stream to
//     the bucket, so every later write is streamed, in order; then walk
//     the bucket, sending its keys as records in short slices, each under
//     the bucket's lock, and again the keys written before the walk
//     passed them (migwalk.go);
//  2. let the stream drain at the adaptive rate while writes go on
//     (they do not wait for the destination yet);
//  3. freeze the bucket (writes get TRYAGAIN) until the destination has
//     applied everything, compare both copies' checksums (migsum.go: a
//     difference starts the move over), then make it a synchronous target
//     (writes wait for it like for a slave) and unfreeze;
//  4. report Done in the heartbeat and keep the destination in sync until
//     the configserver's table no longer lists the move.
type migration struct {
	s    *Server
	move route.Move
	log  *slog.Logger

	// st, synced and walk are guarded by the bucket's lock.
	st     *stream
	synced bool
	walk   *bucketWalk // the attempt's walk of the bucket (migwalk.go)

	// reportedDone: Done was reported once (owned by the run goroutine).
	reportedDone bool
	// verifyTook: the last checksum's time (run goroutine).
	verifyTook time.Duration

	keys atomic.Int64
	// fromZero: the next attempt copies from zero (a copy failed its
	// checksum; run goroutine).
	fromZero bool
	// The attempt's figures: whether it resumed the destination's copy,
	// the names its walk sent whole (records or tombstones), the names
	// its digests found equal at the destination (skipped) or not
	// (needed).
	resumed               atomic.Bool
	sent, skipped, needed atomic.Int64
	done                  atomic.Bool
	// broken: a master's write this slave copy applied could not be
	// passed on to the destination in time; the copy starts over (check).
	broken  atomic.Bool
	failed  atomic.Pointer[string]
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

var errMigrationStopped = errors.New("migration stopped")

// reconcileMigrations starts the moves t gives this node and ends those it
// no longer lists. Called with the new table published.
func (s *Server) reconcileMigrations(t *route.Table) {
	want := map[route.BucketID]route.Move{}
	for _, mv := range t.Migrating {
		if mv.From == s.addr && mv.To != "" && mv.To != s.addr {
			want[mv.Bucket] = mv
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return
	}
	for b, m := range s.mu.migs {
		if mv, ok := want[b]; ok && mv == m.move {
			continue
		}
		delete(s.mu.migs, b)
		go m.abort()
	}
	for b, mv := range want {
		if _, ok := s.mu.migs[b]; ok {
			continue
		}
		m := &migration{s: s, move: mv, stop: make(chan struct{}), stopped: make(chan struct{}),
			log: s.log.With("bucket", b, "to", mv.To)}
		s.mu.migs[b] = m
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			m.run()
		}()
	}
}

// migrationProgress is the heartbeat's view of the outgoing moves.
func (s *Server) migrationProgress() []wire.MigrationProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []wire.MigrationProgress
	for _, m := range s.mu.migs {
		p := wire.MigrationProgress{Bucket: m.move.Bucket, To: m.move.To, KeysSent: m.keys.Load(), Done: m.done.Load()}
		if f := m.failed.Load(); f != nil && !p.Done {
			p.Failed = *f
		}
		out = append(out, p)
	}
	return out
}

// abort stops the migration and detaches its stream (what is queued is
// still delivered for a moment: writes may wait on it).
func (m *migration) abort() {
	m.once.Do(func() { close(m.stop) })
	<-m.stopped
}

func (m *migration) stopping() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

func (m *migration) run() {
	defer close(m.stopped)
	select {
	case m.s.migSem <- struct{}{}:
		defer func() { <-m.s.migSem }()
	case <-m.stop:
		return
	}
	backoff := 200 * time.Millisecond
	for !m.stopping() {
		err := m.attempt()
		if err == nil || errors.Is(err, errMigrationStopped) {
			break
		}
		msg := err.Error()
		if m.reportedDone {
			// Done may already have switched the table: starting over
			// would wipe a serving copy. Report the failure and let the
			// configserver drop the move (and plan it again).
			m.failed.Store(&msg)
			m.done.Store(false)
			m.detach()
			m.log.Warn("migration failed after it was done; waiting for the configserver", "err", err)
			<-m.stop
			break
		}
		m.failed.Store(&msg)
		// A copy that failed its checksum is not resumed: whatever made
		// it differ, a copy from zero cannot keep it, so the move ends.
		m.fromZero = errors.Is(err, errCopyDiffers)
		m.log.Warn("migration attempt failed, restarting", "err", err, "from_zero", m.fromZero)
		select {
		case <-time.After(backoff):
		case <-m.stop:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	m.detach()
}

// detach removes the stream from the bucket and closes it.
func (m *migration) detach() {
	bk := m.s.bucket(m.move.Bucket)
	bk.lock()
	st := m.st
	if bk.mig == m {
		bk.mig = nil
	}
	m.walk = nil
	bk.frozen.Store(false)
	m.synced = false
	bk.unlock()
	m.done.Store(false)
	if st != nil {
		// Nothing to wait for: a table switch drained the stream under
		// the bucket's lock already, and a failed attempt starts over.
		st.close(0)
	}
}

func (m *migration) attempt() error {
	s := m.s
	b := m.move.Bucket
	bk := s.bucket(b)
	m.detach()
	start := time.Now()
	st := s.newStream(m.move.To, true, nil)

	if lockedSnapshot {
		return m.attemptLocked(st, start)
	}
	// 1. Attach, then walk the bucket in slices (migwalk.go), or digests
	// of them when the destination holds enough to resume (migresume.go).
	resume := !m.fromZero && m.resumeMode()
	m.resumed.Store(resume)
	m.sent.Store(0)
	m.skipped.Store(0)
	m.needed.Store(0)
	bk.lock()
	t := s.Table()
	if t == nil || !holds(t, b, s.addr) {
		bk.unlock()
		go st.close(0)
		return fmt.Errorf("this node holds no copy of bucket %d", b)
	}
	st.beginCopy()
	begin := payload{}
	if resume {
		begin = payload{data: resp.AppendBulkString(nil, "keep"), nargs: 1}
		s.m.migResumes.Inc()
	}
	st.push(b, 0, kindBegin, begin)
	w := newBucketWalk(&s.walkWrites, resume)
	m.st, m.synced, m.walk = st, false, w
	bk.mig = m
	bk.unlock()
	recs, digested, err := m.walkBucket(st, w)
	st.endCopy()
	s.m.fullCopy("migration", recs)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	// What the destination acknowledges before the drain ends: the
	// records, and the names digests covered.
	return m.copied(st, t, int64(recs+digested), start)
}

// lockedSnapshot makes moves copy their bucket the way they did before
// the walk: every record under one hold of the bucket's lock (for the
// benchmark's before figure, bench/bigkey-move.sh).
var lockedSnapshot = false

// attemptLocked is step 1 as it was: the snapshot and the attach under
// one hold of the bucket's lock.
func (m *migration) attemptLocked(st *stream, start time.Time) error {
	s := m.s
	b := m.move.Bucket
	bk := s.bucket(b)
	s.bulkMu.Lock()
	bk.lock()
	t := s.Table()
	if t == nil || !holds(t, b, s.addr) {
		bk.unlock()
		s.bulkMu.Unlock()
		go st.close(0)
		return fmt.Errorf("this node holds no copy of bucket %d", b)
	}
	recs, err := s.pushSnapshotLocked(st, b, "migration")
	if err != nil {
		bk.unlock()
		s.bulkMu.Unlock()
		go st.close(0)
		return fmt.Errorf("snapshot: %w", err)
	}
	m.st, m.synced = st, false
	bk.mig = m
	bk.unlock()
	s.bulkMu.Unlock()
	return m.copied(st, t, int64(recs), start)
}

// copied runs the steps after the copy: n records were sent on st.
func (m *migration) copied(st *stream, t *route.Table, n int64, start time.Time) error {
	s := m.s
	b := m.move.Bucket
	bk := s.bucket(b)
	m.log.Info("migration started", "records", n)
	snapped := time.Now()

	// 2. Drain while writes go on.
	if err := m.await(st, func() bool {
		acked := st.recsAcked.Load()
		m.keys.Store(acked)
		return acked >= n && st.pending() <= 64
	}, time.Time{}, false); err != nil {
		return err
	}
	drained := time.Now()

	// 3. Final freeze: drain the rest, then make the destination synchronous.
	if !t.IsMaster(b, s.addr) {
		// A slave copy: the master's writes reach it through this node's
		// replication stream, which then waits for the destination.
		bk.lock()
		m.synced = true
		mark := st.lastSeq()
		bk.unlock()
		if err := m.await(st, func() bool { return st.ackedSeq() >= mark }, time.Time{}, false); err != nil {
			return err
		}
		return m.inSync(st, n, start, snapped, drained)
	}
	if err := m.freezeDrained(st); err != nil {
		return err
	}
	// Both copies as they stand, compared (migsum.go); a difference
	// starts the move over (detach lets writes through again).
	verifyStart := time.Now()
	if done, err := m.verifyOffFreeze(st); done || err != nil {
		if err != nil {
			return err
		}
	} else if err := m.verifyMove(s.eng.ForEach, nil); err != nil {
		return err
	}
	m.verifyTook = time.Since(verifyStart)
	// The bucket stays frozen until the table switches (applyTable
	// unfreezes it): a write this master applied after reporting Done
	// would reach the destination, about to be master, but be refused by
	// the slaves that learn of the switch first. inSync lets writes
	// through again (synchronously to the destination) if the switch is
	// slow to come.
	bk.lock()
	m.synced = true
	bk.unlock()
	return m.inSync(st, n, start, snapped, drained)
}

// verifyOffFreeze verifies the move on snapshots of both copies taken
// at the freeze's point, with writes let through meanwhile (migsum.go,
// "Verified off the freeze"), and freezes the bucket again once they
// are; done is false when the engines take no snapshots (the caller
// verifies under the freeze). The bucket is frozen and drained.
func (m *migration) verifyOffFreeze(st *stream) (done bool, err error) {
	s, bk := m.s, m.s.bucket(m.move.Bucket)
	snap, ok, err := engines.SnapshotOf(s.eng)
	if !ok || err != nil {
		return false, nil
	}
	defer snap.Close()
	raw, err := s.pool.roundTrip(m.move.To, resp.AppendCommand(nil, []byte("TAIR.MIGSNAP"), strconv.AppendUint(nil, uint64(m.move.Bucket), 10)), 10*time.Second)
	if err != nil {
		return false, nil
	}
	id, ok := bytes.CutPrefix(bytes.TrimSpace(raw), []byte("+"))
	if !ok {
		// A destination without snapshots (or of an earlier version).
		m.log.Info("the destination takes no snapshot: the move is verified under the freeze", "reply", strings.TrimSpace(string(raw)))
		return false, nil
	}
	// Writes go on, synchronously to the destination, while both sides
	// digest.
	bk.lock()
	m.synced = true
	bk.unlock()
	bk.frozen.Store(false)
	if testHookOffFreeze != nil {
		testHookOffFreeze(m)
	}
	if err := m.verifyMove(snap.ForEach, id); err != nil {
		return true, err
	}
	s.m.migOffFreeze.Inc()
	return true, m.freezeDrained(st)
}

// freezeDrained freezes the moving bucket (its writes get TRYAGAIN) and
// returns once the destination and the bucket's slaves acknowledged
// everything, the bucket frozen; a drain slower than 2 s lets writes
// through again for a moment and tries anew.
func (m *migration) freezeDrained(st *stream) error {
	bk := m.s.bucket(m.move.Bucket)
	for {
		bk.frozen.Store(true)
		bk.lock() // barrier: writes that passed the frozen check are queued
		bk.unlock()
		err := m.await(st, func() bool { return st.pending() == 0 && !m.slavesPending() },
			time.Now().Add(2*time.Second), true)
		if err == nil {
			return nil
		}
		bk.frozen.Store(false)
		if err != errAwaitTimeout {
			return err
		}
		// Too slow: let writes through again and retry.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-m.stop:
			return errMigrationStopped
		}
	}
}

// testHookOffFreeze runs while a move is verified off the freeze, with
// writes let through (tests).
var testHookOffFreeze func(m *migration)

var errAwaitTimeout = errors.New("migration: timed out")

// awaitRecheck is how often await checks the attempt (check) besides
// the acknowledgements it wakes on: a destination that restarted, a
// passed-on write it did not apply.
const awaitRecheck = 20 * time.Millisecond

// await waits until done reports true, waking on each acknowledgement
// of st (with slaves, of the bucket's replication streams too, for
// slavesPending) rather than polling. It fails with check's error, or
// with errAwaitTimeout at deadline (zero: none).
func (m *migration) await(st *stream, done func() bool, deadline time.Time, slaves bool) error {
	recheck := time.NewTicker(awaitRecheck)
	defer recheck.Stop()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for {
		// The signals are taken before the condition is read: an
		// acknowledgement in between closes them.
		ch := st.progress()
		var sl [3]<-chan struct{}
		poll := false
		if slaves {
			if rt := m.s.rt.Load(); rt != nil && int(m.move.Bucket) < len(rt.slaves) {
				for i, x := range rt.slaves[m.move.Bucket] {
					if i == len(sl) {
						poll = true // more slaves than this waits on: poll
						break
					}
					sl[i] = x.progress()
				}
			}
		}
		if err := m.check(st); err != nil {
			return err
		}
		if done() {
			return nil
		}
		var soon <-chan time.Time
		if poll {
			soon = time.After(time.Millisecond)
		}
		select {
		case <-ch:
		case <-sl[0]:
		case <-sl[1]:
		case <-sl[2]:
		case <-soon:
		case <-recheck.C:
		case <-m.stop:
			return errMigrationStopped
		case <-timeout:
			if done() {
				return nil
			}
			return errAwaitTimeout
		}
	}
}

// slavesPending reports whether a reachable slave of the moving bucket
// has yet to acknowledge one of this master's writes. The final freeze
// waits for them as for the destination: a slave that learns of the
// switch before this node does refuses what is still in flight to it
// from the old master, and those writes' clients would get "may have
// applied" (TestAddAndDrainUnderMixedLoad saw it on a loaded machine).
func (m *migration) slavesPending() bool {
	rt := m.s.rt.Load()
	b := m.move.Bucket
	if rt == nil || int(b) >= len(rt.slaves) {
		return false
	}
	for _, sl := range rt.slaves[b] {
		if !sl.unreachable.Load() && sl.pendingFor(b) {
			return true
		}
	}
	return false
}

// handsOver reports whether the move gives the bucket's master role to
// its destination: the source is the master and the bucket's
// destination row drops it (a recovery copy's master keeps its own).
// Such a move's bucket stays frozen from Done until the switch.
func (m *migration) handsOver() bool {
	t, b := m.s.Table(), m.move.Bucket
	return t != nil && t.IsMaster(b, m.move.From) && int(b) < len(t.Destination) &&
		!slices.Contains(t.Destination[b], m.move.From)
}

// inSync reports Done and keeps the destination in sync until the table
// switches or the move is cancelled.
func (m *migration) inSync(st *stream, n int64, start, snapped, drained time.Time) error {
	s := m.s
	m.keys.Store(n)
	m.failed.Store(nil)
	m.reportedDone = true
	m.done.Store(true)
	if m.handsOver() {
		s.kickHeartbeatNow() // the bucket stays frozen until the switch
	} else {
		s.kickHeartbeat()
	}
	now := time.Now()
	m.log.Info("migration copied, waiting for the table switch", "records", n, "took", now.Sub(start),
		"snapshot", snapped.Sub(start), "copy", drained.Sub(snapped), "final", now.Sub(drained), "checksum", m.verifyTook,
		"resumed", m.resumed.Load(), "sent", m.sent.Load(), "skipped", m.skipped.Load(), "needed", m.needed.Load())

	// 4. Stay in sync until the table switches (or the move is cancelled).
	bk := s.bucket(m.move.Bucket)
	thaw := time.NewTimer(2 * time.Second)
	defer thaw.Stop()
	recheck := time.NewTicker(awaitRecheck)
	defer recheck.Stop()
	thawed := false
	for {
		if err := m.check(st); err != nil {
			return err
		}
		if thawed && bk.frozen.Load() {
			m.log.Warn("the table switch is slow: writes go on, synchronously to the destination")
			bk.frozen.Store(false)
		}
		select {
		case <-m.stop:
			return errMigrationStopped
		case <-thaw.C:
			thawed = true
		case <-recheck.C:
		}
	}
}

// check fails the attempt when it must restart or stop.
func (m *migration) check(st *stream) error {
	if m.stopping() {
		return errMigrationStopped
	}
	if st.receiverLost.Load() {
		return errors.New("the destination lost the copy (restarted)")
	}
	if st.lost() {
		return errors.New("the stream to the destination broke")
	}
	if m.broken.Swap(false) {
		return errors.New("the destination did not apply a passed-on write in time")
	}
	return nil
}
