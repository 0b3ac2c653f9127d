package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/gnetx"
	"github.com/tairkv/tair/internal/liveness"
	"github.com/tairkv/tair/resp"
)

// The client side runs on event loops (github.com/panjf2000/gnet), as
// twemproxy's does, because a goroutine per client connection makes
// every request wait for Go's scheduler several times: a goroutine
// woken by the network poller waits until its P has run everything
// runnable, and a request crossed four of them (client, backend writer,
// dataserver, backend reader). Here one loop goroutine reads a client,
// forwards its commands on the loop's own pipelined dataserver
// connections, reads the replies and writes them back, with no hand-off.
//
// Only plain keyed commands of one bucket take that fast path
// (tryFast). Everything else, and every retry, runs the session's
// goroutine code (dispatch.go, local.go, multi.go, ...) off the loop:
// the loop hands a batch of commands to the session's goroutine
// (runSlow) once the session's forwarded commands are answered, stops
// reading the session's commands meanwhile, and writes the batch's
// output when it comes back. So a client's commands still run and
// answer in order.

// frontEnd is the gnet event handler of a Server.
type frontEnd struct {
	gnet.BuiltinEventEngine
	s     *Server
	eng   atomic.Pointer[gnetx.Engine]
	loops sync.Map // gnet.EventLoop -> *loopState
}

// loopState is what one event loop owns; only that loop touches it.
type loopState struct {
	fe        *frontEnd
	el        gnet.EventLoop
	backends  map[*node]*loopBackend
	dialFail  map[*node]time.Time
	sessions  map[*session]struct{}
	dirty     []*loopBackend // backends with requests to write
	written   []*session     // sessions with replies to write
	flushing  bool           // a flush task is queued
	flushTask gnet.Runnable  // runs flush (built once: one per round)
	free      []*request
	// runs is odd while the loop runs an event or a task (the
	// watchdog's stamp, read off the loop; contain.go).
	runs liveness.Progress
}

// loopOf returns the state of c's event loop.
func (fe *frontEnd) loopOf(c gnet.Conn) *loopState {
	el := c.EventLoop()
	if v, ok := fe.loops.Load(el); ok {
		return v.(*loopState)
	}
	ls := &loopState{
		fe: fe, el: el,
		backends: map[*node]*loopBackend{},
		dialFail: map[*node]time.Time{},
		sessions: map[*session]struct{}{},
	}
	v, _ := fe.loops.LoadOrStore(el, ls)
	return v.(*loopState)
}

func (fe *frontEnd) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if lb, ok := c.Context().(*loopBackend); ok {
		lb.opened(c)
		return nil, gnet.None
	}
	s := fe.s
	s.stats.connections.Add(1)
	if s.closing.Load() {
		return nil, gnet.Close
	}
	if s.clients.Add(1) > s.dyn.maxClients.Load() {
		s.clients.Add(-1)
		s.stats.rejected.Add(1)
		return []byte("-ERR max number of clients reached\r\n"), gnet.Close
	}
	ls := fe.loopOf(c)
	ss := newSession(s, c, ls)
	c.SetContext(ss)
	ls.sessions[ss] = struct{}{}
	s.sessMu.Lock()
	s.sessions[ss.id] = ss
	s.sessMu.Unlock()
	s.m.clients.Inc()
	return nil, gnet.None
}

func (fe *frontEnd) OnClose(c gnet.Conn, err error) gnet.Action {
	switch x := c.Context().(type) {
	case *session:
		x.closedByLoop()
	case *loopBackend:
		x.closed(err)
	}
	return gnet.None
}

func (fe *frontEnd) OnTraffic(c gnet.Conn) gnet.Action {
	switch x := c.Context().(type) {
	case *session:
		x.ls.runs.Enter()
		defer fe.trafficDone(c, x.ls)
		x.onTraffic()
	case *loopBackend:
		x.ls.runs.Enter()
		defer fe.trafficDone(c, x.ls)
		x.onTraffic()
	default:
		_, _ = c.Discard(-1)
	}
	return gnet.None
}

