package exec

// Helpers shared by the data-structure families of this package (hash.go,
// list.go, set.go, zset.go, tairhash.go): the read and the atomic write of
// a key's object with Redis's type check and its empty-collection rule,
// the argument parsing they share, the SCAN and RAND* machinery, and the
// replies that end a write.
//
// # SCAN cursors
//
// HSCAN, SSCAN, ZSCAN and EXHSCAN order elements by a 62-bit hash of the
// element (then by its bytes); the cursor is the hash to resume from. An
// element present for the whole scan is returned at least once, whatever
// is added or removed meanwhile. Collections of at most 128 elements are
// returned in one call (cursor 0), as Redis does for its small encodings.

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/glob"
)

const (
	errTextPositive    = "ERR value is out of range, must be positive"
	errTextNumkeys     = "ERR numkeys should be greater than 0"
	errTextNumkeysArgs = "ERR Number of keys can't be greater than number of args"
	errTextCursor      = "ERR invalid cursor"
)

// ---- a key's object: read, write, replace ----

// dsFn works on a key's object: o is nil when the key is missing and no
// new object was asked for. It returns Store to keep the (mutated) object,
// Delete to remove the key, Keep for reads and no-ops. It must validate
// before mutating: an error after a mutation would leave the mutation in.
type dsFn func(o engines.Object) (engines.Action, error)

// dsWrite runs fn atomically on the object of type t at args[i]. A missing
// (or hidden) key gets newObj() when newObj is not nil. Storing an empty
// object deletes the key (Redis never keeps empty collections). Another
// type fails with errs.ErrWrongType before fn runs.
func dsWrite(c *Ctx, i int, t engines.ValueType, newObj func() engines.Object, fn dsFn) error {
	return dsWriteKey(c, c.Key(i), t, newObj, fn)
}

func dsWriteKey(c *Ctx, k engines.Key, t engines.ValueType, newObj func() engines.Object, fn dsFn) error {
	if t != engines.TypeHash && c.isPkey(k) {
		return errs.ErrWrongType
	}
	_, err := c.UpdateKey(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		o, err := dsObject(cur, exists, t, newObj)
		if err != nil {
			return cur, engines.Keep, err
		}
		act, err := fn(o)
		if err != nil {
			return cur, engines.Keep, err
		}
		switch act {
		case engines.Store:
			next, act := dsStore(cur, exists, t, o)
			return next, act, nil
		case engines.Delete:
			if !exists {
				return cur, engines.Keep, nil
			}
		}
		return cur, act, nil
	})
	return err
}

// dsObject is the object a write of type t works on: the record's, or
// newObj()'s when the key is missing (nil without newObj). A record of
// another type is WRONGTYPE.
func dsObject(cur engines.Entry, exists bool, t engines.ValueType, newObj func() engines.Object) (engines.Object, error) {
	switch {
	case exists && !holdsType(cur, t):
		return nil, errs.ErrWrongType
	case exists:
		return cur.Object, nil
	case newObj != nil:
		return newObj(), nil
	}
	return nil, nil
}

// holdsType reports whether the record cur holds an object of type t.
func holdsType(cur engines.Entry, t engines.ValueType) bool {
	return cur.Type == t && cur.Object != nil
}

// dsStore is what a write that changed o does with its key: o is stored
// (in a new record of type t when the key was missing), but an empty
// collection deletes the key, or is never created: Redis keeps none.
func dsStore(cur engines.Entry, exists bool, t engines.ValueType, o engines.Object) (engines.Entry, engines.Action) {
	if o == nil || o.Len() == 0 {
		if !exists {
			return cur, engines.Keep
		}
		return cur, engines.Delete
	}
	next := cur
	if !exists {
		next = engines.Entry{Type: t}
	}
	next.Object = o
	return next, engines.Store
}

// dsRead runs fn on the object of type t at args[i] without changing it;
// fn is not called when the key is missing (exists false).
func dsRead(c *Ctx, i int, t engines.ValueType, fn func(o engines.Object) error) (bool, error) {
	return dsReadKey(c, c.Key(i), t, fn)
}

