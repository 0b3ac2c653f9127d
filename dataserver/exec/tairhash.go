package exec

// TairHash (Alibaba Cloud Tair's exhash): a hash whose fields carry their
// own version and expiry, held as a *ds.ExHash object. Syntax, replies and
// error texts follow tair-opensource/TairHash (src/tairhash.c and
// CMDDOC.md):
//
//   - a new field starts at version 1 and every write of it adds 1; VER v
//     (v != 0) must equal the field's version, ABS v sets it, GT v must be
//     greater and sets it; a mismatch is "ERR update version is stale";
//   - EX/PX are relative, EXAT/PXAT absolute; a write without one of them
//     clears the field's expiry unless KEEPTTL is given (CMDDOC); EXHMSET
//     and EXHSETNX leave expiries alone;
//   - expired fields are invisible to every command; they are reclaimed
//     by the next write of the key that finds one due, and on a
//     dataserver by the master's active expiry (tairhash_expire.go,
//     dataserver/fieldexpiry.go) within about a second (EXHLEN without
//     NOEXP counts them until then, as in Tair);
//   - the key goes when its last field does: writes delete an empty
//     TairHash, and when every field has an expiry the key's own expiry
//     follows the latest of them (unless the user set a key expiry), so an
//     all-expired TairHash disappears by itself;
//   - EXHTTL/EXHPTTL answer -2 for a missing key and -3 for a missing
//     field, EXHVER -1 and -2 (TairHash's code).
//
// Propagation is deterministic: writes that compute or stamp something
// (EXHSET, EXHINCRBY[FLOAT], the EXH*EXPIRE* family) replicate as EXHSET
// ... ABS <version> [PXAT <ms>] or EXHPEXPIREAT ... ABS <version>, as
// TairHash itself does for EXHINCRBYFLOAT.

import (
	"cmp"
	"math/big"
	"strconv"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/glob"
	"github.com/tairkv/tair/resp"
)

func init() {
	Register("exhset", cmdExHSet)
	Register("exhsetnx", cmdExHSetNX)
	Register("exhmset", cmdExHMSet)
	Register("exhget", func(c *Ctx) { exhGet(c, false) })
	Register("exhmget", func(c *Ctx) { exhMGet(c, false) })
	Register("exhgetwithver", func(c *Ctx) { exhGet(c, true) })
	Register("exhmgetwithver", func(c *Ctx) { exhMGet(c, true) })
	Register("exhincrby", func(c *Ctx) { exhIncr(c, false) })
	Register("exhincrbyfloat", func(c *Ctx) { exhIncr(c, true) })
	Register("exhexpire", func(c *Ctx) { exhExpire(c, 1000, true) })
	Register("exhpexpire", func(c *Ctx) { exhExpire(c, 1, true) })
	Register("exhexpireat", func(c *Ctx) { exhExpire(c, 1000, false) })
	Register("exhpexpireat", func(c *Ctx) { exhExpire(c, 1, false) })
	Register("exhttl", func(c *Ctx) { exhTTL(c, true) })
	Register("exhpttl", func(c *Ctx) { exhTTL(c, false) })
	Register("exhver", cmdExHVer)
	Register("exhsetver", cmdExHSetVer)
	Register("exhdel", cmdExHDel)
	Register("exhdelwithver", cmdExHDelWithVer)
	Register("exhlen", cmdExHLen)
	Register("exhexists", cmdExHExists)
	Register("exhstrlen", cmdExHStrLen)
	Register("exhkeys", func(c *Ctx) { exhDump(c, true, false) })
	Register("exhvals", func(c *Ctx) { exhDump(c, false, true) })
	Register("exhgetall", func(c *Ctx) { exhDump(c, true, true) })
	Register("exhscan", cmdExHScan)
}

const (
	errTextExStale       = "ERR update version is stale"
	errTextExNotInt      = "ERR value is not an integer"
	errTextExNotFloat    = "ERR value is not an float"
	errTextExIntMinMax   = "ERR min or max is specified, but value is not an integer"
	errTextExFloatMinMax = "ERR min or max is specified, but value is not a float"
	errTextExMinMax      = "ERR min value is bigger than max value"
)

