package dataserver

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// hookNode starts one dataserver owning every bucket alone, logging to a
// buffer.
func hookNode(t *testing.T, mut func(c *Config)) (*fakeCS, *Server, *testutil.LogBuffer) {
	t.Helper()
	cs := newFakeCS(t)
	c := testConfig(cs.addr())
	if mut != nil {
		mut(&c)
	}
	lb := &testutil.LogBuffer{}
	s, err := New(c, slog.New(slog.NewTextHandler(lb, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cs.setTable(ringTable(1, q, 1, s.Addr()))
	waitVersion(t, 1, s)
	return cs, s, lb
}

// waitHooks waits until s runs exactly the hooks names.
func waitHooks(t *testing.T, s *Server, names ...string) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() bool {
		hc := s.hooks.Load()
		if hc == nil {
			return len(names) == 0
		}
		return slices.Equal(hc.names, names)
	}, "hooks did not become %v", names)
}

func inArea(area int, args ...string) []string {
	return append([]string{"TAIR.X", strconv.Itoa(area), "1", "2"}, args...)
}

func areaCount(t *testing.T, s *Server, area int, kind, result string) float64 {
	t.Helper()
	var d dto.Metric
	if err := s.m.areaCommands.WithLabelValues(strconv.Itoa(area), kind, result).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// The defaults (stats and quota) apply until the configserver sets the
// hooks; audit lines follow the switch without a restart.
func TestHookAuditSwitch(t *testing.T) {
	cs, s, lb := hookNode(t, nil)
	waitHooks(t, s, wire.DefaultHooks...)
	cl := dial(t, s.Addr())
	long := strings.Repeat("k", 100)
	if got := cl.do(inArea(3, "SET", long, "v")...); got != "+OK" {
		t.Fatal(got)
	}
	if n := len(lb.Lines("component=audit")); n != 0 {
		t.Fatalf("%d audit lines with audit off", n)
	}

	cs.setHooks("stats", "audit")
	waitHooks(t, s, "stats", "audit")
	cl.do(inArea(3, "SET", long, "v2")...)
	cl.do(inArea(3, "GET", long)...)  // a read: not audited
	cl.do(inArea(3, "INCR", long)...) // a failed write
	cl.do(inArea(4, "MULTIEXEC", "1", "3", "SET", "tx", "1")...)
	audit := lb.Lines("component=audit")
	if len(audit) != 3 {
		t.Fatalf("audit lines:\n%s", strings.Join(audit, "\n"))
	}
	want := []string{
		"area=3 cmd=set key=" + long[:64] + " result=ok peer=127.0.0.1:",
		"area=3 cmd=incr key=" + long[:64] + " result=ERR peer=",
		"area=4 cmd=multiexec key=tx result=ok peer=",
	}
	for i, w := range want {
		if !strings.Contains(audit[i], w) || strings.Contains(audit[i], long[:65]) || !strings.Contains(audit[i], "level=INFO") {
			t.Fatalf("audit line %d: %q, want %q", i, audit[i], w)
		}
	}

	cs.setHooks()
	waitHooks(t, s)
	cl.do(inArea(3, "SET", long, "v3")...)
	if n := len(lb.Lines("component=audit")); n != 3 {
		t.Fatalf("%d audit lines after audit went off, want 3", n)
	}
	// Every hook off: no stats either.
	before := areaCount(t, s, 3, "write", "ok")
	cl.do(inArea(3, "SET", long, "v4")...)
	if after := areaCount(t, s, 3, "write", "ok"); after != before {
		t.Fatalf("stats counted with every hook off: %v -> %v", before, after)
	}
}

// Stats count per area, kind and result, MULTIEXEC, DBSIZE, SCANBUCKET,
// FLUSHDB and Tair commands included; a slave's replicated applies run no
// hook; counting allocates nothing.
func TestHookStats(t *testing.T) {
	cs, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	cs.setHooks("stats")
	waitHooks(t, a, "stats")
	waitHooks(t, b, "stats")
	ca := dial(t, a.Addr())
	k := keyIn("st", 0, q, 0) // bucket 0: a is its master, b its slave
	for i := 0; i < 3; i++ {
		if got := ca.do(inArea(7, "SET", k, strconv.Itoa(i))...); got != "+OK" {
			t.Fatal(got)
		}
	}
	ca.do(inArea(7, "GET", k)...)
	ca.do(inArea(7, "TAIR.GETV", k)...)
	ca.do(inArea(7, "HSET", k, "f", "v")...)                                 // WRONGTYPE: write error
	ca.do(inArea(7, "MULTIEXEC", "2", "3", "SET", k, "x", "2", "GET", k)...) // write ok
	ca.do(inArea(7, "DBSIZE")...)                                            // read ok
	ca.do(inArea(7, "SCANBUCKET", "0", "0")...)                              // read ok
	ca.do(inArea(7, "SCANBUCKET", "nope", "0")...)                           // read error
	ca.do(inArea(8, "GET", k)...)
	ca.do(inArea(8, "FLUSHDB")...) // write ok
	for _, c := range []struct {
		area         int
		kind, result string
		want         float64
	}{
		{7, "write", "ok", 4}, {7, "write", "error", 1}, {7, "read", "ok", 4}, {7, "read", "error", 1},
		{8, "read", "ok", 1}, {8, "write", "ok", 1}, {8, "read", "error", 0},
	} {
		if got := areaCount(t, a, c.area, c.kind, c.result); got != c.want {
			t.Errorf("area %d %s %s = %v, want %v", c.area, c.kind, c.result, got, c.want)
		}
	}
	// The slave applied the writes without hooks.
	if v, _ := engineGetArea(b, 7, k); v != "x" {
		t.Fatalf("slave value %q", v)
	}
	if got := areaCount(t, b, 7, "write", "ok"); got != 0 {
		t.Fatalf("slave counted %v replicated writes", got)
	}

	// No allocation for stats: a GET costs what it costs with no hook.
	get := [][]byte{[]byte("TAIR.X"), []byte("7"), []byte("1"), []byte("2"), []byte("GET"), []byte(k)}
	allocs := func() float64 {
		out := make([]byte, 0, 1024)
		return testing.AllocsPerRun(200, func() {
			var p pending
			out = a.handle(out[:0], get, &p, nil)
		})
	}
	withStats := allocs()
	cs.setHooks()
	waitHooks(t, a)
	without := allocs()
	if withStats != without {
		t.Fatalf("GET allocates %v times with stats, %v without", withStats, without)
	}
}

func engineGetArea(s *Server, area uint16, key string) (string, bool) {
	k := engineKey(s.Table().Bucket([]byte(key)), key)
	k.Area = area
	e, err := s.Engine().Get(k)
	if err != nil {
		return "", false
	}
	return string(e.Value), true
}

// The quota hook applies the areas' quotas: on, a persistent node
// refuses writes over them; off, no quota applies.
func TestHookQuota(t *testing.T) {
	cs, s, _ := hookNode(t, func(c *Config) { c.Engine, c.Dir = "ldb", t.TempDir() })
	cl := dial(t, s.Addr())
	cs.setAreas(map[uint16]wire.AreaConfig{3: {QuotaBytes: 1000}})
	big := strings.Repeat("v", 2000)
	quotaErr := "-" + errs.ErrQuota.RESP()
	testutil.Eventually(t, 5*time.Second, func() bool {
		return s.areas.Load().cfg[3].QuotaBytes == 1000
	}, "areas not applied")
	if got := cl.do(inArea(3, "SET", "k1", big)...); got != quotaErr {
		t.Fatalf("default hooks: write over the quota: %q, want %q", got, quotaErr)
	}
	if _, ok := engineGetArea(s, 3, "k1"); ok {
		t.Fatal("refused write stored")
	}

	cs.setHooks("stats")
	waitHooks(t, s, "stats")
	if got := cl.do(inArea(3, "SET", "k1", big)...); got != "+OK" {
		t.Fatalf("quota hook off: %q", got)
	}
	if got := cl.do(inArea(3, "SET", "k2", big)...); got != "+OK" {
		t.Fatalf("quota hook off, second write: %q", got)
	}

	// On again: the area is over its quota, so even a write the engine
	// would take (same size) is refused before it reaches the engine.
	cs.setHooks("stats", "quota")
	waitHooks(t, s, "stats", "quota")
	ver := s.keyVersion(3, s.Table().Bucket([]byte("k1")), []byte("k1"))
	time.Sleep(2 * usageTTL)
	if got := cl.do(inArea(3, "SET", "k1", strings.Repeat("w", 2000))...); got != quotaErr {
		t.Fatalf("write to an area over its quota: %q", got)
	}
	if v := s.keyVersion(3, s.Table().Bucket([]byte("k1")), []byte("k1")); v != ver {
		t.Fatalf("refused write reached the engine: version %d -> %d", ver, v)
	}
	if got := areaCount(t, s, 3, "write", "error"); got < 2 {
		t.Fatalf("stats (before quota) counted %v refusals", got)
	}
	// Deleting is let through.
	if got := cl.do(inArea(3, "DEL", "k2")...); got != ":1" {
		t.Fatalf("DEL over quota: %q", got)
	}
}

// recHook records its calls; refuse makes its Before refuse.
type recHook struct {
	name   string
	refuse error
	calls  *[]string
	mu     *sync.Mutex
}

func (h *recHook) Before(r hookRequest) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.calls = append(*h.calls, h.name+".before:"+r.cmd)
	return h.refuse
}

func (h *recHook) After(r hookRequest, reply []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.calls = append(*h.calls, fmt.Sprintf("%s.after:%s:%s", h.name, r.cmd, replyResult(reply)))
}

// A refusing Before stops the chain: later hooks do not run, the engine
// is not touched, the refusal is the reply, and After runs (in reverse)
// for every hook whose Before ran. MULTIEXEC goes through the chain.
func TestHookChainRefusal(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	var refuse atomic.Bool
	refuse.Store(true)
	add := func(name string, refuses bool) {
		hookKinds[name] = func(*Server) hook {
			h := &recHook{name: name, calls: &calls, mu: &mu}
			if refuses && refuse.Load() {
				h.refuse = errs.ErrLocked
			}
			return h
		}
		t.Cleanup(func() { delete(hookKinds, name) })
	}
	add("t1", false)
	add("tref", true)
	add("t3", false)
	cs, s, _ := hookNode(t, nil)
	cs.setHooks("t1", "tref", "t3")
	waitHooks(t, s, "t1", "tref", "t3")
	cl := dial(t, s.Addr())
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		c := calls
		calls = nil
		return c
	}
	take()
	lockedErr := "-" + errs.ErrLocked.RESP()
	if got := cl.do(inArea(0, "SET", "rk", "v")...); got != lockedErr {
		t.Fatalf("refused SET: %q", got)
	}
	if _, ok := engineGetArea(s, 0, "rk"); ok {
		t.Fatal("refused SET reached the engine")
	}
	want := []string{"t1.before:set", "tref.before:set", "tref.after:set:LOCKED", "t1.after:set:LOCKED"}
	if got := take(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if got := cl.do(inArea(0, "MULTIEXEC", "1", "3", "SET", "mk", "v")...); got != lockedErr {
		t.Fatalf("refused MULTIEXEC: %q", got)
	}
	if _, ok := engineGetArea(s, 0, "mk"); ok {
		t.Fatal("refused MULTIEXEC reached the engine")
	}
	want = []string{"t1.before:multiexec", "tref.before:multiexec", "tref.after:multiexec:LOCKED", "t1.after:multiexec:LOCKED"}
	if got := take(); !slices.Equal(got, want) {
		t.Fatalf("MULTIEXEC calls %v, want %v", got, want)
	}

	// Nothing refuses: every hook runs both phases.
	refuse.Store(false)
	cs.setHooks("t3", "tref", "t1")
	waitHooks(t, s, "t3", "tref", "t1")
	take()
	if got := cl.do(inArea(0, "MULTIEXEC", "1", "3", "SET", "mk", "v")...); got != "*1\r\n+OK" {
		t.Fatalf("MULTIEXEC: %q", got)
	}
	want = []string{"t3.before:multiexec", "tref.before:multiexec", "t1.before:multiexec",
		"t1.after:multiexec:ok", "tref.after:multiexec:ok", "t3.after:multiexec:ok"}
	if got := take(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}
