package configserver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

func admin(t *testing.T, s *Server, req wire.AdminRequest) wire.AdminReply {
	t.Helper()
	reply, err := wire.NewClient(s.Addr()).Admin(context.Background(), &req)
	if err != nil {
		t.Fatalf("admin %s: %v", req.Op, err)
	}
	return *reply
}

func holds(tb *route.Table, node string) bool { return slices.Contains(tableNodes(tb), node) }

// TestDrainRemove: a drained node's copies move away; then it can be
// removed, and it gets no copies when it heartbeats again.
func TestDrainRemove(t *testing.T) {
	cfg := testConfig()
	cfg.MovesPerNode = 4
	s := startLeader(t, cfg)
	var dss []*fakeDS
	for _, a := range dsAddrs[:3] {
		d := newFakeDS(t, a, s.Addr())
		d.migrate.Store(true)
		dss = append(dss, d)
	}
	waitTable(t, s, 5*time.Second, func(*route.Table) bool { return true }, "any")
	victim := dsAddrs[2]
	if r := admin(t, s, wire.AdminRequest{Op: "node-remove", Node: victim}); r.OK || !strings.Contains(r.Message, "drain it first") {
		t.Fatalf("removing a loaded node: %+v", r)
	}
	if r := admin(t, s, wire.AdminRequest{Op: "node-drain", Node: victim}); !r.OK {
		t.Fatalf("drain: %+v", r)
	}
	if tb := s.Table(); len(tb.Migrating) != 4 {
		t.Fatalf("%d moves running from the drained node, want 4 (MovesPerNode)", len(tb.Migrating))
	}
	final := waitTable(t, s, 20*time.Second, func(tb *route.Table) bool { return !holds(tb, victim) }, "victim empty")
	checkBalanced(t, final, dsAddrs[:2])
	if r := admin(t, s, wire.AdminRequest{Op: "node-remove", Node: victim}); !r.OK {
		t.Fatalf("remove: %+v", r)
	}
	var nodes []wire.NodeStatus
	if err := wire.NewClient(s.Addr()).Get(context.Background(), "/v1/nodes", &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Addr == victim {
			t.Fatalf("removed node still listed: %+v", n)
		}
	}
	// It keeps heartbeating: still no copies.
	time.Sleep(5 * testInterval)
	if tb := s.Table(); holds(tb, victim) || tb.Version != final.Version {
		t.Fatalf("removed node back in the table (version %d -> %d)", final.Version, tb.Version)
	}
	// node-add takes it in again, through moves.
	if r := admin(t, s, wire.AdminRequest{Op: "node-add", Node: victim}); !r.OK {
		t.Fatalf("add: %+v", r)
	}
	back := waitTable(t, s, 20*time.Second, func(tb *route.Table) bool {
		return holds(tb, victim) && len(tb.Migrating) == 0 && len(pendingMoves(tb)) == 0
	}, "victim back and balanced")
	checkBalanced(t, back, dsAddrs[:3])
}

// TestPauseResumeCancel: pause stops new moves, resume restarts them,
// cancel drops the plan.
func TestPauseResumeCancel(t *testing.T) {
	cfg := testConfig()
	cfg.MovesPerNode = 3
	s := startLeader(t, cfg)
	_, first := joinFakes(t, s, 2)
	admin(t, s, wire.AdminRequest{Op: "migrations-pause"})
	newFakeDS(t, dsAddrs[2], s.Addr())
	plan := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return len(pendingMoves(tb)) > 0 }, "a plan")
	if len(plan.Migrating) != 0 {
		t.Fatalf("%d moves started while paused", len(plan.Migrating))
	}
	var ms wire.MigrationStatus
	if err := wire.NewClient(s.Addr()).Get(context.Background(), "/v1/migrations", &ms); err != nil {
		t.Fatal(err)
	}
	if !ms.Paused || len(ms.Pending) != len(pendingMoves(plan)) || len(ms.Running) != 0 {
		t.Fatalf("paused status %+v", ms)
	}
	admin(t, s, wire.AdminRequest{Op: "migrations-resume"})
	running := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return len(tb.Migrating) > 0 }, "moves running")
	// MovesPerNode moves per source: both old nodes are sources.
	if len(running.Migrating) != 6 {
		t.Fatalf("%d moves running, want 6 (3 per source)", len(running.Migrating))
	}
	admin(t, s, wire.AdminRequest{Op: "migrations-cancel"})
	tb := s.Table()
	if len(tb.Migrating) != 0 || len(pendingMoves(tb)) != 0 || !rowsEqual(tb.Serving, first.Serving) {
		t.Fatalf("after cancel: %d running, %d pending", len(tb.Migrating), len(pendingMoves(tb)))
	}
	// A rebalance plans again.
	admin(t, s, wire.AdminRequest{Op: "rebalance"})
	if tb := s.Table(); len(tb.Migrating)+len(pendingMoves(tb)) == 0 {
		t.Fatal("rebalance planned nothing")
	}
}