// Version modes of exOpts.
const (
	exVerNone = iota
	exVerVer
	exVerAbs
	exVerGT
)

// exOpts are the options of EXHSET, EXHINCRBY[FLOAT] and EXH*EXPIRE*.
type exOpts struct {
	nx, xx, keepTTL bool
	hasExp          bool
	expAt           int64 // absolute unix ms
	verMode         int
	ver             int64
	minP, maxP      []byte
}

// Option families parseExOpts accepts.
const (
	exAllowCond = 1 << iota
	exAllowExpire
	exAllowMinMax
)

// parseExOpts parses args[from:]; ok false means the reply is written.
func parseExOpts(c *Ctx, from int, allow int) (exOpts, bool) {
	var o exOpts
	var expP, verP []byte
	var expUnit int64
	var expAbs bool
	for j := from; j < len(c.Args); j++ {
		a := c.Args[j]
		var next []byte
		if j+1 < len(c.Args) {
			next = c.Args[j+1]
		}
		switch {
		case allow&exAllowCond != 0 && EqFold(a, "nx") && !o.xx:
			o.nx = true
		case allow&exAllowCond != 0 && EqFold(a, "xx") && !o.nx:
			o.xx = true
		case allow&exAllowExpire != 0 && EqFold(a, "keepttl"):
			o.keepTTL = true
		case allow&exAllowExpire != 0 && expP == nil && next != nil && expireOption(a) != 0:
			expP = next
			expUnit = 1
			if a[0] == 'e' || a[0] == 'E' {
				expUnit = 1000
			}
			expAbs = len(a) == 4
			j++
		case next != nil && o.verMode == exVerNone && (EqFold(a, "ver") || EqFold(a, "abs") || EqFold(a, "gt")):
			switch {
			case EqFold(a, "ver"):
				o.verMode = exVerVer
			case EqFold(a, "abs"):
				o.verMode = exVerAbs
			default:
				o.verMode = exVerGT
			}
			verP = next
			j++
		case allow&exAllowMinMax != 0 && next != nil && EqFold(a, "min"):
			o.minP = next
			j++
		case allow&exAllowMinMax != 0 && next != nil && EqFold(a, "max"):
			o.maxP = next
			j++
		default:
			c.SyntaxErr()
			return o, false
		}
	}
	if expP != nil {
		e, ok := ParseInt(expP)
		if !ok || e <= 0 || o.keepTTL {
			c.SyntaxErr()
			return o, false
		}
		o.hasExp = true
		o.expAt = clampExpireAt(e, expUnit, !expAbs, c.NowMs())
	}
	if verP != nil {
		v, ok := ParseInt(verP)
		if !ok || v < 0 || (o.verMode != exVerVer && v == 0) {
			c.SyntaxErr()
			return o, false
		}
		o.ver = v
	}
	return o, true
}

// checkVer applies VER/GT to the live field f (nil: missing).
func (o *exOpts) checkVer(f *ds.ExField) error {
	if f == nil {
		return nil
	}
	switch o.verMode {
	case exVerVer:
		if o.ver != 0 && o.ver != f.Version {
			return ReplyError(errTextExStale)
		}
	case exVerGT:
		if o.ver <= f.Version {
			return ReplyError(errTextExStale)
		}
	}
	return nil
}

// newVer is the version a written field gets.
func (o *exOpts) newVer(f *ds.ExField) int64 {
	if o.verMode == exVerAbs || o.verMode == exVerGT {
		return o.ver
	}
	if f == nil {
		return 1
	}
	return engines.NextVersion(f.Version)
}

// newExpire is the expiry a written field gets.
func (o *exOpts) newExpire(f *ds.ExField) int64 {
	switch {
	case o.hasExp:
		return o.expAt
	case o.keepTTL && f != nil:
		return f.ExpireAt
	}
	return 0
}

func newExHash() engines.Object { return ds.NewExHash() }

