package memstore

import (
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/generic/slab"
)

// Access tracking: what OBJECT FREQ and OBJECT IDLETIME answer, and the
// CLOCK eviction's referenced bit, in one word per record (the first 8
// bytes of its arena block, record.go).
//
// The frequency is Redis's LFU counter (evict.c): a logarithmic counter
// that a new record starts at lfuInitVal, that an access increments with
// probability 1/((counter-lfuInitVal)*lfuLogFactor+1), and that loses one
// per lfuDecayMinutes without access, applied at the next access or read
// of the counter. Redis keeps either the LFU counter or the LRU clock,
// by maxmemory-policy; the store keeps both, so that OBJECT FREQ and
// OBJECT IDLETIME always answer.
//
// Word layout (bits): 0-7 the LFU counter, 8-23 the minute of its last
// decrement (unix minutes mod 2^16, Redis's ldt), 24-55 the last access
// (unix seconds mod 2^32: idle times are exact for 136 years), 63 the
// referenced bit.
//
// Readers update the word under the shard's shared lock, so two reads of
// one record may race: each loads the word and stores its own update,
// and one may overwrite the other's. That loses at most an increment the
// counter only makes with some probability anyway, or an access time a
// second apart; the word is always one whole update (atomic load and
// store), and writers, under the exclusive lock, never race with readers.
//
// Slaves do not mirror access fields (Redis replicas do not either): a
// replicated write touches the slave's copy, a read served by the master
// does not, so after a failover the new master's frequencies and idle
// times are its own.
const (
	lfuInitVal      = 5  // Redis's LFU_INIT_VAL
	lfuLogFactor    = 10 // Redis's default lfu-log-factor
	lfuDecayMinutes = 1  // Redis's default lfu-decay-time

	accessCounterBits = 0
	accessLDTShift    = 8
	accessLRUShift    = 24
	accessRefBit      = uint64(1) << 63
)

// lfuRandom is the source of the counter's probabilistic increments, a
// uniform float in [0, 1) (Redis: rand()/RAND_MAX).
var lfuRandom = rand.Float64

// SetLFURandom replaces the LFU counter's random source and returns a
// function that restores it: tests make increments deterministic with it
// (f returning 0 increments at every access). Not safe to call while the
// store is in use.
func SetLFURandom(f func() float64) (restore func()) {
	prev := lfuRandom
	lfuRandom = f
	return func() { lfuRandom = prev }
}

// accessWord unpacks and packs a record's access word.
type accessWord uint64

func (w accessWord) counter() uint8 { return uint8(w >> accessCounterBits) }
func (w accessWord) ldt() uint16    { return uint16(w >> accessLDTShift) }
func (w accessWord) lru() uint32    { return uint32(w >> accessLRUShift) }
func (w accessWord) ref() bool      { return uint64(w)&accessRefBit != 0 }

func packAccess(counter uint8, ldt uint16, lru uint32, ref bool) accessWord {
	w := uint64(counter)<<accessCounterBits | uint64(ldt)<<accessLDTShift | uint64(lru)<<accessLRUShift
	if ref {
		w |= accessRefBit
	}
	return accessWord(w)
}

// lfuMinutes is Redis's LFUGetTimeInMinutes: unix minutes mod 2^16.
func lfuMinutes(nowMs int64) uint16 { return uint16(nowMs / 60000) }

// lruSeconds is the access clock: unix seconds mod 2^32.
func lruSeconds(nowMs int64) uint32 { return uint32(nowMs / 1000) }

// lfuElapsed is Redis's LFUTimeElapsed: minutes from ldt to now, across
// the 16-bit wrap (by Redis's formula, one short there).
func lfuElapsed(ldt, now uint16) uint16 {
	if now >= ldt {
		return now - ldt
	}
	return 65535 - ldt + now
}

// lfuDecayed is Redis's LFUDecrAndReturn: the counter less one per decay
// period elapsed since ldt, at least 0.
func lfuDecayed(counter uint8, ldt, now uint16) uint8 {
	periods := lfuElapsed(ldt, now) / lfuDecayMinutes
	if uint16(counter) <= periods {
		return 0
	}
	return counter - uint8(periods)
}

