package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/wire"
)

// The model of a mixed load: each worker owns its keys, so for every key
// the set of states it may be in is known exactly. An acknowledged write
// leaves one state (checked against its reply: an INCR, LPUSH, HSET or DEL
// reply must follow from a possible prior state, so a write applied twice
// or lost shows); a failed write leaves the state before or after it (it
// may have applied). Reads must return a possible state.

const (
	absent  = "\x00absent" // the key (or hash field) does not exist
	listSep = "\x01"       // list elements, head first
)

type loadEvent struct {
	at      time.Time
	op, key string
	msg     string
}

func (e loadEvent) String() string {
	return fmt.Sprintf("%s %s %q: %s", e.at.Format("15:04:05.000"), e.op, e.key, e.msg)
}

// mixedLoad runs workers through one proxy until stop.
type mixedLoad struct {
	addr     string
	workers  []*loadWorker
	stopCh   chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	// The counter every worker INCRs: its final value must lie in
	// [acked, acked+maybe].
	shared      string
	sharedAcked atomic.Int64
	sharedMaybe atomic.Int64
	sharedMu    sync.Mutex
	sharedSeen  map[int64]time.Time // every reply of the shared INCR, when

	ops    atomic.Int64
	writes atomic.Int64
	pre    map[string]string // preloaded keys, only read by the load

	mu    sync.Mutex
	errs  []loadEvent // errors the client saw
	bad   []loadEvent // replies the model does not allow
	maybe int         // errors saying the write may have applied
	// latency of every op, for the p99 per phase
	lat []time.Duration
	// slowest op and the gap without any successful op
	lastOK time.Time
	maxGap time.Duration
}

type loadWorker struct {
	l      *mixedLoad
	id     int
	rng    *rand.Rand
	cl     *redis.Client
	m      map[string][]string // key (or key\x00field for hashes) -> possible states
	unique []string
	seq    int
	shared int64 // last shared counter value this worker saw
}

func newMixedLoad(addr string, workers int, pre map[string]string) *mixedLoad {
	l := &mixedLoad{addr: addr, stopCh: make(chan struct{}), shared: "mix:shared:ctr", pre: pre, lastOK: time.Now(),
		sharedSeen: map[int64]time.Time{}}
	for i := 0; i < workers; i++ {
		l.workers = append(l.workers, &loadWorker{
			l: l, id: i, rng: rand.New(rand.NewSource(int64(i) + 1)), m: map[string][]string{},
			// No client retries: a command is sent once, so what the
			// client sees is what the proxy did.
			cl: redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1,
				DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}),
		})
	}
	return l
}

func (l *mixedLoad) start() {
	for _, w := range l.workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stopCh:
					return
				default:
				}
				w.step()
			}
		}()
	}
}

// startMixedLoad starts a mixedLoad, stopped at the latest when t ends.
func startMixedLoad(t *testing.T, addr string, workers int, pre map[string]string) *mixedLoad {
	l := newMixedLoad(addr, workers, pre)
	l.start()
	t.Cleanup(l.stop)
	return l
}

// stop stops the workers and waits for them; later calls do nothing.
func (l *mixedLoad) stop() {
	l.stopOnce.Do(func() {
		close(l.stopCh)
		l.wg.Wait()
		for _, w := range l.workers {
			w.cl.Close()
		}
	})
}

// mark starts a new latency window and returns the ops so far.
func (l *mixedLoad) mark() {
	l.mu.Lock()
	l.lat = l.lat[:0]
	l.maxGap = 0
	l.lastOK = time.Now()
	l.mu.Unlock()
}

// window returns the p50, p99, max latency and longest gap since mark.
func (l *mixedLoad) window() (p50, p99, worst, gap time.Duration, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := slices.Clone(l.lat)
	slices.Sort(d)
	if len(d) == 0 {
		return 0, 0, 0, l.maxGap, 0
	}
	return d[len(d)/2], d[len(d)*99/100], d[len(d)-1], l.maxGap, len(d)
}

func (l *mixedLoad) record(d time.Duration, ok bool) {
	now := time.Now()
	l.mu.Lock()
	l.lat = append(l.lat, d)
	if ok {
		if g := now.Sub(l.lastOK); g > l.maxGap {
			l.maxGap = g
		}
		l.lastOK = now
	}
	l.mu.Unlock()
}

func (l *mixedLoad) clientErr(op, key string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.Contains(err.Error(), "may have applied") {
		l.maybe++
	}
	l.errs = append(l.errs, loadEvent{time.Now(), op, key, err.Error()})
}

func (l *mixedLoad) violation(op, key, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bad = append(l.bad, loadEvent{time.Now(), op, key, fmt.Sprintf(format, args...)})
}