// trafficDone ends an event: the loop's stamp moves on, and a panic
// outside a command's fast path (contained itself) closes the
// connection, whose state is unknown; the loop serves on.
func (fe *frontEnd) trafficDone(c gnet.Conn, ls *loopState) {
	ls.runs.Leave()
	if v := recover(); v != nil {
		fe.s.panicked("connection", v)
		if ss, ok := c.Context().(*session); ok {
			ss.closing = true
		}
		_ = c.Close()
	}
}

// post runs fn on the loop; false once the engine is shutting down.
func (ls *loopState) post(fn func()) bool {
	err := ls.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		ls.runTask(fn)
		return nil
	}))
	return err == nil
}

// runTask runs fn on the loop, stamped for the watchdog; a panic is
// logged, counted and dropped, and the loop serves on.
func (ls *loopState) runTask(fn func()) {
	ls.runs.Enter()
	defer func() {
		ls.runs.Leave()
		if v := recover(); v != nil {
			ls.fe.s.panicked("loop task", v)
		}
	}()
	fn()
}

// scheduleFlush writes the queued requests and replies once the loop
// has handled every event of this round: one write per connection for
// all the clients served in the round.
func (ls *loopState) scheduleFlush() {
	if ls.flushing {
		return
	}
	ls.flushing = true
	if ls.flushTask == nil {
		ls.flushTask = gnet.RunnableFunc(func(context.Context) error {
			ls.runTask(ls.flush)
			return nil
		})
	}
	if ls.el.Execute(context.Background(), ls.flushTask) != nil {
		ls.flushing = false
	}
}

func (ls *loopState) flush() {
	ls.flushing = false
	for i, lb := range ls.dirty {
		lb.dirty = false
		lb.write()
		ls.dirty[i] = nil
	}
	ls.dirty = ls.dirty[:0]
	ls.flushSessions()
}

func (ls *loopState) flushSessions() {
	for i, ss := range ls.written {
		ss.dirty = false
		if len(ss.lout) > 0 {
			ss.writeClient(ss.lout)
			ss.lout = ss.lout[:0]
		}
		ls.written[i] = nil
	}
	ls.written = ls.written[:0]
}

// get takes a pooled request.
func (ls *loopState) get(ss *session) *request {
	var r *request
	if n := len(ls.free); n > 0 {
		r = ls.free[n-1]
		ls.free = ls.free[:n-1]
	} else {
		r = &request{}
	}
	r.reset()
	r.ss = ss
	return r
}

func (ls *loopState) put(r *request) {
	r.ss, r.args = nil, nil
	if cap(r.reply) > 64<<10 {
		r.reply = nil
	}
	if cap(r.argBuf) > 64<<10 {
		r.argBuf = nil
	}
	if len(ls.free) < 4096 {
		ls.free = append(ls.free, r)
	}
}

// tick runs every tickEvery on each loop: idle clients, clients that do
// not read their replies, dataservers that do not answer.
func (ls *loopState) tick() {
	s := ls.fe.s
	now := time.Now()
	idle := s.dyn.idleTimeout()
	for ss := range ls.sessions {
		if ss.closing {
			continue
		}
		if !ss.overSince.IsZero() {
			if int64(ss.conn.OutboundBuffered()) <= s.dyn.maxOutput.Load() {
				ss.overSince = time.Time{}
				ss.process()
			} else if now.Sub(ss.overSince) > s.cfg.WriteTimeout {
				s.log.Info("closing client that does not read its replies", "client", ss.addr, "pending", ss.conn.OutboundBuffered())
				s.m.clientEvictions.Inc()
				ss.close()
			}
			continue
		}
		if idle > 0 && ss.inflight == 0 && !ss.slowBusy &&
			now.Sub(time.Unix(0, ss.info.lastActive.Load())) > idle {
			ss.close()
		}
	}
	for _, lb := range ls.backends {
		if lb.head < len(lb.flight) && now.Sub(lb.flight[lb.head].start) > s.cfg.RequestTimeout {
			s.m.backendErrors.WithLabelValues("timeout").Inc()
			lb.fail(fmt.Errorf("%w: %s", errBackendTimout, lb.n.addr), true)
		}
	}
	ls.flushSessions()
}

