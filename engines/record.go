package engines

import (
	"encoding/binary"
	"errors"
)

// The record codec: how a Record travels between dataservers (migration,
// a slave's full copy) and into a backup (tair ctl backup), many to a
// chunk, each with its length in front:
//
//	chunk  := (len:uvarint record)*
//	record := area:u16 key:bytes entry prefixCount:uvarint (skey:bytes entry)*
//	entry  := type:u8 flags:u8 version:varint expireAt:varint tflags:uvarint value:bytes
//	bytes  := len:uvarint data
//
// flags bit 0 = hidden, bit 1 = value is an encoded Object
// (Object.MarshalBinary, read back through RegisterObjectCodec's decoder),
// bit 2 (the record's own entry only) = Record.Merge.

// ErrBadRecord is a record or chunk that does not decode.
var ErrBadRecord = errors.New("engines: malformed record")

// AppendRecord appends r's encoding (a record, above) to b.
func AppendRecord(b []byte, r *Record) ([]byte, error) {
	b = binary.BigEndian.AppendUint16(b, r.Area)
	b = appendBytes(b, r.Key)
	at := len(b)
	var err error
	if b, err = appendEntry(b, &r.Entry); err != nil {
		return nil, err
	}
	if r.Merge {
		b[at+1] |= flagMerge
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

// flagMerge marks a record to merge (Record.Merge) in its entry's flags.
const flagMerge = 4

func appendEntry(b []byte, e *Entry) ([]byte, error) {
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

// AppendChunkRecord appends r to chunk (see above).
func AppendChunkRecord(chunk []byte, r *Record) ([]byte, error) {
	// The length goes in front; records are small, so reserve one byte
	// for it and move the record when its length needs more.
	at := len(chunk)
	chunk = append(chunk, 0)
	chunk, err := AppendRecord(chunk, r)
	if err != nil {
		return nil, err
	}
	n := len(chunk) - at - 1
	if n < 0x80 {
		chunk[at] = byte(n)
		return chunk, nil
	}
	var hdr [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(hdr[:], uint64(n))
	chunk = append(chunk, hdr[:k-1]...)
	copy(chunk[at+k:], chunk[at+1:at+1+n])
	copy(chunk[at:], hdr[:k])
	return chunk, nil
}

// ChunkReader reads the records of a chunk one by one.
type ChunkReader struct {
	b   []byte
	rec Record
}

// NewChunkReader reads the records of chunk.
func NewChunkReader(chunk []byte) *ChunkReader { return &ChunkReader{b: chunk} }

// next decodes the next record into a Record reused from call to call,
// whose keys and plain values alias the chunk (Restore copies what it
// keeps); it returns nil at the end.
func (c *ChunkReader) Next() (*Record, error) {
	if len(c.b) == 0 {
		return nil, nil
	}
	n, k := binary.Uvarint(c.b)
	if k <= 0 || uint64(len(c.b)-k) < n {
		return nil, ErrBadRecord
	}
	b := c.b[k : k+int(n)]
	c.b = c.b[k+int(n):]
	if err := decodeRecordInto(b, &c.rec, true); err != nil {
		return nil, err
	}
	return &c.rec, nil
}

type recReader struct {
	b   []byte
	err error
	// flags: the last entry's flags byte.
	flags byte
	// alias: byte strings alias b instead of being copied.
	alias bool
}

func (r *recReader) bytes() []byte {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || uint64(len(r.b)-k) < n {
		r.err = ErrBadRecord
		return nil
	}
	v := r.b[k : k+int(n) : k+int(n)]
	r.b = r.b[k+int(n):]
	if r.alias {
		return v
	}
	return append([]byte(nil), v...)
}

// varint reads a signed varint: the zig-zag of an unsigned one, as
// binary.AppendVarint writes it.
func (r *recReader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *recReader) uvarint() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = ErrBadRecord
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *recReader) entry() Entry {
	if len(r.b) < 2 {
		r.err = ErrBadRecord
		return Entry{}
	}
	e := Entry{Type: ValueType(r.b[0])}
	flags := r.b[1]
	r.flags = flags
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
		if r.alias {
			v = append([]byte(nil), v...) // an Object may keep its bytes
		}
		o, err := DecodeObject(e.Type, v)
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

// DecodeRecord decodes one record (AppendRecord's), copying its bytes.
func DecodeRecord(b []byte) (*Record, error) {
	rec := &Record{}
	if err := decodeRecordInto(b, rec, false); err != nil {
		return nil, err
	}
	return rec, nil
}

// decodeRecordInto decodes b into rec, reusing rec's Prefix array; with
// alias, keys and plain values alias b.
func decodeRecordInto(b []byte, rec *Record, alias bool) error {
	if len(b) < 2 {
		return ErrBadRecord
	}
	r := &recReader{b: b[2:], alias: alias}
	prefix := rec.Prefix[:0]
	*rec = Record{Area: binary.BigEndian.Uint16(b)}
	rec.Key = r.bytes()
	rec.Entry = r.entry()
	rec.Merge = r.flags&flagMerge != 0
	n := r.uvarint()
	if n > uint64(len(r.b)) { // every skey takes a byte at least
		return ErrBadRecord
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		kv := KV{Key: r.bytes()}
		kv.Entry = r.entry()
		prefix = append(prefix, kv)
	}
	if r.err != nil {
		return r.err
	}
	if n > 0 {
		rec.Prefix = prefix
	}
	return nil
}
