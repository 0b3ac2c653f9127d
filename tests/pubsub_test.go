package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/proxy"
)

// psStep is one command of a pub/sub script, sent on connection conn.
type psStep struct {
	conn int
	args []string
}

// pubsubScript exercises one proxy's pub/sub replies: confirmations with
// running counts, messages and pmessages, UNSUBSCRIBE of all and of
// none, RESP2's subscribed mode (refusals, PING), the shard commands,
// PUBSUB and its errors, empty channels, RESET and QUIT. Connection 0
// subscribes, 1 publishes and asks.
var pubsubScript = []psStep{
	{0, []string{"SUBSCRIBE", "a", "b", "a"}},
	{0, []string{"PSUBSCRIBE", "h?llo", "x*", "h?llo"}},
	{1, []string{"PUBLISH", "a", "m1"}},
	{1, []string{"PUBLISH", "hello", "m2"}},
	{1, []string{"PUBLISH", "zz", "m3"}},
	{1, []string{"PUBLISH", "xyz", "m4"}},
	{1, []string{"PUBLISH", "b", ""}},
	// inside MULTI: published at EXEC, the counts in EXEC's array
	{1, []string{"MULTI"}},
	{1, []string{"PUBLISH", "a", "in-tx"}},
	{1, []string{"PUBLISH", "hello", "in-tx-2"}},
	{1, []string{"PUBLISH", "nobody", "in-tx-3"}},
	{1, []string{"EXEC"}},
	{0, []string{"GET", "x"}},
	{0, []string{"CONFIG", "GET", "maxmemory"}},
	{0, []string{"ECHO", "hi"}},
	{0, []string{"PING"}},
	{0, []string{"PING", "x"}},
	{0, []string{"NOSUCHCOMMAND"}},
	{0, []string{"SUBSCRIBE"}},
	{1, []string{"PUBSUB", "NUMSUB", "a", "b", "c"}},
	{1, []string{"PUBSUB", "NUMSUB"}},
	{1, []string{"PUBSUB", "NUMPAT"}},
	{1, []string{"PUBSUB", "CHANNELS", "a"}},
	{1, []string{"PUBSUB", "CHANNELS", "[b-c]"}},
	{1, []string{"PUBSUB", "CHANNELS", "zz*"}},
	{0, []string{"UNSUBSCRIBE", "a"}},
	{0, []string{"UNSUBSCRIBE", "b", "nope"}},
	{0, []string{"UNSUBSCRIBE"}},
	{1, []string{"PUBLISH", "a", "gone"}},
	{0, []string{"PUNSUBSCRIBE", "h?llo"}},
	{0, []string{"PUNSUBSCRIBE"}},
	{0, []string{"PUNSUBSCRIBE"}},
	{0, []string{"SUNSUBSCRIBE"}},
	{0, []string{"PING"}},
	{0, []string{"SSUBSCRIBE", "s1", "s2"}},
	{1, []string{"SPUBLISH", "s1", "x"}},
	{1, []string{"MULTI"}},
	{1, []string{"SPUBLISH", "s1", "in-tx"}},
	{1, []string{"PUBLISH", "s1", "not-shard-in-tx"}},
	{1, []string{"EXEC"}},
	{1, []string{"PUBLISH", "s1", "not-shard"}},
	{1, []string{"PUBSUB", "SHARDNUMSUB", "s1", "s3"}},
	{1, []string{"PUBSUB", "SHARDCHANNELS", "s1"}},
	{0, []string{"SUBSCRIBE", "c"}},
	{0, []string{"SUNSUBSCRIBE", "s1"}},
	{0, []string{"UNSUBSCRIBE", "c"}},
	{0, []string{"GET", "x"}},
	{0, []string{"SUNSUBSCRIBE"}},
	{0, []string{"GET", "x"}},
	{0, []string{"PSUBSCRIBE", "*"}},
	{0, []string{"SUBSCRIBE", ""}},
	{1, []string{"PUBLISH", "", "empty"}},
	{1, []string{"PUBLISH", "e", "star"}},
	{0, []string{"RESET"}},
	{1, []string{"PUBLISH", "e", "after-reset"}},
	{0, []string{"PING"}},
	{1, []string{"PUBSUB", "FOO"}},
	{1, []string{"PUBSUB", "NUMPAT", "x"}},
	{1, []string{"PUBSUB", "CHANNELS", "a", "b"}},
	{1, []string{"PUBSUB", "SHARDCHANNELS", "a", "b"}},
	{1, []string{"PUBSUB", "HELP"}},
	{1, []string{"PUBSUB", "HELP", "x"}},
	{1, []string{"PUBSUB"}},
	{1, []string{"PUBLISH", "a"}},
	{1, []string{"SPUBLISH", "a"}},
	{1, []string{"PSUBSCRIBE"}},
	{1, []string{"SSUBSCRIBE"}},
	{0, []string{"SUBSCRIBE", "q"}},
	{0, []string{"PUBLISH", "q", "self"}},
	{0, []string{"QUIT"}},
}

