package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// writeLoad runs writers SET-ting unique keys through addr until stop is
// closed, and records every acknowledged write and the longest stretch
// without any acknowledgement after start. With watch set, the writers
// alternate between keys it selects and others, and the watched gap is
// the longest stretch without an acknowledged write to a watched key.
type writeLoad struct {
	watch func(key string) bool

	mu            sync.Mutex
	acked         map[string]string
	lastOK        time.Time
	maxGap        time.Duration
	watchedLastOK time.Time
	watchedMaxGap time.Duration
	watchedAcks   int
	errors        int64
	maybe         int64 // errors saying the write may have applied
	lastErr       error
	errLog        []string // the first few failures: when, which key, what
	otherLog      []string // the first few errors of another kind
}

func runWriteLoad(t *testing.T, addr string, writers int, stop <-chan struct{}) (*writeLoad, *sync.WaitGroup) {
	return runWatchedWriteLoad(t, addr, writers, nil, stop)
}

func runWatchedWriteLoad(t *testing.T, addr string, writers int, watch func(string) bool, stop <-chan struct{}) (*writeLoad, *sync.WaitGroup) {
	w := &writeLoad{watch: watch, acked: map[string]string{}, lastOK: time.Now(), watchedLastOK: time.Now()}
	var wg sync.WaitGroup
	var seq atomic.Int64
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
			defer cl.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := seq.Add(1)
				k := fmt.Sprintf("load:%d", n)
				watched := false
				if watch != nil {
					// Even turns a watched key, odd turns another.
					watched = i%2 == 0
					for watch(k) != watched {
						n = seq.Add(1)
						k = fmt.Sprintf("load:%d", n)
					}
				}
				v := fmt.Sprintf("value-%d", n)
				ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
				err := cl.Set(ctx, k, v, 0).Err()
				cancel()
				now := time.Now()
				w.mu.Lock()
				if err == nil {
					w.acked[k] = v
					if gap := now.Sub(w.lastOK); gap > w.maxGap {
						w.maxGap = gap
					}
					w.lastOK = now
					if watched {
						w.watchedAcks++
						if gap := now.Sub(w.watchedLastOK); gap > w.watchedMaxGap {
							w.watchedMaxGap = gap
						}
						w.watchedLastOK = now
					}
				} else {
					w.errors++
					w.lastErr = err
					line := fmt.Sprintf("%s %s (watched %v): %v", now.Format("15:04:05.000"), k, watched, err)
					if len(w.errLog) < 8 {
						w.errLog = append(w.errLog, line)
					}
					if strings.Contains(err.Error(), "may have applied") {
						w.maybe++
					} else if len(w.otherLog) < 8 {
						w.otherLog = append(w.otherLog, line)
					}
				}
				w.mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	return w, &wg
}

// resetGaps starts measuring the gaps (and counting the watched acks) now.
func (w *writeLoad) resetGaps() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.maxGap, w.watchedMaxGap, w.watchedAcks = 0, 0, 0
	w.lastOK, w.watchedLastOK = time.Now(), time.Now()
}

// gaps returns the longest gaps, the stretch from the last ack to until
// included (writes that never resume are a gap too).
func (w *writeLoad) gaps(until time.Time) (all, watched time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.maxGap, until.Sub(w.lastOK)), max(w.watchedMaxGap, until.Sub(w.watchedLastOK))
}

// verifyAcked reads back every acknowledged write.
func verifyAcked(t *testing.T, addr string, acked map[string]string) {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	lost := 0
	keys := make([]string, 0, len(acked))
	for k := range acked {
		keys = append(keys, k)
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		pipe := cl.Pipeline()
		cmds := make([]*redis.StringCmd, n)
		for i, k := range keys[:n] {
			cmds[i] = pipe.Get(context.Background(), k)
		}
		_, _ = pipe.Exec(context.Background())
		for i, k := range keys[:n] {
			got, err := cmds[i].Result()
			if err != nil || got != acked[k] {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged %s=%s reads %q, %v", k, acked[k], got, err)
				}
			}
		}
		keys = keys[n:]
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost", lost, len(acked))
	}
}

// fullCopies reads tair_dataserver_full_copies_total of each node, by
// reason.
func fullCopies(t *testing.T, nodes []*testcluster.Proc) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	for _, p := range nodes {
		m, err := p.Metrics()
		if err != nil {
			t.Fatalf("metrics of %s: %v", p.Addr, err)
		}
		out[p.Addr] = map[string]float64{}
		for series, v := range m {
			if r, ok := strings.CutPrefix(series, `tair_dataserver_full_copies_total{reason="`); ok {
				out[p.Addr][strings.TrimSuffix(r, `"}`)] = v
			}
		}
		if len(out[p.Addr]) == 0 {
			t.Fatalf("%s exports no tair_dataserver_full_copies_total", p.Addr)
		}
	}
	return out
}

