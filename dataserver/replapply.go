package dataserver

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// recvState is what a receiver remembers of one incoming stream session.
type recvState struct {
	mu   sync.Mutex
	last uint64
	// used is when a batch or hello of the session last came (unix ns;
	// atomic, so that forgetting idle sessions waits for no batch).
	used atomic.Int64
	// dead: a newer session of the same sender replaced this one; what
	// is still in flight of it is refused.
	dead bool
	// refused carries the refusals of a batch whose apply began on the
	// event loop and goes on off it (replApply's onLoop): the first
	// part's items are skipped the second time, so their refusals are
	// kept here for the acknowledgement the second part sends.
	refused []string
}

// recvIdle is how long a session may be idle before it is forgotten
// (its sender is gone).
const recvIdle = 30 * time.Minute

func (s *Server) recvStateFor(session string) *recvState {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.mu.recv[session]
	if rs == nil {
		rs = &recvState{}
		s.mu.recv[session] = rs
		// Forget sessions idle for long, looking at most once a minute:
		// every move is a new session.
		if now := time.Now(); now.Sub(s.mu.recvSwept) > time.Minute {
			s.mu.recvSwept = now
			for k, v := range s.mu.recv {
				if u := v.used.Load(); u != 0 && now.Sub(time.Unix(0, u)) > recvIdle {
					delete(s.mu.recv, k)
				}
			}
		}
	}
	return rs
}

// replHello: TAIR.REPLHELLO <from> <session> <acked> [<superseded-session>...]
// -> :<last applied seq>. A superseded session is refused from then on.
func (s *Server) replHello(out []byte, args [][]byte) []byte {
	if len(args) < 4 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.replhello' command")
	}
	acked, err := strconv.ParseUint(string(args[3]), 10, 64)
	if err != nil {
		return resp.AppendError(out, "ERR bad sequence number")
	}
	for _, superseded := range args[4:] {
		old := s.recvStateFor(string(superseded))
		old.mu.Lock() // waits for a batch of it being applied
		old.dead = true
		old.mu.Unlock()
	}
	rs := s.recvStateFor(string(args[2]))
	rs.mu.Lock()
	last := rs.last
	if rs.last < acked {
		rs.last = acked
	}
	rs.used.Store(time.Now().UnixNano())
	rs.mu.Unlock()
	return resp.AppendInt(out, int64(last))
}

// droppedBy reports whether this node refuses bucket b's items from
// master from only because table t no longer lists this node's copy while
// from stays b's master (an extra copy dropped): the refusal then says
// nothing against from's copy, which t still serves, so from need not
// treat it as diverged. The refusal goes back as "<seq>d".
func (s *Server) droppedBy(t *route.Table, b route.BucketID, from, session string) bool {
	return t != nil && !migSession(session) && t.Contains(b) &&
		t.Master(b) == from && !holds(t, b, s.addr)
}

// refuse refuses item it of a batch from master from, on table t, and
// returns the refusal for the ACK.
//
// When this node holds a copy of the bucket (as its master or a slave in
// t), refusing one of its writes makes that copy diverged: the copies of
// a bucket learn tables at different times, so another copy may have
// applied what this one refuses (a slave still on the older table, the
// new master in its takeover window, a copy that skipped the table that
// opened one), and from then on every write from the master lands on
// copies that differ by it. Promoted, a copy that lacks the write loses
// it, and the version of every key it touched is behind (chaos seed
// 9519: a slave refused four writes the new master took, applied the
// next ones, and was promoted with the latest value at a version four
// lower). So the copies are made to agree again before either side can
// be promoted: a slave reports its copy diverged (never promoted while
// it is) and asks its master for a full copy; a master has it sent to its
// slaves once the batch is through (rep, refusals.act, resyncDiverged).
// When the item's keys are known, only they are made to agree
// (replrepair.go): a master sends its slaves its records of them, all the
// batch's refused keys of a bucket at once (repairAfterRefusal), a slave
// is diverged on them alone. A copy the
// table dropped (droppedBy) holds nothing to diverge, and an abandoned
// move's items land on no copy.
func (s *Server) refuse(t *route.Table, it item, from, session string, rep *refusals) string {
	s.m.replRefused.Inc()
	dropped := s.droppedBy(t, it.bucket, from, session)
	if !dropped && it.kind == kindCmds && !migSession(session) && t != nil && t.Contains(it.bucket) &&
		(t.IsMaster(it.bucket, s.addr) || t.IsSlave(it.bucket, s.addr)) {
		bk := s.bucket(it.bucket)
		if bk != nil && !bk.diverged.Load() {
			s.log.Warn("refused a write of a bucket this node holds: its copy may differ from one that took it; copying again",
				"bucket", it.bucket, "from", from, "master", t.Master(it.bucket), "table", t.Version)
			s.m.replRefusedHeld.Inc()
		}
		if names, ok := itemNames(it); ok {
			if t.IsMaster(it.bucket, s.addr) {
				rep.repair(it.bucket, names)
			} else {
				s.markDivergedNames(it.bucket, names, true)
				s.kickHeartbeat()
			}
			return refusal(it.seq, dropped)
		}
		s.markDiverged(it.bucket)
		if t.IsMaster(it.bucket, s.addr) {
			rep.resync = true
		} else {
			s.kickHeartbeat()
		}
	}
	return refusal(it.seq, dropped)
}

