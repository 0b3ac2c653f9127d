package dataserver

import (
	"testing"
	"time"

	"github.com/tairkv/tair/internal/testutil"
)

// A master deposed while its slave could not be reached (here: dead),
// holding writes that slave never acknowledged, marks the bucket's copy
// diverged as it applies the table that makes it a slave: the copy is
// copied again from the new master rather than passing for caught up
// with writes the new master never got. The mark does not wait for the
// stream's close (the stream stays: it still serves other buckets).
func TestDeposedMasterMarksItsCopyDiverged(t *testing.T) {
	cs, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	k0, k1 := keyIn("deposed", 0, q, 0), keyIn("deposed", 0, q, 1)
	loseSlaveBehind(t, cs, a, b, ca, k0)
	if got := ca.do(x(2, "SET", k1, "1")...); got != "+OK" {
		t.Fatalf("write with the slave dead and behind: %q", got)
	}
	if a.bucket(0).diverged.Load() {
		t.Fatal("bucket 0 diverged while its master still masters it")
	}
	// b takes bucket 0 over; a keeps it as a slave (a handoff).
	dep := ringTable(3, q, 2, a.Addr(), b.Addr())
	dep.Serving[0] = []string{b.Addr(), a.Addr()}
	cs.setTable(dep)
	testutil.Eventually(t, 5*time.Second, func() bool {
		tb := a.Table()
		return tb != nil && tb.IsSlave(0, a.Addr())
	}, "a did not apply the table that makes it bucket 0's slave")
	if !a.bucket(0).diverged.Load() {
		t.Fatal("the deposed master's copy of bucket 0, with a write its slave never acknowledged, is not marked diverged")
	}
	if a.bucket(2).diverged.Load() {
		t.Fatal("bucket 2, still mastered here, is marked diverged")
	}
}
