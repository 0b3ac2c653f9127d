package exec

// Redis lists on *ds.List objects. Blocking pops (BLPOP, BRPOP, BLMOVE,
// BRPOPLPUSH, BLMPOP) are implemented by the proxy, which polls the
// non-blocking forms; here they make one non-blocking attempt and answer
// Redis's timeout reply (a null array) when there is nothing to pop, so a
// client talking to a dataserver directly never hangs.

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
)

func init() {
	Register("lpush", func(c *Ctx) { cmdPush(c, true, false) })
	Register("rpush", func(c *Ctx) { cmdPush(c, false, false) })
	Register("lpushx", func(c *Ctx) { cmdPush(c, true, true) })
	Register("rpushx", func(c *Ctx) { cmdPush(c, false, true) })
	Register("lpop", func(c *Ctx) { cmdPop(c, true) })
	Register("rpop", func(c *Ctx) { cmdPop(c, false) })
	Register("llen", func(c *Ctx) { cmdLen(c, engines.TypeList) })
	Register("lrange", cmdLRange)
	Register("lindex", cmdLIndex)
	Register("lset", cmdLSet)
	Register("linsert", cmdLInsert)
	Register("lrem", cmdLRem)
	Register("ltrim", cmdLTrim)
	Register("lpos", cmdLPos)
	Register("lmove", cmdLMove)
	Register("rpoplpush", cmdRPopLPush)
	Register("lmpop", func(c *Ctx) { cmdLMPop(c, 1, false) })
	Register("blpop", func(c *Ctx) { cmdBPop(c, true) })
	Register("brpop", func(c *Ctx) { cmdBPop(c, false) })
	Register("blmove", cmdBLMove)
	Register("brpoplpush", cmdBRPopLPush)
	Register("blmpop", func(c *Ctx) { cmdLMPop(c, 2, true) })
}

func newList() engines.Object { return ds.NewList() }

func cmdPush(c *Ctx, left, onlyExisting bool) {
	if err := dsCheckValues(c, 2, 1); err != nil {
		c.Fail(err)
		return
	}
	mk := newList
	if onlyExisting {
		mk = nil
	}
	n := 0
	err := dsWrite(c, 1, engines.TypeList, mk, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		l := o.(*ds.List)
		for _, v := range c.Args[2:] {
			if left {
				l.PushFront(string(v))
			} else {
				l.PushBack(string(v))
			}
		}
		n = l.Len()
		return engines.Store, nil
	})
	replyCount(c, n, err)
}

// listPop pops up to count elements from the list at key k (nil: missing).
func listPop(c *Ctx, k engines.Key, left bool, count int) ([]string, bool, error) {
	var out []string
	found := false
	err := dsWriteKey(c, k, engines.TypeList, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		found = true
		if count == 0 {
			return engines.Keep, nil
		}
		l := o.(*ds.List)
		for len(out) < count {
			var v string
			var ok bool
			if left {
				v, ok = l.PopFront()
			} else {
				v, ok = l.PopBack()
			}
			if !ok {
				break
			}
			out = append(out, v)
		}
		return engines.Store, nil
	})
	return out, found, err
}

func cmdPop(c *Ctx, left bool) {
	if len(c.Args) > 3 {
		dsWrongArgs(c)
		return
	}
	count, hasCount, ok := popCount(c)
	if !ok {
		return
	}
	out, found, err := listPop(c, c.Key(1), left, int(min(count, 1<<31)))
	switch {
	case err != nil:
		c.Fail(err)
		return
	case !found:
		replyNothingPopped(c, hasCount)
		return
	case len(out) == 0:
		c.NoPropagate()
	}
	if !hasCount {
		c.BulkString(out[0])
		return
	}
	replyStrings(c, out)
}

// listBounds clamps Redis's start/stop (negative from the end) to [0, n);
// ok false means the range is empty.
func listBounds(start, stop int64, n int) (int, int, bool) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= ln {
		return 0, 0, false
	}
	if stop >= ln {
		stop = ln - 1
	}
	return int(start), int(stop), true
}