// refusal is one refused item of an ACK: its sequence number, "d" after
// it when the refusal is a dropped copy's (droppedBy).
func refusal(seq uint64, dropped bool) string {
	r := strconv.FormatUint(seq, 10)
	if dropped {
		r += "d"
	}
	return r
}

// continuesMove reports whether it continues the latest incoming move of
// its bucket after the switch: a master's write that the old holder of
// this slave copy passes on (relay) because the master sent it before it
// learned of the switch. This node must hold the bucket now.
func (s *Server) continuesMove(t *route.Table, it item, session string) bool {
	bk := s.bucket(it.bucket)
	if bk == nil {
		return false
	}
	bk.lock()
	defer bk.unlock()
	return s.continuesMoveLocked(bk, t, it, session)
}

func (s *Server) continuesMoveLocked(bk *bucket, t *route.Table, it item, session string) bool {
	return it.kind == kindCmds && migSession(session) && bk.inMig == session &&
		t != nil && holds(t, it.bucket, s.addr)
}

// relays reports whether this node passes on items of bucket b that
// master from sent on table version ver (see relay).
func (s *Server) relays(b route.BucketID, from string, ver route.Version) bool {
	bk := s.bucket(b)
	if bk == nil {
		return false
	}
	bk.lock()
	defer bk.unlock()
	rl := bk.relay
	return (rl != nil && rl.master == from && ver < rl.switchVer) || takesOver(bk, from, ver)
}

// takesOver reports whether bk is in a takeover window from from and an
// item sent on table ver is still the old master's (bk.mu held).
func takesOver(bk *bucket, from string, ver route.Version) bool {
	to := bk.takeover
	return to != nil && to.from == from && ver < to.switchVer
}

// acceptsFrom reports whether this node takes bucket b's changes from node
// from: from is b's master and this node one of its slaves, or from moves
// b to this node. A node that no longer holds the bucket refuses, so a
// master on an older table cannot count it as a copy.
func (s *Server) acceptsFrom(t *route.Table, b route.BucketID, from string) bool {
	if t == nil {
		return false
	}
	if t.Master(b) == from && t.IsSlave(b, s.addr) {
		return true
	}
	for _, m := range t.Migrating {
		if m.Bucket == b && m.From == from && m.To == s.addr {
			return true
		}
	}
	return false
}

type item struct {
	seq    uint64
	bucket route.BucketID
	area   uint16
	kind   byte
	cmds   [][][]byte
	record []byte // a copy's records, or a digest
	keep   bool   // a begin that resumes the receiver's copy
}

// parseItem parses one item at args[i:] and returns the index after it;
// a commands item appends its commands to cmds (the caller reuses it).
func parseItem(args [][]byte, i int, cmds [][][]byte) (item, int, bool) {
	it := item{cmds: cmds}
	if i+4 > len(args) {
		return it, 0, false
	}
	seq, ok1 := redisnum.ParseUint(args[i])
	b, ok2 := redisnum.ParseUint(args[i+1])
	a, ok3 := redisnum.ParseUint(args[i+2])
	if !ok1 || !ok2 || !ok3 || b > 1<<32-1 || a > route.MaxArea || len(args[i+3]) != 1 {
		return it, 0, false
	}
	it.seq, it.bucket, it.area, it.kind = seq, route.BucketID(b), uint16(a), args[i+3][0]
	i += 4
	switch it.kind {
	case kindBegin:
		if i < len(args) && string(args[i]) == "keep" { // never a sequence number
			it.keep = true
			i++
		}
	case kindRecord, kindRecords, kindDigest:
		if i >= len(args) {
			return it, 0, false
		}
		it.record = args[i]
		i++
	case kindCmds:
		if i >= len(args) {
			return it, 0, false
		}
		n64, ok := redisnum.ParseUint(args[i])
		if !ok || n64 > uint64(len(args)) {
			return it, 0, false
		}
		n := int(n64)
		i++
		for c := 0; c < n; c++ {
			if i >= len(args) {
				return it, 0, false
			}
			na64, ok := redisnum.ParseUint(args[i])
			na := int(na64)
			if !ok || na < 1 || na64 > uint64(len(args)) || i+1+na > len(args) {
				return it, 0, false
			}
			it.cmds = append(it.cmds, args[i+1:i+1+na])
			i += 1 + na
		}
	default:
		return it, 0, false
	}
	return it, i, true
}

