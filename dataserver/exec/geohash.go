package exec

// The geohash arithmetic behind the geo commands (geo.go), as Redis 7.0
// does it (geohash.c, geohash_helper.c): a position is the 52-bit
// interleaving of 26 bits of longitude (odd bits) and 26 bits of latitude
// (even bits) over Redis's ranges (latitude -85.05112878..85.05112878,
// the Web Mercator limits), stored as a sorted-set score. A search
// estimates a box size (step) from the radius, takes the box holding the
// centre and its 8 neighbours, and scans each box's score range.
//
// Everything here is the semantics: a generic geohash library encodes,
// neighbours and estimates differently and would not give Redis's results.
//
// # Floating point
//
// Go may fuse a*b+c into one FMA instruction on some architectures,
// which C compiled for x86-64 does not do; every product that feeds a sum
// is wrapped in float64(), which forbids the fusion. Redis computes its
// distances with the C library's sin, cos and asin; Go's math package
// rounds those differently (up to one result in four differs in its last
// bit from glibc's). geoSin, geoCos and geoAsin are correctly rounded
// (double-double arithmetic), which is what glibc returns but in about 1
// call in 1200 (glibc's error bound is 0.55 ulp, not 0.5): about one
// distance in 600 differs from Redis's in its last bit. That never shows
// in the 4 decimals of a WITHDIST or GEODIST reply; it shows in the 17th
// digit of a STOREDIST score, and could decide a point lying exactly on
// the edge of a search. Matching glibc bit for bit would mean porting its
// table-driven implementations.

import (
	"math"
	"math/big"
)

const (
	geoStepMax = 26 // 26*2 = 52 bits

	geoLatMin  = -85.05112878
	geoLatMax  = 85.05112878
	geoLongMin = -180.0
	geoLongMax = 180.0

	geoEarthRadius = 6372797.560856 // meters
	geoMercatorMax = 20037726.37

	// geoDR is Redis's D_R, M_PI / 180.0: the constant rounds to the
	// same double as C's division of M_PI's double by 180.
	geoDR = math.Pi / 180.0
)

func geoDegRad(ang float64) float64 { return ang * geoDR }
func geoRadDeg(ang float64) float64 { return ang / geoDR }

// geoHashBits is a geohash of step*2 bits.
type geoHashBits struct {
	bits uint64
	step uint8
}

func (h geoHashBits) zero() bool { return h.bits == 0 && h.step == 0 }

type geoRange struct{ min, max float64 }

// geoArea is the cell of a hash.
type geoArea struct {
	hash     geoHashBits
	lon, lat geoRange
}

var (
	geoLongRange = geoRange{geoLongMin, geoLongMax}
	geoLatRange  = geoRange{geoLatMin, geoLatMax}
	// geoStdLatRange is the standard geohash latitude range GEOHASH
	// re-encodes with.
	geoStdLatRange = geoRange{-90, 90}
)

// interleave64 puts the bits of x in the even positions and those of y
// in the odd ones.
func interleave64(xlo, ylo uint32) uint64 {
	x, y := uint64(xlo), uint64(ylo)
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF}
	s := [...]uint{1, 2, 4, 8, 16}
	for i := 4; i >= 0; i-- {
		x = (x | x<<s[i]) & b[i]
		y = (y | y<<s[i]) & b[i]
	}
	return x | y<<1
}

// deinterleave64 undoes interleave64: the even bits in the low 32, the
// odd bits in the high 32.
func deinterleave64(v uint64) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF}
	s := [...]uint{0, 1, 2, 4, 8, 16}
	x, y := v, v>>1
	for i := range b {
		x = (x | x>>s[i]) & b[i]
		y = (y | y>>s[i]) & b[i]
	}
	return x | y<<32
}

// geohashEncode is Redis's geohashEncode: ok false outside Redis's
// ranges (or lonR's and latR's).
func geohashEncode(lonR, latR geoRange, lon, lat float64, step uint8) (geoHashBits, bool) {
	if step > 32 || step == 0 {
		return geoHashBits{}, false
	}
	if lon > geoLongMax || lon < geoLongMin || lat > geoLatMax || lat < geoLatMin {
		return geoHashBits{}, false
	}
	h := geoHashBits{step: step}
	if lat < latR.min || lat > latR.max || lon < lonR.min || lon > lonR.max {
		return h, false
	}
	latOff := (lat - latR.min) / (latR.max - latR.min)
	lonOff := (lon - lonR.min) / (lonR.max - lonR.min)
	latOff *= float64(uint64(1) << step)
	lonOff *= float64(uint64(1) << step)
	// The offsets are in [0, 2^step]: C's conversion to uint32_t truncates.
	h.bits = interleave64(uint32(latOff), uint32(lonOff))
	return h, true
}

