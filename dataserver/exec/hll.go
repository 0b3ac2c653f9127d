package exec

// Redis HyperLogLogs: PFADD, PFCOUNT, PFMERGE and PFDEBUG, as Redis 7.0's
// hyperloglog.c, on Redis's own string format (hll_format.go), so that
// GET and SET move HyperLogLogs between redis-server and Tair unchanged.
// A HyperLogLog is a plain string record (engines.TypeString). Writes keep
// the record's expiry.
//
// PFSELFTEST is not implemented (an unknown command): it tests Redis's C
// register macros against themselves and adds ten million elements, which
// would hold a bucket's lock for seconds and checks nothing of the data.
//
// # Replication
//
// PFADD reads and writes its own key only and is deterministic given its
// value: it propagates as itself when it changed a register (or created
// the key), and not at all otherwise.
//
// PFCOUNT of one key caches the cardinality in the value's header when
// the cache is stale, as Redis does: GET then answers Redis's bytes, and a
// value moved to redis-server keeps its cache. That is a write (the spec
// is Write, so it runs on the bucket's master, invalidates the proxy's
// hot-key cache and bumps the record's version, as Redis signals the key
// modified), and it propagates as itself, "PFCOUNT key", as Redis
// propagates it: the slave holds the same registers, computes the same
// cardinality and stores the same bytes. A PFCOUNT that found the cache
// fresh, or of several keys (it caches nothing), propagates nothing.
//
// PFMERGE reads other keys: it propagates its effect, "SET dest value"
// (with PXAT when dest has an expiry), so that a slave whose view of a
// source differs (an expiry at the edge of its clock) still ends equal.
// The master stores the record SET would (no FLAGS), so both are the same.
//
// A PFADD on a corrupted sparse value fails with INVALIDOBJ at the element
// whose register the code does not reach; Redis keeps what the elements
// before it changed (and, unlike here, propagates nothing of it). That
// partial value is kept as Redis keeps it and propagated as a SET too.
//
// PFDEBUG TODENSE, and GETREG of a sparse value (which converts it first),
// propagate as "PFDEBUG TODENSE key"; its other forms write nothing.

import (
	"bytes"
	"strconv"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/hll"
)

func init() {
	Register("pfadd", cmdPFAdd)
	Register("pfcount", cmdPFCount)
	Register("pfmerge", cmdPFMerge)
	Register("pfdebug", cmdPFDebug)
}

// Redis's error texts of hyperloglog.c.
const (
	errTextNotHLL     = hll.ErrTextNotHLL
	errTextInvalidHLL = hll.ErrTextInvalid
	errTextPFNoKey    = "ERR The specified key does not exist"
	errTextNotSparse  = "ERR HLL encoding is not sparse"
)

var (
	argPFDEBUG = []byte("PFDEBUG")
	argTODENSE = []byte("TODENSE")
)

// hllOf is the HyperLogLog a record holds, or Redis's isHLLObjectOrReply
// error: WRONGTYPE for another type, "not a valid HyperLogLog" for a
// string without the header (or a dense one of the wrong size).
func hllOf(e engines.Entry) ([]byte, error) {
	if e.Type != engines.TypeString {
		return nil, errs.ErrWrongType
	}
	if !hll.Valid(e.Value) {
		return nil, ReplyError(errTextNotHLL)
	}
	return e.Value, nil
}

// hllRead is the HyperLogLog at args[i], nil when the key is missing (an
// empty one to PFCOUNT and PFMERGE). The value is read only.
func hllRead(c *Ctx, i int) ([]byte, error) {
	e, ok, err := c.Lookup(i)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		if c.Eng.Persistent() && c.isPkey(c.Key(i)) { // a prefix-stored hash
			return nil, errs.ErrWrongType
		}
		return nil, nil
	}
	return hllOf(e)
}

// hllRecord is the record a HyperLogLog write that propagates as a SET
// stores: what "SET key value [PXAT at]" stores on the slave.
func hllRecord(v []byte, at int64) engines.Entry {
	return engines.Entry{Type: engines.TypeString, Value: v, ExpireAt: at}
}

