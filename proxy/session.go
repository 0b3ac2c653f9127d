package proxy

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tairkv/tair/internal/gnetx"
	"github.com/tairkv/tair/resp"
)

// session is one client connection: its area (SELECT), protocol (HELLO),
// name, auth state and transaction. Its event loop (fastpath.go) reads its
// commands and forwards the plain ones; its goroutine (slowLoop) runs
// the others, one batch at a time, while the loop waits. The two never
// touch the session at once: the loop hands a batch over only when none
// of its forwarded commands is in flight, and reads no more commands
// until the batch is done. Other sessions read only the atomics
// (CLIENT LIST).
type session struct {
	srv  *Server
	id   int64
	conn gnet.Conn
	rd   *resp.RequestReader
	out  []byte // the goroutine's output of the batch it runs
	// replyOff and skipReply: CLIENT REPLY OFF, and SKIP's next command
	// (dispatch.go mutes their replies; they take the goroutine's path).
	replyOff, skipReply bool
	// noTouch: CLIENT NO-TOUCH ON; the envelopes of the session's
	// commands carry it to the dataservers.
	noTouch bool
	// limits set by CONFIG SET on another session, applied before the
	// next parse
	limits atomic.Pointer[resp.RequestLimits]

	addr    string
	laddr   string
	created time.Time

	area    int
	hotTick int64 // counts routed commands, for hot-key sampling
	areaStr []byte
	proto   int
	authed  bool
	user    string
	quit    bool // close after the replies are written (goroutine)

	// CLIENT LIST fields, read by other sessions.
	info struct {
		name, libName, libVer atomic.Pointer[string]
		lastCmd               atomic.Pointer[string]
		lastActive            atomic.Int64 // unix nanos
		db                    atomic.Int64
		qbuf                  atomic.Int64
		omem                  atomic.Int64
		multi                 atomic.Int64
	}

	// transaction (MULTI ... EXEC)
	tx txState

	// the goroutine's request pool: reused batch after batch
	reqs        []*request
	nreq        int
	pending     []*request
	connIdx     int
	scratchOffs []int
	keyBuf      []int
	avgReply    int64 // moving average of reply sizes
	win         int   // forwarded requests in flight at most (window)

	// Owned by the event loop.
	ls        *loopState
	now       time.Time  // when the commands being handled arrived
	fifo      []*request // forwarded requests in the client's order
	head      int        // fifo[head:] awaits replies or delivery
	inflight  int        // forwarded requests not yet delivered
	delivered int        // replies delivered since the window last grew
	lout      []byte     // replies to write at the end of the round
	dirty     bool       // in ls.written
	slowBusy  bool       // the goroutine runs a batch
	stash     *slowBatch // a batch waiting for inflight to drop to 0
	overSince time.Time  // when pending output went over the limit
	closing   bool       // closed or closing: handle nothing more
	localDone bool       // tryFast answered from the hot-key cache
	work      chan *slowBatch

	closed atomic.Bool // the connection is closed (read off the loop)

	ps psClient // pub/sub subscriptions and mailbox (pubsub.go)
}

func newSession(s *Server, c gnet.Conn, ls *loopState) *session {
	ss := &session{
		srv:     s,
		id:      s.nextID.Add(1),
		conn:    c,
		ls:      ls,
		addr:    c.RemoteAddr().String(),
		laddr:   gnetx.LocalAddr(c),
		created: time.Now(),
		proto:   2,
		areaStr: []byte("0"),
	}
	ss.connIdx = int(ss.id)
	ss.win = min(16, s.cfg.MaxPipeline)
	ss.authed = !s.authRequired()
	ss.rd = resp.NewRequestReader(nil, s.requestLimits())
	ss.rd.Unauth = !ss.authed
	ss.info.lastActive.Store(time.Now().UnixNano())
	empty := ""
	ss.info.name.Store(&empty)
	ss.info.libName.Store(&empty)
	ss.info.libVer.Store(&empty)
	ss.info.lastCmd.Store(&empty)
	return ss
}

func (s *Server) requestLimits() resp.RequestLimits {
	return resp.RequestLimits{
		MaxBulkLen:      s.dyn.maxBulkLen.Load(),
		MaxMultiBulkLen: s.cfg.MaxMultiBulkLen,
		MaxInlineLen:    s.cfg.MaxInlineLen,
	}
}

// slowLoop is the session's goroutine: it runs the batches the loop
// hands over with the goroutine code (handleBatch) and posts each
// batch's output back to the loop. It ends when the connection closes.
func (ss *session) slowLoop() {
	s := ss.srv
	defer s.wg.Done()
	for b := range ss.work {
		if !ss.runBatch(b) {
			return
		}
	}
}

// runBatch runs one batch; false after a panic (the connection is
// closed: a bug must cost one connection, not the process).
func (ss *session) runBatch(b *slowBatch) (ok bool) {
	s := ss.srv
	defer func() {
		if v := recover(); v != nil {
			s.m.sessionPanics.Inc()
			s.panicked("session", v)
			s.log.Error("session panic: closing the connection", "client", ss.addr)
			_ = ss.conn.Close()
			ok = false
		}
	}()
	ss.out = ss.out[:0]
	ss.psBatchStart()
	if len(b.cmds) > 0 {
		ss.handleBatch(b.cmds, b.start)
	}
	if b.protoErr != "" && !ss.quit {
		ss.out = resp.AppendError(ss.out, b.protoErr)
		ss.quit = true
	}
	out, quit := ss.out, ss.quit
	// The loop writes out before it hands over the next batch, so the
	// buffer is free again by then.
	// (with the pub/sub messages queued meanwhile behind it)
	ss.psBatchEnd(out, func(out []byte) { ss.slowDone(out, quit) })
	if cap(ss.out) > 1<<20 {
		ss.out = nil
	}
	return true
}

// flush has the loop write the goroutine's pending output now (a batch
// whose output passed MaxOutputBuffer); it waits while the client's
// unsent output stays over the limit, up to WriteTimeout. False when
// the client is gone or does not read.
func (ss *session) flush() bool {
	s := ss.srv
	limit := s.dyn.maxOutput.Load()
	deadline := time.Now().Add(s.cfg.WriteTimeout)
	out := ss.out
	for {
		pending := make(chan int64, 1)
		if !ss.ls.post(func() {
			if ss.closing {
				pending <- -1
				return
			}
			if out != nil {
				n, _ := ss.conn.Write(out)
				s.stats.netOut.Add(int64(n))
			}
			pending <- int64(ss.conn.OutboundBuffered())
		}) {
			return false
		}
		p := <-pending
		out = nil
		if p < 0 {
			return false
		}
		if p <= limit {
			break
		}
		if time.Now().After(deadline) {
			s.log.Info("closing client that does not read its replies", "client", ss.addr, "pending", p)
			s.m.clientEvictions.Inc()
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	ss.out = ss.out[:0]
	return true
}

// checkOutput is called while replies accumulate: past MaxOutputBuffer
// the pending output is written out now (blocking, bounded by
// WriteTimeout), so a client that does not read holds at most about
// MaxOutputBuffer of replies before it is closed.
func (ss *session) checkOutput() bool {
	if int64(len(ss.out)) <= ss.srv.dyn.maxOutput.Load() {
		return true
	}
	if !ss.flush() {
		_ = ss.conn.Close()
		return false
	}
	return true
}

func (ss *session) setArea(a int) {
	ss.area = a
	ss.areaStr = strconv.AppendInt(ss.areaStr[:0], int64(a), 10)
	ss.info.db.Store(int64(a))
}