// TestRestartedNodeLosesData: a non-persistent dataserver that restarts
// (new incarnation) within the down timeout is stripped and refilled
// through moves like a new node; a persistent one keeps its copies.
func TestRestartedNodeLosesData(t *testing.T) {
	s := startLeader(t, testConfig())
	dss, first := joinFakes(t, s, 3)
	d := dss[1]
	d.mu.Lock()
	d.hb.Incarnation++
	d.mu.Unlock()
	next := waitTable(t, s, 3*time.Second, func(tb *route.Table) bool { return tb.Version > first.Version }, "a change")
	for b, row := range next.Serving {
		if slices.Contains(row, d.hb.Addr) {
			t.Fatalf("bucket %d still on the restarted node: %v", b, row)
		}
	}
	if len(next.Migrating) == 0 {
		t.Fatal("no recovery moves")
	}
	carryOutMoves(dss)
	final := waitTable(t, s, 20*time.Second, settled, "recovered")
	checkBalanced(t, final, dsAddrs[:3])

	// Persistent: a restart keeps the copies.
	d.mu.Lock()
	d.hb.Persistent = true
	d.mu.Unlock()
	testutil.Eventually(t, 2*time.Second, func() bool {
		return s.metaState.Load().Nodes[d.hb.Addr].Persistent
	}, "persistence not recorded")
	before := s.Table()
	d.mu.Lock()
	d.hb.Incarnation++
	inc := d.hb.Incarnation
	d.mu.Unlock()
	time.Sleep(5 * testInterval)
	// The rows stay; the table only names the new incarnation (the
	// restarted node serves from a table that knows of its restart).
	if tb := s.Table(); !rowsEqual(tb.Serving, before.Serving) || tb.Incarnations[d.hb.Addr] != inc || tb.Version != before.Version+1 {
		t.Fatalf("persistent restart: table %d -> %d, rows kept %v, incarnation %d (want %d)",
			before.Version, tb.Version, rowsEqual(tb.Serving, before.Serving), tb.Incarnations[d.hb.Addr], inc)
	}
}

// TestAreasAndPositionSafe: area settings reach dataservers through
// heartbeat replies; a position-safe table spreads copies over zones.
func TestAreasAndPositionSafe(t *testing.T) {
	cfg := testConfig()
	cfg.Strategy = "position-safe"
	cfg.Copies = 2
	s := startLeader(t, cfg)
	zones := map[string]string{}
	for i, a := range dsAddrs {
		d := &fakeDS{hb: wire.Heartbeat{Addr: a, Incarnation: 1, Zone: []string{"east", "west"}[i%2]}, cl: wire.NewClient(s.Addr())}
		zones[a] = d.hb.Zone
		d.start()
		t.Cleanup(d.stop)
	}
	tb := waitTable(t, s, 5*time.Second, func(*route.Table) bool { return true }, "any")
	checkBalanced(t, tb, dsAddrs)
	for b, row := range tb.Serving {
		if zones[row[0]] == zones[row[1]] {
			t.Fatalf("bucket %d has both copies in zone %s: %v", b, zones[row[0]], row)
		}
	}
	admin(t, s, wire.AdminRequest{Op: "area-set", Area: 7, Config: wire.AreaConfig{QuotaBytes: 1 << 20, ReadOnly: true}})
	reply, err := wire.NewClient(s.Addr()).Heartbeat(context.Background(), &wire.Heartbeat{Addr: dsAddrs[0], Incarnation: 1, Zone: "east", TableVersion: tb.Version})
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Areas[7]; got.QuotaBytes != 1<<20 || !got.ReadOnly || reply.Table != nil {
		t.Fatalf("heartbeat reply areas %+v, table %v", reply.Areas, reply.Table != nil)
	}
	var areas map[uint16]wire.AreaConfig
	if err := wire.NewClient(s.Addr()).Get(context.Background(), "/v1/areas", &areas); err != nil || areas[7].QuotaBytes != 1<<20 {
		t.Fatalf("areas %+v, %v", areas, err)
	}
}

// TestUnequalZonesRefused: position-safe with one node in one zone and
// three in the other builds no table, and says why.
func TestUnequalZonesRefused(t *testing.T) {
	cfg := testConfig()
	cfg.Strategy = "position-safe"
	s := startLeader(t, cfg)
	for i, a := range dsAddrs {
		d := &fakeDS{hb: wire.Heartbeat{Addr: a, Incarnation: 1, Zone: []string{"east", "west", "west", "west"}[i]}, cl: wire.NewClient(s.Addr())}
		d.start()
		t.Cleanup(d.stop)
	}
	testutil.Eventually(t, 3*time.Second, func() bool {
		return strings.Contains(get(t, "http://"+s.HTTPAddr()+"/metrics"), "tair_configserver_build_refused 1\n")
	}, "no refusal")
	if s.Table() != nil {
		t.Fatal("a table was built")
	}
	r := admin(t, s, wire.AdminRequest{Op: "rebalance"})
	if r.OK || !strings.Contains(r.Message, "difference ratio 0.67 exceeds 0.60") {
		t.Fatalf("rebalance reply %+v", r)
	}
}
