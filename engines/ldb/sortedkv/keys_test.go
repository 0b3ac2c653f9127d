package sortedkv

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/tairkv/tair/engines"
)

// TestKeyOrder checks the properties the engines rely on: data keys sort
// by (bucket, area, kind, key); every key of a bucket or area lies in its
// range and no other key does; a pkey's skeys lie under its prefix in skey
// order, and no skey of another pkey does (even of a pkey that extends it).
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	type tup struct {
		bucket     uint32
		area       uint16
		pkey, skey []byte
		prefix     bool
		enc        []byte
	}
	randBytes := func(max int) []byte {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = byte(r.IntN(4)) * 0x55 // 0x00, 0x55, 0xaa, 0xff: collisions and edges
		}
		return b
	}
	var tups []tup
	for i := 0; i < 3000; i++ {
		tp := tup{bucket: uint32(r.IntN(3)), area: uint16(r.IntN(3)), pkey: randBytes(3), prefix: r.IntN(2) == 0}
		if i%500 == 0 {
			tp.bucket = 0xffffffff
		}
		if len(tp.pkey) == 0 {
			tp.pkey = []byte{0x55}
		}
		if tp.prefix {
			tp.skey = randBytes(3)
			tp.enc = prefixKey(tp.bucket, tp.area, tp.pkey, tp.skey)
		} else {
			tp.enc = plainKey(tp.bucket, tp.area, tp.pkey)
		}
		tups = append(tups, tp)
	}
	sort.Slice(tups, func(i, j int) bool { return bytes.Compare(tups[i].enc, tups[j].enc) < 0 })
	for i := range tups {
		a := &tups[i]
		d, err := parseDataKey(a.enc)
		if err != nil || d.bucket != a.bucket || d.area != a.area || !bytes.Equal(d.key, a.pkey) ||
			(a.prefix && (d.kind != kindPrefix || !bytes.Equal(d.skey, a.skey))) {
			t.Fatalf("parse(%x) = %+v, %v", a.enc, d, err)
		}
		if i > 0 {
			b := &tups[i-1]
			if b.bucket > a.bucket || (b.bucket == a.bucket && b.area > a.area) {
				t.Fatalf("%x sorts after %x but its (bucket, area) is lower", b.enc, a.enc)
			}
			if b.bucket == a.bucket && b.area == a.area && b.prefix && a.prefix &&
				bytes.Equal(a.pkey, b.pkey) && bytes.Compare(b.skey, a.skey) > 0 {
				t.Fatalf("skeys of %x out of order: %x then %x", a.pkey, b.skey, a.skey)
			}
		}
		for _, o := range tups[:min(len(tups), 200)] {
			in := func(lo, hi []byte) bool {
				return bytes.Compare(a.enc, lo) >= 0 && (hi == nil || bytes.Compare(a.enc, hi) < 0)
			}
			lo, hi := bucketRange(o.bucket)
			if in(lo, hi) != (a.bucket == o.bucket) {
				t.Fatalf("bucketRange(%d) and %x disagree", o.bucket, a.enc)
			}
			lo, hi = areaRange(o.bucket, o.area)
			if in(lo, hi) != (a.bucket == o.bucket && a.area == o.area) {
				t.Fatalf("areaRange(%d, %d) and %x disagree", o.bucket, o.area, a.enc)
			}
			pfx := pkeyPrefix(o.bucket, o.area, o.pkey)
			same := a.prefix && a.bucket == o.bucket && a.area == o.area && bytes.Equal(a.pkey, o.pkey)
			if in(pfx, PrefixEnd(pfx)) != same {
				t.Fatalf("pkey %x of (%d, %d) and %x disagree", o.pkey, o.bucket, o.area, a.enc)
			}
		}
	}
}

func TestExpiryKey(t *testing.T) {
	dk := prefixKey(9, 3, []byte("pk"), []byte("sk"))
	for _, at := range []int64{1, 1767225600000, 1<<62 - 1} {
		k := expiryKey(dk, at)
		gotAt, gotDK, ok := parseExpiryKey(k)
		if !ok || gotAt != at || !bytes.Equal(gotDK, dk) {
			t.Fatalf("parseExpiryKey(expiryKey(at %d)) = %d %x %v", at, gotAt, gotDK, ok)
		}
		lo, hi := expiryRange(9, 3, at)
		if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
			t.Fatalf("expiryRange(%d) excludes an entry expiring at %d", at, at)
		}
		if _, hi := expiryRange(9, 3, at-1); bytes.Compare(k, hi) < 0 {
			t.Fatalf("expiryRange(%d) includes an entry expiring at %d", at-1, at)
		}
	}
	// Entries of an area sort by time, whatever their data key.
	a := expiryKey(plainKey(9, 3, []byte("zzz")), 100)
	b := expiryKey(plainKey(9, 3, []byte("a")), 101)
	if bytes.Compare(a, b) >= 0 {
		t.Fatalf("expiry index not in time order")
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, r := range []record{
		{typ: engines.TypeString, version: 1, payload: []byte("v")},
		{typ: engines.TypeItems, hidden: true, version: 1 << 40, expireAt: 1767225600123, flags: 1<<32 - 1, payload: []byte{}},
		{typ: engines.TypeZSet, isObject: true, version: 7, payload: []byte{0, 1, 2}},
	} {
		v := appendValue(nil, &r)
		got, err := decodeValue(v)
		if err != nil || got.typ != r.typ || got.hidden != r.hidden || got.isObject != r.isObject ||
			got.version != r.version || got.expireAt != r.expireAt || got.flags != r.flags ||
			!bytes.Equal(got.payload, r.payload) {
			t.Fatalf("round trip of %+v = %+v, %v", r, got, err)
		}
	}
}

// FuzzDecode: no byte string makes a decoder panic. Run as a unit test on
// the seeds; `go test -fuzz FuzzDecode` explores further.
func FuzzDecode(f *testing.F) {
	f.Add(appendValue(nil, &record{typ: engines.TypeString, version: 3, expireAt: 5, payload: []byte("x")}))
	f.Add([]byte{1, 0, 0, 0xff, 0xff, 0xff})
	f.Add(expiryKey(plainKey(1, 2, []byte("k")), 9))
	f.Add(prefixKey(1, 2, []byte("p"), []byte("s")))
	f.Add([]byte{0, 0, 0, 1, 0, 2, kindPrefix, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeValue(b); err == nil {
			_, _ = r.entry()
		}
		_, _ = parseDataKey(b)
		_, _, _ = parseExpiryKey(b)
		_, _ = DecodeCounters(b)
		_ = PrefixEnd(b)
	})
}

// A record's version and expiry are any non-negative int64 (EXSET ABS
// 9223372036854775807 is a client's to send): it reads back as written.
func TestValueRoundTripInt64Bounds(t *testing.T) {
	for _, e := range []engines.Entry{
		{Type: engines.TypeString, Value: []byte("v"), Version: math.MaxInt64},
		{Type: engines.TypeString, Value: []byte("v"), Version: 1, ExpireAt: math.MaxInt64, Flags: math.MaxUint32},
	} {
		r, err := recordOf(&e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeValue(appendValue(nil, &r))
		if err != nil {
			t.Fatalf("version %d expiry %d: %v", e.Version, e.ExpireAt, err)
		}
		got, err := back.entry()
		if err != nil || got.Version != e.Version || got.ExpireAt != e.ExpireAt || got.Flags != e.Flags || string(got.Value) != "v" {
			t.Fatalf("read back %+v (%v), wrote %+v", got, err, e)
		}
	}
}
