// Command recovery is the driver of `make bench-recovery`
// (bench/recovery.sh starts the cluster): it loads keys (16-byte keys,
// 32-byte values) through the proxy until one dataserver holds about
// --keys key copies, runs a steady paced GET/SET load while it measures
// client latency, kills that dataserver with SIGKILL and measures how long
// the cluster takes to hold every bucket's full copy count again (the
// lost node's copies rebuilt on the survivors by recovery moves), and the
// client latency and errors meanwhile.
//
// Restored: the leader's gauge tair_configserver_buckets_under_replicated
// is 0 again after having been above 0; when the configserver does not
// export it, the same count is computed from the table (a bucket is under
// replicated while its serving row has fewer than the copy count of
// entries on live nodes, or a move of it runs). Detection: the first
// table in which the killed node masters no bucket (with a handoff
// window it stays in its rows as a slave meanwhile).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/bench/internal/benchload"
	"github.com/tairkv/tair/bench/internal/proccpu"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
)

const gaugeName = "tair_configserver_buckets_under_replicated"

// loadTries is how often a failed load pipeline is sent in all, a second
// apart: on a machine shared with other work, the cluster may lose its
// leader for a moment.
const loadTries = 30

type node struct {
	addr, http string
	pid        int
}

func main() {
	proxyAddr := flag.String("proxy", "127.0.0.1:6379", "proxy address")
	csAddr := flag.String("configserver", "127.0.0.1:5198", "configserver API address")
	csHTTP := flag.String("configserver-http", "", "configserver /metrics address (the under-replicated gauge)")
	proxyHTTP := flag.String("proxy-http", "", "proxy /debug/pprof address (profiled with --profile)")
	nodesFlag := flag.String("nodes", "", "the dataservers: addr=pid=http,... (http: their /debug/pprof address)")
	keys := flag.Int("keys", 1000000, "key copies the killed dataserver holds (keys are loaded until one node holds this many)")
	clients := flag.Int("clients", 20, "client connections of the steady load")
	rate := flag.Int("rate", 2000, "steady load, requests per second in all (half GET, half SET)")
	before := flag.Duration("before", 10*time.Second, "how long to measure before the kill")
	after := flag.Duration("after", 5*time.Second, "how long to measure after the restore")
	aim := flag.Duration("aim", 10*time.Second, "the restore time aimed at (printed beside the result)")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up on the restore after this long")
	profDir := flag.String("profile", "", "directory for CPU profiles of every survivor taken during the recovery (empty: none)")
	profSecs := flag.Int("profile-seconds", 6, "length of those profiles")
	pidsFlag := flag.String("pids", "", "other processes whose CPU time to report: name=pid,...")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cs := wire.NewClient(*csAddr)
	nodes := parseNodes(*nodesFlag)
	if len(nodes) == 0 {
		fail("--nodes names no dataserver")
	}

	// 1. Load until one node holds about --keys key copies, once the
	// table has settled on every node.
	tb0 := settled(ctx, cs, nodes)
	t0 := time.Now()
	// Copies spread evenly: each node holds copies/len(nodes) of the keys.
	n := *keys * len(nodes) / tb0.Copies
	if err := benchload.Load(ctx, *proxyAddr, 0, n, loadTries); err != nil {
		fail("load: %v", err)
	}
	var victim node
	var counts map[string]int64
	for {
		counts = waitStats(ctx, cs, nodes, n, tb0.Copies)
		for _, nd := range nodes {
			if victim.addr == "" || counts[nd.addr] > counts[victim.addr] {
				victim = nd
			}
		}
		if counts[victim.addr] >= int64(*keys)*99/100 {
			break
		}
		more := max(*keys/100, (*keys-int(counts[victim.addr]))*len(nodes)/tb0.Copies)
		if err := benchload.Load(ctx, *proxyAddr, n, n+more, loadTries); err != nil {
			fail("load: %v", err)
		}
		n += more
	}
	loadTook := time.Since(t0)
	fmt.Printf("loaded %d keys (%d copies) in %v (%.0f keys/s); key copies per node: %s\n", n, n*tb0.Copies,
		loadTook.Round(time.Millisecond), float64(n)/loadTook.Seconds(), countsString(nodes, counts))
	fmt.Printf("victim: %s (pid %d), %d key copies\n", victim.addr, victim.pid, counts[victim.addr])

	// 2. Steady load, measured before.
	phases := &phaseLog{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			steady(*proxyAddr, c, n, float64(*rate)/float64(*clients), phases, stop)
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(time.Second) // warm up
	procs := cpuProcs(nodes, victim, *pidsFlag)
	phases.next("before")
	cpuB := proccpu.Seconds(procs)
	time.Sleep(*before)
	cpuB1 := proccpu.Seconds(procs)

	// 3. Kill the victim; follow the table and the gauge.
	hasGauge := false
	if *csHTTP != "" {
		_, hasGauge = gauge(ctx, *csHTTP)
	}
	tb, err := cs.Table(ctx, 0, 0)
	if err != nil {
		fail("table: %v", err)
	}
	cpu0 := proccpu.Seconds(procs)
	copy0 := copySeconds(ctx, nodes, victim)
	hb0 := metricsWith(ctx, *csHTTP, "tair_configserver_heartbeats_total")[""]
	retries0 := metricsWith(ctx, *proxyHTTP, "tair_proxy_retries_total")
	phases.next("failover")
	phases.span("during")
	tKill := time.Now()
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		fail("kill %d: %v", victim.pid, err)
	}
	var profWG sync.WaitGroup
	if *profDir != "" {
		// Allocations from the kill to the restore: a heap profile
		// (cumulative allocations) now and one at the restore.
		for _, nd := range nodes {
			if nd.addr != victim.addr && nd.http != "" {
				fetch(nd, *profDir, "allocs-0", "/debug/pprof/allocs")
			}
		}

		// Profiles of the survivors from the moment the moves start
		// (about the detection time) for --profile-seconds.
		targets := slices.Clone(nodes)
		if *csHTTP != "" {
			targets = append(targets, node{addr: "configserver", http: *csHTTP})
		}
		if *proxyHTTP != "" {
			targets = append(targets, node{addr: "proxy", http: *proxyHTTP})
		}
		for _, nd := range targets {
			if nd.addr == victim.addr || nd.http == "" {
				continue
			}
			profWG.Add(2)
			go func() {
				// From about when the moves start.
				defer profWG.Done()
				time.Sleep(time.Until(tKill.Add(1500 * time.Millisecond)))
				profile(nd, *profDir, *profSecs)
			}()
			go func() {
				// Where the goroutines wait, twice during the moves.
				defer profWG.Done()
				for i, at := range []time.Duration{3 * time.Second, 4500 * time.Millisecond} {
					time.Sleep(time.Until(tKill.Add(at)))
					goroutines(nd, *profDir, i)
				}
			}()
		}
	}
	tw := &tableWatch{victim: victim.addr, kill: tKill}
	tw.see(tb, tKill)
	wctx, wcancel := context.WithCancel(ctx)
	go func() {
		v := tb.Version
		for wctx.Err() == nil {
			c, cc := context.WithTimeout(wctx, 3*time.Second)
			t, err := cs.Table(c, v, 2*time.Second)
			cc()
			if err != nil || t == nil {
				if err != nil && !strings.Contains(err.Error(), "not modified") && wctx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
				}
				continue
			}
			v = t.Version
			tw.see(t, time.Now())
		}
	}()
	var gaugeUp, gaugeDown time.Time
	lastPrint := time.Now()
	for {
		if ctx.Err() != nil || time.Since(tKill) > *timeout {
			wcancel()
			fail("not restored within %v: %s; %s", *timeout, tw.status(), tw.rows(5))
		}
		if hasGauge {
			if g, ok := gauge(ctx, *csHTTP); ok {
				switch {
				case g > 0 && gaugeUp.IsZero():
					gaugeUp = time.Now()
				case g == 0 && !gaugeUp.IsZero() && gaugeDown.IsZero():
					gaugeDown = time.Now()
				}
			}
		}
		if phases.get("failover").name == "" && !tw.detectedAt().IsZero() {
			phases.next("rebuild")
		}
		restoredTable := tw.restoredAt()
		if (hasGauge && !gaugeDown.IsZero()) || (!hasGauge && !restoredTable.IsZero()) {
			break
		}
		if time.Since(lastPrint) > 2*time.Second {
			lastPrint = time.Now()
			fmt.Printf("  %v: %s\n", time.Since(tKill).Round(100*time.Millisecond), tw.status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	phases.next("after")
	during := phases.span("")
	cpu1 := proccpu.Seconds(procs)
	copy1 := copySeconds(ctx, nodes, victim)
	hb1 := metricsWith(ctx, *csHTTP, "tair_configserver_heartbeats_total")[""]
	if *profDir != "" {
		for _, nd := range nodes {
			if nd.addr != victim.addr && nd.http != "" {
				fetch(nd, *profDir, "allocs-1", "/debug/pprof/allocs")
			}
		}
	}
	retries1 := metricsWith(ctx, *proxyHTTP, "tair_proxy_retries_total")
	wcancel()
	restored := tw.restoredAt()
	if hasGauge {
		restored = gaugeDown
	}
	took := restored.Sub(tKill)
	time.Sleep(*after)
	afterSt := phases.next("")
	profWG.Wait()

	// Key copies rebuilt: the survivors' counts (their next heartbeats).
	time.Sleep(1500 * time.Millisecond)
	now := nodeStats(ctx, cs)
	var rebuilt int64
	for _, nd := range nodes {
		if nd.addr != victim.addr {
			rebuilt += now[nd.addr] - counts[nd.addr]
		}
	}

	det := tw.detected.Sub(tKill)
	fmt.Println()
	fmt.Printf("before: %s\n", phases.get("before"))
	fmt.Printf("failover: %s\n", phases.get("failover"))
	fmt.Printf("rebuild: %s\n", phases.get("rebuild"))
	fmt.Printf("after: %s\n", afterSt)
	fmt.Printf("table: versions %d -> %d, %d recovery moves, at most %d running at once; the victim masters nothing at %.2f s, is in no row at %s, the first move started at %.2f s (from the kill); %.0f heartbeats\n",
		tb.Version, tw.last.Version, tw.moves, tw.maxRunning, tw.detected.Sub(tKill).Seconds(), sinceOr(tw.removed, tKill),
		tw.firstMove.Sub(tKill).Seconds(), hb1-hb0)
	if hasGauge {
		fmt.Printf("gauge %s: > 0 at %.2f s, 0 at %.2f s; from the table: restored at %.2f s\n",
			gaugeName, gaugeUp.Sub(tKill).Seconds(), gaugeDown.Sub(tKill).Seconds(), tw.restoredAt().Sub(tKill).Seconds())
	} else {
		fmt.Printf("(no %s gauge at the configserver: restore computed from the table)\n", gaugeName)
	}
	fmt.Printf("key copies on the survivors: %s (+%d; the victim held %d)\n", countsString(nodes, now), rebuilt, counts[victim.addr])
	var cpuParts []string
	var cpuSum, baseSum float64
	for _, p := range procs {
		d := cpu1[p.Name] - cpu0[p.Name]
		base := (cpuB1[p.Name] - cpuB[p.Name]) / before.Seconds() // CPU seconds a second before the kill
		cpuSum += d
		baseSum += base
		cpuParts = append(cpuParts, fmt.Sprintf("%s %.2f (before: %.2f/s)", p.Name, d, base))
	}
	var cparts []string
	for _, nd := range nodes {
		if v, ok := copy1[nd.addr]; ok {
			cparts = append(cparts, fmt.Sprintf("%s %.2f", nd.addr, v-copy0[nd.addr]))
		}
	}
	if len(cparts) > 0 {
		fmt.Printf("seconds each survivor spent copying (snapshots and restores, one at a time), of %.2f: %s\n", took.Seconds(), strings.Join(cparts, ", "))
	}
	var rparts []string
	for _, k := range slices.Sorted(maps.Keys(retries1)) {
		if d := retries1[k] - retries0[k]; d > 0 {
			rparts = append(rparts, fmt.Sprintf("%s %.0f", k, d))
		}
	}
	if len(rparts) > 0 {
		fmt.Printf("proxy retries during the recovery: %s\n", strings.Join(rparts, ", "))
	}
	fmt.Printf("CPU seconds from the kill to the restore (%.2f s, %d cores): %s; all %.2f (%.0f%% of the machine; the steady load's share at the rate before: %.2f, the recovery's: %.2f)\n",
		took.Seconds(), runtime.NumCPU(), strings.Join(cpuParts, ", "), cpuSum, 100*cpuSum/took.Seconds()/float64(runtime.NumCPU()),
		baseSum*took.Seconds(), cpuSum-baseSum*took.Seconds())
	fmt.Println()
	fmt.Println("| phase | requests | rate/s | p50 ms | p99 ms | p99.9 ms | max ms | service p50 / p99 / max ms | errors |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|---|")
	for _, p := range []phase{phases.get("before"), during, phases.get("failover"), phases.get("rebuild"), afterSt} {
		fmt.Printf("| %s (%.1f s) | %d | %.0f | %.3f | %.3f | %.3f | %.3f | %.3f / %.3f / %.3f | %s |\n", p.name, p.el.Seconds(), p.s.N, p.s.Rate,
			benchload.Ms(p.s.P50), benchload.Ms(p.s.P99), benchload.Ms(p.s.P999), benchload.Ms(p.s.Max), benchload.Ms(p.v.P50), benchload.Ms(p.v.P99), benchload.Ms(p.v.Max), p.errString())
	}
	fmt.Println("\n(latency counts from each request's scheduled time, so a backlog shows; service latency from when it was sent)")
	fmt.Printf("\nrequests ended per half second during the recovery / slowest service ms: %s\n", during.timeline)
	verdict := "met"
	if took > *aim {
		verdict = "MISSED"
	}
	rb := phases.get("rebuild")
	fmt.Printf("\nrecovery: %d key copies of %s restored in **%.2f s** (aim %v: %s; detection %.2f s, rebuild %.2f s); client service p50/p99 before %.1f/%.1f ms, during the rebuild %.1f/%.1f ms (max %.0f ms, %.0f requests/s of %d); errors %s\n",
		counts[victim.addr], victim.addr, took.Seconds(), *aim, verdict, det.Seconds(), (took - det).Seconds(),
		benchload.Ms(phases.get("before").v.P50), benchload.Ms(phases.get("before").v.P99), benchload.Ms(rb.v.P50), benchload.Ms(rb.v.P99), benchload.Ms(rb.v.Max), rb.s.Rate, *rate, during.errString())
}

// sinceOr formats t-from in seconds, or "never".
func sinceOr(t, from time.Time) string {
	if t.IsZero() {
		return "never (so far)"
	}
	return fmt.Sprintf("%.2f s", t.Sub(from).Seconds())
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-recovery: "+format+"\n", args...)
	os.Exit(1)
}

func parseNodes(s string) []node {
	var out []node
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		p := strings.Split(f, "=")
		if len(p) < 2 {
			fail("bad --nodes entry %q", f)
		}
		pid, err := strconv.Atoi(p[1])
		if err != nil {
			fail("bad pid in %q", f)
		}
		nd := node{addr: p[0], pid: pid}
		if len(p) > 2 {
			nd.http = p[2]
		}
		out = append(out, nd)
	}
	return out
}

func countsString(nodes []node, c map[string]int64) string {
	var parts []string
	for _, nd := range nodes {
		parts = append(parts, fmt.Sprintf("%s %d", nd.addr, c[nd.addr]))
	}
	return strings.Join(parts, ", ")
}

// nodeStats is the key copies each node reported in its last heartbeat
// (nil when the configserver does not answer).
func nodeStats(ctx context.Context, cs *wire.Client) map[string]int64 {
	st, _ := benchload.NodeKeys(ctx, cs)
	return st
}

// waitStats waits until the nodes' reported key copies add up to the
// keys loaded times the copy count (the heartbeats after the load).
func waitStats(ctx context.Context, cs *wire.Client, nodes []node, keys, copies int) map[string]int64 {
	var st map[string]int64
	for i := 0; i < 100; i++ {
		st = nodeStats(ctx, cs)
		var sum int64
		for _, nd := range nodes {
			sum += st[nd.addr]
		}
		if sum >= int64(keys*copies) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return st
}

// settled waits for a table whose serving rows use every node and equal
// the destination, with no move running.
func settled(ctx context.Context, cs *wire.Client, nodes []node) *route.Table {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		t, err := cs.Table(ctx, 0, 0)
		if err == nil && len(t.Migrating) == 0 && len(t.Nodes()) == len(nodes) &&
			slices.EqualFunc(t.Serving, t.Destination, slices.Equal[[]string]) {
			return t
		}
		if time.Now().After(deadline) {
			fail("the table did not settle on %d nodes: %v", len(nodes), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gauge reads the under-replicated gauge from the configserver's /metrics.
func gauge(ctx context.Context, addr string) (float64, bool) {
	v, ok := metricsWith(ctx, addr, gaugeName)[""]
	return v, ok
}

// copySeconds reads each survivor's tair_dataserver_copy_seconds_total.
func copySeconds(ctx context.Context, nodes []node, victim node) map[string]float64 {
	out := map[string]float64{}
	for _, nd := range nodes {
		if nd.addr == victim.addr || nd.http == "" {
			continue
		}
		if v, ok := metricsWith(ctx, nd.http, "tair_dataserver_copy_seconds_total")[""]; ok {
			out[nd.addr] = v
		}
	}
	return out
}

// metricsWith reads the samples of metric name from addr's /metrics, by
// their labels.
func metricsWith(ctx context.Context, addr, name string) map[string]float64 {
	out := map[string]float64{}
	if addr == "" {
		return out
	}
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(c, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[strings.TrimPrefix(line[:i], name)] = v
	}
	return out
}

// fetch saves nd's path as name-<node>.pprof in dir.
func fetch(nd node, dir, name, path string) {
	_ = save("http://"+nd.http+path, filepath.Join(dir, name+"-"+fileName(nd)+".pprof"))
}

// goroutines saves a goroutine dump of nd.
func goroutines(nd node, dir string, i int) {
	_ = save(fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=1", nd.http), filepath.Join(dir, fmt.Sprintf("goroutines-%s-%d.txt", fileName(nd), i)))
}

// profile saves a CPU profile of nd.
func profile(nd node, dir string, secs int) {
	err := save(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", nd.http, secs), filepath.Join(dir, "cpu-"+fileName(nd)+".pprof"))
	if err != nil {
		fmt.Printf("  profile of %s: %v\n", nd.addr, err)
	}
}

// fileName is nd's address as a part of a file name.
func fileName(nd node) string { return strings.ReplaceAll(nd.addr, ":", "_") }

// save writes what a GET of url answers to the file name. An error
// getting it or creating the file is returned; one copying is not.
func save(url, name string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
	return nil
}

// cpuProcs lists the surviving dataservers, the processes of --pids and
// this one.
func cpuProcs(nodes []node, victim node, pids string) []proccpu.Proc {
	var out []proccpu.Proc
	for _, nd := range nodes {
		if nd.addr != victim.addr {
			out = append(out, proccpu.Proc{Name: "ds " + nd.addr, PID: nd.pid})
		}
	}
	out = append(out, proccpu.Parse(pids)...)
	return append(out, proccpu.Proc{Name: "bench client", PID: os.Getpid()})
}

// tableWatch follows the table versions after the kill.
type tableWatch struct {
	victim string
	kill   time.Time

	mu         sync.Mutex
	last       *route.Table
	detected   time.Time // first table in which the victim masters no bucket (failover)
	removed    time.Time // first table without the victim in a serving row
	firstMove  time.Time
	restored   time.Time // first table with every row full on live nodes and no move
	moves      int
	seenMoves  map[route.Move]bool
	maxRunning int
}

func (w *tableWatch) see(t *route.Table, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil && t.Version <= w.last.Version {
		return
	}
	w.last = t
	if w.seenMoves == nil {
		w.seenMoves = map[route.Move]bool{}
	}
	if at.Equal(w.kill) {
		return // the table at the kill
	}
	if w.detected.IsZero() && !slices.ContainsFunc(t.Serving, func(r []string) bool { return len(r) > 0 && r[0] == w.victim }) {
		w.detected = at
	}
	if w.removed.IsZero() && !slices.ContainsFunc(t.Serving, func(r []string) bool { return slices.Contains(r, w.victim) }) {
		w.removed = at
	}
	for _, mv := range t.Migrating {
		if !w.seenMoves[mv] {
			w.seenMoves[mv] = true
			w.moves++
			if w.firstMove.IsZero() {
				w.firstMove = at
			}
		}
	}
	w.maxRunning = max(w.maxRunning, len(t.Migrating))
	if w.restored.IsZero() && w.moves > 0 && underReplicated(t, w.victim) == 0 {
		w.restored = at
	}
}

func (w *tableWatch) detectedAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.detected
}

func (w *tableWatch) restoredAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restored
}

func (w *tableWatch) status() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		return "no table"
	}
	return fmt.Sprintf("table %d: %d buckets under replicated, %d moves running, %d moves seen",
		w.last.Version, underReplicated(w.last, w.victim), len(w.last.Migrating), w.moves)
}

// rows describes up to n under-replicated rows (serving -> destination).
func (w *tableWatch) rows(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	t := w.last
	for b, row := range t.Serving {
		live := 0
		for _, a := range row {
			if a != "" && a != w.victim {
				live++
			}
		}
		if live < t.Copies && len(out) < n {
			var dest []string
			if b < len(t.Destination) {
				dest = t.Destination[b]
			}
			out = append(out, fmt.Sprintf("bucket %d %q -> %q", b, row, dest))
		}
	}
	return strings.Join(out, "; ")
}

// underReplicated counts the buckets whose serving row has fewer than
// t.Copies entries on live nodes (all but dead), or that a move runs for.
func underReplicated(t *route.Table, dead string) int {
	moving := map[route.BucketID]bool{}
	for _, mv := range t.Migrating {
		moving[mv.Bucket] = true
	}
	n := 0
	for b, row := range t.Serving {
		live := 0
		for _, a := range row {
			if a != "" && a != dead {
				live++
			}
		}
		if live < t.Copies || moving[route.BucketID(b)] {
			n++
		}
	}
	return n
}

// phaseLog collects client latencies and errors by phase, and over a
// span of phases (agg).
type phaseLog struct {
	mu    sync.Mutex
	cur   *phase
	agg   *phase
	named map[string]phase
}

// span starts (name != "") or ends the aggregate phase, returning the one
// it ends.
func (l *phaseLog) span(name string) phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	done, _ := replace(&l.agg, name)
	return done
}

// replace ends *p, if any (returning it, and true), and puts a phase
// named name in its place ("" = none).
func replace(p **phase, name string) (phase, bool) {
	var done phase
	ended := *p != nil
	if ended {
		done = (*p).end()
	}
	*p = nil
	if name != "" {
		*p = &phase{name: name, start: time.Now()}
	}
	return done, ended
}

func (p *phase) end() phase {
	done := *p
	done.el = time.Since(done.start)
	done.timeline = timeline(done.done, done.svc)
	done.s, done.v = benchload.Summarize(done.lt, done.el), benchload.Summarize(done.svc, done.el)
	done.lt, done.svc, done.done = nil, nil, nil
	return done
}

type phase struct {
	name      string
	start     time.Time
	el        time.Duration
	lt, svc   []time.Duration
	done      []time.Duration // when each request ended, from start
	s, v      benchload.Stats
	timeline  string
	errs      int
	mayApply  int
	firstErrs []string
}

func (p phase) errString() string {
	if p.errs == 0 {
		return "0"
	}
	s := fmt.Sprintf("%d (%d 'may have applied')", p.errs, p.mayApply)
	if len(p.firstErrs) > 0 {
		s += ": " + strings.Join(p.firstErrs, "; ")
	}
	return s
}

// next ends the current phase (returning it) and starts one named name
// ("" = none).
func (l *phaseLog) next(name string) phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	done, ended := replace(&l.cur, name)
	if ended {
		if l.named == nil {
			l.named = map[string]phase{}
		}
		l.named[done.name] = done
	}
	return done
}

func (l *phaseLog) get(name string) phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.named[name]
}

