package proxy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tairkv/tair/internal/gnetx"
	"github.com/tairkv/tair/internal/liveness"
)

// The front end: the gnet event handler (OnOpen, OnTraffic, OnClose)
// that serves client connections and the loops' own dataserver
// connections, each loop's state (loopState: its sessions, backends,
// request pool, the one flush per round), the ticks and the watchdog's
// stamp, and starting and stopping the listener.
//
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
// goroutine code (dispatch.go, retry.go, conncmds.go, multi.go, ...)
// off the loop (fastpath.go): the loop hands a batch of commands to the
// session's goroutine (runStash) once the session's forwarded commands
// are answered, stops reading the session's commands meanwhile, and
// writes the batch's output when it comes back. So a client's commands
// still run and answer in order.

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
			lb.fail(fmt.Errorf("%w: %s", errBackendTimeout, lb.n.addr), true)
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
