package sortedkv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// # Value encoding
//
//	[format u8 = 1][type u8][bits u8][version uvarint][expireAt uvarint]
//	[flags uvarint][payload...]
//
// bits: 0x01 hidden, 0x02 the payload is an Object's MarshalBinary (else
// it is Entry.Value). The header is 6..25 bytes; for the 32-byte values of
// the benchmark it is 5 bytes with small versions and no expiry. The
// leading format byte lets a later release change the layout and still read
// old data.
//
// Objects are stored serialized and decoded with engines.DecodeObject on
// every read: each Update works on a private copy, so a failed or
// abandoned update cannot leave a half-mutated object behind.

const valueFormat = 1

const (
	bitHidden = 0x01
	bitObject = 0x02
)

var errCorrupt = errors.New("sortedkv: corrupt value")

// record is an Entry as stored, with the object still encoded.
type record struct {
	typ      engines.ValueType
	hidden   bool
	isObject bool
	version  int64
	expireAt int64
	flags    uint32
	payload  []byte
}

func appendValue(dst []byte, r *record) []byte {
	var bits byte
	if r.hidden {
		bits |= bitHidden
	}
	if r.isObject {
		bits |= bitObject
	}
	dst = append(dst, valueFormat, byte(r.typ), bits)
	dst = binary.AppendUvarint(dst, uint64(r.version))
	dst = binary.AppendUvarint(dst, uint64(r.expireAt))
	dst = binary.AppendUvarint(dst, uint64(r.flags))
	return append(dst, r.payload...)
}

// decodeValue parses v. payload aliases v.
func decodeValue(v []byte) (record, error) {
	if len(v) < 3 || v[0] != valueFormat {
		return record{}, errCorrupt
	}
	r := record{typ: engines.ValueType(v[1]), hidden: v[2]&bitHidden != 0, isObject: v[2]&bitObject != 0}
	p := v[3:]
	var vals [3]uint64
	for i := range vals {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			return record{}, errCorrupt
		}
		vals[i], p = x, p[n:]
	}
	// Versions and expiry times are any non-negative int64 (a client may
	// set a version of MaxInt64 with EXSET ABS); a bound below that made
	// such a record unreadable once written.
	if vals[0] > math.MaxInt64 || vals[1] > math.MaxInt64 || vals[2] > math.MaxUint32 {
		return record{}, errCorrupt
	}
	r.version, r.expireAt, r.flags = int64(vals[0]), int64(vals[1]), uint32(vals[2])
	r.payload = p
	return r, nil
}

// entry turns r into an Entry that owns its memory, decoding any object.
func (r *record) entry() (engines.Entry, error) {
	e := engines.Entry{
		Type:     r.typ,
		Version:  r.version,
		ExpireAt: r.expireAt,
		Hidden:   r.hidden,
		Flags:    r.flags,
	}
	if r.isObject {
		o, err := decodeObject(r.typ, r.payload)
		if err != nil {
			return engines.Entry{}, fmt.Errorf("sortedkv: decode %s object: %w", r.typ, err)
		}
		e.Object = o
		return e, nil
	}
	e.Value = append([]byte(nil), r.payload...)
	return e, nil
}

// recordOf turns an Entry into its stored form, encoding any object. Its
// errors are *errs.Error: errs.ErrNotSupported for an Object of a type no
// codec is registered for (stored, it could never be read back: every Get
// of the key and every ForEach of its bucket would fail), InvalidArgument
// for an Object that fails to encode.
func recordOf(e *engines.Entry) (record, error) {
	r := record{
		typ:      e.Type,
		hidden:   e.Hidden,
		version:  e.Version,
		expireAt: e.ExpireAt,
		flags:    e.Flags,
		payload:  e.Value,
	}
	if e.Object != nil {
		if !engines.HasObjectCodec(e.Type) {
			return record{}, errs.Newf(errs.NotSupported, "sortedkv: %s objects cannot be stored: no codec is registered to read them back", e.Type)
		}
		b, err := e.Object.MarshalBinary()
		if err != nil {
			return record{}, errs.Wrap(errs.InvalidArgument, fmt.Errorf("sortedkv: encode %s object: %w", e.Type, err))
		}
		r.isObject, r.payload = true, b
	}
	if r.version < 0 {
		r.version = 0
	}
	if r.expireAt < 0 {
		// An absolute time before the epoch is in the past: keep the record
		// as expired rather than as never expiring.
		r.expireAt = 1
	}
	return r, nil
}

// decodeObject is engines.DecodeObject that turns a codec's panic on
// damaged data into an error: one bad record must not stop the server.
func decodeObject(t engines.ValueType, b []byte) (o engines.Object, err error) {
	defer func() {
		if p := recover(); p != nil {
			o, err = nil, fmt.Errorf("%s codec panicked: %v", t, p)
		}
	}()
	return engines.DecodeObject(t, b)
}
