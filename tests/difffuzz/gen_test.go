package difffuzz

import (
	"math/rand"
	"strconv"
	"strings"

	"github.com/tairkv/tair/internal/command"
)

// The key space: one hash tag, so that every multi-key command stays in
// one bucket (the proxy hashes the tag alone, as Redis Cluster does), and
// two untagged keys for the commands the proxy splits by bucket (DEL,
// EXISTS, MGET, MSET, TOUCH, UNLINK).
var (
	tagged   = []string{"{t}a", "{t}b", "{t}c", "{t}str", "{t}hash", "{t}list", "{t}set", "{t}zset"}
	untagged = []string{"ua", "ub"}
	allKeys  = append(append([]string(nil), tagged...), untagged...)
)

// setup makes one key of each type; it starts every sequence (the
// shrinker may drop it like any other command).
var setup = [][]string{
	{"SET", "{t}str", "42"},
	{"HSET", "{t}hash", "f1", "1", "f2", "v"},
	{"RPUSH", "{t}list", "a", "b", "c", "1"},
	{"SADD", "{t}set", "a", "b", "1"},
	{"ZADD", "{t}zset", "1", "a", "2", "b", "2.5", "c"},
}

// skipped lists the commands of internal/command's table the generator
// never draws, with the reason (TestGeneratorCoversTable checks that every
// command is either drawn or listed here).
var skipped = map[string]string{
	"hello": "drawn only as HELLO 3 at a sequence's start (its reply describes the server, not compared)", "auth": "no password on either side",
	"select": "areas are Tair's namespaces; FLUSHALL before each sequence clears db 0 only in the comparison",
	"quit":   "closes the connection", "reset": "connection state", "client": "connection introspection",
	"command": "introspection; the tables differ by design", "info": "introspection", "time": "time-dependent",
	"flushdb": "run between sequences", "flushall": "run between sequences", "config": "server settings",
	"cluster": "cluster introspection (proxy answers for a cluster, redis-server is standalone)",
	"memory":  "sizes differ by design (MEMORY USAGE)", "object": "encodings and idle times differ by design",
}

func init() {
	// Pub/sub: tests/pubsub_test.go compares it with redis-server over
	// several connections; a subscribed connection runs no sequence.
	// PUBLISH, SPUBLISH and PUBSUB are drawn (gen_script_test.go).
	for _, n := range strings.Fields("subscribe psubscribe ssubscribe unsubscribe punsubscribe sunsubscribe") {
		skipped[n] = "pub/sub (tests/pubsub_test.go)"
	}
}

// tairOnly: Tair's extended commands have no redis-server counterpart.
func tairOnly(name string) bool {
	return strings.HasPrefix(name, "tair.") || strings.HasPrefix(name, "ex") && name != "exists" && name != "expire" &&
		name != "expireat" && name != "expiretime" || name == "cas" || name == "cad"
}

type gen struct {
	r *rand.Rand
	// bodies are the scripts EVAL'd or loaded so far in the sequence,
	// for EVALSHA and SCRIPT EXISTS to name
	bodies []string
}

func (g *gen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }
func (g *gen) chance(p float64) bool    { return g.r.Float64() < p }

// kw is an option keyword in a random case.
func (g *gen) kw(s string) string {
	switch g.r.Intn(6) {
	case 0:
		return strings.ToLower(s)
	case 1:
		b := []byte(s)
		for i := range b {
			if g.r.Intn(2) == 0 {
				b[i] = byte(strings.ToLower(string(b[i]))[0])
			}
		}
		return string(b)
	}
	return s
}

func (g *gen) key() string {
	if g.chance(0.05) {
		return g.pick(untagged...)
	}
	return g.pick(tagged...)
}

// typedKey prefers the setup key of typ, else any key.
func (g *gen) typedKey(typ string) string {
	if g.chance(0.55) {
		return "{t}" + typ
	}
	return g.pick(tagged...)
}

