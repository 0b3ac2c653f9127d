package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// MIGRATE and WAIT, answered by the proxy.
//
// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password | AUTH2 username password] [KEYS key ...] moves keys of
// the cluster to another Redis-protocol server as Redis's migrateCommand
// does: each key's DUMP and remaining TTL are read from its bucket's
// master, the target gets [AUTH,] SELECT and one RESTORE per key (with
// REPLACE when asked) in one write, and every key the target restored
// is deleted here unless COPY. The replies and errors are Redis's
// (NOKEY, IOERR, "Target instance replied with error: ..."). Unlike
// Redis it is not atomic: a key written between its DUMP and its DEL
// loses that write (Redis blocks the whole server meanwhile); keys whose
// type has no Redis encoding (Tair's items and TairHash) fail at DUMP
// before anything is sent. The other way, a redis-server's MIGRATE into
// the cluster sends SELECT and RESTORE (RESTORE-ASKING from a Redis
// Cluster node), which the proxy serves as any client's.
//
// WAIT numreplicas timeout answers how many copies beyond the master
// hold this client's acknowledged writes. Replication is synchronous
// here: a write is acknowledged once every slave of its bucket applied
// it, except slaves the configserver marked behind (degraded mode). The
// answer is the fewest caught-up slaves of any bucket (a bound that never
// overstates, without tracking which buckets the client wrote); when it
// is below numreplicas, WAIT waits up to timeout (0: for ever) for a
// behind slave to catch up, as Redis waits for acknowledgements.

// migrateKeys finds MIGRATE's keys: the one at 3, or those after KEYS
// when it is empty (COMMAND GETKEYS; the proxy reads them itself).
func migrateKeys(args [][]byte) []int {
	if len(args) < 6 {
		return nil
	}
	if len(args[3]) > 0 {
		return []int{3}
	}
	for j := 6; j < len(args); j++ {
		switch {
		case resp.EqualFold(args[j], "keys"):
			out := make([]int, 0, len(args)-j-1)
			for k := j + 1; k < len(args); k++ {
				out = append(out, k)
			}
			return out
		case resp.EqualFold(args[j], "auth"):
			j++
		case resp.EqualFold(args[j], "auth2"):
			j += 2
		}
	}
	return nil
}

// migrateArgs is MIGRATE's parsed command line.
type migrateArgs struct {
	addr           string
	db, timeout    int64
	copy, replace  bool
	user, password []byte
	auth           bool
	keys           [][]byte
}

// parseMigrate parses r's arguments in Redis's order: the options first,
// then the timeout and the database as integers.
func parseMigrate(args [][]byte) (migrateArgs, string) {
	m := migrateArgs{addr: net.JoinHostPort(string(args[1]), string(args[2]))}
	keys := args[3:4]
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case resp.EqualFold(args[j], "copy"):
			m.copy = true
		case resp.EqualFold(args[j], "replace"):
			m.replace = true
		case resp.EqualFold(args[j], "auth"):
			if more < 1 {
				return m, "ERR syntax error"
			}
			j++
			m.auth, m.user, m.password = true, nil, args[j]
		case resp.EqualFold(args[j], "auth2"):
			if more < 2 {
				return m, "ERR syntax error"
			}
			m.auth, m.user, m.password = true, args[j+1], args[j+2]
			j += 2
		case resp.EqualFold(args[j], "keys"):
			if len(args[3]) != 0 {
				return m, "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
			}
			keys = args[j+1:]
			j = len(args)
		default:
			return m, "ERR syntax error"
		}
	}
	var ok bool
	if m.timeout, ok = redisnum.ParseInt(args[5]); !ok {
		return m, "ERR value is not an integer or out of range"
	}
	if m.db, ok = redisnum.ParseInt(args[4]); !ok {
		return m, "ERR value is not an integer or out of range"
	}
	if m.timeout <= 0 {
		m.timeout = 1000
	}
	m.keys = keys
	return m, ""
}

// migrated is one key on its way: its DUMP and its TTL in milliseconds
// (0: none).
type migrated struct {
	key, payload []byte
	ttl          int64
}

