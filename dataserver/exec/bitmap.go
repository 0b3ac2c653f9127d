package exec

// Redis bitmaps: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
// BITFIELD_RO, as Redis 7.0's bitops.c. A bitmap is a plain string record
// (engines.TypeString): bit 0 is the most significant bit of the first
// byte, and a write past the end grows the string with zero bytes, so
// that GET answers Redis's bytes. Writes keep the record's expiry and
// FLAGS, as SETRANGE does; the engine bumps the Tair version only when
// something was stored.
//
// # Replication
//
// SETBIT and BITFIELD read and write their own key only and are
// deterministic given its value: they propagate as themselves when they
// stored something (a grown string counts, as in Redis), and not at all
// otherwise. A BITFIELD whose every write failed (OVERFLOW FAIL) still
// grows the string, as Redis's does; unlike Redis, which then propagates
// nothing and leaves its replicas without the grown key, the command is
// propagated, so the slave grows it too. BITOP reads other keys: it
// propagates its effect, "SET dest result" or "DEL dest", so that a
// slave whose view of a source differs (an expiry at the edge of its
// clock) still ends equal.

import (
	"errors"
	"math"
	"math/bits"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

func init() {
	Register("setbit", cmdSetBit)
	Register("getbit", cmdGetBit)
	Register("bitcount", cmdBitCount)
	Register("bitpos", cmdBitPos)
	Register("bitop", cmdBitOp)
	Register("bitfield", func(c *Ctx) { bitfield(c, false) })
	Register("bitfield_ro", func(c *Ctx) { bitfield(c, true) })
}

// Redis's error texts of bitops.c.
const (
	errTextBitOffset    = "ERR bit offset is not an integer or out of range"
	errTextBitValue     = "ERR bit is not an integer or out of range"
	errTextBitArg       = "ERR The bit argument must be 1 or 0."
	errTextBitopNot     = "ERR BITOP NOT must be called with a single source key."
	errTextBitfieldType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	errTextOverflowType = "ERR Invalid OVERFLOW type specified"
	errTextBitfieldRO   = "ERR BITFIELD_RO only supports the GET subcommand"
)

// bitOffsetArg is Redis's getBitOffsetFromArgument: a bit offset, at
// least 0 and addressing a byte below proto-max-bulk-len (512 MB). With
// hash (BITFIELD), "#n" stands for n*width. ok false: the reply is
// written.
func bitOffsetArg(c *Ctx, i int, hash bool, width int) (uint64, bool) {
	a := c.Args[i]
	useHash := hash && width > 0 && len(a) > 0 && a[0] == '#'
	if useHash {
		a = a[1:]
	}
	off, ok := ParseInt(a)
	if ok && useHash {
		off *= int64(width) // wraps as Redis's long long does
	}
	if !ok || off < 0 || off>>3 >= protoMaxBulkLen {
		c.Error(errTextBitOffset)
		return 0, false
	}
	return uint64(off), true
}

// bitWrite runs fn on a copy of the string at args[1] grown with zero
// bytes to size bytes at least (a missing key is a new, empty string):
// Redis's lookupStringForBitCommand. fn reports whether it changed a
// byte; the record is stored when fn changed something or the string
// grew, else left alone. The growth is checked against the string limits
// (checkStringSize). It returns whether the record was stored.
func bitWrite(c *Ctx, size uint64, fn func(v []byte) bool) (bool, error) {
	if c.isPkey(c.Key(1)) {
		return false, errs.ErrWrongType
	}
	stored := false
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		stored = false
		if !exists {
			cur = engines.Entry{Type: engines.TypeString}
		} else if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		old := uint64(len(cur.Value))
		grown := size > old || !exists
		if size > old {
			if err := checkStringSize(c, int64(old), int64(size-old)); err != nil {
				return cur, engines.Keep, err
			}
		}
		// A copy: the engine's bytes are not ours to change in place.
		v := make([]byte, max(size, old))
		copy(v, cur.Value)
		if !fn(v) && !grown {
			return cur, engines.Keep, nil
		}
		cur.Value = v
		stored = true
		return cur, engines.Store, nil
	})
	return stored, err
}

