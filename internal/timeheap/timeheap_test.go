package timeheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type at int64

func (a at) When() int64 { return int64(a) }

// Entries come out in time order, whatever order they went in, pushed
// one by one or ordered at once by Init.
func TestOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var in []int64
	var h []at
	for range 1000 {
		v := r.Int64N(500)
		in = append(in, v)
		h = Push(h, at(v))
	}
	built := make([]at, len(in))
	for i, v := range in {
		built[i] = at(v)
	}
	Init(built)
	slices.Sort(in)
	for i, want := range in {
		var a, b at
		h, a = Pop(h)
		built, b = Pop(built)
		if int64(a) != want || int64(b) != want {
			t.Fatalf("pop %d: %d and %d, want %d", i, a, b, want)
		}
	}
	if len(h) != 0 || len(built) != 0 {
		t.Fatalf("left: %d, %d", len(h), len(built))
	}
}

// Pop zeroes the slot it vacates, so the slice keeps nothing alive.
func TestPopClearsTheSlot(t *testing.T) {
	h := []entry{{1, new(int)}, {2, new(int)}}
	h, _ = Pop(h)
	if full := h[:2]; full[1].ref != nil {
		t.Fatal("the vacated slot still holds its pointer")
	}
}

type entry struct {
	t   int64
	ref *int
}

func (e entry) When() int64 { return e.t }
