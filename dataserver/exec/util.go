package exec

// Shared helpers for command handlers: Redis-exact argument parsing and
// error texts, key lookup as Redis sees it (hidden = missing), and the
// string-write wrapper. Names here are stable: other files of the package
// use them.

import (
	"bytes"
	"errors"
	"math/big"
	"strconv"
	"strings"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/redisnum"
	"github.com/tairkv/tair/resp"
)

// Redis error texts.
const (
	ErrTextNotInt        = "ERR value is not an integer or out of range"
	ErrTextNotFloat      = "ERR value is not a valid float"
	ErrTextSyntax        = "ERR syntax error"
	ErrTextOverflow      = "ERR increment or decrement would overflow"
	ErrTextNoSuchKey     = "ERR no such key"
	ErrTextCrossSlot     = "CROSSSLOT Keys in request don't hash to the same slot"
	ErrTextStringTooLong = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrTextWrongType     = "WRONGTYPE Operation against a key holding the wrong kind of value"
)

// ReplyError is an error whose text is sent to the client as is (with
// its prefix, e.g. "ERR syntax error"). UpdateFuncs return it to abort
// with a Redis-exact error; Ctx.Fail renders it.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

// errReplied is returned by helpers that already wrote the (error) reply;
// Fail ignores it.
var errReplied = errors.New("exec: reply written")

// Fail appends err as an error reply: a ReplyError verbatim, anything else
// through Ctx.Err (Tair codes with their prefixes).
func (c *Ctx) Fail(err error) {
	if err == errReplied {
		return
	}
	var re ReplyError
	if errors.As(err, &re) {
		c.Error(string(re))
		return
	}
	c.Err(err)
}

// WrongType appends Redis's WRONGTYPE error.
func (c *Ctx) WrongType() { c.Error(ErrTextWrongType) }

// ParseInt parses b as Redis's string2ll does (redisnum.ParseInt).
func ParseInt(b []byte) (int64, bool) { return redisnum.ParseInt(b) }

// IntArg parses args[i] as an integer, replying Redis's error when it is
// not one (ok false: the reply is written).
func (c *Ctx) IntArg(i int) (int64, bool) { return parsedArg(c, i, ParseInt, ErrTextNotInt) }

// twoIntArgs is IntArg of args[i] and args[i+1] (a range's start and
// stop, an offset and a count), the first checked first.
func (c *Ctx) twoIntArgs(i int) (a, b int64, ok bool) {
	if a, ok = c.IntArg(i); ok {
		b, ok = c.IntArg(i + 1)
	}
	return a, b, ok
}

// ParseFloat parses b as Redis's string2d does (redisnum.ParseFloat).
func ParseFloat(b []byte) (float64, bool) { return redisnum.ParseFloat(b) }

// FloatArg parses args[i] as a float, replying Redis's error when it is
// not one.
func (c *Ctx) FloatArg(i int) (float64, bool) { return parsedArg(c, i, ParseFloat, ErrTextNotFloat) }

// parsedArg is IntArg and FloatArg: args[i] through parse, errText
// replied when it is not one.
func parsedArg[T any](c *Ctx, i int, parse func([]byte) (T, bool), errText string) (T, bool) {
	v, ok := parse(c.Args[i])
	if !ok {
		c.Error(errText)
	}
	return v, ok
}

// cString is b as Redis's "%s" prints an argument into a message: a C
// string, ending at the first NUL.
func cString(b []byte) string { return errs.Quoted(b, len(b)) }

// errorFormat is what Redis's addReplyErrorFormat does to a message
// before the newlines inside it become spaces: it trims CR and LF at
// both ends.
func errorFormat(msg string) string { return strings.Trim(msg, "\r\n") }

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// Long doubles: Redis's INCRBYFLOAT and HINCRBYFLOAT compute in x87 long
// double (64-bit mantissa) and print with "%.17Lf" minus trailing zeros.
// big.Float with 64 bits of precision reproduces that exactly.

const longDoublePrec = 64

// ParseLongDouble parses b as Redis's string2ld.
func ParseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) > 5*1024 || isSpace(b[0]) || bytes.ContainsRune(b, '_') {
		return nil, false
	}
	if h := b; len(h) > 0 && (h[0] == '+' || h[0] == '-') {
		// strtold's infinities, any case: inf, infinity (big.ParseFloat
		// takes "Inf" alone)
		if h = h[1:]; bytes.EqualFold(h, []byte("inf")) || bytes.EqualFold(h, []byte("infinity")) {
			return new(big.Float).SetInf(b[0] == '-'), true
		}
	} else if bytes.EqualFold(h, []byte("inf")) || bytes.EqualFold(h, []byte("infinity")) {
		return new(big.Float).SetInf(false), true
	}
	base := 10
	if h := bytes.TrimLeft(b, "+-"); len(h) > 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') {
		base = 0 // strtold takes hex floats
	}
	f, _, err := big.ParseFloat(string(b), base, longDoublePrec, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	// strtold's ERANGE: overflow to ±HUGE_VAL or underflow to 0 is
	// rejected (an explicit "inf" is not).
	if !f.IsInf() && f.Sign() != 0 {
		if e := f.MantExp(nil); e > 16384 || e < -16444 {
			return nil, false
		}
	}
	return f, true
}