func (w *loadWorker) key(kind string, i int) string {
	return fmt.Sprintf("mix:w%d:%s:%d", w.id, kind, i)
}

func (w *loadWorker) value() string {
	w.seq++
	return fmt.Sprintf("w%d-%d", w.id, w.seq)
}

func (w *loadWorker) poss(key string) []string {
	if p, ok := w.m[key]; ok {
		return p
	}
	return []string{absent}
}

// write folds a write into the model. next maps a possible prior state to
// the state after the write, and whether the reply fits that prior state.
func (w *loadWorker) write(op, key string, err error, next func(prev string) (string, bool)) {
	w.l.writes.Add(1)
	poss := w.poss(key)
	if err != nil {
		w.l.clientErr(op, key, err)
		out := slices.Clone(poss)
		for _, p := range poss {
			n, _ := next(p)
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		w.m[key] = out
		return
	}
	var out []string
	for _, p := range poss {
		if n, ok := next(p); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		w.l.violation(op, key, "the reply follows from no possible prior state %q", show(poss))
		n, _ := next(poss[0])
		out = []string{n}
	}
	w.m[key] = out
}

// read checks a read's result against the model.
func (w *loadWorker) read(op, key, got string, err error) {
	if err != nil {
		w.l.clientErr(op, key, err)
		return
	}
	if p := w.poss(key); !slices.Contains(p, got) {
		w.l.violation(op, key, "read %q, the model allows %q", show([]string{got}), show(p))
	}
}

func show(states []string) []string {
	out := make([]string, len(states))
	for i, s := range states {
		if s == absent {
			s = "<absent>"
		}
		out[i] = strings.ReplaceAll(s, listSep, ",")
	}
	return out
}

func listLen(s string) int {
	if s == absent {
		return 0
	}
	return strings.Count(s, listSep) + 1
}

func strOf(v string, err error) (string, error) {
	if errors.Is(err, redis.Nil) {
		return absent, nil
	}
	return v, err
}

func (w *loadWorker) step() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cl := w.cl
	start := time.Now()
	var failed bool
	defer func() {
		w.l.ops.Add(1)
		w.l.record(time.Since(start), !failed)
	}()
	r := w.rng.Intn(100)
	switch {
	case r < 16: // SET of a new key
		k, v := w.key("u", len(w.unique)), w.value()
		err := cl.Set(ctx, k, v, 0).Err()
		failed = err != nil
		w.unique = append(w.unique, k)
		w.write("SET", k, err, func(string) (string, bool) { return v, true })
	case r < 30: // SET of an overwritten key
		k, v := w.key("o", w.rng.Intn(20)), w.value()
		err := cl.Set(ctx, k, v, 0).Err()
		failed = err != nil
		w.write("SET", k, err, func(string) (string, bool) { return v, true })
	case r < 48: // GET
		var k string
		switch x := w.rng.Intn(4); {
		case x == 0 && len(w.unique) > 0:
			k = w.unique[max(0, len(w.unique)-1-w.rng.Intn(200))]
		case x == 1 && len(w.l.pre) > 0:
			k = fmt.Sprintf("mix:pre:%d", w.rng.Intn(len(w.l.pre)))
			got, err := strOf(cl.Get(ctx, k).Result())
			failed = err != nil
			if err != nil {
				w.l.clientErr("GET", k, err)
			} else if got != w.l.pre[k] {
				w.l.violation("GET", k, "preloaded key reads %q, want %q", got, w.l.pre[k])
			}
			return
		case x == 2:
			k = w.key("m", w.rng.Intn(30))
		default:
			k = w.key("o", w.rng.Intn(20))
		}
		got, err := strOf(cl.Get(ctx, k).Result())
		failed = err != nil
		w.read("GET", k, got, err)
	case r < 56: // INCR of an own counter
		k := w.key("c", w.rng.Intn(5))
		n, err := cl.Incr(ctx, k).Result()
		failed = err != nil
		w.write("INCR", k, err, func(prev string) (string, bool) {
			p := int64(0)
			if prev != absent {
				p, _ = strconv.ParseInt(prev, 10, 64)
			}
			return strconv.FormatInt(p+1, 10), p+1 == n
		})
	case r < 61: // INCR of the shared counter
		n, err := cl.Incr(ctx, w.l.shared).Result()
		failed = err != nil
		w.l.writes.Add(1)
		if err != nil {
			w.l.sharedMaybe.Add(1)
			w.l.clientErr("INCR", w.l.shared, err)
			break
		}
		w.l.sharedAcked.Add(1)
		w.l.sharedMu.Lock()
		if _, dup := w.l.sharedSeen[n]; dup {
			w.l.violation("INCR", w.l.shared, "two INCRs replied %d", n)
		}
		w.l.sharedSeen[n] = time.Now()
		w.l.sharedMu.Unlock()
		if n <= w.shared {
			w.l.violation("INCR", w.l.shared, "counter went from %d to %d", w.shared, n)
		}
		w.shared = n
	case r < 66: // DEL
		var k string
		if w.rng.Intn(2) == 0 && len(w.unique) > 0 {
			k = w.unique[w.rng.Intn(len(w.unique))]
		} else {
			k = w.key("o", w.rng.Intn(20))
		}
		n, err := cl.Del(ctx, k).Result()
		failed = err != nil
		w.write("DEL", k, err, func(prev string) (string, bool) { return absent, (prev != absent) == (n == 1) })
	case r < 74: // MSET over several buckets
		var args []any
		var keys, vals []string
		for _, i := range w.rng.Perm(30)[:4] {
			k, v := w.key("m", i), w.value()
			keys, vals = append(keys, k), append(vals, v)
			args = append(args, k, v)
		}
		err := cl.MSet(ctx, args...).Err()
		failed = err != nil
		for i, k := range keys {
			v := vals[i]
			w.write("MSET", k, err, func(string) (string, bool) { return v, true })
		}
	case r < 81: // MGET over several buckets
		var keys []string
		for _, i := range w.rng.Perm(30)[:5] {
			keys = append(keys, w.key("m", i))
		}
		keys = append(keys, w.key("o", w.rng.Intn(20)))
		vals, err := cl.MGet(ctx, keys...).Result()
		failed = err != nil
		if err != nil {
			w.l.clientErr("MGET", strings.Join(keys, " "), err)
			break
		}
		for i, k := range keys {
			got := absent
			if s, ok := vals[i].(string); ok {
				got = s
			}
			w.read("MGET", k, got, nil)
		}
	case r < 87: // HSET
		hk, f, v := w.key("h", w.rng.Intn(5)), fmt.Sprintf("f%d", w.rng.Intn(6)), w.value()
		n, err := cl.HSet(ctx, hk, f, v).Result()
		failed = err != nil
		w.write("HSET", hk+"\x00"+f, err, func(prev string) (string, bool) { return v, (prev == absent) == (n == 1) })
	case r < 91: // HGET
		hk, f := w.key("h", w.rng.Intn(5)), fmt.Sprintf("f%d", w.rng.Intn(6))
		got, err := strOf(cl.HGet(ctx, hk, f).Result())
		failed = err != nil
		w.read("HGET", hk+"\x00"+f, got, err)
	case r < 96: // LPUSH (a DEL once the list is long)
		k, v := w.key("l", w.rng.Intn(3)), w.value()
		long := false
		for _, p := range w.poss(k) {
			long = long || listLen(p) >= 30
		}
		if long {
			n, err := cl.Del(ctx, k).Result()
			failed = err != nil
			w.write("DEL", k, err, func(prev string) (string, bool) { return absent, (prev != absent) == (n == 1) })
			break
		}
		n, err := cl.LPush(ctx, k, v).Result()
		failed = err != nil
		w.write("LPUSH", k, err, func(prev string) (string, bool) {
			next := v
			if prev != absent {
				next = v + listSep + prev
			}
			return next, int64(listLen(prev)+1) == n
		})
	default: // LRANGE
		k := w.key("l", w.rng.Intn(3))
		got, err := cl.LRange(ctx, k, 0, -1).Result()
		failed = err != nil
		s := absent
		if len(got) > 0 {
			s = strings.Join(got, listSep)
		}
		w.read("LRANGE", k, s, err)
	}
}