// geohashDecode is the cell of h (Redis's geohashDecode). C adds 1 to
// the 32-bit halves in 32 bits: a garbage score's all-ones half wraps.
func geohashDecode(lonR, latR geoRange, h geoHashBits) geoArea {
	sep := deinterleave64(h.bits)
	latScale := latR.max - latR.min
	lonScale := lonR.max - lonR.min
	ilat := uint32(sep)
	ilon := uint32(sep >> 32)
	div := float64(uint64(1) << h.step)
	return geoArea{
		hash: h,
		lat: geoRange{
			min: latR.min + float64(float64(ilat)*1.0/div*latScale),
			max: latR.min + float64(float64(ilat+1)*1.0/div*latScale),
		},
		lon: geoRange{
			min: lonR.min + float64(float64(ilon)*1.0/div*lonScale),
			max: lonR.min + float64(float64(ilon+1)*1.0/div*lonScale),
		},
	}
}

// geoDecodeScore is the position a score stands for (Redis's
// decodeGeohash: the centre of its cell, clamped to the ranges). It never
// fails: Redis's decoding only fails for a zero step.
func geoDecodeScore(score float64) (lon, lat float64) {
	a := geohashDecode(geoLongRange, geoLatRange, geoHashBits{bits: cDoubleToUint64(score), step: geoStepMax})
	lon = (a.lon.min + a.lon.max) / 2
	lon = min(max(lon, geoLongMin), geoLongMax)
	lat = (a.lat.min + a.lat.max) / 2
	lat = min(max(lat, geoLatMin), geoLatMax)
	return lon, lat
}

// cDoubleToUint64 is C's (uint64_t) conversion of a double as gcc
// compiles it for x86-64 (what Redis does to a score before decoding
// it): out of range, it is not an error but these values.
func cDoubleToUint64(f float64) uint64 {
	const two63 = 9223372036854775808.0
	if f < two63 {
		if f <= -two63 || f != f {
			return 1 << 63 // cvttsd2si's "integer indefinite"
		}
		return uint64(int64(f))
	}
	d := f - two63
	if d >= two63 {
		return 0 // indefinite, xor the top bit
	}
	return uint64(int64(d)) ^ 1<<63
}

// geoEncodeScore is the score GEOADD stores for a position Redis's
// ranges accept.
func geoEncodeScore(lon, lat float64) uint64 {
	h, _ := geohashEncode(geoLongRange, geoLatRange, lon, lat, geoStepMax)
	return geoAlign52(h)
}

// geoAlign52 shifts a hash of step < 26 to 52 bits.
func geoAlign52(h geoHashBits) uint64 { return h.bits << (52 - uint(h.step)*2) }

// The interleaved hash keeps the longitude (x) in the odd bits and the
// latitude (y) in the even ones.
const (
	geoLaneX = 0xaaaaaaaaaaaaaaaa
	geoLaneY = 0x5555555555555555
)

// geoMove moves h by d cells (-1, 0 or 1) along the coordinate whose bits
// are lane, the other's kept: Redis's geohash_move_x and geohash_move_y.
func geoMove(h *geoHashBits, d int, lane uint64) {
	if d == 0 {
		return
	}
	v := h.bits & lane
	other := h.bits &^ lane
	zz := ^lane >> (64 - uint(h.step)*2)
	if d > 0 {
		v = v + (zz + 1)
	} else {
		v = v | zz
		v = v - (zz + 1)
	}
	v &= lane >> (64 - uint(h.step)*2)
	h.bits = v | other
}

// geoNeighbors are a hash's 8 neighbours.
type geoNeighbors struct {
	north, east, west, south, northEast, southEast, northWest, southWest geoHashBits
}

func geohashNeighbors(h geoHashBits) geoNeighbors {
	move := func(dx, dy int) geoHashBits {
		n := h
		geoMove(&n, dx, geoLaneX)
		geoMove(&n, dy, geoLaneY)
		return n
	}
	return geoNeighbors{
		east: move(1, 0), west: move(-1, 0), south: move(0, -1), north: move(0, 1),
		northWest: move(-1, 1), northEast: move(1, 1), southEast: move(1, -1), southWest: move(-1, -1),
	}
}

