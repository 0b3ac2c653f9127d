package exec

import (
	"bufio"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/testutil"
)

// geoRedisScript drives the geo commands through a real redis-server and
// the executor (TestGeoAgainstRedis), followed by geoGeneratedScript's
// searches over a few hundred random points. A line starting with "~" is
// compared with its scores parsed (Redis 7.0 prints a sorted set's scores
// with "%.17g", the executor with Redis 7.2's shortest form; see
// geoSameScores).
var geoRedisScript = []string{
	// GEOADD
	"GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
	"GEOADD Sicily 13.361389 38.115556 Palermo", "GEOADD Sicily CH 13.361390 38.115556 Palermo 12 37 Agrigento",
	"GEOADD Sicily NX 1 1 Palermo 2 2 NewOne", "GEOADD Sicily XX 3 3 Missing 13.361389 38.115556 Palermo",
	"GEOADD Sicily XX CH 13.5 38 Palermo", "GEOADD Sicily xx ch 13.361389 38.115556 Palermo", "GEOADD Sicily nx xx 1 1 a",
	"GEOADD Sicily 1 1", "GEOADD Sicily 1 1 a 2", "GEOADD Sicily 181 1 a", "GEOADD Sicily 1 85.06 a", "GEOADD Sicily 1 -85.06 a",
	"GEOADD Sicily -180.0001 0 a", "GEOADD Sicily x 1 a", "GEOADD Sicily 1 x a", "GEOADD Sicily inf 1 a", "GEOADD Sicily 1 -inf a",
	"GEOADD Sicily 1e400 1 a", "GEOADD Sicily nan 1 a", "GEOADD Sicily 1 1 a 999 1 b", "EXISTS a", "ZSCORE Sicily a",
	"GEOADD Sicily GT 1 1 a", "GEOADD Sicily CH CH 1 1 a", "GEOADD Sicily ch", "GEOADD Sicily ch ch ch", "GEOADD Sicily nx nx nx",
	"GEOADD Sicily \"nx\\x00junk\" 2 2 nulopt", "GEOADD Sicily 0x10 0x1p3 hexfloat", "GEOADD Sicily \" 1\" 1 spaced",
	"GEOADD Sicily 180 85.05112878 edge1 -180 -85.05112878 edge2 0 0 origin -0 -0 negzero 179.9999999 -85.0511287 edge3",
	"GEOADD Sicily 1e-320 1e-310 tiny", "GEOADD nokey XX 1 1 a", "EXISTS nokey", "ZCARD Sicily",
	"~ZRANGE Sicily 0 -1 WITHSCORES",
	// the same member at the same place, many times (equal distances)
	"GEOADD dup 10 10 d1 10 10 d2 10 10 d3 10 10 d4 10 10 d5 10 10 d6 10 10 d7 10 10 d8 10 10 d9 10.1 10 e1 10.1 10 e2 9.9 10 e3",
	// scores GEOADD would never write
	"ZADD odd -1 a 1e300 b inf c -inf d 1.5 e 4503599627370496 f 9.3e18 g 18446744073709551615 h 4503599627370495 i 0 j",
	"GEOPOS odd a b c d e f g h i j nosuch", "GEOHASH odd a b c d e f g h i j nosuch", "GEODIST odd a i", "GEODIST odd e j",
	"GEORADIUS odd -180 -85 100 km WITHHASH WITHCOORD WITHDIST", "GEOSEARCH odd FROMMEMBER e BYBOX 100 100 km WITHHASH",
	// GEOPOS, GEOHASH, GEODIST
	"GEOPOS Sicily Palermo Catania nonexist edge1 edge2 edge3 origin negzero tiny hexfloat", "GEOPOS nokey a b", "GEOPOS Sicily",
	"GEOHASH Sicily Palermo Catania nonexist edge1 edge2 edge3 origin negzero tiny", "GEOHASH nokey a", "GEOHASH Sicily",
	"GEODIST Sicily Palermo Catania", "GEODIST Sicily Palermo Catania km", "GEODIST Sicily Palermo Catania KM",
	"GEODIST Sicily Palermo Catania mi", "GEODIST Sicily Palermo Catania Mi", "GEODIST Sicily Palermo Catania ft",
	"GEODIST Sicily Palermo Catania m", "GEODIST Sicily Palermo Catania M", "GEODIST Sicily Palermo Catania parsecs",
	"GEODIST Sicily Palermo Catania \"km\\x00x\"", "GEODIST Sicily Palermo nonexist", "GEODIST Sicily nonexist Palermo",
	"GEODIST nokey a b", "GEODIST nokey a b furlong", "GEODIST Sicily Palermo Catania km extra", "GEODIST Sicily Palermo",
	"GEODIST Sicily edge1 edge2", "GEODIST Sicily edge2 edge3 km", "GEODIST Sicily Palermo Palermo", "GEODIST Sicily origin negzero",
	"GEODIST Sicily origin edge1 mi", "GEODIST Sicily tiny origin ft",
	// antipodes: the haversine's argument may pass 1 (asin's NaN)
	"GEOADD anti 0 0 a 180 0 b 10 20 c -170 -20 d 45 45 e -135 -45 f 0 85 g 180 -85 h 90 0 i -90 0 j",
	"GEODIST anti a b", "GEODIST anti c d", "GEODIST anti e f", "GEODIST anti g h", "GEODIST anti i j",
	"GEOSEARCH anti FROMMEMBER a BYRADIUS 20100 km WITHDIST ASC", "GEOSEARCH anti FROMMEMBER c BYBOX 40100 40100 km WITHDIST",
	// wrong types
	"SET str v", "GEOADD str 1 1 a", "GEOADD str 1 x a", "GEOPOS str a", "GEOHASH str a", "GEODIST str a b", "GEODIST str a b km",
	"GEODIST str a b parsecs", "GEORADIUS str 0 0 1 km", "GEORADIUS str 999 0 x y", "GEORADIUS str 0 0 1 km STORE dst",
	"GEORADIUSBYMEMBER str a 1 km", "GEORADIUS_RO str 0 0 1 km", "GEORADIUSBYMEMBER_RO str a x km",
	"GEOSEARCH str FROMLONLAT 0 0 BYRADIUS 1 km", "GEOSEARCH str FOO", "GEOSEARCHSTORE dst str FROMLONLAT 0 0 BYRADIUS 1 km",
	"GEOSEARCHSTORE str Sicily FROMLONLAT 15 37 BYRADIUS 200 km", "TYPE str", "~ZRANGE str 0 -1 WITHSCORES",
	"SET str v", "EXPIRE str 1000", "GEOSEARCHSTORE str Sicily FROMLONLAT 15 37 BYRADIUS 200 km", "TTL str",
	// GEORADIUS
	"GEORADIUS Sicily 15 37 200 km", "GEORADIUS Sicily 15 37 200 km WITHDIST", "GEORADIUS Sicily 15 37 200 km WITHCOORD",
	"GEORADIUS Sicily 15 37 200 km WITHHASH", "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC",
	"GEORADIUS Sicily 15 37 200 km withhash withcoord withdist desc", "GEORADIUS Sicily 15 37 200 km WITHDIST DESC",
	"GEORADIUS Sicily 15 37 200 km COUNT 1", "GEORADIUS Sicily 15 37 200 km COUNT 1 DESC", "GEORADIUS Sicily 15 37 200 km COUNT 2 ANY",
	"GEORADIUS Sicily 15 37 200 km ANY COUNT 1", "GEORADIUS Sicily 15 37 200 km COUNT 9223372036854775807 WITHDIST",
	"GEORADIUS Sicily 15 37 200 km ANY", "GEORADIUS Sicily 15 37 200 km COUNT 0", "GEORADIUS Sicily 15 37 200 km COUNT -1",
	"GEORADIUS Sicily 15 37 200 km COUNT x", "GEORADIUS Sicily 15 37 200 km COUNT", "GEORADIUS Sicily 15 37 200 km FOO",
	"GEORADIUS Sicily 15 37 200 km ASC DESC", "GEORADIUS Sicily 15 37 200 km DESC ASC WITHDIST COUNT 2 COUNT 3",
	"GEORADIUS Sicily 15 37 -1 km", "GEORADIUS Sicily 15 37 -0 km", "GEORADIUS Sicily 15 37 x km", "GEORADIUS Sicily 15 37 200 parsecs",
	"GEORADIUS Sicily 15 37 x parsecs", "GEORADIUS Sicily 200 37 200 km", "GEORADIUS Sicily 15 86 200 km", "GEORADIUS Sicily a 37 200 km",
	"GEORADIUS Sicily 15 37 200", "GEORADIUS Sicily 15 37 200 km WITHDIST \"withcoord\\x00x\"",
	"GEORADIUS Sicily 15 37 200 km STORE dst", "~ZRANGE dst 0 -1 WITHSCORES", "GEORADIUS Sicily 15 37 200 km STOREDIST dst2",
	"~ZRANGE dst2 0 -1 WITHSCORES", "GEORADIUS Sicily 15 37 200 mi STOREDIST dst2 COUNT 1", "~ZRANGE dst2 0 -1 WITHSCORES",
	"GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST", "GEORADIUS Sicily 15 37 200 km WITHHASH STOREDIST dst",
	"GEORADIUS Sicily 15 37 200 km STORE", "GEORADIUS Sicily 15 37 200 km STORE a STOREDIST dst3", "EXISTS a", "~ZRANGE dst3 0 -1 WITHSCORES",
	"GEORADIUS Sicily 15 37 1 m STORE dst", "EXISTS dst", "GEORADIUS nokey 15 37 200 km STORE dst2", "EXISTS dst2",
	"GEORADIUS nokey 15 37 200 km", "GEORADIUS nokey 15 37 200 km WITHDIST COUNT 3", "GEORADIUS nokey 200 37 200 km",
	"GEORADIUS nokey 15 37 200 km STORE d WITHDIST", "GEORADIUS nokey 15 37 200 km ANY",
	"GEORADIUS_RO Sicily 15 37 200 km STORE dst", "GEORADIUS_RO Sicily 15 37 200 km STOREDIST dst", "GEORADIUS_RO Sicily 15 37 200 km WITHDIST",
	"GEORADIUS Sicily 15 37 0 km WITHDIST", "GEORADIUS Sicily 13.361389 38.115556 0 km WITHDIST",
	"GEORADIUS Sicily 0 0 1 m WITHDIST WITHCOORD", "GEORADIUS Sicily 15 37 30000 km WITHDIST", "GEORADIUS Sicily 15 37 1e300 km COUNT 3",
	"GEORADIUS Sicily 15 37 inf km COUNT 2", "GEORADIUS Sicily 15 37 1e-300 m",
	// GEORADIUSBYMEMBER
	"GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST", "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHCOORD WITHHASH COUNT 2 DESC",
	"GEORADIUSBYMEMBER Sicily nonexist 200 km", "GEORADIUSBYMEMBER Sicily nonexist x km", "GEORADIUSBYMEMBER nokey nonexist x y",
	"GEORADIUSBYMEMBER nokey nonexist x y STORE d", "GEORADIUSBYMEMBER nokey nonexist x y FOO",
	"GEORADIUSBYMEMBER nokey nonexist x y STORE d WITHDIST", "GEORADIUSBYMEMBER Sicily Palermo x km",
	"GEORADIUSBYMEMBER Sicily Palermo 200 yd", "GEORADIUSBYMEMBER Sicily Palermo 200 km STOREDIST dst", "~ZRANGE dst 0 -1 WITHSCORES",
	"GEORADIUSBYMEMBER_RO Sicily Palermo 200 km WITHCOORD", "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STORE dst",
	"GEORADIUSBYMEMBER Sicily Palermo 200 km ASC COUNT 2 ANY",
	// GEOSEARCH
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHCOORD WITHDIST WITHHASH",
	"GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km DESC WITHDIST", "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 100 km WITHDIST", "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 0 0 km",
	"GEOSEARCH Sicily FROMLONLAT 15 37", "GEOSEARCH Sicily BYRADIUS 1 km", "GEOSEARCH Sicily BYRADIUS 1 km ASC",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km BYBOX 1 1 km", "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 km BYRADIUS 200 km",
	"GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 1 km", "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 1 km",
	"GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 100 km WITHDIST", "GEOSEARCH Sicily FROMMEMBER nonexist BYRADIUS 1 km",
	"GEOSEARCH Sicily FROMLONLAT 15 37 FROMLONLAT 13 38 BYRADIUS 100 km WITHDIST", "GEOSEARCH Sicily BYRADIUS 10 km BYRADIUS 200 km FROMLONLAT 15 37",
	"GEOSEARCH nokey FROMMEMBER nonexist BYRADIUS 1 km", "GEOSEARCH nokey FROMMEMBER nonexist BYRADIUS x km",
	"GEOSEARCH nokey FROMLONLAT 999 0 BYRADIUS 1 km", "GEOSEARCH nokey FROMMEMBER x BYBOX 1 1 km ANY",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE d", "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ANY", "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 1 ANY",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2 DESC", "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 -1 km", "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 x km",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x 1 km", "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x -1 km",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 x km", "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 ly",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1", "GEOSEARCH Sicily FROMLONLAT 15 BYRADIUS 1 km", "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1",
	"GEOSEARCH Sicily FROMMEMBER", "geosearch Sicily BYRADIUS 1 km WITHDIST", "GeoSearch Sicily FROMLONLAT 15 37 WITHDIST ASC",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST COUNT 0", "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS -5 km",
	"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 \"km\\x00\" WITHDIST",
	// GEOSEARCHSTORE
	"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km", "~ZRANGE dst 0 -1 WITHSCORES",
	"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", "~ZRANGE dst 0 -1 WITHSCORES",
	"GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYBOX 500 500 mi STOREDIST COUNT 2 DESC", "~ZRANGE dst 0 -1 WITHSCORES",
	"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST", "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE x",
	"GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST x", "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37",
	"GEOSEARCHSTORE dst Sicily BYRADIUS 1 km WITHHASH", "GEOSEARCHSTORE dst Sicily FROMMEMBER nonexist BYRADIUS 1 km",
	"GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYRADIUS 200 km", "EXISTS dst", "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 1 m",
	"GEOSEARCHSTORE Sicily Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST", "~ZRANGE Sicily 0 -1 WITHSCORES",
	"GEOSEARCHSTORE dup2 dup FROMLONLAT 10 10 BYRADIUS 20 km COUNT 5", "~ZRANGE dup2 0 -1 WITHSCORES",
	// equal distances in order: merge sort (all), partial quicksort (COUNT)
	"GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km", "GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km ASC",
	"GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km DESC", "GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km COUNT 3",
	"GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km COUNT 8 DESC", "GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km COUNT 11",
	"GEOSEARCH dup FROMLONLAT 10.05 10 BYRADIUS 20 km COUNT 4 WITHDIST", "GEOSEARCH dup FROMMEMBER e3 BYRADIUS 50 km COUNT 5 DESC",
	"GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km COUNT 3 ANY", "GEOSEARCH dup FROMLONLAT 10 10 BYRADIUS 20 km COUNT 3 ANY DESC",
	// arity
	"GEOADD", "GEOADD k", "GEOADD k 1 1", "GEODIST k a", "GEOHASH", "GEOPOS", "GEORADIUS k 1 1 1", "GEORADIUSBYMEMBER k a 1",
	"GEORADIUS_RO k 1 1 1", "GEORADIUSBYMEMBER_RO k a 1", "GEOSEARCH k FROMLONLAT 1 1 BYRADIUS", "GEOSEARCHSTORE d k FROMLONLAT 1 1 BYRADIUS 1",
}

