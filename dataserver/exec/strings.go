package exec

// Redis string commands. Every write goes through Engine.Update (via
// Ctx.UpdateVisible) so that type checks, hidden keys and the version bump
// happen atomically; relative expiries are propagated as absolute ones.

import (
	"bytes"
	"math"
	"math/big"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

func init() {
	Register("get", cmdGet)
	Register("set", cmdSet)
	Register("setnx", cmdSetNX)
	Register("setex", func(c *Ctx) { cmdSetEx(c, 1000) })
	Register("psetex", func(c *Ctx) { cmdSetEx(c, 1) })
	Register("getset", cmdGetSet)
	Register("getdel", cmdGetDel)
	Register("getex", cmdGetEx)
	Register("mget", cmdMGet)
	Register("mset", cmdMSet)
	Register("msetnx", cmdMSetNX)
	Register("incr", func(c *Ctx) { incrBy(c, 1) })
	Register("decr", func(c *Ctx) { incrBy(c, -1) })
	Register("incrby", cmdIncrBy)
	Register("decrby", cmdDecrBy)
	Register("incrbyfloat", cmdIncrByFloat)
	Register("append", cmdAppend)
	Register("strlen", cmdStrlen)
	Register("getrange", cmdGetRange)
	Register("substr", cmdGetRange)
	Register("setrange", cmdSetRange)
	Register("lcs", cmdLCS)
}

var (
	argSet       = []byte("SET")
	argDel       = []byte("DEL")
	argPXAT      = []byte("PXAT")
	argKEEPTTL   = []byte("KEEPTTL")
	argPEXPIREAT = []byte("PEXPIREAT")
	argPERSIST   = []byte("PERSIST")
)

func cmdGet(c *Ctx) {
	if v, found, ok := c.readString(1); ok {
		if found {
			c.Bulk(v)
		} else {
			c.Null()
		}
	}
}

// readString reads args[i] for a command that only reads a string: its
// bytes and whether the key exists. A missing key is found false; another
// type (or a prefix-stored hash) is WRONGTYPE. ok false: the reply is
// written.
func (c *Ctx) readString(i int) (val []byte, found, ok bool) {
	e, found, err := c.Lookup(i)
	switch {
	case err != nil:
		c.Fail(err)
		return nil, false, false
	case !found:
		return nil, false, !c.pkeyWrongType(i)
	case e.Type != engines.TypeString:
		c.WrongType()
		return nil, false, false
	}
	return e.Value, true, true
}

// String option flags (Redis's OBJ_* flags of parseExtendedStringArguments).
const (
	optNX = 1 << iota
	optXX
	optGet
	optKeepTTL
	optPersist
	optEX
	optPX
	optEXAT
	optPXAT
)

const optExpire = optEX | optPX | optEXAT | optPXAT

// parseStringOpts parses SET's (set true) or GETEX's options from
// args[from:], as Redis 7 does; it replies and returns ok false on error.
func parseStringOpts(c *Ctx, from int, set bool) (flags int, at int64, ok bool) {
	flags, expArg, ok := parseStringSyntax(c, from, set)
	if !ok {
		return 0, 0, false
	}
	if flags&optExpire != 0 {
		if at, ok = expireMillis(c, expArg, expireUnit(flags), flags&(optEX|optPX) != 0); !ok {
			return 0, 0, false
		}
	}
	return flags, at, true
}

// expireOption is the flag of the expiry option a names, EX, PX, EXAT or
// PXAT in any case (0 for another word); TairString and TairHash take the
// same four.
func expireOption(a []byte) int {
	switch {
	case eqFold(a, "ex"):
		return optEX
	case eqFold(a, "px"):
		return optPX
	case eqFold(a, "exat"):
		return optEXAT
	case eqFold(a, "pxat"):
		return optPXAT
	}
	return 0
}

func expireUnit(flags int) int64 {
	if flags&(optEX|optEXAT) != 0 {
		return 1000
	}
	return 1
}

// parseStringSyntax checks the options' syntax and returns the expiry's
// argument unparsed (GETEX parses it only once the key is found).
func parseStringSyntax(c *Ctx, from int, set bool) (flags int, expArg []byte, ok bool) {
	for j := from; j < len(c.Args); j++ {
		a := c.Args[j]
		hasNext := j+1 < len(c.Args)
		exp := expireOption(a)
		switch {
		case set && eqFold(a, "nx") && flags&optXX == 0:
			flags |= optNX
		case set && eqFold(a, "xx") && flags&optNX == 0:
			flags |= optXX
		case set && eqFold(a, "get"):
			flags |= optGet
		case set && eqFold(a, "keepttl") && flags&(optPersist|optExpire) == 0:
			flags |= optKeepTTL
		case !set && eqFold(a, "persist") && flags&(optExpire|optKeepTTL) == 0:
			flags |= optPersist
		case exp != 0 && flags&(optKeepTTL|optPersist|optExpire&^exp) == 0 && hasNext:
			// one kind of expiry: the same option again is taken, as Redis does
			flags |= exp
			j++
			expArg = c.Args[j]
		default:
			c.SyntaxErr()
			return 0, nil, false
		}
	}
	return flags, expArg, true
}

// expireMillis is Redis's getExpireMillisecondsOrReply: the absolute expiry
// in ms of an EX/PX (relative) or EXAT/PXAT argument, > 0.
func expireMillis(c *Ctx, arg []byte, unit int64, relative bool) (int64, bool) {
	v, msg := expireMillisText(c, arg, unit, relative)
	if msg != "" {
		c.Error(msg)
		return 0, false
	}
	return v, true
}

// expireMillisText is expireMillis returning the error text instead of
// replying it.
func expireMillisText(c *Ctx, arg []byte, unit int64, relative bool) (int64, string) {
	v, ok := ParseInt(arg)
	if !ok {
		return 0, ErrTextNotInt
	}
	if v <= 0 || (unit == 1000 && v > math.MaxInt64/1000) {
		return 0, c.invalidExpireText()
	}
	v *= unit
	if relative {
		v += c.NowMs() // wraps negative on overflow, as in C
	}
	if v <= 0 {
		return 0, c.invalidExpireText()
	}
	return v, ""
}

func (c *Ctx) invalidExpire() { c.Error(c.invalidExpireText()) }

func (c *Ctx) invalidExpireText() string {
	return "ERR invalid expire time in '" + c.spec.Name + "' command"
}

func cmdSet(c *Ctx) {
	flags, at, ok := parseStringOpts(c, 3, true)
	if !ok {
		return
	}
	if flags&optGet != 0 && c.pkeyWrongType(1) {
		return
	}
	setGeneric(c, flags, at)
}

// setGeneric is Redis's setGenericCommand on args[1] (key), args[2] (value).
func setGeneric(c *Ctx, flags int, at int64) {
	s := &c.set
	*s = setState{flags: flags, at: at, val: bytes.Clone(c.Args[2])} // the engine keeps what it is given
	if c.bound.set == nil {
		c.bound.set = c.applySet
	}
	if flags&(optNX|optXX) != 0 {
		// a prefix-stored hash (persistent engines) is the key too
		if c.isPkey(c.Key(1)) {
			if flags&optNX != 0 {
				c.NoPropagate()
				c.Null()
				return
			}
			s.pkey = true
		}
	}
	_, err := c.UpdateVisible(1, c.bound.set)
	if err != nil {
		c.Fail(err)
		return
	}
	if !s.aborted && !s.existed {
		c.dropPkey(1)
	}
	switch {
	case s.aborted:
		c.NoPropagate()
	case flags&optExpire != 0:
		c.Propagate(argSet, c.Args[1], s.val, argPXAT, Int64Bytes(at))
	case flags&optKeepTTL != 0:
		c.Propagate(argSet, c.Args[1], s.val, argKEEPTTL)
	default:
		c.Propagate(argSet, c.Args[1], s.val)
	}
	switch {
	case flags&optGet != 0 && s.hadOld:
		c.Bulk(s.old)
	case flags&optGet != 0 || s.aborted:
		c.Null()
	default:
		c.OK()
	}
}

// setState is setGeneric's write: its inputs and what it found. It lives
// in the Ctx so that SET's UpdateFunc (applySet) needs no closure.
type setState struct {
	flags   int
	at      int64  // the expiry with optExpire
	val     []byte // the new value, owned by the engine once stored
	old     []byte // the previous value, with optGet
	hadOld  bool
	aborted bool // NX/XX did not hold
	existed bool // a plain record held the key
	pkey    bool // a prefix-stored hash holds the key (persistent engines)
}

// applySet is setGeneric's UpdateFunc on c.set.
func (c *Ctx) applySet(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
	s := &c.set
	s.existed = exists
	if s.pkey {
		exists = true
	}
	if s.flags&optGet != 0 && exists {
		if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		s.old, s.hadOld = bytes.Clone(cur.Value), true
	}
	if (s.flags&optNX != 0 && exists) || (s.flags&optXX != 0 && !exists) {
		s.aborted = true
		return cur, engines.Keep, nil
	}
	next := engines.Entry{Type: engines.TypeString, Value: s.val}
	switch {
	case s.flags&optKeepTTL != 0 && exists:
		next.ExpireAt = cur.ExpireAt
	case s.flags&optExpire != 0:
		next.ExpireAt = s.at
	}
	return next, engines.Store, nil
}

func cmdSetNX(c *Ctx) {
	if c.isPkey(c.Key(1)) { // a prefix-stored hash exists
		c.NoPropagate()
		c.Int(0)
		return
	}
	created := false
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists {
			return cur, engines.Keep, nil
		}
		created = true
		return engines.Entry{Type: engines.TypeString, Value: bytes.Clone(c.Args[2])}, engines.Store, nil
	})
	if replyWrote(c, created, err) {
		c.Propagate(argSet, c.Args[1], c.Args[2])
	}
}

