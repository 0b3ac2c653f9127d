package proxy

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/resp"
)

// Version is the Redis version the proxy reports (HELLO, INFO): clients
// pick features by it.
const Version = "7.2.4"

// handler answers a command in the proxy: it fills r.reply and sets
// r.local, or sets r.barrier to run once the batch before it is done.
type handler func(ss *session, r *request)

var localHandlers map[string]handler

// proxyCommands are commands only the proxy knows; they join the shared
// table unless it already has them.
var proxyCommands = []*command.Spec{
	{Name: "multi", Arity: 1, Flags: command.NoKey},
	{Name: "exec", Arity: 1, Flags: command.NoKey},
	{Name: "discard", Arity: 1, Flags: command.NoKey},
	{Name: "watch", Arity: -2, Flags: command.NoKey, FirstKey: 1, LastKey: -1, Step: 1},
	{Name: "unwatch", Arity: 1, Flags: command.NoKey},
	{Name: "slowlog", Arity: -2, Flags: command.NoKey | command.Admin},
	{Name: "readonly", Arity: 1, Flags: command.NoKey},
	{Name: "readwrite", Arity: 1, Flags: command.NoKey},
	// ASKING precedes a command a cluster client redirects by -ASK; the
	// proxy never redirects, so it only answers OK.
	{Name: "asking", Arity: 1, Flags: command.NoKey},
	{Name: "lastsave", Arity: 1, Flags: command.NoKey},
	{Name: "role", Arity: 1, Flags: command.NoKey},
	{Name: "tair.hotkeys", Arity: -1, Flags: command.NoKey | command.Tair},
}

func init() {
	for _, s := range proxyCommands {
		if command.Lookup([]byte(s.Name)) == nil {
			command.Register(s)
		}
	}
	localHandlers = map[string]handler{
		"tair.invalid": cmdTairInvalid,
		"ping":         cmdPing,
		"echo":         cmdEcho,
		"select":       cmdSelect,
		"auth":         cmdAuth,
		"hello":        cmdHello,
		"quit":         cmdQuit,
		"reset":        cmdReset,
		"client":       cmdClient,
		"time":         cmdTime,
		"command":      cmdCommand,
		"info":         cmdInfo,
		"config":       cmdConfig,
		"cluster":      cmdCluster,
		"readonly":     cmdOK,
		"readwrite":    cmdOK,
		"asking":       cmdOK,
		"slowlog":      cmdSlowlog,
		"lastsave":     cmdLastsave,
		"role":         cmdRole,
		"multi":        cmdMulti,
		"exec":         cmdExec,
		"discard":      cmdDiscard,
		"watch":        cmdWatch,
		"unwatch":      cmdUnwatch,
		"dbsize":       barrier(cmdDBSize),
		"flushdb":      barrier(cmdFlush),
		"flushall":     barrier(cmdFlush),
		"scan":         barrier(cmdScan),
		"keys":         barrier(cmdKeys),
		"randomkey":    barrier(cmdRandomKey),
		"tair.stat":    barrier(cmdTairStat),
		"tair.delall":  barrier(cmdTairDelAll),
		"tair.hotkeys": barrier(cmdTairHotkeys),
	}
}

func barrier(f func(ss *session, r *request)) handler {
	return func(ss *session, r *request) { r.barrier = func(r *request) { f(ss, r) } }
}

func (r *request) ok()             { r.reply = resp.AppendOK(r.reply[:0]); r.local = true }
func (r *request) status(s string) { r.reply = resp.AppendStatus(r.reply[:0], s); r.local = true }
func (r *request) bulk(b []byte)   { r.reply = resp.AppendBulk(r.reply[:0], b); r.local = true }
func (r *request) bulkString(s string) {
	r.reply = resp.AppendBulkString(r.reply[:0], s)
	r.local = true
}
func (r *request) integer(n int64) { r.reply = resp.AppendInt(r.reply[:0], n); r.local = true }
func (r *request) null()           { r.reply = resp.AppendNull(r.reply[:0], r.proto); r.local = true }
func (r *request) raw(b []byte)    { r.reply = append(r.reply[:0], b...); r.local = true }

