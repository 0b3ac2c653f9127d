// Package tests holds end-to-end tests: real clients (go-redis, redis-cli,
// redis-benchmark) against real proxies of an in-process cluster, and fault
// tests on real processes.
package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// rawDo sends one command on a fresh connection and returns the first
// reply line (the whole reply for simple replies).
func rawDo(t *testing.T, addr string, args ...string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(line, "\r\n")
}

func TestRoutesOverDataserversAndSecondProxy(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Proxies: 2, Copies: 2, Buckets: 64}})
	p0, p1 := c.Client(0), c.Client(1)
	tb := c.Table()
	if n := len(tb.Nodes()); n != 3 {
		t.Fatalf("table names %d dataservers, want 3", n)
	}
	masters := map[string]int{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("key:%d", i)
		if err := p0.Set(ctx(t), k, fmt.Sprintf("v%d", i), 0).Err(); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
		masters[tb.Master(tb.Bucket([]byte(k)))]++
	}
	if len(masters) != 3 {
		t.Fatalf("keys reached %d masters, want 3: %v", len(masters), masters)
	}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("key:%d", i)
		got, err := p1.Get(ctx(t), k).Result()
		if err != nil || got != fmt.Sprintf("v%d", i) {
			t.Fatalf("get %s through the second proxy = %q, %v", k, got, err)
		}
	}
	// Each dataserver holds its share as master.
	for _, ds := range c.DataServers {
		n := rawDo(t, ds.Addr(), "DBSIZE")
		if n == ":0" || !strings.HasPrefix(n, ":") {
			t.Fatalf("dataserver %s DBSIZE = %s, want a positive count", ds.Addr(), n)
		}
	}
	// Multi-key commands split across buckets and merged in order.
	if err := p0.MSet(ctx(t), "a", "1", "b", "2", "c", "3").Err(); err != nil {
		t.Fatal(err)
	}
	vals, err := p1.MGet(ctx(t), "a", "b", "missing", "c").Result()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vals) != "[1 2 <nil> 3]" {
		t.Fatalf("MGET = %v", vals)
	}
	if n, err := p0.Del(ctx(t), "a", "b", "missing", "c").Result(); err != nil || n != 3 {
		t.Fatalf("DEL = %d, %v; want 3", n, err)
	}
	// SELECT is the area: the same key in two areas is two keys.
	conn := p0.Conn()
	defer conn.Close()
	if err := conn.Select(ctx(t), 5).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Set(ctx(t), "key:1", "area5", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := p0.Get(ctx(t), "key:1").Result(); got != "v1" {
		t.Fatalf("area 0 key:1 = %q after a write in area 5", got)
	}
	if got, _ := conn.Get(ctx(t), "key:1").Result(); got != "area5" {
		t.Fatalf("area 5 key:1 = %q", got)
	}
}

func TestConfigServerRestartKeepsTable(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Buckets: 64}})
	before := c.Table()
	cs := c.ConfigServers[0]
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	c.ConfigServers[0] = nil
	if _, err := c.StartConfigServer(0); err != nil {
		t.Fatal(err)
	}
	after := c.Table()
	if after.Version != before.Version {
		t.Fatalf("version after restart = %d, want %d", after.Version, before.Version)
	}
	if fmt.Sprint(after.Serving) != fmt.Sprint(before.Serving) {
		t.Fatal("serving table changed across a configserver restart")
	}
}

func TestProxyServesWhileConfigServerDown(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Buckets: 64}})
	p := c.Client(0)
	if err := p.Set(ctx(t), "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigServers[0].Close(); err != nil {
		t.Fatal(err)
	}
	c.ConfigServers[0] = nil
	// Well past the dataservers' master lease (1.5 s): they keep it
	// while no configserver runs, and the proxy serves from its table.
	down := time.Now()
	for i := 0; i < 200 || time.Since(down) < 4*time.Second; i++ {
		k := fmt.Sprintf("down:%d", i)
		if err := p.Set(ctx(t), k, k, 0).Err(); err != nil {
			t.Fatalf("write %d with the configserver down: %v", i, err)
		}
		if got, err := p.Get(ctx(t), k).Result(); err != nil || got != k {
			t.Fatalf("read %d with the configserver down: %q %v", i, got, err)
		}
	}
	if got, _ := p.Get(ctx(t), "before").Result(); got != "1" {
		t.Fatalf("before = %q", got)
	}
}

