package testcluster

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every line with itself until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineConn{c, bufio.NewReader(c)}
}

// roundTrip sends a line and waits up to wait for it to come back; it
// returns the time that took, or an error.
func (c *lineConn) roundTrip(line string, wait time.Duration) (time.Duration, error) {
	start := time.Now()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got, err := c.r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if got != line+"\n" {
		return 0, errors.New("echo " + got)
	}
	return time.Since(start), nil
}

func TestBridgeCutDelayDownUp(t *testing.T) {
	b := NewBridge(t)
	l := b.Link("ds0", "cs0", echoServer(t))
	if b.Find("cs0", "ds0") != l || b.Link("ds0", "cs0", "elsewhere") != l {
		t.Fatal("the link is not found again by its pair")
	}
	c := dialLine(t, l.Addr())
	if _, err := c.roundTrip("a", time.Second); err != nil {
		t.Fatalf("through an open link: %v", err)
	}

	// Cut: nothing crosses, the connection stays; Heal delivers what was
	// held.
	l.Cut()
	if _, err := c.roundTrip("b", 300*time.Millisecond); err == nil {
		t.Fatal("a line crossed a cut link")
	}
	l.Heal()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if got, err := c.r.ReadString('\n'); err != nil || got != "b\n" {
		t.Fatalf("after Heal: %q, %v; want the held line", got, err)
	}

	// Delay: each way is held for d.
	l.Delay(100 * time.Millisecond)
	if took, err := c.roundTrip("c", 2*time.Second); err != nil || took < 200*time.Millisecond {
		t.Fatalf("round trip over a link delayed 100ms each way took %v (%v), want at least 200ms", took, err)
	}
	l.Heal()
	if took, err := c.roundTrip("d", time.Second); err != nil || took > 100*time.Millisecond {
		t.Fatalf("after Heal a round trip took %v (%v)", took, err)
	}

	// Down: connections end and new ones are refused; Up: served again on
	// the same address.
	l.Down()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Fatal("a connection of a link that went down is still open")
	}
	if _, err := net.DialTimeout("tcp", l.Addr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connecting to a link that is down: %v, want connection refused", err)
	}
	if err := l.Up(); err != nil {
		t.Fatal(err)
	}
	c = dialLine(t, l.Addr())
	if _, err := c.roundTrip("e", time.Second); err != nil {
		t.Fatalf("after Up: %v", err)
	}

	// Reset: the connection ends, the link still accepts.
	l.Reset()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Fatal("a connection survived Reset")
	}
	c = dialLine(t, l.Addr())
	if _, err := c.roundTrip("f", time.Second); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

// CutPort drops a listener's packets both ways: a connection to it gets
// no answer until HealPort, when TCP's retransmissions go through.
func TestPortFaultsCut(t *testing.T) {
	n, err := NewPortFaults(t)
	if err != nil {
		t.Skipf("port faults unavailable: %v", err)
	}
	addr := echoServer(t)
	_, p, _ := net.SplitHostPort(addr)
	port := 0
	for _, ch := range p {
		port = port*10 + int(ch-'0')
	}
	c := dialLine(t, addr)
	if _, err := c.roundTrip("a", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.CutPort(port, Both); err != nil {
		t.Fatal(err)
	}
	if _, err := c.roundTrip("b", 500*time.Millisecond); err == nil {
		t.Fatal("a line crossed a cut port")
	}
	if _, err := net.DialTimeout("tcp", addr, 300*time.Millisecond); err == nil {
		t.Fatal("connected to a cut port")
	}
	if err := n.HealPort(port); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := c.r.ReadString('\n'); err != nil || got != "b\n" {
		t.Fatalf("after HealPort: %q, %v; want the line sent while cut", got, err)
	}
}