const tickEvery = 50 * time.Millisecond

func (fe *frontEnd) tickLoop() {
	defer fe.s.wg.Done()
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	var seen liveness.Stalls[*loopState]
	for {
		select {
		case <-fe.s.ctx.Done():
			return
		case now := <-t.C:
			fe.checkStalls(now, &seen)
			fe.loops.Range(func(_, v any) bool {
				ls := v.(*loopState)
				ls.post(ls.tick)
				return true
			})
		}
	}
}

// --- client side ---

// onTraffic takes what the client sent and handles what it can.
func (ss *session) onTraffic() {
	data, _ := ss.conn.Next(-1)
	if len(data) == 0 || ss.closing {
		return
	}
	s := ss.srv
	s.stats.netIn.Add(int64(len(data)))
	ss.rd.Feed(data)
	ss.now = time.Now()
	ss.info.lastActive.Store(ss.now.UnixNano())
	if int64(ss.rd.Buffered()) > 2*s.dyn.maxBulkLen.Load()+(1<<20) {
		// Commands piled up behind a slow one (a blocking pop, a client
		// that does not read): Redis's client-query-buffer-limit.
		s.log.Info("closing client whose query buffer is over the limit", "client", ss.addr, "bytes", ss.rd.Buffered())
		ss.close()
		return
	}
	ss.process()
	ss.info.qbuf.Store(int64(ss.rd.BufferSize()))
}

// process handles the commands received so far: forwards plain keyed
// ones on the loop, hands the rest to the session goroutine in a batch,
// and stops while a batch runs, while its output is over the limit or
// its forwarded commands fill the window.
func (ss *session) process() {
	for !ss.slowBusy && !ss.closing && ss.stash == nil && ss.overSince.IsZero() {
		if ss.inflight >= ss.window() {
			return // deliver resumes
		}
		if l := ss.limits.Swap(nil); l != nil {
			ss.rd.SetLimits(*l)
		}
		cmds, err := ss.rd.Parse(1)
		if len(cmds) == 1 {
			if ss.tryFastContained(cmds[0].Args) {
				if ss.localDone {
					// Answered from the hot-key cache: out at the end of
					// the round, behind what came before it.
					ss.localDone = false
					ss.release()
					ss.ls.scheduleFlush()
				}
				continue
			}
			ss.collectSlow(cmds[0].Args)
			return
		}
		if err != nil {
			ss.protoError(err)
		}
		return
	}
}

// slowBatch is commands for the session goroutine, copied out of the
// read buffer.
type slowBatch struct {
	cmds     []resp.Command
	protoErr string
	start    time.Time
}

func (b *slowBatch) add(args [][]byte) {
	b.cmds = append(b.cmds, resp.Command{Args: resp.CloneArgs(args)})
}

// collectSlow starts a batch with args and the commands received after
// it, and runs it once the commands before it are answered.
func (ss *session) collectSlow(args [][]byte) {
	b := &slowBatch{start: ss.now}
	b.add(args)
	for len(b.cmds) < ss.srv.cfg.MaxPipeline {
		cmds, err := ss.rd.Parse(1)
		if len(cmds) == 1 {
			b.add(cmds[0].Args)
			continue
		}
		if err != nil {
			b.protoErr = "ERR " + err.Error()
		}
		break
	}
	ss.stash = b
	ss.runStash()
}

// protoError answers a malformed request (after the replies before it)
// and closes the connection, as Redis does.
func (ss *session) protoError(err error) {
	ss.stash = &slowBatch{protoErr: "ERR " + err.Error(), start: ss.now}
	ss.srv.log.Debug("client protocol error", "client", ss.addr, "err", err)
	ss.runStash()
}

