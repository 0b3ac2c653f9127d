// Package kdb is Tair's persistent B+tree engine, registered as "kdb": it
// stands where Tair's Kyoto Cabinet engine stood, on bbolt (etcd's B+tree).
// The Tair rules are package generic's and the storage layer (encodings,
// locking, counters, expiry index) package sortedkv's, shared with ldb;
// this package is the bbolt backend.
//
// # Layout
//
// The file holds one bbolt bucket per Tair bucket, named by the bucket
// number (4 bytes, big-endian); inside it keys are sortedkv's encoding
// without its leading bucket number. So DeleteBucket is a bbolt
// DeleteBucket, which frees the bucket's pages without visiting its keys,
// and a Tair bucket's B+tree stays small and local. The per-area counters
// are updated by read-modify-write inside the same bbolt transaction as the
// data.
//
// # Durability
//
// bbolt commits a transaction by writing its dirty pages, fsyncing, then
// writing and fsyncing the meta page; a process or machine crash leaves the
// last committed transaction. Options.Sync decides how writes map onto
// transactions:
//
//   - SyncAlways: one transaction, so two fsyncs, per write.
//   - SyncGroup (the default): group commit. A writer that finds no commit
//     running commits alone at once; writers that arrive while a commit
//     runs queue, and the next of them commits the whole queue in one
//     transaction. No writer waits for a timer (unlike bbolt's own
//     DB.Batch, whose 10 ms window would cap a lone client at about 100
//     writes/s), and under load many writes share each fsync. Every write
//     is acknowledged after the fsync of the transaction that holds it.
//   - SyncNone: the same group commit with bbolt's NoSync: a transaction's
//     pages reach the OS when it commits, the disk when the OS decides. A
//     killed process loses nothing acknowledged; a power loss can lose
//     recent writes, or corrupt the file, which is bbolt's documented
//     NoSync risk.
//
// Close commits nothing new (every write was committed before it was
// acknowledged) and fsyncs the file under every policy.
package kdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/ldb/sortedkv"
)

// Name is the registered engine name.
const Name = "kdb"

// FileName is the database file inside Options.Dir.
const FileName = "kdb.db"

func init() {
	engines.Register(Name, func(o engines.Options) (engines.Engine, error) { return Open(o) })
}

// Open opens (creating if needed) the kdb engine in o.Dir.
func Open(o engines.Options) (*generic.Engine, error) {
	o.Adjust()
	if o.Dir == "" {
		return nil, errors.New("kdb: Options.Dir is required")
	}
	// bbolt refuses keys over bolt.MaxKeySize; the longest key kdb stores
	// is a pkey+skey under its encoding header inside an expiry entry.
	if o.MaxKeySize > maxUserKey {
		return nil, fmt.Errorf("kdb: MaxKeySize %d exceeds bbolt's limit (%d)", o.MaxKeySize, maxUserKey)
	}
	be, err := openBolt(o)
	if err != nil {
		return nil, err
	}
	st, err := sortedkv.Open(Name, be, o)
	if err != nil {
		return nil, err
	}
	return generic.New(generic.Config{Name: Name, Persistent: true, Store: st, Options: o}), nil
}

// store is sortedkv.Backend on bbolt.
type store struct {
	db    *bolt.DB
	group bool

	mu      sync.Mutex // guards queue and leading
	queue   []*commitReq
	leading bool
}

func openBolt(o engines.Options) (*store, error) {
	switch o.Sync {
	case engines.SyncAlways, engines.SyncGroup, engines.SyncNone:
	default:
		return nil, fmt.Errorf("kdb: unknown sync policy %q", o.Sync)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("kdb: %w", err)
	}
	path := filepath.Join(o.Dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		// Another process holding the file is an error to report, not
		// something to wait for forever.
		Timeout: time.Second,
		// The freelist is rebuilt at open instead of written with every
		// commit: fewer pages per transaction.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoSync:         o.Sync == engines.SyncNone,
	})
	if err != nil {
		return nil, fmt.Errorf("kdb: open %s: %w", path, err)
	}
	return &store{db: db, group: o.Sync != engines.SyncAlways}, nil
}

const nameLen = 4 // a Tair bucket number names its bbolt bucket

