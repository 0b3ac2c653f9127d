package configserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// Fast timings for tests: failures detected in 800ms.
const (
	testInterval = 100 * time.Millisecond
)

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("TAIR_TEST_VERBOSE") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Listen, cfg.HTTP = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Buckets = 64
	cfg.HeartbeatInterval = testInterval
	cfg.DownAfter = 8 // 800ms: tolerant of -race on a loaded machine
	cfg.Settle = 300 * time.Millisecond
	cfg.HandoffWindow = -1 // classic Tair: a down node leaves its rows (TestHandOffWindow turns it on)
	return cfg
}

// startServer starts a configserver and closes it at cleanup.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func waitLeader(t *testing.T, s *Server, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, within, s.IsLeader, "%s not leader", s.Addr())
}

// waitTable waits for a table satisfying cond and returns it.
func waitTable(t *testing.T, s *Server, within time.Duration, cond func(*route.Table) bool, what string) *route.Table {
	t.Helper()
	var got *route.Table
	deadline := time.Now().Add(within)
	for {
		if got = s.Table(); got != nil && cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			if got == nil {
				t.Fatalf("after %v: no table where %s; none at all", within, what)
			}
			t.Fatalf("after %v: no table where %s; last version %d, %d moves running, %d pending",
				within, what, got.Version, len(got.Migrating), len(pendingMoves(got)))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeDS is a dataserver that only heartbeats. With migrate set it
// reports every move it is the source of as done.
type fakeDS struct {
	hb      wire.Heartbeat
	cl      *wire.Client
	migrate atomic.Bool

	mu      sync.Mutex
	table   *route.Table
	lastErr error

	cancel context.CancelFunc
	done   chan struct{}
}

func newFakeDS(t *testing.T, addr string, configservers ...string) *fakeDS {
	ds := &fakeDS{
		hb: wire.Heartbeat{Addr: addr, Incarnation: time.Now().UnixNano(), Engine: "mdb"},
		cl: wire.NewClient(configservers...),
	}
	ds.start()
	t.Cleanup(ds.stop)
	return ds
}

func (d *fakeDS) start() {
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.done = cancel, make(chan struct{})
	go func() {
		defer close(d.done)
		tick := time.NewTicker(testInterval)
		defer tick.Stop()
		for {
			if d.beat(ctx) {
				// Report new moves at once, as a prompt dataserver would.
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// beat sends one heartbeat; true when the reply gave this node new moves
// to report as done.
func (d *fakeDS) beat(ctx context.Context) (again bool) {
	d.mu.Lock()
	hb := d.hb
	if d.table != nil {
		hb.TableVersion = d.table.Version
		if d.migrate.Load() {
			for _, mv := range d.table.Migrating {
				if mv.From == hb.Addr {
					hb.Migrations = append(hb.Migrations, wire.MigrationProgress{Bucket: mv.Bucket, To: mv.To, KeysSent: 10, Done: true})
				}
			}
		}
	}
	cl := d.cl
	d.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	reply, err := cl.Heartbeat(cctx, &hb)
	cancel()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastErr = err
	if err == nil && reply.Table != nil {
		d.table = reply.Table
		if d.migrate.Load() && ctx.Err() == nil {
			for _, mv := range reply.Table.Migrating {
				if mv.From == hb.Addr {
					return true
				}
			}
		}
	}
	return false
}

// startFakes starts a fake dataserver at each of addrs, beating to the
// configservers (in that order).
func startFakes(t *testing.T, addrs []string, configservers ...string) []*fakeDS {
	t.Helper()
	var dss []*fakeDS
	for _, a := range addrs {
		dss = append(dss, newFakeDS(t, a, configservers...))
	}
	return dss
}

// joinFakes starts fake dataservers at the first n of dsAddrs, beating to
// s, and waits for the first table.
func joinFakes(t *testing.T, s *Server, n int) ([]*fakeDS, *route.Table) {
	t.Helper()
	dss := startFakes(t, dsAddrs[:n], s.Addr())
	return dss, waitTable(t, s, 5*time.Second, func(*route.Table) bool { return true }, "any")
}

// use points the dataserver at other configservers.
func (d *fakeDS) use(configservers ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cl = wire.NewClient(configservers...)
}

func (d *fakeDS) stop() {
	if d.cancel != nil {
		d.cancel()
		<-d.done
		d.cancel = nil
	}
}

func (d *fakeDS) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// checkBalanced asserts the table's rules for nodes.
func checkBalanced(t *testing.T, tb *route.Table, nodes []string) {
	t.Helper()
	c := min(tb.Copies, len(nodes))
	copies, masters := map[string]int{}, map[string]int{}
	for b, row := range tb.Serving {
		if len(row) != c {
			t.Fatalf("bucket %d: %v, want %d copies", b, row, c)
		}
		for k, a := range row {
			if !slices.Contains(nodes, a) || slices.Index(row, a) != k {
				t.Fatalf("bucket %d: bad row %v for nodes %v", b, row, nodes)
			}
			copies[a]++
		}
		masters[row[0]]++
	}
	q, n := int(tb.Buckets), len(nodes)
	for _, a := range nodes {
		if m := masters[a]; m < q/n || m > (q+n-1)/n {
			t.Fatalf("%s masters %d of %d buckets", a, m, q)
		}
		if k := copies[a]; k < q*c/n || k > (q*c+n-1)/n {
			t.Fatalf("%s holds %d copies", a, k)
		}
	}
}

// bridge is a TCP proxy whose link can be cut, like etcd's integration
// bridge: Cut closes every connection and refuses new ones.
type bridge struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newBridge(t *testing.T, target string) *bridge {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &bridge{ln: ln, target: target}
	go b.accept()
	t.Cleanup(func() { ln.Close(); b.Cut() })
	return b
}

func (b *bridge) Addr() string { return b.ln.Addr().String() }

func (b *bridge) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		if b.cut.Load() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", b.target)
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		b.conns = append(b.conns, c, up)
		b.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// Cut drops every connection through the bridge, now and later.
func (b *bridge) Cut() {
	b.cut.Store(true)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
	b.conns = nil
}

// Heal lets new connections through again.
func (b *bridge) Heal() { b.cut.Store(false) }

// startLeader is startServer waiting (5 s at most) for the server to be
// elected leader.
func startLeader(t *testing.T, cfg Config) *Server {
	t.Helper()
	s := startServer(t, cfg)
	waitLeader(t, s, 5*time.Second)
	return s
}

// joinAll is joinFakes waiting on until the table holds all n
// dataservers (joining together, one may miss the first table).
func joinAll(t *testing.T, s *Server, n int) ([]*fakeDS, *route.Table) {
	t.Helper()
	dss, _ := joinFakes(t, s, n)
	return dss, waitTable(t, s, 5*time.Second, func(tb *route.Table) bool { return len(tb.Nodes()) == n }, fmt.Sprintf("%d nodes", n))
}

// carryOutMoves has the dataservers report the moves they are the
// source of as done, from now on.
func carryOutMoves(dss []*fakeDS) {
	for _, d := range dss {
		d.migrate.Store(true)
	}
}

// settled is a table with no move running or planned.
func settled(tb *route.Table) bool {
	return len(tb.Migrating) == 0 && len(pendingMoves(tb)) == 0
}
