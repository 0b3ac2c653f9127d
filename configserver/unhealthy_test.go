package configserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// A dataserver that heartbeats but reports itself unhealthy (its
// watchdog found an event loop or a bucket lock stalled) is treated as
// one that stopped heartbeating: its buckets' masters move to their
// slaves. Healthy again, it rejoins.
func TestUnhealthyHeartbeatFailsOver(t *testing.T) {
	s := startLeader(t, testConfig())
	dss, first := joinFakes(t, s, 3)
	sick := dsAddrs[2]
	dss[2].mu.Lock()
	dss[2].hb.Health, dss[2].hb.Unhealthy = "unhealthy", "stalled: a connection's batch has run for 5s without progress"
	dss[2].mu.Unlock()

	promoted := waitTable(t, s, 5*time.Second, func(tb *route.Table) bool { return tb.Version > first.Version }, "a newer version")
	if promoted.Version != first.Version+1 {
		t.Fatalf("version %d after the node became unhealthy, want %d", promoted.Version, first.Version+1)
	}
	for b, row := range promoted.Serving {
		old := first.Serving[b]
		switch {
		case slices.Contains(row, sick):
			t.Fatalf("bucket %d still on the unhealthy node: %v", b, row)
		case old[0] == sick && row[0] != old[1]:
			t.Fatalf("bucket %d: master %s, want promoted slave %s (was %v)", b, row[0], old[1], old)
		case old[0] != sick && row[0] != old[0]:
			t.Fatalf("bucket %d: master changed %v -> %v", b, old, row)
		}
	}
	// The node kept heartbeating all along: it was its health that counted.
	if err := dss[2].err(); err != nil {
		t.Fatalf("the unhealthy node's heartbeats failed: %v", err)
	}
	var nodes []wire.NodeStatus
	if err := wire.NewClient(s.Addr()).Get(context.Background(), "/v1/nodes", &nodes); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range nodes {
		if n.Addr == sick {
			found = true
			if n.Alive || n.Health != "unhealthy" {
				t.Fatalf("the unhealthy node's status: %+v", n)
			}
		}
	}
	if !found {
		t.Fatalf("the unhealthy node is not in /v1/nodes: %+v", nodes)
	}

	// Healthy again: it gets copies again.
	carryOutMoves(dss)
	dss[2].mu.Lock()
	dss[2].hb.Health, dss[2].hb.Unhealthy = "ok", ""
	dss[2].mu.Unlock()
	waitTable(t, s, 20*time.Second, func(tb *route.Table) bool {
		for _, row := range tb.Serving {
			if slices.Contains(row, sick) {
				return true
			}
		}
		return false
	}, "the node back in the table")
}
