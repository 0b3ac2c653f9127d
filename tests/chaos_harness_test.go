package tests

// The harness of the chaos suite (chaos_test.go): a cluster of child
// processes (two configservers, the first embedding etcd; dataservers of
// the rdb engine with copy count 2; two proxies), clients writing through
// both proxies while a case injects faults, the fault timeline, the
// table's history, and the checks every case ends with: every
// acknowledged write reads back, and the versioned operations on a few
// keys are linearizable (porcupine).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/wire"
)

const (
	// chaosRestoreBound is how long the configserver may take to restore
	// the copy count after a fault (tair_configserver_buckets_under_replicated
	// back to 0 on the leader).
	chaosRestoreBound = 20 * time.Second
	chaosBuckets      = 64
	chaosCopies       = 2
	// Writers of unique keys (SET) and clients of the versioned keys,
	// per proxy.
	chaosSetWriters = 2
	chaosVerClients = 2
	chaosVerKeys    = 12
	// chaosReadRetries bounds the final reads' retries of errors.
	chaosReadRetries = 30 * time.Second
	// chaosCheckTimeout bounds porcupine's search.
	chaosCheckTimeout = 2 * time.Minute

	metricUnderReplicated = "tair_configserver_buckets_under_replicated"
	metricLost            = "tair_configserver_buckets_lost_total"
	metricUnavailable     = "tair_configserver_buckets_unavailable"
	metricRestoreSeconds  = "tair_configserver_restore_seconds"
	metricUnderSeconds    = "tair_configserver_under_replicated_seconds"
)

// chaosMode: the short mode (make test) runs each case once with short
// phases; TAIR_CHAOS_RUNS=N (make chaos) selects the long mode, N runs
// of each case in a row with seeds TAIR_CHAOS_SEED, +1, ...
type chaosMode struct {
	long  bool
	runs  int
	first uint64
}

func chaosSettings(t *testing.T) chaosMode {
	m := chaosMode{runs: 1, first: uint64(time.Now().UnixNano() % 1_000_000_000)}
	if s := os.Getenv("TAIR_CHAOS_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TAIR_CHAOS_RUNS=%q: want a positive count", s)
		}
		m.long, m.runs = true, n
	}
	if s := os.Getenv("TAIR_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TAIR_CHAOS_SEED=%q: %v", s, err)
		}
		m.first = n
	}
	return m
}

// runChaos runs body once per seed, each in a subtest named after it.
func runChaos(t *testing.T, body func(t *testing.T, rng *rand.Rand, long bool)) {
	m := chaosSettings(t)
	for i := 0; i < m.runs; i++ {
		seed := m.first + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runs := ""
			if m.long {
				runs = " TAIR_CHAOS_RUNS=1"
			}
			t.Logf("seed %d, %s mode; replay with TAIR_CHAOS_SEED=%d%s go test -count=1 -run '^%s$' ./tests/",
				seed, map[bool]string{false: "short", true: "long"}[m.long], seed, runs, strings.Split(t.Name(), "/")[0])
			body(t, rand.New(rand.NewPCG(seed, 0x7a17)), m.long)
		})
	}
}

// chaosOptions shape a chaos cluster.
type chaosOptions struct {
	dataServers int
	// netFaults starts every dataserver in a cgroup of its own so that
	// it can be cut off (testcluster.NetFaults); without nftables the
	// test is skipped, or fails under CI.
	netFaults bool
	// optionalNetFaults is netFaults that, when unavailable, leaves
	// net nil instead of skipping (the case drops its partition step).
	optionalNetFaults bool
}

// chaos is one run: the cluster, the faults done to it, the loads.
type chaos struct {
	t     *testing.T
	rng   *rand.Rand
	long  bool
	pc    *testcluster.ProcCluster
	net   *testcluster.NetFaults
	start time.Time

	mu     sync.Mutex
	dead   map[*testcluster.Proc]bool   // dataservers killed, not restarted
	away   map[*testcluster.Proc]string // paused or cut off: how
	events []string

	tables    *tableLog
	set       *setLoad
	ver       *verLoad
	stopLoads chan struct{}
	loads     sync.WaitGroup
	stopped   bool
	fallback  atomic.Bool // the under-replicated metric is missing: computed from the table
}