// SETBIT key offset 0|1
func cmdSetBit(c *Ctx) {
	off, ok := bitOffsetArg(c, 2, false, 0)
	if !ok {
		return
	}
	on, ok := ParseInt(c.Args[3])
	if !ok || on&^1 != 0 {
		c.Error(errTextBitValue)
		return
	}
	byteIdx, mask := off>>3, byte(1)<<(7-off&7)
	var was bool
	stored, err := bitWrite(c, byteIdx+1, func(v []byte) bool {
		was = v[byteIdx]&mask != 0
		if was == (on == 1) {
			return false
		}
		v[byteIdx] ^= mask
		return true
	})
	replyChanged(c, stored, boolInt(was), err)
}

// GETBIT key offset
func cmdGetBit(c *Ctx) {
	off, ok := bitOffsetArg(c, 2, false, 0)
	if !ok {
		return
	}
	v, _, ok := c.readString(1)
	if !ok {
		return
	}
	c.Int(int64(getBits(v, off, 1)))
}

// bitRangeArgs resolves a BITCOUNT/BITPOS range over a string of n bytes
// as Redis does: negative indexes count from the end, then both are
// clamped to the string; in bit units when isBit. The range is empty when
// start > end.
func bitRange(n, start, end int64, isBit bool) (int64, int64) {
	if isBit {
		n <<= 3
	}
	return clampRange(n, start, end)
}

// bitUnit parses BYTE or BIT at args[i] (isBit); anything else is a
// syntax error (ok false: the reply is written).
func bitUnit(c *Ctx, i int) (isBit, ok bool) { return parseChoice(c, i, "bit", "byte") }

// BITCOUNT key [start end [BYTE|BIT]]
func cmdBitCount(c *Ctx) {
	// Redis 7.0 looks the key up first: a missing key counts 0 whatever
	// the arguments.
	v, found, ok := c.readString(1)
	if !ok {
		return
	}
	if !found {
		c.Int(0)
		return
	}
	var start, end int64
	isBit := false
	switch len(c.Args) {
	case 2:
		start, end = 0, int64(len(v))-1
	case 4, 5:
		if start, end, ok = c.twoIntArgs(2); !ok {
			return
		}
		if start < 0 && end < 0 && start > end {
			c.Int(0)
			return
		}
		if len(c.Args) == 5 {
			if isBit, ok = bitUnit(c, 4); !ok {
				return
			}
		}
		start, end = bitRange(int64(len(v)), start, end, isBit)
	default:
		c.SyntaxErr()
		return
	}
	if start > end {
		c.Int(0)
		return
	}
	if !isBit {
		start, end = start<<3, end<<3|7
	}
	c.Int(countBits(v, uint64(start), uint64(end)))
}

// countBits counts the set bits from bit first to bit last (inclusive,
// both within v).
func countBits(v []byte, first, last uint64) int64 {
	fb, lb := first>>3, last>>3
	headMask := byte(0xff) >> (first & 7)
	tailMask := byte(0xff) << (7 - last&7)
	if fb == lb {
		return int64(bits.OnesCount8(v[fb] & headMask & tailMask))
	}
	n := bits.OnesCount8(v[fb]&headMask) + bits.OnesCount8(v[lb]&tailMask)
	mid := v[fb+1 : lb]
	for len(mid) >= 8 {
		w := uint64(mid[0]) | uint64(mid[1])<<8 | uint64(mid[2])<<16 | uint64(mid[3])<<24 |
			uint64(mid[4])<<32 | uint64(mid[5])<<40 | uint64(mid[6])<<48 | uint64(mid[7])<<56
		n += bits.OnesCount64(w)
		mid = mid[8:]
	}
	for _, b := range mid {
		n += bits.OnesCount8(b)
	}
	return int64(n)
}

// BITPOS key 0|1 [start [end [BYTE|BIT]]]
func cmdBitPos(c *Ctx) {
	bit, ok := c.IntArg(2)
	if !ok {
		return
	}
	if bit != 0 && bit != 1 {
		c.Error(errTextBitArg)
		return
	}
	// Redis 7.0 looks the key up before the range: a missing key is an
	// endless run of zeros whatever the range.
	v, found, ok := c.readString(1)
	if !ok {
		return
	}
	if !found {
		c.Int(-bit)
		return
	}
	n := int64(len(v))
	start, end := int64(0), n-1
	isBit, endGiven := false, false
	switch len(c.Args) {
	case 3:
	case 4, 5, 6:
		if start, ok = c.IntArg(3); !ok {
			return
		}
		if len(c.Args) == 6 {
			if isBit, ok = bitUnit(c, 5); !ok {
				return
			}
		}
		if len(c.Args) >= 5 {
			if end, ok = c.IntArg(4); !ok {
				return
			}
			endGiven = true
		}
		start, end = bitRange(n, start, end, isBit)
	default:
		c.SyntaxErr()
		return
	}
	if start > end {
		c.Int(-1)
		return
	}
	if !isBit {
		start, end = start<<3, end<<3|7
	}
	pos := findBit(v, uint64(start), uint64(end), bit == 1)
	switch {
	case pos >= 0:
		c.Int(pos)
	case bit == 0 && !endGiven:
		// No clear bit in the string: the first one past it (the
		// string reads as padded with zeros on the right).
		c.Int(end + 1)
	default:
		c.Int(-1)
	}
}

