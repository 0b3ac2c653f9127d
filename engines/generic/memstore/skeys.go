package memstore

import (
	"bytes"

	"github.com/tairkv/tair/engines/generic/slab"
)

// skeyList is a pkey's skeys in byte order: a sorted list of record
// handles cut into chunks of at most chunkMax, so that an insertion or a
// deletion moves at most a chunk and the structure holds one Go pointer
// per chunk, not per skey. Lookups binary-search the chunks by their last
// skey and then the chunk, comparing skeys read from the arena; they only
// read, so they run under the shard's shared lock.
type skeyList struct {
	chunks [][]slab.Handle
	n      int
}

const chunkMax = 128

// pos is a position in a skeyList.
type pos struct{ c, i int }

// search returns the position of the first skey >= key, and whether it
// equals key. The position is past the end (c == len(chunks)) when every
// skey is smaller.
func (l *skeyList) search(sh *shard, key []byte) (pos, bool) {
	lo, hi := 0, len(l.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c := l.chunks[m]
		if bytes.Compare(sh.keyOf(c[len(c)-1]), key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(l.chunks) {
		return pos{lo, 0}, false
	}
	c := l.chunks[lo]
	i, j := 0, len(c)
	for i < j {
		m := int(uint(i+j) >> 1)
		if bytes.Compare(sh.keyOf(c[m]), key) < 0 {
			i = m + 1
		} else {
			j = m
		}
	}
	return pos{lo, i}, bytes.Equal(sh.keyOf(c[i]), key)
}

// get returns the handle of key, or 0.
func (l *skeyList) get(sh *shard, key []byte) slab.Handle {
	if p, ok := l.search(sh, key); ok {
		return l.chunks[p.c][p.i]
	}
	return 0
}

// insertAt inserts h at p (a position search returned).
func (l *skeyList) insertAt(p pos, h slab.Handle) {
	l.n++
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, append(make([]slab.Handle, 0, 4), h))
		return
	}
	if p.c == len(l.chunks) {
		p.c = len(l.chunks) - 1
		p.i = len(l.chunks[p.c])
	}
	c := l.chunks[p.c]
	c = append(c, 0)
	copy(c[p.i+1:], c[p.i:])
	c[p.i] = h
	if len(c) <= chunkMax {
		l.chunks[p.c] = c
		return
	}
	half := len(c) / 2
	right := append(make([]slab.Handle, 0, chunkMax), c[half:]...)
	left := c[:half]
	l.chunks = append(l.chunks, nil)
	copy(l.chunks[p.c+2:], l.chunks[p.c+1:])
	l.chunks[p.c] = left
	l.chunks[p.c+1] = right
}

// deleteAt removes the handle at p.
func (l *skeyList) deleteAt(p pos) {
	l.n--
	c := l.chunks[p.c]
	copy(c[p.i:], c[p.i+1:])
	c = c[:len(c)-1]
	if len(c) > 0 {
		l.chunks[p.c] = c
		return
	}
	copy(l.chunks[p.c:], l.chunks[p.c+1:])
	l.chunks[len(l.chunks)-1] = nil
	l.chunks = l.chunks[:len(l.chunks)-1]
}

// ascend calls fn with the handles from p on, in order, until it returns
// false.
func (l *skeyList) ascend(p pos, fn func(slab.Handle) bool) {
	for c := p.c; c < len(l.chunks); c++ {
		ch := l.chunks[c]
		i := 0
		if c == p.c {
			i = p.i
		}
		for ; i < len(ch); i++ {
			if !fn(ch[i]) {
				return
			}
		}
	}
}

// descend calls fn with the handles before p, in reverse order, until it
// returns false.
func (l *skeyList) descend(p pos, fn func(slab.Handle) bool) {
	c, i := p.c, p.i
	if c == len(l.chunks) {
		c--
		if c < 0 {
			return
		}
		i = len(l.chunks[c])
	}
	for ; c >= 0; c-- {
		ch := l.chunks[c]
		for i--; i >= 0; i-- {
			if !fn(ch[i]) {
				return
			}
		}
		if c > 0 {
			i = len(l.chunks[c-1])
		}
	}
}

// end is the position past the last handle.
func (l *skeyList) end() pos { return pos{len(l.chunks), 0} }

// all returns every handle in order.
func (l *skeyList) all() []slab.Handle {
	out := make([]slab.Handle, 0, l.n)
	for _, c := range l.chunks {
		out = append(out, c...)
	}
	return out
}