// psConn is a raw connection of the pub/sub script.
type psConn struct {
	c  net.Conn
	rd *bufio.Reader
}

func dialPS(t *testing.T, addr string, proto int) *psConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pc := &psConn{c: c, rd: bufio.NewReader(c)}
	if proto == 3 {
		// HELLO's reply names the server: read it, not compared.
		pc.send(t, []string{"HELLO", "3"})
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := pc.rd.ReadByte(); err != nil || b != '%' {
			t.Fatalf("HELLO 3: %q %v", b, err)
		}
		time.Sleep(50 * time.Millisecond)
		for pc.rd.Buffered() > 0 {
			_, _ = pc.rd.Discard(pc.rd.Buffered())
		}
	}
	return pc
}

func (p *psConn) send(t *testing.T, args []string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := p.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

// drain reads what arrives until quiet for that long.
func (p *psConn) drain(quiet time.Duration) string {
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		_ = p.c.SetReadDeadline(time.Now().Add(quiet))
		n, err := p.rd.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return string(out)
		}
	}
}

// exactly reads n bytes (what redis-server wrote) within a deadline.
func (p *psConn) exactly(n int) (string, error) {
	_ = p.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, n)
	got, err := io.ReadFull(p.rd, buf)
	return string(buf[:got]), err
}

// The pub/sub script against redis-server and one proxy, in RESP2 and
// RESP3: every connection's bytes after every step are the same.
func TestPubSubAgainstRedis(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Buckets: 64}})
	proxyAddr := c.Proxies[0].Addr()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			want := make([][2]string, len(pubsubScript))
			rs := []*psConn{dialPS(t, redisAddr, proto), dialPS(t, redisAddr, proto)}
			for i, st := range pubsubScript {
				rs[st.conn].send(t, st.args)
				for j := range rs {
					want[i][j] = rs[j].drain(30 * time.Millisecond)
				}
			}
			ps := []*psConn{dialPS(t, proxyAddr, proto), dialPS(t, proxyAddr, proto)}
			for i, st := range pubsubScript {
				ps[st.conn].send(t, st.args)
				for j := range ps {
					w := want[i][j]
					got, err := ps[j].exactly(len(w))
					if got != w {
						t.Fatalf("step %d %v, connection %d:\n got %q (%v)\nwant %q", i, st.args, j, got, err, w)
					}
				}
			}
			for j := range ps {
				if extra := ps[j].drain(200 * time.Millisecond); extra != "" {
					t.Fatalf("connection %d: extra bytes at the end: %q", j, extra)
				}
			}
		})
	}
}

