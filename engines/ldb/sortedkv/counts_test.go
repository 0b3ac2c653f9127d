package sortedkv

import (
	"math"
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

// TestCountsEncoding: a record decodes to what was encoded, whatever the
// values, and is never 16 bytes long, the length that marks a
// first-release record.
func TestCountsEncoding(t *testing.T) {
	vals := []int64{0, 1, -1, 63, -64, 64, 1 << 20, -(1 << 35), 1 << 50, 1_764_000_000_000, math.MaxInt64, math.MinInt64}
	padded := 0
	for i, a := range vals {
		for j, b := range vals {
			c := Counts{Keys: a, Bytes: b, Hidden: vals[(i+j)%len(vals)], Expires: vals[(i*j)%len(vals)], ExpireSum: vals[(i+2*j)%len(vals)]}
			v := c.Encode()
			if len(v) == legacyCountersLen {
				t.Fatalf("%+v encodes to %d bytes, a first-release record's length", c, len(v))
			}
			if len(v) == legacyCountersLen+1 && v[len(v)-1] == 0 {
				padded++
			}
			if got, complete := DecodeCounts(v); !complete || got != c {
				t.Fatalf("%+v encodes to %x, which decodes to %+v (complete %v)", c, v, got, complete)
			}
		}
	}
	if padded == 0 {
		t.Fatal("no value set needed the pad: the case is not covered")
	}
	if c, complete := DecodeCounts(EncodeLegacyCounters(7, 700)); complete || c != (Counts{Keys: 7, Bytes: 700}) {
		t.Fatalf("a first-release record decodes to %+v (complete %v)", c, complete)
	}
	for _, bad := range [][]byte{nil, {countersFormat}, {countersFormat, 2, 2, 2, 2}, {countersFormat, 0, 0, 0, 0, 0, 1}, {1, 0, 0, 0, 0, 0}} {
		if c, complete := DecodeCounts(bad); complete || c != (Counts{}) {
			t.Fatalf("malformed %x decodes to %+v (complete %v)", bad, c, complete)
		}
	}
}
