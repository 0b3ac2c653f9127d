package dataserver

import (
	"strconv"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// # Resync
//
// A slave copy that may differ from its master is copied again in full
// through the master's replication stream: the master appends, under the
// bucket's lock, a "begin" item (the slave drops its copy) and a snapshot
// of the bucket; the writes that follow come after it in the same stream.
//
// A copy may differ when this node, as master, applied a write its slave
// refused because the slave had already moved to a newer table (a master
// switch): the write failed for the client, but it is in this copy. When
// this node then serves the bucket as a slave, it asks the new master:
//
//	TAIR.RESYNC <bucket> <slave-addr>   -> +OK, or NOTMASTER when the
//	                                       receiver is not the master of a
//	                                       bucket the slave holds (yet)

func (s *Server) markDiverged(b route.BucketID) {
	bk := s.bucket(b)
	if bk == nil || bk.setDivergedAll() {
		return
	}
	// Already a slave under the current table: ask now (a master again
	// resyncs its slaves when it applies that table).
	if t := s.Table(); t != nil && t.IsSlave(b, s.addr) {
		go s.resyncDiverged(t)
	}
}

// resyncDiverged asks the masters of diverged buckets this node now holds
// as a slave for a full copy (retried until one arrives or the bucket's
// role changes).
//
// A diverged copy that is master again (the table switched back) sends
// its slaves a full copy instead: either state is acceptable (the write
// failed for its client), the copies must only agree.
func (s *Server) resyncDiverged(t *route.Table) {
	rt := s.rt.Load()
	for _, bk := range s.buckets() {
		if !bk.diverged.Load() {
			continue
		}
		if t.IsMaster(bk.id, s.addr) {
			s.bulkMu.Lock()
			bk.lock()
			if names, all := bk.divergedNames(); rt.t.IsMaster(bk.id, s.addr) && bk.diverged.Load() && !all {
				// Diverged on known names: this copy's records of them.
				ok, err := s.repairSlavesLocked(rt, bk.id, names)
				switch {
				case ok:
					bk.clearDiverged()
					s.log.Info("sent slaves this node's records of a diverged bucket's keys", "bucket", bk.id, "names", len(names))
				case err != nil:
					s.log.Error("repairing slaves' keys", "bucket", bk.id, "err", err)
				default:
					bk.setDivergedAll() // a slave's copy moves: the move's end copies it whole
				}
			} else if rt.t.IsMaster(bk.id, s.addr) && bk.diverged.Load() {
				held := false
				for _, st := range rt.slaves[bk.id] {
					if slaveCopyMoving(rt.t, bk.id, st.to) {
						held = true
						continue
					}
					if _, err := s.pushSnapshotLocked(st, bk.id, "resync_master"); err != nil {
						s.log.Error("resyncing a slave", "slave", st.to, "bucket", bk.id, "err", err)
					}
				}
				if held {
					// Still diverged: the table that ends the move
					// resyncs the copy's new holder.
					s.log.Info("a diverged bucket's slave copy is moving: its full copy waits for the move's end", "bucket", bk.id)
				} else {
					bk.clearDiverged()
					s.log.Info("sent slaves a full copy of a diverged bucket", "bucket", bk.id)
				}
			}
			bk.unlock()
			s.bulkMu.Unlock()
			continue
		}
		if !t.IsSlave(bk.id, s.addr) || !bk.resyncing.CompareAndSwap(false, true) {
			continue
		}
		go func() {
			defer bk.resyncing.Store(false)
			for i := 0; i < 50 && bk.diverged.Load() && !s.closing.Load(); i++ {
				tb := s.Table()
				if tb == nil || !tb.IsSlave(bk.id, s.addr) {
					return
				}
				m := tb.Master(bk.id)
				if names, all := bk.divergedNames(); !all && m != "" && s.askRepair(m, bk.id, names) {
					s.log.Info("asked the master for its records of a diverged bucket's keys", "bucket", bk.id, "master", m, "names", len(names))
					// Their records clear diverged (repairedName); ask
					// again if they do not come.
					for j := 0; j < 20 && bk.diverged.Load(); j++ {
						time.Sleep(50 * time.Millisecond)
					}
					continue
				} else if all && m != "" && s.askResync(m, bk.id) {
					s.log.Info("asked the master for a full copy of a diverged bucket", "bucket", bk.id, "master", m)
					// The copy's begin item clears diverged; ask again if
					// it does not come.
					for j := 0; j < 20 && bk.diverged.Load(); j++ {
						time.Sleep(50 * time.Millisecond)
					}
					continue
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
}

// slaveCopyMoving reports whether table t moves slave's copy of bucket b
// to another node. A full copy is not sent to such a slave: its move's
// walk may list the bucket between the copy's "begin", which empties it,
// and the records that follow, which the move does not pass on (nor
// could it safely: the destination may switch tables between the two and
// refuse the rest), and the destination would end without them (a CI run
// of TestKillMasterUnderWritesProcs lost acknowledged writes so, once
// promoted). The master keeps the bucket diverged instead, and the table
// that ends the move has it send the new holder the full copy.
func slaveCopyMoving(t *route.Table, b route.BucketID, slave string) bool {
	for _, m := range t.Migrating {
		if m.Bucket == b && m.From == slave {
			return true
		}
	}
	return false
}

func (s *Server) askResync(master string, b route.BucketID) bool {
	raw, err := s.pool.roundTrip(master, resp.AppendCommand(nil, []byte("TAIR.RESYNC"),
		strconv.AppendUint(nil, uint64(b), 10), []byte(s.addr)), time.Second)
	if err != nil {
		return false
	}
	return len(raw) > 0 && raw[0] == '+'
}

// resyncRequest serves TAIR.RESYNC <bucket> <slave>.
func (s *Server) resyncRequest(out []byte, args [][]byte) []byte {
	if len(args) != 3 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.resync' command")
	}
	b64, ok := redisnum.ParseUint(args[1])
	rt := s.rt.Load()
	if !ok || rt == nil || b64 >= uint64(rt.t.Buckets) {
		return resp.AppendError(out, "ERR bad bucket")
	}
	b, slave := route.BucketID(b64), string(args[2])
	return s.toSlaveStream(out, b, slave, func(st *stream) error {
		if _, err := s.pushSnapshotLocked(st, b, "resync"); err != nil {
			return err
		}
		s.log.Info("resyncing a slave copy", "bucket", b, "slave", slave)
		return nil
	})
}

// toSlaveStream answers a slave's request for bucket b (TAIR.RESYNC,
// TAIR.REPAIR): under the copy lock and the bucket's lock, send pushes
// what the slave asked for onto this node's stream to it; +OK, send's
// error, NOTMASTER when this node does not master b for that slave, or
// TRYAGAIN while the slave's copy moves. Not while it moves (see
// slaveCopyMoving): the bucket is marked diverged here, so the table
// that ends the move has this master send the copy's new holder a full
// copy (the moved copy is the diverged one).
func (s *Server) toSlaveStream(out []byte, b route.BucketID, slave string, send func(st *stream) error) []byte {
	bk := s.bucket(b)
	s.bulkMu.Lock()
	defer s.bulkMu.Unlock()
	bk.lock()
	defer bk.unlock()
	rt := s.rt.Load()
	var st *stream
	if rt.t.IsMaster(b, s.addr) {
		for _, x := range rt.slaves[b] {
			if x.to == slave {
				st = x
			}
		}
	}
	if st == nil {
		return resp.AppendErr(out, envelope.NotMasterOf(b, rt.t.Version).Err())
	}
	if slaveCopyMoving(rt.t, b, slave) {
		bk.setDivergedAll()
		return resp.AppendError(out, "TRYAGAIN the slave's copy of the bucket is moving")
	}
	if err := send(st); err != nil {
		return resp.AppendErr(out, err)
	}
	return resp.AppendOK(out)
}

// pushSnapshotLocked appends "begin" and every record of bucket b to st,
// in chunks of about chunkBytes (kindRecords items), and returns the
// number of records; s.bulkMu and the bucket's lock are held. The copy is counted
// under reason (tair_dataserver_full_copies_total).
func (s *Server) pushSnapshotLocked(st *stream, b route.BucketID, reason string) (int, error) {
	st.beginCopy()
	defer st.endCopy()
	st.push(b, 0, kindBegin, payload{})
	n, inChunk := 0, 0
	defer func() { s.m.fullCopy(reason, n) }()
	// A chunk is encoded in place as a bulk string: a header with room
	// for any length, then the records; the header is written at the end
	// and the bytes before it are skipped.
	const room = 16
	newChunk := func() []byte { return make([]byte, room, room+chunkBytes+chunkBytes/8) }
	chunk := newChunk()
	flush := func() {
		if inChunk == 0 {
			return
		}
		var hb [room]byte
		h := append(strconv.AppendInt(append(hb[:0], '$'), int64(len(chunk)-room), 10), '\r', '\n')
		start := room - len(h)
		copy(chunk[start:], h)
		chunk = append(chunk, '\r', '\n')
		st.push(b, 0, kindRecords, payload{data: chunk[start:], nargs: 1, recs: inChunk})
		chunk, inChunk = newChunk(), 0
	}
	err := s.eng.ForEach(uint32(b), func(r *engines.Record) error {
		var err error
		if chunk, err = engines.AppendChunkRecord(chunk, r); err != nil {
			return err
		}
		n++
		inChunk++
		if len(chunk)-room >= chunkBytes {
			flush()
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	flush()
	return n, nil
}

// replaceStream replaces a replication stream that gave up its slave (too
// far behind): a new stream (a new session, which makes the slave refuse
// the old one) first carries a full copy of each bucket the node holds as
// this node's slave, then the writes. Writes that went nowhere meanwhile
// are in the copies, which are taken after them under each bucket's lock.
func (s *Server) replaceStream(old *stream) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.mu.Lock()
	if s.mu.closed || s.mu.streams[old.to] != old {
		s.mu.Unlock()
		return
	}
	st := s.newStream(old.to, false, old.successorSupersedes())
	st.setUnreachable(true) // until it has caught up
	s.mu.streams[old.to] = st
	s.mu.Unlock()

	rt := s.rt.Load()
	nrt := &routing{t: rt.t, slaves: make([][]*stream, len(rt.slaves))}
	var buckets []route.BucketID
	for b, ss := range rt.slaves {
		nrt.slaves[b] = make([]*stream, len(ss))
		for i, x := range ss {
			if x == old {
				x = st
				buckets = append(buckets, route.BucketID(b))
			}
			nrt.slaves[b][i] = x
		}
	}
	s.publishTable(nrt)
	for _, b := range buckets {
		bk := s.bucket(b)
		s.bulkMu.Lock()
		bk.lock()
		if slaveCopyMoving(s.rt.Load().t, b, st.to) {
			// Not to a moving copy (see slaveCopyMoving): the table
			// that ends the move sends the new holder one.
			bk.setDivergedAll()
			bk.unlock()
			s.bulkMu.Unlock()
			continue
		}
		_, err := s.pushSnapshotLocked(st, b, "replace_stream")
		bk.unlock()
		s.bulkMu.Unlock()
		if err != nil {
			s.log.Error("resyncing a slave", "slave", st.to, "bucket", b, "err", err)
		}
	}
	go old.close(0)
	s.log.Warn("slave fell too far behind: sending it a full copy", "slave", st.to, "buckets", len(buckets))
}
