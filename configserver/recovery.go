package configserver

import (
	"slices"
	"sort"
	"time"

	"github.com/tairkv/tair/configserver/schedule"
	"github.com/tairkv/tair/internal/route"
)

// Recovery: a bucket with fewer caught-up live copies than the copy count
// is one more failure away from losing acknowledged writes, so restoring
// its copies comes before anything else the leader plans:
//
//   - recovery moves start before any rebalance move, buckets with the
//     fewest copies first, many at once (RecoveryMovesPerNode per source
//     and per destination, MaxMoves in all); placement spreads a node's
//     buckets over every other node (schedule.fill), so a lost node is
//     rebuilt from every survivor onto every survivor;
//   - a new copy planned on a node that is away (paused, cut off, within
//     its handoff window) goes to a live node instead (retarget): waiting
//     for the absent kept single-copy buckets single for as long as it
//     stayed away;
//   - the buckets an away node holds get one more copy on a live node
//     while it is away (reinforce), dropped once it is back and caught up
//     from its masters' backlog;
//   - the buckets below their copy count, and for how long, are exported
//     (metrics, /v1/migrations, tair ctl status), and a log line says when
//     the copy count is whole again and how long it took.

// copyCounts returns, per bucket, how many of its copies are caught up
// and on a live node: the master when alive, and its alive slaves that are
// not marked behind it.
func copyCounts(t *route.Table, alive func(string) bool) []int {
	out := make([]int, len(t.Serving))
	for b, row := range t.Serving {
		if len(row) == 0 || row[0] == "" {
			continue
		}
		n := 0
		for j, a := range row {
			if a == "" || !alive(a) || j > 0 && t.IsBehind(row[0], a) {
				continue
			}
			n++
		}
		out[b] = n
	}
	return out
}

// wantCopies is the copy count a bucket should have with live nodes alive.
func wantCopies(t *route.Table, live int) int {
	return min(t.Copies, live)
}

// underReplicated lists the buckets with fewer caught-up live copies than
// wantCopies.
func underReplicated(t *route.Table, alive func(string) bool, live int) []route.BucketID {
	want := wantCopies(t, live)
	var out []route.BucketID
	for b, n := range copyCounts(t, alive) {
		if n < want {
			out = append(out, route.BucketID(b))
		}
	}
	return out
}

// recoveryState is the leader's record of under-replicated buckets.
type recoveryState struct {
	// since is when each bucket went below its copy count (in this term).
	since map[route.BucketID]time.Time
	// episode is when the current episode began (zero: none).
	episode time.Time
	// retargeted are the away nodes whose planned copies went elsewhere;
	// the destination is rebuilt when one is back, to even the load out.
	retargeted map[string]bool
}

// RecoveryStatus is what the leader publishes of it (read by the APIs).
type RecoveryStatus struct {
	UnderReplicated int
	// Unavailable counts the buckets with no caught-up copy on a live
	// node: they wait for a node to come back (or to be removed, which
	// recreates them empty).
	Unavailable int
	// Oldest is how long the longest-waiting bucket has been below its
	// copy count.
	Oldest time.Duration
	// LastRestore is how long the last episode took, from the first
	// bucket below its copy count to the count whole again (0: none yet).
	LastRestore time.Duration
}

// trackRecovery updates the record from the committed table and
// publishes it. An episode is timed from the first bucket the leader sees
// below its copy count (after failure detection) to the count whole.
func (s *Server) trackRecovery(ls *leaderState, t *route.Table, alive func(string) bool, live int, now time.Time) {
	rs := &ls.recovery
	if rs.since == nil {
		rs.since = map[route.BucketID]time.Time{}
	}
	under := map[route.BucketID]bool{}
	unavailable := 0
	if t != nil {
		for _, n := range copyCounts(t, alive) {
			if n == 0 {
				unavailable++
			}
		}
		for _, b := range underReplicated(t, alive, live) {
			under[b] = true
			if _, ok := rs.since[b]; !ok {
				rs.since[b] = now
				if rs.episode.IsZero() {
					rs.episode = now
					s.log.Warn("buckets below their copy count; restoring", "table_version", t.Version)
				}
			}
		}
	}
	for b := range rs.since {
		if !under[b] {
			delete(rs.since, b)
		}
	}
	st := RecoveryStatus{UnderReplicated: len(rs.since), Unavailable: unavailable}
	prev := s.recovery.Load()
	if prev != nil {
		st.LastRestore = prev.LastRestore
	}
	if unavailable > 0 && (prev == nil || prev.Unavailable != unavailable) {
		s.log.Error("buckets without a caught-up copy on a live node: unavailable until one returns", "count", unavailable)
	}
	for _, at := range rs.since {
		st.Oldest = max(st.Oldest, now.Sub(at))
	}
	if len(rs.since) == 0 && !rs.episode.IsZero() {
		st.LastRestore = now.Sub(rs.episode)
		s.log.Info("copy count whole again", "took", st.LastRestore.Round(time.Millisecond), "table_version", t.Version)
		rs.episode = time.Time{}
	}
	s.recovery.Store(&st)
	s.metrics.underReplicated.Set(float64(st.UnderReplicated))
	s.metrics.unavailable.Set(float64(st.Unavailable))
	s.metrics.underReplicatedSeconds.Set(st.Oldest.Seconds())
	s.metrics.restoreSeconds.Set(st.LastRestore.Seconds())
}

