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
	"geohash": func(g *gen) []string { return cat(g.typedKey("zset"), g.members(0, 3)) },
	"geopos":  func(g *gen) []string { return cat(g.typedKey("zset"), g.members(0, 3)) },
	"georadius": func(g *gen) []string {
		out := cat(g.typedKey("zset"), g.lonLat(), g.geoRadius(), g.geoUnit(), g.geoReplyOpts())
		if g.chance(0.2) {
			out = append(out, g.kw(g.pick("STORE", "STOREDIST")), g.typedKey("zset"))
		}
		return out
	},
	"georadius_ro": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.lonLat(), g.geoRadius(), g.geoUnit(), g.geoReplyOpts())
	},
	"georadiusbymember": func(g *gen) []string {
		out := cat(g.typedKey("zset"), g.member(), g.geoRadius(), g.geoUnit(), g.geoReplyOpts())
		if g.chance(0.2) {
			out = append(out, g.kw(g.pick("STORE", "STOREDIST")), g.typedKey("zset"))
		}
		return out
	},
	"georadiusbymember_ro": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.member(), g.geoRadius(), g.geoUnit(), g.geoReplyOpts())
	},
	"geosearch": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.geoFrom(), g.geoBy(), g.geoReplyOpts())
	},
	"geosearchstore": func(g *gen) []string {
		return cat(g.typedKey("zset"), g.typedKey("zset"), g.geoFrom(), g.geoBy(),
			g.opts(2, g.flag("ASC"), g.flag("DESC"), g.flag("STOREDIST"), g.with("COUNT", g.count)))
	},
}
