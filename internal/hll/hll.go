// Package hll is Redis's HyperLogLog representation (hyperloglog.c of
// Redis 7.0), byte for byte, so that a value GET from redis-server and SET
// here works with the PF* commands, and the other way round. The
// dataserver's PF* commands (dataserver/exec) and the proxy's PFCOUNT over
// keys of several buckets both use it.
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
package hll

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Redis's error texts of hyperloglog.c for a value that is not a
// HyperLogLog, and for a corrupted one.
const (
	ErrTextNotHLL  = "WRONGTYPE Key is not a valid HyperLogLog string value."
	ErrTextInvalid = "INVALIDOBJ Corrupted HLL object detected"
)

const (
	P           = 14
	Q           = 64 - P
	Registers   = 1 << P
	PMask       = Registers - 1
	Bits        = 6
	RegisterMax = 1<<Bits - 1
	HdrSize     = 16
	DenseSize   = HdrSize + (Registers*Bits+7)/8
	Dense       = 0
	Sparse      = 1
	MaxEncoding = 1

	// SparseMaxBytes is Redis's hll-sparse-max-bytes default: a
	// sparse value that would grow past it becomes dense.
	SparseMaxBytes = 3000

	SparseXZeroBit     = 0x40
	SparseValBit       = 0x80
	SparseValMaxValue  = 32
	SparseValMaxLen    = 4
	SparseZeroMaxLen   = 64
	SparseXZeroMaxLen  = 16384
	AlphaInf           = 0.721347520444481703680 // 0.5/ln(2)
	Seed               = 0xadc83b19
	CardStaleByte      = HdrSize - 1 // card[7]
	CardStaleBit       = 1 << 7
	EncodingByte       = 4
	SparseOpcodesStart = HdrSize
)

// ---- sparse opcodes ----

func IsZero(b byte) bool  { return b&0xc0 == 0 }
func IsXZero(b byte) bool { return b&0xc0 == SparseXZeroBit }
func IsVal(b byte) bool   { return b&SparseValBit != 0 }
func ZeroLen(b byte) int  { return int(b&0x3f) + 1 }
func XZeroLen(b0, b1 byte) int {
	return (int(b0&0x3f)<<8 | int(b1)) + 1
}
func ValValue(b byte) int { return int(b>>2&0x1f) + 1 }
func ValLen(b byte) int   { return int(b&0x3) + 1 }

func ValOp(val, n int) byte { return byte((val-1)<<2|(n-1)) | SparseValBit }
func ZeroOp(n int) byte     { return byte(n - 1) }
func XZeroOp(n int) (byte, byte) {
	l := n - 1
	return byte(l>>8) | SparseXZeroBit, byte(l)
}

