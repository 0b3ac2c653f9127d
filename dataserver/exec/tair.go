package exec

// Tair's own commands (SPEC §4): versioned put/get/delete, bounded
// counters, prefix (pkey/skey) records, items, hide/unhide, locks,
// invalidation and per-area statistics.
//
// # Expiry
//
// Tair commands take "EX e" with Tair's rules (engines.TairExpire: 0 never,
// < 0 keep, small = relative seconds, >= now = absolute unix seconds). A
// relative expiry must not be replayed as relative on a slave, and an
// absolute one replayed after it passed would read as relative there, so
// the commands also accept "PXAT ms" (absolute unix milliseconds) and are
// propagated with it: never = no option, keep = "EX -1", at = "PXAT ms".
//
// # Locks
//
// TAIR.LOCK key ttl makes key hold a lock record (a string record with a
// reserved value) when the key is missing, and replies the lock's version,
// unique per lock (the clock in ms when it was taken, so that a holder whose
// lock expired cannot release the next holder's lock). While the lock
// record lives, TAIR.LOCK on the key replies -LOCKED, and every write to the
// key through the string, key and Tair commands of this package (SET,
// INCR, EXPIRE, RENAME, TAIR.PUTV, TAIR.INCR, EX* ...) replies -LOCKED too,
// except TAIR.UNLOCK key version (1, 0 when not locked, -VERERROR for
// another version) and DEL/UNLINK/TAIR.INVALID (the administrator's way to
// break a lock). TAIR.LOCK on a key that holds ordinary data replies
// WRONGTYPE. Reads see the lock record as a string (TAIR.GETV shows its
// version).

import (
	"bytes"
	"errors"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
)

func init() {
	Register("tair.putv", cmdTairPutV)
	Register("tair.getv", cmdTairGetV)
	Register("tair.delv", cmdTairDelV)
	Register("tair.incr", func(c *Ctx) { cmdTairIncr(c, false) })
	Register("tair.decr", func(c *Ctx) { cmdTairIncr(c, true) })
	Register("tair.pput", cmdTairPPut)
	Register("tair.pget", cmdTairPGet)
	Register("tair.pdel", cmdTairPDel)
	Register("tair.prange", cmdTairPRange)
	Register("tair.itemadd", cmdTairItemAdd)
	Register("tair.itemget", func(c *Ctx) { tairItemRange(c, false, false) })
	Register("tair.itemdel", func(c *Ctx) { tairItemRange(c, true, false) })
	Register("tair.itemgetdel", func(c *Ctx) { tairItemRange(c, true, true) })
	Register("tair.itemcount", cmdTairItemCount)
	Register("tair.hide", func(c *Ctx) { tairHide(c, true) })
	Register("tair.unhide", func(c *Ctx) { tairHide(c, false) })
	Register("tair.gethidden", cmdTairGetHidden)
	Register("tair.lock", cmdTairLock)
	Register("tair.unlock", cmdTairUnlock)
	Register("tair.invalid", cmdTairInvalid)
	Register("tair.invalidlocal", cmdTairInvalid) // the same here; only proxies tell them apart
	Register("tair.stat", cmdTairStat)
	Register("tair.delall", cmdTairDelAll)
}

// lockValue is the reserved value of a TAIR.LOCK record.
var lockValue = []byte("\x00TAIR.LOCK\x00")

// IsLockRecord reports whether e is a TAIR.LOCK record.
func IsLockRecord(e engines.Entry) bool {
	return e.Type == engines.TypeString && bytes.Equal(e.Value, lockValue)
}

// checkLock fails with errs.ErrLocked when args[i] holds a live lock
// record (for writes that go through engine calls other than Update; the
// dataserver serialises commands of a bucket, so check-then-write holds).
func (c *Ctx) checkLock(i int) error {
	if c.Replica {
		return nil
	}
	e, err := c.Eng.Get(c.Key(i))
	if err == nil && IsLockRecord(e) {
		return errs.ErrLocked
	}
	return nil
}

