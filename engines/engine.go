// Package engines is Tair's pluggable storage-engine interface. A dataserver
// runs every request against one Engine and knows nothing of how it stores
// data; engines know nothing of the cluster. Engines register by name
// (Register) so that adding one touches nothing else.
//
// # Keys
//
// Every operation names a Key: the bucket (hash of the key or pkey, computed
// by the caller), the area (namespace, 0..1023) and the key bytes. Engines
// keep one bucket's data together so that ForEach/DeleteBucket (migration)
// and DeleteArea are cheap.
//
// # Versions and expiry
//
// The rules are SPEC §2's and are the same in every engine:
//   - a put of a missing key succeeds whatever version it carries; the key
//     starts at version 1;
//   - a put on an existing key with version 0 (= no version), or with the
//     key's current version, succeeds and adds 1;
//   - a put with another version fails with errs.ErrVersion and changes
//     nothing;
//   - every write (put, incr, item add, prefix put, Update) adds 1.
//
// Expiry is absolute (unix milliseconds) inside engines; TairExpire turns
// Tair's expire argument into an Expire. An expired key reads as missing
// (lazy expiry) and is reclaimed in the background.
//
// # Concurrency
//
// Engines are safe for concurrent use. Each single operation is atomic with
// respect to others on the same key (Update is the general atomic
// read-modify-write).
package engines

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/tairkv/tair/internal/errs"
)

// Key addresses one record.
type Key struct {
	Bucket uint32
	Area   uint16
	Key    []byte
	// Replica marks a copy of a write the bucket's master already
	// accepted (replication): persistent engines do not check the area's
	// quota for it. Master and slave hold different sets of buckets, so
	// an area's bytes differ between them, and a slave refusing what its
	// master acknowledged would lose the write at the next failover.
	Replica bool
	// NoStats keeps the operation out of the area's statistics (gets,
	// hits, misses, puts): a command's internal probe, such as the check
	// that a key is not a prefix-stored hash, is not a read of the key.
	NoStats bool
	// NoTouch leaves the record's access frequency and time as they are
	// (engines that track them, see AccessTracker): Redis's
	// LOOKUP_NOTOUCH, for commands that only inspect a key (TYPE, TTL,
	// OBJECT ...), and clients in CLIENT NO-TOUCH mode.
	NoTouch bool
	// Versions links a write to its replication (nil: not linked). On a
	// bucket's master it hears the version each record the write stores
	// gets; on a replica (Replica) it gives the version the master's
	// write gave the record, which the store takes instead of counting
	// on from its own copy's: copies that expired a record at different
	// moments, or one that was copied with another version, would
	// otherwise count differently, and a version is what Tair's
	// optimistic lock compares. Prefix records (PrefixPut ...) are not
	// linked.
	Versions VersionLink
}

// VersionLink carries record versions from a write on a bucket's master
// to its replay on the slaves (Key.Versions).
type VersionLink interface {
	// Stored tells that the master's write stored key's record at
	// version v.
	Stored(key []byte, v int64)
	// Given returns the version the master's write gave key's record;
	// 0 when it is not known (the replica counts on from its copy's).
	Given(key []byte) int64
}

// ValueType is the type of a record's value.
type ValueType uint8

// Value types. Strings are plain values; Items are Tair's array-in-value;
// the rest are Redis data structures held as Objects (rdb) or, for hashes
// on persistent engines, as prefix records.
const (
	TypeString ValueType = iota
	TypeHash
	TypeList
	TypeSet
	TypeZSet
	TypeItems
	TypeExHash // TairHash: fields with their own version and expiry
	TypeStream
)

func (t ValueType) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeHash:
		return "hash"
	case TypeList:
		return "list"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeItems:
		return "items"
	case TypeExHash:
		return "exhash"
	case TypeStream:
		return "stream"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Object is an in-memory data structure value (hash, list, set, zset ...).
// Objects are owned by the engine once stored: callers touch them only
// inside Update.
type Object interface {
	Type() ValueType
	// Len is the number of elements.
	Len() int
	// Size is the object's memory footprint in bytes, for quota accounting.
	Size() int
	// MarshalBinary encodes the object for migration and persistence;
	// DecodeObject reverses it.
	MarshalBinary() ([]byte, error)
}

// Entry is one record.
type Entry struct {
	Type ValueType
	// Value holds strings and encoded items.
	Value []byte
	// Object holds in-memory data structures; nil for strings.
	Object Object
	// Version is Tair's optimistic-lock version; 1 after the first put.
	Version int64
	// ExpireAt is the absolute expiry in unix milliseconds; 0 = never.
	ExpireAt int64
	// Hidden keys read as missing to Redis commands (TAIR.HIDE).
	Hidden bool
	// Flags is TairString's FLAGS field.
	Flags uint32
}

