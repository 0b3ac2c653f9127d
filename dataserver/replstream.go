package dataserver

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// # Streams
//
// A stream is one ordered flow of items from this node to another: the
// replication stream to a slave node (one per node, carrying every bucket
// this node masters there) or the stream of one outgoing bucket migration.
// Items are appended under the bucket's lock, so a stream carries each
// bucket's changes in the order the master applied them; the receiver
// applies them in stream order. Each item has a sequence number unique in
// the stream's session; the receiver remembers the last one it applied, so
// a reconnect resends the unacknowledged tail without applying anything
// twice.
//
// Wire forms (RESP arrays of bulk strings):
//
//	TAIR.REPLHELLO <from> <session> <acked> [<superseded>...]
//	                                                -> :<last applied seq>
//	    (a receiver that knows less than <acked> lost its state: it
//	    restarted; it replies what it knew and continues from <acked>;
//	    it refuses the superseded sessions from then on)
//	TAIR.REPL <table-version> <from> <session> <item>...
//	                                                -> +ACK <last seq> <stale 0|1> <refused seqs, comma-separated or -> [<reports>]
//
// where an item is <seq> <bucket> <area> <kind> <payload...>:
//
//	C <ncmds> (<nargs> <arg>...)...   commands to replay (exec with replica=true)
//	S <chunk>                         migrated records to Restore (engines/record.go; <area> is 0,
//	                                  each record carries its own)
//	R <record>                        one migrated record (engines.AppendRecord; no longer sent)
//	B                                 migration begins: drop any partial copy of the bucket
//	B keep                            migration begins, resuming the copy the receiver holds
//	                                  (migresume.go): digest items follow
//	D <digest>                        a resumed copy's names of an interval and their digests
//	                                  (migresume.go digestItem); the receiver deletes what it
//	                                  holds there that the item does not list, and its ACK
//	                                  reports the names it needs: <reports> is
//	                                  <seq>:<indexes>[;<seq>:<indexes>...], indexes as 0-3,7
//
// The receiver refuses an item when, in its table, <from> is neither the
// bucket's master nor the source of a move of the bucket to it; when its
// table is older than <table-version> it stops and says stale (the sender
// retries shortly, the receiver fetches the new table meanwhile).

const (
	kindCmds    = 'C'
	kindRecords = 'S'
	kindRecord  = 'R'
	kindBegin   = 'B'
	kindDigest  = 'D'
)

// snapshotKind reports whether items of kind k carry a bucket's copy.
func snapshotKind(k byte) bool { return k == kindRecords || k == kindRecord || k == kindDigest }

var (
	errRefused = errors.New("replication refused: the slave does not take this node as the bucket's master")
	errDropped = errors.New("replication refused: the slave's copy was dropped, this node staying the bucket's master")
	errBacklog = errors.New("replication backlog overflow: slave given up")
	errStopped = errors.New("replication stream stopped")
)

// entry is one item in a stream.
type entry struct {
	st      *stream // the stream it was pushed to
	seq     uint64
	hdr     []byte // encoded <seq> <bucket> <area> <kind>, in hdrBuf
	hdrBuf  [64]byte
	payload []byte // encoded payload bulk strings, shared between streams
	nargs   int    // bulk strings in hdr+payload
	recs    int    // records of a snapshot chunk
	kind    byte
	bucket  route.BucketID
	at      time.Time
	// fin is set once the receiver applied or refused the item, or the
	// stream failed it (err says which), under the stream's lock; the
	// stream's progress channel closes after it (stream.entryDone): one
	// channel per stream rather than one per write.
	fin atomic.Bool
	err error
	// report: what the receiver said of a digest item (set before fin).
	report *digestReport
}

// finish marks e finished with err (the stream's lock held, or e not yet
// visible to anyone else); the caller closes the progress channel.
func (e *entry) finish(err error) {
	e.err = err
	e.fin.Store(true)
}

