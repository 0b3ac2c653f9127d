package exec

// Redis hashes (HSET ... HSCAN).
//
// # Engines
//
// On in-memory engines a hash is a *ds.Hash object reached through
// Engine.Update. On persistent engines (Engine.Persistent) a hash is a pkey
// (Tair's prefix model): pkey = key, skey = field, one record per field, so
// that large hashes need not be rewritten on every HSET; see prefixhash.go.
// There is no marker record: a pkey *is* a hash, so TYPE, EXISTS
// and DEL must look at the pkey when no plain key exists, and a plain key
// and a pkey with the same name collide as WRONGTYPE (hash commands refuse
// a key whose plain record exists; the object commands of the other
// families refuse a key that has live skeys).

import (
	"math/rand/v2"
	"strconv"

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

const (
	errTextHashNotInt   = "ERR hash value is not an integer"
	errTextHashNotFloat = "ERR hash value is not a float"
	errTextNaNInf       = "ERR increment would produce NaN or Infinity"
)

func newHash() engines.Object { return ds.NewHash() }

func cmdHSet(c *Ctx, hmset bool) {
	if !fieldValuePairs(c) {
		return
	}
	var added int
	var err error
	if c.Eng.Persistent() {
		added, err = prefixHSet(c)
	} else {
		err = dsWrite(c, 1, engines.TypeHash, newHash, func(o engines.Object) (engines.Action, error) {
			h := o.(*ds.Hash)
			for i := 2; i < len(c.Args); i += 2 {
				if h.Set(string(c.Args[i]), string(c.Args[i+1])) {
					added++
				}
			}
			return engines.Store, nil
		})
	}
	switch {
	case err != nil:
		c.Fail(err)
	case hmset:
		c.OK()
	default:
		c.Int(int64(added))
	}
}

func cmdHSetNX(c *Ctx) {
	if err := dsCheckValues(c, 3, 1); err != nil {
		c.Fail(err)
		return
	}
	var set bool
	var err error
	if c.Eng.Persistent() {
		set, err = prefixHSetNX(c)
	} else {
		err = dsWrite(c, 1, engines.TypeHash, newHash, func(o engines.Object) (engines.Action, error) {
			h := o.(*ds.Hash)
			if _, ok := h.Get(string(c.Args[2])); ok {
				return engines.Keep, nil
			}
			h.Set(string(c.Args[2]), string(c.Args[3]))
			set = true
			return engines.Store, nil
		})
	}
	replyWrote(c, set, err)
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

func cmdHGet(c *Ctx) {
	v, ok, err := hashField(c)
	replyBulkOrNull(c, v, ok, err)
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
		c.Fail(err)
		return
	}
	replyOptional(c, vals)
}

// hashDump is HGETALL (fields and values: a map in RESP3), HKEYS, HVALS.
func hashDump(c *Ctx, fields, values bool) {
	if c.Eng.Persistent() {
		prefixHashDump(c, fields, values)
		return
	}
	header := func(n int) {
		if fields && values {
			c.Map(n)
		} else {
			c.Array(n)
		}
	}
	dsReadReply(c, engines.TypeHash, header, func(o engines.Object) error {
		h := o.(*ds.Hash)
		header(h.Len())
		h.Range(func(f, v string) bool {
			if fields {
				c.BulkString(f)
			}
			if values {
				c.BulkString(v)
			}
			return true
		})
		return nil
	})
}

func cmdHDel(c *Ctx) {
	if c.Eng.Persistent() {
		n, err := prefixHDel(c)
		replyCount(c, n, err)
		return
	}
	removeMembers(c, engines.TypeHash, func(o engines.Object, f string) bool { return o.(*ds.Hash).Delete(f) })
}

func cmdHLen(c *Ctx) {
	if c.Eng.Persistent() {
		prefixHLen(c)
		return
	}
	cmdLen(c, engines.TypeHash)
}

func cmdHExists(c *Ctx) {
	_, ok, err := hashField(c)
	if err != nil {
		c.Fail(err)
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
		c.Fail(err)
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
		c.Fail(err)
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
		c.Fail(err)
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
	// Redis parses the count before it looks at WITHVALUES.
	count, hasCount, ok := dsRandCount(c)
	if !ok {
		return
	}
	withValues := len(c.Args) == 4
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
		replyBulkOrNull(c, f, found, err)
		return
	}
	fs, vs, err := hashPairs(c)
	if err != nil {
		c.Fail(err)
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
	match, count, ok := dsScanOptsIfFound(c, len(fs) > 0, err)
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
