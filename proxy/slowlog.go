package proxy

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tairkv/tair/resp"
)

// slowlog keeps the slowest recent commands (SLOWLOG GET/LEN/RESET).
type slowlog struct {
	mu      sync.Mutex
	max     int
	nextID  int64
	entries []slowEntry // newest last
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
	l.entries = append(l.entries, e)
	if len(l.entries) > l.max {
		l.entries = append(l.entries[:0], l.entries[len(l.entries)-l.max:]...)
	}
}

func cmdSlowlog(ss *session, r *request) {
	l := &ss.srv.slowlog
	switch strings.ToLower(string(r.args[1])) {
	case "len":
		l.mu.Lock()
		n := len(l.entries)
		l.mu.Unlock()
		r.integer(int64(n))
	case "reset":
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
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
		l.mu.Lock()
		es := l.entries
		if count >= 0 && count < len(es) {
			es = es[len(es)-count:]
		}
		es = append([]slowEntry(nil), es...)
		l.mu.Unlock()
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
		r.setError("ERR unknown subcommand '" + sanitize(r.args[1]) + "'. Try SLOWLOG HELP.")
	}
}
