package generic

import (
	"encoding/binary"

	"github.com/tairkv/tair/internal/errs"
)

// Items (Tair's array in a value) are encoded in Entry.Value as
//
//	uvarint(count) { uvarint(len) bytes }*count
//
// oldest first. The encoding is self-delimiting and is the same in every
// engine, so migration between engines moves items unchanged.

var errBadItems = errs.New(errs.InvalidArgument, "corrupt item value")

// EncodeItems returns the encoding of items.
func EncodeItems(items [][]byte) []byte {
	n := binary.MaxVarintLen64
	for _, it := range items {
		n += binary.MaxVarintLen64 + len(it)
	}
	buf := make([]byte, 0, n)
	buf = binary.AppendUvarint(buf, uint64(len(items)))
	for _, it := range items {
		buf = binary.AppendUvarint(buf, uint64(len(it)))
		buf = append(buf, it...)
	}
	return buf[:len(buf):len(buf)]
}

// DecodeItems returns the items of an encoded value; the items alias v.
func DecodeItems(v []byte) ([][]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)) {
		return nil, errBadItems
	}
	v = v[w:]
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, w := binary.Uvarint(v)
		if w <= 0 || l > uint64(len(v)-w) {
			return nil, errBadItems
		}
		out = append(out, v[w:w+int(l):w+int(l)])
		v = v[w+int(l):]
	}
	if len(v) != 0 {
		return nil, errBadItems
	}
	return out, nil
}

// itemWindow resolves Tair's (offset, count) over n items into [lo, hi).
// A negative offset counts from the end; a window reaching before the first
// item starts at the first; past the end it is empty.
func itemWindow(n, offset, count int) (lo, hi int, err error) {
	if count < 0 {
		return 0, 0, errs.New(errs.InvalidArgument, "item count must not be negative")
	}
	lo = offset
	if offset < 0 {
		lo = n + offset
		if lo < 0 {
			lo = 0
		}
	}
	if lo > n {
		lo = n
	}
	hi = n
	if count < n-lo {
		hi = lo + count
	}
	return lo, hi, nil
}