func cmdMigrate(ss *session, r *request) {
	m, msg := parseMigrate(r.args)
	if msg != "" {
		r.setError(msg)
		return
	}
	// What is here to move: the keys that exist, read from their masters.
	var moving []migrated
	for _, k := range m.keys {
		d := ss.runKeyed(r, []byte("DUMP"), k)
		if isError(d.reply) {
			r.raw(d.reply)
			return
		}
		payload, null, ok := parseBulk(d.reply)
		if !ok {
			r.setError("ERR bad reply from dataserver")
			return
		}
		if null {
			continue
		}
		t := ss.runKeyed(r, []byte("PTTL"), k)
		ttl, ok := parseIntReply(t.reply)
		switch {
		case !ok:
			r.setError("ERR bad reply from dataserver")
			return
		case ttl == -2:
			continue // expired or deleted since the DUMP
		case ttl < 0:
			ttl = 0
		case ttl == 0:
			ttl = 1
		}
		moving = append(moving, migrated{key: bytes.Clone(k), payload: bytes.Clone(payload), ttl: ttl})
	}
	if len(moving) == 0 {
		r.status("NOKEY")
		return
	}

	timeout := millis(m.timeout)
	conn, err := net.DialTimeout("tcp", m.addr, timeout)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		// Redis connects without blocking and learns of a refusal when
		// it writes the commands.
		r.setError("IOERR error or timeout writing to target instance")
		return
	case err != nil:
		r.setError("IOERR error or timeout connecting to the client")
		return
	}
	defer conn.Close()
	var out []byte
	if m.auth {
		if m.user != nil {
			out = resp.AppendCommand(out, []byte("AUTH"), m.user, m.password)
		} else {
			out = resp.AppendCommand(out, []byte("AUTH"), m.password)
		}
	}
	out = resp.AppendCommand(out, []byte("SELECT"), strconv.AppendInt(nil, m.db, 10))
	for _, mv := range moving {
		args := [][]byte{[]byte("RESTORE"), mv.key, strconv.AppendInt(nil, mv.ttl, 10), mv.payload}
		if m.replace {
			args = append(args, []byte("REPLACE"))
		}
		out = resp.AppendCommand(out, args...)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(out); err != nil {
		r.setError("IOERR error or timeout writing to target instance")
		return
	}
	br := bufio.NewReader(conn)
	readLine := func() ([]byte, bool) {
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, false
		}
		return bytes.TrimRight(line, "\r\n"), true
	}
	var authReply, selectReply []byte
	if m.auth {
		l, ok := readLine()
		if !ok {
			r.setError("IOERR error or timeout reading to target instance")
			return
		}
		authReply = bytes.Clone(l)
	}
	l, ok := readLine()
	if !ok {
		r.setError("IOERR error or timeout reading to target instance")
		return
	}
	selectReply = bytes.Clone(l)
	var targetErr []byte
	for _, mv := range moving {
		l, ok := readLine()
		if !ok {
			if targetErr == nil {
				r.setError("IOERR error or timeout reading to target instance")
				return
			}
			break
		}
		var bad []byte
		switch {
		case isErrLine(authReply):
			bad = authReply
		case isErrLine(selectReply):
			bad = selectReply
		case isErrLine(l):
			bad = l
		case len(l) == 0:
			bad = []byte("-")
		}
		if bad != nil {
			if targetErr == nil {
				targetErr = bytes.Clone(bad[1:])
			}
			continue
		}
		if !m.copy {
			// Restored there: gone from here.
			if d := ss.runKeyed(r, []byte("DEL"), mv.key); isError(d.reply) {
				r.raw(d.reply)
				return
			}
		}
	}
	if targetErr != nil {
		r.setError("ERR Target instance replied with error: " + string(targetErr))
		return
	}
	r.ok()
}

// cmdWait: WAIT numreplicas timeout (see the top of the file).
func cmdWait(ss *session, r *request) {
	want, ok := redisnum.ParseInt(r.args[1])
	if !ok {
		r.setError("ERR value is not an integer or out of range")
		return
	}
	ms, ok := redisnum.ParseInt(r.args[2])
	if !ok {
		r.setError("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		r.setError("ERR timeout is negative")
		return
	}
	var deadline time.Time
	if ms > 0 {
		deadline = time.Now().Add(millis(ms))
	}
	for {
		have := ss.caughtUpReplicas()
		if have >= want || ss.tx.active || ss.clientGone() || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			r.reply = resp.AppendInt(r.reply[:0], have)
			r.local = true
			return
		}
		pause := 50 * time.Millisecond
		if !deadline.IsZero() {
			pause = min(pause, time.Until(deadline))
		}
		time.Sleep(pause)
	}
}

// millis is n milliseconds (n > 0), capped at the longest Duration: a
// client's timeout in ms can be any long long, which times a million
// overflows Duration (a "timeout" already past).
func millis(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Millisecond
}

// caughtUpReplicas is the fewest slaves of any bucket that the table does
// not mark behind their master (0 without a table).
func (ss *session) caughtUpReplicas() int64 {
	rt := ss.srv.r.load()
	if rt == nil {
		return 0
	}
	t := rt.t
	fewest := -1
	for b := range route.BucketID(t.Buckets) {
		m := t.Master(b)
		n := 0
		for _, s := range t.Slaves(b) {
			if s != "" && !t.IsBehind(m, s) {
				n++
			}
		}
		if fewest < 0 || n < fewest {
			fewest = n
		}
	}
	return int64(max(fewest, 0))
}

// runKeyed runs one keyed command of the cluster for a barrier and waits
// for its RESP2 reply (in the returned request's reply).
func (ss *session) runKeyed(parent *request, args ...[]byte) *request {
	p := ss.part(parent, args)
	p.proto = 2
	p.spec = command.Lookup(args[0])
	ss.route(p, p.spec.AppendKeyIndexes(nil, p.args))
	if !p.local {
		ss.finish(p)
		ss.account(p)
	}
	return p
}

func isErrLine(l []byte) bool { return len(l) > 0 && l[0] == '-' }
