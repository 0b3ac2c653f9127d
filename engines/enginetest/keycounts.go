package enginetest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// Engine.CountKeys reads counters the engine keeps per (bucket, area); the
// invariant checked here is that they always equal what a walk of the
// records (ForEach) finds, as DBSIZE and INFO keyspace counted before
// there were counters: a plain key that is not hidden counts, with its
// expiry; a pkey counts once and never expires; hidden plain keys count
// apart.

// recountKeys is CountKeys recomputed from ForEach at nowMs, by area.
func recountKeys(t testing.TB, e engines.Engine, buckets []uint32, nowMs int64) map[uint16]engines.KeyCounts {
	t.Helper()
	out := map[uint16]engines.KeyCounts{}
	for _, b := range buckets {
		must(t, e.ForEach(b, func(r *engines.Record) error {
			c := out[r.Area]
			switch {
			case r.Prefix != nil:
				c.Keys++
			case r.Entry.Hidden:
				c.Hidden++
			default:
				c.Keys++
				if at := r.Entry.ExpireAt; at != 0 {
					c.Expires++
					c.TTL += at - nowMs
				}
			}
			out[r.Area] = c
			return nil
		}))
	}
	return out
}

// countKeys returns what CountKeys reports, by area, failing on an area
// reported twice.
func countKeys(t testing.TB, e engines.Engine, buckets []uint32) map[uint16]engines.KeyCounts {
	t.Helper()
	out := map[uint16]engines.KeyCounts{}
	e.CountKeys(buckets, func(area uint16, c engines.KeyCounts) {
		if _, dup := out[area]; dup {
			t.Errorf("CountKeys(%v) reports area %d twice", buckets, area)
		}
		out[area] = c
	})
	return out
}

func keyCountsString(m map[uint16]engines.KeyCounts) string {
	areas := make([]int, 0, len(m))
	for a := range m {
		areas = append(areas, int(a))
	}
	sort.Ints(areas)
	var b strings.Builder
	for _, a := range areas {
		fmt.Fprintf(&b, " a%d%+v", a, m[uint16(a)])
	}
	return b.String()
}

// CheckKeyCounts fails t unless CountKeys agrees with a ForEach walk, for
// each of buckets alone and for all of them at once, at the engine's time
// nowMs (the clock must not move meanwhile). CountKeys goes first: it
// reclaims what has expired, which ForEach only skips.
func CheckKeyCounts(t testing.TB, e engines.Engine, buckets []uint32, nowMs int64) {
	t.Helper()
	sets := [][]uint32{buckets}
	for _, b := range buckets {
		sets = append(sets, []uint32{b})
	}
	for _, set := range sets {
		got := countKeys(t, e, set)
		want := recountKeys(t, e, set, nowMs)
		if g, w := keyCountsString(got), keyCountsString(want); g != w {
			t.Fatalf("CountKeys(%v):%s\nForEach finds:%s", set, g, w)
		}
	}
}

