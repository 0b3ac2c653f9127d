package command

// The table. Keep it sorted by family; dataserver/exec must implement every
// command registered here with Write/ReadOnly (a test checks it).
func init() {
	r, w := ReadOnly, Write
	Register(
		// connection and server: answered by the proxy
		&Spec{Name: "ping", Arity: -1, Flags: NoKey},
		&Spec{Name: "echo", Arity: 2, Flags: NoKey},
		&Spec{Name: "hello", Arity: -1, Flags: NoKey},
		&Spec{Name: "auth", Arity: -2, Flags: NoKey},
		&Spec{Name: "select", Arity: 2, Flags: NoKey},
		&Spec{Name: "quit", Arity: -1, Flags: NoKey},
		&Spec{Name: "reset", Arity: 1, Flags: NoKey},
		&Spec{Name: "client", Arity: -2, Flags: NoKey},
		&Spec{Name: "command", Arity: -1, Flags: NoKey},
		&Spec{Name: "info", Arity: -1, Flags: NoKey},
		&Spec{Name: "time", Arity: 1, Flags: NoKey},
		&Spec{Name: "dbsize", Arity: 1, Flags: NoKey | Admin},
		&Spec{Name: "flushdb", Arity: -1, Flags: NoKey | Admin | Write},
		&Spec{Name: "flushall", Arity: -1, Flags: NoKey | Admin | Write},
		&Spec{Name: "scan", Arity: -2, Flags: NoKey | Admin | ReadOnly},
		&Spec{Name: "keys", Arity: 2, Flags: NoKey | Admin | ReadOnly},
		&Spec{Name: "randomkey", Arity: 1, Flags: NoKey | Admin | ReadOnly},
		&Spec{Name: "config", Arity: -2, Flags: NoKey},
		&Spec{Name: "cluster", Arity: -2, Flags: NoKey},

		// keys
		&Spec{Name: "del", Arity: -2, Flags: w | MultiKey, FirstKey: 1, LastKey: -1, Step: 1},
		&Spec{Name: "unlink", Arity: -2, Flags: w | MultiKey, FirstKey: 1, LastKey: -1, Step: 1},
		&Spec{Name: "exists", Arity: -2, Flags: r | MultiKey, FirstKey: 1, LastKey: -1, Step: 1},
		&Spec{Name: "type", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "expire", Arity: -3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "pexpire", Arity: -3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "expireat", Arity: -3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "pexpireat", Arity: -3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "ttl", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "pttl", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "expiretime", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "pexpiretime", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "persist", Arity: 2, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "touch", Arity: -2, Flags: r | MultiKey, FirstKey: 1, LastKey: -1, Step: 1},
		&Spec{Name: "copy", Arity: -3, Flags: w | Atomic, FirstKey: 1, LastKey: 2, Step: 1},
		&Spec{Name: "rename", Arity: 3, Flags: w | Atomic, FirstKey: 1, LastKey: 2, Step: 1},
		&Spec{Name: "renamenx", Arity: 3, Flags: w | Atomic, FirstKey: 1, LastKey: 2, Step: 1},
		// OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT key, OBJECT HELP (no key)
		&Spec{Name: "object", Arity: -2, Flags: r, FirstKey: 2, LastKey: 2, Step: 1},
		// MEMORY USAGE key [SAMPLES n], MEMORY HELP (no key)
		&Spec{Name: "memory", Arity: -2, Flags: r, FirstKey: 2, LastKey: 2, Step: 1},

		// strings
		&Spec{Name: "get", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "set", Arity: -3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "setnx", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "setex", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "psetex", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "getset", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "getdel", Arity: 2, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "getex", Arity: -2, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "mget", Arity: -2, Flags: r | MultiKey, FirstKey: 1, LastKey: -1, Step: 1},
		&Spec{Name: "mset", Arity: -3, Flags: w | MultiKey, FirstKey: 1, LastKey: -1, Step: 2},
		&Spec{Name: "msetnx", Arity: -3, Flags: w | Atomic, FirstKey: 1, LastKey: -1, Step: 2},
		&Spec{Name: "incr", Arity: 2, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "decr", Arity: 2, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "incrby", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "decrby", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "incrbyfloat", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "append", Arity: 3, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "strlen", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "getrange", Arity: 4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "setrange", Arity: 4, Flags: w, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "substr", Arity: 4, Flags: r, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "lcs", Arity: -3, Flags: r | Atomic, FirstKey: 1, LastKey: 2, Step: 1},

		// Tair commands (SPEC §4)
		&Spec{Name: "tair.putv", Arity: -4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.getv", Arity: 2, Flags: r | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.delv", Arity: 3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.incr", Arity: -3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.decr", Arity: -3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.pput", Arity: -4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.pget", Arity: 3, Flags: r | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.pdel", Arity: 3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.prange", Arity: -4, Flags: r | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.itemadd", Arity: -4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.itemget", Arity: 4, Flags: r | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.itemdel", Arity: 4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.itemgetdel", Arity: 4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.itemcount", Arity: 2, Flags: r | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.hide", Arity: 2, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.unhide", Arity: 2, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.gethidden", Arity: 2, Flags: r | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.lock", Arity: 3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.unlock", Arity: 3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "tair.invalid", Arity: -2, Flags: w | Tair | MultiKey, FirstKey: 1, LastKey: -1, Step: 1},
		// What the invalid server sends to a peer cluster: TAIR.INVALID
		// without forwarding it again.
		&Spec{Name: "tair.invalidlocal", Arity: -2, Flags: w | Tair | MultiKey, FirstKey: 1, LastKey: -1, Step: 1},
		// per dataserver; the proxy sends them to every dataserver (and sums STAT)
		&Spec{Name: "tair.stat", Arity: -1, Flags: r | Tair | NoKey | Admin},
		&Spec{Name: "tair.delall", Arity: 2, Flags: w | Tair | NoKey | Admin},

		// TairString (Alibaba Cloud Tair's published syntax)
		&Spec{Name: "exset", Arity: -3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "exget", Arity: -2, Flags: r | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "exsetver", Arity: 3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "exincrby", Arity: -3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "exincrbyfloat", Arity: -3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "excas", Arity: -4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "excad", Arity: 3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "exappend", Arity: -3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "exprepend", Arity: -3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "exgae", Arity: -4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "cas", Arity: -4, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "cad", Arity: 3, Flags: w | Tair, FirstKey: 1, LastKey: 1, Step: 1},
	)
}