// geoEstimateSteps is the step of the 9 boxes a search of this radius
// covers (geohashEstimateStepsByRadius).
func geoEstimateSteps(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < geoMercatorMax { // at most ~1100 turns: a double's exponent range
		rangeMeters *= 2
		step++
	}
	step -= 2 // make sure the range is included in most of the base cases
	// Wider range towards the poles.
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// geoShape is a search area: a circle (radius) or a box (width, height),
// in the unit of conversion (meters per unit), around lon, lat.
type geoShape struct {
	box           bool
	lon, lat      float64
	conversion    float64
	radius        float64
	width, height float64
	// bounds: min lon, min lat, max lon, max lat
	bounds [4]float64
}

// geoBoundingBox fills s.bounds (geohashBoundingBox).
func geoBoundingBox(s *geoShape) {
	var height, width float64
	if s.box {
		height = s.conversion * (s.height / 2)
		width = s.conversion * (s.width / 2)
	} else {
		height = s.conversion * s.radius
		width = height
	}
	latDelta := geoRadDeg(height / geoEarthRadius)
	longDeltaTop := geoRadDeg(width / geoEarthRadius / geoCos(geoDegRad(s.lat+latDelta)))
	longDeltaBottom := geoRadDeg(width / geoEarthRadius / geoCos(geoDegRad(s.lat-latDelta)))
	if s.lat < 0 { // southern hemisphere: the box is widest at its bottom
		s.bounds[0] = s.lon - longDeltaBottom
		s.bounds[2] = s.lon + longDeltaBottom
	} else {
		s.bounds[0] = s.lon - longDeltaTop
		s.bounds[2] = s.lon + longDeltaTop
	}
	s.bounds[1] = s.lat - latDelta
	s.bounds[3] = s.lat + latDelta
}

// geoAreas are the 9 boxes a search scans (geohashCalculateAreasByShapeWGS84),
// centre first, in Redis's order; useless neighbours are zero.
func geoAreas(s *geoShape) [9]geoHashBits {
	geoBoundingBox(s)
	minLon, minLat, maxLon, maxLat := s.bounds[0], s.bounds[1], s.bounds[2], s.bounds[3]
	var radius float64
	if s.box {
		radius = math.Sqrt(float64(s.width/2*(s.width/2)) + float64(s.height/2*(s.height/2)))
	} else {
		radius = s.radius
	}
	radius *= s.conversion
	steps := geoEstimateSteps(radius, s.lat)

	hash, _ := geohashEncode(geoLongRange, geoLatRange, s.lon, s.lat, steps)
	nb := geohashNeighbors(hash)
	area := geohashDecode(geoLongRange, geoLatRange, hash)

	// Is the step small enough at the edges of the covered area?
	north := geohashDecode(geoLongRange, geoLatRange, nb.north)
	south := geohashDecode(geoLongRange, geoLatRange, nb.south)
	east := geohashDecode(geoLongRange, geoLatRange, nb.east)
	west := geohashDecode(geoLongRange, geoLatRange, nb.west)
	decrease := north.lat.max < maxLat || south.lat.min > minLat || east.lon.max < maxLon || west.lon.min > minLon
	if steps > 1 && decrease {
		steps--
		hash, _ = geohashEncode(geoLongRange, geoLatRange, s.lon, s.lat, steps)
		nb = geohashNeighbors(hash)
		area = geohashDecode(geoLongRange, geoLatRange, hash)
	}
	// Exclude the useless areas.
	if steps >= 2 {
		if area.lat.min < minLat {
			nb.south, nb.southWest, nb.southEast = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
		if area.lat.max > maxLat {
			nb.north, nb.northEast, nb.northWest = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
		if area.lon.min < minLon {
			nb.west, nb.southWest, nb.northWest = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
		if area.lon.max > maxLon {
			nb.east, nb.southEast, nb.northEast = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
	}
	return [9]geoHashBits{hash, nb.north, nb.south, nb.east, nb.west, nb.northEast, nb.northWest, nb.southEast, nb.southWest}
}

// geoDistance is the haversine distance in meters (geohashGetDistance,
// Redis 7.0's form).
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lat1r := geoDegRad(lat1)
	lon1r := geoDegRad(lon1)
	lat2r := geoDegRad(lat2)
	lon2r := geoDegRad(lon2)
	u := geoSin((lat2r - lat1r) / 2)
	v := geoSin((lon2r - lon1r) / 2)
	a := float64(u*u) + float64(float64(float64(geoCos(lat1r)*geoCos(lat2r))*v)*v)
	return 2.0 * geoEarthRadius * geoAsin(math.Sqrt(a))
}

// geoInShape reports whether the point lon, lat is in s, and its
// distance from the centre in meters.
func geoInShape(s *geoShape, lon, lat float64) (float64, bool) {
	if !s.box {
		d := geoDistance(s.lon, s.lat, lon, lat)
		return d, !(d > s.radius*s.conversion)
	}
	// geohashGetDistanceIfInRectangle
	w, h := s.width*s.conversion, s.height*s.conversion
	lonDist := geoDistance(lon, lat, s.lon, lat)
	latDist := geoDistance(lon, lat, lon, s.lat)
	if lonDist > w/2 || latDist > h/2 {
		return 0, false
	}
	return geoDistance(s.lon, s.lat, lon, lat), true
}

// ---- correctly rounded sin, cos and asin (see the file comment) ----

// dd is an unevaluated sum hi+lo of two doubles (106 bits).
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) (float64, float64) {
	s := a + b
	bb := s - a
	return s, (a - (s - bb)) + (b - bb)
}

func quickTwoSum(a, b float64) (float64, float64) {
	s := a + b
	return s, b - (s - a)
}

func twoProd(a, b float64) (float64, float64) {
	p := a * b
	return p, math.FMA(a, b, -p)
}

func ddAdd(a, b dd) dd {
	s, e := twoSum(a.hi, b.hi)
	t, f := twoSum(a.lo, b.lo)
	e += t
	s, e = quickTwoSum(s, e)
	e += f
	s, e = quickTwoSum(s, e)
	return dd{s, e}
}

func ddMul(a, b dd) dd {
	p, e := twoProd(a.hi, b.hi)
	e += float64(a.hi*b.lo) + float64(a.lo*b.hi)
	p, e = quickTwoSum(p, e)
	return dd{p, e}
}

func (a dd) neg() dd        { return dd{-a.hi, -a.lo} }
func (a dd) float() float64 { return a.hi + a.lo }

// The Taylor coefficients (-1)^k/(2k+1)! and (-1)^k/(2k)!, and pi/2 in
// three parts, computed once at 300 bits.
var (
	ddSinC, ddCosC [16]dd
	ddPio2         [3]float64
)

func init() {
	const prec = 300
	bf := func() *big.Float { return new(big.Float).SetPrec(prec) }
	split := func(f *big.Float) dd {
		hi, _ := f.Float64()
		lo, _ := bf().Sub(f, bf().SetFloat64(hi)).Float64()
		return dd{hi, lo}
	}
	fact := bf().SetInt64(1)
	for n := 1; n < 32; n++ {
		fact.Mul(fact, bf().SetInt64(int64(n)))
		inv := bf().Quo(bf().SetInt64(1), fact)
		if n%4 == 2 || n%4 == 3 {
			inv.Neg(inv)
		}
		if n%2 == 1 {
			ddSinC[n/2] = split(inv)
		} else {
			ddCosC[n/2] = split(inv)
		}
	}
	ddSinC[0], ddCosC[0] = dd{1, 0}, dd{1, 0}
	// pi = 16 atan(1/5) - 4 atan(1/239) (Machin)
	atanInv := func(n int64) *big.Float {
		x := bf().Quo(bf().SetInt64(1), bf().SetInt64(n))
		x2 := bf().Mul(x, x)
		sum, term := bf().Set(x), bf().Set(x)
		for k := int64(1); k < 220; k++ {
			term.Mul(term, x2)
			t := bf().Quo(term, bf().SetInt64(2*k+1))
			if k%2 == 1 {
				sum.Sub(sum, t)
			} else {
				sum.Add(sum, t)
			}
		}
		return sum
	}
	a, b := atanInv(5), atanInv(239)
	pio2 := bf().Sub(a.Mul(a, bf().SetInt64(16)), b.Mul(b, bf().SetInt64(4)))
	pio2.Quo(pio2, bf().SetInt64(2))
	for i := range ddPio2 {
		ddPio2[i], _ = pio2.Float64()
		pio2.Sub(pio2, bf().SetFloat64(ddPio2[i]))
	}
}

// ddReduce returns r and k with x = k*pi/2 + r, |r| <= ~pi/4, for
// |x| < 2^20.
func ddReduce(x float64) (dd, int64) {
	k := math.Round(x * (2 / math.Pi))
	if k == 0 {
		return dd{x, 0}, 0
	}
	p1, e1 := twoProd(k, ddPio2[0])
	r := dd{x - p1, 0} // exact: x and k*pi/2 are within a factor of 2
	r = ddAdd(r, dd{-e1, 0})
	p2, e2 := twoProd(k, ddPio2[1])
	r = ddAdd(r, dd{-p2, -e2})
	r = ddAdd(r, dd{-k * ddPio2[2], 0})
	return r, int64(k)
}

// ddPolyDD is how many of the Taylor coefficients are applied in
// double-double: for |r| <= pi/4 the later terms are below 2^-53 of the
// sum, and plain doubles carry them well enough (sin's and cos's
// results stay within 2^-104 of the exact value).
const ddPolyDD = 9

// ddPoly is c[0] + c[1]*r2 + c[2]*r2^2 + ... (Horner).
func ddPoly(c *[16]dd, r2 dd) dd {
	t := c[len(c)-1].hi
	for i := len(c) - 2; i >= ddPolyDD; i-- {
		t = float64(t*r2.hi) + c[i].hi
	}
	acc := dd{t, 0}
	for i := ddPolyDD - 1; i >= 0; i-- {
		acc = ddAdd(ddMul(acc, r2), c[i])
	}
	return acc
}

func ddSinPoly(r dd) dd { return ddMul(ddPoly(&ddSinC, ddMul(r, r)), r) }
func ddCosPoly(r dd) dd { return ddPoly(&ddCosC, ddMul(r, r)) }

// ddSinCos is sin(x) (or cos(x) when cos), in double-double.
func ddSinCos(x float64, cos bool) dd {
	r, k := ddReduce(x)
	if cos {
		k++
	}
	switch k & 3 {
	case 0:
		return ddSinPoly(r)
	case 1:
		return ddCosPoly(r)
	case 2:
		return ddSinPoly(r).neg()
	}
	return ddCosPoly(r).neg()
}

// geoTrigLimit: beyond it (and for NaN and infinities) math's functions
// do; no result Redis shows depends on them there (a search's bounding
// box only matters for radii of a few thousand km, see geoAreas).
const geoTrigLimit = 1 << 20

func geoSin(x float64) float64 {
	if x == 0 || !(math.Abs(x) < geoTrigLimit) {
		return math.Sin(x)
	}
	return ddSinCos(x, false).float()
}

func geoCos(x float64) float64 {
	if !(math.Abs(x) < geoTrigLimit) {
		return math.Cos(x)
	}
	return ddSinCos(x, true).float()
}

// geoNaN is the NaN x86-64 makes of 0/0 (its sign bit set), which
// glibc's asin returns out of its domain and printf shows as "-nan".
var geoNaN = math.Float64frombits(0xfff8000000000000)

// geoAsin is asin, correctly rounded: Newton's method on sin from math's
// estimate for |y| <= 0.5, asin(y) = pi/2 - 2 asin(sqrt((1-y)/2)) above.
func geoAsin(y float64) float64 {
	if y != y {
		return y
	}
	if y > 1 || y < -1 {
		return geoNaN
	}
	a := math.Abs(y)
	if a == 0 {
		return y
	}
	var r dd
	switch {
	case a == 1:
		r = dd{ddPio2[0], ddPio2[1]}
	case a <= 0.5:
		r = ddAsinSmall(dd{a, 0})
	default:
		t := (1 - a) / 2 // exact
		s := math.Sqrt(t)
		// sqrt(t) in double-double: one Newton step on the exact residual.
		sh, sl := quickTwoSum(s, math.FMA(-s, s, t)/(2*s))
		w := ddAsinSmall(dd{sh, sl})
		r = ddAdd(dd{ddPio2[0], ddPio2[1]}, dd{-2 * w.hi, -2 * w.lo})
	}
	v := r.float()
	if y < 0 {
		v = -v
	}
	return v
}

// ddAsinSmall is asin(y) for 0 < y <= 0.5 (y double-double): one Newton
// step on sin from math's estimate z (within 2 ulp): z + (y - sin z)/cos z
// is then within 2^-100 of the exact value (the residual needs sin in
// double-double, the division only cos's double).
func ddAsinSmall(y dd) dd {
	z := math.Asin(y.hi)
	d := ddAdd(y, ddSinPoly(dd{z, 0}).neg())
	return ddAdd(dd{z, 0}, dd{d.hi / math.Cos(z), 0})
}
