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
// hello of it was answered passes on the streams it was to supersede that
// may have sent something (greeted, or not stopped), with itself; once
// greeted, itself alone.
func TestSuccessorSupersedesTheUngreetedChain(t *testing.T) {
	newTestStream := func(session string, supersedes []*stream) *stream {
		return &stream{session: session, supersedes: supersedes, stopped: make(chan struct{})}
	}
	sessions := func(ss []*stream) []string {
		var out []string
		for _, x := range ss {
			out = append(out, x.session)
		}
		return out
	}
	a := newTestStream("repl-A", nil)
	a.greeted.Store(true)
	close(a.stopped)
	b := newTestStream("repl-B", []*stream{a})
	if got, want := sessions(b.successorSupersedes()), []string{"repl-B", "repl-A"}; !slices.Equal(got, want) {
		t.Fatalf("B never greeted: its successor supersedes %q, want %q (A had a hello answered: it may have sent)", got, want)
	}
	c := newTestStream("repl-C", b.successorSupersedes())
	if got, want := sessions(c.successorSupersedes()), []string{"repl-C", "repl-B", "repl-A"}; !slices.Equal(got, want) {
		t.Fatalf("C never greeted, B still running: %q, want %q", got, want)
	}
	close(b.stopped) // B stopped without a hello answered: it sent nothing
	if got, want := sessions(c.successorSupersedes()), []string{"repl-C", "repl-A"}; !slices.Equal(got, want) {
		t.Fatalf("C never greeted, B stopped silent: %q, want %q", got, want)
	}
	c.greeted.Store(true)
	if got, want := sessions(c.successorSupersedes()), []string{"repl-C"}; !slices.Equal(got, want) {
		t.Fatalf("C greeted: %q, want %q", got, want)
	}
}
