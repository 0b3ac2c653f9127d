package difffuzz

import (
	"strconv"
	"strings"
)

// This file is the one place where the comparison bends: how replies that
// are unordered or time-dependent are compared (modes), and the
// differences that are by design (rules), each with its reason.

// mode says how a command's replies are compared.
type mode int

const (
	exact     mode = iota
	asSet          // array elements compared as a multiset
	asPairs        // array of pairs (field, value) compared as a set of pairs
	timeish        // a positive integer (a remaining time, an expiry) compares as "positive"
	shape          // random replies: the type and length only
	scanAll        // cursor 0: every page until cursor 0, keys as a set
	scanPairs      // the same, pairs (HSCAN, ZSCAN)
	ignored        // not compared
)

// modes: the reply of each command not compared byte for byte, and why.
var modes = map[string]mode{
	"smembers": asSet, "sinter": asSet, "sunion": asSet, "sdiff": asSet, // a set has no order
	"hkeys": asSet, "hvals": asSet, "keys": asSet, // hash and keyspace order is the implementation's
	"spop":    asSet,   // drawn only with a count that pops every member
	"hgetall": asPairs, // hash order
	// the clock moves between the two servers' commands
	"ttl": timeish, "pttl": timeish, "expiretime": timeish, "pexpiretime": timeish,
	// random by definition
	"srandmember": shape, "hrandfield": shape, "zrandmember": shape, "randomkey": shape,
	// cursors are the implementation's; the union of the pages is compared
	"scan": scanAll, "sscan": scanAll, "hscan": scanPairs, "zscan": scanPairs,
	// HELLO 3 switches both to RESP3; its reply describes the server
	"hello": ignored,
}

// modeOf is the mode of one command line; SORT_RO ... BY nosort of a set
// is unordered too.
func modeOf(cmd []string) mode {
	name := strings.ToLower(cmd[0])
	if name == "sort_ro" || name == "sort" {
		// BY a pattern without '*' does not sort: a set comes in its
		// own order (Redis sorts it alpha only for STORE)
		nosort, store, limit := false, false, false
		for i, a := range cmd[1:] {
			switch {
			case strings.EqualFold(a, "by") && i+2 < len(cmd) && !strings.Contains(cmd[i+2], "*"):
				nosort = true
			case strings.EqualFold(a, "store"):
				store = true
			case strings.EqualFold(a, "limit"):
				limit = true
			}
		}
		switch {
		case nosort && !store && limit:
			return shape
		case nosort && !store:
			return asSet
		}
	}
	return modes[name]
}

// seen is one difference as the rules see it: the command (name
// lower-cased), the engine, both replies, and ask, which runs a read-only
// command on redis-server (the state the command left there).
type seen struct {
	cmd         []string
	engine      string
	redis, tair node
	ask         func(args ...string) node
	pre         node // a lex command's sorted set, before it ran (ZRANGE key 0 -1 WITHSCORES)
}

// rule accepts a difference by design (or a known bug, so named). resync:
// the difference may leave the two sides' data apart, so both are
// emptied (FLUSHALL) before the sequence goes on.
type rule struct {
	reason string
	match  func(d seen) bool
	resync bool
}