// findBit returns the position of the first bit equal to one (or zero)
// from bit first to bit last (inclusive, within v), -1 when there is none.
func findBit(v []byte, first, last uint64, one bool) int64 {
	skip := byte(0xff) // a byte with no bit sought
	if one {
		skip = 0
	}
	for p := first; p <= last; {
		if p&7 == 0 && p+7 <= last && v[p>>3] == skip {
			p += 8
			continue
		}
		if (v[p>>3]&(0x80>>(p&7)) != 0) == one {
			return int64(p)
		}
		p++
	}
	return -1
}

// BITOP AND|OR|XOR|NOT destkey srckey [srckey ...]
func cmdBitOp(c *Ctx) {
	op := c.Args[1]
	var kind byte
	switch {
	case eqFold(op, "and"):
		kind = '&'
	case eqFold(op, "or"):
		kind = '|'
	case eqFold(op, "xor"):
		kind = '^'
	case eqFold(op, "not"):
		kind = '~'
	default:
		c.SyntaxErr()
		return
	}
	if kind == '~' && len(c.Args) != 4 {
		c.Error(errTextBitopNot)
		return
	}
	if !c.SameBucket(dsRange(2, len(c.Args))...) {
		return
	}
	srcs := make([][]byte, 0, len(c.Args)-3)
	maxLen := 0
	for i := 3; i < len(c.Args); i++ {
		v, _, ok := c.readString(i)
		if !ok {
			return
		}
		srcs = append(srcs, v)
		maxLen = max(maxLen, len(v))
	}
	var res []byte
	if maxLen > 0 {
		res = bitOp(kind, srcs, maxLen)
	}
	changed := false
	_, err := c.UpdateVisible(2, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		changed = maxLen > 0 || exists
		switch {
		case maxLen > 0:
			return engines.Entry{Type: engines.TypeString, Value: res}, engines.Store, nil
		case exists:
			return cur, engines.Delete, nil
		}
		return cur, engines.Keep, nil
	})
	if err == nil && c.Eng.Persistent() {
		// A prefix-stored hash under destkey: replaced, or deleted with
		// an empty result, as Redis's setKey or dbDelete would.
		var m int
		if m, err = c.Eng.PrefixRemoveAll(c.Key(2)); m > 0 {
			changed = true
		}
		if errors.Is(err, errs.ErrNotFound) {
			err = nil
		}
	}
	if err != nil {
		c.Fail(err)
		return
	}
	switch {
	case maxLen > 0:
		c.Propagate(argSet, c.Args[2], res)
	case changed:
		c.Propagate(argDel, c.Args[2])
	default:
		c.NoPropagate()
	}
	c.Int(int64(maxLen))
}

// bitOp combines srcs byte by byte into maxLen bytes, a shorter source
// reading as zeros past its end (kind '~': the one source, inverted).
func bitOp(kind byte, srcs [][]byte, maxLen int) []byte {
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	switch kind {
	case '~':
		for j := range res {
			res[j] = ^res[j]
		}
	case '&':
		for _, s := range srcs[1:] {
			for j := range res {
				if j < len(s) {
					res[j] &= s[j]
				} else {
					res[j] = 0
				}
			}
		}
	case '|':
		for _, s := range srcs[1:] {
			for j := range s {
				res[j] |= s[j]
			}
		}
	case '^':
		for _, s := range srcs[1:] {
			for j := range s {
				res[j] ^= s[j]
			}
		}
	}
	return res
}

// ---- BITFIELD ----

// Overflow behaviours of BITFIELD's SET and INCRBY (BFOVERFLOW_*).
const (
	bfWrap = iota
	bfSat
	bfFail
)