// placer picks live nodes for new copies: the fewest copies in the
// destination first, then the fewest buckets shared with the row.
type placer struct {
	live   []string
	load   map[string]int
	shared map[[2]string]int
}

func newPlacer(t *route.Table, members []string, alive func(string) bool) *placer {
	p := &placer{load: map[string]int{}, shared: map[[2]string]int{}}
	for _, a := range members {
		if alive(a) {
			p.live = append(p.live, a)
		}
	}
	for _, row := range t.Destination {
		for i, a := range row {
			p.load[a]++
			for _, o := range row[i+1:] {
				p.shared[pairOf(a, o)]++
			}
		}
	}
	return p
}

// pick returns the live node for a new copy of a bucket whose serving row
// is row and destination dest ("" when every live node holds it), and
// counts it.
func (p *placer) pick(row, dest []string) string {
	best, bestShared := "", 0
	for _, c := range p.live {
		if slices.Contains(dest, c) || slices.Contains(row, c) {
			continue
		}
		sh := 0
		for _, o := range dest {
			sh += p.shared[pairOf(c, o)]
		}
		if best == "" || p.load[c] < p.load[best] || p.load[c] == p.load[best] && sh < bestShared {
			best, bestShared = c, sh
		}
	}
	if best != "" {
		p.load[best]++
		for _, o := range dest {
			p.shared[pairOf(best, o)]++
		}
	}
	return best
}

// retarget gives a live node each planned new copy of an under-replicated
// bucket whose destination is not alive (away within its handoff window):
// the rebuild does not wait for it. The away node, back, gets its share
// again by a rebuild (a rebalance, after the recovery).
func (s *Server) retarget(t *route.Table, members []string, alive func(string) bool, ls *leaderState) bool {
	if t.Destination == nil {
		return false
	}
	p := newPlacer(t, members, alive)
	changed := false
	for b, dest := range t.Destination {
		if b >= len(t.Serving) {
			break
		}
		serving := t.Serving[b]
		if firstCopy(serving) == "" || copiesIn(serving) >= len(dest) {
			continue // lost (installed as planned) or not below its count
		}
		for k, a := range dest {
			if alive(a) || slices.Contains(serving, a) {
				continue
			}
			best := p.pick(serving, dest)
			if best == "" {
				continue
			}
			dest = slices.Clone(dest)
			dest[k] = best
			t.Destination[b] = dest
			p.load[a]--
			if ls.recovery.retargeted == nil {
				ls.recovery.retargeted = map[string]bool{}
			}
			if !ls.recovery.retargeted[a] {
				s.log.Warn("new copies planned on an away node go to live nodes", "node", a)
			}
			ls.recovery.retargeted[a] = true
			changed = true
		}
	}
	return changed
}

// reinforce restores the copy count of the buckets that a node away
// within its handoff window leaves short: the away node keeps its copy
// (behind its master, which keeps the writes it misses in its backlog),
// and a live node gets one more copy by a recovery move, planned by
// appending it to the destination row. Handoff alone left such buckets
// with one caught-up copy for the whole window (30 s), and a second
// failure meanwhile lost the writes acknowledged since the first.
//
// An extra copy's node going away in turn gets the bucket another one.
// Once the away nodes are back and caught up (every copy the row keeps
// is), the appended copies leave the destination again and settle drops
// them from the serving row. A rebuild meanwhile plans from the serving
// rows, which hold them all.
func (s *Server) reinforce(t *route.Table, members []string, alive func(string) bool) bool {
	if t.Destination == nil {
		return false
	}
	p := newPlacer(t, members, alive)
	want := wantCopies(t, len(p.live))
	c := min(t.Copies, len(members))
	counts := copyCounts(t, alive)
	changed, added := false, 0
	for b, dest := range t.Destination {
		if b >= len(t.Serving) || len(dest) == 0 {
			break
		}
		row := t.Serving[b]
		if firstCopy(row) == "" {
			continue
		}
		if counts[b] >= want {
			// Whole. A reinforced row keeps its extra copies until every
			// copy the destination keeps is alive and caught up.
			if len(dest) > c && caughtUpAll(t, row, dest[:c], alive) {
				t.Destination[b] = slices.Clone(dest[:c])
				changed = true
			}
			continue
		}
		if !slices.ContainsFunc(row, func(a string) bool { return a != "" && !alive(a) }) {
			continue // short for another reason (holes: the plan fills them)
		}
		if slices.ContainsFunc(dest, func(a string) bool { return alive(a) && !slices.Contains(row, a) }) {
			continue // a new live copy is planned already
		}
		if to := p.pick(row, dest); to != "" {
			t.Destination[b] = append(slices.Clone(dest), to)
			changed = true
			added++
		}
	}
	if added > 0 {
		s.log.Warn("buckets short of copies while a node is away: one more copy each on live nodes", "buckets", added)
	}
	return changed
}

