package exec

// Active expiry of TairHash fields. The TairHash module deletes expired
// fields in a periodic task on the master and replicates each deletion
// as EXHDEL, so that a field nobody touches does not stay in EXHLEN and
// in memory. Here the dataserver runs that task (dataserver/
// fieldexpiry.go); the executor gives it two things:
//
//   - Options.FieldExpiry is told, for every TairHash a command stores or
//     deletes (any command: EXH* writes, COPY, RENAME, TAIR.RESTOREREC
//     ...), when its earliest field expires, so that the dataserver can
//     index the keys that have field expiries without scanning for them;
//   - ExpireFields removes the due fields of one key, under the caller's
//     bucket lock, and returns the EXHDEL slaves replay.

import (
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ds"
	"github.com/tairkv/tair/internal/route"
)

// FieldExpiryFunc is told that the TairHash at k has its earliest field
// expiry at next (unix ms; a lower bound, never later than the real
// one), or next 0: none of its fields expires, or it is gone.
type FieldExpiryFunc func(k engines.Key, next int64)

// fieldExpiryNote is what applyVisible saw of a TairHash while the engine
// ran a command's update; UpdateKey reports it once the engine returned.
type fieldExpiryNote struct {
	set  bool
	next int64
}

// noteFieldExpiry records, when an update stored or deleted a TairHash,
// when its earliest field now expires.
func (c *Ctx) noteFieldExpiry(cur engines.Entry, exists bool, next engines.Entry, act engines.Action) {
	switch {
	case act == engines.Store && next.Type == engines.TypeExHash:
		if h, ok := next.Object.(*ds.ExHash); ok {
			c.fx = fieldExpiryNote{set: true, next: h.NextExpire()}
		}
	case act == engines.Delete && exists && cur.Type == engines.TypeExHash:
		c.fx = fieldExpiryNote{set: true}
	}
}

// reportFieldExpiry passes on what noteFieldExpiry recorded for k, unless
// the engine refused the update (then nothing changed).
func (c *Ctx) reportFieldExpiry(k engines.Key, err error) {
	n := c.fx
	c.fx = fieldExpiryNote{}
	if err == nil {
		c.X.opts.FieldExpiry(k, n.next)
	}
}

// hiddenFieldRecheck is how long ExpireFields leaves a hidden TairHash
// (TAIR.HIDE) before it is looked at again: a hidden key reads as
// missing to every command, and its fields are kept as they are until it
// is unhidden.
const hiddenFieldRecheck = 1000 // ms

// ExpireFields removes the fields of the TairHash at key (in area) that
// are expired now, earliest first, at most limit of them, as the
// TairHash module's active expiry does on a master; a TairHash whose
// last field goes is deleted. It returns the command the bucket's slaves
// replay (EXHDEL key field..., nil when nothing was removed; it holds
// key) and when
// the key's next field expires (unix ms, a lower bound; 0: none, or the
// key is missing or no TairHash). The caller holds the bucket's write
// lock. Removing expired fields never changes the key's own expiry (the
// latest field's, when every field expires): the latest field expires
// last.
func (x *Executor) ExpireFields(area uint16, key []byte, limit int) (prop [][]byte, next int64, err error) {
	// Replica: an expiry only frees space, so a persistent engine does
	// not refuse it for the area's quota.
	k := engines.Key{Bucket: uint32(route.BucketOf(key, x.opts.Buckets)), Area: area, Key: key, NoStats: true, Replica: true}
	now := x.opts.Now().UnixMilli()
	var gone [][]byte
	_, err = x.eng.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		h, ok := cur.Object.(*ds.ExHash)
		if !exists || cur.Type != engines.TypeExHash || !ok {
			return cur, engines.Keep, nil
		}
		if cur.Hidden {
			if next = h.NextExpire(); next != 0 {
				next = max(next, now+hiddenFieldRecheck)
			}
			return cur, engines.Keep, nil
		}
		h.ExpireDue(now, limit, func(f string) { gone = append(gone, []byte(f)) })
		next = h.NextExpire()
		switch {
		case len(gone) == 0:
			return cur, engines.Keep, nil
		case h.Len() == 0:
			next = 0
			return cur, engines.Delete, nil
		}
		return cur, engines.Store, nil
	})
	if err != nil || len(gone) == 0 {
		return nil, next, err
	}
	prop = make([][]byte, 0, 2+len(gone))
	prop = append(prop, []byte("EXHDEL"), key)
	return append(prop, gone...), next, nil
}

// NextFieldExpiry is when the earliest field of the TairHash in e
// expires (unix ms, a lower bound; 0: none, or e holds no TairHash): for
// a record written whole (a migration's, a backup's) or read by a scan.
func NextFieldExpiry(e *engines.Entry) int64 {
	if h, ok := e.Object.(*ds.ExHash); ok && e.Type == engines.TypeExHash {
		return h.NextExpire()
	}
	return 0
}

// FieldExpiryOf is NextFieldExpiry of the record at key (0 when it is
// missing), read in place.
func (x *Executor) FieldExpiryOf(area uint16, key []byte) int64 {
	k := engines.Key{Bucket: uint32(route.BucketOf(key, x.opts.Buckets)), Area: area, Key: key, NoStats: true}
	var next int64
	_, _ = x.eng.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists {
			next = NextFieldExpiry(&cur)
		}
		return cur, engines.Keep, nil
	})
	return next
}
