package dataserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// peerConn is a plain RESP client connection to another dataserver, used by
// replication and migration streams and by request forwarding. Not safe for
// concurrent use.
type peerConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func dialPeer(addr string, timeout time.Duration) (*peerConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &peerConn{c: c, br: bufio.NewReaderSize(c, 64<<10), bw: bufio.NewWriterSize(c, 64<<10)}, nil
}

func (p *peerConn) Close() error { return p.c.Close() }

// roundTrip writes raw (one or more encoded requests), flushes and reads
// one raw reply, all within timeout.
func (p *peerConn) roundTrip(raw []byte, timeout time.Duration) ([]byte, error) {
	_ = p.c.SetDeadline(time.Now().Add(timeout))
	if _, err := p.bw.Write(raw); err != nil {
		return nil, err
	}
	if err := p.bw.Flush(); err != nil {
		return nil, err
	}
	return readReply(p.br, nil)
}

var errBadReply = errors.New("dataserver: malformed reply")

// readReply reads one RESP2/RESP3 reply and appends its raw bytes to dst.
func readReply(br *bufio.Reader, dst []byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errBadReply
	}
	dst = append(dst, line...)
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return dst, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return nil, errBadReply
		}
		if n < 0 {
			return dst, nil
		}
		start := len(dst)
		dst = append(dst, make([]byte, n+2)...)
		if _, err := io.ReadFull(br, dst[start:]); err != nil {
			return nil, err
		}
		return dst, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return nil, errBadReply
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if dst, err = readReply(br, dst); err != nil {
				return nil, err
			}
		}
		return dst, nil
	}
	return nil, fmt.Errorf("dataserver: unexpected reply type %q", line[0])
}

// parsed reply helpers for the small replies of the internal protocol.

// replyInt parses ":n".
func replyInt(raw []byte) (int64, error) {
	if len(raw) < 3 || raw[0] != ':' {
		return 0, replyErr(raw)
	}
	return strconv.ParseInt(string(raw[1:len(raw)-2]), 10, 64)
}

func replyErr(raw []byte) error {
	if len(raw) > 2 && raw[0] == '-' {
		return errors.New(string(raw[1 : len(raw)-2]))
	}
	return fmt.Errorf("dataserver: unexpected reply %q", truncate(raw, 64))
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// connPool keeps idle connections to other dataservers for forwarding.
type connPool struct {
	mu   sync.Mutex
	idle map[string][]*peerConn
}

func (p *connPool) get(addr string) (*peerConn, error) {
	p.mu.Lock()
	if l := p.idle[addr]; len(l) > 0 {
		c := l[len(l)-1]
		p.idle[addr] = l[:len(l)-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	return dialPeer(addr, time.Second)
}

func (p *connPool) put(addr string, c *peerConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*peerConn{}
	}
	if len(p.idle[addr]) >= 8 {
		_ = c.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], c)
}

// roundTrip sends req to addr on a pooled connection and returns the
// reply; a connection that failed is closed, not pooled again. (forward
// gets and puts its own: it tells a request never sent from one that
// may have run.)
func (p *connPool) roundTrip(addr string, req []byte, timeout time.Duration) ([]byte, error) {
	c, err := p.get(addr)
	if err != nil {
		return nil, err
	}
	raw, err := c.roundTrip(req, timeout)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	p.put(addr, c)
	return raw, nil
}

func (p *connPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.idle {
		for _, c := range l {
			_ = c.Close()
		}
	}
	p.idle = nil
}
