// Package mdb is Tair's in-memory cache engine, in the spirit of Tair's mdb
// and memcached: strings, items, prefix keys and (so that a cluster run
// with --engine mdb still serves Redis structures) Objects, with a byte
// quota per area and a global MemoryLimit enforced by LRU eviction.
//
// mdb is a cache: when a write leaves an area over its quota, or the engine
// over Options.MemoryLimit, records are evicted instead of the write being
// refused, expired records first, then the least recently used (CLOCK
// approximation; see memstore). Evictions are counted per area in Stats.
// Expired records read as missing at once and are reclaimed by a background
// sweep every Options.SweepInterval, so memory is not held by keys nobody
// reads.
//
// The Tair semantics (versions, expiry, items, limits) are the generic
// package's, shared with every engine.
package mdb

import (
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/generic/memstore"
)

// Name is the registered engine name.
const Name = "mdb"

func init() {
	engines.Register(Name, func(o engines.Options) (engines.Engine, error) { return Open(o), nil })
}

// Open returns an mdb engine.
func Open(o engines.Options) *generic.Engine {
	return memstore.OpenEngine(Name, 0, o) // 0: the store's default shard count
}