// geoGeneratedScript is a few hundred points in clusters (the
// antimeridian, the Mercator limits, the equator, places with members at
// the same position) and searches of every shape and size around them.
func geoGeneratedScript() []string {
	r := rand.New(rand.NewPCG(7, 11))
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	clusters := [][3]float64{ // lon, lat, spread in degrees
		{2.35, 48.85, 0.3}, {-122.4, 37.7, 1}, {179.95, 10, 0.1}, {-179.95, 10, 0.1}, {10, 84.9, 0.2},
		{-10, -84.9, 0.2}, {0, 0, 0.05}, {139.7, 35.7, 3}, {-58.4, -34.6, 8}, {100, 70, 2},
	}
	var lines []string
	n := 0
	for _, cl := range clusters {
		l := "GEOADD pts"
		var lon, lat float64
		for k := range 30 {
			if k == 0 || n%7 != 0 { // else a second member where the previous one is
				lon = math.Max(-180, math.Min(180, cl[0]+r.NormFloat64()*cl[2]))
				lat = math.Max(geoLatMin, math.Min(geoLatMax, cl[1]+r.NormFloat64()*cl[2]))
			}
			l += fmt.Sprintf(" %s %s m%d", f(lon), f(lat), n)
			n++
		}
		lines = append(lines, l)
	}
	lines = append(lines, "ZCARD pts")
	radii := []string{"0 m", "1 m", "500 m", "5 km", "50 km", "300 km", "1000 km", "2500 km", "6000 km", "20000 km", "100 mi", "30000 ft"}
	for i, cl := range clusters {
		for j, rad := range radii {
			lon := math.Max(-180, math.Min(180, cl[0]+r.NormFloat64()*cl[2]))
			lat := math.Max(-85, math.Min(85, cl[1]+r.NormFloat64()*cl[2]))
			from := "FROMLONLAT " + f(lon) + " " + f(lat)
			if j%3 == 1 {
				from = fmt.Sprintf("FROMMEMBER m%d", i*30+j)
			}
			opts := [...]string{"WITHDIST", "WITHCOORD ASC", "WITHHASH DESC", "COUNT 5 WITHDIST", "COUNT 3 DESC", "COUNT 7 ANY WITHDIST", "ASC WITHDIST WITHCOORD WITHHASH"}[(i+j)%7]
			lines = append(lines, "GEOSEARCH pts "+from+" BYRADIUS "+rad+" "+opts)
			w := strings.Fields(rad)
			lines = append(lines, "GEOSEARCH pts "+from+" BYBOX "+w[0]+" "+strconv.Itoa(j+1)+"0 "+w[1]+" "+opts)
			lines = append(lines, "GEORADIUS pts "+f(lon)+" "+f(lat)+" "+rad+" "+opts)
		}
		lines = append(lines,
			fmt.Sprintf("GEORADIUSBYMEMBER pts m%d 800 km STOREDIST near%d", i*30+3, i),
			fmt.Sprintf("~ZRANGE near%d 0 -1 WITHSCORES", i),
			fmt.Sprintf("GEOSEARCHSTORE box%d pts FROMMEMBER m%d BYBOX 2000 1000 km COUNT 20", i, i*30+5),
			fmt.Sprintf("~ZRANGE box%d 0 -1 WITHSCORES", i),
			fmt.Sprintf("GEODIST pts m%d m%d km", i*30, (i*30+77)%300),
			fmt.Sprintf("GEOHASH pts m%d m%d m%d", i*30+1, i*30+2, i*30+3),
			fmt.Sprintf("GEOPOS pts m%d m%d m%d", i*30+4, i*30+5, i*30+6),
		)
	}
	return lines
}