func TestStaleTableNotMasterThenProxyRetries(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 1, Buckets: 64}})
	tb := c.Table()
	// A key and a dataserver that is not its master.
	key := "stale-key"
	b := tb.Bucket([]byte(key))
	master := tb.Master(b)
	var other string
	for _, n := range tb.Nodes() {
		if n != master {
			other = n
			break
		}
	}
	reply := rawDo(t, other, "TAIR.X", "0", fmt.Sprint(tb.Version), "2", "SET", key, "v")
	if !strings.HasPrefix(reply, "-NOTMASTER ") || !strings.HasSuffix(reply, "(tair -3986)") {
		t.Fatalf("write to a non-master = %q, want -NOTMASTER ... (tair -3986)", reply)
	}
	// Give the proxy a table where the bucket's master is the wrong node:
	// the dataserver's NOTMASTER makes it refresh and retry to success.
	stale := tb.Clone()
	stale.Serving[b][0] = other
	c.Proxies[0].SetTable(stale)
	p := c.Client(0)
	if err := p.Set(ctx(t), key, "through-retry", 0).Err(); err != nil {
		t.Fatalf("set through a stale proxy: %v", err)
	}
	if got := rawDo(t, master, "GET", key); got != "$13" {
		t.Fatalf("master holds %q, want the 13-byte value", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return c.Proxies[0].TableVersion() >= tb.Version },
		"proxy did not refresh its table")
}

// The README's redis-cli session, with the real redis-cli.
func TestRedisCLISession(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed (make test installs it)")
	}
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Buckets: 128}})
	_, port, _ := net.SplitHostPort(c.Proxies[0].Addr())
	cli := func(args ...string) string {
		out, err := exec.Command("redis-cli", append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"set", "k", "v"}, "OK"},
		{[]string{"get", "k"}, "v"},
		{[]string{"mset", "a", "1", "b", "2", "c", "3"}, "OK"},
		{[]string{"mget", "a", "b", "c"}, "1\n2\n3"},
		{[]string{"incr", "n"}, "1"},
		{[]string{"incr", "n"}, "2"},
		{[]string{"expire", "k", "10"}, "1"},
		{[]string{"ttl", "k"}, "10"},
		{[]string{"ping"}, "PONG"},
	}
	for _, s := range steps {
		if got := cli(s.args...); got != s.want {
			t.Fatalf("redis-cli %v = %q, want %q", s.args, got, s.want)
		}
	}
}

// redis-benchmark finishes without errors and its keys land on every
// dataserver.
func TestRedisBenchmarkThroughProxy(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Skip("redis-benchmark not installed (make test installs it)")
	}
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2}})
	_, port, _ := net.SplitHostPort(c.Proxies[0].Addr())
	out, err := exec.Command("redis-benchmark", "-p", port, "-t", "set,get,incr,mset", "-n", "20000",
		"-P", "16", "-r", "100000", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	text := string(out)
	// redis-benchmark labels MSET as "MSET (10 keys): ".
	for _, test := range []string{"SET: ", "GET: ", "INCR: ", "MSET (10 keys): "} {
		if !strings.Contains(text, test) {
			t.Fatalf("redis-benchmark output lacks %s:\n%s", test, text)
		}
	}
	if strings.Contains(strings.ToLower(text), "error") {
		t.Fatalf("redis-benchmark reported errors:\n%s", text)
	}
	for _, ds := range c.DataServers {
		if n := rawDo(t, ds.Addr(), "DBSIZE"); n == ":0" {
			t.Fatalf("dataserver %s holds no keys after the benchmark", ds.Addr())
		}
	}
}
