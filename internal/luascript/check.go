package luascript

import (
	"slices"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/resp"
)

// noScript are the commands Redis refuses in scripts that the shared
// command table may lack (the proxy answers them; Redis flags them
// noscript).
var noScript = map[string]bool{
	"multi": true, "exec": true, "discard": true, "watch": true, "unwatch": true, "auth": true,
	"hello": true, "subscribe": true, "psubscribe": true, "ssubscribe": true, "unsubscribe": true,
	"punsubscribe": true, "sunsubscribe": true, "monitor": true, "sync": true, "psync": true,
	"reset": true, "eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true,
	"fcall": true, "fcall_ro": true, "script": true, "function": true, "quit": true,
	"save": true, "bgsave": true, "bgrewriteaof": true, "replicaof": true, "slaveof": true,
	"wait": true, "failover": true,
}

// CheckCall is Redis's check of a command a script calls (scriptCall):
// the spec, or the error reply's text (with its code) that refuses it:
// an unknown command, the wrong number of arguments, a command not
// allowed in scripts (Redis's noscript flag, as blocking forms and
// transactions), a write from a read-only script.
func CheckCall(args [][]byte, readOnly bool) (*command.Spec, string) {
	spec := command.Lookup(args[0])
	if spec == nil {
		name := string(args[0])
		for i := range len(name) {
			if name[i] >= 'A' && name[i] <= 'Z' {
				name = string(lower(args[0]))
				break
			}
		}
		if noScript[name] {
			return nil, "ERR This Redis command is not allowed from script"
		}
		return nil, "ERR Unknown Redis command called from script"
	}
	// A container (XINFO, XGROUP, OBJECT ...) is checked as Redis
	// does, by its subcommand: unknown, arity, flags.
	sub, unknown := subcommandOf(spec, args)
	if unknown {
		return nil, "ERR Unknown Redis command called from script"
	}
	if !spec.ArityOK(len(args)) || sub != nil && !arityOK(sub.Arity, len(args)) {
		return nil, "ERR Wrong number of args calling Redis command from script"
	}
	if noScript[spec.Name] || spec.Info != nil && slices.Contains(spec.Info.Flags, "noscript") ||
		sub != nil && slices.Contains(sub.Flags, "noscript") {
		return nil, "ERR This Redis command is not allowed from script"
	}
	write := spec.Has(command.Write)
	if sub != nil {
		write = slices.Contains(sub.Flags, "write") // XGROUP HELP reads
	}
	if readOnly && write {
		return nil, "ERR Write commands are not allowed from read-only scripts."
	}
	return spec, ""
}

// subcommandOf is the subcommand args name when spec is a container;
// unknown when it names none of them.
func subcommandOf(spec *command.Spec, args [][]byte) (sub *command.Sub, unknown bool) {
	if spec.Info == nil || len(spec.Info.Subcommands) == 0 || len(args) < 2 {
		return nil, false
	}
	full := spec.Name + "|" + string(lower(args[1]))
	for _, s := range spec.Info.Subcommands {
		if s.Name == full {
			return s, false
		}
	}
	return nil, true
}

// arityOK is Redis's arity rule: exactly n arguments, or at least -n.
func arityOK(arity, n int) bool {
	return arity >= 0 && n == arity || arity < 0 && n >= -arity
}

func lower(b []byte) []byte { return resp.AppendLower(make([]byte, 0, len(b)), b) }
