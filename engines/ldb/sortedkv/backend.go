package sortedkv

// Backend is the ordered byte store under an Engine: pebble for ldb, bbolt
// for kdb. It knows nothing of Tair; the Engine owns the key and value
// encodings, the locking and the accounting.
//
// A Backend must be safe for concurrent use. Scans never span two Tair
// buckets, so a backend may keep each bucket in its own tree (kdb does).
type Backend interface {
	// Get returns a copy of key's value; found is false when key is absent.
	Get(key []byte) (value []byte, found bool, err error)
	// Scan calls fn for each key in [lo, hi), ascending, or descending when
	// reverse is set, until fn returns false. hi nil means no upper bound.
	// k and v are valid only during the call; fn must not write.
	Scan(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error
	// Commit applies b atomically, with the durability of the backend's
	// sync policy: when Commit returns nil under SyncAlways or SyncGroup,
	// b survives a crash of the process or the machine — under SyncGroup
	// a backend may instead offer an engines.GroupCommitter (ldb), and
	// then b survives once its WaitDurable returned.
	Commit(b *Batch) error
	// Compact makes the backend reclaim the space of deleted data.
	Compact() error
	// Close flushes and releases the store.
	Close() error
}

// OpKind is the kind of one Batch operation.
type OpKind uint8

const (
	OpSet OpKind = iota
	OpDelete
	// OpDeleteRange deletes [Key, End).
	OpDeleteRange
)

// Op is one Batch operation.
type Op struct {
	Kind  OpKind
	Key   []byte
	Value []byte // OpSet
	End   []byte // OpDeleteRange
}

// CounterDelta is a change to a (bucket, area)'s persisted counters; the
// backend adds it to the record at CountersKey inside the same atomic
// commit (pebble with a merge operator, bbolt by read-modify-write in the
// transaction).
type CounterDelta struct {
	Key         []byte // countersKey(bucket, area)
	Keys, Bytes int64
}

// Batch is an atomic group of writes. Ops apply in order, then the
// counter deltas.
type Batch struct {
	Ops      []Op
	Counters []CounterDelta
}

func (b *Batch) Set(k, v []byte) { b.Ops = append(b.Ops, Op{Kind: OpSet, Key: k, Value: v}) }
func (b *Batch) Delete(k []byte) { b.Ops = append(b.Ops, Op{Kind: OpDelete, Key: k}) }
func (b *Batch) DeleteRange(lo, hi []byte) {
	b.Ops = append(b.Ops, Op{Kind: OpDeleteRange, Key: lo, End: hi})
}

// Empty reports whether b does nothing.
func (b *Batch) Empty() bool { return len(b.Ops) == 0 && len(b.Counters) == 0 }

// EncodeCounters is the persisted form of a counters record: keys and
// bytes, two little-endian int64s. A backend without a merge operator adds
// deltas with AddCounters.
func EncodeCounters(keys, bytes int64) []byte {
	var b [16]byte
	putI64(b[:8], keys)
	putI64(b[8:], bytes)
	return b[:]
}

// DecodeCounters reverses EncodeCounters; a malformed record reads as zero.
func DecodeCounters(v []byte) (keys, bytes int64) {
	if len(v) != 16 {
		return 0, 0
	}
	return getI64(v[:8]), getI64(v[8:])
}

// AddCounters returns old (possibly nil) with d added.
func AddCounters(old []byte, keys, bytes int64) []byte {
	k, b := DecodeCounters(old)
	return EncodeCounters(k+keys, b+bytes)
}

func putI64(b []byte, v int64) {
	u := uint64(v)
	for i := 0; i < 8; i++ {
		b[i] = byte(u >> (8 * i))
	}
}

func getI64(b []byte) int64 {
	var u uint64
	for i := 0; i < 8; i++ {
		u |= uint64(b[i]) << (8 * i)
	}
	return int64(u)
}
