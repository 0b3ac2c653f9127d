package difffuzz

import (
	"strconv"
	"strings"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/luascript"
)

// Scripting and pub/sub. A script is drawn from a small grammar:
//
//	script  := [redis.setresp(3)] (wrapper | literal | calls)
//	wrapper := return redis.pcall(unpack(ARGV))           -- the inner command, as its own reply
//	         | local r = redis.(p)call(unpack(ARGV)) return conv(r)
//	literal := return value                               -- tables, nil, booleans, floats, status/error
//	calls   := redis.(p)call(...) over KEYS and ARGV, then return value or conv
//
// The inner command of a wrapper is any command the fuzzer draws with an
// exact reply that a script may run (its name and arguments are ARGV, its
// keys also declared as KEYS, so that the script routes to their
// bucket); its keys are the tagged ones, so every key of a script is in
// one bucket, as the transactions keep theirs. Erroring calls, wrong types
// and wrong arities come from the inner commands' own draws.
//
// Function libraries hold one function each (Redis lists a library's
// functions in its dict's order) over the same grammar, with keys and
// args named KEYS and ARGV. Both sides drop their scripts and libraries
// between sequences (pair.reset).
//
// Pub/sub on the fuzzer's one connection has no subscribers, so
// PUBLISH, SPUBLISH and PUBSUB's answers compare as they are.

var scriptGens = map[string]func(g *gen) []string{
	"eval":       func(g *gen) []string { return g.evalArgs(false) },
	"eval_ro":    func(g *gen) []string { return g.evalArgs(false) },
	"evalsha":    func(g *gen) []string { return g.evalArgs(true) },
	"evalsha_ro": func(g *gen) []string { return g.evalArgs(true) },
	"fcall":      func(g *gen) []string { return g.fcallArgs() },
	"fcall_ro":   func(g *gen) []string { return g.fcallArgs() },
	"script":     func(g *gen) []string { return g.scriptArgs() },
	"function":   func(g *gen) []string { return g.functionArgs() },
	"publish":    func(g *gen) []string { return []string{g.channel(), g.val()} },
	"spublish":   func(g *gen) []string { return []string{g.pick("{t}ch", "{t}x"), g.val()} },
	"pubsub":     func(g *gen) []string { return g.pubsubArgs() },
}

// scriptNames is scriptGens' names, sorted (a seed draws one sequence).
var scriptNames []string

func init() {
	for name, f := range scriptGens {
		gens[name] = f
		delete(skipped, name)
		scriptNames = append(scriptNames, name)
	}
	sortStrings(scriptNames)
}

// notInScripts: commands drawn elsewhere that a script must not call
// for a comparable reply: the node-wide ones (a script sees its bucket
// only, by design: README "Scripting"), the ones whose reply depends on
// time or on the connection, and the blocking ones.
var notInScripts = map[string]bool{
	"dbsize": true, "keys": true, "scan": true, "randomkey": true,
	"eval": true, "eval_ro": true, "evalsha": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true,
	"script": true, "function": true, "publish": true, "spublish": true, "pubsub": true,
}

// innerCommand draws a command a script runs: exact replies, tagged keys.
func (g *gen) innerCommand() []string {
	ns := names()
	for {
		name := ns[g.r.Intn(len(ns))]
		spec := command.Lookup([]byte(name))
		if notInScripts[name] || spec == nil || spec.Has(command.Blocking) || spec.Has(command.NoKey) && name != "ping" && name != "echo" {
			continue
		}
		cmd := cat(name, gens[name](g))
		if modeOf(cmd) != exact || name == "spop" || strings.HasSuffix(name, "scan") {
			continue
		}
		ok := true
		for _, a := range cmd[1:] {
			if a == "ua" || a == "ub" || len(a) > 1024 {
				ok = false
			}
		}
		if ok {
			return cmd
		}
	}
}

// keysOf is cmd's keys (as the proxy finds them).
func keysOf(cmd []string) []string {
	spec := command.Lookup([]byte(cmd[0]))
	if spec == nil {
		return nil
	}
	var out []string
	for _, i := range spec.KeyIndexes(toBytes(cmd)) {
		out = append(out, cmd[i])
	}
	return out
}

