package configserver

import (
	"testing"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// A slave marked behind (here: a master deposed while cut off, kept as a
// slave by the handoff) is caught up again only once its own heartbeat
// comes from a table that carries the mark: before that it refuses the
// new master's stream, whose backlog then empties as if it had applied
// it, so the master's report alone would call it caught up.
func TestBehindClearsOnlyOnceTheSlaveHasTheMark(t *testing.T) {
	s := &Server{log: testLogger(t)}
	committed := &route.Table{Version: 7, Buckets: 1, Copies: 2, Serving: [][]string{{"m", "old"}}}
	tb := committed.Clone()
	tb.SetBehind("m", "old", true) // set in this round: first carried by version 8
	since := map[[2]string]route.Version{}
	alive := func(string) bool { return true }
	away := func(string) bool { return false }
	view := func(slaveVersion route.Version) map[string]nodeView {
		return heardFrom(wire.Heartbeat{Addr: "m", TableVersion: 8}, wire.Heartbeat{Addr: "old", TableVersion: slaveVersion})
	}
	s.markBehind(tb, committed, view(7), alive, away, since)
	if !tb.IsBehind("m", "old") {
		t.Fatal("cleared while the slave's heartbeat came from table 7, before the mark")
	}
	if since[[2]string{"m", "old"}] != 8 {
		t.Fatalf("since = %v, want the mark first carried by version 8", since)
	}
	// The round committed version 8; the slave still reports 7.
	committed = tb.Clone()
	committed.Version = 8
	s.markBehind(tb, committed, view(7), alive, away, since)
	if !tb.IsBehind("m", "old") {
		t.Fatal("cleared on a heartbeat from table 7")
	}
	s.markBehind(tb, committed, view(8), alive, away, since)
	if tb.IsBehind("m", "old") {
		t.Fatal("still behind once the slave applied table 8 and the master no longer reports it")
	}
	if len(since) != 0 {
		t.Fatalf("since keeps %v after the mark went", since)
	}

	// A mark a new leader finds committed counts from the committed
	// version.
	tb.SetBehind("m", "old", true)
	committed = tb.Clone()
	committed.Version = 9
	since = map[[2]string]route.Version{}
	s.markBehind(tb, committed, view(8), alive, away, since)
	if !tb.IsBehind("m", "old") {
		t.Fatal("an inherited mark cleared on a heartbeat from table 8, before version 9 that carries it")
	}
	s.markBehind(tb, committed, view(9), alive, away, since)
	if tb.IsBehind("m", "old") {
		t.Fatal("an inherited mark not cleared once the slave has version 9")
	}
}

// A master that sends InSyncSlaves must say, from a heartbeat built on a
// table that carries the mark, that its stream to the slave acknowledged
// everything: its silence in UnreachableSlaves is not enough (a
// heartbeat from an older table, in which the slave was not its slave,
// says nothing of a stream that still holds acknowledged writes).
func TestBehindClearsOnlyOnTheMastersWord(t *testing.T) {
	s := &Server{log: testLogger(t)}
	committed := &route.Table{Version: 8, Buckets: 1, Copies: 2, Serving: [][]string{{"m", "sl"}}}
	committed.SetBehind("m", "sl", true) // carried since version 8
	tb := committed.Clone()
	since := map[[2]string]route.Version{}
	alive := func(string) bool { return true }
	away := func(string) bool { return false }
	view := func(masterVersion route.Version, inSync []string) map[string]nodeView {
		return heardFrom(wire.Heartbeat{Addr: "m", TableVersion: masterVersion, InSyncReported: true, InSyncSlaves: inSync},
			wire.Heartbeat{Addr: "sl", TableVersion: 8})
	}
	for _, c := range []struct {
		masterVersion route.Version
		inSync        []string
		why           string
	}{
		{7, []string{"sl"}, "the master's heartbeat comes from table 7, before the mark"},
		{7, nil, "the master's heartbeat comes from table 7 and does not list the slave"},
		{8, nil, "the master does not list the slave in sync"},
		{8, []string{"other"}, "the master lists another slave in sync"},
	} {
		s.markBehind(tb, committed, view(c.masterVersion, c.inSync), alive, away, since)
		if !tb.IsBehind("m", "sl") {
			t.Fatalf("cleared although %s", c.why)
		}
	}
	s.markBehind(tb, committed, view(8, []string{"other", "sl"}), alive, away, since)
	if tb.IsBehind("m", "sl") {
		t.Fatal("still behind once the master, on table 8, lists the slave in sync")
	}
}

// A slave a full copy is on its way to (its master's CopyingSlaves), or
// whose copy waits for one (its own Diverged), is behind that master
// until neither is reported, then caught up as any other mark; a
// diverged bucket marks only the pair of its own master.
func TestCopyInFlightOrDivergedKeepsTheSlaveBehind(t *testing.T) {
	s := &Server{log: testLogger(t)}
	committed := &route.Table{Version: 7, Buckets: 2, Copies: 2, Serving: [][]string{{"m", "sl"}, {"x", "sl"}}}
	tb := committed.Clone()
	since := map[[2]string]route.Version{}
	alive := func(string) bool { return true }
	away := func(string) bool { return false }
	view := func(copying []string, diverged []route.BucketID, slaveVersion route.Version) map[string]nodeView {
		return heardFrom(wire.Heartbeat{Addr: "m", TableVersion: 7, CopyingSlaves: copying}, wire.Heartbeat{Addr: "x", TableVersion: 7},
			wire.Heartbeat{Addr: "sl", TableVersion: slaveVersion, Diverged: diverged})
	}
	s.markBehind(tb, committed, view([]string{"sl"}, nil, 7), alive, away, since)
	if !tb.IsBehind("m", "sl") || tb.IsBehind("x", "sl") {
		t.Fatalf("a copy from m on its way to sl: behind %v, want sl behind m alone", tb.Behind)
	}
	if tb.BehindEpoch != nil {
		t.Fatalf("a copy in flight covers an unreachability episode: %v (the master would stop waiting for the slave)", tb.BehindEpoch)
	}
	committed = tb.Clone()
	committed.Version = 8
	s.markBehind(tb, committed, view(nil, []route.BucketID{0}, 8), alive, away, since)
	if !tb.IsBehind("m", "sl") {
		t.Fatal("cleared while sl reports its copy of m's bucket 0 diverged")
	}
	s.markBehind(tb, committed, view(nil, []route.BucketID{1}, 8), alive, away, since)
	if tb.IsBehind("m", "sl") || !tb.IsBehind("x", "sl") {
		t.Fatalf("sl reports bucket 1 (x's) diverged: behind %v, want sl behind x alone", tb.Behind)
	}
	committed = tb.Clone()
	committed.Version = 9
	s.markBehind(tb, committed, view(nil, nil, 9), alive, away, since)
	if len(tb.Behind) != 0 {
		t.Fatalf("marks left once nothing is reported and sl has the marks' table: %v", tb.Behind)
	}
}

// heardFrom is the leader's view of live nodes whose last heartbeats are
// hbs.
func heardFrom(hbs ...wire.Heartbeat) map[string]nodeView {
	out := map[string]nodeView{}
	for _, hb := range hbs {
		out[hb.Addr] = nodeView{heard: true, alive: true, hb: hb}
	}
	return out
}
