package configserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// TestFailover: a dead master's buckets get a promoted slave in the next
// table; the lost copies are then rebuilt from the masters by recovery
// moves, and the moves' Done reports switch the table.
func TestFailover(t *testing.T) {
	s := startLeader(t, testConfig())
	dss, first := joinFakes(t, s, 3)
	dead := dsAddrs[2]
	dss[2].stop()

	// The next version strips the dead node: every bucket keeps a master,
	// which is the old slave where the dead node was master.
	promoted := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return tb.Version > first.Version }, "a newer version")
	if promoted.Version != first.Version+1 {
		t.Fatalf("version %d after failure, want %d", promoted.Version, first.Version+1)
	}
	for b, row := range promoted.Serving {
		old := first.Serving[b]
		switch {
		case slices.Contains(row, dead):
			t.Fatalf("bucket %d still on the dead node: %v", b, row)
		case old[0] == dead && row[0] != old[1]:
			t.Fatalf("bucket %d: master %s, want promoted slave %s (was %v)", b, row[0], old[1], old)
		case old[0] != dead && row[0] != old[0]:
			t.Fatalf("bucket %d: master changed %v -> %v", b, old, row)
		}
	}
	// Recovery moves copy from the bucket's master to the other survivor.
	if len(promoted.Migrating) == 0 {
		t.Fatal("no recovery moves planned")
	}
	perSource := map[string]int{}
	for _, mv := range promoted.Migrating {
		row := promoted.Serving[mv.Bucket]
		if mv.From != row[0] || slices.Contains(row, mv.To) || mv.To == dead {
			t.Fatalf("move %+v for row %v", mv, row)
		}
		perSource[mv.From]++
	}
	for src, n := range perSource {
		if lim := testConfig().RecoveryMovesPerNode; n > lim {
			t.Fatalf("%d moves from %s at once, limit %d", n, src, lim)
		}
	}

	carryOutMoves(dss[:2])
	final := waitTable(t, s, 20*time.Second, settled, "all moves done")
	checkBalanced(t, final, dsAddrs[:2])
	lost := 0
	for _, row := range first.Serving {
		if slices.Contains(row, dead) {
			lost++
		}
	}
	// The table may be seen (through the watch) a moment before the
	// leader's counters: poll.
	var ms wire.MigrationStatus
	testutil.Eventually(t, 2*time.Second, func() bool {
		if err := wire.NewClient(s.Addr()).Get(context.Background(), "/v1/migrations", &ms); err != nil {
			t.Fatal(err)
		}
		return ms.Completed == lost && ms.Total == lost && len(ms.Pending) == 0 && len(ms.Running) == 0
	}, "migrations %+v, want %d completed", &ms, lost)
}

// TestJoinMigrates: a node joining a built cluster gets its buckets
// through moves; the old nodes keep serving until each move is done.
func TestJoinMigrates(t *testing.T) {
	s := startLeader(t, testConfig())
	dss, first := joinFakes(t, s, 2)
	newcomer := dsAddrs[2]
	dss = append(dss, newFakeDS(t, newcomer, s.Addr()))
	plan := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return len(tb.Migrating) > 0 }, "moves")
	if !rowsEqual(plan.Serving, first.Serving) {
		t.Fatal("joining changed the serving table before any move finished")
	}
	for _, mv := range plan.Migrating {
		if mv.To != newcomer || !slices.Contains(plan.Serving[mv.Bucket], mv.From) {
			t.Fatalf("move %+v", mv)
		}
	}
	moves := len(schedule_Diff(plan))
	// 64 buckets x 2 copies over 3 nodes: the newcomer takes 42 or 43.
	if moves != 42 && moves != 43 {
		t.Fatalf("%d moves planned, want 42 or 43", moves)
	}
	// One Done report switches exactly that bucket.
	dss[0].migrate.Store(true)
	mv := plan.Migrating[0]
	if mv.From != dsAddrs[0] {
		mv = plan.Migrating[1]
	}
	next := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool {
		return slices.Contains(tb.Serving[mv.Bucket], newcomer)
	}, "bucket moved")
	old := plan.Serving[mv.Bucket]
	want := slices.Clone(old)
	want[slices.Index(old, mv.From)] = newcomer
	if got := next.Serving[mv.Bucket]; !slices.Equal(got, want) && !slices.Equal(got, []string{want[1], want[0]}) {
		t.Fatalf("bucket %d: %v -> %v, want %v", mv.Bucket, old, got, want)
	}
	dss[1].migrate.Store(true)
	final := waitTable(t, s, 20*time.Second, settled, "all moves done")
	checkBalanced(t, final, dsAddrs[:3])
	moved := 0
	for b := range final.Serving {
		for _, a := range final.Serving[b] {
			if !slices.Contains(first.Serving[b], a) {
				moved++
			}
		}
	}
	if moved != moves {
		t.Fatalf("%d copies moved, planned %d", moved, moves)
	}
}

func schedule_Diff(tb *route.Table) []route.Move {
	return append(pendingMoves(tb), tb.Migrating...)
}

