package ds

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/tairkv/tair/engines"
)

// travel encodes and decodes o, as a piece travels.
func travel(t *testing.T, o engines.Object) engines.Object {
	t.Helper()
	b, err := o.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := engines.DecodeObject(o.Type(), b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStreamPieces: a stream sent as its head and the pieces after it,
// each through the codec, merges back into a stream that encodes exactly
// as the original (entries, ids, counters, node layout, groups and their
// pending entries); a piece whose entries are not after the stream's
// last is refused.
func TestStreamPieces(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 1000; i++ {
		s.Append(StreamID{uint64(i), 0}, []string{"f", strconv.Itoa(i), "g" + strconv.Itoa(i%7), "x"})
	}
	for i := 10; i <= 1000; i += 10 {
		s.Delete(StreamID{uint64(i), 0})
	}
	g, _ := s.CreateGroup("grp", StreamID{500, 0}, 480)
	c, _ := g.CreateConsumer("alice", 1234)
	n := &StreamNACK{ID: StreamID{3, 0}, DeliveryTime: 99, DeliveryCount: 2, Consumer: c}
	g.PEL.ReplaceOrInsert(n)
	c.PEL.ReplaceOrInsert(n)
	want, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}

	head := s.PieceHead(100)
	if head.Len() != 100 || s.Len() != 900 {
		t.Fatalf("head holds %d entries (the stream %d), want 100 (900)", head.Len(), s.Len())
	}
	dst := travel(t, head).(*Stream)
	after := head.Last().ID
	pieces := 0
	for {
		p, more := s.PieceAfter(after, 100)
		if p.Len() > 0 {
			after = p.Last().ID
			if err := dst.MergePiece(travel(t, p)); err != nil {
				t.Fatal(err)
			}
			pieces++
		}
		if !more {
			break
		}
	}
	if pieces != 8 {
		t.Fatalf("%d pieces after the head, want 8", pieces)
	}
	got, err := dst.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the merged stream (%d entries) encodes unlike the original (%d)", dst.Len(), s.Len())
	}
	if dst.Size() != s.Size() {
		t.Fatalf("merged size %d, original %d", dst.Size(), s.Size())
	}
	early, _ := s.PieceAfter(StreamID{500, 0}, 5)
	if err := dst.MergePiece(travel(t, early)); err == nil {
		t.Fatal("a piece of entries before the stream's last was merged")
	}
	if err := dst.MergePiece(NewExHash()); err == nil {
		t.Fatal("a TairHash merged into a stream")
	}
}

// TestExHashPieces: a TairHash merged from pieces of its fields (expired
// ones included) holds every field with its value, version and expiry,
// and the piece's AutoExpire.
func TestExHashPieces(t *testing.T) {
	h := NewExHash()
	for i := 0; i < 500; i++ {
		h.Set("f"+strconv.Itoa(i), ExField{Value: "v" + strconv.Itoa(i), Version: int64(i + 1), ExpireAt: int64(i % 3 * 1000)})
	}
	h.AutoExpire = 0
	dst := NewExHash()
	dst.AutoExpire = 777
	piece := NewExHash()
	flush := func() {
		if err := dst.MergePiece(travel(t, piece)); err != nil {
			t.Fatal(err)
		}
		piece = NewExHash()
	}
	h.RangeAll(func(f string, v *ExField) bool {
		piece.Set(f, *v)
		if piece.Len() == 64 {
			flush()
		}
		return true
	})
	flush()
	if dst.Len() != h.Len() || dst.Size() != h.Size() || dst.AutoExpire != 0 {
		t.Fatalf("merged: %d fields, size %d, auto-expire %d; want %d, %d, 0", dst.Len(), dst.Size(), dst.AutoExpire, h.Len(), h.Size())
	}
	for i := 0; i < 500; i++ {
		f := "f" + strconv.Itoa(i)
		a, b := dst.m[f], h.m[f]
		if a == nil || *a != *b {
			t.Fatalf("field %s: merged %+v, original %+v", f, a, b)
		}
	}
	if dst.NextExpire() != h.NextExpire() {
		t.Fatalf("next expiry %d, original %d", dst.NextExpire(), h.NextExpire())
	}
	if err := dst.MergePiece(NewStream()); err == nil {
		t.Fatal("a stream merged into a TairHash")
	}
}
