package sortedkv

import (
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/generic"
)

// TestLegacyCountersCompleted: a counters record of the first release
// (keys and bytes, 16 bytes) is completed at open from one walk of its
// pair's plain records, and written back whole, so that CountKeys is
// exact and the next open reads it without a walk.
func TestLegacyCountersCompleted(t *testing.T) {
	be, clk := newMemBackend(), &clock{ms: 1000}
	s, err := New(be, Options{Now: clk.now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, skey []byte, e engines.Entry) {
		t.Helper()
		r := generic.Ref{Key: engines.Key{Bucket: 5, Area: 2, Key: []byte(key)}, Prefix: skey != nil, Skey: skey}
		e.Value, e.Version = []byte("v"), 1
		if err := s.Update(r, func(engines.Entry, bool) (engines.Entry, engines.Action, error) { return e, engines.Store, nil }); err != nil {
			t.Fatal(err)
		}
	}
	put("plain", nil, engines.Entry{})
	put("exp1", nil, engines.Entry{ExpireAt: 4000})
	put("exp2", nil, engines.Entry{ExpireAt: 9000})
	put("hidden", nil, engines.Entry{Hidden: true, ExpireAt: 7000})
	put("pk", []byte("s"), engines.Entry{Hidden: true, ExpireAt: 8000})
	counts := func(s *Store) engines.KeyCounts {
		var got engines.KeyCounts
		s.CountKeys([]uint32{5}, func(area uint16, c engines.KeyCounts) {
			if area == 2 {
				got = c
			}
		})
		return got
	}
	want := engines.KeyCounts{Keys: 4, Hidden: 1, Expires: 2, TTL: 3000 + 8000}
	if got := counts(s); got != want {
		t.Fatalf("CountKeys = %+v, want %+v", got, want)
	}
	s.Close()

	// Rewrite the record as the first release wrote it.
	ck := countersKey(5, 2)
	v, _, _ := be.Get(ck)
	c, complete := DecodeCounts(v)
	if !complete || c.Hidden != 1 || c.Expires != 2 || c.ExpireSum != 13000 {
		t.Fatalf("persisted counters %+v (complete %v)", c, complete)
	}
	be.t.ReplaceOrInsert(kv{ck, EncodeLegacyCounters(c.Keys, c.Bytes)})

	s, err = New(be, Options{Now: clk.now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := counts(s); got != want {
		t.Fatalf("CountKeys after a legacy record = %+v, want %+v", got, want)
	}
	v, _, _ = be.Get(ck)
	if got, complete := DecodeCounts(v); !complete || got != c {
		t.Fatalf("the record after open: %+v (complete %v), want %+v written whole", got, complete, c)
	}
}
