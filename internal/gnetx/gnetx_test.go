package gnetx

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

type echo struct {
	gnet.BuiltinEventEngine
	booted chan string
	local  chan string
	eng    gnet.Engine
}

func (e *echo) OnBoot(eng gnet.Engine) gnet.Action {
	e.eng = eng
	e.booted <- BoundAddr(eng)
	return gnet.None
}

func (e *echo) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	e.local <- LocalAddr(c)
	return nil, gnet.None
}

// A listener bound to port 0 reports the port it got, and an accepted
// connection the address the client dialed, not the 0.0.0.0 or port 0
// of the listener's configuration.
func TestBoundAndLocalAddr(t *testing.T) {
	e := &echo{booted: make(chan string, 1), local: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- gnet.Run(e, "tcp://0.0.0.0:0", gnet.WithLogger(Logger{L: slog.New(slog.DiscardHandler)}))
	}()
	var bound string
	select {
	case bound = <-e.booted:
	case err := <-done:
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil || host != "0.0.0.0" || port == "0" {
		t.Fatalf("BoundAddr = %q", bound)
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case local := <-e.local:
		if local != "127.0.0.1:"+port {
			t.Fatalf("LocalAddr = %q, want 127.0.0.1:%s", local, port)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.eng.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
