package exec

// Redis sets on *ds.Set objects. Multi-key commands (SMOVE, SINTER ...,
// *STORE) need their keys in one bucket: the proxy answers CROSSSLOT
// otherwise, and so does the dataserver when called directly.

import (
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/zsetop"
)

func init() {
	Register("sadd", cmdSAdd)
	Register("srem", cmdSRem)
	Register("smembers", cmdSMembers)
	Register("sismember", cmdSIsMember)
	Register("smismember", cmdSMIsMember)
	Register("scard", func(c *Ctx) { cmdLen(c, engines.TypeSet) })
	Register("spop", cmdSPop)
	Register("srandmember", cmdSRandMember)
	Register("smove", cmdSMove)
	Register("sinter", func(c *Ctx) { setOp(c, opInter, false) })
	Register("sunion", func(c *Ctx) { setOp(c, opUnion, false) })
	Register("sdiff", func(c *Ctx) { setOp(c, opDiff, false) })
	Register("sinterstore", func(c *Ctx) { setOp(c, opInter, true) })
	Register("sunionstore", func(c *Ctx) { setOp(c, opUnion, true) })
	Register("sdiffstore", func(c *Ctx) { setOp(c, opDiff, true) })
	Register("sintercard", cmdSInterCard)
	Register("sscan", cmdSScan)
}

func newSet() engines.Object { return ds.NewSet() }

func cmdSAdd(c *Ctx) {
	if err := dsCheckValues(c, 2, 1); err != nil {
		c.Fail(err)
		return
	}
	added := 0
	err := dsWrite(c, 1, engines.TypeSet, newSet, func(o engines.Object) (engines.Action, error) {
		s := o.(*ds.Set)
		for _, m := range c.Args[2:] {
			if s.Add(string(m)) {
				added++
			}
		}
		if added == 0 {
			return engines.Keep, nil
		}
		return engines.Store, nil
	})
	replyCount(c, added, err)
}

func cmdSRem(c *Ctx) {
	removeMembers(c, engines.TypeSet, func(o engines.Object, m string) bool { return o.(*ds.Set).Remove(m) })
}

// setMembers returns the members of the set at key k (nil when missing).
func setMembers(c *Ctx, k engines.Key) ([]string, bool, error) {
	var out []string
	found, err := dsReadKey(c, k, engines.TypeSet, func(o engines.Object) error {
		out = o.(*ds.Set).Members()
		return nil
	})
	return out, found, err
}

func replySet(c *Ctx, ms []string) {
	c.Set(len(ms))
	for _, m := range ms {
		c.BulkString(m)
	}
}

func cmdSMembers(c *Ctx) {
	dsReadReply(c, engines.TypeSet, c.Set, func(o engines.Object) error {
		s := o.(*ds.Set)
		c.Set(s.Len())
		s.Range(func(m string) bool { c.BulkString(m); return true })
		return nil
	})
}

// setHas answers membership for args[from:].
func setHas(c *Ctx, from int) ([]bool, error) {
	res := make([]bool, len(c.Args)-from)
	_, err := dsRead(c, 1, engines.TypeSet, func(o engines.Object) error {
		s := o.(*ds.Set)
		for i := range res {
			res[i] = s.Has(string(c.Args[from+i]))
		}
		return nil
	})
	return res, err
}

func cmdSIsMember(c *Ctx) {
	res, err := setHas(c, 2)
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(boolInt(res[0]))
}

func cmdSMIsMember(c *Ctx) {
	res, err := setHas(c, 2)
	if err != nil {
		c.Fail(err)
		return
	}
	c.Array(len(res))
	for _, b := range res {
		c.Int(boolInt(b))
	}
}

