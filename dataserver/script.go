package dataserver

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/dataserver/exec"
	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/luascript"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// # Scripts
//
// The proxy sends EVAL, EVALSHA (and their _RO forms), FCALL, SCRIPT and
// FUNCTION as
//
//	TAIR.SCRIPT <bucket> TAIR.X <area> <table version> <proto> <command> <args>...
//
// on connections of their own: the verb is not an envelope, so a batch
// of them runs on the connection's runner goroutine, never on an event
// loop, and a script that runs for seconds holds no loop. bucket is the
// bucket the proxy routed by: the declared keys' bucket, or for a script
// without keys the bucket of its sha (the function's name for FCALL).
// A transaction holding scripts comes the same way, as TAIR.SCRIPT
// <bucket> ... MULTIEXEC ... (multi.go).
//
// A script runs on the bucket's master under the bucket's lock, as
// MULTIEXEC does: atomically with respect to the bucket's other writes.
// The commands it calls run through the executor; a key of another
// bucket is refused with Redis Cluster's "Script attempted to access a
// non local key in a cluster node". What the script's commands
// propagate (exec's effects: relative expiries absolute, and so on) goes
// to the slaves as one replication item once the script ends, so slaves
// never run Lua (Redis 7's effects replication).
//
// Bodies are cached per node (sha → compiled script) and kept by the
// configserver (configserver/scripts.go): EVAL and SCRIPT LOAD register a
// body the node did not hold; EVALSHA of a sha the node does not hold
// fetches it there, so a script loaded through any proxy runs on every
// node, one that joined later too. SCRIPT FLUSH reaches every node (the
// proxy broadcasts it) and the configserver.
//
// A script that runs longer than BusyReplyThreshold makes the requests
// for its bucket answer BUSY instead of waiting behind its lock; SCRIPT
// KILL (broadcast by the proxy) stops a script that wrote nothing
// (gopher-lua's context), UNKILLABLE once it wrote. A script still
// running after StallTimeout makes the node unhealthy (watchdog.go), as
// a Redis Cluster node busy past its node timeout is failed over.

// scriptHost is the node's scripting state (Server.sc).
type scriptHost struct {
	once  sync.Once
	env   *luascript.Env
	mu    sync.Mutex
	cache map[string]*luascript.Script
	// running: the script holding each bucket's lock.
	running map[route.BucketID]*scriptRun
	n       atomic.Int32 // len(running), read without mu
	libs    libraries
}

// scriptRun is one running script.
type scriptRun struct {
	bucket route.BucketID
	ctx    context.Context
	cancel context.CancelFunc
	wrote  atomic.Bool
	killed atomic.Bool
	done   chan struct{}
	busy   chan struct{} // closed once it runs past the threshold
	timer  *time.Timer
}

const (
	busyText       = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	notBusyText    = "NOTBUSY No scripts in execution right now."
	unkillableText = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	noScriptText   = "NOSCRIPT No matching script. Please use EVAL."
	nonLocalText   = "ERR Script attempted to access a non local key in a cluster node"
	crossSlotText  = "CROSSSLOT Keys in request don't hash to the same slot"
)

func (s *Server) scripting() *scriptHost {
	h := &s.sc
	h.once.Do(func() {
		h.env = luascript.NewEnv(s.log)
		h.cache = map[string]*luascript.Script{}
		h.running = map[route.BucketID]*scriptRun{}
	})
	return h
}

// scriptGate is the check of a request for bucket b while a script may
// hold its lock: it waits for the script to end, and gives up with BUSY
// once the script has run past the threshold. "" lets it through.
func (s *Server) scriptGate(b route.BucketID) string {
	h := &s.sc
	if h.n.Load() == 0 {
		return ""
	}
	h.mu.Lock()
	r := h.running[b]
	h.mu.Unlock()
	if r == nil {
		return ""
	}
	select {
	case <-r.done:
		return ""
	case <-r.busy:
		return busyText
	}
}