func newChaos(t *testing.T, rng *rand.Rand, long bool, o chaosOptions) *chaos {
	t.Helper()
	c := &chaos{t: t, rng: rng, long: long, dead: map[*testcluster.Proc]bool{}, away: map[*testcluster.Proc]string{}}
	if o.netFaults {
		c.net = testcluster.RequireNetFaults(t)
	} else if o.optionalNetFaults {
		n, err := testcluster.NewNetFaults(t)
		switch {
		case err == nil:
			c.net = n
		case os.Getenv("CI") != "":
			t.Fatalf("network faults unavailable under CI: %v", err)
		default:
			t.Logf("network faults unavailable, the partition step is left out: %v", err)
		}
	}
	// etcd runs as a process of its own (as in production), so killing
	// the leading configserver leaves the standby an etcd to take over
	// with.
	testcluster.RequireEtcd(t)
	opts := testcluster.ProcOptions{ConfigServers: 2, DataServers: o.dataServers, Proxies: 2,
		Copies: chaosCopies, Buckets: chaosBuckets, Engine: "rdb", Etcd: testcluster.StartEtcd(t, 1).Endpoints()}
	if c.net != nil {
		opts.Prepare = func(p *testcluster.Proc) {
			if p.Kind == "dataserver" {
				if err := c.net.Attach(p); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	c.pc = testcluster.StartProcs(t, opts)
	c.start = time.Now()
	c.tables = watchTables(c)
	// The proxies serve once they have a table; a first write through
	// each proves it.
	for _, p := range c.pc.Proxies {
		cl := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.Set(ctx, "chaos:hello", "1", 0).Err()
		cancel()
		cl.Close()
		if err != nil {
			t.Fatalf("first write through proxy %s: %v", p.Addr, err)
		}
	}
	var names []string
	for i, p := range c.pc.DataServers {
		names = append(names, fmt.Sprintf("ds%d=%s", i, p.Addr))
	}
	c.event("cluster up: configservers %s (etcd a process of its own), dataservers %s, proxies %s %s",
		strings.Join(c.pc.ConfigServerAddrs(), " "), strings.Join(names, " "), c.pc.Proxies[0].Addr, c.pc.Proxies[1].Addr)
	c.stopLoads = make(chan struct{})
	c.set = startSetLoad(c)
	c.ver = startVerLoad(c)
	t.Cleanup(c.stop)
	return c
}

// now is the time on the run's timeline.
func (c *chaos) now() time.Duration { return time.Since(c.start) }

// event logs a step of the timeline.
func (c *chaos) event(format string, args ...any) {
	line := fmt.Sprintf("[%7.2fs] ", c.now().Seconds()) + fmt.Sprintf(format, args...)
	c.mu.Lock()
	c.events = append(c.events, line)
	c.mu.Unlock()
	c.t.Log(line)
}

func (c *chaos) name(p *testcluster.Proc) string {
	for i, d := range c.pc.DataServers {
		if d == p {
			return fmt.Sprintf("ds%d %s", i, p.Addr)
		}
	}
	for i, d := range c.pc.ConfigServers {
		if d == p {
			return fmt.Sprintf("cs%d %s", i, p.Addr)
		}
	}
	return p.Kind + " " + p.Addr
}

// live returns the dataservers neither dead nor away.
func (c *chaos) live() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for _, p := range c.pc.DataServers {
		if !c.dead[p] && c.away[p] == "" {
			out[p.Addr] = true
		}
	}
	return out
}

// alive returns the dataservers not dead (away ones included).
func (c *chaos) alive() []*testcluster.Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*testcluster.Proc
	for _, p := range c.pc.DataServers {
		if !c.dead[p] {
			out = append(out, p)
		}
	}
	return out
}

func (c *chaos) pick(ps []*testcluster.Proc) *testcluster.Proc { return ps[c.rng.IntN(len(ps))] }

// table returns the current table (any configserver).
func (c *chaos) table() *route.Table {
	c.t.Helper()
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		tb, err := c.pc.Client().Table(ctx, 0, 0)
		cancel()
		if err == nil {
			return tb
		}
		if i == 20 {
			c.t.Fatalf("no table: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// --- faults ---

func (c *chaos) kill(ps ...*testcluster.Proc) {
	var names []string
	for _, p := range ps {
		names = append(names, c.name(p))
	}
	c.event("kill -9 %s (%s)", strings.Join(names, " and "), c.copyState())
	testcluster.KillTogether(ps...)
	c.mu.Lock()
	for _, p := range ps {
		if p.Kind == "dataserver" {
			c.dead[p] = true
		}
	}
	c.mu.Unlock()
}

func (c *chaos) restart(p *testcluster.Proc) {
	c.event("restart %s", c.name(p))
	p.Start()
	c.mu.Lock()
	delete(c.dead, p)
	c.mu.Unlock()
	c.event("%s is up again", c.name(p))
}

func (c *chaos) pause(p *testcluster.Proc, d time.Duration) {
	c.event("SIGSTOP %s for %v (%s)", c.name(p), d, c.copyState())
	c.mu.Lock()
	c.away[p] = "paused"
	c.mu.Unlock()
	p.Pause()
	time.Sleep(d)
	p.Resume()
	c.mu.Lock()
	delete(c.away, p)
	c.mu.Unlock()
	c.event("SIGCONT %s", c.name(p))
}

// partition cuts p off in direction d for span, checks the cut holds (a
// PING gets no answer) and heals it.
func (c *chaos) partition(p *testcluster.Proc, d testcluster.Direction, span time.Duration) {
	c.t.Helper()
	c.event("partition %s, direction %v, for %v (%s)", c.name(p), d, span, c.copyState())
	c.mu.Lock()
	c.away[p] = "cut " + d.String()
	c.mu.Unlock()
	if err := c.net.Cut(p, d); err != nil {
		c.t.Fatal(err)
	}
	start := time.Now()
	if pingNode(p.Addr) {
		c.t.Errorf("%s answers PING while cut off (%v)", c.name(p), d)
	}
	time.Sleep(span - time.Since(start))
	if err := c.net.Heal(p); err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	delete(c.away, p)
	c.mu.Unlock()
	c.event("healed %s", c.name(p))
	ok := false
	for i := 0; i < 20 && !ok; i++ {
		ok = pingNode(p.Addr)
	}
	if !ok {
		c.t.Errorf("%s does not answer PING after the heal", c.name(p))
	}
}

// pingNode reports whether addr answers a PING within 500 ms.
func pingNode(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// killLeader kills the leading configserver; it reports which it was.
func (c *chaos) killLeader() (*testcluster.Proc, int) {
	c.t.Helper()
	var leader *testcluster.Proc
	deadline := time.Now().Add(15 * time.Second)
	for leader == nil {
		if leader = c.pc.Leader(); leader == nil {
			if time.Now().After(deadline) {
				c.t.Fatalf("no configserver leads")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	i := slices.Index(c.pc.ConfigServers, leader)
	c.event("kill -9 the leading configserver %s (%s)", c.name(leader), c.copyState())
	leader.Kill()
	return leader, i
}

// --- the copy count ---

// copyState describes the leader's view of the copies, for the
// timeline.
func (c *chaos) copyState() string {
	leader := c.pc.Leader()
	if leader == nil {
		return "no configserver leads"
	}
	n, from, err := c.underReplicated(leader)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d buckets under-replicated (%s)", n, from)
}

// underReplicated returns the leader's count of under-replicated buckets:
// its metric, or, while it exports none, the count from its table (a
// bucket is under-replicated when fewer than min(copies, live nodes) of
// its serving copies are on live nodes and not marked behind).
func (c *chaos) underReplicated(leader *testcluster.Proc) (int, string, error) {
	m, err := leader.Metrics()
	if err != nil {
		return 0, "", err
	}
	if v, ok := m[metricUnderReplicated]; ok {
		return int(v), "metric", nil
	}
	if !c.fallback.Swap(true) {
		c.t.Logf("%s exports no %s yet: the harness computes it from the table", c.name(leader), metricUnderReplicated)
	}
	tb, err := wire.NewClient(leader.Addr).Table(context.Background(), 0, 0)
	if err != nil {
		return 0, "", err
	}
	return len(underReplicatedBuckets(tb, c.live())), "from the table", nil
}

func underReplicatedBuckets(tb *route.Table, live map[string]bool) []route.BucketID {
	need := min(tb.Copies, len(live))
	var out []route.BucketID
	for b, row := range tb.Serving {
		good := 0
		for i, n := range row {
			if n == "" || !live[n] || (i > 0 && tb.IsBehind(row[0], n)) {
				continue
			}
			good++
		}
		if good < need {
			out = append(out, route.BucketID(b))
		}
	}
	return out
}

// waitRestored waits, at most chaosRestoreBound, until the leader sees
// every dataserver as the harness knows it (dead and away ones down,
// the others alive) and reports no bucket under-replicated. It fails the
// test when the bound passes and returns how long it took.
func (c *chaos) waitRestored(why string) (time.Duration, bool) {
	c.t.Helper()
	start := time.Now()
	last := ""
	for {
		ok, state := c.restored()
		if ok {
			took := time.Since(start)
			extra := ""
			if l := c.pc.Leader(); l != nil {
				if m, err := l.Metrics(); err == nil {
					if v, ok := m[metricRestoreSeconds]; ok {
						extra = fmt.Sprintf(" (%s %.2f)", metricRestoreSeconds, v)
					}
				}
			}
			c.event("copy count restored %v after %s%s", took.Round(10*time.Millisecond), why, extra)
			return took, true
		}
		if state != last {
			last = state
		}
		if time.Since(start) > chaosRestoreBound {
			c.event("copy count NOT restored %v after %s: %s", chaosRestoreBound, why, last)
			c.t.Errorf("copy count not restored within %v after %s: %s", chaosRestoreBound, why, last)
			c.logUnderReplicated()
			return time.Since(start), false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// restored is one look for waitRestored; when not, it says why.
func (c *chaos) restored() (bool, string) {
	leader := c.pc.Leader()
	if leader == nil {
		return false, "no configserver leads"
	}
	var nodes []wire.NodeStatus
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err := wire.NewClient(leader.Addr).Get(ctx, "/v1/nodes", &nodes)
	cancel()
	if err != nil {
		return false, fmt.Sprintf("nodes: %v", err)
	}
	live := c.live()
	for _, n := range nodes {
		if n.Alive != live[n.Addr] {
			return false, fmt.Sprintf("the leader %s sees %s alive=%v", c.name(leader), n.Addr, n.Alive)
		}
	}
	n, from, err := c.underReplicated(leader)
	if err != nil {
		return false, err.Error()
	}
	if n > 0 {
		return false, fmt.Sprintf("%d buckets under-replicated (%s, leader %s)", n, from, c.name(leader))
	}
	return true, ""
}

// logUnderReplicated logs the leader's table rows that lack copies.
func (c *chaos) logUnderReplicated() {
	leader := c.pc.Leader()
	if leader == nil {
		return
	}
	if m, err := leader.Metrics(); err == nil {
		for _, k := range []string{metricUnderReplicated, metricUnderSeconds, metricRestoreSeconds, metricLost} {
			if v, ok := m[k]; ok {
				c.t.Logf("leader %s: %s %v", c.name(leader), k, v)
			}
		}
	}
	tb, err := wire.NewClient(leader.Addr).Table(context.Background(), 0, 0)
	if err != nil {
		return
	}
	under := underReplicatedBuckets(tb, c.live())
	var rows []string
	for _, b := range under {
		rows = append(rows, fmt.Sprintf("%d:%v", b, tb.Serving[b]))
	}
	c.t.Logf("table %d: %d buckets lack copies on live nodes (live %v): %s; migrating %v; behind %v",
		tb.Version, len(under), slices.Sorted(maps.Keys(c.live())), strings.Join(rows, " "), tb.Migrating, tb.Behind)
}

// lostBuckets returns the buckets whose every serving copy in tb is on
// one of victims.
func lostBuckets(tb *route.Table, victims ...*testcluster.Proc) map[route.BucketID]bool {
	out := map[route.BucketID]bool{}
	for b, row := range tb.Serving {
		all := true
		for _, n := range row {
			if n != "" && !slices.ContainsFunc(victims, func(p *testcluster.Proc) bool { return p.Addr == n }) {
				all = false
			}
		}
		if all {
			out[route.BucketID(b)] = true
		}
	}
	return out
}

// sharedCopies counts, per other node, the buckets of tb both hold.
func sharedCopies(tb *route.Table, node string) map[string]int {
	out := map[string]int{}
	for _, row := range tb.Serving {
		if !slices.Contains(row, node) {
			continue
		}
		for _, n := range row {
			if n != "" && n != node {
				out[n]++
			}
		}
	}
	return out
}

// --- the table's history ---

type tableAt struct {
	at time.Duration
	tb *route.Table
}

// tableLog records every table version the configservers publish.
type tableLog struct {
	mu     sync.Mutex
	tables []tableAt
	stop   chan struct{}
	done   chan struct{}
}

func watchTables(c *chaos) *tableLog {
	l := &tableLog{stop: make(chan struct{}), done: make(chan struct{})}
	cl := c.pc.Client()
	go func() {
		defer close(l.done)
		var after route.Version
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			tb, err := cl.Table(ctx, after, 3*time.Second)
			cancel()
			if err != nil {
				if !errors.Is(err, wire.ErrNotModified) {
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			if tb.Version <= after {
				continue
			}
			after = tb.Version
			l.mu.Lock()
			l.tables = append(l.tables, tableAt{c.now(), tb})
			l.mu.Unlock()
		}
	}()
	c.t.Cleanup(func() {
		close(l.stop)
		<-l.done
	})
	return l
}

// rowHistory describes bucket b's serving row in every table where it
// (or the behind marks of its copies) changed.
func (l *tableLog) rowHistory(b route.BucketID) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	prev := ""
	for _, ta := range l.tables {
		if int(b) >= len(ta.tb.Serving) {
			continue
		}
		row := ta.tb.Serving[b]
		var behind []string
		for _, s := range row[min(1, len(row)):] {
			if len(row) > 0 && ta.tb.IsBehind(row[0], s) {
				behind = append(behind, s)
			}
		}
		desc := fmt.Sprintf("%v", row)
		if len(behind) > 0 {
			desc += fmt.Sprintf(" behind %v", behind)
		}
		if mv, ok := ta.tb.MoveOf(b); ok {
			desc += fmt.Sprintf(" moving %s->%s", mv.From, mv.To)
		}
		if desc != prev {
			out = append(out, fmt.Sprintf("[%7.2fs] v%d %s", ta.at.Seconds(), ta.tb.Version, desc))
			prev = desc
		}
	}
	return out
}

// --- outcomes ---

type outcome int

const (
	outOK        outcome = iota
	outFailed            // refused: did not apply
	outVerError          // VERERROR: did not apply, the version differed
	outAmbiguous         // may or may not have applied
)

// classify sorts a write's reply. Only errors that say the write did
// not apply count as failures: NOTMASTER and TRYAGAIN (the proxy's retry
// budget ran out before any node took it), CLUSTERDOWN (no master could
// be reached) and VERERROR. "... may have applied", TIMEOUT, a client
// timeout, a broken connection and any error not known are ambiguous.
// (The proxy resends a write that may have reached a dataserver only
// when it is idempotent, as a plain SET is: a refused SET may have
// applied, but refused SETs are neither acknowledged nor checked. A
// TAIR.PUTV is never resent after it may have applied: the client gets
// "may have applied".)
func classify(err error) (outcome, string) {
	if err == nil {
		return outOK, ""
	}
	msg := err.Error()
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.Nil) {
		switch {
		case strings.Contains(msg, "may have applied"):
			return outAmbiguous, msg
		case strings.HasPrefix(msg, "VERERROR"):
			return outVerError, msg
		case strings.HasPrefix(msg, "NOTMASTER"), strings.HasPrefix(msg, "TRYAGAIN"), strings.HasPrefix(msg, "CLUSTERDOWN"):
			return outFailed, msg
		}
	}
	return outAmbiguous, msg
}

func newClient(addr string) *redis.Client {
	// No client retries: a command is sent once, so what the client
	// sees is what the proxy did. The read timeout is past the proxy's
	// retry budget and request timeout together.
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, Protocol: 2,
		DialTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 15 * time.Second})
}

// errLog keeps the first few errors of each kind, with when and where.
type errLog struct {
	mu      sync.Mutex
	counts  map[string]int
	samples []string
}

var errKind = regexp.MustCompile(`^[A-Z]+`)

func (l *errLog) add(at time.Duration, what string, msg string) {
	kind := errKind.FindString(msg)
	if kind == "" {
		kind = "client: " + msg
		if len(kind) > 60 {
			kind = kind[:60]
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[kind]++
	if l.counts[kind] <= 3 && len(l.samples) < 40 {
		l.samples = append(l.samples, fmt.Sprintf("[%7.2fs] %s: %s", at.Seconds(), what, msg))
	}
}

func (l *errLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l.counts)) {
		parts = append(parts, fmt.Sprintf("%s x%d", k, l.counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// --- unique-key writes ---

type ackRec struct {
	val   string
	at    time.Duration
	proxy int
}

// setLoad: writers SET unique keys through both proxies; every
// acknowledged one must read back.
type setLoad struct {
	mu                sync.Mutex
	acked             map[string]ackRec
	ambiguous, failed int
	errs              errLog
	perProxyAcks      [2]int
	slowest           time.Duration // the slowest write, whatever its outcome
	slowestAt         time.Duration
	slowestWhat       string
}

func startSetLoad(c *chaos) *setLoad {
	l := &setLoad{acked: map[string]ackRec{}}
	var seq atomic.Int64
	for w := 0; w < 2*chaosSetWriters; w++ {
		proxy := w % 2
		c.loads.Add(1)
		go func() {
			defer c.loads.Done()
			cl := newClient(c.pc.Proxies[proxy].Addr)
			defer cl.Close()
			for {
				select {
				case <-c.stopLoads:
					return
				default:
				}
				n := seq.Add(1)
				k := fmt.Sprintf("chaos:%d", n)
				v := fmt.Sprintf("v%d-p%d", n, proxy)
				call := c.now()
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				err := cl.Set(ctx, k, v, 0).Err()
				cancel()
				at := c.now()
				o, msg := classify(err)
				l.mu.Lock()
				if d := at - call; d > l.slowest {
					l.slowest, l.slowestAt = d, call
					l.slowestWhat = fmt.Sprintf("SET %s via proxy %d: %v", k, proxy, err)
				}
				switch o {
				case outOK:
					l.acked[k] = ackRec{v, at, proxy}
					l.perProxyAcks[proxy]++
				case outAmbiguous:
					l.ambiguous++
				default:
					l.failed++
				}
				l.mu.Unlock()
				if o != outOK {
					l.errs.add(at, fmt.Sprintf("SET %s via proxy %d", k, proxy), msg)
					time.Sleep(20 * time.Millisecond)
				} else {
					// About 500 writes/s per writer at most: the
					// machine runs nine processes on two cores.
					time.Sleep(2 * time.Millisecond)
				}
			}
		}()
	}
	return l
}

type lostKey struct {
	key    string
	want   string
	got    string
	err    error
	rec    ackRec
	bucket route.BucketID
}

// readBack reads every acknowledged write of the keys keep selects,
// bucket by bucket (a bucket without a master makes each read of it wait
// out the proxy's retry budget, so it must not hold up the others), in
// pipelines through either proxy, retrying errors until deadline. It
// returns the writes that read back otherwise (lost) and those no read
// could answer.
func (c *chaos) readBack(acked map[string]ackRec, keep func(string) bool, deadline time.Time) (lost []lostKey, unreadable []lostKey) {
	byBucket := map[route.BucketID][]string{}
	for k := range acked {
		if keep(k) {
			b := route.BucketOf([]byte(k), chaosBuckets)
			byBucket[b] = append(byBucket[b], k)
		}
	}
	work := make(chan []string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients := []*redis.Client{newClient(c.pc.Proxies[0].Addr), newClient(c.pc.Proxies[1].Addr)}
			defer clients[0].Close()
			defer clients[1].Close()
			for pending := range work {
				sort.Strings(pending)
				l, u := readKeys(clients, acked, pending, deadline)
				mu.Lock()
				lost = append(lost, l...)
				unreadable = append(unreadable, u...)
				mu.Unlock()
			}
		}()
	}
	for _, ks := range byBucket {
		work <- ks
	}
	close(work)
	wg.Wait()
	return lost, unreadable
}

// readKeys is readBack for one bucket's keys.
func readKeys(clients []*redis.Client, acked map[string]ackRec, pending []string, deadline time.Time) (lost []lostKey, unreadable []lostKey) {
	lastErr := map[string]error{}
	for attempt := 0; len(pending) > 0; attempt++ {
		cl := clients[attempt%2]
		var retry []string
		for i := 0; i < len(pending); i += 500 {
			batch := pending[i:min(len(pending), i+500)]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			pipe := cl.Pipeline()
			cmds := make([]*redis.StringCmd, len(batch))
			for j, k := range batch {
				cmds[j] = pipe.Get(ctx, k)
			}
			_, _ = pipe.Exec(ctx)
			cancel()
			for j, k := range batch {
				got, err := cmds[j].Result()
				rec := acked[k]
				switch {
				case err == nil && got == rec.val:
				case err == nil || errors.Is(err, redis.Nil):
					lost = append(lost, lostKey{key: k, want: rec.val, got: got, err: err, rec: rec, bucket: route.BucketOf([]byte(k), chaosBuckets)})
				default:
					lastErr[k] = err
					retry = append(retry, k)
				}
			}
		}
		pending = retry
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, k := range pending {
				unreadable = append(unreadable, lostKey{key: k, want: acked[k].val, err: lastErr[k], rec: acked[k], bucket: route.BucketOf([]byte(k), chaosBuckets)})
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return lost, unreadable
}

// --- versioned operations and the linearizability check ---

type verInput struct {
	Key   string
	Put   bool
	Value string // Put: the value written
	Ver   int64  // Put: the expected version
}

type verResult int

const (
	verRead verResult = iota
	verPutOK
	verPutVerError
	verPutUnknown
)

type verOutput struct {
	Result verResult
	Exists bool // read: the key exists
	Value  string
	Ver    int64
}

// verState is one key's register: Tair's value and version.
type verState struct {
	Exists bool
	Value  string
	Ver    int64
}

// verModel is SPEC §2's version rules for TAIR.GETV and TAIR.PUTV on one
// key: a put on a missing key applies whatever version it carries
// (version 1); on an existing key it applies with version 0 or the
// current version (+1) and fails with VERERROR otherwise. A put of
// unknown outcome steps as the model says: porcupine may linearize it
// anywhere up to the end of the history, where it changes nothing
// observed.
var verModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			k := op.Input.(verInput).Key
			if _, ok := by[k]; !ok {
				order = append(order, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() interface{} { return verState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(verState), input.(verInput), output.(verOutput)
		if !in.Put {
			if out.Exists != s.Exists {
				return false, s
			}
			return !s.Exists || (out.Value == s.Value && out.Ver == s.Ver), s
		}
		applies := !s.Exists || in.Ver == 0 || in.Ver == s.Ver
		next := s
		if applies {
			next = verState{Exists: true, Value: in.Value, Ver: s.Ver + 1}
			if !s.Exists {
				next.Ver = 1
			}
		}
		switch out.Result {
		case verPutOK:
			return applies, next
		case verPutVerError:
			return !applies, s
		default: // unknown
			return true, next
		}
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(verInput), output.(verOutput)
		if !in.Put {
			if !out.Exists {
				return fmt.Sprintf("getv(%s) -> nil", in.Key)
			}
			return fmt.Sprintf("getv(%s) -> %s v%d", in.Key, out.Value, out.Ver)
		}
		res := map[verResult]string{verPutOK: "OK", verPutVerError: "VERERROR", verPutUnknown: "unknown"}[out.Result]
		return fmt.Sprintf("putv(%s, %s, v%d) -> %s", in.Key, in.Value, in.Ver, res)
	},
	DescribeState: func(state interface{}) string {
		s := state.(verState)
		if !s.Exists {
			return "missing"
		}
		return fmt.Sprintf("%s v%d", s.Value, s.Ver)
	},
}

type ackedPut struct {
	key, value string
	ver        int64 // the version it was given (expected + 1)
	at         time.Duration
}

// verLoad: clients read and conditionally write a few keys through both
// proxies (TAIR.GETV, then TAIR.PUTV with the version read; now and
// then a stale one), recording the history for porcupine.
type verLoad struct {
	keys    []string
	mu      sync.Mutex
	ops     []porcupine.Operation
	unknown []int // indexes in ops of puts of unknown outcome
	puts    []ackedPut
	counts  map[string]int
	errs    errLog
}

func startVerLoad(c *chaos) *verLoad {
	l := &verLoad{counts: map[string]int{}}
	for i := 0; i < chaosVerKeys; i++ {
		l.keys = append(l.keys, fmt.Sprintf("ver:%d", i))
	}
	for id := 0; id < 2*chaosVerClients; id++ {
		proxy := id % 2
		rng := rand.New(rand.NewPCG(c.rng.Uint64(), uint64(id)))
		c.loads.Add(1)
		go func() {
			defer c.loads.Done()
			cl := newClient(c.pc.Proxies[proxy].Addr)
			defer cl.Close()
			lastVer := map[string]int64{}
			for n := 0; ; n++ {
				select {
				case <-c.stopLoads:
					return
				default:
				}
				key := l.keys[rng.IntN(len(l.keys))]
				if st, ok := l.read(c, cl, id, key, fmt.Sprintf("proxy %d", proxy), 15*time.Second); ok {
					lastVer[key] = st.Ver
				}
				ver := lastVer[key]
				if ver == 0 {
					ver = 1 // a missing key takes any version
				}
				if ver > 1 && rng.IntN(8) == 0 {
					ver-- // stale: VERERROR unless the key was lost
				}
				val := fmt.Sprintf("c%d.%d", id, n)
				call := c.now()
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				err := cl.Do(ctx, "TAIR.PUTV", key, val, ver).Err()
				cancel()
				ret := c.now()
				o, msg := classify(err)
				in := verInput{Key: key, Put: true, Value: val, Ver: ver}
				l.mu.Lock()
				switch o {
				case outOK:
					l.record(id, in, verOutput{Result: verPutOK}, call, ret)
					l.puts = append(l.puts, ackedPut{key, val, ver + 1, ret})
					lastVer[key] = ver + 1
					l.counts["put ok"]++
				case outVerError:
					l.record(id, in, verOutput{Result: verPutVerError}, call, ret)
					l.counts["put VERERROR"]++
				case outAmbiguous:
					l.unknown = append(l.unknown, len(l.ops))
					l.record(id, in, verOutput{Result: verPutUnknown}, call, math.MaxInt64)
					l.counts["put ambiguous"]++
				default:
					l.counts["put refused"]++
				}
				l.mu.Unlock()
				if o == outAmbiguous || o == outFailed {
					l.errs.add(ret, fmt.Sprintf("PUTV %s %s %d via proxy %d", key, val, ver, proxy), msg)
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return l
}

// record appends an operation; l.mu is held.
func (l *verLoad) record(client int, in verInput, out verOutput, call, ret time.Duration) {
	r := int64(ret)
	if ret == math.MaxInt64 {
		r = math.MaxInt64
	}
	l.ops = append(l.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: int64(call), Return: r})
}

// read does a TAIR.GETV and records it when it answered.
func (l *verLoad) read(c *chaos, cl *redis.Client, client int, key, via string, timeout time.Duration) (verState, bool) {
	call := c.now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	res, err := cl.Do(ctx, "TAIR.GETV", key).Slice()
	cancel()
	ret := c.now()
	in := verInput{Key: key}
	switch {
	case errors.Is(err, redis.Nil):
		l.mu.Lock()
		l.record(client, in, verOutput{Result: verRead}, call, ret)
		l.counts["get nil"]++
		l.mu.Unlock()
		return verState{}, true
	case err != nil:
		l.mu.Lock()
		l.counts["get error"]++
		l.mu.Unlock()
		l.errs.add(ret, fmt.Sprintf("GETV %s via %s", key, via), err.Error())
		return verState{}, false
	}
	st, perr := parseGetv(res)
	if perr != nil {
		l.errs.add(ret, fmt.Sprintf("GETV %s via %s", key, via), perr.Error())
		return verState{}, false
	}
	l.mu.Lock()
	l.record(client, in, verOutput{Result: verRead, Exists: true, Value: st.Value, Ver: st.Ver}, call, ret)
	l.counts["get ok"]++
	l.mu.Unlock()
	return st, true
}

func parseGetv(res []interface{}) (verState, error) {
	if len(res) != 2 {
		return verState{}, fmt.Errorf("TAIR.GETV answered %v", res)
	}
	v, ok1 := res[0].(string)
	ver, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		return verState{}, fmt.Errorf("TAIR.GETV answered %#v", res)
	}
	return verState{Exists: true, Value: v, Ver: ver}, nil
}

// --- the end of a run ---

// stop stops the loads (once).
func (c *chaos) stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	c.mu.Unlock()
	close(c.stopLoads)
	c.loads.Wait()
}

// finish ends a run: the loads stop, the copy count must be restored,
// every acknowledged write must read back (except the keys skip
// selects: those of buckets a case lost on purpose) and the versioned
// history must be linearizable.
func (c *chaos) finish(skip func(key string) bool) {
	c.t.Helper()
	if skip == nil {
		skip = func(string) bool { return false }
	}
	time.Sleep(2 * time.Second) // writes after the last fault
	c.stop()
	c.event("loads stopped")
	c.waitRestored("the last fault")

	s := c.set
	s.mu.Lock()
	acked := s.acked
	s.mu.Unlock()
	skipped := 0
	for k := range acked {
		if skip(k) {
			skipped++
		}
	}
	// The final reads retry errors (a bucket without a master) for
	// chaosReadRetries in all.
	deadline := time.Now().Add(chaosReadRetries)
	lost, unreadable := c.readBack(acked, func(k string) bool { return !skip(k) }, deadline)
	c.t.Logf("unique-key writes: %d acknowledged (proxy 0: %d, proxy 1: %d; %d in buckets left out), %d ambiguous, %d refused; lost %d, unreadable %d; errors: %s; slowest %v, sent at %.2fs (%s)",
		len(acked), s.perProxyAcks[0], s.perProxyAcks[1], skipped, s.ambiguous, s.failed, len(lost), len(unreadable), s.errs.String(),
		s.slowest.Round(time.Millisecond), s.slowestAt.Seconds(), s.slowestWhat)
	for _, e := range s.errs.samples {
		c.t.Logf("  error %s", e)
	}
	if len(lost) > 0 {
		c.t.Errorf("%d of %d acknowledged writes lost", len(lost), len(acked)-skipped)
		c.reportLost(lost)
	}
	if len(unreadable) > 0 {
		c.t.Errorf("%d acknowledged writes could not be read back (%v of retries): e.g. %s: %v",
			len(unreadable), chaosReadRetries, unreadable[0].key, unreadable[0].err)
		c.reportLost(unreadable)
	}
	c.checkVersions(skip, deadline)
}

// reportLost logs the lost writes by bucket: when they were
// acknowledged, the bucket's rows over the run, and what the
// configservers logged about it.
func (c *chaos) reportLost(lost []lostKey) {
	by := map[route.BucketID][]lostKey{}
	for _, l := range lost {
		by[l.bucket] = append(by[l.bucket], l)
	}
	var buckets []route.BucketID
	for b := range by {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	c.t.Logf("lost writes in %d buckets %v; the timeline:", len(buckets), buckets)
	c.mu.Lock()
	for _, e := range c.events {
		c.t.Logf("  %s", e)
	}
	c.mu.Unlock()
	for i, b := range buckets {
		ls := by[b]
		sort.Slice(ls, func(i, j int) bool { return ls[i].rec.at < ls[j].rec.at })
		first, last := ls[0], ls[len(ls)-1]
		got := func(l lostKey) string {
			if l.err != nil {
				return l.err.Error()
			}
			return strconv.Quote(l.got)
		}
		c.t.Logf("bucket %d: %d acknowledged writes lost, acknowledged from %.2fs to %.2fs (first %s=%s via proxy %d reads %s; last %s=%s reads %s)",
			b, len(ls), first.rec.at.Seconds(), last.rec.at.Seconds(), first.key, first.want, first.rec.proxy, got(first), last.key, last.want, got(last))
		if i >= 8 {
			continue
		}
		for _, h := range c.tables.rowHistory(b) {
			c.t.Logf("  bucket %d row %s", b, h)
		}
		re := regexp.MustCompile(fmt.Sprintf(`bucket=%d\b|buckets=.*\b%d\b|lost|down|restarted|leading|joined`, b, b))
		for j, cs := range c.pc.ConfigServers {
			n := 0
			for _, line := range strings.Split(cs.Output(), "\n") {
				if re.MatchString(line) && n < 40 {
					c.t.Logf("  cs%d: %s", j, line)
					n++
				}
			}
		}
	}
}

// checkVersions reads the versioned keys a last time, counts the
// acknowledged puts the final state is behind, and runs porcupine.
func (c *chaos) checkVersions(skip func(string) bool, deadline time.Time) {
	c.t.Helper()
	l := c.ver
	cl := newClient(c.pc.Proxies[0].Addr)
	defer cl.Close()
	final := map[string]verState{}
	finalClient := 2 * chaosVerClients
	var unread []string
	for _, k := range l.keys {
		if skip(k) {
			continue
		}
		ok := false
		for !ok {
			var st verState
			if st, ok = l.read(c, cl, finalClient, k, "final read", 7*time.Second); ok {
				final[k] = st
			} else {
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
		if !ok {
			unread = append(unread, k)
		}
	}
	if len(unread) > 0 {
		c.t.Errorf("versioned keys %v could not be read at the end (%v of retries)", unread, chaosReadRetries)
	}
	end := int64(c.now()) + 1
	l.mu.Lock()
	history := make([]porcupine.Operation, 0, len(l.ops))
	for _, op := range l.ops {
		if skip(op.Input.(verInput).Key) {
			continue
		}
		if op.Return == math.MaxInt64 {
			op.Return = end
		}
		history = append(history, op)
	}
	puts := l.puts
	counts := fmt.Sprint(l.counts)
	l.mu.Unlock()

	behind := 0
	for _, p := range puts {
		if skip(p.key) {
			continue
		}
		if st, ok := final[p.key]; ok && st.Ver < p.ver {
			behind++
			if behind <= 5 {
				c.t.Errorf("versioned key %s: the put of %s (version %d) was acknowledged at %.2fs, the key ends at %s v%d",
					p.key, p.value, p.ver, p.at.Seconds(), st.Value, st.Ver)
			}
		}
	}
	c.t.Logf("versioned keys: %d operations (%s); errors: %s; %d acknowledged puts lost",
		len(history), counts, l.errs.String(), behind)
	for _, e := range l.errs.samples {
		c.t.Logf("  error %s", e)
	}
	if behind > 0 {
		c.t.Errorf("%d acknowledged versioned puts lost", behind)
	}

	start := time.Now()
	res := porcupine.CheckOperationsTimeout(verModel, history, chaosCheckTimeout)
	c.t.Logf("linearizability of %d versioned operations on %d keys: %s (%v)", len(history), len(l.keys), res, time.Since(start).Round(time.Millisecond))
	if res == porcupine.Ok {
		return
	}
	if res == porcupine.Unknown {
		c.t.Errorf("linearizability check inconclusive after %v", chaosCheckTimeout)
		return
	}
	c.t.Errorf("the versioned operations are not linearizable")
	c.explainIllegal(history)
	_, info := porcupine.CheckOperationsVerbose(verModel, history, chaosCheckTimeout)
	dir, err := os.MkdirTemp("", "tair-chaos-")
	if err != nil {
		c.t.Log(err)
		return
	}
	path := filepath.Join(dir, strings.ReplaceAll(c.t.Name(), "/", "_")+".html")
	if err := porcupine.VisualizePath(verModel, info, path); err != nil {
		c.t.Logf("visualization: %v", err)
		return
	}
	c.t.Logf("porcupine's visualization of the history: %s", path)
}

// explainIllegal logs, for each key whose history is not linearizable,
// where the longest linearization stops: its last operations with the
// state they leave, and the operations of that key that overlap the
// stop, so that a failure in CI (where porcupine's HTML is out of reach)
// says which reply broke the model.
func (c *chaos) explainIllegal(history []porcupine.Operation) {
	for _, part := range verModel.Partition(history) {
		res, info := porcupine.CheckOperationsVerbose(verModel, part, chaosCheckTimeout)
		if res != porcupine.Illegal {
			continue
		}
		key := part[0].Input.(verInput).Key
		var longest []int
		for _, p := range info.PartialLinearizations() {
			for _, l := range p {
				if len(l) > len(longest) {
					longest = l
				}
			}
		}
		c.t.Logf("key %s: %d operations, the longest linearization holds %d", key, len(part), len(longest))
		in := make(map[int]bool, len(longest))
		st := verModel.Init()
		from := max(0, len(longest)-8)
		var stop int64
		for i, idx := range longest {
			in[idx] = true
			op := part[idx]
			_, st = verModel.Step(st, op.Input, op.Output)
			if i >= from {
				c.t.Logf("  linearized %s  -> %s", describeOp(op), verModel.DescribeState(st))
			}
			stop = max(stop, op.Call)
		}
		// The operations not linearized that were called by the stop or
		// within 2 s after it: one of them has no place.
		shown := 0
		for idx, op := range part {
			if in[idx] || op.Call > stop+int64(2*time.Second) || op.Return < stop-int64(2*time.Second) {
				continue
			}
			if shown++; shown > 16 {
				c.t.Logf("  ...")
				break
			}
			c.t.Logf("  left out   %s", describeOp(op))
		}
	}
}

func describeOp(op porcupine.Operation) string {
	ret := "open"
	if op.Return != math.MaxInt64 {
		ret = fmt.Sprintf("%.3fs", time.Duration(op.Return).Seconds())
	}
	return fmt.Sprintf("[%.3fs..%s] client %d %s", time.Duration(op.Call).Seconds(), ret, op.ClientId,
		verModel.DescribeOperation(op.Input, op.Output))
}

// The register model accepts what SPEC §2 allows and nothing else, and
// an operation of unknown outcome may have applied or not.
func TestVersionRegisterModel(t *testing.T) {
	put := func(client int, val string, ver int64, res verResult, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: verInput{Key: "k", Put: true, Value: val, Ver: ver},
			Output: verOutput{Result: res}, Call: call, Return: ret}
	}
	get := func(client int, val string, ver int64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: verInput{Key: "k"},
			Output: verOutput{Result: verRead, Exists: val != "", Value: val, Ver: ver}, Call: call, Return: ret}
	}
	for _, c := range []struct {
		name    string
		history []porcupine.Operation
		ok      bool
	}{
		{"put then read", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10), get(1, "a", 1, 20, 30)}, true},
		{"a missing key takes any version", []porcupine.Operation{put(0, "a", 7, verPutOK, 0, 10), get(1, "a", 1, 20, 30)}, true},
		{"an acknowledged put lost", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10), get(1, "", 0, 20, 30)}, false},
		{"an acknowledged put rolled back", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutOK, 20, 30), get(1, "a", 1, 40, 50)}, false},
		{"a put with the current version", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutOK, 20, 30), get(1, "b", 2, 40, 50)}, true},
		{"a put rolled back", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutOK, 20, 30), get(1, "a", 1, 40, 50), get(1, "b", 2, 60, 70), get(1, "a", 1, 80, 90)}, false},
		{"a stale version applied", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutOK, 20, 30), put(0, "c", 1, verPutOK, 40, 50)}, false},
		{"version 0 always applies", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 0, verPutOK, 20, 30), get(1, "b", 2, 40, 50)}, true},
		{"VERERROR on the current version", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutVerError, 20, 30)}, false},
		{"VERERROR on a stale version", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutOK, 20, 30), put(1, "c", 1, verPutVerError, 40, 50), get(1, "b", 2, 60, 70)}, true},
		{"concurrent puts of one version: one applies", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutOK, 20, 50), put(1, "c", 1, verPutVerError, 25, 45), get(1, "b", 2, 60, 70)}, true},
		{"concurrent puts of one version: both apply", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(0, "b", 1, verPutOK, 20, 50), put(1, "c", 1, verPutOK, 25, 45)}, false},
		{"unknown, applied", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(1, "b", 1, verPutUnknown, 20, 1000), get(0, "b", 2, 30, 40)}, true},
		{"unknown, not applied", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(1, "b", 1, verPutUnknown, 20, 1000), get(0, "a", 1, 30, 40), get(0, "a", 1, 50, 60)}, true},
		{"unknown, applied then gone", []porcupine.Operation{put(0, "a", 1, verPutOK, 0, 10),
			put(1, "b", 1, verPutUnknown, 20, 1000), get(0, "b", 2, 30, 40), get(0, "a", 1, 50, 60)}, false},
	} {
		if got := porcupine.CheckOperations(verModel, c.history); got != c.ok {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.ok)
		}
		if !c.ok && testing.Verbose() {
			t.Logf("%s:", c.name)
			(&chaos{t: t}).explainIllegal(c.history)
		}
	}
}
