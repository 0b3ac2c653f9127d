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
// A script can also come in an envelope on the pipelined connections
// (evalPipelined): the proxy sends EVAL and EVALSHA with keys that way,
// so that a short script costs what a command does. It runs there only
// when the node has the script cached and it was not found slow lately
// (slowRuns runs in a row past pipelinedBudget); a run that passes the
// budget before it
// wrote anything is stopped and undone by never having written. Every
// other case is refused with envelope.ScriptConn, and the proxy sends
// the script on a script connection: a script that runs long holds up
// the requests queued behind it on a pipelined connection (and, on an
// event loop, the loop's other connections) for the budget at most,
// unless it wrote within it; it then runs to its end there, as a
// script in Redis holds up every client, and stays off the pipelined
// connections for slowFor.
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
	cache map[string]*cachedScript
	// running: the script holding each bucket's lock.
	running map[route.BucketID]*scriptRun
	n       atomic.Int32 // len(running), read without mu
	// watching: the watcher goroutine runs (watch).
	watching bool
	runs     sync.Pool // of *scriptRun
	libs     libraries
}

// cachedScript is a compiled script with how long its runs take here.
type cachedScript struct {
	*luascript.Script
	// slowAt: when it was last found slow (UnixNano, 0 never): its last
	// slowRuns runs in a row went past pipelinedBudget.
	slowAt   atomic.Int64
	slowRuns atomic.Int32
}

// pipelinedBudget is how long a script may run on a pipelined
// connection before it is sent to a script connection instead (a
// command's time is microseconds; the budget leaves room for a loaded
// machine's scheduling); a script whose last slowRuns runs went past it
// (one could be a descheduled thread, not the script) stays off the
// pipelined connections for slowFor.
const (
	pipelinedBudget = 20 * time.Millisecond
	slowRuns        = 3
	slowFor         = 5 * time.Second
)

// pipelinable reports whether sc may run on a pipelined connection
// (now is read only for a script once found slow).
func (sc *cachedScript) pipelinable(now func() time.Time) bool {
	at := sc.slowAt.Load()
	return at == 0 || now().UnixNano()-at > int64(slowFor)
}

// ended notes how long a run of sc took.
func (sc *cachedScript) ended(took time.Duration) {
	switch {
	case took <= pipelinedBudget:
		if sc.slowRuns.Load() != 0 {
			sc.slowRuns.Store(0)
		}
	case sc.slowRuns.Add(1) >= slowRuns:
		sc.slowAt.Store(time.Now().UnixNano())
	}
}

// scriptRun is one running script. It is the run's context (stopped by
// SCRIPT KILL or the pipelined budget) and is pooled: a pipelined
// script costs what a command does, and a context, two channels and a
// timer or two per run were a tenth of it.
type scriptRun struct {
	bucket    route.BucketID
	started   time.Time
	budget    time.Duration // 0: none (not pipelined)
	threshold time.Duration
	wrote     atomic.Bool
	killed    atomic.Bool
	// stage orders the first write against the pipelined budget's
	// stop: a run either writes or is stopped for the budget, never
	// both (runClean, runWriting, runStopped).
	stage atomic.Int32
	// cancelled: stop is closed (the context's Err).
	cancelled atomic.Bool
	stop      chan struct{}
	// Under scriptHost.mu: busy (past the threshold), and the channels
	// that a request waiting behind the run (scriptGate) makes: done,
	// closed when it ends; busyCh, closed when it passes the threshold.
	busy   bool
	done   chan struct{}
	busyCh chan struct{}
	// what the run passes to the Lua VM, kept here so that it is not
	// allocated per run
	caller scriptCaller
	lua    luascript.Run
}

// scriptRun is the context of the script's Lua run.
var _ context.Context = (*scriptRun)(nil)