// readCopy reads every acknowledged write of the keys only selects from
// node's own copy (TAIR.XR: as master or slave).
func readCopy(t *testing.T, node string, tb *route.Table, acked map[string]string, only func(string) bool) {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: node, MaxRetries: -1})
	defer cl.Close()
	var keys []string
	for k := range acked {
		if only(k) {
			keys = append(keys, k)
		}
	}
	lost := 0
	for i := 0; i < len(keys); i += 500 {
		batch := keys[i:min(len(keys), i+500)]
		pipe := cl.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		for j, k := range batch {
			cmds[j] = pipe.Do(context.Background(), "TAIR.XR", 0, uint64(tb.Version), 2, "GET", k)
		}
		_, _ = pipe.Exec(context.Background())
		for j, k := range batch {
			got, err := cmds[j].Text()
			if err != nil || got != acked[k] {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged %s=%s reads %q, %v on %s", k, acked[k], got, err, node)
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes missing on %s's copies", lost, len(keys), node)
	}
}

// kill -9 of a master dataserver under a steady write load, copy count 2:
// every acknowledged write survives, writes to the buckets it mastered
// resume within 3 s, the only client errors are the writes in flight at
// the kill ("may have applied", at most one per writer), and the full
// copy count is restored on the remaining nodes.
func TestKillMasterDataserverLosesNothing(t *testing.T) {
	// A short handoff window: the dead node's slave copies are rebuilt
	// elsewhere 3 s after it went silent.
	pc := testcluster.StartProcs(t, testcluster.ProcOptions{DataServers: 3, Copies: 2, Buckets: 64,
		ConfigServerArgs: []string{"--handoff-window", "3s"}})
	proxy := pc.Proxies[0].Addr
	victim := pc.DataServers[0]
	tb0 := tableOf(t, pc.ConfigServers[0].Addr)
	// Half the writes go to buckets the victim masters: the gap that
	// matters is theirs (writes to other buckets never stopped).
	mastered := 0
	for b := range tb0.Serving {
		if tb0.Master(route.BucketID(b)) == victim.Addr {
			mastered++
		}
	}
	if mastered == 0 {
		t.Fatalf("%s masters no bucket in table %d", victim.Addr, tb0.Version)
	}
	onVictim := func(k string) bool {
		return tb0.Master(route.BucketOf([]byte(k), tb0.Buckets)) == victim.Addr
	}
	const writers = 4
	stop := make(chan struct{})
	load, wg := runWatchedWriteLoad(t, proxy, writers, onVictim, stop)
	time.Sleep(1500 * time.Millisecond)

	load.resetGaps()
	victim.Kill()
	time.Sleep(6 * time.Second)
	stopAt := time.Now()
	close(stop)
	wg.Wait()

	gapAll, gap := load.gaps(stopAt)
	load.mu.Lock()
	watchedAcks := load.watchedAcks
	load.mu.Unlock()
	t.Logf("kill -9 of %s (master of %d of %d buckets): %d writes acknowledged (%d to its buckets after the kill), %d errors (%d 'may have applied'); longest gap without an ack to its buckets %v (any bucket %v)",
		victim.Addr, mastered, len(tb0.Serving), len(load.acked), watchedAcks, load.errors, load.maybe, gap, gapAll)
	for _, e := range load.errLog {
		t.Logf("error: %s", e)
	}
	if gap > 3*time.Second {
		t.Errorf("writes to the killed master's buckets stalled %v after the kill, want under 3s", gap)
	}
	if watchedAcks == 0 {
		t.Errorf("no write to the killed master's buckets was acknowledged after the kill")
	}
	// Each writer has at most one request in flight at the kill: only
	// those may fail, and only as "may have applied" (the proxy cannot
	// resend them safely); anything sent after the kill is retried until
	// a promoted master takes it.
	if load.maybe > writers {
		t.Errorf("%d writes failed with 'may have applied', want at most %d (one in flight per writer at the kill)", load.maybe, writers)
	}
	if other := load.errors - load.maybe; other > 0 {
		t.Errorf("%d client errors other than 'may have applied': %v", other, load.otherLog)
	}
	verifyAcked(t, proxy, load.acked)

	// The table no longer names the dead node and every bucket is back to
	// two copies on the two remaining nodes.
	cl := pc.Client()
	testutil.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		tb, err := cl.Table(ctx, 0, 0)
		if err != nil || len(tb.Migrating) > 0 {
			return false
		}
		for _, row := range tb.Serving {
			live := 0
			for _, n := range row {
				if n != "" && n != victim.Addr {
					live++
				}
			}
			if live < 2 || row[0] == victim.Addr || row[0] == "" {
				return false
			}
		}
		return true
	}, "copy count was not restored after the kill")
}

