package rdbcodec

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// errCorrupt is any malformed input; Decode reports it as ErrFormat.
var errCorrupt = errors.New("rdbcodec: corrupt payload")

// lzfMaxRatio is the most an LZF stream can expand: a 3-byte back
// reference copies at most 264 bytes.
const lzfMaxRatio = 88

type decoder struct {
	b      []byte
	off    int
	lim    Limits
	budget int // LZF output still allowed
}

func (d *decoder) left() int { return len(d.b) - d.off }

func (d *decoder) byte1() (byte, error) {
	if d.off >= len(d.b) {
		return 0, errCorrupt
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

// take returns the next n bytes (a slice of the input).
func (d *decoder) take(n uint64) ([]byte, error) {
	if n > uint64(d.left()) {
		return nil, errCorrupt
	}
	p := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return p, nil
}

// Length encodings (rdbLoadLenByRef).
const (
	len6bit  = 0
	len14bit = 1
	len32bit = 0x80
	len64bit = 0x81
	lenEnc   = 3
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// length reads an RDB length; encoded is true for the special string
// encodings, n then being the encoding type.
func (d *decoder) length() (n uint64, encoded bool, err error) {
	c, err := d.byte1()
	if err != nil {
		return 0, false, err
	}
	switch c >> 6 {
	case len6bit:
		return uint64(c & 0x3f), false, nil
	case len14bit:
		c2, err := d.byte1()
		return uint64(c&0x3f)<<8 | uint64(c2), false, err
	case lenEnc:
		return uint64(c & 0x3f), true, nil
	}
	switch c {
	case len32bit:
		p, err := d.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case len64bit:
		p, err := d.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, errCorrupt
}

// count reads a plain length (an element count).
func (d *decoder) count() (uint64, error) {
	n, enc, err := d.length()
	if err == nil && enc {
		err = errCorrupt
	}
	return n, err
}

// blob reads an RDB string (rdbGenericLoadStringObject): plain, integer
// or LZF encoded. It may point into the input.
func (d *decoder) blob(maxLen int) ([]byte, error) {
	n, enc, err := d.length()
	if err != nil {
		return nil, err
	}
	if !enc {
		if n > uint64(d.left()) {
			return nil, errCorrupt
		}
		if n > uint64(maxLen) {
			return nil, ErrTooLarge
		}
		return d.take(n)
	}
	switch n {
	case encInt8:
		p, err := d.take(1)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int8(p[0])), 10), nil
	case encInt16:
		p, err := d.take(2)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(p))), 10), nil
	case encInt32:
		p, err := d.take(4)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(p))), 10), nil
	case encLZF:
		clen, err := d.count()
		if err != nil {
			return nil, err
		}
		ulen, err := d.count()
		if err != nil {
			return nil, err
		}
		if clen == 0 || ulen == 0 || clen > uint64(d.left()) || ulen > clen*lzfMaxRatio {
			return nil, errCorrupt
		}
		if ulen > uint64(maxLen) || ulen > uint64(d.budget) {
			return nil, ErrTooLarge
		}
		d.budget -= int(ulen)
		in, _ := d.take(clen)
		out := make([]byte, ulen)
		if !lzfDecompress(in, out) {
			return nil, errCorrupt
		}
		return out, nil
	}
	return nil, errCorrupt
}

// str reads a string that becomes a value or an element.
func (d *decoder) str() ([]byte, error) { return d.blob(d.lim.MaxString) }

// container reads the string holding a listpack, ziplist, intset or
// zipmap (bounded by the input and the LZF budget only).
func (d *decoder) container() ([]byte, error) {
	b, err := d.blob(math.MaxInt)
	if err == nil && len(b) == 0 {
		err = errCorrupt
	}
	return b, err
}

// elem checks an element taken out of a container.
func (d *decoder) elem(b []byte) ([]byte, error) {
	if len(b) > d.lim.MaxString {
		return nil, ErrTooLarge
	}
	return b, nil
}

