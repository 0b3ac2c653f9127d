package luascript

import (
	"slices"

	"github.com/tairkv/tair/internal/command"
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
	if !spec.ArityOK(len(args)) {
		return nil, "ERR Wrong number of args calling Redis command from script"
	}
	if noScript[spec.Name] || spec.Info != nil && slices.Contains(spec.Info.Flags, "noscript") {
		return nil, "ERR This Redis command is not allowed from script"
	}
	if readOnly && spec.Has(command.Write) && !readOnlySub(spec, args) {
		return nil, "ERR Write commands are not allowed from read-only scripts."
	}
	return spec, ""
}

// readOnlySub reports whether args name a subcommand of a writing
// container that Redis does not flag write (XGROUP HELP): Redis checks
// the subcommand's flags.
func readOnlySub(spec *command.Spec, args [][]byte) bool {
	if spec.Info == nil || len(spec.Info.Subcommands) == 0 || len(args) < 2 {
		return false
	}
	full := spec.Name + "|" + string(lower(args[1]))
	for _, sub := range spec.Info.Subcommands {
		if sub.Name == full {
			return !slices.Contains(sub.Flags, "write")
		}
	}
	return false
}

func lower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