// caughtUpAll reports whether every node of keep holds a copy in row,
// alive and caught up with the row's master.
func caughtUpAll(t *route.Table, row, keep []string, alive func(string) bool) bool {
	for _, a := range keep {
		if !slices.Contains(row, a) || !alive(a) || a != row[0] && t.IsBehind(row[0], a) {
			return false
		}
	}
	return true
}

func pairOf(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// returned reports whether a node whose copies were retargeted is alive
// again (and forgets it): the destination is rebuilt to give it its share.
func (ls *leaderState) returned(alive func(string) bool) bool {
	back := false
	for a := range ls.recovery.retargeted {
		if alive(a) {
			delete(ls.recovery.retargeted, a)
			back = true
		}
	}
	return back
}

// startMoves starts planned moves. Moves that restore come first: recovery
// moves, and any move of a bucket short of caught-up live copies, those
// with the fewest first, at most RecoveryMovesPerNode per source and per
// destination; a planned copy from a node that is not alive is made from
// the live master instead. Rebalance moves only while no bucket is short
// (that a live copy could restore) and no recovery runs, at most
// MovesPerNode per source; MaxMoves in all, each bucket one move at a time.
func (s *Server) startMoves(t *route.Table, ls *leaderState, now time.Time, alive func(string) bool) {
	busy := map[route.BucketID]bool{}
	perSource, perDest := map[string]int{}, map[string]int{}
	recovering := false
	for _, mv := range t.Migrating {
		busy[mv.Bucket] = true
		perSource[mv.From]++
		perDest[mv.To]++
		recovering = recovering || isRecovery(t, mv)
	}
	for mv, until := range ls.failed {
		if now.After(until) {
			delete(ls.failed, mv)
		}
	}
	counts := copyCounts(t, alive)
	live := 0
	for _, a := range tableNodes(t) {
		if alive(a) {
			live++
		}
	}
	want := wantCopies(t, live)
	// A move restores when it is a recovery or its bucket is short of
	// caught-up live copies (a rebalance that adds a live copy to it).
	short := func(b route.BucketID) bool { return int(b) < len(counts) && counts[b] < want }
	for _, n := range counts {
		// A bucket short of copies that a live copy can restore holds
		// every rebalance back, even while its recovery cannot start yet.
		if n > 0 && n < want {
			recovering = true
		}
	}
	plan := schedule.Diff(t.Serving, t.Destination)
	sort.SliceStable(plan, func(i, j int) bool {
		ri, rj := plan[i].Recovery || short(plan[i].Bucket), plan[j].Recovery || short(plan[j].Bucket)
		if ri != rj {
			return ri
		}
		return ri && counts[plan[i].Bucket] < counts[plan[j].Bucket]
	})
	for _, p := range plan {
		if len(t.Migrating) >= s.cfg.MaxMoves {
			break
		}
		mv := p.Move
		if (!alive(mv.From) || behindSource(t, mv)) && int(mv.Bucket) < len(t.Serving) {
			// The copy to replace is on a node that is not alive (away),
			// or behind its master (it may lack acknowledged writes):
			// the live master copies it instead, keeping its own.
			if row := t.Serving[mv.Bucket]; len(row) > 0 && row[0] != "" && alive(row[0]) {
				mv.From, p.Recovery = row[0], true
			}
		}
		if busy[mv.Bucket] || !alive(mv.From) || !alive(mv.To) {
			continue
		}
		if _, ok := ls.failed[mv]; ok {
			continue
		}
		if p.Recovery || short(mv.Bucket) {
			if perSource[mv.From] >= s.cfg.RecoveryMovesPerNode || perDest[mv.To] >= s.cfg.RecoveryMovesPerNode {
				continue
			}
		} else if recovering || perSource[mv.From] >= s.cfg.MovesPerNode {
			continue
		}
		busy[mv.Bucket] = true
		perSource[mv.From]++
		perDest[mv.To]++
		t.Migrating = append(t.Migrating, mv)
		ls.started[mv] = now
		s.log.Info("move started", "bucket", mv.Bucket, "from", mv.From, "to", mv.To, "recovery", p.Recovery)
	}
}

// isRecovery reports whether a running move restores a copy (its source
// keeps its own).
func isRecovery(t *route.Table, mv route.Move) bool {
	return int(mv.Bucket) < len(t.Destination) && slices.Contains(t.Destination[mv.Bucket], mv.From)
}
