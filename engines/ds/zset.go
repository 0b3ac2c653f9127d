package ds

import (
	"math"
	"math/rand/v2"

	"github.com/tairkv/tair/engines"
)

// ZSet is a Redis sorted set: a member -> score map plus a skip list with
// spans (Redis's zskiplist) ordered by score, then member bytes, so rank,
// range-by-rank and range-by-score cost O(log n) to find.
type ZSet struct {
	m    map[string]float64
	sl   *skiplist
	size int
	// long counts the members longer than listpackMaxValue (see Set).
	long int
}

// Redis keeps a sorted set of at most listpackMaxEntries members, none
// longer than listpackMaxValue bytes, in a listpack
// (zset-max-listpack-entries and -value), as OBJECT ENCODING reports.
const (
	listpackMaxEntries = 128
	listpackMaxValue   = 64
)

var _ engines.Object = (*ZSet)(nil)

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet { return &ZSet{m: make(map[string]float64), sl: newSkiplist()} }

func (z *ZSet) Type() engines.ValueType { return engines.TypeZSet }
func (z *ZSet) Len() int                { return len(z.m) }
func (z *ZSet) Size() int               { return objectOverhead + z.size }

func zsetEntrySize(m string) int { return mapSlotOverhead + 64 + len(m) }

// Score returns member's score.
func (z *ZSet) Score(member string) (float64, bool) {
	s, ok := z.m[member]
	return s, ok
}

// Set sets member's score and reports whether the member is new.
//
// A score of -0 is stored as 0 when the set is listpack-sized once the
// member is in, as Redis does: a listpack holds a score as the string
// d2string writes ("-0"), which it stores as an integer when it parses
// as one, and "-0" parses as 0; a skiplist keeps the double and its sign.
// (Redis never converts a skiplist back when it shrinks; like OBJECT
// ENCODING here, this follows the set's current size.)
func (z *ZSet) Set(member string, score float64) bool {
	if score == 0 && math.Signbit(score) {
		n, long := len(z.m), z.long
		if _, ok := z.m[member]; !ok {
			n++
			if len(member) > listpackMaxValue {
				long++
			}
		}
		if n <= listpackMaxEntries && long == 0 {
			score = 0
		}
	}
	return z.set(member, score)
}

// SetSigned is Set keeping a -0 score whatever the set's size, as
// Redis's skiplist does: for a set Redis builds as a skiplist, a
// ZUNION's reply or a ZUNIONSTORE's destination before
// SettleListpackScores.
func (z *ZSet) SetSigned(member string, score float64) bool { return z.set(member, score) }

// SettleListpackScores stores each -0 score as 0 when the set is
// listpack-sized: Redis converting a set it built as a skiplist
// (ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE) to a listpack once it is
// complete.
func (z *ZSet) SettleListpackScores() {
	if len(z.m) > listpackMaxEntries || z.long > 0 {
		return
	}
	for m, s := range z.m {
		if s == 0 && math.Signbit(s) {
			z.sl.delete(s, m)
			z.sl.insert(0, m)
			z.m[m] = 0
		}
	}
}

// set is Set without the listpack's -0 rule (a decoded set keeps the
// scores it was encoded with).
func (z *ZSet) set(member string, score float64) bool {
	old, ok := z.m[member]
	if ok {
		if old == score {
			return false
		}
		z.sl.delete(old, member)
	} else {
		z.size += zsetEntrySize(member)
		if len(member) > listpackMaxValue {
			z.long++
		}
	}
	z.sl.insert(score, member)
	z.m[member] = score
	return !ok
}

// Remove removes member and reports whether it was there.
func (z *ZSet) Remove(member string) bool {
	s, ok := z.m[member]
	if !ok {
		return false
	}
	z.sl.delete(s, member)
	delete(z.m, member)
	z.size -= zsetEntrySize(member)
	if len(member) > listpackMaxValue {
		z.long--
	}
	return true
}

// Rank returns member's 0-based rank, from the highest score when rev.
func (z *ZSet) Rank(member string, rev bool) (int, bool) {
	s, ok := z.m[member]
	if !ok {
		return 0, false
	}
	r := z.sl.rank(s, member)
	if rev {
		return z.sl.length - r, true
	}
	return r - 1, true
}

