package proxy

import (
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/resp"
)

// A session on its event loop: reading what the client sent, forwarding
// plain keyed commands of one bucket on the loop (tryFast), taking their
// replies (onReply) and writing them in the client's order (deliver,
// release), and handing everything else to the session's goroutine in
// batches (collectSlow, runStash, slowDone).

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
	ss.psDrop()
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
	if !ss.authed || ss.tx.active || ss.psRESP2() || ss.replyOff || ss.skipReply {
		return false // (muted replies: the goroutine's path, which mutes them)
	}
	ent := s.lookup(args[0])
	spec := ent.spec
	if spec == nil || spec.Has(command.Blocking) || !argsFit(spec, len(args)) {
		return false
	}
	script := ent.h != nil && isPipelinedScript(spec) // script.go
	if ent.h != nil && !script {
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
	if script {
		// A script runs on its bucket's master, and may write unless
		// it is an _RO form.
		write, slaveOK = !spec.Has(command.ReadOnly), false
	}
	n, slave := pickNode(rt, b, slaveOK && s.cfg.ReadFromSlave, ss.id)
	if n == nil || script && !n.scriptsOff.pipelined(args, ss.now) {
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
	r.area, r.proto, r.noTouch = ss.area, ss.proto, ss.noTouch
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
