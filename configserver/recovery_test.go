package configserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

func quietServer() *Server {
	return &Server{cfg: DefaultConfig(), log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics()}
}

func newLeaderState() *leaderState {
	return &leaderState{started: map[route.Move]time.Time{}, failed: map[route.Move]time.Time{}}
}

func allAlive(string) bool { return true }

// TestStartMovesRecoveryFirst: recovery moves start before any rebalance,
// buckets with the fewest copies first; a rebalance waits while any
// recovery runs; one move per bucket.
func TestStartMovesRecoveryFirst(t *testing.T) {
	s := quietServer()
	s.cfg.MaxMoves = 1
	tb := &route.Table{
		Buckets: 4, Copies: 3,
		Serving: [][]string{
			{"a", "b", "c"},  // rebalance: c's copy to d
			{"b", "c", ""},   // two copies: one to restore
			{"c", "", ""},    // one copy: two to restore, first
			{"a", "b", "c"}}, // settled
		Destination: [][]string{{"a", "b", "d"}, {"b", "c", "d"}, {"c", "a", "d"}, {"a", "b", "c"}},
	}
	ls := newLeaderState()
	s.startMoves(tb, ls, time.Now(), allAlive)
	if want := []route.Move{{Bucket: 2, From: "c", To: "a"}}; !slices.Equal(tb.Migrating, want) {
		t.Fatalf("started %v, want %v (the bucket with one copy first)", tb.Migrating, want)
	}
	s.cfg.MaxMoves = 64
	s.startMoves(tb, ls, time.Now(), allAlive)
	want := []route.Move{{Bucket: 2, From: "c", To: "a"}, {Bucket: 1, From: "b", To: "d"}}
	if !slices.Equal(tb.Migrating, want) {
		t.Fatalf("started %v, want %v (no rebalance while recovering)", tb.Migrating, want)
	}
	// The recoveries finish: bucket 2 still lacks a copy (d), then the
	// rebalance may start.
	tb.Serving[1], tb.Serving[2] = []string{"b", "c", "d"}, []string{"c", "a", ""}
	tb.Migrating = nil
	s.startMoves(tb, ls, time.Now(), allAlive)
	if want := []route.Move{{Bucket: 2, From: "c", To: "d"}}; !slices.Equal(tb.Migrating, want) {
		t.Fatalf("started %v, want %v", tb.Migrating, want)
	}
	tb.Serving[2] = []string{"c", "a", "d"}
	tb.Migrating = nil
	s.startMoves(tb, ls, time.Now(), allAlive)
	if want := []route.Move{{Bucket: 0, From: "c", To: "d"}}; !slices.Equal(tb.Migrating, want) {
		t.Fatalf("started %v, want %v (the rebalance once whole)", tb.Migrating, want)
	}
}

// TestStartMovesRecoveryLimits: recovery runs many moves at once, at most
// RecoveryMovesPerNode per source and per destination.
func TestStartMovesRecoveryLimits(t *testing.T) {
	s := quietServer()
	s.cfg.RecoveryMovesPerNode = 2
	var serving, dest [][]string
	// Buckets 0-5: a's only copy to b..g; 6-11: b..g's only copy to h.
	for i, to := range []string{"b", "c", "d", "e", "f", "g"} {
		_ = i
		serving = append(serving, []string{"a", ""})
		dest = append(dest, []string{"a", to})
	}
	for _, from := range []string{"b", "c", "d", "e", "f", "g"} {
		serving = append(serving, []string{from, ""})
		dest = append(dest, []string{from, "h"})
	}
	tb := &route.Table{Buckets: uint32(len(serving)), Copies: 2, Serving: serving, Destination: dest}
	s.startMoves(tb, newLeaderState(), time.Now(), allAlive)
	from, to := map[string]int{}, map[string]int{}
	for _, mv := range tb.Migrating {
		from[mv.From]++
		to[mv.To]++
	}
	if from["a"] != 2 || to["h"] != 2 {
		t.Fatalf("started %v: %d from a, %d to h, want 2 each", tb.Migrating, from["a"], to["h"])
	}
	if len(tb.Migrating) != 4 {
		t.Fatalf("started %d moves, want 4: %v", len(tb.Migrating), tb.Migrating)
	}
}

