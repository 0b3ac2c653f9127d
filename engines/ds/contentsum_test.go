package ds

import (
	"fmt"
	"testing"
)

// TestContentSum: a hash's and a set's ContentSum depend on their content
// alone, not on the order or the history that built it.
func TestContentSum(t *testing.T) {
	a, b := NewHash(), NewHash()
	sa, sb := NewSet(), NewSet()
	for i := 0; i < 1000; i++ {
		a.Set(fmt.Sprint("f", i), fmt.Sprint("v", i))
		sa.Add(fmt.Sprint("m", i))
	}
	for i := 1999; i >= 0; i-- {
		b.Set(fmt.Sprint("f", i), "x")
		sb.Add(fmt.Sprint("m", i))
	}
	for i := 0; i < 2000; i++ {
		if i < 1000 {
			b.Set(fmt.Sprint("f", i), fmt.Sprint("v", i))
		} else {
			b.Delete(fmt.Sprint("f", i))
			sb.Remove(fmt.Sprint("m", i))
		}
	}
	if a.ContentSum() != b.ContentSum() || sa.ContentSum() != sb.ContentSum() {
		t.Fatal("equal content, different sums")
	}
	enc, _ := a.MarshalBinary()
	c, err := DecodeHash(enc)
	if err != nil || c.ContentSum() != a.ContentSum() {
		t.Fatalf("decoded hash's sum differs (%v)", err)
	}
	b.Set("f1", "other")
	sb.Remove("m1")
	sb.Add("m1x")
	if a.ContentSum() == b.ContentSum() || sa.ContentSum() == sb.ContentSum() {
		t.Fatal("different content, equal sums")
	}
	// A field's bytes moved into its value are another hash.
	x, y := NewHash(), NewHash()
	x.Set("ab", "c")
	y.Set("a", "bc")
	if x.ContentSum() == y.ContentSum() {
		t.Fatal("the field/value boundary is not digested")
	}
}
