package exec

// Redis sorted sets on *ds.ZSet objects (a skip list with spans, so ranks
// and ranges cost O(log n) to find). Scores are replied with
// resp.FormatFloat (Redis 7.2's shortest round-trip form) and as doubles
// in RESP3. BZPOPMIN/BZPOPMAX/BZMPOP make one non-blocking attempt (the
// proxy polls); ZUNIONSTORE and friends accept sets as inputs (score 1).

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/zsetop"
	"github.com/tairkv/tair/resp"
)

func init() {
	Register("zadd", cmdZAdd)
	Register("zincrby", cmdZIncrBy)
	Register("zscore", cmdZScore)
	Register("zmscore", cmdZMScore)
	Register("zcard", func(c *Ctx) { cmdLen(c, engines.TypeZSet) })
	Register("zcount", func(c *Ctx) { zcount(c, false) })
	Register("zlexcount", func(c *Ctx) { zcount(c, true) })
	Register("zrange", func(c *Ctx) { zrange(c, zrAuto, false, false, false) })
	Register("zrangestore", func(c *Ctx) { zrange(c, zrAuto, false, false, true) })
	Register("zrevrange", func(c *Ctx) { zrange(c, zrRank, true, true, false) })
	Register("zrangebyscore", func(c *Ctx) { zrange(c, zrScore, false, true, false) })
	Register("zrevrangebyscore", func(c *Ctx) { zrange(c, zrScore, true, true, false) })
	Register("zrangebylex", func(c *Ctx) { zrange(c, zrLex, false, true, false) })
	Register("zrevrangebylex", func(c *Ctx) { zrange(c, zrLex, true, true, false) })
	Register("zrank", func(c *Ctx) { zrank(c, false) })
	Register("zrevrank", func(c *Ctx) { zrank(c, true) })
	Register("zrem", cmdZRem)
	Register("zremrangebyrank", func(c *Ctx) { zremrange(c, zrRank) })
	Register("zremrangebyscore", func(c *Ctx) { zremrange(c, zrScore) })
	Register("zremrangebylex", func(c *Ctx) { zremrange(c, zrLex) })
	Register("zpopmin", func(c *Ctx) { zpop(c, true) })
	Register("zpopmax", func(c *Ctx) { zpop(c, false) })
	Register("zmpop", func(c *Ctx) { zmpop(c, 1, false) })
	Register("bzmpop", func(c *Ctx) { zmpop(c, 2, true) })
	Register("bzpopmin", func(c *Ctx) { bzpop(c, true) })
	Register("bzpopmax", func(c *Ctx) { bzpop(c, false) })
	Register("zunionstore", func(c *Ctx) { zsetOp(c, opUnion, true) })
	Register("zinterstore", func(c *Ctx) { zsetOp(c, opInter, true) })
	Register("zdiffstore", func(c *Ctx) { zsetOp(c, opDiff, true) })
	Register("zunion", func(c *Ctx) { zsetOp(c, opUnion, false) })
	Register("zinter", func(c *Ctx) { zsetOp(c, opInter, false) })
	Register("zdiff", func(c *Ctx) { zsetOp(c, opDiff, false) })
	Register("zintercard", cmdZInterCard)
	Register("zrandmember", cmdZRandMember)
	Register("zscan", cmdZScan)
}

const (
	errTextMinMaxFloat = "ERR min or max is not a float"
	errTextMinMaxLex   = "ERR min or max not valid string range item"
	errTextNaNScore    = "ERR resulting score is not a number (NaN)"
)

func newZSet() engines.Object { return ds.NewZSet() }

// zitem is one member with its score.
type zitem struct {
	m string
	s float64
}