var rules = []rule{
	{
		reason: "README, Scripting: gopher-lua's compiler words syntax errors otherwise than Lua 5.1 (\"parse error near\" for \"'=' expected near\"); both refuse the script",
		match: func(d seen) bool {
			const p = "ERR Error compiling script"
			return strings.HasPrefix(d.redis.s, p) && strings.HasPrefix(d.tair.s, p)
		},
	},
	{
		reason: "a script's keys are its bucket's (README, Scripting): a key of another bucket inside a script is refused with Redis Cluster's error (the generator keeps a script's keys under one tag; the shrinker may not)",
		match: func(d seen) bool {
			return scriptCall(d.cmd[0]) && strings.Contains(d.tair.String(), "Script attempted to access a non local key in a cluster node")
		},
		resync: true,
	},
	{
		reason: "a map a script's command returned under redis.setresp(3) is a Lua table when the script returns it, in the order the Lua implementation iterates it (gopher-lua's, not Lua 5.1's): compared with every even-length array as a set of pairs",
		match: func(d seen) bool {
			return (d.cmd[0] == "eval" || d.cmd[0] == "eval_ro") && len(d.cmd) > 1 && strings.Contains(d.cmd[1], "setresp(3)") &&
				pairsCanonical(d.redis).String() == pairsCanonical(d.tair).String()
		},
	},
	{
		reason: "a blocking timeout beyond a long long of milliseconds (inf, 1e300): Redis 7.0 casts it unchecked and says \"timeout is negative\", tair says Redis 7.2's \"timeout is out of range\"",
		match: func(d seen) bool {
			return d.redis.s == "ERR timeout is negative" && d.tair.s == "ERR timeout is out of range"
		},
	},
	{
		reason: "SPEC §2 limits a key to 1024 bytes (KEYTOOLONG, tair -5) where Redis allows 512 MB",
		match:  func(d seen) bool { return d.tair.errPrefix() == "KEYTOOLONG" },
		resync: true,
	},
	{
		reason: "SPEC §3: an atomic command over keys of different buckets is refused with Redis Cluster's CROSSSLOT (the generator keeps atomic commands in one tag; a numkeys larger than the keys drawn, or the shrinker, may not)",
		match:  func(d seen) bool { return d.tair.errPrefix() == "CROSSSLOT" },
		resync: true,
	},
	{
		reason: "Redis 7.0 writes a sorted set's double replies with %.17g (0.10000000000000001), Redis 7.2 and tair with the shortest text that reads back the same (0.1): compared as float64",
		match: func(d seen) bool {
			if d.cmd[0] == "zscan" { // the pages' union: member, score pairs in any order
				return sameFloats(d.redis.sorted(2, false), d.tair.sorted(2, false))
			}
			if scriptCall(d.cmd[0]) { // a script's ZSCORE, ZINCRBY ...
				return sameFloats(d.redis, d.tair)
			}
			return (strings.HasPrefix(d.cmd[0], "z") || strings.HasPrefix(d.cmd[0], "bz")) && sameFloats(d.redis, d.tair)
		},
	},
	{
		reason: "ZRANK/ZREVRANK key member WITHSCORE is Redis 7.2's; tair takes 7.2's syntax, Redis 7.0 has arity 3 (called from a script)",
		match: func(d seen) bool {
			in := scriptInner(d.cmd)
			return len(in) > 3 && (strings.EqualFold(in[0], "zrank") || strings.EqualFold(in[0], "zrevrank")) &&
				strings.Contains(d.redis.String(), "Wrong number of args calling Redis command from script")
		},
	},
	{
		reason: "ZRANK/ZREVRANK key member WITHSCORE is Redis 7.2's; tair takes 7.2's syntax, Redis 7.0 has arity 3",
		match: func(d seen) bool {
			return (d.cmd[0] == "zrank" || d.cmd[0] == "zrevrank") && len(d.cmd) > 3 &&
				strings.HasPrefix(d.redis.s, "ERR wrong number of arguments")
		},
	},
	{
		reason: "Redis leaves a lex range over members of different scores unspecified (ZRANGEBYLEX and friends walk its skiplist or listpack assuming one score); compared only when the key's scores are all equal",
		match: func(d seen) bool {
			if lexOf(d.cmd) == nil {
				return false
			}
			z := d.pre // the sorted set before the command ran
			scores := map[string]bool{}
			for i := 1; i < len(z.kids); i += 2 {
				scores[z.kids[i].s] = true
			}
			if len(z.kids) > 0 && len(z.kids[0].kids) == 2 { // RESP3: [member, score] pairs
				clear(scores)
				for _, p := range z.kids {
					scores[p.kids[1].s] = true
				}
			}
			return len(scores) > 1
		},
		resync: true,
	},
	{
		reason: "a SCAN cursor other than 0 is the implementation's: Redis 7.0 reads any string strtoul takes (\"\" as 0, \"-1\" as 2^64-1) as a cursor, tair's cursors encode a bucket and refuse the rest",
		match: func(d seen) bool {
			return strings.HasSuffix(d.cmd[0], "scan") && cursorAt(d.cmd) > 0 && d.cmd[cursorAt(d.cmd)] != "0" &&
				d.redis.s != "ERR invalid cursor" && d.tair.s == "ERR invalid cursor"
		},
	},
	{
		reason: "HRANDFIELD/SRANDMEMBER/ZRANDMEMBER with a count below -1048576 (dataserver/exec maxRandRepeats): tair refuses (-count elements with repeats would be built in full), Redis tries (7.0 dies on SRANDMEMBER s -9223372036854775807)",
		match: func(d seen) bool {
			return (d.cmd[0] == "hrandfield" || d.cmd[0] == "srandmember" || d.cmd[0] == "zrandmember") &&
				d.tair.s == "ERR value is out of range (at most 1048576 elements with repetitions)"
		},
	},
	{
		reason: "LPOS RANK -9223372036854775808: Redis 7.0 negates it unchecked (and answers as RANK -1), tair refuses it with Redis 7.2's range error",
		match: func(d seen) bool {
			return d.cmd[0] == "lpos" && strings.HasPrefix(d.tair.s, "ERR value is out of range, value must between")
		},
	},
	{
		reason: "SPEC §3: a transaction runs on one bucket's master, so cluster-wide and proxy-local commands (DBSIZE, KEYS, SCAN, RANDOMKEY ...) are refused inside MULTI (and EXEC then aborts)",
		match:  func(d seen) bool { return strings.HasSuffix(d.tair.s, "is not supported inside MULTI by this cluster") },
		resync: true,
	},
	{
		reason: "Redis's DBSIZE counts keys that have expired but are not reclaimed yet (SET ... PXAT in the past); tair's counts live keys exactly (SPEC §3): accepted when tair's count is Redis's live keys (KEYS *)",
		match: func(d seen) bool {
			if d.cmd[0] != "dbsize" || d.redis.kind != ':' || d.tair.kind != ':' {
				return false
			}
			live := d.ask("KEYS", "*")
			return live.kind == '*' && itoa(len(live.kids)) == d.tair.s
		},
	},
	{
		reason: "Redis's SORT ALPHA compares C strings (strcoll): elements equal up to a NUL (\"\" and \"\\x00\") tie, and ties come in the set's own order: compared up to the first NUL",
		match: func(d seen) bool {
			if d.cmd[0] != "sort" && d.cmd[0] != "sort_ro" || d.redis.kind != '*' || len(d.redis.kids) != len(d.tair.kids) {
				return false
			}
			for i := range d.redis.kids {
				if cStr(d.redis.kids[i].s) != cStr(d.tair.kids[i].s) || d.redis.kids[i].null != d.tair.kids[i].null {
					return false
				}
			}
			return true
		},
	},
	{
		reason: "a key is at least one byte in Tair (engines.CheckKey: ERR empty key, tair -3982); Redis takes the empty key",
		match:  func(d seen) bool { return strings.HasPrefix(d.tair.s, "ERR empty key") },
		resync: true,
	},
	{
		reason: "an engine refuses a data structure it does not hold, by design (SPEC: NOTSUPPORTED, -20008); nothing changed on tair",
		match:  func(d seen) bool { return d.tair.errPrefix() == "NOTSUPPORTED" },
		resync: true,
	},
	{
		reason: "SPEC §2 limits a value to 1 MiB (configurable) where Redis allows 512 MB: a write growing a value beyond it fails on tair",
		match: func(d seen) bool {
			return d.tair.errPrefix() == "VALUETOOLONG" ||
				d.tair.isErr() && strings.Contains(d.tair.s, "maximum allowed size") && !d.redis.isErr()
		},
		resync: true,
	},
}

