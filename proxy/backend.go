package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/resp"
)

// Backend errors. A request that fails with one of them carries
// request.written: whether its bytes may have reached the dataserver.
var (
	errBackendClosed = errors.New("proxy: backend connection closed")
	errBackendDial   = errors.New("proxy: cannot connect to dataserver")
	errBackendTimout = errors.New("proxy: dataserver did not answer in time")
)

// node is one dataserver: a few pipelined connections, created lazily.
// Nodes live as long as the server (addresses are few).
type node struct {
	addr  string
	srv   *Server
	conns []atomic.Pointer[backendConn]

	mu struct {
		sync.Mutex
		lastDialErr  error
		lastDialFail time.Time
	}
}

// conn returns connection i, dialing when it is missing or dead.
func (n *node) conn(i int) (*backendConn, error) {
	slot := &n.conns[i%len(n.conns)]
	if bc := slot.Load(); bc != nil && !bc.dead.Load() {
		return bc, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if bc := slot.Load(); bc != nil && !bc.dead.Load() {
		return bc, nil
	}
	if n.srv.closing.Load() {
		return nil, errBackendClosed
	}
	// Fail fast for a while after a failed dial: the caller's retry
	// loop backs off and refreshes the table meanwhile.
	if n.mu.lastDialErr != nil && time.Since(n.mu.lastDialFail) < 50*time.Millisecond {
		return nil, n.mu.lastDialErr
	}
	c, err := net.DialTimeout("tcp", n.addr, n.srv.cfg.DialTimeout)
	if err != nil {
		n.mu.lastDialErr = fmt.Errorf("%w %s: %v", errBackendDial, n.addr, err)
		n.mu.lastDialFail = time.Now()
		n.srv.m.backendErrors.WithLabelValues("dial").Inc()
		return nil, n.mu.lastDialErr
	}
	n.mu.lastDialErr = nil
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	bc := newBackendConn(n, c)
	slot.Store(bc)
	return bc, nil
}

// closeAll closes every connection (server shutdown).
func (n *node) closeAll() {
	for i := range n.conns {
		if bc := n.conns[i].Load(); bc != nil {
			bc.shutdown(errBackendClosed)
		}
	}
}

// backendConn is one pipelined connection to a dataserver (codis
// backend.go): sessions push encoded requests to a queue; the writer
// goroutine takes the whole queue, writes it, hands each request to the
// in-flight FIFO and flushes once the queue is drained; the reader
// goroutine completes the FIFO's head with each reply. When the
// connection breaks every queued request fails unwritten and every
// in-flight one fails written (it may have run).
type backendConn struct {
	n      *node
	c      net.Conn
	dead   atomic.Bool
	notify chan struct{} // cap 1: the queue is not empty
	quit   chan struct{} // closed on shutdown
	flight chan *request // written, awaiting replies (FIFO)
	once   sync.Once
	err    atomic.Value // error that shut the connection

	mu struct {
		sync.Mutex
		closed bool
		queue  []*request
	}
}

const maxInFlight = 4096

// yieldBelow: a writer that wakes to fewer queued requests yields once
// before taking the queue, so that other sessions can add theirs.
const yieldBelow = 64

func newBackendConn(n *node, c net.Conn) *backendConn {
	bc := &backendConn{
		n:      n,
		c:      c,
		notify: make(chan struct{}, 1),
		quit:   make(chan struct{}),
		flight: make(chan *request, maxInFlight),
	}
	n.srv.wg.Add(2)
	go bc.writeLoop()
	go bc.readLoop()
	n.srv.m.backendConns.Inc()
	return bc
}

// push queues r; false when the connection is closed (r untouched).
func (bc *backendConn) push(r *request) bool {
	bc.mu.Lock()
	if bc.mu.closed {
		bc.mu.Unlock()
		return false
	}
	bc.mu.queue = append(bc.mu.queue, r)
	bc.mu.Unlock()
	select {
	case bc.notify <- struct{}{}:
	default:
	}
	return true
}

// shutdown closes the connection once; the loops fail what they hold.
func (bc *backendConn) shutdown(err error) {
	bc.once.Do(func() {
		bc.err.Store(err)
		bc.dead.Store(true)
		close(bc.quit)
		_ = bc.c.Close()
		bc.n.srv.m.backendConns.Dec()
		if !bc.n.srv.closing.Load() {
			bc.n.srv.log.Warn("dataserver connection lost", "node", bc.n.addr, "err", err)
		}
	})
}

func (bc *backendConn) cause() error {
	if e, ok := bc.err.Load().(error); ok {
		return e
	}
	return errBackendClosed
}

func (bc *backendConn) writeLoop() {
	defer bc.n.srv.wg.Done()
	bw := bufio.NewWriterSize(bc.c, 32<<10)
	var batch []*request
	var err error
loop:
	for {
		select {
		case <-bc.notify:
		case <-bc.quit:
			break loop
		}
		// Let the sessions that are runnable now queue their requests
		// first: one write (and one read on the dataserver) for many
		// clients' requests instead of a syscall per request.
		bc.mu.Lock()
		short := len(bc.mu.queue) < yieldBelow
		bc.mu.Unlock()
		if short {
			runtime.Gosched()
		}
		bc.mu.Lock()
		batch, bc.mu.queue = bc.mu.queue, batch[:0]
		bc.mu.Unlock()
		for i, r := range batch {
			if _, err = bw.Write(r.wire); err != nil {
				// Part of r may have gone out; the rest are unwritten:
				// requeue them to be failed.
				bc.failWritten(r, err)
				bc.requeue(batch[i+1:])
				break loop
			}
			r.written = true
			select {
			case bc.flight <- r:
			default:
				// The FIFO is full: flush so that replies come, then wait.
				if err = bw.Flush(); err != nil {
					bc.failWritten(r, err)
					bc.requeue(batch[i+1:])
					break loop
				}
				select {
				case bc.flight <- r:
				case <-bc.quit:
					bc.failWritten(r, bc.cause())
					bc.requeue(batch[i+1:])
					break loop
				}
			}
			batch[i] = nil
		}
		if err = bw.Flush(); err != nil {
			break
		}
	}
	if err != nil {
		bc.n.srv.m.backendErrors.WithLabelValues("write").Inc()
		bc.shutdown(fmt.Errorf("%w: %s: %v", errBackendClosed, bc.n.addr, err))
	}
	bc.mu.Lock()
	bc.mu.closed = true
	rest := bc.mu.queue
	bc.mu.queue = nil
	bc.mu.Unlock()
	cause := bc.cause()
	for _, r := range rest {
		r.fail(cause)
	}
	close(bc.flight)
}

// requeue puts unwritten requests back at the head of the queue so the
// exit path fails them.
func (bc *backendConn) requeue(rs []*request) {
	if len(rs) == 0 {
		return
	}
	bc.mu.Lock()
	bc.mu.queue = append(append([]*request(nil), rs...), bc.mu.queue...)
	bc.mu.Unlock()
}

func (bc *backendConn) failWritten(r *request, err error) {
	r.written = true
	r.fail(err)
}

func (bc *backendConn) readLoop() {
	defer bc.n.srv.wg.Done()
	rd := resp.NewReplyReader(bc.c, 32<<10, resp.Limits{})
	timeout := bc.n.srv.cfg.RequestTimeout
	var deadline time.Time
	var err error
	for r := range bc.flight {
		if err != nil {
			r.fail(err)
			continue
		}
		if rd.Buffered() == 0 {
			now := time.Now()
			if d := now.Add(timeout); d.Sub(deadline) > timeout/8 {
				deadline = d
				_ = bc.c.SetReadDeadline(d)
			}
		}
		raw, rerr := rd.ReadReply()
		if rerr != nil {
			var ne net.Error
			if errors.As(rerr, &ne) && ne.Timeout() {
				err = fmt.Errorf("%w: %s", errBackendTimout, bc.n.addr)
				bc.n.srv.m.backendErrors.WithLabelValues("timeout").Inc()
			} else {
				err = fmt.Errorf("%w: %s: %v", errBackendClosed, bc.n.addr, rerr)
				bc.n.srv.m.backendErrors.WithLabelValues("read").Inc()
			}
			bc.shutdown(err)
			err = bc.cause()
			r.fail(err)
			continue
		}
		r.complete(raw)
		if rd.Buffered() == 0 {
			rd.Shrink(256 << 10)
		}
	}
}