func (g *gen) taggedKeys(typ string, min, max int) []string {
	n := min + g.r.Intn(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.typedKey(typ)
		if strings.HasPrefix(out[i], "u") {
			out[i] = "{t}a"
		}
	}
	return out
}

func (g *gen) anyKeys(min, max int) []string {
	n := min + g.r.Intn(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.pick(allKeys...)
	}
	return out
}

var ints = []string{"0", "1", "-1", "2", "3", "5", "10", "-2", "-10", "100",
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
	"abc", "", "1.5", " 1", "+1", "010", "-0", "0x10", "4294967296", "1e3"}

// smallOr is, with chance p, a whole number from lo to hi, else one of
// odd (edge cases and malformed numbers).
func (g *gen) smallOr(p float64, lo, hi int, odd ...string) string {
	if g.chance(p) {
		return strconv.Itoa(lo + g.r.Intn(hi-lo+1))
	}
	return g.pick(odd...)
}

func (g *gen) int() string { return g.smallOr(0.6, -10, 10, ints...) }

func (g *gen) count() string { return g.smallOr(0.7, 0, 5, ints...) }

var floats = []string{"0", "1", "-1", "1.5", "-2.25", "0.1", "nan", "NaN", "inf", "-inf", "+inf", "Infinity",
	"1e308", "-1e308", "1e309", "-1e309", "1e-320", "abc", "", "1e", "0x10", " 1", "5.", ".5", "-0", "3",
	"9223372036854775807", "1.7976931348623157e308"}

func (g *gen) float() string { return g.smallOr(0.4, -5, 5, floats...) }

func (g *gen) index() string {
	return g.smallOr(0.7, -6, 6, "100", "-100", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "abc", "")
}

var members = []string{"a", "b", "c", "d", "1", "2", "10", "-1", "", "\x00", "x y", "\xc3\xa9", "1.5"}

func (g *gen) member() string { return g.pick(members...) }

func (g *gen) members(min, max int) []string {
	n := min + g.r.Intn(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.member()
	}
	return out
}

func (g *gen) val() string {
	switch {
	case g.chance(0.4):
		return g.member()
	case g.chance(0.3):
		return g.int()
	case g.chance(0.2):
		return g.float()
	case g.chance(0.03):
		return strings.Repeat("x", 1<<16+g.r.Intn(100))
	}
	return g.pick("v", "hello", "\x00\xff\r\n", "\r\n", "$-1", "*", "-ERR")
}

func (g *gen) field() string { return g.pick("f1", "f2", "f3", "", "a", "1") }

// Relative expiries are long (100 s and more) or not positive, so that no
// key expires between the two servers' commands.
func (g *gen) secs() string {
	return g.pick("100", "1000", "0", "-1", "-100", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "abc", "", "9223372036854776", "922337203685477", "1.5")
}

func (g *gen) millis() string {
	return g.pick("100000", "1000000", "0", "-1", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "abc", "")
}

func (g *gen) at() string {
	return g.pick("4102444800", "1", "0", "-1", "9223372036854775807", "-9223372036854775808", "abc", "9223372036854776")
}

func (g *gen) atMillis() string {
	return g.pick("4102444800000", "1", "0", "-1", "9223372036854775807", "-9223372036854775808", "abc")
}

func (g *gen) scoreBound() string {
	return g.pick("-inf", "+inf", "inf", "(1", "1", "(-inf", "2.5", "(2.5", "abc", "(", "nan", "1e309", "0", "(0", "-1", "[1")
}

func (g *gen) lexBound() string {
	return g.pick("-", "+", "[a", "(a", "[b", "(c", "a", "[", "(", "[\x00", "[1", "(+")
}

func (g *gen) pattern() string {
	return g.pick("*", "{t}*", "*a*", "?", "[a-c]*", "[^a]*", "\\*", "**********a", "*?*?*?*?*?*?*?*?*x",
		"[", "a[", "{t}[a-z]*", "*{*", "", "f*", "*1", "{t}?", "u*", "*****************************************************b")
}