// A master paused with SIGSTOP for longer than its lease acknowledges
// nothing after it wakes (its lease has run out and its slave was
// promoted), and the promoted slave holds every acknowledged write.
//
// The woken node may answer the write in two ways: refuse it (its lease
// has lapsed, or its new table names another master), or, once it has
// learnt the new table, forward it to the bucket's new master
// (dataserver forwarding after a bucket moves away) and relay that
// master's +OK. The second is right, and then the write must stand on
// the new master. What must never happen is a +OK for a write that ran
// only here: the final read through the proxy tells them apart.
// Handoff is off, so the node does not become a master again during the
// test (with it, it catches up as a slave and gets its masters back
// within milliseconds; a write it ran before that on its own would then
// become visible late instead of never). Handoff's own tests cover the
// return.
func TestPausedMasterAcknowledgesNothingAfterWaking(t *testing.T) {
	pc := testcluster.StartProcs(t, testcluster.ProcOptions{DataServers: 3, Copies: 2, Buckets: 64,
		ConfigServerArgs: []string{"--handoff-window=-1s"}})
	proxy := pc.Proxies[0].Addr
	victim := pc.DataServers[0]
	tb := tableOf(t, pc.ConfigServers[0].Addr)
	// A key whose bucket the victim masters.
	key := ""
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("paused:%d", i)
		if tb.Master(tb.Bucket([]byte(k))) == victim.Addr {
			key = k
		}
	}
	cl := redis.NewClient(&redis.Options{Addr: proxy})
	defer cl.Close()
	if err := cl.Set(context.Background(), key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	load, wg := runWriteLoad(t, proxy, 2, stop)
	time.Sleep(time.Second)
	victim.Pause()
	// Longer than the lease (1.5 s) and the configserver's down
	// detection (2 s): the slave is promoted meanwhile.
	time.Sleep(4 * time.Second)
	// A write sent straight to the paused master waits in its socket and
	// is the first thing it reads when it wakes.
	conn, err := net.DialTimeout("tcp", victim.Addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("*3\r\n$3\r\nSET\r\n$" + fmt.Sprint(len(key)) + "\r\n" + key + "\r\n$5\r\nstale\r\n")); err != nil {
		t.Fatal(err)
	}
	victim.Resume()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("no reply from the woken master: %v", err)
	}
	want := "before"
	switch {
	case strings.HasPrefix(line, "-"):
	case line == "+OK\r\n":
		want = "stale" // forwarded to the new master: it must stand there
	default:
		t.Fatalf("woken master answered %q", strings.TrimSpace(line))
	}
	t.Logf("woken master answered %q", strings.TrimSpace(line))
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d writes acknowledged, %d errors (last %v), longest gap %v", len(load.acked), load.errors, load.lastErr, load.maxGap)
	verifyAcked(t, proxy, load.acked)
	if got, err := cl.Get(context.Background(), key).Result(); err != nil || got != want {
		t.Fatalf("%s = %q, %v after the woken master answered %q; want %q", key, got, err, strings.TrimSpace(line), want)
	}
}

