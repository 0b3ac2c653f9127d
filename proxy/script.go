package proxy

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/internal/luascript"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// # Scripts and functions
//
// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL and FCALL_RO run on the
// master of their keys' bucket (every declared key in one bucket, else
// CROSSSLOT); a script without keys runs on the master of the bucket
// its sha hashes to (the function's name for FCALL), so the same script
// always lands on the same node. The proxy sends them as
//
//	TAIR.SCRIPT <bucket> TAIR.X <area> <table version> <proto> <command> ...
//
// (dataserver/script.go) on connections of its own (scriptConns), one
// request at a time each: a script may run for seconds, and on the
// shared pipelined connections it would hold up every request queued
// behind it. NOTMASTER and TRYAGAIN are retried after a table refresh,
// as any request; a lost connection after the request was written is
// answered "the write may have applied" unless the script was
// read-only.
//
// EVAL and EVALSHA (and their _RO forms) with keys first take the
// loop's pipelined connections as any keyed command does (tryFast), so
// a short script costs what a command does. The dataserver runs one
// there only when it has the script cached and its runs are quick;
// otherwise it answers TRYSCRIPTCONN without running it, and the proxy
// sends it on a script connection (finish) and keeps that script off
// that node's pipelined connections for a second (node.scriptsOff).
//
// SCRIPT LOAD and EXISTS go to one dataserver, which keeps the bodies
// with the configserver (so any proxy and any dataserver, one that joins
// later too, knows a script loaded anywhere); SCRIPT FLUSH and KILL go
// to every dataserver (KILL answers OK when a node stopped a script,
// else UNKILLABLE when one could not, else NOTBUSY). FUNCTION LOAD,
// DELETE and FLUSH go to one dataserver, then FUNCTION REFRESH to every
// other; LIST and STATS to one; KILL to every one.

func init() {
	for _, n := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"} {
		localHandlers[n] = barrier(cmdEval)
	}
	localHandlers["script"] = barrier(cmdScript)
	localHandlers["function"] = barrier(cmdFunction)
}

// scriptsOff holds the scripts (EVALSHA's sha, EVAL's body) that a
// dataserver sent back to a script connection, until when they stay off
// its pipelined connections.
type scriptsOff struct {
	mu    sync.RWMutex
	until map[string]time.Time
}

// scriptOffFor is how long a script sent back stays off the pipelined
// connections: the dataserver keeps a slow one off for longer itself,
// and a script it did not have cached is cached by then.
const scriptOffFor = time.Second

// pipelined reports whether args, an EVAL or EVALSHA (or _RO) with
// keys, may go on a pipelined connection.
func (o *scriptsOff) pipelined(args [][]byte, now time.Time) bool {
	o.mu.RLock()
	until, off := o.until[string(args[1])]
	o.mu.RUnlock()
	return !off || now.After(until)
}

// sendBack notes that a dataserver sent args's script to a script
// connection.
func (o *scriptsOff) sendBack(args [][]byte) {
	o.mu.Lock()
	if o.until == nil || len(o.until) > 10000 {
		o.until = map[string]time.Time{} // bounded: forget them all
	}
	o.until[string(args[1])] = time.Now().Add(scriptOffFor)
	o.mu.Unlock()
}

// isPipelinedScript reports whether spec is one of the scripts that may
// take the pipelined connections.
func isPipelinedScript(spec *command.Spec) bool {
	switch spec.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		return true
	}
	return false
}

// scriptPools holds each proxy's idle script connections per dataserver.
var scriptPools sync.Map // *Server → *scriptPool

type scriptPool struct {
	mu   sync.Mutex
	idle map[string][]*scriptConn
}

type scriptConn struct {
	c  net.Conn
	rd *resp.ReplyReader
}

func (s *Server) scriptPool() *scriptPool {
	if p, ok := scriptPools.Load(s); ok {
		return p.(*scriptPool)
	}
	p, _ := scriptPools.LoadOrStore(s, &scriptPool{idle: map[string][]*scriptConn{}})
	return p.(*scriptPool)
}