// SETEX key seconds value / PSETEX key ms value.
func cmdSetEx(c *Ctx, unit int64) {
	at, ok := expireMillis(c, c.Args[2], unit, true)
	if !ok {
		return
	}
	c.Args = [][]byte{c.Args[0], c.Args[1], c.Args[3]}
	setGeneric(c, optPX, at)
}

func cmdGetSet(c *Ctx) {
	if c.pkeyWrongType(1) {
		return
	}
	var old []byte
	var had bool
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists {
			if cur.Type != engines.TypeString {
				return cur, engines.Keep, errs.ErrWrongType
			}
			old, had = bytes.Clone(cur.Value), true
		}
		return engines.Entry{Type: engines.TypeString, Value: bytes.Clone(c.Args[2])}, engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Propagate(argSet, c.Args[1], c.Args[2])
	if had {
		c.Bulk(old)
	} else {
		c.Null()
	}
}

func cmdGetDel(c *Ctx) {
	if c.pkeyWrongType(1) {
		return
	}
	var old []byte
	var had bool
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		old, had = bytes.Clone(cur.Value), true
		return cur, engines.Delete, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if !had {
		c.NoPropagate()
		c.Null()
		return
	}
	c.Propagate(argDel, c.Args[1])
	c.Bulk(old)
}