// TestRetargetAwayDestination: a new copy planned on a node that is away
// goes to the live node with the fewest copies; a rebalance to it, and
// copies it holds, wait for it.
func TestRetargetAwayDestination(t *testing.T) {
	s := quietServer()
	tb := &route.Table{
		Buckets: 4, Copies: 2,
		Serving: [][]string{
			{"a", ""},   // lost its copy on x: planned again on x
			{"b", ""},   // planned on c
			{"a", "b"},  // rebalance to x: waits
			{"c", "x"}}, // x holds it (handoff): stays
		Destination: [][]string{{"a", "x"}, {"b", "c"}, {"a", "x"}, {"c", "x"}},
	}
	alive := func(a string) bool { return a != "x" }
	ls := newLeaderState()
	if !s.retarget(tb, []string{"a", "b", "c", "x"}, alive, ls) {
		t.Fatal("nothing retargeted")
	}
	// a, b and c hold 2, 1 and 2 copies in the destination: b, the live
	// node with the fewest.
	want := [][]string{{"a", "b"}, {"b", "c"}, {"a", "x"}, {"c", "x"}}
	if !rowsEqual(tb.Destination, want) {
		t.Fatalf("destination %v, want %v", tb.Destination, want)
	}
	if !ls.recovery.retargeted["x"] {
		t.Fatal("x not recorded as retargeted")
	}
	if ls.returned(alive) {
		t.Fatal("x counted back while away")
	}
	if !ls.returned(allAlive) || ls.returned(allAlive) {
		t.Fatal("x back: one rebuild wanted")
	}
}

// TestRecoveryRestoresInParallel: a lost node's buckets are restored by
// moves from every survivor running at once; the copy count is whole
// again with the time it took exported and logged.
func TestRecoveryRestoresInParallel(t *testing.T) {
	cfg := testConfig()
	cfg.Buckets = 256
	cfg.RecoveryMovesPerNode = 4
	logs := &testutil.LogBuffer{}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.MultiWriter(logs, tWriter{t}), nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	waitLeader(t, s, 5*time.Second)
	dss, first := joinAll(t, s, 4)
	carryOutMoves(dss)
	victim := dsAddrs[3]
	shared := map[string]int{}
	for _, row := range first.Serving {
		if slices.Contains(row, victim) {
			for _, a := range row {
				if a != victim {
					shared[a]++
				}
			}
		}
	}
	if len(shared) != 3 {
		t.Fatalf("the victim shares buckets with %d nodes, want all 3: %v", len(shared), shared)
	}
	dss[3].stop()

	maxRunning, sources := 0, map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for {
		tb := s.Table()
		maxRunning = max(maxRunning, len(tb.Migrating))
		for _, mv := range tb.Migrating {
			sources[mv.From] = true
		}
		whole := !slices.Contains(tb.Nodes(), victim) && len(tb.Migrating) == 0
		for _, row := range tb.Serving {
			whole = whole && copiesIn(row) == 2
		}
		if whole && s.recovery.Load() != nil && s.recovery.Load().UnderReplicated == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("copy count not restored: table %d, %d moves running, %d pending", tb.Version, len(tb.Migrating), len(pendingMoves(tb)))
		}
		time.Sleep(2 * time.Millisecond)
	}
	if len(sources) != 3 || maxRunning < 6 {
		t.Fatalf("restored from %d sources with at most %d moves at once; want 3 and at least 6", len(sources), maxRunning)
	}
	metrics := get(t, "http://"+s.HTTPAddr()+"/metrics")
	for _, want := range []string{"tair_configserver_buckets_under_replicated 0\n", "tair_configserver_buckets_lost_total 0\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	var ms wire.MigrationStatus
	if err := wire.NewClient(s.Addr()).Get(context.Background(), "/v1/migrations", &ms); err != nil {
		t.Fatal(err)
	}
	if ms.UnderReplicated != 0 || ms.LastRestoreSeconds <= 0 {
		t.Errorf("/v1/migrations: %d under-replicated, last restore %vs; want 0 and > 0", ms.UnderReplicated, ms.LastRestoreSeconds)
	}
	testutil.Eventually(t, 2*time.Second, func() bool { return strings.Contains(logs.String(), "copy count whole again") },
		"no log line says the copy count is whole again")
}