// replyScored writes members, with scores when withScores (RESP3: an
// array of [member, double] pairs; RESP2: a flat array).
func replyScored(c *Ctx, items []zitem, withScores bool) {
	if !withScores {
		c.Array(len(items))
		for _, it := range items {
			c.BulkString(it.m)
		}
		return
	}
	if c.Proto >= 3 {
		c.Array(len(items))
		for _, it := range items {
			c.Array(2)
			c.BulkString(it.m)
			c.Double(it.s)
		}
		return
	}
	c.Array(2 * len(items))
	for _, it := range items {
		c.BulkString(it.m)
		c.Double(it.s)
	}
}

// zaddFlags are ZADD's options.
type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

// zaddOne applies one score/member pair; it returns whether the member was
// added, updated, and processed (not skipped), and the new score.
func zaddOne(z *ds.ZSet, f zaddFlags, score float64, m string) (added, updated, processed bool, ns float64, err error) {
	cur, exists := z.Score(m)
	if exists {
		if f.nx {
			return false, false, false, cur, nil
		}
		if f.incr {
			score += cur
			if math.IsNaN(score) {
				return false, false, false, 0, ReplyError(errTextNaNScore)
			}
		}
		if (f.lt && score >= cur) || (f.gt && score <= cur) {
			return false, false, false, cur, nil
		}
		if score != cur {
			z.Set(m, score)
			updated = true
		}
		return false, updated, true, score, nil
	}
	if f.xx {
		return false, false, false, 0, nil
	}
	z.Set(m, score)
	return true, false, true, score, nil
}

