package proxy

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/resp"
)

// backendTestServer is a proxy (not started) whose node at addr the
// goroutine transport reaches; serve handles each accepted connection.
func backendTestServer(t *testing.T, cfg func(*Config), serve func(c net.Conn)) *node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	c := DefaultConfig()
	c.Listen, c.HTTP = "127.0.0.1:0", ""
	if cfg != nil {
		cfg(&c)
	}
	s, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.r.node(ln.Addr().String())
}

// backendRequest is a request for args, encoded as send would, waiting
// to be pushed.
func backendRequest(args ...string) *request {
	r := &request{}
	for _, a := range args {
		r.args = append(r.args, []byte(a))
	}
	r.wire = resp.AppendCommand(nil, r.args...)
	r.wg.Add(1)
	return r
}

// echoKeys answers each request with its second argument, in order.
func echoKeys(c net.Conn) {
	rd := resp.NewRequestReader(c, resp.RequestLimits{})
	w := bufio.NewWriter(c)
	for {
		cmds, err := rd.ReadBatch(1024)
		for _, cmd := range cmds {
			_, _ = w.Write(resp.AppendBulk(nil, cmd.Args[1]))
		}
		if w.Flush() != nil || err != nil {
			return
		}
	}
}

// The goroutine transport matches replies to requests in order, with
// sessions pushing at once and more requests than maxInFlight in flight
// (the writer waits for room).
func TestBackendConnRepliesInOrder(t *testing.T) {
	n := backendTestServer(t, nil, echoKeys)
	bc, err := n.conn(0)
	if err != nil {
		t.Fatal(err)
	}
	const pushers, each = 4, 3 * maxInFlight
	var wg sync.WaitGroup
	errs := make(chan error, pushers)
	for p := 0; p < pushers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := make([]*request, each)
			for i := range rs {
				rs[i] = backendRequest("GET", strconv.Itoa(p)+":"+strconv.Itoa(i))
				if !bc.push(rs[i]) {
					errs <- errors.New("push refused")
					return
				}
			}
			for i, r := range rs {
				r.wg.Wait()
				want := string(resp.AppendBulk(nil, r.args[1]))
				if r.err != nil || string(r.reply) != want {
					errs <- errors.New("request " + strconv.Itoa(i) + ": reply " + strconv.Quote(string(r.reply)) + ", want " + strconv.Quote(want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A connection that breaks fails the requests written to it as written
// (they may have run); the node dials a new one for the next request.
func TestBackendConnLostInFlight(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	n := backendTestServer(t, nil, func(c net.Conn) {
		mu.Lock()
		conns++
		first := conns == 1
		mu.Unlock()
		if !first {
			echoKeys(c)
			return
		}
		// As a killed dataserver: the request arrived, no reply ever will.
		rd := resp.NewRequestReader(c, resp.RequestLimits{})
		_, _ = rd.ReadBatch(1)
	})
	bc, err := n.conn(0)
	if err != nil {
		t.Fatal(err)
	}
	r := backendRequest("INCR", "n")
	if !bc.push(r) {
		t.Fatal("push refused")
	}
	r.wg.Wait()
	if !errors.Is(r.err, errBackendClosed) || !r.written {
		t.Fatalf("err %v written %v, want %v and written", r.err, r.written, errBackendClosed)
	}
	if !bc.dead.Load() {
		t.Fatal("the connection is not dead")
	}
	// A request pushed now never reaches the dataserver: refused, or
	// failed unwritten.
	late := backendRequest("GET", "k")
	if bc.push(late) {
		late.wg.Wait()
		if late.err == nil || late.written {
			t.Fatalf("a request pushed after the loss: err %v written %v", late.err, late.written)
		}
	}
	bc2, err := n.conn(0)
	if err != nil || bc2 == bc {
		t.Fatalf("redial: %v (same connection %v)", err, bc2 == bc)
	}
	r = backendRequest("GET", "k")
	if !bc2.push(r) {
		t.Fatal("push refused")
	}
	r.wg.Wait()
	if r.err != nil || string(r.reply) != "$1\r\nk\r\n" {
		t.Fatalf("after redial: reply %q err %v", r.reply, r.err)
	}
}

// A dataserver that does not answer within RequestTimeout fails the
// request as written with the timeout error.
func TestBackendConnTimeout(t *testing.T) {
	n := backendTestServer(t, func(c *Config) { c.RequestTimeout = 200 * time.Millisecond }, func(c net.Conn) {
		rd := resp.NewRequestReader(c, resp.RequestLimits{})
		for {
			if _, err := rd.ReadBatch(16); err != nil {
				return
			}
		}
	})
	bc, err := n.conn(0)
	if err != nil {
		t.Fatal(err)
	}
	r := backendRequest("GET", "k")
	start := time.Now()
	if !bc.push(r) {
		t.Fatal("push refused")
	}
	r.wg.Wait()
	if !errors.Is(r.err, errBackendTimeout) || !r.written {
		t.Fatalf("err %v written %v, want %v and written", r.err, r.written, errBackendTimeout)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Fatalf("timed out after %v", d)
	}
}