// exWrite runs fn on the TairHash at args[1] (an empty one when missing).
// fn reports whether it changed anything. Expired fields that are due are
// purged first; an emptied TairHash is deleted; the key's expiry follows
// the fields' (see the file comment).
func exWrite(c *Ctx, fn func(h *ds.ExHash, now int64) (bool, error)) error {
	k := c.Key(1)
	if c.isPkey(k) {
		return errs.ErrWrongType
	}
	now := c.NowMs()
	_, err := c.UpdateKey(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		o, err := dsObject(cur, exists, engines.TypeExHash, newExHash)
		if err != nil {
			return cur, engines.Keep, err
		}
		h := o.(*ds.ExHash)
		purged := h.PurgeDue(now)
		changed, err := fn(h, now)
		if err != nil {
			return cur, engines.Keep, err
		}
		if !changed && purged == 0 {
			return cur, engines.Keep, nil
		}
		next, act := dsStore(cur, exists, engines.TypeExHash, h)
		if act == engines.Store && (!exists || cur.ExpireAt == h.AutoExpire) {
			mx := h.MaxExpire()
			next.ExpireAt, h.AutoExpire = mx, mx
		}
		return next, act, nil
	})
	return err
}

// exRead runs fn on the TairHash at args[1]; fn is not called when the key
// is missing.
func exRead(c *Ctx, fn func(h *ds.ExHash, now int64)) (bool, error) {
	now := c.NowMs()
	return dsRead(c, 1, engines.TypeExHash, func(o engines.Object) error {
		fn(o.(*ds.ExHash), now)
		return nil
	})
}

// propExSet records the canonical EXHSET a slave replays for a field
// write.
func propExSet(c *Ctx, field []byte, f ds.ExField) {
	args := [][]byte{[]byte("EXHSET"), c.Args[1], field, []byte(f.Value), []byte("ABS"), Int64Bytes(f.Version)}
	if f.ExpireAt != 0 {
		args = append(args, []byte("PXAT"), Int64Bytes(f.ExpireAt))
	}
	c.propagateCmd(args)
}

func cmdExHSet(c *Ctx) {
	o, ok := parseExOpts(c, 4, exAllowCond|exAllowExpire)
	if !ok {
		return
	}
	if err := dsCheckValues(c, 3, len(c.Args)); err != nil {
		c.Fail(err)
		return
	}
	field := string(c.Args[2])
	res := int64(0)
	var nf ds.ExField
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		f := h.Get(field, now)
		if (f == nil && o.xx) || (f != nil && o.nx) {
			res = -1
			return false, nil
		}
		if err := o.checkVer(f); err != nil {
			return false, err
		}
		nf = ds.ExField{Value: string(c.Args[3]), Version: o.newVer(f), ExpireAt: o.newExpire(f)}
		if f == nil {
			res = 1
		}
		h.Set(field, nf)
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if res < 0 {
		c.NoPropagate()
	} else {
		propExSet(c, c.Args[2], nf)
	}
	c.Int(res)
}

func cmdExHSetNX(c *Ctx) {
	if err := dsCheckValues(c, 3, len(c.Args)); err != nil {
		c.Fail(err)
		return
	}
	set := false
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		if h.Get(string(c.Args[2]), now) != nil {
			return false, nil
		}
		h.Set(string(c.Args[2]), ds.ExField{Value: string(c.Args[3]), Version: 1})
		set = true
		return true, nil
	})
	replyWrote(c, set, err)
}

func cmdExHMSet(c *Ctx) {
	if !fieldValuePairs(c) {
		return
	}
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		for i := 2; i < len(c.Args); i += 2 {
			f := h.Get(string(c.Args[i]), now)
			nf := ds.ExField{Value: string(c.Args[i+1]), Version: 1}
			if f != nil {
				nf.Version, nf.ExpireAt = engines.NextVersion(f.Version), f.ExpireAt
			}
			h.Set(string(c.Args[i]), nf)
		}
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.OK()
}

// exField reads one live field of args[1] (nil: key or field missing).
func exField(c *Ctx, field []byte) (*ds.ExField, bool, error) {
	var out *ds.ExField
	found, err := exRead(c, func(h *ds.ExHash, now int64) {
		if f := h.Get(string(field), now); f != nil {
			cp := *f
			out = &cp
		}
	})
	return out, found, err
}

// exhGet is EXHGET and EXHGETWITHVER.
func exhGet(c *Ctx, withVer bool) {
	f, _, err := exField(c, c.Args[2])
	if err != nil {
		c.Fail(err)
		return
	}
	replyExField(c, f, withVer)
}

