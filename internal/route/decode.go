package route

import "encoding/json"

// UnmarshalJSON decodes a table. Every dataserver and proxy decodes each
// table version (a recovery makes hundreds of versions in seconds), and
// encoding/json took about 2 ms and 8,000 allocations for a table of
// 1023 rows: the form encoding/json writes, as configservers send it,
// takes a fast path (decodeFast) that allocates the rows' strings once
// per node address; any other input goes through encoding/json, with the
// same result. Like encoding/json, it sets only the fields present.
func (t *Table) UnmarshalJSON(b []byte) error {
	// The fast path decodes over a copy of t, so a field absent from the
	// input keeps t's value and an input it gives up on leaves t as it was.
	d := tableDecoder{b: b, t: *t}
	if d.table() {
		*t = d.t
		return nil
	}
	type plain Table // without this method
	return json.Unmarshal(b, (*plain)(t))
}

// The bits of tableDecoder.seen.
const (
	seenVersion uint16 = 1 << iota
	seenBuckets
	seenCopies
	seenServing
	seenDestination
	seenMigrating
	seenBehind
	seenBehindEpoch
	seenIncarnations
)

// tableDecoder reads a table in the form encoding/json writes (compact or
// not): the known fields, strings without escapes, unsigned integers. It
// reports false on anything else, and UnmarshalJSON falls back.
type tableDecoder struct {
	b []byte
	i int
	t Table
	// seen has a bit per field read (seenVersion...), to notice a key
	// given twice.
	seen uint16
	// strs interns the strings: a table names a few nodes thousands of
	// times.
	strs map[string]string
}