// maxIdleScriptConns bounds the idle connections kept per dataserver.
// It is sized for the concurrency of many clients running scripts at
// once: a connection dialled per script when the pool is full costs a
// dial, a close and both sides' buffers (with 50 clients and a bound of
// 8, dialling was the largest cost of EVALSHA: 7 % of the CPU and more
// than half of the bytes allocated).
const maxIdleScriptConns = 128

// errNotWritten: the request never reached the dataserver.
var errNotWritten = errors.New("script connection failed before the request was sent")

// scriptRoundTrip sends one command to addr and returns its raw reply;
// written tells whether the request may have reached the dataserver.
func (s *Server) scriptRoundTrip(addr string, req []byte, timeout time.Duration) (reply []byte, written bool, err error) {
	p := s.scriptPool()
	p.mu.Lock()
	var sc *scriptConn
	if l := p.idle[addr]; len(l) > 0 {
		sc, p.idle[addr] = l[len(l)-1], l[:len(l)-1]
	}
	p.mu.Unlock()
	if sc == nil {
		c, err := net.DialTimeout("tcp", addr, s.cfg.DialTimeout)
		if err != nil {
			return nil, false, err
		}
		sc = &scriptConn{c: c, rd: resp.NewReplyReader(c, 0, resp.Limits{})}
	}
	_ = sc.c.SetDeadline(time.Now().Add(timeout))
	if _, err := sc.c.Write(req); err != nil {
		_ = sc.c.Close()
		return nil, true, err
	}
	raw, err := sc.rd.ReadReply()
	if err != nil {
		_ = sc.c.Close()
		return nil, true, err
	}
	reply = append([]byte(nil), raw...)
	p.mu.Lock()
	if len(p.idle[addr]) < maxIdleScriptConns && s.ctx.Err() == nil {
		p.idle[addr] = append(p.idle[addr], sc)
		sc = nil
	}
	p.mu.Unlock()
	if sc != nil {
		_ = sc.c.Close()
	}
	return reply, true, nil
}

// scriptTimeout bounds one script request: the script itself may run
// long (SCRIPT KILL stops it), so it is generous.
const scriptTimeout = 10 * time.Minute

// scriptRequest is the TAIR.SCRIPT command for bucket b.
func (ss *session) scriptRequest(r *request, b route.BucketID, ver route.Version, args [][]byte) []byte {
	h := envelope.Header{Kind: envelope.Master, Area: uint16(r.area), Version: ver, Proto: r.proto, NoTouch: r.noTouch}
	full := append([][]byte{[]byte("TAIR.SCRIPT"), strconv.AppendUint(nil, uint64(b), 10)}, envelope.Args(h, args)...)
	return resp.AppendCommand(nil, full...)
}

// sendScript runs args on bucket b's master, retrying refusals while the
// table moves; write says whether it may write (a lost connection then
// cannot be retried).
func (ss *session) sendScript(r *request, b route.BucketID, args [][]byte, write bool) []byte {
	deadline := time.Now().Add(ss.srv.cfg.DialTimeout*5 + 5*time.Second)
	for attempt := 1; ; attempt++ {
		rt := ss.srv.r.load()
		if rt == nil {
			return resp.AppendErr(nil, clusterDown(errNoTable))
		}
		n := rt.master(b)
		if n == nil {
			if time.Now().After(deadline) {
				return resp.AppendErr(nil, bucketNoMaster(b))
			}
			ss.backoff(r, retryNoMaster, attempt)
			continue
		}
		reply, written, err := ss.srv.scriptRoundTrip(n.addr, ss.scriptRequest(r, b, rt.t.Version, args), scriptTimeout)
		if err != nil {
			if written && write {
				return resp.AppendErr(nil, envelope.Unsure("the connection to "+n.addr+" broke while the script ran"))
			}
			if time.Now().After(deadline) {
				return resp.AppendErr(nil, clusterDown(err))
			}
			ss.backoff(r, retryConn, attempt)
			continue
		}
		ref, ok := envelope.Decode(reply)
		if !ok || time.Now().After(deadline) {
			return reply
		}
		r.reply = reply
		if ref.Reason == envelope.NotMaster {
			ss.backoff(r, retryNotMaster, attempt)
		} else {
			ss.backoff(r, retryTryAgain, attempt)
		}
	}
}