// ExpireMode says what a write does to a key's expiry.
type ExpireMode uint8

const (
	// ExpireNever clears any expiry (Tair: expire 0 or absent).
	ExpireNever ExpireMode = iota
	// ExpireKeep keeps the current expiry (Tair: expire < 0; Redis KEEPTTL).
	ExpireKeep
	// ExpireAt sets Expire.At.
	ExpireAt
)

// Expire is a resolved expiry instruction.
type Expire struct {
	Mode ExpireMode
	At   int64 // unix ms, with ExpireAt
}

// NextVersion is the version a write gives a record at version v: v+1,
// wrapping from MaxInt64 to 1 (Tair's versions wrap and skip 0, which
// means "any version"), so that a record a client set to MaxInt64 (EXSET
// ABS) is not written at a negative version its slaves refuse to take.
func NextVersion(v int64) int64 {
	if v == math.MaxInt64 {
		return 1
	}
	return v + 1
}

// TairExpire resolves Tair's expire argument (seconds) at now: 0 never,
// < 0 keep, 0 < e < now relative seconds, e >= now absolute unix seconds.
func TairExpire(e int64, now time.Time) Expire {
	switch {
	case e == 0:
		return Expire{Mode: ExpireNever}
	case e < 0:
		return Expire{Mode: ExpireKeep}
	case e < now.Unix():
		return Expire{Mode: ExpireAt, At: now.UnixMilli() + e*1000}
	default:
		return Expire{Mode: ExpireAt, At: e * 1000}
	}
}

// Expired reports whether a record expiring at expireAt (unix ms, 0 =
// never) has expired at nowMs. As in Redis, a record lives up to and
// including its expiry millisecond. Every engine uses this one rule.
func Expired(expireAt, nowMs int64) bool { return expireAt != 0 && nowMs > expireAt }

// Apply returns the expiry a record gets when it had cur.
func (x Expire) Apply(cur int64) int64 {
	switch x.Mode {
	case ExpireKeep:
		return cur
	case ExpireAt:
		return x.At
	}
	return 0
}

// Cond is a write's existence condition (Redis NX/XX). A write whose
// condition does not hold changes nothing and is not an error: Put returns
// version 0 (a stored record is always at version 1 or more).
type Cond uint8

const (
	CondAlways    Cond = iota
	CondIfMissing      // NX
	CondIfExists       // XX
)

// PutOptions qualify a put.
type PutOptions struct {
	// Version is the expected version; 0 = none (always succeeds).
	Version int64
	Expire  Expire
	Cond    Cond
	Flags   uint32
}

// IncrOptions qualify an incr/decr.
type IncrOptions struct {
	// Init is the value a missing key starts from before delta is added.
	Init    int64
	Version int64
	Expire  Expire
	// Min/Max bound the result when HasMin/HasMax; leaving the range fails
	// with errs.ErrCounterOutOfRange and changes nothing.
	Min, Max       int64
	HasMin, HasMax bool
}

// RangeOptions qualify a prefix range: start and end are skeys, inclusive;
// nil/empty means open.
type RangeOptions struct {
	Start, End []byte
	Limit      int // 0 = no limit
	Reverse    bool
}

// KV is one skey of a prefix range.
type KV struct {
	Key   []byte // the skey
	Entry Entry
}

// Action tells Update what to do with the record fn returned.
type Action uint8

const (
	// Keep changes nothing (a read, or a write that turned out a no-op).
	Keep Action = iota
	// Store writes the returned entry and adds 1 to the version.
	Store
	// Delete removes the record.
	Delete
)

// UpdateFunc gets the current record (exists false: missing, expired, and
// cur is the zero Entry) and says what to do. For an Object it may mutate
// cur.Object in place and return Store. Returning an error changes nothing.
// The engine sets the stored entry's Version itself (cur's + 1, or 1).
type UpdateFunc func(cur Entry, exists bool) (next Entry, act Action, err error)

// Record is one record as migration moves it: ForEach yields them and
// Restore writes them back unchanged (version and expiry included).
type Record struct {
	Area  uint16
	Key   []byte
	Entry Entry
	// Prefix holds the skeys of a pkey (prefix data) in skey order.
	Prefix []KV
	// Merge: Restore adds the record to what the key holds instead of
	// replacing it: a pkey's skeys are written and its others kept; a
	// plain record's object (a PieceMerger) has its elements added to the
	// stored object of its type, which takes the record's version, expiry,
	// flags and hidden bit. A move sends a big key's later pieces so
	// (dataserver/migwalk.go).
	Merge bool
}