// entryDone reports whether e is finished and, when it is not, returns
// the channel that closes at the stream's next progress (an
// acknowledgement, giving up, stopping): wait on it, then ask again.
func (st *stream) entryDone(e *entry) (bool, <-chan struct{}) {
	if e.fin.Load() {
		return true, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if e.fin.Load() {
		return true, nil
	}
	return false, st.mu.progress
}

// payload is an encoded item payload.
type payload struct {
	data  []byte
	nargs int
	recs  int // records in a snapshot chunk
}

// cmdsPayload encodes propagated commands (kind C). It copies the bytes, so
// args may alias the connection's read buffer.
func cmdsPayload(cmds [][][]byte) payload {
	size := 16
	for _, c := range cmds {
		size += 16
		for _, a := range c {
			size += len(a) + 16
		}
	}
	b := make([]byte, 0, size)
	n := 1
	b = resp.AppendBulkInt(b, int64(len(cmds)))
	for _, c := range cmds {
		b = resp.AppendBulkInt(b, int64(len(c)))
		n++
		for _, a := range c {
			b = resp.AppendBulk(b, a)
			n++
		}
	}
	return payload{data: b, nargs: n}
}

func newSession(kind string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return kind + "-" + hex.EncodeToString(b[:])
}

// migSession reports whether a session is a migration stream's
// (newSession("mig")), not a replication stream's.
func migSession(session string) bool { return strings.HasPrefix(session, "mig-") }

// stream sends items to one node. See "Streams" above.
type stream struct {
	s       *Server
	to      string
	session string
	mig     bool // migration stream (adaptive batches, no backlog cap)
	log     *slog.Logger
	// supersedes are the streams this one replaced (given up, or
	// closed): the receiver refuses their sessions from the first hello
	// on. More than one when a replaced stream never said its own hello:
	// the one before it may still have a batch in flight
	// (successorSupersedes).
	supersedes []*stream
	// greeted is set once a hello of this stream was answered: the
	// receiver then refuses the sessions it supersedes.
	greeted atomic.Bool

	mu struct {
		sync.Mutex
		q        []*entry // unacknowledged, in seq order
		bytes    int64
		cmdBytes int64 // of kind C items: the backlog cap
		nextSeq  uint64
		acked    uint64 // highest seq acknowledged
		// copying counts the full copies being pushed; copyUntil is the
		// last item of the latest one pushed (see copyInFlight).
		copying   int
		copyUntil uint64
		// unconfirmed is the last item whose write was acknowledged to
		// its client without this receiver's acknowledgement (pushItem).
		unconfirmed uint64
		lost        error
		stopping    bool
		// progress is closed (and replaced) when items are
		// acknowledged, the stream gives up or stops (progressed).
		progress chan struct{}
	}
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	// unreachable: the receiver did not acknowledge within the
	// replication timeout, or could not be connected to with items
	// waiting; set and cleared by setUnreachable only.
	unreachable atomic.Bool
	// episode numbers the current (or last) stretch of unreachability,
	// from episodeSeq; heartbeats report it, and a behind mark in the
	// table counts only if it covers it (route.Table.BehindEpoch).
	episode atomic.Uint64
	downMu  sync.Mutex
	down    chan struct{} // closed while unreachable (writes waiting on the stream wake)
	// receiverLost is set when the receiver forgot our session (it
	// restarted): a migration must start over.
	receiverLost atomic.Bool
	sentBytes    atomic.Int64
	// recsAcked counts the snapshot records the receiver acknowledged.
	recsAcked atomic.Int64
	// batchMax bounds a batch: records for a migration stream (adapt),
	// items otherwise.
	batchMax atomic.Int64
	lastRTT  atomic.Int64
}

// beginCopy notes that a full copy of a bucket is being pushed (its
// begin item may reach the receiver before the rest is queued);
// endCopy, called once it is queued, that it ends at the last item.
func (st *stream) beginCopy() {
	st.mu.Lock()
	st.mu.copying++
	st.mu.Unlock()
}

func (st *stream) endCopy() {
	st.mu.Lock()
	st.mu.copying--
	st.mu.copyUntil = max(st.mu.copyUntil, st.mu.nextSeq) // the last seq given
	st.mu.Unlock()
}

// copyInFlight reports whether the receiver has not yet acknowledged
// every item of the full copies pushed to it: until then its copy of
// those buckets may be partial, and it must not be promoted in this
// master's place (heartbeat's CopyingSlaves).
func (st *stream) copyInFlight() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.copying > 0 || st.mu.acked < st.mu.copyUntil
}

