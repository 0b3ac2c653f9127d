package exec

// The Redis 7.0 geo commands over sorted sets (geo.c): GEOADD stores a
// position as a member whose score is its 52-bit geohash (geohash.go);
// the searches (GEORADIUS, GEORADIUSBYMEMBER and their _RO forms,
// GEOSEARCH, GEOSEARCHSTORE) scan the score ranges of the 9 boxes around
// the centre and keep the members inside the circle or the box.
//
// Replies follow Redis's formatting: distances with "%.4f", coordinates
// as long doubles ("%.17Lf" without trailing zeros), hashes as integers.
// Results are sorted as Redis sorts them, by glibc's merge sort (stable)
// or, when COUNT keeps fewer than found, by Redis's partial quicksort
// (pqsort), whose order of equal distances is its own.
//
// The searches that store (STORE, STOREDIST, GEOSEARCHSTORE) are
// deterministic and propagate as themselves; the others propagate
// nothing (GEORADIUS is a write for its STORE option).

import (
	"bytes"
	"math"
	"math/big"
	"strconv"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
)

func init() {
	Register("geoadd", cmdGeoAdd)
	Register("geodist", cmdGeoDist)
	Register("geohash", cmdGeoHash)
	Register("geopos", cmdGeoPos)
	Register("georadius", func(c *Ctx) { geoSearchCmd(c, 1, geoFromCoords) })
	Register("georadiusbymember", func(c *Ctx) { geoSearchCmd(c, 1, geoFromMember) })
	Register("georadius_ro", func(c *Ctx) { geoSearchCmd(c, 1, geoFromCoords|geoNoStore) })
	Register("georadiusbymember_ro", func(c *Ctx) { geoSearchCmd(c, 1, geoFromMember|geoNoStore) })
	Register("geosearch", func(c *Ctx) { geoSearchCmd(c, 1, geoSearch) })
	Register("geosearchstore", func(c *Ctx) { geoSearchCmd(c, 2, geoSearch|geoSearchStore) })
}

const errTextGeoMember = "ERR could not decode requested zset member"

// geoOpt reports whether the option b is the lower-case word s: Redis
// compares with strcasecmp, so an argument ends at its first NUL byte.
func geoOpt(b []byte, s string) bool {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return EqFold(b, s)
}

