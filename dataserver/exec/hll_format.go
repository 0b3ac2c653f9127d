package exec

// Redis's HyperLogLog representation (hyperloglog.c of Redis 7.0), byte
// for byte, so that a value GET from redis-server and SET here works with
// the PF* commands, and the other way round.
//
// A HyperLogLog is a string: a 16-byte header, "HYLL", the encoding (0
// dense, 1 sparse), three unused bytes and the cached cardinality (64-bit
// little endian; the top bit of its last byte set means "stale"), then
// the 16384 registers of 6 bits each:
//
//   - dense: 12288 bytes, register i at bit 6*i, least significant bits
//     first;
//   - sparse: a run-length code of opcodes, ZERO (00xxxxxx: 1 to 64 zero
//     registers), XZERO (01xxxxxx yyyyyyyy: 1 to 16384 zero registers) and
//     VAL (1vvvvvxx: 1 to 4 registers of value 1 to 32). A sparse value
//     becomes dense when a register needs a value above 32 or when it
//     would grow past hll-sparse-max-bytes (3000, Redis's default).
//
// An element's register is the low 14 bits of its MurmurHash64A (seed
// 0xadc83b19); its value is the position of the first 1 bit in the
// remaining 50 (1 to 51). The cardinality is Otmar Ertl's improved
// estimator over the registers' histogram, as Redis 7 computes it.
//
// The functions work on the value as Redis's sds string: reading one
// byte past the end gives the 0 of the string's terminator (a truncated
// XZERO opcode at the end of a corrupted value reads its second byte so).

import (
	"math"
	"math/bits"
)

const (
	hllP           = 14
	hllQ           = 64 - hllP
	hllRegisters   = 1 << hllP
	hllPMask       = hllRegisters - 1
	hllBits        = 6
	hllRegisterMax = 1<<hllBits - 1
	hllHdrSize     = 16
	hllDenseSize   = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllDense       = 0
	hllSparse      = 1
	hllMaxEncoding = 1

	// hllSparseMaxBytes is Redis's hll-sparse-max-bytes default: a
	// sparse value that would grow past it becomes dense.
	hllSparseMaxBytes = 3000

	hllSparseXZeroBit     = 0x40
	hllSparseValBit       = 0x80
	hllSparseValMaxValue  = 32
	hllSparseValMaxLen    = 4
	hllSparseZeroMaxLen   = 64
	hllSparseXZeroMaxLen  = 16384
	hllAlphaInf           = 0.721347520444481703680 // 0.5/ln(2)
	hllSeed               = 0xadc83b19
	hllCardStaleByte      = hllHdrSize - 1 // card[7]
	hllCardStaleBit       = 1 << 7
	hllEncodingByte       = 4
	hllSparseOpcodesStart = hllHdrSize
)

// ---- sparse opcodes ----

func hllIsZero(b byte) bool  { return b&0xc0 == 0 }
func hllIsXZero(b byte) bool { return b&0xc0 == hllSparseXZeroBit }
func hllIsVal(b byte) bool   { return b&hllSparseValBit != 0 }
func hllZeroLen(b byte) int  { return int(b&0x3f) + 1 }
func hllXZeroLen(b0, b1 byte) int {
	return (int(b0&0x3f)<<8 | int(b1)) + 1
}
func hllValValue(b byte) int { return int(b>>2&0x1f) + 1 }
func hllValLen(b byte) int   { return int(b&0x3) + 1 }

func hllValOp(val, n int) byte { return byte((val-1)<<2|(n-1)) | hllSparseValBit }
func hllZeroOp(n int) byte     { return byte(n - 1) }
func hllXZeroOp(n int) (byte, byte) {
	l := n - 1
	return byte(l>>8) | hllSparseXZeroBit, byte(l)
}

