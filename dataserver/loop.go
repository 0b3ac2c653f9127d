package dataserver

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/gnetx"
	"github.com/tairkv/tair/internal/liveness"
	"github.com/tairkv/tair/resp"
)

// # Connections
//
// Connections (proxies, peers, tools) are served on event loops
// (github.com/panjf2000/gnet), one per GOMAXPROCS, as the proxy's
// clients are: a goroutine per connection made every batch wait for
// Go's scheduler and its network poller, and cost a futex wake of the
// runtime's monitor thread whenever the node had gone idle in between
// (about half of a dataserver's CPU at one request per round trip).
//
// A loop takes everything a connection has pipelined as a batch. A
// batch of proxy envelopes runs on the loop (on an in-memory engine, or
// a persistent one whose writes do not wait for fsyncs: --sync none, or
// ldb's group commit, where the batch waits for one fsync after it ran
// instead of one per write): each command in order,
// writes appended to their replication streams (runBatch never waits).
// Its replies are written at once when none waits for replication or an
// fsync and no earlier batch is still waiting; otherwise the batch goes to the
// connection's writer goroutine, which releases the replies in order
// once their replication is done and hands them back to the loop to
// write, so one connection keeps many batches of synchronous writes in
// flight. Any other batch (replication, migration, admin commands, which
// may wait), and every batch while a bucket that moved away may still
// forward requests to its new master (a network round trip), runs on
// the connection's runner goroutine while the loop reads no more of that
// connection.

// maxQueued bounds the batches a connection has waiting for
// replication; past it the loop stops reading the connection.
const maxQueued = 64

// maxPendingOutput closes a connection whose peer does not read its
// replies; maxUnread one whose received requests pile up unrun.
const (
	maxPendingOutput = 256 << 20
	maxUnread        = 4 << 30 // above a migration batch of 2048 1 MiB values
)

type frontEnd struct {
	gnet.BuiltinEventEngine
	s *Server
}

// dsConn is one connection; its loop owns it except where noted.
type dsConn struct {
	s       *Server
	c       gnet.Conn
	peer    net.Addr // c's remote address (for hooks)
	rd      *resp.RequestReader
	queued  int  // batches with the writer, not yet written
	busy    bool // a batch runs on the runner goroutine
	closing bool
	out     []byte
	writer  chan *batchOut      // to the writer goroutine (started on need)
	runner  chan []resp.Command // to the runner goroutine (started on need)
	// runs is odd while a batch of the connection runs (the watchdog's
	// stamp; read by it from another goroutine).
	runs liveness.Progress
	// trackID: the connection is that tracker's sink (TAIR.TRACKING).
	trackID uint64
}

func (fe *frontEnd) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if fe.s.closing.Load() {
		return nil, gnet.Close
	}
	dc := &dsConn{s: fe.s, c: c, peer: c.RemoteAddr(), rd: resp.NewRequestReader(nil, dsRequestLimits)}
	c.SetContext(dc)
	fe.s.wd.add(dc)
	return nil, gnet.None
}

func (fe *frontEnd) OnClose(c gnet.Conn, _ error) gnet.Action {
	if dc, ok := c.Context().(*dsConn); ok {
		dc.closing = true
		fe.s.wd.remove(dc)
		if dc.trackID != 0 {
			fe.s.track.removeSink(dc.trackID, c)
		}
		if dc.writer != nil {
			close(dc.writer)
		}
		if dc.runner != nil {
			close(dc.runner)
		}
	}
	return gnet.None
}

func (fe *frontEnd) OnTraffic(c gnet.Conn) gnet.Action {
	defer fe.s.loopRecover(c)
	dc, ok := c.Context().(*dsConn)
	data, _ := c.Next(-1)
	if !ok || dc.closing {
		return gnet.None
	}
	dc.rd.Feed(data)
	if (dc.busy || dc.queued >= maxQueued) && dc.rd.Buffered() > maxUnread {
		// A peer that keeps sending while its batches wait (the loop
		// reads on, where a goroutine per connection let TCP push back).
		dc.s.log.Warn("closing a connection whose unread requests are over the limit", "peer", c.RemoteAddr().String(), "bytes", dc.rd.Buffered())
		dc.closing = true
		_ = c.Close()
		return gnet.None
	}
	dc.process()
	return gnet.None
}

// loopRecover is the loop's last resort: a panic outside a command
// (each runs under recover, contain.go) closes its connection, whose
// state is unknown, rather than the process.
func (s *Server) loopRecover(c gnet.Conn) {
	if v := recover(); v != nil {
		s.panicked("connection", v)
		if dc, ok := c.Context().(*dsConn); ok {
			dc.closing = true
		}
		_ = c.Close()
	}
}

// process runs the complete batches received, until the connection
// waits for its runner or for replication.
func (dc *dsConn) process() {
	for !dc.busy && !dc.closing && dc.queued < maxQueued {
		cmds, err := dc.rd.Parse(maxBatch)
		for len(cmds) > 0 && isTracking(cmds[0].Args[0]) && dc.queued == 0 && !dc.busy {
			dc.trackingCommand(cmds[0].Args) // tracking.go
			cmds = cmds[1:]
		}
		if len(cmds) > 0 {
			if dc.onLoop(cmds) {
				dc.runs.Enter()
				b := dc.s.runBatch(cmds, false, dc.peer, &dc.runs)
				dc.runs.Leave()
				rest := b.rest
				dc.deliver(b)
				if rest > 0 {
					// A command that must wait: it and the ones after it
					// go on off the loop, their replies after these.
					dc.runOffLoop(cmds[len(cmds)-rest:])
				}
			} else {
				dc.runOffLoop(cmds)
			}
		}
		if err != nil {
			if dc.busy {
				// The batch before the bad request runs off the loop:
				// its replies go first. Parsing stops at the same
				// error again once it is back.
				return
			}
			if !dc.s.closing.Load() {
				dc.deliver(&batchOut{out: resp.AppendError(nil, "ERR "+err.Error()), ps: []pending{{end: -1}}, quit: true, start: time.Now()})
			}
			return
		}
		if len(cmds) == 0 {
			return
		}
	}
}

