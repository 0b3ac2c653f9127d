package configserver

import (
	"slices"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/wire"
)

// Heartbeats overlap (up to three in flight) and may arrive out of
// order: the view keeps what the newest built one says. A stale one
// saying a slave is reachable after a newer one reported it unreachable
// would let the leader take the slave for caught up.
func TestOlderHeartbeatIgnored(t *testing.T) {
	c := newCluster()
	now := time.Now()
	newer := wire.Heartbeat{Addr: "a:1", Incarnation: 7, Seq: 5, UnreachableSlaves: []string{"b:1"}}
	older := wire.Heartbeat{Addr: "a:1", Incarnation: 7, Seq: 4}
	c.heartbeat(&newer, now, time.Second)
	c.heartbeat(&older, now.Add(time.Millisecond), time.Second)
	view, _ := c.snapshot(now.Add(2*time.Millisecond), time.Second)
	if v := view["a:1"]; v.hb.Seq != 5 || !slices.Equal(v.hb.UnreachableSlaves, []string{"b:1"}) {
		t.Fatalf("after an older heartbeat the view says seq %d, unreachable %v", v.hb.Seq, v.hb.UnreachableSlaves)
	}
	// A new incarnation starts its numbers again; a heartbeat without
	// one (an older dataserver) is taken as it comes.
	restarted := wire.Heartbeat{Addr: "a:1", Incarnation: 8, Seq: 1}
	c.heartbeat(&restarted, now.Add(3*time.Millisecond), time.Second)
	unnumbered := wire.Heartbeat{Addr: "a:1", Incarnation: 8}
	c.heartbeat(&unnumbered, now.Add(4*time.Millisecond), time.Second)
	view, _ = c.snapshot(now.Add(5*time.Millisecond), time.Second)
	if v := view["a:1"]; v.hb.Incarnation != 8 || v.hb.Seq != 0 {
		t.Fatalf("view %+v, want incarnation 8's unnumbered heartbeat", v.hb)
	}
}