func (g *gen) timeout() string {
	if g.chance(0.9) {
		return g.pick("0.01", "0.02")
	}
	return g.pick("-1", "abc", "1e309", "-0.01")
}

func (g *gen) typ() string {
	return g.pick("string", "hash", "list", "set", "zset", "stream", "foo", "STRING")
}

// opts returns a random subset of the options, in random order.
func (g *gen) opts(max int, opts ...func() []string) []string {
	var out []string
	n := g.r.Intn(max + 1)
	for i := 0; i < n; i++ {
		out = append(out, opts[g.r.Intn(len(opts))]()...)
	}
	return out
}

func (g *gen) flag(s string) func() []string { return func() []string { return []string{g.kw(s)} } }

func (g *gen) with(s string, v func() string) func() []string {
	return func() []string { return []string{g.kw(s), v()} }
}

func cat(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, p)
		case []string:
			out = append(out, p...)
		}
	}
	return out
}

// numkeys: the count, then the keys; sometimes a wrong count.
func (g *gen) numkeys(typ string) []string {
	keys := g.taggedKeys(typ, 1, 3)
	n := strconv.Itoa(len(keys))
	if g.chance(0.08) {
		n = g.pick("0", "-1", "5", "abc", "9223372036854775807")
	}
	return cat(n, keys)
}

func (g *gen) scanOpts(pairs bool) []string {
	return g.opts(2, g.with("MATCH", g.pattern), g.with("COUNT", func() string { return g.pick("1", "3", "10", "1000", "0", "-1", "abc") }))
}

func (g *gen) scanCursor() string {
	if g.chance(0.93) {
		return "0"
	}
	return g.pick("abc", "-1", "18446744073709551616", "")
}

func (g *gen) weights() []string {
	return g.opts(2, func() []string { return cat(g.kw("WEIGHTS"), g.float(), g.float()) },
		g.with("AGGREGATE", func() string { return g.kw(g.pick("SUM", "MIN", "MAX", "AVG")) }))
}

func (g *gen) zrangeOpts() []string {
	return g.opts(3, g.flag("BYSCORE"), g.flag("BYLEX"), g.flag("REV"), g.flag("WITHSCORES"),
		func() []string { return cat(g.kw("LIMIT"), g.int(), g.int()) })
}

func (g *gen) zBound() string {
	if g.chance(0.5) {
		return g.index()
	}
	if g.chance(0.5) {
		return g.scoreBound()
	}
	return g.lexBound()
}