var (
	argEX      = []byte("EX")
	argMinus1  = []byte("-1")
	argZero    = []byte("0")
	argABS     = []byte("ABS")
	argFLAGS   = []byte("FLAGS")
	argEXSET   = []byte("EXSET")
	argPUTV    = []byte("TAIR.PUTV")
	argINIT    = []byte("INIT")
	argTairInc = []byte("TAIR.INCR")
)

// tairExpireArgs is the canonical (absolute) form of x for propagation.
func tairExpireArgs(x engines.Expire) [][]byte {
	switch x.Mode {
	case engines.ExpireKeep:
		return [][]byte{argEX, argMinus1}
	case engines.ExpireAt:
		return [][]byte{argPXAT, Int64Bytes(x.At)}
	}
	return nil
}

// tairOpts are the options of Tair commands.
type tairOpts struct {
	expire   engines.Expire
	version  int64
	init     int64
	min, max int64
	hasMin   bool
	hasMax   bool
	limit    int64
	rev      bool
}

// Option names a Tair command accepts.
const (
	tEX = 1 << iota
	tVER
	tINIT
	tMINMAX
	tLIMIT
	tREV
)

// parseTairOpts parses options from args[from:] (allowed: the t* set),
// replying on error.
func parseTairOpts(c *Ctx, from int, allowed int) (tairOpts, bool) {
	var o tairOpts
	for j := from; j < len(c.Args); j++ {
		a := c.Args[j]
		hasNext := j+1 < len(c.Args)
		if eqFold(a, "rev") && allowed&tREV != 0 {
			o.rev = true
			continue
		}
		if !hasNext {
			c.SyntaxErr()
			return o, false
		}
		v, ok := ParseInt(c.Args[j+1])
		switch {
		case eqFold(a, "ex") && allowed&tEX != 0:
			o.expire = engines.TairExpire(v, c.Now())
		case eqFold(a, "pxat") && allowed&tEX != 0:
			o.expire = engines.Expire{Mode: engines.ExpireAt, At: v}
			if v == 0 {
				o.expire = engines.Expire{Mode: engines.ExpireNever}
			}
		case eqFold(a, "ver") && allowed&tVER != 0:
			o.version = v
		case eqFold(a, "init") && allowed&tINIT != 0:
			o.init = v
		case eqFold(a, "min") && allowed&tMINMAX != 0:
			o.min, o.hasMin = v, true
		case eqFold(a, "max") && allowed&tMINMAX != 0:
			o.max, o.hasMax = v, true
		case eqFold(a, "limit") && allowed&tLIMIT != 0:
			o.limit = v
			if ok && v < 0 {
				c.Error("ERR LIMIT can't be negative")
				return o, false
			}
		default:
			c.SyntaxErr()
			return o, false
		}
		if !ok {
			c.Error(ErrTextNotInt)
			return o, false
		}
		j++
	}
	if o.hasMin && o.hasMax && o.min > o.max {
		c.Error("ERR min is greater than max")
		return o, false
	}
	return o, true
}

// versionArg parses a version argument (>= 0).
func (c *Ctx) versionArg(i int) (int64, bool) {
	v, ok := c.IntArg(i)
	if ok && v < 0 {
		c.Error("ERR version can't be negative")
		return 0, false
	}
	return v, ok
}

