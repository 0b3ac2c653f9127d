package dataserver

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// # Keyed repair of a diverged copy
//
// A copy of a bucket diverges when a write applied on one copy is refused
// by another, or never acknowledged by it (replresync.go says when). The
// copies must agree again before either can be promoted, and a full copy
// of the bucket does that; but the keys the write touched are known, on
// both sides: the node that applied it has the write's commands in its
// stream entry, the node that refused it has them in the refused item. So
// the copies are made to agree on those names only:
//
//   - The bucket's master sends its records of the names (tombstones for
//     a namespace it does not hold) on its slaves' streams, under the
//     bucket's lock, so they sit among its writes where they were read,
//     as a full copy's records do. A master that refused a write from a
//     deposed one does so at once (repairAfterRefusal); a master whose
//     own copy diverged does so in resyncDiverged.
//   - A slave whose copy diverged keeps the names (bucket.divNames) and
//     asks its master: TAIR.REPAIR <bucket> <slave> <area> <key> ...
//     (-> +OK; NOTMASTER when the receiver is not the master; TRYAGAIN
//     while the slave's copy moves). Each record of a name that arrives
//     on the master's stream after the slave marked it makes the name
//     agree (the slave applied the diverging write before it could know
//     of the refusal, so the record lands after it); once none is left
//     the copy is no longer diverged.
//
// A write whose names are unknown (a command without key positions, a
// snapshot item), more than repairMaxNames names, a slave copy that is
// moving elsewhere (slaveCopyMoving: its move would not carry records),
// or any divergence marked with markDiverged, takes the full copy as
// before.

// repairMaxNames bounds the names a diverged copy keeps: beyond it, the
// whole bucket is copied.
const repairMaxNames = 1024

// repairMaxItems bounds the unacknowledged writes a deposed master reads
// the names of (markDeposed): a backlog longer than that is copied whole.
const repairMaxItems = 4096