// LongDoubleInf reports whether f is out of long double's range (or inf).
func LongDoubleInf(f *big.Float) bool {
	return f.IsInf() || f.MantExp(nil) > 16384
}

// FormatLongDouble formats f as Redis's ld2string(LD_STR_HUMAN).
func FormatLongDouble(f *big.Float) []byte {
	b := []byte(f.Text('f', 17))
	if bytes.IndexByte(b, '.') >= 0 {
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
		if b[len(b)-1] == '.' {
			b = b[:len(b)-1]
		}
	}
	if len(b) == 2 && b[0] == '-' && b[1] == '0' {
		b = b[:1]
		b[0] = '0'
	}
	return b
}

// AddLongDouble returns a+b rounded to long double precision.
func AddLongDouble(a, b *big.Float) *big.Float {
	return new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(a, b)
}

// Lookup reads args[i] as Redis commands see it: hidden and expired keys
// are missing (exists false, no error). Other engine errors are returned.
// Objects in the entry must not be touched (use Update).
func (c *Ctx) Lookup(i int) (engines.Entry, bool, error) {
	e, err := c.Eng.Get(c.Key(i))
	if err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return engines.Entry{}, false, nil
		}
		return engines.Entry{}, false, err
	}
	if e.Hidden {
		return engines.Entry{}, false, nil
	}
	return e, true, nil
}

// UpdateVisible is Engine.Update on args[i] as a Redis command sees the
// key: a hidden record is passed as missing (exists false, zero entry;
// storing replaces it, unhidden), and a lock record (TAIR.LOCK) fails the
// write with errs.ErrLocked.
func (c *Ctx) UpdateVisible(i int, fn engines.UpdateFunc) (engines.Entry, error) {
	return c.UpdateKey(c.Key(i), fn)
}

// UpdateKey is UpdateVisible for a key built by the caller.
func (c *Ctx) UpdateKey(k engines.Key, fn engines.UpdateFunc) (engines.Entry, error) {
	if c.bound.visible == nil {
		c.bound.visible = c.applyVisible
	}
	// fn is handed to applyVisible through c.upd rather than by a closure
	// (an allocation per write). Restored afterwards in case fn itself
	// updates another key.
	prev := c.upd
	c.upd = fn
	e, err := c.Eng.Update(k, c.bound.visible)
	c.upd = prev
	if c.fx.set {
		c.reportFieldExpiry(k, err)
	}
	return e, err
}

// applyVisible is UpdateKey's UpdateFunc: c.upd on the record as a Redis
// command sees it.
func (c *Ctx) applyVisible(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
	if exists && IsLockRecord(cur) && !c.Replica {
		return cur, engines.Keep, errs.ErrLocked
	}
	if exists && cur.Hidden {
		cur, exists = engines.Entry{}, false
	}
	next, act, err := c.upd(cur, exists)
	if c.X.opts.FieldExpiry != nil && err == nil {
		c.noteFieldExpiry(cur, exists, next, act)
	}
	return next, act, err
}

// SameBucket checks that the keys at idx all live in one bucket (atomic
// multi-key commands), replying CROSSSLOT when not.
func (c *Ctx) SameBucket(idx ...int) bool {
	if len(idx) == 0 {
		return true
	}
	b := c.Key(idx[0]).Bucket
	for _, i := range idx[1:] {
		if c.Key(i).Bucket != b {
			c.Error(ErrTextCrossSlot)
			return false
		}
	}
	return true
}

// MaxValueSize is the value limit SETRANGE/APPEND check before building a
// value (the engine enforces it too).
func (c *Ctx) MaxValueSize() int {
	if c.X.opts.MaxValueSize > 0 {
		return c.X.opts.MaxValueSize
	}
	return 1 << 20
}

// NowMs is the command's clock in unix milliseconds.
func (c *Ctx) NowMs() int64 { return c.Now().UnixMilli() }

// Int64Bytes formats n.
func Int64Bytes(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// eqFold reports whether b equals the lower-case ASCII word s, ignoring case.
func eqFold(b []byte, s string) bool { return resp.EqualFold(b, s) }

// parseChoice parses args[i] as one of two words, any case (BIT|BYTE,
// LEFT|RIGHT, MIN|MAX): isFirst tells which; anything else is a syntax
// error (ok false: the reply is written).
func parseChoice(c *Ctx, i int, first, second string) (isFirst, ok bool) {
	switch {
	case eqFold(c.Args[i], first):
		return true, true
	case eqFold(c.Args[i], second):
		return false, true
	}
	c.SyntaxErr()
	return false, false
}

// EqFold is eqFold for other files: b equals lower-case word s ignoring case.
func EqFold(b []byte, s string) bool { return eqFold(b, s) }