// hllAt is s[i], or the 0 of the sds terminator past the end.
func hllAt(s []byte, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// ---- hashing ----

// murmurHash64A is Redis's MurmurHash64A (MurmurHash2, 64-bit, words
// read little endian).
func murmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	n := len(key) &^ 7
	for i := 0; i < n; i += 8 {
		k := uint64(key[i]) | uint64(key[i+1])<<8 | uint64(key[i+2])<<16 | uint64(key[i+3])<<24 |
			uint64(key[i+4])<<32 | uint64(key[i+5])<<40 | uint64(key[i+6])<<48 | uint64(key[i+7])<<56
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	tail := key[n:]
	switch len(tail) {
	case 7:
		h ^= uint64(tail[6]) << 48
		fallthrough
	case 6:
		h ^= uint64(tail[5]) << 40
		fallthrough
	case 5:
		h ^= uint64(tail[4]) << 32
		fallthrough
	case 4:
		h ^= uint64(tail[3]) << 24
		fallthrough
	case 3:
		h ^= uint64(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint64(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint64(tail[0])
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen is Redis's hllPatLen: the register of ele and the length of
// the 000..1 pattern of the rest of its hash (1 to hllQ+1).
func hllPatLen(ele []byte) (index int, count uint8) {
	hash := murmurHash64A(ele, hllSeed)
	index = int(hash & hllPMask)
	hash >>= hllP
	hash |= 1 << hllQ // the loop's end: count <= Q+1
	return index, uint8(bits.TrailingZeros64(hash) + 1)
}

// ---- dense ----

// hllDenseGet is register i of the dense registers regs.
func hllDenseGet(regs []byte, i int) uint8 {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	b0, b1 := uint(regs[b]), uint(hllAt(regs, b+1))
	return uint8((b0>>fb | b1<<(8-fb)) & hllRegisterMax)
}

// hllDenseSetReg sets register i of regs to v.
func hllDenseSetReg(regs []byte, i int, v uint8) {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	fb8 := 8 - fb
	val := uint(v)
	regs[b] &^= byte(hllRegisterMax << fb)
	regs[b] |= byte(val << fb)
	if b+1 < len(regs) { // the last register ends in its own byte
		regs[b+1] &^= byte(hllRegisterMax >> fb8)
		regs[b+1] |= byte(val >> fb8)
	}
}

// hllDenseSet raises register i of regs to count; it reports whether it
// changed.
func hllDenseSet(regs []byte, i int, count uint8) bool {
	if count > hllDenseGet(regs, i) {
		hllDenseSetReg(regs, i, count)
		return true
	}
	return false
}

// hllDenseHisto adds the dense registers' values to histo.
func hllDenseHisto(regs []byte, histo *[64]int) {
	// four registers in three bytes
	for j := 0; j+2 < len(regs); j += 3 {
		r0, r1, r2 := regs[j], regs[j+1], regs[j+2]
		histo[r0&63]++
		histo[(r0>>6|r1<<2)&63]++
		histo[(r1>>4|r2<<4)&63]++
		histo[r2>>2&63]++
	}
}

// ---- sparse ----

// hllNew is an empty HyperLogLog as Redis creates it: sparse, one XZERO
// of 16384 registers, a cached cardinality of 0.
func hllNew() []byte {
	s := make([]byte, hllHdrSize+2, 64)
	copy(s, "HYLL")
	s[hllEncodingByte] = hllSparse
	s[hllHdrSize], s[hllHdrSize+1] = hllXZeroOp(hllRegisters)
	return s
}

// hllSparseToDense converts s to the dense encoding (s itself when it is
// dense): the header is kept but for the encoding. ok is false when the
// sparse code does not cover exactly the 16384 registers.
func hllSparseToDense(s []byte) (d []byte, ok bool) {
	if s[hllEncodingByte] == hllDense {
		return s, true
	}
	d = make([]byte, hllDenseSize)
	copy(d, s[:hllHdrSize])
	d[hllEncodingByte] = hllDense
	regs := d[hllHdrSize:]
	idx := 0
	for p := hllHdrSize; p < len(s); {
		op := s[p]
		switch {
		case hllIsZero(op):
			idx += hllZeroLen(op)
			p++
		case hllIsXZero(op):
			idx += hllXZeroLen(op, hllAt(s, p+1))
			p += 2
		default:
			n, v := hllValLen(op), hllValValue(op)
			if idx+n > hllRegisters {
				return nil, false
			}
			for ; n > 0; n-- {
				hllDenseSetReg(regs, idx, uint8(v))
				idx++
			}
			p++
		}
	}
	if idx != hllRegisters {
		return nil, false
	}
	return d, true
}

// hllSparseSet is Redis's hllSparseSet: it raises register index of the
// sparse s to count, splitting the opcode that covers it and merging the
// VAL opcodes around, or converts s to dense first when count does not
// fit a VAL opcode or s would grow past hllSparseMaxBytes. It returns the
// new value (s may be changed in place) and 1 when the register changed,
// 0 when it did not, -1 when s is corrupted.
func hllSparseSet(s []byte, index int, count uint8) ([]byte, int) {
	if count > hllSparseValMaxValue {
		return hllPromote(s, index, count)
	}
	// Step 1: the opcode covering the register.
	end := len(s)
	p, prev := hllHdrSize, -1
	first, span := 0, 0
	for p < end {
		op, oplen := s[p], 1
		switch {
		case hllIsZero(op):
			span = hllZeroLen(op)
		case hllIsVal(op):
			span = hllValLen(op)
		default:
			span = hllXZeroLen(op, hllAt(s, p+1))
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return s, -1
	}
	op := s[p]
	next := p + 1
	if hllIsXZero(op) {
		next = p + 2
	}
	hasNext := next < end
	isZero, isXZero, isVal := hllIsZero(op), hllIsXZero(op), hllIsVal(op)
	var runlen int
	switch {
	case isZero:
		runlen = hllZeroLen(op)
	case isXZero:
		runlen = hllXZeroLen(op, hllAt(s, p+1))
	default:
		runlen = hllValLen(op)
	}

	// Step 2: the trivial updates in place, else the opcode's
	// replacement (at most XZERO-VAL-XZERO, 5 bytes).
	switch {
	case isVal && hllValValue(op) >= int(count):
		return s, 0
	case isVal && runlen == 1, isZero && runlen == 1:
		s[p] = hllValOp(int(count), 1)
	default:
		var seq [5]byte
		n := 0
		last := first + span - 1
		zeros := func(l int) {
			if l > hllSparseZeroMaxLen {
				seq[n], seq[n+1] = hllXZeroOp(l)
				n += 2
			} else {
				seq[n] = hllZeroOp(l)
				n++
			}
		}
		if isZero || isXZero {
			if index != first {
				zeros(index - first)
			}
			seq[n] = hllValOp(int(count), 1)
			n++
			if index != last {
				zeros(last - index)
			}
		} else {
			cur := hllValValue(op)
			if index != first {
				seq[n] = hllValOp(cur, index-first)
				n++
			}
			seq[n] = hllValOp(int(count), 1)
			n++
			if index != last {
				seq[n] = hllValOp(cur, last-index)
				n++
			}
		}
		// Step 3: the new sequence in place of the opcode.
		oldlen := 1
		if isXZero {
			oldlen = 2
		}
		delta := n - oldlen
		if delta > 0 && len(s)+delta > hllSparseMaxBytes {
			return hllPromote(s, index, count)
		}
		if delta > 0 {
			s = append(s, make([]byte, delta)...)
		}
		if delta != 0 && hasNext {
			copy(s[next+delta:], s[next:end])
		}
		s = s[:end+delta]
		// Past the new end only when the opcode was an XZERO cut short
		// by the end of a corrupted value: those bytes are lost, as in C.
		copy(s[p:], seq[:n])
		end += delta
	}

	// Step 4: merge adjacent VAL opcodes of one value, up to 5 opcodes
	// from the one before the change.
	p = prev
	if p < 0 {
		p = hllHdrSize
	}
	for scan := 5; p < end && scan > 0; {
		scan--
		op := s[p]
		if hllIsXZero(op) {
			p += 2
			continue
		}
		if hllIsZero(op) {
			p++
			continue
		}
		if p+1 < end && hllIsVal(s[p+1]) {
			v1, v2 := hllValValue(op), hllValValue(s[p+1])
			if v1 == v2 {
				if l := hllValLen(op) + hllValLen(s[p+1]); l <= hllSparseValMaxLen {
					s[p+1] = hllValOp(v1, l)
					copy(s[p:], s[p+1:end])
					end--
					s = s[:end]
					continue
				}
			}
		}
		p++
	}
	hllInvalidate(s)
	return s, 1
}

// hllPromote converts s to dense and sets the register there.
func hllPromote(s []byte, index int, count uint8) ([]byte, int) {
	d, ok := hllSparseToDense(s)
	if !ok {
		return s, -1
	}
	// Redis asserts the register changes: the sparse code could not
	// hold the new value, which is above the old.
	hllDenseSet(d[hllHdrSize:], index, count)
	return d, 1
}

// hllSparseHisto adds the sparse code's register values to histo; ok is
// false when it does not cover exactly the 16384 registers.
func hllSparseHisto(s []byte, histo *[64]int) bool {
	idx := 0
	for p := hllHdrSize; p < len(s); {
		op := s[p]
		switch {
		case hllIsZero(op):
			n := hllZeroLen(op)
			idx += n
			histo[0] += n
			p++
		case hllIsXZero(op):
			n := hllXZeroLen(op, hllAt(s, p+1))
			idx += n
			histo[0] += n
			p += 2
		default:
			n := hllValLen(op)
			idx += n
			histo[hllValValue(op)] += n
			p++
		}
	}
	return idx == hllRegisters
}

// ---- the commands' operations ----

// hllAdd adds ele to the HyperLogLog s (valid header, see hllValid): the
// new value and 1 when a register changed, 0 when none did, -1 when s is
// corrupted.
func hllAdd(s []byte, ele []byte) ([]byte, int) {
	index, count := hllPatLen(ele)
	switch s[hllEncodingByte] {
	case hllDense:
		if hllDenseSet(s[hllHdrSize:], index, count) {
			return s, 1
		}
		return s, 0
	case hllSparse:
		return hllSparseSet(s, index, count)
	}
	return s, -1
}

// hllMergeInto raises max[i] to the registers of s; false when s is a
// corrupted sparse value.
func hllMergeInto(max *[hllRegisters]uint8, s []byte) bool {
	if s[hllEncodingByte] == hllDense {
		regs := s[hllHdrSize:]
		for i := range max {
			if v := hllDenseGet(regs, i); v > max[i] {
				max[i] = v
			}
		}
		return true
	}
	i := 0
	for p := hllHdrSize; p < len(s); {
		op := s[p]
		switch {
		case hllIsZero(op):
			i += hllZeroLen(op)
			p++
		case hllIsXZero(op):
			i += hllXZeroLen(op, hllAt(s, p+1))
			p += 2
		default:
			n, v := hllValLen(op), uint8(hllValValue(op))
			if i+n > hllRegisters {
				return false
			}
			for ; n > 0; n-- {
				if v > max[i] {
					max[i] = v
				}
				i++
			}
			p++
		}
	}
	return i == hllRegisters
}

// hllCountOf is the cardinality of the HyperLogLog s; ok is false when s
// is a corrupted sparse value.
func hllCountOf(s []byte) (uint64, bool) {
	var histo [64]int
	if s[hllEncodingByte] == hllDense {
		hllDenseHisto(s[hllHdrSize:], &histo)
	} else if !hllSparseHisto(s, &histo) {
		return 0, false
	}
	return hllEstimate(&histo), true
}

// hllCountRegisters is the cardinality of registers held one per byte
// (PFCOUNT of several keys).
func hllCountRegisters(max *[hllRegisters]uint8) uint64 {
	var histo [64]int
	for _, v := range max {
		histo[v&63]++
	}
	return hllEstimate(&histo)
}

// hllEstimate is Redis 7's hllCount over the registers' histogram: Otmar
// Ertl's estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", arXiv:1702.01284). The products are converted
// explicitly so that Go never fuses them with the sums (an FMA would
// round differently from C's separate operations).
func hllEstimate(histo *[64]int) uint64 {
	m := float64(hllRegisters)
	z := float64(m * hllTau((m-float64(histo[hllQ+1]))/m))
	for j := hllQ; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += float64(m * hllSigma(float64(histo[0])/m))
	alpha := float64(hllAlphaInf)
	e := math.Round(float64(float64(alpha*m)*m) / z) // llroundl: half away from zero
	if !(e < 1<<63) {
		// An estimate past int64 (+Inf when z is 0: every register
		// above 51, which only a crafted value has): llroundl's invalid
		// result on x86-64, LLONG_MIN, which Redis replies as is.
		return 1 << 63
	}
	return uint64(e)
}

// hllSigma is Ertl's sigma, as Redis computes it.
func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x = float64(x * x)
		zPrime := z
		z += float64(x * y)
		y += y
		if zPrime == z {
			return z
		}
	}
}

// hllTau is Ertl's tau, as Redis computes it (pow(1-x, 2) is the
// correctly rounded square, as glibc's pow gives it).
func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		d := float64(1 - x)
		z -= float64(float64(d*d) * y)
		if zPrime == z {
			return z / 3
		}
	}
}

// ---- header ----

// hllValid is Redis's isHLLObjectOrReply on a string value: the header's
// magic and encoding, and the exact size of a dense value.
func hllValid(v []byte) bool {
	return len(v) >= hllHdrSize && string(v[:4]) == "HYLL" && v[hllEncodingByte] <= hllMaxEncoding &&
		(v[hllEncodingByte] != hllDense || len(v) == hllDenseSize)
}

// hllInvalidate marks the cached cardinality stale.
func hllInvalidate(s []byte) { s[hllCardStaleByte] |= hllCardStaleBit }

// hllCached is the cached cardinality, ok when it is not stale.
func hllCached(s []byte) (uint64, bool) {
	if s[hllCardStaleByte]&hllCardStaleBit != 0 {
		return 0, false
	}
	var card uint64
	for i := 7; i >= 0; i-- {
		card = card<<8 | uint64(s[8+i])
	}
	return card, true
}

// hllSetCached stores card as the cached cardinality.
func hllSetCached(s []byte, card uint64) {
	for i := 0; i < 8; i++ {
		s[8+i] = byte(card >> (8 * i))
	}
}
