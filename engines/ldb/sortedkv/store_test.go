package sortedkv

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/google/btree"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
)

// memBackend is an in-memory Backend for tests: a B-tree under a mutex.
// hook, when set, runs after a commit is applied and before it returns.
type memBackend struct {
	mu   sync.Mutex
	t    *btree.BTreeG[kv]
	hook func(b *Batch)
}

type kv struct{ k, v []byte }

var _ Backend = (*memBackend)(nil)

func newMemBackend() *memBackend {
	return &memBackend{t: btree.NewG(8, func(a, b kv) bool { return bytes.Compare(a.k, b.k) < 0 })}
}

func (m *memBackend) Get(key []byte) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.t.Get(kv{k: key})
	return bytes.Clone(it.v), ok, nil
}

func (m *memBackend) Scan(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error {
	m.mu.Lock()
	var all []kv
	m.t.AscendGreaterOrEqual(kv{k: lo}, func(it kv) bool {
		if hi != nil && bytes.Compare(it.k, hi) >= 0 {
			return false
		}
		all = append(all, it)
		return true
	})
	m.mu.Unlock()
	if reverse {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	for _, it := range all {
		if !fn(it.k, it.v) {
			break
		}
	}
	return nil
}

func (m *memBackend) Commit(b *Batch) error {
	m.mu.Lock()
	for _, op := range b.Ops {
		switch op.Kind {
		case OpSet:
			m.t.ReplaceOrInsert(kv{bytes.Clone(op.Key), bytes.Clone(op.Value)})
		case OpDelete:
			m.t.Delete(kv{k: op.Key})
		case OpDeleteRange:
			var dead []kv
			m.t.AscendGreaterOrEqual(kv{k: op.Key}, func(it kv) bool {
				if op.End != nil && bytes.Compare(it.k, op.End) >= 0 {
					return false
				}
				dead = append(dead, it)
				return true
			})
			for _, it := range dead {
				m.t.Delete(it)
			}
		}
	}
	for _, c := range b.Counters {
		old, _ := m.t.Get(kv{k: c.Key})
		m.t.ReplaceOrInsert(kv{bytes.Clone(c.Key), AddCounts(old.v, c.Counts())})
	}
	hook := m.hook
	m.mu.Unlock()
	if hook != nil {
		hook(b)
	}
	return nil
}

func (m *memBackend) Compact() error { return nil }
func (m *memBackend) Close() error   { return nil }

type clock struct {
	mu sync.Mutex
	ms int64
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.UnixMilli(c.ms) }
func (c *clock) set(ms int64)   { c.mu.Lock(); c.ms = ms; c.mu.Unlock() }

// newTestStore is a Store over a fresh memory backend on a clock at
// 1000 ms, with no background sweep (the tests sweep by hand), closed when
// t ends.
func newTestStore(t *testing.T) (*Store, *memBackend, *clock) {
	be, clk := newMemBackend(), &clock{ms: 1000}
	s, err := New(be, Options{Now: clk.now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, be, clk
}

func putRef(t *testing.T, s *Store, key string, expireAt int64) {
	t.Helper()
	r := generic.Ref{Key: engines.Key{Bucket: 5, Key: []byte(key)}}
	err := s.Update(r, func(engines.Entry, bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{Value: []byte("v"), Version: 1, ExpireAt: expireAt}, engines.Store, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCountWaitsForSweep: a Count that runs while the background sweep has
// committed a reclaim but not yet counted it must wait for the sweep, not
// report the stale count. (The model test found this race at random.)
func TestCountWaitsForSweep(t *testing.T) {
	s, be, clk := newTestStore(t)
	putRef(t, s, "a", 1500)
	putRef(t, s, "b", 0)
	clk.set(2000)

	inReclaim, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	be.mu.Lock()
	be.hook = func(b *Batch) {
		if len(b.Counters) > 0 && b.Counters[0].Keys < 0 {
			once.Do(func() { close(inReclaim); <-release })
		}
	}
	be.mu.Unlock()
	go func() { _ = s.sweep(false) }()
	<-inReclaim // the reclaim of "a" is committed, not yet counted

	got := make(chan int64)
	go func() { got <- s.Count(0) }()
	select {
	case n := <-got:
		close(release) // let the sweep finish so that Close returns
		t.Fatalf("Count returned %d while a reclaim was half done", n)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if n := <-got; n != 1 {
		t.Fatalf("Count = %d, want 1", n)
	}
}

// TestSweepKeepsNewExpiry: a write that adds an expiring record while a
// sweep recomputes the pair's earliest expiry must not be forgotten (it
// would make Count skip the pair and count an expired key).
func TestSweepKeepsNewExpiry(t *testing.T) {
	s, _, clk := newTestStore(t)
	putRef(t, s, "early", 1100)
	putRef(t, s, "late", 5000)
	clk.set(1200)
	p := s.pair(5, 0)

	// resetMinExp reads the index (which then holds "late" only), a write
	// adds "mid" at 3000 before the reset stores its result.
	gen := p.expiryGen()
	if err := s.sweepPairLocked(p, 1200, true); err != nil {
		t.Fatal(err)
	}
	if got := p.minExp.Load(); got != 5000 {
		t.Fatalf("minExp after sweep = %d, want 5000", got)
	}
	gen = p.expiryGen()
	putRef(t, s, "mid", 3000)
	p.resetExpiry(gen, 5000) // a reset that did not see "mid"
	if got := p.minExp.Load(); got != 3000 {
		t.Fatalf("minExp = %d after a stale reset, want 3000 (the write's)", got)
	}
	clk.set(3001)
	if n := s.Count(0); n != 1 {
		t.Fatalf("Count = %d at 3001, want 1 (late)", n)
	}
}

// TestDeleteAreaOneCommit: DeleteArea removes an area from every bucket
// that holds it in one backend commit, so that no reader (they do not
// lock) and no crash can see it half deleted; it leaves nothing of the area
// behind (data, expiry index, counters) and other areas untouched.
func TestDeleteAreaOneCommit(t *testing.T) {
	s, be, clk := newTestStore(t)
	put := func(bucket uint32, area uint16, key string, skey []byte, expireAt int64) {
		t.Helper()
		r := generic.Ref{Key: engines.Key{Bucket: bucket, Area: area, Key: []byte(key)}, Prefix: skey != nil, Skey: skey}
		err := s.Update(r, func(engines.Entry, bool) (engines.Entry, engines.Action, error) {
			return engines.Entry{Value: []byte("v"), Version: 1, ExpireAt: expireAt}, engines.Store, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for b := uint32(0); b < 6; b++ {
		for _, area := range []uint16{3, 4} {
			put(b, area, "plain", nil, 0)
			put(b, area, "exp", nil, 5000)
			put(b, area, "gone", nil, 1500)
			put(b, area, "pk", []byte("s1"), 0)
			put(b, area, "pk", []byte("s2"), 5000)
		}
	}
	clk.set(2000) // "gone" expired: not counted by DeleteArea
	keep, err := s.Recount(4)
	if err != nil {
		t.Fatal(err)
	}
	keepBytes, _ := s.Usage(4)
	var rangeCommits, ranges int // commits with range deletions, and those
	be.mu.Lock()
	be.hook = func(b *Batch) {
		n := 0
		for _, op := range b.Ops {
			if op.Kind == OpDeleteRange {
				n++
			}
		}
		if n > 0 {
			rangeCommits++
			ranges += n
		}
	}
	be.mu.Unlock()
	n, err := s.DeleteArea(3)
	if err != nil || n != 6*3 {
		t.Fatalf("DeleteArea(3) = %d %v, want %d live keys", n, err, 6*3)
	}
	be.mu.Lock()
	be.t.Ascend(func(it kv) bool {
		if len(it.k) >= headerLen && be16(it.k[4:]) == 3 {
			t.Errorf("key %x of area 3 left after DeleteArea", it.k)
		}
		return true
	})
	be.mu.Unlock()
	// Reclaiming the expired records first commits on its own (it changes
	// nothing a reader sees); the deletion is one commit of 6 ranges.
	if rangeCommits != 1 || ranges != 6 {
		t.Fatalf("DeleteArea over 6 buckets: %d commits with %d range deletions, want 1 with 6", rangeCommits, ranges)
	}
	if rc, err := s.Recount(3); err != nil || rc != (Recount{}) {
		t.Fatalf("Recount(3) after DeleteArea = %+v %v", rc, err)
	}
	if b, _ := s.Usage(3); b != 0 || s.Count(3) != 0 {
		t.Fatalf("area 3 after DeleteArea: %d bytes, %d keys", b, s.Count(3))
	}
	if rc, err := s.Recount(4); err != nil || rc != keep {
		t.Fatalf("Recount(4) = %+v %v, was %+v", rc, err, keep)
	}
	if b, _ := s.Usage(4); b != keepBytes || keep.Bytes != b || keep.PersistedBytes != b {
		t.Fatalf("area 4: %d bytes, was %d; recount %+v", b, keepBytes, keep)
	}
}