// inSync reports whether the receiver has every write this master
// acknowledged so far (wire.Heartbeat.InSyncSlaves): it acknowledged
// every item whose write was acknowledged without it (the writes since
// were, or will be, acknowledged only once it applies them), no full
// copy is in flight, and the stream can reach it and has not given it
// up. Items still in flight do not count against it, so that a slave
// under a steady write load is in sync too, as long as they are young:
// the oldest unacknowledged item was pushed less than inSyncMaxLag ago.
//
// The age bound matters for what follows the word: a slave in sync may be
// made master again by a plain reorder, whose takeover window (150 ms)
// applies only the old master's writes that arrive within it. A write in
// flight for a second to a slave just cut off (the stream not yet timed
// out, so not yet unreachable) would arrive after it and be refused,
// although readers on the old master saw it: a read that a later read
// contradicts (the chaos suite's partition case found it).
func (st *stream) inSync() bool {
	st.mu.Lock()
	ok := st.mu.acked >= st.mu.unconfirmed && st.mu.copying == 0 && st.mu.acked >= st.mu.copyUntil &&
		st.mu.lost == nil && !st.mu.stopping &&
		(len(st.mu.q) == 0 || time.Since(st.mu.q[0].at) < inSyncMaxLag)
	st.mu.Unlock()
	return ok && !st.unreachable.Load()
}

// inSyncMaxLag bounds the age of the oldest item in flight to a slave
// reported in sync (inSync): a third of the takeover window.
const inSyncMaxLag = takeoverWindow / 3

// newStream starts a stream to node to; supersedes names earlier
// sessions to the same node that the receiver must refuse from now on.
func (s *Server) newStream(to string, mig bool, supersedes []*stream) *stream {
	kind := "repl"
	if mig {
		kind = "mig"
	}
	st := &stream{
		s: s, to: to, session: newSession(kind), mig: mig, supersedes: supersedes,
		log:     s.log.With("peer", to, "stream", kind),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
		down:    make(chan struct{}),
	}
	st.mu.progress = make(chan struct{})
	st.batchMax.Store(512)
	if mig {
		st.batchMax.Store(int64(min(512, s.cfg.MigrateBatchMax)))
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		st.sendLoop()
	}()
	return st
}

// push appends an item; callers hold the bucket's lock. It returns the
// entry, finished (entryDone) when the receiver applied it (err nil) or
// refused it.
func (st *stream) push(bucket route.BucketID, area uint16, kind byte, p payload) *entry {
	return st.pushItem(bucket, area, kind, p, false)
}

// pushItem is push; unconfirmed says the write will be acknowledged to
// its client without waiting for this receiver (the table marks it
// behind): the receiver is not in sync (inSync) until it acknowledged
// the item.
func (st *stream) pushItem(bucket route.BucketID, area uint16, kind byte, p payload, unconfirmed bool) *entry {
	e := &entry{st: st, payload: p.data, nargs: 4 + p.nargs, recs: p.recs, kind: kind, bucket: bucket, at: time.Now()}
	st.mu.Lock()
	if st.mu.lost != nil || st.mu.stopping {
		err := st.mu.lost
		if err == nil {
			err = errStopped
		}
		e.finish(err)
		st.mu.Unlock()
		return e
	}
	st.mu.nextSeq++
	e.seq = st.mu.nextSeq
	if unconfirmed {
		st.mu.unconfirmed = e.seq
	}
	// The header lives in the entry (at most 62 bytes: a 20-digit seq, a
	// 10-digit bucket, a 5-digit area, the kind): one allocation less
	// per replicated write.
	h := e.hdrBuf[:0]
	h = resp.AppendBulkInt(h, int64(e.seq))
	h = resp.AppendBulkInt(h, int64(bucket))
	h = resp.AppendBulkInt(h, int64(area))
	h = resp.AppendBulk(h, []byte{kind})
	e.hdr = h
	st.mu.q = append(st.mu.q, e)
	st.mu.bytes += int64(len(h) + len(p.data))
	if kind == kindCmds {
		// The cap is on the writes waiting for an absent slave, not on
		// a snapshot on its way (resync).
		st.mu.cmdBytes += int64(len(h) + len(p.data))
	}
	if !st.mig && st.mu.cmdBytes > st.s.cfg.ReplicationBacklog {
		st.giveUpLocked(errBacklog)
	}
	st.mu.Unlock()
	select {
	case st.kick <- struct{}{}:
	default:
	}
	return e
}