// elems reads a value of kind made of n strings in a row (a list's or a
// set's elements, a hash's fields and values in turn).
func (d *decoder) elems(kind Kind, n uint64) (Value, error) {
	v := Value{Kind: kind, Elems: make([][]byte, 0, d.capFor(n))}
	for ; n > 0; n-- {
		s, err := d.str()
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, s)
	}
	return v, v.check()
}

// capFor is the capacity to reserve for n elements: never more than the
// input could hold.
func (d *decoder) capFor(n uint64) int {
	return int(min(n, uint64(d.left())+1))
}

func (d *decoder) object() (Value, error) {
	t, err := d.byte1()
	if err != nil {
		return Value{}, err
	}
	switch t {
	case typeString:
		s, err := d.str()
		return Value{Kind: String, Str: s}, err
	case typeList, typeSet:
		n, err := d.count()
		if err != nil {
			return Value{}, err
		}
		if t == typeSet {
			return d.elems(Set, n)
		}
		return d.elems(List, n)
	case typeZSet, typeZSet2:
		n, err := d.count()
		if err != nil {
			return Value{}, err
		}
		v := Value{Kind: ZSet, Elems: make([][]byte, 0, d.capFor(n)), Scores: make([]float64, 0, d.capFor(n))}
		for ; n > 0; n-- {
			s, err := d.str()
			if err != nil {
				return Value{}, err
			}
			var f float64
			if t == typeZSet2 {
				p, err := d.take(8)
				if err != nil {
					return Value{}, err
				}
				f = math.Float64frombits(binary.LittleEndian.Uint64(p))
			} else if f, err = d.textDouble(); err != nil {
				return Value{}, err
			}
			v.Elems = append(v.Elems, s)
			v.Scores = append(v.Scores, f)
		}
		return v, v.check()
	case typeHash:
		n, err := d.count()
		if err != nil {
			return Value{}, err
		}
		if n > uint64(d.left()) {
			return Value{}, errCorrupt
		}
		return d.elems(Hash, 2*n) // field, value, field ...
	case typeListQuicklist, typeListQuicklist2:
		n, err := d.count()
		if err != nil {
			return Value{}, err
		}
		v := Value{Kind: List}
		for ; n > 0; n-- {
			container := uint64(quicklistNodePacked)
			if t == typeListQuicklist2 {
				if container, err = d.count(); err != nil {
					return Value{}, err
				}
				if container != quicklistNodePlain && container != quicklistNodePacked {
					return Value{}, errCorrupt
				}
			}
			b, err := d.container()
			if err != nil {
				return Value{}, err
			}
			switch {
			case container == quicklistNodePlain:
				b, err = d.elem(b)
				v.Elems = append(v.Elems, b)
			case t == typeListQuicklist2:
				v.Elems, err = d.listpack(b, v.Elems)
			default:
				v.Elems, err = d.ziplist(b, v.Elems)
			}
			if err != nil {
				return Value{}, err
			}
		}
		return v, v.check()
	case typeHashZipmap, typeListZiplist, typeSetIntset, typeZSetZiplist, typeHashZiplist,
		typeHashListpack, typeZSetListpack, typeSetListpack:
		b, err := d.container()
		if err != nil {
			return Value{}, err
		}
		var v Value
		switch t {
		case typeHashZipmap:
			v.Kind = Hash
			v.Elems, err = d.zipmap(b)
		case typeListZiplist:
			v.Kind = List
			v.Elems, err = d.ziplist(b, nil)
		case typeSetIntset:
			v.Kind = Set
			v.Elems, err = intset(b)
		case typeSetListpack:
			v.Kind = Set
			v.Elems, err = d.listpack(b, nil)
		case typeZSetZiplist, typeZSetListpack:
			v.Kind = ZSet
			if t == typeZSetZiplist {
				v.Elems, err = d.ziplist(b, nil)
			} else {
				v.Elems, err = d.listpack(b, nil)
			}
			if err == nil {
				v, err = pairsToZSet(v.Elems)
			}
		case typeHashZiplist, typeHashListpack:
			v.Kind = Hash
			if t == typeHashZiplist {
				v.Elems, err = d.ziplist(b, nil)
			} else {
				v.Elems, err = d.listpack(b, nil)
			}
		}
		if err != nil {
			return Value{}, err
		}
		return v, v.check()
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return d.stream(t)
	}
	return Value{}, errCorrupt // modules, functions, unknown types
}