func (l *phaseLog) add(lt, svc time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur.add(lt, svc, err)
	l.agg.add(lt, svc, err)
}

func (p *phase) add(lt, svc time.Duration, err error) {
	if p == nil {
		return
	}
	p.lt = append(p.lt, lt)
	p.svc = append(p.svc, svc)
	p.done = append(p.done, time.Since(p.start))
	if err != nil {
		p.errs++
		msg := err.Error()
		if strings.Contains(msg, "may have applied") {
			p.mayApply++
		}
		if len(p.firstErrs) < 3 {
			p.firstErrs = append(p.firstErrs, fmt.Sprintf("%q at +%.2f s", msg, time.Since(p.start).Seconds()))
		}
	}
}

// steady sends paced GETs and SETs of random loaded keys on one
// connection; a GET that finds no value is an error (every key was loaded).
func steady(addr string, id, n int, perSec float64, l *phaseLog, stop <-chan struct{}) {
	benchload.Steady(addr, id, n, perSec, stop, func(i int, lt, svc time.Duration, err error) {
		if err == redis.Nil {
			err = fmt.Errorf("GET %s: no value (a loaded key is missing)", benchload.Key(i))
		}
		l.add(lt, svc, err)
	})
}

func (p phase) String() string {
	return fmt.Sprintf("%s; errors %s", p.s, p.errString())
}

// timeline describes the requests that ended in each half second of a
// phase: how many, and the slowest (service latency).
func timeline(done, svc []time.Duration) string {
	const slot = 500 * time.Millisecond
	var n []int
	var worst []time.Duration
	for i, d := range done {
		k := int(d / slot)
		for len(n) <= k {
			n = append(n, 0)
			worst = append(worst, 0)
		}
		n[k]++
		worst[k] = max(worst[k], svc[i])
	}
	var parts []string
	for k := range n {
		parts = append(parts, fmt.Sprintf("%d/%.0f", n[k], benchload.Ms(worst[k])))
	}
	return strings.Join(parts, " ")
}