// TAIR.PUTV key value version [EX e]
func cmdTairPutV(c *Ctx) {
	ver, ok := c.versionArg(3)
	if !ok {
		return
	}
	o, ok := parseTairOpts(c, 4, tEX)
	if !ok {
		return
	}
	val := bytes.Clone(c.Args[2])
	_, err := c.Eng.Update(c.Key(1), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && IsLockRecord(cur) && !c.Replica {
			return cur, engines.Keep, errs.ErrLocked
		}
		if exists && ver != 0 && cur.Version != ver {
			return cur, engines.Keep, errs.ErrVersion
		}
		next := engines.Entry{Type: engines.TypeString, Value: val}
		if exists {
			next.ExpireAt = o.expire.Apply(cur.ExpireAt)
		} else {
			next.ExpireAt = o.expire.Apply(0)
		}
		return next, engines.Store, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.propagateCmd(append([][]byte{argPUTV, c.Args[1], val, argZero}, tairExpireArgs(o.expire)...))
	c.OK()
}

// replyValueVersion replies [value, version].
func (c *Ctx) replyValueVersion(e engines.Entry) {
	c.Array(2)
	c.Bulk(e.Value)
	c.Int(e.Version)
}

// TAIR.GETV key
func cmdTairGetV(c *Ctx) {
	e, ok, err := c.Lookup(1)
	switch {
	case err != nil:
		c.Fail(err)
	case !ok:
		c.Null()
	case e.Type != engines.TypeString:
		c.WrongType()
	default:
		c.replyValueVersion(e)
	}
}

// TAIR.DELV key version: 1, 0 missing, VERERROR.
func cmdTairDelV(c *Ctx) {
	ver, ok := c.versionArg(2)
	if !ok {
		return
	}
	deleted := false
	_, err := c.Eng.Update(c.Key(1), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists {
			return cur, engines.Keep, nil
		}
		if IsLockRecord(cur) && !c.Replica {
			return cur, engines.Keep, errs.ErrLocked
		}
		if ver != 0 && cur.Version != ver {
			return cur, engines.Keep, errs.ErrVersion
		}
		deleted = true
		return cur, engines.Delete, nil
	})
	if replyWrote(c, deleted, err) {
		c.Propagate(argDel, c.Args[1])
	}
}

// TAIR.INCR/DECR key delta [INIT n] [EX e] [MIN lo] [MAX hi] [VER v]
func cmdTairIncr(c *Ctx, decr bool) {
	delta, ok := c.IntArg(2)
	if !ok {
		return
	}
	if decr {
		if delta == -delta && delta != 0 { // MinInt64
			c.Error(ErrTextOverflow)
			return
		}
		delta = -delta
	}
	o, ok := parseTairOpts(c, 3, tEX|tINIT|tMINMAX|tVER)
	if !ok {
		return
	}
	if err := c.checkLock(1); err != nil {
		c.Fail(err)
		return
	}
	io := engines.IncrOptions{Init: o.init, Version: o.version, Expire: o.expire,
		Min: o.min, Max: o.max, HasMin: o.hasMin, HasMax: o.hasMax}
	n, _, err := c.Eng.Incr(c.Key(1), delta, io)
	if err != nil {
		c.Fail(err)
		return
	}
	c.Propagate(append([][]byte{argTairInc, c.Args[1], Int64Bytes(delta), argINIT, Int64Bytes(o.init)},
		tairExpireArgs(o.expire)...)...)
	c.Int(n)
}

// prefixKey is the engine key of pkey args[1].
func (c *Ctx) prefixKey() engines.Key { return c.Key(1) }

// TAIR.PPUT pkey skey value [VER v] [EX e]
func cmdTairPPut(c *Ctx) {
	o, ok := parseTairOpts(c, 4, tEX|tVER)
	if !ok {
		return
	}
	if o.version < 0 {
		c.Error("ERR version can't be negative")
		return
	}
	_, err := c.Eng.PrefixPut(c.prefixKey(), c.Args[2], c.Args[3], engines.PutOptions{Version: o.version, Expire: o.expire})
	if err != nil {
		c.Fail(err)
		return
	}
	c.propagateCmd(append([][]byte{c.Args[0], c.Args[1], c.Args[2], c.Args[3]}, tairExpireArgs(o.expire)...))
	c.OK()
}

// TAIR.PGET pkey skey: [value, version] or nil.
func cmdTairPGet(c *Ctx) {
	e, err := c.Eng.PrefixGet(c.prefixKey(), c.Args[2])
	switch {
	case errors.Is(err, errs.ErrNotFound) || (err == nil && e.Hidden):
		c.Null()
	case err != nil:
		c.Fail(err)
	default:
		c.replyValueVersion(e)
	}
}

// TAIR.PDEL pkey skey: 1 / 0.
func cmdTairPDel(c *Ctx) {
	replyFound(c, c.Eng.PrefixRemove(c.prefixKey(), c.Args[2], 0))
}