func cmdLRange(c *Ctx) {
	start, stop, ok := c.twoIntArgs(2)
	if !ok {
		return
	}
	dsReadReply(c, engines.TypeList, c.Array, func(o engines.Object) error {
		l := o.(*ds.List)
		s, e, ok := listBounds(start, stop, l.Len())
		if !ok {
			c.Array(0)
			return nil
		}
		c.Array(e - s + 1)
		l.Range(s, e, func(_ int, v string) bool { c.BulkString(v); return true })
		return nil
	})
}

func cmdLIndex(c *Ctx) {
	// As Redis: the key and its type first, then the index.
	var v string
	found := false
	_, err := dsRead(c, 1, engines.TypeList, func(o engines.Object) error {
		idx, ok := ParseInt(c.Args[2])
		if !ok {
			return ReplyError(ErrTextNotInt)
		}
		l := o.(*ds.List)
		i := idx
		if i < 0 {
			i += int64(l.Len())
		}
		if i >= 0 && i < int64(l.Len()) {
			v, found = l.Index(int(i)), true
		}
		return nil
	})
	replyBulkOrNull(c, v, found, err)
}

func cmdLSet(c *Ctx) {
	if err := dsCheckValues(c, 3, 1); err != nil {
		c.Fail(err)
		return
	}
	err := dsWrite(c, 1, engines.TypeList, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, ReplyError(ErrTextNoSuchKey)
		}
		// As Redis: the key and its type first, then the index.
		idx, ok := ParseInt(c.Args[2])
		if !ok {
			return engines.Keep, ReplyError(ErrTextNotInt)
		}
		l := o.(*ds.List)
		i := idx
		if i < 0 {
			i += int64(l.Len())
		}
		if i < 0 || i >= int64(l.Len()) {
			return engines.Keep, ReplyError("ERR index out of range")
		}
		l.SetIndex(int(i), string(c.Args[3]))
		return engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.OK()
}

func cmdLInsert(c *Ctx) {
	var after bool
	switch {
	case EqFold(c.Args[2], "after"):
		after = true
	case EqFold(c.Args[2], "before"):
	default:
		c.SyntaxErr()
		return
	}
	if err := dsCheckValues(c, 4, 1); err != nil {
		c.Fail(err)
		return
	}
	pivot := string(c.Args[3])
	res := int64(0)
	err := dsWrite(c, 1, engines.TypeList, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		l := o.(*ds.List)
		at := -1
		l.Range(0, l.Len()-1, func(i int, v string) bool {
			if v == pivot {
				at = i
				return false
			}
			return true
		})
		if at < 0 {
			res = -1
			return engines.Keep, nil
		}
		if after {
			at++
		}
		l.Insert(at, string(c.Args[4]))
		res = int64(l.Len())
		return engines.Store, nil
	})
	replyChanged(c, res > 0, res, err)
}

func cmdLRem(c *Ctx) {
	count, ok := c.IntArg(2)
	if !ok {
		return
	}
	elem := string(c.Args[3])
	removed := 0
	err := dsWrite(c, 1, engines.TypeList, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		l := o.(*ds.List)
		drop := map[int]bool{}
		limit := count
		if limit < 0 {
			limit = -limit
		}
		visit := func(i int, v string) bool {
			if v == elem {
				drop[i] = true
				if limit > 0 && int64(len(drop)) >= limit {
					return false
				}
			}
			return true
		}
		if l.Len() == 0 {
			return engines.Keep, nil
		}
		if count < 0 {
			l.RangeRev(0, l.Len()-1, visit)
		} else {
			l.Range(0, l.Len()-1, visit)
		}
		if len(drop) == 0 {
			return engines.Keep, nil
		}
		removed = l.Filter(func(i int, _ string) bool { return !drop[i] })
		return engines.Store, nil
	})
	replyCount(c, removed, err)
}