// replApply: TAIR.REPL <table-version> <from> <session> <item>... (see
// replstream.go) -> +ACK <last> <stale> <refused> [<reports>], refused
// being "-" or the refused items' sequence numbers joined by commas (see
// refusal), reports the digest items' (migresume.go), when any needs a
// name.
//
// On the event loop (p.onLoop) a batch applies its writes there, without
// copying the batch or handing it to a goroutine, up to the first item
// that may wait: a copy's records (they take bulkMu) or a write passed
// on to a synchronous migration's destination. There it stops with
// p.bailed set and no reply; the connection's runner applies the batch
// again off the loop, skipping what was applied (by sequence number).
func (s *Server) replApply(out []byte, args [][]byte, p *pending) []byte {
	if len(args) < 4 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.repl' command")
	}
	v, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		return resp.AppendError(out, "ERR bad table version")
	}
	ver := route.Version(v)
	from, session := string(args[2]), string(args[3])
	rs := s.recvStateFor(session)
	if !p.onLoop {
		rs.mu.Lock()
	} else if !rs.mu.TryLock() {
		// A batch of the session is still applied off the loop (one
		// sent before a reconnect, waiting for a destination): wait for
		// it there.
		p.bailed = true
		return out
	}
	defer rs.mu.Unlock()
	rs.used.Store(time.Now().UnixNano())
	if rs.dead {
		return resp.AppendError(out, "ERR replication session superseded")
	}
	t := s.Table()
	refused := rs.refused
	rs.refused = nil
	var chained []chainWait
	var needs []string // digest items' reports (never on the loop: not commands)
	stale := false
	var rep refusals
	defer rep.act(s) // on every return: a batch handed off the loop too
	var scratch []byte
	var cmdsBuf [4][][]byte // an item's commands, reused item to item
	for i := 4; i < len(args); {
		it, next, ok := parseItem(args, i, cmdsBuf[:0])
		if !ok {
			s.log.Warn("malformed replication item", "from", from, "at", i)
			return resp.AppendError(out, "ERR malformed TAIR.REPL item")
		}
		i = next
		if it.seq <= rs.last {
			continue // already applied (a resend after a reconnect)
		}
		if it.seq != rs.last+1 {
			// A gap: an earlier batch stopped short. Keep the order.
			stale = true
			break
		}
		if p.onLoop && it.kind != kindCmds {
			rs.refused = refused
			p.bailed = true
			return out
		}
		if t == nil || !t.Contains(it.bucket) || !(s.acceptsFrom(t, it.bucket, from) || s.relays(it.bucket, from, ver) || s.continuesMove(t, it, session)) {
			if t == nil || ver > t.Version {
				stale = true
				s.kickHeartbeat()
				s.fetchTableFrom(from)
				break
			}
			refused = append(refused, s.refuse(t, it, from, session, &rep))
			rs.last = it.seq
			continue
		}
		var e *entry
		var mig *migration
		var applied, wait bool
		scratch, e, mig, applied, wait = s.applyItemContained(it, from, session, ver, scratch, p.onLoop, &needs)
		if wait {
			rs.refused = refused
			p.bailed = true
			return out
		}
		if !applied {
			refused = append(refused, s.refuse(s.Table(), it, from, session, &rep))
		}
		if e != nil {
			chained = append(chained, chainWait{seq: it.seq, e: e, mig: mig})
		}
		rs.last = it.seq
	}
	// Items passed on to a synchronous migration destination are
	// acknowledged only once it applied them.
	if len(chained) > 0 {
		// Shorter than the master's own wait, so that it learns of a
		// failure as a refusal rather than a timeout.
		deadline := time.NewTimer(s.cfg.ReplicationTimeout / 2)
		defer deadline.Stop()
		expired := false
		for _, c := range chained {
			ok := false
			for {
				done, wake := c.e.st.entryDone(c.e)
				if done {
					ok = c.e.err == nil
					break
				}
				if expired {
					break
				}
				select {
				case <-wake:
				case <-deadline.C:
					expired = true
				}
			}
			switch {
			case ok:
			case c.mig != nil:
				// Applied here; only the copy in progress missed it:
				// that copy starts over (it will include the write), the
				// master's write stands.
				c.mig.broken.Store(true)
			default:
				refused = append(refused, strconv.FormatUint(c.seq, 10))
			}
		}
	}
	ref := "-"
	if len(refused) > 0 {
		ref = strings.Join(refused, ",")
		var have route.Version
		if t != nil {
			have = t.Version
		}
		s.log.Warn("refused replication items", "from", from, "items", len(refused), "their_table", ver, "table", have, "last", rs.last)
	}
	st := "0"
	if stale {
		st = "1"
	}
	ack := "ACK " + strconv.FormatUint(rs.last, 10) + " " + st + " " + ref
	if len(needs) > 0 {
		ack += " " + strings.Join(needs, ";")
	}
	return resp.AppendStatus(out, ack)
}

