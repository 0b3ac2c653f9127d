package difffuzz

import (
	"strconv"
	"strings"
)

// Generators of the Redis 7 families added after the first table
// (bitmaps, HyperLogLog, geo): kept apart so that each family's draws read
// together. They join gens at init.
func init() {
	for name, f := range redis7Gens {
		gens[name] = f
	}
	skipped["pfdebug"] = "a debugging aid whose replies describe the encoding; pinned byte for byte by dataserver/exec's differential test"
	skipped["dump"] = "its payload's bytes follow the value's internal encoding, which differs from Redis's by design; the round trip both ways is pinned against redis-server by dataserver/exec's dump_test.go"
	skipped["restore"] = "needs a payload (binary, with a CRC64) that random draws would never make valid; options, errors and payloads DUMPed by redis-server are pinned by dataserver/exec's dump_test.go"
	for name, f := range streamGens {
		gens[name] = f
	}
}

// streamID draws a stream id for XADD and the ranges: small explicit ids
// (the clock's ids from * would differ between the servers), sometimes
// ms-*, the specials, or not an id.
func (g *gen) streamID(add bool) string {
	if g.chance(0.8) {
		id := strconv.Itoa(g.r.Intn(12))
		if g.chance(0.7) {
			id += "-" + strconv.Itoa(g.r.Intn(3))
		} else if add && g.chance(0.5) {
			id += "-*"
		}
		return id
	}
	if add {
		return g.pick("0-0", "18446744073709551615-18446744073709551615", "abc", "-1", "1-x", "+", "-")
	}
	return g.pick("-", "+", "(1-1", "(5", "(", "(-", "0", "18446744073709551615-18446744073709551615", "abc", "(0-0")
}

// streamGroup and streamConsumer draw names, mostly a few that exist.
func (g *gen) streamGroup() string    { return g.pick("g1", "g1", "g2", "nog") }
func (g *gen) streamConsumer() string { return g.pick("c1", "c2", "c3") }

// streamTrim draws XADD's and XTRIM's trim options.
func (g *gen) streamTrim() []string {
	var out []string
	if g.chance(0.5) {
		out = append(out, g.kw("MAXLEN"))
		if g.chance(0.5) {
			out = append(out, g.pick("~", "="))
		}
		out = append(out, g.pick("0", "1", "2", "5", "-1", "abc"))
	} else {
		out = append(out, g.kw("MINID"))
		if g.chance(0.5) {
			out = append(out, g.pick("~", "="))
		}
		out = append(out, g.streamID(false))
	}
	if g.chance(0.2) {
		out = append(out, g.kw("LIMIT"), g.pick("0", "1", "10", "-1"))
	}
	return out
}

