package ds

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/tairkv/tair/engines"
)

func roundTrip(t *testing.T, o engines.Object) engines.Object {
	t.Helper()
	b, err := o.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := engines.DecodeObject(o.Type(), b)
	if err != nil {
		t.Fatalf("decode %s: %v", o.Type(), err)
	}
	// A list's size counts its buffer's capacity, which decoding trims.
	if got.Len() != o.Len() || (got.Size() != o.Size() && o.Type() != engines.TypeList) {
		t.Fatalf("%s: len/size %d/%d after decode, want %d/%d", o.Type(), got.Len(), got.Size(), o.Len(), o.Size())
	}
	// Truncations and a wrong type fail cleanly.
	for i := 0; i < len(b); i++ {
		if _, err := engines.DecodeObject(o.Type(), b[:i]); err == nil {
			t.Fatalf("%s: decoding %d of %d bytes succeeded", o.Type(), i, len(b))
		}
	}
	return got
}

func TestHashRoundTrip(t *testing.T) {
	h := NewHash()
	h.Set("a", "1")
	h.Set("b", "")
	h.Set("a", "22")
	if h.Set("a", "3") || !h.Set("c", "x") {
		t.Fatal("Set's new-field report is wrong")
	}
	h.Delete("c")
	g := roundTrip(t, h).(*Hash)
	if !reflect.DeepEqual(g.m, h.m) {
		t.Fatalf("got %v want %v", g.m, h.m)
	}
	if h.Size() != NewHash().Size()+hashEntrySize("a", "3")+hashEntrySize("b", "") {
		t.Fatalf("size %d is not incremental", h.Size())
	}
	roundTrip(t, NewHash())
}

func TestSetRoundTripAndRandom(t *testing.T) {
	s := NewSet()
	for i := 0; i < 100; i++ {
		s.Add(fmt.Sprint(i))
	}
	for i := 0; i < 100; i += 3 {
		if !s.Remove(fmt.Sprint(i)) {
			t.Fatal("remove failed")
		}
	}
	g := roundTrip(t, s).(*Set)
	if !reflect.DeepEqual(g.Sorted(), s.Sorted()) {
		t.Fatal("members differ after decode")
	}
	for i := 0; i < 100; i++ {
		if s.Has(fmt.Sprint(i)) != (i%3 != 0) {
			t.Fatalf("Has(%d) wrong", i)
		}
	}
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		seen[s.Random()] = true
	}
	if len(seen) != s.Len() {
		t.Fatalf("Random saw %d of %d members", len(seen), s.Len())
	}
	for s.Len() > 0 {
		s.Remove(s.Random())
	}
	if s.Size() != NewSet().Size() {
		t.Fatal("size does not return to empty")
	}
}

// TestListModel checks the ring-buffer deque against a slice.
func TestListModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	l := NewList()
	var model []string
	for i := 0; i < 20000; i++ {
		v := fmt.Sprint(i)
		switch op := r.IntN(9); {
		case op == 0:
			l.PushFront(v)
			model = append([]string{v}, model...)
		case op == 1:
			l.PushBack(v)
			model = append(model, v)
		case op == 2 && len(model) > 0:
			got, _ := l.PopFront()
			if got != model[0] {
				t.Fatalf("PopFront %q want %q", got, model[0])
			}
			model = model[1:]
		case op == 3 && len(model) > 0:
			got, _ := l.PopBack()
			if got != model[len(model)-1] {
				t.Fatalf("PopBack %q want %q", got, model[len(model)-1])
			}
			model = model[:len(model)-1]
		case op == 4:
			at := r.IntN(len(model) + 1)
			l.Insert(at, v)
			model = append(model[:at], append([]string{v}, model[at:]...)...)
		case op == 5 && len(model) > 0:
			at := r.IntN(len(model))
			l.SetIndex(at, v)
			model[at] = v
		case op == 6 && len(model) > 0 && r.IntN(10) == 0:
			s := r.IntN(len(model))
			e := s + r.IntN(len(model)-s)
			l.Trim(s, e)
			model = append([]string(nil), model[s:e+1]...)
		case op == 7 && r.IntN(5) == 0:
			l.Filter(func(i int, _ string) bool { return i%2 == 0 })
			var m2 []string
			for i, x := range model {
				if i%2 == 0 {
					m2 = append(m2, x)
				}
			}
			model = m2
		}
		if l.Len() != len(model) {
			t.Fatalf("step %d: len %d want %d", i, l.Len(), len(model))
		}
	}
	if got := l.Elements(); !reflect.DeepEqual(got, model) && len(model) > 0 {
		t.Fatalf("elements differ")
	}
	g := roundTrip(t, l).(*List)
	if !reflect.DeepEqual(g.Elements(), l.Elements()) {
		t.Fatal("list differs after decode")
	}
}

type zpair struct {
	m string
	s float64
}

func sortedModel(m map[string]float64) []zpair {
	out := make([]zpair, 0, len(m))
	for k, v := range m {
		out = append(out, zpair{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].s < out[j].s || (out[i].s == out[j].s && out[i].m < out[j].m)
	})
	return out
}