// TestRebuildDoesNotWaitForAwayNode: a node restarts without its data,
// so its copies are rebuilt onto it; it is then paused (away, within its
// handoff window): the single-copy buckets' new copies go to live nodes
// instead of waiting for it, and once it is back it gets its share again.
func TestRebuildDoesNotWaitForAwayNode(t *testing.T) {
	s, dss, _ := handoffCluster(t)
	a := dss[0]
	// A restarts empty: its copies are lost and planned on it again.
	a.stop()
	a.mu.Lock()
	a.hb.Incarnation++
	a.mu.Unlock()
	a.start()
	waitTable(t, s, 5*time.Second, func(tb *route.Table) bool {
		n := 0
		for _, mv := range tb.Migrating {
			if mv.To == a.hb.Addr {
				n++
			}
		}
		return n > 0
	}, "moves to the restarted node")
	// A pauses before any finished; once it is judged away, its moves
	// end.
	a.stop()
	waitTable(t, s, 5*time.Second, func(tb *route.Table) bool {
		return !slices.ContainsFunc(tb.Migrating, func(mv route.Move) bool { return mv.To == a.hb.Addr })
	}, "no move to the away node")
	carryOutMoves(dss[1:])
	start := time.Now()
	tb := waitTable(t, s, 10*time.Second, func(tb *route.Table) bool {
		if len(tb.Migrating) > 0 {
			return false
		}
		for _, row := range tb.Serving {
			n := 0
			for _, x := range row {
				if x != "" && x != a.hb.Addr {
					n++
				}
			}
			if n < 2 {
				return false
			}
		}
		return true
	}, "every bucket with two copies on live nodes while A is away")
	t.Logf("restored in %v while A was away (table %d)", time.Since(start).Round(time.Millisecond), tb.Version)
	if st := s.recovery.Load(); st == nil || st.UnderReplicated != 0 {
		t.Fatalf("recovery status %+v, want 0 under-replicated", st)
	}
	// A is back: the destination is rebuilt and A gets its share again.
	a.migrate.Store(true)
	a.start()
	tb = waitTable(t, s, 15*time.Second, func(tb *route.Table) bool {
		held := 0
		for _, row := range tb.Serving {
			if slices.Contains(row, a.hb.Addr) {
				held++
			}
		}
		return held >= int(s.cfg.Buckets)*2/4-1 && len(tb.Migrating) == 0
	}, "A holding its share again")
	checkBalanced(t, tb, dsAddrs[:4])
}

// TestTwoNodesLostAtOnce: two of four nodes die at the same instant; only
// the buckets they shared have no live copy (reported by count, waiting
// for a node to return), every other bucket gets its copy count back; when
// the operator removes the dead nodes, exactly those buckets are
// recreated empty and counted as lost.
func TestTwoNodesLostAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.Buckets = 256
	s := startLeader(t, cfg)
	dss, first := joinAll(t, s, 4)
	carryOutMoves(dss)
	x, y := dsAddrs[1], dsAddrs[2]
	shared := 0
	for _, row := range first.Serving {
		if slices.Contains(row, x) && slices.Contains(row, y) {
			shared++
		}
	}
	// Spread placement: 256 buckets x 2 copies over 4 nodes, so each two
	// nodes share about 256/6.
	if shared < 35 || shared > 50 {
		t.Fatalf("%s and %s share %d buckets, want about 43", x, y, shared)
	}
	dss[1].stop()
	dss[2].stop()
	// (The moves planned from the dead nodes wait for them.)
	waitRecovery(t, s, 20*time.Second, func(st RecoveryStatus) bool {
		return st.Unavailable == shared && st.UnderReplicated == shared && len(s.Table().Migrating) == 0
	}, "want %d buckets unavailable and nothing else under-replicated", shared)
	metrics := get(t, "http://"+s.HTTPAddr()+"/metrics")
	for _, want := range []string{
		fmt.Sprintf("tair_configserver_buckets_unavailable %d\n", shared),
		"tair_configserver_buckets_lost_total 0\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, a := range []string{x, y} {
		if r := admin(t, s, wire.AdminRequest{Op: "node-remove", Node: a}); !r.OK {
			t.Fatalf("remove %s: %+v", a, r)
		}
	}
	waitRecovery(t, s, 20*time.Second, func(st RecoveryStatus) bool {
		return st.UnderReplicated == 0 && st.Unavailable == 0
	}, "copy count never whole after removing the dead nodes")
	metrics = get(t, "http://"+s.HTTPAddr()+"/metrics")
	if want := fmt.Sprintf("tair_configserver_buckets_lost_total %d\n", shared); !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %q", want)
	}
}