// hllPropagateSet records "SET key value [PXAT at]" for args[i].
func hllPropagateSet(c *Ctx, i int, v []byte, at int64) {
	if at != 0 {
		c.Propagate(argSet, c.Args[i], v, argPXAT, Int64Bytes(at))
		return
	}
	c.Propagate(argSet, c.Args[i], v)
}

// PFADD key [element ...]
func cmdPFAdd(c *Ctx) {
	if c.pkeyWrongType(1) {
		return
	}
	var (
		updated int
		partial []byte // INVALIDOBJ after earlier elements changed the value
		at      int64
	)
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		updated, partial = 0, nil
		var s []byte
		if exists {
			v, err := hllOf(cur)
			if err != nil {
				return cur, engines.Keep, err
			}
			s = bytes.Clone(v)
		} else {
			s = hll.New()
			updated = 1 // created
		}
		for _, ele := range c.Args[2:] {
			var r int
			switch s, r = hll.Add(s, ele); r {
			case 1:
				updated++
			case -1:
				if updated == 0 {
					return cur, engines.Keep, ReplyError(errTextInvalidHLL)
				}
				partial, at = s, cur.ExpireAt
				return hllRecord(s, at), engines.Store, nil
			}
		}
		if updated == 0 {
			return cur, engines.Keep, nil
		}
		hll.Invalidate(s)
		next := cur
		if !exists {
			next = engines.Entry{Type: engines.TypeString}
		}
		next.Value = s
		return next, engines.Store, nil
	})
	switch {
	case err != nil:
		c.Fail(err)
	case partial != nil:
		hllPropagateSet(c, 1, partial, at)
		c.Error(errTextInvalidHLL)
	case updated == 0:
		c.NoPropagate()
		c.Int(0)
	default:
		c.Int(1) // propagated as itself
	}
}

// PFCOUNT key [key ...]
func cmdPFCount(c *Ctx) {
	if len(c.Args) > 2 {
		pfCountUnion(c)
		return
	}
	if c.pkeyWrongType(1) {
		return
	}
	var card uint64
	cached := false
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		card, cached = 0, false
		if !exists {
			return cur, engines.Keep, nil
		}
		v, err := hllOf(cur)
		if err != nil {
			return cur, engines.Keep, err
		}
		if n, ok := hll.Cached(v); ok {
			card = n
			return cur, engines.Keep, nil
		}
		n, ok := hll.CountOf(v)
		if !ok {
			return cur, engines.Keep, ReplyError(errTextInvalidHLL)
		}
		s := bytes.Clone(v)
		hll.SetCached(s, n)
		card, cached = n, true
		next := cur
		next.Value = s
		return next, engines.Store, nil
	})
	replyChanged(c, cached, int64(card), err) // as Redis's long long (a crafted value's 2^63 is negative)
}

// pfCountUnion is PFCOUNT of several keys: the cardinality of their
// union, nothing cached.
func pfCountUnion(c *Ctx) {
	c.NoPropagate()
	if !c.SameBucket(hllKeys(c)...) {
		return
	}
	max := new([hll.Registers]uint8)
	for i := 1; i < len(c.Args); i++ {
		v, err := hllRead(c, i)
		if err != nil {
			c.Fail(err)
			return
		}
		if v != nil && !hll.MergeInto(max, v) {
			c.Error(errTextInvalidHLL)
			return
		}
	}
	c.Int(int64(hll.CountRegisters(max)))
}

// hllKeys are the indexes of args[1:].
func hllKeys(c *Ctx) []int {
	idx := make([]int, len(c.Args)-1)
	for i := range idx {
		idx[i] = i + 1
	}
	return idx
}