// report logs what the client saw and fails on model violations and on
// errors not allowed.
func (l *mixedLoad) report(t *testing.T, allowMaybe bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("load: %d operations (%d writes), %d client errors (%d 'may have applied'), %d model violations",
		l.ops.Load(), l.writes.Load(), len(l.errs), l.maybe, len(l.bad))
	for i, e := range l.errs {
		if i == 20 {
			t.Logf("... and %d more errors", len(l.errs)-i)
			break
		}
		t.Logf("client error: %s", e)
	}
	for i, e := range l.bad {
		if i == 20 {
			t.Errorf("... and %d more violations", len(l.bad)-i)
			break
		}
		t.Errorf("model violation: %s", e)
	}
	// The shared counter's replies are 1..N, each once, but for INCRs
	// that failed: a value no client saw is an INCR applied twice (or one
	// applied the client was told nothing of).
	l.sharedMu.Lock()
	top := int64(0)
	for v := range l.sharedSeen {
		top = max(top, v)
	}
	var gaps []string
	for v := int64(1); v <= top; v++ {
		if _, ok := l.sharedSeen[v]; !ok {
			at := ""
			if p, ok := l.sharedSeen[v-1]; ok {
				at = "after " + p.Format("15:04:05.000")
			}
			if nx, ok := l.sharedSeen[v+1]; ok {
				at += " before " + nx.Format("15:04:05.000")
			}
			gaps = append(gaps, fmt.Sprintf("%d (%s)", v, at))
		}
	}
	l.sharedMu.Unlock()
	if int64(len(gaps)) > l.sharedMaybe.Load() {
		t.Errorf("the shared counter skipped %d values no client was given, with %d INCRs failed: %v",
			len(gaps), l.sharedMaybe.Load(), gaps[:min(len(gaps), 10)])
	}
	if !allowMaybe && len(l.errs) > 0 {
		t.Errorf("the client saw %d errors, want none", len(l.errs))
	} else if other := len(l.errs) - l.maybe; other > 0 {
		t.Errorf("the client saw %d errors other than 'the write may have applied'", other)
	}
}