// TestAwayNodeBucketsReinforced: a node away within its handoff window
// keeps its rows (behind its masters), and each of its buckets gets one
// more copy on a live node, so the copy count is whole while it is away;
// once it is back and caught up, the extra copies are dropped and it
// serves its rows as before, without a move to it.
func TestAwayNodeBucketsReinforced(t *testing.T) {
	s, dss, first := handoffCluster(t)
	carryOutMoves(dss)
	victim := dss[2]
	v := victim.hb.Addr
	var held []int
	for b, row := range first.Serving {
		if slices.Contains(row, v) {
			held = append(held, b)
		}
	}
	victim.stop()
	var movedTo []string
	tb := waitTable(t, s, 10*time.Second, func(tb *route.Table) bool {
		for _, mv := range tb.Migrating {
			movedTo = append(movedTo, mv.To)
		}
		if len(tb.Migrating) > 0 {
			return false
		}
		for _, b := range held {
			row := tb.Serving[b]
			if len(row) != 3 || !slices.Contains(row, v) || row[0] == v {
				return false
			}
		}
		return true
	}, "every bucket of the away node with two more copies")
	if slices.Contains(movedTo, v) {
		t.Fatalf("a move went to the away node")
	}
	st := waitRecovery(t, s, 5*time.Second, func(st RecoveryStatus) bool {
		return st.UnderReplicated == 0
	}, "copy count not whole while the node is away")
	t.Logf("table %d: %d buckets reinforced, copy count whole in %v", tb.Version, len(held), st.LastRestore)

	victim.start()
	tb = waitTable(t, s, 10*time.Second, func(tb *route.Table) bool {
		if len(tb.Behind) > 0 || len(tb.Migrating) > 0 {
			return false
		}
		for _, row := range tb.Serving {
			if len(row) != 2 {
				return false
			}
		}
		for _, b := range held {
			if !slices.Contains(tb.Serving[b], v) {
				return false
			}
		}
		return true
	}, "the extra copies dropped once the node is back")
	checkBalanced(t, tb, dsAddrs[:4])
}

// TestAwayPartnersInTurn: a node away, then one of the nodes holding the
// extra copies of its buckets away too: the buckets short again get
// another copy on a live node, so every bucket has two caught-up live
// copies again while both are away.
func TestAwayPartnersInTurn(t *testing.T) {
	s, dss, _ := handoffCluster(t)
	carryOutMoves(dss)
	whole := func(tb *route.Table, gone ...string) bool {
		if len(tb.Migrating) > 0 {
			return false
		}
		for _, row := range tb.Serving {
			n := 0
			for j, a := range row {
				if a != "" && !slices.Contains(gone, a) && (j == 0 || !tb.IsBehind(row[0], a)) {
					n++
				}
			}
			if n < 2 || slices.Contains(gone, row[0]) {
				return false
			}
		}
		return true
	}
	a, b := dss[3].hb.Addr, dss[1].hb.Addr
	dss[3].stop()
	waitTable(t, s, 10*time.Second, func(tb *route.Table) bool { return whole(tb, a) }, "whole with A away")
	dss[1].stop()
	tb := waitTable(t, s, 10*time.Second, func(tb *route.Table) bool { return whole(tb, a, b) }, "whole with A and B away")
	waitRecovery(t, s, 5*time.Second, func(st RecoveryStatus) bool {
		return st.UnderReplicated == 0
	}, "under-replicated buckets reported with A and B away")
	t.Logf("table %d: whole with two of four nodes away", tb.Version)
}

