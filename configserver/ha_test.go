package configserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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

// sharedEtcdConfig is testConfig for configservers sharing a fresh
// sharedEtcd.
func sharedEtcdConfig(t *testing.T) Config {
	t.Helper()
	cfg := testConfig()
	cfg.Etcd = []string{sharedEtcd(t)}
	return cfg
}

// bridgedLeader starts a configserver that reaches a shared etcd
// (endpoint) through a bridge the test can cut, and waits until it leads.
func bridgedLeader(t *testing.T) (a *Server, br *bridge, endpoint string) {
	t.Helper()
	endpoint = sharedEtcd(t)
	br = newBridge(t, endpoint)
	cfg := testConfig()
	cfg.Etcd = []string{br.Addr()}
	a = startLeader(t, cfg)
	return a, br, endpoint
}

// TestStandbyTakesOver: closing the leader hands leadership to the standby
// within 3s, with the same table and version.
func TestStandbyTakesOver(t *testing.T) {
	cfg := sharedEtcdConfig(t)
	a := startLeader(t, cfg)
	b := startServer(t, cfg)
	dss := startFakes(t, dsAddrs[:3], a.Addr(), b.Addr())
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
// lease, refuses heartbeats, and neither writes nor serves a table etcd
// does not hold; the standby leads.
//
// At the cut the leader is given reasons to change the table: a new
// dataserver (the joiner) heartbeats it alone, and a dataserver stops.
// The joiner never heartbeats anyone else, so a table or meta naming it
// can only come from the cut-off leader: it must show up neither in what
// that configserver serves (GET /v1/table, heartbeat replies) nor, after
// the link heals, anywhere in etcd's history since the cut.
func TestCutOffLeaderStops(t *testing.T) {
	a, br, endpoint := bridgedLeader(t)
	cfg := testConfig()
	cfg.Etcd = []string{endpoint}
	b := startServer(t, cfg)
	dss := startFakes(t, dsAddrs[:3], a.Addr(), b.Addr())
	before := waitTable(t, a, 5*time.Second, func(tb *route.Table) bool { return len(tb.Nodes()) == 3 }, "three nodes")
	ctx := context.Background()
	cutRev, err := b.cli.Get(ctx, b.store.tableKey())
	if err != nil {
		t.Fatal(err)
	}

	br.Cut()
	start := time.Now()
	joiner, stopped := dsAddrs[3], dsAddrs[2]
	dss[2].stop()
	watch := watchServed(t, a, joiner, before.Version)

	// Not fatal: when it fails, the checks below still show what a
	// leader that kept acting served and wrote.
	for a.IsLeader() && time.Since(start) < 4*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if a.IsLeader() {
		t.Errorf("cut-off leader still leads after %v", time.Since(start))
	} else {
		t.Logf("cut-off leader stepped down after %v", time.Since(start))
	}
	waitLeader(t, b, 4*time.Second)
	t.Logf("standby led after %v", time.Since(start))
	if code, _ := postHeartbeat(t, a.Addr(), dsAddrs[0]); code != http.StatusMisdirectedRequest {
		t.Errorf("cut-off configserver answered a heartbeat with %d, want 421", code)
	}
	// The new leader governs: it fails the stopped node over.
	byB := b.Table()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if byB = b.Table(); byB.Version > before.Version && !slices.Contains(byB.Nodes(), stopped) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the new leader did not fail the stopped node over: version %d names %v", byB.Version, byB.Nodes())
			break
		}
	}
	time.Sleep(5 * testInterval)
	cut := watch.snapshot()
	t.Logf("while cut off: %d of the joiner's heartbeats answered 200, served versions up to %d", cut.ok, cut.maxVersion)
	if cut.maxVersion != before.Version || cut.joinerSeen != "" {
		t.Errorf("cut-off configserver served version %d (was %d) %s", cut.maxVersion, before.Version, cut.joinerSeen)
	}
	if cut.ok > 0 && cut.replyTable {
		t.Errorf("cut-off configserver sent the joiner a table in a heartbeat reply")
	}

	// Heal: the old leader follows etcd again, as a standby, and serves
	// what the new leader committed, never its own stale table.
	br.Heal()
	for deadline := time.Now().Add(10 * time.Second); a.Table().Version < b.Table().Version; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the old leader serves version %d after the heal, etcd %d", a.Table().Version, b.Table().Version)
			break
		}
	}
	time.Sleep(10 * testInterval)
	healed := watch.stop()
	if healed.joinerSeen != "" {
		t.Errorf("after the heal: %s", healed.joinerSeen)
	}
	if a.IsLeader() || !b.IsLeader() {
		t.Errorf("after the heal: a leads %v, b leads %v; want b alone", a.IsLeader(), b.IsLeader())
	}
	if code, _ := postHeartbeat(t, a.Addr(), dsAddrs[0]); code != http.StatusMisdirectedRequest {
		t.Errorf("old leader answered a heartbeat with %d after the heal, want 421", code)
	}

	// etcd: nothing the old leader built, at any revision since the cut.
	hist := tableHistory(t, b, cutRev.Header.Revision+1)
	last := before.Version
	for _, h := range hist {
		if strings.Contains(h.value, joiner) {
			t.Errorf("etcd %s at revision %d names the joiner only the cut-off leader heard: %.200s", h.key, h.rev, h.value)
		}
		if h.key == b.store.tableKey() {
			tb, err := decodeTable([]byte(h.value))
			if err != nil {
				t.Fatal(err)
			}
			if tb.Version != last+1 {
				t.Errorf("etcd table version %d at revision %d follows %d: two writers", tb.Version, h.rev, last)
			}
			last = tb.Version
		}
	}
	stored, m, _, err := b.store.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur := b.Table(); stored.Version != cur.Version || !tableEqual(stored, cur) {
		t.Errorf("etcd holds version %d, the leader serves %d", stored.Version, cur.Version)
	}
	if m.Nodes[joiner] != nil {
		t.Errorf("etcd meta knows the joiner: %+v", m.Nodes[joiner])
	}
	t.Logf("etcd since the cut: %d writes of table or meta, table versions %d -> %d", len(hist), before.Version, last)
}