func dsReadKey(c *Ctx, k engines.Key, t engines.ValueType, fn func(o engines.Object) error) (bool, error) {
	found := false
	_, err := c.UpdateKey(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		if !holdsType(cur, t) {
			return cur, engines.Keep, errs.ErrWrongType
		}
		found = true
		return cur, engines.Keep, fn(cur.Object)
	})
	if err == nil && !found && t != engines.TypeHash && c.isPkey(k) {
		return false, errs.ErrWrongType
	}
	return found, err
}

// dsReadReply answers a read of the collection of type t at args[1] by
// writing the reply straight into c.Out while the object is held (write;
// no copy of the elements). A missing key gets header(0), the empty
// array, set or map; an error, err's reply alone (what write appended is
// taken back).
func dsReadReply(c *Ctx, t engines.ValueType, header func(n int), write func(o engines.Object) error) {
	start := len(c.Out)
	found, err := dsRead(c, 1, t, write)
	if err != nil {
		c.Out = c.Out[:start]
		c.Fail(err)
		return
	}
	if !found {
		header(0)
	}
}

// cmdLen is LLEN, SCARD, ZCARD and HLEN (in memory): the length of the
// collection of type t at args[1], 0 when it is missing.
func cmdLen(c *Ctx, t engines.ValueType) {
	n := 0
	_, err := dsRead(c, 1, t, func(o engines.Object) error { n = o.Len(); return nil })
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

// removeMembers is HDEL, SREM and ZREM: remove args[2:] from the
// collection at args[1] and reply how many were there. A write that
// removed nothing is not propagated.
func removeMembers(c *Ctx, t engines.ValueType, remove func(o engines.Object, member string) bool) {
	n := 0
	err := dsWrite(c, 1, t, nil, func(o engines.Object) (engines.Action, error) {
		if o == nil {
			return engines.Keep, nil
		}
		for _, m := range c.Args[2:] {
			if remove(o, string(m)) {
				n++
			}
		}
		if n == 0 {
			return engines.Keep, nil
		}
		return engines.Store, nil
	})
	replyCount(c, n, err)
}

// popFromFirstKey is the loop of the multi-key pops (BLPOP, BRPOP, LMPOP,
// BLMPOP, BZPOPMIN, BZPOPMAX, ZMPOP, BZMPOP): pop pops from the keys at
// args[i], i in keys, in turn, and the first that gives anything goes to
// reply, which propagates it and answers. When none gives anything, the
// answer is Redis's null array (a blocking pop's timeout), not propagated.
func popFromFirstKey[T any](c *Ctx, keys []int, pop func(k engines.Key) ([]T, error), reply func(i int, popped []T)) {
	for _, i := range keys {
		popped, err := pop(c.Key(i))
		if err != nil {
			c.Fail(err)
			return
		}
		if len(popped) > 0 {
			reply(i, popped)
			return
		}
	}
	replyNothingPopped(c, true)
}

// storeObject replaces args[i] (whatever it held) with mk()'s object, or
// deletes it when the object is empty (the *STORE commands).
func storeObject(c *Ctx, i int, t engines.ValueType, mk func() engines.Object) error {
	return storeObjectKey(c, c.Key(i), t, mk)
}

// storeObjectKey is storeObject for a key built by the caller.
func storeObjectKey(c *Ctx, k engines.Key, t engines.ValueType, mk func() engines.Object) error {
	o := mk()
	_, err := c.UpdateKey(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if o.Len() == 0 {
			if !exists {
				return cur, engines.Keep, nil
			}
			return cur, engines.Delete, nil
		}
		return engines.Entry{Type: t, Object: o}, engines.Store, nil
	})
	if err == nil && t != engines.TypeHash && c.isPkey(k) {
		// A hash (pkey) under the same name would shadow the new value.
		_, err = c.Eng.PrefixRemoveAll(k)
	}
	return err
}

// ---- arguments ----

// dsCheckValues enforces the value limit on args[from], args[from+step] ...
func dsCheckValues(c *Ctx, from, step int) error {
	limit := c.MaxValueSize()
	for i := from; i < len(c.Args); i += step {
		if len(c.Args[i]) > limit {
			return errs.ErrValueTooLong
		}
	}
	return nil
}

