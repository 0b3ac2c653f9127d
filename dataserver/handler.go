package dataserver

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/glob"
	"github.com/tairkv/tair/internal/liveness"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// batchOut is one batch's replies on their way to the writer.
type batchOut struct {
	out   []byte
	ps    []pending
	quit  bool
	start time.Time // when the batch was read (client latency, for migrations' pacing)
	// client: a batch of proxy requests (what clientLatency measures;
	// not replication or migration batches, nor admin commands).
	client bool
	// rest: the batch stopped short of its last rest commands, the first
	// of which must run off the loop (0: it ran whole).
	rest int
	// group and ticket: the engine's writes committed by the end of the
	// batch (its own and others') were not all durable then: its replies
	// wait for group.WaitDurable(ticket), so that no reply tells of a
	// write, or shows data, that a kill -9 could still take back.
	group  engines.GroupCommitter
	ticket uint64
}

// dsRequestLimits: dataservers take what proxies and peers send
// (replication and migration batches can be large), so the limits only
// guard against nonsense headers.
var dsRequestLimits = resp.RequestLimits{MaxBulkLen: 1 << 34, MaxMultiBulkLen: 1<<31 - 1, MaxInlineLen: 64 << 10}

// maxBatch bounds the commands run before their replies are handed to
// the writer.
const maxBatch = 4096

// batchPool recycles batches (their reply buffers and pending slices).
var batchPool = sync.Pool{New: func() any { return new(batchOut) }}

// isEnvelope reports whether a command is a proxy's TAIR.X, TAIR.XR or
// TAIR.XF.
func isEnvelope(name []byte) bool {
	_, ok := envelope.KindOf(name)
	return ok
}

// runBatch runs a pipeline's commands in order. Unless owned, the
// commands' arguments point into the connection's read buffer, valid
// until the next read: envelopes (the proxies' traffic) run on them as
// they are, since exec and the engines copy whatever they keep; every
// other command (replication, migration, admin) runs on its own copy,
// so that code which keeps a slice of its arguments stays correct. peer
// is the connection's remote address (for hooks; may be nil). pr, the
// connection's watchdog stamp (odd while the batch runs), moves on with
// each command run.
func (s *Server) runBatch(cmds []resp.Command, owned bool, peer net.Addr, pr *liveness.Progress) *batchOut {
	b := batchPool.Get().(*batchOut)
	if cap(b.ps) >= len(cmds) {
		b.ps = b.ps[:len(cmds)]
		for i := range b.ps {
			// Keep each reply's waiter slice (one allocation less per
			// replicated write), dropping what it pointed to.
			w := b.ps[i].waits
			clear(w)
			b.ps[i] = pending{waits: w[:0]}
		}
	} else {
		b.ps = make([]pending, len(cmds))
	}
	b.out, b.quit, b.start, b.rest = b.out[:0], false, time.Now(), 0
	b.group, b.ticket = nil, 0
	b.client = len(cmds) > 0 && isEnvelope(cmds[0].Args[0])
	if s.closing.Load() {
		// Not run: NOTMASTER makes proxies retry elsewhere once the
		// table names another master.
		b.out = resp.AppendErr(nil, (&envelope.Refusal{Reason: envelope.NotMaster, Table: s.TableVersion(), Note: "dataserver stopping"}).Err())
		b.ps = []pending{{end: len(b.out)}}
		b.quit = true
		return b
	}
	for i, c := range cmds {
		args := c.Args
		if !owned && !isEnvelope(args[0]) {
			// On the loop, args live in the connection's read buffer.
			// A replication batch is applied from there (the engine
			// copies what it keeps); other commands keep their own copy.
			if special(args[0]) == "TAIR.REPL" {
				b.ps[i].onLoop = true
			} else {
				args = resp.CloneArgs(args)
			}
		}
		b.ps[i].start = len(b.out)
		b.out = s.handleContained(b.out, args, &b.ps[i], peer)
		if b.ps[i].bailed {
			b.out, b.ps, b.rest = b.out[:b.ps[i].start], b.ps[:i], len(cmds)-i
			break
		}
		b.ps[i].end = len(b.out)
		pr.Step()
		if s.isQuit(args) {
			b.ps = b.ps[:i+1]
			b.quit = true
			break
		}
	}
	s.m.requests.Add(float64(len(b.ps)))
	if g := s.durable; g != nil {
		if t := g.CommitTicket(); !g.Durable(t) {
			b.group, b.ticket = g, t
		}
	}
	return b
}