// testKeyCounts drives every path that changes the counts, checking them
// against a walk after each step and against known values at a few.
func testKeyCounts(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	e := f.e
	const b1, b2, b3 = 5, 6, 300
	k := func(b uint32, area uint16, s string) engines.Key {
		return engines.Key{Bucket: b, Area: area, Key: []byte(s)}
	}
	buckets := []uint32{b1, b2, b3}
	check := func(step string) {
		t.Helper()
		t.Logf("step %s", step)
		CheckKeyCounts(t, e, buckets, f.clk.NowMs())
	}
	want := func(b uint32, area uint16, c engines.KeyCounts) {
		t.Helper()
		got := countKeys(t, e, []uint32{b})[area]
		if got != c {
			t.Fatalf("bucket %d area %d: CountKeys %+v, want %+v", b, area, got, c)
		}
	}
	now := f.clk.NowMs()
	at := func(ms int64) engines.Expire { return engines.Expire{Mode: engines.ExpireAt, At: now + ms} }

	// New keys, with and without expiry, and an overwrite of each kind.
	f.put(k(b1, 0, "a"), "1", engines.PutOptions{})
	f.put(k(b1, 0, "b"), "1", engines.PutOptions{Expire: at(10_000)})
	f.put(k(b1, 0, "c"), "1", engines.PutOptions{Expire: at(20_000)})
	f.put(k(b2, 1, "d"), "1", engines.PutOptions{})
	check("new keys")
	want(b1, 0, engines.KeyCounts{Keys: 3, Expires: 2, TTL: 30_000})
	f.put(k(b1, 0, "a"), "2", engines.PutOptions{Expire: at(5_000)})                                // TTL set
	f.put(k(b1, 0, "b"), "2", engines.PutOptions{})                                                 // TTL cleared
	f.put(k(b1, 0, "c"), "2", engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireKeep}}) // kept
	check("overwrites")
	want(b1, 0, engines.KeyCounts{Keys: 3, Expires: 2, TTL: 25_000})
	f.put(k(b1, 0, "c"), "3", engines.PutOptions{Expire: at(30_000)}) // another TTL
	check("TTL changed")
	want(b1, 0, engines.KeyCounts{Keys: 3, Expires: 2, TTL: 35_000})
	f.put(k(b1, 0, "c"), "4", engines.PutOptions{Expire: at(20_000)})
	// NX on an existing key, and a version mismatch, change nothing.
	if v, err := e.Put(k(b1, 0, "a"), []byte("x"), engines.PutOptions{Cond: engines.CondIfMissing}); err != nil || v != 0 {
		t.Fatalf("NX put = %d %v", v, err)
	}
	_, err := e.Put(k(b1, 0, "a"), []byte("x"), engines.PutOptions{Version: 99, Expire: at(1)})
	wantCode(t, err, errs.VersionError)
	check("refused writes")

	// Hide and unhide; a put unhides.
	must(t, e.SetHidden(k(b1, 0, "a"), true))
	must(t, e.SetHidden(k(b1, 0, "b"), true))
	check("hide")
	want(b1, 0, engines.KeyCounts{Keys: 1, Hidden: 2, Expires: 1, TTL: 20_000})
	must(t, e.SetHidden(k(b1, 0, "a"), false))
	f.put(k(b1, 0, "b"), "3", engines.PutOptions{Expire: at(7_000)})
	check("unhide")
	want(b1, 0, engines.KeyCounts{Keys: 3, Expires: 3, TTL: 32_000})

	// Read-modify-writes: incr, items, Update changing expiry and hiding.
	if _, _, err := e.Incr(k(b2, 1, "n"), 1, engines.IncrOptions{Expire: at(3_000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ItemAdd(k(b2, 1, "items"), 5, bs("x", "y"), engines.PutOptions{Expire: at(4_000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ItemDelete(k(b2, 1, "items"), 0, 2); err != nil { // the last items: the key goes
		t.Fatal(err)
	}
	storeObject(t, e, k(b2, 1, "obj"), "o1")
	if _, err := e.Update(k(b2, 1, "obj"), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		cur.ExpireAt, cur.Hidden = now+9_000, true
		return cur, engines.Store, nil
	}); err != nil {
		t.Fatal(err)
	}
	check("read-modify-writes")
	want(b2, 1, engines.KeyCounts{Keys: 2, Hidden: 1, Expires: 1, TTL: 3_000})
	if _, err := e.Update(k(b2, 1, "obj"), func(engines.Entry, bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{}, engines.Delete, nil
	}); err != nil {
		t.Fatal(err)
	}
	must(t, e.Remove(k(b2, 1, "d"), 0))
	check("deletes")
	want(b2, 1, engines.KeyCounts{Keys: 1, Expires: 1, TTL: 3_000})

	// Prefix records: a pkey counts once, whatever its skeys' hiding and
	// expiry, until its last skey goes.
	pk := k(b3, 0, "pk")
	for i, o := range []engines.PutOptions{{}, {Expire: at(1_000)}, {Expire: at(60_000)}} {
		if _, err := e.PrefixPut(pk, []byte(fmt.Sprint("s", i)), []byte("v"), o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.PrefixUpdate(pk, []byte("s0"), func(cur engines.Entry, _ bool) (engines.Entry, engines.Action, error) {
		cur.Hidden = true
		return cur, engines.Store, nil
	}); err != nil {
		t.Fatal(err)
	}
	check("prefix")
	want(b3, 0, engines.KeyCounts{Keys: 1})
	must(t, e.PrefixRemove(pk, []byte("s0"), 0))
	check("skey removed")
	want(b3, 0, engines.KeyCounts{Keys: 1})

	// Restore replaces a key with another hiding and expiry, and a pkey
	// with other skeys.
	must(t, e.Restore(b1, &engines.Record{Area: 0, Key: []byte("a"), Entry: engines.Entry{Value: []byte("r"), Version: 4, Hidden: true}}))
	must(t, e.Restore(b1, &engines.Record{Area: 0, Key: []byte("new"), Entry: engines.Entry{Value: []byte("r"), Version: 1, ExpireAt: now + 50_000}}))
	must(t, e.Restore(b3, &engines.Record{Area: 0, Key: []byte("pk"), Prefix: []engines.KV{{Key: []byte("z"), Entry: engines.Entry{Value: []byte("z"), Version: 1}}}}))
	check("restore")
	want(b1, 0, engines.KeyCounts{Keys: 3, Hidden: 1, Expires: 3, TTL: 77_000})

	// Expiry: time passes over some keys; CountKeys reclaims them, and
	// the TTLs left shrink with the clock.
	f.clk.Advance(5_500 * time.Millisecond)
	check("expiry")
	want(b1, 0, engines.KeyCounts{Keys: 3, Hidden: 1, Expires: 3, TTL: (7_000 + 20_000 + 50_000) - 3*5_500})
	want(b2, 1, engines.KeyCounts{}) // n (3 s) expired
	f.clk.Advance(time.Minute)
	check("all expired")
	want(b1, 0, engines.KeyCounts{Hidden: 1})
	want(b2, 1, engines.KeyCounts{})

	// A bucket moved out (ForEach, DeleteBucket) and back in (Restore).
	for i := 0; i < 20; i++ {
		o := engines.PutOptions{}
		if i%3 == 0 {
			o.Expire = engines.Expire{Mode: engines.ExpireAt, At: f.clk.NowMs() + int64(i+1)*1000}
		}
		f.put(k(b2, uint16(i%2), fmt.Sprint("m", i)), "v", o)
		if i%5 == 0 {
			must(t, e.SetHidden(k(b2, uint16(i%2), fmt.Sprint("m", i)), true))
		}
	}
	check("bucket filled")
	var recs []*engines.Record
	must(t, e.ForEach(b2, func(r *engines.Record) error {
		c := *r
		c.Key = append([]byte(nil), r.Key...)
		c.Prefix = append([]engines.KV(nil), r.Prefix...)
		recs = append(recs, &c)
		return nil
	}))
	before := countKeys(t, e, []uint32{b2})
	must(t, e.DeleteBucket(b2))
	check("bucket deleted")
	if got := countKeys(t, e, []uint32{b2}); len(got) != 0 {
		t.Fatalf("CountKeys of a deleted bucket:%s", keyCountsString(got))
	}
	for _, r := range recs {
		must(t, e.Restore(b2, r))
	}
	check("bucket restored")
	if got := countKeys(t, e, []uint32{b2}); keyCountsString(got) != keyCountsString(before) {
		t.Fatalf("CountKeys after the move back:%s\nbefore:%s", keyCountsString(got), keyCountsString(before))
	}

	// An area deleted (FLUSHDB) in every bucket; the other stays.
	if _, err := e.DeleteArea(1); err != nil {
		t.Fatal(err)
	}
	check("area deleted")
	if got := countKeys(t, e, buckets); got[1] != (engines.KeyCounts{}) || got[0].Keys == 0 {
		t.Fatalf("after DeleteArea(1):%s", keyCountsString(got))
	}

	// A quota: in-memory engines evict, persistent ones refuse; the
	// counts follow either way.
	const qa = 7
	e.SetQuota(qa, 4096)
	for i := 0; i < 200; i++ {
		o := engines.PutOptions{}
		if i%4 == 0 {
			o.Expire = engines.Expire{Mode: engines.ExpireAt, At: f.clk.NowMs() + 100_000}
		}
		b := buckets[i%len(buckets)]
		if _, err := e.Put(k(b, qa, fmt.Sprint("q", i)), []byte(strings.Repeat("v", 64)), o); err != nil {
			wantCode(t, err, errs.Quota)
			continue
		}
		if i%7 == 0 {
			must(t, e.SetHidden(k(b, qa, fmt.Sprint("q", i)), true))
		}
	}
	check("quota")
	if s := e.Stats(qa); !e.Persistent() && s.Evictions == 0 {
		t.Fatalf("no eviction under a 4 KiB quota: %+v", s)
	}
}
