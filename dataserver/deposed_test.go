package dataserver

import (
	"slices"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
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
	// On the keys of the writes the slave never acknowledged, not whole
	// (replrepair.go: the new master's records of them will do).
	if names, all := a.bucket(0).divergedNames(); all || !slices.Contains(names, walkName{0, k1}) {
		t.Fatalf("the deposed copy diverged on %v (whole: %v), want the unacknowledged writes' keys, %s among them", names, all, k1)
	}
	if a.bucket(2).diverged.Load() {
		t.Fatal("bucket 2, still mastered here, is marked diverged")
	}
	// Its heartbeats say so, so that the configserver never promotes the
	// copy before the full copy arrives (b is dead: it never does).
	testutil.Eventually(t, 5*time.Second, func() bool {
		return slices.Equal(cs.lastHB(a.Addr()).Diverged, []route.BucketID{0})
	}, "a's heartbeats do not report its diverged copy of bucket 0 alone")
}

// A full copy counts as in flight from before its begin item is queued
// until the receiver acknowledged its last item; the writes around it do
// not count.
func TestCopyInFlightUntilAcknowledged(t *testing.T) {
	st := &stream{s: &Server{cfg: Config{ReplicationBacklog: 1 << 30}}}
	st.mu.progress = make(chan struct{})
	st.push(1, 0, kindCmds, payload{}) // seq 1
	if st.copyInFlight() {
		t.Fatal("in flight before any copy")
	}
	st.beginCopy()
	if !st.copyInFlight() {
		t.Fatal("not in flight while the copy is being queued")
	}
	st.push(1, 0, kindBegin, payload{})          // seq 2
	st.push(1, 0, kindRecords, payload{recs: 1}) // seq 3
	st.endCopy()
	st.push(1, 0, kindCmds, payload{}) // seq 4, after the copy
	for _, c := range []struct {
		acked uint64
		want  bool
	}{{1, true}, {2, true}, {3, false}, {4, false}} {
		st.ackUpTo(c.acked, nil, nil)
		if got := st.copyInFlight(); got != c.want {
			t.Fatalf("acknowledged up to %d: in flight %v, want %v", c.acked, got, c.want)
		}
	}
}

// A stream is in sync (the heartbeat's InSyncSlaves: the master's word
// that the slave has every write it acknowledged) once the receiver
// acknowledged every item whose write was acknowledged without it, while
// no copy is in flight, the receiver is reachable and the stream has not
// given up. Writes in flight that wait for it do not count against it
// while they are young (inSyncMaxLag).
func TestInSyncOnlyOnceEverythingAcknowledged(t *testing.T) {
	st := &stream{s: &Server{cfg: Config{ReplicationBacklog: 1 << 30}}, log: testLogger(t), down: make(chan struct{})}
	st.mu.progress = make(chan struct{})
	if !st.inSync() {
		t.Fatal("a new, empty stream is not in sync")
	}
	st.push(1, 0, kindCmds, payload{}) // seq 1, waited for
	if !st.inSync() {
		t.Fatal("not in sync with a write in flight that its client waits for")
	}
	st.mu.Lock()
	st.mu.q[0].at = time.Now().Add(-inSyncMaxLag)
	st.mu.Unlock()
	if st.inSync() {
		t.Fatal("in sync with a write in flight for longer than inSyncMaxLag (the slave may be cut off)")
	}
	st.mu.Lock()
	st.mu.q[0].at = time.Now()
	st.mu.Unlock()
	st.setUnreachable(true)
	st.pushItem(1, 0, kindCmds, payload{}, true) // seq 2, acknowledged without the receiver
	st.push(1, 0, kindCmds, payload{})           // seq 3
	if st.inSync() {
		t.Fatal("in sync with an unconfirmed write queued")
	}
	st.ackUpTo(1, nil, nil)
	st.setUnreachable(false)
	if st.inSync() {
		t.Fatal("in sync before the unconfirmed write (seq 2) is acknowledged")
	}
	st.ackUpTo(2, nil, nil)
	if !st.inSync() {
		t.Fatal("not in sync once the unconfirmed write is acknowledged (seq 3, waited for, still in flight)")
	}
	st.setUnreachable(true)
	if st.inSync() {
		t.Fatal("in sync while the receiver is unreachable")
	}
	st.setUnreachable(false)
	st.beginCopy()
	if st.inSync() {
		t.Fatal("in sync while a full copy is being queued")
	}
	st.push(1, 0, kindBegin, payload{}) // seq 4
	st.endCopy()
	if st.inSync() {
		t.Fatal("in sync before the copy is acknowledged")
	}
	st.ackUpTo(4, nil, nil)
	if !st.inSync() {
		t.Fatal("not in sync once the copy is acknowledged")
	}
	st.mu.Lock()
	st.mu.lost = errBacklog
	st.mu.Unlock()
	if st.inSync() {
		t.Fatal("in sync after giving the receiver up")
	}
}
