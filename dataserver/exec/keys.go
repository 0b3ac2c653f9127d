package exec

// Redis generic key commands (DEL, EXISTS, TYPE, EXPIRE family, TTL
// family, PERSIST, COPY, RENAME, OBJECT, MEMORY USAGE, TOUCH). Hidden keys
// read as missing; multi-key commands act on the keys this dataserver got
// (the proxy splits by bucket); atomic two-key commands need one bucket.

import (
	"bytes"
	"errors"
	"math"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/errs"
	"github.com/tairkv/tair/internal/route"
)

func init() {
	Register("del", cmdDel)
	Register("unlink", cmdDel)
	Register("exists", cmdExists)
	Register("touch", cmdExists)
	Register("type", cmdType)
	Register("expire", func(c *Ctx) { expireGeneric(c, c.NowMs(), 1000) })
	Register("pexpire", func(c *Ctx) { expireGeneric(c, c.NowMs(), 1) })
	Register("expireat", func(c *Ctx) { expireGeneric(c, 0, 1000) })
	Register("pexpireat", func(c *Ctx) { expireGeneric(c, 0, 1) })
	Register("ttl", func(c *Ctx) { ttlGeneric(c, false, false) })
	Register("pttl", func(c *Ctx) { ttlGeneric(c, true, false) })
	Register("expiretime", func(c *Ctx) { ttlGeneric(c, false, true) })
	Register("pexpiretime", func(c *Ctx) { ttlGeneric(c, true, true) })
	Register("persist", cmdPersist)
	Register("copy", cmdCopy)
	Register("rename", func(c *Ctx) { renameGeneric(c, false) })
	Register("renamenx", func(c *Ctx) { renameGeneric(c, true) })
	Register("object", cmdObject)
	Register("memory", cmdMemory)
}

// TypeName is the TYPE reply for a value type.
func TypeName(t engines.ValueType) string { return t.String() }

// cmdDel is DEL and UNLINK: the count of keys removed. A hidden key reads
// as missing and is left alone (except on a replica, which deletes what
// the master did); a TAIR.LOCK record is removed (DEL is the
// administrator's way to break a lock).
func cmdDel(c *Ctx) {
	var n int64
	var done [][]byte
	for i := 1; i < len(c.Args); i++ {
		k := c.Key(i)
		deleted := false
		// One engine operation per key (TAIR.STAT counts it once).
		_, err := c.Eng.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			// A replica deletes what the master did (hidden keys too, for
			// TAIR.INVALID).
			if !exists || (cur.Hidden && !c.Replica) {
				return cur, engines.Keep, nil
			}
			deleted = true
			return cur, engines.Delete, nil
		})
		if err == nil && c.Eng.Persistent() {
			// A prefix-stored hash (or one a string was written over).
			var m int
			if m, err = c.Eng.PrefixRemoveAll(k); m > 0 {
				deleted = true
			}
			if errors.Is(err, errs.ErrNotFound) {
				err = nil
			}
		}
		if err != nil {
			c.propagateDel(done)
			c.Fail(err)
			return
		}
		if deleted {
			n++
			done = append(done, c.Args[i])
		}
	}
	c.propagateDel(done)
	c.Int(n)
}

func (c *Ctx) propagateDel(keys [][]byte) {
	if len(keys) == 0 {
		c.NoPropagate()
		return
	}
	c.propagateCmd(append([][]byte{argDel}, keys...))
}

// cmdExists is EXISTS and TOUCH (a key named twice counts twice).
func cmdExists(c *Ctx) {
	var n int64
	for i := 1; i < len(c.Args); i++ {
		_, ok, _, err := c.lookupAny(i)
		if err != nil {
			c.Fail(err)
			return
		}
		if ok {
			n++
		}
	}
	c.Int(n)
}

func cmdType(c *Ctx) {
	e, ok, _, err := c.lookupAny(1)
	switch {
	case err != nil:
		c.Fail(err)
	case !ok:
		c.Status("none")
	default:
		c.Status(TypeName(e.Type))
	}
}

// Expire condition flags (EXPIRE ... NX|XX|GT|LT).
const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