// waits reports whether any reply of b waits for replication or for an
// fsync.
func (b *batchOut) waits() bool {
	if b.group != nil && !b.group.Durable(b.ticket) {
		return true
	}
	for i := range b.ps {
		if len(b.ps[i].waits) > 0 || pushesPending(b.ps[i].pushed) {
			return true
		}
	}
	return false
}

func (s *Server) isQuit(args [][]byte) bool {
	return len(args) == 1 && strings.EqualFold(string(args[0]), "quit")
}

func upper(b []byte) string {
	return strings.ToUpper(string(b))
}

// specials are the commands the dataserver answers itself.
var specials = []string{"TAIR.REPLHELLO", "TAIR.REPL", "TAIR.TABLE", "TAIR.RESYNC", "TAIR.REPAIR", "TAIR.MIGSUM", "TAIR.MIGSNAP", "TAIR.MIGHELD",
	"PING", "ECHO", "QUIT", "DBSIZE", "SCANBUCKET", "FLUSHDB", "FLUSHALL", "MULTIEXEC", "TAIR.KEYVER", "NODESTATS", "TAIR.SCRIPT",
	"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO"}

// special returns the upper-case name of b when it is one of specials,
// else "" (without allocating: it runs for every command).
func special(b []byte) string {
	if len(b) < 4 || len(b) > 14 {
		return ""
	}
	for _, s := range specials {
		if len(s) == len(b) && equalFold(b, s) {
			return s
		}
	}
	return ""
}