// replyExField answers a field read by EXH[M]GET[WITHVER]: its value,
// [value, version] withVer, or a null when it is missing (f nil).
func replyExField(c *Ctx, f *ds.ExField, withVer bool) {
	switch {
	case f == nil:
		c.Null()
	case withVer:
		c.Array(2)
		c.BulkString(f.Value)
		c.Int(f.Version)
	default:
		c.BulkString(f.Value)
	}
}

func exhMGet(c *Ctx, withVer bool) {
	fs := make([]*ds.ExField, len(c.Args)-2)
	_, err := exRead(c, func(h *ds.ExHash, now int64) {
		for i := range fs {
			if f := h.Get(string(c.Args[i+2]), now); f != nil {
				cp := *f
				fs[i] = &cp
			}
		}
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Array(len(fs))
	for _, f := range fs {
		replyExField(c, f, withVer)
	}
}

func exhIncr(c *Ctx, float bool) {
	var incrI int64
	var incrF *big.Float
	if float {
		f, ok := ParseLongDouble(c.Args[3])
		if !ok {
			c.Error(errTextExNotFloat)
			return
		}
		incrF = f
	} else {
		n, ok := ParseInt(c.Args[3])
		if !ok {
			c.Error(errTextExNotInt)
			return
		}
		incrI = n
	}
	o, ok := parseExOpts(c, 4, exAllowExpire|exAllowMinMax)
	if !ok {
		return
	}
	var minI, maxI int64
	var minF, maxF *big.Float // nil: not given
	var parsed, ordered bool
	if float {
		minF, maxF, parsed, ordered = parseBounds(o.minP, o.maxP, ParseLongDouble, (*big.Float).Cmp)
	} else {
		minI, maxI, parsed, ordered = parseBounds(o.minP, o.maxP, ParseInt, cmp.Compare[int64])
	}
	switch {
	case !parsed && float:
		c.Error(errTextExFloatMinMax)
		return
	case !parsed:
		c.Error(errTextExIntMinMax)
		return
	case !ordered:
		c.Error(errTextExMinMax)
		return
	}
	field := string(c.Args[2])
	var nf ds.ExField
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		f := h.Get(field, now)
		var val string
		if float {
			cur, err := exCurrent(f, &o, ParseLongDouble, new(big.Float), errTextExNotFloat)
			if err != nil {
				return false, err
			}
			sum := AddLongDouble(cur, incrF)
			if LongDoubleInf(sum) || (maxF != nil && sum.Cmp(maxF) > 0) || (minF != nil && sum.Cmp(minF) < 0) {
				return false, ReplyError(ErrTextOverflow)
			}
			val = string(FormatLongDouble(sum))
		} else {
			cur, err := exCurrent(f, &o, ParseInt, 0, errTextExNotInt)
			if err != nil {
				return false, err
			}
			if (incrI < 0 && cur < 0 && incrI < -1<<63-cur) || (incrI > 0 && cur > 0 && incrI > 1<<63-1-cur) ||
				(o.maxP != nil && cur+incrI > maxI) || (o.minP != nil && cur+incrI < minI) {
				return false, ReplyError(ErrTextOverflow)
			}
			val = strconv.FormatInt(cur+incrI, 10)
		}
		nf = ds.ExField{Value: val, Version: o.newVer(f), ExpireAt: o.newExpire(f)}
		h.Set(field, nf)
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	propExSet(c, c.Args[2], nf)
	if float {
		c.BulkString(nf.Value)
		return
	}
	n, _ := strconv.ParseInt(nf.Value, 10, 64)
	c.Int(n)
}

// exCurrent is the number field f holds for an EXHINCRBY(FLOAT), parsed by
// parse (zero when there is no field), or notNum's error; then o's version
// check, in Tair's order.
func exCurrent[T any](f *ds.ExField, o *exOpts, parse func([]byte) (T, bool), zero T, notNum string) (T, error) {
	if f != nil {
		v, ok := parse([]byte(f.Value))
		if !ok {
			return zero, ReplyError(notNum)
		}
		zero = v
	}
	return zero, o.checkVer(f)
}

// exhExpire is EXHEXPIRE (unit 1000, relative), EXHPEXPIRE, EXHEXPIREAT
// and EXHPEXPIREAT. An expiry at or before now deletes the field.
func exhExpire(c *Ctx, unit int64, relative bool) {
	t, ok := ParseInt(c.Args[3])
	if !ok {
		c.SyntaxErr()
		return
	}
	o, ok := parseExOpts(c, 4, 0)
	if !ok {
		return
	}
	now := c.NowMs()
	at := clampExpireAt(t, unit, relative, now)
	field := string(c.Args[2])
	res := int64(0)
	deleted := false
	var nf ds.ExField
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		f := h.Get(field, now)
		if f == nil {
			return false, nil
		}
		if err := o.checkVer(f); err != nil {
			return false, err
		}
		res = 1
		if at <= now {
			deleted = true
			h.Delete(field)
			return true, nil
		}
		nf = *f
		nf.ExpireAt = at
		if o.verMode == exVerAbs || o.verMode == exVerGT {
			nf.Version = o.ver
		}
		h.Set(field, nf)
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	switch {
	case res == 0:
		c.NoPropagate()
	case deleted:
		c.Propagate([]byte("EXHDEL"), c.Args[1], c.Args[2])
	default:
		c.Propagate([]byte("EXHPEXPIREAT"), c.Args[1], c.Args[2], Int64Bytes(nf.ExpireAt), []byte("ABS"), Int64Bytes(nf.Version))
	}
	c.Int(res)
}

func exhTTL(c *Ctx, seconds bool) {
	f, ok := exFieldOrCode(c, -2, -3)
	switch {
	case !ok:
	case f.ExpireAt == 0:
		c.Int(-1)
	default:
		ttl := max(f.ExpireAt-c.NowMs(), 0)
		if seconds {
			ttl = (ttl + 500) / 1000
		}
		c.Int(ttl)
	}
}

func cmdExHVer(c *Ctx) {
	if f, ok := exFieldOrCode(c, -1, -2); ok {
		c.Int(f.Version)
	}
}

// exFieldOrCode reads the field args[2] of the TairHash args[1] for
// EXHTTL and EXHVER, which answer a code of their own for a missing key
// (noKey) or field (noField); ok false: the reply (that code, or an
// error) is written.
func exFieldOrCode(c *Ctx, noKey, noField int64) (*ds.ExField, bool) {
	f, found, err := exField(c, c.Args[2])
	switch {
	case err != nil:
		c.Fail(err)
	case !found:
		c.Int(noKey)
	case f == nil:
		c.Int(noField)
	default:
		return f, true
	}
	return nil, false
}

func cmdExHSetVer(c *Ctx) {
	v, ok := ParseInt(c.Args[3])
	if !ok || v <= 0 {
		c.SyntaxErr()
		return
	}
	set := false
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		f := h.Get(string(c.Args[2]), now)
		if f == nil {
			return false, nil
		}
		nf := *f
		nf.Version = v
		h.Set(string(c.Args[2]), nf)
		set = true
		return true, nil
	})
	replyWrote(c, set, err)
}

