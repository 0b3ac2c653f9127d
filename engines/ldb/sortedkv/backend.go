package sortedkv

import "encoding/binary"

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

// SnapshotBackend is a Backend that takes snapshots: read-only views of
// the whole store as it stood when taken, which later commits do not
// change (pebble's). bbolt's read transactions are not offered as such:
// while one is open, a commit that grows the file waits for it, so a
// snapshot held while the store is written could stall its writes for as
// long as it is read, or for good if the reader waits for a writer.
type SnapshotBackend interface {
	Backend
	Snapshot() (BackendSnapshot, error)
}

// BackendSnapshot is a snapshot of a Backend. Scan is the Backend's, on
// the snapshot; Close releases it (the backend keeps what it needs for
// the snapshot until then) and must be called before the backend's.
type BackendSnapshot interface {
	Scan(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error
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
// transaction), with AddCounts.
type CounterDelta struct {
	Key []byte // countersKey(bucket, area)
	// The fields of Counts.
	Keys, Bytes, Hidden, Expires, ExpireSum int64
}

// Counts returns the change d makes.
func (d *CounterDelta) Counts() Counts {
	return Counts{Keys: d.Keys, Bytes: d.Bytes, Hidden: d.Hidden, Expires: d.Expires, ExpireSum: d.ExpireSum}
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

// Counts are a (bucket, area)'s persisted counters: the stored keys (a
// pkey once) and bytes, and what CountKeys reports besides (see
// generic.BucketKeys: hidden plain keys, expiring visible plain keys and
// the sum of their expiry times).
type Counts struct {
	Keys, Bytes, Hidden, Expires, ExpireSum int64
}

// A counters record is a format byte and its fields as varints (zigzag),
// in Counts' order: 6 to 51 bytes, most often under 16 (a bbolt page or a
// pebble merge operand holds one per write, so its size shows in write
// costs). The first release wrote keys and bytes as two little-endian
// int64s, 16 bytes; a record of this format is never 16 bytes long (a
// zero byte pads one that would be), so the two never mix up, and Open
// completes a first-release record (Store.load) before anything is added
// to it.
const (
	countersFormat    = 2
	legacyCountersLen = 16
)

// Encode is the persisted form of c.
func (c Counts) Encode() []byte {
	var buf [1 + 5*binary.MaxVarintLen64 + 1]byte
	b := append(buf[:0], countersFormat)
	for _, v := range [...]int64{c.Keys, c.Bytes, c.Hidden, c.Expires, c.ExpireSum} {
		b = binary.AppendVarint(b, v)
	}
	if len(b) == legacyCountersLen {
		b = append(b, 0)
	}
	return append([]byte(nil), b...)
}

// Add returns c plus d.
func (c Counts) Add(d Counts) Counts {
	return Counts{c.Keys + d.Keys, c.Bytes + d.Bytes, c.Hidden + d.Hidden, c.Expires + d.Expires, c.ExpireSum + d.ExpireSum}
}

// DecodeCounts reverses Encode. complete is false for the first release's
// record, which has keys and bytes only; a malformed record reads as zero
// and not complete.
func DecodeCounts(v []byte) (c Counts, complete bool) {
	if len(v) == legacyCountersLen {
		return Counts{Keys: getI64(v), Bytes: getI64(v[8:])}, false
	}
	if len(v) == 0 || v[0] != countersFormat {
		return Counts{}, false
	}
	var f [5]int64
	p := v[1:]
	for i := range f {
		x, n := binary.Varint(p)
		if n <= 0 {
			return Counts{}, false
		}
		f[i], p = x, p[n:]
	}
	if len(p) > 1 || len(p) == 1 && p[0] != 0 {
		return Counts{}, false
	}
	return Counts{f[0], f[1], f[2], f[3], f[4]}, true
}

// EncodeLegacyCounters is the first release's counters record, for a
// merge of its records alone, which must stay in their form.
func EncodeLegacyCounters(keys, bytes int64) []byte {
	b := make([]byte, legacyCountersLen)
	putI64(b, keys)
	putI64(b[8:], bytes)
	return b
}

// DecodeCounters returns the keys and bytes of a counters record of
// either form.
func DecodeCounters(v []byte) (keys, bytes int64) {
	c, _ := DecodeCounts(v)
	return c.Keys, c.Bytes
}

// AddCounts returns the counters record old (possibly nil) with d added,
// for a backend without a merge operator.
func AddCounts(old []byte, d Counts) []byte {
	c, _ := DecodeCounts(old)
	return c.Add(d).Encode()
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