// equalFold compares b with the upper-case ASCII s, ignoring case.
func equalFold(b []byte, s string) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// handle runs one command and appends its reply to out. What it serves
// from this node's data runs inside the hook chain (hooks.go).
func (s *Server) handle(out []byte, args [][]byte, p *pending, peer net.Addr) []byte {
	if len(args) == 0 {
		return resp.AppendError(out, "ERR empty command")
	}
	env := envelope.Header{Proto: 2}
	name := special(args[0])
	enveloped := false
	switch {
	case isEnvelope(args[0]):
		enveloped = true
		h, cmd, err := envelope.Parse(args)
		if err != nil {
			return resp.AppendError(out, err.Error())
		}
		env, args = h, cmd
		// The node's own commands (TAIR.REPL ...) never come enveloped:
		// inside an envelope they are unknown commands.
		if name = special(args[0]); strings.HasPrefix(name, "TAIR.") && name != "TAIR.KEYVER" {
			name = ""
		}
		if env.Version > s.TableVersion() {
			s.kickHeartbeat()
		}
	case name == "TAIR.REPLHELLO":
		return s.replHello(out, args)
	case name == "TAIR.REPL":
		return s.replApply(out, args, p)
	case name == "TAIR.TABLE":
		return s.tableReply(out)
	case name == "TAIR.RESYNC":
		return s.resyncRequest(out, args)
	case name == "TAIR.REPAIR":
		return s.repairRequest(out, args)
	case name == "TAIR.MIGSUM":
		return s.migSumRequest(out, args)
	case name == "TAIR.MIGSNAP":
		return s.migSnapRequest(out, args)
	case name == "TAIR.MIGHELD":
		return s.migHeldRequest(out, args)
	case name == "TAIR.SCRIPT":
		return s.scriptVerb(out, args, p, peer)
	}
	switch name {
	case "PING":
		if len(args) > 1 {
			return resp.AppendBulk(out, args[1])
		}
		return resp.AppendStatus(out, "PONG")
	case "ECHO":
		if len(args) != 2 {
			return resp.AppendError(out, "ERR wrong number of arguments for 'echo' command")
		}
		return resp.AppendBulk(out, args[1])
	case "QUIT":
		return resp.AppendOK(out)
	case "DBSIZE":
		r := hookRequest{area: env.Area, cmd: "dbsize", args: args, peer: peer}
		return s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte { return s.dbsize(out, env) })
	case "SCANBUCKET":
		r := hookRequest{area: env.Area, cmd: "scanbucket", args: args, peer: peer}
		return s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte { return s.scanBucket(out, env, args) })
	case "FLUSHDB", "FLUSHALL":
		cmd := "flushdb"
		if name == "FLUSHALL" {
			cmd = "flushall"
		}
		r := hookRequest{area: env.Area, cmd: cmd, write: true, args: args, peer: peer}
		out = s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte { return s.flush(out, env, name == "FLUSHALL") })
		if name == "FLUSHALL" {
			p.pushed = appendPush(p.pushed, s.track.allChanged())
		} else {
			p.pushed = appendPush(p.pushed, s.track.areaChanged(env.Area))
		}
		return out
	case "MULTIEXEC":
		return s.multiExec(out, env, args, p, peer, nil)
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO":
		if enveloped { // a proxy's pipelined script (script.go)
			return s.evalPipelined(out, env, name, args, p, peer)
		}
	case "NODESTATS":
		return s.nodeStats(out, args) // nodestats.go: what a proxy's INFO sums
	case "TAIR.KEYVER":
		var key []byte
		if len(args) > 1 {
			key = args[1]
		}
		r := hookRequest{area: env.Area, cmd: "tair.keyver", key: key, args: args, peer: peer}
		return s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte { return s.keyVer(out, env, args) })
	}

	spec := command.Lookup(args[0])
	x := s.x.Load()
	if spec == nil || !spec.ArityOK(len(args)) {
		// Exec answers with the error.
		r := hookRequest{area: env.Area, cmd: "unknown", args: args, peer: peer}
		if spec != nil {
			r.cmd, r.write = spec.Name, spec.Has(command.Write)
		}
		return s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte {
			out, _ = x.Exec(env.Area, env.Proto, false, args, out)
			return out
		})
	}
	var keyBuf [8]int
	keys := spec.AppendKeyIndexes(keyBuf[:0], args)
	if len(keys) == 0 {
		// Keyless commands (TAIR.STAT, TAIR.DELALL ...) run on this
		// node's data alone (the proxy broadcasts those that need every
		// node).
		r := hookRequest{area: env.Area, cmd: spec.Name, write: spec.Has(command.Write), args: args, peer: peer}
		out = s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte {
			out, _ = x.Exec(env.Area, env.Proto, false, args, out)
			return out
		})
		if r.write {
			p.pushed = appendPush(p.pushed, s.track.areaChanged(env.Area))
		}
		return out
	}
	write := spec.Has(command.Write)
	rt := s.rt.Load()
	if rt == nil {
		return resp.AppendErr(out, envelope.NotMasterOf(route.BucketOf(args[keys[0]], route.DefaultBuckets), 0).Err())
	}
	t := rt.t
	b := t.Bucket(args[keys[0]])
	for _, i := range keys {
		if len(args[i]) > s.cfg.MaxKeySize {
			return resp.AppendErr(out, errs.ErrKeyTooLong)
		}
		bi := t.Bucket(args[i])
		if bi == b {
			continue
		}
		if write {
			return resp.AppendError(out, "CROSSSLOT Keys in request don't hash to the same slot")
		}
		// A multi-bucket read: every bucket must be served here.
		if err := s.checkOwner(t, bi, false, env); err != nil {
			return resp.AppendErr(out, err)
		}
	}
	if err := s.checkOwner(t, b, write, env); err != nil {
		if env.Kind != envelope.Forwarded && errs.CodeOf(err) == errs.WriteNotOnMaster {
			if to := s.forwardTarget(t, b); to != "" {
				return s.forward(out, to, b, env, args)
			}
		}
		return resp.AppendErr(out, err)
	}
	if env.Track != 0 && !write && spec.Name == "get" {
		s.trackRead(env, b, args[keys[0]]) // tracking.go: before the read
	}
	// hooked, written out: the keyed path is the hot one, and with no
	// hook on it goes straight to serve, without an indirect call.
	hc := s.hooks.Load()
	if hc == nil {
		return s.serve(out, x, env, b, args, write, p)
	}
	r := hookRequest{area: env.Area, cmd: spec.Name, write: write, key: args[keys[0]], args: args, peer: peer}
	ran, err := hc.before(r)
	start := len(out)
	if err != nil {
		out = resp.AppendErr(out, err)
	} else {
		out = s.serve(out, x, env, b, args, write, p)
	}
	hc.after(r, ran, out[start:])
	return out
}

// serve runs a keyed command of bucket b, whose ownership was checked,
// within the area's limits.
func (s *Server) serve(out []byte, x *exec.Executor, env envelope.Header, b route.BucketID, args [][]byte, write bool, p *pending) []byte {
	if err := s.checkArea(env.Area, write, args); err != nil {
		return resp.AppendErr(out, err)
	}
	if msg := s.scriptGate(b); msg != "" {
		return resp.AppendError(out, msg)
	}
	if !write {
		out, _ = x.ExecRequest(execRequest(env), args, out)
		return out
	}
	return s.execWrite(out, env, b, args, p)
}