// scriptKeys checks EVAL's and FCALL's numkeys and keys as Redis does
// and returns the bucket they route to (name's when there are none).
func (ss *session) scriptKeys(r *request, name []byte, fcall bool) (route.BucketID, bool) {
	args := r.args
	n, err := strconv.ParseInt(string(args[2]), 10, 64)
	if fcall && (err != nil || n < 0 || n > int64(len(args)-3)) {
		// FCALL looks the function up first: the dataserver answers.
		n = 0
		err = nil
	}
	switch {
	case err != nil:
		r.setError("ERR value is not an integer or out of range")
		return 0, false
	case n < 0:
		r.setError("ERR Number of keys can't be negative")
		return 0, false
	case n > int64(len(args)-3):
		r.setError("ERR Number of keys can't be greater than number of args")
		return 0, false
	}
	rt := ss.srv.r.load()
	if rt == nil {
		r.setErr(errNoTable)
		return 0, false
	}
	if n == 0 {
		return route.BucketOf(name, rt.t.Buckets), true
	}
	b := rt.t.Bucket(args[3])
	for _, k := range args[4 : 3+n] {
		if rt.t.Bucket(k) != b {
			r.setError("CROSSSLOT Keys in request don't hash to the same slot")
			return 0, false
		}
	}
	return b, true
}

func cmdEval(ss *session, r *request) {
	name := strings.ToLower(string(r.args[0]))
	var route []byte
	switch name {
	case "eval", "eval_ro":
		route = []byte(luascript.Sha1Hex(r.args[1]))
	case "evalsha", "evalsha_ro":
		if len(r.args[1]) != 40 {
			// not a sha: Redis answers so before reading numkeys
			r.setError("NOSCRIPT No matching script. Please use EVAL.")
			return
		}
		route = []byte(strings.ToLower(string(r.args[1])))
	default:
		route = r.args[1]
	}
	b, ok := ss.scriptKeys(r, route, strings.HasPrefix(name, "fcall"))
	if !ok {
		return
	}
	r.raw(ss.sendScript(r, b, r.args, !strings.HasSuffix(name, "_ro")))
}

// anyBucket is the bucket a keyless script command goes to: key's.
func (ss *session) anyBucket(key []byte) route.BucketID {
	rt := ss.srv.r.load()
	if rt == nil {
		return 0
	}
	return route.BucketOf(key, rt.t.Buckets)
}

// scriptEveryNode sends args to every dataserver of the table and
// returns their replies (an unreachable node's is its error).
func (ss *session) scriptEveryNode(r *request, args [][]byte) [][]byte {
	rt := ss.srv.r.load()
	if rt == nil {
		return [][]byte{resp.AppendErr(nil, clusterDown(errNoTable))}
	}
	replies := make([][]byte, len(rt.nodes))
	var wg sync.WaitGroup
	for i, n := range rt.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reply, _, err := ss.srv.scriptRoundTrip(n.addr, ss.scriptRequest(r, 0, rt.t.Version, args), 30*time.Second)
			if err != nil {
				reply = resp.AppendErr(nil, clusterDown(err))
			}
			replies[i] = reply
		}()
	}
	wg.Wait()
	return replies
}

func isErrorWith(reply []byte, prefix string) bool {
	return len(reply) > 0 && reply[0] == '-' && strings.HasPrefix(string(reply[1:]), prefix)
}

