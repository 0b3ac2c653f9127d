package proxy

import (
	"bytes"
	"strconv"
	"time"

	"github.com/tairkv/tair/internal/command"
)

// streamRead serves XREAD and XREADGROUP, which the table flags Blocking:
// the dataserver makes one non-blocking attempt per call (a null when
// there is nothing to read), and with BLOCK the proxy polls it, as
// blockingPop does for the pops, until something comes or the timeout
// ends. No backend connection ever waits.
//
// XREAD's "$" means "what is added after the call": polling with "$"
// would miss an entry added between two attempts, so before the first
// attempt each "$" is replaced by the stream's last id at that moment
// (its last-generated-id from XINFO STREAM; 0-0 for a missing key). An
// entry added after that is above the id, and every later attempt sees
// it. XREADGROUP's ">" needs nothing of the kind: the group remembers
// what it delivered.
func (ss *session) streamRead(r *request) {
	keys := r.spec.KeyIndexes(r.args)
	if len(keys) == 0 {
		// no STREAMS, or unbalanced: the dataserver's syntax error
		ss.anyNode(r)
		return
	}
	block, ms := streamBlockArg(r.args)
	args := r.args
	if block && r.spec.Name == "xread" {
		args = ss.resolveLastIDs(r, keys)
	}
	p := ss.attemptOnce(r, args, keys)
	if !block || !isNullReply(p.reply) {
		r.raw(p.reply)
		return
	}
	var deadline time.Time
	if ms > 0 {
		deadline = time.Now().Add(time.Duration(min(ms, int64(100*365*24*time.Hour/time.Millisecond))) * time.Millisecond)
	}
	pause := time.Millisecond
	lastPoll := time.Now()
	ss.srv.stats.blocked.Add(1)
	defer ss.srv.stats.blocked.Add(-1)
	for {
		if ss.srv.closing.Load() {
			r.raw(p.reply)
			return
		}
		if !deadline.IsZero() && time.Now().Add(pause).After(deadline) {
			d := time.Until(deadline)
			if d <= 0 {
				r.reply = appendNullArray(r.reply[:0], r.proto)
				r.local = true
				return
			}
			time.Sleep(d) // one last attempt at the deadline
		} else {
			time.Sleep(pause)
			if pause < 20*time.Millisecond {
				pause *= 2
			}
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
		p = ss.attemptOnce(r, args, keys)
		if !isNullReply(p.reply) {
			r.raw(p.reply)
			return
		}
	}
}

// streamBlockArg finds XREAD's or XREADGROUP's BLOCK among the options
// before STREAMS: its milliseconds when it is a usable timeout (the
// dataserver answers the errors of one that is not).
func streamBlockArg(args [][]byte) (bool, int64) {
	for i := 1; i < len(args)-1; i++ {
		a := args[i]
		switch {
		case bytes.EqualFold(a, []byte("block")):
			ms, err := strconv.ParseInt(string(args[i+1]), 10, 64)
			if err != nil || ms < 0 {
				return false, 0
			}
			return true, ms
		case bytes.EqualFold(a, []byte("count")):
			i++
		case bytes.EqualFold(a, []byte("group")):
			i += 2
		case bytes.EqualFold(a, []byte("noack")):
		default:
			return false, 0
		}
	}
	return false, 0
}

var (
	xinfoSpec = command.Lookup([]byte("xinfo"))
	argDollar = []byte("$")
)

// resolveLastIDs returns r's arguments with each "$" id replaced by its
// stream's last id now (see streamRead). A stream that cannot be read
// (another type, a failure) keeps its "$": the attempt answers for it.
func (ss *session) resolveLastIDs(r *request, keys []int) [][]byte {
	var out [][]byte
	for _, k := range keys {
		idi := k + len(keys) // the ids follow the keys
		if idi >= len(r.args) || !bytes.Equal(r.args[idi], argDollar) {
			continue
		}
		p := ss.part(r, [][]byte{[]byte("XINFO"), []byte("STREAM"), r.args[k]})
		p.spec, p.proto = xinfoSpec, 2
		ss.route(p, []int{2})
		if !p.local {
			ss.finish(p)
			ss.account(p)
		}
		id, ok := lastGeneratedID(p.reply)
		if !ok {
			continue
		}
		if out == nil {
			out = append([][]byte(nil), r.args...)
		}
		out[idi] = id
	}
	if out == nil {
		return r.args
	}
	return out
}

// lastGeneratedID reads last-generated-id from a RESP2 XINFO STREAM
// reply; "ERR no such key" is 0-0 (any entry added later is new).
func lastGeneratedID(b []byte) ([]byte, bool) {
	if bytes.HasPrefix(b, []byte("-ERR no such key")) {
		return []byte("0-0"), true
	}
	if len(b) == 0 || b[0] != '*' {
		return nil, false
	}
	line := func() ([]byte, bool) {
		i := bytes.Index(b, []byte("\r\n"))
		if i < 0 {
			return nil, false
		}
		l := b[:i]
		b = b[i+2:]
		return l, true
	}
	if _, ok := line(); !ok {
		return nil, false
	}
	// simple elements: bulk strings and integers, until the field
	elem := func() ([]byte, bool) {
		l, ok := line()
		if !ok || len(l) == 0 {
			return nil, false
		}
		switch l[0] {
		case ':':
			return l[1:], true
		case '$':
			n, err := strconv.Atoi(string(l[1:]))
			if err != nil || n < 0 || n+2 > len(b) {
				return nil, false
			}
			v := b[:n]
			b = b[n+2:]
			return v, true
		}
		return nil, false
	}
	for range 8 {
		k, ok := elem()
		if !ok {
			return nil, false
		}
		v, ok := elem()
		if !ok {
			return nil, false
		}
		if string(k) == "last-generated-id" {
			return append([]byte(nil), v...), true
		}
	}
	return nil, false
}