// bfOp is one GET, SET or INCRBY of a BITFIELD.
type bfOp struct {
	offset   uint64
	arg      int64 // SET's value, INCRBY's increment
	write    bool
	incr     bool
	overflow int
	width    uint
	signed   bool
}

// bfResult is one BITFIELD reply element: a value or, for a write that
// overflowed under OVERFLOW FAIL, a null.
type bfResult struct {
	v    int64
	null bool
}

// bitfieldType parses a BITFIELD type, i1..i64 or u1..u63 (the width is
// read as Redis does, up to the first NUL byte).
func bitfieldType(c *Ctx, i int) (signed bool, width uint, ok bool) {
	a := c.Args[i]
	if len(a) == 0 || (a[0] != 'i' && a[0] != 'u') {
		c.Error(errTextBitfieldType)
		return false, 0, false
	}
	signed = a[0] == 'i'
	n, ok := ParseInt([]byte(cString(a[1:])))
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		c.Error(errTextBitfieldType)
		return false, 0, false
	}
	return signed, uint(n), true
}

// parseBitfield parses BITFIELD's subcommands from args[2:] in Redis's
// order of errors. ok false: the reply is written.
func parseBitfield(c *Ctx) (ops []bfOp, maxBit uint64, writes, ok bool) {
	overflow := bfWrap
	for j := 2; j < len(c.Args); j++ {
		rem := len(c.Args) - j - 1
		a := c.Args[j]
		var op bfOp
		switch {
		case eqFold(a, "get") && rem >= 2:
		case eqFold(a, "set") && rem >= 3:
			op.write = true
		case eqFold(a, "incrby") && rem >= 3:
			op.write, op.incr = true, true
		case eqFold(a, "overflow") && rem >= 1:
			j++
			switch t := c.Args[j]; {
			case eqFold(t, "wrap"):
				overflow = bfWrap
			case eqFold(t, "sat"):
				overflow = bfSat
			case eqFold(t, "fail"):
				overflow = bfFail
			default:
				c.Error(errTextOverflowType)
				return nil, 0, false, false
			}
			continue
		default:
			c.SyntaxErr()
			return nil, 0, false, false
		}
		if op.signed, op.width, ok = bitfieldType(c, j+1); !ok {
			return nil, 0, false, false
		}
		if op.offset, ok = bitOffsetArg(c, j+2, true, int(op.width)); !ok {
			return nil, 0, false, false
		}
		if op.write {
			writes = true
			maxBit = max(maxBit, op.offset+uint64(op.width)-1)
			if op.arg, ok = c.IntArg(j + 3); !ok {
				return nil, 0, false, false
			}
			j++
		}
		op.overflow = overflow
		ops = append(ops, op)
		j += 2
	}
	return ops, maxBit, writes, true
}

// BITFIELD key [GET type offset] [SET type offset value]
// [INCRBY type offset increment] [OVERFLOW WRAP|SAT|FAIL] ...
// BITFIELD_RO key [GET type offset] ...
func bitfield(c *Ctx, readOnly bool) {
	ops, maxBit, writes, ok := parseBitfield(c)
	if !ok {
		return
	}
	if !writes {
		c.NoPropagate()
		v, _, ok := c.readString(1)
		if !ok {
			return
		}
		c.Array(len(ops))
		for _, op := range ops {
			c.Int(bfGet(v, op))
		}
		return
	}
	if readOnly {
		c.Error(errTextBitfieldRO)
		return
	}
	res := make([]bfResult, len(ops))
	stored, err := bitWrite(c, maxBit>>3+1, func(v []byte) bool {
		changed := false
		for i, op := range ops {
			if !op.write {
				res[i] = bfResult{v: bfGet(v, op)}
				continue
			}
			r, old, next := bfApply(v, op)
			res[i] = r
			if !r.null {
				setBits(v, op.offset, op.width, next)
				changed = changed || old != next
			}
		}
		return changed
	})
	if !writeDone(c, stored, err) {
		return
	}
	c.Array(len(res))
	for _, r := range res {
		if r.null {
			c.Null()
		} else {
			c.Int(r.v)
		}
	}
}

// bfGet reads op's field from v (zeros past its end), sign-extended when
// signed.
func bfGet(v []byte, op bfOp) int64 {
	u := getBits(v, op.offset, op.width)
	if op.signed {
		return signExtend(u, op.width)
	}
	return int64(u)
}