// parseExpireFlags is Redis's parseExtendedExpireArgumentsOrReply.
func parseExpireFlags(c *Ctx, from int) (int, bool) {
	flags := 0
	for j := from; j < len(c.Args); j++ {
		a := c.Args[j]
		switch {
		case eqFold(a, "nx"):
			flags |= expNX
		case eqFold(a, "xx"):
			flags |= expXX
		case eqFold(a, "gt"):
			flags |= expGT
		case eqFold(a, "lt"):
			flags |= expLT
		default:
			c.Error(errorFormat("ERR Unsupported option " + cString(a)))
			return 0, false
		}
	}
	if flags&expNX != 0 && flags&(expXX|expGT|expLT) != 0 {
		c.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return 0, false
	}
	if flags&expGT != 0 && flags&expLT != 0 {
		c.Error("ERR GT and LT options at the same time are not compatible")
		return 0, false
	}
	return flags, true
}

// expireGeneric is Redis's expireGenericCommand: base is now (relative
// forms) or 0, unit 1000 for seconds. Propagated as PEXPIREAT (or DEL when
// the time is already past).
func expireGeneric(c *Ctx, base, unit int64) {
	flags, ok := parseExpireFlags(c, 3)
	if !ok {
		return
	}
	when, ok := c.IntArg(2)
	if !ok {
		return
	}
	if unit == 1000 {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.invalidExpire()
			return
		}
		when *= 1000
	}
	if when > math.MaxInt64-base {
		c.invalidExpire()
		return
	}
	when += base
	var res int64
	var act engines.Action
	var err error
	var e engines.Entry
	var found, pkey bool
	if c.Eng.Persistent() {
		e, found, pkey, err = c.lookupAny(1)
	}
	if err != nil {
		// reported below
	} else if found && pkey {
		act = engines.Keep
		if expireAllowed(flags, e.ExpireAt, when) {
			res = 1
			if when <= c.NowMs() && (!c.Replica || when <= 0) {
				act = engines.Delete
				_, err = c.Eng.PrefixRemoveAll(c.Key(1))
			} else {
				act = engines.Store
				err = c.pkeySetExpire(c.Key(1), when)
			}
		}
	} else {
		_, err = c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			act = engines.Keep
			if !exists || !expireAllowed(flags, cur.ExpireAt, when) {
				return cur, act, nil
			}
			res = 1
			if when <= c.NowMs() && (!c.Replica || when <= 0) {
				act = engines.Delete
				return cur, act, nil
			}
			cur.ExpireAt = when
			act = engines.Store
			return cur, act, nil
		})
	}
	if err != nil {
		c.Fail(err)
		return
	}
	switch act {
	case engines.Keep:
		c.NoPropagate()
	case engines.Delete:
		c.Propagate(argDel, c.Args[1])
	default:
		c.Propagate(argPEXPIREAT, c.Args[1], Int64Bytes(when))
	}
	c.Int(res)
}

// expireAllowed applies EXPIRE's NX/XX/GT/LT to a key expiring at cur
// (0 = never, which GT/LT treat as infinite).
func expireAllowed(flags int, cur, when int64) bool {
	if cur == 0 {
		cur = -1
	}
	switch {
	case flags&expNX != 0 && cur != -1,
		flags&expXX != 0 && cur == -1,
		flags&expGT != 0 && (when <= cur || cur == -1),
		flags&expLT != 0 && cur != -1 && when >= cur:
		return false
	}
	return true
}

// ttlGeneric is TTL/PTTL (abs false) and EXPIRETIME/PEXPIRETIME (abs true).
func ttlGeneric(c *Ctx, ms, abs bool) {
	e, ok, _, err := c.lookupAny(1)
	switch {
	case err != nil:
		c.Fail(err)
		return
	case !ok:
		c.Int(-2)
		return
	case e.ExpireAt == 0:
		c.Int(-1)
		return
	}
	ttl := e.ExpireAt
	if !abs {
		ttl = max(ttl-c.NowMs(), 0)
	}
	if ms {
		c.Int(ttl)
	} else {
		c.Int(roundSeconds(ttl))
	}
}

// roundSeconds is Redis's (ms+500)/1000 for ms >= 0, without overflow.
func roundSeconds(ms int64) int64 {
	q := ms / 1000
	if ms%1000 >= 500 {
		q++
	}
	return q
}

func cmdPersist(c *Ctx) {
	done := false
	if !c.Eng.Persistent() {
		// no prefix-stored hashes
	} else if e, ok, pkey, err := c.lookupAny(1); err == nil && ok && pkey {
		persisted := e.ExpireAt != 0
		if persisted {
			err = c.pkeySetExpire(c.Key(1), 0)
		}
		replyWrote(c, persisted, err)
		return
	}
	_, err := c.UpdateVisible(1, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists || cur.ExpireAt == 0 {
			return cur, engines.Keep, nil
		}
		cur.ExpireAt = 0
		done = true
		return cur, engines.Store, nil
	})
	replyWrote(c, done, err)
}

