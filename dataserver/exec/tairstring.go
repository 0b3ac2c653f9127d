package exec

// TairString (alibaba/TairString's published commands, syntax, replies
// and error texts) on the engine's plain string records: a TairString is
// a string whose Entry carries the version and FLAGS, so GET/SET and EX*
// commands see the same keys. ABS v sets the version to v.
//
// Every successful write is propagated as the complete resulting record,
// "EXSET key value ABS version FLAGS flags [PXAT ms]" (TairString itself
// replicates EXSET ... ABS ...), so slaves converge whatever the command.

import (
	"bytes"
	"cmp"
	"math"
	"math/big"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

func init() {
	Register("exset", cmdExSet)
	Register("exget", cmdExGet)
	Register("exsetver", cmdExSetVer)
	Register("exincrby", cmdExIncrBy)
	Register("exincrbyfloat", cmdExIncrByFloat)
	Register("excas", cmdExCas)
	Register("excad", cmdExCad)
	Register("exappend", func(c *Ctx) { exAppend(c, false) })
	Register("exprepend", func(c *Ctx) { exAppend(c, true) })
	Register("exgae", cmdExGAE)
	Register("cas", cmdCas)
	Register("cad", cmdCad)
}

// TairString's error texts (src/tairstring.h).
const (
	tsErrVersion  = "ERR update version is stale"
	tsErrNoInt    = "ERR value is not an integer"
	tsErrNoFloat  = "ERR value is not a float"
	tsErrOverflow = "ERR increment or decrement would overflow"
	tsErrMinMax   = "ERR min or max is specified, but not valid"
	tsErrVerInt   = "ERR version should be integer"
	tsStatusCAS   = "CAS_FAILED"
)

// TairString option flags (TAIR_STRING_SET_*).
const (
	tsNX = 1 << iota
	tsXX
	tsEX
	tsPX
	tsAbsExpire
	tsVer
	tsAbsVer
	tsBoundary
	tsFlags
	tsDef
	tsNonNeg
	tsWithVer
	tsKeepTTL
)

const tsExpireOpts = tsEX | tsPX | tsAbsExpire

// tsArgs are the parsed options of a TairString command (raw values).
type tsArgs struct {
	flags                         int
	expire, version, fl, def, min []byte
	max                           []byte
	// resolved
	at  int64 // absolute expiry in ms, with tsEX/tsPX
	ver int64
	f   int64
}

// parseTS is TairString's parseAndGetExFlags: options from args[start:]
// restricted to allow; false means a syntax error (not yet replied).
func parseTS(c *Ctx, start, allow int) (tsArgs, bool) {
	var a tsArgs
	fl := 0
	for j := start; j < len(c.Args); j++ {
		arg := c.Args[j]
		var next []byte
		if j+1 < len(c.Args) {
			next = c.Args[j+1]
		}
		hasNext := next != nil
		// take sets an option's flag and takes its value, the next
		// argument; false: the option conflicts with one given before.
		take := func(conflict bool, set int, dst *[]byte) bool {
			if conflict {
				return false
			}
			fl |= set
			*dst = next
			j++
			return true
		}
		switch {
		case eqFold(arg, "nx"):
			if fl&tsXX != 0 {
				return a, false
			}
			fl |= tsNX
		case eqFold(arg, "xx"):
			if fl&tsNX != 0 {
				return a, false
			}
			fl |= tsXX
		case expireOption(arg) != 0 && hasNext:
			set := tsPX
			if arg[0] == 'e' || arg[0] == 'E' {
				set = tsEX
			}
			if len(arg) == 4 {
				set |= tsAbsExpire
			}
			if !take(fl&(tsPX|tsEX|tsKeepTTL) != 0, set, &a.expire) {
				return a, false
			}
		case eqFold(arg, "ver") && hasNext:
			if !take(fl&(tsVer|tsAbsVer) != 0, tsVer, &a.version) {
				return a, false
			}
		case eqFold(arg, "abs") && hasNext:
			if !take(fl&(tsVer|tsAbsVer) != 0, tsAbsVer, &a.version) {
				return a, false
			}
		case eqFold(arg, "flags") && hasNext:
			if !take(fl&tsFlags != 0, tsFlags, &a.fl) {
				return a, false
			}
		case eqFold(arg, "def") && hasNext:
			if !take(fl&tsDef != 0, tsDef, &a.def) {
				return a, false
			}
		case eqFold(arg, "min") && hasNext:
			if !take(a.min != nil, tsBoundary, &a.min) {
				return a, false
			}
		case eqFold(arg, "max") && hasNext:
			if !take(a.max != nil, tsBoundary, &a.max) {
				return a, false
			}
		case eqFold(arg, "nonegative"):
			fl |= tsNonNeg
		case eqFold(arg, "withversion"):
			fl |= tsWithVer
		case eqFold(arg, "keepttl"):
			if fl&(tsPX|tsEX) != 0 {
				return a, false
			}
			fl |= tsKeepTTL
		default:
			return a, false
		}
	}
	if fl&^allow != 0 {
		return a, false
	}
	a.flags = fl
	return a, true
}

// resolveExpire turns the expire argument into an absolute time in ms;
// false: not an integer or <= 0 (TairString replies a syntax error).
func (a *tsArgs) resolveExpire(now int64) bool {
	if a.expire == nil {
		return true
	}
	v, ok := ParseInt(a.expire)
	if !ok || v <= 0 {
		return false
	}
	if a.flags&tsEX != 0 {
		if v > math.MaxInt64/1000 {
			return false
		}
		v *= 1000
	}
	if a.flags&tsAbsExpire != 0 {
		a.at = max(v, now)
	} else {
		if v > math.MaxInt64-now {
			return false
		}
		a.at = now + v
	}
	return true
}

// resolveVersion parses VER/ABS (>= 0); false: syntax error.
func (a *tsArgs) resolveVersion() bool {
	if a.version == nil {
		return true
	}
	v, ok := ParseInt(a.version)
	if !ok || v < 0 {
		return false
	}
	a.ver = v
	return true
}

// applyExpire is a TairString write's expiry: the given one, else the
// current one with KEEPTTL, else none.
func (a *tsArgs) applyExpire(cur int64) int64 {
	switch {
	case a.expire != nil:
		return a.at
	case a.flags&tsKeepTTL != 0:
		return cur
	}
	return 0
}

// staleVersion reports VER's check failing on an existing record.
func (a *tsArgs) staleVersion(cur engines.Entry) bool {
	return a.flags&tsVer != 0 && a.ver != 0 && a.ver != cur.Version
}

// tsBounds parses MIN and MAX (EXINCRBY, EXINCRBYFLOAT) with parse, zero
// when not given; one that does not parse, or MAX below MIN, is
// tsErrMinMax (errText).
func tsBounds[T any](a *tsArgs, parse func([]byte) (T, bool), compare func(x, y T) int) (lo, hi T, errText string) {
	lo, hi, parsed, ordered := parseBounds(a.min, a.max, parse, compare)
	if !parsed || !ordered {
		return lo, hi, tsErrMinMax
	}
	return lo, hi, ""
}

// parseBounds parses the MIN and MAX of the bounded increments of
// TairString and TairHash (EXINCRBY[FLOAT], EXHINCRBY[FLOAT]) with parse,
// zero when not given (nil: none). parsed is false when one does not
// parse, ordered false when MAX is below MIN; each family has its own
// error texts for them.
func parseBounds[T any](minArg, maxArg []byte, parse func([]byte) (T, bool), compare func(x, y T) int) (lo, hi T, parsed, ordered bool) {
	okLo, okHi := true, true
	if minArg != nil {
		lo, okLo = parse(minArg)
	}
	if maxArg != nil {
		hi, okHi = parse(maxArg)
	}
	if !okLo || !okHi {
		return lo, hi, false, false
	}
	return lo, hi, true, minArg == nil || maxArg == nil || compare(hi, lo) >= 0
}

// skips reports whether NX (the key exists) or XX (it does not) leaves
// the record alone: the write is skipped, with a null reply (tsWriteDone).
func (a *tsArgs) skips(exists bool) bool {
	if exists {
		return a.flags&tsNX != 0
	}
	return a.flags&tsXX != 0
}

// finish sets ABS's version on the stored entry e and propagates the
// resulting record; it returns the final entry.
func (c *Ctx) tsFinish(i int, a *tsArgs, e engines.Entry) (engines.Entry, error) {
	if a.flags&tsAbsVer != 0 && e.Version != a.ver {
		e.Version = a.ver
		if err := c.restore(c.Key(i), e); err != nil {
			return e, err
		}
	}
	c.propagateRecord(i, e)
	return e, nil
}

// tsWriteDone ends a TairString write on args[1] that NX/XX may skip: a
// write that was done gets ABS's version and is propagated (tsFinish).
// It replies err's failure, or a null for a skipped write (ok false);
// else it returns the final record for the caller's reply.
func (c *Ctx) tsWriteDone(a *tsArgs, e engines.Entry, err error, skipped bool) (engines.Entry, bool) {
	if err == nil && !skipped {
		e, err = c.tsFinish(1, a, e)
	}
	switch {
	case err != nil:
		c.Fail(err)
	case skipped:
		c.NoPropagate()
		c.Null()
	default:
		return e, true
	}
	return e, false
}

// propagateRecord propagates args[i]'s record e as an EXSET with ABS.
func (c *Ctx) propagateRecord(i int, e engines.Entry) {
	prop := [][]byte{argEXSET, c.Args[i], e.Value, argABS, Int64Bytes(e.Version), argFLAGS, Int64Bytes(int64(e.Flags))}
	if e.ExpireAt != 0 {
		prop = append(prop, argPXAT, Int64Bytes(e.ExpireAt))
	}
	c.propagateCmd(prop)
}

// EXSET key value [EX|EXAT|PX|PXAT t] [NX|XX] [VER|ABS v] [FLAGS f] [WITHVERSION] [KEEPTTL]
func cmdExSet(c *Ctx) {
	a, ok := parseTS(c, 3, tsNX|tsXX|tsExpireOpts|tsKeepTTL|tsVer|tsAbsVer|tsFlags|tsWithVer)
	if ok {
		ok = a.resolveExpire(c.NowMs()) && a.resolveVersion()
	}
	if ok && a.fl != nil {
		a.f, ok = ParseInt(a.fl)
		ok = ok && a.f >= 0 && a.f <= math.MaxUint32
	}
	if !ok {
		c.SyntaxErr()
		return
	}
	val := bytes.Clone(c.Args[2])
	skipped := false
	e, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if skipped = a.skips(exists); skipped {
			return cur, engines.Keep, nil
		}
		if exists && a.staleVersion(cur) {
			return cur, engines.Keep, ReplyError(tsErrVersion)
		}
		next := engines.Entry{Type: engines.TypeString, Value: val, Flags: cur.Flags, ExpireAt: a.applyExpire(cur.ExpireAt)}
		if a.fl != nil {
			next.Flags = uint32(a.f)
		}
		return next, engines.Store, nil
	})
	if e, ok = c.tsWriteDone(&a, e, err, skipped); !ok {
		return
	}
	if a.flags&tsWithVer != 0 {
		c.Int(e.Version)
		return
	}
	c.OK()
}