func cmdGetEx(c *Ctx) {
	flags, expArg, ok := parseStringSyntax(c, 2, false)
	if !ok {
		return
	}
	if flags&(optExpire|optPersist) == 0 {
		c.NoPropagate()
		cmdGet(c)
		return
	}
	// As Redis: the options' syntax, then the key (missing: nil) and its
	// type, and only then the expiry's value.
	if c.pkeyWrongType(1) {
		return
	}
	var at int64
	var expErr string
	if flags&optExpire != 0 {
		at, expErr = expireMillisText(c, expArg, expireUnit(flags), flags&(optEX|optPX) != 0)
	}
	var val []byte
	var had bool
	var act engines.Action
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if expErr != "" {
			return cur, engines.Keep, ReplyError(expErr)
		}
		val, had = bytes.Clone(cur.Value), true
		switch {
		case flags&optExpire != 0 && at <= c.NowMs() && !c.Replica:
			act = engines.Delete
		case flags&optExpire != 0:
			cur.ExpireAt = at
			act = engines.Store
		case cur.ExpireAt != 0: // PERSIST
			cur.ExpireAt = 0
			act = engines.Store
		default:
			act = engines.Keep
		}
		return cur, act, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	switch {
	case !had || act == engines.Keep:
		c.NoPropagate()
	case act == engines.Delete:
		c.Propagate(argDel, c.Args[1])
	case flags&optExpire != 0:
		c.Propagate(argPEXPIREAT, c.Args[1], Int64Bytes(at))
	default:
		c.Propagate(argPERSIST, c.Args[1])
	}
	if had {
		c.Bulk(val)
	} else {
		c.Null()
	}
}

