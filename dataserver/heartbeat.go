package dataserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// kickSpacing is the least time between two heartbeats. A kick (a move's
// Done, a newer table seen) sends one at once when none went for that
// long, else when it has passed. A recovery finishes dozens of moves a
// second: with a heartbeat each (20 ms apart) a 1M-copy recovery made
// about 600 heartbeats, most replies carrying the whole table, which the
// configserver encodes and the dataserver reads; spaced 100 ms, about 200,
// the configserver's CPU a third lower, and the Dones of a node go
// together into fewer table versions. A master's Done that hands its
// bucket over skips the spacing (kickHeartbeatNow): the bucket is frozen
// until the switch, and its clients' writes wait on it.
const kickSpacing = 100 * time.Millisecond

// heartbeatLoop reports to the leading configserver every interval (and
// at once when kicked: a request or stream showed a newer table) and
// applies the reply. A successful heartbeat renews the lease from the time
// it was sent. Heartbeats do not wait for each other (up to 3 in flight),
// so one slow answer does not let the lease run out while the next would
// have renewed it.
func (s *Server) heartbeatLoop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.HeartbeatInterval)
	defer tick.Stop()
	drop := time.NewTicker(250 * time.Millisecond)
	defer drop.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var inflight, failures atomic.Int32
	// deferred: a kick found 3 heartbeats in flight; the first to end
	// sends one more (a move's Done must not wait for the next tick).
	var deferred atomic.Bool
	var last time.Time
	send := func(urgent bool) {
		if inflight.Load() >= 3 {
			deferred.Store(true)
			if urgent {
				s.hbUrgent.Store(true) // for the deferred kick
			}
			return
		}
		if !urgent && time.Since(last) < s.cfg.KickSpacing {
			return
		}
		last = time.Now()
		inflight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				inflight.Add(-1)
				if deferred.Swap(false) {
					s.kickHeartbeat()
				}
			}()
			if err := s.heartbeat(ctx); err != nil {
				if n := failures.Add(1); (n == 1 || n%20 == 0) && ctx.Err() == nil {
					s.log.Warn("heartbeat failed", "err", err, "failures", n)
				}
			} else if n := failures.Swap(0); n > 0 {
				s.log.Info("heartbeat recovered", "after_failures", n)
			}
		}()
	}
	// spaced: a kick that came within KickSpacing of the last heartbeat
	// sends when the spacing has passed (a timer, not a sleep, so an
	// urgent kick meanwhile is not held behind it).
	spaced := time.NewTimer(time.Hour)
	spaced.Stop()
	defer spaced.Stop()
	send(false)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			send(false)
		case <-s.hbKick:
			if wait := s.cfg.KickSpacing - time.Since(last); s.hbUrgent.Swap(false) || wait <= 0 {
				send(true)
			} else {
				spaced.Reset(wait)
			}
		case <-spaced.C:
			send(false) // unless a tick sent one meanwhile
		case <-drop.C:
			s.dropLeftBuckets()
			copyGC.relax(copyGCIdle)
		}
	}
}

