package configserver

import (
	"slices"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

func TestStripPromotes(t *testing.T) {
	tb := &route.Table{
		Buckets:     3,
		Serving:     [][]string{{"a", "b"}, {"b", "a"}, {"a", ""}},
		Destination: [][]string{{"a", "b"}, {"b", "c"}, {"a", "c"}},
		Migrating:   []route.Move{{Bucket: 1, From: "a", To: "c"}, {Bucket: 2, From: "a", To: "c"}},
	}
	all := func(string) bool { return true }
	if !strip(tb, "a", true, all) {
		t.Fatal("strip changed nothing")
	}
	want := [][]string{{"b", ""}, {"b", ""}, {"a", ""}} // bucket 2's last copy stays
	if !rowsEqual(tb.Serving, want) || len(tb.Migrating) != 0 {
		t.Fatalf("serving %v moves %v, want %v and none", tb.Serving, tb.Migrating, want)
	}
	if !rowsEqual(tb.Destination, [][]string{{"b"}, {"b", "c"}, {"c"}}) {
		t.Fatalf("destination %v", tb.Destination)
	}
	strip(tb, "a", false, all)
	if !slices.Equal(tb.Serving[2], []string{"", ""}) {
		t.Fatalf("bucket 2 = %v, want lost", tb.Serving[2])
	}
}

// Only a caught-up, live slave is promoted: one behind the dead master
// (it lacks writes the master acknowledged) or dead itself is not, and
// a bucket with no such slave stays on its master, unavailable, rather
// than lose acknowledged writes. A slave behind the dead master does not
// stay beside the promoted one either (bucket 0's b): it would pass for
// caught up with the new master, which has the writes it lacks; its copy
// is rebuilt.
func TestStripPromotesOnlyCaughtUp(t *testing.T) {
	tb := &route.Table{
		Buckets: 3,
		Serving: [][]string{{"a", "b", "c"}, {"a", "b", ""}, {"a", "d", "c"}},
		Behind:  map[string][]string{"a": {"b"}},
	}
	alive := func(n string) bool { return n != "a" && n != "d" }
	strip(tb, "a", true, alive)
	want := [][]string{{"c", "", ""}, {"a", "b", ""}, {"c", "d", ""}}
	if !rowsEqual(tb.Serving, want) {
		t.Fatalf("serving %v, want %v", tb.Serving, want)
	}
}

// Within the handoff window a down node leaves only its master slots
// (to caught-up slaves) and stays, behind the master, in every row.
func TestHandOff(t *testing.T) {
	tb := &route.Table{
		Buckets:   3,
		Serving:   [][]string{{"a", "b"}, {"b", "a"}, {"a", "c"}},
		Migrating: []route.Move{{Bucket: 1, From: "b", To: "a"}},
		Behind:    map[string][]string{"a": {"c"}},
	}
	alive := func(n string) bool { return n != "a" }
	if !handOff(tb, "a", alive) {
		t.Fatal("handOff changed nothing")
	}
	want := [][]string{{"b", "a"}, {"b", "a"}, {"a", "c"}} // c is behind a: bucket 2 waits
	if !rowsEqual(tb.Serving, want) || len(tb.Migrating) != 0 {
		t.Fatalf("serving %v moves %v, want %v and none", tb.Serving, tb.Migrating, want)
	}
	if !tb.IsBehind("b", "a") || !tb.IsBehind("a", "c") {
		t.Fatalf("behind %v", tb.Behind)
	}
	if handOff(tb, "a", alive) {
		t.Fatal("a second handOff changed the table again")
	}
}

func TestApplyDone(t *testing.T) {
	tb := &route.Table{
		Buckets:     3,
		Serving:     [][]string{{"a", "b"}, {"a", ""}, {"a", "b"}},
		Destination: [][]string{{"c", "b"}, {"a", "c"}, {"a", "c"}},
	}
	applyDone(tb, route.Move{Bucket: 0, From: "a", To: "c"}) // master moves: c is master
	applyDone(tb, route.Move{Bucket: 1, From: "a", To: "c"}) // recovery fills the hole
	applyDone(tb, route.Move{Bucket: 2, From: "b", To: "c"}) // slave moves
	want := [][]string{{"c", "b"}, {"a", "c"}, {"a", "c"}}
	if !rowsEqual(tb.Serving, want) {
		t.Fatalf("serving %v, want %v", tb.Serving, want)
	}
}

// TestApplyDoneMasterMoveDropsBehindSlaves: when a master's copy moves,
// its slaves marked behind it lose their slots (to be rebuilt from the new
// master): the mark is kept per master and would not follow the move, so
// a slave lacking writes the old master acknowledged without it would
// pass for caught up with the new one (chaos seed 9939). A caught-up
// slave keeps its slot, and a slave's move leaves the other slaves be.
func TestApplyDoneMasterMoveDropsBehindSlaves(t *testing.T) {
	tb := &route.Table{
		Buckets: 2, Copies: 3,
		Serving:     [][]string{{"a", "b", "c"}, {"a", "b", "c"}},
		Destination: [][]string{{"d", "b", "c"}, {"a", "d", "c"}},
	}
	tb.SetBehind("a", "b", true)
	applyDone(tb, route.Move{Bucket: 0, From: "a", To: "d"}) // the master's copy moves
	applyDone(tb, route.Move{Bucket: 1, From: "b", To: "d"}) // a slave's copy moves
	want := [][]string{{"d", "", "c"}, {"a", "d", "c"}}
	if !rowsEqual(tb.Serving, want) {
		t.Fatalf("serving %v, want %v", tb.Serving, want)
	}
}

// TestMoveOfABehindSlaveCopy: a slave's copy marked behind its master is
// not what a move copies: a move from it that reports done is dropped
// (its copy may lack writes the master's backlog holds for the slave),
// and the move starts again from the master, which keeps its copy.
func TestMoveOfABehindSlaveCopy(t *testing.T) {
	s := quietServer()
	tb := &route.Table{
		Buckets: 1, Copies: 2,
		Serving:     [][]string{{"a", "b"}},
		Destination: [][]string{{"a", "c"}},
	}
	ls := newLeaderState()
	s.startMoves(tb, ls, time.Now(), allAlive)
	mv := route.Move{Bucket: 0, From: "b", To: "c"}
	if want := []route.Move{mv}; !slices.Equal(tb.Migrating, want) {
		t.Fatalf("started %v, want %v", tb.Migrating, want)
	}
	// b falls behind a while its copy moves, and the move reports done.
	tb.SetBehind("a", "b", true)
	now := time.Now()
	view := map[string]nodeView{"b": {heard: true, alive: true, reports: map[moveKey]report{
		{Bucket: 0, To: "c"}: {MigrationProgress: wire.MigrationProgress{Done: true}, At: now}}}}
	if done := s.applyReports(tb, newMeta(), view, ls, now); done != 0 {
		t.Fatalf("applyReports finished %d moves, want 0", done)
	}
	if want := [][]string{{"a", "b"}}; !rowsEqual(tb.Serving, want) || len(tb.Migrating) != 0 {
		t.Fatalf("serving %v, moves %v; want %v and none", tb.Serving, tb.Migrating, want)
	}
	s.startMoves(tb, ls, now, allAlive)
	if want := []route.Move{{Bucket: 0, From: "a", To: "c"}}; !slices.Equal(tb.Migrating, want) {
		t.Fatalf("started %v, want %v (from the master)", tb.Migrating, want)
	}
}

// TestStalledMoveRestarts: a move its source never mentions is dropped
// after MoveStall and started again after a pause.
func TestStalledMoveRestarts(t *testing.T) {
	cfg := testConfig()
	cfg.MoveStall = 300 * time.Millisecond
	s := startLeader(t, cfg)
	joinFakes(t, s, 2)
	newFakeDS(t, dsAddrs[2], s.Addr())
	first := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return len(tb.Migrating) > 0 }, "moves")
	// Nobody reports: the move is dropped, then started again.
	mv := first.Migrating[0]
	start := time.Now()
	waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return !slices.Contains(tb.Migrating, mv) }, "move dropped")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("move dropped after %v, before MoveStall", d)
	}
	waitTable(t, s, 5*time.Second, func(tb *route.Table) bool { return slices.Contains(tb.Migrating, mv) }, "move restarted")
}