// bfApply computes op (SET or INCRBY) on v: the reply element, and the
// field's old and new bits (new is meaningless when the reply is null).
func bfApply(v []byte, op bfOp) (r bfResult, old, next uint64) {
	old = getBits(v, op.offset, op.width)
	var overflow bool
	if op.signed {
		oldVal := signExtend(old, op.width)
		var newVal int64
		if op.incr {
			var wrapped int64
			overflow, wrapped = signedOverflow(oldVal, op.arg, op.width, op.overflow)
			newVal = oldVal + op.arg
			if overflow {
				newVal = wrapped
			}
			r.v = newVal
		} else {
			var wrapped int64
			newVal = op.arg
			if overflow, wrapped = signedOverflow(newVal, 0, op.width, op.overflow); overflow {
				newVal = wrapped
			}
			r.v = oldVal
		}
		next = uint64(newVal)
	} else {
		var newVal, wrapped uint64
		if op.incr {
			newVal = old + uint64(op.arg)
			if overflow, wrapped = unsignedOverflow(old, op.arg, op.width, op.overflow); overflow {
				newVal = wrapped
			}
			r.v = int64(newVal)
		} else {
			newVal = uint64(op.arg)
			if overflow, wrapped = unsignedOverflow(newVal, 0, op.width, op.overflow); overflow {
				newVal = wrapped
			}
			r.v = int64(old)
		}
		next = newVal
	}
	if overflow && op.overflow == bfFail {
		return bfResult{null: true}, old, old
	}
	if op.width < 64 {
		next &= 1<<op.width - 1
	}
	return r, old, next
}

// unsignedOverflow is Redis's checkUnsignedBitfieldOverflow: whether
// value+incr leaves width bits, and then the value to store (wrapped or
// saturated; unused for FAIL).
func unsignedOverflow(value uint64, incr int64, width uint, mode int) (bool, uint64) {
	maxV := uint64(math.MaxUint64)
	if width < 64 {
		maxV = 1<<width - 1
	}
	maxIncr := int64(maxV - value)
	minIncr := int64(-value)
	var limit uint64
	switch {
	case value > maxV || (incr > 0 && incr > maxIncr):
		limit = maxV
	case incr < 0 && incr < minIncr:
		limit = 0
	default:
		return false, 0
	}
	if mode == bfWrap {
		limit = value + uint64(incr)
		if width < 64 {
			limit &= 1<<width - 1
		}
	}
	return true, limit
}

// signedOverflow is Redis's checkSignedBitfieldOverflow (see
// unsignedOverflow).
func signedOverflow(value, incr int64, width uint, mode int) (bool, int64) {
	maxV := int64(math.MaxInt64)
	if width < 64 {
		maxV = 1<<(width-1) - 1
	}
	minV := -maxV - 1
	// These may wrap; they are used only where they cannot (as in Redis).
	maxIncr := int64(uint64(maxV) - uint64(value))
	minIncr := minV - value
	var limit int64
	switch {
	case value > maxV || (width != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		limit = maxV
	case value < minV || (width != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		limit = minV
	default:
		return false, 0
	}
	if mode == bfWrap {
		u := uint64(value) + uint64(incr)
		if width < 64 {
			limit = signExtend(u&(1<<width-1), width)
		} else {
			limit = int64(u)
		}
	}
	return true, limit
}

// signExtend reads the low width bits of u as a two's complement number.
func signExtend(u uint64, width uint) int64 {
	if width < 64 && u&(1<<(width-1)) != 0 {
		u |= math.MaxUint64 << width
	}
	return int64(u)
}

// getBits reads width bits (at most 64) from bit offset on, the most
// significant first; bits past the end of v read as zeros.
func getBits(v []byte, offset uint64, width uint) uint64 {
	var u uint64
	for j := uint64(0); j < uint64(width); j++ {
		p := offset + j
		u <<= 1
		if p>>3 < uint64(len(v)) {
			u |= uint64(v[p>>3]>>(7-p&7)) & 1
		}
	}
	return u
}

// setBits writes the low width bits of u from bit offset on (within v),
// the most significant first.
func setBits(v []byte, offset uint64, width uint, u uint64) {
	for j := uint64(0); j < uint64(width); j++ {
		p := offset + j
		mask := byte(0x80) >> (p & 7)
		if u>>(uint64(width)-1-j)&1 != 0 {
			v[p>>3] |= mask
		} else {
			v[p>>3] &^= mask
		}
	}
}
