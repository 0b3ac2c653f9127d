package proxy

import (
	"errors"
	"io"
	"net"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/resp"
)

// session is one client connection: its area (SELECT), protocol (HELLO),
// name, auth state and transaction. Only its own goroutine touches it,
// except the atomics CLIENT LIST reads.
type session struct {
	srv  *Server
	id   int64
	conn net.Conn
	rd   *resp.RequestReader
	out  []byte
	// limits set by CONFIG SET on another session, applied before the
	// next read
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
	quit    bool // close after the replies are written

	writeDeadline time.Time // as last set on conn (armWriteDeadline)

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

	// request pool: reused batch after batch
	reqs        []*request
	nreq        int
	pending     []*request
	connIdx     int
	scratchOffs []int
	keyBuf      []int
	avgReply    int64 // moving average of reply sizes
	win         int   // forwarded requests in flight at most (window)
}

func newSession(s *Server, c net.Conn) *session {
	ss := &session{
		srv:     s,
		id:      s.nextID.Add(1),
		conn:    c,
		addr:    c.RemoteAddr().String(),
		laddr:   c.LocalAddr().String(),
		created: time.Now(),
		proto:   2,
		areaStr: []byte("0"),
	}
	ss.connIdx = int(ss.id)
	ss.win = min(16, s.cfg.MaxPipeline)
	ss.authed = !s.authRequired()
	ss.rd = resp.NewRequestReader(c, s.requestLimits())
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

// serve is the connection's loop: read a batch, handle it, write the
// replies; stop on a protocol error (after replying to it), QUIT, a
// write that does not go through, or the idle timeout.
func (ss *session) serve() {
	s := ss.srv
	defer s.wg.Done()
	defer s.forget(ss)
	defer ss.conn.Close()
	defer func() {
		// A bug must cost one connection, not the process.
		if v := recover(); v != nil {
			s.log.Error("session panic", "client", ss.addr, "panic", v, "stack", string(debug.Stack()))
			s.m.panics.Inc()
		}
	}()
	maxBatch := s.cfg.MaxPipeline
	for {
		if t := s.dyn.idleTimeout(); t > 0 {
			_ = ss.conn.SetReadDeadline(time.Now().Add(t))
		}
		if l := ss.limits.Swap(nil); l != nil {
			ss.rd.SetLimits(*l)
		}
		before := ss.rd.BytesRead()
		cmds, err := ss.rd.ReadBatch(maxBatch)
		s.stats.netIn.Add(ss.rd.BytesRead() - before)
		if len(cmds) > 0 {
			now := time.Now()
			ss.info.lastActive.Store(now.UnixNano())
			ss.handleBatch(cmds, now)
		}
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				ss.out = resp.AppendError(ss.out, "ERR "+pe.Error())
				s.log.Debug("client protocol error", "client", ss.addr, "err", err)
				ss.quit = true
			} else if len(cmds) == 0 {
				if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					s.log.Debug("client read failed", "client", ss.addr, "err", err)
				}
				return
			}
		}
		if len(ss.out) > 0 {
			if !ss.flush() {
				return
			}
		}
		if ss.quit {
			return
		}
		ss.info.qbuf.Store(int64(ss.rd.BufferSize()))
	}
}

// flush writes the pending output; false when the client is gone or does
// not read within WriteTimeout.
func (ss *session) flush() bool {
	s := ss.srv
	ss.info.omem.Store(int64(len(ss.out)))
	ss.armWriteDeadline()
	n, err := ss.conn.Write(ss.out)
	s.stats.netOut.Add(int64(n))
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			s.log.Info("closing client that does not read its replies", "client", ss.addr, "pending", len(ss.out)-n)
			s.m.clientEvictions.Inc()
		}
		return false
	}
	if cap(ss.out) > 1<<20 {
		ss.out = nil
	} else {
		ss.out = ss.out[:0]
	}
	ss.info.omem.Store(0)
	return true
}

// armWriteDeadline moves the connection's write deadline to about
// WriteTimeout from now. Resetting it costs a runtime timer update per
// write (3% of the proxy's CPU at one request per round trip), so it
// moves only when it has fallen more than an eighth of WriteTimeout
// behind: a client that stops reading is cut off after 7/8 of
// WriteTimeout at the earliest.
func (ss *session) armWriteDeadline() {
	wt := ss.srv.cfg.WriteTimeout
	d := time.Now().Add(wt)
	if d.Sub(ss.writeDeadline) > wt/8 {
		ss.writeDeadline = d
		_ = ss.conn.SetWriteDeadline(d)
	}
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