func (r *scriptRun) Deadline() (time.Time, bool) { return time.Time{}, false }
func (r *scriptRun) Done() <-chan struct{}       { return r.stop }
func (r *scriptRun) Value(any) any               { return nil }
func (r *scriptRun) Err() error {
	if r.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

// cancelLocked stops the run's Lua (h.mu held).
func (r *scriptRun) cancelLocked() {
	if r.cancelled.CompareAndSwap(false, true) {
		close(r.stop)
	}
}

// checkLocked applies the budget and the busy threshold to r at now
// (h.mu held): a pipelined run past its budget that has not written is
// stopped; a run past the threshold makes its bucket's requests BUSY.
func (r *scriptRun) checkLocked(now time.Time) {
	took := now.Sub(r.started)
	if r.budget > 0 && took >= r.budget && r.stage.CompareAndSwap(runClean, runStopped) {
		r.cancelLocked()
		return
	}
	if took >= r.threshold && !r.busy {
		r.busy = true
		if r.busyCh != nil {
			close(r.busyCh)
		}
	}
}

const (
	runClean int32 = iota
	runWriting
	runStopped
)

// writing notes that the run is about to run a write command: false
// when the run was stopped for the pipelined budget (it must write
// nothing then).
func (r *scriptRun) writing() bool {
	return r.stage.CompareAndSwap(runClean, runWriting) || r.stage.Load() == runWriting
}

// stopped reports whether the run was stopped for the pipelined budget.
func (r *scriptRun) stopped() bool { return r.stage.Load() == runStopped }

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
		h.cache = map[string]*cachedScript{}
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
	if r == nil {
		h.mu.Unlock()
		return ""
	}
	if r.busy {
		h.mu.Unlock()
		return busyText
	}
	if r.done == nil {
		r.done, r.busyCh = make(chan struct{}), make(chan struct{})
	}
	done, busy := r.done, r.busyCh
	h.mu.Unlock()
	select {
	case <-done:
		return ""
	case <-busy:
		return busyText
	}
}

// scriptWatchTick is how often the watcher (scriptHost.watch) checks the
// running scripts' budgets and thresholds: a pipelined run is stopped
// within a tick of its budget.
const scriptWatchTick = 2 * time.Millisecond

// start registers a run on bucket b. A pipelined run (budget > 0) is
// stopped at budget unless it wrote by then; the busy threshold counts
// from the start either way.
func (h *scriptHost) start(b route.BucketID, threshold, budget time.Duration) *scriptRun {
	r, _ := h.runs.Get().(*scriptRun)
	if r == nil {
		r = &scriptRun{stop: make(chan struct{})}
	}
	r.bucket, r.threshold, r.budget, r.started = b, threshold, budget, time.Now()
	h.mu.Lock()
	h.running[b] = r
	h.n.Store(int32(len(h.running)))
	if !h.watching {
		h.watching = true
		go h.watch()
	}
	h.mu.Unlock()
	return r
}

// watch checks the running scripts every scriptWatchTick, while there
// are some (one goroutine for all runs instead of timers per run); it
// ends after a quiet spell, and start starts it again.
func (h *scriptHost) watch() {
	t := time.NewTicker(scriptWatchTick)
	defer t.Stop()
	const quietTicks = 25
	quiet := 0
	for now := range t.C {
		h.mu.Lock()
		if len(h.running) == 0 {
			if quiet++; quiet >= quietTicks {
				h.watching = false
				h.mu.Unlock()
				return
			}
		} else {
			quiet = 0
		}
		for _, r := range h.running {
			r.checkLocked(now)
		}
		h.mu.Unlock()
	}
}

