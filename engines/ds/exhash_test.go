package ds

import (
	"fmt"
	"slices"
	"testing"
)

// TestExHashExpireDue: due fields go earliest first, at most limit of
// them, stale schedule entries (a field rewritten or deleted) are
// skipped, and NextExpire never passes the earliest live expiry.
func TestExHashExpireDue(t *testing.T) {
	h := NewExHash()
	h.Set("a", ExField{Value: "1", ExpireAt: 300})
	h.Set("b", ExField{Value: "2", ExpireAt: 100})
	h.Set("c", ExField{Value: "3", ExpireAt: 200})
	h.Set("p", ExField{Value: "never"})
	h.Set("b", ExField{Value: "2", ExpireAt: 400}) // rescheduled: its entry at 100 is stale
	h.Set("c", ExField{Value: "3", ExpireAt: 200}) // same expiry: one entry
	if got := h.NextExpire(); got != 100 {
		t.Fatalf("NextExpire = %d, want the lower bound 100", got)
	}
	var gone []string
	if n := h.ExpireDue(250, 0, func(f string) { gone = append(gone, f) }); n != 1 || !slices.Equal(gone, []string{"c"}) {
		t.Fatalf("ExpireDue(250) = %d %v, want c", n, gone)
	}
	if got := h.NextExpire(); got != 300 {
		t.Fatalf("NextExpire after the stale entry went = %d, want 300", got)
	}
	gone = nil
	if n := h.ExpireDue(1000, 1, func(f string) { gone = append(gone, f) }); n != 1 || !slices.Equal(gone, []string{"a"}) {
		t.Fatalf("ExpireDue(1000, limit 1) = %d %v, want a", n, gone)
	}
	h.Delete("b")
	if n := h.ExpireDue(1000, 0, nil); n != 0 || h.Len() != 1 || h.NextExpire() != 0 {
		t.Fatalf("after deleting b: expired %d, %d fields, next %d", n, h.Len(), h.NextExpire())
	}
	if n := h.PurgeDue(1 << 40); n != 0 || h.Get("p", 1<<40) == nil {
		t.Fatal("a field without expiry never expires")
	}
}

// TestExHashDueStaysBounded: rewriting fields' expiries over and over
// does not grow the schedule past a constant times the expiring fields.
func TestExHashDueStaysBounded(t *testing.T) {
	h := NewExHash()
	for i := range 10 {
		h.Set(fmt.Sprint(i), ExField{ExpireAt: 1})
	}
	for round := range 1000 {
		h.Set(fmt.Sprint(round%10), ExField{ExpireAt: int64(round + 2)})
	}
	if len(h.due) > 2*10+32 {
		t.Fatalf("%d schedule entries for 10 expiring fields", len(h.due))
	}
	if n := h.PurgeDue(1 << 40); n != 10 || h.Len() != 0 {
		t.Fatalf("PurgeDue = %d, %d left", n, h.Len())
	}
}

// TestExHashDecodeSchedules: a decoded TairHash expires its fields as
// the encoded one would.
func TestExHashDecodeSchedules(t *testing.T) {
	h := NewExHash()
	h.Set("a", ExField{Value: "1", ExpireAt: 50})
	h.Set("b", ExField{Value: "2"})
	g := roundTrip(t, h).(*ExHash)
	if g.NextExpire() != 50 {
		t.Fatalf("decoded NextExpire = %d", g.NextExpire())
	}
	if n := g.PurgeDue(51); n != 1 || g.Len() != 1 {
		t.Fatalf("decoded PurgeDue = %d", n)
	}
}

// BenchmarkExHashExpireDue: one active-expiry visit (256 due fields) of a
// TairHash of a million expiring fields costs those fields, not the hash.
func BenchmarkExHashExpireDue(b *testing.B) {
	h := NewExHash()
	const n = 1 << 20
	for i := range n {
		h.Set(fmt.Sprint("field:", i), ExField{Value: "v", ExpireAt: int64(i + 1)})
	}
	now := int64(0)
	b.ResetTimer()
	for range b.N {
		if h.Len() < 256 {
			b.StopTimer()
			for i := range n {
				h.Set(fmt.Sprint("field:", i), ExField{Value: "v", ExpireAt: now + int64(i+1)})
			}
			b.StartTimer()
		}
		now += 256
		h.ExpireDue(now, 256, nil)
	}
}
