package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

// watchFixture is a frame's input: a drain of n1 with two moves running.
func watchFixture() progress {
	return progress{
		Migrations: wire.MigrationStatus{Completed: 5, Total: 20, Running: make([]wire.MigrationProgress, 2), Pending: make([]route.Move, 13)},
		Moves: []moveProgress{
			{Bucket: 3, From: "10.0.0.1:5191", To: "10.0.0.2:5191", KeysSent: 500, Percent: 50, KeysPerSec: 1500},
			{Bucket: 17, From: "10.0.0.1:5191", To: "10.0.0.3:5191", Percent: -1},
		},
		KeysPerSec: 1500,
		Node:       &wire.NodeStatus{Addr: "10.0.0.1:5191", Alive: true, Masters: 3, Slaves: 4},
		Copies:     7,
	}
}

func cells(full, empty int) string {
	return "[" + strings.Repeat("█", full) + strings.Repeat("░", empty) + "]"
}

// On a terminal, each poll redraws the frame in place: back to the last
// frame's first line, clear, draw.
func TestWatchTerminalFrames(t *testing.T) {
	var buf bytes.Buffer
	p := &progressWatch{e: &ctlEnv{}, w: &buf, term: true, width: 200, drain: "10.0.0.1:5191", start: 10}
	pr := watchFixture()
	if err := p.show(pr); err != nil {
		t.Fatal(err)
	}
	frame1 := "drain  " + cells(7, 17) + "  30.0%  node 10.0.0.1:5191: 7 of 10 copies left (3 masters, 4 slaves)\n" +
		"moves  " + cells(6, 18) + "  25.0%  5/20 done, 2 running, 13 pending, 1.5k keys/s\n" +
		"  bucket 3     " + cells(6, 6) + " ~50%  10.0.0.1:5191 -> 10.0.0.2:5191  500 keys sent, 1.5k keys/s\n" +
		"  bucket 17    " + cells(0, 12) + "    ?  10.0.0.1:5191 -> 10.0.0.3:5191  0 keys sent\n"
	if buf.String() != frame1 {
		t.Fatalf("first frame:\n%q\nwant\n%q", buf.String(), frame1)
	}
	buf.Reset()
	pr = progress{Migrations: wire.MigrationStatus{Completed: 20, Total: 20, Running: []wire.MigrationProgress{}, Pending: []route.Move{}},
		Node: &wire.NodeStatus{Addr: "10.0.0.1:5191", Alive: false}, Finished: true}
	if err := p.show(pr); err != nil {
		t.Fatal(err)
	}
	if err := p.finish(pr); err != nil {
		t.Fatal(err)
	}
	frame2 := "\x1b[4F\x1b[J" +
		"drain  " + cells(24, 0) + " 100.0%  node 10.0.0.1:5191: 0 of 10 copies left (0 masters, 0 slaves), down\n" +
		"moves  " + cells(24, 0) + " 100.0%  20/20 done, 0 running, 0 pending\n" +
		"node 10.0.0.1:5191 holds no copy: `tair ctl node remove 10.0.0.1:5191` takes it out\n"
	if buf.String() != frame2 {
		t.Fatalf("second frame:\n%q\nwant\n%q", buf.String(), frame2)
	}

	// A narrow terminal: lines are cut to its width (a wrapped line
	// would break the redraw).
	buf.Reset()
	p = &progressWatch{e: &ctlEnv{}, w: &buf, term: true, width: 31, drain: "10.0.0.1:5191", start: 10}
	p.show(watchFixture())
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if n := len([]rune(l)); n != 30 {
			t.Fatalf("line of %d runes on a terminal 31 wide: %q", n, l)
		}
	}
}