// geoScriptArgs splits a script line: "~" marks a score comparison.
func geoScriptArgs(l string) (args [][]byte, scores bool) {
	if strings.HasPrefix(l, "~") {
		l, scores = l[1:], true
	}
	return toArgs(splitLine(l)), scores
}

// geoScoreTokens are the elements of a raw reply, without bulk lengths.
func geoScoreTokens(raw string) []string {
	var out []string
	for _, l := range strings.Split(raw, "\r\n") {
		if !strings.HasPrefix(l, "$") {
			out = append(out, strings.TrimPrefix(l, ","))
		}
	}
	return out
}

// geoSameScores compares two raw replies whose numbers may be printed
// differently (see geoRedisScript). Numbers may also differ in their last
// bit: a distance goes through sin, cos and asin, which glibc rounds
// wrongly in about 1 case in 1500 (geohash.go computes them correctly
// rounded), so a STOREDIST score can be 1 ulp from Redis's. Such
// differences are returned, to be logged.
func geoSameScores(got, want string) (ulps []string, same bool) {
	g, w := geoScoreTokens(got), geoScoreTokens(want)
	if len(g) != len(w) {
		return nil, false
	}
	for i := range g {
		if g[i] == w[i] {
			continue
		}
		a, err1 := strconv.ParseFloat(g[i], 64)
		b, err2 := strconv.ParseFloat(w[i], 64)
		switch {
		case err1 != nil || err2 != nil:
			return nil, false
		case a == b:
		case math.Nextafter(a, b) == b:
			ulps = append(ulps, fmt.Sprintf("%v (redis %v)", a, b))
		default:
			return nil, false
		}
	}
	return ulps, true
}