// runStash hands the stashed batch to the session goroutine once no
// forwarded command of the session is in flight.
func (ss *session) runStash() {
	if ss.stash == nil || ss.inflight > 0 || ss.slowBusy || ss.closing {
		return
	}
	b := ss.stash
	ss.stash = nil
	ss.slowBusy = true
	ss.srv.stats.batches.Add(1)
	if ss.work == nil {
		ss.work = make(chan *slowBatch, 1)
		ss.srv.wg.Add(1)
		go ss.slowLoop()
	}
	ss.work <- b
}

// slowDone runs on the loop when the goroutine finished a batch.
func (ss *session) slowDone(out []byte, quit bool) {
	if ss.closing {
		return
	}
	if len(out) > 0 {
		ss.writeClient(out)
	}
	ss.slowBusy = false
	if quit {
		ss.close()
		return
	}
	ss.process()
	ss.ls.flushSessions()
}

// writeClient writes b to the client now (gnet keeps what the socket
// does not take) and notes when the pending output goes over the limit.
func (ss *session) writeClient(b []byte) {
	n, _ := ss.conn.Write(b)
	ss.srv.stats.netOut.Add(int64(n))
	pending := int64(ss.conn.OutboundBuffered())
	ss.info.omem.Store(pending)
	if pending > ss.srv.dyn.maxOutput.Load() && ss.overSince.IsZero() {
		ss.overSince = time.Now()
	}
}

// close closes the client connection (OnClose follows).
func (ss *session) close() {
	if !ss.closing {
		ss.closing = true
		_ = ss.conn.Close()
	}
}

// closedByLoop is OnClose of the client connection.
func (ss *session) closedByLoop() {
	ss.closing = true
	ss.closed.Store(true)
	delete(ss.ls.sessions, ss)
	if ss.work != nil {
		close(ss.work)
	}
	ss.srv.forget(ss)
	// Forwarded requests still in flight are released as they complete.
	ss.releaseDone()
}

// tryFast forwards args on the loop when nothing about it needs the
// session goroutine: an authenticated client outside MULTI, a keyed
// data command of the right arity whose keys are all in one bucket, a
// table with a master for it. False leaves the command to the
// goroutine, which also answers every error.
func (ss *session) tryFast(args [][]byte) bool {
	s := ss.srv
	if !ss.authed || ss.tx.active {
		return false
	}
	ent := s.lookup(args[0])
	spec := ent.spec
	if spec == nil || ent.h != nil || spec.Has(command.Blocking) || !argsFit(spec, len(args)) {
		return false
	}
	rt := s.r.load()
	if rt == nil {
		return false
	}
	ss.keyBuf = spec.AppendKeyIndexes(ss.keyBuf[:0], args)
	keys := ss.keyBuf
	if len(keys) == 0 {
		return false
	}
	b, same := keysBucket(args, keys, rt.t.Buckets)
	if !same {
		return false
	}
	write := spec.Has(command.Write)
	slaveOK := !write && spec.Has(command.ReadOnly)
	n, slave := pickNode(rt, b, slaveOK && s.cfg.ReadFromSlave, ss.id)
	if n == nil {
		return false
	}
	lb := ss.ls.backend(n)
	if lb == nil {
		return false
	}
	s.stats.commands.Add(1)
	s.stats.loopFwd.Add(1)
	if ss.hotTick++; ss.hotTick%hotSample == 0 {
		s.hot.TouchN(uint16(ss.area), args[keys[0]], hotSample)
	}
	r := ss.ls.get(ss)
	r.copyArgs(args)
	r.spec, r.stat = spec, ent.stat
	r.bucket, r.write, r.slaveOK = b, write, slaveOK
	r.area, r.proto = ss.area, ss.proto
	r.start = ss.now
	ss.fifo = append(ss.fifo, r)
	ss.inflight++
	if c := s.hotCache; c != nil {
		// As route does: a write drops its keys from the cache (account
		// drops them again once answered), a GET of a cached hot key is
		// answered here, one of an uncached hot key fills the cache.
		if write {
			for _, k := range keys {
				c.Invalidate(uint16(r.area), r.args[k])
			}
		} else if spec.Name == "get" && ss.hotRead(c, r, r.args[1]) {
			r.done = true
			ss.localDone = true
			return true
		}
	}
	r.node, r.sentVer = n, rt.t.Version
	r.written = true // on a loop connection from now on
	lb.send(r, rt, slave)
	return true
}

