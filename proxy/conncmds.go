package proxy

import (
	"crypto/subtle"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/resp"
)

// Connection and server commands the proxy answers itself: PING, ECHO,
// SELECT, QUIT, RESET, TIME, LASTSAVE, ROLE, AUTH, HELLO and CLIENT
// (with the CLIENT LIST lines).

// Version is the Redis version the proxy reports (HELLO, INFO): clients
// pick features by it.
const Version = "7.2.4"

func cmdPing(ss *session, r *request) {
	if ss.psRESP2() && len(r.args) <= 2 {
		// RESP2's subscribed mode: ["pong", message]
		b := resp.AppendArray(r.reply[:0], 2)
		b = resp.AppendBulkString(b, "pong")
		if len(r.args) == 2 {
			b = resp.AppendBulk(b, r.args[1])
		} else {
			b = resp.AppendBulkString(b, "")
		}
		r.raw(b)
		return
	}
	switch len(r.args) {
	case 1:
		r.status("PONG")
	case 2:
		r.bulk(r.args[1])
	default:
		r.setError("ERR wrong number of arguments for 'ping' command")
	}
}

func cmdEcho(ss *session, r *request) { r.bulk(r.args[1]) }

func cmdSelect(ss *session, r *request) {
	n, err := strconv.Atoi(string(r.args[1]))
	if err != nil {
		r.setError("ERR value is not an integer or out of range")
		return
	}
	if n < 0 || n > route.MaxArea {
		r.setError("ERR DB index is out of range")
		return
	}
	ss.setArea(n)
	ss.srv.noteArea(n)
	r.ok()
}

func cmdQuit(ss *session, r *request) {
	ss.quit = true
	r.ok()
}

func cmdReset(ss *session, r *request) {
	// CLIENT REPLY ON again, NO-TOUCH OFF (Redis 7.2), and out of
	// subscribed mode.
	ss.replyOff, ss.skipReply, r.mute = false, false, false
	ss.noTouch = false
	queued := ss.psReset()
	ss.tx.reset()
	ss.setArea(0)
	ss.proto = 2
	empty := ""
	ss.info.name.Store(&empty)
	ss.authed = !ss.srv.authRequired()
	ss.user = ""
	ss.rd.Unauth = !ss.authed
	r.proto = 2
	r.raw(resp.AppendStatus(queued, "RESET"))
}

func cmdTime(ss *session, r *request) {
	now := time.Now()
	b := resp.AppendArray(r.reply[:0], 2)
	b = resp.AppendBulkInt(b, now.Unix())
	b = resp.AppendBulkInt(b, int64(now.Nanosecond()/1000))
	r.raw(b)
}

func cmdLastsave(ss *session, r *request) { r.integer(ss.srv.start.Unix()) }

func cmdRole(ss *session, r *request) {
	b := resp.AppendArray(r.reply[:0], 3)
	b = resp.AppendBulkString(b, "master")
	b = resp.AppendInt(b, 0)
	b = resp.AppendArray(b, 0)
	r.raw(b)
}

// authRequired reports whether clients must AUTH.
func (s *Server) authRequired() bool { return s.dyn.password() != "" || len(s.cfg.Users) > 0 }

// checkAuth reports whether user/pass is valid ("default" is the
// requirepass user).
func (s *Server) checkAuth(user, pass string) bool {
	var want string
	if user == "default" {
		want = s.dyn.password()
		if want == "" && len(s.cfg.Users) == 0 {
			return true // nopass default user
		}
		if want == "" {
			if p, ok := s.cfg.Users["default"]; ok {
				want = p
			} else {
				return false
			}
		}
	} else {
		p, ok := s.cfg.Users[user]
		if !ok {
			return false
		}
		want = p
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(pass)) == 1
}

func (ss *session) authOK(user string) {
	ss.authed = true
	ss.user = user
	ss.rd.Unauth = false
}