// verify reads every key of the model back through the proxy and, copy by
// copy, from each dataserver the table names (TAIR.XR), and checks DBSIZE.
func (l *mixedLoad) verify(t *testing.T, tb *route.Table) {
	t.Helper()
	type check struct {
		key  string // the Redis key
		kind string // "get", "hget", "list"
		arg  string // hash field
		poss []string
	}
	var checks []check
	sure, maybe := 0, 0 // keys surely present / maybe present
	hashes := map[string][2]int{}
	for _, w := range l.workers {
		for k, p := range w.m {
			switch {
			case strings.Contains(k, "\x00"):
				hk, f, _ := strings.Cut(k, "\x00")
				checks = append(checks, check{hk, "hget", f, p})
				h := hashes[hk]
				if !slices.Contains(p, absent) {
					h[0]++ // a field surely present
				} else if len(p) > 1 {
					h[1]++ // a field maybe present
				}
				hashes[hk] = h
				continue
			case strings.Contains(k, ":l:"):
				checks = append(checks, check{k, "list", "", p})
			default:
				checks = append(checks, check{k, "get", "", p})
			}
			if !slices.Contains(p, absent) {
				sure++
			} else if len(p) > 1 {
				maybe++
			}
		}
	}
	for _, h := range hashes {
		if h[0] > 0 {
			sure++
		} else if h[1] > 0 {
			maybe++
		}
	}
	for k, v := range l.pre {
		checks = append(checks, check{k, "get", "", []string{v}})
		sure++
	}
	if n := l.sharedAcked.Load() + l.sharedMaybe.Load(); n > 0 {
		var poss []string
		for i := l.sharedAcked.Load(); i <= n; i++ {
			poss = append(poss, strconv.FormatInt(i, 10))
		}
		checks = append(checks, check{l.shared, "get", "", poss})
		if l.sharedAcked.Load() > 0 {
			sure++
		} else {
			maybe++
		}
	}
	sort.Slice(checks, func(i, j int) bool { return checks[i].key < checks[j].key })

	// run reads every check on one client (pipelined) and returns the
	// mismatches; prefix wraps each command (TAIR.XR for one copy).
	run := func(cl *redis.Client, only func(check) bool, prefix []any) (int, []string) {
		var bad []string
		n := 0
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var batch []check
		var cmds []redis.Cmder
		flush := func() {
			pipe := cl.Pipeline()
			cmds = cmds[:0]
			for _, c := range batch {
				var args []any
				switch c.kind {
				case "get":
					args = []any{"GET", c.key}
				case "hget":
					args = []any{"HGET", c.key, c.arg}
				case "list":
					args = []any{"LRANGE", c.key, 0, -1}
				}
				cmds = append(cmds, pipe.Do(ctx, append(slices.Clone(prefix), args...)...))
			}
			_, _ = pipe.Exec(ctx)
			for i, cmd := range cmds {
				c := batch[i]
				n++
				v, err := cmd.(*redis.Cmd).Result()
				got := absent
				switch {
				case errors.Is(err, redis.Nil):
				case err != nil:
					got = "error: " + err.Error()
				case c.kind == "list":
					items, _ := v.([]any)
					var s []string
					for _, it := range items {
						s = append(s, fmt.Sprint(it))
					}
					if len(s) > 0 {
						got = strings.Join(s, listSep)
					}
				default:
					got = fmt.Sprint(v)
				}
				if !slices.Contains(c.poss, got) {
					bad = append(bad, fmt.Sprintf("%s %s %s reads %q, want one of %q", c.kind, c.key, c.arg, show([]string{got}), show(c.poss)))
				}
			}
			batch = batch[:0]
		}
		for _, c := range checks {
			if only != nil && !only(c) {
				continue
			}
			batch = append(batch, c)
			if len(batch) == 500 {
				flush()
			}
		}
		if len(batch) > 0 {
			flush()
		}
		return n, bad
	}
	fail := func(where string, n int, bad []string) {
		t.Helper()
		for i, b := range bad {
			if i == 10 {
				break
			}
			t.Errorf("%s: %s", where, b)
		}
		if len(bad) > 0 {
			t.Errorf("%s: %d of %d keys differ from the model", where, len(bad), n)
		}
	}

	cl := redis.NewClient(&redis.Options{Addr: l.addr, MaxRetries: -1, ReadTimeout: 30 * time.Second})
	defer cl.Close()
	n, bad := run(cl, nil, nil)
	fail("proxy", n, bad)
	t.Logf("verified %d keys/fields through the proxy (%d keys surely present, %d maybe)", n, sure, maybe)
	dbsize, err := cl.DBSize(context.Background()).Result()
	if err != nil {
		t.Errorf("DBSIZE: %v", err)
	} else if dbsize < int64(sure) || dbsize > int64(sure+maybe) {
		t.Errorf("DBSIZE = %d, the model says %d..%d keys", dbsize, sure, sure+maybe)
	}

	// Every copy of every bucket, read on its dataserver.
	for _, node := range tb.Nodes() {
		ncl := redis.NewClient(&redis.Options{Addr: node, MaxRetries: -1, ReadTimeout: 30 * time.Second})
		prefix := []any{"TAIR.XR", 0, uint64(tb.Version), 2}
		n, bad := run(ncl, func(c check) bool { return slices.Contains(tb.Serving[tb.Bucket([]byte(c.key))], node) }, prefix)
		ncl.Close()
		fail("copy on "+node, n, bad)
		t.Logf("verified %d keys/fields on the copies %s holds", n, node)
	}
}