func cmdOK(ss *session, r *request) { r.ok() }

func cmdPing(ss *session, r *request) {
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
	ss.tx.reset()
	ss.setArea(0)
	ss.proto = 2
	empty := ""
	ss.info.name.Store(&empty)
	ss.authed = !ss.srv.authRequired()
	ss.user = ""
	ss.rd.Unauth = !ss.authed
	r.proto = 2
	r.status("RESET")
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
			r.setError("ERR Syntax error in HELLO option '" + sanitize(args[0]) + "'")
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
			r.setError("ERR Unrecognized option '" + sanitize(r.args[2]) + "'")
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
				if t != "normal" {
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
	case (sub == "no-evict" || sub == "no-touch") && n == 3:
		r.ok()
	case sub == "reply" && n == 3:
		r.ok()
	case sub == "help":
		r.raw(helpReply("CLIENT", []string{"ID", "GETNAME", "SETNAME <name>", "SETINFO <LIB-NAME|LIB-VER> <value>", "LIST [TYPE normal] [ID id ...]", "INFO", "KILL <ip:port> | ID <id> | ADDR <ip:port>"}))
	default:
		switch sub {
		case "setname", "getname", "id", "setinfo", "info", "kill", "no-evict", "no-touch", "reply":
			r.setError("ERR wrong number of arguments for 'client|" + sub + "' command")
		default:
			r.setError("ERR unknown subcommand '" + sanitize(r.args[1]) + "'. Try CLIENT HELP.")
		}
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
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=N db=%d sub=0 psub=0 ssub=0 multi=%d qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=%d rbp=0 obl=0 oll=0 omem=%d tot-mem=%d events=r cmd=%s user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
		ss.id, ss.addr, ss.laddr, *ss.info.name.Load(), age, idle, ss.info.db.Load(), ss.info.multi.Load(),
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

// COMMAND, COMMAND COUNT|INFO|DOCS|LIST|GETKEYS.
func cmdCommand(ss *session, r *request) {
	if len(r.args) == 1 {
		all := sortedSpecs()
		b := resp.AppendArray(r.reply[:0], len(all))
		for _, s := range all {
			b = appendCommandInfo(b, s, r.proto)
		}
		r.raw(b)
		return
	}
	switch strings.ToLower(string(r.args[1])) {
	case "count":
		if len(r.args) != 2 {
			r.setError("ERR wrong number of arguments for 'command|count' command")
			return
		}
		r.integer(int64(len(command.All())))
	case "list":
		all := sortedSpecs()
		b := resp.AppendArray(r.reply[:0], len(all))
		for _, s := range all {
			b = resp.AppendBulkString(b, s.Name)
		}
		r.raw(b)
	case "info":
		names := r.args[2:]
		if len(names) == 0 {
			all := sortedSpecs()
			b := resp.AppendArray(r.reply[:0], len(all))
			for _, s := range all {
				b = appendCommandInfo(b, s, r.proto)
			}
			r.raw(b)
			return
		}
		b := resp.AppendArray(r.reply[:0], len(names))
		for _, n := range names {
			if s := command.Lookup(n); s != nil {
				b = appendCommandInfo(b, s, r.proto)
			} else {
				b = resp.AppendNullArray(b, r.proto)
			}
		}
		r.raw(b)
	case "docs":
		var specs []*command.Spec
		if len(r.args) == 2 {
			specs = sortedSpecs()
		} else {
			for _, n := range r.args[2:] {
				if s := command.Lookup(n); s != nil {
					specs = append(specs, s)
				}
			}
		}
		b := resp.AppendMap(r.reply[:0], len(specs), r.proto)
		for _, s := range specs {
			b = resp.AppendBulkString(b, s.Name)
			b = resp.AppendMap(b, 4, r.proto)
			b = resp.AppendBulkString(b, "summary")
			b = resp.AppendBulkString(b, summaryOf(s))
			b = resp.AppendBulkString(b, "since")
			b = resp.AppendBulkString(b, "1.0.0")
			b = resp.AppendBulkString(b, "group")
			b = resp.AppendBulkString(b, groupOf(s))
			b = resp.AppendBulkString(b, "complexity")
			b = resp.AppendBulkString(b, "")
		}
		r.raw(b)
	case "getkeys":
		if len(r.args) < 4 {
			r.setError("ERR wrong number of arguments for 'command|getkeys' command")
			return
		}
		s := command.Lookup(r.args[2])
		if s == nil {
			r.setError("ERR Invalid command specified")
			return
		}
		if s.Has(command.NoKey) || s.FirstKey <= 0 && s.KeysFunc == nil {
			r.setError("ERR The command has no key arguments")
			return
		}
		if !s.ArityOK(len(r.args) - 2) {
			r.setError("ERR Invalid number of arguments specified for command")
			return
		}
		keys := s.KeyIndexes(r.args[2:])
		if len(keys) == 0 {
			r.setError("ERR Invalid arguments specified for command")
			return
		}
		b := resp.AppendArray(r.reply[:0], len(keys))
		for _, k := range keys {
			b = resp.AppendBulk(b, r.args[2+k])
		}
		r.raw(b)
	case "help":
		r.raw(helpReply("COMMAND", []string{"(no subcommand)", "COUNT", "DOCS [<command-name> ...]", "GETKEYS <full-command>", "INFO [<command-name> ...]", "LIST"}))
	default:
		r.setError("ERR unknown subcommand '" + sanitize(r.args[1]) + "'. Try COMMAND HELP.")
	}
}

func sortedSpecs() []*command.Spec {
	all := command.All()
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

func groupOf(s *command.Spec) string {
	switch {
	case s.Has(command.Tair):
		return "tair"
	case s.Has(command.NoKey):
		return "server"
	}
	switch s.Name[0] {
	case 'h':
		return "hash"
	case 'l', 'b':
		if strings.HasPrefix(s.Name, "bz") {
			return "sorted_set"
		}
		return "list"
	case 's':
		if s.Name == "set" || strings.HasPrefix(s.Name, "set") || s.Name == "strlen" || s.Name == "substr" {
			return "string"
		}
		return "set"
	case 'z':
		return "sorted_set"
	case 'e':
		if strings.HasPrefix(s.Name, "exh") {
			return "tairhash"
		}
		if strings.HasPrefix(s.Name, "ex") && s.Name != "exists" && s.Name != "expire" && s.Name != "expireat" && s.Name != "expiretime" {
			return "tairstring"
		}
	}
	return "generic"
}

func summaryOf(s *command.Spec) string {
	return strings.ToUpper(s.Name) + " (" + groupOf(s) + ")"
}

func appendCommandInfo(b []byte, s *command.Spec, proto int) []byte {
	b = resp.AppendArray(b, 10)
	b = resp.AppendBulkString(b, s.Name)
	b = resp.AppendInt(b, int64(s.Arity))
	var flags []string
	if s.Has(command.Write) {
		flags = append(flags, "write")
	}
	if s.Has(command.ReadOnly) {
		flags = append(flags, "readonly")
	}
	if s.Has(command.Blocking) {
		flags = append(flags, "blocking")
	}
	if s.Has(command.Admin) {
		flags = append(flags, "admin")
	}
	if authExempt(s.Name) {
		flags = append(flags, "no_auth")
	}
	if s.Has(command.NoKey) && !s.Has(command.Write) && !s.Has(command.ReadOnly) {
		flags = append(flags, "fast")
	}
	b = resp.AppendSet(b, len(flags), proto)
	for _, f := range flags {
		b = resp.AppendStatus(b, f)
	}
	first, last, step := s.FirstKey, s.LastKey, s.Step
	if s.KeysFunc != nil {
		first, last, step = 0, 0, 0
	}
	if first == 0 {
		last, step = 0, 0
	}
	b = resp.AppendInt(b, int64(first))
	b = resp.AppendInt(b, int64(last))
	b = resp.AppendInt(b, int64(step))
	b = resp.AppendSet(b, 0, proto) // ACL categories
	b = resp.AppendSet(b, 0, proto) // tips
	b = resp.AppendArray(b, 0)      // key specs
	return resp.AppendArray(b, 0)   // subcommands
}

// CLUSTER: the live proxies own every slot between them (contiguous
// ranges in address order), so cluster-aware clients spread their load
// over the proxies; any proxy serves any key, so views that differ for a
// moment cost nothing (no MOVED is ever sent).
func cmdCluster(ss *session, r *request) {
	s := ss.srv
	nodes := s.clusterNodes(ss)
	switch strings.ToLower(string(r.args[1])) {
	case "slots":
		b := resp.AppendArray(r.reply[:0], len(nodes))
		for _, n := range nodes {
			b = resp.AppendArray(b, 3)
			b = resp.AppendInt(b, int64(n.from))
			b = resp.AppendInt(b, int64(n.to))
			b = resp.AppendArray(b, 4)
			b = resp.AppendBulkString(b, n.host)
			b = resp.AppendInt(b, int64(n.port))
			b = resp.AppendBulkString(b, n.id)
			b = resp.AppendMap(b, 0, r.proto)
		}
		r.raw(b)
	case "shards":
		b := resp.AppendArray(r.reply[:0], len(nodes))
		for _, n := range nodes {
			b = resp.AppendMap(b, 2, r.proto)
			b = resp.AppendBulkString(b, "slots")
			b = resp.AppendArray(b, 2)
			b = resp.AppendInt(b, int64(n.from))
			b = resp.AppendInt(b, int64(n.to))
			b = resp.AppendBulkString(b, "nodes")
			b = resp.AppendArray(b, 1)
			b = resp.AppendMap(b, 7, r.proto)
			b = resp.AppendBulkString(b, "id")
			b = resp.AppendBulkString(b, n.id)
			b = resp.AppendBulkString(b, "port")
			b = resp.AppendInt(b, int64(n.port))
			b = resp.AppendBulkString(b, "ip")
			b = resp.AppendBulkString(b, n.host)
			b = resp.AppendBulkString(b, "endpoint")
			b = resp.AppendBulkString(b, n.host)
			b = resp.AppendBulkString(b, "role")
			b = resp.AppendBulkString(b, "master")
			b = resp.AppendBulkString(b, "replication-offset")
			b = resp.AppendInt(b, 0)
			b = resp.AppendBulkString(b, "health")
			b = resp.AppendBulkString(b, "online")
		}
		r.raw(b)
	case "nodes":
		var sb strings.Builder
		for _, n := range nodes {
			flags := "master"
			if n.self {
				flags = "myself,master"
			}
			fmt.Fprintf(&sb, "%s %s:%d@%d %s - 0 0 1 connected %d-%d\n", n.id, n.host, n.port, n.port+10000, flags, n.from, n.to)
		}
		r.reply = resp.AppendVerbatim(r.reply[:0], sb.String(), r.proto)
		r.local = true
	case "info":
		state := "ok"
		if s.r.load() == nil {
			state = "fail"
		}
		info := fmt.Sprintf("cluster_enabled:1\r\ncluster_state:%s\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:%d\r\ncluster_size:%d\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
			state, len(nodes), len(nodes))
		r.reply = resp.AppendVerbatim(r.reply[:0], info, r.proto)
		r.local = true
	case "keyslot":
		if len(r.args) != 3 {
			r.setError("ERR wrong number of arguments for 'cluster|keyslot' command")
			return
		}
		r.integer(int64(KeySlot(r.args[2])))
	case "myid", "myshardid":
		for _, n := range nodes {
			if n.self {
				r.bulkString(n.id)
				return
			}
		}
		r.bulkString(s.id)
	case "countkeysinslot", "getkeysinslot":
		r.setError("ERR slots are not used to place keys in this cluster (keys live in buckets)")
	case "help":
		r.raw(helpReply("CLUSTER", []string{"INFO", "KEYSLOT <key>", "MYID", "NODES", "SHARDS", "SLOTS"}))
	default:
		r.setError("ERR unknown subcommand '" + sanitize(r.args[1]) + "'. Try CLUSTER HELP.")
	}
}

// clusterNode is one proxy as CLUSTER commands show it.
type clusterNode struct {
	id       string
	host     string
	port     int
	from, to int
	self     bool
}

// clusterNodes lists this proxy and its live peers in address order,
// each with its share of the slots.
func (s *Server) clusterNodes(ss *session) []clusterNode {
	self := s.cfg.Advertise
	if self == "" {
		self = ss.laddr
	}
	addrs := []string{self}
	if live := s.livePeers.Load(); live != nil {
		for _, a := range *live {
			if a != self {
				addrs = append(addrs, a)
			}
		}
	}
	sort.Strings(addrs)
	out := make([]clusterNode, len(addrs))
	for i, a := range addrs {
		host, port := splitHostPort(a)
		id := s.id
		if len(addrs) > 1 || s.cfg.Advertise != "" {
			id = nodeID(a)
		}
		out[i] = clusterNode{id: id, host: host, port: port, self: a == self,
			from: i * 16384 / len(addrs), to: (i+1)*16384/len(addrs) - 1}
	}
	return out
}

// nodeID is a proxy's cluster node ID: derived from its address, so
// every proxy names its peers alike.
func nodeID(addr string) string {
	h := sha1.Sum([]byte(addr))
	return hex.EncodeToString(h[:])
}

// peersLoop keeps the list of live peer proxies every second: the
// configured ones (--peers) that answer PING, and the ones the leading
// configserver has heard from (each proxy registers there with the
// address clients reach it at), so that proxies started with only
// --configserver name each other too.
func (s *Server) peersLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	self := s.advertisedAddr()
	for {
		seen := map[string]bool{}
		var live []string
		add := func(a string) {
			if a != self && !seen[a] {
				seen[a] = true
				live = append(live, a)
			}
		}
		for _, p := range s.cfg.Peers {
			if pingPeer(p) {
				add(p)
			}
		}
		if c := s.r.client; c != nil {
			ctx, cancel := context.WithTimeout(s.ctx, time.Second)
			list, err := c.ProxyBeat(ctx, &wire.ProxyBeat{Addr: self})
			cancel()
			if err == nil {
				for _, p := range list.Proxies {
					add(p)
				}
			} else if old := s.livePeers.Load(); old != nil {
				// Configserver unreachable: keep the peers it named last.
				for _, p := range *old {
					add(p)
				}
			}
		}
		sort.Strings(live)
		s.livePeers.Store(&live)
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// advertisedAddr is the address this proxy registers under: --advertise,
// else its listen address.
func (s *Server) advertisedAddr() string {
	if s.cfg.Advertise != "" {
		return s.cfg.Advertise
	}
	return s.Addr()
}

func pingPeer(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	// +PONG, or -NOAUTH from a peer that wants a password: alive.
	return err == nil && n > 0 && (buf[0] == '+' || buf[0] == '-')
}

// advertised is the host and port clients reach this proxy at: the local
// address of the client's connection.
func (ss *session) advertised() (string, int) {
	host, p := splitHostPort(ss.laddr)
	return host, p
}

func splitHostPort(a string) (string, int) {
	i := strings.LastIndexByte(a, ':')
	if i < 0 {
		return a, 0
	}
	p, _ := strconv.Atoi(a[i+1:])
	return strings.Trim(a[:i], "[]"), p
}

// KeySlot is Redis Cluster's slot of key: CRC16 of its hash tag mod 16384.
func KeySlot(key []byte) uint16 {
	return crc16(route.HashTag(key)) & 16383
}

var crcTable = func() [256]uint16 {
	var t [256]uint16
	for i := 0; i < 256; i++ {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC16-CCITT (XMODEM), as Redis Cluster uses.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

var _ = bytes.Equal