// At is s[i], or the 0 of the sds terminator past the end.
func At(s []byte, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// ---- hashing ----

// MurmurHash64A is Redis's MurmurHash64A (MurmurHash2, 64-bit, words
// read little endian).
func MurmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	n := len(key) &^ 7
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(key[i:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if tail := key[n:]; len(tail) > 0 {
		for i, c := range tail { // the last 1-7 bytes, little endian
			h ^= uint64(c) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// PatLen is Redis's PatLen: the register of ele and the length of
// the 000..1 pattern of the rest of its hash (1 to Q+1).
func PatLen(ele []byte) (index int, count uint8) {
	hash := MurmurHash64A(ele, Seed)
	index = int(hash & PMask)
	hash >>= P
	hash |= 1 << Q // the loop's end: count <= Q+1
	return index, uint8(bits.TrailingZeros64(hash) + 1)
}

// ---- dense ----

// DenseGet is register i of the dense registers regs.
func DenseGet(regs []byte, i int) uint8 {
	b := i * Bits / 8
	fb := uint(i * Bits & 7)
	b0, b1 := uint(regs[b]), uint(At(regs, b+1))
	return uint8((b0>>fb | b1<<(8-fb)) & RegisterMax)
}

// DenseSetReg sets register i of regs to v.
func DenseSetReg(regs []byte, i int, v uint8) {
	b := i * Bits / 8
	fb := uint(i * Bits & 7)
	fb8 := 8 - fb
	val := uint(v)
	regs[b] &^= byte(RegisterMax << fb)
	regs[b] |= byte(val << fb)
	if b+1 < len(regs) { // the last register ends in its own byte
		regs[b+1] &^= byte(RegisterMax >> fb8)
		regs[b+1] |= byte(val >> fb8)
	}
}

// DenseSet raises register i of regs to count; it reports whether it
// changed.
func DenseSet(regs []byte, i int, count uint8) bool {
	if count > DenseGet(regs, i) {
		DenseSetReg(regs, i, count)
		return true
	}
	return false
}

// DenseHisto adds the dense registers' values to histo.
func DenseHisto(regs []byte, histo *[64]int) {
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

// New is an empty HyperLogLog as Redis creates it: sparse, one XZERO
// of 16384 registers, a cached cardinality of 0.
func New() []byte {
	s := make([]byte, HdrSize+2, 64)
	copy(s, "HYLL")
	s[EncodingByte] = Sparse
	s[HdrSize], s[HdrSize+1] = XZeroOp(Registers)
	return s
}

// SparseToDense converts s to the dense encoding (s itself when it is
// dense): the header is kept but for the encoding. ok is false when the
// sparse code does not cover exactly the 16384 registers.
func SparseToDense(s []byte) (d []byte, ok bool) {
	if s[EncodingByte] == Dense {
		return s, true
	}
	d = make([]byte, DenseSize)
	copy(d, s[:HdrSize])
	d[EncodingByte] = Dense
	regs := d[HdrSize:]
	idx := 0
	for p := HdrSize; p < len(s); {
		op := s[p]
		switch {
		case IsZero(op):
			idx += ZeroLen(op)
			p++
		case IsXZero(op):
			idx += XZeroLen(op, At(s, p+1))
			p += 2
		default:
			n, v := ValLen(op), ValValue(op)
			if idx+n > Registers {
				return nil, false
			}
			for ; n > 0; n-- {
				DenseSetReg(regs, idx, uint8(v))
				idx++
			}
			p++
		}
	}
	if idx != Registers {
		return nil, false
	}
	return d, true
}

// SparseSet is Redis's SparseSet: it raises register index of the
// sparse s to count, splitting the opcode that covers it and merging the
// VAL opcodes around, or converts s to dense first when count does not
// fit a VAL opcode or s would grow past SparseMaxBytes. It returns the
// new value (s may be changed in place) and 1 when the register changed,
// 0 when it did not, -1 when s is corrupted.
func SparseSet(s []byte, index int, count uint8) ([]byte, int) {
	if count > SparseValMaxValue {
		return Promote(s, index, count)
	}
	// Step 1: the opcode covering the register.
	end := len(s)
	p, prev := HdrSize, -1
	first, span := 0, 0
	for p < end {
		op, oplen := s[p], 1
		switch {
		case IsZero(op):
			span = ZeroLen(op)
		case IsVal(op):
			span = ValLen(op)
		default:
			span = XZeroLen(op, At(s, p+1))
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
	if IsXZero(op) {
		next = p + 2
	}
	hasNext := next < end
	isZero, isXZero, isVal := IsZero(op), IsXZero(op), IsVal(op)
	var runlen int
	switch {
	case isZero:
		runlen = ZeroLen(op)
	case isXZero:
		runlen = XZeroLen(op, At(s, p+1))
	default:
		runlen = ValLen(op)
	}

	// Step 2: the trivial updates in place, else the opcode's
	// replacement (at most XZERO-VAL-XZERO, 5 bytes).
	switch {
	case isVal && ValValue(op) >= int(count):
		return s, 0
	case isVal && runlen == 1, isZero && runlen == 1:
		s[p] = ValOp(int(count), 1)
	default:
		var seq [5]byte
		n := 0
		last := first + span - 1
		zeros := func(l int) {
			if l > SparseZeroMaxLen {
				seq[n], seq[n+1] = XZeroOp(l)
				n += 2
			} else {
				seq[n] = ZeroOp(l)
				n++
			}
		}
		if isZero || isXZero {
			if index != first {
				zeros(index - first)
			}
			seq[n] = ValOp(int(count), 1)
			n++
			if index != last {
				zeros(last - index)
			}
		} else {
			cur := ValValue(op)
			if index != first {
				seq[n] = ValOp(cur, index-first)
				n++
			}
			seq[n] = ValOp(int(count), 1)
			n++
			if index != last {
				seq[n] = ValOp(cur, last-index)
				n++
			}
		}
		// Step 3: the new sequence in place of the opcode.
		oldlen := 1
		if isXZero {
			oldlen = 2
		}
		delta := n - oldlen
		if delta > 0 && len(s)+delta > SparseMaxBytes {
			return Promote(s, index, count)
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
		p = HdrSize
	}
	for scan := 5; p < end && scan > 0; {
		scan--
		op := s[p]
		if IsXZero(op) {
			p += 2
			continue
		}
		if IsZero(op) {
			p++
			continue
		}
		if p+1 < end && IsVal(s[p+1]) {
			v1, v2 := ValValue(op), ValValue(s[p+1])
			if v1 == v2 {
				if l := ValLen(op) + ValLen(s[p+1]); l <= SparseValMaxLen {
					s[p+1] = ValOp(v1, l)
					copy(s[p:], s[p+1:end])
					end--
					s = s[:end]
					continue
				}
			}
		}
		p++
	}
	Invalidate(s)
	return s, 1
}

// Promote converts s to dense and sets the register there.
func Promote(s []byte, index int, count uint8) ([]byte, int) {
	d, ok := SparseToDense(s)
	if !ok {
		return s, -1
	}
	// Redis asserts the register changes: the sparse code could not
	// hold the new value, which is above the old.
	DenseSet(d[HdrSize:], index, count)
	return d, 1
}

// SparseHisto adds the sparse code's register values to histo; ok is
// false when it does not cover exactly the 16384 registers.
func SparseHisto(s []byte, histo *[64]int) bool {
	idx := 0
	for p := HdrSize; p < len(s); {
		op := s[p]
		switch {
		case IsZero(op):
			n := ZeroLen(op)
			idx += n
			histo[0] += n
			p++
		case IsXZero(op):
			n := XZeroLen(op, At(s, p+1))
			idx += n
			histo[0] += n
			p += 2
		default:
			n := ValLen(op)
			idx += n
			histo[ValValue(op)] += n
			p++
		}
	}
	return idx == Registers
}

// ---- the commands' operations ----

// Add adds ele to the HyperLogLog s (valid header, see Valid): the
// new value and 1 when a register changed, 0 when none did, -1 when s is
// corrupted.
func Add(s []byte, ele []byte) ([]byte, int) {
	index, count := PatLen(ele)
	switch s[EncodingByte] {
	case Dense:
		if DenseSet(s[HdrSize:], index, count) {
			return s, 1
		}
		return s, 0
	case Sparse:
		return SparseSet(s, index, count)
	}
	return s, -1
}

// MergeInto raises max[i] to the registers of s; false when s is a
// corrupted sparse value.
func MergeInto(max *[Registers]uint8, s []byte) bool {
	if s[EncodingByte] == Dense {
		regs := s[HdrSize:]
		for i := range max {
			if v := DenseGet(regs, i); v > max[i] {
				max[i] = v
			}
		}
		return true
	}
	i := 0
	for p := HdrSize; p < len(s); {
		op := s[p]
		switch {
		case IsZero(op):
			i += ZeroLen(op)
			p++
		case IsXZero(op):
			i += XZeroLen(op, At(s, p+1))
			p += 2
		default:
			n, v := ValLen(op), uint8(ValValue(op))
			if i+n > Registers {
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
	return i == Registers
}

// CountOf is the cardinality of the HyperLogLog s; ok is false when s
// is a corrupted sparse value.
func CountOf(s []byte) (uint64, bool) {
	var histo [64]int
	if s[EncodingByte] == Dense {
		DenseHisto(s[HdrSize:], &histo)
	} else if !SparseHisto(s, &histo) {
		return 0, false
	}
	return Estimate(&histo), true
}

// CountRegisters is the cardinality of registers held one per byte
// (PFCOUNT of several keys).
func CountRegisters(max *[Registers]uint8) uint64 {
	var histo [64]int
	for _, v := range max {
		histo[v&63]++
	}
	return Estimate(&histo)
}

// Estimate is Redis 7's hllCount over the registers' histogram: Otmar
// Ertl's estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", arXiv:1702.01284). The products are converted
// explicitly so that Go never fuses them with the sums (an FMA would
// round differently from C's separate operations).
func Estimate(histo *[64]int) uint64 {
	m := float64(Registers)
	z := float64(m * Tau((m-float64(histo[Q+1]))/m))
	for j := Q; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += float64(m * Sigma(float64(histo[0])/m))
	alpha := float64(AlphaInf)
	e := math.Round(float64(float64(alpha*m)*m) / z) // llroundl: half away from zero
	if !(e < 1<<63) {
		// An estimate past int64 (+Inf when z is 0: every register
		// above 51, which only a crafted value has): llroundl's invalid
		// result on x86-64, LLONG_MIN, which Redis replies as is.
		return 1 << 63
	}
	return uint64(e)
}

// Sigma is Ertl's sigma, as Redis computes it.
func Sigma(x float64) float64 {
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

// Tau is Ertl's tau, as Redis computes it (pow(1-x, 2) is the
// correctly rounded square, as glibc's pow gives it).
func Tau(x float64) float64 {
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

// Valid is Redis's isHLLObjectOrReply on a string value: the header's
// magic and encoding, and the exact size of a dense value.
func Valid(v []byte) bool {
	return len(v) >= HdrSize && string(v[:4]) == "HYLL" && v[EncodingByte] <= MaxEncoding &&
		(v[EncodingByte] != Dense || len(v) == DenseSize)
}

// Invalidate marks the cached cardinality stale.
func Invalidate(s []byte) { s[CardStaleByte] |= CardStaleBit }

// Cached is the cached cardinality, ok when it is not stale.
func Cached(s []byte) (uint64, bool) {
	if s[CardStaleByte]&CardStaleBit != 0 {
		return 0, false
	}
	var card uint64
	for i := 7; i >= 0; i-- {
		card = card<<8 | uint64(s[8+i])
	}
	return card, true
}

// SetCached stores card as the cached cardinality.
func SetCached(s []byte, card uint64) {
	for i := 0; i < 8; i++ {
		s[8+i] = byte(card >> (8 * i))
	}
}
