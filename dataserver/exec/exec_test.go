package exec

// Test helpers shared by this package's tests: an executor over a fresh
// engine with a fake clock, a command-line splitter, and step tables that
// compare raw RESP replies.

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/kdb"
	"github.com/tairkv/tair/engines/ldb"
	"github.com/tairkv/tair/engines/mdb"
	"github.com/tairkv/tair/engines/rdb"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/resp"
)

// testClock is the fake clock the engine and the executor share: the
// engines' suite clock, which starts at testEpoch.
type testClock = enginetest.Clock

// testEpoch is the fake clock's start: 2026-01-01T00:00:00Z, whole seconds.
var testEpoch = enginetest.Epoch

// newTestClock returns a clock at testEpoch.
func newTestClock() *testClock { return enginetest.NewClock() }

// harness runs commands on one executor.
type harness struct {
	t     *testing.T
	x     *Executor
	eng   engines.Engine
	clock *testClock
	area  uint16
	proto int
	// lastProp is what the last command propagated.
	lastProp [][][]byte
}

// newHarness returns a harness over a fresh rdb engine (fake clock at
// testEpoch, RESP2, area 0).
func newHarness(t *testing.T) *harness { return newHarnessOn(t, rdb.Name) }

// newHarnessOn is newHarness over the engine registered as name.
func newHarnessOn(t *testing.T, name string) *harness {
	t.Helper()
	clk := newTestClock()
	eng := openEngine(t, name, clk)
	return &harness{t: t, x: New(eng, Options{Now: clk.Now}), eng: eng, clock: clk, proto: 2}
}

