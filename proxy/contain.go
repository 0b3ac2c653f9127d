package proxy

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/liveness"
	"github.com/tairkv/tair/resp"
)

// # Containment
//
// A panic while the proxy handles one command (a bug) costs that
// command: it is answered "-ERR internal error while running '<cmd>'" in
// its place in the client's order, logged with the command's name and
// the stack (never its arguments), counted in tair_proxy_panics_total,
// and the connection and the proxy serve on.
//
//   - On the session goroutine, prepare and a barrier's run are
//     contained per command (prepareContained, barrierContained). The
//     request that panicked, and every request taken from the session's
//     pool after it, are dropped from the pool (a backend may still
//     complete them; nobody reads them) and a fresh request carries the
//     error. A panic elsewhere on the goroutine (waiting for replies,
//     retrying) still ends the session: its connection is closed
//     (tair_proxy_session_panics_total).
//   - On the event loop, a command's fast path (tryFast) is contained the
//     same way; a panic in any other loop work closes the connection it
//     was for (OnTraffic) or is dropped (a task posted to the loop), so
//     the loop serves its other clients on.
//
// The proxy keeps no data: a command that panicked changed nothing but
// what it sent to a dataserver, whose reply is then ignored. A write may
// thus have applied although its client got the error, as after a
// TIMEOUT.

// testHook, when set (tests only), is called with a point and a
// command's name: "slow" before the session goroutine prepares it,
// "loop" before the event loop tries its fast path. Tests make it panic
// or block there.
var testHook atomic.Pointer[func(point, cmd string)]

func runTestHook(point string, args [][]byte) {
	if h := testHook.Load(); h != nil {
		(*h)(point, commandName(args))
	}
}

// commandName is a command's name for logs: the command table's, else
// "unknown" (what a client sent is user data).
func commandName(args [][]byte) string {
	if len(args) == 0 {
		return "empty"
	}
	if spec := command.Lookup(args[0]); spec != nil {
		return spec.Name
	}
	return "unknown"
}

func internalError(name string) string {
	return "ERR internal error while running '" + name + "'"
}

// panicked logs and counts a panic.
func (s *Server) panicked(what string, v any) {
	s.m.panics.Inc()
	s.log.Error("panic while handling a command", "cmd", what, "panic", panicText(v), "stack", string(debug.Stack()))
}

// panicText is the panic value for the log: a runtime error's text,
// else only its type (a value a bug panicked with may hold user data).
func panicText(v any) string {
	if re, ok := v.(runtime.Error); ok {
		return re.Error()
	}
	return fmt.Sprintf("%T", v)
}

// prepareContained is prepare under recover; it returns the request to
// queue (a fresh one answering the error after a panic).
func (ss *session) prepareContained(r *request, args [][]byte) (out *request) {
	defer func() {
		if v := recover(); v != nil {
			out = ss.replaceAfterPanic(r, args, v)
		}
	}()
	if testHook.Load() != nil {
		runTestHook("slow", args)
	}
	ss.prepare(r, args)
	return r
}

// barrierContained runs r's barrier under recover; it returns the
// request to queue.
func (ss *session) barrierContained(r *request) (out *request) {
	args := r.args
	defer func() {
		if v := recover(); v != nil {
			out = ss.replaceAfterPanic(r, args, v)
		}
	}()
	r.barrier(r)
	return r
}

// replaceAfterPanic drops r and the requests taken from the pool after
// it (a backend may still complete them) and returns a fresh request in
// r's place that answers the error.
func (ss *session) replaceAfterPanic(r *request, args [][]byte, v any) *request {
	name := commandName(args)
	ss.srv.panicked(name, v)
	i := ss.nreq - 1
	for i >= 0 && ss.reqs[i] != r {
		i--
	}
	nr := &request{ss: ss}
	if i >= 0 {
		for j := i; j < ss.nreq; j++ {
			ss.reqs[j] = &request{ss: ss}
		}
		nr = ss.reqs[i]
		ss.nreq = i + 1
	}
	nr.start = r.start
	nr.setError(internalError(name))
	return nr
}

// tryFastContained is tryFast under recover: after a panic the command
// is answered with the error in its place in the client's order (a
// request it queued is dropped: a backend may still complete it).
func (ss *session) tryFastContained(args [][]byte) (ok bool) {
	n := len(ss.fifo)
	defer func() {
		if v := recover(); v != nil {
			name := commandName(args)
			ss.srv.panicked(name, v)
			nr := ss.ls.get(ss)
			nr.reply = resp.AppendError(nr.reply[:0], internalError(name))
			nr.done = true
			if len(ss.fifo) > n {
				ss.fifo[n] = nr
				ss.fifo = ss.fifo[:n+1]
			} else {
				ss.fifo = append(ss.fifo, nr)
				ss.inflight++
			}
			ss.localDone = true
			ok = true
		}
	}()
	if testHook.Load() != nil {
		runTestHook("loop", args)
	}
	return ss.tryFast(args)
}

// --- watchdog ---

// closeWait bounds Close's wait for the proxy's goroutines after the
// event loops were stopped (gnetx waits up to 5 s for those): the
// sessions of a wedged loop are never closed.
const closeWait = 5 * time.Second

// defaultStallTimeout: an event loop that runs one event or task this
// long makes the proxy unhealthy (/healthz 503).
const defaultStallTimeout = 5 * time.Second

// checkStalls looks at every loop's stamp (on the tick goroutine, off
// the loops) and publishes the verdict /healthz reports.
func (fe *frontEnd) checkStalls(now time.Time, seen *liveness.Stalls[*loopState]) {
	s := fe.s
	var worst time.Duration
	fe.loops.Range(func(_, v any) bool {
		ls := v.(*loopState)
		worst = max(worst, seen.Look(ls, &ls.runs, now))
		return true
	})
	seen.Sweep()
	var reason string
	if limit := time.Duration(s.stallAfter.Load()); worst >= limit {
		reason = fmt.Sprintf("stalled: an event loop has run one event for %v without progress", worst.Round(time.Millisecond))
	}
	old := s.unhealthy.Load()
	switch {
	case reason != "" && old == nil:
		s.log.Error("an event loop stalled: reporting unhealthy", "reason", reason)
	case reason == "" && old != nil:
		s.log.Warn("the event loops progress again: reporting healthy", "was", *old)
	}
	if reason == "" {
		s.unhealthy.Store(nil)
	} else {
		s.unhealthy.Store(&reason)
	}
}