// execRequest is what the executor needs of a client's envelope.
func execRequest(env envelope.Header) exec.Request {
	return exec.Request{Area: env.Area, Proto: env.Proto, NoTouch: env.NoTouch}
}

// checkOwner checks that this node may serve bucket b: as master for
// writes and TAIR.X reads, as master or slave for TAIR.XR reads. Serving
// as master needs a valid lease.
func (s *Server) checkOwner(t *route.Table, b route.BucketID, write bool, env envelope.Header) error {
	me := s.addr
	if t.IsMaster(b, me) {
		if !s.leaseOK() {
			s.m.leaseRefusals.Inc()
			return (&envelope.Refusal{Reason: envelope.NotMaster, Bucket: b, HasBucket: true, Table: t.Version, LeaseLapsed: true}).Err()
		}
		return nil
	}
	// A slave marked behind its master may lack acknowledged writes: the
	// read goes back to the proxy (NOTMASTER), which reads elsewhere.
	if !write && env.Kind == envelope.SlaveOK && s.cfg.ReadFromSlave && t.IsSlave(b, me) && !t.IsBehind(t.Master(b), me) {
		return nil
	}
	return envelope.NotMasterOf(b, t.Version).Err()
}

// execWrite runs a write as bucket b's master: under the bucket's lock,
// exec then append to the replication streams; p collects the waits.
//
// A panic under the lock (contain.go) answers the write with an error,
// releases the lock and has the bucket's slaves resynced in full: exec
// may have changed the engine without the change being replicated.
func (s *Server) execWrite(out []byte, env envelope.Header, b route.BucketID, args [][]byte, p *pending) (res []byte) {
	bk, rt, err := s.lockWritable(b)
	if err != nil {
		return resp.AppendErr(out, err)
	}
	defer s.unlockWrite(bk, out, args, p, &res)
	out, prop := s.x.Load().ExecRequest(execRequest(env), args, out)
	if testHook.Load() != nil {
		runTestHook("applied", commandName(args))
	}
	p.write, p.bucket = true, b
	if len(prop) == 0 {
		return out
	}
	s.replicateLocked(bk, rt, env.Area, prop, p)
	return out
}

// lockWritable takes bucket b's lock for a write and checks that this
// node may still write it (writableLocked); a refusal releases the lock
// again. The caller defers unlockWrite at once after.
func (s *Server) lockWritable(b route.BucketID) (*bucket, *routing, error) {
	bk := s.bucket(b)
	bk.lock()
	rt, err := s.writableLocked(bk)
	if err != nil {
		bk.unlock()
		return nil, nil, err
	}
	return bk, rt, nil
}

// writableLocked checks, with bk's lock held, that this node may still
// write bk's bucket: the bucket is not frozen for a move's last step or
// in a table's cutover (TRYAGAIN), and the table did not change since the ownership check
// (NOTMASTER). It returns the routing the write replicates by. The single
// command path and MULTI share it, so both refuse alike.
func (s *Server) writableLocked(bk *bucket) (*routing, error) {
	if bk.frozen.Load() || bk.cutover.Load() {
		return nil, envelope.TryAgainOf(bk.id).Err()
	}
	rt := s.rt.Load()
	if !rt.t.IsMaster(bk.id, s.addr) {
		return nil, envelope.NotMasterOf(bk.id, rt.t.Version).Err()
	}
	return rt, nil
}

// forwardTarget returns the new master of a bucket that moved away from
// this node recently, or "".
func (s *Server) forwardTarget(t *route.Table, b route.BucketID) string {
	bk := s.bucket(b)
	if bk == nil {
		return ""
	}
	mv := bk.moved.Load()
	if mv == nil || time.Now().After(mv.until) || t.Master(b) != mv.to || mv.to == s.addr {
		return ""
	}
	return mv.to
}

// forward sends the command to bucket's new master and relays its reply.
func (s *Server) forward(out []byte, to string, b route.BucketID, env envelope.Header, args [][]byte) []byte {
	fwd := env
	fwd.Kind = envelope.Forwarded
	c, err := s.pool.get(to)
	if err != nil {
		// Not run anywhere: the proxy refreshes its table and retries.
		return resp.AppendErr(out, (&envelope.Refusal{Reason: envelope.NotMaster, Bucket: b, HasBucket: true, Table: s.TableVersion(), Note: "new master " + to + " unreachable"}).Err())
	}
	raw, err := c.roundTrip(envelope.Append(nil, fwd, args), 3*s.cfg.ReplicationTimeout)
	if err != nil {
		_ = c.Close()
		return resp.AppendErr(out, errs.Newf(errs.Timeout, "forwarding to %s: %v", to, err))
	}
	s.pool.put(to, c)
	s.m.forwarded.Inc()
	return append(out, raw...)
}

