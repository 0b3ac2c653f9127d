package sortedkv

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
)

// scanCounter is a Backend that counts its scans.
type scanCounter struct {
	Backend
	scans atomic.Int64
}

func (c *scanCounter) Scan(lo, hi []byte, reverse bool, fn func(k, v []byte) bool) error {
	c.scans.Add(1)
	return c.Backend.Scan(lo, hi, reverse, fn)
}

func putSkey(t testing.TB, s *Store, bucket uint32, pkey, skey string) {
	t.Helper()
	r := generic.Ref{Key: engines.Key{Bucket: bucket, Key: []byte(pkey)}, Prefix: true, Skey: []byte(skey)}
	if err := s.Update(r, func(engines.Entry, bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{Value: []byte("f"), Version: 1}, engines.Store, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func skeysOf(t testing.TB, s *Store, bucket uint32, pkey string) []string {
	t.Helper()
	var out []string
	if err := s.Range(engines.Key{Bucket: bucket, Key: []byte(pkey)}, nil, nil, false, func(skey []byte, _ *engines.Entry) bool {
		out = append(out, string(skey))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrefixProbeSkipsPairsWithoutPrefixRecords: once a (bucket, area) is
// known to hold no prefix records, a Range of a pkey in it reads nothing
// from the backend; a prefix record stored later, a restart, a deleted
// bucket and a restored pkey are all seen.
func TestPrefixProbeSkipsPairsWithoutPrefixRecords(t *testing.T) {
	mem := newMemBackend()
	be := &scanCounter{Backend: mem}
	s, err := New(be, Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	putRef(t, s, "plain", 0) // bucket 5, area 0: a pair with no prefix records

	start := be.scans.Load()
	for i := 0; i < 100; i++ {
		if got := skeysOf(t, s, 5, fmt.Sprint("k", i)); got != nil {
			t.Fatalf("skeys of k%d: %q", i, got)
		}
	}
	if n := be.scans.Load() - start; n != 1 {
		t.Fatalf("100 probes of a pair without prefix records scanned %d times, want 1 (the pair's probe)", n)
	}

	putSkey(t, s, 5, "h", "f1")
	if got := skeysOf(t, s, 5, "h"); len(got) != 1 || got[0] != "f1" {
		t.Fatalf("skeys after a prefix write: %q", got)
	}

	// A restart starts unknown and probes again: the record is found.
	s.Close()
	if s, err = New(be, Options{SweepInterval: -1}); err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if got := skeysOf(t, s, 5, "h"); len(got) != 1 || got[0] != "f1" {
		t.Fatalf("skeys after a restart: %q", got)
	}

	// A deleted bucket forgets its pair; a restored pkey is seen.
	if err := s.DeleteBucket(5); err != nil {
		t.Fatal(err)
	}
	putRef(t, s, "plain", 0)
	if got := skeysOf(t, s, 5, "h"); got != nil {
		t.Fatalf("skeys after DeleteBucket: %q", got)
	}
	rec := &engines.Record{Area: 0, Key: []byte("h"), Prefix: []engines.KV{{Key: []byte("f2"), Entry: engines.Entry{Value: []byte("v"), Version: 1}}}}
	if err := s.Restore(5, rec); err != nil {
		t.Fatal(err)
	}
	if got := skeysOf(t, s, 5, "h"); len(got) != 1 || got[0] != "f2" {
		t.Fatalf("skeys after Restore: %q", got)
	}
}

// TestPrefixProbeRacesWrites: probes running while prefix records are
// written never miss a record whose write returned before the probe began.
func TestPrefixProbeRacesWrites(t *testing.T) {
	for round := 0; round < 50; round++ {
		s, _, _ := newTestStore(t)
		putRef(t, s, "plain", 0) // the pair exists, its prefix state unknown
		var written atomic.Int64 // pkeys p0..p(written-1) are stored
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				putSkey(t, s, 5, fmt.Sprint("p", i), "f")
				written.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				n := written.Load()
				// A pkey never written: probes the pair while it is unknown.
				if got := skeysOf(t, s, 5, "absent"); got != nil {
					t.Errorf("round %d: absent pkey has %q", round, got)
					return
				}
				for i := int64(0); i < n; i++ {
					if got := skeysOf(t, s, 5, fmt.Sprint("p", i)); len(got) != 1 {
						t.Errorf("round %d: p%d written but its probe found %q", round, i, got)
						return
					}
				}
			}
		}()
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}