// servedWatch records what one configserver serves while a test runs:
// the table on GET /v1/table and the replies to a joining dataserver's
// heartbeats sent to it alone.
type servedWatch struct {
	mu    sync.Mutex
	seen  servedSeen
	stopc chan struct{}
	done  chan struct{}
}

type servedSeen struct {
	ok         int           // heartbeats answered 200
	replyTable bool          // a heartbeat reply carried a table
	maxVersion route.Version // highest version served on GET /v1/table
	joinerSeen string        // a served table naming the joiner, described
}

func watchServed(t *testing.T, s *Server, joiner string, version route.Version) *servedWatch {
	w := &servedWatch{stopc: make(chan struct{}), done: make(chan struct{})}
	hb := wire.Heartbeat{Addr: joiner, Incarnation: time.Now().UnixNano(), Engine: "mdb", TableVersion: version}
	body, _ := json.Marshal(hb)
	cl := wire.NewClient(s.Addr())
	go func() {
		defer close(w.done)
		tick := time.NewTicker(testInterval / 2)
		defer tick.Stop()
		for {
			if resp, err := http.Post("http://"+s.Addr()+"/v1/heartbeat", "application/json", bytes.NewReader(body)); err == nil {
				var reply wire.HeartbeatReply
				if resp.StatusCode == http.StatusOK {
					_ = json.NewDecoder(resp.Body).Decode(&reply)
				}
				resp.Body.Close()
				w.mu.Lock()
				if resp.StatusCode == http.StatusOK {
					w.seen.ok++
					if reply.Table != nil {
						w.seen.replyTable = true
						if slices.Contains(reply.Table.Nodes(), joiner) || slices.ContainsFunc(reply.Table.Destination, func(r []string) bool { return slices.Contains(r, joiner) }) {
							w.seen.joinerSeen = fmt.Sprintf("heartbeat reply table version %d names the joiner", reply.Table.Version)
						}
					}
				}
				w.mu.Unlock()
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			tb, err := cl.Table(ctx, 0, 0)
			cancel()
			if err == nil {
				w.mu.Lock()
				w.seen.maxVersion = max(w.seen.maxVersion, tb.Version)
				if slices.Contains(tableNodes(tb), joiner) {
					w.seen.joinerSeen = fmt.Sprintf("GET /v1/table version %d names the joiner", tb.Version)
				}
				w.mu.Unlock()
			}
			select {
			case <-w.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *servedWatch) snapshot() servedSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

func (w *servedWatch) stop() servedSeen {
	select {
	case <-w.stopc:
	default:
		close(w.stopc)
	}
	<-w.done
	return w.snapshot()
}

type kvWrite struct {
	key, value string
	rev        int64
}

// tableHistory lists every write of the table and meta keys from
// revision from on, read back through s's etcd client.
func tableHistory(t *testing.T, s *Server, from int64) []kvWrite {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	head, err := s.cli.Get(ctx, s.store.tableKey())
	if err != nil {
		t.Fatal(err)
	}
	var out []kvWrite
	if head.Header.Revision < from {
		return out
	}
	wch := s.cli.Watch(ctx, s.store.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(from))
	for resp := range wch {
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			k := string(ev.Kv.Key)
			if ev.Type == clientv3.EventTypePut && (k == s.store.tableKey() || k == s.store.metaKey()) {
				out = append(out, kvWrite{key: k, value: string(ev.Kv.Value), rev: ev.Kv.ModRevision})
			}
			if ev.Kv.ModRevision >= head.Header.Revision {
				return out
			}
		}
	}
	t.Fatal("etcd history: watch ended early")
	return nil
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
	cfg := sharedEtcdConfig(t)
	a := startLeader(t, cfg)
	b := startServer(t, cfg)
	dss := startFakes(t, dsAddrs[:2], a.Addr(), b.Addr())
	waitTable(t, a, 5*time.Second, func(*route.Table) bool { return true }, "any")
	dss = append(dss, newFakeDS(t, dsAddrs[2], a.Addr(), b.Addr()))
	running := waitTable(t, a, 3*time.Second, func(tb *route.Table) bool { return len(tb.Migrating) > 0 }, "moves")
	a.Close()
	waitLeader(t, b, 3*time.Second)
	if tb := b.Table(); tb.Version != running.Version || !slices.Equal(tb.Migrating, running.Migrating) {
		t.Fatalf("new leader: version %d moves %v, want %d %v", tb.Version, tb.Migrating, running.Version, running.Migrating)
	}
	carryOutMoves(dss)
	final := waitTable(t, b, 20*time.Second, settled, "moves finished by the new leader")
	checkBalanced(t, final, dsAddrs[:3])
}

// TestSharedEmbeddedEtcd: a standby can run on the first configserver's
// embedded etcd (as `tair up` and the cluster package do): it follows the
// table and sends leader-only calls to the leader.
func TestSharedEmbeddedEtcd(t *testing.T) {
	a := startLeader(t, testConfig())
	cfg := testConfig()
	cfg.Etcd = a.EtcdEndpoints()
	b := startServer(t, cfg)
	if got := b.EtcdEndpoints(); !slices.Equal(got, a.EtcdEndpoints()) {
		t.Fatalf("standby endpoints %v, want %v", got, a.EtcdEndpoints())
	}
	startFakes(t, dsAddrs[:2], b.Addr(), a.Addr()) // the standby first: 421 leads on
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
