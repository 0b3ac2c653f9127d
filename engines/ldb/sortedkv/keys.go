package sortedkv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// # Key encoding
//
// Every stored key starts with the Tair bucket and the area, big-endian, so
// that the byte order of the store groups the data the way Tair moves it:
//
//	[bucket u32][area u16][kind u8][rest...]
//
//   - one bucket is the contiguous range [bucket] .. [bucket+1]: migration
//     (ForEach) is one forward scan and DeleteBucket one range deletion;
//   - one area of one bucket is the contiguous range [bucket][area] ..
//     [bucket][area+1]: DeleteArea is one range deletion per bucket that
//     holds the area (the engine knows which from its counters);
//   - inside a (bucket, area) the kind byte separates the record families
//     below, each again contiguous, so no scan ever has to skip over
//     records of another family.
//
// Kinds, in key order:
//
//	kindCounters  [b][a][0x00]                            -> Counts (backend.go)
//	kindExpiry    [b][a][0x01][expireAt u64][dataKey...]  -> empty
//	kindPlain     [b][a][0x02][key]                       -> value
//	kindPrefix    [b][a][0x03][len(pkey) u16][pkey][skey] -> value
//
// The counters record holds the (bucket, area)'s stored key count and byte
// total, and its hidden and expiring plain keys (an expired record counts
// until the sweep reclaims it). It sits inside the bucket's range on purpose: DeleteBucket and
// DeleteArea remove it in the same range deletion as the data it counts, so
// counters and data can never disagree, even across a crash.
//
// The expiry index lists every record that has an expiry, ordered by expiry
// time, so the background sweep reclaims expired data by scanning exactly
// the expired entries rather than the whole store. dataKey is the full
// encoded key of the record (plain or prefix); it repeats the bucket and
// area, which keeps the index entry self-describing at a cost of 6 bytes.
//
// Prefix records put the pkey's length before the pkey: without it, the
// skeys of pkey "a" (a+skey) would interleave with the records of pkey "ab".
// With a fixed-width length every skey of one pkey shares the prefix
// [len][pkey] and sorts by skey bytes under it, so TAIR.PRANGE is one
// bounded iterator in either direction. SPEC limits pkey+skey to 1024
// bytes (configurable); the u16 length allows pkeys up to 65535 bytes.

const (
	kindCounters byte = 0x00
	kindExpiry   byte = 0x01
	kindPlain    byte = 0x02
	kindPrefix   byte = 0x03
)

const (
	bucketAreaLen = 6                 // [bucket u32][area u16]
	headerLen     = bucketAreaLen + 1 // + kind
	maxPkeyLen    = math.MaxUint16
)

func putHeader(dst []byte, bucket uint32, area uint16, kind byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, bucket)
	dst = binary.BigEndian.AppendUint16(dst, area)
	return append(dst, kind)
}

// plainKey encodes a plain record's key.
func plainKey(bucket uint32, area uint16, key []byte) []byte {
	dst := make([]byte, 0, headerLen+len(key))
	dst = putHeader(dst, bucket, area, kindPlain)
	return append(dst, key...)
}

// pkeyPrefix is the common prefix of every skey of pkey.
func pkeyPrefix(bucket uint32, area uint16, pkey []byte) []byte {
	dst := make([]byte, 0, headerLen+2+len(pkey))
	dst = putHeader(dst, bucket, area, kindPrefix)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(pkey)))
	return append(dst, pkey...)
}

// prefixKey encodes one skey of pkey.
func prefixKey(bucket uint32, area uint16, pkey, skey []byte) []byte {
	p := pkeyPrefix(bucket, area, pkey)
	out := make([]byte, len(p), len(p)+len(skey))
	copy(out, p)
	return append(out, skey...)
}

// countersKey is the (bucket, area)'s counters record.
func countersKey(bucket uint32, area uint16) []byte {
	return putHeader(make([]byte, 0, headerLen), bucket, area, kindCounters)
}

// expiryKey is the index entry of dataKey expiring at ms.
func expiryKey(dataKey []byte, at int64) []byte {
	dst := make([]byte, 0, headerLen+8+len(dataKey))
	dst = append(dst, dataKey[:bucketAreaLen]...)
	dst = append(dst, kindExpiry)
	dst = binary.BigEndian.AppendUint64(dst, uint64(at))
	return append(dst, dataKey...)
}

// expiryRange bounds the index entries of (bucket, area) expiring at or
// before ms.
func expiryRange(bucket uint32, area uint16, ms int64) (lo, hi []byte) {
	lo = putHeader(nil, bucket, area, kindExpiry)
	hi = binary.BigEndian.AppendUint64(putHeader(nil, bucket, area, kindExpiry), uint64(ms)+1)
	return lo, hi
}

// parseExpiryKey splits an index entry into its expiry and data key.
func parseExpiryKey(k []byte) (at int64, dataKey []byte, ok bool) {
	if len(k) < headerLen+8+headerLen || k[bucketAreaLen] != kindExpiry {
		return 0, nil, false
	}
	at = int64(binary.BigEndian.Uint64(k[headerLen:]))
	dataKey = k[headerLen+8:]
	if !bytes.Equal(dataKey[:bucketAreaLen], k[:bucketAreaLen]) {
		return 0, nil, false
	}
	return at, dataKey, true
}

// bucketRange bounds every key of bucket (hi nil: no bound, for the last
// bucket).
func bucketRange(bucket uint32) (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint32(nil, bucket)
	return lo, PrefixEnd(lo)
}

// areaRange bounds every key of (bucket, area), counters included.
func areaRange(bucket uint32, area uint16) (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint32(nil, bucket), area)
	return lo, PrefixEnd(lo)
}

// kindRange bounds one record family of (bucket, area).
func kindRange(bucket uint32, area uint16, kind byte) (lo, hi []byte) {
	lo = putHeader(nil, bucket, area, kind)
	return lo, PrefixEnd(lo)
}

// PrefixEnd returns the smallest key greater than every key starting with p
// (nil when p is all 0xff: no upper bound).
func PrefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// decodedKey is a parsed data key.
type decodedKey struct {
	bucket uint32
	area   uint16
	kind   byte
	key    []byte // plain key, or pkey
	skey   []byte // prefix records only
}

// parseDataKey parses a plain or prefix key. The slices alias k.
func parseDataKey(k []byte) (decodedKey, error) {
	if len(k) < headerLen {
		return decodedKey{}, fmt.Errorf("sortedkv: short key %x", k)
	}
	d := decodedKey{
		bucket: binary.BigEndian.Uint32(k),
		area:   binary.BigEndian.Uint16(k[4:]),
		kind:   k[bucketAreaLen],
	}
	rest := k[headerLen:]
	switch d.kind {
	case kindPlain:
		d.key = rest
	case kindPrefix:
		if len(rest) < 2 {
			return decodedKey{}, fmt.Errorf("sortedkv: short prefix key %x", k)
		}
		n := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+n {
			return decodedKey{}, fmt.Errorf("sortedkv: bad prefix key %x", k)
		}
		d.key, d.skey = rest[2:2+n], rest[2+n:]
	default:
		return decodedKey{}, fmt.Errorf("sortedkv: key %x is not a data key", k)
	}
	return d, nil
}
