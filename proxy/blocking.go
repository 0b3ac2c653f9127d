package proxy

import (
	"math"
	"strconv"
	"time"
)

// blockingPop serves BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX and BZMPOP in the proxy: the dataserver makes one
// non-blocking attempt per call (a null reply when there is nothing),
// and the proxy polls with a growing pause (1 ms to 20 ms) until an
// element comes or the timeout ends. No backend connection ever blocks,
// so no other client waits; only this client's own pipeline does, as in
// Redis.
func (ss *session) blockingPop(r *request) {
	ti := len(r.args) - 1
	switch r.spec.Name {
	case "blmpop", "bzmpop":
		ti = 1
		// Redis checks numkeys before the timeout.
		if n, err := strconv.ParseInt(string(r.args[2]), 10, 64); err != nil || n < 1 {
			r.setError("ERR numkeys should be greater than 0")
			return
		}
	}
	t, err := strconv.ParseFloat(string(r.args[ti]), 64)
	if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
		r.setError("ERR timeout is not a float or out of range")
		return
	}
	if t < 0 {
		r.setError("ERR timeout is negative")
		return
	}
	keys := r.spec.KeyIndexes(r.args)
	if len(keys) == 0 {
		r.setError("ERR syntax error")
		return
	}
	var deadline time.Time
	if t > 0 {
		deadline = time.Now().Add(time.Duration(t * float64(time.Second)))
	}
	pause := time.Millisecond
	lastPoll := time.Now()
	ss.srv.stats.blocked.Add(1)
	defer ss.srv.stats.blocked.Add(-1)
	for {
		p := ss.part(r, r.args)
		p.spec = r.spec
		ss.route(p, keys)
		if !p.local {
			ss.finish(p)
			ss.account(p)
		}
		if !isNullReply(p.reply) {
			r.raw(p.reply)
			return
		}
		if ss.srv.closing.Load() {
			r.reply = p.reply
			r.local = true
			return
		}
		if !deadline.IsZero() && time.Now().Add(pause).After(deadline) {
			if d := time.Until(deadline); d > 0 {
				time.Sleep(d)
				continue // one last attempt at the deadline
			}
			r.reply = appendNullArray(r.reply[:0], r.proto)
			r.local = true
			return
		}
		time.Sleep(pause)
		if pause < 20*time.Millisecond {
			pause *= 2
		}
		if time.Since(lastPoll) > 50*time.Millisecond {
			lastPoll = time.Now()
			if ss.clientGone() {
				ss.quit = true
				r.reply = appendNullArray(r.reply[:0], r.proto)
				r.local = true
				return
			}
		}
	}
}

// clientGone reports whether the client closed its connection (its
// event loop saw it go).
func (ss *session) clientGone() bool {
	return ss.closed.Load()
}

func appendNullArray(b []byte, proto int) []byte {
	if proto >= 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "*-1\r\n"...)
}

func isNullReply(b []byte) bool {
	s := string(b)
	return s == "*-1\r\n" || s == "_\r\n" || s == "$-1\r\n"
}