// copyArgs keeps a copy of args in r (the read buffer is reused).
func (r *request) copyArgs(args [][]byte) {
	r.argBuf, r.own = resp.CopyArgs(r.argBuf, r.own, args)
	r.args = r.own
}

// onReply takes a forwarded request's reply (or failure) on the loop.
func (ss *session) onReply(r *request) {
	if ss.closing {
		r.done = true
		ss.releaseDone()
		return
	}
	if retry, _ := ss.classify(r); retry {
		// Retries wait and refresh the table: off the loop. The request
		// keeps its place in the client's order.
		ss.srv.wg.Add(1)
		go ss.retryOffLoop(r)
		return
	}
	r.done = true
	ss.deliver()
}

func (ss *session) retryOffLoop(r *request) {
	defer ss.srv.wg.Done()
	ss.finish(r)
	// A loop that is shutting down runs nothing more (the session closes).
	ss.ls.post(func() {
		r.done = true
		if ss.closing {
			ss.releaseDone()
			return
		}
		ss.deliver()
		ss.ls.flushSessions()
	})
}

// deliver appends the replies now complete at the head of the client's
// order to its output, and resumes reading its commands.
func (ss *session) deliver() {
	ss.release()
	if ss.inflight == 0 && ss.stash != nil {
		// The batch waits for what came before it: write that first.
		ss.ls.flushSessions()
		ss.runStash()
		return
	}
	ss.process()
}

// release moves the replies complete at the head of the client's order
// to its output.
func (ss *session) release() {
	for ss.head < len(ss.fifo) && ss.fifo[ss.head].done {
		r := ss.fifo[ss.head]
		ss.fifo[ss.head] = nil
		ss.head++
		ss.inflight--
		ss.account(r)
		ss.lout = append(ss.lout, r.reply...)
		ss.ls.put(r)
		if ss.delivered++; ss.delivered >= ss.win && ss.win < ss.srv.cfg.MaxPipeline {
			ss.delivered = 0
			if ss.avgReply < 4<<10 {
				ss.win = min(2*ss.win, ss.srv.cfg.MaxPipeline)
			}
		}
	}
	if ss.head == len(ss.fifo) {
		ss.fifo, ss.head = ss.fifo[:0], 0
	}
	if len(ss.lout) > 0 && !ss.dirty {
		ss.dirty = true
		ss.ls.written = append(ss.ls.written, ss)
	}
}

// releaseDone returns the completed requests of a closed session.
func (ss *session) releaseDone() {
	for ss.head < len(ss.fifo) && ss.fifo[ss.head].done {
		ss.ls.put(ss.fifo[ss.head])
		ss.fifo[ss.head] = nil
		ss.head++
		ss.inflight--
	}
}

// --- dataserver side ---

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

// --- engine ---

// startFrontEnd binds the client listener on event loops.
func (s *Server) startFrontEnd() error {
	fe := &frontEnd{s: s}
	s.fe = fe
	e, err := gnetx.Start(fe, s.cfg.Listen, s.cfg.EventLoops, s.log)
	if err != nil {
		s.fe = nil
		return fmt.Errorf("proxy: listen %s: %w", s.cfg.Listen, err)
	}
	fe.eng.Store(e)
	s.wg.Add(1)
	go fe.tickLoop()
	return nil
}

// stopFrontEnd closes every client connection and stops the loops.
func (s *Server) stopFrontEnd() {
	if s.fe == nil {
		return
	}
	if e := s.fe.eng.Load(); e != nil {
		_ = e.Stop()
	}
}