// maxUserKey is the longest key (or pkey+skey) kdb accepts: an expiry index
// entry, the longest stored key, adds two headers of 7 bytes, a pkey
// length of 2 and a time of 8 to it, and loses the 4-byte bucket name.
const maxUserKey = bolt.MaxKeySize - 2*7 - 2 - 8 + nameLen

// split returns the bbolt bucket name and the key inside it.
func split(key []byte) (name, inner []byte, ok bool) {
	if len(key) <= nameLen {
		return nil, nil, false
	}
	return key[:nameLen], key[nameLen:], true
}

var errShortKey = errors.New("kdb: key without a bucket")

func (s *store) Get(key []byte) ([]byte, bool, error) {
	name, inner, ok := split(key)
	if !ok {
		return nil, false, errShortKey
	}
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(name); b != nil {
			if v := b.Get(inner); v != nil {
				out = append(make([]byte, 0, len(v)), v...)
			}
		}
		return nil
	})
	return out, out != nil, err
}

// Scan walks [lo, hi) across bbolt buckets in key order: full keys are the
// bucket name followed by the inner key, and names are fixed-width, so the
// order of (name, inner) is the order of the full keys.
func (s *store) Scan(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error {
	return s.db.View(func(tx *bolt.Tx) error {
		if reverse {
			scanReverse(tx, lo, hi, fn)
		} else {
			scanForward(tx, lo, hi, fn)
		}
		return nil
	})
}

func prefixOf(b []byte) []byte { return b[:min(nameLen, len(b))] }

func scanForward(tx *bolt.Tx, lo, hi []byte, fn func(k, v []byte) bool) {
	root := tx.Cursor()
	var name []byte
	if loName := prefixOf(lo); len(loName) > 0 {
		name, _ = root.Seek(loName)
	} else {
		name, _ = root.First()
	}
	full := make([]byte, 0, 64)
	for ; name != nil; name, _ = root.Next() {
		if hi != nil && bytes.Compare(name, hi) >= 0 {
			return // every key of this bucket and the next is >= hi
		}
		b := tx.Bucket(name)
		if b == nil || len(name) != nameLen {
			continue
		}
		c := b.Cursor()
		var k, v []byte
		if len(lo) > nameLen && bytes.Equal(name, lo[:nameLen]) {
			k, v = c.Seek(lo[nameLen:])
		} else {
			k, v = c.First()
		}
		for ; k != nil; k, v = c.Next() {
			full = append(append(full[:0], name...), k...)
			if hi != nil && bytes.Compare(full, hi) >= 0 {
				return
			}
			if !fn(full, v) {
				return
			}
		}
	}
}

func scanReverse(tx *bolt.Tx, lo, hi []byte, fn func(k, v []byte) bool) {
	root := tx.Cursor()
	var name []byte
	hiName := prefixOf(hi)
	if len(hiName) == 0 {
		name, _ = root.Last()
	} else {
		name, _ = root.Seek(hiName)
		switch {
		case name == nil:
			name, _ = root.Last()
		case !(bytes.Equal(name, hiName) && len(hi) > nameLen):
			// name's keys are all >= hi.
			name, _ = root.Prev()
		}
	}
	loName := prefixOf(lo)
	full := make([]byte, 0, 64)
	for ; name != nil; name, _ = root.Prev() {
		if bytes.Compare(name, loName) < 0 {
			return // every key of this bucket and the previous is < lo
		}
		b := tx.Bucket(name)
		if b == nil || len(name) != nameLen {
			continue
		}
		c := b.Cursor()
		var k, v []byte
		if len(hi) > nameLen && bytes.Equal(name, hi[:nameLen]) {
			if k, _ = c.Seek(hi[nameLen:]); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		} else {
			k, v = c.Last()
		}
		for ; k != nil; k, v = c.Prev() {
			full = append(append(full[:0], name...), k...)
			if lo != nil && bytes.Compare(full, lo) < 0 {
				return
			}
			if !fn(full, v) {
				return
			}
		}
	}
}

// apply writes b inside tx.
func apply(tx *bolt.Tx, b *sortedkv.Batch) error {
	for i := range b.Ops {
		op := &b.Ops[i]
		switch op.Kind {
		case sortedkv.OpSet:
			name, inner, ok := split(op.Key)
			if !ok {
				return errShortKey
			}
			bk, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			v := op.Value
			if v == nil {
				v = []byte{}
			}
			if err := bk.Put(inner, v); err != nil {
				return err
			}
		case sortedkv.OpDelete:
			name, inner, ok := split(op.Key)
			if !ok {
				return errShortKey
			}
			if bk := tx.Bucket(name); bk != nil {
				if err := bk.Delete(inner); err != nil {
					return err
				}
			}
		case sortedkv.OpDeleteRange:
			if err := deleteRange(tx, op.Key, op.End); err != nil {
				return err
			}
		}
	}
	for _, c := range b.Counters {
		name, inner, ok := split(c.Key)
		if !ok {
			return errShortKey
		}
		bk, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		if err := bk.Put(inner, sortedkv.AddCounts(bk.Get(inner), c.Counts())); err != nil {
			return err
		}
	}
	return nil
}

// deleteRange deletes [lo, hi): whole bbolt buckets inside the range are
// dropped, others are trimmed key by key.
func deleteRange(tx *bolt.Tx, lo, hi []byte) error {
	var whole, partial [][]byte
	root := tx.Cursor()
	for name, _ := root.Seek(prefixOf(lo)); name != nil; name, _ = root.Next() {
		if hi != nil && bytes.Compare(name, hi) >= 0 {
			break
		}
		end := sortedkv.PrefixEnd(name) // the first full key after every key of bbolt bucket name
		if bytes.Compare(name, lo) >= 0 && (hi == nil || (end != nil && bytes.Compare(end, hi) <= 0)) {
			whole = append(whole, bytes.Clone(name))
		} else {
			partial = append(partial, bytes.Clone(name))
		}
	}
	for _, name := range whole {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
	}
	for _, name := range partial {
		bk := tx.Bucket(name)
		if bk == nil {
			continue
		}
		var keys [][]byte
		c := bk.Cursor()
		var k []byte
		if bytes.Equal(name, prefixOf(lo)) && len(lo) > nameLen {
			k, _ = c.Seek(lo[nameLen:])
		} else {
			k, _ = c.First()
		}
		for ; k != nil; k, _ = c.Next() {
			if hi != nil && bytes.Compare(append(bytes.Clone(name), k...), hi) >= 0 {
				break
			}
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			if err := bk.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// commitReq is one writer waiting in the group-commit queue.
type commitReq struct {
	b    *sortedkv.Batch
	done chan error // the commit's result, or errLead
}

// errLead tells a queued writer that it now leads: it commits the queue.
var errLead = errors.New("kdb: lead the next group")

func (s *store) Commit(b *sortedkv.Batch) error {
	if !s.group {
		return s.db.Update(func(tx *bolt.Tx) error { return apply(tx, b) })
	}
	r := &commitReq{b: b, done: make(chan error, 1)}
	s.mu.Lock()
	s.queue = append(s.queue, r)
	if s.leading {
		s.mu.Unlock()
		if err := <-r.done; err != errLead {
			return err
		}
		s.mu.Lock()
	}
	s.leading = true
	group := s.queue
	s.queue = nil
	s.mu.Unlock()

	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, q := range group {
			if err := apply(tx, q.b); err != nil {
				return err
			}
		}
		return nil
	})
	results := make([]error, len(group))
	if err != nil && len(group) > 1 {
		// One bad batch must not fail its neighbours: retry each alone.
		for i, q := range group {
			results[i] = s.db.Update(func(tx *bolt.Tx) error { return apply(tx, q.b) })
		}
	} else {
		for i := range results {
			results[i] = err
		}
	}
	var own error
	for i, q := range group {
		if q == r {
			own = results[i]
		} else {
			q.done <- results[i]
		}
	}
	s.mu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].done <- errLead // stays leading: the next one takes over
	} else {
		s.leading = false
	}
	s.mu.Unlock()
	return own
}

// Compact is a no-op: bbolt reuses freed pages in place and does not shrink
// its file while open (an offline `bbolt compact` does).
func (s *store) Compact() error { return nil }

// Close syncs and closes the file (a NoSync database is fsynced here, so a
// clean shutdown loses nothing).
func (s *store) Close() error {
	err := s.db.Sync()
	return errors.Join(err, s.db.Close())
}

// Checkpoint copies the database into dir (created; FileName inside it),
// inside one read transaction: bbolt's consistent view of that instant,
// while writes go on.
func (s *store) Checkpoint(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kdb: %w", err)
	}
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.CopyFile(filepath.Join(dir, FileName), 0o600)
	})
}