// textDouble is rdbLoadDoubleValue: a length byte (253 nan, 254 +inf,
// 255 -inf) and that many bytes of text.
func (d *decoder) textDouble() (float64, error) {
	n, err := d.byte1()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	p, err := d.take(uint64(n))
	if err != nil {
		return 0, err
	}
	return parseScore(p)
}

// parseScore parses a score's text (strtod); NaN is refused by check.
func parseScore(p []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(p), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return f, nil // strtod gives ±HUGE_VAL or 0
		}
		return 0, errCorrupt
	}
	return f, nil
}

// pairsToZSet turns member, score, member, score ... into a ZSet.
func pairsToZSet(pairs [][]byte) (Value, error) {
	if len(pairs)%2 != 0 {
		return Value{}, errCorrupt
	}
	v := Value{Kind: ZSet, Elems: make([][]byte, 0, len(pairs)/2), Scores: make([]float64, 0, len(pairs)/2)}
	for i := 0; i < len(pairs); i += 2 {
		f, err := parseScore(pairs[i+1])
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, pairs[i])
		v.Scores = append(v.Scores, f)
	}
	return v, nil
}

// check refuses what Redis refuses, or could not hold: an empty value,
// duplicate set members, zset members or hash fields, a NaN score, a
// hash with a field without a value.
func (v *Value) check() error {
	switch v.Kind {
	case String:
		return nil
	case Hash:
		if len(v.Elems)%2 != 0 {
			return errCorrupt
		}
	}
	if len(v.Elems) == 0 {
		return errCorrupt
	}
	if v.Kind == List {
		return nil
	}
	step := 1
	if v.Kind == Hash {
		step = 2
	}
	seen := make(map[string]struct{}, len(v.Elems)/step)
	for i := 0; i < len(v.Elems); i += step {
		if _, dup := seen[string(v.Elems[i])]; dup {
			return errCorrupt
		}
		seen[string(v.Elems[i])] = struct{}{}
	}
	for _, f := range v.Scores {
		if math.IsNaN(f) {
			return errCorrupt
		}
	}
	return nil
}

// ---- compact encodings ----

