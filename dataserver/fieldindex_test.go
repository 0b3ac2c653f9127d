package dataserver

import (
	"fmt"
	"slices"
	"testing"
)

func takenKeys(items []dueItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.k.key)
	}
	return out
}

// TestFieldIndex: keys come due by their earliest field expiry (strictly
// after it, as a field lives through its expiry millisecond), a limit at
// a time, a report replaces the earlier one (0 removes the key), lower
// only brings a key forward, recheck does not undo a report made since
// the key was taken, and drop forgets a bucket.
func TestFieldIndex(t *testing.T) {
	var x fieldIndex
	x.set(1, 0, []byte("a"), 100)
	x.set(1, 0, []byte("b"), 50)
	x.set(1, 0, []byte("c"), 70)
	x.set(1, 0, []byte("c"), 300) // rescheduled: its item at 70 is stale
	x.set(1, 0, []byte("d"), 60)
	x.set(1, 0, []byte("d"), 0) // no field expiry left
	x.set(2, 5, []byte("a"), 10)
	if got := x.dueBuckets(50); !slices.Equal(got, []uint32{2}) {
		t.Fatalf("dueBuckets(50) = %v", got)
	}
	if got := takenKeys(x.take(1, 50, 10)); got != nil {
		t.Fatalf("take at 50 (b expires after 50): %v", got)
	}
	if got := takenKeys(x.take(1, 101, 1)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("take(101, 1) = %v", got)
	}
	if got := takenKeys(x.take(1, 101, 10)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("take(101) = %v (c moved to 300, d left)", got)
	}
	x.lower(1, 0, []byte("c"), 400) // later: ignored
	x.lower(1, 0, []byte("c"), 200) // earlier: taken
	x.lower(1, 0, []byte("e"), 250) // new
	if got := takenKeys(x.take(1, 260, 10)); !slices.Equal(got, []string{"c", "e"}) {
		t.Fatalf("take(260) = %v", got)
	}
	// A key taken, written meanwhile, then put back by recheck: the
	// write's report stands.
	x.set(1, 0, []byte("f"), 500)
	it := x.take(1, 501, 1)[0]
	x.set(1, 0, []byte("f"), 900)
	x.recheck(1, it.k, it.at, 600)
	if got := takenKeys(x.take(1, 700, 10)); got != nil {
		t.Fatalf("recheck undid a later report: %v", got)
	}
	// recheck of a key not written since: looked at again at when.
	it = x.take(1, 901, 1)[0]
	x.recheck(1, it.k, it.at, 1000)
	if got := takenKeys(x.take(1, 950, 10)); got != nil {
		t.Fatalf("rechecked key taken before its time: %v", got)
	}
	if got := x.take(1, 1001, 10); len(got) != 1 || got[0].at != 900 {
		t.Fatalf("rechecked key: %+v", got)
	}
	x.drop(2)
	if x.keys() != 0 || len(x.dueBuckets(1<<40)) != 0 {
		t.Fatalf("%d keys left", x.keys())
	}
}

// TestFieldIndexStaysBounded: rescheduling keys over and over does not
// grow a bucket's heap past a constant times its keys.
func TestFieldIndexStaysBounded(t *testing.T) {
	var x fieldIndex
	for i := range 100_000 {
		x.set(0, 0, []byte(fmt.Sprint(i%10)), int64(i+1))
	}
	if n := len(x.buckets[0].heap); n > 2*10+64 {
		t.Fatalf("%d heap items for 10 keys", n)
	}
	if got := x.take(0, 1<<40, 100); len(got) != 10 {
		t.Fatalf("took %d keys, want 10", len(got))
	}
}