func (st *stream) giveUpLocked(err error) {
	st.log.Warn("giving up slave", "err", err, "backlog_bytes", st.mu.bytes)
	st.mu.lost = err
	for _, e := range st.mu.q {
		e.finish(err)
	}
	st.mu.q = nil
	st.mu.bytes, st.mu.cmdBytes = 0, 0
	st.progressedLocked()
	st.setUnreachable(true)
	// A new stream with a full copy of the slave's buckets takes over.
	go st.s.replaceStream(st)
}

// progressedLocked wakes the waiters of progress (st.mu held).
func (st *stream) progressedLocked() {
	close(st.mu.progress)
	st.mu.progress = make(chan struct{})
}

// progress returns a channel closed when items are next acknowledged (or
// the stream gives up or stops). Take it before checking what to wait
// for, so that no acknowledgement is missed in between.
func (st *stream) progress() <-chan struct{} {
	return locked(st, func() chan struct{} { return st.mu.progress })
}

// lastSeq is the sequence number of the last item pushed.
func (st *stream) lastSeq() uint64 { return locked(st, func() uint64 { return st.mu.nextSeq }) }

// ackedSeq is the highest sequence number the receiver acknowledged.
func (st *stream) ackedSeq() uint64 { return locked(st, func() uint64 { return st.mu.acked }) }

// pending returns the number of unacknowledged items.
func (st *stream) pending() int { return locked(st, func() int { return len(st.mu.q) }) }

// locked reads the stream's state under its lock.
func locked[T any](st *stream, read func() T) T {
	st.mu.Lock()
	defer st.mu.Unlock()
	return read()
}

// pendingFor reports whether an unacknowledged item of bucket b is queued.
func (st *stream) pendingFor(b route.BucketID) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, e := range st.mu.q {
		if e.bucket == b {
			return true
		}
	}
	return false
}

// pendingNames adds to names the names the stream's unacknowledged items
// of bucket b write (replrepair.go); false when one's are unknown, or
// when they are more than repairMaxNames or come from more than
// repairMaxItems items (a backlog: the full copy is due then).
func (st *stream) pendingNames(b route.BucketID, names map[walkName]struct{}) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	items := 0
	for _, e := range st.mu.q {
		if e.bucket != b {
			continue
		}
		if items++; items > repairMaxItems {
			return false
		}
		ns, ok := entryNames(e)
		if !ok {
			return false
		}
		for _, n := range ns {
			names[n] = struct{}{}
		}
		if len(names) > repairMaxNames {
			return false
		}
	}
	return true
}

// lost reports whether the stream gave up its receiver.
func (st *stream) lost() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.lost != nil
}

// close stops the sender: it first tries for up to drain to deliver what is
// queued, then fails the rest.
func (st *stream) close(drain time.Duration) {
	st.mu.Lock()
	if st.mu.stopping {
		st.mu.Unlock()
		<-st.stopped
		return
	}
	st.mu.stopping = true
	st.mu.Unlock()
	st.waitDrained(time.Now().Add(drain), nil)
	close(st.stop)
	<-st.stopped
	t := st.s.Table()
	st.mu.Lock()
	for _, e := range st.mu.q {
		e.finish(errStopped)
		if e.kind == kindCmds && !st.mig && !(t != nil && t.IsMaster(e.bucket, st.s.addr) && !holds(t, e.bucket, st.to)) {
			// Applied here, never acknowledged there: this copy may
			// hold a write the other lacks (a deposed master cut off
			// from its slave kept writes its clients saw time out, and
			// rejoined as a slave with them: a version one ahead). Not
			// so when this node is still the bucket's master and the
			// receiver holds no copy of it any more (a dead slave the
			// table dropped): no copy the table names lacks the write
			// for it, and marking would send every slave a full copy.
			st.s.markDivergedEntry(e.bucket, e)
		}
	}
	st.mu.q = nil
	st.progressedLocked()
	st.mu.Unlock()
}

