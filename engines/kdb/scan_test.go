package kdb

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/ldb/sortedkv"
)

func openStore(t *testing.T, sync engines.SyncPolicy) *store {
	s, err := openBolt(engines.Options{Dir: t.TempDir(), Sync: sync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestScanMatchesSortedKeys checks the cross-bucket Scan and DeleteRange
// against a sorted slice, on bounds inside, between and around bbolt
// buckets, in both directions.
func TestScanMatchesSortedKeys(t *testing.T) {
	s := openStore(t, engines.SyncNone)
	r := rand.New(rand.NewPCG(3, 4))
	var keys []string
	var b sortedkv.Batch
	for i := 0; i < 400; i++ {
		k := []byte{0, 0, 0, byte(r.IntN(6)), byte(r.IntN(3)), byte(r.IntN(256))}
		if i%40 == 0 {
			k[0], k[1], k[2], k[3] = 0xff, 0xff, 0xff, 0xff
		}
		b.Set(k, []byte(fmt.Sprint(i)))
		keys = append(keys, string(k))
	}
	if err := s.Commit(&b); err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	keys = dedup(keys)

	bound := func() []byte {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			if len(keys) > 0 {
				return []byte(keys[r.IntN(len(keys))])
			}
			fallthrough
		default:
			n := 1 + r.IntN(6)
			k := make([]byte, n)
			for i := range k {
				k[i] = []byte{0, 1, 3, 5, 6, 0x80, 0xff}[r.IntN(7)]
			}
			if n <= 3 {
				k[0] = 0
			}
			return k
		}
	}
	for i := 0; i < 2000; i++ {
		lo, hi := bound(), bound()
		rev := r.IntN(2) == 0
		var want []string
		for _, k := range keys {
			if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
				want = append(want, k)
			}
		}
		if rev {
			for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
				want[i], want[j] = want[j], want[i]
			}
		}
		limit := len(want)
		if r.IntN(3) == 0 && limit > 0 {
			limit = 1 + r.IntN(limit)
		}
		var got []string
		err := s.Scan(lo, hi, rev, func(k, _ []byte) bool {
			got = append(got, string(k))
			return len(got) < limit
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[:limit]) {
			t.Fatalf("Scan(%x, %x, rev %v) = %x\nwant %x", lo, hi, rev, got, want[:limit])
		}
	}

	// DeleteRange over partial and whole buckets.
	for i := 0; i < 20; i++ {
		lo, hi := bound(), bound()
		if lo == nil || (hi != nil && bytes.Compare(lo, hi) >= 0) {
			continue
		}
		var d sortedkv.Batch
		d.DeleteRange(lo, hi)
		if err := s.Commit(&d); err != nil {
			t.Fatal(err)
		}
		kept := keys[:0]
		for _, k := range keys {
			if !(k >= string(lo) && (hi == nil || k < string(hi))) {
				kept = append(kept, k)
			}
		}
		keys = kept
		var got []string
		if err := s.Scan(nil, nil, false, func(k, _ []byte) bool { got = append(got, string(k)); return true }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(keys) {
			t.Fatalf("after DeleteRange(%x, %x): %x\nwant %x", lo, hi, got, keys)
		}
	}
}

func dedup(s []string) []string {
	out := s[:0]
	for i, k := range s {
		if i == 0 || k != s[i-1] {
			out = append(out, k)
		}
	}
	return out
}

// TestGroupCommit runs concurrent writers through the group-commit queue
// and checks that every write and every counter delta landed once.
func TestGroupCommit(t *testing.T) {
	s := openStore(t, engines.SyncGroup)
	const writers, each = 16, 40
	ck := []byte{0, 0, 0, 1, 0, 0, 0}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				var b sortedkv.Batch
				b.Set([]byte(fmt.Sprintf("\x00\x00\x00\x01\x00\x00\x02w%02di%03d", w, i)), []byte("v"))
				b.Counters = append(b.Counters, sortedkv.CounterDelta{Key: ck, Keys: 1, Bytes: 10})
				if err := s.Commit(&b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	if err := s.Scan([]byte{0, 0, 0, 1, 0, 0, 2}, nil, false, func(_, _ []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	v, ok, err := s.Get(ck)
	keys, nbytes := sortedkv.DecodeCounters(v)
	if n != writers*each || !ok || err != nil || keys != writers*each || nbytes != 10*writers*each {
		t.Fatalf("%d records, counters %d/%d (%v %v); want %d", n, keys, nbytes, ok, err, writers*each)
	}
}

// TestLongestKey stores the longest key kdb accepts, as a pkey+skey with an
// expiry (the longest bbolt key it then writes is the expiry index entry),
// and refuses to open with a larger limit.
func TestLongestKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(engines.Options{Dir: dir, MaxKeySize: maxUserKey + 1}); err == nil {
		t.Fatal("Open accepted a MaxKeySize bbolt cannot store")
	}
	e, err := Open(engines.Options{Dir: dir, MaxKeySize: maxUserKey, Sync: engines.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	pk := engines.Key{Bucket: 1, Key: bytes.Repeat([]byte("p"), maxUserKey-10)}
	skey := bytes.Repeat([]byte("s"), 10)
	exp := engines.Expire{Mode: engines.ExpireAt, At: 1 << 50}
	if _, err := e.PrefixPut(pk, skey, []byte("v"), engines.PutOptions{Expire: exp}); err != nil {
		t.Fatalf("PrefixPut of a %d-byte pkey+skey: %v", maxUserKey, err)
	}
	plain := engines.Key{Bucket: 1, Key: bytes.Repeat([]byte("k"), maxUserKey)}
	if _, err := e.Put(plain, []byte("v"), engines.PutOptions{Expire: exp}); err != nil {
		t.Fatalf("Put of a %d-byte key: %v", maxUserKey, err)
	}
}
