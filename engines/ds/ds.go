// Package ds holds the Redis data structures a dataserver keeps as
// engines.Object values: Hash, List, Set, ZSet and ExHash (TairHash).
//
// # Ownership and concurrency
//
// Objects are not safe for concurrent use: the engine owns them and callers
// touch them only inside engines.Engine.Update, which serialises access per
// key. Every element is held as a Go string, so values handed in are copied
// on the way in (string([]byte) conversion) and values handed out may be
// kept by the caller: nothing is ever mutated in place.
//
// # Encoding
//
// MarshalBinary writes a version byte followed by uvarint-length-prefixed
// fields; the decoders registered in init (engines.RegisterObjectCodec)
// reverse it. Size is an estimate of the heap bytes the object holds, kept
// incrementally so that it costs O(1).
package ds

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/tairkv/tair/engines"
)

// codecVersion is the first byte of every encoding.
const codecVersion = 1

// Per-element overheads used by Size (rough Go heap costs: string headers,
// map slots, pointers).
const (
	objectOverhead  = 64
	stringOverhead  = 16
	mapSlotOverhead = 32
)

// ErrCorrupt is returned by the decoders for malformed input.
var ErrCorrupt = errors.New("ds: corrupt encoding")

func init() {
	engines.RegisterObjectCodec(engines.TypeHash, func(b []byte) (engines.Object, error) { return DecodeHash(b) })
	engines.RegisterObjectCodec(engines.TypeList, func(b []byte) (engines.Object, error) { return DecodeList(b) })
	engines.RegisterObjectCodec(engines.TypeSet, func(b []byte) (engines.Object, error) { return DecodeSet(b) })
	engines.RegisterObjectCodec(engines.TypeZSet, func(b []byte) (engines.Object, error) { return DecodeZSet(b) })
	engines.RegisterObjectCodec(engines.TypeExHash, func(b []byte) (engines.Object, error) { return DecodeExHash(b) })
	engines.RegisterObjectCodec(engines.TypeStream, func(b []byte) (engines.Object, error) { return DecodeStream(b) })
}

type encoder struct{ b []byte }

func newEncoder(t engines.ValueType, n int, sizeHint int) *encoder {
	e := &encoder{b: make([]byte, 0, sizeHint+16)}
	e.b = append(e.b, codecVersion, byte(t))
	e.uvarint(uint64(n))
	return e
}

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *encoder) varint(x int64)   { e.b = binary.AppendVarint(e.b, x) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) float(f float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(f))
}

type decoder struct {
	b   []byte
	err error
}

// newDecoder checks the header and returns the element count.
func newDecoder(b []byte, t engines.ValueType) (*decoder, int) {
	d := &decoder{b: b}
	if len(b) < 2 || b[0] != codecVersion || b[1] != byte(t) {
		d.err = ErrCorrupt
		return d, 0
	}
	d.b = b[2:]
	n := d.uvarint()
	if n > uint64(len(d.b)) { // every element takes at least one byte
		d.err = ErrCorrupt
		return d, 0
	}
	return d, int(n)
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrCorrupt
		return 0
	}
	d.b = d.b[n:]
	return x
}

// varint reads a zig-zag encoded uvarint, as binary.Varint does.
func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = ErrCorrupt
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.err = ErrCorrupt
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return f
}

func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = ErrCorrupt
	}
	return d.err
}
