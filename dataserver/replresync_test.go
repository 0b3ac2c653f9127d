package dataserver

import (
	"slices"
	"testing"
)

// TestReplHelloRetiresEverySupersededSession: a hello that names several
// superseded sessions makes the receiver refuse each of them, so that a
// replaced stream's batch still in flight cannot be applied after its
// successor's copy.
func TestReplHelloRetiresEverySupersededSession(t *testing.T) {
	_, nodes := cluster2(t, nil)
	c := dial(t, nodes[1].Addr())
	from := nodes[0].Addr()
	if got := c.do("TAIR.REPLHELLO", from, "repl-B", "0"); got != ":0" {
		t.Fatalf("hello of B: %q", got)
	}
	// C never said hello (given up before it connected); D supersedes
	// both.
	if got := c.do("TAIR.REPLHELLO", from, "repl-D", "0", "repl-B", "repl-C"); got != ":0" {
		t.Fatalf("hello of D: %q", got)
	}
	for _, session := range []string{"repl-B", "repl-C"} {
		if got := c.do("TAIR.REPL", "1", from, session); got != "-ERR replication session superseded" {
			t.Fatalf("a batch of %s after D's hello: %q, want it refused", session, got)
		}
	}
	if got := c.do("TAIR.REPL", "1", from, "repl-D"); got == "-ERR replication session superseded" {
		t.Fatalf("a batch of D: %q", got)
	}
}

// TestSuccessorSupersedesTheUngreetedChain: a stream replaced before any
// hello of it was answered passes on the sessions it was to supersede,
// with its own; once greeted, its own alone.
func TestSuccessorSupersedesTheUngreetedChain(t *testing.T) {
	b := &stream{session: "repl-B", supersedes: []string{"repl-A"}}
	if got, want := b.successorSupersedes(), []string{"repl-A", "repl-B"}; !slices.Equal(got, want) {
		t.Fatalf("B never greeted: its successor supersedes %q, want %q", got, want)
	}
	c := &stream{session: "repl-C", supersedes: b.successorSupersedes()}
	if got, want := c.successorSupersedes(), []string{"repl-A", "repl-B", "repl-C"}; !slices.Equal(got, want) {
		t.Fatalf("C never greeted: %q, want %q", got, want)
	}
	c.greeted.Store(true)
	if got, want := c.successorSupersedes(), []string{"repl-C"}; !slices.Equal(got, want) {
		t.Fatalf("C greeted: %q, want %q", got, want)
	}
	if got := b.supersedes; !slices.Equal(got, []string{"repl-A"}) {
		t.Fatalf("B's own list changed to %q", got)
	}
}