// onLoop reports whether a batch may run on the loop: it cannot wait.
// Proxies' requests (envelopes) and replication batches do, unless the
// engine's writes wait for an fsync or a bucket moved away lately
// (forwarded requests wait for the new master); a replication batch
// that reaches an item that may wait stops there (runBatch's rest).
func (dc *dsConn) onLoop(cmds []resp.Command) bool {
	s := dc.s
	if s.writesWait || !loopCommands(cmds) {
		return false
	}
	until := s.forwardUntil.Load() // 0 until a bucket first moves away
	return until == 0 || time.Now().UnixNano() >= until
}

func loopCommands(cmds []resp.Command) bool {
	for _, c := range cmds {
		if !isEnvelope(c.Args[0]) && special(c.Args[0]) != "TAIR.REPL" {
			return false
		}
	}
	return true
}

// runOffLoop hands a batch that may wait to the connection's runner.
func (dc *dsConn) runOffLoop(cmds []resp.Command) {
	own := make([]resp.Command, len(cmds))
	for i := range cmds {
		own[i].Args = resp.CloneArgs(cmds[i].Args)
	}
	dc.s.m.offLoop.Inc()
	if dc.runner == nil {
		dc.runner = make(chan []resp.Command, 1)
		dc.s.connWG.Add(1)
		go dc.runLoop()
	}
	dc.busy = true
	dc.runner <- own
}

func (dc *dsConn) runLoop() {
	defer dc.s.connWG.Done()
	for cmds := range dc.runner {
		dc.runs.Enter()
		b := dc.s.runBatch(cmds, true, dc.peer, &dc.runs)
		dc.runs.Leave()
		dc.post(func() {
			dc.busy = false
			if dc.closing {
				return
			}
			dc.deliver(b)
			dc.process()
		})
	}
}

// post runs fn on the connection's loop.
func (dc *dsConn) post(fn func()) {
	_ = dc.c.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		fn()
		return nil
	}))
}

// deliver writes b's replies now when nothing is waited for, and hands
// b to the writer otherwise.
func (dc *dsConn) deliver(b *batchOut) {
	if dc.queued == 0 && !b.waits() {
		quit := b.quit
		dc.out = dc.s.appendReplies(dc.out[:0], b)
		dc.write(dc.out, quit)
		if cap(dc.out) > 1<<20 {
			dc.out = nil
		}
		return
	}
	if dc.writer == nil {
		dc.writer = make(chan *batchOut, maxQueued+1) // +1: a protocol error after a full queue
		dc.s.connWG.Add(1)
		go dc.writeLoop()
	}
	dc.queued++
	dc.writer <- b
}

// writeLoop releases the queued batches' replies in order.
func (dc *dsConn) writeLoop() {
	defer dc.s.connWG.Done()
	for b := range dc.writer {
		quit := b.quit
		out := dc.s.appendReplies(nil, b)
		dc.post(func() {
			dc.queued--
			if dc.closing {
				return
			}
			dc.write(out, quit)
			dc.process()
		})
	}
}

func (dc *dsConn) write(out []byte, quit bool) {
	if len(out) > 0 {
		_, _ = dc.c.Write(out)
	}
	if quit || dc.c.OutboundBuffered() > maxPendingOutput {
		dc.closing = true
		_ = dc.c.Close()
	}
}

// appendReplies releases b's replies in order (waiting for their
// replication) and appends them to dst; b goes back to the pool.
func (s *Server) appendReplies(dst []byte, b *batchOut) []byte {
	var syncErr error
	if b.group != nil {
		if err := b.group.WaitDurable(b.ticket); err != nil {
			syncErr = envelope.Unsure("the write-ahead log could not be synced: " + err.Error())
		}
		b.group = nil
	}
	for i := range b.ps {
		p := &b.ps[i]
		if p.end < 0 { // a bare error reply (protocol error)
			p.end = len(b.out)
		}
		if err := s.release(p); err != nil || syncErr != nil {
			if err == nil {
				err = syncErr
			}
			dst = resp.AppendErr(dst, err)
		} else {
			dst = append(dst, b.out[p.start:p.end]...)
		}
	}
	if b.client {
		s.observeClientLatency(time.Since(b.start))
	}
	if cap(b.out) <= 64<<10 && cap(b.ps) <= 4096 {
		batchPool.Put(b)
	}
	return dst
}

// startFrontEnd binds the RESP listener on event loops.
func (s *Server) startFrontEnd() error {
	e, err := gnetx.Start(&frontEnd{s: s}, s.cfg.Listen, s.cfg.EventLoops, s.log)
	if err != nil {
		return fmt.Errorf("dataserver: listen %s: %w", s.cfg.Listen, err)
	}
	s.fe = e
	s.addr = e.Addr()
	return nil
}

// stopFrontEnd closes every connection and stops the loops.
func (s *Server) stopFrontEnd() {
	if s.fe == nil {
		return
	}
	if err := s.fe.Stop(); err != nil {
		s.log.Debug("stopping the event loops", "err", err)
	}
}
