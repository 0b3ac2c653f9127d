package ds

import (
	"testing"

	"github.com/tairkv/tair/engines"
)

// FuzzDecodeObject feeds arbitrary bytes to every object decoder (what a
// persistent engine reads back, what a migration receives): each must
// return an object or an error, never panic or allocate what the input
// does not hold; an object it returns encodes to bytes that decode to an
// object of the same type, length and encoding.
func FuzzDecodeObject(f *testing.F) {
	h := NewHash()
	h.Set("f", "v")
	l := NewList()
	l.PushBack("a")
	l.PushBack("b")
	s := NewSet()
	s.Add("m")
	z := NewZSet()
	z.Set("a", 1.5)
	x := &ExHash{m: map[string]*ExField{}}
	x.Set("f", ExField{Value: "v", Version: 3, ExpireAt: 1 << 62})
	types := []engines.ValueType{engines.TypeHash, engines.TypeList, engines.TypeSet, engines.TypeZSet, engines.TypeExHash}
	for i, o := range []engines.Object{h, l, s, z, x} {
		b, err := o.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		typ := types[int(which)%len(types)]
		o, err := engines.DecodeObject(typ, data)
		if err != nil {
			return
		}
		if o.Type() != typ {
			t.Fatalf("decoded a %s as %s", typ, o.Type())
		}
		b, err := o.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encoding a decoded %s: %v", typ, err)
		}
		o2, err := engines.DecodeObject(typ, b)
		if err != nil {
			t.Fatalf("a re-encoded %s does not decode: %v", typ, err)
		}
		if o2.Len() != o.Len() {
			t.Fatalf("%s: %d elements, %d after a round trip", typ, o.Len(), o2.Len())
		}
		if typ == engines.TypeList || typ == engines.TypeZSet {
			if b2, _ := o2.MarshalBinary(); string(b2) != string(b) {
				t.Fatalf("%s: the round trip changed the encoding", typ)
			}
		}
	})
}
