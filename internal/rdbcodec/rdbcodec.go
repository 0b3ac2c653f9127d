// Package rdbcodec encodes and decodes one value in Redis's DUMP format:
// the RDB object type byte, the object's RDB serialization, the 2-byte RDB
// version (little endian) and the CRC64 (Jones polynomial, reflected, as
// Redis's crc64.c; little endian) of everything before it.
//
// Decode reads every encoding Redis 7.0 may DUMP for strings, lists, sets,
// sorted sets and hashes, and the older ones it still loads (plain lists,
// ziplists, quicklists of ziplists, zipmaps, string-encoded zset scores),
// and streams (stream.go). Modules and functions are refused (ErrFormat).
// Encode writes encodings Redis 7.0 loads: strings plain, int-encoded or
// LZF, lists as quicklist 2 of listpacks, sets, sorted sets (binary
// scores) and hashes in their plain encodings, streams as listpacks.
//
// Every length read from a payload is checked against the bytes left (or,
// for LZF, against the most a compressed run can expand to and a total
// budget) before anything is allocated: a crafted payload costs at most a
// bounded multiple of its own size.
package rdbcodec

import (
	"errors"
	"hash/crc64"
)

// Version is the RDB version Redis 7.0 writes and the newest it reads.
const Version = 10

// Kind is a value's Redis type.
type Kind uint8

const (
	String Kind = iota
	List
	Set
	ZSet
	Hash
	Stream
)

// Value is one decoded value.
type Value struct {
	Kind Kind
	// Str is a String's bytes.
	Str []byte
	// Elems are a List's elements (head to tail), a Set's members, a
	// ZSet's members (Scores[i] is Elems[i]'s), a Hash's fields and values
	// alternating (field, value, field, value ...).
	Elems  [][]byte
	Scores []float64
	// Stream is a Stream's content (stream.go).
	Stream *StreamValue
}

// Errors of Decode, with Redis's texts (without the "ERR " prefix).
var (
	ErrChecksum = errors.New("DUMP payload version or checksum are wrong")
	ErrFormat   = errors.New("Bad data format")
	// ErrTooLarge: a string longer than Limits.MaxString.
	ErrTooLarge = errors.New("rdbcodec: string too large")
)

// Limits bound what Decode allocates.
type Limits struct {
	// MaxString is the longest string (element or value) accepted;
	// 0 means 512 MiB.
	MaxString int
	// MaxInflate is the most bytes LZF decompression may produce in one
	// payload; 0 means 512 MiB.
	MaxInflate int
}

const defaultLimit = 512 << 20

// RDB object types (rdb.h).
const (
	typeString          = 0
	typeList            = 1
	typeSet             = 2
	typeZSet            = 3
	typeHash            = 4
	typeZSet2           = 5
	typeHashZipmap      = 9
	typeListZiplist     = 10
	typeSetIntset       = 11
	typeZSetZiplist     = 12
	typeHashZiplist     = 13
	typeListQuicklist   = 14
	typeHashListpack    = 16
	typeZSetListpack    = 17
	typeListQuicklist2  = 18
	typeSetListpack     = 20
	quicklistNodePlain  = 1
	quicklistNodePacked = 2
)

var crcTable = crc64.MakeTable(0x95AC9329AC4BC9B5) // Jones, reflected

// CRC64 is Redis's crc64(crc, p): Jones polynomial, reflected, no final
// xor. (Go's crc64 inverts before and after; the inversions cancel out.)
func CRC64(crc uint64, p []byte) uint64 {
	return ^crc64.Update(^crc, crcTable, p)
}

// Verify is Redis's verifyDumpPayload: at least the 10-byte footer, a
// version Redis 7.0 reads, and a matching checksum.
func Verify(p []byte) error {
	if len(p) < 10 {
		return ErrChecksum
	}
	f := p[len(p)-10:]
	if ver := uint16(f[0]) | uint16(f[1])<<8; ver > Version {
		return ErrChecksum
	}
	crc := CRC64(0, p[:len(p)-8])
	for i := 0; i < 8; i++ {
		if f[2+i] != byte(crc>>(8*i)) {
			return ErrChecksum
		}
	}
	return nil
}

// Decode verifies payload (Verify) and decodes its object. The returned
// slices may point into payload.
func Decode(payload []byte, lim Limits) (Value, error) {
	if err := Verify(payload); err != nil {
		return Value{}, err
	}
	if lim.MaxString <= 0 {
		lim.MaxString = defaultLimit
	}
	if lim.MaxInflate <= 0 {
		lim.MaxInflate = defaultLimit
	}
	// As Redis, the object is read from the whole buffer (footer
	// included) and what it leaves unread is ignored.
	d := &decoder{b: payload, lim: lim, budget: lim.MaxInflate}
	v, err := d.object()
	if err != nil {
		if err == ErrTooLarge {
			return Value{}, err
		}
		return Value{}, ErrFormat
	}
	return v, nil
}

// Encode returns v's DUMP payload.
func Encode(v Value) []byte {
	e := &encoder{}
	e.object(v)
	b := e.b
	b = append(b, Version&0xff, Version>>8)
	crc := CRC64(0, b)
	for i := 0; i < 8; i++ {
		b = append(b, byte(crc>>(8*i)))
	}
	return b
}
