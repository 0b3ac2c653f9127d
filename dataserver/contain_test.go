package dataserver

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
)

// setTestHook installs fn as the package's test hook until the test ends.
func setTestHook(t *testing.T, fn func(point, cmd string)) {
	t.Helper()
	testHook.Store(&fn)
	t.Cleanup(func() { testHook.Store(nil) })
}

// armHook has the test hook run do at point for cmd, once each time the
// returned flag is set.
func armHook(t *testing.T, point, cmd string, do func()) *atomic.Bool {
	t.Helper()
	armed := new(atomic.Bool)
	setTestHook(t, func(p, c string) {
		if p == point && c == cmd && armed.CompareAndSwap(true, false) {
			do()
		}
	})
	return armed
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// bucketRecords lists bucket b's records on s as key=value strings.
func bucketRecords(t *testing.T, s *Server, b route.BucketID) []string {
	t.Helper()
	var out []string
	err := s.Engine().ForEach(uint32(b), func(r *engines.Record) error {
		out = append(out, string(r.Key)+"="+string(r.Entry.Value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A command that panics is answered with an error; the connection, the
// node and the bucket's lock serve the next commands; the panic is
// counted.
func TestPanicInCommandIsContained(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a := nodes[0]
	armed := armHook(t, "run", "get", func() {
		var m map[string]int
		m["x"]++ // a nil map write: a runtime error, as a bug would be
	})
	ca := dial(t, a.Addr())
	k := keyIn("panic", 0, q, 0)
	if got := ca.do(x(1, "SET", k, "v1")...); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	armed.Store(true)
	if got, want := ca.do(x(1, "GET", k)...), "-ERR internal error while running 'get'"; got != want {
		t.Fatalf("panicking GET: %q, want %q", got, want)
	}
	if got := ca.do(x(1, "GET", k)...); got != "$2\r\nv1" {
		t.Fatalf("GET after the panic on the same connection: %q", got)
	}
	// In a pipeline: only the panicking command fails, in its place.
	armed.Store(true)
	replies := ca.pipeline([][]string{x(1, "SET", k, "v2"), x(1, "GET", k), {"PING"}})
	want := []string{"+OK", "-ERR internal error while running 'get'", "+PONG"}
	for i := range want {
		if replies[i] != want[i] {
			t.Fatalf("pipeline reply %d: %q, want %q", i, replies[i], want[i])
		}
	}
	if got := counterValue(t, a.m.panics); got != 2 {
		t.Fatalf("tair_dataserver_panics_total %v, want 2", got)
	}
	if got := dial(t, a.Addr()).do(x(1, "GET", k)...); got != "$2\r\nv2" {
		t.Fatalf("GET on another connection: %q", got)
	}
}

// A write that panics after it changed the master's engine, before it
// was replicated: the client gets an error, the bucket's lock is
// released (the next write to the bucket succeeds), and the slave is
// resynced until it equals the master.
func TestPanicInWriteResyncsSlave(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1] // bucket 0: master a, slave b
	armed := armHook(t, "applied", "set", func() { panic("injected") })
	ca := dial(t, a.Addr())
	k, k2 := keyIn("wpanic", 0, q, 0), keyIn("wpanic", 0, q, 1)
	if got := ca.do(x(1, "SET", k, "v1")...); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	armed.Store(true)
	if got, want := ca.do(x(1, "SET", k, "v2")...), "-ERR internal error while running 'set'"; got != want {
		t.Fatalf("panicking SET: %q, want %q", got, want)
	}
	// The master applied it, its slave never received it.
	if v, _ := engineGet(a, k); v != "v2" {
		t.Fatalf("master holds %q, want the panicked write's v2", v)
	}
	// The bucket's lock was released: another write to the bucket
	// succeeds at once, on the same connection.
	done := ca.goDo(x(1, "SET", k2, "w")...)
	if got := replyWithin(t, done, 3*time.Second, "the second write to the bucket did not finish: its lock is held"); got != "+OK" {
		t.Fatalf("second write to the bucket: %q", got)
	}
	if got := counterValue(t, a.m.panics); got != 1 {
		t.Fatalf("tair_dataserver_panics_total %v, want 1", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		ma, sb := bucketRecords(t, a, 0), bucketRecords(t, b, 0)
		return len(ma) == 2 && bytes.Equal([]byte(joinLines(ma)), []byte(joinLines(sb)))
	}, "the slave's bucket 0 does not equal the master's")
	if v, _ := engineGet(b, k); v != "v2" {
		t.Fatalf("slave holds %q after the resync, want v2", v)
	}
	if a.bucket(0).diverged.Load() {
		t.Fatal("bucket 0 still marked diverged on the master")
	}
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x)
		b.WriteByte('\n')
	}
	return b.String()
}

func healthz(t *testing.T, s *Server) (int, string) {
	t.Helper()
	code, body := testutil.HTTPGet(t, "http://"+s.HTTPAddr()+"/healthz")
	return code, strings.TrimSpace(string(body))
}

// An event loop wedged in a command makes the node unhealthy: /healthz
// answers 503 with the reason, its heartbeats say "unhealthy" and no
// longer renew its lease; once the command ends it is healthy again.
func TestWedgedLoopReportsUnhealthy(t *testing.T) {
	cs, nodes := cluster2(t, func(i int, c *Config) {
		c.StallTimeout = 800 * time.Millisecond
	})
	a := nodes[0]
	release := make(chan struct{})
	armed := armHook(t, "run", "get", func() { <-release })
	if code, body := healthz(t, a); code != 200 || body != "ok" {
		t.Fatalf("healthz before: %d %q", code, body)
	}
	armed.Store(true)
	ca := dial(t, a.Addr())
	got := ca.goDo(x(1, "GET", keyIn("wedge", 0, q, 0))...)
	const reason = "stalled: a connection's command has run for "
	testutil.Eventually(t, 5*time.Second, func() bool {
		code, body := healthz(t, a)
		return code == http.StatusServiceUnavailable && strings.HasPrefix(body, "unhealthy: "+reason)
	}, "healthz did not report the wedged loop")
	testutil.Eventually(t, 5*time.Second, func() bool {
		hb := cs.lastHB(a.Addr())
		return hb.Health == "unhealthy" && strings.HasPrefix(hb.Unhealthy, reason)
	}, "the heartbeat did not report the wedged loop")
	// Its heartbeats renew its master lease no more.
	testutil.Eventually(t, 5*time.Second, func() bool { return !a.leaseOK() }, "the lease of an unhealthy node did not lapse")
	if got := counterValue(t, a.m.stalls); got != 1 {
		t.Fatalf("tair_dataserver_stalls_total %v, want 1", got)
	}
	close(release)
	replyWithin(t, got, 5*time.Second, "the wedged command did not end")
	testutil.Eventually(t, 5*time.Second, func() bool {
		code, _ := healthz(t, a)
		return code == 200 && cs.lastHB(a.Addr()).Health == "ok" && cs.lastHB(a.Addr()).Unhealthy == "" && a.leaseOK()
	}, "the node did not become healthy again")
	if got := ca.do(x(1, "SET", keyIn("wedge", 0, q, 0), "v")...); got != "+OK" {
		t.Fatalf("SET once healthy again: %q", got)
	}
}

// A bucket lock held without progress makes the node unhealthy too.
func TestStuckBucketLockReportsUnhealthy(t *testing.T) {
	cs, nodes := cluster2(t, func(i int, c *Config) {
		c.StallTimeout = 800 * time.Millisecond
	})
	a := nodes[0]
	bk := a.bucket(3)
	bk.lock()
	locked := true
	defer func() {
		if locked {
			bk.unlock()
		}
	}()
	testutil.Eventually(t, 5*time.Second, func() bool {
		code, body := healthz(t, a)
		return code == http.StatusServiceUnavailable && strings.HasPrefix(body, "unhealthy: stalled: bucket 3's lock has been held for ")
	}, "healthz did not report the stuck lock")
	testutil.Eventually(t, 5*time.Second, func() bool {
		return strings.HasPrefix(cs.lastHB(a.Addr()).Unhealthy, "stalled: bucket 3's lock has been held for ")
	}, "the heartbeat did not report the stuck lock")
	bk.unlock()
	locked = false
	testutil.Eventually(t, 5*time.Second, func() bool {
		code, _ := healthz(t, a)
		return code == 200 && cs.lastHB(a.Addr()).Health == "ok"
	}, "the node did not become healthy again")
}

// Close returns although an event loop stays wedged in a command (its
// connections are never closed).
func TestCloseWithWedgedLoop(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a := nodes[0]
	release := make(chan struct{})
	defer close(release)
	var wedged atomic.Bool
	setTestHook(t, func(point, cmd string) {
		if point == "run" && cmd == "echo" {
			wedged.Store(true)
			<-release
		}
	})
	ca := dial(t, a.Addr())
	go func() { _, _ = ca.doErr("ECHO", "x") }()
	testutil.EventuallyErr(t, 5*time.Second, func() error {
		if !wedged.Load() {
			return errors.New("the ECHO has not reached the wedging hook")
		}
		return nil
	})
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case <-done:
		t.Logf("closed in %v", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return while a loop is wedged")
	}
}

// A slave whose apply of a replicated write panics refuses it (the
// master's client is not told the write succeeded) and asks its master
// for a full copy, after which both copies are equal.
func TestPanicInSlaveApplyResyncs(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1] // bucket 0: master a, slave b
	armed := armHook(t, "apply", "tair.repl", func() { panic("injected") })
	ca := dial(t, a.Addr())
	k, k2 := keyIn("apanic", 0, q, 0), keyIn("apanic", 0, q, 1)
	if got := ca.do(x(1, "SET", k, "v1")...); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	armed.Store(true)
	want := "-TIMEOUT a slave refused the write to bucket 0 (it has a newer table); the write may have applied (tair -3989)"
	if got := ca.do(x(1, "SET", k, "v2")...); got != want {
		t.Fatalf("SET whose replication panicked on the slave: %q, want %q", got, want)
	}
	if got := counterValue(t, b.m.panics); got != 1 {
		t.Fatalf("the slave's tair_dataserver_panics_total %v, want 1", got)
	}
	if got := ca.do(x(1, "SET", k2, "w")...); got != "+OK" {
		t.Fatalf("the next write to the bucket: %q", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		ma, sb := bucketRecords(t, a, 0), bucketRecords(t, b, 0)
		return len(ma) == 2 && joinLines(ma) == joinLines(sb) && !b.bucket(0).diverged.Load()
	}, "the slave's bucket 0 does not equal the master's")
	if v, _ := engineGet(b, k); v != "v2" {
		t.Fatalf("slave holds %q after the resync, want v2", v)
	}
}