// lexCommand: a command over a lex range.
func lexCommand(cmd []string) bool {
	switch cmd[0] {
	case "zrangebylex", "zrevrangebylex", "zlexcount", "zremrangebylex":
		return true
	case "zrange", "zrangestore":
		for _, a := range cmd {
			if strings.EqualFold(a, "bylex") {
				return true
			}
		}
	}
	return false
}

// lexKey is the sorted set a lex command reads.
func lexKey(cmd []string) string {
	if cmd[0] == "zrangestore" && len(cmd) > 2 {
		return cmd[2]
	}
	return cmd[1]
}

// normalise reports whether a difference is accepted, by which rule, and
// whether the data must be resynchronised.
func normalise(d seen) (ok bool, why string, resync bool) {
	d.cmd = append([]string{strings.ToLower(d.cmd[0])}, d.cmd[1:]...)
	for _, r := range rules {
		if r.match(d) {
			return true, r.reason, r.resync
		}
	}
	return false, "", false
}

// view turns a reply into what is compared, by mode.
func view(m mode, n node) string {
	if n.isErr() {
		return n.String()
	}
	switch m {
	case ignored:
		return "(not compared)"
	case asSet, scanAll:
		return n.sorted(1, m == scanAll).String()
	case asPairs, scanPairs:
		return n.sorted(2, m == scanPairs).String()
	case timeish:
		if n.kind == ':' && !strings.HasPrefix(n.s, "-") && n.s != "0" {
			return "(int)positive"
		}
	case shape:
		if n.null {
			return "(nil)"
		}
		if n.kind == '*' {
			return "array of " + itoa(len(n.kids))
		}
		return string(n.kind)
	}
	return n.String()
}