// TestGeoAgainstRedis runs the geo script on redis-server and on each
// engine, in RESP2 and RESP3, raw replies compared byte for byte; every
// command's propagation is replayed on a slave, which must end equal to
// the master.
func TestGeoAgainstRedis(t *testing.T) {
	conn, rd := testutil.DialRedis(t)
	script := append(append([]string(nil), geoRedisScript...), geoGeneratedScript()...)
	againstRedis(t, conn, rd, func(t *testing.T, engine string, proto int) {
		geoAgainstRedis(t, conn, rd, engine, proto, script)
	})
}

// geoAgainstRedis runs script on a flushed redis-server and on a master
// over engine, replaying the master's propagation on a slave.
func geoAgainstRedis(t *testing.T, conn net.Conn, rd *bufio.Reader, engine string, proto int, script []string) {
	do := func(args [][]byte) string { return redisDo(t, conn, rd, args) }
	p := openReplPair(t, engine, newTestClock())
	bad := 0
	for _, l := range script {
		args, scores := geoScriptArgs(l)
		want := do(args)
		got, prop := p.mx.Exec(0, proto, false, args, nil)
		if g := string(got); g != want {
			ulps, same := geoSameScores(g, want)
			switch {
			case !scores || !same:
				if bad++; bad <= 20 {
					t.Errorf("%s\n  got: %q\nredis: %q", l, got, want)
				}
			case len(ulps) > 0:
				t.Logf("%s: scores 1 ulp from Redis's: %s", l, strings.Join(ulps, ", "))
			}
		}
		if pc, rep := replay(p.sx, 0, prop); pc != nil {
			t.Errorf("%s: the slave refused %q: %q", l, pc, rep)
		}
	}
	if bad > 20 {
		t.Errorf("... %d lines differ in all", bad)
	}
	p.checkEqual(t)
}

