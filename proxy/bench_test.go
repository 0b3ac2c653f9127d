package proxy

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/resp"
)

// TestRedisBenchmarkAnchor runs redis-benchmark against the proxy in
// front of one fake dataserver and against that dataserver directly
// (TAIR_PROXY_BENCH=1; needs redis-benchmark).
func TestRedisBenchmarkAnchor(t *testing.T) {
	if os.Getenv("TAIR_PROXY_BENCH") == "" {
		t.Skip("set TAIR_PROXY_BENCH=1")
	}
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Skip("no redis-benchmark")
	}
	e := newEnv(t, 1, false)
	run := func(label, addr string) {
		host, port := splitHostPort(addr)
		_ = host
		out, err := exec.Command("redis-benchmark", "-p", itoa(port), "-t", "set,get", "-n", "400000", "-P", "16", "-c", "50", "-r", "100000", "-q").CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, l := range strings.Split(strings.ReplaceAll(string(out), "\r", "\n"), "\n") {
			if strings.Contains(l, "per second") {
				t.Logf("%s %s", label, strings.TrimSpace(l))
			}
		}
	}
	run("direct", e.fakes[0].addr)
	run("proxy ", e.p.Addr())
}

func itoa(n int) string {
	b := []byte{}
	if n == 0 {
		return "0"
	}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// fastDS is a backend that costs almost nothing: SET -> +OK, GET -> a
// 3-byte value, anything else -> +OK. It isolates the proxy's own cost.
func newFastDS(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				rd := resp.NewRequestReader(c, resp.RequestLimits{})
				var out []byte
				for {
					cmds, err := rd.ReadBatch(1024)
					for _, cmd := range cmds {
						a := cmd.Args
						if len(a) > 4 && (a[0][0] == 'T') {
							a = a[4:]
						}
						switch {
						case len(a[0]) == 3 && (a[0][0] == 'G' || a[0][0] == 'g'):
							out = append(out, "$3\r\nbar\r\n"...)
						default:
							out = append(out, "+OK\r\n"...)
						}
					}
					if len(out) > 0 {
						if _, err := c.Write(out); err != nil {
							return
						}
						out = out[:0]
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func newFastEnv(tb testing.TB) *Server {
	addr := newFastDS(tb)
	cfg := DefaultConfig()
	cfg.Listen, cfg.HTTP = "127.0.0.1:0", ""
	p, err := New(cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	_ = p.SetTable(makeTable(1, 1023, addr))
	if err := p.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// BenchmarkProxyPipeline16 sends pipelines of 16 SET/GET through the
// proxy to a free backend; ns/op and allocs/op are per command.
func BenchmarkProxyPipeline16(b *testing.B) {
	p := newFastEnv(b)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var batch []byte
	for i := 0; i < 8; i++ {
		k := []byte("key:" + itoa(i*7919))
		batch = resp.AppendCommand(batch, []byte("SET"), k, []byte("xxx"))
		batch = resp.AppendCommand(batch, []byte("GET"), k)
	}
	rd := resp.NewReplyReader(c, 0, resp.Limits{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		if _, err := c.Write(batch); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 16; j++ {
			if _, err := rd.ReadReply(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestRedisBenchmarkFast: redis-benchmark through the proxy to a free
// backend, and to that backend directly (TAIR_PROXY_BENCH=1).
func TestRedisBenchmarkFast(t *testing.T) {
	if os.Getenv("TAIR_PROXY_BENCH") == "" {
		t.Skip("set TAIR_PROXY_BENCH=1")
	}
	p := newFastEnv(t)
	for _, a := range []string{p.Addr()} {
		_, port := splitHostPort(a)
		out, err := exec.Command("redis-benchmark", "-p", itoa(port), "-t", "set,get", "-n", "1000000", "-P", "16", "-c", "50", "-r", "100000", "-q").CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, l := range strings.Split(strings.ReplaceAll(string(out), "\r", "\n"), "\n") {
			if strings.Contains(l, "per second") {
				t.Logf("%s", strings.TrimSpace(l))
			}
		}
	}
}

// TestServeFastForever keeps a proxy with a free backend up for manual
// benchmarks (TAIR_PROXY_SERVE=seconds); it prints the address.
func TestServeFastForever(t *testing.T) {
	secs := os.Getenv("TAIR_PROXY_SERVE")
	if secs == "" {
		t.Skip("set TAIR_PROXY_SERVE=seconds")
	}
	p := newFastEnv(t)
	if err := os.WriteFile("/tmp/fastproxy.addr", []byte(p.Addr()), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range secs {
		n = n*10 + int(c-'0')
	}
	time.Sleep(time.Duration(n) * time.Second)
}