// itemNames returns the names an item's commands write, false when the
// item carries anything else or a command whose keys are unknown.
func itemNames(it item) ([]walkName, bool) {
	if it.kind != kindCmds {
		return nil, false
	}
	var names []walkName
	var idx []int
	for _, c := range it.cmds {
		if len(c) == 0 || exec.IsVersions(c) {
			continue
		}
		spec := command.Lookup(c[0])
		if spec == nil {
			return nil, false
		}
		idx = spec.AppendKeyIndexes(idx[:0], c)
		if len(idx) == 0 {
			return nil, false
		}
		if len(names)+len(idx) > repairMaxNames {
			return nil, false
		}
		for _, i := range idx {
			n := walkName{it.area, string(c[i])}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names, len(names) > 0
}

// entryNames returns the names a pushed entry's commands write (see
// itemNames), decoding the entry as its receiver would.
func entryNames(e *entry) ([]walkName, bool) {
	if e == nil || e.kind != kindCmds {
		return nil, false
	}
	args, ok := decodeBulks(append(e.hdr[:len(e.hdr):len(e.hdr)], e.payload...))
	if !ok {
		return nil, false
	}
	it, _, ok := parseItem(args, 0, nil)
	if !ok {
		return nil, false
	}
	return itemNames(it)
}

// decodeBulks splits a run of RESP bulk strings.
func decodeBulks(b []byte) ([][]byte, bool) {
	var out [][]byte
	for len(b) > 0 {
		if b[0] != '$' {
			return nil, false
		}
		end := 1
		for end < len(b) && b[end] != '\r' {
			end++
		}
		n, ok := redisnum.ParseUint(b[1:end])
		if !ok || uint64(len(b)) < uint64(end)+2+n+2 {
			return nil, false
		}
		start := end + 2
		out = append(out, b[start:start+int(n)])
		b = b[start+int(n)+2:]
	}
	return out, true
}

// markDivergedEntry marks bucket e.bucket diverged on the names e
// writes, or whole when they are unknown.
func (s *Server) markDivergedEntry(b route.BucketID, e *entry) {
	names, ok := entryNames(e)
	s.markDivergedNames(b, names, ok)
}

// markDivergedNames marks bucket b diverged on names (ok), or whole.
func (s *Server) markDivergedNames(b route.BucketID, names []walkName, ok bool) {
	if !ok {
		s.markDiverged(b)
		return
	}
	bk := s.bucket(b)
	if bk == nil {
		return
	}
	bk.divMu.Lock()
	newly := !bk.diverged.Load()
	switch {
	case newly:
		bk.divNames = make(map[walkName]struct{}, len(names))
		for _, n := range names {
			bk.divNames[n] = struct{}{}
		}
		bk.diverged.Store(true)
	case bk.divNames != nil:
		for _, n := range names {
			bk.divNames[n] = struct{}{}
		}
		if len(bk.divNames) > repairMaxNames {
			bk.divNames = nil
		}
	}
	bk.divMu.Unlock()
	if newly {
		s.m.divergedKeyed.Inc()
		if t := s.Table(); t != nil && t.IsSlave(b, s.addr) {
			go s.resyncDiverged(t)
		}
	}
}

// setDivergedAll marks the whole bucket diverged.
func (bk *bucket) setDivergedAll() (was bool) {
	bk.divMu.Lock()
	defer bk.divMu.Unlock()
	bk.divNames = nil
	return bk.diverged.Swap(true)
}

// clearDiverged marks the copy agreeing again.
func (bk *bucket) clearDiverged() {
	bk.divMu.Lock()
	bk.divNames = nil
	bk.diverged.Store(false)
	bk.divMu.Unlock()
}

// divergedNames returns the names the copy diverged on; all when the
// whole bucket did (or it did not diverge: check diverged first).
func (bk *bucket) divergedNames() (names []walkName, all bool) {
	bk.divMu.Lock()
	defer bk.divMu.Unlock()
	if bk.divNames == nil {
		return nil, true
	}
	for n := range bk.divNames {
		names = append(names, n)
	}
	slices.SortFunc(names, cmpWalkName)
	return names, false
}

// repairedName notes that a record of name n from the master arrived:
// the copy agrees with the master on it (see above).
func (s *Server) repairedName(bk *bucket, n walkName) {
	if !bk.diverged.Load() {
		return
	}
	bk.divMu.Lock()
	defer bk.divMu.Unlock()
	if bk.divNames == nil {
		return
	}
	if _, ok := bk.divNames[n]; !ok {
		return
	}
	delete(bk.divNames, n)
	if len(bk.divNames) == 0 {
		bk.divNames = nil
		bk.diverged.Store(false)
		s.log.Info("a diverged copy's keys were repaired from the master", "bucket", bk.id)
	}
}

// pushRepairLocked appends this node's records of names of bucket b to
// st (tombstones for the namespaces it does not hold); the bucket's lock
// is held.
func (s *Server) pushRepairLocked(st *stream, b route.BucketID, names []walkName) error {
	c := &chunker{st: st, b: b}
	for _, n := range names {
		if _, err := s.sendNameLocked(c, nil, b, n, true, false); err != nil {
			return err
		}
	}
	c.flush()
	s.m.repairedNames.Add(float64(len(names)))
	return nil
}

// repairSlavesLocked sends every slave stream of bucket b (mastered here
// in rt) this node's records of names; false, sending nothing, when a
// slave's copy is moving (the full copy at the move's end is needed). The
// copy lock and the bucket's lock are held.
func (s *Server) repairSlavesLocked(rt *routing, b route.BucketID, names []walkName) (bool, error) {
	for _, st := range rt.slaves[b] {
		if slaveCopyMoving(rt.t, b, st.to) {
			return false, nil
		}
	}
	for _, st := range rt.slaves[b] {
		if err := s.pushRepairLocked(st, b, names); err != nil {
			return false, err
		}
	}
	return true, nil
}

// refusals collects what one TAIR.REPL batch's refusals call for, done
// once the batch is through (act): the keys of the refused writes of
// buckets this node masters, to repair on its slaves, by bucket; or a
// full copy to its slaves of the buckets marked diverged whole.
type refusals struct {
	names  map[route.BucketID]map[walkName]struct{}
	resync bool
}

func (r *refusals) repair(b route.BucketID, names []walkName) {
	if r.names == nil {
		r.names = map[route.BucketID]map[walkName]struct{}{}
	}
	set := r.names[b]
	if set == nil {
		set = map[walkName]struct{}{}
		r.names[b] = set
	}
	for _, n := range names {
		set[n] = struct{}{}
	}
}

// act starts the repairs and the resync (off the caller's goroutine:
// they take the copy lock and buckets' locks).
func (r *refusals) act(s *Server) {
	for b, set := range r.names {
		names := slices.SortedFunc(maps.Keys(set), cmpWalkName)
		go s.repairAfterRefusal(b, names)
	}
	if t := s.Table(); r.resync && t != nil {
		go s.resyncDiverged(t)
	}
}

// repairAfterRefusal makes the copies of bucket b agree on names after
// this node refused a write of them that a deposed master applied (and
// perhaps other copies): as the bucket's master it sends its records of
// them to its slaves; no longer its master, its own copy is the one that
// may differ, marked diverged on those names.
func (s *Server) repairAfterRefusal(b route.BucketID, names []walkName) {
	bk := s.bucket(b)
	if bk == nil {
		return
	}
	if len(names) > repairMaxNames {
		s.markDiverged(b)
		if t := s.Table(); t != nil {
			s.resyncDiverged(t)
		}
		return
	}
	s.bulkMu.Lock()
	bk.lock()
	rt := s.rt.Load()
	master := rt != nil && rt.t.Contains(b) && rt.t.IsMaster(b, s.addr)
	ok, err := false, error(nil)
	if master {
		ok, err = s.repairSlavesLocked(rt, b, names)
	}
	bk.unlock()
	s.bulkMu.Unlock()
	switch {
	case ok:
		s.log.Info("sent slaves this node's records of a refused write's keys", "bucket", b, "names", len(names))
	case master:
		if err != nil {
			s.log.Error("repairing slaves after a refused write", "bucket", b, "err", err)
		}
		s.markDiverged(b)
		if t := s.Table(); t != nil {
			s.resyncDiverged(t)
		}
	default:
		s.markDivergedNames(b, names, true)
		s.kickHeartbeat()
	}
}

// askRepair asks master for its records of names of bucket b (TAIR.REPAIR).
func (s *Server) askRepair(master string, b route.BucketID, names []walkName) bool {
	args := make([][]byte, 0, 3+2*len(names))
	args = append(args, []byte("TAIR.REPAIR"), strconv.AppendUint(nil, uint64(b), 10), []byte(s.addr))
	for _, n := range names {
		args = append(args, strconv.AppendUint(nil, uint64(n.area), 10), []byte(n.key))
	}
	raw, err := s.pool.roundTrip(master, resp.AppendCommand(nil, args...), time.Second)
	if err != nil {
		return false
	}
	return len(raw) > 0 && raw[0] == '+'
}

// repairRequest serves TAIR.REPAIR <bucket> <slave> <area> <key> ...
func (s *Server) repairRequest(out []byte, args [][]byte) []byte {
	if len(args) < 5 || len(args)%2 != 1 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.repair' command")
	}
	b64, ok := redisnum.ParseUint(args[1])
	rt := s.rt.Load()
	if !ok || rt == nil || b64 >= uint64(rt.t.Buckets) {
		return resp.AppendError(out, "ERR bad bucket")
	}
	if (len(args)-3)/2 > repairMaxNames {
		return resp.AppendError(out, "ERR too many keys")
	}
	var names []walkName
	for i := 3; i < len(args); i += 2 {
		a, ok := redisnum.ParseUint(args[i])
		if !ok || a > route.MaxArea {
			return resp.AppendError(out, "ERR bad area")
		}
		names = append(names, walkName{uint16(a), string(args[i+1])})
	}
	b, slave := route.BucketID(b64), string(args[2])
	return s.toSlaveStream(out, b, slave, func(st *stream) error {
		if err := s.pushRepairLocked(st, b, names); err != nil {
			return err
		}
		s.log.Info("repairing a slave copy's keys", "bucket", b, "slave", slave, "names", len(names))
		return nil
	})
}