// TestGeoPropagation: GEOADD propagates itself when it changed the set;
// the searches that store propagate themselves (deterministic on the
// slave's equal data), the others and every error nothing.
func TestGeoPropagation(t *testing.T) {
	h := newHarness(t) // {g}: the keys share a bucket
	for _, s := range []struct {
		cmd  string
		want []string
	}{
		{"GEOADD {g}g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania", []string{"GEOADD {g}g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"}},
		{"GEOADD {g}g 13.361389 38.115556 Palermo", nil},
		{"GEOADD {g}g NX 1 1 Palermo", nil},
		{"GEOADD {g}g XX 1 1 Nobody", nil},
		{"GEOADD {g}g CH 1 1 Palermo", []string{"GEOADD {g}g CH 1 1 Palermo"}},
		{"GEOADD {g}g 200 1 x", nil},
		{"GEODIST {g}g Palermo Catania", nil},
		{"GEOPOS {g}g Palermo", nil},
		{"GEOHASH {g}g Palermo", nil},
		{"GEORADIUS {g}g 15 37 200 km WITHDIST", nil},
		{"GEORADIUSBYMEMBER {g}g Catania 200 km", nil},
		{"GEORADIUS_RO {g}g 15 37 200 km", nil},
		{"GEOSEARCH {g}g FROMLONLAT 15 37 BYRADIUS 200 km", nil},
		{"GEORADIUS {g}g 15 37 200 km STORE {g}d", []string{"GEORADIUS {g}g 15 37 200 km STORE {g}d"}},
		{"GEORADIUSBYMEMBER {g}g Catania 200 km STOREDIST {g}d", []string{"GEORADIUSBYMEMBER {g}g Catania 200 km STOREDIST {g}d"}},
		{"GEOSEARCHSTORE {g}d {g}g FROMLONLAT 15 37 BYBOX 400 400 km STOREDIST", []string{"GEOSEARCHSTORE {g}d {g}g FROMLONLAT 15 37 BYBOX 400 400 km STOREDIST"}},
		{"GEOSEARCHSTORE {g}d {g}g FROMLONLAT 15 37 BYBOX 400 400 km WITHDIST", nil},
		{"GEORADIUS {g}g 15 37 200 km STORE {g}d WITHDIST", nil},
		{"GEORADIUS {g}g 15 37 200 parsecs STORE {g}d", nil},
	} {
		h.line(s.cmd)
		if got := h.prop(); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("%s propagated %q, want %q", s.cmd, got, s.want)
		}
	}
}

