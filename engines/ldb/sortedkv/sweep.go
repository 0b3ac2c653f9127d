package sortedkv

import (
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
)

// Expired records are reclaimed through the expiry index (keys.go): each
// (bucket, area) lists its expiring records by expiry time, so a sweep
// reads exactly the index entries that have expired, and memory keeps each
// pair's earliest expiry so that pairs with nothing due are skipped
// without a read.

func (s *Store) sweepLoop(every time.Duration) {
	defer s.wg.Done()
	generic.SweepEvery(every, s.stop, func() { _ = s.sweep(false) })
}

// due reports whether p may hold a record expired at now.
func due(p *pair, now int64) bool {
	m := p.minExp.Load()
	return m != 0 && engines.Expired(m, now)
}

// sweep reclaims the expired records of every pair that is due. The
// background sweep takes each bucket lock shared for one chunk at a time,
// so writers wait at most one chunk; all (Compact) does not stop at Close.
func (s *Store) sweep(all bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	now := s.nowMs()
	pairs := s.pairsOf(func(p *pair) bool { return due(p, now) })
	s.leave()
	for _, p := range pairs {
		if !all {
			select {
			case <-s.stop:
				return nil
			default:
			}
		}
		if err := s.enter(); err != nil {
			return err
		}
		bl := s.bucketLock(p.bucket)
		bl.RLock()
		err := s.sweepPairLocked(p, now, true)
		bl.RUnlock()
		s.leave()
		if err != nil {
			return err
		}
	}
	return nil
}

// sweepPairLocked reclaims every record of p expired at now. The caller
// holds p's bucket lock: shared (lockKeys: take each key's lock, as
// writers may run) or exclusive (no writer can).
func (s *Store) sweepPairLocked(p *pair, now int64, lockKeys bool) error {
	sl := &s.sweepLocks[p.bucket%bucketStripes]
	sl.Lock()
	defer sl.Unlock()
	if !due(p, now) {
		return nil
	}
	// Index entries at or before now-1 ms are expired (a record lives
	// through its expiry millisecond).
	lo, hi := expiryRange(p.bucket, p.area, now-1)
	for {
		type ent struct {
			at           int64
			idx, dataKey []byte
		}
		var ents []ent
		err := s.be.Scan(lo, hi, false, func(k, _ []byte) bool {
			at, dk, _ := parseExpiryKey(k)
			e := ent{at: at, idx: append([]byte(nil), k...)}
			if dk != nil {
				e.dataKey = e.idx[len(e.idx)-len(dk):]
			}
			ents = append(ents, e)
			return len(ents) < sweepChunk
		})
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := s.reclaim(p, e.at, e.idx, e.dataKey, now, lockKeys); err != nil {
				return err
			}
		}
		if len(ents) < sweepChunk {
			break
		}
	}
	return s.resetMinExp(p)
}

// resetMinExp sets p's earliest expiry from the index.
func (s *Store) resetMinExp(p *pair) error {
	gen := p.expiryGen()
	lo, hi := kindRange(p.bucket, p.area, kindExpiry)
	k, _, err := s.first(lo, hi)
	if err != nil {
		return err
	}
	next := int64(0)
	if k != nil {
		if at, _, ok := parseExpiryKey(k); ok {
			next = at
		} else {
			next = 1 // a malformed entry: let the next sweep drop it
		}
	}
	p.resetExpiry(gen, next)
	return nil
}

// reclaim deletes the record at dataKey if it is the one the index entry
// idx names and it has expired; an index entry that names no such record
// (which writes never leave behind, but damage might) is dropped.
func (s *Store) reclaim(p *pair, at int64, idx, dataKey []byte, now int64, lockKeys bool) error {
	w := s.newWrite(p.bucket, p.area)
	d, err := parseDataKey(dataKey)
	if dataKey == nil || err != nil {
		w.b.Delete(idx)
		return w.commit()
	}
	var pfx []byte
	lockKey := dataKey
	if d.kind == kindPrefix {
		pfx = pkeyPrefix(d.bucket, d.area, d.key)
		lockKey = pfx
	}
	if lockKeys {
		kl := s.keyLock(lockKey)
		kl.Lock()
		defer kl.Unlock()
	}
	sl, err := s.read(dataKey)
	if err != nil {
		return err
	}
	switch {
	case !sl.phys || sl.rec.expireAt != at:
		w.b.Delete(idx)
	case !engines.Expired(at, now):
		return nil
	case d.kind == kindPrefix:
		if err := s.delSkey(w, pfx, &sl); err != nil {
			return err
		}
	default:
		w.del(&sl, true)
	}
	if err := w.commit(); err != nil {
		return err
	}
	if sl.phys && sl.rec.expireAt == at && d.kind != kindPrefix {
		s.expired.Add(1)
	}
	return nil
}
