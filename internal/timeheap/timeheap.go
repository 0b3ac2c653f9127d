// Package timeheap is a binary min-heap of schedule entries ordered by a
// time, kept in a plain slice the caller owns: unlike container/heap it
// boxes nothing per entry, so a heap of a million field expiries costs
// its slice and no garbage.
package timeheap

// Entry is what a heap holds: ordered by When (unix ms, say).
type Entry interface {
	When() int64
}

// Push adds x to h.
func Push[T Entry](h []T, x T) []T {
	h = append(h, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].When() <= h[i].When() {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

// Pop removes the earliest entry of h (which must not be empty) and
// returns it; the vacated slot is zeroed so that it keeps nothing alive.
func Pop[T Entry](h []T) ([]T, T) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	var zero T
	h[last] = zero
	h = h[:last]
	siftDown(h, 0)
	return h, top
}

// Init orders h, built in any order, as a heap.
func Init[T Entry](h []T) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func siftDown[T Entry](h []T, i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1].When() < h[c].When() {
			c++
		}
		if h[i].When() <= h[c].When() {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
