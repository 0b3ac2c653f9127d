package proxy

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/tairkv/tair/resp"
)

// resetDyn undoes what a fuzz input may have set with CONFIG SET.
func resetDyn(s *Server) {
	s.dyn.maxBulkLen.Store(s.cfg.MaxBulkLen)
	s.dyn.maxClients.Store(int64(s.cfg.MaxClients))
	s.dyn.maxOutput.Store(s.cfg.MaxOutputBuffer)
	s.dyn.idle.Store(int64(s.cfg.IdleTimeout))
	p := s.cfg.RequirePass
	s.dyn.pass.Store(&p)
}

// FuzzProxy sends arbitrary bytes to a proxy in front of two fake
// dataservers: the proxy must answer with well-formed RESP, close the
// connection after a protocol error or once the client closes, and keep
// serving other clients.
func FuzzProxy(f *testing.F) {
	for _, s := range []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"*4\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n",
		"PING\r\nECHO hello\r\nSELECT 3\r\nGET k\r\n",
		"*1\r\n$1073741824\r\n",
		"*10000000\r\n",
		"HELLO 3\r\nCLIENT LIST\r\nINFO\r\n",
		"MULTI\r\nSET {a}x 1\r\nINCR {a}y\r\nEXEC\r\n",
		"BLPOP q 0.05\r\nDBSIZE\r\nSCAN 0 COUNT 5\r\n",
		"CLUSTER SLOTS\r\nCLUSTER KEYSLOT foo\r\nCOMMAND COUNT\r\n",
		"AUTH a b\r\nHELLO 2 AUTH x y\r\nQUIT\r\n",
		"MSET a 1 b 2 c 3\r\nDEL a b c\r\nEXISTS a\r\n",
	} {
		f.Add([]byte(s))
	}
	e := newEnv(f, 2, false, func(c *Config) {
		c.RetryBudget = 50 * time.Millisecond
		c.MaxPipeline = 64
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		defer resetDyn(e.p)
		c, err := net.Dial("tcp", e.p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() {
			_, _ = c.Write(data)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		out, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("reading replies: %v (got %d bytes)", err, len(out))
		}
		// Every byte is part of a well-formed reply.
		for len(out) > 0 {
			n, _, err := resp.ScanReply(out, resp.Limits{})
			if err != nil {
				t.Fatalf("malformed reply stream at %q: %v", out[:min(len(out), 80)], err)
			}
			out = out[n:]
		}
		// The proxy still serves.
		c2, err := net.Dial("tcp", e.p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		_ = c2.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c2.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		buf := make([]byte, 7)
		if _, err := io.ReadFull(c2, buf); err != nil || string(buf) != "+PONG\r\n" {
			t.Fatalf("proxy does not answer after the input: %q %v", buf, err)
		}
	})
}
