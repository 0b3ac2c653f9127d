package proxy

import (
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// The session goroutine's batches: each command is prepared (answered
// here, queued in MULTI, made a barrier, or routed to its bucket and
// sent at once), then the replies are awaited in order (drain) within a
// window that bounds what a client holds.

// handleBatch handles one batch of pipelined commands: each is prepared
// (answered here, or routed and sent at once); then replies are awaited
// in order and appended to the output. A barrier request first drains
// everything before it.
func (ss *session) handleBatch(cmds []resp.Command, start time.Time) {
	ss.nreq = 0
	ss.pending = ss.pending[:0]
	for i := range cmds {
		if ss.quit {
			break
		}
		r := ss.newReq()
		r.start = start
		r = ss.prepareContained(r, cmds[i].Args)
		if r.barrier != nil {
			ss.drain()
			if ss.quit {
				break
			}
			r.start = time.Now()
			r = ss.barrierContained(r)
			r.local = true
			ss.pending = append(ss.pending, r)
			ss.drain()
			start = time.Now()
			continue
		}
		ss.pending = append(ss.pending, r)
		if !r.local && len(ss.pending) >= ss.window() {
			// Bound the replies held at once: large replies shrink the
			// window, so a client that does not read holds about
			// MaxOutputBuffer, not a whole pipeline of replies.
			ss.drain()
		}
	}
	ss.drain()
	// Drop references into the client's buffer, and large buffers.
	for _, r := range ss.reqs[:ss.nreq] {
		r.args = nil
		r.own = r.own[:0]
		if cap(r.reply) > 64<<10 {
			r.reply = nil
		}
		if cap(r.wire) > 64<<10 {
			r.wire = nil
		}
	}
}

// window is how many forwarded requests a session keeps in flight: the
// whole batch for small replies, fewer as the replies it sees grow.
func (ss *session) window() int {
	avg := ss.avgReply
	if avg < 64 {
		avg = 64
	}
	w := ss.srv.dyn.maxOutput.Load() / (2 * avg)
	if w > int64(ss.win) {
		w = int64(ss.win)
	}
	if w < 1 {
		w = 1
	}
	return int(w)
}

// drain waits for every pending request in order and writes its reply.
// A full window of small replies doubles the window (slow start), up to
// MaxPipeline.
func (ss *session) drain() {
	if len(ss.pending) >= ss.win && ss.win < ss.srv.cfg.MaxPipeline {
		defer func() {
			if ss.avgReply < 4<<10 {
				ss.win = min(2*ss.win, ss.srv.cfg.MaxPipeline)
			}
		}()
	}
	for _, r := range ss.pending {
		if !r.local {
			ss.finish(r)
		}
		// account first: it turns a backend failure into the reply.
		ss.account(r)
		if !r.mute {
			ss.out = append(ss.out, r.reply...)
		}
		if !ss.checkOutput() {
			ss.quit = true
		}
	}
	ss.pending = ss.pending[:0]
}

// prepare classifies one command and either answers it, queues it (in
// MULTI), marks it a barrier, or routes and sends it.
func (ss *session) prepare(r *request, args [][]byte) {
	s := ss.srv
	s.stats.commands.Add(1)
	// CLIENT REPLY OFF mutes every reply, SKIP the next command's.
	r.mute, ss.skipReply = ss.replyOff || ss.skipReply, false
	r.args = args
	r.area, r.proto, r.noTouch = ss.area, ss.proto, ss.noTouch
	ent := s.lookup(args[0])
	spec := ent.spec
	r.spec = spec
	r.stat = ent.stat
	if spec == nil {
		r.rejected = true
		if !ss.authed {
			r.setError("NOAUTH Authentication required.")
			return
		}
		if ss.tx.active {
			ss.tx.dirty = true
		}
		r.setError(unknownCommand(args))
		return
	}
	if !ss.authed && !authExempt(spec.Name) {
		r.rejected = true
		r.setError("NOAUTH Authentication required.")
		return
	}
	if !argsFit(spec, len(args)) {
		if ss.tx.active {
			ss.tx.dirty = true
		}
		r.rejected = true
		if spec.Name == "exec" { // as Redis: a rejected EXEC aborts the transaction
			ss.tx.reset()
			ss.info.multi.Store(-1)
			r.setError("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command")
			return
		}
		r.setError("ERR wrong number of arguments for '" + spec.Name + "' command")
		return
	}
	if ss.psRefuse(r, args) { // RESP2's subscribed mode
		return
	}
	if ss.tx.active && !txControl(spec.Name) {
		ss.tx.queue(ss, r, args)
		return
	}
	if ent.h != nil {
		ent.h(ss, r)
		return
	}
	if spec.Has(command.Blocking) {
		r.barrier = ss.blockingPop
		return
	}
	ss.keyBuf = spec.AppendKeyIndexes(ss.keyBuf[:0], args)
	keys := ss.keyBuf
	if len(keys) == 0 {
		// A keyless data command (TAIR.STAT ...): any one dataserver.
		r.barrier = ss.anyNode
		return
	}
	ss.route(r, keys)
}

// argsFit reports whether n arguments suit spec: its arity, and whole
// key/value groups for commands of repeated groups (MSET).
func argsFit(spec *command.Spec, n int) bool {
	return spec.ArityOK(n) && (spec.Step <= 1 || spec.LastKey != -1 || spec.KeysFunc != nil || (n-spec.FirstKey)%spec.Step == 0)
}

// keysBucket is the bucket of the first key of args (keys: their
// indexes) and whether every key is in it.
func keysBucket(args [][]byte, keys []int, q uint32) (route.BucketID, bool) {
	b := route.BucketOf(args[keys[0]], q)
	for _, k := range keys[1:] {
		if route.BucketOf(args[k], q) != b {
			return b, false
		}
	}
	return b, true
}

// route picks the bucket of a keyed command and sends it; multi-key
// commands over several buckets are split or refused.
func (ss *session) route(r *request, keys []int) {
	rt := ss.srv.r.load()
	q := uint32(route.DefaultBuckets)
	if rt != nil {
		q = rt.t.Buckets
	}
	args := r.args
	b, same := keysBucket(args, keys, q)
	// One access in hotSample feeds the hot-key detector, weighted, so
	// its lock stays off the common path.
	if ss.hotTick++; ss.hotTick%hotSample == 0 {
		ss.srv.hot.TouchN(uint16(ss.area), args[keys[0]], hotSample)
	}
	r.bucket = b
	r.write = r.spec.Has(command.Write)
	r.slaveOK = !r.write && r.spec.Has(command.ReadOnly)
	if c := ss.srv.hotCache; c != nil {
		if r.write {
			for _, k := range keys {
				c.Invalidate(uint16(r.area), args[k])
			}
		} else if r.spec.Name == "get" && ss.hotRead(c, r, args[1]) {
			return
		}
	}
	if !same {
		if ss.gather(r, keys, q) { // gather.go: SUNION, ZINTER ... over buckets
			return
		}
		if r.spec.Has(command.MultiKey) && !r.spec.Has(command.Atomic) {
			if r.write && ss.refuseOverLimit(r, keys) {
				return
			}
			ss.split(r, keys, q)
			return
		}
		r.setError(crossSlot)
		return
	}
	ss.send(r)
}

// refuseOverLimit answers a write about to be split over buckets with
// KEYTOOLONG or VALUETOOLONG when one of its keys or values is over the
// dataservers' limits: each part would be judged alone, and the parts
// with good keys applied (Redis's MSET and DEL are all or nothing).
func (ss *session) refuseOverLimit(r *request, keys []int) bool {
	cfg := &ss.srv.cfg
	for _, k := range keys {
		if len(r.args[k]) > cfg.MaxKeySize {
			r.reply = resp.AppendErr(r.reply[:0], errs.ErrKeyTooLong)
			return true
		}
		if r.spec.Step == 2 && k+1 < len(r.args) && len(r.args[k+1]) > cfg.MaxValueSize {
			r.reply = resp.AppendErr(r.reply[:0], errs.ErrValueTooLong)
			return true
		}
	}
	return false
}

// send encodes r's envelope for the current table and queues it on its
// node's pipelined connection. Failures are left in r.err for finish.
func (ss *session) send(r *request) {
	r.wg.Add(1)
	rt := ss.srv.r.load()
	if rt == nil {
		r.fail(errNoTable)
		return
	}
	n, slave := pickNode(rt, r.bucket, r.slaveOK && ss.srv.cfg.ReadFromSlave, ss.id)
	if n == nil {
		r.fail(errNoMaster)
		return
	}
	r.node = n
	r.sentVer = rt.t.Version
	r.wire = wrap(r.wire[:0], rt, slave, r)
	bc, err := n.conn(ss.connIdx)
	if err != nil {
		r.written = false
		r.fail(err)
		return
	}
	r.written = false
	if !bc.push(r) {
		r.fail(bc.cause())
	}
}

// wrap appends r's command in its envelope for table rt: TAIR.XR when a
// slave may serve it.
func wrap(b []byte, rt *routing, slave bool, r *request) []byte {
	kind := envelope.Master
	if slave {
		kind = envelope.SlaveOK
	}
	h := envelope.Header{Kind: kind, Area: uint16(r.area), Version: rt.t.Version, Proto: r.proto, NoTouch: r.noTouch}
	if r.fill {
		// A hot-key cache fill: the master pushes the key's next change
		// (hotpush.go). Not from a slave, nor from a master whose
		// pushes would not reach this proxy: then nothing is cached.
		if !slave && r.node != nil && r.node.trackUp.Load() {
			h.Track = r.node.srv.trackID
		} else {
			r.fill = false
		}
	}
	return envelope.Append(b, h, r.args)
}