// preload writes n keys of valueSize bytes through the proxy.
func preload(t *testing.T, addr string, n, valueSize int) map[string]string {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	pre := make(map[string]string, n)
	pad := strings.Repeat("x", max(0, valueSize-12))
	for i := 0; i < n; i += 500 {
		pipe := cl.Pipeline()
		for j := i; j < min(n, i+500); j++ {
			k, v := fmt.Sprintf("mix:pre:%d", j), fmt.Sprintf("p%d-%s", j, pad)
			pre[k] = v
			pipe.Set(context.Background(), k, v, 0)
		}
		if _, err := pipe.Exec(context.Background()); err != nil {
			t.Fatalf("preload: %v", err)
		}
	}
	return pre
}

func table(t *testing.T, cl *wire.Client) *route.Table {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	tb, err := cl.Table(ctx, 0, 0)
	if err != nil {
		t.Fatalf("table: %v", err)
	}
	return tb
}

// waitTable polls the configserver's table until cond holds.
func waitTable(t *testing.T, cl *wire.Client, timeout time.Duration, cond func(*route.Table) bool, msg string) *route.Table {
	t.Helper()
	var last *route.Table
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		tb, err := cl.Table(ctx, 0, 0)
		cancel()
		if err == nil {
			last = tb
			if cond(tb) {
				return tb
			}
		}
		if time.Now().After(deadline) {
			if last != nil {
				var m wire.MigrationStatus
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = cl.Get(ctx, "/v1/migrations", &m)
				cancel()
				t.Logf("last table: version %d, %d moves running, %d pending, %d copies differ from the destination",
					last.Version, len(last.Migrating), len(m.Pending), len(diffCopies(last.Serving, last.Destination)))
			}
			t.Fatalf("after %v: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// diffCopies lists the copies (bucket/node) in b that a does not hold.
func diffCopies(a, b [][]string) []string {
	var out []string
	for i := range b {
		for _, n := range b[i] {
			if n != "" && (i >= len(a) || !slices.Contains(a[i], n)) {
				out = append(out, fmt.Sprintf("%d/%s", i, n))
			}
		}
	}
	return out
}

// settled: no move running or planned, and every bucket has copies live
// copies on distinct nodes, none on the excluded ones.
func settled(tb *route.Table, exclude ...string) bool {
	if len(tb.Migrating) > 0 || len(diffCopies(tb.Serving, tb.Destination)) > 0 || len(diffCopies(tb.Destination, tb.Serving)) > 0 {
		return false
	}
	for _, row := range tb.Serving {
		seen := map[string]bool{}
		for _, n := range row {
			if n == "" || seen[n] || slices.Contains(exclude, n) {
				return false
			}
			seen[n] = true
		}
		if len(seen) != tb.Copies {
			return false
		}
	}
	return true
}

func copiesOn(tb *route.Table, node string) int {
	n := 0
	for _, row := range tb.Serving {
		if slices.Contains(row, node) {
			n++
		}
	}
	return n
}

// Adding a 4th dataserver to a loaded 3-node cluster, then draining one of
// the original three, moves buckets while a client runs a mixed
// read/write load through the proxy: the client sees no error at all
// (TRYAGAIN during a freeze and NOTMASTER after a cutover are absorbed by
// the proxy), and afterwards every key, on every copy, equals what the
// client's acknowledged writes say.
func TestAddAndDrainUnderMixedLoad(t *testing.T) {
	const buckets = 64
	pc := testcluster.StartProcs(t, testcluster.ProcOptions{DataServers: 3, Copies: 2, Buckets: buckets})
	proxy := pc.Proxies[0].Addr
	cl := pc.Client()
	t0 := time.Now()
	pre := preload(t, proxy, 20000, 64)
	t.Logf("preloaded %d keys in %v", len(pre), time.Since(t0).Round(time.Millisecond))

	load := startMixedLoad(t, proxy, 6, pre)
	time.Sleep(3 * time.Second)
	p50, p99, worst, gap, n := load.window()
	t.Logf("before: %d ops in 3s, latency p50 %v p99 %v max %v", n, p50, p99, worst)

	// 1. Add a 4th dataserver.
	before := table(t, cl)
	load.mark()
	t1 := time.Now()
	ds4 := testcluster.StartProc(t, "dataserver", "--configserver", strings.Join(pc.ConfigServerAddrs(), ","),
		"--engine", "rdb", "--dir", filepath.Join(pc.Dir, "ds3"))
	share := buckets * 2 / 4
	added := waitTable(t, cl, 60*time.Second, func(tb *route.Table) bool {
		return settled(tb) && copiesOn(tb, ds4.Addr) >= share-1
	}, "the 4th dataserver never got its share of buckets")
	moved := len(diffCopies(before.Serving, added.Serving))
	p50, p99, worst, gap, n = load.window()
	t.Logf("add: %d bucket copies moved in %v (table %d -> %d), %s holds %d copies; %d ops, latency p50 %v p99 %v max %v, longest gap %v",
		moved, time.Since(t1).Round(time.Millisecond), before.Version, added.Version, ds4.Addr, copiesOn(added, ds4.Addr),
		n, p50, p99, worst, gap)

	// 2. Drain one of the original three, as `tair ctl node drain` does.
	victim := pc.DataServers[1].Addr
	load.mark()
	t2 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rep, err := cl.Admin(ctx, &wire.AdminRequest{Op: "node-drain", Node: victim})
	cancel()
	if err != nil || !rep.OK {
		t.Fatalf("node-drain %s: %v %+v", victim, err, rep)
	}
	drained := waitTable(t, cl, 60*time.Second, func(tb *route.Table) bool {
		return settled(tb, victim)
	}, "the drained dataserver still holds copies")
	moved2 := len(diffCopies(added.Serving, drained.Serving))
	p50, p99, worst, gap, n = load.window()
	t.Logf("drain: %d bucket copies moved in %v (table %d -> %d); %d ops, latency p50 %v p99 %v max %v, longest gap %v",
		moved2, time.Since(t2).Round(time.Millisecond), added.Version, drained.Version, n, p50, p99, worst, gap)

	time.Sleep(time.Second) // load on the final table
	load.stop()
	load.report(t, false)
	t3 := time.Now()
	load.verify(t, drained)
	t.Logf("verification took %v", time.Since(t3).Round(time.Millisecond))
}

// crashDuringMove kills the source or the destination of a running move
// (kill -9) while a mixed load runs, then restarts it (same arguments and
// data directory) or leaves it dead, and checks that the move was running
// at the kill, that the cluster reaches a table with the full copy count
// and no moves, and that the data equals the model on every copy (INCR
// counters in the load show a write applied twice).
func crashDuringMove(t *testing.T, victimIsSource, restart bool) {
	const buckets = 64
	// ldb keeps a restarted node's data (and a destination's partial
	// copy); the migration rate cap makes each move last about 3 s (some
	// 125 preloaded records of 250 bytes a bucket at 10 kB/s), so the
	// kill surely falls inside one. Two moves per source (as many as a
	// dataserver runs at once) keep the rebalance and the recovery short.
	// --sync none: the copies on other nodes, not fsync, keep acknowledged
	// writes here (a killed destination holds no serving copy; a killed
	// source that stays dead has a slave of each bucket elsewhere). A
	// restarted node lost the writes ldb had not flushed, so it starts
	// empty and says it kept nothing (no clean-shutdown marker): its
	// copies are rebuilt rather than served again without those writes.
	const rate = 10000
	dsArgs := []string{"--migrate-bytes-per-sec", strconv.Itoa(rate), "--sync", "none"}
	// A dead node's copies are rebuilt elsewhere after the handoff window
	// (30 s by default): shortened so the recovery runs under the load.
	pc := testcluster.StartProcs(t, testcluster.ProcOptions{DataServers: 3, Copies: 2, Buckets: buckets, Engine: "ldb",
		DataServerArgs: dsArgs, ConfigServerArgs: []string{"--handoff-window", "2s", "--moves-per-node", "2"}})
	proxy := pc.Proxies[0].Addr
	cl := pc.Client()
	t0 := time.Now()
	pre := preload(t, proxy, 8000, 240)
	t.Logf("preloaded %d keys in %v", len(pre), time.Since(t0).Round(time.Millisecond))
	// A move's snapshot holds at least the bucket's preloaded records (the
	// load never deletes them), each sent after the cap's sleep: a move
	// cannot finish sooner than minCopy[b] after it started.
	minCopy := make([]time.Duration, buckets)
	for k, v := range pre {
		minCopy[route.BucketOf([]byte(k), buckets)] += time.Duration(len(k)+len(v)) * time.Second / rate
	}

	load := startMixedLoad(t, proxy, 6, pre)
	time.Sleep(2 * time.Second)

	// Add a 4th dataserver: moves start from the three to it, none
	// before notBefore (so none finishes before notBefore+minCopy): the
	// last time a table read named no move to it.
	base := fullCopies(t, pc.DataServers)
	notBefore := time.Now()
	ds4 := testcluster.StartProc(t, "dataserver", append([]string{"--configserver", strings.Join(pc.ConfigServerAddrs(), ","),
		"--engine", "ldb", "--dir", filepath.Join(pc.Dir, "ds3")}, dsArgs...)...)
	if at := time.Now(); !slices.ContainsFunc(table(t, cl).Migrating, func(m route.Move) bool { return m.To == ds4.Addr }) {
		notBefore = at
	}
	procs := map[string]*testcluster.Proc{ds4.Addr: ds4}
	for _, p := range pc.DataServers {
		procs[p.Addr] = p
	}
	// A move to ds4 that has started, early enough that it cannot have
	// finished by the kill. Started: its source has taken as many bucket
	// snapshots for moves (tair_dataserver_full_copies_total) as it runs
	// moves, or reports records sent (/v1/migrations) and not done.
	var mv route.Move
	var started string
	var tb *route.Table
	early := func(m route.Move) bool {
		return m.To == ds4.Addr && time.Now().Add(200*time.Millisecond).Before(notBefore.Add(minCopy[m.Bucket]))
	}
	deadline := time.Now().Add(30 * time.Second)
	for mv.To == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no move to %s was seen running early enough to be killed inside", ds4.Addr)
		}
		tb = table(t, cl)
		for _, src := range pc.DataServers {
			var moves []route.Move
			for _, m := range tb.Migrating {
				if m.From == src.Addr {
					moves = append(moves, m)
				}
			}
			i := slices.IndexFunc(moves, early)
			if i < 0 {
				continue
			}
			d := fullCopies(t, []*testcluster.Proc{src})[src.Addr]["migration"] - base[src.Addr]["migration"]
			if d >= float64(len(moves)) {
				mv = moves[i]
				started = fmt.Sprintf("its source took %v bucket snapshots for its %d moves", d, len(moves))
				break
			}
		}
		if mv.To != "" {
			break
		}
		var ms wire.MigrationStatus
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := cl.Get(ctx, "/v1/migrations", &ms)
		cancel()
		for _, p := range ms.Running {
			if m, ok := tb.MoveOf(p.Bucket); err == nil && ok && m.To == p.To && early(m) && p.KeysSent > 0 && !p.Done && p.Failed == "" {
				mv = m
				started = fmt.Sprintf("its source reports %d records sent, not done", p.KeysSent)
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var victim *testcluster.Proc
	if victimIsSource {
		victim = procs[mv.From]
	} else {
		victim = procs[mv.To]
	}
	serving := copiesOn(tb, victim.Addr)
	load.mark()
	victim.Kill()
	tKill := time.Now()
	t.Logf("killed %s, %s of bucket %d's move %s -> %s, %v after the moves could start (%s); it cannot finish before %v (%d preloaded bytes at %d B/s); it served %d copies",
		victim.Addr, map[bool]string{true: "source", false: "destination"}[victimIsSource], mv.Bucket, mv.From, mv.To,
		tKill.Sub(notBefore).Round(time.Millisecond), started, minCopy[mv.Bucket].Round(time.Millisecond),
		int64(minCopy[mv.Bucket])*rate/int64(time.Second), rate, serving)
	if !tKill.Before(notBefore.Add(minCopy[mv.Bucket])) {
		t.Fatalf("the kill came %v after the moves could start: bucket %d's move may have finished (it takes at least %v)",
			tKill.Sub(notBefore), mv.Bucket, minCopy[mv.Bucket])
	}
	if !victimIsSource && serving > 0 {
		t.Fatalf("the destination already served %d copies when it was killed; the test wants a destination that serves nothing", serving)
	}
	// The killed move never completes: its destination does not take the
	// bucket over (checked before anything could rebuild the copy there).
	time.Sleep(700 * time.Millisecond)
	if after := table(t, cl); slices.Contains(after.Serving[mv.Bucket], mv.To) {
		t.Fatalf("bucket %d's move completed after its %s was killed: serving %v", mv.Bucket,
			map[bool]string{true: "source", false: "destination"}[victimIsSource], after.Serving[mv.Bucket])
	}

	// The cap was there to put the kill inside a move: the rest of the
	// rebalance and the recovery run uncapped (`tair ctl migrate rate
	// 0`), the moves running meanwhile following the change at once.
	noCap := int64(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	r, err := cl.Admin(ctx, &wire.AdminRequest{Op: "migrations-rate", Rate: &noCap})
	cancel()
	if err != nil || !r.OK {
		t.Fatalf("migrations-rate 0: %+v %v", r, err)
	}

	var exclude []string
	if restart {
		time.Sleep(300 * time.Millisecond)
		victim.Start()
		t.Logf("restarted %s %v after the kill", victim.Addr, time.Since(tKill).Round(time.Millisecond))
	} else {
		exclude = append(exclude, victim.Addr)
	}
	final := waitTable(t, cl, 120*time.Second, func(tb *route.Table) bool {
		if !settled(tb, exclude...) {
			return false
		}
		if !restart {
			return true
		}
		// The restarted node is back in the table.
		return copiesOn(tb, victim.Addr) > 0
	}, "the table never settled with the full copy count after the crash")
	p50, p99, worst, gap, n := load.window()
	t.Logf("settled %v after the kill (table %d, %d nodes); %d ops since the kill, latency p50 %v p99 %v max %v, longest gap %v",
		time.Since(tKill).Round(time.Millisecond), final.Version, len(final.Nodes()), n, p50, p99, worst, gap)

	if !victimIsSource && !restart {
		// The destination served nothing: the survivors keep every copy
		// they served (none of them is taken for dead meanwhile).
		time.Sleep(3 * time.Second)
		now := table(t, cl)
		var changed []string
		for b, row := range tb.Serving {
			if !slices.Equal(row, now.Serving[b]) {
				changed = append(changed, fmt.Sprintf("bucket %d %v -> %v", b, row, now.Serving[b]))
			}
		}
		if len(changed) > 0 {
			t.Errorf("%d buckets' copies changed after the destination's kill (table %d -> %d), e.g. %v",
				len(changed), tb.Version, now.Version, changed[:min(3, len(changed))])
		}
	} else {
		time.Sleep(time.Second)
	}
	load.stop()
	// Errors are allowed only for writes that may have applied, and only
	// when the killed node served copies (was a master).
	load.report(t, serving > 0)
	load.verify(t, final)
}

// kill -9 of the source of a running move, which stays dead: it was a
// master, so writes in flight to it may fail with "may have applied";
// the cluster recovers the copy count on the three remaining nodes.
func TestCrashDuringMoveSourceStaysDead(t *testing.T) { crashDuringMove(t, true, false) }

// kill -9 of the source of a running move, restarted with its data
// directory: the move starts over (or is planned again), nothing acked is
// lost or applied twice.
func TestCrashDuringMoveSourceRestarts(t *testing.T) { crashDuringMove(t, true, true) }

// kill -9 of the destination of a running move (serving nothing yet),
// restarted with its data directory holding a partial copy: the move
// starts over cleanly, the client sees no error, nothing is duplicated.
func TestCrashDuringMoveDestinationRestarts(t *testing.T) {
	crashDuringMove(t, false, true)
}

// kill -9 of the destination of a running move (serving nothing yet),
// which stays dead: the move is dropped, the cluster settles on the three
// original nodes, and the client sees no error.
func TestCrashDuringMoveDestinationStaysDead(t *testing.T) {
	crashDuringMove(t, false, false)
}