// killReply merges the nodes' SCRIPT KILL (or FUNCTION KILL) replies.
func killReply(replies [][]byte) []byte {
	for _, rep := range replies {
		if string(rep) == "+OK\r\n" {
			return rep
		}
	}
	for _, rep := range replies {
		if isErrorWith(rep, "UNKILLABLE") {
			return rep
		}
	}
	for _, rep := range replies {
		if !isErrorWith(rep, "NOTBUSY") {
			return rep
		}
	}
	return replies[0]
}

// firstError is the first error among replies, or OK.
func firstError(replies [][]byte) []byte {
	for _, rep := range replies {
		if len(rep) == 0 || rep[0] == '-' {
			return rep
		}
	}
	return []byte("+OK\r\n")
}

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Prints this help.",
}

var functionHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library description",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
	"HELP",
	"    Prints this help.",
}

// subcommandOK checks a SCRIPT or FUNCTION subcommand's name and arity
// as Redis does (its COMMAND INFO arities).
func subcommandOK(r *request, container string) bool {
	spec := r.spec
	sub := findSub(spec, r.args[1])
	if sub == nil {
		r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try " + container + " HELP.")
		return false
	}
	if sub.Arity >= 0 && len(r.args) != sub.Arity || sub.Arity < 0 && len(r.args) < -sub.Arity {
		r.setError("ERR wrong number of arguments for '" + sub.Name + "' command")
		return false
	}
	return true
}

func cmdScript(ss *session, r *request) {
	if !subcommandOK(r, "SCRIPT") {
		return
	}
	sub := strings.ToLower(string(r.args[1]))
	bad := func() {
		r.setError("ERR unknown subcommand or wrong number of arguments for '" + quotedArg(r.args[1]) + "'. Try SCRIPT HELP.")
	}
	switch sub {
	case "help":
		r.raw(helpReply("SCRIPT", scriptHelp[1:]))
	case "debug":
		r.setError("ERR SCRIPT DEBUG is not supported by this cluster")
	case "load":
		if len(r.args) != 3 {
			bad()
			return
		}
		r.raw(ss.sendScript(r, ss.anyBucket([]byte(luascript.Sha1Hex(r.args[2]))), r.args, false))
	case "exists":
		if len(r.args) < 3 {
			bad()
			return
		}
		r.raw(ss.sendScript(r, ss.anyBucket(r.args[2]), r.args, false))
	case "flush":
		if len(r.args) > 3 || len(r.args) == 3 && !strings.EqualFold(string(r.args[2]), "async") && !strings.EqualFold(string(r.args[2]), "sync") {
			r.setError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		r.raw(firstError(ss.scriptEveryNode(r, r.args)))
	case "kill":
		if len(r.args) != 2 {
			bad()
			return
		}
		r.raw(killReply(ss.scriptEveryNode(r, r.args)))
	default:
		bad()
	}
}

func cmdFunction(ss *session, r *request) {
	if strings.EqualFold(string(r.args[1]), "refresh") || !subcommandOK(r, "FUNCTION") {
		if strings.EqualFold(string(r.args[1]), "refresh") {
			r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try FUNCTION HELP.")
		}
		return
	}
	sub := strings.ToLower(string(r.args[1]))
	switch sub {
	case "help":
		r.raw(helpReply("FUNCTION", functionHelp[1:]))
	case "load", "delete", "flush", "restore":
		// One node checks and stores it; then every node reloads.
		reply := ss.sendScript(r, 0, r.args, false)
		if len(reply) > 0 && reply[0] != '-' {
			refresh := [][]byte{[]byte("FUNCTION"), []byte("REFRESH")}
			ss.scriptEveryNode(r, refresh)
		}
		r.raw(reply)
	case "kill":
		if len(r.args) != 2 {
			r.setError("ERR unknown subcommand or wrong number of arguments for 'kill'. Try FUNCTION HELP.")
			return
		}
		r.raw(killReply(ss.scriptEveryNode(r, r.args)))
	default:
		r.raw(ss.sendScript(r, 0, r.args, false))
	}
}