// streamGens draw the stream commands. Nothing the clock decides is drawn:
// no XADD *, no BLOCK (the dataserver answers at once, redis-server waits),
// no reply with idle or delivery times (XPENDING's extended form, XINFO
// CONSUMERS and STREAM FULL): dataserver/exec's differential test pins those
// with their times normalised.
var streamGens = map[string]func(g *gen) []string{
	"xadd": func(g *gen) []string {
		out := []string{g.typedKey("stream")}
		if g.chance(0.1) {
			out = append(out, g.kw("NOMKSTREAM"))
		}
		if g.chance(0.3) {
			out = append(out, g.streamTrim()...)
		}
		out = append(out, g.streamID(true))
		for i := 0; i < 1+g.r.Intn(2); i++ {
			out = append(out, g.field(), g.val())
		}
		if g.chance(0.05) {
			out = out[:len(out)-1]
		}
		return out
	},
	"xtrim": func(g *gen) []string { return cat(g.typedKey("stream"), g.streamTrim()) },
	"xlen":  func(g *gen) []string { return []string{g.typedKey("stream")} },
	"xrange": func(g *gen) []string {
		return cat(g.typedKey("stream"), g.streamID(false), g.streamID(false), g.opts(1, g.with("COUNT", g.count)))
	},
	"xrevrange": func(g *gen) []string {
		return cat(g.typedKey("stream"), g.streamID(false), g.streamID(false), g.opts(1, g.with("COUNT", g.count)))
	},
	"xdel": func(g *gen) []string {
		return cat(g.typedKey("stream"), g.streamID(false), g.opts(2, func() []string { return []string{g.streamID(false)} }))
	},
	"xsetid": func(g *gen) []string {
		return cat(g.typedKey("stream"), g.streamID(false), g.opts(1, g.with("ENTRIESADDED", g.count),
			g.with("MAXDELETEDID", func() string { return g.streamID(false) })))
	},
	"xread": func(g *gen) []string {
		keys := g.taggedKeys("stream", 1, 2)
		out := g.opts(1, g.with("COUNT", g.count))
		out = append(out, g.kw("STREAMS"))
		out = append(out, keys...)
		for range keys {
			out = append(out, g.pick("0", "$", "1-1", "5", "abc", ">"))
		}
		return out
	},
	"xgroup": func(g *gen) []string {
		k, gr := g.typedKey("stream"), g.streamGroup()
		switch g.r.Intn(7) {
		case 0, 1:
			return cat(g.kw("CREATE"), k, gr, g.pick("0", "$", "3-0", "abc"), g.opts(1, g.flag("MKSTREAM"), g.with("ENTRIESREAD", g.count)))
		case 2:
			return cat(g.kw("SETID"), k, gr, g.pick("0", "$", "3-0", "-", "abc"), g.opts(1, g.with("ENTRIESREAD", g.count)))
		case 3:
			return []string{g.kw("DESTROY"), k, gr}
		case 4:
			return []string{g.kw("CREATECONSUMER"), k, gr, g.streamConsumer()}
		case 5:
			return []string{g.kw("DELCONSUMER"), k, gr, g.streamConsumer()}
		}
		// no unknown subcommand: inside MULTI Redis refuses one when it is
		// queued (processCommand knows XGROUP's subcommands and their
		// arities), the proxy only when EXEC runs it
		return []string{g.kw("HELP")}
	},
	"xreadgroup": func(g *gen) []string {
		out := []string{g.kw("GROUP"), g.streamGroup(), g.streamConsumer()}
		out = append(out, g.opts(2, g.with("COUNT", g.count), g.flag("NOACK"))...)
		out = append(out, g.kw("STREAMS"), g.typedKey("stream"), g.pick(">", ">", "0", "3-0", "$"))
		return out
	},
	"xack": func(g *gen) []string {
		return cat(g.typedKey("stream"), g.streamGroup(), g.streamID(false), g.opts(2, func() []string { return []string{g.streamID(false)} }))
	},
	"xpending": func(g *gen) []string { return []string{g.typedKey("stream"), g.streamGroup()} },
	"xclaim": func(g *gen) []string {
		return cat(g.typedKey("stream"), g.streamGroup(), g.streamConsumer(), "0", g.streamID(false), g.kw("JUSTID"),
			g.opts(2, g.flag("FORCE"), g.with("RETRYCOUNT", g.count), g.with("LASTID", func() string { return g.streamID(false) })))
	},
	"xautoclaim": func(g *gen) []string {
		return cat(g.typedKey("stream"), g.streamGroup(), g.streamConsumer(), "0", g.streamID(false), g.opts(1, g.with("COUNT", g.count)), g.kw("JUSTID"))
	},
	"xinfo": func(g *gen) []string {
		if g.chance(0.5) {
			return []string{g.kw("GROUPS"), g.typedKey("stream")}
		}
		return []string{g.kw("STREAM"), g.typedKey("stream")}
	},
}

// bitOffset draws a bit offset: mostly within a few bytes, sometimes at
// Redis's limits.
func (g *gen) bitOffset() string {
	if g.chance(0.85) {
		return strconv.Itoa(g.r.Intn(40))
	}
	return g.pick("-1", "4294967295", "4294967296", "8388607", "abc", "", "1.5", "9223372036854775807")
}

// bitfieldType draws an integer type of BITFIELD, valid or not.
func (g *gen) bitfieldType() string {
	if g.chance(0.85) {
		return g.pick("i", "u") + strconv.Itoa(1+g.r.Intn(16))
	}
	return g.pick("i64", "u63", "u64", "i65", "i0", "x8", "8", "")
}

// bitfieldOffset draws an offset, plain or in units of the type (#n).
func (g *gen) bitfieldOffset() string {
	if g.chance(0.3) {
		return "#" + strconv.Itoa(g.r.Intn(5))
	}
	return g.bitOffset()
}

func (g *gen) bitfieldOps(readOnly bool) []string {
	var out []string
	for i := 0; i < 1+g.r.Intn(3); i++ {
		op := "GET"
		if !readOnly {
			op = g.pick("GET", "SET", "INCRBY", "OVERFLOW")
		}
		switch op {
		case "GET":
			out = append(out, g.kw("GET"), g.bitfieldType(), g.bitfieldOffset())
		case "SET", "INCRBY":
			out = append(out, g.kw(op), g.bitfieldType(), g.bitfieldOffset(), g.int())
		case "OVERFLOW":
			out = append(out, g.kw("OVERFLOW"), g.pick("WRAP", "SAT", "FAIL", "wrap", "NONE"))
		}
	}
	return out
}

// lonLat draws a longitude and a latitude: mostly a few valid places,
// sometimes out of range or not numbers.
func (g *gen) lonLat() []string {
	if g.chance(0.85) {
		p := g.pick("13.361389 38.115556", "15.087269 37.502669", "2.3522 48.8566", "-0.1276 51.5072",
			"0 0", "-180 -85.05112878", "180 85.05112878", "139.6917 35.6895", "13.5 38")
		lon, lat, _ := strings.Cut(p, " ")
		return []string{lon, lat}
	}
	return []string{g.pick("181", "-181", "abc", "nan", "inf", "1"), g.pick("86", "-86", "abc", "", "1")}
}

func (g *gen) geoUnit() string { return g.pick("m", "km", "ft", "mi", "KM", "yd") }