// applyItemContained is applyItem, a copy's records (or its start) one
// at a time (Server.bulkMu), under recover: an item whose apply panicked
// is refused (its write is not acknowledged to the master's client) and
// the copy is marked diverged, so this slave asks its master for a full
// copy (contain.go).
func (s *Server) applyItemContained(it item, from, session string, ver route.Version, scratch []byte, onLoop bool, needs *[]string) (_ []byte, e *entry, mig *migration, ok, wait bool) {
	bulk := it.kind != kindCmds
	if bulk {
		s.bulkMu.Lock()
	}
	defer func() {
		v := recover()
		if bulk {
			s.bulkMu.Unlock()
		}
		if v != nil {
			s.panicked("tair.repl", v)
			e, mig, ok, wait = nil, nil, false, false
			s.markDiverged(it.bucket)
		}
	}()
	if testHook.Load() != nil {
		runTestHook("apply", "tair.repl")
	}
	return s.applyItem(it, from, session, ver, scratch, onLoop, needs)
}

type chainWait struct {
	seq uint64
	e   *entry
	mig *migration // the move of this slave copy (nil: a relay after the switch)
}

// applyItem applies one accepted item under its bucket's lock. When this
// node is the source of the bucket's migration, commands are passed on to
// the destination; the entry is returned when the destination is
// synchronous.
//
// Items of a migration stream are refused (ok false) unless their session
// is the bucket's latest incoming migration: a batch of an abandoned
// attempt still in flight must not land on the new copy.
//
// onLoop: the caller runs on an event loop and cannot wait; a write
// that would be passed on to a destination it must wait for is left
// unapplied (wait true), for the caller to apply off the loop.
//
// A digest item's report goes to needs (applyDigestItem).
func (s *Server) applyItem(it item, from, session string, ver route.Version, scratch []byte, onLoop bool, needs *[]string) (_ []byte, _ *entry, _ *migration, ok, wait bool) {
	bk := s.bucket(it.bucket)
	bk.lock()
	defer bk.unlock()
	// Check again under the lock: a table applied since the batch began
	// (a move ending here is published under this lock) wins.
	var rl *relay
	if t := s.Table(); !s.acceptsFrom(t, it.bucket, from) && !s.continuesMoveLocked(bk, t, it, session) {
		if it.kind == kindCmds && takesOver(bk, from, ver) {
			// The old master's last writes, sent before it learned of
			// the switch: applied as its slave, as every copy does.
		} else if rl = bk.relay; rl == nil || it.kind != kindCmds || rl.master != from || ver >= rl.switchVer {
			return scratch, nil, nil, false, false
		}
	}
	if it.kind != kindBegin && migSession(session) && bk.inMig != session {
		return scratch, nil, nil, false, false
	}
	if onLoop && (rl != nil || bk.mig != nil && bk.mig.synced) {
		return scratch, nil, nil, false, true
	}
	switch it.kind {
	case kindBegin:
		bk.inMig = session
		bk.clearDiverged()
		bk.resume = nil
		if it.keep {
			s.beginResumeLocked(bk, session)
			s.log.Info("incoming migration begins, resuming this node's copy", "bucket", it.bucket, "from", from,
				"names", len(bk.resume.names))
			break
		}
		if err := s.eng.DeleteBucket(uint32(it.bucket)); err != nil {
			s.log.Error("clearing bucket for an incoming migration", "bucket", it.bucket, "err", err)
		}
		// The copy's records are indexed as they come (restoredRecord).
		s.fx.drop(uint32(it.bucket))
		s.fx.markScanned(uint32(it.bucket))
		s.log.Info("incoming migration begins", "bucket", it.bucket, "from", from)
	case kindDigest:
		if !s.applyDigestItem(bk, it, session, needs) {
			return scratch, nil, nil, false, false
		}
	case kindRecord:
		rec, err := engines.DecodeRecord(it.record)
		if err == nil {
			err = s.restoreMigrated(it.bucket, rec)
		}
		if err == nil && !migSession(session) {
			s.repairedName(bk, walkName{rec.Area, string(rec.Key)})
		}
		s.noteRestoreError(it.bucket, err)
	case kindRecords:
		cr := engines.NewChunkReader(it.record)
		for {
			rec, err := cr.Next()
			if err == nil && rec == nil {
				break
			}
			if err == nil {
				err = s.restoreMigrated(it.bucket, rec)
			}
			if err == nil && !migSession(session) {
				s.repairedName(bk, walkName{rec.Area, string(rec.Key)}) // a record from the master (replrepair.go)
			}
			s.noteRestoreError(it.bucket, err)
			if err != nil && rec == nil {
				break // a malformed chunk: the rest cannot be read
			}
		}
	case kindCmds:
		x := s.x.Load()
		req := exec.Request{Area: it.area, Proto: 2, Replica: true}
		for _, c := range it.cmds {
			if exec.IsVersions(c) {
				req.Entry(c) // for the commands after it (exec/versions.go)
				continue
			}
			scratch, _ = x.ExecRequest(req, c, scratch[:0])
			req.KeyVersion = nil // the short entry's is this command's alone
			if len(scratch) > 0 && scratch[0] == '-' {
				if migSession(session) {
					// A move's write to a key its walk has not sent yet
					// (an LSET before the list came): expected; the walk
					// sends the key again after it (migwalk.go).
					s.m.migApplyMisses.Inc()
					s.log.Debug("a move's passed-on command failed before its key was copied", "bucket", it.bucket, "cmd", string(c[0]),
						"reply", strings.TrimSpace(string(truncate(scratch, 120))))
					continue
				}
				s.m.replApplyErrors.Inc()
				s.log.Warn("replicated command failed", "bucket", it.bucket, "cmd", string(c[0]),
					"reply", strings.TrimSpace(string(truncate(scratch, 120))))
			}
		}
		// A slave copy moving elsewhere passes the master's writes on
		// (a full copy of the bucket the master would send it is held
		// back while it moves: resyncDiverged, resyncRequest).
		if m := bk.mig; m != nil {
			m.walk.noteLocked(it.area, it.cmds)
			e := m.st.push(it.bucket, it.area, kindCmds, cmdsPayload(it.cmds))
			if m.synced {
				return scratch, e, m, true, false
			}
		}
		if rl != nil {
			return scratch, rl.st.push(it.bucket, it.area, kindCmds, cmdsPayload(it.cmds)), nil, true, false
		}
	}
	return scratch, nil, nil, true, false
}

// restoreMigrated writes one record of an incoming copy.
func (s *Server) restoreMigrated(b route.BucketID, rec *engines.Record) error {
	if err := s.eng.Restore(uint32(b), rec); err != nil {
		return err
	}
	if rec.Merge && rec.Entry.Type == engines.TypeExHash {
		// A TairHash's later piece: its fields' next expiry is the
		// merged hash's, not the piece's.
		e, err := s.eng.Get(engines.Key{Bucket: uint32(b), Area: rec.Area, Key: rec.Key, NoStats: true, NoTouch: true})
		if err != nil {
			return nil
		}
		rec = &engines.Record{Area: rec.Area, Key: rec.Key, Entry: e}
	}
	s.restoredRecord(b, rec)
	return nil
}

// noteRestoreError counts and logs a record of an incoming copy that could
// not be read or written; the copy goes on with the next one.
func (s *Server) noteRestoreError(b route.BucketID, err error) {
	if err != nil {
		s.m.replApplyErrors.Inc()
		s.log.Error("restoring a migrated record", "bucket", b, "err", err)
	}
}
