package configserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

var dsAddrs = []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004"}

// TestFirstTable: three dataservers joining together get one balanced
// table (version 1), served by long poll, /status and /metrics.
func TestFirstTable(t *testing.T) {
	cfg := testConfig()
	cfg.Buckets = 1023
	s := startLeader(t, cfg)
	_, tb := joinFakes(t, s, 3)
	if tb.Version != 1 || tb.Buckets != 1023 || tb.Copies != 2 || len(tb.Migrating) != 0 {
		t.Fatalf("first table: version %d, %d buckets, %d copies, %d moves; want 1, 1023, 2, 0",
			tb.Version, tb.Buckets, tb.Copies, len(tb.Migrating))
	}
	checkBalanced(t, tb, dsAddrs[:3])
	if !rowsEqual(tb.Destination, tb.Serving) {
		t.Fatal("first table's destination differs from serving")
	}

	// Long poll: nothing newer than version 1 within 200ms.
	cl := wire.NewClient(s.Addr())
	ctx := context.Background()
	start := time.Now()
	if _, err := cl.Table(ctx, 1, 200*time.Millisecond); !errors.Is(err, wire.ErrNotModified) {
		t.Fatalf("Table(after=1) = %v, want ErrNotModified", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Fatalf("long poll returned after %v", d)
	}
	got, err := cl.Table(ctx, 0, 0)
	if err != nil || got.Version != 1 || !rowsEqual(got.Serving, tb.Serving) {
		t.Fatalf("Table(after=0) = v%d, %v", got.Version, err)
	}

	var st wire.Status
	getJSON(t, "http://"+s.HTTPAddr()+"/status", &st)
	if st.Kind != "configserver" || st.Role != "leader" || st.TableVersion != 1 || st.Leader != s.Addr() ||
		len(st.EtcdEndpoints) != 1 || st.EtcdEndpoints[0] != s.EtcdEndpoints()[0] {
		t.Fatalf("status = %+v", st)
	}
	if body := get(t, "http://"+s.HTTPAddr()+"/healthz"); body != "ok\n" {
		t.Fatalf("healthz = %q", body)
	}
	metrics := get(t, "http://"+s.HTTPAddr()+"/metrics")
	for _, want := range []string{"tair_configserver_table_version 1", "tair_configserver_leader 1", "tair_configserver_nodes_alive 3", "tair_configserver_migrations_running 0"} {
		if !strings.Contains(metrics, want+"\n") {
			t.Fatalf("metrics lack %q", want)
		}
	}
	var nodes []wire.NodeStatus
	if err := cl.Get(ctx, "/v1/nodes", &nodes); err != nil || len(nodes) != 3 {
		t.Fatalf("nodes = %+v, %v", nodes, err)
	}
	for _, n := range nodes {
		if !n.Alive || n.TableVersion != 1 || n.Masters < 341 || n.Masters > 341 || n.Masters+n.Slaves != 682 {
			t.Fatalf("node %+v", n)
		}
	}
}

// TestRestartKeepsTable: a configserver restarted on its etcd directory
// serves the same table at the same version.
func TestRestartKeepsTable(t *testing.T) {
	cfg := testConfig()
	cfg.EtcdDir = t.TempDir()
	s := startLeader(t, cfg)
	dss, before := joinFakes(t, s, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, cfg)
	after := s2.Table()
	if after == nil || after.Version != before.Version || !rowsEqual(after.Serving, before.Serving) {
		t.Fatalf("after restart: %v, want version %d", after, before.Version)
	}
	for _, d := range dss {
		d.use(s2.Addr())
	}
	waitLeader(t, s2, 5*time.Second)
	// The dataservers stay up, so leading again changes nothing.
	time.Sleep(6 * testInterval)
	if v := s2.Table().Version; v != before.Version {
		t.Fatalf("new leader moved the table to version %d", v)
	}
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(get(t, url)), out); err != nil {
		t.Fatal(err)
	}
}

// get fetches url, which must answer 200, and returns its body.
func get(t *testing.T, url string) string { t.Helper(); return testutil.HTTPGetOK(t, url) }

// fetch GETs url and returns the status and the whole body.
func fetch(t *testing.T, url string) (int, []byte) { t.Helper(); return testutil.HTTPGet(t, url) }

// TestStartFailures: a taken port or an unreachable etcd fail Start with
// a reason.
func TestStartFailures(t *testing.T) {
	busy := startServer(t, testConfig())
	cfg := testConfig()
	cfg.Listen = busy.Addr()
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start on a taken port: %v", err)
	}
	cfg = testConfig()
	cfg.Etcd = []string{fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))}
	s, _ = New(cfg, testLogger(t))
	start := time.Now()
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), cfg.Etcd[0]) {
		t.Fatalf("Start with etcd down: %v", err)
	}
	if d := time.Since(start); d > startTimeout+2*time.Second {
		t.Fatalf("Start with etcd down took %v", d)
	}
	if _, err := New(Config{Listen: "x", Strategy: "random"}, nil); err == nil || !strings.Contains(err.Error(), `unknown strategy "random"`) {
		t.Fatalf("New with a bad strategy: %v", err)
	}
}

// The leader serves each table version as it stored it in etcd (encoded
// once, for saving), other tables are encoded once for all fetchers, and
// its watch recognises the tables it saved itself (not decoded again).
func TestTableEncodedOncePerVersion(t *testing.T) {
	s := startLeader(t, testConfig())
	_, tb := joinFakes(t, s, 3)
	tableURL := "http://" + s.Addr() + "/v1/table"
	first, second := get(t, tableURL), get(t, tableURL)
	if first != second {
		t.Fatalf("two fetches of version %d differ", tb.Version)
	}
	var back route.Table
	if err := json.Unmarshal([]byte(first), &back); err != nil || !tableEqual(&back, tb) || back.Version != tb.Version {
		t.Fatalf("served table %+v (%v), want version %d %+v", back, err, tb.Version, tb)
	}
	a, err := s.tableJSON(tb)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.tableJSON(tb)
	if &a[0] != &b[0] {
		t.Fatal("the table was encoded again for the same version")
	}
	other := tb.Clone()
	other.Version++
	if c, _ := s.tableJSON(other); &c[0] == &a[0] {
		t.Fatal("another table got the cached encoding")
	}
	stored, err := s.cli.Get(context.Background(), s.store.tableKey())
	if err != nil || len(stored.Kvs) != 1 {
		t.Fatalf("stored table: %v", err)
	}
	if !s.store.ownWrite(stored.Kvs[0].Value) {
		t.Fatal("the leader does not recognise the table it saved")
	}
	if string(first) != string(stored.Kvs[0].Value) {
		t.Fatal("the leader serves other bytes than those it stored")
	}
	if !s.store.ownWrite(append([]byte(nil), first...)) {
		t.Fatal("ownWrite compares the wrong bytes")
	}
	if s.store.ownWrite([]byte(`{"version":0}`)) {
		t.Fatal("ownWrite recognises a table this configserver never saved")
	}
}