// listpack appends a listpack's elements to out (integers as decimal
// text).
func (d *decoder) listpack(b []byte, out [][]byte) ([][]byte, error) {
	if len(b) < 7 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xff {
		return nil, errCorrupt
	}
	want := int(binary.LittleEndian.Uint16(b[4:]))
	p, n := 6, 0
	for {
		if p >= len(b) {
			return nil, errCorrupt
		}
		c := b[p]
		if c == 0xff {
			break
		}
		var (
			hdr  int    // encoding bytes
			slen uint64 // string length, with str
			str  bool
			iv   int64
		)
		need := func(k int) bool { return p+k <= len(b)-1 }
		switch {
		case c&0x80 == 0:
			hdr, iv = 1, int64(c)
		case c&0xc0 == 0x80:
			hdr, slen, str = 1, uint64(c&0x3f), true
		case c&0xe0 == 0xc0:
			if !need(2) {
				return nil, errCorrupt
			}
			hdr = 2
			iv = int64(c&0x1f)<<8 | int64(b[p+1])
			if iv >= 1<<12 {
				iv -= 1 << 13
			}
		case c&0xf0 == 0xe0:
			if !need(2) {
				return nil, errCorrupt
			}
			hdr, slen, str = 2, uint64(c&0x0f)<<8|uint64(b[p+1]), true
		case c == 0xf0:
			if !need(5) {
				return nil, errCorrupt
			}
			hdr, slen, str = 5, uint64(binary.LittleEndian.Uint32(b[p+1:])), true
		case c == 0xf1:
			if !need(3) {
				return nil, errCorrupt
			}
			hdr, iv = 3, int64(int16(binary.LittleEndian.Uint16(b[p+1:])))
		case c == 0xf2:
			if !need(4) {
				return nil, errCorrupt
			}
			u := uint32(b[p+1]) | uint32(b[p+2])<<8 | uint32(b[p+3])<<16
			hdr, iv = 4, int64(int32(u<<8)>>8)
		case c == 0xf3:
			if !need(5) {
				return nil, errCorrupt
			}
			hdr, iv = 5, int64(int32(binary.LittleEndian.Uint32(b[p+1:])))
		case c == 0xf4:
			if !need(9) {
				return nil, errCorrupt
			}
			hdr, iv = 9, int64(binary.LittleEndian.Uint64(b[p+1:]))
		default:
			return nil, errCorrupt
		}
		if slen > uint64(len(b)-1-p-hdr) {
			return nil, errCorrupt
		}
		l := hdr + int(slen)
		bl := backlenSize(l)
		if p+l+bl > len(b)-1 {
			return nil, errCorrupt
		}
		var tmp [5]byte
		if string(appendBacklen(tmp[:0], l)) != string(b[p+l:p+l+bl]) {
			return nil, errCorrupt
		}
		var e []byte
		if str {
			e = b[p+hdr : p+l]
		} else {
			e = strconv.AppendInt(nil, iv, 10)
		}
		e, err := d.elem(e)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		n++
		p += l + bl
	}
	if p != len(b)-1 || (want != 0xffff && want != n) {
		return nil, errCorrupt
	}
	return out, nil
}

// ziplist appends a ziplist's elements to out.
func (d *decoder) ziplist(b []byte, out [][]byte) ([][]byte, error) {
	if len(b) < 11 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xff {
		return nil, errCorrupt
	}
	p := 10
	end := len(b) - 1
	for p < end && b[p] != 0xff {
		// prevlen
		if b[p] < 254 {
			p++
		} else if b[p] == 254 {
			p += 5
		} else {
			return nil, errCorrupt
		}
		if p >= end {
			return nil, errCorrupt
		}
		c := b[p]
		var e []byte
		avail := func(k uint64) bool { return k <= uint64(end-p) }
		switch c >> 6 {
		case 0, 1, 2:
			var hdr int
			var n uint64
			switch c >> 6 {
			case 0:
				hdr, n = 1, uint64(c&0x3f)
			case 1:
				if !avail(2) {
					return nil, errCorrupt
				}
				hdr, n = 2, uint64(c&0x3f)<<8|uint64(b[p+1])
			default:
				if c != 0x80 || !avail(5) {
					return nil, errCorrupt
				}
				hdr, n = 5, uint64(binary.BigEndian.Uint32(b[p+1:]))
			}
			if !avail(uint64(hdr) + n) {
				return nil, errCorrupt
			}
			e = b[p+hdr : p+hdr+int(n)]
			p += hdr + int(n)
		default:
			var iv int64
			var size int
			switch {
			case c == 0xc0:
				size = 2
			case c == 0xd0:
				size = 4
			case c == 0xe0:
				size = 8
			case c == 0xf0:
				size = 3
			case c == 0xfe:
				size = 1
			case c >= 0xf1 && c <= 0xfd:
				iv = int64(c&0x0f) - 1
			default:
				return nil, errCorrupt
			}
			if !avail(uint64(1 + size)) {
				return nil, errCorrupt
			}
			q := b[p+1:]
			switch size {
			case 1:
				iv = int64(int8(q[0]))
			case 2:
				iv = int64(int16(binary.LittleEndian.Uint16(q)))
			case 3:
				u := uint32(q[0]) | uint32(q[1])<<8 | uint32(q[2])<<16
				iv = int64(int32(u<<8) >> 8)
			case 4:
				iv = int64(int32(binary.LittleEndian.Uint32(q)))
			case 8:
				iv = int64(binary.LittleEndian.Uint64(q))
			}
			e = strconv.AppendInt(nil, iv, 10)
			p += 1 + size
		}
		e, err := d.elem(e)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if p != end {
		return nil, errCorrupt
	}
	return out, nil
}

// intset returns an intset's members.
func intset(b []byte) ([][]byte, error) {
	if len(b) < 8 {
		return nil, errCorrupt
	}
	enc := binary.LittleEndian.Uint32(b)
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if (enc != 2 && enc != 4 && enc != 8) || 8+n*uint64(enc) != uint64(len(b)) {
		return nil, errCorrupt
	}
	out := make([][]byte, 0, n)
	for i := 0; i < int(n); i++ {
		q := b[8+i*int(enc):]
		var v int64
		switch enc {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(q)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(q)))
		default:
			v = int64(binary.LittleEndian.Uint64(q))
		}
		out = append(out, strconv.AppendInt(nil, v, 10))
	}
	return out, nil
}

