package proxy

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/resp"
)

// push is a pub/sub reply as the proxy writes it: an array in RESP2, a
// push (">") in RESP3.
func push(proto int, elems ...string) string {
	var b strings.Builder
	if proto == 3 {
		fmt.Fprintf(&b, ">%d\r\n", len(elems))
	} else {
		fmt.Fprintf(&b, "*%d\r\n", len(elems))
	}
	for _, e := range elems {
		switch {
		case e == "<nil>" && proto == 3:
			b.WriteString("_\r\n")
		case e == "<nil>":
			b.WriteString("$-1\r\n")
		case strings.HasPrefix(e, ":"):
			b.WriteString(e + "\r\n")
		default:
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(e), e)
		}
	}
	return b.String()
}

func (rc *rawConn) expect(want ...string) {
	rc.t.Helper()
	for i, w := range want {
		if got := rc.read(); got != w {
			rc.t.Fatalf("reply %d = %q, want %q", i, got, w)
		}
	}
}

// One proxy: confirmations with running counts, messages and pmessages,
// UNSUBSCRIBE of all and of none, RESP2's subscribed mode, RESET.
func TestPubSubOneProxy(t *testing.T) {
	e := newEnv(t, 1, false)
	sub, pub := e.raw(), e.raw()
	sub.send("SUBSCRIBE", "a", "b", "a")
	sub.expect(push(2, "subscribe", "a", ":1"), push(2, "subscribe", "b", ":2"), push(2, "subscribe", "a", ":2"))
	sub.send("PSUBSCRIBE", "h?llo")
	sub.expect(push(2, "psubscribe", "h?llo", ":3"))
	if got := pub.do("PUBLISH", "a", "m1"); got != ":1\r\n" {
		t.Fatal(got)
	}
	if got := pub.do("PUBLISH", "hello", "m2"); got != ":1\r\n" {
		t.Fatal(got)
	}
	if got := pub.do("PUBLISH", "zzz", "m3"); got != ":0\r\n" {
		t.Fatal(got)
	}
	sub.expect(push(2, "message", "a", "m1"), push(2, "pmessage", "h?llo", "hello", "m2"))
	sub.send("GET", "x")
	sub.expect("-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
	sub.send("CLIENT", "ID")
	sub.expect("-ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
	sub.send("PING")
	sub.expect(push(2, "pong", ""))
	sub.send("PING", "x")
	sub.expect(push(2, "pong", "x"))
	if got := pub.do("PUBSUB", "NUMSUB", "a", "b", "c"); got != "*6\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:1\r\n$1\r\nc\r\n:0\r\n" {
		t.Fatal(got)
	}
	if got := pub.do("CLIENT", "LIST"); !strings.Contains(got, " flags=P db=0 sub=2 psub=1 ssub=0 ") {
		t.Fatalf("CLIENT LIST shows no subscriber:\n%s", got)
	}
	if got := pub.do("CLIENT", "LIST", "TYPE", "pubsub"); strings.Count(got, "id=") != 1 || !strings.Contains(got, " flags=P ") {
		t.Fatalf("CLIENT LIST TYPE pubsub:\n%s", got)
	}
	if got := pub.do("CLIENT", "LIST", "TYPE", "normal"); strings.Count(got, "id=") != 1 || strings.Contains(got, " flags=P ") {
		t.Fatalf("CLIENT LIST TYPE normal:\n%s", got)
	}
	if got := pub.do("INFO", "stats"); !strings.Contains(got, "\r\npubsub_channels:2\r\npubsub_patterns:1\r\npubsubshard_channels:0\r\n") {
		t.Fatalf("INFO stats:\n%s", got)
	}
	if got := pub.do("PUBSUB", "NUMPAT"); got != ":1\r\n" {
		t.Fatal(got)
	}
	if got := pub.do("PUBSUB", "CHANNELS"); got != "*2\r\n$1\r\na\r\n$1\r\nb\r\n" {
		t.Fatal(got)
	}
	sub.send("UNSUBSCRIBE")
	sub.expect(push(2, "unsubscribe", "a", ":2"), push(2, "unsubscribe", "b", ":1"))
	sub.send("UNSUBSCRIBE")
	sub.expect(push(2, "unsubscribe", "<nil>", ":1"))
	sub.send("PUNSUBSCRIBE", "h?llo")
	sub.expect(push(2, "punsubscribe", "h?llo", ":0"))
	// Out of subscribed mode: any command, PING as usual.
	sub.send("PING")
	sub.expect("+PONG\r\n")
	sub.send("SSUBSCRIBE", "s")
	sub.expect(push(2, "ssubscribe", "s", ":1"))
	if got := pub.do("SPUBLISH", "s", "m4"); got != ":1\r\n" {
		t.Fatal(got)
	}
	sub.expect(push(2, "smessage", "s", "m4"))
	sub.send("RESET")
	sub.expect("+RESET\r\n")
	if got := pub.do("SPUBLISH", "s", "m5"); got != ":0\r\n" {
		t.Fatal(got)
	}
	sub.send("PING")
	sub.expect("+PONG\r\n")
}

// RESP3: confirmations and messages are pushes, and any command runs
// while subscribed, forwarded ones (GET) included.
func TestPubSubRESP3(t *testing.T) {
	e := newEnv(t, 1, false)
	sub, pub := e.raw(), e.raw()
	if got := sub.do("HELLO", "3"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatal(got)
	}
	sub.send("SUBSCRIBE", "a")
	sub.expect(push(3, "subscribe", "a", ":1"))
	sub.send("SET", "k", "v")
	sub.expect("+OK\r\n")
	sub.send("GET", "k")
	sub.expect("$1\r\nv\r\n")
	pub.do("PUBLISH", "a", "m")
	sub.expect(push(3, "message", "a", "m"))
	sub.send("PUNSUBSCRIBE")
	sub.expect(push(3, "punsubscribe", "<nil>", ":1"))
	// HELLO 2 while subscribed: RESP2's subscribed mode from then on.
	sub.do("HELLO", "2")
	sub.send("GET", "k")
	sub.expect("-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
	pub.do("PUBLISH", "a", "m2")
	sub.expect(push(2, "message", "a", "m2"))
}

// A RESP3 subscriber in a blocking pop gets its messages meanwhile.
func TestPubSubWhileBlocked(t *testing.T) {
	e := newEnv(t, 1, false)
	sub, pub := e.raw(), e.raw()
	sub.do("HELLO", "3")
	sub.send("SUBSCRIBE", "c")
	sub.expect(push(3, "subscribe", "c", ":1"))
	sub.send("BLPOP", "q", "5")
	time.Sleep(50 * time.Millisecond)
	if got := pub.do("PUBLISH", "c", "while"); got != ":1\r\n" {
		t.Fatal(got)
	}
	sub.expect(push(3, "message", "c", "while"))
	pub.do("RPUSH", "q", "x")
	sub.expect("*2\r\n$1\r\nq\r\n$1\r\nx\r\n")
}

// Messages of one publisher reach a subscriber in publish order, also
// when the publisher pipelines and the subscriber subscribes meanwhile.
func TestPubSubOrder(t *testing.T) {
	e := newEnv(t, 1, false)
	sub := e.raw()
	sub.send("SUBSCRIBE", "c")
	sub.expect(push(2, "subscribe", "c", ":1"))
	pub := e.raw()
	var buf []byte
	const n = 2000
	for i := 0; i < n; i++ {
		buf = append(buf, fmt.Sprintf("*3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$%d\r\n%d\r\n", len(fmt.Sprint(i)), i)...)
	}
	if _, err := pub.c.Write(buf); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if got := pub.read(); got != ":1\r\n" {
			t.Fatalf("PUBLISH %d = %q", i, got)
		}
	}
	for i := 0; i < n; i++ {
		sub.expect(push(2, "message", "c", fmt.Sprint(i)))
	}
}

// A subscriber that does not read is cut at the output limit; the
// publisher and the other subscribers keep going.
func TestPubSubSlowSubscriberCut(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) {
		c.PubSubHardLimit = 2 << 20
		c.PubSubSoftLimit = 256 << 10
		c.PubSubSoftSeconds = time.Second
	})
	slowSubscriber(t, e)
	good := e.raw()
	good.send("SUBSCRIBE", "c")
	good.expect(push(2, "subscribe", "c", ":1"))
	pub := e.raw()
	// The slow one's SUBSCRIBE was not waited for.
	waitNumSubC(t, pub, 2, "the slow subscriber's SUBSCRIBE did not register")
	msg := strings.Repeat("x", 64<<10)
	var wg sync.WaitGroup
	wg.Add(1)
	received := 0
	var readErr error
	go func() {
		defer wg.Done()
		for received < 200 {
			_ = good.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			raw, err := good.r.ReadReply()
			if err != nil {
				readErr = err
				return
			}
			if string(raw) != push(2, "message", "c", msg) {
				readErr = fmt.Errorf("unexpected %.100q", raw)
				return
			}
			received++
		}
	}()
	counts := map[string]int{}
	for i := 0; i < 200; i++ {
		counts[pub.do("PUBLISH", "c", msg)]++
	}
	wg.Wait()
	if received != 200 {
		t.Fatalf("the reading subscriber got %d of 200 messages: %v", received, readErr)
	}
	if counts[":1\r\n"] == 0 || counts[":2\r\n"]+counts[":1\r\n"] != 200 {
		t.Fatalf("PUBLISH replies: %v", counts)
	}
	// The slow one was cut (it may still be reading what the kernel
	// holds for it): gone from the subscribers and the clients.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := pub.do("PUBSUB", "NUMSUB", "c")
		if got == "*2\r\n$1\r\nc\r\n:1\r\n" && e.p.clients.Load() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow subscriber was not cut: NUMSUB %q, %d clients", got, e.p.clients.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two proxies: a message published on either reaches the subscribers of
// both, counts add up, PUBSUB gathers from the peer; the peer link
// authenticates; a peer that is gone counts 0 without holding PUBLISH.
func TestPubSubPeers(t *testing.T) {
	// A generous wait: exact counts on a loaded machine (the bound
	// itself is checked below).
	const wait = time.Second
	pass := func(c *Config) { c.RequirePass = "secret"; c.PubSubPeerWait = wait }
	e1 := newEnv(t, 1, false, pass)
	e2 := newEnv(t, 1, false, pass)
	l1, l2 := []string{e2.p.Addr()}, []string{e1.p.Addr()}
	e1.p.livePeers.Store(&l1)
	e2.p.livePeers.Store(&l2)
	s1, s2, pub1, pub2 := e1.raw(), e2.raw(), e1.raw(), e2.raw()
	for _, c := range []*rawConn{s1, s2, pub1, pub2} {
		if got := c.do("AUTH", "secret"); got != "+OK\r\n" {
			t.Fatal(got)
		}
	}
	s1.send("SUBSCRIBE", "c")
	s1.expect(push(2, "subscribe", "c", ":1"))
	s2.send("PSUBSCRIBE", "c*")
	s2.expect(push(2, "psubscribe", "c*", ":1"))
	s2.send("SSUBSCRIBE", "s")
	s2.expect(push(2, "ssubscribe", "s", ":1"))
	for i := 0; i < 50; i++ {
		p := pub1
		if i%2 == 1 {
			p = pub2
		}
		if got := p.do("PUBLISH", "c", fmt.Sprint(i)); got != ":2\r\n" {
			t.Fatalf("PUBLISH %d = %q", i, got)
		}
	}
	for i := 0; i < 50; i++ {
		s1.expect(push(2, "message", "c", fmt.Sprint(i)))
		s2.expect(push(2, "pmessage", "c*", "c", fmt.Sprint(i)))
	}
	big := strings.Repeat("b", 3<<20)
	if got := pub1.do("PUBLISH", "c", big); got != ":2\r\n" {
		t.Fatalf("PUBLISH of 3 MiB = %q", got)
	}
	s1.expect(push(2, "message", "c", big))
	s2.expect(push(2, "pmessage", "c*", "c", big))
	if got := pub1.do("SPUBLISH", "s", "x"); got != ":1\r\n" {
		t.Fatal(got)
	}
	s2.expect(push(2, "smessage", "s", "x"))
	if got := pub1.do("PUBSUB", "NUMPAT"); got != ":1\r\n" {
		t.Fatal(got)
	}
	// A pattern subscribed on both proxies counts once, as one server's.
	s1.send("PSUBSCRIBE", "c*", "d*")
	s1.expect(push(2, "psubscribe", "c*", ":2"), push(2, "psubscribe", "d*", ":3"))
	if got := pub2.do("PUBSUB", "NUMPAT"); got != ":2\r\n" {
		t.Fatal(got)
	}
	s1.send("PUNSUBSCRIBE")
	s1.expect(push(2, "punsubscribe", "c*", ":2"), push(2, "punsubscribe", "d*", ":1"))
	if got := pub2.do("PUBSUB", "NUMSUB", "c"); got != "*2\r\n$1\r\nc\r\n:1\r\n" {
		t.Fatal(got)
	}
	if got := pub2.do("PUBSUB", "CHANNELS"); got != "*1\r\n$1\r\nc\r\n" {
		t.Fatal(got)
	}
	if got := pub1.do("PUBSUB", "SHARDCHANNELS"); got != "*1\r\n$1\r\ns\r\n" {
		t.Fatal(got)
	}
	if got := pub1.do("PUBSUB", "SHARDNUMSUB", "s"); got != "*2\r\n$1\r\ns\r\n:1\r\n" {
		t.Fatal(got)
	}
	// The peer goes away: PUBLISH counts this proxy's subscribers only,
	// each waits for the peer at most the bound, and once it failed to
	// answer (or its link is down) later ones do not wait for it.
	_ = e2.p.Close()
	start := time.Now()
	for i := 0; i < 20; i++ {
		at := time.Now()
		if got := pub1.do("PUBLISH", "c", "late"); got != ":1\r\n" {
			t.Fatalf("PUBLISH with the peer gone = %q", got)
		}
		if d := time.Since(at); d > wait+300*time.Millisecond {
			t.Fatalf("PUBLISH took %v with the peer gone", d)
		}
	}
	if d := time.Since(start); d > 2*wait+time.Second {
		t.Fatalf("20 PUBLISHes took %v with the peer gone", d)
	}
}

// TAIR.PUBFWD does what a peer asks and nothing else.
func TestPubFwdRefusesOtherOps(t *testing.T) {
	e := newEnv(t, 1, false)
	c := e.raw()
	for _, args := range [][]string{{"TAIR.PUBFWD", "SET", "k", "v"}, {"TAIR.PUBFWD", "PUBLISH", "c"}, {"TAIR.PUBFWD", "NUMPAT", "x"}} {
		if got := c.do(args...); got != "-ERR syntax error\r\n" {
			t.Fatalf("%v = %q", args, got)
		}
	}
	if got := c.do("TAIR.PUBFWD", "PUBLISH", "c", "m"); got != ":0\r\n" {
		t.Fatal(got)
	}
}

// A peer that accepts but never answers (paused) costs the first
// PUBLISH the bound and the later ones nothing: they are still sent to
// it, in order, but not waited for.
func TestPubSubHungPeerDoesNotDelay(t *testing.T) {
	e, served := newEnvWithPeer(t, func(c net.Conn) {
		_, _ = io.Copy(io.Discard, c) // reads, never answers
	})
	pub := e.raw()
	start := time.Now()
	for i := 0; i < 20; i++ {
		if got := pub.do("PUBLISH", "c", "m"); got != ":0\r\n" {
			t.Fatal(got)
		}
	}
	if d := time.Since(start); d > 2*e.p.cfg.PubSubPeerWait+500*time.Millisecond {
		t.Fatalf("20 PUBLISHes took %v with a hung peer (bound %v)", d, e.p.cfg.PubSubPeerWait)
	}
	_ = e.p.Close()
	served()
}

// The soft limit: a subscriber over it is cut only once it has stayed
// over it for PubSubSoftSeconds (checked as messages come), as Redis.
func TestPubSubSoftLimit(t *testing.T) {
	e := newEnv(t, 1, false, func(c *Config) {
		c.PubSubHardLimit = -1
		c.PubSubSoftLimit = 512 << 10
		c.PubSubSoftSeconds = 700 * time.Millisecond
	})
	slowSubscriber(t, e)
	pub := e.raw()
	waitNumSubC(t, pub, 1, "SUBSCRIBE did not register")
	msg := strings.Repeat("x", 64<<10)
	start := time.Now()
	for i := 0; i < 200; i++ { // 12.5 MiB: past the kernel's buffers
		if got := pub.do("PUBLISH", "c", msg); got != ":1\r\n" && time.Since(start) < 500*time.Millisecond {
			t.Fatalf("PUBLISH %d = %q: cut before the soft limit's time", i, got)
		}
	}
	if time.Since(start) > 500*time.Millisecond {
		t.Skip("publishing took too long to tell the soft limit's time apart")
	}
	time.Sleep(time.Second)
	if got := pub.do("PUBLISH", "c", msg); got != ":1\r\n" {
		t.Fatalf("PUBLISH after the soft time = %q: the subscriber was cut with no message since", got)
	}
	// That message found it over the soft limit for over 700 ms: cut.
	deadline := time.Now().Add(5 * time.Second)
	for pub.do("PUBSUB", "NUMSUB", "c") != "*2\r\n$1\r\nc\r\n:0\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("the subscriber over the soft limit was not cut")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A peer that answered late once is counted again as soon as it answers
// within the bound, even while requests keep it busy.
func TestPubSubLaggingPeerCountedAgain(t *testing.T) {
	e, served := newEnvWithPeer(t, func(c net.Conn) {
		rd := resp.NewRequestReader(c, resp.RequestLimits{})
		first := true
		for {
			cmds, err := rd.ReadBatch(64)
			if err != nil {
				return
			}
			for range cmds {
				if first {
					first = false
					time.Sleep(300 * time.Millisecond) // one late answer
				}
				if _, err := c.Write([]byte(":5\r\n")); err != nil {
					return
				}
			}
		}
	})
	pub := e.raw()
	if got := pub.do("PUBLISH", "c", "m"); got != ":0\r\n" {
		t.Fatalf("PUBLISH answered late by the peer = %q, want :0", got)
	}
	counted := false
	for deadline := time.Now().Add(3 * time.Second); !counted && time.Now().Before(deadline); {
		counted = pub.do("PUBLISH", "c", "m") == ":5\r\n"
		time.Sleep(20 * time.Millisecond)
	}
	if !counted {
		t.Fatal("the peer is not counted again once it answers in time")
	}
	_ = e.p.Close()
	served()
}

// newEnvWithPeer starts a one-proxy env whose only live peer is a fake
// that serves the one connection the proxy makes to it with serve (on a
// goroutine, closing it after). served waits for serve to return.
func newEnvWithPeer(t *testing.T, serve func(c net.Conn)) (e *env, served func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	e = newEnv(t, 1, false)
	peers := []string{ln.Addr().String()}
	e.p.livePeers.Store(&peers)
	return e, wg.Wait
}

// slowSubscriber subscribes a client that does not read (env.nonReader)
// to channel c, without waiting for its confirmation.
func slowSubscriber(t *testing.T, e *env) {
	t.Helper()
	slow := e.nonReader()
	if _, err := slow.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n")); err != nil {
		t.Fatal(err)
	}
}

// waitNumSubC polls PUBSUB NUMSUB c through pub until it counts n
// subscribers, failing with what after 200 tries.
func waitNumSubC(t *testing.T, pub *rawConn, n int, what string) {
	t.Helper()
	want := fmt.Sprintf("*2\r\n$1\r\nc\r\n:%d\r\n", n)
	for i := 0; pub.do("PUBSUB", "NUMSUB", "c") != want; i++ {
		if i == 200 {
			t.Fatal(what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
