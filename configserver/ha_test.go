package configserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// sharedEtcd starts an etcd that no configserver owns, so a test can kill
// configservers without killing their store.
func sharedEtcd(t *testing.T) string {
	t.Helper()
	e, err := startEmbeddedEtcd(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e.client
}

// bridgedLeader starts a configserver that reaches a shared etcd
// (endpoint) through a bridge the test can cut, and waits until it leads.
func bridgedLeader(t *testing.T) (a *Server, br *bridge, endpoint string) {
	t.Helper()
	endpoint = sharedEtcd(t)
	br = newBridge(t, endpoint)
	cfg := testConfig()
	cfg.Etcd = []string{br.Addr()}
	a = startServer(t, cfg)
	waitLeader(t, a, 5*time.Second)
	return a, br, endpoint
}

// TestStandbyTakesOver: closing the leader hands leadership to the standby
// within 3s, with the same table and version.
func TestStandbyTakesOver(t *testing.T) {
	endpoint := sharedEtcd(t)
	cfg := testConfig()
	cfg.Etcd = []string{endpoint}
	a := startServer(t, cfg)
	waitLeader(t, a, 5*time.Second)
	b := startServer(t, cfg)
	var dss []*fakeDS
	for _, addr := range dsAddrs[:3] {
		dss = append(dss, newFakeDS(t, addr, a.Addr(), b.Addr()))
	}
	before := waitTable(t, a, 5*time.Second, func(*route.Table) bool { return true }, "any")
	waitTable(t, b, 2*time.Second, func(tb *route.Table) bool { return tb.Version == before.Version }, "standby follows")
	if b.IsLeader() {
		t.Fatal("two leaders")
	}
	var st wire.Status
	getJSON(t, "http://"+b.HTTPAddr()+"/status", &st)
	if st.Role != "standby" || st.Leader != a.Addr() || st.TableVersion != before.Version {
		t.Fatalf("standby status = %+v", st)
	}
	// A standby refuses heartbeats with 421 naming the leader, and
	// wire.Client follows it there.
	if code, nl := postHeartbeat(t, b.Addr(), dsAddrs[0]); code != http.StatusMisdirectedRequest || nl.Leader != a.Addr() {
		t.Fatalf("standby heartbeat: %d %+v, want 421 naming %s", code, nl, a.Addr())
	}
	hb := dss[0].hb
	if _, err := wire.NewClient(b.Addr()).Heartbeat(context.Background(), &hb); err != nil {
		t.Fatalf("heartbeat via standby: %v", err)
	}

	a.Close()
	start := time.Now()
	waitLeader(t, b, 3*time.Second)
	t.Logf("standby led %v after the leader closed", time.Since(start))
	after := b.Table()
	if after.Version != before.Version || !rowsEqual(after.Serving, before.Serving) {
		t.Fatalf("new leader's table: version %d, want %d", after.Version, before.Version)
	}
	// Heartbeats keep the cluster whole under the new leader.
	time.Sleep(8 * testInterval)
	if v := b.Table().Version; v != before.Version {
		t.Fatalf("table moved to version %d after takeover", v)
	}
}

// TestCutOffLeaderStops: a leader that loses etcd steps down within its
// lease, refuses heartbeats, and writes nothing; the standby leads.
func TestCutOffLeaderStops(t *testing.T) {
	a, br, endpoint := bridgedLeader(t)
	cfg := testConfig()
	cfg.Etcd = []string{endpoint}
	b := startServer(t, cfg)
	for _, addr := range dsAddrs[:3] {
		newFakeDS(t, addr, a.Addr(), b.Addr())
	}
	before := waitTable(t, a, 5*time.Second, func(*route.Table) bool { return true }, "any")

	br.Cut()
	start := time.Now()
	testutil.Eventually(t, 4*time.Second, func() bool { return !a.IsLeader() }, "cut-off leader still leads")
	t.Logf("cut-off leader stepped down after %v", time.Since(start))
	waitLeader(t, b, 4*time.Second)
	t.Logf("standby led after %v", time.Since(start))

	if code, _ := postHeartbeat(t, a.Addr(), dsAddrs[0]); code != http.StatusMisdirectedRequest {
		t.Fatalf("cut-off configserver answered a heartbeat with %d, want 421", code)
	}
	// The dataservers kept beating to b: nothing changed, and a wrote
	// nothing after the cut.
	time.Sleep(5 * testInterval)
	stored, _, _, err := b.store.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if stored.Version != before.Version || !rowsEqual(stored.Serving, before.Serving) {
		t.Fatalf("table in etcd moved to version %d (was %d)", stored.Version, before.Version)
	}
	if a.IsLeader() {
		t.Fatal("cut-off configserver leads again")
	}
}

// TestLeaseBlipKeepsFailureDetection: a lone configserver that loses etcd
// for a moment and leads again keeps what it heard, so a dataserver that
// died during the blip is failed over as soon as the down detection
// allows, not a lease TTL plus the down detection after the new term
// starts; the nodes that lived through the blip stay in the table.
func TestLeaseBlipKeepsFailureDetection(t *testing.T) {
	a, br, _ := bridgedLeader(t)
	dss, before := joinFakes(t, a, 3)

	br.Cut()
	testutil.Eventually(t, 4*time.Second, func() bool { return !a.IsLeader() }, "cut-off leader still leads")
	dead := dsAddrs[2]
	dss[2].stop()
	br.Heal()
	waitLeader(t, a, 10*time.Second)
	led := time.Now()

	// The dead node was last heard before the cut, long ago: half the
	// down detection after the term starts it is out. Without the
	// record of the previous term it would count as heard at the start
	// of the term plus the lease TTL.
	after := waitTable(t, a, a.cfg.LeaseTTL, func(tb *route.Table) bool {
		return tb.Version > before.Version && !slices.Contains(tb.Nodes(), dead)
	}, "the dead node failed over within a lease TTL of leading again")
	t.Logf("dead node failed over %v after leading again", time.Since(led).Round(time.Millisecond))
	for _, live := range dsAddrs[:2] {
		if !slices.Contains(after.Nodes(), live) {
			t.Fatalf("live node %s failed with the dead one: %v", live, after.Nodes())
		}
	}
}

// postHeartbeat sends a raw heartbeat to one configserver, without
// wire.Client's leader following.
func postHeartbeat(t *testing.T, addr, node string) (int, wire.NotLeader) {
	t.Helper()
	body, _ := json.Marshal(wire.Heartbeat{Addr: node})
	resp, err := http.Post("http://"+addr+"/v1/heartbeat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var nl wire.NotLeader
	_ = json.NewDecoder(resp.Body).Decode(&nl)
	return resp.StatusCode, nl
}

// TestMovesSurviveLeaderChange: the moves running when the leader dies are
// in etcd; the new leader finishes them from the sources' reports.
func TestMovesSurviveLeaderChange(t *testing.T) {
	endpoint := sharedEtcd(t)
	cfg := testConfig()
	cfg.Etcd = []string{endpoint}
	a := startServer(t, cfg)
	waitLeader(t, a, 5*time.Second)
	b := startServer(t, cfg)
	var dss []*fakeDS
	for _, addr := range dsAddrs[:2] {
		dss = append(dss, newFakeDS(t, addr, a.Addr(), b.Addr()))
	}
	waitTable(t, a, 5*time.Second, func(*route.Table) bool { return true }, "any")
	dss = append(dss, newFakeDS(t, dsAddrs[2], a.Addr(), b.Addr()))
	running := waitTable(t, a, 3*time.Second, func(tb *route.Table) bool { return len(tb.Migrating) > 0 }, "moves")
	a.Close()
	waitLeader(t, b, 3*time.Second)
	if tb := b.Table(); tb.Version != running.Version || !slices.Equal(tb.Migrating, running.Migrating) {
		t.Fatalf("new leader: version %d moves %v, want %d %v", tb.Version, tb.Migrating, running.Version, running.Migrating)
	}
	for _, d := range dss {
		d.migrate.Store(true)
	}
	final := waitTable(t, b, 20*time.Second, func(tb *route.Table) bool {
		return len(tb.Migrating) == 0 && len(pendingMoves(tb)) == 0
	}, "moves finished by the new leader")
	checkBalanced(t, final, dsAddrs[:3])
}

// TestSharedEmbeddedEtcd: a standby can run on the first configserver's
// embedded etcd (as `tair up` and internal/cluster do): it follows the
// table and sends leader-only calls to the leader.
func TestSharedEmbeddedEtcd(t *testing.T) {
	a := startServer(t, testConfig())
	waitLeader(t, a, 5*time.Second)
	cfg := testConfig()
	cfg.Etcd = a.EtcdEndpoints()
	b := startServer(t, cfg)
	if got := b.EtcdEndpoints(); !slices.Equal(got, a.EtcdEndpoints()) {
		t.Fatalf("standby endpoints %v, want %v", got, a.EtcdEndpoints())
	}
	for _, addr := range dsAddrs[:2] {
		newFakeDS(t, addr, b.Addr(), a.Addr()) // the standby first: 421 leads on
	}
	first := waitTable(t, a, 5*time.Second, func(*route.Table) bool { return true }, "any")
	tb := waitTable(t, b, 2*time.Second, func(tb *route.Table) bool { return tb.Version == first.Version }, "standby follows")
	if b.IsLeader() {
		t.Fatal("standby leads")
	}
	got, err := wire.NewClient(b.Addr()).Table(context.Background(), 0, 0)
	if err != nil || got.Version != tb.Version {
		t.Fatalf("table from the standby: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * testInterval)
	if !a.IsLeader() || a.Table().Version != tb.Version {
		t.Fatal("closing the standby disturbed the leader")
	}
}