// TestRestartedNodeKnownOnlyOnceStripped: every table names the
// incarnations it was built for; after a restart without data, the first
// table naming the new incarnation no longer gives the node its old rows
// (a dataserver serves only from a table naming its own incarnation).
func TestRestartedNodeKnownOnlyOnceStripped(t *testing.T) {
	s := startLeader(t, testConfig())
	dss, _ := joinFakes(t, s, 3)
	first := waitTable(t, s, 5*time.Second, func(tb *route.Table) bool { return len(tb.Incarnations) == 3 }, "3 incarnations")
	d := dss[1]
	addr := d.hb.Addr
	if first.Incarnations[addr] != d.hb.Incarnation || !slices.Contains(first.Nodes(), addr) {
		t.Fatalf("table %d names %v for %s (incarnation %d)", first.Version, first.Incarnations, addr, d.hb.Incarnation)
	}
	d.mu.Lock()
	d.hb.Incarnation++
	inc := d.hb.Incarnation
	d.mu.Unlock()
	tb := waitTable(t, s, 5*time.Second, func(tb *route.Table) bool { return tb.Incarnations[addr] == inc }, "the new incarnation")
	for b, row := range tb.Serving {
		if slices.Contains(row, addr) {
			t.Fatalf("table %d names incarnation %d of %s and still gives it bucket %d: %v", tb.Version, inc, addr, b, row)
		}
	}
}

// TestHandOffDropsSlavesBehindTheOldMaster: the master of a row goes
// away while another slave is behind it (it came back from being cut off
// and its backlog had not reached it): the caught-up slave takes over,
// the away master stays behind it, and the slave behind the old master
// leaves the row (its copy is rebuilt) instead of passing for caught up
// with the new master. Settle does not switch a master while a copy kept
// is behind the current one.
func TestHandOffDropsSlavesBehindTheOldMaster(t *testing.T) {
	tb := &route.Table{
		Buckets: 1, Copies: 3,
		Serving: [][]string{{"a", "b", "c"}},
		Behind:  map[string][]string{"a": {"b"}},
	}
	alive := func(n string) bool { return n != "a" }
	handOff(tb, "a", alive)
	if want := [][]string{{"c", "", "a"}}; !rowsEqual(tb.Serving, want) || !tb.IsBehind("c", "a") {
		t.Fatalf("serving %v behind %v, want %v with a behind c", tb.Serving, tb.Behind, want)
	}

	s := quietServer()
	tb = &route.Table{
		Buckets: 1, Copies: 3,
		Serving:     [][]string{{"a", "b", "c"}},
		Destination: [][]string{{"c", "b", "a"}},
		Behind:      map[string][]string{"a": {"b"}},
	}
	s.settle(tb, allAlive)
	if want := [][]string{{"a", "b", "c"}}; !rowsEqual(tb.Serving, want) {
		t.Fatalf("serving %v: the master switched while b is behind it", tb.Serving)
	}
	tb.Behind = nil
	s.settle(tb, allAlive)
	if want := [][]string{{"c", "b", "a"}}; !rowsEqual(tb.Serving, want) {
		t.Fatalf("serving %v, want %v once b caught up", tb.Serving, want)
	}
}

// handoffCluster starts a leader whose down nodes keep their rows for a
// minute (the handoff window), with four fake dataservers in its table.
func handoffCluster(t *testing.T) (*Server, []*fakeDS, *route.Table) {
	t.Helper()
	cfg := testConfig()
	cfg.HandoffWindow = time.Minute
	s := startLeader(t, cfg)
	dss, first := joinAll(t, s, 4)
	return s, dss, first
}

// waitRecovery waits for a recovery status of s satisfying cond (a zero
// one until the leader publishes its first) and returns it.
func waitRecovery(t *testing.T, s *Server, within time.Duration, cond func(RecoveryStatus) bool, what string, args ...any) RecoveryStatus {
	t.Helper()
	var st RecoveryStatus
	testutil.Eventually(t, within, func() bool {
		if p := s.recovery.Load(); p != nil {
			st = *p
		}
		return cond(st)
	}, what, args...)
	return st
}