func cmdExHDel(c *Ctx) {
	var gone [][]byte
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		for _, f := range c.Args[2:] {
			if h.Get(string(f), now) != nil && h.Delete(string(f)) {
				gone = append(gone, f)
			}
		}
		// A replica stores what the master's EXHDEL changed even when
		// its own clock already purged the fields (ExpireFields sends
		// expired ones), so that the key's version moves as the
		// master's does.
		return len(gone) > 0 || c.Replica, nil
	})
	replyCount(c, len(gone), err)
}

func cmdExHDelWithVer(c *Ctx) {
	if len(c.Args)%2 != 0 {
		dsWrongArgs(c)
		return
	}
	vers := make([]int64, 0, (len(c.Args)-2)/2)
	for i := 3; i < len(c.Args); i += 2 {
		v, ok := ParseInt(c.Args[i])
		if !ok {
			c.SyntaxErr()
			return
		}
		vers = append(vers, v)
	}
	gone := [][]byte{[]byte("EXHDEL"), c.Args[1]}
	err := exWrite(c, func(h *ds.ExHash, now int64) (bool, error) {
		for j, v := range vers {
			name := c.Args[2+2*j]
			f := h.Get(string(name), now)
			if f != nil && (v == 0 || v == f.Version) {
				h.Delete(string(name))
				gone = append(gone, name)
			}
		}
		return len(gone) > 2, nil
	})
	if replyCount(c, len(gone)-2, err) {
		c.propagateCmd(gone)
	}
}

