package proxy

import (
	"errors"
	"math"
	"strconv"
	"strings"
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
	if r.spec.Name == "xread" || r.spec.Name == "xreadgroup" {
		ss.streamRead(r) // streamblock.go
		return
	}
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
	keys := r.spec.KeyIndexes(r.args)
	t, terr := parseTimeout(r.args[ti])
	if terr != "" {
		if len(keys) == 0 && (r.spec.Name == "blmpop" || r.spec.Name == "bzmpop") {
			// numkeys runs past the arguments: Redis's syntax error
			// (no direction) comes before the timeout
			r.setError("ERR syntax error")
			return
		}
		if len(keys) > 0 && (r.spec.Name == "blmpop" || r.spec.Name == "bzmpop") {
			// Redis parses their timeout after the direction and COUNT;
			// the dataserver checks them in that order, and its one
			// attempt refuses the timeout too.
			p := ss.attemptOnce(r, r.args, keys)
			if len(p.reply) > 0 && p.reply[0] == '-' {
				r.raw(p.reply)
				return
			}
		}
		r.setError(terr)
		return
	}
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
		p := ss.attemptOnce(r, r.args, keys)
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
			if ss.clientGone() || !ss.psWhileBlocked() {
				ss.quit = true
				r.reply = appendNullArray(r.reply[:0], r.proto)
				r.local = true
				return
			}
		}
	}
}

// attemptOnce has the dataserver make one non-blocking attempt of r with
// args (a blocking pop's own; XREAD's with its $ IDs resolved) and
// returns it answered. Blocking pops and stream reads both poll with it.
func (ss *session) attemptOnce(r *request, args [][]byte, keys []int) *request {
	p := ss.part(r, args)
	p.spec = r.spec
	ss.route(p, keys)
	if !p.local {
		ss.finish(p)
		ss.account(p)
	}
	return p
}

// parseTimeout reads a blocking command's timeout (seconds) as Redis's
// getTimeoutFromObjectOrReply does with strtold: hex floats, no digit
// separators or leading space; it returns Redis's error text when it is
// not a usable timeout. Beyond what a long long of milliseconds holds it
// is Redis 7.2's "timeout is out of range" (7.0 casts unchecked and says
// "timeout is negative").
func parseTimeout(b []byte) (float64, string) {
	const notFloat = "ERR timeout is not a float or out of range"
	s := string(b)
	if s == "" || strings.ContainsAny(s[:1], " \t\r\n\v\f") || strings.IndexByte(s, '_') >= 0 {
		return 0, notFloat
	}
	if h := strings.TrimLeft(s, "+-"); len(h) > 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') && !strings.ContainsAny(h, "pP") {
		s += "p0"
	}
	t, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(t) {
		return 0, notFloat
	}
	if t < 0 {
		return 0, "ERR timeout is negative"
	}
	if t*1000 >= math.MaxInt64 {
		return 0, "ERR timeout is out of range"
	}
	return t, ""
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