// TestLastCopyWaitsForItsNode: with one copy, a down node keeps its
// buckets (unavailable, not emptied) until it comes back with its data.
func TestLastCopyWaitsForItsNode(t *testing.T) {
	cfg := testConfig()
	cfg.Copies = 1
	s := startLeader(t, cfg)
	dss, first := joinFakes(t, s, 2)
	b := dsAddrs[1]
	dss[1].stop()
	time.Sleep(cfg.downAfter() + 5*testInterval)
	down := s.Table()
	if !rowsEqual(down.Serving, first.Serving) {
		t.Fatal("serving changed although no bucket had a second copy")
	}
	for _, mv := range down.Migrating {
		if mv.From == b {
			t.Fatalf("move %+v started from a down node", mv)
		}
	}
	dss[1].start()
	back := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool {
		return len(tb.Migrating) == 0 && len(pendingMoves(tb)) == 0 && tb.Version > down.Version
	}, "node back, nothing to move")
	if !rowsEqual(back.Serving, first.Serving) {
		t.Fatal("serving changed when the node came back")
	}

	// Restart without data: b's buckets are lost and recreated empty where
	// the destination puts them, which (balanced) is b again; nothing to move.
	dss[1].mu.Lock()
	dss[1].hb.Incarnation++
	dss[1].mu.Unlock()
	time.Sleep(5 * testInterval)
	after := s.Table()
	checkBalanced(t, after, dsAddrs[:2])
	if len(after.Migrating) != 0 || len(pendingMoves(after)) != 0 {
		t.Fatalf("moves after a data-losing restart with one copy: %v", after.Migrating)
	}
}

// TestHandOffWindow: a node down for less than the handoff window gives
// its master slots to caught-up slaves but keeps its rows, behind their
// masters; nothing is copied to or from it (its buckets get one more copy
// on a live node meanwhile: TestAwayNodeBucketsReinforced); back in time,
// it is caught up, the extra copies are dropped and no move runs. A slave
// its master reports unreachable is behind too, and a master then down is
// not replaced by it.
func TestHandOffWindow(t *testing.T) {
	cfg := testConfig()
	cfg.HandoffWindow = 10 * time.Second
	s := startLeader(t, cfg)
	dss := startFakes(t, dsAddrs[:3], s.Addr())
	first := waitTable(t, s, 5*time.Second, settled, "settled")
	away := dsAddrs[2]
	dss[2].stop()
	down := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return tb.Version > first.Version }, "a newer version")
	for b, row := range down.Serving {
		old := first.Serving[b]
		if !slices.Contains(old, away) {
			// Masters may be reordered for balance; no copy moves.
			if !sameSet(row, old) {
				t.Fatalf("bucket %d changed %v -> %v", b, old, row)
			}
			continue
		}
		if row[0] == away || !slices.Contains(row, away) || !down.IsBehind(row[0], away) {
			t.Fatalf("bucket %d: %v -> %v, behind %v: want %s kept as a slave behind the master", b, old, row, down.Behind, away)
		}
	}
	// The only moves are recovery copies between live nodes (this
	// fake never completes them).
	onlyLive := func(tb *route.Table) {
		t.Helper()
		for _, mv := range tb.Migrating {
			if mv.From == away || mv.To == away || !isRecovery(tb, mv) {
				t.Fatalf("move %v while %s is away", mv, away)
			}
		}
	}
	onlyLive(down)
	time.Sleep(5 * testInterval)
	mid := s.Table()
	onlyLive(mid)
	if !slices.EqualFunc(mid.Serving, down.Serving, sameSet) {
		t.Fatalf("serving rows changed while the node is away: %v", mid.Serving)
	}
	dss[2].start()
	back := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool {
		return len(tb.Behind) == 0 && len(tb.Migrating) == 0 && len(pendingMoves(tb)) == 0
	}, "caught up, the extra copies no longer planned")
	if !slices.EqualFunc(back.Serving, first.Serving, sameSet) {
		t.Fatalf("rows changed after the node came back within the window: %v", back.Serving)
	}

	// The master of some bucket reports its slave unreachable: the slave
	// is behind; then the master dies: that bucket keeps its dead master
	// rather than promote the slave that lacks acknowledged writes.
	var b route.BucketID
	for b = 0; back.Contains(b); b++ {
		if back.Serving[b][0] == dsAddrs[0] && back.Serving[b][1] == dsAddrs[1] {
			break
		}
	}
	if !back.Contains(b) {
		t.Fatalf("no bucket with master %s and slave %s: %v", dsAddrs[0], dsAddrs[1], back.Serving)
	}
	dss[0].mu.Lock()
	dss[0].hb.UnreachableSlaves = []string{dsAddrs[1]}
	dss[0].hb.UnreachableEpochs = map[string]uint64{dsAddrs[1]: 41}
	dss[0].mu.Unlock()
	waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return tb.BehindCovers(dsAddrs[0], dsAddrs[1], 41) }, "slave reported behind")
	// A newer episode of the same slave is recorded with the mark: the
	// master relies on the mark only for the episode it covers.
	dss[0].mu.Lock()
	dss[0].hb.UnreachableEpochs = map[string]uint64{dsAddrs[1]: 42}
	dss[0].mu.Unlock()
	behind := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return tb.BehindCovers(dsAddrs[0], dsAddrs[1], 42) }, "newer episode recorded")
	dss[0].stop()
	after := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return tb.Version > behind.Version && tb.Serving[b][0] != "" }, "failover")
	time.Sleep(5 * testInterval)
	after = s.Table()
	if got := after.Serving[b]; got[0] != dsAddrs[0] {
		t.Fatalf("bucket %d %v: a slave behind its dead master was promoted", b, got)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