func (h *scriptHost) start(b route.BucketID, threshold time.Duration) *scriptRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &scriptRun{bucket: b, ctx: ctx, cancel: cancel, done: make(chan struct{}), busy: make(chan struct{})}
	r.timer = time.AfterFunc(threshold, func() { close(r.busy) })
	h.mu.Lock()
	h.running[b] = r
	h.n.Store(int32(len(h.running)))
	h.mu.Unlock()
	return r
}

func (h *scriptHost) end(r *scriptRun) {
	r.timer.Stop()
	r.cancel()
	h.mu.Lock()
	if h.running[r.bucket] == r {
		delete(h.running, r.bucket)
	}
	h.n.Store(int32(len(h.running)))
	h.mu.Unlock()
	close(r.done)
}

// kill stops the node's running scripts that wrote nothing.
func (h *scriptHost) kill() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.running) == 0 {
		return notBusyText
	}
	for _, r := range h.running {
		if r.wrote.Load() {
			return unkillableText
		}
	}
	for _, r := range h.running {
		r.killed.Store(true)
		r.cancel()
	}
	return "OK"
}

// appendKill answers SCRIPT KILL and FUNCTION KILL: OK once the
// running scripts are killed, or why they are not.
func (h *scriptHost) appendKill(out []byte) []byte {
	if r := h.kill(); r != "OK" {
		return resp.AppendError(out, r)
	}
	return resp.AppendOK(out)
}

func (h *scriptHost) cached(sha string) *luascript.Script {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cache[sha]
}

func (h *scriptHost) put(sc *luascript.Script) {
	h.mu.Lock()
	h.cache[sc.Sha] = sc
	h.mu.Unlock()
}

// csTimeout bounds a call to the configserver for scripts.
const csTimeout = 3 * time.Second

// csScripts sends req to the configserver's scripts and libraries,
// bounded by csTimeout.
func (s *Server) csScripts(req *wire.ScriptRequest) (*wire.ScriptReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), csTimeout)
	defer cancel()
	return s.cs.Scripts(ctx, req)
}

// loadScript compiles body, caches it and, when it is new to this node,
// registers it with the configserver.
func (s *Server) loadScript(body []byte) (*luascript.Script, error) {
	h := s.scripting()
	sha := luascript.Sha1Hex(body)
	if sc := h.cached(sha); sc != nil {
		return sc, nil
	}
	sc, err := luascript.Compile(append([]byte(nil), body...))
	if err != nil {
		return nil, err
	}
	if _, err := s.csScripts(&wire.ScriptRequest{Op: "load", Sha: sha, Body: string(body)}); err != nil {
		s.log.Warn("registering a script with the configserver", "sha", sha, "err", err)
	}
	h.put(sc)
	return sc, nil
}

// scriptBySha is the cached script, or the configserver's body compiled.
func (s *Server) scriptBySha(sha string) *luascript.Script {
	h := s.scripting()
	if sc := h.cached(sha); sc != nil {
		return sc
	}
	rep, err := s.csScripts(&wire.ScriptRequest{Op: "get", Shas: []string{sha}})
	if err != nil || len(rep.Bodies) != 1 || rep.Bodies[0] == "" {
		if err != nil {
			s.log.Warn("fetching a script from the configserver", "sha", sha, "err", err)
		}
		return nil
	}
	sc, err := luascript.Compile([]byte(rep.Bodies[0]))
	if err != nil || sc.Sha != sha {
		return nil
	}
	h.put(sc)
	return sc
}