func (h *scriptHost) end(r *scriptRun) {
	h.mu.Lock()
	if h.running[r.bucket] == r {
		delete(h.running, r.bucket)
	}
	h.n.Store(int32(len(h.running)))
	waited := r.done != nil
	if waited {
		close(r.done)
	}
	h.mu.Unlock()
	if waited || r.cancelled.Load() {
		// A waiter may still hold its channels, or stop is closed:
		// not reused.
		return
	}
	*r = scriptRun{stop: r.stop}
	h.runs.Put(r)
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
		r.cancelLocked()
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

func (h *scriptHost) cached(sha string) *cachedScript {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cache[sha]
}

// cachedBytes is cached for a sha in bytes, without copying it.
func (h *scriptHost) cachedBytes(sha []byte) *cachedScript {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cache[string(sha)]
}

func (h *scriptHost) put(sc *luascript.Script) *cachedScript {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.cache[sc.Sha]; c != nil {
		return c
	}
	c := &cachedScript{Script: sc}
	h.cache[sc.Sha] = c
	return c
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
func (s *Server) loadScript(body []byte) (*cachedScript, error) {
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
	return h.put(sc), nil
}

// scriptBySha is the cached script, or the configserver's body compiled.
func (s *Server) scriptBySha(sha string) *cachedScript {
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
	return h.put(sc)
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
		return s.evalCmd(out, env, route.BucketID(b64), name, cmd, p, peer, false)
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
	sc         *cachedScript       // EVAL*, else nil
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
// runs: found (the script already looked up, or nil), the script
// (compiled, and registered with the configserver when new to this
// node), or the function. It may call the configserver, so it runs
// before the bucket's lock is taken. It fills e; a refusal is its
// error reply.
func (s *Server) prepareEval(e *evalCall, name string, cmd [][]byte, proto int, found *cachedScript) []byte {
	fail := func(text string) []byte { return resp.AppendError(nil, text) }
	if len(cmd) < 3 {
		return fail("ERR wrong number of arguments for '" + name + "' command")
	}
	if strings.HasPrefix(name, "evalsha") && len(cmd[1]) != 40 {
		return fail(noScriptText) // as Redis: before numkeys
	}
	*e = evalCall{name: name, ro: strings.HasSuffix(name, "_ro"), proto: proto}
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
	case "eval", "eval_ro", "evalsha", "evalsha_ro":
		sc, errText := s.scriptFor(name, cmd[1], found)
		if sc == nil {
			return fail(errText)
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
			return resp.AppendErr(nil, errs.ErrKeyTooLong)
		}
	}
	return nil
}

// scriptFor is the script that EVAL's body or EVALSHA's sha names (name
// tells which): found when the caller looked it up already; nil and the
// error reply's text when there is none.
func (s *Server) scriptFor(name string, script []byte, found *cachedScript) (*cachedScript, string) {
	switch {
	case found != nil:
		return found, ""
	case strings.HasPrefix(name, "evalsha"):
		if sc := s.scriptBySha(strings.ToLower(string(script))); sc != nil {
			return sc, ""
		}
		return nil, noScriptText
	}
	sc, err := s.loadScript(script)
	if err != nil {
		return nil, "ERR " + err.Error()
	}
	return sc, ""
}

// runWith runs e, its commands through c, stopped when ctx is cancelled;
// run is filled in and passed to the VM; a script's run time is noted for
// the pipelined path.
func (e *evalCall) runWith(ctx context.Context, env *luascript.Env, out []byte, c luascript.Caller, run *luascript.Run) []byte {
	*run = luascript.Run{Keys: e.keys, Args: e.argv, Proto: e.proto, Caller: c, Ctx: ctx, Name: e.runName, ReadOnly: e.ro}
	if e.fn != nil {
		return env.Call(out, e.fn, run)
	}
	start := time.Now()
	out = env.Run(out, e.sc.Script, run)
	e.sc.ended(time.Since(start))
	return out
}

// evalPipelined runs EVAL, EVALSHA and their _RO forms that came in an
// envelope (name is special()'s upper case): the script must be cached
// here, declare a key and be quick (see the package's Scripts).
func (s *Server) evalPipelined(out []byte, env envelope.Header, name string, cmd [][]byte, p *pending, peer net.Addr) []byte {
	switch name { // the lower-case name, without strings.ToLower's copy
	case "EVAL":
		name = "eval"
	case "EVALSHA":
		name = "evalsha"
	case "EVAL_RO":
		name = "eval_ro"
	case "EVALSHA_RO":
		name = "evalsha_ro"
	default:
		name = strings.ToLower(name)
	}
	return s.evalCmd(out, env, 0, name, cmd, p, peer, true)
}

// pipelinedScript is the cached script a command that came on a
// pipelined connection runs, or the refusal of one that does not run
// there (neither: a malformed one, answered its error as on a script
// connection): it declares no key (the proxy routed it by them), is not
// cached here (fetching it would wait for the configserver), or was
// found slow.
func (s *Server) pipelinedScript(name string, cmd [][]byte, hint route.BucketID) (*cachedScript, *envelope.Refusal) {
	if len(cmd) < 3 || strings.HasPrefix(name, "fcall") {
		return nil, envelope.ScriptConnOf(hint)
	}
	n, bad := numKeys(cmd, false)
	if bad != "" {
		return nil, nil
	}
	if n == 0 {
		return nil, envelope.ScriptConnOf(hint)
	}
	var sc *cachedScript
	if name == "eval" || name == "eval_ro" {
		sc = s.scripting().cached(luascript.Sha1Hex(cmd[1]))
	} else if len(cmd[1]) == 40 {
		var sha [40]byte
		sc = s.scripting().cachedBytes(resp.AppendLower(sha[:0], cmd[1]))
	}
	if sc != nil && sc.pipelinable(time.Now) {
		return sc, nil
	}
	b := hint
	if rt := s.rt.Load(); rt != nil {
		b = rt.t.Bucket(cmd[3])
	}
	return nil, envelope.ScriptConnOf(b)
}

// evalCmd runs EVAL, EVALSHA, FCALL and their _RO forms; pipelined: it
// came on a pipelined connection (evalPipelined).
func (s *Server) evalCmd(out []byte, env envelope.Header, hint route.BucketID, name string, cmd [][]byte, p *pending, peer net.Addr, pipelined bool) []byte {
	var budget time.Duration
	var found *cachedScript
	if pipelined {
		var r *envelope.Refusal
		if found, r = s.pipelinedScript(name, cmd, hint); r != nil {
			return resp.AppendErr(out, r.Err()) // a script connection runs it
		}
		budget = pipelinedBudget
	}
	e := &evalCall{}
	if refused := s.prepareEval(e, name, cmd, env.Proto, found); refused != nil {
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
		return s.evalRun(out, env, b, cmd, p, e, budget)
	})
}

// evalRun runs a script on bucket b under its lock and replicates what
// it wrote as one item. A pipelined run (budget > 0) stopped at its
// budget wrote nothing: its reply is the refusal that sends it to a
// script connection. A panic under the lock is handled as execWrite's
// (contain.go).
func (s *Server) evalRun(out []byte, env envelope.Header, b route.BucketID, cmd [][]byte, p *pending, e *evalCall, budget time.Duration) (res []byte) {
	if err := s.checkArea(env.Area, true, cmd); err != nil {
		return resp.AppendErr(out, err)
	}
	if msg := s.scriptGate(b); msg != "" {
		return resp.AppendError(out, msg)
	}
	bk, rt, err := s.lockWritable(b)
	if err != nil {
		return resp.AppendErr(out, err)
	}
	defer s.unlockWrite(bk, out, cmd, p, &res)
	start := len(out)
	out, prop, stopped := s.runScriptLocked(out, env, rt.t, b, e, budget)
	if stopped {
		return resp.AppendErr(out[:start], envelope.ScriptConnOf(b).Err())
	}
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
// or answer BUSY (scriptGate) and SCRIPT KILL may stop it. A budget
// (a pipelined run) stops it at that time unless it wrote by then:
// stopped, it wrote nothing and its reply is to be dropped.
func (s *Server) runScriptLocked(out []byte, env envelope.Header, t *route.Table, b route.BucketID, e *evalCall, budget time.Duration) (_ []byte, prop [][][]byte, stopped bool) {
	h := s.scripting()
	sr := h.start(b, s.cfg.BusyReplyThreshold, budget)
	defer h.end(sr)
	c := &sr.caller
	*c = scriptCaller{x: s.x.Load(), area: env.Area, t: t, bucket: b, run: sr, maxKey: s.cfg.MaxKeySize, noTouch: env.NoTouch}
	out = e.runWith(sr, h.env, out, c, &sr.lua)
	return out, c.prop, sr.stopped() && !sr.killed.Load()
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
	// noTouch: the script's client is in CLIENT NO-TOUCH mode, which
	// its script's commands keep.
	noTouch bool
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
	if spec.Has(command.Write) && !c.run.writing() {
		// Stopped for the pipelined budget: the script is to run again
		// on a script connection, so this run must not write.
		return resp.AppendError(nil, luascript.Killed)
	}
	out, prop := c.x.ExecRequest(exec.Request{Area: c.area, Proto: proto, NoTouch: c.noTouch}, args, nil)
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
		h.cache = map[string]*cachedScript{}
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