// PFMERGE destkey [sourcekey ...]
func cmdPFMerge(c *Ctx) {
	if !c.SameBucket(hllKeys(c)...) {
		return
	}
	// The registers' maximum over every key, the destination's too.
	max := new([hll.Registers]uint8)
	dense := false
	for i := 1; i < len(c.Args); i++ {
		v, err := hllRead(c, i)
		if err != nil {
			c.Fail(err)
			return
		}
		if v == nil {
			continue
		}
		if v[hll.EncodingByte] == hll.Dense {
			dense = true // a dense source makes the destination dense
		}
		if !hll.MergeInto(max, v) {
			c.Error(errTextInvalidHLL)
			return
		}
	}
	var result []byte
	var at int64
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		var s []byte
		at = 0
		if exists {
			v, err := hllOf(cur)
			if err != nil {
				return cur, engines.Keep, err
			}
			s, at = bytes.Clone(v), cur.ExpireAt
		} else {
			s = hll.New()
		}
		if dense {
			d, ok := hll.SparseToDense(s)
			if !ok {
				return cur, engines.Keep, ReplyError(errTextInvalidHLL)
			}
			s = d
		}
		// Register by register, as Redis: a sparse destination's code
		// is the one its hll.SparseSet calls build, and may turn dense.
		for j, v := range max {
			if v == 0 {
				continue
			}
			if s[hll.EncodingByte] == hll.Dense {
				hll.DenseSet(s[hll.HdrSize:], j, v)
			} else {
				s, _ = hll.SparseSet(s, j, v) // valid: merged above
			}
		}
		hll.Invalidate(s)
		result = s
		return hllRecord(s, at), engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	hllPropagateSet(c, 1, result, at)
	c.OK()
}

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
func cmdPFDebug(c *Ctx) {
	sub := c.Args[1]
	if i := bytes.IndexByte(sub, 0); i >= 0 {
		sub = sub[:i] // Redis compares the C string
	}
	if c.pkeyWrongType(2) {
		return
	}
	var (
		val       []byte
		converted bool
	)
	convert := eqFold(sub, "getreg") || eqFold(sub, "todense")
	_, err := c.UpdateVisible(2, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		val, converted = nil, false
		if !exists {
			return cur, engines.Keep, ReplyError(errTextPFNoKey)
		}
		v, err := hllOf(cur)
		if err != nil {
			return cur, engines.Keep, err
		}
		val = v
		if !convert || v[hll.EncodingByte] == hll.Dense {
			return cur, engines.Keep, nil
		}
		d, ok := hll.SparseToDense(v)
		if !ok {
			return cur, engines.Keep, ReplyError(errTextInvalidHLL)
		}
		val, converted = d, true
		next := cur
		next.Value = d
		return next, engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if converted {
		c.Propagate(argPFDEBUG, argTODENSE, c.Args[2])
	} else {
		c.NoPropagate()
	}
	switch {
	case eqFold(sub, "getreg"):
		regs := val[hll.HdrSize:]
		c.Array(hll.Registers)
		for j := 0; j < hll.Registers; j++ {
			c.Int(int64(hll.DenseGet(regs, j)))
		}
	case eqFold(sub, "decode"):
		if val[hll.EncodingByte] != hll.Sparse {
			c.Error(errTextNotSparse)
			return
		}
		c.Bulk(hllDecode(val))
	case eqFold(sub, "encoding"):
		if val[hll.EncodingByte] == hll.Dense {
			c.Status("dense")
		} else {
			c.Status("sparse")
		}
	case eqFold(sub, "todense"):
		c.Int(boolInt64(converted))
	default:
		c.Error(errorFormat("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'"))
	}
}

func boolInt64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// hllDecode is PFDEBUG DECODE's text of a sparse value: its opcodes as
// "z:len", "Z:len" and "v:value,len", space separated.
func hllDecode(s []byte) []byte {
	var out []byte
	for p := hll.HdrSize; p < len(s); {
		op := s[p]
		switch {
		case hll.IsZero(op):
			out = append(out, "z:"...)
			out = strconv.AppendInt(out, int64(hll.ZeroLen(op)), 10)
			p++
		case hll.IsXZero(op):
			out = append(out, "Z:"...)
			out = strconv.AppendInt(out, int64(hll.XZeroLen(op, hll.At(s, p+1))), 10)
			p += 2
		default:
			out = append(out, "v:"...)
			out = strconv.AppendInt(out, int64(hll.ValValue(op)), 10)
			out = append(out, ',')
			out = strconv.AppendInt(out, int64(hll.ValLen(op)), 10)
			p++
		}
		out = append(out, ' ')
	}
	return bytes.TrimRight(out, " ")
}