func cmdLTrim(c *Ctx) {
	start, stop, ok := c.twoIntArgs(2)
	if !ok {
		return
	}
	changed := false
	err := dsWrite(c, 1, engines.TypeList, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		l := o.(*ds.List)
		s, e, ok := listBounds(start, stop, l.Len())
		if !ok {
			changed = true
			return engines.Delete, nil
		}
		if s == 0 && e == l.Len()-1 {
			return engines.Keep, nil
		}
		changed = true
		l.Trim(s, e)
		return engines.Store, nil
	})
	if writeDone(c, changed, err) {
		c.OK()
	}
}

func cmdLPos(c *Ctx) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(c.Args); i += 2 {
		if i+1 >= len(c.Args) {
			c.SyntaxErr()
			return
		}
		n, isInt := ParseInt(c.Args[i+1])
		switch {
		case EqFold(c.Args[i], "rank"):
			if !isInt {
				c.Error(ErrTextNotInt)
				return
			}
			if n == -1<<63 {
				// Redis 7.2's getRangeLongFromObjectOrReply(-LONG_MAX,
				// LONG_MAX); 7.0 negates it unchecked
				c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
				return
			}
			if n == 0 {
				c.Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case EqFold(c.Args[i], "count"):
			if !isInt || n < 0 {
				c.Error("ERR COUNT can't be negative")
				return
			}
			count = n
		case EqFold(c.Args[i], "maxlen"):
			if !isInt || n < 0 {
				c.Error("ERR MAXLEN can't be negative")
				return
			}
			maxlen = n
		default:
			c.SyntaxErr()
			return
		}
	}
	elem := string(c.Args[2])
	var found []int64
	_, err := dsRead(c, 1, engines.TypeList, func(o engines.Object) error {
		l := o.(*ds.List)
		if l.Len() == 0 {
			return nil
		}
		skip := rank
		if skip < 0 {
			skip = -skip
		}
		skip--
		want := count
		if want < 0 {
			want = 1
		}
		compared := int64(0)
		visit := func(i int, v string) bool {
			if maxlen > 0 && compared >= maxlen {
				return false
			}
			compared++
			if v == elem {
				if skip > 0 {
					skip--
					return true
				}
				found = append(found, int64(i))
				if want > 0 && int64(len(found)) >= want {
					return false
				}
			}
			return true
		}
		if rank < 0 {
			l.RangeRev(0, l.Len()-1, visit)
		} else {
			l.Range(0, l.Len()-1, visit)
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if count < 0 {
		if len(found) == 0 {
			c.Null()
		} else {
			c.Int(found[0])
		}
		return
	}
	c.Array(len(found))
	for _, i := range found {
		c.Int(i)
	}
}

// parseWhere parses LEFT|RIGHT.
func parseWhere(c *Ctx, i int) (left, ok bool) { return parseChoice(c, i, "left", "right") }

// listMove is LMOVE: it returns the moved element (ok false: src empty or
// missing).
func listMove(c *Ctx, fromLeft, toLeft bool) (string, bool, error) {
	if !c.SameBucket(1, 2) {
		return "", false, errReplied
	}
	src, dst := c.Key(1), c.Key(2)
	if string(src.Key) == string(dst.Key) {
		var v string
		moved := false
		err := dsWriteKey(c, src, engines.TypeList, nil, func(o engines.Object) (engines.Action, error) {
			if o == nil {
				return engines.Keep, nil
			}
			l := o.(*ds.List)
			if fromLeft {
				v, moved = l.PopFront()
			} else {
				v, moved = l.PopBack()
			}
			if toLeft {
				l.PushFront(v)
			} else {
				l.PushBack(v)
			}
			return engines.Store, nil
		})
		return v, moved, err
	}
	// As Redis: a missing source answers nil, then both keys must be
	// lists (the destination may be missing) before anything moves.
	found, err := dsReadKey(c, src, engines.TypeList, func(engines.Object) error { return nil })
	if err != nil || !found {
		return "", false, err
	}
	if _, err := dsReadKey(c, dst, engines.TypeList, func(engines.Object) error { return nil }); err != nil {
		return "", false, err
	}
	out, _, err := listPop(c, src, fromLeft, 1)
	if err != nil || len(out) == 0 {
		return "", false, err
	}
	err = dsWriteKey(c, dst, engines.TypeList, newList, func(o engines.Object) (engines.Action, error) {
		l := o.(*ds.List)
		if toLeft {
			l.PushFront(out[0])
		} else {
			l.PushBack(out[0])
		}
		return engines.Store, nil
	})
	return out[0], err == nil, err
}

func replyMove(c *Ctx, v string, ok bool, err error, nullArray bool) {
	switch {
	case err != nil:
		c.Fail(err) // nothing more when listMove replied (errReplied)
	case !ok:
		replyNothingPopped(c, nullArray)
	default:
		c.BulkString(v)
	}
}

func cmdLMove(c *Ctx) {
	from, ok := parseWhere(c, 3)
	if !ok {
		return
	}
	to, ok := parseWhere(c, 4)
	if !ok {
		return
	}
	v, moved, err := listMove(c, from, to)
	replyMove(c, v, moved, err, false)
}

func cmdRPopLPush(c *Ctx) {
	v, moved, err := listMove(c, false, true)
	replyMove(c, v, moved, err, false)
}

// timeoutArg validates a blocking command's timeout (seconds, float).
func timeoutArg(c *Ctx, i int) bool {
	f, ok := ParseFloat(c.Args[i])
	if !ok && !isRangeFloat(c.Args[i]) {
		c.Error("ERR timeout is not a float or out of range")
		return false
	}
	if f < 0 || !ok && c.Args[i][0] == '-' {
		c.Error("ERR timeout is negative")
		return false
	}
	// Redis 7.2's check; 7.0 casts the milliseconds to long long
	// unchecked and says "timeout is negative".
	if !ok || f*1000 >= math.MaxInt64 {
		c.Error("ERR timeout is out of range")
		return false
	}
	return true
}

// isRangeFloat: b is a float too large for a double (1e309), which
// strtold, Redis's timeout parser, still reads.
func isRangeFloat(b []byte) bool {
	_, err := strconv.ParseFloat(string(b), 64)
	return err != nil && errors.Is(err, strconv.ErrRange) && bytes.IndexByte(b, '_') < 0 && !isSpace(b[0])
}

func cmdBLMove(c *Ctx) {
	from, ok := parseWhere(c, 3)
	if !ok {
		return
	}
	to, ok := parseWhere(c, 4)
	if !ok || !timeoutArg(c, 5) {
		return
	}
	v, moved, err := listMove(c, from, to)
	if moved && err == nil {
		c.Propagate([]byte("LMOVE"), c.Args[1], c.Args[2], c.Args[3], c.Args[4])
	}
	replyMove(c, v, moved, err, true)
}

func cmdBRPopLPush(c *Ctx) {
	if !timeoutArg(c, 3) {
		return
	}
	v, moved, err := listMove(c, false, true)
	if moved && err == nil {
		c.Propagate([]byte("RPOPLPUSH"), c.Args[1], c.Args[2])
	}
	replyMove(c, v, moved, err, true)
}

// bpopKeys checks "key... timeout" as BLPOP, BRPOP, BZPOPMIN and BZPOPMAX
// take it: the timeout, then that the keys share a bucket. It returns the
// keys' indexes; ok false: the reply is written.
func bpopKeys(c *Ctx) ([]int, bool) {
	last := len(c.Args) - 1
	if !timeoutArg(c, last) {
		return nil, false
	}
	keys := dsRange(1, last)
	return keys, c.SameBucket(keys...)
}

// cmdBPop is BLPOP/BRPOP's single attempt: [key, element] or a null array.
func cmdBPop(c *Ctx, left bool) {
	keys, ok := bpopKeys(c)
	if !ok {
		return
	}
	popFromFirstKey(c, keys, func(k engines.Key) ([]string, error) {
		out, _, err := listPop(c, k, left, 1)
		return out, err
	}, func(i int, out []string) {
		c.Propagate(listPopName(left), c.Args[i])
		c.Array(2)
		c.Bulk(c.Args[i])
		c.BulkString(out[0])
	})
}

// listPopName is the single-key pop slaves replay for a pop from the left
// or the right end (BLPOP, LMPOP ... are propagated as LPOP and RPOP).
func listPopName(left bool) []byte {
	if left {
		return []byte("LPOP")
	}
	return []byte("RPOP")
}

// mpopArgs parses what LMPOP and ZMPOP (numkeys at args[1]) and BLMPOP and
// BZMPOP (timeout at args[1], numkeys at args[2]) share: "numkeys key...
// where [COUNT n]", where being read by parseWhere (LEFT|RIGHT) or
// parseMinMax (MIN|MAX), then the keys' bucket. It returns the keys'
// indexes, where's value and the count; ok false: the reply is written.
func mpopArgs(c *Ctx, nk int, blocking bool, where func(c *Ctx, i int) (bool, bool)) (keys []int, dir bool, count int, ok bool) {
	n, ok := dsNumKeys(c, nk, false)
	if !ok {
		return nil, false, 0, false
	}
	w := nk + n + 1
	if w >= len(c.Args) {
		c.SyntaxErr()
		return nil, false, 0, false
	}
	dir, ok = where(c, w)
	if !ok {
		return nil, false, 0, false
	}
	// Redis reads the options one by one: COUNT once, its value checked
	// before anything after it.
	count = -1
	for j := w + 1; j < len(c.Args); j++ {
		if count != -1 || !EqFold(c.Args[j], "count") || j+1 >= len(c.Args) {
			c.SyntaxErr()
			return nil, false, 0, false
		}
		j++
		v, ok := ParseInt(c.Args[j])
		if !ok || v <= 0 {
			c.Error("ERR count should be greater than 0")
			return nil, false, 0, false
		}
		count = int(min(v, 1<<31))
	}
	if count == -1 {
		count = 1
	}
	// Redis parses the timeout last (lmpopGenericCommand, bzmpop too).
	if blocking && !timeoutArg(c, 1) {
		return nil, false, 0, false
	}
	keys = dsRange(nk+1, nk+1+n)
	if !c.SameBucket(keys...) {
		return nil, false, 0, false
	}
	return keys, dir, count, true
}

// cmdLMPop is LMPOP and BLMPOP (see mpopArgs).
func cmdLMPop(c *Ctx, nk int, blocking bool) {
	keys, left, count, ok := mpopArgs(c, nk, blocking, parseWhere)
	if !ok {
		return
	}
	popFromFirstKey(c, keys, func(k engines.Key) ([]string, error) {
		out, _, err := listPop(c, k, left, count)
		return out, err
	}, func(i int, out []string) {
		c.Propagate(listPopName(left), c.Args[i], []byte(strconv.Itoa(len(out))))
		c.Array(2)
		c.Bulk(c.Args[i])
		replyStrings(c, out)
	})
}

// ---- SORT / SORT_RO ----
//
// SORT works on lists, sets and sorted sets as Redis's sort.c does. BY and
// GET patterns are allowed only when the keys they form are certain to
// live in the sorted key's bucket (the pattern carries a hash tag without
// wildcards, e.g. "w_{t}*" for the key "{t}list"), with Redis Cluster's
// error texts otherwise. SORT ... STORE is Atomic: the destination must
// share the bucket too.

func init() {
	Register("sort", func(c *Ctx) { cmdSort(c, false) })
	Register("sort_ro", func(c *Ctx) { cmdSort(c, true) })
}

// sortPatternTag returns what decides the bucket of every key pattern p
// forms (Redis's patternHashSlot): ok false when it may be any bucket.
func sortPatternTag(p []byte) ([]byte, bool) {
	s := -1
	for i, ch := range p {
		switch {
		case ch == '*' || ch == '?' || ch == '[' || ch == '\\':
			return nil, false
		case s == -1 && ch == '{':
			s = i
		case s >= 0 && ch == '}' && i == s+1:
			s = -2
		case s >= 0 && ch == '}':
			return p[s+1 : i], true
		}
	}
	return p, true
}

type sortItem struct {
	elem  string
	score float64
	cmp   *string // the BY value for ALPHA (nil: missing)
}

func cmdSort(c *Ctx, readonly bool) {
	desc, alpha, dontsort := false, false, false
	limitStart, limitCount := int64(0), int64(-1)
	var by []byte
	var gets [][]byte
	storeAt := 0
	keyBucket := c.Key(1).Bucket
	samePattern := func(p []byte) bool {
		if c.X.opts.Buckets == 1 {
			return true // one bucket holds every key
		}
		tag, ok := sortPatternTag(p)
		if !ok {
			return false
		}
		return uint32(route.BucketOf(tag, c.X.opts.Buckets)) == keyBucket
	}
	for j := 2; j < len(c.Args); j++ {
		left := len(c.Args) - j - 1
		a := c.Args[j]
		switch {
		case EqFold(a, "asc"):
			desc = false
		case EqFold(a, "desc"):
			desc = true
		case EqFold(a, "alpha"):
			alpha = true
		case EqFold(a, "limit") && left >= 2:
			s, ok1 := ParseInt(c.Args[j+1])
			n, ok2 := ParseInt(c.Args[j+2])
			if !ok1 || !ok2 {
				c.Error(ErrTextNotInt)
				return
			}
			limitStart, limitCount = s, n
			j += 2
		case !readonly && EqFold(a, "store") && left >= 1:
			storeAt = j + 1
			j++
		case EqFold(a, "by") && left >= 1:
			by = c.Args[j+1]
			if !containsByte(by, '*') {
				dontsort = true
			} else if !samePattern(by) {
				c.Error("ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.")
				return
			}
			j++
		case EqFold(a, "get") && left >= 1:
			p := c.Args[j+1]
			if string(p) != "#" && !samePattern(p) {
				c.Error("ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.")
				return
			}
			gets = append(gets, p)
			j++
		default:
			c.SyntaxErr()
			return
		}
	}
	if storeAt > 0 && !c.SameBucket(1, storeAt) {
		return
	}
	// Read the elements.
	var elems []string
	isSet := false
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		switch o := cur.Object.(type) {
		case *ds.List:
			elems = o.Elements()
		case *ds.Set:
			elems = o.Members()
			isSet = true
		case *ds.ZSet:
			o.Range(func(m string, _ float64) bool { elems = append(elems, m); return true })
		default:
			return cur, engines.Keep, errs.ErrWrongType
		}
		return cur, engines.Keep, nil
	})
	if err == nil && elems == nil && c.isPkey(c.Key(1)) {
		err = errs.ErrWrongType
	}
	if err != nil {
		c.Fail(err)
		return
	}
	if isSet && dontsort && storeAt > 0 {
		// Sort a set's output anyway so that STORE is deterministic.
		dontsort, alpha, by = false, true, nil
	}
	items := make([]sortItem, len(elems))
	for i, e := range elems {
		items[i].elem = e
	}
	if !dontsort {
		for i := range items {
			var val *string
			if by != nil {
				v, ok := sortLookup(c, by, items[i].elem)
				if ok {
					val = &v
				}
			} else {
				v := items[i].elem
				val = &v
			}
			if alpha {
				items[i].cmp = val
				continue
			}
			if val != nil {
				f, ok := sortScore(*val)
				if !ok {
					c.Error("ERR One or more scores can't be converted into double")
					return
				}
				items[i].score = f
			}
		}
		sortItems(items, alpha, by != nil, desc)
	} else if desc {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	// LIMIT, as sort.c clamps it.
	n := int64(len(items))
	start := max(limitStart, 0)
	end := n - 1
	if limitCount >= 0 {
		end = start + limitCount - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	if end >= n {
		end = n - 1
	}
	var sel []sortItem
	if end >= start && start >= 0 {
		sel = items[start : end+1]
	}
	// Outputs: the element, or one value per GET pattern (nil: missing).
	var outs []*string
	for _, it := range sel {
		if len(gets) == 0 {
			v := it.elem
			outs = append(outs, &v)
			continue
		}
		for _, g := range gets {
			if string(g) == "#" {
				v := it.elem
				outs = append(outs, &v)
				continue
			}
			if v, ok := sortLookup(c, g, it.elem); ok {
				outs = append(outs, &v)
			} else {
				outs = append(outs, nil)
			}
		}
	}
	if storeAt == 0 {
		c.NoPropagate() // SORT without STORE is a read
		replyOptional(c, outs)
		return
	}
	err = storeObjectKey(c, c.Key(storeAt), engines.TypeList, func() engines.Object {
		l := ds.NewList()
		for _, v := range outs {
			if v == nil {
				l.PushBack("")
			} else {
				l.PushBack(*v)
			}
		}
		return l
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(len(outs)))
}

func containsByte(b []byte, x byte) bool {
	for _, c := range b {
		if c == x {
			return true
		}
	}
	return false
}

// sortScore parses a SORT weight as strtod does ("" is 0).
func sortScore(s string) (float64, bool) {
	if z := strings.IndexByte(s, 0); z >= 0 {
		s = s[:z] // Redis's strtod reads a C string: it ends at NUL
	}
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i == len(s) {
		return 0, i == 0
	}
	t := s[i:]
	if strings.IndexByte(t, '_') >= 0 {
		return 0, false // Go takes digit separators, strtod does not
	}
	if h := strings.TrimLeft(t, "+-"); len(h) > 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') && !strings.ContainsAny(h, "pP") {
		t += "p0" // strtod's hex float without an exponent
	}
	f, err := strconv.ParseFloat(t, 64)
	if (err != nil && !isRangeErr(err)) || f != f {
		return 0, false
	}
	return f, err == nil
}

// sortLookup resolves a BY/GET pattern for elem (Redis's
// lookupKeyByPattern): the first '*' is replaced by elem; "key->field"
// reads a hash field. ok false: missing (or of another type).
func sortLookup(c *Ctx, pattern []byte, elem string) (string, bool) {
	p := string(pattern)
	star := -1
	for i := 0; i < len(p); i++ {
		if p[i] == '*' {
			star = i
			break
		}
	}
	if star < 0 {
		return "", false
	}
	field := ""
	rest := p[star+1:]
	hasField := false
	for i := 0; i+2 < len(rest); i++ {
		if rest[i] == '-' && rest[i+1] == '>' {
			field, rest, hasField = rest[i+2:], rest[:i], true
			break
		}
	}
	name := p[:star] + elem + rest
	k := c.Key(1)
	k.Key = []byte(name)
	if !hasField {
		e, err := c.Eng.Get(k)
		if err != nil || e.Hidden || e.Type != engines.TypeString || IsLockRecord(e) {
			return "", false
		}
		return string(e.Value), true
	}
	if c.Eng.Persistent() {
		e, err := c.Eng.PrefixGet(k, []byte(field))
		if err != nil || e.Hidden {
			return "", false
		}
		return string(e.Value), true
	}
	var v string
	var ok bool
	_, _ = c.UpdateKey(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if h, isHash := cur.Object.(*ds.Hash); exists && isHash {
			v, ok = h.Get(field)
		}
		return cur, engines.Keep, nil
	})
	return v, ok
}

func sortItems(items []sortItem, alpha, byPattern, desc bool) {
	less := func(a, b *sortItem) int {
		if !alpha {
			switch {
			case a.score > b.score:
				return 1
			case a.score < b.score:
				return -1
			}
			return strCmp(a.elem, b.elem)
		}
		if byPattern {
			switch {
			case a.cmp == nil && b.cmp == nil:
				return 0
			case a.cmp == nil:
				return -1
			case b.cmp == nil:
				return 1
			}
		}
		return strCmp(*a.cmp, *b.cmp)
	}
	slices.SortStableFunc(items, func(a, b sortItem) int {
		r := less(&a, &b)
		if desc {
			return -r
		}
		return r
	})
}

func strCmp(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