// Not on a terminal: plain lines, a frame only when it changed.
func TestWatchPlainFrames(t *testing.T) {
	var buf bytes.Buffer
	p := &progressWatch{e: &ctlEnv{}, w: &buf, drain: "10.0.0.1:5191", start: 10}
	p.show(watchFixture())
	p.show(watchFixture())
	want := "node 10.0.0.1:5191: 7 of 10 copies left (3 masters, 4 slaves)\n" +
		"moves 25.0%: 5/20 done, 2 running, 13 pending, 1.5k keys/s\n" +
		"  bucket 3 10.0.0.1:5191 -> 10.0.0.2:5191: ~50%, 500 keys sent, 1.5k keys/s\n" +
		"  bucket 17 10.0.0.1:5191 -> 10.0.0.3:5191: ?, 0 keys sent\n"
	if buf.String() != want {
		t.Fatalf("plain frames:\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	pr := watchFixture()
	pr.Moves[0].Done, pr.Moves[0].Percent = true, 100
	pr.Moves[1].Failed = "destination refused"
	pr.Migrations.Paused = true
	pr.Error = "wire: no configserver leads"
	p.show(pr)
	want = "node 10.0.0.1:5191: 7 of 10 copies left (3 masters, 4 slaves)\n" +
		"moves 25.0%: 5/20 done, 2 running, 13 pending, paused, 1.5k keys/s\n" +
		"  bucket 3 10.0.0.1:5191 -> 10.0.0.2:5191: 100%, 500 keys sent, 1.5k keys/s, done\n" +
		"  bucket 17 10.0.0.1:5191 -> 10.0.0.3:5191: ?, 0 keys sent, failed: destination refused\n" +
		"  (last poll failed: wire: no configserver leads)\n"
	if buf.String() != want {
		t.Fatalf("plain frame:\n%q\nwant\n%q", buf.String(), want)
	}
	// More than ten moves: the first ten, and a count of the rest.
	pr = watchFixture()
	pr.Moves = nil
	for b := range 12 {
		pr.Moves = append(pr.Moves, moveProgress{Bucket: route.BucketID(b), From: "a:1", To: "b:1", Percent: -1})
	}
	lines := p.frame(pr)
	if len(lines) != 2+10+1 || lines[12] != "  and 2 more running" {
		t.Fatalf("frame of 12 moves: %q", lines)
	}
}

// moves: the source from the tables read, the share estimated from the
// source's keys per copy (at most 99 % until done), the rate measured.
func TestWatchMoves(t *testing.T) {
	p := &progressWatch{
		prev: map[moveKey]keySample{{3, "b:1"}: {keys: 100, at: time.Now().Add(-2 * time.Second)}},
		from: map[moveKey]string{{3, "b:1"}: "a:1", {4, "c:1"}: "a:1", {9, "c:1"}: "a:1"},
	}
	nodes := []wire.NodeStatus{{Addr: "a:1", HeldMasters: 6, HeldSlaves: 4}, {Addr: "b:1", HeldMasters: 5}}
	stats := map[string]map[uint16]wire.AreaStats{"a:1": {0: {Keys: 6000}, 1: {Keys: 4000}}}
	got := p.moves([]wire.MigrationProgress{
		{Bucket: 5, To: "b:1", KeysSent: 10, Done: true},
		{Bucket: 4, To: "c:1", KeysSent: 5000},
		{Bucket: 3, To: "b:1", KeysSent: 300},
	}, nodes, stats)
	if len(got) != 3 || got[0].Bucket != 3 || got[1].Bucket != 4 || got[2].Bucket != 5 {
		t.Fatalf("moves %+v, want buckets 3, 4, 5", got)
	}
	if m := got[0]; m.From != "a:1" || m.Percent != 30 || m.KeysPerSec < 90 || m.KeysPerSec > 101 {
		t.Fatalf("bucket 3: %+v, want from a:1, 30%% (300 of 1000 keys a copy), ~100 keys/s", m)
	}
	if m := got[1]; m.Percent != 99 || m.KeysPerSec != 0 {
		t.Fatalf("bucket 4: %+v, want 99%% (an estimate past 100 %% while running), no rate yet", m)
	}
	if m := got[2]; m.From != "" || m.Percent != 100 {
		t.Fatalf("bucket 5: %+v, want no source known, 100%% (done)", m)
	}
	if _, ok := p.from[moveKey{9, "c:1"}]; ok || len(p.prev) != 3 {
		t.Fatalf("a move no longer running is remembered: %v, samples %v", p.from, p.prev)
	}
	// A source without keys gives no estimate.
	if got := p.moves([]wire.MigrationProgress{{Bucket: 3, To: "b:1", KeysSent: 1}}, nodes, nil); got[0].Percent != -1 {
		t.Fatalf("estimate without keys: %+v", got[0])
	}
}

func TestRate(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1500: "1.5k", 15000: "15k", 2.5e6: "2.5M"} {
		if got := rate(v); got != want {
			t.Errorf("rate(%v) = %q, want %q", v, got, want)
		}
	}
}

// fakeCS is a configserver API whose answers a test changes.
type fakeCS struct {
	mu    sync.Mutex
	table route.Table
	mig   wire.MigrationStatus
	nodes []wire.NodeStatus
	fail  int // answer this many more /v1/migrations with 503
}

func (f *fakeCS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var v any
	switch r.URL.Path {
	case "/v1/table":
		v = f.table
	case "/v1/migrations":
		if f.fail > 0 {
			f.fail--
			http.Error(w, "leader busy", http.StatusServiceUnavailable)
			return
		}
		v = f.mig
	case "/v1/nodes":
		v = f.nodes
	case "/v1/stats":
		v = map[string]any{}
	case "/v1/admin":
		v = wire.AdminReply{OK: true, Message: "draining; remove the node once it holds no copy"}
	default:
		http.NotFound(w, r)
		return
	}
	json.NewEncoder(w).Encode(v)
}

func (f *fakeCS) set(fn func(f *fakeCS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// drain --wait against a fake configserver: a failed poll is shown and
// the watch goes on; a node whose copies no move takes fails the wait.
func TestDrainWaitFake(t *testing.T) {
	f := &fakeCS{
		table: route.Table{Version: 1, Buckets: 1, Copies: 1, Serving: [][]string{{"a:1"}}},
		mig:   wire.MigrationStatus{Running: []wire.MigrationProgress{}, Pending: []route.Move{{Bucket: 0, From: "a:1", To: "b:1"}}, Total: 1},
		nodes: []wire.NodeStatus{{Addr: "a:1", Alive: true, Masters: 1, HeldMasters: 1}, {Addr: "b:1", Alive: true}},
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cs := strings.TrimPrefix(srv.URL, "http://")

	// The plan goes away, the node keeps its copy: stuck.
	defer func(d time.Duration) { stuckAfter = d }(stuckAfter)
	stuckAfter = 150 * time.Millisecond
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.set(func(f *fakeCS) { f.fail = 2 })
		time.Sleep(200 * time.Millisecond)
		f.set(func(f *fakeCS) { f.mig.Pending, f.mig.Total = []route.Move{}, 0 })
	}()
	out, err := ctlErr(cs, "node", "drain", "a:1", "--wait", "--interval", "20ms")
	if err == nil || err.Error() != "node a:1 still holds 1 copy and no move is planned for them (stuck); see `tair ctl nodes`" {
		t.Fatalf("drain --wait of a stuck node: %v\n%s", err, out)
	}
	want := "OK draining; remove the node once it holds no copy\n" +
		"node a:1: 1 of 1 copies left (1 masters, 0 slaves)\nmoves 0.0%: 0/1 done, 0 running, 1 pending\n"
	failed := "node a:1: 1 of 1 copies left (1 masters, 0 slaves)\nmoves 0.0%: 0/1 done, 0 running, 1 pending\n" +
		"  (last poll failed: wire: GET " + cs + "/v1/migrations: 503 leader busy)\n"
	if !strings.HasPrefix(out, want+failed) || !strings.HasSuffix(out, "moves 100.0%: 0/0 done, 0 running, 0 pending\n") {
		t.Fatalf("drain --wait printed:\n%s", out)
	}

	// An unknown node: the first poll's error ends the wait.
	if _, err := ctlErr(cs, "node", "drain", "c:1", "--wait"); err == nil || err.Error() != `unknown node "c:1" (removed?)` {
		t.Fatalf("drain --wait of an unknown node: %v", err)
	}

	// Ctrl-C (the context's end) stops the wait, which then fails; a
	// watch of migrations just stops.
	f.set(func(f *fakeCS) {
		f.mig.Pending, f.mig.Total, f.mig.Paused = []route.Move{{Bucket: 0, From: "a:1", To: "b:1"}}, 1, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := ctlRun(ctx, nil, cs, "node", "drain", "a:1", "--wait", "--interval", "20ms"); err == nil ||
		err.Error() != "stopped waiting: node a:1 still holds 1 copy (the drain goes on)" {
		t.Fatalf("drain --wait stopped: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if out, err := ctlRun(ctx, nil, cs, "migrations", "--watch", "--interval", "20ms"); err != nil ||
		out != "moves 0.0%: 0/1 done, 0 running, 1 pending, paused\n" {
		t.Fatalf("migrations --watch stopped: %v %q", err, out)
	}
}

// Every ctl subcommand that runs takes --json, says what it does, and
// is in this list of those TestCtl (and the tests beside it) check: a
// new subcommand fails here until it is added, with its checks.
func TestCtlEverySubcommandHasJSON(t *testing.T) {
	tested := []string{"ctl area list", "ctl area set", "ctl backup", "ctl hooks", "ctl hooks off", "ctl hooks on", "ctl hooks set", "ctl hotkeys",
		"ctl migrate cancel", "ctl migrate pause", "ctl migrate rate", "ctl migrate resume", "ctl migrations", "ctl node add", "ctl node drain",
		"ctl node remove", "ctl nodes", "ctl rebalance", "ctl restore", "ctl shell", "ctl stat", "ctl status", "ctl table"}
	var walk func(c *cobra.Command)
	var found []string
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Runnable() {
			found = append(found, c.CommandPath())
			if c.Flags().Lookup("json") == nil && c.InheritedFlags().Lookup("json") == nil {
				t.Errorf("%s has no --json", c.CommandPath())
			}
			if c.Short == "" {
				t.Errorf("%s has no help line", c.CommandPath())
			}
		}
	}
	walk(ctlCmd())
	slices.Sort(found)
	if !slices.Equal(found, tested) {
		t.Fatalf("ctl subcommands %q, tested %q", found, tested)
	}
}