// cFormatF is C's printf("%.<prec>f", f) (glibc's spelling of
// infinities and NaNs).
func cFormatF(f float64, prec int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f != f:
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// geoLonLat parses a longitude and a latitude at args[i], args[i+1]
// (extractLongLatOrReply).
func geoLonLat(c *Ctx, i int) (lon, lat float64, err error) {
	var xy [2]float64
	for j := range xy {
		v, ok := ParseFloat(c.Args[i+j])
		if !ok {
			return 0, 0, ReplyError(ErrTextNotFloat)
		}
		xy[j] = v
	}
	if xy[0] < geoLongMin || xy[0] > geoLongMax || xy[1] < geoLatMin || xy[1] > geoLatMax {
		return 0, 0, ReplyError("ERR invalid longitude,latitude pair " + cFormatF(xy[0], 6) + "," + cFormatF(xy[1], 6))
	}
	return xy[0], xy[1], nil
}

// geoUnit is the meters in one unit named by b (extractUnitOrReply).
func geoUnit(b []byte) (float64, error) {
	switch {
	case geoOpt(b, "m"):
		return 1, nil
	case geoOpt(b, "km"):
		return 1000, nil
	case geoOpt(b, "ft"):
		return 0.3048, nil
	case geoOpt(b, "mi"):
		return 1609.34, nil
	}
	return 0, ReplyError("ERR unsupported unit provided. please use M, KM, FT, MI")
}

// geoRadiusArg parses "radius unit" at args[i] (extractDistanceOrReply).
func geoRadiusArg(c *Ctx, i int) (radius, conversion float64, err error) {
	radius, ok := ParseFloat(c.Args[i])
	if !ok {
		return 0, 0, ReplyError("ERR need numeric radius")
	}
	if radius < 0 {
		return 0, 0, ReplyError("ERR radius cannot be negative")
	}
	conversion, err = geoUnit(c.Args[i+1])
	return radius, conversion, err
}

// geoBoxArg parses "width height unit" at args[i] (extractBoxOrReply).
func geoBoxArg(c *Ctx, i int) (width, height, conversion float64, err error) {
	width, ok := ParseFloat(c.Args[i])
	if !ok {
		return 0, 0, 0, ReplyError("ERR need numeric width")
	}
	height, ok = ParseFloat(c.Args[i+1])
	if !ok {
		return 0, 0, 0, ReplyError("ERR need numeric height")
	}
	if height < 0 || width < 0 {
		return 0, 0, 0, ReplyError("ERR height or width cannot be negative")
	}
	conversion, err = geoUnit(c.Args[i+2])
	return width, height, conversion, err
}

// geoHumanDouble replies f as Redis's addReplyHumanLongDouble: the long
// double "%.17Lf" without trailing zeros, a bulk string in RESP2 and a
// double in RESP3.
func geoHumanDouble(c *Ctx, f float64) {
	s := FormatLongDouble(new(big.Float).SetFloat64(f))
	if c.Proto >= 3 {
		c.Out = append(append(append(c.Out, ','), s...), '\r', '\n')
		return
	}
	c.Bulk(s)
}

// GEOADD key [NX|XX] [CH] lon lat member [lon lat member ...] is ZADD of
// the members with their geohash scores, as Redis runs it.
func cmdGeoAdd(c *Ctx) {
	var nx, xx bool
	zargs := [][]byte{[]byte("zadd"), c.Args[1]}
	i := 2
	for ; i < len(c.Args); i++ {
		switch a := c.Args[i]; {
		case geoOpt(a, "nx"):
			nx = true
			zargs = append(zargs, []byte("nx"))
		case geoOpt(a, "xx"):
			xx = true
			zargs = append(zargs, []byte("xx"))
		case geoOpt(a, "ch"):
			zargs = append(zargs, []byte("ch"))
		default:
			goto positions
		}
	}
positions:
	if (len(c.Args)-i)%3 != 0 || (nx && xx) {
		c.SyntaxErr()
		return
	}
	for ; i < len(c.Args); i += 3 {
		lon, lat, err := geoLonLat(c, i)
		if err != nil {
			c.Fail(err)
			return
		}
		zargs = append(zargs, strconv.AppendUint(nil, geoEncodeScore(lon, lat), 10), c.Args[i+2])
	}
	args := c.Args
	c.Args = zargs
	cmdZAdd(c)
	c.Args = args
}

// geoScores reads the scores of members args[from:] of the zset at
// args[1] (has[i] false for a missing member; found false for a missing
// key).
func geoScores(c *Ctx, from int) (scores []float64, has []bool, found bool, err error) {
	n := len(c.Args) - from
	scores, has = make([]float64, n), make([]bool, n)
	found, err = dsRead(c, 1, engines.TypeZSet, func(o engines.Object) error {
		z := o.(*ds.ZSet)
		for i := range scores {
			scores[i], has[i] = z.Score(string(c.Args[from+i]))
		}
		return nil
	})
	return scores, has, found, err
}

// GEODIST key member1 member2 [unit]
func cmdGeoDist(c *Ctx) {
	toMeter := 1.0
	if len(c.Args) == 5 {
		u, err := geoUnit(c.Args[4])
		if err != nil {
			c.Fail(err)
			return
		}
		toMeter = u
	} else if len(c.Args) > 5 {
		c.SyntaxErr()
		return
	}
	scores, has, found, err := geoScores(c, 2)
	switch {
	case err != nil:
		c.Fail(err)
	case !found || !has[0] || !has[1]:
		c.Null()
	default:
		lon1, lat1 := geoDecodeScore(scores[0])
		lon2, lat2 := geoDecodeScore(scores[1])
		c.BulkString(cFormatF(geoDistance(lon1, lat1, lon2, lat2)/toMeter, 4))
	}
}

// geoAlphabet is the standard geohash base32.
const geoAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// GEOHASH key [member ...]: each position as the standard 11-character
// geohash: decoded, and encoded again over latitudes -90..90 (Redis's
// internal range is the Mercator one); the 11th character stands for bits
// that are not kept, so it is always '0'.
func cmdGeoHash(c *Ctx) {
	geoPositions(c, c.Null, func(lon, lat float64) {
		h, _ := geohashEncode(geoLongRange, geoStdLatRange, lon, lat, geoStepMax)
		var buf [11]byte
		for j := range buf {
			idx := 0
			if j < 10 {
				idx = int(h.bits>>(52-(j+1)*5)) & 0x1f
			}
			buf[j] = geoAlphabet[idx]
		}
		c.Bulk(buf[:])
	})
}

// GEOPOS key [member ...]
func cmdGeoPos(c *Ctx) {
	geoPositions(c, c.NullArray, func(lon, lat float64) {
		c.Array(2)
		geoHumanDouble(c, lon)
		geoHumanDouble(c, lat)
	})
}

// geoPositions replies GEOHASH's and GEOPOS's array: for each member from
// args[2], missing() when it is not in the key, else write(its position).
func geoPositions(c *Ctx, missing func(), write func(lon, lat float64)) {
	scores, has, _, err := geoScores(c, 2)
	if err != nil {
		c.Fail(err)
		return
	}
	c.Array(len(scores))
	for i, s := range scores {
		if !has[i] {
			missing()
			continue
		}
		write(geoDecodeScore(s))
	}
}

// The search commands' variants (Redis's flags of georadiusGeneric).
const (
	geoFromCoords  = 1 << iota // GEORADIUS: around a longitude, latitude
	geoFromMember              // GEORADIUSBYMEMBER: around a member
	geoNoStore                 // the _RO forms: no STORE, STOREDIST
	geoSearch                  // GEOSEARCH's syntax
	geoSearchStore             // GEOSEARCHSTORE: the destination at args[1]
)

const (
	geoSortNone = iota
	geoSortAsc
	geoSortDesc
)

// geoPoint is a search result.
type geoPoint struct {
	lon, lat, dist, score float64
	member                string
}

// geoQuery is a parsed search.
type geoQuery struct {
	shape                         geoShape
	withDist, withHash, withCoord bool
	sort                          int
	any                           bool
	count                         int64 // 0: all
	store                         int   // the destination's index; 0: none
	storeDist                     bool
}

// geoSearchCmd serves the search commands on the zset at args[src]. As
// Redis, it checks the source's type before anything else, then parses
// the arguments (reading FROMMEMBER's and GEORADIUSBYMEMBER's member
// from the source), then searches.
func geoSearchCmd(c *Ctx, src, flags int) {
	if !c.SameBucket(c.spec.KeyIndexes(c.Args)...) {
		return
	}
	var q *geoQuery
	var points []geoPoint
	found, err := dsRead(c, src, engines.TypeZSet, func(o engines.Object) error {
		var err error
		q, err = geoParse(c, o.(*ds.ZSet), flags)
		if err == nil {
			points = geoRun(o.(*ds.ZSet), q)
		}
		return err
	})
	if err == nil && !found {
		q, err = geoParse(c, nil, flags)
	}
	if err != nil {
		c.Fail(err)
		return
	}
	if q.store == 0 {
		c.NoPropagate()
		geoReply(c, q, points)
		return
	}
	// The parsed destination may differ from the spec's guess (which
	// includes every STORE): it must share the source's bucket too.
	if !c.SameBucket(src, q.store) {
		return
	}
	items := make([]zitem, len(points))
	for i, p := range points {
		s := p.score
		if q.storeDist {
			s = p.dist / q.shape.conversion
		}
		items[i] = zitem{p.member, s}
	}
	if err := storeObject(c, q.store, engines.TypeZSet, func() engines.Object { return zsetOf(items) }); err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(len(items)))
}