// gens draws each command's arguments (the name first).
var gens = map[string]func(g *gen) []string{
	"ping":      func(g *gen) []string { return g.opts(1, func() []string { return []string{g.val()} }) },
	"echo":      func(g *gen) []string { return []string{g.val()} },
	"dbsize":    func(g *gen) []string { return nil },
	"keys":      func(g *gen) []string { return []string{g.pattern()} },
	"scan":      func(g *gen) []string { return cat(g.scanCursor(), g.scanOpts(false), g.opts(1, g.with("TYPE", g.typ))) },
	"randomkey": func(g *gen) []string { return nil },

	"del":    func(g *gen) []string { return g.anyKeys(1, 4) },
	"unlink": func(g *gen) []string { return g.anyKeys(1, 4) },
	"exists": func(g *gen) []string { return g.anyKeys(1, 4) },
	"touch":  func(g *gen) []string { return g.anyKeys(1, 4) },
	"type":   func(g *gen) []string { return []string{g.key()} },
	"expire": func(g *gen) []string {
		return cat(g.key(), g.secs(), g.opts(2, g.flag("NX"), g.flag("XX"), g.flag("GT"), g.flag("LT")))
	},
	"pexpire": func(g *gen) []string {
		return cat(g.key(), g.millis(), g.opts(2, g.flag("NX"), g.flag("XX"), g.flag("GT"), g.flag("LT")))
	},
	"expireat": func(g *gen) []string {
		return cat(g.key(), g.at(), g.opts(2, g.flag("NX"), g.flag("XX"), g.flag("GT"), g.flag("LT")))
	},
	"pexpireat": func(g *gen) []string {
		return cat(g.key(), g.atMillis(), g.opts(2, g.flag("NX"), g.flag("XX"), g.flag("GT"), g.flag("LT")))
	},
	"ttl":         func(g *gen) []string { return []string{g.key()} },
	"pttl":        func(g *gen) []string { return []string{g.key()} },
	"expiretime":  func(g *gen) []string { return []string{g.key()} },
	"pexpiretime": func(g *gen) []string { return []string{g.key()} },
	"persist":     func(g *gen) []string { return []string{g.key()} },
	"copy": func(g *gen) []string {
		return cat(g.typedKey("a"), g.typedKey("b"), g.opts(2, g.flag("REPLACE"), g.with("DB", func() string { return g.pick("0", "abc", "-1") })))
	},
	"rename":   func(g *gen) []string { return []string{g.typedKey("a"), g.typedKey("b")} },
	"renamenx": func(g *gen) []string { return []string{g.typedKey("a"), g.typedKey("b")} },

	"get": func(g *gen) []string { return []string{g.typedKey("str")} },
	"set": func(g *gen) []string {
		return cat(g.typedKey("str"), g.val(), g.opts(3, g.flag("NX"), g.flag("XX"), g.flag("GET"), g.flag("KEEPTTL"),
			g.with("EX", g.secs), g.with("PX", g.millis), g.with("EXAT", g.at), g.with("PXAT", g.atMillis)))
	},
	"setnx":  func(g *gen) []string { return []string{g.typedKey("str"), g.val()} },
	"setex":  func(g *gen) []string { return []string{g.typedKey("str"), g.secs(), g.val()} },
	"psetex": func(g *gen) []string { return []string{g.typedKey("str"), g.millis(), g.val()} },
	"getset": func(g *gen) []string { return []string{g.typedKey("str"), g.val()} },
	"getdel": func(g *gen) []string { return []string{g.typedKey("str")} },
	"getex": func(g *gen) []string {
		return cat(g.typedKey("str"), g.opts(2, g.flag("PERSIST"), g.with("EX", g.secs), g.with("PX", g.millis),
			g.with("EXAT", g.at), g.with("PXAT", g.atMillis)))
	},
	"mget": func(g *gen) []string { return g.anyKeys(1, 4) },
	"mset": func(g *gen) []string {
		var out []string
		for i := 0; i < 1+g.r.Intn(3); i++ {
			out = append(out, g.pick(allKeys...), g.val())
		}
		return out
	},
	"msetnx": func(g *gen) []string {
		var out []string
		for i := 0; i < 1+g.r.Intn(3); i++ {
			out = append(out, g.typedKey("a"), g.val())
		}
		return out
	},
	"incr":        func(g *gen) []string { return []string{g.typedKey("str")} },
	"decr":        func(g *gen) []string { return []string{g.typedKey("str")} },
	"incrby":      func(g *gen) []string { return []string{g.typedKey("str"), g.int()} },
	"decrby":      func(g *gen) []string { return []string{g.typedKey("str"), g.int()} },
	"incrbyfloat": func(g *gen) []string { return []string{g.typedKey("str"), g.float()} },
	"append":      func(g *gen) []string { return []string{g.typedKey("str"), g.val()} },
	"strlen":      func(g *gen) []string { return []string{g.typedKey("str")} },
	"getrange":    func(g *gen) []string { return []string{g.typedKey("str"), g.index(), g.index()} },
	"substr":      func(g *gen) []string { return []string{g.typedKey("str"), g.index(), g.index()} },
	"setrange": func(g *gen) []string {
		off := g.index()
		if g.chance(0.2) {
			off = g.pick("536870911", "536870912", "9223372036854775807", "2000000", "1048575", "1048576")
		}
		return []string{g.typedKey("str"), off, g.val()}
	},
	"lcs": func(g *gen) []string {
		return cat(g.typedKey("str"), g.typedKey("a"), g.opts(3, g.flag("LEN"), g.flag("IDX"), g.flag("WITHMATCHLEN"),
			g.with("MINMATCHLEN", g.int)))
	},

	"hset": func(g *gen) []string {
		out := []string{g.typedKey("hash")}
		for i := 0; i < 1+g.r.Intn(3); i++ {
			out = append(out, g.field(), g.val())
		}
		return out
	},
	"hmset": func(g *gen) []string {
		out := []string{g.typedKey("hash")}
		for i := 0; i < 1+g.r.Intn(3); i++ {
			out = append(out, g.field(), g.val())
		}
		return out
	},
	"hsetnx":  func(g *gen) []string { return []string{g.typedKey("hash"), g.field(), g.val()} },
	"hget":    func(g *gen) []string { return []string{g.typedKey("hash"), g.field()} },
	"hmget":   func(g *gen) []string { return []string{g.typedKey("hash"), g.field(), g.field()} },
	"hgetall": func(g *gen) []string { return []string{g.typedKey("hash")} },
	"hkeys":   func(g *gen) []string { return []string{g.typedKey("hash")} },
	"hvals":   func(g *gen) []string { return []string{g.typedKey("hash")} },
	"hdel":    func(g *gen) []string { return []string{g.typedKey("hash"), g.field(), g.field()} },
	"hlen":    func(g *gen) []string { return []string{g.typedKey("hash")} },
	"hexists": func(g *gen) []string { return []string{g.typedKey("hash"), g.field()} },
	"hstrlen": func(g *gen) []string { return []string{g.typedKey("hash"), g.field()} },
	"hincrby": func(g *gen) []string { return []string{g.typedKey("hash"), g.field(), g.int()} },
	"hincrbyfloat": func(g *gen) []string {
		return []string{g.typedKey("hash"), g.field(), g.float()}
	},
	"hrandfield": func(g *gen) []string {
		return cat(g.typedKey("hash"), g.opts(1, func() []string { return cat(g.int(), g.opts(1, g.flag("WITHVALUES"))) }))
	},
	"hscan": func(g *gen) []string { return cat(g.typedKey("hash"), g.scanCursor(), g.scanOpts(true)) },

	"lpush":  func(g *gen) []string { return cat(g.typedKey("list"), g.members(1, 3)) },
	"rpush":  func(g *gen) []string { return cat(g.typedKey("list"), g.members(1, 3)) },
	"lpushx": func(g *gen) []string { return cat(g.typedKey("list"), g.members(1, 3)) },
	"rpushx": func(g *gen) []string { return cat(g.typedKey("list"), g.members(1, 3)) },
	"lpop": func(g *gen) []string {
		return cat(g.typedKey("list"), g.opts(1, func() []string { return []string{g.count()} }))
	},
	"rpop": func(g *gen) []string {
		return cat(g.typedKey("list"), g.opts(1, func() []string { return []string{g.count()} }))
	},
	"llen":   func(g *gen) []string { return []string{g.typedKey("list")} },
	"lrange": func(g *gen) []string { return []string{g.typedKey("list"), g.index(), g.index()} },
	"lindex": func(g *gen) []string { return []string{g.typedKey("list"), g.index()} },
	"lset":   func(g *gen) []string { return []string{g.typedKey("list"), g.index(), g.member()} },
	"linsert": func(g *gen) []string {
		return []string{g.typedKey("list"), g.kw(g.pick("BEFORE", "AFTER", "MIDDLE")), g.member(), g.member()}
	},
	"lrem":  func(g *gen) []string { return []string{g.typedKey("list"), g.int(), g.member()} },
	"ltrim": func(g *gen) []string { return []string{g.typedKey("list"), g.index(), g.index()} },
	"lpos": func(g *gen) []string {
		return cat(g.typedKey("list"), g.member(), g.opts(3, g.with("RANK", g.int), g.with("COUNT", g.count), g.with("MAXLEN", g.count)))
	},
	"lmove": func(g *gen) []string {
		return []string{g.typedKey("list"), g.typedKey("list"), g.kw(g.pick("LEFT", "RIGHT", "UP")), g.kw(g.pick("LEFT", "RIGHT"))}
	},
	"rpoplpush": func(g *gen) []string { return []string{g.typedKey("list"), g.typedKey("list")} },
	"lmpop": func(g *gen) []string {
		return cat(g.numkeys("list"), g.kw(g.pick("LEFT", "RIGHT", "MIDDLE")), g.opts(1, g.with("COUNT", g.count)))
	},
	"blpop": func(g *gen) []string { return cat(g.taggedKeys("list", 1, 3), g.timeout()) },
	"brpop": func(g *gen) []string { return cat(g.taggedKeys("list", 1, 3), g.timeout()) },
	"blmove": func(g *gen) []string {
		return []string{g.typedKey("list"), g.typedKey("list"), g.kw(g.pick("LEFT", "RIGHT")), g.kw(g.pick("LEFT", "RIGHT")), g.timeout()}
	},
	"brpoplpush": func(g *gen) []string { return []string{g.typedKey("list"), g.typedKey("list"), g.timeout()} },
	"blmpop": func(g *gen) []string {
		return cat(g.timeout(), g.numkeys("list"), g.kw(g.pick("LEFT", "RIGHT")), g.opts(1, g.with("COUNT", g.count)))
	},

	"sadd":       func(g *gen) []string { return cat(g.typedKey("set"), g.members(1, 3)) },
	"srem":       func(g *gen) []string { return cat(g.typedKey("set"), g.members(1, 3)) },
	"smembers":   func(g *gen) []string { return []string{g.typedKey("set")} },
	"sismember":  func(g *gen) []string { return []string{g.typedKey("set"), g.member()} },
	"smismember": func(g *gen) []string { return cat(g.typedKey("set"), g.members(1, 3)) },
	"scard":      func(g *gen) []string { return []string{g.typedKey("set")} },
	"spop":       func(g *gen) []string { return []string{g.typedKey("set"), g.pick("0", "100", "-1", "abc")} },
	"srandmember": func(g *gen) []string {
		return cat(g.typedKey("set"), g.opts(1, func() []string { return []string{g.int()} }))
	},
	"smove":       func(g *gen) []string { return []string{g.typedKey("set"), g.typedKey("set"), g.member()} },
	"sinter":      func(g *gen) []string { return g.taggedKeys("set", 1, 3) },
	"sunion":      func(g *gen) []string { return g.taggedKeys("set", 1, 3) },
	"sdiff":       func(g *gen) []string { return g.taggedKeys("set", 1, 3) },
	"sinterstore": func(g *gen) []string { return g.taggedKeys("set", 2, 4) },
	"sunionstore": func(g *gen) []string { return g.taggedKeys("set", 2, 4) },
	"sdiffstore":  func(g *gen) []string { return g.taggedKeys("set", 2, 4) },
	"sintercard":  func(g *gen) []string { return cat(g.numkeys("set"), g.opts(1, g.with("LIMIT", g.count))) },
	"sscan":       func(g *gen) []string { return cat(g.typedKey("set"), g.scanCursor(), g.scanOpts(false)) },

	"zadd": func(g *gen) []string {
		out := cat(g.typedKey("zset"), g.opts(2, g.flag("NX"), g.flag("XX"), g.flag("GT"), g.flag("LT"), g.flag("CH"), g.flag("INCR")))
		for i := 0; i < 1+g.r.Intn(2); i++ {
			out = append(out, g.float(), g.member())
		}
		return out
	},
	"zincrby":   func(g *gen) []string { return []string{g.typedKey("zset"), g.float(), g.member()} },
	"zscore":    func(g *gen) []string { return []string{g.typedKey("zset"), g.member()} },
	"zmscore":   func(g *gen) []string { return cat(g.typedKey("zset"), g.members(1, 3)) },
	"zcard":     func(g *gen) []string { return []string{g.typedKey("zset")} },
	"zcount":    func(g *gen) []string { return []string{g.typedKey("zset"), g.scoreBound(), g.scoreBound()} },
	"zlexcount": func(g *gen) []string { return []string{g.typedKey("zset"), g.lexBound(), g.lexBound()} },
	"zrange":    func(g *gen) []string { return cat(g.typedKey("zset"), g.zBound(), g.zBound(), g.zrangeOpts()) },
	"zrangestore": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.typedKey("zset"), g.zBound(), g.zBound(), g.zrangeOpts())
	},
	"zrevrange": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.index(), g.index(), g.opts(1, g.flag("WITHSCORES")))
	},
	"zrangebyscore": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.scoreBound(), g.scoreBound(), g.opts(2, g.flag("WITHSCORES"),
			func() []string { return cat(g.kw("LIMIT"), g.int(), g.int()) }))
	},
	"zrevrangebyscore": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.scoreBound(), g.scoreBound(), g.opts(2, g.flag("WITHSCORES"),
			func() []string { return cat(g.kw("LIMIT"), g.int(), g.int()) }))
	},
	"zrangebylex": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.lexBound(), g.lexBound(), g.opts(1, func() []string { return cat(g.kw("LIMIT"), g.int(), g.int()) }))
	},
	"zrevrangebylex": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.lexBound(), g.lexBound(), g.opts(1, func() []string { return cat(g.kw("LIMIT"), g.int(), g.int()) }))
	},
	"zrank":            func(g *gen) []string { return []string{g.typedKey("zset"), g.member()} },
	"zrevrank":         func(g *gen) []string { return []string{g.typedKey("zset"), g.member()} },
	"zrem":             func(g *gen) []string { return cat(g.typedKey("zset"), g.members(1, 3)) },
	"zremrangebyrank":  func(g *gen) []string { return []string{g.typedKey("zset"), g.index(), g.index()} },
	"zremrangebyscore": func(g *gen) []string { return []string{g.typedKey("zset"), g.scoreBound(), g.scoreBound()} },
	"zremrangebylex":   func(g *gen) []string { return []string{g.typedKey("zset"), g.lexBound(), g.lexBound()} },
	"zpopmin": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.opts(1, func() []string { return []string{g.count()} }))
	},
	"zpopmax": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.opts(1, func() []string { return []string{g.count()} }))
	},
	"zmpop": func(g *gen) []string {
		return cat(g.numkeys("zset"), g.kw(g.pick("MIN", "MAX", "MID")), g.opts(1, g.with("COUNT", g.count)))
	},
	"bzpopmin": func(g *gen) []string { return cat(g.taggedKeys("zset", 1, 3), g.timeout()) },
	"bzpopmax": func(g *gen) []string { return cat(g.taggedKeys("zset", 1, 3), g.timeout()) },
	"bzmpop": func(g *gen) []string {
		return cat(g.timeout(), g.numkeys("zset"), g.kw(g.pick("MIN", "MAX")), g.opts(1, g.with("COUNT", g.count)))
	},
	"zunionstore": func(g *gen) []string { return cat(g.typedKey("zset"), g.numkeys("zset"), g.weights()) },
	"zinterstore": func(g *gen) []string { return cat(g.typedKey("zset"), g.numkeys("zset"), g.weights()) },
	"zdiffstore":  func(g *gen) []string { return cat(g.typedKey("zset"), g.numkeys("zset")) },
	"zunion": func(g *gen) []string {
		return cat(g.numkeys("zset"), g.weights(), g.opts(1, g.flag("WITHSCORES")))
	},
	"zinter": func(g *gen) []string {
		return cat(g.numkeys("zset"), g.weights(), g.opts(1, g.flag("WITHSCORES")))
	},
	"zdiff":      func(g *gen) []string { return cat(g.numkeys("zset"), g.opts(1, g.flag("WITHSCORES"))) },
	"zintercard": func(g *gen) []string { return cat(g.numkeys("zset"), g.opts(1, g.with("LIMIT", g.count))) },
	"zrandmember": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.opts(1, func() []string { return cat(g.int(), g.opts(1, g.flag("WITHSCORES"))) }))
	},
	"zscan": func(g *gen) []string { return cat(g.typedKey("zset"), g.scanCursor(), g.scanOpts(true)) },

	"sort": func(g *gen) []string {
		return cat(g.typedKey(g.pick("list", "set", "zset")), g.opts(3, g.flag("ASC"), g.flag("DESC"), g.flag("ALPHA"),
			func() []string { return cat(g.kw("LIMIT"), g.int(), g.int()) }, g.with("STORE", func() string { return g.typedKey("a") }),
			g.with("BY", func() string { return "nosort" })))
	},
	"sort_ro": func(g *gen) []string {
		return cat(g.typedKey(g.pick("list", "set", "zset")), g.opts(3, g.flag("ASC"), g.flag("DESC"), g.flag("ALPHA"),
			func() []string { return cat(g.kw("LIMIT"), g.int(), g.int()) }, g.with("BY", func() string { return "nosort" })))
	},
}

