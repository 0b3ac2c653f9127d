package dataserver

import (
	"encoding/binary"
	"errors"

	"github.com/tairkv/tair/engines"
)

// Migrated records travel as one bulk string each:
//
//	record := area:u16 key:bytes entry prefixCount:uvarint (skey:bytes entry)*
//	entry  := type:u8 flags:u8 version:varint expireAt:varint tflags:uvarint value:bytes
//	bytes  := len:uvarint data
//
// flags bit 0 = hidden, bit 1 = value is an encoded Object.

var errBadRecord = errors.New("dataserver: malformed migration record")

func encodeRecord(b []byte, r *engines.Record) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, r.Area)
	b = appendBytes(b, r.Key)
	var err error
	if b, err = appendEntry(b, &r.Entry); err != nil {
		return nil, err
	}
	b = binary.AppendUvarint(b, uint64(len(r.Prefix)))
	for i := range r.Prefix {
		b = appendBytes(b, r.Prefix[i].Key)
		if b, err = appendEntry(b, &r.Prefix[i].Entry); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendEntry(b []byte, e *engines.Entry) ([]byte, error) {
	var flags byte
	if e.Hidden {
		flags |= 1
	}
	v := e.Value
	if e.Object != nil {
		flags |= 2
		var err error
		if v, err = e.Object.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	b = append(b, byte(e.Type), flags)
	b = binary.AppendVarint(b, e.Version)
	b = binary.AppendVarint(b, e.ExpireAt)
	b = binary.AppendUvarint(b, uint64(e.Flags))
	return appendBytes(b, v), nil
}

type recReader struct {
	b   []byte
	err error
}

func (r *recReader) bytes() []byte {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || uint64(len(r.b)-k) < n {
		r.err = errBadRecord
		return nil
	}
	v := r.b[k : k+int(n)]
	r.b = r.b[k+int(n):]
	return append([]byte(nil), v...)
}

func (r *recReader) varint() int64 {
	n, k := binary.Varint(r.b)
	if k <= 0 {
		r.err = errBadRecord
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *recReader) uvarint() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = errBadRecord
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *recReader) entry() engines.Entry {
	if len(r.b) < 2 {
		r.err = errBadRecord
		return engines.Entry{}
	}
	e := engines.Entry{Type: engines.ValueType(r.b[0])}
	flags := r.b[1]
	r.b = r.b[2:]
	e.Hidden = flags&1 != 0
	e.Version = r.varint()
	e.ExpireAt = r.varint()
	e.Flags = uint32(r.uvarint())
	v := r.bytes()
	if r.err != nil {
		return e
	}
	if flags&2 != 0 {
		o, err := engines.DecodeObject(e.Type, v)
		if err != nil {
			r.err = err
			return e
		}
		e.Object = o
	} else {
		e.Value = v
	}
	return e
}

func decodeRecord(b []byte) (*engines.Record, error) {
	if len(b) < 2 {
		return nil, errBadRecord
	}
	r := &recReader{b: b[2:]}
	rec := &engines.Record{Area: binary.BigEndian.Uint16(b)}
	rec.Key = r.bytes()
	rec.Entry = r.entry()
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		kv := engines.KV{Key: r.bytes()}
		kv.Entry = r.entry()
		rec.Prefix = append(rec.Prefix, kv)
	}
	if r.err != nil {
		return nil, r.err
	}
	return rec, nil
}