// cmdSPop pops random members and propagates SREM of the chosen ones.
func cmdSPop(c *Ctx) {
	count, hasCount, ok := oneCountArg(c, popCount)
	if !ok {
		return
	}
	var popped []string
	err := dsWrite(c, 1, engines.TypeSet, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil || count == 0 {
			return engines.Keep, nil
		}
		s := o.(*ds.Set)
		for int64(len(popped)) < count && s.Len() > 0 {
			m := s.Random()
			s.Remove(m)
			popped = append(popped, m)
		}
		return engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if len(popped) == 0 {
		c.NoPropagate()
	} else {
		prop := make([][]byte, 0, len(popped)+2)
		prop = append(prop, []byte("SREM"), c.Args[1])
		for _, m := range popped {
			prop = append(prop, []byte(m))
		}
		c.propagateCmd(prop)
	}
	if !hasCount {
		replyOne(c, popped)
		return
	}
	replySet(c, popped)
}

func cmdSRandMember(c *Ctx) {
	count, hasCount, ok := oneCountArg(c, dsRandCount)
	if !ok {
		return
	}
	var picked []string
	_, err := dsRead(c, 1, engines.TypeSet, func(o engines.Object) error {
		s := o.(*ds.Set)
		if !hasCount {
			picked = []string{s.Random()}
			return nil
		}
		if count < 0 {
			for i := int64(0); i < -count; i++ {
				picked = append(picked, s.Random())
			}
			return nil
		}
		picked = dsRandPick(s.Members(), count)
		return nil
	})
	switch {
	case err != nil:
		c.Fail(err)
	case !hasCount:
		replyOne(c, picked)
	default:
		replyStrings(c, picked)
	}
}

func cmdSMove(c *Ctx) {
	if !c.SameBucket(1, 2) {
		return
	}
	if err := dsCheckValues(c, 3, 1); err != nil {
		c.Fail(err)
		return
	}
	src, dst := c.Key(1), c.Key(2)
	m := string(c.Args[3])
	// As Redis: a missing source answers 0, then both keys must be sets
	// (the destination may be missing) before anything moves.
	found, err := dsReadKey(c, src, engines.TypeSet, func(engines.Object) error { return nil })
	if err == nil && found {
		_, err = dsReadKey(c, dst, engines.TypeSet, func(engines.Object) error { return nil })
	}
	if err != nil || !found {
		replyWrote(c, false, err) // a missing source: 0
		return
	}
	if string(src.Key) == string(dst.Key) {
		res, err := setHas(c, 3)
		if err != nil {
			c.Fail(err)
			return
		}
		c.NoPropagate()
		c.Int(boolInt(res[0]))
		return
	}
	moved := false
	err = dsWriteKey(c, src, engines.TypeSet, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil || !o.(*ds.Set).Remove(m) {
			return engines.Keep, nil
		}
		moved = true
		return engines.Store, nil
	})
	if err == nil && moved {
		err = dsWriteKey(c, dst, engines.TypeSet, newSet, func(o engines.Object) (engines.Action, error) {
			o.(*ds.Set).Add(m)
			return engines.Store, nil
		})
	}
	replyWrote(c, moved, err)
}

type setOpKind int

const (
	opUnion setOpKind = iota
	opInter
	opDiff
)

// setCompute runs a set operation over the sets at args[idx...] (every
// key is type-checked first, as Redis 7 does; for SINTER a missing key
// makes the result empty).
func setCompute(c *Ctx, idx []int, op setOpKind, limit int) ([]string, error) {
	sets := make([][]string, 0, len(idx))
	missing := false
	for _, i := range idx {
		ms, found, err := setMembers(c, c.Key(i))
		if err != nil {
			return nil, err
		}
		missing = missing || !found
		sets = append(sets, ms)
	}
	if missing && op == opInter {
		return nil, nil
	}
	switch op {
	case opUnion:
		return zsetop.Union(sets), nil
	case opInter:
		return zsetop.Inter(sets, limit), nil
	default:
		return zsetop.Diff(sets), nil
	}
}

func setOp(c *Ctx, op setOpKind, store bool) {
	first := 1
	if store {
		first = 2
	}
	idx := dsRange(first, len(c.Args))
	if !c.SameBucket(dsRange(1, len(c.Args))...) {
		return
	}
	res, err := setCompute(c, idx, op, 0)
	if err != nil {
		c.Fail(err)
		return
	}
	if !store {
		replySet(c, res)
		return
	}
	if err := storeObject(c, 1, engines.TypeSet, func() engines.Object {
		s := ds.NewSet()
		for _, m := range res {
			s.Add(m)
		}
		return s
	}); err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(len(res)))
}

// interCardArgs parses what SINTERCARD and ZINTERCARD take after their n
// keys at args[2:], "[LIMIT limit]" (0 when not given: no limit), then
// checks that the keys share a bucket. It returns the keys' indexes and
// the limit; ok false: the reply is written.
func interCardArgs(c *Ctx, n int) (keys []int, limit int64, ok bool) {
	rest := c.Args[2+n:]
	for i := 0; i < len(rest); i += 2 {
		if !EqFold(rest[i], "limit") || i+1 >= len(rest) {
			c.SyntaxErr()
			return nil, 0, false
		}
		v, ok := ParseInt(rest[i+1])
		if !ok || v < 0 {
			// Redis's getPositiveLongFromObjectOrReply: one text for both
			c.Error("ERR LIMIT can't be negative")
			return nil, 0, false
		}
		limit = v
	}
	keys = dsRange(2, 2+n)
	if !c.SameBucket(keys...) {
		return nil, 0, false
	}
	return keys, limit, true
}

func cmdSInterCard(c *Ctx) {
	n, ok := dsNumKeys(c, 1, true)
	if !ok {
		return
	}
	idx, limit, ok := interCardArgs(c, n)
	if !ok {
		return
	}
	res, err := setCompute(c, idx, opInter, int(min(limit, 1<<31)))
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(len(res)))
}

func cmdSScan(c *Ctx) {
	cursor, ok := dsScanCursor(c, 2) // see dsScanCursor for Redis's order
	if !ok {
		return
	}
	ms, found, err := setMembers(c, c.Key(1))
	match, count, ok := dsScanOptsIfFound(c, found, err)
	if !ok {
		return
	}
	picked, next := dsScan(ms, cursor, count)
	dsReplyScan(c, next, picked, match, false)
}