// lfuLogIncr is Redis's LFULogIncr, with r its random draw in [0, 1).
func lfuLogIncr(counter uint8, r float64) uint8 {
	if counter == 255 {
		return 255
	}
	base := float64(counter) - lfuInitVal
	if base < 0 {
		base = 0
	}
	if r < 1/(base*lfuLogFactor+1) {
		counter++
	}
	return counter
}

// newAccess is a new record's word: counter lfuInitVal, accessed now, not
// referenced (Redis: createObject).
func newAccess(nowMs int64) accessWord {
	return packAccess(lfuInitVal, lfuMinutes(nowMs), lruSeconds(nowMs), false)
}

// touched is w after an access at nowMs (Redis: updateLFU and the LRU
// clock's update in lookupKey), with the referenced bit set when ref. The
// random draw is taken only when the increment is uncertain.
func touched(w accessWord, nowMs int64, ref bool) accessWord {
	min := lfuMinutes(nowMs)
	c := lfuDecayed(w.counter(), w.ldt(), min)
	switch {
	case c < lfuInitVal+1: // p = 1: no draw
		c = lfuLogIncr(c, 0)
	case c < 255:
		c = lfuLogIncr(c, lfuRandom())
	}
	return packAccess(c, min, lruSeconds(nowMs), ref || w.ref())
}

// touch records an access to it at nowMs, storing the word only when it
// changed: a hot record read many times a second mostly keeps its word,
// and its cache line stays shared among the cores reading it.
func touch(a *atomic.Uint64, nowMs int64, ref bool) {
	w := accessWord(a.Load())
	if n := touched(w, nowMs, ref); n != w {
		a.Store(uint64(n))
	}
}

// accessOf is what OBJECT FREQ and OBJECT IDLETIME answer for w at nowMs:
// the counter decayed to now (not stored: reading it is no access) and
// the whole seconds since the last access.
func accessOf(w accessWord, nowMs int64) (freq uint8, idleSeconds int64) {
	freq = lfuDecayed(w.counter(), w.ldt(), lfuMinutes(nowMs))
	idle := lruSeconds(nowMs) - w.lru() // mod 2^32: across the wrap
	if int32(idle) < 0 {
		idle = 0 // a clock set back: not accessed in the future
	}
	return freq, int64(idle)
}

var _ engines.AccessTracker = (*Store)(nil)

// Access implements engines.AccessTracker for the plain key k.
func (s *Store) Access(k engines.Key) (freq uint8, idleSeconds int64, ok bool) {
	ok = s.withLiveKey(k, false, func(a *atomic.Uint64, now int64) {
		freq, idleSeconds = accessOf(accessWord(a.Load()), now)
	})
	return freq, idleSeconds, ok
}

// SetAccess implements engines.AccessTracker for the plain key k.
func (s *Store) SetAccess(k engines.Key, freq int, idleSeconds int64) bool {
	return s.withLiveKey(k, true, func(a *atomic.Uint64, now int64) {
		w := newAccess(now)
		c, lru := w.counter(), w.lru()
		if freq >= 0 {
			c = uint8(min(freq, 255))
		}
		if idleSeconds > 0 {
			lru -= uint32(min(idleSeconds, math.MaxInt32)) // mod 2^32, as the clock
		}
		a.Store(uint64(packAccess(c, w.ldt(), lru, accessWord(a.Load()).ref())))
	})
}

// withLiveKey runs fn on the plain key k's record under its shard's lock
// (exclusive with write, as a change of the access word by more than one
// atomic step needs); false: k is missing or expired.
func (s *Store) withLiveKey(k engines.Key, write bool, fn func(a *atomic.Uint64, now int64)) bool {
	now := s.nowMs()
	sh := s.shardOf(k.Bucket, k.Key)
	if write {
		sh.mu.Lock()
		defer sh.mu.Unlock()
	} else {
		sh.mu.RLock()
		defer sh.mu.RUnlock()
	}
	h := sh.liveKeyLocked(k, now)
	if h == 0 {
		return false
	}
	fn(sh.access(h), now)
	return true
}

// liveKeyLocked is the plain key k's record, nil when it is missing or
// expired at now (0); the caller holds sh's lock.
func (sh *shard) liveKeyLocked(k engines.Key, now int64) slab.Handle {
	r := generic.Ref{Key: k}
	if _, _, h := sh.lookupLocked(&r); h != 0 && !engines.Expired(sh.expOf(h), now) {
		return h
	}
	return 0
}
