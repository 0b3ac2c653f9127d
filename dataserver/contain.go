package dataserver

import (
	"fmt"
	"net"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/envelope"
	"github.com/tairkv/tair/resp"
)

// # Containment
//
// A panic while one command runs (a bug in exec, an engine, a hook)
// costs that command, not the process nor the connection: runBatch runs
// each command under recover (handleContained), answers it
// "-ERR internal error while running '<cmd>'", logs the command's name
// and the stack (never its arguments: they are user data), counts it in
// tair_dataserver_panics_total, and goes on with the next command of the
// batch. What the command held is released on the way out: the bucket
// locks are deferred unlocks, and the copy lock a replication item's
// apply holds (bulkMu) is released by applyItemContained; the reply's
// pending state (its replication waits) is dropped, so the reply waits
// for nothing.
//
// What a panicking write may have left: it panicked under its bucket's
// lock, after exec may have changed this master's engine, and before (or
// while) the change was appended to the slaves' streams. So the slaves
// may lack part of it, and the write is not acknowledged (the client
// gets the error, and cannot tell whether it applied). execWrite
// therefore marks the bucket diverged and has resyncDiverged send its
// slaves a full copy of it (a "begin" item and a snapshot taken under the
// bucket's lock, after everything written meanwhile); a migration of the
// bucket in progress is marked broken and starts over with a new full
// copy. Until the copy arrives a slave may read the bucket without the
// failed write's effects; should this master die first, a promoted slave
// lacks them, which is allowed: the write was never acknowledged. A
// panic while a slave applies a replication item refuses the item (the
// master answers its write as one that may have applied) and marks the
// slave's copy diverged, so it asks its master for a full copy.

// testHook, when set (tests only), is called with a point and the
// command's name: "run" before each command runs, "applied" in execWrite
// after exec changed the engine and before the write is replicated,
// "apply" before a slave applies a replication item (cmd "tair.repl").
// Tests make it panic or block there.
var testHook atomic.Pointer[func(point, cmd string)]

func runTestHook(point, cmd string) {
	if h := testHook.Load(); h != nil {
		(*h)(point, cmd)
	}
}

// commandName is a command's name for logs: the command table's name,
// the dataserver's own (TAIR.REPL ...), else "unknown" (the name a
// client sent is user data too).
func commandName(args [][]byte) string {
	if len(args) == 0 {
		return "empty"
	}
	if isEnvelope(args[0]) && len(args) > envelope.Fields {
		args = args[envelope.Fields:]
	}
	if sp := special(args[0]); sp != "" {
		return strings.ToLower(sp)
	}
	if spec := command.Lookup(args[0]); spec != nil {
		return spec.Name
	}
	return "unknown"
}

// handleContained is handle under recover: a panic answers the command
// with an error, its reply waits for nothing, and the batch goes on.
func (s *Server) handleContained(out []byte, args [][]byte, p *pending, peer net.Addr) (res []byte) {
	start := len(out)
	defer func() {
		if v := recover(); v != nil {
			name := commandName(args)
			s.panicked(name, v)
			p.waits, p.write, p.migrating = nil, false, false
			res = resp.AppendError(out[:start], "ERR internal error while running '"+name+"'")
		}
	}()
	if testHook.Load() != nil {
		runTestHook("run", commandName(args))
	}
	return s.handle(out, args, p, peer)
}

// panicked logs and counts a contained panic.
func (s *Server) panicked(cmd string, v any) {
	s.m.panics.Inc()
	s.log.Error("panic while running a command; answered with an error", "cmd", cmd,
		"panic", panicText(v), "stack", string(debug.Stack()))
}

// panicText is the panic value for the log: a runtime error's text
// (an index out of range, a nil dereference), else only its type (a
// value a bug panicked with may hold user data).
func panicText(v any) string {
	if re, ok := v.(runtime.Error); ok {
		return re.Error()
	}
	return fmt.Sprintf("%T", v)
}

// writePanicked answers a write that panicked under bucket bk's lock
// (held) after exec may have changed the engine: the bucket's slaves
// and its migration's destination may lack part of it, so the bucket is
// marked diverged (the caller has resyncDiverged send the slaves a full
// copy once the lock is released) and a migration in progress starts
// over. The write is not acknowledged.
func (s *Server) writePanicked(bk *bucket, out []byte, args [][]byte, p *pending, v any) []byte {
	name := commandName(args)
	s.panicked(name, v)
	p.waits, p.write, p.migrating = nil, false, false
	bk.setDivergedAll()
	if m := bk.mig; m != nil {
		m.broken.Store(true)
	}
	return resp.AppendError(out, "ERR internal error while running '"+name+"'")
}

// unlockWrite is deferred by a write path that locked bk (execWrite,
// multiExecRun) with out as it was then: it releases the lock and, if
// the write panicked, answers it in *res in place of whatever it had
// appended (writePanicked) and has the bucket's slaves resynced once the
// lock is released. It calls recover itself, as a deferred function must.
func (s *Server) unlockWrite(bk *bucket, out []byte, args [][]byte, p *pending, res *[]byte) {
	v := recover()
	if v != nil {
		*res = s.writePanicked(bk, out, args, p, v)
	}
	bk.unlock()
	if v != nil {
		s.resyncAfterPanic()
	}
}

// resyncAfterPanic sends the slaves of the diverged buckets this node
// masters a full copy (off the caller's goroutine: it takes the copy
// lock, which comes before a bucket's lock).
func (s *Server) resyncAfterPanic() {
	if t := s.Table(); t != nil && !s.closing.Load() {
		go s.resyncDiverged(t)
	}
}