func cmdMGet(c *Ctx) {
	keys := make([]engines.Key, len(c.Args)-1)
	for i := range keys {
		keys[i] = c.Key(i + 1)
	}
	ents, errl := c.Eng.MultiGet(keys)
	c.Array(len(keys))
	for i := range keys {
		e := ents[i]
		if errl[i] != nil || e.Hidden || e.Type != engines.TypeString {
			c.Null()
			continue
		}
		c.Bulk(e.Value)
	}
}

func cmdMSet(c *Ctx) {
	if len(c.Args)%2 != 1 {
		c.Error("ERR wrong number of arguments for '" + c.spec.Name + "' command")
		return
	}
	if msetPairs(c) {
		c.OK()
	}
}

// msetPairs stores every key/value pair of args; on an engine error it
// replies with it (pairs stored before are replicated) and returns false.
func msetPairs(c *Ctx) bool {
	if c.bound.set == nil {
		c.bound.set = c.applySet
	}
	for i := 1; i < len(c.Args); i += 2 {
		// A plain SET of the pair (no flags: store, no expiry).
		c.set = setState{val: bytes.Clone(c.Args[i+1])}
		_, err := c.UpdateVisible(i, c.bound.set)
		if err == nil && !c.set.existed {
			c.dropPkey(i)
		}
		if err != nil {
			if i > 1 {
				c.propagateCmd(append([][]byte{[]byte("MSET")}, c.Args[1:i]...))
			}
			c.Fail(err)
			return false
		}
	}
	c.propagateCmd(append([][]byte{[]byte("MSET")}, c.Args[1:]...))
	return true
}

func cmdMSetNX(c *Ctx) {
	if len(c.Args)%2 != 1 {
		c.Error("ERR wrong number of arguments for '" + c.spec.Name + "' command")
		return
	}
	idx := make([]int, 0, len(c.Args)/2)
	for i := 1; i < len(c.Args); i += 2 {
		idx = append(idx, i)
	}
	if !c.SameBucket(idx...) {
		return
	}
	for _, i := range idx {
		_, ok, _, err := c.lookupAny(i) // a prefix-stored hash exists too
		if err != nil {
			c.Fail(err)
			return
		}
		if ok {
			c.NoPropagate()
			c.Int(0)
			return
		}
	}
	if msetPairs(c) {
		c.Int(1)
	}
}

func cmdIncrBy(c *Ctx) {
	d, ok := c.IntArg(2)
	if ok {
		incrBy(c, d)
	}
}

func cmdDecrBy(c *Ctx) {
	d, ok := c.IntArg(2)
	if !ok {
		return
	}
	if d == math.MinInt64 {
		c.Error("ERR decrement would overflow")
		return
	}
	incrBy(c, -d)
}

// incrBy is Redis's incrDecrCommand: the TTL is kept.
func incrBy(c *Ctx, delta int64) {
	if c.pkeyWrongType(1) {
		return
	}
	c.incr = incrState{delta: delta}
	if c.bound.incr == nil {
		c.bound.incr = c.applyIncr
	}
	_, err := c.UpdateVisible(1, c.bound.incr)
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(c.incr.n)
}

// incrState is incrBy's write: the delta and the result. It lives in the
// Ctx so that INCR's UpdateFunc (applyIncr) needs no closure.
type incrState struct {
	delta, n int64
}

// applyIncr is incrBy's UpdateFunc on c.incr.
func (c *Ctx) applyIncr(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
	delta := c.incr.delta
	v, cur, err := numericValue(cur, exists, ParseInt, 0, ErrTextNotInt)
	if err != nil {
		return cur, engines.Keep, err
	}
	if (delta < 0 && v < 0 && delta < math.MinInt64-v) || (delta > 0 && v > 0 && delta > math.MaxInt64-v) {
		return cur, engines.Keep, ReplyError(ErrTextOverflow)
	}
	c.incr.n = v + delta
	cur.Value = Int64Bytes(c.incr.n)
	return cur, engines.Store, nil
}