// fieldValuePairs checks the field value pairs from args[2] (HSET, HMSET,
// EXHMSET): an odd count is the arity error, a value over the limit its
// own; false when one was replied.
func fieldValuePairs(c *Ctx) bool {
	if len(c.Args)%2 != 0 {
		dsWrongArgs(c)
		return false
	}
	if err := dsCheckValues(c, 3, 2); err != nil {
		c.Fail(err)
		return false
	}
	return true
}

// dsWrongArgs is Redis's arity error for the running command.
func dsWrongArgs(c *Ctx) {
	c.Error("ERR wrong number of arguments for '" + dsName(c) + "' command")
}

func dsName(c *Ctx) string {
	b := []byte(string(c.Args[0]))
	for i, x := range b {
		if 'A' <= x && x <= 'Z' {
			b[i] = x + 'a' - 'A'
		}
	}
	return string(b)
}

// dsNumKeys parses the numkeys argument at args[i] followed by that many
// keys, Redis-style (LMPOP, ZMPOP, SINTERCARD); ok false means the reply
// is written. Too few arguments is a syntax error, or SINTERCARD's text
// when argsErr.
func dsNumKeys(c *Ctx, i int, argsErr bool) (int, bool) {
	n, ok := ParseInt(c.Args[i])
	if !ok || n <= 0 {
		c.Error(errTextNumkeys)
		return 0, false
	}
	if n > int64(len(c.Args)-i-1) {
		if argsErr {
			c.Error(errTextNumkeysArgs)
		} else {
			c.SyntaxErr()
		}
		return 0, false
	}
	return int(n), true
}

// popCount parses the count that LPOP, RPOP, SPOP, ZPOPMIN and ZPOPMAX
// take after their key: args[2] when given (hasCount), else 1. A count
// that is negative or not an integer is Redis's "must be positive" error
// (replied; ok false).
func popCount(c *Ctx) (count int64, hasCount, ok bool) {
	if len(c.Args) < 3 {
		return 1, false, true
	}
	n, ok := ParseInt(c.Args[2])
	if !ok || n < 0 {
		c.Error(errTextPositive)
		return 0, true, false
	}
	return n, true, true
}

// oneCountArg is parse (popCount, dsRandCount) for SPOP, SRANDMEMBER
// and ZPOPMIN/ZPOPMAX, which take at most that count after the key: a
// further argument is a syntax error.
func oneCountArg(c *Ctx, parse func(c *Ctx) (count int64, hasCount, ok bool)) (count int64, hasCount, ok bool) {
	if len(c.Args) > 3 {
		c.SyntaxErr()
		return 0, false, false
	}
	return parse(c)
}

// dsRange is the argument indexes from..to-1 (a multi-key command's keys).
func dsRange(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// ---- SCAN (see the file comment) ----

// dsScanCursor parses the cursor at args[from]. Redis's HSCAN, SSCAN and
// ZSCAN parse it first, then look the key up (a missing key is an empty
// scan whatever the options; a wrong type is WRONGTYPE), and only then
// parse the options (dsScanOpts).
func dsScanCursor(c *Ctx, from int) (uint64, bool) {
	cur, err := strconv.ParseUint(string(c.Args[from]), 10, 64)
	if err != nil {
		c.Error(errTextCursor)
		return 0, false
	}
	return cur, true
}

// dsScanOpts parses "[MATCH pattern] [COUNT n]" after the cursor at
// args[from].
func dsScanOpts(c *Ctx, from int) (match []byte, count int, ok bool) {
	count = 10
	for i := from + 1; i < len(c.Args); i += 2 {
		if i+1 >= len(c.Args) {
			c.SyntaxErr()
			return nil, 0, false
		}
		switch {
		case EqFold(c.Args[i], "match"):
			match = c.Args[i+1]
			if len(match) == 1 && match[0] == '*' {
				match = nil
			}
		case EqFold(c.Args[i], "count"):
			n, ok := ParseInt(c.Args[i+1])
			if !ok {
				c.Error(ErrTextNotInt)
				return nil, 0, false
			}
			if n < 1 {
				c.SyntaxErr()
				return nil, 0, false
			}
			count = int(min(n, 1<<30))
		default:
			c.SyntaxErr()
			return nil, 0, false
		}
	}
	return match, count, true
}

// dsScanOptsIfFound goes on with a SCAN-family command once its key is
// read: err's reply, or an empty scan for a missing key whatever the
// options (Redis's order, see dsScanCursor), else the options parsed by
// dsScanOpts (ok false: the reply is written).
func dsScanOptsIfFound(c *Ctx, found bool, err error) (match []byte, count int, ok bool) {
	switch {
	case err != nil:
		c.Fail(err)
		return nil, 0, false
	case !found:
		dsReplyScan(c, 0, nil, nil, false)
		return nil, 0, false
	}
	return dsScanOpts(c, 2)
}

func dsScanHash(s string) uint64 { return xxhash.Sum64String(s)>>2 + 1 }

// dsScan picks the next batch of names for a SCAN-family cursor (see the
// file comment) and returns it with the next cursor (0: done).
func dsScan(names []string, cursor uint64, count int) ([]string, uint64) {
	if len(names) <= 128 {
		if cursor != 0 {
			return nil, 0
		}
		sort.Strings(names)
		return names, 0
	}
	type hn struct {
		h uint64
		n string
	}
	all := make([]hn, len(names))
	for i, n := range names {
		all[i] = hn{dsScanHash(n), n}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].h != all[j].h {
			return all[i].h < all[j].h
		}
		return all[i].n < all[j].n
	})
	i := sort.Search(len(all), func(i int) bool { return all[i].h >= cursor })
	var out []string
	for ; i < len(all); i++ {
		if len(out) >= count && all[i].h != all[i-1].h {
			return out, all[i].h
		}
		out = append(out, all[i].n)
	}
	return out, 0
}