// RangeByRank calls fn for ranks start..stop (0-based, inclusive, already
// clamped to [0, Len)), counted from the highest score when rev.
func (z *ZSet) RangeByRank(start, stop int, rev bool, fn func(member string, score float64) bool) {
	if start > stop || start >= z.sl.length {
		return
	}
	var x *zNode
	if rev {
		x = z.sl.byRank(z.sl.length - start)
	} else {
		x = z.sl.byRank(start + 1)
	}
	for n := stop - start + 1; n > 0 && x != nil; n-- {
		if !fn(x.member, x.score) {
			return
		}
		if rev {
			x = x.back
		} else {
			x = x.level[0].next
		}
	}
}

// ScoreRange is a score interval; MinEx/MaxEx make an end exclusive.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

func (r *ScoreRange) gteMin(v float64) bool {
	if r.MinEx {
		return v > r.Min
	}
	return v >= r.Min
}

func (r *ScoreRange) lteMax(v float64) bool {
	if r.MaxEx {
		return v < r.Max
	}
	return v <= r.Max
}

// Contains reports whether v is in the range.
func (r *ScoreRange) Contains(v float64) bool { return r.gteMin(v) && r.lteMax(v) }

func (r *ScoreRange) empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// LexBound is one end of a lex range: Inf -1 is "-", +1 is "+", else Value
// inclusive ("[v") or exclusive ("(v", Ex).
type LexBound struct {
	Value string
	Ex    bool
	Inf   int
}

// LexRange is a member interval for sorted sets whose scores are equal.
type LexRange struct{ Min, Max LexBound }

func (r *LexRange) gteMin(v string) bool {
	switch r.Min.Inf {
	case -1:
		return true
	case 1:
		return false
	}
	if r.Min.Ex {
		return v > r.Min.Value
	}
	return v >= r.Min.Value
}

func (r *LexRange) lteMax(v string) bool {
	switch r.Max.Inf {
	case 1:
		return true
	case -1:
		return false
	}
	if r.Max.Ex {
		return v < r.Max.Value
	}
	return v <= r.Max.Value
}

// Contains reports whether v is in the range.
func (r *LexRange) Contains(v string) bool { return r.gteMin(v) && r.lteMax(v) }

func lexCmp(a, b LexBound) int {
	if a.Inf == b.Inf && a.Inf != 0 {
		return 0
	}
	if a.Inf == -1 || b.Inf == 1 {
		return -1
	}
	if a.Inf == 1 || b.Inf == -1 {
		return 1
	}
	switch {
	case a.Value < b.Value:
		return -1
	case a.Value > b.Value:
		return 1
	}
	return 0
}

func (r *LexRange) empty() bool {
	c := lexCmp(r.Min, r.Max)
	return c > 0 || (c == 0 && (r.Min.Ex || r.Max.Ex || r.Min.Inf != 0))
}

// rangeWalk walks from the first (or, rev, last) node in range, skipping
// offset nodes, calling fn while the node stays in range and limit (< 0:
// none) allows.
func (z *ZSet) rangeWalk(first, last *zNode, rev bool, offset, limit int, in func(x *zNode) bool, fn func(string, float64) bool) {
	x := first
	if rev {
		x = last
	}
	if x == nil {
		return
	}
	if offset > 0 {
		r := z.sl.rank(x.score, x.member)
		if rev {
			r -= offset
		} else {
			r += offset
		}
		if r < 1 || r > z.sl.length {
			return
		}
		x = z.sl.byRank(r)
	}
	for x != nil && limit != 0 && in(x) {
		if !fn(x.member, x.score) {
			return
		}
		limit--
		if rev {
			x = x.back
		} else {
			x = x.level[0].next
		}
	}
}

// RangeByScore calls fn for the members in r, in score order (descending
// when rev), skipping offset of them and stopping after limit (< 0: no
// limit) or when fn returns false.
func (z *ZSet) RangeByScore(r ScoreRange, rev bool, offset, limit int, fn func(member string, score float64) bool) {
	if offset < 0 {
		return
	}
	var first, last *zNode
	if rev {
		last = z.sl.lastInScore(&r)
	} else {
		first = z.sl.firstInScore(&r)
	}
	in := func(x *zNode) bool {
		if rev {
			return r.gteMin(x.score)
		}
		return r.lteMax(x.score)
	}
	z.rangeWalk(first, last, rev, offset, limit, in, fn)
}

