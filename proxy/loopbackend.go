package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// An event loop's own pipelined connections to the dataservers
// (loopBackend), the gnet transport of a pipeline (pipeline.go): dialed
// off the loop, enrolled on it, written once per loop round, read on the
// loop.

// loopBackend is an event loop's pipelined connection to one
// dataserver: requests are encoded into its pipeline's out and written
// once per loop round; replies complete the pipeline's head in order.
type loopBackend struct {
	pipeline
	ls    *loopState
	n     *node
	c     gnet.Conn // nil while connecting
	dirty bool
	dead  bool
}

// onLoopReply hands a forwarded request's reply (or failure) to its
// session, on the loop.
func onLoopReply(r *request) { r.ss.onReply(r) }

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
	lb.done = onLoopReply
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
	lb.add(r)
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
	b := lb.take()
	// A Write that fails closes the connection at once (closed, fail):
	// its requests never reached the socket. The ones it took (or
	// buffered) are handed.
	_, _ = lb.c.Write(b)
	lb.handed()
	lb.recycle(b)
}

func (lb *loopBackend) onTraffic() {
	buf, _ := lb.c.Peek(-1)
	if len(buf) < lb.need {
		return
	}
	off, err := lb.scan(buf)
	if err != nil {
		lb.ls.fe.s.m.backendErrors.WithLabelValues("read").Inc()
		_, _ = lb.c.Discard(-1)
		lb.fail(fmt.Errorf("%w: %s: %v", errBackendClosed, lb.n.addr, err), true)
		return
	}
	if off > 0 {
		// gnet's Discard(0) discards everything: a reply longer than
		// one read (64 KiB) lost its first part and the connection
		// stalled until the request timed out.
		_, _ = lb.c.Discard(off)
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

// fail ends the connection: every request in flight fails with err
// (pipeline.fail says which count as written) and the next request for
// the node connects again.
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
	lb.pipeline.fail(err, written)
	lb.ls.flushSessions()
}