// TestGeoCrossBucket: a STORE destination outside the source's bucket is
// CROSSSLOT (the proxy refuses it first; the executor checks again), and
// the command table names every destination for the proxy's routing.
func TestGeoCrossBucket(t *testing.T) {
	h := newHarness(t) // the default bucket count: {a} and {b} differ
	if bucketOf("{a}g", h.x) == bucketOf("{b}d", h.x) {
		t.Fatal("test keys share a bucket")
	}
	h.run([]step{
		{"GEOADD {a}g 15 37 x", num(1)},
		{"GEORADIUS {a}g 15 37 10 km STORE {b}d", errReply(ErrTextCrossSlot)},
		{"GEORADIUS {a}g 15 37 10 km STOREDIST {b}d", errReply(ErrTextCrossSlot)},
		{"GEORADIUSBYMEMBER {a}g x 10 km COUNT 1 STORE {b}d", errReply(ErrTextCrossSlot)},
		{"GEORADIUS {a}g 15 37 10 km STORE {b}d STORE {a}d", errReply(ErrTextCrossSlot)},
		{"GEORADIUS {a}g 15 37 10 km \"STORE\\x00\" {b}d", errReply(ErrTextCrossSlot)},
		{"GEOSEARCHSTORE {b}d {a}g FROMMEMBER x BYRADIUS 10 km", errReply(ErrTextCrossSlot)},
		{"GEORADIUS {a}g 15 37 10 km STORE {a}d", num(1)},
		{"GEOSEARCHSTORE {a}d2 {a}g FROMMEMBER x BYRADIUS 10 km", num(1)},
		{"EXISTS {b}d", num(0)},
	})
	for _, c := range []struct {
		cmd  string
		keys []int
	}{
		{"GEORADIUS g 15 37 10 km", []int{1}},
		{"GEORADIUS g 15 37 10 km COUNT 3 STORE d", []int{1, 9}},
		{"GEORADIUS g 15 37 10 km STORE d STOREDIST e", []int{1, 7, 9}},
		{"GEORADIUSBYMEMBER g m 10 km storedist d", []int{1, 6}},
		{"GEORADIUS_RO g 15 37 10 km STORE d", []int{1}},
		{"GEOSEARCHSTORE d g FROMMEMBER m BYRADIUS 10 km", []int{1, 2}},
		{"GEOSEARCH g FROMMEMBER m BYRADIUS 10 km", []int{1}},
		{"GEOADD g 1 1 m", []int{1}},
	} {
		args := toArgs(splitLine(c.cmd))
		if got := command.Lookup(args[0]).KeyIndexes(args); fmt.Sprint(got) != fmt.Sprint(c.keys) {
			t.Errorf("%s: keys %v, want %v", c.cmd, got, c.keys)
		}
	}
}