// waitDrained waits until every item pushed is acknowledged, the
// receiver is unreachable, deadline passes or stop closes; it reports
// whether the stream drained.
func (st *stream) waitDrained(deadline time.Time, stop <-chan struct{}) bool {
	return st.waitUntil(func() bool { return st.pending() == 0 }, deadline, stop)
}

// waitUntil waits, waking on acknowledgements, until done reports true
// (then it returns true), the receiver is unreachable, deadline passes
// or stop closes.
func (st *stream) waitUntil(done func() bool, deadline time.Time, stop <-chan struct{}) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ch := st.progress()
		if done() {
			return true
		}
		d := time.Until(deadline)
		if d <= 0 || st.unreachable.Load() {
			return false
		}
		if timer == nil {
			timer = time.NewTimer(d)
		}
		select {
		case <-ch:
		case <-st.downSignal():
			return false
		case <-timer.C:
			return false
		case <-stop:
			return false
		}
	}
}

var errStale = errors.New("receiver's table is older, or it saw a gap")

func (st *stream) sendLoop() {
	defer close(st.stopped)
	backoff := 50 * time.Millisecond
	for {
		// Wait for work.
		if st.pending() == 0 {
			select {
			case <-st.kick:
				continue
			case <-st.stop:
				return
			}
		}
		st.checkAge()
		conn, err := st.connect()
		if err != nil {
			st.log.Debug("stream connect failed", "err", err)
			// Items wait and the receiver cannot be reached at all (a
			// dead process refuses at once): unreachable now, not one
			// replication timeout after the oldest item, so that writes
			// of a master whose table names the receiver behind stop
			// waiting for it (await).
			if st.pending() > 0 {
				st.setUnreachable(true)
			}
			select {
			case <-time.After(backoff):
			case <-st.stop:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		err = st.runConn(conn)
		_ = conn.Close()
		if err == errStopped {
			return
		}
		st.log.Debug("stream connection ended", "err", err)
		if err == errStale {
			// Give the receiver a moment to learn the newer table.
			select {
			case <-time.After(20 * time.Millisecond):
			case <-st.stop:
				return
			}
		}
	}
}

// checkAge marks the receiver unreachable when the oldest unacknowledged
// item is older than the replication timeout.
func (st *stream) checkAge() {
	st.mu.Lock()
	old := len(st.mu.q) > 0 && time.Since(st.mu.q[0].at) > st.s.cfg.ReplicationTimeout
	st.mu.Unlock()
	if old {
		st.setUnreachable(true)
	}
}

// setUnreachable marks the receiver unreachable (or reachable again) and
// reports whether it was unreachable before. Writes waiting on the stream
// (await) wake when it becomes unreachable.
func (st *stream) setUnreachable(v bool) (was bool) {
	st.downMu.Lock()
	defer st.downMu.Unlock()
	if v && !st.unreachable.Load() {
		// Numbered before it is visible: a heartbeat that reports the
		// stream unreachable reports this episode or a later one.
		st.episode.Store(episodeSeq.Add(1))
	}
	was = st.unreachable.Swap(v)
	switch {
	case v && !was:
		close(st.down)
	case !v && was:
		st.down = make(chan struct{})
	}
	return was
}

// episodeSeq numbers episodes of unreachability, growing across restarts
// (it starts at the wall clock), so that a mark the configserver kept
// from an earlier incarnation's episode never covers a new one.
var episodeSeq = func() *atomic.Uint64 {
	var n atomic.Uint64
	n.Store(uint64(time.Now().UnixNano()))
	return &n
}()

// behindCovers reports whether t marks st's receiver behind this master
// for the stream's current episode, so that a write need not wait for it.
func (s *Server) behindCovers(t *route.Table, st *stream) bool {
	return t.BehindCovers(s.addr, st.to, st.episode.Load())
}

// downSignal returns a channel closed while the receiver is unreachable.
func (st *stream) downSignal() <-chan struct{} {
	st.downMu.Lock()
	defer st.downMu.Unlock()
	return st.down
}

type inflight struct {
	last uint64
	at   time.Time
	size int
	recs int // snapshot records in the batch
}

// runConn streams over one connection with several batches in flight; a
// reader goroutine completes them in order. It returns when the
// connection fails, the receiver is stale, or the stream stops.
func (st *stream) runConn(c *peerConn) error {
	maxInflight := 4
	if st.mig {
		maxInflight = 2
	}
	flights := make(chan inflight, maxInflight)
	errc := make(chan error, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		var buf []byte
		for f := range flights {
			_ = c.c.SetReadDeadline(time.Now().Add(st.timeout()))
			raw, err := readReply(c.br, buf[:0])
			if err != nil {
				errc <- err
				return
			}
			buf = raw
			last, stale, refused, needs, err := parseAck(raw)
			if err != nil {
				errc <- err
				return
			}
			st.ackUpTo(last, refused, needs)
			rtt := time.Since(f.at)
			st.lastRTT.Store(int64(rtt))
			if st.mig {
				st.adapt(rtt, f.recs)
			}
			if stale || last < f.last {
				errc <- errStale
				return
			}
		}
	}()
	finish := func(err error) error {
		close(flights)
		_ = c.c.Close()
		<-readerDone
		return err
	}
	st.mu.Lock()
	sent := st.mu.acked
	st.mu.Unlock()
	var buf []byte
	tick := time.NewTicker(st.s.cfg.ReplicationTimeout / 4)
	defer tick.Stop()
	var batchBuf []*entry // unsent's result, reused from batch to batch
	for {
		batch := st.unsent(sent, batchBuf[:0])
		batchBuf = batch
		if len(batch) == 0 {
			select {
			case <-st.kick:
				continue
			case err := <-errc:
				return finish(err)
			case <-tick.C:
				st.checkAge()
				continue
			case <-st.stop:
				return finish(errStopped)
			}
		}
		if g := st.s.durable; g != nil {
			// The batch's writes committed before it was taken: the
			// receiver gets them once they are durable here, so that a
			// kill -9 of this node never leaves a copy with a write
			// this one lost.
			if err := g.WaitDurable(g.CommitTicket()); err != nil {
				return finish(err)
			}
		}
		buf = st.encodeBatch(buf[:0], batch)
		snapshotBytes, recs := 0, 0 // what the migration's pacing counts
		for _, e := range batch {
			if snapshotKind(e.kind) {
				snapshotBytes += len(e.payload)
				recs += max(e.recs, 1)
			}
		}
		if st.mig && snapshotBytes > 0 {
			// Only the snapshot is paced: the writes logged since must
			// flow, or the copy would never catch up. Charged before the
			// batch goes, so the last batch counts too (charged after,
			// a copy of a few growing batches ran at about twice the
			// cap).
			d := st.s.pace.reserve(snapshotBytes, st.s.clientLatency)
			if !st.s.copyCap.wait(snapshotBytes, d, st.stop) {
				return finish(errStopped)
			}
		}
		f := inflight{last: batch[len(batch)-1].seq, at: time.Now(), size: len(buf), recs: recs}
		// Reserve a flight slot first (bounded pipeline).
		select {
		case flights <- f:
		case err := <-errc:
			return finish(err)
		case <-st.stop:
			return finish(errStopped)
		}
		_ = c.c.SetWriteDeadline(time.Now().Add(st.timeout()))
		if _, err := c.bw.Write(buf); err != nil {
			return finish(err)
		}
		if err := c.bw.Flush(); err != nil {
			return finish(err)
		}
		sent = f.last
		st.sentBytes.Add(int64(len(buf)))
	}
}

func (st *stream) timeout() time.Duration {
	t := 2 * st.s.cfg.ReplicationTimeout
	if st.mig && t < 10*time.Second {
		t = 10 * time.Second
	}
	return t
}

// adapt sizes a migration's batches by its destination: they grow (to
// MigrateBatchMax records) while it answers a batch of snapshot records
// fast (its queue is short) and shrink when it is slow. How fast the
// node copies at all is the pacer's (pace.go): it yields to this node's
// clients.
func (st *stream) adapt(rtt time.Duration, recs int) {
	if recs == 0 {
		return // writes only: the rtt says nothing of the batch size
	}
	bm, ceiling := st.batchMax.Load(), int64(st.s.cfg.MigrateBatchMax)
	switch {
	case rtt > 100*time.Millisecond:
		st.batchMax.Store(max(bm/2, 16))
	case rtt < 20*time.Millisecond:
		st.batchMax.Store(min(2*bm, ceiling))
	}
}

// successorSupersedes returns the streams whose sessions a stream
// replacing st must supersede: st, and, when st never had a hello
// answered, those st was to supersede that may still have sent
// something (they had a hello answered, or their sender has not stopped;
// a sender sends only after its hello). Without them a chain of
// replacements faster than the connections (A given up, B connects and
// sends a full copy, B given up, C given up before it connects, D) would
// retire only C at D's hello, and B's copy, still waiting at the receiver
// for the bucket's lock, could be applied after D's and empty or roll
// back the bucket (a CI run of TestSlaveTooFarBehindIsResynced lost its
// writes so). Dropping the stopped silent ones keeps the chain short
// while a slave stays away and its streams are replaced again and again.
func (st *stream) successorSupersedes() []*stream {
	out := []*stream{st}
	if st.greeted.Load() {
		return out
	}
	for _, x := range st.supersedes {
		if x.greeted.Load() || !x.hasStopped() {
			out = append(out, x)
		}
	}
	return out
}

// hasStopped reports whether st's sender has returned.
func (st *stream) hasStopped() bool {
	select {
	case <-st.stopped:
		return true
	default:
		return false
	}
}

func (st *stream) connect() (*peerConn, error) {
	c, err := dialPeer(st.to, st.s.cfg.ReplicationTimeout)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	acked := st.mu.acked
	st.mu.Unlock()
	hello := [][]byte{[]byte("TAIR.REPLHELLO"), []byte(st.s.Addr()), []byte(st.session), strconv.AppendUint(nil, acked, 10)}
	for _, old := range st.supersedes {
		hello = append(hello, []byte(old.session))
	}
	raw, err := c.roundTrip(resp.AppendCommand(nil, hello...), st.timeout())
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	last, err := replyInt(raw)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	st.greeted.Store(true)
	if uint64(last) < acked {
		// The receiver forgot our session: it restarted.
		st.receiverLost.Store(true)
		st.log.Warn("receiver lost the stream's state (restarted?)", "acked", acked, "receiver_last", last)
	}
	st.ackUpTo(uint64(last), nil, nil) // no reports: the items' digests count as differing
	return c, nil
}

// unsent appends to dst the items after seq sent, at most batchMax of
// them and about 4 MiB.
func (st *stream) unsent(sent uint64, dst []*entry) []*entry {
	st.mu.Lock()
	defer st.mu.Unlock()
	q := st.mu.q
	if len(q) == 0 {
		return dst
	}
	i := 0
	if sent >= q[0].seq {
		i = int(sent - q[0].seq + 1)
	}
	if i >= len(q) {
		return dst
	}
	n, size, w := 0, 0, 0
	bm := int(st.batchMax.Load())
	for i+n < len(q) && w < bm && size < 4<<20 {
		e := q[i+n]
		size += len(e.hdr) + len(e.payload)
		w++
		if st.mig && e.recs > 1 {
			w += e.recs - 1 // a migration's batch counts records
		}
		n++
	}
	return append(dst, q[i:i+n]...)
}

func (st *stream) encodeBatch(b []byte, batch []*entry) []byte {
	n := 4
	for _, e := range batch {
		n += e.nargs
	}
	b = resp.AppendArray(b, n)
	b = resp.AppendBulkString(b, "TAIR.REPL")
	b = resp.AppendBulkInt(b, int64(st.s.TableVersion()))
	b = resp.AppendBulkString(b, st.s.Addr())
	b = resp.AppendBulkString(b, st.session)
	for _, e := range batch {
		b = append(b, e.hdr...)
		b = append(b, e.payload...)
	}
	return b
}

// ackUpTo completes every entry up to seq last.
//
// refused maps the items the receiver refused to whether the refusal was
// a dropped copy's (droppedBy in replapply.go): such an item does not make
// this copy diverged, the table that dropped the receiver still naming
// this node master (refusedWrite decides the write's answer).
//
// needs are the names each digest item acknowledged needs (migresume.go,
// by item; none listed: none needed); nil when the acknowledgement
// carries no reports (a hello's), so that they are unknown.
func (st *stream) ackUpTo(last uint64, refused map[uint64]bool, needs map[uint64][]int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if last > st.mu.acked {
		st.mu.acked = last
	}
	i := 0
	recs := 0
	var refusedBuckets []route.BucketID
	for ; i < len(st.mu.q) && st.mu.q[i].seq <= last; i++ {
		e := st.mu.q[i]
		recs += e.recs
		if dropped, ok := refused[e.seq]; ok {
			if !slices.Contains(refusedBuckets, e.bucket) {
				refusedBuckets = append(refusedBuckets, e.bucket)
			}
			e.err = errRefused // finish below keeps it
			if dropped && !st.mig {
				e.err = errDropped
			} else if e.kind == kindCmds && !st.mig {
				// Applied here, refused there: this copy may hold a write
				// the new master lacks.
				st.s.markDivergedEntry(e.bucket, e)
			}
		}
		if e.kind == kindDigest {
			e.report = &digestReport{needs: needs[e.seq], known: needs != nil}
		}
		st.mu.bytes -= int64(len(e.hdr) + len(e.payload))
		if e.kind == kindCmds {
			st.mu.cmdBytes -= int64(len(e.hdr) + len(e.payload))
		}
		e.finish(e.err)
	}
	if i > 0 {
		// Shift the rest down in place (no new array per
		// acknowledgement); the tail is cleared for the collector.
		n := copy(st.mu.q, st.mu.q[i:])
		clear(st.mu.q[n:])
		st.mu.q = st.mu.q[:n]
		st.recsAcked.Add(int64(recs))
		st.progressedLocked()
	}
	if len(st.mu.q) == 0 && st.mu.lost == nil && st.setUnreachable(false) {
		// What the configserver takes, once heartbeats stop reporting
		// the slave, for "caught up" (logged for the chaos suite).
		st.log.Info("slave reachable again, its backlog acknowledged", "slave", st.to, "acked", st.mu.acked, "refused", len(refused))
	}
	if len(refused) > 0 {
		st.log.Warn("slave refused replication items", "slave", st.to, "items", len(refused), "buckets", refusedBuckets)
		// The receiver has another table: learn it.
		st.s.kickHeartbeat()
	}
}

// parseAck parses "+ACK <last> <stale> <refused> [<reports>]"; refused
// maps each refused item to whether its refusal was a dropped copy's
// ("<seq>d"); needs are the digest items' reports (parseNeeds), empty
// when there are none.
func parseAck(raw []byte) (last uint64, stale bool, refused map[uint64]bool, needs map[uint64][]int, err error) {
	if len(raw) < 3 || raw[0] != '+' {
		return 0, false, nil, nil, replyErr(raw)
	}
	f := bytes.Fields(raw[1 : len(raw)-2])
	if len(f) != 4 && len(f) != 5 || string(f[0]) != "ACK" {
		return 0, false, nil, nil, fmt.Errorf("dataserver: bad ack %q", raw)
	}
	if last, err = strconv.ParseUint(string(f[1]), 10, 64); err != nil {
		return 0, false, nil, nil, err
	}
	needs = noNeeds
	if len(f) == 5 {
		if needs, err = parseNeeds(string(f[4])); err != nil {
			return 0, false, nil, nil, err
		}
	}
	stale = string(f[2]) == "1"
	if string(f[3]) != "-" {
		refused = map[uint64]bool{}
		for _, s := range bytes.Split(f[3], []byte{','}) {
			dropped := bytes.HasSuffix(s, []byte{'d'})
			if dropped {
				s = s[:len(s)-1]
			}
			if n, err := strconv.ParseUint(string(s), 10, 64); err == nil {
				refused[n] = dropped
			}
		}
	}
	return last, stale, refused, needs, nil
}

// noNeeds is an acknowledgement's reports when it carries none: every
// digest item it covers matched (read only).
var noNeeds = map[uint64][]int{}