// scriptVerb serves TAIR.SCRIPT.
func (s *Server) scriptVerb(out []byte, args [][]byte, p *pending, peer net.Addr) []byte {
	if len(args) < 3 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'tair.script' command")
	}
	b64, err := strconv.ParseUint(string(args[1]), 10, 32)
	if err != nil {
		return resp.AppendError(out, "ERR invalid bucket")
	}
	env, cmd, err := envelope.Parse(args[2:])
	if err != nil {
		return resp.AppendError(out, err.Error())
	}
	if env.Version > s.TableVersion() {
		s.kickHeartbeat()
	}
	name := strings.ToLower(string(cmd[0]))
	switch name {
	case "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro":
		return s.evalCmd(out, env, route.BucketID(b64), name, cmd, p, peer)
	case "multiexec":
		// A transaction holding scripts (multi.go): off the event loops
		// like any script, on bucket when it names no key.
		return s.multiExec(out, env, cmd, p, peer, &txScripts{bucket: route.BucketID(b64)})
	case "script":
		return s.scriptCmd(out, cmd)
	case "function":
		return s.functionCmd(out, env, cmd)
	}
	return resp.AppendError(out, "ERR unknown script command '"+name+"'")
}

// numKeys reads EVAL's and FCALL's numkeys (Redis's texts).
func numKeys(cmd [][]byte, fcall bool) (int, string) {
	n, err := strconv.ParseInt(string(cmd[2]), 10, 64)
	switch {
	case err != nil && fcall:
		return 0, "ERR Bad number of keys provided"
	case err != nil:
		return 0, "ERR value is not an integer or out of range"
	case n < 0:
		return 0, "ERR Number of keys can't be negative"
	case n > int64(len(cmd)-3):
		return 0, "ERR Number of keys can't be greater than number of args"
	}
	return int(n), ""
}

// evalCall is an EVAL, EVALSHA, FCALL or _RO form checked and found (its
// script compiled, or its function loaded), ready to run on its bucket.
type evalCall struct {
	name       string // lower case
	keys, argv [][]byte
	ro         bool
	proto      int
	runName    string              // what error replies name: the sha, or the function
	sc         *luascript.Script   // EVAL*, else nil
	fn         *luascript.Function // FCALL*, else nil
}