func cmdZAdd(c *Ctx) {
	var f zaddFlags
	i := 2
	for ; i < len(c.Args); i++ {
		a := c.Args[i]
		switch {
		case EqFold(a, "nx"):
			f.nx = true
		case EqFold(a, "xx"):
			f.xx = true
		case EqFold(a, "gt"):
			f.gt = true
		case EqFold(a, "lt"):
			f.lt = true
		case EqFold(a, "ch"):
			f.ch = true
		case EqFold(a, "incr"):
			f.incr = true
		default:
			goto pairs
		}
	}
pairs:
	elems := len(c.Args) - i
	if elems%2 != 0 || elems == 0 {
		c.SyntaxErr()
		return
	}
	elems /= 2
	if f.nx && f.xx {
		c.Error("ERR XX and NX options at the same time are not compatible")
		return
	}
	if (f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt) {
		c.Error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	if f.incr && elems > 1 {
		c.Error("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, elems)
	for j := range scores {
		s, ok := ParseFloat(c.Args[i+2*j])
		if !ok {
			c.Error(ErrTextNotFloat)
			return
		}
		scores[j] = s
	}
	if err := dsCheckValues(c, i+1, 2); err != nil {
		c.Fail(err)
		return
	}
	var added, updated, processed int
	var last float64
	mk := newZSet
	if f.xx {
		mk = nil
	}
	err := dsWrite(c, 1, engines.TypeZSet, mk, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		z := o.(*ds.ZSet)
		for j, s := range scores {
			a, u, p, ns, err := zaddOne(z, f, s, string(c.Args[i+2*j+1]))
			if err != nil {
				return engines.Keep, err
			}
			if a {
				added++
			}
			if u {
				updated++
			}
			if p {
				processed++
			}
			last = ns
		}
		if added+updated == 0 {
			return engines.Keep, nil
		}
		return engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if added+updated == 0 {
		c.NoPropagate()
	}
	if f.incr {
		if processed == 0 {
			c.Null()
		} else {
			c.Double(last)
		}
		return
	}
	if f.ch {
		c.Int(int64(added + updated))
	} else {
		c.Int(int64(added))
	}
}

func cmdZIncrBy(c *Ctx) {
	incr, ok := c.FloatArg(2)
	if !ok {
		return
	}
	if err := dsCheckValues(c, 3, 1); err != nil {
		c.Fail(err)
		return
	}
	var res float64
	err := dsWrite(c, 1, engines.TypeZSet, newZSet, func(o engines.Object) (engines.Action, error) {
		_, _, _, ns, err := zaddOne(o.(*ds.ZSet), zaddFlags{incr: true}, incr, string(c.Args[3]))
		res = ns
		if err != nil {
			return engines.Keep, err
		}
		return engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Double(res)
}

func cmdZScore(c *Ctx) {
	var s float64
	var ok bool
	_, err := dsRead(c, 1, engines.TypeZSet, func(o engines.Object) error {
		s, ok = o.(*ds.ZSet).Score(string(c.Args[2]))
		return nil
	})
	if readDone(c, ok, err) {
		c.Double(s)
	}
}

func cmdZMScore(c *Ctx) {
	n := len(c.Args) - 2
	scores := make([]float64, n)
	has := make([]bool, n)
	_, err := dsRead(c, 1, engines.TypeZSet, func(o engines.Object) error {
		z := o.(*ds.ZSet)
		for i := range scores {
			scores[i], has[i] = z.Score(string(c.Args[i+2]))
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Array(n)
	for i := range scores {
		if has[i] {
			c.Double(scores[i])
		} else {
			c.Null()
		}
	}
}

// parseScoreRange parses ZRANGEBYSCORE's min and max ("(" exclusive,
// -inf/+inf).
func parseScoreRange(min, max []byte) (ds.ScoreRange, bool) {
	var r ds.ScoreRange
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = parseScoreBound(min)
	r.Max, r.MaxEx, ok2 = parseScoreBound(max)
	return r, ok1 && ok2
}

func parseScoreBound(b []byte) (float64, bool, bool) {
	ex := false
	if len(b) > 0 && b[0] == '(' {
		ex = true
		b = b[1:]
	}
	if len(b) == 0 { // strtod("") is 0
		return 0, ex, true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !isRangeErr(err) || math.IsNaN(f) {
		return 0, false, false
	}
	return f, ex, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseLexRange parses ZRANGEBYLEX's min and max ("[x", "(x", "-", "+").
func parseLexRange(min, max []byte) (ds.LexRange, bool) {
	var r ds.LexRange
	var ok1, ok2 bool
	r.Min, ok1 = parseLexBound(min)
	r.Max, ok2 = parseLexBound(max)
	return r, ok1 && ok2
}

func parseLexBound(b []byte) (ds.LexBound, bool) {
	if len(b) == 0 {
		return ds.LexBound{}, false
	}
	switch b[0] {
	case '+':
		if len(b) == 1 {
			return ds.LexBound{Inf: 1, Ex: true}, true
		}
	case '-':
		if len(b) == 1 {
			return ds.LexBound{Inf: -1, Ex: true}, true
		}
	case '(':
		return ds.LexBound{Value: string(b[1:]), Ex: true}, true
	case '[':
		return ds.LexBound{Value: string(b[1:])}, true
	}
	return ds.LexBound{}, false
}

func zcount(c *Ctx, lex bool) {
	var sr ds.ScoreRange
	var lr ds.LexRange
	var ok bool
	if lex {
		if lr, ok = parseLexRange(c.Args[2], c.Args[3]); !ok {
			c.Error(errTextMinMaxLex)
			return
		}
	} else if sr, ok = parseScoreRange(c.Args[2], c.Args[3]); !ok {
		c.Error(errTextMinMaxFloat)
		return
	}
	n := 0
	_, err := dsRead(c, 1, engines.TypeZSet, func(o engines.Object) error {
		z := o.(*ds.ZSet)
		if lex {
			n = z.CountByLex(lr)
		} else {
			n = z.CountByScore(sr)
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

type zrangeKind int

const (
	zrAuto zrangeKind = iota
	zrRank
	zrScore
	zrLex
)

// zrangeSpec is a parsed ZRANGE-family request.
type zrangeSpec struct {
	kind          zrangeKind
	rev           bool
	start, stop   int64
	sr            ds.ScoreRange
	lr            ds.LexRange
	offset, limit int64
}

// collect returns the items of z the spec selects.
func (q *zrangeSpec) collect(z *ds.ZSet) []zitem {
	var out []zitem
	add := func(m string, s float64) bool { out = append(out, zitem{m, s}); return true }
	limit := int(q.limit)
	if q.limit < 0 || q.limit > 1<<31 {
		limit = -1
	}
	offset := int(min(q.offset, 1<<31))
	switch q.kind {
	case zrScore:
		z.RangeByScore(q.sr, q.rev, offset, limit, add)
	case zrLex:
		z.RangeByLex(q.lr, q.rev, offset, limit, add)
	default:
		s, e, ok := listBounds(q.start, q.stop, z.Len())
		if ok {
			z.RangeByRank(s, e, q.rev, add)
		}
	}
	return out
}

// parseZRange parses the range arguments at args[at], args[at+1] and the
// options after them, as Redis's zrangeGenericCommand does.
func parseZRange(c *Ctx, at int, kind zrangeKind, rev, legacy, store bool) (*zrangeSpec, bool, bool) {
	q := &zrangeSpec{kind: kind, rev: rev, limit: -1}
	withScores := false
	revSet := legacy
	for j := at + 2; j < len(c.Args); j++ {
		left := len(c.Args) - j - 1
		a := c.Args[j]
		switch {
		case !store && EqFold(a, "withscores"):
			withScores = true
		case EqFold(a, "limit") && left >= 2:
			off, ok1 := ParseInt(c.Args[j+1])
			lim, ok2 := ParseInt(c.Args[j+2])
			if !ok1 || !ok2 {
				c.Error(ErrTextNotInt)
				return nil, false, false
			}
			q.offset, q.limit = off, lim
			j += 2
		case !revSet && EqFold(a, "rev"):
			q.rev, revSet = true, true
		case q.kind == zrAuto && EqFold(a, "bylex"):
			q.kind = zrLex
		case q.kind == zrAuto && EqFold(a, "byscore"):
			q.kind = zrScore
		default:
			c.SyntaxErr()
			return nil, false, false
		}
	}
	if q.kind == zrAuto {
		q.kind = zrRank
	}
	if q.limit != -1 && q.kind == zrRank { // Redis: opt_limit != -1, so LIMIT o -1 passes
		c.Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return nil, false, false
	}
	if withScores && q.kind == zrLex {
		c.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return nil, false, false
	}
	lo, hi := c.Args[at], c.Args[at+1]
	if q.rev && q.kind != zrRank {
		lo, hi = hi, lo
	}
	if !q.bounds(c, lo, hi) {
		return nil, false, false
	}
	return q, withScores, true
}

// zrange serves ZRANGE, ZRANGESTORE and the legacy ZREVRANGE,
// Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX (legacy: the kind and direction are
// fixed by the name).
func zrange(c *Ctx, kind zrangeKind, rev, legacy, store bool) {
	src := 1
	if store {
		src = 2
		if !c.SameBucket(1, 2) {
			return
		}
	}
	q, withScores, ok := parseZRange(c, src+1, kind, rev, legacy, store)
	if !ok {
		return
	}
	var items []zitem
	_, err := dsRead(c, src, engines.TypeZSet, func(o engines.Object) error {
		items = q.collect(o.(*ds.ZSet))
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if store {
		// Redis adds them one by one to a listpack that turns into a
		// skiplist once too big (see ds.ZSet.Set on -0).
		storeZSetWith(c, len(items), func() *ds.ZSet {
			z := ds.NewZSet()
			for _, it := range items {
				z.Set(it.m, it.s)
			}
			return z
		})
		return
	}
	replyScored(c, items, withScores)
}

// zsetOf builds a sorted set of items as Redis builds a ZUNION's result:
// a skiplist, keeping -0 scores.
func zsetOf(items []zitem) *ds.ZSet {
	z := ds.NewZSet()
	for _, it := range items {
		z.SetSigned(it.m, it.s)
	}
	return z
}

func zrank(c *Ctx, rev bool) {
	withScore := false
	if len(c.Args) > 4 || (len(c.Args) == 4 && !EqFold(c.Args[3], "withscore")) {
		c.SyntaxErr()
		return
	}
	withScore = len(c.Args) == 4
	var rank int
	var score float64
	found := false
	_, err := dsRead(c, 1, engines.TypeZSet, func(o engines.Object) error {
		z := o.(*ds.ZSet)
		rank, found = z.Rank(string(c.Args[2]), rev)
		score, _ = z.Score(string(c.Args[2]))
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if !found {
		if withScore {
			c.NullArray()
		} else {
			c.Null()
		}
		return
	}
	if withScore {
		c.Array(2)
		c.Int(int64(rank))
		c.Double(score)
		return
	}
	c.Int(int64(rank))
}

func cmdZRem(c *Ctx) {
	removeMembers(c, engines.TypeZSet, func(o engines.Object, m string) bool { return o.(*ds.ZSet).Remove(m) })
}

// bounds parses lo and hi as the bounds of q's kind (ranks, scores or
// lex), replying the error when they are not; false then.
func (q *zrangeSpec) bounds(c *Ctx, lo, hi []byte) bool {
	switch q.kind {
	case zrRank:
		s, ok1 := ParseInt(lo)
		e, ok2 := ParseInt(hi)
		if !ok1 || !ok2 {
			c.Error(ErrTextNotInt)
			return false
		}
		q.start, q.stop = s, e
	case zrScore:
		r, ok := parseScoreRange(lo, hi)
		if !ok {
			c.Error(errTextMinMaxFloat)
			return false
		}
		q.sr = r
	case zrLex:
		r, ok := parseLexRange(lo, hi)
		if !ok {
			c.Error(errTextMinMaxLex)
			return false
		}
		q.lr = r
	}
	return true
}

// storeZSet ends a STORE form (ZRANGESTORE, ZUNIONSTORE ...): items
// become the zset at args[1] and the reply is their count.
func storeZSet(c *Ctx, items []zitem) {
	// Built as a skiplist, converted to a listpack when small enough.
	storeZSetWith(c, len(items), func() *ds.ZSet {
		z := zsetOf(items)
		z.SettleListpackScores()
		return z
	})
}

// storeZSetWith stores the set build makes at args[1] and replies its n
// members.
func storeZSetWith(c *Ctx, n int, build func() *ds.ZSet) {
	if err := storeObject(c, 1, engines.TypeZSet, func() engines.Object { return build() }); err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

func zremrange(c *Ctx, kind zrangeKind) {
	q := &zrangeSpec{kind: kind, limit: -1}
	if !q.bounds(c, c.Args[2], c.Args[3]) {
		return
	}
	n := 0
	err := dsWrite(c, 1, engines.TypeZSet, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		z := o.(*ds.ZSet)
		items := q.collect(z)
		for _, it := range items {
			z.Remove(it.m)
		}
		n = len(items)
		if n == 0 {
			return engines.Keep, nil
		}
		return engines.Store, nil
	})
	replyCount(c, n, err)
}

// zpopKey pops up to count members from the lowest (min) or highest end
// of the zset at k; found false when the key is missing.
func zpopKey(c *Ctx, k engines.Key, minEnd bool, count int) ([]zitem, bool, error) {
	var out []zitem
	found := false
	err := dsWriteKey(c, k, engines.TypeZSet, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		found = true
		z := o.(*ds.ZSet)
		for len(out) < count {
			var m string
			var s float64
			var ok bool
			if minEnd {
				m, s, ok = z.Min()
			} else {
				m, s, ok = z.Max()
			}
			if !ok {
				break
			}
			z.Remove(m)
			out = append(out, zitem{m, s})
		}
		if len(out) == 0 {
			return engines.Keep, nil
		}
		return engines.Store, nil
	})
	return out, found, err
}

func zpop(c *Ctx, minEnd bool) {
	count, hasCount, ok := oneCountArg(c, popCount)
	if !ok {
		return
	}
	out, _, err := zpopKey(c, c.Key(1), minEnd, int(min(count, 1<<31)))
	if err != nil {
		c.Fail(err)
		return
	}
	if len(out) == 0 {
		c.NoPropagate()
	}
	if hasCount && c.Proto >= 3 {
		replyScored(c, out, true)
		return
	}
	c.Array(2 * len(out))
	for _, it := range out {
		c.BulkString(it.m)
		c.Double(it.s)
	}
}

// parseMinMax parses MIN|MAX.
func parseMinMax(c *Ctx, i int) (minEnd, ok bool) { return parseChoice(c, i, "min", "max") }

// zmpop is ZMPOP and BZMPOP (see mpopArgs).
func zmpop(c *Ctx, nk int, blocking bool) {
	keys, minEnd, count, ok := mpopArgs(c, nk, blocking, parseMinMax)
	if !ok {
		return
	}
	popFromFirstKey(c, keys, func(k engines.Key) ([]zitem, error) {
		out, _, err := zpopKey(c, k, minEnd, count)
		return out, err
	}, func(i int, out []zitem) {
		c.Propagate(zpopName(minEnd), c.Args[i], []byte(strconv.Itoa(len(out))))
		c.Array(2)
		c.Bulk(c.Args[i])
		c.Array(len(out))
		for _, it := range out {
			c.Array(2)
			c.BulkString(it.m)
			c.Double(it.s)
		}
	})
}

func bzpop(c *Ctx, minEnd bool) {
	keys, ok := bpopKeys(c)
	if !ok {
		return
	}
	popFromFirstKey(c, keys, func(k engines.Key) ([]zitem, error) {
		out, _, err := zpopKey(c, k, minEnd, 1)
		return out, err
	}, func(i int, out []zitem) {
		c.Propagate(zpopName(minEnd), c.Args[i])
		c.Array(3)
		c.Bulk(c.Args[i])
		c.BulkString(out[0].m)
		c.Double(out[0].s)
	})
}

// zpopName is the single-key pop slaves replay for a pop from the low or
// the high end (BZPOPMIN, ZMPOP ... are propagated as ZPOPMIN and
// ZPOPMAX).
func zpopName(minEnd bool) []byte {
	if minEnd {
		return []byte("ZPOPMIN")
	}
	return []byte("ZPOPMAX")
}

// zsource reads a zset (or a set, scores 1) for ZUNION and friends.
func zsource(c *Ctx, i int) (map[string]float64, []zitem, bool, error) {
	var items []zitem
	found := false
	_, err := c.UpdateVisible(i, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		switch o := cur.Object.(type) {
		case *ds.ZSet:
			found = true
			items = make([]zitem, 0, o.Len())
			o.Range(func(m string, s float64) bool { items = append(items, zitem{m, s}); return true })
		case *ds.Set:
			found = true
			items = make([]zitem, 0, o.Len())
			o.Range(func(m string) bool { items = append(items, zitem{m, 1}); return true })
		default:
			return cur, engines.Keep, ReplyError(ErrTextWrongType)
		}
		return cur, engines.Keep, nil
	})
	if err == nil && !found && c.isPkey(c.Key(i)) {
		err = ReplyError(ErrTextWrongType) // a prefix-stored hash
	}
	if err != nil {
		return nil, nil, false, err
	}
	m := make(map[string]float64, len(items))
	for _, it := range items {
		m[it.m] = it.s
	}
	return m, items, found, nil
}

// zsetOp serves Z{UNION,INTER,DIFF}[STORE].
func zsetOp(c *Ctx, op setOpKind, store bool) {
	nk := 1
	if store {
		nk = 2
	}
	n, ok := zNumKeys(c, nk)
	if !ok {
		return
	}
	keys := dsRange(nk+1, nk+1+int(n))
	all := keys
	if store {
		all = append([]int{1}, keys...)
	}
	if !c.SameBucket(all...) {
		return
	}
	// Redis reads the sources (WRONGTYPE) before it parses the options
	// (syntax errors, weights).
	maps, lists, err := zload(c, keys)
	if err != nil {
		c.Fail(err)
		return
	}
	weights := make([]float64, n)
	for i := range weights {
		weights[i] = 1
	}
	agg := 0
	withScores := false
	for j := nk + 1 + int(n); j < len(c.Args); j++ {
		left := len(c.Args) - j - 1
		a := c.Args[j]
		switch {
		case op != opDiff && EqFold(a, "weights") && left >= int(n):
			for i := range weights {
				w, ok := ParseFloat(c.Args[j+1+i])
				if !ok {
					c.Error("ERR weight value is not a float")
					return
				}
				weights[i] = w
			}
			j += int(n)
		case op != opDiff && EqFold(a, "aggregate") && left >= 1:
			switch {
			case EqFold(c.Args[j+1], "sum"):
				agg = 0
			case EqFold(c.Args[j+1], "min"):
				agg = 1
			case EqFold(c.Args[j+1], "max"):
				agg = 2
			default:
				c.SyntaxErr()
				return
			}
			j++
		case !store && EqFold(a, "withscores"):
			withScores = true
		default:
			c.SyntaxErr()
			return
		}
	}
	res := zcombine(maps, lists, weights, agg, op)
	if store {
		storeZSet(c, res)
		return
	}
	// Reply in score order, as Redis builds a temporary zset.
	replyScored(c, zsetItems(zsetOf(res)), withScores)
}

func zsetItems(z *ds.ZSet) []zitem {
	out := make([]zitem, 0, z.Len())
	z.Range(func(m string, s float64) bool { out = append(out, zitem{m, s}); return true })
	return out
}

// zload reads the sources of a Z{UNION,INTER,DIFF}: WRONGTYPE unless
// each is a sorted set, a set or missing.
func zload(c *Ctx, keys []int) ([]map[string]float64, [][]zitem, error) {
	maps := make([]map[string]float64, len(keys))
	lists := make([][]zitem, len(keys))
	for i, k := range keys {
		m, items, _, err := zsource(c, k)
		if err != nil {
			return nil, nil, err
		}
		maps[i], lists[i] = m, items
	}
	return maps, lists, nil
}

// bySize orders the sources smallest first (zsetop.BySize).
func bySize(lists [][]zitem) []int {
	sizes := make([]int, len(lists))
	for i, l := range lists {
		sizes[i] = len(l)
	}
	return zsetop.BySize(sizes)
}

func zcombine(maps []map[string]float64, lists [][]zitem, weights []float64, agg int, op setOpKind) []zitem {
	var res []zitem
	switch op {
	case opUnion:
		acc := map[string]float64{}
		var order []string
		for _, i := range bySize(lists) {
			for _, it := range lists[i] {
				v := zsetop.Weighted(it.s, weights[i])
				if old, ok := acc[it.m]; ok {
					acc[it.m] = zsetop.Aggregate(agg, old, v)
				} else {
					acc[it.m] = v
					order = append(order, it.m)
				}
			}
		}
		for _, m := range order {
			res = append(res, zitem{m, acc[m]})
		}
	case opInter:
		// As Redis: the smallest source first; only the first score's
		// NaN is taken as 0, the others fold in as they are.
		order := bySize(lists)
	next:
		for _, it := range lists[order[0]] {
			v := zsetop.Weighted(it.s, weights[order[0]])
			for _, i := range order[1:] {
				s, ok := maps[i][it.m]
				if !ok {
					continue next
				}
				v = zsetop.Aggregate(agg, v, s*weights[i])
			}
			res = append(res, zitem{it.m, v})
		}
	default:
	nextd:
		for _, it := range lists[0] {
			for i := 1; i < len(maps); i++ {
				if _, ok := maps[i][it.m]; ok {
					continue nextd
				}
			}
			res = append(res, it)
		}
	}
	return res
}

// zNumKeys parses numkeys as ZUNION and friends do.
func zNumKeys(c *Ctx, i int) (int64, bool) {
	n, ok := ParseInt(c.Args[i])
	if !ok {
		c.Error(ErrTextNotInt)
		return 0, false
	}
	if n < 1 {
		c.Error("ERR at least 1 input key is needed for '" + dsName(c) + "' command")
		return 0, false
	}
	if n > int64(len(c.Args)-i-1) {
		c.SyntaxErr()
		return 0, false
	}
	return n, true
}

func cmdZInterCard(c *Ctx) {
	n, ok := zNumKeys(c, 1)
	if !ok {
		return
	}
	// Redis reads the sources (WRONGTYPE) before it parses LIMIT.
	keys := dsRange(2, 2+int(n))
	if !c.SameBucket(keys...) {
		return
	}
	maps, lists, err := zload(c, keys)
	if err != nil {
		c.Fail(err)
		return
	}
	_, limit, ok := interCardArgs(c, int(n))
	if !ok {
		return
	}
	res := zcombine(maps, lists, make([]float64, len(keys)), 0, opInter)
	cnt := int64(len(res))
	if limit > 0 && cnt > limit {
		cnt = limit
	}
	c.Int(cnt)
}

func cmdZRandMember(c *Ctx) {
	withScores := len(c.Args) == 4
	// Redis parses the count before it looks at WITHSCORES.
	count, hasCount, ok := dsRandCount(c)
	if !ok {
		return
	}
	if len(c.Args) > 4 || (len(c.Args) == 4 && !EqFold(c.Args[3], "withscores")) {
		c.SyntaxErr()
		return
	}
	if withScores && !dsRandPairsCount(c, 2) {
		return
	}
	var items, picked []zitem
	_, err := dsRead(c, 1, engines.TypeZSet, func(o engines.Object) error {
		z := o.(*ds.ZSet)
		if z.Len() == 0 {
			return nil
		}
		if !hasCount || count < 0 {
			// Random ranks, O(log n) each.
			n := int64(1)
			if count < 0 {
				n = -count
			}
			for i := int64(0); i < n; i++ {
				r := rand.IntN(z.Len())
				z.RangeByRank(r, r, false, func(m string, s float64) bool { picked = append(picked, zitem{m, s}); return false })
			}
			return nil
		}
		items = zsetItems(z)
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if !hasCount {
		if len(picked) == 0 {
			c.Null()
			return
		}
		c.BulkString(picked[0].m)
		return
	}
	if (len(items) == 0 && len(picked) == 0) || count == 0 {
		c.Array(0)
		return
	}
	if count < 0 {
		// picked already holds -count random members
	} else if count >= int64(len(items)) {
		picked = items
	} else {
		for i := 0; i < int(count); i++ {
			j := i + rand.IntN(len(items)-i)
			items[i], items[j] = items[j], items[i]
		}
		picked = items[:count]
	}
	replyScored(c, picked, withScores)
}

func cmdZScan(c *Ctx) {
	cursor, ok := dsScanCursor(c, 2) // see dsScanCursor for Redis's order
	if !ok {
		return
	}
	var items []zitem
	found, err := dsRead(c, 1, engines.TypeZSet, func(o engines.Object) error {
		items = zsetItems(o.(*ds.ZSet))
		return nil
	})
	match, count, ok := dsScanOptsIfFound(c, found, err)
	if !ok {
		return
	}
	score := make(map[string]float64, len(items))
	names := make([]string, len(items))
	for i, it := range items {
		score[it.m] = it.s
		names[i] = it.m
	}
	picked, next := dsScan(names, cursor, count)
	out := make([]string, 0, 2*len(picked))
	for _, m := range picked {
		out = append(out, m, resp.FormatFloat(score[m]))
	}
	dsReplyScan(c, next, out, match, true)
}
