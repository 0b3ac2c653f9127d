package configserver

import (
	"slices"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
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
