package proxy

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/tairkv/tair/internal/testutil"
)

func setTestHook(t *testing.T, fn func(point, cmd string)) {
	t.Helper()
	testHook.Store(&fn)
	t.Cleanup(func() { testHook.Store(nil) })
}

func panicsTotal(t *testing.T, s *Server) float64 {
	t.Helper()
	var d dto.Metric
	if err := s.m.panics.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

func proxyHealthz(t *testing.T, s *Server) (int, string) {
	t.Helper()
	code, body := testutil.HTTPGet(t, "http://"+s.HTTPAddr()+"/healthz")
	return code, strings.TrimSpace(string(body))
}

// A panic in a command the session goroutine runs answers that command
// with an error; the connection serves on.
func TestPanicOnSessionGoroutineIsContained(t *testing.T) {
	e := newEnv(t, 1, false)
	var armed atomic.Bool
	setTestHook(t, func(point, cmd string) {
		if point == "slow" && cmd == "echo" && armed.CompareAndSwap(true, false) {
			var p *Server
			_ = p.cfg // a nil dereference, as a bug would
		}
	})
	rc := e.raw()
	if got := rc.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	armed.Store(true)
	rc.send("ECHO", "a")
	rc.send("GET", "k")
	rc.send("ECHO", "b")
	for i, want := range []string{"-ERR internal error while running 'echo'\r\n", "$1\r\nv\r\n", "$1\r\nb\r\n"} {
		if got := rc.read(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
	if got := rc.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after the panic: %q", got)
	}
	if got := panicsTotal(t, e.p); got != 1 {
		t.Fatalf("tair_proxy_panics_total %v, want 1", got)
	}
}

// A panic in the event loop's fast path answers that command with an
// error in its place; the connection and the loop serve on.
func TestPanicOnEventLoopIsContained(t *testing.T) {
	e := newEnv(t, 1, false)
	var armed atomic.Bool
	setTestHook(t, func(point, cmd string) {
		if point == "loop" && cmd == "get" && armed.CompareAndSwap(true, false) {
			panic("injected")
		}
	})
	rc := e.raw()
	armed.Store(true)
	rc.send("SET", "k", "v")
	rc.send("GET", "k")
	rc.send("GET", "k")
	for i, want := range []string{"+OK\r\n", "-ERR internal error while running 'get'\r\n", "$1\r\nv\r\n"} {
		if got := rc.read(); got != want {
			t.Fatalf("reply %d: %q, want %q", i, got, want)
		}
	}
	if got := e.raw().do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET on another connection: %q", got)
	}
	if got := panicsTotal(t, e.p); got != 1 {
		t.Fatalf("tair_proxy_panics_total %v, want 1", got)
	}
}

// An event loop wedged in one event makes /healthz 503 with the reason,
// until it progresses again.
func TestWedgedLoopMakesProxyUnhealthy(t *testing.T) {
	e := newEnv(t, 1, false)
	e.p.stallAfter.Store(int64(300 * time.Millisecond))
	release := make(chan struct{})
	var armed atomic.Bool
	setTestHook(t, func(point, cmd string) {
		if point == "loop" && cmd == "get" && armed.CompareAndSwap(true, false) {
			<-release
		}
	})
	if code, body := proxyHealthz(t, e.p); code != 200 || body != "ok" {
		t.Fatalf("healthz before: %d %q", code, body)
	}
	rc := e.raw()
	armed.Store(true)
	rc.send("GET", "k")
	testutil.Eventually(t, 5*time.Second, func() bool {
		code, body := proxyHealthz(t, e.p)
		return code == http.StatusServiceUnavailable && strings.HasPrefix(body, "unhealthy: stalled: an event loop has run one event for ")
	}, "healthz did not report the wedged loop")
	close(release)
	if got := rc.read(); got != "$-1\r\n" {
		t.Fatalf("the wedged GET: %q", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		code, _ := proxyHealthz(t, e.p)
		return code == 200
	}, "healthz did not recover")
}

// Close returns although an event loop stays wedged in a command.
func TestCloseWithWedgedLoop(t *testing.T) {
	e := newEnv(t, 1, false)
	release := make(chan struct{})
	defer close(release)
	setTestHook(t, func(point, cmd string) {
		if point == "loop" && cmd == "get" {
			<-release
		}
	})
	rc := e.raw()
	// A command of the session goroutine first: the goroutine waits for
	// the connection's next batch, which the wedged loop never closes.
	if got := rc.do("ECHO", "a"); got != "$1\r\na\r\n" {
		t.Fatalf("ECHO: %q", got)
	}
	rc.send("GET", "k")
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- e.p.Close() }()
	select {
	case <-done:
		t.Logf("closed in %v", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return while a loop is wedged")
	}
}