// luaValue draws a literal Lua value of Redis's conversions.
func (g *gen) luaValue(depth int) string {
	switch g.r.Intn(18) {
	case 0:
		return g.pick("0", "1", "-1", "42", "9007199254740993", "-7")
	case 1:
		return g.pick("3.99", "-2.5", "0.1", "1e300", "-0.0", "1/0", "-1/0")
	case 2:
		return g.pick("'str'", "''", "'a b'", "'\\0x'", "'1.5'")
	case 3:
		return g.pick("true", "false")
	case 4:
		return "nil"
	case 5:
		return "redis.status_reply('" + g.pick("FINE", "OK", "") + "')"
	case 6:
		return "redis.error_reply('" + g.pick("MY error", "ERR x", "", "-E y") + "')"
	case 7:
		return "{err='" + g.pick("E1 table", "x", "") + "'}"
	case 8:
		return "{ok='" + g.pick("O1", "") + "'}"
	case 9:
		return g.pick("{double=1.5}", "{double=3}", "{map={a='b'}}", "{set={x=true}}", "{map={}}", "{big_number='123'}")
	case 10:
		return g.pick("KEYS[1]", "ARGV[1]", "#KEYS", "#ARGV", "tonumber(ARGV[1])")
	case 11:
		return g.pick("redis.sha1hex('x')", "string.format('%d', 7)", "cjson.encode({1, 'a'})", "string.rep('ab', 3)")
	}
	if depth > 1 {
		return "1"
	}
	n := g.r.Intn(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.luaValue(depth + 1)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// luaConv draws an expression over r, the reply of a call.
func (g *gen) luaConv() string {
	return g.pick("r", "r", "{r}", "type(r)", "{type(r), r}", "(type(r) == 'table' and r.err) or 'noerr'",
		"(type(r) == 'table' and r.ok) or r", "r == false", "redis.status_reply(type(r))", "{r, r}",
		"(type(r) == 'number' and r + 0.5) or r", "(type(r) == 'table' and #r) or 0")
}

// scriptBody draws a script: the body, its keys, its arguments. resp3
// allows redis.setresp(3) (not in functions: the normalisation of the
// maps it brings reads EVAL's body).
func (g *gen) scriptBody(resp3 bool) (body string, keys, args []string) {
	var b strings.Builder
	if resp3 && g.chance(0.25) {
		b.WriteString("redis.setresp(3) ")
	}
	call := g.pick("redis.pcall", "redis.call")
	switch g.r.Intn(4) {
	case 0, 1: // a wrapper over a drawn command
		inner := g.innerCommand()
		keys, args = keysOf(inner), inner
		if g.chance(0.5) {
			b.WriteString("return redis.pcall(unpack(ARGV))")
		} else {
			b.WriteString("local r = " + call + "(unpack(ARGV)) return " + g.luaConv())
		}
	case 2: // a literal
		keys = g.taggedKeys("a", 1, 1)[:g.r.Intn(2)]
		args = g.members(0, 2)
		b.WriteString("return " + g.luaValue(0))
	default: // calls over KEYS and ARGV
		keys = g.taggedKeys(g.pick("str", "hash", "list", "zset"), 1, 2)
		args = []string{g.val(), g.int()}
		for i := 0; i < 1+g.r.Intn(2); i++ {
			k := "KEYS[" + strconv.Itoa(1+g.r.Intn(len(keys))) + "]"
			b.WriteString(g.pick(
				call+"('set', "+k+", ARGV[1]) ",
				call+"('incrby', "+k+", ARGV[2]) ",
				call+"('lpush', "+k+", ARGV[1], ARGV[2]) ",
				call+"('hset', "+k+", 'f', ARGV[1]) ",
				call+"('zadd', "+k+", ARGV[2], ARGV[1]) ",
				call+"('del', "+k+") ",
				call+"('nosuchcommand', "+k+") ",
				call+"('get') ",
				call+"('set', "+k+", nil) ",
				call+"('expire', "+k+", 1000) ",
			))
		}
		k := "KEYS[1]"
		b.WriteString("local r = " + call + g.pick("('get', "+k+")", "('lrange', "+k+", 0, -1)", "('zrange', "+k+", 0, -1, 'withscores')",
			"('hget', "+k+", 'f')", "('type', "+k+")", "('ttl', "+k+")", "('incrbyfloat', "+k+", ARGV[2])", "('zscore', "+k+", ARGV[1])") + " ")
		b.WriteString("return " + g.luaConv())
	}
	return b.String(), keys, args
}

// numKeysArgs is EVAL's numkeys, keys and args; sometimes a bad numkeys.
func (g *gen) numKeysArgs(keys, args []string) []string {
	n := strconv.Itoa(len(keys))
	if g.chance(0.04) {
		n = g.pick("-1", "abc", "100", "")
	}
	return cat(n, keys, args)
}

func (g *gen) evalArgs(sha bool) []string {
	body, keys, args := g.scriptBody(true)
	if !sha {
		g.bodies = append(g.bodies, body)
		return cat(body, g.numKeysArgs(keys, args))
	}
	h := luascript.Sha1Hex([]byte(body)) // usually unknown: NOSCRIPT
	if len(g.bodies) > 0 && g.chance(0.7) {
		// one loaded before in this sequence: its keys and args are
		// the new draw's, a script meeting keys it did not expect
		h = luascript.Sha1Hex([]byte(g.bodies[g.r.Intn(len(g.bodies))]))
	}
	switch {
	case g.chance(0.05):
		h = strings.ToUpper(h)
	case g.chance(0.05):
		h = g.pick("abc", "", "ffffffffffffffffffffffffffffffffffffffff")
	}
	return cat(h, g.numKeysArgs(keys, args))
}

// libraries and functions: lib1..lib3, each registering one of f1..f3.
func (g *gen) libName() string  { return g.pick("lib1", "lib2", "lib3") }
func (g *gen) funcName() string { return g.pick("f1", "f2", "f3") }

func (g *gen) library() string {
	body, _, _ := g.scriptBody(false)
	fn := "function(KEYS, ARGV) " + body + " end"
	reg := "redis.register_function('" + g.funcName() + "', " + fn + ")"
	if g.chance(0.4) {
		reg = "redis.register_function{function_name='" + g.funcName() + "', callback=" + fn + ", flags={" +
			g.pick("'no-writes'", "", "'allow-oom'", "'no-writes', 'allow-stale'", "'bad-flag'") + "}}"
	}
	return "#!lua name=" + g.libName() + "\n" + reg
}

func (g *gen) fcallArgs() []string {
	_, keys, args := g.scriptBody(false)
	name := g.funcName()
	if g.chance(0.05) {
		name = "nofunction"
	}
	return cat(name, g.numKeysArgs(keys, args))
}

func (g *gen) scriptArgs() []string {
	switch g.r.Intn(8) {
	case 0, 1, 2:
		body, _, _ := g.scriptBody(true)
		g.bodies = append(g.bodies, body)
		return []string{g.kw("LOAD"), body}
	case 3, 4:
		out := []string{g.kw("EXISTS")}
		for i := 0; i < 1+g.r.Intn(3); i++ {
			if len(g.bodies) > 0 && g.chance(0.6) {
				out = append(out, luascript.Sha1Hex([]byte(g.bodies[g.r.Intn(len(g.bodies))])))
			} else {
				out = append(out, g.pick("ffffffffffffffffffffffffffffffffffffffff", "x", ""))
			}
		}
		return out
	case 5:
		return cat(g.kw("FLUSH"), g.opts(1, g.flag("ASYNC"), g.flag("SYNC"), func() []string { return []string{"junk"} }))
	case 6:
		return []string{g.kw("KILL")}
	}
	return []string{g.pick("HELP", "nosub", "LOAD")}
}

func (g *gen) functionArgs() []string {
	switch g.r.Intn(10) {
	case 0, 1, 2, 3:
		return cat(g.kw("LOAD"), g.opts(1, g.flag("REPLACE")), g.library())
	case 4:
		return []string{g.kw("DELETE"), g.pick("lib1", "lib2", "lib3", "nolib")}
	case 5:
		return cat(g.kw("FLUSH"), g.opts(1, g.flag("ASYNC"), g.flag("SYNC")))
	case 6, 7:
		// one library at a time: Redis lists libraries in its dict's order
		return cat(g.kw("LIST"), g.kw("LIBRARYNAME"), g.pick("lib1", "lib2", "lib3", "nolib"), g.opts(1, g.flag("WITHCODE")))
	case 8:
		return []string{g.kw(g.pick("STATS", "KILL"))}
	}
	return []string{g.pick("HELP", "nosub", "LOAD", "DELETE")}
}

func (g *gen) channel() string { return g.pick("ch", "news", "", "{t}ch", "\x00bin") }

func (g *gen) pubsubArgs() []string {
	switch g.r.Intn(7) {
	case 0:
		return cat(g.kw("CHANNELS"), g.opts(1, func() []string { return []string{g.pattern()} }))
	case 1:
		return cat(g.kw("NUMSUB"), g.opts(3, func() []string { return []string{g.channel()} }))
	case 2:
		return []string{g.kw("NUMPAT")}
	case 3:
		return cat(g.kw("SHARDCHANNELS"), g.opts(1, func() []string { return []string{g.pattern()} }))
	case 4:
		return cat(g.kw("SHARDNUMSUB"), g.opts(3, func() []string { return []string{g.channel()} }))
	case 5:
		return []string{g.kw("HELP")}
	}
	return []string{g.pick("nosub", "NUMPAT")}
}
