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
	)
}