// zipmap returns a zipmap's fields and values alternating.
func (d *decoder) zipmap(b []byte) ([][]byte, error) {
	p := 1 // zmlen
	var out [][]byte
	readLen := func() (uint64, bool) {
		if p >= len(b) {
			return 0, false
		}
		c := b[p]
		switch {
		case c < 254:
			p++
			return uint64(c), true
		case c == 254:
			if p+5 > len(b) {
				return 0, false
			}
			n := uint64(binary.LittleEndian.Uint32(b[p+1:]))
			p += 5
			return n, true
		}
		return 0, false
	}
	for {
		if p >= len(b) {
			return nil, errCorrupt
		}
		if b[p] == 0xff {
			break
		}
		kl, ok := readLen()
		if !ok || kl > uint64(len(b)-p) {
			return nil, errCorrupt
		}
		k := b[p : p+int(kl)]
		p += int(kl)
		vl, ok := readLen()
		if !ok || p >= len(b) {
			return nil, errCorrupt
		}
		free := uint64(b[p])
		p++
		if vl+free > uint64(len(b)-p) {
			return nil, errCorrupt
		}
		v := b[p : p+int(vl)]
		p += int(vl + free)
		var err error
		if k, err = d.elem(k); err != nil {
			return nil, err
		}
		if v, err = d.elem(v); err != nil {
			return nil, err
		}
		out = append(out, k, v)
	}
	if p != len(b)-1 {
		return nil, errCorrupt
	}
	return out, nil
}

// lzfDecompress is liblzf's lzf_decompress into out, which must come out
// exactly full.
func lzfDecompress(in, out []byte) bool {
	ip, op := 0, 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 { // literal run of ctrl+1 bytes
			ctrl++
			if op+ctrl > len(out) || ip+ctrl > len(in) {
				return false
			}
			copy(out[op:], in[ip:ip+ctrl])
			op += ctrl
			ip += ctrl
			continue
		}
		n := ctrl >> 5 // back reference
		ref := op - (ctrl&0x1f)<<8 - 1
		if ip >= len(in) {
			return false
		}
		if n == 7 {
			n += int(in[ip])
			ip++
			if ip >= len(in) {
				return false
			}
		}
		ref -= int(in[ip])
		ip++
		if op+n+2 > len(out) || ref < 0 {
			return false
		}
		for k := 0; k < n+2; k++ { // may overlap: byte by byte
			out[op] = out[ref]
			op++
			ref++
		}
	}
	return op == len(out)
}