func (s *Server) heartbeat(ctx context.Context) error {
	sent := time.Now()
	ver := s.TableVersion() // before the streams are read: never newer than the table they follow
	ss := s.slaveStreams()
	health := "ok"
	stalled := s.stallReason()
	switch {
	case stalled != "":
		health = "unhealthy"
	case s.leaseFrom.Load() != 0 && !s.leaseOK():
		health = "lease-lapsed"
	case len(ss.unreachable) > 0:
		health = "degraded"
	}
	var masters, slaves int
	if t := s.Table(); t != nil {
		masters, slaves = len(bucketsOf(t, s.addr, true)), len(bucketsOf(t, s.addr, false))
	}
	hb := &wire.Heartbeat{
		Addr:              s.addr,
		HTTP:              s.HTTPAddr(),
		Zone:              s.cfg.Zone,
		Rack:              s.cfg.Rack,
		Incarnation:       s.incarnation,
		Persistent:        s.dataKept,
		Engine:            s.eng.Name(),
		Seq:               s.hbSeq.Add(1),
		TableVersion:      ver,
		Deltas:            true,
		Migrations:        s.migrationProgress(),
		UnreachableSlaves: ss.unreachable,
		UnreachableEpochs: ss.epochs,
		CopyingSlaves:     ss.copying,
		InSyncSlaves:      ss.inSync,
		InSyncReported:    true,
		Diverged:          s.divergedSlaveBuckets(),
		MasterBuckets:     masters,
		SlaveBuckets:      slaves,
		Health:            health,
		Unhealthy:         stalled,
		Stats:             s.areaStats(),
		Load:              s.load(sent),
		Resources:         s.resources(sent),
	}
	// An answer later than the lease is of no use.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LeaseTimeout)
	defer cancel()
	reply, err := s.cs.HeartbeatLazy(ctx, hb)
	s.m.heartbeats.WithLabelValues(okLabel(err)).Inc()
	if err != nil {
		// No configserver leads (every address refuses connections or
		// answers that it is not the leader, e.g. while a standby takes
		// over): nobody can change the table, so a node whose lease still
		// holds keeps it and serves on. A new leader waits a lease TTL
		// before it judges any node down, so the next heartbeat reaches it
		// in time. A configserver that is reachable but does not answer (a
		// partition, a pause) lets the lease run out.
		if stalled == "" && s.leaseOK() && (errors.Is(err, wire.ErrNoLeader) || s.configServersRefuse()) {
			s.renewLease(sent)
			if !s.csDown.Swap(true) {
				s.log.Warn("no configserver running; serving on the last table", "table_version", s.TableVersion())
			}
		}
		return err
	}
	s.csDown.Store(false)
	if reply.Table != nil || reply.TableDelta != nil {
		if !s.applyTableReply(&wire.TableReply{Table: reply.Table, Delta: reply.TableDelta}) {
			// A delta from a version this node left meanwhile: the
			// table is applied before the lease is renewed all the same.
			if whole, err := s.cs.TableSince(ctx, nil, 0); err == nil {
				s.applyTableReply(whole)
			}
		}
	}
	s.applyHooks(reply.Hooks)
	s.copyCap.set(reply.MigrateBytesPerSec)
	s.applyAreas(reply.Areas)
	if stalled != "" {
		// An unhealthy node's heartbeats count as missed ones: it lets
		// its lease run out as a node cut off would (watchdog.go).
		return nil
	}
	s.renewLease(sent)
	return nil
}

// renewLease extends the lease from sent, when the heartbeat was sent.
func (s *Server) renewLease(sent time.Time) {
	for {
		at := s.leaseClock(sent)
		old := s.leaseFrom.Load()
		if old >= at || s.leaseFrom.CompareAndSwap(old, at) {
			return
		}
	}
}

// configServersRefuse reports whether every configserver address refuses
// TCP connections (no configserver process is running).
func (s *Server) configServersRefuse() bool {
	addrs := s.cs.Addrs()
	if len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return false
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return false
		}
	}
	return true
}