func cmdAuth(ss *session, r *request) {
	s := ss.srv
	var user, pass string
	switch len(r.args) {
	case 2:
		user, pass = "default", string(r.args[1])
		if !s.authRequired() {
			r.setError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
	case 3:
		user, pass = string(r.args[1]), string(r.args[2])
	default:
		r.setError("ERR syntax error")
		return
	}
	if !s.checkAuth(user, pass) {
		s.m.authFailures.Inc()
		r.setError("WRONGPASS invalid username-password pair or user is disabled.")
		return
	}
	ss.authOK(user)
	r.ok()
}

func cmdHello(ss *session, r *request) {
	s := ss.srv
	proto := ss.proto
	args := r.args[1:]
	if len(args) > 0 {
		v, err := strconv.Atoi(string(args[0]))
		if err != nil {
			r.setError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			r.setError("NOPROTO unsupported protocol version")
			return
		}
		proto = v
		args = args[1:]
	}
	var name []byte
	setName := false
	authed := ss.authed
	user := ss.user
	for len(args) > 0 {
		opt := strings.ToUpper(string(args[0]))
		switch {
		case opt == "AUTH" && len(args) >= 3:
			u, p := string(args[1]), string(args[2])
			if !s.checkAuth(u, p) {
				s.m.authFailures.Inc()
				r.setError("WRONGPASS invalid username-password pair or user is disabled.")
				return
			}
			authed, user = true, u
			args = args[3:]
		case opt == "SETNAME" && len(args) >= 2:
			if !validClientName(args[1]) {
				r.setError("ERR Client names cannot contain spaces, newlines or special characters.")
				return
			}
			name, setName = args[1], true
			args = args[2:]
		default:
			r.setError("ERR Syntax error in HELLO option '" + sanitize(string(args[0])) + "'")
			return
		}
	}
	if !authed {
		r.setError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if authed && !ss.authed {
		ss.authOK(user)
	}
	if setName {
		n := string(name)
		ss.info.name.Store(&n)
	}
	ss.proto = proto
	r.proto = proto
	b := resp.AppendMap(r.reply[:0], 7, proto)
	b = resp.AppendBulkString(b, "server")
	b = resp.AppendBulkString(b, "redis")
	b = resp.AppendBulkString(b, "version")
	b = resp.AppendBulkString(b, Version)
	b = resp.AppendBulkString(b, "proto")
	b = resp.AppendInt(b, int64(proto))
	b = resp.AppendBulkString(b, "id")
	b = resp.AppendInt(b, ss.id)
	b = resp.AppendBulkString(b, "mode")
	b = resp.AppendBulkString(b, "cluster")
	b = resp.AppendBulkString(b, "role")
	b = resp.AppendBulkString(b, "master")
	b = resp.AppendBulkString(b, "modules")
	b = resp.AppendArray(b, 0)
	r.raw(b)
}

func validClientName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

func cmdClient(ss *session, r *request) {
	sub := strings.ToLower(string(r.args[1]))
	n := len(r.args)
	switch {
	case sub == "setname" && n == 3:
		if !validClientName(r.args[2]) {
			r.setError("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		name := string(r.args[2])
		ss.info.name.Store(&name)
		r.ok()
	case sub == "getname" && n == 2:
		if name := *ss.info.name.Load(); name != "" {
			r.bulkString(name)
		} else {
			r.null()
		}
	case sub == "id" && n == 2:
		r.integer(ss.id)
	case sub == "setinfo" && n == 4:
		v := string(r.args[3])
		switch strings.ToLower(string(r.args[2])) {
		case "lib-name":
			if !validClientName(r.args[3]) {
				r.setError("ERR lib-name cannot contain spaces, newlines or special characters.")
				return
			}
			ss.info.libName.Store(&v)
		case "lib-ver":
			if !validClientName(r.args[3]) {
				r.setError("ERR lib-ver cannot contain spaces, newlines or special characters.")
				return
			}
			ss.info.libVer.Store(&v)
		default:
			r.setError("ERR Unrecognized option '" + sanitize(string(r.args[2])) + "'")
			return
		}
		r.ok()
	case sub == "list":
		var ids map[int64]bool
		for i := 2; i+1 < n; i += 2 {
			switch strings.ToLower(string(r.args[i])) {
			case "type":
				t := strings.ToLower(string(r.args[i+1]))
				if t != "normal" && t != "master" && t != "replica" && t != "pubsub" {
					r.setError("ERR Unknown client type '" + t + "'")
					return
				}
				switch t {
				case "normal", "pubsub":
					ids = ss.srv.psClientsOfType(t == "pubsub")
				default:
					ids = map[int64]bool{}
				}
			case "id":
				ids = map[int64]bool{}
				for _, a := range r.args[i+1:] {
					id, err := strconv.ParseInt(string(a), 10, 64)
					if err != nil || id <= 0 {
						r.setError("ERR Invalid client ID")
						return
					}
					ids[id] = true
				}
				i = n
			default:
				r.setError("ERR syntax error")
				return
			}
		}
		r.reply = resp.AppendVerbatim(r.reply[:0], ss.srv.clientList(ids), r.proto)
		r.local = true
	case sub == "info" && n == 2:
		r.reply = resp.AppendVerbatim(r.reply[:0], ss.clientLine(time.Now()), r.proto)
		r.local = true
	case sub == "kill" && n >= 3:
		cmdClientKill(ss, r)
	case sub == "no-touch" && n == 3:
		// Sent on with each command (the envelope's flag): the
		// dataservers keep the keys' access fields.
		if on, ok := onOff(r.args[2]); ok {
			ss.noTouch = on
			r.ok()
		} else {
			r.setError("ERR syntax error")
		}
	case sub == "no-evict" && n == 3:
		// Accepted and kept nowhere: the proxy evicts no client
		// (no maxmemory-clients), so every client is exempt already.
		if _, ok := onOff(r.args[2]); ok {
			r.ok()
		} else {
			r.setError("ERR syntax error")
		}
	case sub == "reply" && n == 3:
		cmdClientReply(ss, r)
	case sub == "help":
		r.raw(helpReply("CLIENT", []string{"ID", "GETNAME", "SETNAME <name>", "SETINFO <LIB-NAME|LIB-VER> <value>", "LIST [TYPE normal] [ID id ...]", "INFO", "KILL <ip:port> | ID <id> | ADDR <ip:port>"}))
	default:
		switch sub {
		case "setname", "getname", "id", "setinfo", "info", "kill", "no-evict", "no-touch", "reply":
			r.setError("ERR wrong number of arguments for 'client|" + sub + "' command")
		default:
			r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try CLIENT HELP.")
		}
	}
}

// onOff reads CLIENT NO-TOUCH's and NO-EVICT's ON|OFF, any case.
func onOff(b []byte) (on, ok bool) {
	switch {
	case resp.EqualFold(b, "on"):
		return true, true
	case resp.EqualFold(b, "off"):
		return false, true
	}
	return false, false
}

// cmdClientReply: CLIENT REPLY ON|OFF|SKIP as Redis: OFF mutes this and
// every later reply until ON, SKIP this one and the next command's (not
// when OFF already), ON answers +OK.
func cmdClientReply(ss *session, r *request) {
	switch strings.ToLower(string(r.args[2])) {
	case "on":
		ss.replyOff, ss.skipReply = false, false
		r.mute = false
		r.ok()
	case "off":
		ss.replyOff = true
		r.mute = true
		r.ok()
	case "skip":
		if !ss.replyOff {
			ss.skipReply = true
		}
		r.mute = true
		r.ok()
	default:
		r.setError("ERR syntax error")
	}
}

func cmdClientKill(ss *session, r *request) {
	s := ss.srv
	var id int64
	var addr string
	if len(r.args) == 3 {
		addr = string(r.args[2])
	} else {
		for i := 2; i+1 < len(r.args); i += 2 {
			switch strings.ToLower(string(r.args[i])) {
			case "id":
				id, _ = strconv.ParseInt(string(r.args[i+1]), 10, 64)
			case "addr":
				addr = string(r.args[i+1])
			}
		}
	}
	killed := 0
	s.sessMu.Lock()
	for _, o := range s.sessions {
		if (id != 0 && o.id == id) || (addr != "" && o.addr == addr) {
			if o == ss {
				ss.quit = true
			} else {
				_ = o.conn.Close()
			}
			killed++
		}
	}
	s.sessMu.Unlock()
	if len(r.args) == 3 {
		if killed == 0 {
			r.setError("ERR No such client")
			return
		}
		r.ok()
		return
	}
	r.integer(int64(killed))
}

func helpReply(name string, lines []string) []byte {
	b := resp.AppendArray(nil, len(lines)+1)
	b = resp.AppendStatus(b, name+" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		b = resp.AppendStatus(b, l)
	}
	return b
}

// clientLine is one CLIENT LIST line.
func (ss *session) clientLine(now time.Time) string {
	idle := now.Sub(time.Unix(0, ss.info.lastActive.Load())) / time.Second
	age := now.Sub(ss.created) / time.Second
	cmd := *ss.info.lastCmd.Load()
	if cmd == "" {
		cmd = "NULL"
	}
	user := ss.user
	if user == "" {
		user = "default"
	}
	sub, psub, ssub := ss.psCounts()
	flags := "N"
	if sub+psub+ssub > 0 {
		flags = "P"
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=%d rbp=0 obl=0 oll=0 omem=%d tot-mem=%d events=r cmd=%s user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
		ss.id, ss.addr, ss.laddr, *ss.info.name.Load(), age, idle, flags, ss.info.db.Load(), sub, psub, ssub, ss.info.multi.Load(),
		0, ss.info.qbuf.Load(), ss.info.omem.Load(), ss.info.qbuf.Load()+ss.info.omem.Load(),
		cmd, user, ss.proto, *ss.info.libName.Load(), *ss.info.libVer.Load())
}

func (s *Server) clientList(ids map[int64]bool) string {
	s.sessMu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, o := range s.sessions {
		if ids == nil || ids[o.id] {
			list = append(list, o)
		}
	}
	s.sessMu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	now := time.Now()
	var b strings.Builder
	for _, o := range list {
		b.WriteString(o.clientLine(now))
	}
	return b.String()
}