// RangeByLex is RangeByScore for a lex range.
func (z *ZSet) RangeByLex(r LexRange, rev bool, offset, limit int, fn func(member string, score float64) bool) {
	if offset < 0 {
		return
	}
	var first, last *zNode
	if rev {
		last = z.sl.lastInLex(&r)
	} else {
		first = z.sl.firstInLex(&r)
	}
	in := func(x *zNode) bool {
		if rev {
			return r.gteMin(x.member)
		}
		return r.lteMax(x.member)
	}
	z.rangeWalk(first, last, rev, offset, limit, in, fn)
}

// CountByScore returns how many members have a score in r, in O(log n).
func (z *ZSet) CountByScore(r ScoreRange) int {
	f := z.sl.firstInScore(&r)
	if f == nil {
		return 0
	}
	l := z.sl.lastInScore(&r)
	if l == nil {
		return 0
	}
	return z.sl.rank(l.score, l.member) - z.sl.rank(f.score, f.member) + 1
}

// CountByLex returns how many members are in r, in O(log n).
func (z *ZSet) CountByLex(r LexRange) int {
	f := z.sl.firstInLex(&r)
	if f == nil {
		return 0
	}
	l := z.sl.lastInLex(&r)
	if l == nil {
		return 0
	}
	return z.sl.rank(l.score, l.member) - z.sl.rank(f.score, f.member) + 1
}

// Min returns the member with the lowest score (Max the highest).
func (z *ZSet) Min() (string, float64, bool) {
	x := z.sl.head.level[0].next
	if x == nil {
		return "", 0, false
	}
	return x.member, x.score, true
}

// Max returns the member with the highest score.
func (z *ZSet) Max() (string, float64, bool) {
	x := z.sl.tail
	if x == nil {
		return "", 0, false
	}
	return x.member, x.score, true
}

// Range calls fn for every member in score order until it returns false.
func (z *ZSet) Range(fn func(member string, score float64) bool) {
	for x := z.sl.head.level[0].next; x != nil; x = x.level[0].next {
		if !fn(x.member, x.score) {
			return
		}
	}
}

// RangeUnordered calls fn for every member in the order of its member
// map until it returns false: cheaper than Range (no skip-list walk), and,
// being a Go map iteration, it may be paused (iter.Pull2) while the set
// changes between its steps: a member removed before it is reached is not
// produced, one added may or may not be, the score produced is the
// member's current one.
func (z *ZSet) RangeUnordered(fn func(member string, score float64) bool) {
	for m, s := range z.m {
		if !fn(m, s) {
			return
		}
	}
}

// MarshalBinary encodes the sorted set in score order.
func (z *ZSet) MarshalBinary() ([]byte, error) {
	e := newEncoder(engines.TypeZSet, len(z.m), z.size)
	z.Range(func(m string, s float64) bool { e.str(m); e.float(s); return true })
	return e.b, nil
}

