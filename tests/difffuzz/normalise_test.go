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
}

// modeOf is the mode of one command line; SORT_RO ... BY nosort of a set
// is unordered too.
func modeOf(cmd []string) mode {
	name := strings.ToLower(cmd[0])
	if name == "sort_ro" {
		for _, a := range cmd[1:] {
			if strings.EqualFold(a, "nosort") {
				return shape
			}
		}
	}
	return modes[name]
}

// rule accepts a difference by design. match sees the command (name
// lower-cased), the engine and both replies; resync: the difference may
// leave the two sides' data apart, so the sequence's keys are deleted on
// both before it goes on.
type rule struct {
	reason string
	match  func(cmd []string, engine string, redis, tair node) bool
	resync bool
}

var rules = []rule{
	{
		reason: "a blocking timeout beyond a long long of milliseconds (inf, 1e300): Redis 7.0 casts it unchecked and says \"timeout is negative\", tair says Redis 7.2's \"timeout is out of range\"",
		match: func(cmd []string, engine string, redis, tair node) bool {
			return redis.s == "ERR timeout is negative" && tair.s == "ERR timeout is out of range"
		},
	},
	{
		reason: "SPEC §2 limits a key to 1024 bytes (KEYTOOLONG, tair -5) where Redis allows 512 MB",
		match: func(cmd []string, engine string, redis, tair node) bool {
			return tair.errPrefix() == "KEYTOOLONG"
		},
		resync: true,
	},
	{
		reason: "SPEC §3: an atomic command over keys of different buckets is refused with Redis Cluster's CROSSSLOT (the generator keeps atomic commands in one tag; the shrinker may not)",
		match: func(cmd []string, engine string, redis, tair node) bool {
			return tair.errPrefix() == "CROSSSLOT"
		},
	},
	{
		reason: "Redis 7.0 writes a sorted set's double replies with %.17g (0.10000000000000001), Redis 7.2 and tair with the shortest text that reads back the same (0.1): compared as float64",
		match: func(cmd []string, engine string, redis, tair node) bool {
			return (strings.HasPrefix(cmd[0], "z") || strings.HasPrefix(cmd[0], "bz")) && sameFloats(redis, tair)
		},
	},
	{
		reason: "a SCAN cursor other than 0 is the implementation's: Redis 7.0 reads any string strtoul takes (\"\" as 0, \"-1\" as 2^64-1) as a cursor, tair's cursors encode a bucket and refuse the rest",
		match: func(cmd []string, engine string, redis, tair node) bool {
			return strings.HasSuffix(cmd[0], "scan") && cursorAt(cmd) > 0 && cmd[cursorAt(cmd)] != "0" &&
				redis.s != "ERR invalid cursor" && tair.s == "ERR invalid cursor"
		},
	},
	{
		reason: "an engine refuses a data structure it does not hold, by design (SPEC: NOTSUPPORTED, -20008); nothing changed on tair",
		match: func(cmd []string, engine string, redis, tair node) bool {
			return tair.errPrefix() == "NOTSUPPORTED"
		},
		resync: true,
	},
	{
		reason: "SPEC §2 limits a value to 1 MiB (configurable) where Redis allows 512 MB: a write growing a value beyond it fails on tair",
		match: func(cmd []string, engine string, redis, tair node) bool {
			return tair.errPrefix() == "VALUETOOLONG" ||
				tair.isErr() && strings.Contains(tair.s, "maximum allowed size") && !redis.isErr()
		},
		resync: true,
	},
}

// normalise reports whether a difference is accepted, by which rule, and
// whether the data must be resynchronised.
func normalise(cmd []string, engine string, redis, tair node) (ok bool, why string, resync bool) {
	lc := append([]string{strings.ToLower(cmd[0])}, cmd[1:]...)
	for _, r := range rules {
		if r.match(lc, engine, redis, tair) {
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
		if a.kind != '$' {
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