// dsReplyScan writes [cursor, [items...]]; items are filtered by match
// (on the names only: pairs keep their second element with the first).
func dsReplyScan(c *Ctx, next uint64, items []string, match []byte, pairs bool) {
	if match != nil {
		step := 1
		if pairs {
			step = 2
		}
		kept := items[:0]
		for i := 0; i < len(items); i += step {
			if glob.Match(match, []byte(items[i]), false) {
				kept = append(kept, items[i:i+step]...)
			}
		}
		items = kept
	}
	c.Array(2)
	c.Out = strconv.AppendUint(append(c.Out, '$'), uint64(len(strconv.FormatUint(next, 10))), 10)
	c.Out = append(c.Out, '\r', '\n')
	c.Out = strconv.AppendUint(c.Out, next, 10)
	c.Out = append(c.Out, '\r', '\n')
	replyStrings(c, items)
}

// ---- HRANDFIELD, SRANDMEMBER, ZRANDMEMBER ----

// maxRandRepeats bounds the reply of HRANDFIELD/SRANDMEMBER/ZRANDMEMBER
// with a negative count (Tair's limit, by design; Redis has none): a
// client asking for -100000000000 killed the dataserver with an
// allocation it could not make.
const maxRandRepeats = 1 << 20

// dsRandCount parses HRANDFIELD/SRANDMEMBER/ZRANDMEMBER's optional
// count, args[2]: has is false when there is none, ok false when its
// error was replied.
func dsRandCount(c *Ctx) (n int64, has, ok bool) {
	if len(c.Args) < 3 {
		return 0, false, true
	}
	n, ok = ParseInt(c.Args[2])
	if !ok {
		c.Error(ErrTextNotInt)
		return 0, true, false
	}
	switch {
	case n == math.MinInt64: // getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)
		c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, true, false
	case n > 1<<40:
		n = 1 << 40 // distinct elements: all of them either way
	case n < -maxRandRepeats:
		// A negative count asks for -n elements with repetitions, built
		// in full before the reply is sent: Redis would try (and grow its
		// output buffer until the client is dropped or memory runs out);
		// here it would be one allocation the runtime cannot survive.
		c.Error("ERR value is out of range (at most 1048576 elements with repetitions)")
		return 0, true, false
	}
	return n, true, true
}

// dsRandPairsCount: with WITHVALUES/WITHSCORES Redis refuses a count
// beyond ±LONG_MAX/2 (the reply holds twice as many elements).
func dsRandPairsCount(c *Ctx, i int) bool {
	n, _ := ParseInt(c.Args[i])
	if n < -math.MaxInt64/2 || n > math.MaxInt64/2 {
		c.Error("ERR value is out of range")
		return false
	}
	return true
}

