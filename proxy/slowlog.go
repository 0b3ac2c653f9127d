package proxy

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tairkv/tair/resp"
)

// slowlog keeps the slowest recent commands (SLOWLOG GET/LEN/RESET): a
// ring of at most max entries, so that adding one costs the same
// whatever the length (under load many commands may cross the
// threshold).
type slowlog struct {
	mu     sync.Mutex
	max    int
	nextID int64
	ring   []slowEntry // capacity max once full
	head   int         // index of the oldest entry when the ring is full
}

type slowEntry struct {
	id   int64
	at   time.Time
	dur  time.Duration
	args []string
	addr string
	name string
}

func (l *slowlog) add(ss *session, args [][]byte, d time.Duration) {
	e := slowEntry{at: time.Now(), dur: d, addr: ss.addr, name: *ss.info.name.Load()}
	n := len(args)
	if n > 32 {
		n = 32
	}
	e.args = make([]string, 0, n)
	for i := 0; i < n; i++ {
		a := args[i]
		if len(a) > 128 {
			e.args = append(e.args, string(a[:128])+"... ("+strconv.Itoa(len(a)-128)+" more bytes)")
		} else {
			e.args = append(e.args, string(a))
		}
	}
	if len(args) > 32 {
		e.args[31] = "... (" + strconv.Itoa(len(args)-31) + " more arguments)"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	if l.max <= 0 {
		return
	}
	if len(l.ring) < l.max {
		l.ring = append(l.ring, e)
		return
	}
	l.ring[l.head] = e
	l.head = (l.head + 1) % len(l.ring)
}

// entriesLocked returns the entries oldest first (a fresh slice).
func (l *slowlog) entriesLocked() []slowEntry {
	out := make([]slowEntry, 0, len(l.ring))
	out = append(out, l.ring[l.head:]...)
	return append(out, l.ring[:l.head]...)
}

// length is SLOWLOG LEN.
func (l *slowlog) length() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ring)
}

// reset is SLOWLOG RESET.
func (l *slowlog) reset() {
	l.mu.Lock()
	l.ring, l.head = nil, 0
	l.mu.Unlock()
}

// newest returns the count newest entries (every one for count < 0),
// oldest first.
func (l *slowlog) newest(count int) []slowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := l.entriesLocked()
	if count >= 0 && count < len(es) {
		es = es[len(es)-count:]
	}
	return es
}

// maxLen is slowlog-max-len.
func (l *slowlog) maxLen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}

// setMax changes slowlog-max-len, keeping the newest entries.
func (l *slowlog) setMax(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	es := l.entriesLocked()
	if n < 0 {
		n = 0
	}
	if len(es) > n {
		es = es[len(es)-n:]
	}
	l.max, l.ring, l.head = n, es, 0
}

func cmdSlowlog(ss *session, r *request) {
	l := &ss.srv.slowlog
	switch strings.ToLower(string(r.args[1])) {
	case "len":
		r.integer(int64(l.length()))
	case "reset":
		l.reset()
		r.ok()
	case "get":
		count := 10
		if len(r.args) > 2 {
			n, err := strconv.Atoi(string(r.args[2]))
			if err != nil || n < -1 {
				r.setError("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		es := l.newest(count)
		b := resp.AppendArray(r.reply[:0], len(es))
		for i := len(es) - 1; i >= 0; i-- {
			e := es[i]
			b = resp.AppendArray(b, 6)
			b = resp.AppendInt(b, e.id)
			b = resp.AppendInt(b, e.at.Unix())
			b = resp.AppendInt(b, e.dur.Microseconds())
			b = resp.AppendArray(b, len(e.args))
			for _, a := range e.args {
				b = resp.AppendBulkString(b, a)
			}
			b = resp.AppendBulkString(b, e.addr)
			b = resp.AppendBulkString(b, e.name)
		}
		r.raw(b)
	case "help":
		r.raw(helpReply("SLOWLOG", []string{"GET [<count>]", "LEN", "RESET"}))
	default:
		r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try SLOWLOG HELP.")
	}
}
