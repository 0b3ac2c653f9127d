package proxy

import (
	"strings"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/errs"
)

// The command table as the proxy uses it: the commands only the proxy
// knows, the ones it answers itself (localHandlers) or runs as barriers,
// and lookup, one map access per command with its counters.

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
	{Name: "migrate", Arity: -6, Flags: command.Write, KeysFunc: migrateKeys}, // migrate.go
	{Name: "wait", Arity: 3, Flags: command.NoKey},
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
		"migrate":      barrier(cmdMigrate),
		"wait":         barrier(cmdWait),
		"subscribe":    cmdSubscribe,
		"psubscribe":   cmdPSubscribe,
		"ssubscribe":   cmdSSubscribe,
		"unsubscribe":  cmdUnsubscribe,
		"punsubscribe": cmdPUnsubscribe,
		"sunsubscribe": cmdSUnsubscribe,
		"publish":      cmdPublish,
		"spublish":     cmdSPublish,
		"pubsub":       cmdPubsub,
		"tair.pubfwd":  cmdPubFwd,
	}
}

func barrier(f func(ss *session, r *request)) handler {
	return func(ss *session, r *request) { r.barrier = func(r *request) { f(ss, r) } }
}

func cmdOK(ss *session, r *request) { r.ok() }

// cmdEntry is a command as the proxy handles it: its spec, its handler
// when the proxy answers it, and its counters.
type cmdEntry struct {
	spec *command.Spec
	h    handler
	stat *cmdStat
}

// lookup finds a command case-insensitively with one map access; unknown
// names share one entry with a nil spec.
func (s *Server) lookup(name []byte) *cmdEntry {
	var buf [32]byte
	key, _ := command.LowerASCII(&buf, name)
	if e := (*s.cmds.Load())[string(key)]; e != nil {
		return e
	}
	spec := command.Lookup(name)
	if spec == nil {
		return s.unknown
	}
	s.cmdsMu.Lock()
	defer s.cmdsMu.Unlock()
	old := *s.cmds.Load()
	if e := old[spec.Name]; e != nil {
		return e
	}
	e := &cmdEntry{spec: spec, h: localHandlers[spec.Name], stat: s.m.stat(spec.Name)}
	next := make(map[string]*cmdEntry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[spec.Name] = e
	s.cmds.Store(&next)
	return e
}

// unknownCommand is Redis's text for an unknown command.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		b.WriteByte('\'')
		b.WriteString(sanitize(errs.Quoted(a, 128-b.Len())))
		b.WriteString("' ")
	}
	return "ERR unknown command '" + sanitize(errs.Quoted(args[0], 128)) + "', with args beginning with: " + b.String()
}

// sanitize makes an error's text one line, as Redis's
// rejectCommandFormat does: CR and LF become spaces.
func sanitize(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}

// quotedArg is a client's argument quoted in an error reply: as Redis's
// '%.128s' prints it, on one line.
func quotedArg(b []byte) string { return sanitize(errs.Quoted(b, 128)) }

func authExempt(name string) bool {
	switch name {
	case "auth", "hello", "quit", "reset":
		return true
	}
	return false
}
