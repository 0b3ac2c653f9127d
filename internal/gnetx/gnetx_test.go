package gnetx

import (
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

type opener struct {
	gnet.BuiltinEventEngine
	local chan string
}

func (o *opener) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	o.local <- LocalAddr(c)
	return nil, gnet.None
}

// A listener bound to port 0 reports the port it got, and an accepted
// connection the address the client dialed, not the 0.0.0.0 or port 0
// of the listener's configuration. Stop closes the connections.
func TestStartAddrStop(t *testing.T) {
	o := &opener{local: make(chan string, 1)}
	e, err := Start(o, "0.0.0.0:0", 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(e.Addr())
	if err != nil || host != "0.0.0.0" || port == "0" {
		t.Fatalf("Addr = %q", e.Addr())
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case local := <-o.local:
		if local != "127.0.0.1:"+port {
			t.Fatalf("LocalAddr = %q, want 127.0.0.1:%s", local, port)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection")
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes after Stop", n)
	}
	again, err := Start(o, e.Addr(), 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("listen again on the freed address: %v", err)
	}
	if err := again.Stop(); err != nil {
		t.Fatal(err)
	}
}

// Loops that fill every P get one P more while they run (see reserve),
// never more than one, and GOMAXPROCS goes back when they stop.
func TestSparePWhileLoopsRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	log := slog.New(slog.DiscardHandler)
	h := &gnet.BuiltinEventEngine{}
	start := func(loops int) *Engine {
		t.Helper()
		e, err := Start(h, "127.0.0.1:0", loops, log)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	one := start(1)
	wantProcs(t, "one loop of two Ps", 2)
	two := start(1)
	wantProcs(t, "two loops of two Ps", 3)
	if got := Procs(); got != 2 {
		t.Fatalf("Procs with the spare P in use = %d, want 2", got)
	}
	three := start(4)
	wantProcs(t, "six loops of two Ps (one spare at most)", 3)
	for _, e := range []*Engine{three, two} {
		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	wantProcs(t, "one loop left", 2)
	if err := one.Stop(); err != nil {
		t.Fatal(err)
	}
	wantProcs(t, "no loops", 2)
}

// wantProcs checks GOMAXPROCS after the step the message names.
func wantProcs(t *testing.T, step string, want int) {
	t.Helper()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("%s: GOMAXPROCS = %d, want %d", step, got, want)
	}
}

// TestStartOnTakenPort: a port in use is reported as such (gnet alone
// says "setsockopt: bad file descriptor"), and no P stays reserved.
func TestStartOnTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	before := runtime.GOMAXPROCS(0)
	_, err = Start(&opener{local: make(chan string, 1)}, ln.Addr().String(), 1, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start on a taken port: %v, want 'address already in use'", err)
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Fatalf("GOMAXPROCS %d after a failed start, was %d", after, before)
	}
}
