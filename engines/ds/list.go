package ds

import (
	"github.com/tairkv/tair/engines"
)

// List is a Redis list: a growable ring buffer, so pushes and pops at both
// ends and indexing are O(1); inserts and removals in the middle are O(n).
type List struct {
	buf  []string
	head int
	n    int
	size int
}

var _ engines.Object = (*List)(nil)

// NewList returns an empty list.
func NewList() *List { return &List{} }

func (l *List) Type() engines.ValueType { return engines.TypeList }
func (l *List) Len() int                { return l.n }
func (l *List) Size() int               { return objectOverhead + l.size + stringOverhead*cap(l.buf) }

func (l *List) grow() {
	c := 2 * len(l.buf)
	if c < 8 {
		c = 8
	}
	nb := make([]string, c)
	l.copyTo(nb)
	l.buf, l.head = nb, 0
}

func (l *List) copyTo(dst []string) {
	if l.n == 0 {
		return
	}
	end := l.head + l.n
	if end <= len(l.buf) {
		copy(dst, l.buf[l.head:end])
		return
	}
	k := copy(dst, l.buf[l.head:])
	copy(dst[k:], l.buf[:end-len(l.buf)])
}

func (l *List) shrink() {
	if len(l.buf) > 64 && l.n < len(l.buf)/4 {
		nb := make([]string, len(l.buf)/2)
		l.copyTo(nb)
		l.buf, l.head = nb, 0
	}
}

func (l *List) pos(i int) int {
	p := l.head + i
	if p >= len(l.buf) {
		p -= len(l.buf)
	}
	return p
}

// PushFront adds v at the head (LPUSH).
func (l *List) PushFront(v string) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.head--
	if l.head < 0 {
		l.head += len(l.buf)
	}
	l.buf[l.head] = v
	l.n++
	l.size += len(v)
}

// PushBack adds v at the tail (RPUSH).
func (l *List) PushBack(v string) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.buf[l.pos(l.n)] = v
	l.n++
	l.size += len(v)
}

// PopFront removes and returns the head.
func (l *List) PopFront() (string, bool) {
	if l.n == 0 {
		return "", false
	}
	v := l.buf[l.head]
	l.buf[l.head] = ""
	l.head = l.pos(1)
	return l.popped(v), true
}

// PopBack removes and returns the tail.
func (l *List) PopBack() (string, bool) {
	if l.n == 0 {
		return "", false
	}
	p := l.pos(l.n - 1)
	v := l.buf[p]
	l.buf[p] = ""
	return l.popped(v), true
}

// popped accounts for v, just taken off one end, and returns it.
func (l *List) popped(v string) string {
	l.n--
	l.size -= len(v)
	if l.n == 0 {
		l.head = 0
	}
	l.shrink()
	return v
}

// Index returns element i (0 <= i < Len).
func (l *List) Index(i int) string { return l.buf[l.pos(i)] }

// SetIndex replaces element i (0 <= i < Len).
func (l *List) SetIndex(i int, v string) {
	p := l.pos(i)
	l.size += len(v) - len(l.buf[p])
	l.buf[p] = v
}

// Range calls fn for elements start..stop (inclusive, 0 <= start <= stop <
// Len) until it returns false.
func (l *List) Range(start, stop int, fn func(i int, v string) bool) {
	for i := start; i <= stop; i++ {
		if !fn(i, l.buf[l.pos(i)]) {
			return
		}
	}
}

// RangeRev is Range from stop down to start.
func (l *List) RangeRev(start, stop int, fn func(i int, v string) bool) {
	for i := stop; i >= start; i-- {
		if !fn(i, l.buf[l.pos(i)]) {
			return
		}
	}
}

// Insert puts v before element i (0 <= i <= Len; i == Len appends).
func (l *List) Insert(i int, v string) {
	if i == 0 {
		l.PushFront(v)
		return
	}
	if i == l.n {
		l.PushBack(v)
		return
	}
	if l.n == len(l.buf) {
		l.grow()
	}
	// shift the tail part right by one
	l.n++
	for j := l.n - 1; j > i; j-- {
		l.buf[l.pos(j)] = l.buf[l.pos(j-1)]
	}
	l.buf[l.pos(i)] = v
	l.size += len(v)
}

// Filter keeps the elements for which keep returns true, in order, and
// returns how many were removed.
func (l *List) Filter(keep func(i int, v string) bool) int {
	w := 0
	removed := 0
	for r := 0; r < l.n; r++ {
		v := l.buf[l.pos(r)]
		if keep(r, v) {
			if w != r {
				l.buf[l.pos(w)] = v
			}
			w++
		} else {
			l.size -= len(v)
			removed++
		}
	}
	for j := w; j < l.n; j++ {
		l.buf[l.pos(j)] = ""
	}
	l.n = w
	if l.n == 0 {
		l.head = 0
	}
	l.shrink()
	return removed
}

// Trim keeps elements start..stop (inclusive); start > stop empties the
// list. Bounds must already be clamped to [0, Len).
func (l *List) Trim(start, stop int) {
	if start > stop || start >= l.n {
		l.Filter(func(int, string) bool { return false })
		return
	}
	for k := l.n - 1 - stop; k > 0; k-- {
		l.PopBack()
	}
	for k := start; k > 0; k-- {
		l.PopFront()
	}
}

// Elements returns a copy of all elements head to tail.
func (l *List) Elements() []string {
	out := make([]string, l.n)
	l.copyTo(out)
	return out
}

// MarshalBinary encodes the list.
func (l *List) MarshalBinary() ([]byte, error) {
	e := newEncoder(engines.TypeList, l.n, l.size+l.n)
	l.Range(0, l.n-1, func(_ int, v string) bool { e.str(v); return true })
	return e.b, nil
}

// DecodeList reverses MarshalBinary.
func DecodeList(b []byte) (*List, error) {
	d, n := newDecoder(b, engines.TypeList)
	l := &List{buf: make([]string, max(n, 8))}
	for i := 0; i < n && d.err == nil; i++ {
		l.PushBack(d.str())
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return l, nil
}