// lookupTS reads args[i] for a TairString command: WRONGTYPE for a
// non-string (replied; ok false).
func (c *Ctx) lookupTS(i int) (e engines.Entry, exists, ok bool) {
	e, exists, err := c.Lookup(i)
	if err != nil {
		c.Fail(err)
		return e, false, false
	}
	if exists && e.Type != engines.TypeString {
		c.WrongType()
		return e, false, false
	}
	if !exists && c.pkeyWrongType(i) {
		return e, false, false
	}
	return e, exists, true
}

// tsUpdate is UpdateVisible for TairString commands that check the key's
// type before their other arguments: argErr (a reply text, "" none) is
// returned after the type check, inside the one engine operation.
func (c *Ctx) tsUpdate(argErr string, fn engines.UpdateFunc) (engines.Entry, error) {
	if c.Eng.Persistent() {
		if _, _, ok := c.lookupTS(1); !ok {
			return engines.Entry{}, errReplied
		}
	}
	return c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if argErr != "" {
			return cur, engines.Keep, ReplyError(argErr)
		}
		return fn(cur, exists)
	})
}

// EXGET key [WITHFLAGS]: [value, version(, flags)] or nil.
func cmdExGet(c *Ctx) {
	if len(c.Args) > 3 {
		c.Error("ERR wrong number of arguments for 'exget' command")
		return
	}
	if len(c.Args) == 3 && !eqFold(c.Args[2], "withflags") {
		c.SyntaxErr()
		return
	}
	e, exists, ok := c.lookupTS(1)
	switch {
	case !ok:
	case !exists:
		c.Null()
	case len(c.Args) == 3:
		c.Array(3)
		c.Bulk(e.Value)
		c.Int(e.Version)
		c.Int(int64(e.Flags))
	default:
		c.replyValueVersion(e)
	}
}

