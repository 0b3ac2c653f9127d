package exec

// Redis hashes on persistent engines (Engine.Persistent), stored as prefix
// records: pkey = key, skey = field, one record per field (Tair's prefix
// model), so that a large hash need not be rewritten on every HSET. There
// is no record under the key itself: a pkey *is* a hash.
//
// This file holds both halves of that model. The generic key commands
// (keys.go, strings.go) find such a key by its live skeys when no plain
// record exists: TYPE says hash, EXISTS/DEL/UNLINK/TOUCH count it, the
// EXPIRE family sets the expiry of every field (TTL reads the first
// field's), RENAME and COPY move or copy every field, and the commands of
// the other types answer WRONGTYPE. The hash commands (hash.go) run their
// prefix* forms here, refusing a key whose plain record exists.

import (
	"errors"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// ---- finding a prefix-stored hash ----

// pkeyFields returns the live, visible skeys of k on a persistent engine
// (nil elsewhere).
func (c *Ctx) pkeyFields(k engines.Key) ([]engines.KV, error) {
	if !c.Eng.Persistent() {
		return nil, nil
	}
	kvs, err := c.Eng.PrefixRange(k, engines.RangeOptions{})
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

// firstPkeyField returns the first skey of k (ok false: none, or no
// such pkey), hidden or not: enough to tell that k is a prefix-stored
// hash and to read the expiry its fields share. A probe: it is not
// counted as a read of the key (keyspace hits/misses).
func (c *Ctx) firstPkeyField(k engines.Key) (kv engines.KV, ok bool, err error) {
	k.NoStats = true
	kvs, err := c.Eng.PrefixRange(k, engines.RangeOptions{Limit: 1})
	switch {
	case errors.Is(err, errs.ErrNotFound):
		return engines.KV{}, false, nil
	case err != nil:
		return engines.KV{}, false, err
	case len(kvs) == 0:
		return engines.KV{}, false, nil
	}
	return kvs[0], true, nil
}

// hasPkey reports whether k is a prefix-stored hash.
func (c *Ctx) hasPkey(k engines.Key) (bool, error) {
	if !c.Eng.Persistent() {
		return false, nil
	}
	_, ok, err := c.firstPkeyField(k)
	return ok, err
}

// isPkey is hasPkey for the checks that take an engine error for no.
func (c *Ctx) isPkey(k engines.Key) bool {
	ok, _ := c.hasPkey(k)
	return ok
}

// lookupAny is Lookup, falling back to a prefix-stored hash: then pkey is
// true and e has Type hash and the first field's expiry.
func (c *Ctx) lookupAny(i int) (e engines.Entry, exists, pkey bool, err error) {
	e, exists, err = c.Lookup(i)
	if err != nil || exists || !c.Eng.Persistent() {
		return e, exists, false, err
	}
	kv, ok, err := c.firstPkeyField(c.Key(i))
	if !ok {
		return engines.Entry{}, false, false, err
	}
	return engines.Entry{Type: engines.TypeHash, ExpireAt: kv.Entry.ExpireAt, Version: kv.Entry.Version}, true, true, nil
}

// pkeySetExpire sets every field's expiry to at (0 = none).
func (c *Ctx) pkeySetExpire(k engines.Key, at int64) error {
	kvs, err := c.pkeyFields(k)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		_, err := c.Eng.PrefixUpdate(k, kv.Key, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			if !exists || cur.ExpireAt == at {
				return cur, engines.Keep, nil
			}
			cur.ExpireAt = at
			return cur, engines.Store, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pkeyWrongType replies WRONGTYPE and returns true when args[i], missing
// as a record, is a prefix-stored hash (persistent engines only).
func (c *Ctx) pkeyWrongType(i int) bool {
	if !c.Eng.Persistent() {
		return false // as hasPkey, without hashing the key for nothing
	}
	if c.isPkey(c.Key(i)) {
		c.WrongType()
		return true
	}
	return false
}

// dropPkey deletes the prefix-stored hash (persistent engines) that a
// plain write to args[i] has just replaced, as Redis's SET replaces a
// key of any type: it would else be counted and scanned beside the new
// value, and come back when that is deleted. Callers check that no plain
// record held the key before (a key is one or the other).
func (c *Ctx) dropPkey(i int) {
	if c.isPkey(c.Key(i)) {
		_, _ = c.Eng.PrefixRemoveAll(c.Key(i))
	}
}

// ---- the hash commands on prefix records ----

// prefixCheck fails with WRONGTYPE when a plain record holds the key.
func prefixCheck(c *Ctx, i int) error {
	// Lookup's rule (hidden and expired keys are missing), as a probe:
	// the hash read that follows is the one counted (keyspace hits and
	// misses).
	k := c.Key(i)
	k.NoStats = true
	e, err := c.Eng.Get(k)
	switch {
	case errors.Is(err, errs.ErrNotFound):
		return nil
	case err != nil:
		return err
	case e.Hidden:
		return nil
	}
	return errs.ErrWrongType
}

// prefixExpire is the expiry new fields of the hash at args[i] inherit:
// the key commands (EXPIRE ...) give every field of a prefix hash the
// key's expiry, so a new field takes its siblings'.
func prefixExpire(c *Ctx, i int) int64 {
	kv, _, _ := c.firstPkeyField(c.Key(i))
	return kv.Entry.ExpireAt
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
	return c.pkeyFields(c.Key(i))
}

// prefixHSet is HSET's write: how many fields it added.
func prefixHSet(c *Ctx) (added int, err error) {
	if err := prefixCheck(c, 1); err != nil {
		return 0, err
	}
	k := c.Key(1)
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
			return added, err
		}
	}
	return added, nil
}

// prefixHSetNX is HSETNX's write: whether it set the field.
func prefixHSetNX(c *Ctx) (set bool, err error) {
	if err := prefixCheck(c, 1); err != nil {
		return false, err
	}
	exp := prefixExpire(c, 1)
	_, err = c.Eng.PrefixUpdate(c.Key(1), c.Args[2], func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists && !cur.Hidden {
			return cur, engines.Keep, nil
		}
		set = true
		return engines.Entry{Type: engines.TypeString, Value: append([]byte(nil), c.Args[3]...), ExpireAt: exp}, engines.Store, nil
	})
	return set, err
}

func prefixHMGet(c *Ctx) {
	if err := prefixCheck(c, 1); err != nil {
		c.Fail(err)
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
		c.Fail(err)
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

// prefixHDel is HDEL's write: how many fields it removed.
func prefixHDel(c *Ctx) (n int, err error) {
	if err := prefixCheck(c, 1); err != nil {
		return 0, err
	}
	for _, f := range c.Args[2:] {
		err := c.Eng.PrefixRemove(c.Key(1), f, 0)
		if err == nil {
			n++
		} else if !errors.Is(err, errs.ErrNotFound) {
			return n, err
		}
	}
	return n, nil
}

func prefixHLen(c *Ctx) {
	kvs, err := prefixAll(c, 1)
	if err != nil {
		c.Fail(err)
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
