package ds

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestStreamIDIncrDecr(t *testing.T) {
	for _, c := range []struct {
		id, next StreamID
		ok       bool
	}{
		{StreamID{1, 1}, StreamID{1, 2}, true},
		{StreamID{1, math.MaxUint64}, StreamID{2, 0}, true},
		{MaxStreamID, StreamID{}, false},
	} {
		if n, ok := c.id.Incr(); n != c.next || ok != c.ok {
			t.Errorf("%v.Incr() = %v %v", c.id, n, ok)
		}
	}
	for _, c := range []struct {
		id, prev StreamID
		ok       bool
	}{
		{StreamID{1, 1}, StreamID{1, 0}, true},
		{StreamID{2, 0}, StreamID{1, math.MaxUint64}, true},
		{StreamID{}, MaxStreamID, false},
	} {
		if p, ok := c.id.Decr(); p != c.prev || ok != c.ok {
			t.Errorf("%v.Decr() = %v %v", c.id, p, ok)
		}
	}
	if s := (StreamID{18446744073709551615, 7}).String(); s != "18446744073709551615-7" {
		t.Errorf("String = %q", s)
	}
}

// TestStreamNodes: entries go 100 to a node (deleted ones counting), a
// new node when the tail's listpack would reach 4096 bytes; approximate
// trims remove whole nodes only, exact ones go inside the first node.
func TestStreamNodes(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 250; i++ {
		s.Append(StreamID{uint64(i), 0}, []string{"f", fmt.Sprint(i)})
	}
	if s.Nodes() != 3 || s.Len() != 250 {
		t.Fatalf("250 small entries: %d nodes, len %d", s.Nodes(), s.Len())
	}
	if n := s.Trim(TrimArgs{MaxLen: 200, Approx: true}); n != 0 || s.Len() != 250 {
		t.Fatalf("MAXLEN ~ 200 removed %d (a node of 100 would leave 150 < 200)", n)
	}
	if n := s.Trim(TrimArgs{MaxLen: 150, Approx: true}); n != 100 || s.Nodes() != 2 || s.FirstID != (StreamID{101, 0}) {
		t.Fatalf("MAXLEN ~ 150 removed %d, %d nodes, first %v", n, s.Nodes(), s.FirstID)
	}
	if n := s.Trim(TrimArgs{MaxLen: 140}); n != 10 || s.Nodes() != 2 || s.FirstID != (StreamID{111, 0}) {
		t.Fatalf("MAXLEN 140 removed %d, %d nodes, first %v", n, s.Nodes(), s.FirstID)
	}
	if n := s.Trim(TrimArgs{MinID: true, ID: StreamID{240, 0}, Approx: true, Limit: 50}); n != 0 {
		t.Fatalf("MINID ~ with LIMIT 50 under a node of 90 removed %d", n)
	}
	if n := s.Trim(TrimArgs{MinID: true, ID: StreamID{240, 0}, Approx: true}); n != 90 || s.FirstNodeID() != (StreamID{201, 0}) {
		t.Fatalf("MINID ~ 240 removed %d, first node %v", n, s.FirstNodeID())
	}
	// deleting every entry of a node removes it
	for i := 201; i <= 250; i++ {
		s.Delete(StreamID{uint64(i), 0})
	}
	if s.Nodes() != 0 || s.Len() != 0 || s.RaxNodes() != 1 {
		t.Fatalf("all deleted: %d nodes, len %d, rax %d", s.Nodes(), s.Len(), s.RaxNodes())
	}
	big := NewStream()
	for i := 1; i <= 10; i++ {
		big.Append(StreamID{uint64(i), 0}, []string{"f", strings.Repeat("v", 1000)})
	}
	if big.Nodes() != 3 { // 4 entries of ~1 KB fill a 4 KB listpack
		t.Fatalf("10 entries of 1 KB: %d nodes", big.Nodes())
	}
}

func TestStreamRaxNodes(t *testing.T) {
	s := NewStream()
	s.Append(StreamID{1, 1}, []string{"a", "b"})
	if n := s.RaxNodes(); n != 2 { // the root's 16 bytes compressed, the key
		t.Fatalf("one node: %d rax nodes", n)
	}
	for i := 2; i <= 101; i++ {
		s.Append(StreamID{uint64(i), 1}, []string{"a", "b"})
	}
	// keys 1-1 and 101-1 differ in their 8th byte: the 7 bytes before
	// compressed, a branch, and under each a compressed run of the 8 seq
	// bytes and its key node
	if n := s.RaxNodes(); s.Nodes() != 2 || n != 6 {
		t.Fatalf("two nodes: %d rax nodes", n)
	}
}

// TestStreamDecodeGarbage: random and truncated input never panics.
func TestStreamDecodeGarbage(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 30; i++ {
		s.Append(StreamID{uint64(i), 0}, []string{"f", fmt.Sprint(i)})
	}
	g, _ := s.CreateGroup("g", StreamID{5, 0}, 5)
	c, _ := g.CreateConsumer("c", 1)
	g.AddNACK(StreamID{3, 0}, c, 7)
	b, _ := s.MarshalBinary()
	d, err := DecodeStream(b)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := d.MarshalBinary(); !bytes.Equal(b, b2) {
		t.Fatal("no round trip")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		x := append([]byte(nil), b[:r.IntN(len(b))]...)
		if len(x) > 3 && r.IntN(2) == 0 {
			x[2+r.IntN(len(x)-2)] = byte(r.Uint32())
		}
		_, _ = DecodeStream(x)
	}
}