// isScriptCall reports whether name (lower case) runs a script.
func isScriptCall(name string) bool {
	switch name {
	case "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// prepareEval checks cmd (name is its lower-case name) and finds what it
// runs: the script (compiled, and registered with the configserver when
// new to this node), or the function. It may call the configserver, so
// it runs before the bucket's lock is taken. A refusal is its error
// reply.
func (s *Server) prepareEval(name string, cmd [][]byte, proto int) (*evalCall, []byte) {
	fail := func(text string) (*evalCall, []byte) { return nil, resp.AppendError(nil, text) }
	if len(cmd) < 3 {
		return fail("ERR wrong number of arguments for '" + name + "' command")
	}
	if strings.HasPrefix(name, "evalsha") && len(cmd[1]) != 40 {
		return fail(noScriptText) // as Redis: before numkeys
	}
	e := &evalCall{name: name, ro: strings.HasSuffix(name, "_ro"), proto: proto}
	fcall := strings.HasPrefix(name, "fcall")
	if fcall {
		f, errText := s.findFunction(string(cmd[1]))
		if errText != "" {
			return fail(errText)
		}
		e.fn = f
	}
	n, bad := numKeys(cmd, fcall)
	if bad != "" {
		return fail(bad)
	}
	e.keys, e.argv = cmd[3:3+n], cmd[3+n:]
	switch name {
	case "eval", "eval_ro":
		sc, err := s.loadScript(cmd[1])
		if err != nil {
			return fail("ERR " + err.Error())
		}
		e.sc, e.runName = sc, sc.Sha
	case "evalsha", "evalsha_ro":
		sc := s.scriptBySha(strings.ToLower(string(cmd[1])))
		if sc == nil {
			return fail(noScriptText)
		}
		e.sc, e.runName = sc, sc.Sha
	default:
		e.runName = e.fn.Name
		if e.fn.NoWrites {
			e.ro = true
		} else if e.ro {
			return fail("ERR Can not execute a script with write flag using *_ro command.")
		}
	}
	for _, k := range e.keys {
		if len(k) > s.cfg.MaxKeySize {
			return nil, resp.AppendErr(nil, errs.ErrKeyTooLong)
		}
	}
	return e, nil
}

// runWith runs e, its commands through c, stopped when ctx is cancelled.
func (e *evalCall) runWith(ctx context.Context, env *luascript.Env, out []byte, c luascript.Caller) []byte {
	run := &luascript.Run{Keys: e.keys, Args: e.argv, Proto: e.proto, Caller: c, Ctx: ctx, Name: e.runName, ReadOnly: e.ro}
	if e.fn != nil {
		return env.Call(out, e.fn, run)
	}
	return env.Run(out, e.sc, run)
}

// evalCmd runs EVAL, EVALSHA, FCALL and their _RO forms.
func (s *Server) evalCmd(out []byte, env envelope.Header, hint route.BucketID, name string, cmd [][]byte, p *pending, peer net.Addr) []byte {
	e, refused := s.prepareEval(name, cmd, env.Proto)
	if refused != nil {
		return append(out, refused...)
	}
	rt := s.rt.Load()
	if rt == nil {
		return resp.AppendErr(out, envelope.NotMasterOf(hint, 0).Err())
	}
	t := rt.t
	b := hint
	for i, k := range e.keys {
		kb := t.Bucket(k)
		if i == 0 {
			b = kb
		} else if kb != b {
			return resp.AppendError(out, crossSlotText)
		}
	}
	if !t.Contains(b) {
		return resp.AppendError(out, "ERR invalid bucket")
	}
	if err := s.checkOwner(t, b, true, env); err != nil {
		return resp.AppendErr(out, err)
	}
	var key []byte
	if len(e.keys) > 0 {
		key = e.keys[0]
	}
	r := hookRequest{area: env.Area, cmd: name, write: !e.ro, key: key, args: cmd, peer: peer}
	return s.hooked(out, s.hooks.Load(), r, func(out []byte) []byte {
		return s.evalRun(out, env, b, cmd, p, e)
	})
}

// evalRun runs a script on bucket b under its lock and replicates what
// it wrote as one item. A panic under the lock is handled as
// execWrite's (contain.go).
func (s *Server) evalRun(out []byte, env envelope.Header, b route.BucketID, cmd [][]byte, p *pending, e *evalCall) (res []byte) {
	if err := s.checkArea(env.Area, true, cmd); err != nil {
		return resp.AppendErr(out, err)
	}
	if msg := s.scriptGate(b); msg != "" {
		return resp.AppendError(out, msg)
	}
	bk := s.bucket(b)
	bk.lock()
	defer s.unlockWrite(bk, out, cmd, p, &res)
	rt, err := s.writableLocked(bk)
	if err != nil {
		return resp.AppendErr(out, err)
	}
	out, prop := s.runScriptLocked(out, env.Area, rt.t, b, e)
	if len(prop) > 0 {
		p.write, p.bucket = true, b
		s.replicateLocked(bk, rt, env.Area, prop, p)
	}
	return out
}

// runScriptLocked runs e on bucket b, whose lock the caller holds (for
// EVAL alone, or for the transaction e is part of: multi.go), and
// returns the reply and what the script's commands propagate, for the
// caller to replicate. While it runs, the bucket's other requests wait
// or answer BUSY (scriptGate) and SCRIPT KILL may stop it.
func (s *Server) runScriptLocked(out []byte, area uint16, t *route.Table, b route.BucketID, e *evalCall) ([]byte, [][][]byte) {
	h := s.scripting()
	sr := h.start(b, s.cfg.BusyReplyThreshold)
	defer h.end(sr)
	c := &scriptCaller{x: s.x.Load(), area: area, t: t, bucket: b, run: sr, maxKey: s.cfg.MaxKeySize}
	out = e.runWith(sr.ctx, h.env, out, c)
	return out, c.prop
}

// scriptCaller runs a script's commands on its bucket.
type scriptCaller struct {
	x      *exec.Executor
	area   uint16
	t      *route.Table
	bucket route.BucketID
	run    *scriptRun
	maxKey int
	prop   [][][]byte
}

func (c *scriptCaller) Call(spec *command.Spec, args [][]byte, proto int) []byte {
	if !exec.Supported(spec.Name) {
		// Node-wide and proxy commands (KEYS, SCAN, DBSIZE, FLUSHALL,
		// PUBLISH, INFO ...): a script sees its bucket only.
		return resp.AppendError(nil, "ERR '"+spec.Name+"' is not supported in scripts by this cluster")
	}
	for _, k := range spec.KeyIndexes(args) {
		if len(args[k]) > c.maxKey {
			return resp.AppendErr(nil, errs.ErrKeyTooLong)
		}
		if c.t.Bucket(args[k]) != c.bucket {
			return resp.AppendError(nil, nonLocalText)
		}
	}
	out, prop := c.x.Exec(c.area, proto, false, args, nil)
	if len(prop) > 0 {
		c.prop = append(c.prop, prop...)
		c.run.wrote.Store(true)
	}
	return out
}

// scriptCmd serves SCRIPT LOAD, EXISTS, FLUSH and KILL on this node.
func (s *Server) scriptCmd(out []byte, cmd [][]byte) []byte {
	h := s.scripting()
	if len(cmd) < 2 {
		return resp.AppendError(out, "ERR wrong number of arguments for 'script' command")
	}
	sub := strings.ToLower(string(cmd[1]))
	bad := func() []byte {
		return resp.AppendError(out, "ERR unknown subcommand or wrong number of arguments for '"+string(cmd[1])+"'. Try SCRIPT HELP.")
	}
	switch sub {
	case "load":
		if len(cmd) != 3 {
			return bad()
		}
		sc, err := s.loadScript(cmd[2])
		if err != nil {
			return resp.AppendError(out, "ERR "+err.Error())
		}
		return resp.AppendBulkString(out, sc.Sha)
	case "exists":
		if len(cmd) < 3 {
			return bad()
		}
		shas := make([]string, len(cmd)-2)
		for i, a := range cmd[2:] {
			shas[i] = strings.ToLower(string(a))
		}
		have := make([]bool, len(shas))
		var ask []string
		for i, sha := range shas {
			if have[i] = h.cached(sha) != nil; !have[i] {
				ask = append(ask, sha)
			}
		}
		if len(ask) > 0 {
			rep, err := s.csScripts(&wire.ScriptRequest{Op: "exists", Shas: ask})
			if err != nil {
				return resp.AppendErr(out, errs.Newf(errs.Timeout, "asking the configserver: %v", err))
			}
			j := 0
			for i := range have {
				if !have[i] && j < len(rep.Exists) {
					have[i] = rep.Exists[j]
					j++
				}
			}
		}
		out = resp.AppendArray(out, len(have))
		for _, x := range have {
			if x {
				out = resp.AppendInt(out, 1)
			} else {
				out = resp.AppendInt(out, 0)
			}
		}
		return out
	case "flush":
		if len(cmd) > 3 || len(cmd) == 3 && !strings.EqualFold(string(cmd[2]), "async") && !strings.EqualFold(string(cmd[2]), "sync") {
			return resp.AppendError(out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		}
		h.mu.Lock()
		h.cache = map[string]*luascript.Script{}
		h.mu.Unlock()
		if _, err := s.csScripts(&wire.ScriptRequest{Op: "flush"}); err != nil {
			return resp.AppendErr(out, errs.Newf(errs.Timeout, "flushing the configserver's scripts: %v", err))
		}
		return resp.AppendOK(out)
	case "kill":
		if len(cmd) != 2 {
			return bad()
		}
		return h.appendKill(out)
	}
	return bad()
}