// EXSETVER key version: 1, or 0 when missing.
func cmdExSetVer(c *Ctx) {
	e, exists, ok := c.lookupTS(1)
	if !ok {
		return
	}
	if !exists {
		c.NoPropagate()
		c.Int(0)
		return
	}
	v, ok := ParseInt(c.Args[2])
	if !ok || v <= 0 {
		c.SyntaxErr()
		return
	}
	if IsLockRecord(e) && !c.Replica {
		c.Err(errs.ErrLocked)
		return
	}
	e.Version = v
	if err := c.restore(c.Key(1), e); err != nil {
		c.Fail(err)
		return
	}
	c.Int(1) // propagated verbatim
}

// EXINCRBY key num [DEF v] [EX|EXAT|PX|PXAT t] [NX|XX] [VER|ABS v]
// [MIN v] [MAX v] [NONEGATIVE] [WITHVERSION] [KEEPTTL]
func cmdExIncrBy(c *Ctx) {
	a, ok := parseTS(c, 3, tsNX|tsXX|tsExpireOpts|tsKeepTTL|tsVer|tsAbsVer|tsWithVer|tsDef|tsNonNeg|tsBoundary)
	if !ok {
		c.SyntaxErr()
		return
	}
	// The key's type is checked before the other arguments (tsUpdate).
	argErr := ""
	incr, ok := ParseInt(c.Args[2])
	if !ok {
		argErr = tsErrNoInt
	}
	var def int64
	if a.def != nil && argErr == "" {
		if def, ok = ParseInt(a.def); !ok {
			argErr = tsErrNoInt
		}
	}
	if argErr == "" && (!a.resolveExpire(c.NowMs()) || !a.resolveVersion()) {
		argErr = ErrTextSyntax
	}
	var lo, hi int64
	if argErr == "" {
		lo, hi, argErr = tsBounds(&a, ParseInt, cmp.Compare[int64])
	}
	var value int64
	skipped := false
	e, err := c.tsUpdate(argErr, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if skipped = a.skips(exists); skipped {
			return cur, engines.Keep, nil
		}
		var err error
		if value, cur, err = numericValue(cur, exists, ParseInt, def, tsErrNoInt); err != nil {
			return cur, engines.Keep, err
		}
		if exists && a.staleVersion(cur) {
			return cur, engines.Keep, ReplyError(tsErrVersion)
		}
		if !(a.def != nil && !exists) {
			if (incr < 0 && value < 0 && incr < math.MinInt64-value) ||
				(incr > 0 && value > 0 && incr > math.MaxInt64-value) ||
				(a.max != nil && value+incr > hi) || (a.min != nil && value+incr < lo) {
				return cur, engines.Keep, ReplyError(tsErrOverflow)
			}
			value += incr
		}
		if a.flags&tsNonNeg != 0 && value < 0 {
			value = 0
		}
		cur.Value = Int64Bytes(value)
		cur.ExpireAt = a.applyExpire(cur.ExpireAt)
		return cur, engines.Store, nil
	})
	if e, ok = c.tsWriteDone(&a, e, err, skipped); !ok {
		return
	}
	if a.flags&tsWithVer != 0 {
		c.Array(2)
		c.Int(value)
		c.Int(e.Version)
		return
	}
	c.Int(value)
}

