package dataserver

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	_ "github.com/tairkv/tair/engines/rdb"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// fakeCS is a configserver stand-in: it serves POST /v1/heartbeat and
// GET /v1/table from a table the test controls. With autoSwitch it
// completes a move when its source reports Done, as the real one does.
type fakeCS struct {
	t          testing.TB
	ln         net.Listener
	srv        *http.Server
	down       atomic.Bool
	autoSwitch atomic.Bool
	recovery   atomic.Bool // completed moves add a copy instead of replacing the source
	// staleEpochs: behind marks keep the episode they were set for, as a
	// configserver that has not yet heard of the master's newer one.
	staleEpochs atomic.Bool

	mu    sync.Mutex
	table *route.Table
	areas map[uint16]wire.AreaConfig
	hooks *[]string // nil: never set (the dataservers' defaults)
	rate  *int64    // the cluster-wide copy-rate cap; nil: never set
	hbs   map[string]wire.Heartbeat
}

func newFakeCS(t testing.TB) *fakeCS {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCS{t: t, ln: ln, hbs: map[string]wire.Heartbeat{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/heartbeat", f.heartbeat)
	mux.HandleFunc("GET /v1/table", func(w http.ResponseWriter, r *http.Request) {
		// A long poll as the configserver's: a table newer than ?after=,
		// or 304 once ?wait= (ms) has passed without one. (Answering at
		// once had every dataserver's table loop spin, fetching and
		// decoding the same table thousands of times a second.)
		after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		wait, _ := strconv.Atoi(r.URL.Query().Get("wait"))
		deadline := time.Now().Add(time.Duration(wait) * time.Millisecond)
		for {
			f.mu.Lock()
			if f.table != nil && (f.table.Version > route.Version(after) || r.URL.Query().Get("after") == "") {
				_ = json.NewEncoder(w).Encode(f.table)
				f.mu.Unlock()
				return
			}
			f.mu.Unlock()
			if !time.Now().Before(deadline) || r.Context().Err() != nil {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	f.srv = &http.Server{Handler: mux}
	go func() { _ = f.srv.Serve(ln) }()
	t.Cleanup(func() { _ = f.srv.Close() })
	return f
}

func (f *fakeCS) addr() string { return f.ln.Addr().String() }

func (f *fakeCS) heartbeat(w http.ResponseWriter, r *http.Request) {
	if f.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var hb wire.Heartbeat
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &hb); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hbs[hb.Addr] = hb
	if f.autoSwitch.Load() && f.table != nil {
		for _, p := range hb.Migrations {
			if p.Done {
				f.completeMoveLocked(p.Bucket, hb.Addr, p.To)
			}
		}
	}
	if f.table != nil {
		f.markBehindLocked(hb)
	}
	reply := wire.HeartbeatReply{Areas: f.areas, Hooks: f.hooks, MigrateBytesPerSec: f.rate}
	if f.table != nil && f.table.Version > hb.TableVersion {
		reply.Table = f.table
	}
	_ = json.NewEncoder(w).Encode(reply)
}

// markBehindLocked marks the slaves a master reports unreachable behind
// it, and clears the ones it no longer reports, as the configserver does.
func (f *fakeCS) markBehindLocked(hb wire.Heartbeat) {
	nt := f.table.Clone()
	for b := range route.BucketID(nt.Buckets) {
		if !nt.IsMaster(b, hb.Addr) {
			continue
		}
		for _, sl := range nt.Slaves(b) {
			reported := slices.Contains(hb.UnreachableSlaves, sl)
			nt.SetBehind(hb.Addr, sl, reported)
			if reported && !f.staleEpochs.Load() {
				nt.SetBehindEpoch(hb.Addr, sl, hb.UnreachableEpochs[sl])
			}
		}
	}
	if !reflect.DeepEqual(nt.Behind, f.table.Behind) || !reflect.DeepEqual(nt.BehindEpoch, f.table.BehindEpoch) {
		nt.Version++
		f.table = nt
	}
}

// completeMoveLocked switches bucket b from `from` to `to` (the
// destination takes the source's place, or is appended with recovery).
func (f *fakeCS) completeMoveLocked(b route.BucketID, from, to string) {
	mv, ok := f.table.MoveOf(b)
	if !ok || mv.From != from || mv.To != to {
		return
	}
	nt := f.table.Clone()
	nt.Version++
	if f.recovery.Load() {
		nt.Serving[b] = append(nt.Serving[b], to)
	} else {
		for i, n := range nt.Serving[b] {
			if n == from {
				nt.Serving[b][i] = to
			}
		}
	}
	var ms []route.Move
	for _, m := range nt.Migrating {
		if m.Bucket != b {
			ms = append(ms, m)
		}
	}
	nt.Migrating = ms
	f.table = nt
}

// setRate sets the cluster-wide copy-rate cap the heartbeat replies
// carry (nil: none, each node's own).
func (f *fakeCS) setRate(r *int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate = r
}

// setHooks makes the heartbeat replies name hooks (an empty list: none).
func (f *fakeCS) setHooks(hooks ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := slices.Clone(hooks)
	if h == nil {
		h = []string{}
	}
	f.hooks = &h
}

// setAreas makes the heartbeat replies carry areas.
func (f *fakeCS) setAreas(areas map[uint16]wire.AreaConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.areas = areas
}

func (f *fakeCS) setTable(t *route.Table) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.table = t
}

func (f *fakeCS) getTable() *route.Table {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.table.Clone()
}

func (f *fakeCS) lastHB(addr string) wire.Heartbeat {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hbs[addr]
}

// testConfig is a fast config for tests.
func testConfig(cs string) Config {
	c := DefaultConfig()
	c.Listen = "127.0.0.1:0"
	c.HTTP = "127.0.0.1:0"
	c.ConfigServers = []string{cs}
	c.Engine = "rdb"
	// A generous lease: loaded CI machines delay heartbeats (the lease
	// tests shorten it).
	c.HeartbeatInterval = 500 * time.Millisecond
	c.LeaseTimeout = 1900 * time.Millisecond
	c.ReplicationTimeout = 300 * time.Millisecond
	c.ForwardGrace = time.Second
	return c
}

// testLogger logs to stderr at debug level with TAIR_TEST_VERBOSE set;
// otherwise it keeps the nodes' info lines and shows their last 64 KiB
// when the test fails (a failure in CI then says what the nodes did).
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("TAIR_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	kept := &keptLog{}
	t.Cleanup(func() {
		if t.Failed() {
			kept.mu.Lock()
			defer kept.mu.Unlock()
			b := kept.buf
			if len(b) > 64<<10 {
				b = b[len(b)-64<<10:]
			}
			t.Logf("a node's log (its last 64 KiB):\n%s", b)
		}
	})
	return slog.New(slog.NewTextHandler(kept, nil))
}

// keptLog is a node's log kept in memory for testLogger.
type keptLog struct {
	mu  sync.Mutex
	buf []byte
}

func (k *keptLog) Write(p []byte) (int, error) {
	k.mu.Lock()
	if len(k.buf) > 1<<20 { // only the tail is shown
		k.buf = append(k.buf[:0], k.buf[len(k.buf)-64<<10:]...)
	}
	k.buf = append(k.buf, p...)
	k.mu.Unlock()
	return len(p), nil
}

func startNode(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ringTable gives bucket b to nodes[b%n] as master and the next copies-1
// nodes as slaves.
func ringTable(version route.Version, q uint32, copies int, nodes ...string) *route.Table {
	t := &route.Table{Version: version, Buckets: q, Copies: copies, Serving: make([][]string, q)}
	for b := uint32(0); b < q; b++ {
		for c := 0; c < copies && c < len(nodes); c++ {
			t.Serving[b] = append(t.Serving[b], nodes[(int(b)+c)%len(nodes)])
		}
	}
	return t
}

func waitVersion(t testing.TB, v route.Version, nodes ...*Server) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() bool {
		for _, n := range nodes {
			if n.TableVersion() < v || !n.leaseOK() {
				return false
			}
		}
		return true
	}, "nodes did not reach table version %d", v)
}

// loseSlaveBehind has bucket 0's slave b die as the configserver handles
// it: a write (of key k, through ca to the master a) with both copies up,
// then b dies and table 2 names it behind a, before any write waited for
// it.
func loseSlaveBehind(t *testing.T, cs *fakeCS, a, b *Server, ca *client, k string) {
	t.Helper()
	if got := ca.do(x(1, "SET", k, "1")...); got != "+OK" {
		t.Fatalf("write with both copies up: %q", got)
	}
	_ = b.Close()
	next := ringTable(2, q, 2, a.Addr(), b.Addr())
	next.SetBehind(a.Addr(), b.Addr(), true)
	cs.setTable(next)
	waitVersion(t, 2, a)
}

// keyIn returns a key of bucket b (prefix + n).
func keyIn(prefix string, b route.BucketID, q uint32, n int) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s:%d:%d", prefix, n, i)
		if route.BucketOf([]byte(k), q) == b {
			return k
		}
	}
}

// client is a minimal RESP client for tests.
type client struct {
	t *testing.T
	c *peerConn
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := dialPeer(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{t: t, c: c}
}

// do sends one command and returns the raw reply as a string with the
// trailing CRLF removed ("+OK", "$3\r\nbar", "-NOTMASTER ...").
func (c *client) do(args ...string) string {
	c.t.Helper()
	r, err := c.doErr(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// goDo sends one command from a goroutine of its own: the channel gets
// the reply ("" when the connection failed).
func (c *client) goDo(args ...string) <-chan string {
	reply := make(chan string, 1)
	go func() {
		r, _ := c.doErr(args...)
		reply <- r
	}()
	return reply
}

// replyWithin is the reply that comes on ch within d; the test fails
// with none when it does not come.
func replyWithin(t *testing.T, ch <-chan string, d time.Duration, none string) string {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatal(none)
		return ""
	}
}

func (c *client) doErr(args ...string) (string, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	raw, err := c.c.roundTrip(resp.AppendCommand(nil, bs...), 5*time.Second)
	if err != nil {
		_ = c.c.Close() // its stream position is lost
		return "", err
	}
	return strings.TrimSuffix(string(raw), "\r\n"), nil
}

// encodeCommands is cmds as RESP arrays, back to back.
func encodeCommands(cmds [][]string) []byte {
	var buf []byte
	for _, a := range cmds {
		bs := make([][]byte, len(a))
		for i, s := range a {
			bs[i] = []byte(s)
		}
		buf = resp.AppendCommand(buf, bs...)
	}
	return buf
}

// pipeline sends many commands at once and returns their replies.
func (c *client) pipeline(cmds [][]string) []string {
	c.t.Helper()
	buf := encodeCommands(cmds)
	_ = c.c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.bw.Write(buf); err != nil {
		c.t.Fatal(err)
	}
	if err := c.c.bw.Flush(); err != nil {
		c.t.Fatal(err)
	}
	out := make([]string, len(cmds))
	for i := range cmds {
		raw, err := readReply(c.c.br, nil)
		if err != nil {
			c.t.Fatal(err)
		}
		out[i] = strings.TrimSuffix(string(raw), "\r\n")
	}
	return out
}

// x wraps a command in the TAIR.X envelope (area 0, RESP2).
func x(version route.Version, args ...string) []string {
	return append([]string{"TAIR.X", "0", strconv.FormatUint(uint64(version), 10), "2"}, args...)
}

// waitMoved waits until the table names to bucket b's master and no move
// runs, and fails t when that takes longer than within.
func waitMoved(t *testing.T, cs *fakeCS, b route.BucketID, to string, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, within, func() bool {
		tb := cs.getTable()
		return tb.Master(b) == to && len(tb.Migrating) == 0
	}, "the move did not complete")
}

func engineKey(b route.BucketID, key string) engines.Key {
	return engines.Key{Bucket: uint32(b), Area: 0, Key: []byte(key)}
}

func strconvFormat(n int64) string { return strconv.FormatInt(n, 10) }

// shortLease makes the lease expire quickly (lease tests).
func shortLease(_ int, c *Config) {
	c.HeartbeatInterval = 200 * time.Millisecond
	c.LeaseTimeout = 700 * time.Millisecond
}

// startEngineNodes starts n nodes of engine eng under cs, each with a
// data directory of its own and strict replication.
func startEngineNodes(t *testing.T, cs *fakeCS, eng string, n int) []*Server {
	t.Helper()
	var nodes []*Server
	for range n {
		c := testConfig(cs.addr())
		c.Engine = eng
		c.Dir = t.TempDir()
		c.ReplicationMode = ReplicationStrict
		nodes = append(nodes, startNode(t, c))
	}
	return nodes
}

// startMove sets the table after from that moves bucket b from one node
// to another; the fake configserver completes the move.
func startMove(cs *fakeCS, from *route.Table, b route.BucketID, src, dst string) {
	cs.autoSwitch.Store(true)
	next := from.Clone()
	next.Version = from.Version + 1
	next.Migrating = []route.Move{{Bucket: b, From: src, To: dst}}
	// The rows the configserver wants, as it publishes them: the
	// destination replaces the source, or joins it for a recovery copy.
	next.Destination = make([][]string, len(next.Serving))
	for i, row := range next.Serving {
		next.Destination[i] = slices.Clone(row)
	}
	if cs.recovery.Load() {
		next.Destination[b] = append(next.Destination[b], dst)
	} else if i := slices.Index(next.Destination[b], src); i >= 0 {
		next.Destination[b][i] = dst
	}
	cs.setTable(next)
}

// moveBucket moves bucket b from src to dst and waits until the move
// has ended and every node of nodes applied the table that ends it.
func moveBucket(t *testing.T, cs *fakeCS, from *route.Table, b route.BucketID, src, dst *Server, nodes ...*Server) {
	t.Helper()
	startMove(cs, from, b, src.Addr(), dst.Addr())
	testutil.Eventually(t, 10*time.Second, func() bool {
		tb := cs.getTable()
		return tb.Master(b) == dst.Addr() && len(tb.Migrating) == 0
	}, "move did not complete")
	waitVersion(t, cs.getTable().Version, nodes...)
}

// restartableLdbNode starts one ldb node, master of every bucket, on a
// port and a data directory of its own; restart closes it and starts it
// again on both.
func restartableLdbNode(t *testing.T) (s *Server, restart func() *Server) {
	t.Helper()
	cs := newFakeCS(t)
	c := testConfig(cs.addr())
	c.Engine, c.Dir = "ldb", t.TempDir()
	c.Listen = fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	s = startNode(t, c)
	cs.setTable(ringTable(1, q, 1, s.Addr()))
	waitVersion(t, 1, s)
	return s, func() *Server {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := startNode(t, c)
		waitVersion(t, 1, s2)
		return s2
	}
}