// TestGeoTrigCorrectlyRounded: geoSin, geoCos and geoAsin return the
// double nearest the exact value (computed with 256-bit floats) over the
// ranges a distance uses them in.
func TestGeoTrigCorrectlyRounded(t *testing.T) {
	const prec = 256
	bf := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	// sinCos is the Taylor series of sin (or cos) at x.
	sinCos := func(x *big.Float, cos bool) *big.Float {
		x2 := new(big.Float).SetPrec(prec).Mul(x, x)
		sum, term := bf(1), bf(1)
		n := int64(0)
		if !cos {
			sum.Set(x)
			term.Set(x)
			n = 1
		}
		for range 80 {
			term.Mul(term, x2)
			term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(-(n+1)*(n+2)))
			sum.Add(sum, term)
			n += 2
		}
		return sum
	}
	// asin by Newton's method on sin.
	asin := func(y float64) *big.Float {
		z := bf(math.Asin(y))
		for range 6 {
			d := new(big.Float).SetPrec(prec).Sub(sinCos(z, false), bf(y))
			z.Sub(z, d.Quo(d, sinCos(z, true)))
		}
		return z
	}
	r := rand.New(rand.NewPCG(1, 2))
	check := func(name string, x, got float64, exact *big.Float) {
		want, _ := exact.Float64()
		if got != want {
			t.Errorf("%s(%v) = %v, correctly rounded %v", name, x, got, want)
		}
	}
	for i := range 800 {
		x := (r.Float64()*2 - 1) * []float64{math.Pi, 2.5, 0.01, 1e-9}[i%4]
		check("sin", x, geoSin(x), sinCos(bf(x), false))
		check("cos", x, geoCos(x), sinCos(bf(x), true))
		y := []float64{r.Float64(), r.Float64() * 0.5, 1 - r.Float64()*1e-6, 1 - r.Float64()*1e-12}[i%4]
		if y != 0 && y != 1 {
			check("asin", y, geoAsin(y), asin(y))
		}
	}
	for _, c := range []struct{ got, want float64 }{
		{geoAsin(1), math.Pi / 2}, {geoAsin(-1), -math.Pi / 2}, {geoAsin(0), 0}, {geoCos(0), 1}, {geoSin(0), 0},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	if v := geoAsin(1 + 1e-15); !math.IsNaN(v) || !math.Signbit(v) {
		t.Errorf("asin out of its domain: %v, want glibc's -nan", v)
	}
}

// TestGeoNoAllocFromCount: COUNT and the radius are never allocation
// sizes: huge ones on a small set answer at once.
func TestGeoNoAllocFromCount(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"GEOADD g 15 37 a 15.1 37 b", num(2)},
		{"GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 1e308 km COUNT 9223372036854775807", arr(bulk("a"), bulk("b"))},
		{"GEOSEARCH g FROMLONLAT 15 37 BYBOX 1e308 1e308 mi COUNT 9223372036854775807 ANY DESC", arr(bulk("b"), bulk("a"))},
		{"GEORADIUS g 15.1 37 1e308 m COUNT 1", arr(bulk("b"))},
	})
}