// replyFound ends a write the engine answers ErrNotFound when there is
// nothing to write (TAIR.PDEL, TAIR.HIDE): 0, not propagated; else err's
// reply, or 1.
func replyFound(c *Ctx, err error) {
	if errors.Is(err, errs.ErrNotFound) {
		replyWrote(c, false, nil)
		return
	}
	replyWrote(c, err == nil, err)
}

// TAIR.PRANGE pkey start end [LIMIT n] [REV]: skey, value, ... in skey
// order ("" = open end), from the high end down with REV.
func cmdTairPRange(c *Ctx) {
	o, ok := parseTairOpts(c, 4, tLIMIT|tREV)
	if !ok {
		return
	}
	kvs, err := c.Eng.PrefixRange(c.prefixKey(), engines.RangeOptions{
		Start: c.Args[2], End: c.Args[3], Limit: int(o.limit), Reverse: o.rev})
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		c.Fail(err)
		return
	}
	n := 0
	for _, kv := range kvs {
		if !kv.Entry.Hidden {
			n++
		}
	}
	c.Array(2 * n)
	for _, kv := range kvs {
		if !kv.Entry.Hidden {
			c.Bulk(kv.Key)
			c.Bulk(kv.Entry.Value)
		}
	}
}

// TAIR.ITEMADD key maxcount item [item ...]: the item count after the add.
func cmdTairItemAdd(c *Ctx) {
	maxCount, ok := c.IntArg(2)
	if !ok {
		return
	}
	if maxCount <= 0 || maxCount > 1<<31-1 {
		c.Error("ERR maxcount must be positive")
		return
	}
	if err := c.checkLock(1); err != nil {
		c.Fail(err)
		return
	}
	n, err := c.Eng.ItemAdd(c.Key(1), int(maxCount), c.Args[3:], engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireKeep}})
	if err != nil {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

// TAIR.ITEMGET / ITEMDEL / ITEMGETDEL key offset count.
func tairItemRange(c *Ctx, del, get bool) {
	off, cnt, ok := c.twoIntArgs(2)
	if !ok {
		return
	}
	if cnt < 0 || off > 1<<31-1 || off < -(1<<31) || cnt > 1<<31-1 {
		c.Error("ERR offset or count is out of range")
		return
	}
	if del {
		if err := c.checkLock(1); err != nil {
			c.Fail(err)
			return
		}
	}
	k := c.Key(1)
	switch {
	case !del || get:
		var items [][]byte
		var err error
		if del {
			items, err = c.Eng.ItemGetDelete(k, int(off), int(cnt))
		} else {
			items, err = c.Eng.ItemGet(k, int(off), int(cnt))
		}
		if err != nil && !errors.Is(err, errs.ErrNotFound) {
			c.Fail(err)
			return
		}
		if del && len(items) == 0 {
			c.NoPropagate()
		}
		c.Array(len(items))
		for _, it := range items {
			c.Bulk(it)
		}
	default:
		n, err := c.Eng.ItemDelete(k, int(off), int(cnt))
		if err != nil && !errors.Is(err, errs.ErrNotFound) {
			c.Fail(err)
			return
		}
		if n == 0 {
			c.NoPropagate()
		}
		c.Int(int64(n))
	}
}

// TAIR.ITEMCOUNT key
func cmdTairItemCount(c *Ctx) {
	n, err := c.Eng.ItemCount(c.Key(1))
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		c.Fail(err)
		return
	}
	c.Int(int64(n))
}

// TAIR.HIDE / TAIR.UNHIDE key: 1, or 0 when missing.
func tairHide(c *Ctx, hide bool) {
	replyFound(c, c.Eng.SetHidden(c.Key(1), hide))
}

// TAIR.GETHIDDEN key: the value, hidden or not; nil when missing.
func cmdTairGetHidden(c *Ctx) {
	e, err := c.Eng.Get(c.Key(1))
	switch {
	case errors.Is(err, errs.ErrNotFound):
		c.Null()
	case err != nil:
		c.Fail(err)
	case e.Type != engines.TypeString:
		c.WrongType()
	default:
		c.Bulk(e.Value)
	}
}