// A dataserver away for 20 s (SIGSTOP) under a write load, within the
// handoff window: its master slots pass to caught-up slaves, it keeps its
// rows as a slave behind the masters, which keep the writes it misses;
// meanwhile each of its buckets gets one more copy on a live node (the
// copy count stays whole); when it wakes it replays the backlog and is
// caught up without any bucket copied to it, and the extra copies go.
// Proof that it has every acknowledged write: another node is then
// killed, the woken node becomes the only copy of some buckets, and every
// acknowledged write still reads back.
func TestAwayNodeCatchesUpFromHandoff(t *testing.T) {
	pc := testcluster.StartProcs(t, testcluster.ProcOptions{DataServers: 3, Copies: 2, Buckets: 64,
		ConfigServerArgs: []string{"--handoff-window", "60s"}})
	proxy := pc.Proxies[0].Addr
	cl := pc.Client()
	migrations := func() wire.MigrationStatus {
		var ms wire.MigrationStatus
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := cl.Get(ctx, "/v1/migrations", &ms); err != nil {
			t.Fatal(err)
		}
		return ms
	}
	table := func() *route.Table {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		tb, err := cl.Table(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	stop := make(chan struct{})
	load, wg := runWriteLoad(t, proxy, 2, stop)
	time.Sleep(time.Second)
	before := migrations()
	copiesBefore := fullCopies(t, pc.DataServers)

	victim := pc.DataServers[0]
	load.mu.Lock()
	ackedBefore := make(map[string]bool, len(load.acked))
	for k := range load.acked {
		ackedBefore[k] = true
	}
	load.mu.Unlock()
	victim.Pause()
	start := time.Now()
	testutil.Eventually(t, 10*time.Second, func() bool { return len(table().Behind) > 0 }, "the paused node is never marked behind")
	for time.Since(start) < 20*time.Second {
		for _, mv := range table().Migrating {
			if mv.To == victim.Addr || mv.From == victim.Addr {
				t.Fatalf("move %v while %s is away", mv, victim.Addr)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	away := table()
	for b, row := range away.Serving {
		if row[0] == victim.Addr {
			t.Fatalf("bucket %d still mastered by the away node: %v", b, row)
		}
	}
	victim.Resume()
	woke := time.Now()
	// The writes acknowledged while it was away: it can only have them
	// from its masters' backlogs (or from a full copy, which must not run).
	load.mu.Lock()
	var missed []string
	for k := range load.acked {
		if !ackedBefore[k] {
			missed = append(missed, k)
		}
	}
	load.mu.Unlock()
	testutil.Eventually(t, 20*time.Second, func() bool {
		tb := table()
		if len(tb.Behind) > 0 || len(tb.Migrating) > 0 {
			return false
		}
		for _, row := range tb.Serving {
			if len(row) != 2 {
				return false // an extra copy not dropped yet
			}
		}
		return true
	}, "the woken node does not catch up")
	t.Logf("away 20 s: caught up %v after waking", time.Since(woke).Round(time.Millisecond))
	// While it was away its buckets were copied to the live node (one
	// more copy each), never to it.
	if after := migrations(); after.Completed == before.Completed || len(after.Running) > 0 {
		t.Fatalf("moves: %d completed before, %d after, running %v; want the away node's buckets copied to a live node",
			before.Completed, after.Completed, after.Running)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d writes acknowledged, %d errors (writes in flight to the paused node), longest gap %v", len(load.acked), load.errors, load.maxGap)
	for _, e := range load.errLog {
		t.Logf("error: %s", e)
	}
	verifyAcked(t, proxy, load.acked)

	// No node sent a bucket in full to it: not its masters (a resync or
	// a replaced stream to it) nor itself (a diverged copy resent as
	// master); the only full copies are the migrations that gave its
	// buckets one more copy on the live node.
	copiesAfter := fullCopies(t, pc.DataServers)
	for _, p := range pc.DataServers {
		for reason, n := range copiesAfter[p.Addr] {
			if d := n - copiesBefore[p.Addr][reason]; d != 0 && (reason != "migration" || p == victim) {
				t.Errorf("%s sent %v full bucket copies (%s) while %s was away and caught up, want none",
					p.Addr, d, reason, victim.Addr)
			}
		}
	}
	// The woken node's own copies hold every acknowledged write of their
	// buckets, those written while it was away included.
	final := table()
	holds := func(k string) bool { return slices.Contains(final.Serving[final.Bucket([]byte(k))], victim.Addr) }
	replayed := 0
	for _, k := range missed {
		if holds(k) {
			replayed++
		}
	}
	if replayed == 0 {
		t.Fatalf("none of the %d writes acknowledged while %s was away is in a bucket it holds", len(missed), victim.Addr)
	}
	readCopy(t, victim.Addr, final, load.acked, holds)
	t.Logf("%s holds %d acknowledged writes made while it was away, all read back from its own copies",
		victim.Addr, replayed)

	// The woken node must hold every acknowledged write of its buckets.
	other := pc.DataServers[1]
	shared := 0
	for _, row := range table().Serving {
		if slices.Contains(row, victim.Addr) && slices.Contains(row, other.Addr) {
			shared++
		}
	}
	other.Kill()
	testutil.Eventually(t, 15*time.Second, func() bool {
		for _, row := range table().Serving {
			if row[0] == other.Addr {
				return false
			}
		}
		return true
	}, "no failover after the kill")
	verifyAcked(t, proxy, load.acked)
	t.Logf("after killing %s, the woken node alone served %d buckets: every acknowledged write read back", other.Addr, shared)
}
