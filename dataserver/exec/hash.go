package exec

// Redis hashes (HSET ... HSCAN) and the helpers shared by the data-structure
// families of this package (hash.go, list.go, set.go, zset.go, tairhash.go).
//
// # Engines
//
// On in-memory engines a hash is a *ds.Hash object reached through
// Engine.Update. On persistent engines (Engine.Persistent) a hash is a pkey
// (Tair's prefix model): pkey = key, skey = field, one record per field, so
// that large hashes need not be rewritten on every HSET; see hash_prefix in
// this file. There is no marker record: a pkey *is* a hash, so TYPE, EXISTS
// and DEL must look at the pkey when no plain key exists, and a plain key
// and a pkey with the same name collide as WRONGTYPE (hash commands refuse
// a key whose plain record exists; the object commands of the other
// families refuse a key that has live skeys).
//
// # SCAN cursors
//
// HSCAN, SSCAN, ZSCAN and EXHSCAN order elements by a 62-bit hash of the
// element (then by its bytes); the cursor is the hash to resume from. An
// element present for the whole scan is returned at least once, whatever
// is added or removed meanwhile. Collections of at most 128 elements are
// returned in one call (cursor 0), as Redis does for its small encodings.

import (
	"errors"
	"github.com/tairkv/tair/internal/glob"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/errs"
)

func init() {
	Register("hset", func(c *Ctx) { cmdHSet(c, false) })
	Register("hmset", func(c *Ctx) { cmdHSet(c, true) })
	Register("hsetnx", cmdHSetNX)
	Register("hget", cmdHGet)
	Register("hmget", cmdHMGet)
	Register("hgetall", func(c *Ctx) { hashDump(c, true, true) })
	Register("hkeys", func(c *Ctx) { hashDump(c, true, false) })
	Register("hvals", func(c *Ctx) { hashDump(c, false, true) })
	Register("hdel", cmdHDel)
	Register("hlen", cmdHLen)
	Register("hexists", cmdHExists)
	Register("hstrlen", cmdHStrLen)
	Register("hincrby", cmdHIncrBy)
	Register("hincrbyfloat", cmdHIncrByFloat)
	Register("hrandfield", cmdHRandField)
	Register("hscan", cmdHScan)
}

// ---- shared helpers of the data-structure families ----

const (
	errTextHashNotInt   = "ERR hash value is not an integer"
	errTextHashNotFloat = "ERR hash value is not a float"
	errTextNaNInf       = "ERR increment would produce NaN or Infinity"
	errTextPositive     = "ERR value is out of range, must be positive"
	errTextNumkeys      = "ERR numkeys should be greater than 0"
	errTextNumkeysArgs  = "ERR Number of keys can't be greater than number of args"
	errTextCursor       = "ERR invalid cursor"
)

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
	if c.Eng.Persistent() && t != engines.TypeHash && dsHasPkey(c, k) {
		return errs.ErrWrongType
	}
	_, err := c.UpdateKey(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && (cur.Type != t || cur.Object == nil) {
			return cur, engines.Keep, errs.ErrWrongType
		}
		var o engines.Object
		if exists {
			o = cur.Object
		} else if newObj != nil {
			o = newObj()
		}
		act, err := fn(o)
		if err != nil {
			return cur, engines.Keep, err
		}
		switch act {
		case engines.Store:
			if o == nil || o.Len() == 0 {
				if !exists {
					return cur, engines.Keep, nil
				}
				return cur, engines.Delete, nil
			}
			next := cur
			if !exists {
				next = engines.Entry{Type: t}
			}
			next.Object = o
			return next, engines.Store, nil
		case engines.Delete:
			if !exists {
				return cur, engines.Keep, nil
			}
		}
		return cur, act, nil
	})
	return err
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
		if cur.Type != t || cur.Object == nil {
			return cur, engines.Keep, errs.ErrWrongType
		}
		found = true
		return cur, engines.Keep, fn(cur.Object)
	})
	if err == nil && !found && c.Eng.Persistent() && t != engines.TypeHash && dsHasPkey(c, k) {
		return false, errs.ErrWrongType
	}
	return found, err
}