// restore writes e under k exactly (version and expiry included).
func (c *Ctx) restore(k engines.Key, e engines.Entry) error {
	return c.Eng.Restore(k.Bucket, &engines.Record{Area: k.Area, Key: k.Key, Entry: e})
}

// TAIR.LOCK key ttl: the lock's version, or -LOCKED.
func cmdTairLock(c *Ctx) {
	ttl, ok := c.IntArg(2)
	if !ok {
		return
	}
	x := engines.TairExpire(ttl, c.Now())
	var locked, other bool
	_, err := c.Eng.Update(c.Key(1), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists {
			locked = IsLockRecord(cur)
			other = !locked
		}
		return cur, engines.Keep, nil
	})
	switch {
	case err != nil:
		c.Fail(err)
		return
	case locked:
		c.Err(errs.ErrLocked)
		return
	case other:
		c.WrongType()
		return
	}
	ver := max(c.NowMs(), 2)
	e := engines.Entry{Type: engines.TypeString, Value: lockValue, Version: ver, ExpireAt: x.Apply(0)}
	if err := c.restore(c.Key(1), e); err != nil {
		c.Fail(err)
		return
	}
	prop := [][]byte{argEXSET, c.Args[1], lockValue, argABS, Int64Bytes(ver)}
	if e.ExpireAt != 0 {
		prop = append(prop, argPXAT, Int64Bytes(e.ExpireAt))
	}
	c.propagateCmd(prop)
	c.Int(ver)
}

// TAIR.UNLOCK key version: 1, 0 when not locked, VERERROR.
func cmdTairUnlock(c *Ctx) {
	ver, ok := c.IntArg(2)
	if !ok {
		return
	}
	done := false
	_, err := c.Eng.Update(c.Key(1), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists || !IsLockRecord(cur) {
			return cur, engines.Keep, nil
		}
		if cur.Version != ver {
			return cur, engines.Keep, errs.ErrVersion
		}
		done = true
		return cur, engines.Delete, nil
	})
	if replyWrote(c, done, err) {
		c.Propagate(argDel, c.Args[1])
	}
}

// TAIR.INVALID key [key ...]: deletes the keys here (hidden ones too) and
// replies how many existed. The invalid server forwards the command to the
// peer clusters.
func cmdTairInvalid(c *Ctx) {
	var n int64
	var done [][]byte
	for i := 1; i < len(c.Args); i++ {
		err := c.Eng.Remove(c.Key(i), 0)
		switch {
		case err == nil:
			n++
			done = append(done, c.Args[i])
		case errors.Is(err, errs.ErrNotFound):
		default:
			c.propagateDel(done)
			c.Fail(err)
			return
		}
	}
	c.propagateDel(done)
	c.Int(n)
}

// areaArg parses an area number at args[i].
func (c *Ctx) areaArg(i int) (uint16, bool) {
	v, ok := ParseInt(c.Args[i])
	if !ok || v < 0 || v > route.MaxArea {
		c.Error("ERR invalid area")
		return 0, false
	}
	return uint16(v), true
}

// TAIR.STAT [area]: this dataserver's counters of the area (default: the
// connection's), as field/value pairs (a map in RESP3).
func cmdTairStat(c *Ctx) {
	area := c.Area
	if len(c.Args) > 2 {
		c.SyntaxErr()
		return
	}
	if len(c.Args) == 2 {
		var ok bool
		if area, ok = c.areaArg(1); !ok {
			return
		}
	}
	s := c.Eng.Stats(area)
	c.Map(7)
	for _, f := range []struct {
		k string
		v int64
	}{{"keys", s.Keys}, {"bytes", s.Bytes}, {"gets", s.Gets}, {"puts", s.Puts},
		{"hits", s.Hits}, {"misses", s.Misses}, {"evictions", s.Evictions}} {
		c.BulkString(f.k)
		c.Int(f.v)
	}
}

// TAIR.DELALL area: every key of the area on this dataserver.
func cmdTairDelAll(c *Ctx) {
	area, ok := c.areaArg(1)
	if !ok {
		return
	}
	if _, err := c.Eng.DeleteArea(area); err != nil {
		c.Fail(err)
		return
	}
	c.OK()
}