// snapshot is a deep copy of a key's value as Redis sees it: a record,
// or the fields of a prefix-stored hash (kvs not nil).
type snapshot struct {
	e   engines.Entry
	kvs []engines.KV
}

// snapshot returns a deep copy of args[i]'s value (found false when
// missing or hidden).
func (c *Ctx) snapshot(i int) (snapshot, bool, error) {
	var out snapshot
	var found bool
	_, err := c.Eng.Update(c.Key(i), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists || cur.Hidden {
			return cur, engines.Keep, nil
		}
		found = true
		out.e = cur
		out.e.Value = bytes.Clone(cur.Value)
		if cur.Object != nil {
			data, err := cur.Object.MarshalBinary()
			if err != nil {
				return cur, engines.Keep, err
			}
			obj, err := engines.DecodeObject(cur.Object.Type(), data)
			if err != nil {
				return cur, engines.Keep, err
			}
			out.e.Object = obj
		}
		return cur, engines.Keep, nil
	})
	if err != nil || found {
		return out, found, err
	}
	kvs, err := c.pkeyFields(c.Key(i))
	if err != nil || len(kvs) == 0 {
		return out, false, err
	}
	for j := range kvs {
		kvs[j].Key = bytes.Clone(kvs[j].Key)
		kvs[j].Entry.Value = bytes.Clone(kvs[j].Entry.Value)
	}
	out.kvs = kvs
	return out, true, nil
}

// writeSnapshot stores src under dk unless dk exists and !replace
// (written false). The destination's old value goes whatever its type.
func (c *Ctx) writeSnapshot(src snapshot, dk engines.Key, replace bool) (bool, error) {
	dstPkey, err := c.hasPkey(dk)
	if err != nil {
		return false, err
	}
	if dstPkey {
		if !replace {
			return false, nil
		}
		if _, err := c.Eng.PrefixRemoveAll(dk); err != nil {
			return false, err
		}
	}
	written := false
	_, err = c.UpdateKey(dk, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && !replace {
			return cur, engines.Keep, nil
		}
		written = true
		if src.kvs != nil { // a prefix-stored hash: the record goes, the fields follow
			if exists {
				return cur, engines.Delete, nil
			}
			return cur, engines.Keep, nil
		}
		next := src.e
		next.Hidden = false
		return next, engines.Store, nil
	})
	if err != nil || !written || src.kvs == nil {
		return written, err
	}
	return true, c.Eng.Restore(dk.Bucket, &engines.Record{Area: dk.Area, Key: dk.Key, Prefix: src.kvs})
}

// COPY source destination [DB destination-db] [REPLACE]. DB picks another
// area: the bucket depends on the key only, so it stays on this dataserver.
func cmdCopy(c *Ctx) {
	replace := false
	dstArea := int64(c.Area)
	for j := 3; j < len(c.Args); j++ {
		a := c.Args[j]
		switch {
		case eqFold(a, "replace"):
			replace = true
		case eqFold(a, "db") && j+1 < len(c.Args):
			v, ok := ParseInt(c.Args[j+1])
			if !ok || v < math.MinInt32 || v > math.MaxInt32 {
				c.Error(ErrTextNotInt)
				return
			}
			if v < 0 || v > route.MaxArea {
				c.Error("ERR DB index is out of range")
				return
			}
			dstArea = v
			j++
		default:
			c.SyntaxErr()
			return
		}
	}
	if !c.SameBucket(1, 2) {
		return
	}
	if dstArea == int64(c.Area) && bytes.Equal(c.Args[1], c.Args[2]) {
		c.Error("ERR source and destination objects are the same")
		return
	}
	src, ok, err := c.snapshot(1)
	if err != nil || !ok {
		replyWrote(c, false, err) // a missing source: 0
		return
	}
	dk := c.Key(2)
	dk.Area = uint16(dstArea)
	copied, err := c.writeSnapshot(src, dk, replace)
	replyWrote(c, copied, err)
}