// dsRandPick chooses count elements of names as the RAND* commands do:
// count > 0 distinct (all when count >= len), count < 0 -count with
// repetitions. It may reorder names.
func dsRandPick(names []string, count int64) []string {
	if count < 0 {
		out := make([]string, -count)
		for i := range out {
			out[i] = names[rand.IntN(len(names))]
		}
		return out
	}
	if count >= int64(len(names)) {
		return names
	}
	for i := 0; i < int(count); i++ {
		j := i + rand.IntN(len(names)-i)
		names[i], names[j] = names[j], names[i]
	}
	return names[:count]
}

// ---- replies ----

// The replies that end a write which may have changed nothing (SADD of
// members already there, HSETNX of a field that exists, TAIR.DELV of
// another version ...): such a write must not reach the slaves, while
// Exec propagates a write's own arguments unless told otherwise. They
// return whether the write changed anything, for the callers that
// propagate it in a canonical form of their own.

// replyCount ends a write that changed n elements (added, removed ...):
// err's reply, else the integer n. A write that changed nothing is not
// propagated.
func replyCount(c *Ctx, n int, err error) bool {
	return replyChanged(c, n > 0, int64(n), err)
}

// replyWrote ends a write that either happened or did not: err's reply,
// else 1 or 0. A write that did not happen is not propagated.
func replyWrote(c *Ctx, wrote bool, err error) bool {
	return replyChanged(c, wrote, boolInt(wrote), err)
}

// replyChanged is replyCount and replyWrote: err's reply, else the
// integer n, the write propagated only when changed.
func replyChanged(c *Ctx, changed bool, n int64, err error) bool {
	if !writeDone(c, changed, err) {
		return false
	}
	c.Int(n)
	return changed
}

// writeDone is the start of those replies, for a write whose reply is
// not an integer: err's reply (false), else true for the caller to write
// its reply, the write propagated only when changed.
func writeDone(c *Ctx, changed bool, err error) bool {
	if err != nil {
		c.Fail(err)
		return false
	}
	if !changed {
		c.NoPropagate()
	}
	return true
}

// replyOptional answers an array of values some of which may be missing
// (HMGET, SORT ... GET): a nil one is a null.
func replyOptional(c *Ctx, vs []*string) {
	c.Array(len(vs))
	for _, v := range vs {
		if v == nil {
			c.Null()
		} else {
			c.BulkString(*v)
		}
	}
}

// replyHelp answers a HELP subcommand: its lines as status replies.
func replyHelp(c *Ctx, lines []string) {
	c.Array(len(lines))
	for _, l := range lines {
		c.Status(l)
	}
}

// replyBulkOrNull answers a read of one element (HGET, LINDEX ...): err's
// reply, else v, or a null when there is none (ok false).
func replyBulkOrNull(c *Ctx, v string, ok bool, err error) {
	if readDone(c, ok, err) {
		c.BulkString(v)
	}
}

// readDone is the start of a read's reply (DUMP, ZSCORE ...): err's reply,
// or a null when there is nothing (ok false); true when the caller writes
// what it read.
func readDone(c *Ctx, ok bool, err error) bool {
	switch {
	case err != nil:
		c.Fail(err)
	case !ok:
		c.Null()
	default:
		return true
	}
	return false
}

// replyOne answers a pop or a pick without a count (SPOP, SRANDMEMBER):
// the one element of ss, or a null when there is none.
func replyOne(c *Ctx, ss []string) {
	if len(ss) == 0 {
		c.Null()
		return
	}
	c.BulkString(ss[0])
}

// replyStrings answers an array of elements.
func replyStrings(c *Ctx, ss []string) {
	c.Array(len(ss))
	for _, s := range ss {
		c.BulkString(s)
	}
}

// replyNothingPopped answers a pop or a move that found nothing to take:
// Redis's null, or its null array for the commands that answer arrays
// (and the blocking ones, whose timeout it is). Nothing is propagated.
func replyNothingPopped(c *Ctx, array bool) {
	c.NoPropagate()
	if array {
		c.NullArray()
	} else {
		c.Null()
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