func okLabel(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// slaveReport is what a heartbeat says of this master's slave streams.
type slaveReport struct {
	unreachable []string          // wire.Heartbeat.UnreachableSlaves
	epochs      map[string]uint64 // wire.Heartbeat.UnreachableEpochs
	copying     []string          // wire.Heartbeat.CopyingSlaves
	inSync      []string          // wire.Heartbeat.InSyncSlaves
}

// slaveStreams reports on the streams to the slaves of the buckets this
// node masters in its current table: those it cannot reach (with the
// episode of each), those a full copy is on its way to, and those that
// acknowledged everything pushed to them.
func (s *Server) slaveStreams() slaveReport {
	slaves := map[string]bool{}
	if rt := s.rt.Load(); rt != nil {
		for _, ss := range rt.slaves {
			for _, st := range ss {
				slaves[st.to] = true
			}
		}
	}
	// The streams are read once s.mu is released: copyInFlight takes the
	// stream's own lock, which is never to be waited for under s.mu.
	s.mu.Lock()
	streams := make([]*stream, 0, len(s.mu.streams))
	for node, st := range s.mu.streams {
		if slaves[node] {
			streams = append(streams, st)
		}
	}
	s.mu.Unlock()
	var r slaveReport
	for _, st := range streams {
		node := st.to
		if st.unreachable.Load() {
			r.unreachable = append(r.unreachable, node)
			if r.epochs == nil {
				r.epochs = map[string]uint64{}
			}
			r.epochs[node] = st.episode.Load()
		}
		if st.copyInFlight() {
			r.copying = append(r.copying, node)
		}
		if st.inSync() {
			r.inSync = append(r.inSync, node)
		}
	}
	slices.Sort(r.unreachable)
	slices.Sort(r.copying)
	slices.Sort(r.inSync)
	return r
}

// divergedSlaveBuckets lists the buckets this node holds as a slave whose
// copy may differ from its master's (a write applied here that the
// master's side never took) and waits for a full copy: until it arrives
// the copy must not be promoted (wire.Heartbeat.Diverged).
func (s *Server) divergedSlaveBuckets() []route.BucketID {
	t := s.Table()
	if t == nil {
		return nil
	}
	var out []route.BucketID
	for _, bk := range s.buckets() {
		if bk.diverged.Load() && t.IsSlave(bk.id, s.addr) {
			out = append(out, bk.id)
		}
	}
	return out
}

func (s *Server) areaStats() map[uint16]wire.AreaStats {
	all := s.eng.AllStats()
	if len(all) == 0 {
		return nil
	}
	out := make(map[uint16]wire.AreaStats, len(all))
	for a, st := range all {
		out[a] = wire.AreaStats(st)
	}
	return out
}

// load returns requests per second since the previous call.
func (s *Server) load(now time.Time) float64 {
	n := s.m.requestCount()
	s.mu.Lock()
	defer s.mu.Unlock()
	prevN, prevAt := s.loadN, s.loadAt
	s.loadN, s.loadAt = n, now
	if prevAt.IsZero() {
		return 0
	}
	d := now.Sub(prevAt).Seconds()
	if d <= 0 {
		return 0
	}
	return (n - prevN) / d
}

// applyTable publishes a newer table: bucket states, replication streams,
// forwarding for buckets that moved away, and the migrations to run.
func (s *Server) applyTable(t *route.Table) {
	if err := t.Validate(); err != nil {
		s.log.Error("ignoring a bad table", "version", t.Version, "err", err)
		return
	}
	if !t.Accounts(s.addr, s.incarnation) {
		// Built before the configserver knew of this process (a restart):
		// its rows may be this node's old ones, whose data a restart
		// without it lost. Wait for one that knows.
		s.log.Debug("ignoring a table built before this incarnation", "version", t.Version, "incarnation", s.incarnation)
		return
	}
	waited := time.Now()
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	old := s.Table()
	if old != nil && t.Version <= old.Version {
		return
	}
	began := time.Now()
	if bs := s.buckets(); bs == nil {
		bs = make([]*bucket, t.Buckets)
		for i := range bs {
			bs[i] = &bucket{id: route.BucketID(i)}
		}
		s.bk.Store(&bs)
		s.x.Store(s.newExecutor(t.Buckets))
	} else if uint32(len(bs)) != t.Buckets {
		s.log.Error("ignoring a table with another bucket count", "version", t.Version, "buckets", t.Buckets, "have", len(bs))
		return
	}
	me := s.addr
	rt := &routing{t: t, slaves: make([][]*stream, t.Buckets)}
	now := time.Now()
	for b := range route.BucketID(t.Buckets) {
		if t.IsMaster(b, me) {
			mv, moving := t.MoveOf(b)
			for _, sl := range t.Slaves(b) {
				if sl == me || (moving && mv.From == me && mv.To == sl) {
					continue
				}
				rt.slaves[b] = append(rt.slaves[b], s.streamTo(sl))
			}
		}
		if old == nil {
			continue
		}
		bk := s.bucket(b)
		if t.IsMaster(b, me) {
			bk.handedOff.Store(false)
		}
		if prev := old.Master(b); old.IsSlave(b, me) && prev != "" && prev != me && t.Master(b) != prev &&
			t.IsSlave(b, prev) && (t.IsMaster(b, me) || t.IsSlave(b, me)) {
			s.beginTakeover(bk, prev, t.Version, t.IsMaster(b, me))
		}
		if old.IsMaster(b, me) && !t.IsMaster(b, me) && t.Master(b) != "" {
			bk.moved.Store(&movedTo{to: t.Master(b), until: now.Add(s.cfg.ForwardGrace)})
			s.forwardUntil.Store(now.Add(s.cfg.ForwardGrace).UnixNano())
		}
		if holds(old, b, me) && !holds(t, b, me) {
			s.scheduleDrop(b, now.Add(s.cfg.ForwardGrace))
		}
		if mv, ok := old.MoveOf(b); ok && mv.To == me {
			if next, ok := t.MoveOf(b); !ok || next != mv {
				s.forgetResume(bk) // a move here that ended or was dropped
			}
		}
	}
	// The cutover (cutover.go): the streams that must drain before the
	// table is published drain while their buckets refuse writes, and
	// the table is published with those buckets locked.
	held := s.cutover(old, t)
	s.publishTable(rt)
	s.endCutover(held)
	s.closeUnusedStreams(rt)
	s.resyncDiverged(t)
	if d := time.Since(began); d > 250*time.Millisecond {
		// It runs on the heartbeat goroutine too: a slow apply holds up
		// the lease's renewal.
		s.log.Warn("table apply was slow", "version", t.Version, "took", d,
			"waited_for_previous", began.Sub(waited), "held_buckets", len(held))
	}
	if s.log.Enabled(context.Background(), slog.LevelInfo) {
		s.log.Info("table applied", "version", t.Version, "masters", len(bucketsOf(t, me, true)),
			"slaves", len(bucketsOf(t, me, false)), "migrating", len(t.Migrating))
	}
	s.reconcileMigrations(t)
}

// takeoverWindow bounds a takeover: about the time the old master needs to
// learn the same table (both long-poll the configserver).
const takeoverWindow = 150 * time.Millisecond

// beginTakeover opens bk's takeover window (see takeover): every copy
// still applies what the old master from sent on a table older than ver,
// and the new master (freeze) takes no write meanwhile.
func (s *Server) beginTakeover(bk *bucket, from string, ver route.Version, freeze bool) {
	bk.lock()
	to := &takeover{from: from, switchVer: ver}
	bk.takeover = to
	if freeze {
		bk.frozen.Store(true)
	}
	bk.unlock()
	time.AfterFunc(takeoverWindow, func() {
		bk.lock()
		if bk.takeover == to {
			bk.takeover = nil
			if freeze && bk.mig == nil {
				bk.frozen.Store(false)
			}
		}
		bk.unlock()
	})
}

// holds reports whether node keeps a copy of bucket b under t.
func holds(t *route.Table, b route.BucketID, node string) bool {
	if t.IsMaster(b, node) || t.IsSlave(b, node) {
		return true
	}
	for _, m := range t.Migrating {
		if m.Bucket == b && (m.To == node || m.From == node) {
			return true
		}
	}
	return false
}

func bucketsOf(t *route.Table, node string, master bool) []route.BucketID {
	var out []route.BucketID
	if t == nil {
		return out
	}
	for b := range route.BucketID(t.Buckets) {
		if (master && t.IsMaster(b, node)) || (!master && t.IsSlave(b, node)) {
			out = append(out, b)
		}
	}
	return out
}

func (s *Server) scheduleDrop(b route.BucketID, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.drops == nil {
		s.mu.drops = map[route.BucketID]time.Time{}
	}
	s.mu.drops[b] = at
}

// dropLeftBuckets deletes the copies of buckets this node no longer holds
// once their grace period is over.
func (s *Server) dropLeftBuckets() {
	now := time.Now()
	var due []route.BucketID
	s.mu.Lock()
	for b, at := range s.mu.drops {
		if now.After(at) {
			due = append(due, b)
			delete(s.mu.drops, b)
		}
	}
	s.mu.Unlock()
	for _, b := range due {
		t := s.Table()
		if t == nil || holds(t, b, s.addr) {
			continue
		}
		bk := s.bucket(b)
		bk.lock()
		err := s.eng.DeleteBucket(uint32(b))
		s.fx.drop(uint32(b))
		bk.unlock()
		if err != nil {
			s.log.Error("dropping a bucket copy", "bucket", b, "err", err)
			continue
		}
		s.log.Info("dropped the copy of a bucket this node no longer holds", "bucket", b)
	}
}

// closeUnusedStreams closes the replication streams to nodes that are no
// longer slaves of any bucket this node masters (what they still hold is
// delivered for a moment first).
func (s *Server) closeUnusedStreams(rt *routing) {
	used := map[*stream]bool{}
	for _, ss := range rt.slaves {
		for _, st := range ss {
			used[st] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for node, st := range s.mu.streams {
		if !used[st] {
			delete(s.mu.streams, node)
			s.mu.retired[node] = st.successorSupersedes()
			go st.close(s.cfg.ReplicationTimeout)
		}
	}
}

// applyTableReply applies a table a configserver sent, whole or as the
// changes since the table this node holds, unless a table of its
// version or a newer one is applied already (both the table long poll
// and the heartbeats' replies bring each version: one that is not newer
// is not decoded). A heartbeat renews the lease only once its reply's
// table is applied, so it does not skip a version that is still being
// applied. false: the reply could not be used (a delta from a version
// this node no longer holds, a table that does not decode).
func (s *Server) applyTableReply(r *wire.TableReply) bool {
	t, err := r.Resolve(s.Table())
	if err != nil {
		s.log.Debug("ignoring a table reply", "err", err)
		return false
	}
	if t != nil && t.Version > s.TableVersion() {
		s.applyTable(t)
	}
	return true
}

// tableLoop long-polls the configservers for a newer table, so a switch
// (a finished move, a failover) is applied at once rather than at the next
// heartbeat. It does not renew the lease: only heartbeats do. A table
// comes as the changes since the one this node holds where it can; when
// such a reply cannot be used the next fetch is of the whole table.
func (s *Server) tableLoop(ctx context.Context) {
	whole := false
	for ctx.Err() == nil {
		have := s.Table()
		if whole {
			have = nil
		}
		r, err := s.cs.TableSince(ctx, have, 5*time.Second)
		if err == nil {
			whole = !s.applyTableReply(r)
		}
		if whole || (err != nil && !errors.Is(err, wire.ErrNotModified)) {
			select { // not at once: a reply that cannot be used may come again
			case <-ctx.Done():
			case <-time.After(s.cfg.HeartbeatInterval):
			}
		}
	}
}

// fetchTableFrom asks a peer dataserver for its table (TAIR.TABLE) when it
// showed a newer version than ours: tables spread between nodes even while
// no configserver answers. One fetch at a time.
func (s *Server) fetchTableFrom(peer string) {
	if !s.fetching.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.fetching.Store(false)
		raw, err := s.pool.roundTrip(peer, resp.AppendCommand(nil, []byte("TAIR.TABLE")), time.Second)
		if err != nil {
			return
		}
		body, ok := bulkBody(raw)
		if !ok {
			return
		}
		var t route.Table
		if err := json.Unmarshal(body, &t); err != nil {
			return
		}
		if t.Version > s.TableVersion() {
			s.log.Info("table learned from a peer", "peer", peer, "version", t.Version)
			s.applyTable(&t)
		}
	}()
}

// bulkBody returns the content of a raw bulk-string reply.
func bulkBody(raw []byte) ([]byte, bool) {
	if len(raw) < 4 || raw[0] != '$' {
		return nil, false
	}
	i := bytes.IndexByte(raw, '\n')
	if i < 0 || len(raw) < i+3 {
		return nil, false
	}
	return raw[i+1 : len(raw)-2], true
}

// tableReply answers TAIR.TABLE: the table as JSON, or nil.
func (s *Server) tableReply(out []byte) []byte {
	t := s.Table()
	if t == nil {
		return resp.AppendNull(out, 2)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return resp.AppendErr(out, err)
	}
	return resp.AppendBulk(out, b)
}