// numericValue reads a string record for the INCR family (INCR*,
// EXINCRBY*): its value parsed by parse (notNum when that fails), or zero
// and a new empty string record in place of cur when the key is missing.
// Another type is WRONGTYPE.
func numericValue[T any](cur engines.Entry, exists bool, parse func([]byte) (T, bool), zero T, notNum string) (T, engines.Entry, error) {
	if !exists {
		return zero, engines.Entry{Type: engines.TypeString}, nil
	}
	if cur.Type != engines.TypeString {
		return zero, cur, errs.ErrWrongType
	}
	v, ok := parse(cur.Value)
	if !ok {
		return zero, cur, ReplyError(notNum)
	}
	return v, cur, nil
}

func cmdIncrByFloat(c *Ctx) {
	// Redis checks the key's type and value before the increment.
	incr, ok := ParseLongDouble(c.Args[2])
	if c.pkeyWrongType(1) {
		return
	}
	var out []byte
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		base, cur, err := numericValue(cur, exists, ParseLongDouble, new(big.Float), ErrTextNotFloat)
		if err != nil {
			return cur, engines.Keep, err
		}
		if !ok {
			return cur, engines.Keep, ReplyError(ErrTextNotFloat)
		}
		if LongDoubleInf(base) || LongDoubleInf(incr) {
			return cur, engines.Keep, ReplyError("ERR increment would produce NaN or Infinity")
		}
		sum := AddLongDouble(base, incr)
		if LongDoubleInf(sum) {
			return cur, engines.Keep, ReplyError("ERR increment would produce NaN or Infinity")
		}
		out = FormatLongDouble(sum)
		cur.Value = out
		return cur, engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Propagate(argSet, c.Args[1], out, argKEEPTTL)
	c.Bulk(out)
}

func cmdAppend(c *Ctx) {
	if c.pkeyWrongType(1) {
		return
	}
	var n int
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			cur = engines.Entry{Type: engines.TypeString}
		} else if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if err := checkStringSize(c, int64(len(cur.Value)), int64(len(c.Args[2]))); err != nil {
			return cur, engines.Keep, err
		}
		v := make([]byte, 0, len(cur.Value)+len(c.Args[2]))
		cur.Value = append(append(v, cur.Value...), c.Args[2]...)
		n = len(cur.Value)
		return cur, engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

func cmdStrlen(c *Ctx) {
	if v, _, ok := c.readString(1); ok {
		c.Int(int64(len(v)))
	}
}

func cmdGetRange(c *Ctx) {
	start, end, ok := c.twoIntArgs(2)
	if !ok {
		return
	}
	if v, _, ok := c.readString(1); ok {
		c.Bulk(strRange(v, start, end))
	}
}

// strRange is GETRANGE's index arithmetic.
func strRange(s []byte, start, end int64) []byte {
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	start, end = clampRange(n, start, end)
	if start > end || n == 0 {
		return nil
	}
	return s[start : end+1]
}

// clampRange resolves start and end over n elements as GETRANGE and
// BITCOUNT do: negative indexes count from the end, then both are
// clamped to [0, n-1]; the range is empty when start > end.
func clampRange(n, start, end int64) (int64, int64) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	return start, end
}