// names is the drawable commands, sorted, so a seed means the same
// sequence on every run.
func names() []string {
	var out []string
	for n := range gens {
		out = append(out, n)
	}
	sortStrings(out)
	return out
}

// generate draws a sequence of n commands (after the setup) from seed.
func generate(seed int64, n int) [][]string {
	g := &gen{r: rand.New(rand.NewSource(seed))}
	ns := names()
	seq := append([][]string(nil), setup...)
	if g.chance(0.3) { // some sequences in RESP3
		seq = append([][]string{{"HELLO", "3"}}, seq...)
	}
	for i := 0; i < n; i++ {
		if g.chance(0.04) {
			seq = append(seq, g.transaction(ns)...)
			continue
		}
		name := ns[g.r.Intn(len(ns))]
		if g.chance(0.08) {
			// scripting and pub/sub: a dozen names among ~180, each
			// drawing from a grammar of its own
			name = scriptNames[g.r.Intn(len(scriptNames))]
		}
		args := gens[name](g)
		cmd := cat(strings.ToUpper(name), args)
		if g.chance(0.03) {
			cmd[0] = g.kw(cmd[0])
		}
		switch {
		case g.chance(0.03) && len(cmd) > 1 && name != "spop": // wrong arity: one short (SPOP key alone is random)
			cmd = cmd[:len(cmd)-1]
		case g.chance(0.02) && !command.Lookup([]byte(name)).Has(command.Blocking): // one too many (not after a timeout: BLPOP k 0.01 100 waits 100 s)
			cmd = append(cmd, g.val())
		}
		seq = append(seq, cmd)
	}
	return seq
}

// transaction is MULTI, one to three commands compared byte for byte
// (their replies come in EXEC's array) over the tagged keys, then EXEC
// or, now and then, DISCARD.
func (g *gen) transaction(ns []string) [][]string {
	out := [][]string{{g.kw("MULTI")}}
	for len(out) < 2+g.r.Intn(3) {
		name := ns[g.r.Intn(len(ns))]
		if name == "script" || name == "function" || name == "pubsub" {
			continue // refused inside MULTI by design (README, MULTI)
		}
		cmd := cat(strings.ToUpper(name), gens[name](g))
		if modeOf(cmd) != exact || name == "spop" || strings.HasSuffix(name, "scan") {
			continue
		}
		ok := true
		for _, a := range cmd[1:] {
			if a == "ua" || a == "ub" {
				ok = false
			}
		}
		if ok {
			out = append(out, cmd)
		}
	}
	if g.chance(0.1) {
		return append(out, []string{"DISCARD"})
	}
	return append(out, []string{g.kw("EXEC")})
}
