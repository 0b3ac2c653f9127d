package enginetest

import (
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// RunPersistence checks that a persistent engine keeps everything it
// acknowledged across Close and reopen: every kind of record with its
// version, expiry, flags and hidden bit, deletions, bucket and area
// deletions, counts, and that expiry keeps following the clock after the
// restart. open is called several times with the same Options (o.Dir is a
// fresh t.TempDir()); it must open the engine over the data that Dir holds.
// An engine on an in-memory file system can key its FS by o.Dir.
func RunPersistence(t *testing.T, open OpenFunc) {
	clk := NewClock()
	o := engines.Options{Now: clk.Now, Dir: t.TempDir(), Sync: engines.SyncAlways}
	o.Adjust()
	e := open(t, o)
	if !e.Persistent() {
		t.Fatalf("%s: Persistent() is false", e.Name())
	}
	now := clk.Now()
	populate(t, e, now, 0, 7, "")
	populate(t, e, now, 3, 7, "a3:")
	populate(t, e, now, 0, 8, "b8:")
	populate(t, e, now, 9, 8, "gone:")
	// Deletions of every kind must persist too.
	if _, err := e.Put(engines.Key{Bucket: 7, Key: []byte("removed")}, []byte("x"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, e.Remove(engines.Key{Bucket: 7, Key: []byte("removed")}, 0))
	if _, err := e.PrefixRemoveAll(engines.Key{Bucket: 8, Key: []byte("b8:pk")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ItemGetDelete(engines.Key{Bucket: 8, Key: []byte("b8:items")}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := e.DeleteArea(9); err != nil || n != 9 {
		t.Fatalf("DeleteArea(9) = %d %v", n, err)
	}
	d7, d8 := dump(t, e, 7), dump(t, e, 8)
	counts := map[uint16]int64{0: e.Count(0), 3: e.Count(3), 9: e.Count(9)}
	// CountKeys' counters (hidden and expiring keys, TTLs) survive too.
	buckets := []uint32{7, 8}
	CheckKeyCounts(t, e, buckets, clk.NowMs())
	keyCounts := keyCountsString(countKeys(t, e, buckets))
	if counts[9] != 0 {
		t.Fatalf("Count(9) = %d after DeleteArea", counts[9])
	}
	must(t, e.Close())

	check := func(e engines.Engine, round int) {
		t.Helper()
		if got := dump(t, e, 7); strings.Join(got, "\n") != strings.Join(d7, "\n") {
			t.Fatalf("reopen %d: bucket 7:\n%s\nwant:\n%s", round, strings.Join(got, "\n"), strings.Join(d7, "\n"))
		}
		if got := dump(t, e, 8); strings.Join(got, "\n") != strings.Join(d8, "\n") {
			t.Fatalf("reopen %d: bucket 8:\n%s\nwant:\n%s", round, strings.Join(got, "\n"), strings.Join(d8, "\n"))
		}
		for a, n := range counts {
			if got := e.Count(a); got != n {
				t.Fatalf("reopen %d: Count(%d) = %d, want %d", round, a, got, n)
			}
		}
		if got := keyCountsString(countKeys(t, e, buckets)); got != keyCounts {
			t.Fatalf("reopen %d: CountKeys:%s\nwant:%s", round, got, keyCounts)
		}
		CheckKeyCounts(t, e, buckets, clk.NowMs())
	}
	e = open(t, o)
	check(e, 1)
	// Versions continue where they were.
	if v, err := e.Put(engines.Key{Bucket: 7, Key: []byte("s")}, []byte("next"), engines.PutOptions{Version: 3}); err != nil || v != 4 {
		t.Fatalf("put after reopen = v%d %v, want v4", v, err)
	}
	if _, err := e.Put(engines.Key{Bucket: 7, Key: []byte("s")}, []byte("x"), engines.PutOptions{Version: 3}); errs.CodeOf(err) != errs.VersionError {
		t.Fatalf("stale version after reopen: %v", err)
	}
	must(t, e.DeleteBucket(8))
	d7 = dump(t, e, 7)
	d8 = nil
	counts = map[uint16]int64{0: e.Count(0), 3: e.Count(3), 9: 0}
	keyCounts = keyCountsString(countKeys(t, e, buckets))
	must(t, e.Close())

	e = open(t, o)
	check(e, 2)
	// Expiry follows the clock after a restart: "gone" and "pexp" (1 s) and
	// "exp" (100 s) go.
	clk.Advance(101 * time.Second)
	if _, err := e.Get(engines.Key{Bucket: 7, Key: []byte("exp")}); errs.CodeOf(err) != errs.DataNotExist {
		t.Fatalf("expired key after reopen: %v", err)
	}
	if got, want := e.Count(0), counts[0]-3; got != want {
		t.Fatalf("Count(0) after expiry = %d, want %d", got, want)
	}
	must(t, e.Close())
	e = open(t, o)
	t.Cleanup(func() { _ = e.Close() })
	if _, err := e.Get(engines.Key{Bucket: 7, Key: []byte("exp")}); errs.CodeOf(err) != errs.DataNotExist {
		t.Fatalf("expired key came back after reopen: %v", err)
	}
	if n := len(dump(t, e, 7)); n != len(d7)-6 { // three keys in areas 0 and 3
		t.Fatalf("bucket 7 has %d records after expiry, want %d", n, len(d7)-6)
	}
	CheckKeyCounts(t, e, buckets, clk.NowMs())
}