func (d *tableDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c,
// consuming it if so.
func (d *tableDecoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// null reads a null (a nil slice or map).
func (d *tableDecoder) null() bool {
	d.ws()
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

func (d *tableDecoder) table() bool {
	if !d.next('{') {
		return false
	}
	if !d.next('}') {
		for {
			key, ok := d.rawString()
			if !ok || !d.next(':') {
				return false
			}
			if !d.field(key) {
				return false
			}
			if d.next(',') {
				continue
			}
			if !d.next('}') {
				return false
			}
			break
		}
	}
	d.ws()
	return d.i == len(d.b)
}

func (d *tableDecoder) field(key []byte) bool {
	var ok bool
	var bit uint16
	switch string(key) {
	case "version":
		bit, ok = seenVersion, decodeUint(d, &d.t.Version, 64)
	case "buckets":
		bit, ok = seenBuckets, decodeUint(d, &d.t.Buckets, 32)
	case "copies":
		bit, ok = seenCopies, decodeUint(d, &d.t.Copies, 31)
	case "serving":
		bit, ok = seenServing, decodeInto(&d.t.Serving, d.rows)
	case "destination":
		bit, ok = seenDestination, decodeInto(&d.t.Destination, d.rows)
	case "migrating":
		bit, ok = seenMigrating, decodeInto(&d.t.Migrating, d.moves)
	case "behind":
		bit, ok = seenBehind, decodeInto(&d.t.Behind, d.behind)
	case "behind_epoch":
		bit, ok = seenBehindEpoch, decodeInto(&d.t.BehindEpoch, d.epochs)
	case "incarnations":
		bit, ok = seenIncarnations, decodeInto(&d.t.Incarnations, d.incarnations)
	}
	// A key given twice: encoding/json merges some values (maps), so
	// it decodes the table.
	if !ok || d.seen&bit != 0 {
		return false
	}
	d.seen |= bit
	return true
}

// decodeInto stores what read decodes in *dst, reporting read's success.
func decodeInto[T any](dst *T, read func() (T, bool)) bool {
	v, ok := read()
	*dst = v
	return ok
}

// decodeUint stores in *dst an unsigned integer of at most bits bits.
func decodeUint[T ~uint32 | ~uint64 | ~int](d *tableDecoder, dst *T, bits uint) bool {
	v, ok := d.uint(bits)
	*dst = T(v)
	return ok
}

// uint reads an unsigned integer of at most bits bits.
func (d *tableDecoder) uint(bits uint) (uint64, bool) {
	d.ws()
	start := d.i
	var v uint64
	limit := ^uint64(0) >> (64 - bits)
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		x := uint64(d.b[d.i] - '0')
		if v > (limit-x)/10 {
			return 0, false // overflow: encoding/json says how
		}
		v = v*10 + x
		d.i++
	}
	n := d.i - start
	if n == 0 || (n > 1 && d.b[start] == '0') {
		return 0, false
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, false
	}
	return v, true
}

// rawString reads a string of printable ASCII without escapes (what
// encoding/json would read differently, or check, goes to it); the bytes
// alias the input.
func (d *tableDecoder) rawString() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

func (d *tableDecoder) str() (string, bool) {
	raw, ok := d.rawString()
	if !ok {
		return "", false
	}
	if s, ok := d.strs[string(raw)]; ok {
		return s, true
	}
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	s := string(raw)
	d.strs[s] = s
	return s, true
}

// strings reads an array of strings onto flat.
func (d *tableDecoder) strings(flat []string) ([]string, bool) {
	if !d.next('[') {
		return nil, false
	}
	if d.next(']') {
		return flat, true
	}
	for {
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		flat = append(flat, s)
		if d.next(',') {
			continue
		}
		return flat, d.next(']')
	}
}

// rows reads an array of arrays of strings. The rows share one backing
// array, each capped at its length (an append to one copies it).
func (d *tableDecoder) rows() ([][]string, bool) {
	if d.null() {
		return nil, true
	}
	if !d.next('[') {
		return nil, false
	}
	rows := [][]string{}
	if d.next(']') {
		return rows, true
	}
	var flat []string
	var ends []int // -1: a null row
	if n := int(d.t.Buckets); d.seen&seenBuckets != 0 && n <= 1<<20 {
		// "buckets" comes first: room for every row (and copies).
		ends = make([]int, 0, n)
		flat = make([]string, 0, n*min(max(d.t.Copies, 1), 8))
	}
	for {
		if d.null() {
			ends = append(ends, -1)
		} else {
			var ok bool
			if flat, ok = d.strings(flat); !ok {
				return nil, false
			}
			ends = append(ends, len(flat))
		}
		if d.next(',') {
			continue
		}
		if !d.next(']') {
			return nil, false
		}
		break
	}
	rows = make([][]string, len(ends))
	if flat == nil {
		flat = []string{} // empty rows are empty, not nil
	}
	start := 0
	for k, end := range ends {
		if end >= 0 {
			rows[k] = flat[start:end:end]
			start = end
		}
	}
	return rows, true
}

func (d *tableDecoder) moves() ([]Move, bool) {
	if d.null() {
		return nil, true
	}
	if !d.next('[') {
		return nil, false
	}
	out := []Move{}
	if d.next(']') {
		return out, true
	}
	for {
		var mv Move
		if !d.next('{') {
			return nil, false
		}
		if !d.next('}') {
			for {
				key, ok := d.rawString()
				if !ok || !d.next(':') {
					return nil, false
				}
				switch string(key) {
				case "bucket":
					var v uint64
					v, ok = d.uint(32)
					mv.Bucket = BucketID(v)
				case "from":
					mv.From, ok = d.str()
				case "to":
					mv.To, ok = d.str()
				default:
					ok = false
				}
				if !ok {
					return nil, false
				}
				if d.next(',') {
					continue
				}
				if !d.next('}') {
					return nil, false
				}
				break
			}
		}
		out = append(out, mv)
		if d.next(',') {
			continue
		}
		return out, d.next(']')
	}
}

// object reads an object, calling value after each key.
func (d *tableDecoder) object(value func(key string) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		key, ok := d.str()
		if !ok || !d.next(':') || !value(key) {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// mapOf reads null (a nil map) or an object whose values value reads.
func mapOf[V any](d *tableDecoder, value func() (V, bool)) (map[string]V, bool) {
	if d.null() {
		return nil, true
	}
	out := map[string]V{}
	ok := d.object(func(key string) bool {
		v, ok := value()
		out[key] = v
		return ok
	})
	return out, ok
}

func (d *tableDecoder) behind() (map[string][]string, bool) {
	return mapOf(d, func() ([]string, bool) {
		if d.null() {
			return nil, true
		}
		ss, ok := d.strings(nil)
		if ss == nil && ok {
			ss = []string{}
		}
		return ss, ok
	})
}

func (d *tableDecoder) epochs() (map[string]uint64, bool) {
	return mapOf(d, func() (uint64, bool) { return d.uint(64) })
}

func (d *tableDecoder) incarnations() (map[string]int64, bool) {
	return mapOf(d, d.int63)
}

// int63 reads a signed integer that fits an int64, but for the edges
// encoding/json reads its own way (-0, the least int64).
func (d *tableDecoder) int63() (int64, bool) {
	d.ws()
	neg := d.i < len(d.b) && d.b[d.i] == '-'
	if neg {
		d.i++
		if d.i == len(d.b) || d.b[d.i] < '0' || d.b[d.i] > '9' {
			return 0, false
		}
	}
	v, ok := d.uint(63)
	if !neg {
		return int64(v), ok
	}
	if v == 0 {
		return 0, false // "-0": encoding/json's business
	}
	return -int64(v), ok
}
