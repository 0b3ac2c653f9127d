package dataserver

import (
	"net"
	"strconv"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// multiExec runs a transaction as one atomic batch under its bucket's lock
// (the form the proxy sends, inside the TAIR.X envelope):
//
//	MULTIEXEC <n> (<argc> <arg>...){n} [WATCH <m> (<key> <version>){m}]
//
// replying like EXEC: an array of the n replies, or a null array when a
// watched key's version is no longer the one given (TAIR.KEYVER). Every key
// must be in one bucket (else CROSSSLOT) that this node masters. The
// commands slaves replay go out as one replication item, applied
// atomically there too.
//
// The transaction runs inside the hook chain as one write ("multiexec",
// its first key) when any of its commands writes.
//
// A transaction holding scripts (EVAL, EVALSHA, FCALL and their _RO
// forms) comes as TAIR.SCRIPT (script.go), so that it runs off the event
// loops, with sc set: each script runs at its place in the transaction,
// under the same lock, through the same machinery as EVAL alone
// (runScriptLocked), and what it writes joins the transaction's one
// replication item. Enveloped (sc nil), a transaction may hold no
// script.
func (s *Server) multiExec(out []byte, env envelope.Header, args [][]byte, p *pending, peer net.Addr, sc *txScripts) []byte {
	if len(args) < 2 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'multiexec' command")
	}
	n, err := strconv.Atoi(string(args[1]))
	if err != nil || n < 0 {
		return resp.AppendError(out, "ERR bad MULTIEXEC count")
	}
	cmds := make([][][]byte, 0, n)
	i := 2
	for c := 0; c < n; c++ {
		if i >= len(args) {
			return resp.AppendError(out, "ERR bad MULTIEXEC body")
		}
		argc, err := strconv.Atoi(string(args[i]))
		if err != nil || argc < 1 || i+1+argc > len(args) {
			return resp.AppendError(out, "ERR bad MULTIEXEC body")
		}
		cmds = append(cmds, args[i+1:i+1+argc])
		i += 1 + argc
	}
	var watch [][2][]byte // key, version
	if i < len(args) {
		if upper(args[i]) != "WATCH" || i+1 >= len(args) {
			return resp.AppendError(out, "ERR bad MULTIEXEC body")
		}
		m, err := strconv.Atoi(string(args[i+1]))
		if err != nil || m < 0 || i+2+2*m != len(args) {
			return resp.AppendError(out, "ERR bad MULTIEXEC WATCH")
		}
		for j := i + 2; j < len(args); j += 2 {
			watch = append(watch, [2][]byte{args[j], args[j+1]})
		}
	}
	rt := s.rt.Load()
	if rt == nil {
		return resp.AppendErr(out, envelope.NotMasterOf(0, 0).Err())
	}
	t := rt.t
	bucket, have, write := route.BucketID(0), false, false
	var key []byte
	for _, w := range watch {
		b := t.Bucket(w[0])
		if have && b != bucket {
			return resp.AppendError(out, "CROSSSLOT Keys in request don't hash to the same slot")
		}
		bucket, have = b, true
		if key == nil {
			key = w[0]
		}
	}
	for _, c := range cmds {
		spec := command.Lookup(c[0])
		if spec == nil || !spec.ArityOK(len(c)) {
			continue // exec replies with the error in place
		}
		script := isScriptCall(spec.Name)
		if script && sc == nil {
			return resp.AppendError(out, "ERR a MULTIEXEC holding scripts must come as TAIR.SCRIPT")
		}
		write = write || spec.Has(command.Write) || script && !spec.Has(command.ReadOnly)
		for _, k := range spec.KeyIndexes(c) {
			b := t.Bucket(c[k])
			if have && b != bucket {
				return resp.AppendError(out, "CROSSSLOT Keys in request don't hash to the same slot")
			}
			bucket, have = b, true
			if key == nil {
				key = c[k]
			}
		}
	}
	if !have && sc != nil {
		// Only keyless scripts (and commands without keys): they run on
		// the bucket the proxy routed by, the first script's as if it
		// ran alone (see proxy/multi.go).
		if !t.Contains(sc.bucket) {
			return resp.AppendError(out, "ERR invalid bucket")
		}
		bucket, have = sc.bucket, true
	}
	if !have {
		return resp.AppendError(out, "ERR MULTIEXEC needs at least one key")
	}
	if err := s.checkOwner(t, bucket, true, env); err != nil {
		// A scripted transaction is not forwarded (it would arrive
		// enveloped): the proxy retries NOTMASTER, as for EVAL.
		if to := s.forwardTarget(t, bucket); to != "" && env.Kind != envelope.Forwarded && sc == nil {
			return s.forward(out, to, bucket, env, args)
		}
		return resp.AppendErr(out, err)
	}
	r := hookRequest{area: env.Area, cmd: "multiexec", write: write, key: key, args: args, peer: peer}
	return s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte {
		return s.multiExecRun(out, env, args, p, cmds, watch, bucket, write, sc)
	})
}