// DecodeZSet reverses MarshalBinary.
func DecodeZSet(b []byte) (*ZSet, error) {
	d, n := newDecoder(b, engines.TypeZSet)
	z := &ZSet{m: make(map[string]float64, n), sl: newSkiplist()}
	for i := 0; i < n && d.err == nil; i++ {
		m := d.str()
		s := d.float()
		if d.err == nil {
			z.set(m, s)
		}
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return z, nil
}

// skiplist is Redis's zskiplist: level-0 is a doubly linked list; every
// forward pointer carries the number of nodes it skips (span), which gives
// ranks.

const zMaxLevel = 32

type zLevel struct {
	next *zNode
	span int
}

type zNode struct {
	member string
	score  float64
	back   *zNode
	level  []zLevel
}

type skiplist struct {
	head, tail *zNode
	length     int
	level      int
}

func newSkiplist() *skiplist {
	return &skiplist{head: &zNode{level: make([]zLevel, zMaxLevel)}, level: 1}
}

func zLess(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

func randomLevel() int {
	l := 1
	for l < zMaxLevel && rand.Uint32()&0xFFFF < 0xFFFF/4 {
		l++
	}
	return l
}

func (sl *skiplist) insert(score float64, member string) *zNode {
	var update [zMaxLevel]*zNode
	var rank [zMaxLevel]int
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		if i != sl.level-1 {
			rank[i] = rank[i+1]
		}
		for n := x.level[i].next; n != nil && zLess(n.score, n.member, score, member); n = x.level[i].next {
			rank[i] += x.level[i].span
			x = n
		}
		update[i] = x
	}
	lvl := randomLevel()
	if lvl > sl.level {
		for i := sl.level; i < lvl; i++ {
			rank[i] = 0
			update[i] = sl.head
			update[i].level[i].span = sl.length
		}
		sl.level = lvl
	}
	x = &zNode{member: member, score: score, level: make([]zLevel, lvl)}
	for i := 0; i < lvl; i++ {
		x.level[i].next = update[i].level[i].next
		update[i].level[i].next = x
		x.level[i].span = update[i].level[i].span - (rank[0] - rank[i])
		update[i].level[i].span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < sl.level; i++ {
		update[i].level[i].span++
	}
	if update[0] != sl.head {
		x.back = update[0]
	}
	if x.level[0].next != nil {
		x.level[0].next.back = x
	} else {
		sl.tail = x
	}
	sl.length++
	return x
}

func (sl *skiplist) deleteNode(x *zNode, update *[zMaxLevel]*zNode) {
	for i := 0; i < sl.level; i++ {
		if update[i].level[i].next == x {
			update[i].level[i].span += x.level[i].span - 1
			update[i].level[i].next = x.level[i].next
		} else {
			update[i].level[i].span--
		}
	}
	if x.level[0].next != nil {
		x.level[0].next.back = x.back
	} else {
		sl.tail = x.back
	}
	for sl.level > 1 && sl.head.level[sl.level-1].next == nil {
		sl.level--
	}
	sl.length--
}

func (sl *skiplist) delete(score float64, member string) bool {
	var update [zMaxLevel]*zNode
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for n := x.level[i].next; n != nil && zLess(n.score, n.member, score, member); n = x.level[i].next {
			x = n
		}
		update[i] = x
	}
	x = x.level[0].next
	if x != nil && x.score == score && x.member == member {
		sl.deleteNode(x, &update)
		return true
	}
	return false
}

// rank is the 1-based rank of (score, member); 0 when absent.
func (sl *skiplist) rank(score float64, member string) int {
	r := 0
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for n := x.level[i].next; n != nil && !zLess(score, member, n.score, n.member); n = x.level[i].next {
			r += x.level[i].span
			x = n
		}
		if x != sl.head && x.score == score && x.member == member {
			return r
		}
	}
	return 0
}

// byRank returns the node at 1-based rank r.
func (sl *skiplist) byRank(r int) *zNode {
	traversed := 0
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level[i].next != nil && traversed+x.level[i].span <= r {
			traversed += x.level[i].span
			x = x.level[i].next
		}
		if traversed == r {
			if x == sl.head {
				return nil
			}
			return x
		}
	}
	return nil
}

func (sl *skiplist) inScore(r *ScoreRange) bool {
	if r.empty() || sl.tail == nil || !r.gteMin(sl.tail.score) {
		return false
	}
	return r.lteMax(sl.head.level[0].next.score)
}

func (sl *skiplist) firstInScore(r *ScoreRange) *zNode {
	if !sl.inScore(r) {
		return nil
	}
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for n := x.level[i].next; n != nil && !r.gteMin(n.score); n = x.level[i].next {
			x = n
		}
	}
	x = x.level[0].next
	if x == nil || !r.lteMax(x.score) {
		return nil
	}
	return x
}

func (sl *skiplist) lastInScore(r *ScoreRange) *zNode {
	if !sl.inScore(r) {
		return nil
	}
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for n := x.level[i].next; n != nil && r.lteMax(n.score); n = x.level[i].next {
			x = n
		}
	}
	if x == sl.head || !r.gteMin(x.score) {
		return nil
	}
	return x
}

func (sl *skiplist) inLex(r *LexRange) bool {
	if r.empty() || sl.tail == nil || !r.gteMin(sl.tail.member) {
		return false
	}
	return r.lteMax(sl.head.level[0].next.member)
}

func (sl *skiplist) firstInLex(r *LexRange) *zNode {
	if !sl.inLex(r) {
		return nil
	}
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for n := x.level[i].next; n != nil && !r.gteMin(n.member); n = x.level[i].next {
			x = n
		}
	}
	x = x.level[0].next
	if x == nil || !r.lteMax(x.member) {
		return nil
	}
	return x
}

func (sl *skiplist) lastInLex(r *LexRange) *zNode {
	if !sl.inLex(r) {
		return nil
	}
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for n := x.level[i].next; n != nil && r.lteMax(n.member); n = x.level[i].next {
			x = n
		}
	}
	if x == sl.head || !r.gteMin(x.member) {
		return nil
	}
	return x
}
