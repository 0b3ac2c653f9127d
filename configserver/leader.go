package configserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tairkv/tair/configserver/schedule"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// leaderState is owned by the leader loop goroutine for one term.
type leaderState struct {
	fence fence
	// table and meta are the last committed state (table nil before the
	// first table).
	table *route.Table
	meta  *meta
	// members is the member set the destination was built for; a
	// different set triggers a rebuild.
	members []string
	// dirty forces a destination rebuild (admin rebalance, node reset).
	dirty bool
	// started is when each running move began in this term; reports from
	// before are stale.
	started map[route.Move]time.Time
	// failed holds moves that failed or stalled, with when they may start
	// again.
	failed map[route.Move]time.Time
	// buildErr is the last refusal of the table builder, logged once.
	buildErr string
	// reload is set after a commit failed with an unknown outcome.
	reload bool
	// recovery records the buckets below their copy count (recovery.go).
	recovery recoveryState
	// behindSince is, per master and slave marked behind, the first
	// table version that carries the mark (markBehind).
	behindSince map[[2]string]route.Version
}

// reloadState replaces the leader's state with etcd's.
func (s *Server) reloadState(ctx context.Context, ls *leaderState) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	t, m, _, err := s.store.load(cctx)
	cancel()
	if err != nil {
		return err
	}
	ls.table, ls.meta, ls.reload = t, m, false
	s.setMeta(m)
	if t != nil {
		s.publish(t)
	}
	return nil
}

// errNoMembers is logged (once) when no dataserver could take a copy.
const errNoMembers = "no dataserver alive; keeping the table"

// adminCall is an AdminRequest handed to the leader loop.
type adminCall struct {
	req   wire.AdminRequest
	reply chan wire.AdminReply
}