// EXINCRBYFLOAT key num [MIN v] [MAX v] [EX|EXAT|PX|PXAT t] [NX|XX] [VER|ABS v] [KEEPTTL]
func cmdExIncrByFloat(c *Ctx) {
	// The key's type is checked before the arguments (tsUpdate).
	argErr := ""
	incr, ok := ParseLongDouble(c.Args[2])
	if !ok {
		argErr = tsErrNoFloat
	}
	a, ok := parseTS(c, 3, tsNX|tsXX|tsExpireOpts|tsKeepTTL|tsVer|tsAbsVer|tsBoundary)
	if argErr == "" && (!ok || !a.resolveExpire(c.NowMs()) || !a.resolveVersion()) {
		argErr = ErrTextSyntax
	}
	var lo, hi *big.Float // nil: not given
	if argErr == "" {
		lo, hi, argErr = tsBounds(&a, ParseLongDouble, (*big.Float).Cmp)
	}
	var out []byte
	skipped := false
	e, err := c.tsUpdate(argErr, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if skipped = a.skips(exists); skipped {
			return cur, engines.Keep, nil
		}
		value, cur, err := numericValue(cur, exists, ParseLongDouble, new(big.Float), tsErrNoFloat)
		if err != nil {
			return cur, engines.Keep, err
		}
		if exists && a.staleVersion(cur) {
			return cur, engines.Keep, ReplyError(tsErrVersion)
		}
		if LongDoubleInf(value) || LongDoubleInf(incr) {
			return cur, engines.Keep, ReplyError(tsErrOverflow)
		}
		sum := AddLongDouble(value, incr)
		if LongDoubleInf(sum) || (hi != nil && sum.Cmp(hi) > 0) || (lo != nil && sum.Cmp(lo) < 0) {
			return cur, engines.Keep, ReplyError(tsErrOverflow)
		}
		out = FormatLongDouble(sum)
		cur.Value = out
		cur.ExpireAt = a.applyExpire(cur.ExpireAt)
		return cur, engines.Store, nil
	})
	if _, ok := c.tsWriteDone(&a, e, err, skipped); ok {
		c.Bulk(out)
	}
}

