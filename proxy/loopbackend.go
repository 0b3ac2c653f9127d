package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tairkv/tair/resp"
)

// An event loop's own pipelined connections to the dataservers
// (loopBackend): dialed off the loop, enrolled on it, written once per
// loop round, read on the loop.

// loopBackend is an event loop's pipelined connection to one
// dataserver: requests are encoded into out and written once per loop
// round; replies complete the in-flight FIFO's head in order.
type loopBackend struct {
	ls     *loopState
	n      *node
	c      gnet.Conn // nil while connecting
	out    []byte
	flight []*request
	head   int
	sent   int // flight[:sent] went to the socket; the rest is in out
	need   int // bytes the partial reply at the head needs at least
	dirty  bool
	dead   bool
}

// backend returns the loop's connection to n, connecting when there is
// none; nil while connecting to n fails (the goroutine path retries).
func (ls *loopState) backend(n *node) *loopBackend {
	if lb := ls.backends[n]; lb != nil {
		return lb
	}
	if t, ok := ls.dialFail[n]; ok && time.Since(t) < 50*time.Millisecond {
		return nil
	}
	lb := &loopBackend{ls: ls, n: n}
	ls.backends[n] = lb
	s := ls.fe.s
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c, err := net.DialTimeout("tcp", n.addr, s.cfg.DialTimeout)
		if err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
				_ = tc.SetKeepAlive(true)
			}
			var ch <-chan gnet.RegisteredResult
			ch, err = ls.el.Enroll(gnet.NewContext(context.Background(), lb), c)
			if err == nil {
				res := <-ch
				err = res.Err
			} else {
				_ = c.Close()
			}
		}
		if err != nil {
			s.m.backendErrors.WithLabelValues("dial").Inc()
			err = fmt.Errorf("%w %s: %v", errBackendDial, n.addr, err)
			ls.post(func() {
				ls.dialFail[n] = time.Now()
				lb.fail(err, false)
			})
		}
	}()
	return lb
}

func (lb *loopBackend) opened(c gnet.Conn) {
	lb.c = c
	lb.ls.fe.s.m.backendConns.Inc()
	lb.ls.fe.s.stats.loopConns.Add(1)
	delete(lb.ls.dialFail, lb.n)
	if lb.dead {
		_ = c.Close()
		return
	}
	lb.write()
}

func (lb *loopBackend) send(r *request, rt *routing, slave bool) {
	lb.out = wrap(lb.out, rt, slave, r)
	lb.flight = append(lb.flight, r)
	if !lb.dirty {
		lb.dirty = true
		lb.ls.dirty = append(lb.ls.dirty, lb)
		lb.ls.scheduleFlush()
	}
}

func (lb *loopBackend) write() {
	if lb.c == nil || lb.dead || len(lb.out) == 0 {
		return
	}
	_, _ = lb.c.Write(lb.out)
	lb.sent = len(lb.flight)
	if cap(lb.out) > 1<<20 {
		lb.out = nil
	} else {
		lb.out = lb.out[:0]
	}
}

var backendLimits = resp.Limits{}

func (lb *loopBackend) onTraffic() {
	buf, _ := lb.c.Peek(-1)
	if len(buf) < lb.need {
		return
	}
	lb.need = 0
	off := 0
	for off < len(buf) {
		n, need, err := resp.ScanReply(buf[off:], backendLimits)
		if errors.Is(err, resp.ErrIncomplete) {
			lb.need = len(buf) - off + need
			break
		}
		if err != nil || lb.head == len(lb.flight) {
			if err == nil {
				err = errors.New("reply without a request")
			}
			lb.ls.fe.s.m.backendErrors.WithLabelValues("read").Inc()
			_, _ = lb.c.Discard(-1)
			lb.fail(fmt.Errorf("%w: %s: %v", errBackendClosed, lb.n.addr, err), true)
			return
		}
		r := lb.flight[lb.head]
		lb.flight[lb.head] = nil
		lb.head++
		r.reply = append(r.reply[:0], buf[off:off+n]...)
		r.err = nil
		off += n
		r.ss.onReply(r)
	}
	if off > 0 {
		// gnet's Discard(0) discards everything: a reply longer than
		// one read (64 KiB) lost its first part and the connection
		// stalled until the request timed out.
		_, _ = lb.c.Discard(off)
	}
	if lb.head == len(lb.flight) {
		lb.flight, lb.head, lb.sent = lb.flight[:0], 0, 0
	}
	lb.ls.flushSessions()
}

// closed is OnClose of the connection.
func (lb *loopBackend) closed(err error) {
	s := lb.ls.fe.s
	s.m.backendConns.Dec()
	s.stats.loopConns.Add(-1)
	if lb.dead {
		return
	}
	if !s.closing.Load() {
		s.log.Warn("dataserver connection lost", "node", lb.n.addr, "err", err)
	}
	if err == nil {
		err = errors.New("closed")
	}
	lb.fail(fmt.Errorf("%w: %s: %v", errBackendClosed, lb.n.addr, err), true)
}

// fail ends the connection: every request in flight fails with err and
// the next request for the node connects again. Requests handed to the
// socket may have reached the dataserver when written is set; those
// still in out never did (classify retries them whatever they are).
func (lb *loopBackend) fail(err error, written bool) {
	if lb.dead {
		return
	}
	lb.dead = true
	if lb.ls.backends[lb.n] == lb {
		delete(lb.ls.backends, lb.n)
	}
	if lb.c != nil {
		_ = lb.c.Close()
	}
	lb.out = nil
	rs, sent := lb.flight[lb.head:], lb.sent-lb.head
	lb.flight, lb.head, lb.sent = nil, 0, 0
	for i, r := range rs {
		r.err, r.written = err, written && i < sent
		r.reply = r.reply[:0]
		r.ss.onReply(r)
	}
	lb.ls.flushSessions()
}