// dbsize counts the area's visible keys in the buckets this node masters,
// from the engine's counters (engines.KeyCounts: hidden keys left out).
func (s *Server) dbsize(out []byte, env envelope.Header) []byte {
	var n int64
	s.eng.CountKeys(s.masterBuckets(), func(area uint16, c engines.KeyCounts) {
		if area == env.Area {
			n = c.Keys
		}
	})
	return resp.AppendInt(out, n)
}

// masterBuckets lists the buckets this node masters in its table (none
// without a table), the buckets whose keys it counts: summed over the
// nodes, each key once.
func (s *Server) masterBuckets() []uint32 {
	t := s.Table()
	if t == nil {
		return nil
	}
	var out []uint32
	for b := range route.BucketID(t.Buckets) {
		if t.IsMaster(b, s.addr) {
			out = append(out, uint32(b))
		}
	}
	return out
}

// scanBucket: SCANBUCKET <bucket> <cursor> [MATCH p] [COUNT n] [TYPE t]
// -> [next-cursor, [keys...]] over the area's keys of one bucket. The
// whole bucket comes in one reply (cursor "0").
func (s *Server) scanBucket(out []byte, env envelope.Header, args [][]byte) []byte {
	if len(args) < 3 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'scanbucket' command")
	}
	b64, err := strconv.ParseUint(string(args[1]), 10, 32)
	if err != nil {
		return resp.AppendError(out, "ERR invalid bucket")
	}
	b := route.BucketID(b64)
	var pattern, typ []byte
	for i := 3; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return resp.AppendError(out, "ERR syntax error")
		}
		switch upper(args[i]) {
		case "MATCH":
			pattern = args[i+1]
		case "COUNT":
		case "TYPE":
			typ = bytes.ToLower(args[i+1])
		default:
			return resp.AppendError(out, "ERR syntax error")
		}
	}
	t := s.Table()
	if t == nil {
		return resp.AppendErr(out, envelope.NotMasterOf(b, 0).Err())
	}
	if !t.Contains(b) {
		return resp.AppendError(out, "ERR invalid bucket")
	}
	if err := s.checkOwner(t, b, false, env); err != nil {
		return resp.AppendErr(out, err)
	}
	var keys [][]byte
	err = s.eng.ForEach(uint32(b), func(r *engines.Record) error {
		if r.Area != env.Area || r.Entry.Hidden {
			return nil
		}
		if typ != nil && string(typ) != typeName(r) {
			return nil
		}
		if pattern != nil && !glob.Match(pattern, r.Key, false) {
			return nil
		}
		keys = append(keys, append([]byte(nil), r.Key...))
		return nil
	})
	if err != nil {
		return resp.AppendErr(out, err)
	}
	out = resp.AppendArray(out, 2)
	out = resp.AppendBulkString(out, "0")
	out = resp.AppendArray(out, len(keys))
	for _, k := range keys {
		out = resp.AppendBulk(out, k)
	}
	return out
}

// flush deletes the area (FLUSHDB) or every area (FLUSHALL) on this node.
// The proxy sends it to every dataserver.
func (s *Server) flush(out []byte, env envelope.Header, all bool) []byte {
	if !all {
		if _, err := s.eng.DeleteArea(env.Area); err != nil {
			return resp.AppendErr(out, err)
		}
		return resp.AppendOK(out)
	}
	// Every area with data here: those with counters, and those with keys
	// in the table's buckets (records restored by a migration, say).
	areas := map[uint16]bool{0: true}
	for a := range s.eng.AllStats() {
		areas[a] = true
	}
	if t := s.Table(); t != nil {
		all := make([]uint32, t.Buckets)
		for b := range all {
			all[b] = uint32(b)
		}
		s.eng.CountKeys(all, func(area uint16, _ engines.KeyCounts) { areas[area] = true })
	}
	for a := range areas {
		if _, err := s.eng.DeleteArea(a); err != nil {
			return resp.AppendErr(out, err)
		}
	}
	return resp.AppendOK(out)
}