// EXCAS key newvalue version [EX|EXAT|PX|PXAT t] [KEEPTTL]:
// ["OK", "", newversion], ["CAS_FAILED", value, version], or -1 (missing).
func cmdExCas(c *Ctx) {
	a, ok := parseTS(c, 4, tsExpireOpts|tsKeepTTL)
	if !ok {
		c.SyntaxErr()
		return
	}
	if !a.resolveExpire(c.NowMs()) {
		c.SyntaxErr()
		return
	}
	ver, ok := ParseInt(c.Args[3])
	if !ok {
		c.Error(tsErrVerInt)
		return
	}
	if ver < 0 {
		c.SyntaxErr()
		return
	}
	val := bytes.Clone(c.Args[2])
	var missing bool
	var failed engines.Entry
	var mismatch bool
	e, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			missing = true
			return cur, engines.Keep, nil
		}
		if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if cur.Version != ver {
			mismatch, failed = true, cur
			return cur, engines.Keep, nil
		}
		cur.Value = val
		cur.ExpireAt = a.applyExpire(cur.ExpireAt)
		return cur, engines.Store, nil
	})
	switch {
	case err != nil:
		c.Fail(err)
	case missing:
		c.NoPropagate()
		c.Int(-1)
	case mismatch:
		c.NoPropagate()
		c.Array(3)
		c.Status(tsStatusCAS)
		c.Bulk(failed.Value)
		c.Int(failed.Version)
	default:
		c.propagateRecord(1, e)
		c.Array(3)
		c.OK()
		c.Status("")
		c.Int(e.Version)
	}
}