func (g *gen) geoRadius() string {
	if g.chance(0.8) {
		return g.pick("1", "100", "200000", "500", "1000000", "0")
	}
	return g.pick("-1", "abc", "1e400", "")
}

// geoReplyOpts draws GEORADIUS/GEOSEARCH's reply options.
func (g *gen) geoReplyOpts() []string {
	return g.opts(4, g.flag("WITHCOORD"), g.flag("WITHDIST"), g.flag("WITHHASH"), g.flag("ASC"), g.flag("DESC"),
		func() []string {
			out := []string{g.kw("COUNT"), g.count()}
			if g.chance(0.3) {
				out = append(out, g.kw("ANY"))
			}
			return out
		})
}

// geoRadiusGen generates GEORADIUS (byMember: GEORADIUSBYMEMBER) and,
// with store, at times its STORE or STOREDIST destination (the _RO
// variants have none).
func geoRadiusGen(byMember, store bool) func(g *gen) []string {
	return func(g *gen) []string {
		key := g.typedKey("zset")
		var center any
		if byMember {
			center = g.member()
		} else {
			center = g.lonLat()
		}
		out := cat(key, center, g.geoRadius(), g.geoUnit(), g.geoReplyOpts())
		if store && g.chance(0.2) {
			out = append(out, g.kw(g.pick("STORE", "STOREDIST")), g.typedKey("zset"))
		}
		return out
	}
}

func (g *gen) geoFrom() []string {
	if g.chance(0.5) {
		return []string{g.kw("FROMMEMBER"), g.member()}
	}
	return cat(g.kw("FROMLONLAT"), g.lonLat())
}

func (g *gen) geoBy() []string {
	if g.chance(0.5) {
		return []string{g.kw("BYRADIUS"), g.geoRadius(), g.geoUnit()}
	}
	return []string{g.kw("BYBOX"), g.geoRadius(), g.geoRadius(), g.geoUnit()}
}

var redis7Gens = map[string]func(g *gen) []string{
	"setbit": func(g *gen) []string {
		return []string{g.typedKey("str"), g.bitOffset(), g.pick("0", "1", "1", "2", "-1", "x")}
	},
	"getbit": func(g *gen) []string { return []string{g.typedKey("str"), g.bitOffset()} },
	"bitcount": func(g *gen) []string {
		out := []string{g.typedKey("str")}
		if g.chance(0.6) {
			out = append(out, g.index(), g.index())
			if g.chance(0.4) {
				out = append(out, g.pick("BYTE", "BIT", "bit", "WORD"))
			}
		}
		return out
	},
	"bitpos": func(g *gen) []string {
		out := []string{g.typedKey("str"), g.pick("0", "1", "2")}
		if g.chance(0.6) {
			out = append(out, g.index())
			if g.chance(0.6) {
				out = append(out, g.index())
				if g.chance(0.4) {
					out = append(out, g.pick("BYTE", "BIT", "bit", "WORD"))
				}
			}
		}
		return out
	},
	"bitop": func(g *gen) []string {
		op := g.pick("AND", "OR", "XOR", "NOT", "and", "NAND")
		return cat(g.kw(op), g.taggedKeys("str", 2, 4))
	},
	"bitfield":    func(g *gen) []string { return cat(g.typedKey("str"), g.bitfieldOps(false)) },
	"bitfield_ro": func(g *gen) []string { return cat(g.typedKey("str"), g.bitfieldOps(true)) },

	"pfadd":   func(g *gen) []string { return cat(g.typedKey("str"), g.members(0, 4)) },
	"pfcount": func(g *gen) []string { return g.taggedKeys("str", 1, 3) },
	"pfmerge": func(g *gen) []string { return g.taggedKeys("str", 1, 3) },

	"geoadd": func(g *gen) []string {
		out := cat(g.typedKey("zset"), g.opts(2, g.flag("NX"), g.flag("XX"), g.flag("CH")))
		for i := 0; i < 1+g.r.Intn(3); i++ {
			out = append(out, g.lonLat()...)
			out = append(out, g.member())
		}
		return out
	},
	"geodist": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.member(), g.member(), g.opts(1, func() []string { return []string{g.geoUnit()} }))
	},
	"geohash":              func(g *gen) []string { return cat(g.typedKey("zset"), g.members(0, 3)) },
	"geopos":               func(g *gen) []string { return cat(g.typedKey("zset"), g.members(0, 3)) },
	"georadius":            geoRadiusGen(false, true),
	"georadius_ro":         geoRadiusGen(false, false),
	"georadiusbymember":    geoRadiusGen(true, true),
	"georadiusbymember_ro": geoRadiusGen(true, false),
	"geosearch": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.geoFrom(), g.geoBy(), g.geoReplyOpts())
	},
	"geosearchstore": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.typedKey("zset"), g.geoFrom(), g.geoBy(),
			g.opts(2, g.flag("ASC"), g.flag("DESC"), g.flag("STOREDIST"), g.with("COUNT", g.count)))
	},
}