func cmdSetRange(c *Ctx) {
	off, ok := c.IntArg(2)
	if !ok {
		return
	}
	if off < 0 {
		c.Error("ERR offset is out of range")
		return
	}
	if c.pkeyWrongType(1) {
		return
	}
	val := c.Args[3]
	var n int
	var wrote bool
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			cur = engines.Entry{Type: engines.TypeString}
		} else if cur.Type != engines.TypeString {
			return cur, engines.Keep, errs.ErrWrongType
		}
		if len(val) == 0 {
			n = len(cur.Value)
			return cur, engines.Keep, nil
		}
		if err := checkStringSize(c, off, int64(len(val))); err != nil {
			return cur, engines.Keep, err
		}
		end := int(off) + len(val)
		v := make([]byte, max(end, len(cur.Value)))
		copy(v, cur.Value)
		copy(v[off:], val)
		cur.Value = v
		n = len(v)
		wrote = true
		return cur, engines.Store, nil
	})
	replyChanged(c, wrote, int64(n), err)
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]
func cmdLCS(c *Ctx) {
	if !c.SameBucket(1, 2) {
		return
	}
	var vals [2][]byte
	for i := range 2 {
		e, ok, err := c.Lookup(i + 1)
		if err != nil {
			c.Fail(err)
			return
		}
		if ok && e.Type != engines.TypeString || !ok && c.isPkey(c.Key(i+1)) {
			c.Error("ERR The specified keys must contain string values")
			return
		}
		vals[i] = e.Value
	}
	var getLen, getIdx, withMatchLen bool
	var minMatch int64
	for j := 3; j < len(c.Args); j++ {
		a := c.Args[j]
		switch {
		case eqFold(a, "idx"):
			getIdx = true
		case eqFold(a, "len"):
			getLen = true
		case eqFold(a, "withmatchlen"):
			withMatchLen = true
		case eqFold(a, "minmatchlen") && j+1 < len(c.Args):
			v, ok := c.IntArg(j + 1)
			if !ok {
				return
			}
			minMatch = max(v, 0)
			j++
		default:
			c.SyntaxErr()
			return
		}
	}
	if getIdx && getLen {
		c.Error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	a, b := vals[0], vals[1]
	if (len(a)+1)*(len(b)+1) > 1<<27 {
		c.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	// dp[i][j] = LCS length of a[:i], b[:j].
	w := len(b) + 1
	dp := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				dp[i*w+j] = dp[(i-1)*w+j-1] + 1
			} else {
				dp[i*w+j] = max(dp[(i-1)*w+j], dp[i*w+j-1])
			}
		}
	}
	idx := int(dp[len(a)*w+len(b)])
	if getLen {
		c.Int(int64(idx))
		return
	}
	res := make([]byte, idx)
	type match struct{ a1, a2, b1, b2 int }
	var matches []match
	i, j := len(a), len(b)
	arange, brange := -1, -1 // current range ends (inclusive), -1 none
	astart, bstart := 0, 0
	emit := func() {
		if arange >= 0 && int64(arange-astart+1) >= minMatch {
			matches = append(matches, match{astart, arange, bstart, brange})
		}
		arange, brange = -1, -1
	}
	for i > 0 && j > 0 {
		if a[i-1] == b[j-1] {
			res[idx-1] = a[i-1]
			idx--
			if arange < 0 {
				arange, brange = i-1, j-1
				astart, bstart = i-1, j-1
			} else if astart == i && bstart == j {
				astart, bstart = i-1, j-1
			} else {
				emit()
				arange, brange = i-1, j-1
				astart, bstart = i-1, j-1
			}
			i--
			j--
		} else {
			if arange >= 0 {
				emit()
			}
			if dp[(i-1)*w+j] > dp[i*w+j-1] {
				i--
			} else {
				j--
			}
		}
	}
	if arange >= 0 {
		emit()
	}
	if !getIdx {
		c.Bulk(res)
		return
	}
	c.Map(2)
	c.BulkString("matches")
	c.Array(len(matches))
	for _, m := range matches {
		if withMatchLen {
			c.Array(3)
		} else {
			c.Array(2)
		}
		c.Array(2)
		c.Int(int64(m.a1))
		c.Int(int64(m.a2))
		c.Array(2)
		c.Int(int64(m.b1))
		c.Int(int64(m.b2))
		if withMatchLen {
			c.Int(int64(m.a2 - m.a1 + 1))
		}
	}
	c.BulkString("len")
	c.Int(int64(len(res)))
}

// checkStringSize refuses a string that APPEND or SETRANGE would grow to
// n bytes: past Redis's proto-max-bulk-len with Redis's error, past the
// value limit (SPEC §2) with VALUETOOLONG.
// checkStringSize checks a string of size bytes grown by add, as Redis's
// checkStringLength: the sum is checked for overflow too (SETRANGE's
// offset is the client's, up to MaxInt64).
func checkStringSize(c *Ctx, size, add int64) error {
	n := int64(uint64(size) + uint64(add))
	switch {
	case n > protoMaxBulkLen || n < size || n < add:
		return ReplyError(ErrTextStringTooLong)
	case n > int64(c.MaxValueSize()):
		return errs.ErrValueTooLong
	}
	return nil
}

// protoMaxBulkLen is Redis's proto-max-bulk-len (CONFIG GET answers it).
const protoMaxBulkLen = 512 << 20