func cmdExHLen(c *Ctx) {
	if len(c.Args) > 3 {
		dsWrongArgs(c)
		return
	}
	noexp := len(c.Args) == 3
	if noexp && !EqFold(c.Args[2], "noexp") {
		c.SyntaxErr()
		return
	}
	n := 0
	_, err := exRead(c, func(h *ds.ExHash, now int64) {
		if noexp {
			n = h.Live(now)
		} else {
			n = h.Len()
		}
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

func cmdExHExists(c *Ctx) {
	f, _, err := exField(c, c.Args[2])
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(boolInt(f != nil))
}

func cmdExHStrLen(c *Ctx) {
	f, _, err := exField(c, c.Args[2])
	if err != nil {
		c.Fail(err)
		return
	}
	if f == nil {
		c.Int(0)
		return
	}
	c.Int(int64(len(f.Value)))
}

// exhDump is EXHKEYS, EXHVALS and EXHGETALL (a flat array, as TairHash
// replies in both protocols).
func exhDump(c *Ctx, fields, values bool) {
	var body []byte
	n := 0
	_, err := exRead(c, func(h *ds.ExHash, now int64) {
		h.Range(now, func(k string, f *ds.ExField) bool {
			if fields {
				body = resp.AppendBulkString(body, k)
				n++
			}
			if values {
				body = resp.AppendBulkString(body, f.Value)
				n++
			}
			return true
		})
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Array(n)
	c.Out = append(c.Out, body...)
}

// cmdExHScan is EXHSCAN key cursor [MATCH p] [COUNT n]: the reply's cursor
// is an integer, as TairHash sends it.
func cmdExHScan(c *Ctx) {
	if len(c.Args) > 7 {
		dsWrongArgs(c)
		return
	}
	cursor, err := strconv.ParseUint(string(c.Args[2]), 10, 64)
	if err != nil {
		c.SyntaxErr()
		return
	}
	var match []byte
	count := int64(10)
	for j := 3; j < len(c.Args); j += 2 {
		if j+1 >= len(c.Args) {
			c.SyntaxErr()
			return
		}
		switch {
		case EqFold(c.Args[j], "match"):
			match = c.Args[j+1]
		case EqFold(c.Args[j], "count"):
			n, ok := ParseInt(c.Args[j+1])
			if !ok {
				c.SyntaxErr()
				return
			}
			count = max(n, 1)
		default:
			c.SyntaxErr()
			return
		}
	}
	var names []string
	vals := map[string]string{}
	if _, err := exRead(c, func(h *ds.ExHash, now int64) {
		h.Range(now, func(k string, f *ds.ExField) bool {
			names = append(names, k)
			vals[k] = f.Value
			return true
		})
	}); err != nil {
		c.Fail(err)
		return
	}
	picked, next := dsScan(names, cursor, int(min(count, 1<<30)))
	items := make([]string, 0, 2*len(picked))
	for _, k := range picked {
		if match == nil || glob.Match(match, []byte(k), false) {
			items = append(items, k, vals[k])
		}
	}
	c.Array(2)
	c.Int(int64(next))
	replyStrings(c, items)
}

// maxFieldExpireAt bounds a field's expiry (unix ms, about 146 million
// years): a client's time may be up to MaxInt64 seconds.
const maxFieldExpireAt = 1 << 62

// clampExpireAt is t (in units of unit ms, from now when relative) as an
// absolute unix-ms expiry within ±maxFieldExpireAt. The bound is applied
// to the result, not to t: the slave is sent the result as PXAT and
// clamps it again, so a bound on t alone (before now is added) left the
// master with a later expiry than its slaves.
func clampExpireAt(t, unit int64, relative bool, now int64) int64 {
	const lim = maxFieldExpireAt
	if t > lim/unit {
		t = lim / unit
	} else if t < -lim/unit {
		t = -lim / unit
	}
	at := t * unit
	if relative {
		at += now
	}
	return min(max(at, -lim), lim)
}