// Snapshot is a read-only view of an engine as it stood when taken
// (SnapshotOf): ForEach reads it as Engine.ForEach would have then,
// whatever was written since (records expired at the call's time left
// out), except that a pkey's skeys may come in several calls, in order
// (a pkey of a million skeys is not gathered in memory). Close releases
// it; an engine's Close closes those still open.
type Snapshot interface {
	ForEach(bucket uint32, fn func(r *Record) error) error
	Close() error
}

// SnapshotOf takes a snapshot of e; ok is false when e takes none
// cheaply (the in-memory engines).
func SnapshotOf(e Engine) (snap Snapshot, ok bool, err error) {
	if t, is := e.(interface {
		Snapshot() (Snapshot, bool, error)
	}); is {
		return t.Snapshot()
	}
	return nil, false, nil
}

// PieceMerger is an object a move may send in pieces: MergePiece adds the
// elements of piece (an object of the same type) to it.
type PieceMerger interface {
	Object
	MergePiece(piece Object) error
}

// AreaStats are the per-area counters of SPEC's TAIR.STAT.
type AreaStats struct {
	Keys      int64
	Bytes     int64
	Gets      int64
	Puts      int64
	Hits      int64
	Misses    int64
	Evictions int64
}

// KeyCounts are the key counts of an area in a set of buckets, as DBSIZE
// and INFO keyspace report them. Engines keep them as counters per (bucket,
// area), changed by every write, expiry, eviction and bucket or area
// deletion, so reading them visits no record.
type KeyCounts struct {
	// Keys are the keys a Redis client sees: plain keys that are not
	// hidden, and pkeys (once each, whatever their skeys' hidden bits or
	// expiry: a pkey itself is neither hidden nor expiring).
	Keys int64
	// Hidden are the hidden plain keys, which Keys leaves out.
	Hidden int64
	// Expires are the keys of Keys that have an expiry.
	Expires int64
	// TTL is the remaining time to live of those keys, in milliseconds,
	// summed (the mean is INFO keyspace's avg_ttl).
	TTL int64
}

// Engine is the storage interface every engine implements.
type Engine interface {
	// Name is the registered name ("mdb", "rdb", "ldb", "kdb").
	Name() string
	// Persistent reports whether data survives a restart.
	Persistent() bool

	// Get returns the record (errs.ErrNotFound when missing or expired).
	// Hidden records are returned with Hidden set; callers decide.
	Get(k Key) (Entry, error)
	// MultiGet is Get for many keys; errs[i] is nil or errs.ErrNotFound.
	MultiGet(keys []Key) ([]Entry, []error)
	// Put stores a string value and returns the new version.
	Put(k Key, value []byte, o PutOptions) (int64, error)
	// Remove deletes the record; version 0 is unconditional.
	Remove(k Key, version int64) error
	// Incr adds delta to an integer string value (a missing key starts at
	// o.Init) and returns the new value and version. A non-integer value
	// fails with errs.InvalidArgument.
	Incr(k Key, delta int64, o IncrOptions) (int64, int64, error)
	// SetHidden hides or unhides a record (errs.ErrNotFound when missing).
	// It does not change the version.
	SetHidden(k Key, hidden bool) error
	// Update is the atomic read-modify-write every other write could be
	// built on; the dataserver uses it for Redis data structures. An
	// unknown Action fails with errs.InvalidArgument. A persistent engine
	// refuses to store an Object whose type has no registered codec
	// (RegisterObjectCodec) with errs.ErrNotSupported, as do PrefixUpdate
	// and Restore: it could not read it back.
	Update(k Key, fn UpdateFunc) (Entry, error)

	// Prefix (pkey/skey) operations; k.Key is the pkey, k.Bucket its bucket.
	PrefixPut(k Key, skey, value []byte, o PutOptions) (int64, error)
	PrefixGet(k Key, skey []byte) (Entry, error)
	PrefixRemove(k Key, skey []byte, version int64) error
	PrefixRange(k Key, o RangeOptions) ([]KV, error)
	// PrefixRemoveAll deletes every skey of the pkey and returns how many.
	PrefixRemoveAll(k Key) (int, error)
	// PrefixUpdate is Update for one skey.
	PrefixUpdate(k Key, skey []byte, fn UpdateFunc) (Entry, error)

	// Items (Tair's array in a value; offset 0 is the oldest item).
	// ItemAdd appends items, drops the oldest beyond maxCount, returns the
	// count after the add.
	ItemAdd(k Key, maxCount int, items [][]byte, o PutOptions) (int, error)
	// ItemGet returns count items from offset (negative counts from the
	// end; past the end: those that exist).
	ItemGet(k Key, offset, count int) ([][]byte, error)
	ItemDelete(k Key, offset, count int) (int, error)
	ItemGetDelete(k Key, offset, count int) ([][]byte, error)
	ItemCount(k Key) (int, error)

	// ForEach calls fn for every live record of bucket (all areas), one
	// pkey with all its skeys per call. fn must not call into the engine.
	ForEach(bucket uint32, fn func(r *Record) error) error
	// Restore writes a record as ForEach produced it, replacing any record
	// under the same key (or, for a record marked Merge, adding to it).
	Restore(bucket uint32, r *Record) error
	// DeleteBucket removes every record of bucket.
	DeleteBucket(bucket uint32) error
	// DeleteArea removes every record of area and returns how many keys.
	DeleteArea(area uint16) (int64, error)
	// Count returns the number of live keys in area (pkeys count once).
	Count(area uint16) int64
	// CountKeys calls fn, once per area that holds keys (hidden ones
	// included) in any of buckets, with that area's KeyCounts summed over
	// them, in no particular order. The counts are exact at the time of
	// the call (expired records are reclaimed first), as a ForEach of the
	// buckets would find them, but read from counters: no record is
	// visited. fn must not call into the engine.
	CountKeys(buckets []uint32, fn func(area uint16, c KeyCounts))

	// Stats returns area's counters; AllStats every area's.
	Stats(area uint16) AreaStats
	AllStats() map[uint16]AreaStats
	// SetQuota sets area's byte quota (0 = none). In-memory engines evict
	// (LRU, expired first); persistent ones fail writes with errs.ErrQuota.
	SetQuota(area uint16, bytes int64)

	// Compact reclaims expired and deleted data.
	Compact() error
	Close() error
}