// dsHasPkey reports whether k has live skeys (a hash on persistent
// engines).
func dsHasPkey(c *Ctx, k engines.Key) bool {
	kvs, err := c.Eng.PrefixRange(k, engines.RangeOptions{Limit: 1})
	return err == nil && len(kvs) > 0
}

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

// dsSameBucket checks that args[from:to] are all in one bucket.
func dsSameBucket(c *Ctx, idx ...int) bool { return c.SameBucket(idx...) }

func dsRange(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// dsScanArgs parses "cursor [MATCH pattern] [COUNT n]" at args[from:].
func dsScanArgs(c *Ctx, from int) (cursor uint64, match []byte, count int, ok bool) {
	cursor, ok = dsScanCursor(c, from)
	if !ok {
		return 0, nil, 0, false
	}
	match, count, ok = dsScanOpts(c, from)
	return cursor, match, count, ok
}

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
	c.Array(len(items))
	for _, s := range items {
		c.BulkString(s)
	}
}

// maxRandRepeats bounds the reply of HRANDFIELD/SRANDMEMBER/ZRANDMEMBER
// with a negative count (Tair's limit, by design; Redis has none): a
// client asking for -100000000000 killed the dataserver with an
// allocation it could not make.
const maxRandRepeats = 1 << 20

// dsRandCount parses HRANDFIELD/SRANDMEMBER/ZRANDMEMBER's count.
func dsRandCount(c *Ctx, i int) (int64, bool) {
	n, ok := ParseInt(c.Args[i])
	if !ok {
		c.Error(ErrTextNotInt)
		return 0, false
	}
	switch {
	case n == math.MinInt64: // getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)
		c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false
	case n > 1<<40:
		n = 1 << 40 // distinct elements: all of them either way
	case n < -maxRandRepeats:
		// A negative count asks for -n elements with repetitions, built
		// in full before the reply is sent: Redis would try (and grow its
		// output buffer until the client is dropped or memory runs out);
		// here it would be one allocation the runtime cannot survive.
		c.Error("ERR value is out of range (at most 1048576 elements with repetitions)")
		return 0, false
	}
	return n, true
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

func dsFail(c *Ctx, err error) { c.Fail(err) }

// replyCount ends a write that changed n elements (added, removed ...):
// err's reply, else the integer n. A write that changed nothing is not
// propagated.
func replyCount(c *Ctx, n int, err error) {
	if err != nil {
		dsFail(c, err)
		return
	}
	if n == 0 {
		c.NoPropagate()
	}
	c.Int(int64(n))
}

// ---- hashes ----

func newHash() engines.Object { return ds.NewHash() }

func cmdHSet(c *Ctx, hmset bool) {
	if len(c.Args)%2 != 0 {
		dsWrongArgs(c)
		return
	}
	if err := dsCheckValues(c, 3, 2); err != nil {
		dsFail(c, err)
		return
	}
	if c.Eng.Persistent() {
		prefixHSet(c, hmset)
		return
	}
	added := 0
	err := dsWrite(c, 1, engines.TypeHash, newHash, func(o engines.Object) (engines.Action, error) {
		h := o.(*ds.Hash)
		for i := 2; i < len(c.Args); i += 2 {
			if h.Set(string(c.Args[i]), string(c.Args[i+1])) {
				added++
			}
		}
		return engines.Store, nil
	})
	if err != nil {
		dsFail(c, err)
		return
	}
	if hmset {
		c.OK()
	} else {
		c.Int(int64(added))
	}
}

func cmdHSetNX(c *Ctx) {
	if err := dsCheckValues(c, 3, 1); err != nil {
		dsFail(c, err)
		return
	}
	if c.Eng.Persistent() {
		prefixHSetNX(c)
		return
	}
	set := false
	err := dsWrite(c, 1, engines.TypeHash, newHash, func(o engines.Object) (engines.Action, error) {
		h := o.(*ds.Hash)
		if _, ok := h.Get(string(c.Args[2])); ok {
			return engines.Keep, nil
		}
		h.Set(string(c.Args[2]), string(c.Args[3]))
		set = true
		return engines.Store, nil
	})
	if err != nil {
		dsFail(c, err)
		return
	}
	if !set {
		c.NoPropagate()
		c.Int(0)
		return
	}
	c.Int(1)
}

func cmdHGet(c *Ctx) {
	if c.Eng.Persistent() {
		prefixHGet(c)
		return
	}
	var v string
	var ok bool
	_, err := dsRead(c, 1, engines.TypeHash, func(o engines.Object) error {
		v, ok = o.(*ds.Hash).Get(string(c.Args[2]))
		return nil
	})
	if err != nil {
		dsFail(c, err)
		return
	}
	if !ok {
		c.Null()
		return
	}
	c.BulkString(v)
}

func cmdHMGet(c *Ctx) {
	if c.Eng.Persistent() {
		prefixHMGet(c)
		return
	}
	vals := make([]*string, len(c.Args)-2)
	_, err := dsRead(c, 1, engines.TypeHash, func(o engines.Object) error {
		h := o.(*ds.Hash)
		for i := range vals {
			if v, ok := h.Get(string(c.Args[i+2])); ok {
				vals[i] = &v
			}
		}
		return nil
	})
	if err != nil {
		dsFail(c, err)
		return
	}
	c.Array(len(vals))
	for _, v := range vals {
		if v == nil {
			c.Null()
		} else {
			c.BulkString(*v)
		}
	}
}

// hashDump is HGETALL (fields and values: a map in RESP3), HKEYS, HVALS.
func hashDump(c *Ctx, fields, values bool) {
	if c.Eng.Persistent() {
		prefixHashDump(c, fields, values)
		return
	}
	start := len(c.Out)
	header := func(n int) {
		if fields && values {
			c.Map(n)
		} else {
			c.Array(n)
		}
	}
	found, err := dsRead(c, 1, engines.TypeHash, func(o engines.Object) error {
		h := o.(*ds.Hash)
		header(h.Len())
		h.Range(func(f, v string) bool {
			if fields {
				c.Out = appendBulkStr(c.Out, f)
			}
			if values {
				c.Out = appendBulkStr(c.Out, v)
			}
			return true
		})
		return nil
	})
	if err != nil {
		c.Out = c.Out[:start]
		dsFail(c, err)
		return
	}
	if !found {
		header(0)
	}
}

func appendBulkStr(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func cmdHDel(c *Ctx) {
	if c.Eng.Persistent() {
		prefixHDel(c)
		return
	}
	removeMembers(c, engines.TypeHash, func(o engines.Object, f string) bool { return o.(*ds.Hash).Delete(f) })
}

func cmdHLen(c *Ctx) {
	if c.Eng.Persistent() {
		prefixHLen(c)
		return
	}
	n := 0
	_, err := dsRead(c, 1, engines.TypeHash, func(o engines.Object) error { n = o.Len(); return nil })
	if err != nil {
		dsFail(c, err)
		return
	}
	c.Int(int64(n))
}

// hashField reads one field's value (ok false: missing) from either model.
func hashField(c *Ctx) (string, bool, error) {
	if c.Eng.Persistent() {
		return prefixField(c, 1, c.Args[2])
	}
	var v string
	var ok bool
	_, err := dsRead(c, 1, engines.TypeHash, func(o engines.Object) error {
		v, ok = o.(*ds.Hash).Get(string(c.Args[2]))
		return nil
	})
	return v, ok, err
}

func cmdHExists(c *Ctx) {
	_, ok, err := hashField(c)
	if err != nil {
		dsFail(c, err)
		return
	}
	if ok {
		c.Int(1)
	} else {
		c.Int(0)
	}
}

func cmdHStrLen(c *Ctx) {
	v, _, err := hashField(c)
	if err != nil {
		dsFail(c, err)
		return
	}
	c.Int(int64(len(v)))
}

// hincrby computes HINCRBY's new value from the old one.
func hincrby(old string, exists bool, delta int64) (int64, error) {
	var cur int64
	if exists {
		v, ok := ParseInt([]byte(old))
		if !ok {
			return 0, ReplyError(errTextHashNotInt)
		}
		cur = v
	}
	if (delta < 0 && cur < 0 && delta < -1<<63-cur) || (delta > 0 && cur > 0 && delta > 1<<63-1-cur) {
		return 0, ReplyError(ErrTextOverflow)
	}
	return cur + delta, nil
}

func cmdHIncrBy(c *Ctx) {
	delta, ok := c.IntArg(3)
	if !ok {
		return
	}
	field := c.Args[2]
	var res int64
	fn := func(old string, exists bool) (string, error) {
		n, err := hincrby(old, exists, delta)
		res = n
		return strconv.FormatInt(n, 10), err
	}
	if err := hashModify(c, field, fn); err != nil {
		dsFail(c, err)
		return
	}
	c.Int(res)
}

func cmdHIncrByFloat(c *Ctx) {
	incr, ok := ParseLongDouble(c.Args[3])
	if !ok {
		c.Error(ErrTextNotFloat)
		return
	}
	if LongDoubleInf(incr) {
		c.Error("ERR value is NaN or Infinity")
		return
	}
	var res []byte
	fn := func(old string, exists bool) (string, error) {
		cur, _ := ParseLongDouble([]byte("0"))
		if exists {
			v, ok := ParseLongDouble([]byte(old))
			if !ok {
				return "", ReplyError(errTextHashNotFloat)
			}
			cur = v
		}
		sum := AddLongDouble(cur, incr)
		if LongDoubleInf(sum) {
			return "", ReplyError(errTextNaNInf)
		}
		res = FormatLongDouble(sum)
		return string(res), nil
	}
	if err := hashModify(c, c.Args[2], fn); err != nil {
		dsFail(c, err)
		return
	}
	c.Propagate([]byte("HSET"), c.Args[1], c.Args[2], res)
	c.Bulk(res)
}

// hashModify is the read-modify-write of one field (HINCRBY*), on either
// model.
func hashModify(c *Ctx, field []byte, fn func(old string, exists bool) (string, error)) error {
	if c.Eng.Persistent() {
		return prefixModify(c, field, fn)
	}
	return dsWrite(c, 1, engines.TypeHash, newHash, func(o engines.Object) (engines.Action, error) {
		h := o.(*ds.Hash)
		old, ok := h.Get(string(field))
		nv, err := fn(old, ok)
		if err != nil {
			return engines.Keep, err
		}
		if len(nv) > c.MaxValueSize() {
			return engines.Keep, errs.ErrValueTooLong
		}
		h.Set(string(field), nv)
		return engines.Store, nil
	})
}

// hashPairs returns all fields and values (sorted by field) from either
// model.
func hashPairs(c *Ctx) ([]string, []string, error) {
	var fs, vs []string
	if c.Eng.Persistent() {
		kvs, err := prefixAll(c, 1)
		if err != nil {
			return nil, nil, err
		}
		for _, kv := range kvs {
			fs = append(fs, string(kv.Key))
			vs = append(vs, string(kv.Entry.Value))
		}
		return fs, vs, nil
	}
	_, err := dsRead(c, 1, engines.TypeHash, func(o engines.Object) error {
		h := o.(*ds.Hash)
		fs = h.Fields()
		vs = make([]string, len(fs))
		for i, f := range fs {
			vs[i], _ = h.Get(f)
		}
		return nil
	})
	return fs, vs, err
}

func cmdHRandField(c *Ctx) {
	withValues := false
	var count int64
	hasCount := len(c.Args) >= 3
	if hasCount {
		// Redis parses the count before it looks at WITHVALUES.
		n, ok := dsRandCount(c, 2)
		if !ok {
			return
		}
		count = n
		withValues = len(c.Args) == 4
	}
	if len(c.Args) > 4 || (len(c.Args) == 4 && !EqFold(c.Args[3], "withvalues")) {
		c.SyntaxErr()
		return
	}
	if withValues && !dsRandPairsCount(c, 2) {
		return
	}
	if !hasCount && !c.Eng.Persistent() {
		// One field: no need to copy the hash.
		var f string
		var found bool
		_, err := dsRead(c, 1, engines.TypeHash, func(o engines.Object) error {
			f, _, found = o.(*ds.Hash).Random()
			return nil
		})
		if err != nil {
			dsFail(c, err)
			return
		}
		if !found {
			c.Null()
			return
		}
		c.BulkString(f)
		return
	}
	fs, vs, err := hashPairs(c)
	if err != nil {
		dsFail(c, err)
		return
	}
	if !hasCount {
		if len(fs) == 0 {
			c.Null()
			return
		}
		c.BulkString(fs[rand.IntN(len(fs))])
		return
	}
	if len(fs) == 0 || count == 0 {
		c.Array(0)
		return
	}
	val := make(map[string]string, len(fs))
	for i, f := range fs {
		val[f] = vs[i]
	}
	picked := dsRandPick(fs, count)
	if withValues && c.Proto >= 3 {
		c.Array(len(picked))
		for _, f := range picked {
			c.Array(2)
			c.BulkString(f)
			c.BulkString(val[f])
		}
		return
	}
	if withValues {
		c.Array(2 * len(picked))
	} else {
		c.Array(len(picked))
	}
	for _, f := range picked {
		c.BulkString(f)
		if withValues {
			c.BulkString(val[f])
		}
	}
}

func cmdHScan(c *Ctx) {
	// NOVALUES (Redis 7.4) may stand anywhere among the options.
	noValues := false
	args := c.Args
	for i := 3; i < len(args); i++ {
		if EqFold(args[i], "novalues") && !(i > 3 && (EqFold(args[i-1], "match") || EqFold(args[i-1], "count"))) {
			noValues = true
			c.Args = append(append([][]byte(nil), args[:i]...), args[i+1:]...)
			break
		}
	}
	defer func() { c.Args = args }()
	cursor, ok := dsScanCursor(c, 2)
	if !ok {
		return
	}
	fs, vs, err := hashPairs(c)
	if err != nil {
		dsFail(c, err)
		return
	}
	if len(fs) == 0 { // missing: an empty scan, whatever the options
		dsReplyScan(c, 0, nil, nil, false)
		return
	}
	match, count, ok := dsScanOpts(c, 2)
	if !ok {
		return
	}
	val := make(map[string]string, len(fs))
	for i, f := range fs {
		val[f] = vs[i]
	}
	picked, next := dsScan(fs, cursor, count)
	if noValues {
		dsReplyScan(c, next, picked, match, false)
		return
	}
	items := make([]string, 0, 2*len(picked))
	for _, f := range picked {
		items = append(items, f, val[f])
	}
	dsReplyScan(c, next, items, match, true)
}

// ---- hashes on persistent engines: pkey = key, skey = field ----

// prefixCheck fails with WRONGTYPE when a plain record holds the key.
func prefixCheck(c *Ctx, i int) error {
	_, exists, err := c.Lookup(i)
	if err != nil {
		return err
	}
	if exists {
		return errs.ErrWrongType
	}
	return nil
}

// prefixExpire is the expiry new fields of the hash at args[i] inherit:
// the key commands (EXPIRE ...) give every field of a prefix hash the
// key's expiry, so a new field takes its siblings'.
func prefixExpire(c *Ctx, i int) int64 {
	kvs, err := c.Eng.PrefixRange(c.Key(i), engines.RangeOptions{Limit: 1})
	if err != nil || len(kvs) == 0 {
		return 0
	}
	return kvs[0].Entry.ExpireAt
}

func prefixField(c *Ctx, i int, field []byte) (string, bool, error) {
	if err := prefixCheck(c, i); err != nil {
		return "", false, err
	}
	e, err := c.Eng.PrefixGet(c.Key(i), field)
	if errors.Is(err, errs.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if e.Hidden {
		return "", false, nil
	}
	return string(e.Value), true, nil
}

func prefixAll(c *Ctx, i int) ([]engines.KV, error) {
	if err := prefixCheck(c, i); err != nil {
		return nil, err
	}
	kvs, err := c.Eng.PrefixRange(c.Key(i), engines.RangeOptions{})
	if errors.Is(err, errs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := kvs[:0]
	for _, kv := range kvs {
		if !kv.Entry.Hidden {
			out = append(out, kv)
		}
	}
	return out, nil
}

func prefixHSet(c *Ctx, hmset bool) {
	if err := prefixCheck(c, 1); err != nil {
		dsFail(c, err)
		return
	}
	k := c.Key(1)
	added := 0
	exp := prefixExpire(c, 1)
	for i := 2; i < len(c.Args); i += 2 {
		val := c.Args[i+1]
		_, err := c.Eng.PrefixUpdate(k, c.Args[i], func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			if !exists || cur.Hidden {
				added++
				cur = engines.Entry{ExpireAt: exp}
			}
			cur.Type = engines.TypeString
			cur.Value = append([]byte(nil), val...)
			return cur, engines.Store, nil
		})
		if err != nil {
			dsFail(c, err)
			return
		}
	}
	if hmset {
		c.OK()
	} else {
		c.Int(int64(added))
	}
}

func prefixHSetNX(c *Ctx) {
	if err := prefixCheck(c, 1); err != nil {
		dsFail(c, err)
		return
	}
	set := false
	exp := prefixExpire(c, 1)
	_, err := c.Eng.PrefixUpdate(c.Key(1), c.Args[2], func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && !cur.Hidden {
			return cur, engines.Keep, nil
		}
		set = true
		return engines.Entry{Type: engines.TypeString, Value: append([]byte(nil), c.Args[3]...), ExpireAt: exp}, engines.Store, nil
	})
	if err != nil {
		dsFail(c, err)
		return
	}
	if !set {
		c.NoPropagate()
		c.Int(0)
		return
	}
	c.Int(1)
}

func prefixHGet(c *Ctx) {
	v, ok, err := prefixField(c, 1, c.Args[2])
	if err != nil {
		dsFail(c, err)
		return
	}
	if !ok {
		c.Null()
		return
	}
	c.BulkString(v)
}

func prefixHMGet(c *Ctx) {
	if err := prefixCheck(c, 1); err != nil {
		dsFail(c, err)
		return
	}
	c.Array(len(c.Args) - 2)
	for _, f := range c.Args[2:] {
		e, err := c.Eng.PrefixGet(c.Key(1), f)
		if err != nil || e.Hidden {
			c.Null()
			continue
		}
		c.Bulk(e.Value)
	}
}

func prefixHashDump(c *Ctx, fields, values bool) {
	kvs, err := prefixAll(c, 1)
	if err != nil {
		dsFail(c, err)
		return
	}
	if fields && values {
		c.Map(len(kvs))
	} else {
		c.Array(len(kvs))
	}
	for _, kv := range kvs {
		if fields {
			c.Bulk(kv.Key)
		}
		if values {
			c.Bulk(kv.Entry.Value)
		}
	}
}

func prefixHDel(c *Ctx) {
	if err := prefixCheck(c, 1); err != nil {
		dsFail(c, err)
		return
	}
	n := 0
	for _, f := range c.Args[2:] {
		err := c.Eng.PrefixRemove(c.Key(1), f, 0)
		if err == nil {
			n++
		} else if !errors.Is(err, errs.ErrNotFound) {
			dsFail(c, err)
			return
		}
	}
	if n == 0 {
		c.NoPropagate()
	}
	c.Int(int64(n))
}

func prefixHLen(c *Ctx) {
	kvs, err := prefixAll(c, 1)
	if err != nil {
		dsFail(c, err)
		return
	}
	c.Int(int64(len(kvs)))
}

func prefixModify(c *Ctx, field []byte, fn func(old string, exists bool) (string, error)) error {
	if err := prefixCheck(c, 1); err != nil {
		return err
	}
	exp := prefixExpire(c, 1)
	_, err := c.Eng.PrefixUpdate(c.Key(1), field, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists || cur.Hidden {
			exists, cur = false, engines.Entry{ExpireAt: exp}
		}
		nv, err := fn(string(cur.Value), exists)
		if err != nil {
			return cur, engines.Keep, err
		}
		if len(nv) > c.MaxValueSize() {
			return cur, engines.Keep, errs.ErrValueTooLong
		}
		cur.Type = engines.TypeString
		cur.Value = []byte(nv)
		return cur, engines.Store, nil
	})
	return err
}
