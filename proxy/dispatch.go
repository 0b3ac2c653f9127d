package proxy

import (
	"strings"
	"sync"
	"time"

	"github.com/tairkv/tair/hotkey"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// request is one command on its way to a dataserver (or answered here).
// Requests are pooled per session and reused batch after batch; wire and
// reply keep their capacity.
type request struct {
	ss   *session
	args [][]byte
	spec *command.Spec
	stat *cmdStat

	bucket  uint32
	group   uint32 // split parts: the bucket, or 1<<31|master index for reads
	grouped bool   // a read part over several buckets of one master
	noGroup bool   // split per bucket only
	area    int    // the session's area and protocol when it was prepared
	proto   int
	slaveOK bool // a read that may go to a slave
	write   bool
	node    *node

	wire    []byte // the envelope as sent
	sentVer uint64 // the table version the envelope carried
	reply   []byte // raw reply
	err     error  // backend failure instead of a reply
	written bool   // the request may have reached the dataserver
	wg      sync.WaitGroup

	local    bool // reply already complete (answered by the proxy)
	rejected bool // refused before running (arity, NOAUTH, unknown)
	// barrier requests run alone, after every earlier request of the
	// batch is answered (cluster-wide commands, blocking pops, EXEC).
	barrier func(r *request)

	// multi-key split: one sub-request per bucket, merged into reply
	subs  []*request
	merge mergeKind
	keyAt []uint64 // MGET: for each key, its sub-request (hi 32 bits) and index
	own   [][]byte // a sub-request's own argument list

	start time.Time

	// hot-key cache fill: a GET of a hot key, sent when the cache's
	// invalidation count was fillSeq
	fill    bool
	fillSeq uint64

	// forwarded on an event loop (loop.go)
	done   bool   // the reply is final: deliver it
	argBuf []byte // backs args (copied out of the read buffer)
}

func (r *request) complete(raw []byte) {
	r.reply = append(r.reply[:0], raw...)
	r.err = nil
	r.wg.Done()
}

func (r *request) fail(err error) {
	r.err = err
	r.wg.Done()
}

func (r *request) setError(msg string) {
	r.reply = resp.AppendError(r.reply[:0], msg)
	r.local = true
}

// newReq takes a pooled request.
func (ss *session) newReq() *request {
	if ss.nreq == len(ss.reqs) {
		ss.reqs = append(ss.reqs, &request{ss: ss})
	}
	r := ss.reqs[ss.nreq]
	ss.nreq++
	r.reset()
	return r
}

// reset clears r for reuse, keeping its buffers.
func (r *request) reset() {
	r.args, r.spec, r.stat, r.node, r.barrier = nil, nil, nil, nil, nil
	r.bucket, r.slaveOK, r.write, r.local, r.written, r.err = 0, false, false, false, false, nil
	r.rejected, r.grouped, r.noGroup, r.group = false, false, false, 0
	r.fill, r.done = false, false
	r.subs, r.merge, r.keyAt = r.subs[:0], mergeNone, r.keyAt[:0]
	r.reply = r.reply[:0]
}

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
		ss.out = append(ss.out, r.reply...)
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
	r.args = args
	r.area, r.proto = ss.area, ss.proto
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
func keysBucket(args [][]byte, keys []int, q uint32) (uint32, bool) {
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
	h := envelope.Header{Kind: kind, Area: uint16(r.area), Version: rt.t.Version, Proto: r.proto}
	return envelope.Append(b, h, r.args)
}

// finish waits for r's reply, retrying what the cluster asks to retry,
// until the retry budget is spent. Split requests finish each part and
// merge.
func (ss *session) finish(r *request) {
	if len(r.subs) > 0 {
		for _, sub := range r.subs {
			ss.finish(sub)
		}
		ss.mergeReplies(r)
		return
	}
	s := ss.srv
	var deadline time.Time
	attempt, notMaster := 0, 0
	for {
		r.wg.Wait()
		retry, wait := ss.classify(r)
		if !retry {
			return
		}
		if r.grouped && wait != retryTryAgain {
			// A read over several buckets of one node that the node
			// refused (or lost): one part per bucket from now on.
			s.stats.retries.Add(1)
			s.stats.resplits.Add(1)
			s.m.retries.WithLabelValues("resplit").Inc()
			r.err = nil
			ss.resplit(r)
			ss.finish(r)
			return
		}
		if attempt == 0 {
			deadline = time.Now().Add(s.cfg.RetryBudget)
		}
		attempt++
		// NOTMASTER is bounded by its own attempt count too (two nodes
		// that disagree must not ping-pong a request for the whole
		// budget; the retries of a failover's lost connection before
		// do not count); TRYAGAIN (a migration's short final freeze) and
		// lost or absent masters (a failover in progress) by the time
		// budget only.
		if wait == retryNotMaster {
			notMaster++
		}
		if notMaster >= s.cfg.RetryAttempts || time.Now().After(deadline) {
			ss.giveUp(r)
			return
		}
		s.stats.retries.Add(1)
		s.m.retries.WithLabelValues(wait.String()).Inc()
		ss.backoff(r, wait, attempt)
		ss.send(r)
	}
}

// idempotentWrite reports whether the write args, run twice, leaves the
// same data and gets the same reply as run once: SET with no condition
// (NX, XX, IFEQ), no GET and no version; MSET; HMSET; SETEX and PSETEX.
// (A relative expiry restarts from the second run: the key lives a
// little longer, never shorter.)
func idempotentWrite(args [][]byte) bool {
	switch {
	case resp.EqualFold(args[0], "set"):
		for _, a := range args[3:] {
			switch {
			case resp.EqualFold(a, "nx"), resp.EqualFold(a, "xx"), resp.EqualFold(a, "get"), resp.EqualFold(a, "ifeq"):
				return false
			}
		}
		return true
	case resp.EqualFold(args[0], "mset"), resp.EqualFold(args[0], "hmset"),
		resp.EqualFold(args[0], "setex"), resp.EqualFold(args[0], "psetex"):
		return true
	}
	return false
}

type retryKind int

const (
	retryNone retryKind = iota
	retryNotMaster
	retryTryAgain
	retryConn
	retryNoMaster
)

func (k retryKind) String() string {
	switch k {
	case retryNotMaster:
		return "notmaster"
	case retryTryAgain:
		return "tryagain"
	case retryConn:
		return "conn"
	case retryNoMaster:
		return "nomaster"
	}
	return "none"
}

// classify decides whether r must be sent again.
//
// The rule for lost connections: a request that never reached the
// connection's socket (dial failure, queued when it broke) is always
// retried; one that may have been written is retried only when running
// it twice has the effect and the reply of running it once: reads, and
// the writes idempotentWrite names. Any other write is never sent twice:
// the client gets -TIMEOUT and decides. NOTMASTER and TRYAGAIN replies
// mean the dataserver did not run the command, so they are always
// retried.
func (ss *session) classify(r *request) (bool, retryKind) {
	if r.err != nil {
		switch {
		case r.err == errNoTable || r.err == errNoMaster:
			return true, retryNoMaster
		case !r.written || !r.write || idempotentWrite(r.args):
			return true, retryConn
		}
		return false, retryNone
	}
	if len(r.reply) == 0 || r.reply[0] != '-' {
		return false, retryNone
	}
	refusal, ok := envelope.Decode(r.reply)
	switch {
	case !ok:
		return false, retryNone
	case refusal.Reason == envelope.TryAgain:
		return true, retryTryAgain
	case refusal.LeaseLapsed || refusal.Table < r.sentVer:
		// The table was right: the master waits for the configserver
		// to confirm it, or has yet to learn the table (it was told a
		// newer one exists). That is a failover in progress, bounded
		// by time.
		return true, retryNoMaster
	}
	return true, retryNotMaster
}

// isNotMaster reports whether a reply is a dataserver's NOTMASTER.
func isNotMaster(reply []byte) bool {
	r, ok := envelope.Decode(reply)
	return ok && r.Reason == envelope.NotMaster
}

// backoff waits before attempt n of r.
func (ss *session) backoff(r *request, k retryKind, n int) {
	s := ss.srv
	switch k {
	case retryTryAgain:
		d := time.Duration(n) * time.Millisecond
		if d > 5*time.Millisecond {
			d = 5 * time.Millisecond
		}
		time.Sleep(d)
	case retryNotMaster:
		// The table moved on (or this proxy is ahead of the dataserver):
		// fetch the configserver's table now, then retry at once when
		// it changed, after a short pause otherwise. A slave read goes
		// to the master next.
		r.slaveOK = false
		refusal, _ := envelope.Decode(r.reply)
		dsVer := refusal.Table
		before := s.r.version()
		ch := s.r.waitChange()
		s.r.refresh(s.ctx)
		if s.r.version() != before {
			return
		}
		d := time.Duration(n) * time.Millisecond
		if dsVer > before {
			d = 20 * time.Millisecond
		}
		if d > 20*time.Millisecond {
			d = 20 * time.Millisecond
		}
		select {
		case <-ch:
		case <-time.After(d):
		}
	case retryConn, retryNoMaster:
		r.slaveOK = false
		ch := s.r.waitChange()
		s.r.refresh(s.ctx)
		d := time.Duration(n) * 10 * time.Millisecond
		if d > 100*time.Millisecond {
			d = 100 * time.Millisecond
		}
		select {
		case <-ch:
		case <-time.After(d):
		}
	}
}

// giveUp turns r's last failure into the client's error.
func (ss *session) giveUp(r *request) {
	if r.err == nil {
		return // the last NOTMASTER/TRYAGAIN reply stands
	}
	switch {
	case r.err == errNoMaster:
		r.reply = resp.AppendErr(r.reply[:0], bucketNoMaster(uint32(r.bucket)))
	default:
		r.reply = resp.AppendErr(r.reply[:0], clusterDown(r.err))
	}
	r.err = nil
}

// hotRead answers a GET from the hot-key cache, or marks it to fill the
// cache when its key is hot.
func (ss *session) hotRead(c *hotkey.Cache, r *request, key []byte) bool {
	area := uint16(r.area)
	if v, ok := c.Get(area, key); ok {
		r.reply = append(r.reply[:0], v...)
		r.local = true
		return true
	}
	if ss.srv.hot.IsHot(area, key) {
		r.fill, r.fillSeq = true, c.Seq()
	}
	return false
}

// hotDone keeps the cache true to the writes through this proxy once r
// has its reply: a filling GET caches a value (a bulk string; a null
// differs between RESP2 and RESP3 and is not worth caching) unless a write
// came in between; a write drops its keys again (a read that raced it may
// have filled the old value); a write without keys, or EXEC, clears all.
func (ss *session) hotDone(c *hotkey.Cache, r *request) {
	if r.fill {
		r.fill = false
		if len(r.reply) > 1 && r.reply[0] == '$' && r.reply[1] != '-' {
			c.PutIfUnchanged(uint16(r.area), r.args[1], r.reply, r.fillSeq)
		}
		return
	}
	if r.spec == nil || r.rejected {
		return
	}
	if r.spec.Name == "exec" {
		c.Clear()
		return
	}
	if !r.spec.Has(command.Write) {
		return
	}
	var buf [8]int
	keys := r.spec.AppendKeyIndexes(buf[:0], r.args)
	if len(keys) == 0 {
		c.Clear()
		return
	}
	for _, k := range keys {
		c.Invalidate(uint16(r.area), r.args[k])
	}
}

// account finishes r's bookkeeping and turns a non-retryable backend
// failure into its error reply.
func (ss *session) account(r *request) {
	if r.err != nil {
		r.reply = resp.AppendErr(r.reply[:0], timedOut(r.err, r.write))
		r.err = nil
	}
	if c := ss.srv.hotCache; c != nil {
		ss.hotDone(c, r)
	}
	// Moving average of reply sizes (window).
	ss.avgReply += (int64(len(r.reply)) - ss.avgReply) / 8
	if r.stat != nil {
		d := time.Since(r.start)
		isErr := len(r.reply) > 0 && r.reply[0] == '-'
		r.stat.record(d, isErr, r.rejected)
		ss.srv.m.latency.Observe(d.Seconds())
		if sl := ss.srv.dyn.slowlogSlower(); sl >= 0 && d > sl {
			ss.srv.slowlog.add(ss, r.args, d)
		}
		if r.spec != nil {
			ss.info.lastCmd.Store(&r.spec.Name)
		}
	}
}

// unknownCommand is Redis's text for an unknown command.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		room := 128 - b.Len()
		if len(a) > room {
			a = a[:room]
		}
		b.WriteByte('\'')
		b.WriteString(sanitize(a))
		b.WriteString("' ")
	}
	name := args[0]
	if len(name) > 128 {
		name = name[:128]
	}
	return "ERR unknown command '" + sanitize(name) + "', with args beginning with: " + b.String()
}

func sanitize(b []byte) string {
	s := string(b)
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}

func authExempt(name string) bool {
	switch name {
	case "auth", "hello", "quit", "reset":
		return true
	}
	return false
}

// cmdEntry is a command as the proxy handles it: its spec, its handler
// when the proxy answers it, and its counters.
type cmdEntry struct {
	spec *command.Spec
	h    handler
	stat *cmdStat
}

// lookup finds a command case-insensitively with one map access; unknown
// names share one entry with a nil spec.
func (s *Server) lookup(name []byte) *cmdEntry {
	var buf [32]byte
	key := name
	if len(name) <= len(buf) {
		b := buf[:len(name)]
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		key = b
	}
	if e := (*s.cmds.Load())[string(key)]; e != nil {
		return e
	}
	spec := command.Lookup(name)
	if spec == nil {
		return s.unknown
	}
	s.cmdsMu.Lock()
	defer s.cmdsMu.Unlock()
	old := *s.cmds.Load()
	if e := old[spec.Name]; e != nil {
		return e
	}
	e := &cmdEntry{spec: spec, h: localHandlers[spec.Name], stat: s.m.stat(spec.Name)}
	next := make(map[string]*cmdEntry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[spec.Name] = e
	s.cmds.Store(&next)
	return e
}