// TestZSetModel checks ranks, ranges and counts against a sorted slice.
func TestZSetModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	z := NewZSet()
	model := map[string]float64{}
	for i := 0; i < 3000; i++ {
		m := fmt.Sprint(r.IntN(500))
		if r.IntN(4) == 0 {
			z.Remove(m)
			delete(model, m)
		} else {
			s := float64(r.IntN(50))
			z.Set(m, s)
			model[m] = s
		}
	}
	want := sortedModel(model)
	if z.Len() != len(want) {
		t.Fatalf("len %d want %d", z.Len(), len(want))
	}
	for i, p := range want {
		if rk, _ := z.Rank(p.m, false); rk != i {
			t.Fatalf("rank of %s = %d want %d", p.m, rk, i)
		}
		if rk, _ := z.Rank(p.m, true); rk != len(want)-1-i {
			t.Fatalf("revrank of %s wrong", p.m)
		}
	}
	var got []zpair
	z.RangeByRank(10, 20, false, func(m string, s float64) bool { got = append(got, zpair{m, s}); return true })
	if !reflect.DeepEqual(got, want[10:21]) {
		t.Fatalf("RangeByRank: %v", got)
	}
	for _, rg := range []ScoreRange{{Min: 10, Max: 20}, {Min: 10, Max: 20, MinEx: true, MaxEx: true}, {Min: 49, Max: 100}, {Min: 30, Max: 5}} {
		var exp []zpair
		for _, p := range want {
			if rg.Contains(p.s) {
				exp = append(exp, p)
			}
		}
		if n := z.CountByScore(rg); n != len(exp) {
			t.Fatalf("CountByScore(%+v) = %d want %d", rg, n, len(exp))
		}
		got = nil
		z.RangeByScore(rg, false, 3, 5, func(m string, s float64) bool { got = append(got, zpair{m, s}); return true })
		var e2 []zpair
		if len(exp) > 3 {
			e2 = exp[3:min(8, len(exp))]
		}
		if !reflect.DeepEqual(got, e2) {
			t.Fatalf("RangeByScore(%+v) offset 3 limit 5 = %v want %v", rg, got, e2)
		}
		got = nil
		z.RangeByScore(rg, true, 0, -1, func(m string, s float64) bool { got = append(got, zpair{m, s}); return true })
		if len(got) != len(exp) || (len(got) > 0 && got[0] != exp[len(exp)-1]) {
			t.Fatalf("reverse RangeByScore(%+v) wrong", rg)
		}
	}
	g := roundTrip(t, z).(*ZSet)
	var all []zpair
	g.Range(func(m string, s float64) bool { all = append(all, zpair{m, s}); return true })
	if !reflect.DeepEqual(all, want) {
		t.Fatal("zset differs after decode")
	}
}

func TestZSetLex(t *testing.T) {
	z := NewZSet()
	for _, m := range []string{"a", "b", "c", "d", "e"} {
		z.Set(m, 0)
	}
	collect := func(r LexRange, rev bool) (out []string) {
		z.RangeByLex(r, rev, 0, -1, func(m string, _ float64) bool { out = append(out, m); return true })
		return
	}
	r := LexRange{Min: LexBound{Value: "b"}, Max: LexBound{Value: "d", Ex: true}}
	if got := collect(r, false); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Fatalf("[b (d: %v", got)
	}
	if got := collect(r, true); !reflect.DeepEqual(got, []string{"c", "b"}) {
		t.Fatalf("rev [b (d: %v", got)
	}
	all := LexRange{Min: LexBound{Inf: -1}, Max: LexBound{Inf: 1}}
	if n := z.CountByLex(all); n != 5 {
		t.Fatalf("count - + = %d", n)
	}
	if n := z.CountByLex(LexRange{Min: LexBound{Inf: 1}, Max: LexBound{Inf: 1}}); n != 0 {
		t.Fatalf("count + + = %d", n)
	}
}

func TestExHash(t *testing.T) {
	h := NewExHash()
	h.Set("a", ExField{Value: "1", Version: 1})
	h.Set("b", ExField{Value: "2", Version: 3, ExpireAt: 1000})
	h.Set("c", ExField{Value: "3", Version: 1, ExpireAt: 2000})
	if h.Get("b", 1000) == nil || h.Get("b", 1001) != nil {
		t.Fatal("a field lives up to and including its expiry")
	}
	if h.Live(1500) != 2 || h.Len() != 3 {
		t.Fatal("Live/Len")
	}
	if h.MaxExpire() != 0 {
		t.Fatal("MaxExpire with a persistent field")
	}
	if n := h.PurgeDue(999); n != 0 {
		t.Fatal("purged too early")
	}
	h.AutoExpire = 77
	g := roundTrip(t, h).(*ExHash)
	if g.AutoExpire != 77 || *g.m["b"] != *h.m["b"] {
		t.Fatal("exhash differs after decode")
	}
	if n := h.PurgeDue(1500); n != 1 || h.Len() != 2 {
		t.Fatalf("PurgeDue(1500) = %d", n)
	}
	h.Delete("a")
	if h.MaxExpire() != 2000 {
		t.Fatal("MaxExpire")
	}
	if n := h.PurgeDue(1800); n != 0 {
		t.Fatal("nothing is due at 1800")
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, typ := range []engines.ValueType{engines.TypeHash, engines.TypeList, engines.TypeSet, engines.TypeZSet, engines.TypeExHash} {
		for _, b := range [][]byte{nil, {1}, {2, byte(typ), 0}, {1, byte(typ), 200, 1}} {
			if _, err := engines.DecodeObject(typ, b); err == nil {
				t.Errorf("%s: decoded %v", typ, b)
			}
		}
	}
}

func BenchmarkZSetAdd(b *testing.B) {
	z := NewZSet()
	for i := 0; i < b.N; i++ {
		z.Set(fmt.Sprint(i%100000), float64(i%1000))
	}
}