// geoParse parses a search's arguments (z nil: the source is missing; a
// member to search from is then not looked up). Its errors are the
// replies.
func geoParse(c *Ctx, z *ds.ZSet, flags int) (*geoQuery, error) {
	q := &geoQuery{}
	s := &q.shape
	var base int
	var err error
	switch {
	case flags&geoFromCoords != 0:
		base = 6
		if s.lon, s.lat, err = geoLonLat(c, 2); err != nil {
			return nil, err
		}
		if s.radius, s.conversion, err = geoRadiusArg(c, 4); err != nil {
			return nil, err
		}
	case flags&geoFromMember != 0 && z == nil:
		// No source: the arguments are parsed on only to know the reply.
		base = 5
	case flags&geoFromMember != 0:
		base = 5
		score, ok := z.Score(string(c.Args[2]))
		if !ok {
			return nil, ReplyError(errTextGeoMember)
		}
		s.lon, s.lat = geoDecodeScore(score)
		if s.radius, s.conversion, err = geoRadiusArg(c, 3); err != nil {
			return nil, err
		}
	default: // GEOSEARCH, GEOSEARCHSTORE
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
			q.store = 1
		}
	}
	search := flags&geoSearch != 0
	storeOpt := flags&(geoNoStore|geoSearch) == 0
	var fromMember, fromLoc, byRadius, byBox bool
	for j := base; j < len(c.Args); j++ {
		a := c.Args[j]
		left := len(c.Args) - j - 1
		switch {
		case geoOpt(a, "withdist"):
			q.withDist = true
		case geoOpt(a, "withhash"):
			q.withHash = true
		case geoOpt(a, "withcoord"):
			q.withCoord = true
		case geoOpt(a, "any"):
			q.any = true
		case geoOpt(a, "asc"):
			q.sort = geoSortAsc
		case geoOpt(a, "desc"):
			q.sort = geoSortDesc
		case geoOpt(a, "count") && left >= 1:
			n, ok := ParseInt(c.Args[j+1])
			if !ok {
				return nil, ReplyError(ErrTextNotInt)
			}
			if n <= 0 {
				return nil, ReplyError("ERR COUNT must be > 0")
			}
			q.count = n
			j++
		case geoOpt(a, "store") && left >= 1 && storeOpt:
			q.store, q.storeDist = j+1, false
			j++
		case geoOpt(a, "storedist") && left >= 1 && storeOpt:
			q.store, q.storeDist = j+1, true
			j++
		case geoOpt(a, "storedist") && search && flags&geoSearchStore != 0:
			q.storeDist = true
		case geoOpt(a, "frommember") && left >= 1 && search && !fromLoc:
			fromMember = true
			j++
			if z == nil {
				continue
			}
			score, ok := z.Score(string(c.Args[j]))
			if !ok {
				return nil, ReplyError(errTextGeoMember)
			}
			s.lon, s.lat = geoDecodeScore(score)
		case geoOpt(a, "fromlonlat") && left >= 2 && search && !fromMember:
			if s.lon, s.lat, err = geoLonLat(c, j+1); err != nil {
				return nil, err
			}
			fromLoc = true
			j += 2
		case geoOpt(a, "byradius") && left >= 2 && search && !byBox:
			if s.radius, s.conversion, err = geoRadiusArg(c, j+1); err != nil {
				return nil, err
			}
			s.box, byRadius = false, true
			j += 2
		case geoOpt(a, "bybox") && left >= 3 && search && !byRadius:
			if s.width, s.height, s.conversion, err = geoBoxArg(c, j+1); err != nil {
				return nil, err
			}
			s.box, byBox = true, true
			j += 3
		default:
			return nil, ReplyError(ErrTextSyntax)
		}
	}
	if q.store != 0 && (q.withDist || q.withHash || q.withCoord) {
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		return nil, ReplyError("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
	}
	if search && !fromMember && !fromLoc {
		return nil, ReplyError("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + cString(c.Args[0]))
	}
	if search && !byRadius && !byBox {
		return nil, ReplyError("ERR exactly one of BYRADIUS and BYBOX can be specified for " + cString(c.Args[0]))
	}
	if q.any && q.count == 0 {
		return nil, ReplyError("ERR the ANY argument requires COUNT argument")
	}
	// COUNT without an order (and without ANY) returns the closest.
	if q.count != 0 && q.sort == geoSortNone && !q.any {
		q.sort = geoSortAsc
	}
	return q, nil
}

// geoRun searches z and returns the points the reply holds, sorted and
// cut to COUNT.
func geoRun(z *ds.ZSet, q *geoQuery) []geoPoint {
	s := &q.shape
	var limit int64
	if q.any {
		limit = q.count
	}
	var points []geoPoint
	full := func() bool { return limit > 0 && int64(len(points)) >= limit }
	areas := geoAreas(s)
	last := 0
	for i, h := range areas {
		if h.zero() {
			continue
		}
		// With a huge radius neighbours repeat: skip a box just scanned
		// (Redis does not compare with the centre box, index 0).
		if last != 0 && h == areas[last] {
			continue
		}
		if full() {
			break
		}
		lo, hi := geoAlign52(h), geoAlign52(geoHashBits{bits: h.bits + 1, step: h.step})
		r := ds.ScoreRange{Min: float64(lo), Max: float64(hi), MaxEx: true}
		z.RangeByScore(r, false, 0, -1, func(m string, score float64) bool {
			lon, lat := geoDecodeScore(score)
			if d, ok := geoInShape(s, lon, lat); ok {
				points = append(points, geoPoint{lon: lon, lat: lat, dist: d, score: score, member: m})
			}
			return !full()
		})
		last = i
	}
	n := len(points)
	if q.count != 0 && int64(n) > q.count {
		n = int(q.count)
	}
	if q.sort != geoSortNone {
		cmp := geoCmpAsc
		if q.sort == geoSortDesc {
			cmp = func(a, b *geoPoint) int { return -geoCmpAsc(a, b) }
		}
		if n == len(points) {
			geoMergeSort(points, make([]geoPoint, len(points)), cmp)
		} else {
			geoPartialSort(points, 0, len(points), cmp, 0, n-1)
		}
	}
	return points[:n]
}

// geoReply answers a search that stores nothing.
func geoReply(c *Ctx, q *geoQuery, points []geoPoint) {
	opts := 0
	for _, on := range []bool{q.withDist, q.withHash, q.withCoord} {
		if on {
			opts++
		}
	}
	c.Array(len(points))
	for _, p := range points {
		if opts > 0 {
			c.Array(opts + 1)
		}
		c.BulkString(p.member)
		if q.withDist {
			c.BulkString(cFormatF(p.dist/q.shape.conversion, 4))
		}
		if q.withHash {
			c.Int(int64(p.score)) // a score in a box's range: 0 <= score < 2^52
		}
		if q.withCoord {
			c.Array(2)
			geoHumanDouble(c, p.lon)
			geoHumanDouble(c, p.lat)
		}
	}
}

// geoCmpAsc is Redis's sort_gp_asc (a NaN distance compares below all).
func geoCmpAsc(a, b *geoPoint) int {
	switch {
	case a.dist > b.dist:
		return 1
	case a.dist == b.dist:
		return 0
	}
	return -1
}

// geoMergeSort is glibc's qsort, which Redis calls to sort all the
// results: a top-down merge sort, stable, merging from the left half
// while cmp <= 0. tmp is as long as p.
func geoMergeSort(p, tmp []geoPoint, cmp func(a, b *geoPoint) int) {
	n := len(p)
	if n <= 1 {
		return
	}
	n1 := n / 2
	geoMergeSort(p[:n1], tmp, cmp)
	geoMergeSort(p[n1:], tmp, cmp)
	i, j, k := 0, n1, 0
	for i < n1 && j < n {
		if cmp(&p[i], &p[j]) <= 0 {
			tmp[k] = p[i]
			i++
		} else {
			tmp[k] = p[j]
			j++
		}
		k++
	}
	k += copy(tmp[k:], p[i:n1])
	copy(p, tmp[:k]) // what is left of the right half is in place
}

// geoPartialSort is Redis's pqsort (NetBSD's qsort, Bentley-McIlroy,
// skipping the partitions outside the positions lrange..rrange) on
// a[lo:lo+n]: it orders the first COUNT results, with its own order of
// equal distances.
func geoPartialSort(a []geoPoint, lo, n int, cmp func(a, b *geoPoint) int, lrange, rrange int) {
	c := func(i, j int) int { return cmp(&a[i], &a[j]) }
	swap := func(i, j int) { a[i], a[j] = a[j], a[i] }
	vecswap := func(i, j, k int) {
		for ; k > 0; k-- {
			swap(i, j)
			i++
			j++
		}
	}
	med3 := func(x, y, z int) int {
		if c(x, y) < 0 {
			if c(y, z) < 0 {
				return y
			}
			if c(x, z) < 0 {
				return z
			}
			return x
		}
		if c(y, z) > 0 {
			return y
		}
		if c(x, z) < 0 {
			return x
		}
		return z
	}
	insertion := func() {
		for m := lo + 1; m < lo+n; m++ {
			for l := m; l > lo && c(l-1, l) > 0; l-- {
				swap(l, l-1)
			}
		}
	}
	// inRange: does the partition [start, start+m) hold a wanted position?
	inRange := func(start, m int) bool {
		return !((lrange < start && rrange < start) || (lrange >= start+m && rrange >= start+m))
	}
	for {
		if n < 7 {
			insertion()
			return
		}
		pm := lo + n/2
		if n > 7 {
			pl, pn := lo, lo+n-1
			if n > 40 {
				d := n / 8
				pl = med3(pl, pl+d, pl+2*d)
				pm = med3(pm-d, pm, pm+d)
				pn = med3(pn-2*d, pn-d, pn)
			}
			pm = med3(pl, pm, pn)
		}
		swap(lo, pm)
		pa, pb := lo+1, lo+1
		pc, pd := lo+n-1, lo+n-1
		swapped := false
		for {
			for pb <= pc {
				r := c(pb, lo)
				if r > 0 {
					break
				}
				if r == 0 {
					swapped = true
					swap(pa, pb)
					pa++
				}
				pb++
			}
			for pb <= pc {
				r := c(pc, lo)
				if r < 0 {
					break
				}
				if r == 0 {
					swapped = true
					swap(pc, pd)
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			swap(pb, pc)
			swapped = true
			pb++
			pc--
		}
		if !swapped {
			insertion()
			return
		}
		pn := lo + n
		r := min(pa-lo, pb-pa)
		vecswap(lo, pb-r, r)
		r = min(pd-pc, pn-pd-1)
		vecswap(pb, pn-r, r)
		if r = pb - pa; r > 1 && inRange(lo, r) {
			geoPartialSort(a, lo, r, cmp, lrange, rrange)
		}
		r = pd - pc
		if r <= 1 {
			return
		}
		lo, n = pn-r, r
		if !inRange(lo, n) {
			return
		}
	}
}