// sameFloats: the same tree where every differing bulk string is the same
// float64 written differently.
func sameFloats(a, b node) bool {
	if a.kind != b.kind || a.null != b.null || len(a.kids) != len(b.kids) {
		return false
	}
	if a.s != b.s {
		if a.kind != '$' && a.kind != ',' { // RESP2 bulk, RESP3 double
			return false
		}
		x, err1 := strconv.ParseFloat(a.s, 64)
		y, err2 := strconv.ParseFloat(b.s, 64)
		if err1 != nil || err2 != nil || x != y {
			return false
		}
	}
	for i := range a.kids {
		if !sameFloats(a.kids[i], b.kids[i]) {
			return false
		}
	}
	return true
}

// cStr is s up to its first NUL.
func cStr(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// scriptCall: the commands that run a script.
func scriptCall(name string) bool {
	switch name {
	case "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// pairsCanonical is n with every even-length array, at any depth, sorted
// as pairs.
func pairsCanonical(n node) node {
	if n.kids == nil {
		return n
	}
	c := n
	c.kids = make([]node, len(n.kids))
	for i, k := range n.kids {
		c.kids[i] = pairsCanonical(k)
	}
	if len(c.kids)%2 == 0 {
		return c.sorted(2, false)
	}
	return c
}

// scriptInner is the command an EVAL or EVALSHA wrapper runs from its
// ARGV (gen_script_test.go), or nil.
func scriptInner(cmd []string) []string {
	if !strings.HasPrefix(cmd[0], "eval") || len(cmd) < 3 {
		return nil
	}
	n, err := strconv.Atoi(cmd[2])
	if err != nil || n < 0 || 3+n >= len(cmd) {
		return nil
	}
	return cmd[3+n:]
}

// lexOf is the lex-range command cmd (name lower-cased) runs, itself or
// a script's wrapped command, or nil.
func lexOf(cmd []string) []string {
	if in := scriptInner(cmd); len(in) > 1 {
		cmd = append([]string{strings.ToLower(in[0])}, in[1:]...)
	}
	if len(cmd) > 1 && lexCommand(cmd) {
		return cmd
	}
	return nil
}
