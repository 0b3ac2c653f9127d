package proxy

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/resp"
)

// The sessions' goroutines' dataserver connections: a node per
// dataserver with BackendConns shared connections, each a backendConn,
// the goroutine transport of a pipeline (pipeline.go): a writer and a
// reader goroutine over a net.Conn.

// Backend errors. A request that fails with one of them carries
// request.written: whether its bytes may have reached the dataserver.
var (
	errBackendClosed  = errors.New("proxy: backend connection closed")
	errBackendDial    = errors.New("proxy: cannot connect to dataserver")
	errBackendTimeout = errors.New("proxy: dataserver did not answer in time")
)

// node is one dataserver: a few pipelined connections, created lazily.
// Nodes live as long as the server (addresses are few).
type node struct {
	addr  string
	srv   *Server
	conns []atomic.Pointer[backendConn]
	// scriptsOff: scripts the node lately sent back to a script
	// connection (script.go).
	scriptsOff scriptsOff
	// trackUp: the hot-key cache's invalidation link to the node is up
	// (hotpush.go); fills go to it only then.
	trackUp atomic.Bool

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
// backend.go), a transport of a pipeline shared by the sessions'
// goroutines: a session appends its encoded request to the pipeline;
// the writer goroutine takes all that is queued, counts it handed and
// writes it in one write; the reader goroutine reads replies while any
// request handed awaits one, and completes the pipeline's head with
// each. When the connection breaks the pipeline fails what it holds.
type backendConn struct {
	n       *node
	c       net.Conn
	dead    atomic.Bool
	notify  chan struct{} // cap 1: requests were queued (for the writer)
	awaited chan struct{} // cap 1: requests were handed (for the reader)
	room    chan struct{} // cap 1: the in-flight count fell below maxInFlight
	quit    chan struct{} // closed on shutdown
	once    sync.Once
	err     atomic.Value // error that shut the connection

	mu struct {
		sync.Mutex
		p      pipeline
		closed bool // p failed: push refuses
		full   bool // the writer waits for room
	}
}

// maxInFlight bounds the requests written and not yet answered on one
// connection: the writer waits for replies beyond it.
const maxInFlight = 4096

// yieldBelow: a writer that wakes to fewer queued requests yields once
// before taking the queue, so that other sessions can add theirs.
const yieldBelow = 64

func newBackendConn(n *node, c net.Conn) *backendConn {
	bc := &backendConn{
		n:       n,
		c:       c,
		notify:  make(chan struct{}, 1),
		awaited: make(chan struct{}, 1),
		room:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
	}
	bc.mu.p.done = wakeWaiter
	n.srv.wg.Add(2)
	go bc.writeLoop()
	go bc.readLoop()
	n.srv.m.backendConns.Inc()
	return bc
}

// wakeWaiter wakes the session goroutine waiting for r (finish, fanOut).
func wakeWaiter(r *request) { r.wg.Done() }

// signal wakes the goroutine waiting on ch, if any.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// push queues r (its envelope in r.wire); false when the connection is
// closed (r untouched).
func (bc *backendConn) push(r *request) bool {
	bc.mu.Lock()
	if bc.mu.closed {
		bc.mu.Unlock()
		return false
	}
	p := &bc.mu.p
	p.out = append(p.out, r.wire...)
	p.add(r)
	bc.mu.Unlock()
	signal(bc.notify)
	return true
}

// shutdown closes the connection once and fails what its pipeline
// holds: the requests handed to the socket as written (they may have
// run), the queued ones as unwritten.
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
		bc.mu.Lock()
		bc.mu.closed = true
		bc.mu.p.fail(err, true)
		bc.mu.Unlock()
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
	var b []byte
	for {
		select {
		case <-bc.notify:
		case <-bc.quit:
			return
		}
		// Let the sessions that are runnable now queue their requests
		// first: one write (and one read on the dataserver) for many
		// clients' requests instead of a syscall per request.
		bc.mu.Lock()
		short := bc.mu.p.queued() < yieldBelow
		bc.mu.Unlock()
		if short {
			runtime.Gosched()
		}
		if !bc.waitRoom() {
			return
		}
		bc.mu.Lock()
		bc.mu.p.recycle(b)
		b = bc.mu.p.take()
		// Handed before the write: a write that fails may have sent
		// part of them.
		bc.mu.p.handed()
		bc.mu.Unlock()
		if len(b) == 0 {
			continue
		}
		signal(bc.awaited)
		if _, err := bc.c.Write(b); err != nil {
			bc.n.srv.m.backendErrors.WithLabelValues("write").Inc()
			bc.shutdown(fmt.Errorf("%w: %s: %v", errBackendClosed, bc.n.addr, err))
			return
		}
	}
}

// waitRoom waits while maxInFlight requests await replies; false on
// shutdown.
func (bc *backendConn) waitRoom() bool {
	for {
		bc.mu.Lock()
		full := bc.mu.p.inFlight() >= maxInFlight
		bc.mu.full = full
		bc.mu.Unlock()
		if !full {
			return true
		}
		select {
		case <-bc.room:
		case <-bc.quit:
			return false
		}
	}
}

func (bc *backendConn) readLoop() {
	defer bc.n.srv.wg.Done()
	rd := resp.NewReplyReader(bc.c, 32<<10, backendLimits)
	timeout := bc.n.srv.cfg.RequestTimeout
	var deadline time.Time
	waiting := false // a request handed awaits its reply
	for {
		if !waiting {
			bc.mu.Lock()
			waiting = bc.mu.p.inFlight() > 0
			bc.mu.Unlock()
			if !waiting {
				select {
				case <-bc.awaited:
					continue
				case <-bc.quit:
					return
				}
			}
		}
		if rd.Buffered() == 0 {
			now := time.Now()
			if d := now.Add(timeout); d.Sub(deadline) > timeout/8 {
				deadline = d
				_ = bc.c.SetReadDeadline(d)
			}
		}
		raw, err := rd.ReadReply()
		if err == nil {
			bc.mu.Lock()
			if bc.mu.closed {
				bc.mu.Unlock()
				return
			}
			err = bc.mu.p.replied(raw)
			waiting = bc.mu.p.inFlight() > 0
			if bc.mu.full && bc.mu.p.inFlight() < maxInFlight {
				bc.mu.full = false
				signal(bc.room)
			}
			bc.mu.Unlock()
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				err = fmt.Errorf("%w: %s", errBackendTimeout, bc.n.addr)
				bc.n.srv.m.backendErrors.WithLabelValues("timeout").Inc()
			} else {
				err = fmt.Errorf("%w: %s: %v", errBackendClosed, bc.n.addr, err)
				bc.n.srv.m.backendErrors.WithLabelValues("read").Inc()
			}
			bc.shutdown(err)
			return
		}
		if rd.Buffered() == 0 {
			rd.Shrink(256 << 10)
		}
	}
}