// openEngine opens a fresh engine on clk, closed when the test ends.
func openEngine(t *testing.T, name string, clk *testClock) engines.Engine {
	t.Helper()
	eng, err := engines.Open(name, engines.Options{Now: clk.Now, SweepInterval: time.Hour, Dir: t.TempDir(), Sync: engines.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// testEngines are the engines the command tests run on.
var testEngines = []string{rdb.Name, mdb.Name, ldb.Name}

// allEngines are every engine: the differential, replication and DUMP
// tests run on all of them.
var allEngines = []string{rdb.Name, mdb.Name, ldb.Name, kdb.Name}

// onEngines runs fn as a subtest per engine.
func onEngines(t *testing.T, fn func(t *testing.T, engine string)) {
	for _, name := range testEngines {
		t.Run(name, func(t *testing.T) { fn(t, name) })
	}
}

// replPair is a master and its slave, each an executor over its own
// engine: the replication tests run commands on the master and replay
// what it propagates on the slave (replica=true), which must end equal to
// it.
type replPair struct {
	master, slave engines.Engine
	mx, sx        *Executor
}

// openReplPair is a replPair over fresh engines of the given name on
// clk, executors of one bucket.
func openReplPair(t *testing.T, engine string, clk *testClock) *replPair {
	master, slave := openEngine(t, engine, clk), openEngine(t, engine, clk)
	opts := Options{Buckets: 1, Now: clk.Now}
	return &replPair{master: master, slave: slave, mx: New(master, opts), sx: New(slave, opts)}
}

// reset empties both engines for the next input.
func (p *replPair) reset(t *testing.T) {
	for _, e := range []engines.Engine{p.master, p.slave} {
		if err := e.DeleteBucket(0); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs args on the master, fails t unless the reply is one RESP
// reply, replays the propagation on the slave (which must accept it) and
// returns the reply.
func (p *replPair) run(t *testing.T, args [][]byte) string {
	out, prop := p.mx.Exec(0, 2, false, args, nil)
	n, _, err := resp.ScanReply(out, resp.Limits{})
	if err != nil || n != len(out) {
		t.Fatalf("%q: reply %q is not one RESP reply (%v)", args, out, err)
	}
	if pc, rep := replay(p.sx, 0, prop); pc != nil {
		t.Fatalf("%q: the slave refused its propagation %q: %q", args, pc, rep)
	}
	return string(out)
}

// replay runs a propagation on replica x as the dataserver's apply does
// (a versions entry goes to the commands after it) and returns the first
// command the replica refused, with its reply (nil when none).
func replay(x *Executor, area uint16, prop [][][]byte) (refused, reply []byte) {
	req := Request{Area: area, Proto: 2, Replica: true}
	for _, pc := range prop {
		if IsVersions(pc) {
			req.Entry(pc)
			continue
		}
		rep, _ := x.ExecRequest(req, pc, nil)
		req.KeyVersion = nil
		if len(rep) > 0 && rep[0] == '-' {
			return bytes.Join(pc, []byte(" ")), rep
		}
	}
	return nil, nil
}

// withoutVersions returns a propagation's commands without its versions
// entries.
func withoutVersions(prop [][][]byte) [][][]byte {
	var cmds [][][]byte
	for _, pc := range prop {
		if !IsVersions(pc) {
			cmds = append(cmds, pc)
		}
	}
	return cmds
}

// checkEqual fails t unless the slave holds what the master holds.
func (p *replPair) checkEqual(t *testing.T) {
	if m, s := dumpBucket(t, p.master), dumpBucket(t, p.slave); m != s {
		t.Fatalf("the slave diverged from the master\nmaster: %.2000s\nslave:  %.2000s", m, s)
	}
}

// do runs one command and returns its raw reply.
func (h *harness) do(args ...string) string {
	h.t.Helper()
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	out, prop := h.x.Exec(h.area, h.proto, false, bs, nil)
	h.lastProp = prop
	return string(out)
}

// line runs a command line (see splitLine).
func (h *harness) line(l string) string {
	h.t.Helper()
	return h.do(splitLine(l)...)
}

// prop renders lastProp as command lines: "SET k v PXAT 1", one per
// command, leaving out the versions entries (versions_test.go checks
// them).
func (h *harness) prop() []string {
	var out []string
	for _, cmd := range h.lastProp {
		if IsVersions(cmd) {
			continue
		}
		parts := make([]string, len(cmd))
		for i, a := range cmd {
			parts[i] = quoteArg(string(a))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func quoteArg(s string) string {
	if s == "" || strings.ContainsAny(s, " \"\\\x00\r\n") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// splitLine splits a command line on spaces; "double quoted" arguments may
// hold spaces and Go escapes ("" is the empty argument).
func splitLine(l string) []string {
	var out []string
	for i := 0; i < len(l); {
		switch {
		case l[i] == ' ':
			i++
		case l[i] == '"':
			j := i + 1
			for j < len(l) && l[j] != '"' {
				if l[j] == '\\' {
					j++
				}
				j++
			}
			var s string
			if _, err := fmt.Sscanf(l[i:j+1], "%q", &s); err != nil {
				panic("bad quoted argument in " + l)
			}
			out = append(out, s)
			i = j + 1
		default:
			j := i
			for j < len(l) && l[j] != ' ' {
				j++
			}
			out = append(out, l[i:j])
			i = j
		}
	}
	return out
}

// step is one command line and its exact raw reply. A want of "*" accepts
// anything (setup steps).
type step struct {
	cmd, want string
}

// run runs steps in order, failing on the first mismatch of each.
func (h *harness) run(steps []step) {
	h.t.Helper()
	for i, s := range steps {
		got := h.line(s.cmd)
		if s.want != "*" && got != s.want {
			h.t.Errorf("step %d: %s\n got: %q\nwant: %q", i, s.cmd, got, s.want)
		}
	}
}

// runOnEngines runs steps on a fresh harness per engine (see onEngines).
func runOnEngines(t *testing.T, steps []step) {
	onEngines(t, func(t *testing.T, engine string) { newHarnessOn(t, engine).run(steps) })
}

// propStep is one command line and the command lines it must propagate
// (nil: none).
type propStep struct {
	cmd  string
	want []string
}

// runProp runs steps in order, checking what each one propagated.
func (h *harness) runProp(steps []propStep) {
	h.t.Helper()
	for _, s := range steps {
		h.line(s.cmd)
		h.wantProp(s.cmd, s.want)
	}
}

// wantProp checks what the last command, cmd, propagated.
func (h *harness) wantProp(cmd string, want []string) {
	h.t.Helper()
	if got := h.prop(); !reflect.DeepEqual(got, want) {
		h.t.Errorf("%s propagated %q, want %q", cmd, got, want)
	}
}

// version returns the engine version of key in the harness's area (0 when
// missing).
func (h *harness) version(key string) int64 {
	h.t.Helper()
	e, err := h.eng.Get(engines.Key{Bucket: bucketOf(key, h.x), Area: h.area, Key: []byte(key)})
	if err != nil {
		return 0
	}
	return e.Version
}

func bucketOf(key string, x *Executor) uint32 {
	c := &Ctx{X: x, Args: [][]byte{[]byte(key)}}
	return c.Key(0).Bucket
}

// Some RESP shorthands for tables.
const (
	ok     = "+OK\r\n"
	null   = "$-1\r\n"
	nullA  = "*-1\r\n"
	empty  = "$0\r\n\r\n"
	wrongT = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	notInt = "-ERR value is not an integer or out of range\r\n"
	syntax = "-ERR syntax error\r\n"
)

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
func num(n int64) string   { return fmt.Sprintf(":%d\r\n", n) }
func arr(items ...string) string {
	return fmt.Sprintf("*%d\r\n", len(items)) + strings.Join(items, "")
}
func errReply(s string) string { return "-" + s + "\r\n" }

// myFamilies are the command families this file set implements; the test
// below checks that each of their Write/ReadOnly specs has a handler.
func myFamily(name string) bool {
	switch {
	case strings.HasPrefix(name, "tair."), strings.HasPrefix(name, "ex") && !strings.HasPrefix(name, "exh") && name != "exists" && name != "expire" && name != "expireat" && name != "expiretime" && name != "exec":
		return true
	}
	switch name {
	case "del", "unlink", "exists", "touch", "type", "expire", "pexpire", "expireat", "pexpireat",
		"ttl", "pttl", "expiretime", "pexpiretime", "persist", "copy", "rename", "renamenx", "object", "memory",
		"get", "set", "setnx", "setex", "psetex", "getset", "getdel", "getex", "mget", "mset", "msetnx",
		"incr", "decr", "incrby", "decrby", "incrbyfloat", "append", "strlen", "getrange", "substr", "setrange", "lcs",
		"cas", "cad":
		return true
	}
	return false
}

func TestEverySpecHasHandler(t *testing.T) {
	var missing []string
	for _, s := range command.All() {
		if s.Flags&(command.Write|command.ReadOnly) == 0 || !myFamily(s.Name) {
			continue
		}
		if s.Has(command.NoKey) && s.Has(command.Admin) && !strings.HasPrefix(s.Name, "tair.") {
			continue // SCAN, KEYS, FLUSHDB ...: proxy/dataserver admin paths
		}
		if !Supported(s.Name) {
			missing = append(missing, s.Name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("specs without a handler: %v", missing)
	}
	// And the other way round: every handler of these families has a spec
	// with the right flag.
	for name := range commands {
		if !myFamily(name) {
			continue
		}
		s := command.Lookup([]byte(name))
		if s == nil {
			t.Errorf("handler %q has no spec", name)
			continue
		}
		if s.Flags&(command.Write|command.ReadOnly) == 0 {
			t.Errorf("spec %q is neither Write nor ReadOnly", name)
		}
	}
}

// TestCommandLookup pins Exec's name lookup: ASCII case is ignored, and
// anything else that does not spell a registered name is unknown, with
// Redis's error texts.
func TestCommandLookup(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"SET k v", ok},
		{"get k", bulk("v")},
		{"GeT k", bulk("v")},
		{"gEt", errReply("ERR wrong number of arguments for 'get' command")},
		{"NOSUCH a b", errReply("ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' ")},
		// Kelvin sign: strings.ToLower would make it "keys"; Redis does not.
		{"\u212aEYS *", errReply("ERR unknown command '\u212aEYS', with args beginning with: '*' ")},
		{strings.Repeat("x", maxNameLen+1) + " k", errReply("ERR unknown command '" + strings.Repeat("x", maxNameLen+1) + "', with args beginning with: 'k' ")},
	})
}

// TestExecResultsOutliveCtx checks that what Exec returns does not point
// into its (pooled, reused) Ctx: the propagated commands of one command
// are intact after other commands ran, here concurrently too.
func TestExecResultsOutliveCtx(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type result struct {
				want []string
				prop [][][]byte
			}
			var kept []result
			for i := range 200 {
				k, v := fmt.Sprintf("k%d.%d", g, i), fmt.Sprintf("v%d", i)
				// Each propagates itself: SET (3 arguments), SET KEEPTTL
				// (4) and INCR (the arguments, by Exec).
				cmd := [][]string{{"SET", k, v}, {"SET", k, v, "KEEPTTL"}, {"INCR", k}}[i%3]
				args := make([][]byte, len(cmd))
				for j, a := range cmd {
					args[j] = []byte(a)
				}
				_, prop := h.x.Exec(0, 2, false, args, nil)
				kept = append(kept, result{cmd, prop})
			}
			for _, r := range kept {
				// The versions entry, then the command: each key is new,
				// so its store gave it version 1.
				want := fmt.Sprintf("[[TAIR.REPLVER 1] %s]", r.want)
				if got := fmt.Sprintf("%s", r.prop); got != want {
					t.Errorf("propagated %s, want %s", got, want)
				}
			}
		}()
	}
	wg.Wait()
}