// EXCAD key version: 1 deleted, 0 version mismatch, -1 missing.
func cmdExCad(c *Ctx) {
	ver, ok := ParseInt(c.Args[2])
	argErr := ""
	if !ok {
		argErr = ErrTextSyntax
	}
	compareAndDelete(c, argErr, func(cur engines.Entry) bool { return cur.Version == ver })
}

// compareAndDelete deletes args[1] when match(cur): 1, 0, -1 (missing).
func compareAndDelete(c *Ctx, argErr string, match func(engines.Entry) bool) {
	res := int64(-1)
	_, err := c.tsUpdate(argErr, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		if !match(cur) {
			res = 0
			return cur, engines.Keep, nil
		}
		res = 1
		return cur, engines.Delete, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if res == 1 {
		c.Propagate(argDel, c.Args[1])
	} else {
		c.NoPropagate()
	}
	c.Int(res)
}

// EXAPPEND / EXPREPEND key value [NX|XX] [VER|ABS v]: the new version.
func exAppend(c *Ctx, prepend bool) {
	a, ok := parseTS(c, 3, tsNX|tsXX|tsVer|tsAbsVer)
	if !ok || !a.resolveVersion() {
		c.SyntaxErr()
		return
	}
	add := c.Args[2]
	skipped := false
	e, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if skipped = a.skips(exists); skipped {
			return cur, engines.Keep, nil
		}
		if !exists {
			return engines.Entry{Type: engines.TypeString, Value: bytes.Clone(add)}, engines.Store, nil
		}
		if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if a.staleVersion(cur) {
			return cur, engines.Keep, ReplyError(tsErrVersion)
		}
		v := make([]byte, 0, len(cur.Value)+len(add))
		if prepend {
			v = append(append(v, add...), cur.Value...)
		} else {
			v = append(append(v, cur.Value...), add...)
		}
		cur.Value = v
		return cur, engines.Store, nil
	})
	if e, ok = c.tsWriteDone(&a, e, err, skipped); ok {
		c.Int(e.Version)
	}
}

// EXGAE key EX|EXAT|PX|PXAT time: [value, version, flags]; the version is
// not changed (TairString's get-and-expire).
func cmdExGAE(c *Ctx) {
	a, ok := parseTS(c, 2, tsExpireOpts)
	if !ok || a.expire == nil || !a.resolveExpire(c.NowMs()) {
		c.SyntaxErr()
		return
	}
	e, exists, ok := c.lookupTS(1)
	switch {
	case !ok:
		return
	case !exists:
		c.NoPropagate()
		c.Null()
		return
	case IsLockRecord(e) && !c.Replica:
		c.Err(errs.ErrLocked)
		return
	}
	e.ExpireAt = a.at
	if err := c.restore(c.Key(1), e); err != nil {
		c.Fail(err)
		return
	}
	c.Propagate([]byte("EXGAE"), c.Args[1], argPXAT, Int64Bytes(a.at))
	c.Array(3)
	c.Bulk(e.Value)
	c.Int(e.Version)
	c.Int(int64(e.Flags))
}

// CAS key oldvalue newvalue [EX|EXAT|PX|PXAT t] [KEEPTTL]: 1, 0, -1.
func cmdCas(c *Ctx) {
	a, ok := parseTS(c, 4, tsExpireOpts|tsKeepTTL)
	if !ok || !a.resolveExpire(c.NowMs()) {
		c.SyntaxErr()
		return
	}
	old, val := c.Args[2], bytes.Clone(c.Args[3])
	res := int64(-1)
	e, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if !bytes.Equal(cur.Value, old) {
			res = 0
			return cur, engines.Keep, nil
		}
		res = 1
		cur.Value = val
		cur.ExpireAt = a.applyExpire(cur.ExpireAt)
		return cur, engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if res == 1 {
		c.propagateRecord(1, e)
	} else {
		c.NoPropagate()
	}
	c.Int(res)
}

// CAD key value: 1, 0, -1.
func cmdCad(c *Ctx) {
	want := c.Args[2]
	compareAndDelete(c, "", func(cur engines.Entry) bool { return bytes.Equal(cur.Value, want) })
}