// lead runs one leadership term until ctx ends or a write is fenced off.
// Every table change happens here, in one goroutine, so changes are
// serial and each is committed to etcd before anyone sees it.
func (s *Server) lead(ctx context.Context, f fence) error {
	start := time.Now()
	term := fmt.Sprintf("%s %d", s.Addr(), f.rev)
	t, m, prevTerm, err := s.store.beginTerm(ctx, f, term)
	if err != nil {
		return err
	}
	// Leading again with nobody in between (a lease blip): what this
	// server heard before still holds, so a node that died meanwhile is
	// failed over a moment after the heartbeats resume, not a lease TTL
	// plus the down detection later.
	again := prevTerm != "" && prevTerm == s.lastTerm
	s.lastTerm = term
	if t != nil && (t.Buckets != s.cfg.Buckets || t.Copies != s.cfg.Copies) {
		s.log.Warn("stored table keeps its own shape", "buckets", t.Buckets, "copies", t.Copies,
			"config_buckets", s.cfg.Buckets, "config_copies", s.cfg.Copies)
	}
	ls := &leaderState{fence: f, table: t, meta: m, started: map[route.Move]time.Time{}, failed: map[route.Move]time.Time{}}
	if t != nil {
		// Moves of the previous term go on; their clock starts now.
		for _, mv := range t.Migrating {
			ls.started[mv] = time.Now()
		}
	}
	var grace []string
	if t != nil {
		grace = tableNodes(t)
		s.publish(t)
	}
	// Dataservers may still be talking to the old leader, which accepts
	// heartbeats until its own lease check fails: count them alive for a
	// lease TTL more before failing anyone. After a term of its own the
	// leader keeps what it heard, giving each node half the down
	// detection to get a heartbeat through again.
	if again {
		s.nodes.resume(time.Now().Add(-s.cfg.downAfter()/2), grace, m)
	} else {
		s.nodes.reset(time.Now().Add(s.cfg.LeaseTTL), grace, m)
	}
	ls.members = s.members(ls.meta, func(addr string) bool { return slices.Contains(grace, addr) })
	s.setMeta(m)
	s.events.newTerm()
	s.leader.Store(true)
	s.metrics.leader.Set(1)
	defer func() {
		s.leader.Store(false)
		s.metrics.leader.Set(0)
	}()
	if len(s.cfg.InvalidPeers) > 0 {
		ictx, stopInvalid := context.WithCancel(ctx)
		defer stopInvalid()
		s.runInvalidSenders(ictx)
	}
	ver := route.Version(0)
	if t != nil {
		ver = t.Version
	}
	s.log.Info("leading", "table_version", ver, "nodes", len(grace), "took", time.Since(start), "resumed", again)

	tick := time.NewTicker(s.tick())
	defer tick.Stop()
	var lastErr string
	var lastLog time.Time
	for {
		if ls.reload {
			// A failed commit may have applied anyway: continue from what
			// etcd holds, never from a version it may already have used.
			if err := s.reloadState(ctx, ls); err != nil && ctx.Err() == nil {
				s.log.Warn("reload after a failed commit", "err", err)
			}
		}
		if err := s.reconcile(ctx, ls); err != nil {
			if errors.Is(err, errFenced) {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ls.reload = true
			if msg := err.Error(); msg != lastErr || time.Since(lastLog) > 5*time.Second {
				s.log.Warn("reconcile failed", "err", err)
				lastErr, lastLog = msg, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-s.kick:
		case call := <-s.admin:
			call.reply <- s.applyAdmin(ctx, ls, call.req)
		}
	}
}

// tick is the leader loop's period: fine enough that a failure is acted on
// soon after DownAfter, and a Done report switches the table quickly even
// if the kick was missed.
func (s *Server) tick() time.Duration {
	return max(s.cfg.HeartbeatInterval/5, 20*time.Millisecond)
}

// members are the nodes that should hold copies: known, alive, not
// draining or removed.
func (s *Server) members(m *meta, alive func(string) bool) []string {
	var out []string
	for _, addr := range sortedKeys(m.Nodes) {
		nm := m.Nodes[addr]
		if alive(addr) && !nm.Draining && !nm.Removed {
			out = append(out, addr)
		}
	}
	return out
}

// reconcile moves the cluster one step towards its destination:
//
//  1. fold heartbeats into meta (joins, labels, restarts that lost data);
//  2. strip down nodes from the table: slaves promoted at once;
//  3. first table once the joining nodes settle, else rebuild the
//     destination when the member set changed;
//  4. apply move reports: Done switches the serving row, Failed retries;
//  5. settle buckets without running moves (trim, master order, lost data);
//  6. start moves up to the limits, recovery before rebalance;
//  7. commit (fenced), then publish.
func (s *Server) reconcile(ctx context.Context, ls *leaderState) error {
	now := time.Now()
	view, lastJoin := s.nodes.snapshot(now, s.cfg.downAfter())
	m := ls.meta.clone()
	metaChanged := false
	var t *route.Table
	if ls.table != nil {
		t = ls.table.Clone()
	}
	dirty := ls.dirty
	s.events.liveness(view)
	// why says what changed the table; events are recorded once the
	// change is committed.
	var why []string
	var events []Event
	note := func(kind, node, msg string) {
		events = append(events, Event{Kind: kind, Node: node, Message: msg})
		why = append(why, msg)
	}

	// 1. Heartbeats -> meta.
	for _, addr := range sortedKeys(view) {
		v := view[addr]
		if !v.heard {
			continue
		}
		nm := m.Nodes[addr]
		if nm == nil {
			m.Nodes[addr] = &nodeMeta{Zone: v.hb.Zone, Rack: v.hb.Rack, Incarnation: v.hb.Incarnation, Persistent: v.hb.Persistent}
			metaChanged = true
			s.log.Info("dataserver joined", "node", addr, "zone", v.hb.Zone, "rack", v.hb.Rack)
			note(EventNodeJoined, addr, addr+" joined")
			continue
		}
		if nm.Incarnation != v.hb.Incarnation {
			if !v.hb.Persistent && t != nil && strip(t, addr, false, func(a string) bool { return view[a].alive }) {
				s.log.Warn("dataserver restarted without its data; its copies are lost", "node", addr,
					"old_incarnation", nm.Incarnation, "incarnation", v.hb.Incarnation)
				dirty = true
				note(EventNodeRestarted, addr, addr+" restarted without its data")
			}
			nm.Incarnation = v.hb.Incarnation
			metaChanged = true
		}
		if v.hb.DrainRequested && !nm.Draining {
			nm.Draining = true
			metaChanged, dirty = true, true
			s.log.Info("dataserver asked to be drained", "node", addr)
		}
		if nm.Zone != v.hb.Zone || nm.Rack != v.hb.Rack || nm.Persistent != v.hb.Persistent {
			nm.Zone, nm.Rack, nm.Persistent = v.hb.Zone, v.hb.Rack, v.hb.Persistent
			metaChanged, dirty = true, true
		}
	}
	alive := func(addr string) bool { return view[addr].alive }
	// away: down, but heard from within the handoff window.
	away := func(addr string) bool {
		v := view[addr]
		return !v.alive && s.cfg.HandoffWindow > 0 && !v.lastSeen.IsZero() && now.Sub(v.lastSeen) < s.cfg.HandoffWindow
	}

	// 2. Failures: a down node gives up its master slots to caught-up
	// slaves; within its handoff window it keeps its rows as a slave
	// behind the master, after it it leaves them.
	if t != nil {
		for _, addr := range tableNodes(t) {
			switch {
			case alive(addr):
			case away(addr):
				if handOff(t, addr, alive) {
					s.log.Warn("dataserver down; caught-up slaves promoted, its copies kept for the handoff window",
						"node", addr, "last_heartbeat", view[addr].lastSeen, "window", s.cfg.HandoffWindow)
					dirty = true
					note(EventFailover, addr, addr+" away: caught-up slaves promoted, its copies kept for the handoff window")
				}
			default:
				if strip(t, addr, true, alive) {
					s.log.Warn("dataserver down; slaves promoted", "node", addr, "last_heartbeat", view[addr].lastSeen)
					dirty = true
					note(EventFailover, addr, addr+" down: slaves promoted, its copies given up")
				}
			}
		}
		if ls.behindSince == nil {
			ls.behindSince = map[[2]string]route.Version{}
		}
		s.markBehind(t, ls.table, view, alive, away, ls.behindSince)
	}

	// 3. Destination. ls.members follows only a committed rebuild, so a
	// failed commit rebuilds again next time.
	members := s.members(m, func(a string) bool { return alive(a) || away(a) })
	builtFor := ls.members
	if ls.returned(alive) {
		dirty = true // copies of it went elsewhere while it was away
	}
	switch {
	case t == nil:
		if len(members) == 0 || now.Sub(lastJoin) < s.cfg.Settle {
			break
		}
		rows, err := s.build(nil, members, m, int(s.cfg.Buckets), s.cfg.Copies, ls)
		if err != nil {
			break
		}
		t = &route.Table{Buckets: s.cfg.Buckets, Copies: s.cfg.Copies, Serving: rows, Destination: cloneRows(rows)}
		builtFor = members
		s.log.Info("first table built", "nodes", members, "buckets", t.Buckets, "copies", t.Copies)
		why = append(why, fmt.Sprintf("first table: %d nodes", len(members)))
	case dirty || !slices.Equal(members, ls.members):
		if len(members) == 0 {
			if ls.buildErr != errNoMembers {
				s.log.Error(errNoMembers)
				ls.buildErr = errNoMembers
			}
			break
		}
		rows, err := s.build(t.Serving, members, m, int(t.Buckets), t.Copies, ls)
		if err != nil {
			// Keep serving; plan nothing until the cluster changes.
			t.Destination = cloneRows(t.Serving)
		} else {
			t.Destination = rows
		}
		builtFor = members
		dirty = false
		m.PlanDone = 0
		metaChanged = true
		moves := len(schedule.Diff(t.Serving, t.Destination))
		s.log.Info("destination rebuilt", "members", members, "moves", moves)
		if moves > 0 {
			note(EventPlan, "", fmt.Sprintf("migrations planned: %d moves for %d members", moves, len(members)))
		}
	}

	if t != nil && t.Destination != nil {
		// 4. Reports.
		running := len(t.Migrating)
		done := s.applyReports(t, m, view, ls, now)
		if done > 0 {
			metaChanged = true // Completed
			why = append(why, fmt.Sprintf("%d moves done", done))
		}
		if dropped := running - done - len(t.Migrating); dropped > 0 {
			note(EventMoveFailed, "", fmt.Sprintf("%d moves ended unfinished (failed or stalled: retried; or no longer planned)", dropped))
		}
		// 5. Settle.
		s.settle(t, alive)
		// 6. Start moves: none waits for an away destination, and a
		// node away leaves no bucket short of copies meanwhile.
		s.retarget(t, members, alive, ls)
		s.reinforce(t, members, alive)
		if !m.Paused {
			running := len(t.Migrating)
			s.startMoves(t, ls, now, alive)
			if n := len(t.Migrating) - running; n > 0 {
				why = append(why, fmt.Sprintf("%d moves started", n))
			}
		}
	}

	// 7. Commit. The table names the incarnations it was built for (a
	// restarted node serves only from a table that knows of its restart).
	if t != nil {
		recordIncarnations(t, m)
	}
	tableChanged := t != nil && (ls.table == nil || !tableEqual(t, ls.table))
	live := 0
	for _, a := range members {
		if alive(a) {
			live++
		}
	}
	if !tableChanged && !metaChanged {
		ls.dirty = dirty
		ls.members = builtFor
		s.observe(t, m, view)
		s.trackRecovery(ls, t, alive, live, now)
		return nil
	}
	var saveT *route.Table
	var saveM *meta
	if tableChanged {
		t.Version = 1
		if ls.table != nil {
			t.Version = ls.table.Version + 1
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("configserver: built an invalid table: %w", err)
		}
		saveT = t
	}
	if metaChanged {
		saveM = m
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := s.store.save(cctx, ls.fence, saveT, saveM)
	cancel()
	if err != nil {
		return err
	}
	ls.dirty = dirty
	ls.members = builtFor
	ls.meta = m
	s.setMeta(m)
	for _, e := range events {
		s.metrics.event(e.Kind)
		s.events.add(e)
	}
	if tableChanged {
		old := ls.table
		ls.table = t
		s.publish(t)
		s.log.Info("table committed", "table_version", t.Version, "migrating", len(t.Migrating))
		s.tableEvents(old, t, why)
	}
	s.observe(ls.table, m, view)
	s.trackRecovery(ls, ls.table, alive, live, now)
	return nil
}

// build runs the table builder for members and logs a refusal once.
func (s *Server) build(serving [][]string, members []string, m *meta, buckets, copies int, ls *leaderState) ([][]string, error) {
	nodes := make([]schedule.Node, len(members))
	for i, addr := range members {
		nodes[i] = schedule.Node{Addr: addr}
		if nm := m.Nodes[addr]; nm != nil {
			nodes[i].Zone, nodes[i].Rack = nm.Zone, nm.Rack
		}
	}
	rows, err := schedule.Build(serving, nodes, schedule.Options{
		Buckets: buckets, Copies: copies,
		Strategy: schedule.Strategy(s.cfg.Strategy), DiffRatio: s.cfg.BuildDiffRatio,
	})
	if err != nil {
		if err.Error() != ls.buildErr {
			s.log.Error("table builder refused", "err", err)
			ls.buildErr = err.Error()
		}
		s.metrics.buildRefused.Set(1)
		return nil, err
	}
	ls.buildErr = ""
	s.metrics.buildRefused.Set(0)
	return rows, nil
}

// applyReports switches the table for moves whose source reported Done,
// drops failed moves (retried after a pause) and cancels moves the
// destination no longer wants.
func (s *Server) applyReports(t *route.Table, m *meta, view map[string]nodeView, ls *leaderState, now time.Time) (done int) {
	keep := t.Migrating[:0]
	for _, mv := range t.Migrating {
		b := mv.Bucket
		r, ok := view[mv.From].reports[moveKey{b, mv.To}]
		fresh := ok && !r.At.Before(ls.started[mv])
		switch {
		case fresh && r.Done && behindSource(t, mv):
			// The slave copy it moved fell behind its master during the
			// move: the new copy may lack what the master's backlog
			// holds for the old one. Made again, from the master.
			ls.retryLater(mv, now)
			s.log.Warn("move dropped: its source copy is behind its master; will copy from the master", "bucket", b,
				"from", mv.From, "to", mv.To, "master", t.Master(b))
			continue
		case fresh && r.Done:
			applyDone(t, mv)
			m.Completed++
			m.PlanDone++
			done++
			delete(ls.started, mv)
			s.metrics.movesDone.Inc()
			s.log.Info("move done", "bucket", b, "from", mv.From, "to", mv.To, "keys", r.KeysSent)
			continue
		case fresh && r.Failed != "":
			ls.retryLater(mv, now)
			s.log.Warn("move failed; will retry", "bucket", b, "from", mv.From, "to", mv.To, "err", r.Failed)
			continue
		case now.Sub(lastWord(ls.started[mv], r, ok)) > s.cfg.MoveStall:
			s.log.Warn("move stalled: its source stopped reporting it; will retry", "bucket", b,
				"from", mv.From, "to", mv.To, "silent_for", now.Sub(lastWord(ls.started[mv], r, ok)).Round(time.Millisecond))
			ls.retryLater(mv, now)
			continue
		case !wanted(t, mv):
			delete(ls.started, mv)
			s.log.Info("move cancelled: no longer planned", "bucket", b, "from", mv.From, "to", mv.To)
			continue
		}
		keep = append(keep, mv)
	}
	t.Migrating = keep
	return done
}

// retryLater ends a running move that did not complete; startMoves may
// start it again after a pause of a second.
func (ls *leaderState) retryLater(mv route.Move, now time.Time) {
	ls.failed[mv] = now.Add(time.Second)
	delete(ls.started, mv)
}

// lastWord is when the source last spoke of a move: its last report, or
// the move's start in this term (a new leader counts from its takeover).
func lastWord(started time.Time, r report, ok bool) time.Time {
	if ok && r.At.After(started) {
		return r.At
	}
	return started
}

// settle finishes the plan. A bucket with no copy left is recreated empty
// where the destination puts it, at once. Once no copy needs moving any
// more, serving rows become destination rows: extra copies dropped and the
// planned masters in front. Masters switch only then, in one table, so a
// degraded cluster does not reshuffle roles while it recovers.
func (s *Server) settle(t *route.Table, alive func(string) bool) {
	done := len(t.Migrating) == 0 && len(schedule.Diff(t.Serving, t.Destination)) == 0
	var lost []int
	defer func() {
		if len(lost) > 0 {
			s.metrics.bucketsLost.Add(float64(len(lost)))
			s.log.Error("buckets lost every copy; recreated empty", "count", len(lost), "buckets", compactList(lost, 16))
		}
	}()
	for b := range t.Serving {
		if b >= len(t.Destination) {
			continue
		}
		row, dest := t.Serving[b], t.Destination[b]
		if len(dest) == 0 || slices.Equal(row, dest) {
			continue
		}
		if firstCopy(row) == "" {
			lost = append(lost, b)
			t.Serving[b] = slices.Clone(dest)
			continue
		}
		if done {
			if dest[0] != row[0] && (!alive(dest[0]) || slices.ContainsFunc(dest, func(a string) bool {
				return a != row[0] && t.IsBehind(row[0], a)
			})) {
				// Mastership passes only to a live, caught-up copy, and
				// only while no copy kept is behind the current master
				// (the mark would not follow the switch).
				continue
			}
			if dropsCaughtUp(t, row, dest, alive) {
				// Keep the extra copy until the copies kept catch up.
				continue
			}
			t.Serving[b] = slices.Clone(dest)
		}
	}
}

// markBehind keeps t.Behind true: a slave is behind its master while the
// master reports it unreachable (its backlog holds writes the slave has
// not applied), while it is away, and while its copy of a bucket of that
// master may be partial or differ: a full copy is on its way to it (the
// master's CopyingSlaves) or it waits for one (its own Diverged); such
// a copy, promoted, would lose writes acknowledged before the copy
// began. It is caught up again once both are
// alive, the master's latest heartbeat no longer reports it and, built
// on a table that carries the mark (since, the first version that did;
// committed is the last committed table), lists it among the slaves
// that acknowledged every write the master acknowledged without them
// (InSyncSlaves; a
// dataserver too old to send the list is taken at the absence of the
// report alone), and the slave's latest heartbeat comes from a table
// that carries the mark. Entries for pairs that no longer share a row
// are dropped.
//
// The positive report matters: a heartbeat built before the mark's table
// may come from a table in which sl was not this master's slave at all,
// and so say nothing of it, while the stream holds writes the master
// acknowledged without sl (one candidate for a chaos run in which a
// slave was taken for caught up while its master's stream to it still
// held 737 acknowledged writes).
//
// The slave's table matters for a master deposed while cut off: until
// it learns the table that made it a slave, it refuses the new master's
// stream, and a refused item leaves that master's backlog as an
// acknowledged one does, so the master stops reporting it; it would pass
// for caught up, and be made master again, without the writes it refused
// (and with those it applied alone before it was deposed, which it only
// finds out, and has copied again, once it applies that table). Seen in
// the chaos suite as a history that was not linearizable.
//
// A master acknowledges a write without a slave only while the table it
// holds says that slave is behind for the episode of unreachability the
// master is in (BehindEpoch, from the heartbeat's UnreachableEpochs): a
// mark kept from an earlier episode may be cleared on a heartbeat the
// master sent before the current one began, and is not relied on.
func (s *Server) markBehind(t, committed *route.Table, view map[string]nodeView, alive, away func(string) bool, since map[[2]string]route.Version) {
	slavesOf := map[string][]string{}
	for _, row := range t.Serving {
		if len(row) == 0 || row[0] == "" {
			continue
		}
		for _, sl := range row[1:] {
			if sl != "" && !slices.Contains(slavesOf[row[0]], sl) {
				slavesOf[row[0]] = append(slavesOf[row[0]], sl)
			}
		}
	}
	for _, m := range sortedKeys(t.Behind) {
		for _, sl := range slices.Clone(t.Behind[m]) {
			if !slices.Contains(slavesOf[m], sl) {
				t.SetBehind(m, sl, false)
			}
		}
	}
	// The version that first carries each mark: the committed one for a
	// mark it has, the next one for a mark set in this round (handOff,
	// or below).
	var cur route.Version
	if committed != nil {
		cur = committed.Version
	}
	firstCarrying := func(m, sl string) route.Version {
		if committed != nil && committed.IsBehind(m, sl) {
			return cur
		}
		return cur + 1
	}
	for _, m := range sortedKeys(slavesOf) {
		v := view[m]
		for _, sl := range slavesOf[m] {
			pair := [2]string{m, sl}
			reported := v.heard && slices.Contains(v.hb.UnreachableSlaves, sl)
			copying := v.heard && slices.Contains(v.hb.CopyingSlaves, sl) || divergedUnder(view[sl], t, m)
			switch {
			case reported || away(sl) || copying:
				if !t.IsBehind(m, sl) {
					s.log.Warn("slave behind its master: it will not be promoted until it catches up", "master", m, "slave", sl,
						"away", away(sl), "unreachable", reported, "copy_in_flight", copying)
					t.SetBehind(m, sl, true)
				}
				if reported {
					// The master relies on the mark only once the table
					// says it covers the episode it reports.
					t.SetBehindEpoch(m, sl, v.hb.UnreachableEpochs[sl])
				}
			case t.IsBehind(m, sl) && alive(sl) && alive(m) && v.heard:
				if _, ok := since[pair]; !ok {
					since[pair] = firstCarrying(m, sl)
				}
				if sv := view[sl]; !sv.heard || sv.hb.TableVersion < since[pair] {
					continue // the slave has not applied the mark's table yet
				}
				if v.hb.InSyncReported && (v.hb.TableVersion < since[pair] || !slices.Contains(v.hb.InSyncSlaves, sl)) {
					// Not yet the master's word, from a table that makes
					// sl its slave, that sl acknowledged all it was sent.
					continue
				}
				s.log.Info("slave caught up with its master", "master", m, "slave", sl,
					"master_heard", v.lastSeen.Format("15:04:05.000"), "master_table", v.hb.TableVersion,
					"master_unreachable", v.hb.UnreachableSlaves, "slave_table", view[sl].hb.TableVersion)
				t.SetBehind(m, sl, false)
			}
			if t.IsBehind(m, sl) {
				if _, ok := since[pair]; !ok {
					since[pair] = firstCarrying(m, sl)
				}
			} else {
				delete(since, pair)
			}
		}
	}
	for pair := range since {
		if !t.IsBehind(pair[0], pair[1]) {
			delete(since, pair)
		}
	}
}

// divergedUnder reports whether the slave of view sv holds a bucket of
// master m whose copy it reports diverged, waiting for a full copy.
func divergedUnder(sv nodeView, t *route.Table, m string) bool {
	if !sv.heard {
		return false
	}
	for _, b := range sv.hb.Diverged {
		if t.Contains(b) && t.Master(b) == m {
			return true
		}
	}
	return false
}

func (s *Server) isAlive(addr string) bool {
	view, _ := s.nodes.snapshot(time.Now(), s.cfg.downAfter())
	return view[addr].alive
}