// Two proxies of one cluster: go-redis subscribers on both (RESP2 and
// RESP3), publishers on both at once; every subscriber gets every
// message in each publisher's order, PUBLISH counts the subscribers of
// both proxies, PUBSUB gathers both; a dataserver's death changes
// nothing.
func TestPubSubAcrossProxies(t *testing.T) {
	ctx := ctx(t)
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Copies: 2, Proxies: 2, Buckets: 64, Proxy: slowPeerWait}})
	client := func(i, proto int) *redis.Client {
		cl := redis.NewClient(&redis.Options{Addr: c.Proxies[i].Addr(), MaxRetries: -1, Protocol: proto})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	// A subscriber per proxy and protocol, on channel "news"; one more on
	// a pattern.
	type subscriber struct {
		name string
		ps   *redis.PubSub
	}
	var subs []subscriber
	for i := 0; i < 2; i++ {
		for _, proto := range []int{2, 3} {
			ps := client(i, proto).Subscribe(ctx, "news")
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ps.Close() })
			subs = append(subs, subscriber{fmt.Sprintf("proxy%d/RESP%d", i, proto), ps})
		}
	}
	pat := client(1, 3).PSubscribe(ctx, "ne*")
	if _, err := pat.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pat.Close() })
	pubs := []*redis.Client{client(0, 2), client(1, 3)}
	// The proxies learn each other from the configserver within a beat
	// or two.
	testutil.EventuallyErr(t, 10*time.Second, func() error {
		for i, p := range pubs {
			n, err := p.PubSubNumSub(ctx, "news").Result()
			if err != nil {
				return err
			}
			if n["news"] != 4 {
				return fmt.Errorf("proxy %d: NUMSUB news = %d, want 4", i, n["news"])
			}
		}
		return nil
	})
	if n, err := pubs[0].PubSubNumPat(ctx).Result(); err != nil || n != 1 {
		t.Fatalf("NUMPAT = %d, %v", n, err)
	}
	if ch, err := pubs[0].PubSubChannels(ctx, "n*").Result(); err != nil || len(ch) != 1 || ch[0] != "news" {
		t.Fatalf("CHANNELS n* = %v, %v", ch, err)
	}
	// Both publishers at once; a dataserver dies halfway (its buckets
	// fail over), which pub/sub never notices.
	const per = 200
	errs := make(chan error, len(pubs))
	for j, p := range pubs {
		go func() {
			for i := 0; i < per; i++ {
				n, err := p.Publish(ctx, "news", fmt.Sprintf("p%d-%d", j, i)).Result()
				if err != nil || n != 5 {
					errs <- fmt.Errorf("PUBLISH %d via proxy %d = %d, %v; want 5 receivers", i, j, n, err)
					return
				}
			}
			errs <- nil
		}()
	}
	time.Sleep(20 * time.Millisecond)
	c.Kill("ds1")
	for range pubs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Every subscriber gets 2*per messages; each publisher's in order.
	check := func(name string, recv func() (string, string, error)) {
		next := [2]int{}
		for k := 0; k < 2*per; k++ {
			ch, payload, err := recv()
			if err != nil {
				t.Fatalf("%s: message %d: %v", name, k, err)
			}
			var j, i int
			if _, err := fmt.Sscanf(payload, "p%d-%d", &j, &i); err != nil || ch != "news" || j < 0 || j > 1 {
				t.Fatalf("%s: message %d = %q on %q", name, k, payload, ch)
			}
			if i != next[j] {
				t.Fatalf("%s: publisher %d's message %d came when %d was due", name, j, i, next[j])
			}
			next[j]++
		}
	}
	for _, s := range subs {
		check(s.name, func() (string, string, error) {
			m, err := s.ps.ReceiveMessage(ctx)
			if err != nil {
				return "", "", err
			}
			return m.Channel, m.Payload, nil
		})
	}
	check("pattern", func() (string, string, error) {
		m, err := pat.ReceiveMessage(ctx)
		if err != nil {
			return "", "", err
		}
		if m.Pattern != "ne*" {
			return "", "", fmt.Errorf("pattern %q", m.Pattern)
		}
		return m.Channel, m.Payload, nil
	})
	// Sharded pub/sub across proxies too.
	ss := client(0, 3).SSubscribe(ctx, "orders")
	if _, err := ss.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	if n, err := pubs[1].SPublish(ctx, "orders", "o1").Result(); err != nil || n != 1 {
		t.Fatalf("SPUBLISH via proxy 1 = %d, %v", n, err)
	}
	if m, err := ss.ReceiveMessage(ctx); err != nil || m.Channel != "orders" || m.Payload != "o1" {
		t.Fatalf("smessage = %+v, %v", m, err)
	}
	// A cluster client (go-redis ClusterClient) subscribes and publishes
	// through whichever proxy owns the channel's slot.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Proxies[0].Addr(), c.Proxies[1].Addr()}, MaxRetries: -1})
	t.Cleanup(func() { _ = cc.Close() })
	for _, ch := range []string{"{a}x", "{b}y", "{c}z"} {
		css := cc.SSubscribe(ctx, ch)
		if _, err := css.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := cc.SPublish(ctx, ch, "hi").Result(); err != nil || n != 1 {
			t.Fatalf("ClusterClient SPUBLISH %s = %d, %v", ch, n, err)
		}
		if m, err := css.ReceiveMessage(ctx); err != nil || m.Channel != ch || m.Payload != "hi" {
			t.Fatalf("ClusterClient smessage = %+v, %v", m, err)
		}
		_ = css.Close()
	}
	// A stopped proxy cuts its own subscribers; the other proxy goes on
	// counting its own.
	if err := c.Proxies[1].Close(); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyErr(t, 10*time.Second, func() error {
		n, err := pubs[0].Publish(ctx, "news", "after").Result()
		if err != nil {
			return err
		}
		if n != 2 {
			return fmt.Errorf("PUBLISH after proxy 1 stopped = %d, want 2", n)
		}
		return nil
	})
}

// slowPeerWait lets a loaded test machine answer within the bound, so
// that PUBLISH's counts are exact (proxy/pubsub_test.go checks the bound).
func slowPeerWait(_ int, c *proxy.Config) { c.PubSubPeerWait = 2 * time.Second }

// redis-cli in subscribe mode prints what a PUBLISH through another
// proxy sends.
func TestPubSubRedisCLI(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed (make test installs it)")
	}
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Proxies: 2, Buckets: 64, Proxy: slowPeerWait}})
	host, port, _ := net.SplitHostPort(c.Proxies[0].Addr())
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, "redis-cli", "-h", host, "-p", port, "SUBSCRIBE", "cli")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	readLines := func(n int) []string {
		var got []string
		for len(got) < n && lines.Scan() {
			got = append(got, lines.Text())
		}
		return got
	}
	if got := strings.Join(readLines(3), "|"); got != "subscribe|cli|1" {
		t.Fatalf("redis-cli printed %q", got)
	}
	pub := c.Client(1)
	testutil.EventuallyErr(t, 10*time.Second, func() error {
		n, err := pub.Publish(context.Background(), "cli", "hello").Result()
		if err != nil {
			return err
		}
		if n != 1 {
			return errors.New("the peer's subscriber is not counted yet")
		}
		return nil
	})
	if got := strings.Join(readLines(3), "|"); got != "message|cli|hello" {
		t.Fatalf("redis-cli printed %q", got)
	}
}