// Options configure an engine when it is opened.
type Options struct {
	// Dir is the data directory of persistent engines.
	Dir string
	// Sync is the durability policy of persistent engines.
	Sync SyncPolicy
	// MemoryLimit bounds an in-memory engine's total bytes (0 = none).
	MemoryLimit int64
	// MaxKeySize and MaxValueSize are SPEC's limits (defaults 1024, 1 MiB).
	MaxKeySize   int
	MaxValueSize int
	// Now is the clock (tests pass a fake one); nil means time.Now.
	Now func() time.Time
	// SweepInterval is how often expired data is reclaimed in the
	// background (default 1s).
	SweepInterval time.Duration
}

// SyncPolicy is a persistent engine's durability policy.
type SyncPolicy string

const (
	// SyncAlways fsyncs every write before it is acknowledged.
	SyncAlways SyncPolicy = "always"
	// SyncGroup commits concurrent writes together with one fsync.
	SyncGroup SyncPolicy = "group"
	// SyncNone leaves flushing to the OS (and pebble's WAL without sync).
	SyncNone SyncPolicy = "none"
)

// Adjust fills zero fields with defaults.
func (o *Options) Adjust() {
	if o.MaxKeySize == 0 {
		o.MaxKeySize = 1024
	}
	if o.MaxValueSize == 0 {
		o.MaxValueSize = 1 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = time.Second
	}
	if o.Sync == "" {
		o.Sync = SyncGroup
	}
}

// CheckKey enforces the key limit.
func (o *Options) CheckKey(key []byte) error {
	if len(key) > o.MaxKeySize {
		return errs.ErrKeyTooLong
	}
	if len(key) == 0 {
		return errs.New(errs.InvalidArgument, "empty key")
	}
	return nil
}

// CheckValue enforces the value limit.
func (o *Options) CheckValue(v []byte) error {
	if len(v) > o.MaxValueSize {
		return errs.ErrValueTooLong
	}
	return nil
}

// Factory opens an engine.
type Factory func(Options) (Engine, error)

var registry = struct {
	sync.RWMutex
	m map[string]Factory
}{m: map[string]Factory{}}

// Register makes an engine available by name; engines call it from init.
func Register(name string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	registry.m[name] = f
}

// Open opens the engine registered as name.
func Open(name string, o Options) (Engine, error) {
	registry.RLock()
	f, ok := registry.m[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("engines: unknown engine %q (have %v)", name, Names())
	}
	o.Adjust()
	return f(o)
}

// Names lists registered engines.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.m))
	for n := range registry.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var objectCodecs = struct {
	sync.RWMutex
	m map[ValueType]func([]byte) (Object, error)
}{m: map[ValueType]func([]byte) (Object, error){}}

