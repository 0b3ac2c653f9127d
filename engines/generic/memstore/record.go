package memstore

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic/slab"
)

// A record is one block of its shard's arena:
//
//	offset size field
//	 0      8   access word (access.go), updated atomically by readers
//	 8      8   version
//	16      8   CLOCK prev (slab.Handle; 0 = head of the list)
//	24      8   CLOCK next (0 = tail)
//	32      4   flags
//	36      4   bucket; for a skey, the id of its pkey in the table
//	40      4   value length
//	44      2   area
//	46      2   key length
//	48      1   type
//	49      1   bits: hidden, skey, object, expiry
//	50      8   expireAt         } only with bitExp: a record without
//	58      4   expiry-heap index} expiry saves these 12 bytes
//	then the key bytes, then the value bytes.
//
// Blocks are 8-aligned (slab), so the access word at offset 0 is too
// (TestRecordLayout). Other fields are read and written with plain
// little-endian loads and stores: under the shard's shared lock they are
// only read, under its exclusive lock only the lock holder touches them.
const (
	offAccess  = 0
	offVersion = 8
	offPrev    = 16
	offNext    = 24
	offFlags   = 32
	offBucket  = 36
	offVlen    = 40
	offArea    = 44
	offKlen    = 46
	offType    = 48
	offBits    = 49
	baseHdr    = 50
	offExpire  = 50
	offHeap    = 58
	expHdr     = 62

	bitHidden = 1
	bitSkey   = 2
	bitObj    = 4
	bitExp    = 8
)

var le = binary.LittleEndian

// hdrLen is the header size of a record with (exp) or without an expiry.
func hdrLen(exp bool) int {
	if exp {
		return expHdr
	}
	return baseHdr
}

// hdr returns the fixed part of h's header.
func (sh *shard) hdr(h slab.Handle) []byte { return sh.arena.Bytes(h, baseHdr) }

func (sh *shard) bits(h slab.Handle) uint8 { return sh.hdr(h)[offBits] }

func (sh *shard) hdrSize(h slab.Handle) int { return hdrLen(sh.bits(h)&bitExp != 0) }

func (sh *shard) klen(h slab.Handle) int { return int(le.Uint16(sh.hdr(h)[offKlen:])) }
func (sh *shard) vlen(h slab.Handle) int { return int(le.Uint32(sh.hdr(h)[offVlen:])) }

// recLen is the bytes h's record uses of its block.
func (sh *shard) recLen(h slab.Handle) int {
	b := sh.hdr(h)
	return hdrLen(b[offBits]&bitExp != 0) + int(le.Uint16(b[offKlen:])) + int(le.Uint32(b[offVlen:]))
}

// keyOf is the key (for a skey, the skey) of h, aliasing the arena.
func (sh *shard) keyOf(h slab.Handle) []byte {
	b := sh.hdr(h)
	hl := hdrLen(b[offBits]&bitExp != 0)
	kl := int(le.Uint16(b[offKlen:]))
	return sh.arena.Bytes(h, hl+kl)[hl:]
}

// valueOf is the value of h, aliasing the arena; nil when empty.
func (sh *shard) valueOf(h slab.Handle) []byte {
	b := sh.hdr(h)
	vl := int(le.Uint32(b[offVlen:]))
	if vl == 0 {
		return nil
	}
	off := hdrLen(b[offBits]&bitExp != 0) + int(le.Uint16(b[offKlen:]))
	return sh.arena.Bytes(h, off+vl)[off:]
}

func (sh *shard) keyEq(key []byte) func(slab.Handle) bool {
	return func(o slab.Handle) bool { return bytes.Equal(sh.keyOf(o), key) }
}

// expOf is h's expiry (0: none).
func (sh *shard) expOf(h slab.Handle) int64 {
	if sh.bits(h)&bitExp == 0 {
		return 0
	}
	return int64(le.Uint64(sh.arena.Bytes(h, expHdr)[offExpire:]))
}

func (sh *shard) setExp(h slab.Handle, at int64) {
	le.PutUint64(sh.arena.Bytes(h, expHdr)[offExpire:], uint64(at))
}

// heapIdx is h's index in the shard's expiry heap, -1 without expiry.
func (sh *shard) heapIdx(h slab.Handle) int {
	if sh.bits(h)&bitExp == 0 {
		return -1
	}
	return int(int32(le.Uint32(sh.arena.Bytes(h, expHdr)[offHeap:])))
}

func (sh *shard) setHeapIdx(h slab.Handle, i int) {
	le.PutUint32(sh.arena.Bytes(h, expHdr)[offHeap:], uint32(int32(i)))
}

func (sh *shard) prev(h slab.Handle) slab.Handle { return slab.Handle(le.Uint64(sh.hdr(h)[offPrev:])) }
func (sh *shard) next(h slab.Handle) slab.Handle { return slab.Handle(le.Uint64(sh.hdr(h)[offNext:])) }
func (sh *shard) setPrev(h, p slab.Handle)       { le.PutUint64(sh.hdr(h)[offPrev:], uint64(p)) }
func (sh *shard) setNext(h, n slab.Handle)       { le.PutUint64(sh.hdr(h)[offNext:], uint64(n)) }
func (sh *shard) bucketOf(h slab.Handle) uint32  { return le.Uint32(sh.hdr(h)[offBucket:]) }
func (sh *shard) areaOf(h slab.Handle) uint16    { return le.Uint16(sh.hdr(h)[offArea:]) }
func (sh *shard) hidden(h slab.Handle) bool      { return sh.bits(h)&bitHidden != 0 }
func (sh *shard) isSkey(h slab.Handle) bool      { return sh.bits(h)&bitSkey != 0 }

// access is h's access word. Its address is 8-aligned: blocks are, and
// the word is at offset 0.
func (sh *shard) access(h slab.Handle) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&sh.arena.Bytes(h, 8)[0]))
}

// referenced reports whether h was read since it last reached the head of
// its recency list (CLOCK's second chance).
func (sh *shard) referenced(h slab.Handle) bool {
	return accessWord(sh.access(h).Load()).ref()
}

// setRef sets the referenced bit (under the shard's exclusive lock).
func (sh *shard) setRef(h slab.Handle) {
	a := sh.access(h)
	if w := a.Load(); w&accessRefBit == 0 {
		a.Store(w | accessRefBit)
	}
}

// clearRef clears the referenced bit (under the shard's exclusive lock).
func (sh *shard) clearRef(h slab.Handle) {
	a := sh.access(h)
	if w := a.Load(); w&accessRefBit != 0 {
		a.Store(w &^ accessRefBit)
	}
}

// entry is h's record; its value is a copy when copyValue, else it
// aliases the arena (valid until the shard's lock is released).
func (sh *shard) entry(h slab.Handle, copyValue bool) engines.Entry {
	b := sh.hdr(h)
	e := engines.Entry{
		Type:     engines.ValueType(b[offType]),
		Version:  int64(le.Uint64(b[offVersion:])),
		Hidden:   b[offBits]&bitHidden != 0,
		Flags:    le.Uint32(b[offFlags:]),
		ExpireAt: sh.expOf(h),
	}
	if b[offBits]&bitObj != 0 {
		e.Object = sh.objs[h].obj
	}
	v := sh.valueOf(h)
	if copyValue && v != nil {
		v = append(make([]byte, 0, len(v)), v...)
	}
	e.Value = v
	return e
}