// RENAME key newkey / RENAMENX: the value and its TTL move; the new key's
// version continues the destination's (Tair: every write adds 1).
func renameGeneric(c *Ctx, nx bool) {
	if !c.SameBucket(1, 2) {
		return
	}
	src, ok, err := c.snapshot(1)
	if err != nil {
		c.Fail(err)
		return
	}
	if !ok {
		c.Error(ErrTextNoSuchKey)
		return
	}
	if src.kvs == nil && IsLockRecord(src.e) && !c.Replica {
		c.Err(errs.ErrLocked)
		return
	}
	if bytes.Equal(c.Args[1], c.Args[2]) {
		c.NoPropagate()
		if nx {
			c.Int(0)
		} else {
			c.OK()
		}
		return
	}
	// The key keeps its access frequency and time (Redis moves the object
	// that holds them): read after snapshot's access, set once written.
	acc := engines.AccessOf(c.Eng)
	var srcFreq uint8
	var srcIdle int64
	tracked := false
	if acc != nil {
		srcFreq, srcIdle, tracked = acc.Access(c.Key(1))
	}
	moved, err := c.writeSnapshot(src, c.Key(2), !nx)
	if err == nil && moved && tracked {
		acc.SetAccess(c.Key(2), int(srcFreq), srcIdle)
	}
	if err == nil && moved {
		if src.kvs != nil {
			_, err = c.Eng.PrefixRemoveAll(c.Key(1))
		} else {
			err = c.Eng.Remove(c.Key(1), 0)
		}
	}
	if err != nil {
		c.Fail(err)
		return
	}
	switch {
	case !moved:
		c.NoPropagate()
		c.Int(0)
	case nx:
		c.Int(1)
	default:
		c.OK()
	}
}

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// Encoder is implemented by Objects that know their Redis encoding name
// (OBJECT ENCODING); others get one guessed from their length.
type Encoder interface{ Encoding() string }

// smallElements reports whether every element of o fits a listpack
// (Redis's *-max-listpack-value, 64 bytes).
func smallElements(o engines.Object) bool {
	const limit = 64
	ok := true
	switch v := o.(type) {
	case *ds.Hash:
		v.Range(func(f, val string) bool {
			ok = len(f) <= limit && len(val) <= limit
			return ok
		})
	case *ds.Set:
		v.Range(func(m string) bool {
			ok = len(m) <= limit
			return ok
		})
	case *ds.ZSet:
		v.Range(func(m string, _ float64) bool {
			ok = len(m) <= limit
			return ok
		})
	}
	return ok
}

// encodingOf returns OBJECT ENCODING's answer for e.
func encodingOf(e engines.Entry) string {
	if e.Object != nil {
		if enc, ok := e.Object.(Encoder); ok {
			return enc.Encoding()
		}
	}
	small := e.Object == nil || (e.Object.Len() <= 128 && smallElements(e.Object))
	switch e.Type {
	case engines.TypeString:
		if _, ok := ParseInt(e.Value); ok {
			return "int"
		}
		if len(e.Value) <= 44 {
			return "embstr"
		}
		return "raw"
	case engines.TypeHash, engines.TypeExHash:
		// hash-max-listpack-entries is 512 (128 for the other types)
		if e.Object == nil || (e.Object.Len() <= 512 && smallElements(e.Object)) {
			return "listpack"
		}
		return "hashtable"
	case engines.TypeList:
		if small {
			return "listpack"
		}
		return "quicklist"
	case engines.TypeSet:
		if st, ok := e.Object.(*ds.Set); ok && st.Len() <= 512 {
			ints := true
			st.Range(func(m string) bool {
				_, ints = ParseInt([]byte(m))
				return ints
			})
			if ints {
				return "intset"
			}
		}
		if small {
			return "listpack"
		}
		return "hashtable"
	case engines.TypeZSet:
		if small {
			return "listpack"
		}
		return "skiplist"
	}
	return "raw"
}

// peekVisible runs fn on the record at k, read in place (an Update that
// keeps it), when there is one and it is not hidden; found reports
// whether fn ran.
func (c *Ctx) peekVisible(k engines.Key, fn func(cur engines.Entry)) (found bool, err error) {
	_, err = c.Eng.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && !cur.Hidden {
			found = true
			fn(cur)
		}
		return cur, engines.Keep, nil
	})
	return found, err
}