// RegisterObjectCodec registers the decoder of an Object type (the package
// that defines the data structures calls it from init).
func RegisterObjectCodec(t ValueType, decode func([]byte) (Object, error)) {
	objectCodecs.Lock()
	defer objectCodecs.Unlock()
	objectCodecs.m[t] = decode
}

// HasObjectCodec reports whether a decoder is registered for t: a
// persistent engine can store only Objects it can decode again.
func HasObjectCodec(t ValueType) bool {
	objectCodecs.RLock()
	defer objectCodecs.RUnlock()
	_, ok := objectCodecs.m[t]
	return ok
}

// DecodeObject reverses Object.MarshalBinary.
func DecodeObject(t ValueType, data []byte) (Object, error) {
	objectCodecs.RLock()
	f, ok := objectCodecs.m[t]
	objectCodecs.RUnlock()
	if !ok {
		return nil, fmt.Errorf("engines: no codec for %s objects", t)
	}
	return f(data)
}

// KeyLister is offered by an engine that lists the keys of a bucket
// without reading their values: a move walks a bucket in short slices
// (each under the bucket's lock) from such a list rather than copying it
// whole at once (BucketKeys).
type KeyLister interface {
	// BucketKeys calls fn for every key stored in bucket (expired ones may
	// be included): plain keys with prefix false, each pkey once with
	// prefix true. A key stored throughout the call is listed at least
	// once; one written meanwhile may or may not be. key is valid during
	// the call only. fn must not call into the engine.
	BucketKeys(bucket uint32, fn func(area uint16, key []byte, prefix bool) error) error
}

// BucketKeys lists bucket's keys through e's KeyLister, or else through
// ForEach (which reads the values too).
func BucketKeys(e Engine, bucket uint32, fn func(area uint16, key []byte, prefix bool) error) error {
	if kl, ok := e.(KeyLister); ok {
		return kl.BucketKeys(bucket, fn)
	}
	return e.ForEach(bucket, func(r *Record) error { return fn(r.Area, r.Key, r.Prefix != nil) })
}

// Checkpointer is an engine that writes a consistent copy of all its data,
// as of one instant, to a new directory while it goes on serving writes
// (a pebble checkpoint for ldb, a bbolt copy for kdb); Open of the same
// engine with that Dir reads the copy. tair ctl backup reads a dataserver's
// buckets from one, so that they are all of the same instant.
type Checkpointer interface {
	Checkpoint(dir string) error
}

// ErrNoCheckpoint is Checkpoint's answer for a store that has no
// checkpoints (the in-memory engines): read it live instead.
var ErrNoCheckpoint = errors.New("engines: this engine takes no checkpoints")

// AccessTracker is offered by an engine that tracks each record's
// accesses, as Redis does for its maxmemory policies (the in-memory
// engines): OBJECT FREQ and OBJECT IDLETIME answer from it. Persistent
// engines offer none: recording a read there would be a write.
type AccessTracker interface {
	// Access returns the record's LFU counter (Redis's logarithmic
	// counter, decayed to now) and the whole seconds since its last
	// access, without counting as one; ok is false when k is not stored
	// (expired records included).
	Access(k Key) (freq uint8, idleSeconds int64, ok bool)
	// SetAccess sets the stored record's LFU counter to freq (0..255) and
	// its last access idleSeconds ago; a negative one takes a new
	// record's (the initial counter, accessed now). RENAME carries a
	// key's fields with it, RESTORE sets its IDLETIME and FREQ options.
	// It reports whether k is stored.
	SetAccess(k Key, freq int, idleSeconds int64) bool
}

// AccessOf returns e's AccessTracker, or nil when e tracks no access.
func AccessOf(e Engine) AccessTracker {
	if a, ok := e.(interface{ AccessTracker() AccessTracker }); ok {
		return a.AccessTracker()
	}
	return nil
}

// CacheStats are a persistent engine's read cache and write buffers, as
// its metrics report them (ldb: pebble's block cache and the memtables
// pebble charges to it). A cache whose hits stop while its misses climb
// is starved; the dataserver exports these so that shows on a dashboard.
type CacheStats struct {
	Hits, Misses  int64 // block lookups since the engine opened
	CachedBytes   int64 // bytes of blocks the cache holds now
	CapacityBytes int64 // the cache's capacity, the memtables' share included
	MemtableBytes int64 // bytes the memtables hold reserved in the cache
}

// CacheStatsOf returns e's cache figures; ok is false for an engine
// without a block cache (the in-memory engines, kdb's mmap).
func CacheStatsOf(e Engine) (s CacheStats, ok bool) {
	if c, is := e.(interface{ CacheStats() (CacheStats, bool) }); is {
		return c.CacheStats()
	}
	return CacheStats{}, false
}