// txScripts is what a transaction holding scripts needs besides its
// commands: the bucket to run on when it names no key, and each
// script's preparation (nil for the other commands).
type txScripts struct {
	bucket  route.BucketID
	calls   []*evalCall
	refused [][]byte // the script's error reply when it cannot run
}

// prepare finds every script of cmds before the bucket's lock is taken
// (it may ask the configserver), in order, so that an EVALSHA finds a
// body an earlier EVAL of the transaction brought. Like Redis, an EVAL
// caches its body at EXEC; unlike Redis, also when a WATCH then fails.
func (sc *txScripts) prepare(s *Server, cmds [][][]byte, proto int) {
	sc.calls = make([]*evalCall, len(cmds))
	sc.refused = make([][]byte, len(cmds))
	for i, c := range cmds {
		spec := command.Lookup(c[0])
		if spec == nil || !spec.ArityOK(len(c)) || !isScriptCall(spec.Name) {
			continue
		}
		e := &evalCall{}
		if sc.refused[i] = s.prepareEval(e, spec.Name, c, proto, nil); sc.refused[i] == nil {
			sc.calls[i] = e
		}
	}
}

// multiExecRun runs a checked transaction of bucket's keys within the
// area's limits.
//
// A panic under the lock is handled as execWrite's (contain.go).
func (s *Server) multiExecRun(out []byte, env envelope.Header, args [][]byte, p *pending, cmds [][][]byte, watch [][2][]byte, bucket route.BucketID, write bool, sc *txScripts) (res []byte) {
	if err := s.checkArea(env.Area, write, args); err != nil {
		return resp.AppendErr(out, err)
	}
	// A script running on the bucket holds its lock: wait for it, or
	// answer BUSY past its threshold, as the bucket's other requests.
	if msg := s.scriptGate(bucket); msg != "" {
		return resp.AppendError(out, msg)
	}
	if sc != nil {
		sc.prepare(s, cmds, env.Proto)
	}
	bk, rt, err := s.lockWritable(bucket)
	if err != nil {
		return resp.AppendErr(out, err)
	}
	defer s.unlockWrite(bk, out, args, p, &res)
	for _, w := range watch {
		if string(w[1]) != strconv.FormatInt(s.keyVersion(env.Area, bucket, w[0]), 10) {
			return resp.AppendNullArray(out, env.Proto)
		}
	}
	x := s.x.Load()
	out = resp.AppendArray(out, len(cmds))
	var prop [][][]byte
	for i, c := range cmds {
		var pr [][][]byte
		switch {
		case sc != nil && sc.calls[i] != nil:
			out, pr, _ = s.runScriptLocked(out, env, rt.t, bucket, sc.calls[i], 0)
		case sc != nil && sc.refused[i] != nil:
			out = append(out, sc.refused[i]...)
		default:
			out, pr = x.ExecRequest(execRequest(env), c, out)
		}
		prop = append(prop, pr...)
	}
	if write || len(prop) > 0 {
		p.write, p.bucket = true, bucket
	}
	if len(prop) > 0 {
		s.replicateLocked(bk, rt, env.Area, prop, p)
	}
	return out
}

// keyVersion is a key's Tair version, 0 when it is missing.
func (s *Server) keyVersion(area uint16, bucket route.BucketID, key []byte) int64 {
	e, err := s.eng.Get(engines.Key{Bucket: uint32(bucket), Area: area, Key: key})
	if err != nil {
		return 0
	}
	return e.Version
}

// keyVer: TAIR.KEYVER <key>... -> array of the keys' versions (0 =
// missing), for WATCH. Served by the keys' master.
func (s *Server) keyVer(out []byte, env envelope.Header, args [][]byte) []byte {
	if len(args) < 2 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.keyver' command")
	}
	t := s.Table()
	if t == nil {
		return resp.AppendErr(out, envelope.NotMasterOf(route.BucketOf(args[1], route.DefaultBuckets), 0).Err())
	}
	for _, k := range args[1:] {
		if err := s.checkOwner(t, t.Bucket(k), false, envelope.Header{}); err != nil {
			return resp.AppendErr(out, err)
		}
	}
	out = resp.AppendArray(out, len(args)-1)
	for _, k := range args[1:] {
		out = resp.AppendInt(out, s.keyVersion(env.Area, t.Bucket(k), k))
	}
	return out
}