func cmdObject(c *Ctx) {
	if helpSub(c, "object", objectHelp) {
		return
	}
	sub := c.Args[1]
	known := eqFold(sub, "encoding") || eqFold(sub, "freq") || eqFold(sub, "idletime") || eqFold(sub, "refcount")
	if !known {
		c.Error("ERR unknown subcommand '" + errs.Quoted(sub, 128) + "'. Try OBJECT HELP.")
		return
	}
	if len(c.Args) != 3 {
		c.Error("ERR wrong number of arguments for 'object|" + string(bytes.ToLower(sub)) + "' command")
		return
	}
	var enc string
	found, err := c.peekVisible(c.Key(2), func(cur engines.Entry) { enc = encodingOf(cur) })
	if err == nil && !found {
		var kvs []engines.KV
		if kvs, err = c.pkeyFields(c.Key(2)); len(kvs) > 0 {
			found, enc = true, "listpack"
			if len(kvs) > 512 { // hash-max-listpack-entries
				enc = "hashtable"
			}
			for _, kv := range kvs { // hash-max-listpack-value
				if len(kv.Key) > 64 || len(kv.Entry.Value) > 64 {
					enc = "hashtable"
				}
			}
		}
	}
	switch {
	case err != nil:
		c.Fail(err)
	case !found:
		c.Null()
	case eqFold(sub, "encoding"):
		c.BulkString(enc)
	case eqFold(sub, "refcount"):
		c.Int(1)
	default:
		c.objectAccess(c.Key(2), eqFold(sub, "freq"))
	}
}

// objectAccess answers OBJECT FREQ (freq) or OBJECT IDLETIME for the
// stored key k. Both always answer where the engine tracks access (Redis
// answers FREQ only under an LFU maxmemory-policy and IDLETIME only under
// another; the engine tracks both), so that redis-cli --hotkeys works. A
// persistent engine tracks none (a read would have to write): it says so
// rather than answer a made-up number.
func (c *Ctx) objectAccess(k engines.Key, freq bool) {
	a := engines.AccessOf(c.Eng)
	if a == nil {
		if freq {
			c.Error("ERR access frequency not tracked: the " + c.Eng.Name() + " engine keeps no per-read state")
		} else {
			c.Error("ERR idle time not tracked: the " + c.Eng.Name() + " engine keeps no per-read state")
		}
		return
	}
	f, idle, ok := a.Access(k)
	switch {
	case !ok:
		c.Null()
	case freq:
		c.Int(int64(f))
	default:
		c.Int(idle)
	}
}

var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Prints this help.",
}

// helpSub answers CONTAINER HELP, Redis's arity error when it has
// arguments; false when args[1] is not HELP.
func helpSub(c *Ctx, container string, lines []string) bool {
	if !eqFold(c.Args[1], "help") {
		return false
	}
	if len(c.Args) != 2 {
		c.Error("ERR wrong number of arguments for '" + container + "|help' command")
		return true
	}
	replyHelp(c, lines)
	return true
}

// MEMORY USAGE key [SAMPLES n] (an estimate of Redis's answer); MEMORY HELP.
func cmdMemory(c *Ctx) {
	if helpSub(c, "memory", memoryHelp) {
		return
	}
	sub := c.Args[1]
	if !eqFold(sub, "usage") {
		c.Error("ERR unknown subcommand '" + errs.Quoted(sub, 128) + "'. Try MEMORY HELP.")
		return
	}
	if len(c.Args) < 3 {
		c.Error("ERR wrong number of arguments for 'memory|usage' command")
		return
	}
	for j := 3; j < len(c.Args); j++ {
		if eqFold(c.Args[j], "samples") && j+1 < len(c.Args) {
			if _, ok := c.IntArg(j + 1); !ok {
				return
			}
			j++
			continue
		}
		c.SyntaxErr()
		return
	}
	var size int64
	found, err := c.peekVisible(c.Key(2), func(cur engines.Entry) {
		size = 16 + 24 + alloc(len(c.Args[2])+4) // robj + dictEntry + key sds
		if cur.Object != nil {
			size += int64(cur.Object.Size())
		} else {
			size += alloc(len(cur.Value) + 4)
		}
		if cur.ExpireAt != 0 {
			size += 24 // expires dict entry
		}
	})
	if err == nil && !found {
		var kvs []engines.KV
		if kvs, err = c.pkeyFields(c.Key(2)); len(kvs) > 0 {
			found = true
			size = 16 + 24 + alloc(len(c.Args[2])+4)
			for _, kv := range kvs {
				size += 24 + alloc(len(kv.Key)+4) + alloc(len(kv.Entry.Value)+4)
			}
		}
	}
	switch {
	case err != nil:
		c.Fail(err)
	case !found:
		c.Null()
	default:
		c.Int(size)
	}
}

// alloc rounds n up to an allocator size class (8-byte steps).
func alloc(n int) int64 { return int64((n + 7) &^ 7) }
