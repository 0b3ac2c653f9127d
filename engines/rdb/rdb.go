// Package rdb is the default engine of a Tair cluster: an in-memory store
// of strings, items, prefix keys and Redis data structures (Entry.Object,
// written through Update), with Tair versions and per-key expiry on every
// key.
//
// # Speed
//
// Records live in 256 shards, each behind its own RWMutex, chosen by bucket
// (see memstore's Layout). Reads take the shared lock and allocate nothing
// (values are immutable once stored and returned without copying); a put
// over an existing key allocates only its value copy, a new key also its
// key and record header (TestHotPathAllocations pins this).
//
// # Quota
//
// rdb evicts, like mdb, rather than refusing writes with errs.ErrQuota:
// SPEC §5 says in-memory engines evict, and the dataserver's area quota is
// the same knob for every in-memory engine. A record larger than the whole
// quota is refused with errs.ErrQuota, since it could never be held.
package rdb

import (
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/generic/memstore"
)

// Name is the registered engine name.
const Name = "rdb"

func init() {
	engines.Register(Name, func(o engines.Options) (engines.Engine, error) { return Open(o), nil })
}

// Open returns an rdb engine.
func Open(o engines.Options) *generic.Engine {
	return memstore.OpenEngine(Name, 256, o)
}
