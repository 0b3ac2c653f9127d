package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// Run runs the conformance cases against engines made by open.
func Run(t *testing.T, open OpenFunc) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open OpenFunc)
	}{
		{"PutGet", testPutGet},
		{"VersionRules", testVersionRules},
		{"Remove", testRemove},
		{"TairExpire", testTairExpire},
		{"ExpiryBoundary", testExpiryBoundary},
		{"Cond", testCond},
		{"Flags", testFlags},
		{"Incr", testIncr},
		{"IncrBounds", testIncrBounds},
		{"Hidden", testHidden},
		{"Update", testUpdate},
		{"Objects", testObjects},
		{"Limits", testLimits},
		{"Areas", testAreas},
		{"MultiGet", testMultiGet},
		{"Prefix", testPrefix},
		{"PrefixRange", testPrefixRange},
		{"PrefixExpiry", testPrefixExpiry},
		{"Items", testItems},
		{"ItemWindows", testItemWindows},
		{"ItemErrors", testItemErrors},
		{"ForEachRestore", testForEachRestore},
		{"DeleteBucket", testDeleteBucket},
		{"DeleteArea", testDeleteArea},
		{"Count", testCount},
		{"Stats", testStats},
		{"Compact", testCompact},
		{"Close", testClose},
		{"Concurrency", testConcurrency},
		{"Quota", testQuota},
		{"PrefixHidden", testPrefixHidden},
		{"NotSupported", testNotSupported},
		{"InvalidOptions", testInvalidOptions},
		{"RestoreSkeyOrder", testRestoreSkeyOrder},
		{"RestoreMerge", testRestoreMerge},
		{"Snapshot", testSnapshot},
		{"KeyCounts", testKeyCounts},
		{"BucketKeys", testBucketKeys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

func testPutGet(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	f.wantMissing(K("a"))
	if v := f.put(K("a"), "1", engines.PutOptions{}); v != 1 {
		t.Fatalf("first put version %d, want 1", v)
	}
	e := f.wantGet(K("a"), "1", 1)
	if e.Type != engines.TypeString || e.ExpireAt != 0 || e.Hidden || e.Flags != 0 || e.Object != nil {
		t.Fatalf("entry %+v, want a plain string", e)
	}
	if v := f.put(K("a"), "22", engines.PutOptions{}); v != 2 {
		t.Fatalf("second put version %d, want 2", v)
	}
	f.wantGet(K("a"), "22", 2)
	// An empty value is a value.
	f.put(K("empty"), "", engines.PutOptions{})
	f.wantGet(K("empty"), "", 1)
	// The engine must copy the caller's buffer.
	buf := []byte("abc")
	if _, err := f.e.Put(K("buf"), buf, engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "xyz")
	f.wantGet(K("buf"), "abc", 1)
	// Binary keys and values.
	bk := engines.Key{Bucket: 7, Key: []byte{0, 0xff, '\r', '\n'}}
	if _, err := f.e.Put(bk, []byte{0, 1, 2}, engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, err := f.e.Get(bk); err != nil || !bytes.Equal(e.Value, []byte{0, 1, 2}) {
		t.Fatalf("binary get = %q, %v", e.Value, err)
	}
	f.wantCount(0, 4)
}

func testVersionRules(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	k := K("v")
	// Rule 1 and the lock idiom: a missing key takes any version, starts at 1.
	if v := f.put(k, "a", engines.PutOptions{Version: 77}); v != 1 {
		t.Fatalf("put of missing key with version 77: v%d, want 1", v)
	}
	// Rule 2: the current version succeeds and adds 1.
	if v := f.put(k, "b", engines.PutOptions{Version: 1}); v != 2 {
		t.Fatalf("put with current version: v%d, want 2", v)
	}
	// Rule 3: another non-zero version fails and changes nothing.
	for _, bad := range []int64{1, 3, 77, -1} {
		_, err := f.e.Put(k, []byte("x"), engines.PutOptions{Version: bad, Expire: engines.Expire{Mode: engines.ExpireAt, At: f.clk.NowMs() + 5000}})
		wantCode(t, err, errs.VersionError)
	}
	e := f.wantGet(k, "b", 2)
	if e.ExpireAt != 0 {
		t.Fatalf("failed put changed expiry to %d", e.ExpireAt)
	}
	// Rule 4: version 0 always succeeds.
	if v := f.put(k, "c", engines.PutOptions{}); v != 3 {
		t.Fatalf("put with version 0: v%d, want 3", v)
	}
	// The lock idiom: the second locker with version 2 fails.
	f.put(K("lock"), "owner1", engines.PutOptions{Version: 2})
	_, err := f.e.Put(K("lock"), []byte("owner2"), engines.PutOptions{Version: 2})
	wantCode(t, err, errs.VersionError)
	f.wantGet(K("lock"), "owner1", 1)
	// A deleted key starts again at 1.
	must(t, f.e.Remove(k, 0))
	if v := f.put(k, "d", engines.PutOptions{Version: 3}); v != 1 {
		t.Fatalf("put after remove: v%d, want 1", v)
	}
}

func testRemove(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	wantCode(t, f.e.Remove(K("none"), 0), errs.DataNotExist)
	wantCode(t, f.e.Remove(K("none"), 5), errs.DataNotExist)
	f.put(K("r"), "1", engines.PutOptions{})
	f.put(K("r"), "2", engines.PutOptions{})
	wantCode(t, f.e.Remove(K("r"), 1), errs.VersionError)
	f.wantGet(K("r"), "2", 2)
	must(t, f.e.Remove(K("r"), 2))
	f.wantMissing(K("r"))
	wantCode(t, f.e.Remove(K("r"), 0), errs.DataNotExist)
	f.put(K("r"), "3", engines.PutOptions{})
	must(t, f.e.Remove(K("r"), 0))
	f.wantMissing(K("r"))
	f.wantCount(0, 0)
	// An expired key is missing to Remove.
	f.put(K("x"), "1", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	f.clk.Advance(1001 * time.Millisecond)
	wantCode(t, f.e.Remove(K("x"), 0), errs.DataNotExist)
}

func testTairExpire(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	now := f.clk.Now()
	k := K("e")
	// Relative: 0 < e < now.
	f.put(k, "1", engines.PutOptions{Expire: engines.TairExpire(10, now)})
	e := f.wantGet(k, "1", 1)
	if want := now.UnixMilli() + 10_000; e.ExpireAt != want {
		t.Fatalf("relative expiry: ExpireAt %d, want %d", e.ExpireAt, want)
	}
	// Keep: e < 0.
	f.put(k, "2", engines.PutOptions{Expire: engines.TairExpire(-1, now)})
	if e := f.wantGet(k, "2", 2); e.ExpireAt != now.UnixMilli()+10_000 {
		t.Fatalf("keep expiry: ExpireAt %d", e.ExpireAt)
	}
	// Absolute: e >= now.
	abs := now.Unix() + 100
	f.put(k, "3", engines.PutOptions{Expire: engines.TairExpire(abs, now)})
	if e := f.wantGet(k, "3", 3); e.ExpireAt != abs*1000 {
		t.Fatalf("absolute expiry: ExpireAt %d, want %d", e.ExpireAt, abs*1000)
	}
	// e == now is absolute too: the key expires at now, still live at now.
	f.put(K("now"), "n", engines.PutOptions{Expire: engines.TairExpire(now.Unix(), now)})
	if e := f.wantGet(K("now"), "n", 1); e.ExpireAt != now.Unix()*1000 {
		t.Fatalf("e == now: ExpireAt %d", e.ExpireAt)
	}
	// Never: 0 clears an existing expiry.
	f.put(k, "4", engines.PutOptions{Expire: engines.TairExpire(0, now)})
	if e := f.wantGet(k, "4", 4); e.ExpireAt != 0 {
		t.Fatalf("expire 0 kept ExpireAt %d", e.ExpireAt)
	}
	// Keep on a missing key means no expiry.
	f.put(K("k2"), "x", engines.PutOptions{Expire: engines.TairExpire(-5, now)})
	if e := f.wantGet(K("k2"), "x", 1); e.ExpireAt != 0 {
		t.Fatalf("keep on missing key: ExpireAt %d", e.ExpireAt)
	}
	// An expired key is missing, and a put recreates it at version 1.
	f.put(k, "5", engines.PutOptions{Expire: engines.TairExpire(2, now)})
	f.clk.Advance(2*time.Second + time.Millisecond)
	f.wantMissing(k)
	if v := f.put(k, "6", engines.PutOptions{Version: 9}); v != 1 {
		t.Fatalf("put over expired key: v%d, want 1", v)
	}
	f.wantGet(k, "6", 1)
	// Keep on an expired key starts without expiry.
	f.put(K("k3"), "x", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	f.clk.Advance(1001 * time.Millisecond)
	f.put(K("k3"), "y", engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireKeep}})
	if e := f.wantGet(K("k3"), "y", 1); e.ExpireAt != 0 {
		t.Fatalf("keep over expired key: ExpireAt %d", e.ExpireAt)
	}
}

func testExpiryBoundary(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	at := f.clk.NowMs() + 1500
	f.put(K("b"), "v", engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireAt, At: at}})
	f.clk.Advance(1500 * time.Millisecond) // now == at: still live
	f.wantGet(K("b"), "v", 1)
	f.wantCount(0, 1)
	f.clk.Advance(time.Millisecond)
	f.wantMissing(K("b"))
	f.wantCount(0, 0)
	// A put with an expiry already past stores a key that reads as missing.
	f.put(K("past"), "v", engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireAt, At: f.clk.NowMs() - 1}})
	f.wantMissing(K("past"))
	f.wantCount(0, 0)
}

func testCond(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	nx := engines.PutOptions{Cond: engines.CondIfMissing}
	xx := engines.PutOptions{Cond: engines.CondIfExists}
	if v := f.put(K("c"), "x", xx); v != 0 {
		t.Fatalf("XX on missing key: v%d, want 0", v)
	}
	f.wantMissing(K("c"))
	if v := f.put(K("c"), "1", nx); v != 1 {
		t.Fatalf("NX on missing key: v%d, want 1", v)
	}
	if v := f.put(K("c"), "2", nx); v != 0 {
		t.Fatalf("NX on existing key: v%d, want 0", v)
	}
	f.wantGet(K("c"), "1", 1)
	// The condition is checked before the version.
	if v := f.put(K("c"), "3", engines.PutOptions{Cond: engines.CondIfMissing, Version: 99}); v != 0 {
		t.Fatalf("NX with bad version on existing key: v%d, want 0", v)
	}
	if v := f.put(K("c"), "4", xx); v != 2 {
		t.Fatalf("XX on existing key: v%d, want 2", v)
	}
	_, err := f.e.Put(K("c"), []byte("5"), engines.PutOptions{Cond: engines.CondIfExists, Version: 1})
	wantCode(t, err, errs.VersionError)
	f.wantGet(K("c"), "4", 2)
	// An expired key is missing to NX and XX.
	f.put(K("c"), "5", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	f.clk.Advance(1001 * time.Millisecond)
	if v := f.put(K("c"), "6", xx); v != 0 {
		t.Fatalf("XX on expired key: v%d, want 0", v)
	}
	if v := f.put(K("c"), "7", nx); v != 1 {
		t.Fatalf("NX on expired key: v%d, want 1", v)
	}
	f.wantGet(K("c"), "7", 1)
}

func testFlags(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	f.put(K("f"), "v", engines.PutOptions{Flags: 0xdeadbeef})
	if e := f.wantGet(K("f"), "v", 1); e.Flags != 0xdeadbeef {
		t.Fatalf("flags %#x", e.Flags)
	}
	// A put replaces the flags.
	f.put(K("f"), "w", engines.PutOptions{})
	if e := f.wantGet(K("f"), "w", 2); e.Flags != 0 {
		t.Fatalf("flags %#x after put without flags", e.Flags)
	}
	// Incr keeps them.
	f.put(K("n"), "1", engines.PutOptions{Flags: 3})
	if _, _, err := f.e.Incr(K("n"), 1, engines.IncrOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := f.wantGet(K("n"), "2", 2); e.Flags != 3 {
		t.Fatalf("flags %d after incr", e.Flags)
	}
}

func (f *fixture) incr(k engines.Key, d int64, o engines.IncrOptions, wantV, wantVer int64) {
	f.t.Helper()
	v, ver, err := f.e.Incr(k, d, o)
	if err != nil || v != wantV || ver != wantVer {
		f.t.Fatalf("Incr(%q, %d) = %d v%d %v, want %d v%d", k.Key, d, v, ver, err, wantV, wantVer)
	}
}

func testIncr(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	f.incr(K("n"), 5, engines.IncrOptions{}, 5, 1)
	f.incr(K("n"), -7, engines.IncrOptions{}, -2, 2)
	f.wantGet(K("n"), "-2", 2)
	f.incr(K("i"), 1, engines.IncrOptions{Init: 100}, 101, 1)
	f.incr(K("i"), 1, engines.IncrOptions{Init: 100}, 102, 2) // Init only for a missing key
	// Values that Redis does not take as integers.
	for _, bad := range []string{"", "a", " 1", "1 ", "+1", "01", "-0", "1.5", "9223372036854775808", "0x10"} {
		f.put(K("bad"), bad, engines.PutOptions{})
		_, _, err := f.e.Incr(K("bad"), 1, engines.IncrOptions{})
		wantCode(t, err, errs.InvalidArgument)
	}
	f.put(K("ok"), "-9223372036854775808", engines.PutOptions{})
	f.incr(K("ok"), 1, engines.IncrOptions{}, -9223372036854775807, 2)
	// Overflow in either direction fails with TairString's text, unchanged.
	f.put(K("max"), "9223372036854775807", engines.PutOptions{})
	_, _, err := f.e.Incr(K("max"), 1, engines.IncrOptions{})
	wantCode(t, err, errs.InvalidArgument)
	if !strings.Contains(err.Error(), "increment or decrement would overflow") {
		t.Fatalf("overflow error %q", err)
	}
	f.wantGet(K("max"), "9223372036854775807", 1)
	f.put(K("min"), "-9223372036854775808", engines.PutOptions{})
	_, _, err = f.e.Incr(K("min"), -1, engines.IncrOptions{})
	wantCode(t, err, errs.InvalidArgument)
	_, _, err = f.e.Incr(K("fresh"), -1, engines.IncrOptions{Init: -9223372036854775808})
	wantCode(t, err, errs.InvalidArgument)
	f.wantMissing(K("fresh"))
	// Versions.
	_, _, err = f.e.Incr(K("n"), 1, engines.IncrOptions{Version: 1})
	wantCode(t, err, errs.VersionError)
	f.incr(K("n"), 1, engines.IncrOptions{Version: 2}, -1, 3)
	f.incr(K("newv"), 1, engines.IncrOptions{Version: 42}, 1, 1)
	// Expiry: relative on create, kept on Keep, cleared on Never.
	now := f.clk.Now()
	f.incr(K("t"), 1, engines.IncrOptions{Expire: engines.TairExpire(10, now)}, 1, 1)
	if e := f.wantGet(K("t"), "1", 1); e.ExpireAt != now.UnixMilli()+10_000 {
		t.Fatalf("incr expiry %d", e.ExpireAt)
	}
	f.incr(K("t"), 1, engines.IncrOptions{Expire: engines.Expire{Mode: engines.ExpireKeep}}, 2, 2)
	if e := f.wantGet(K("t"), "2", 2); e.ExpireAt != now.UnixMilli()+10_000 {
		t.Fatalf("incr keep expiry %d", e.ExpireAt)
	}
	f.incr(K("t"), 1, engines.IncrOptions{}, 3, 3)
	if e := f.wantGet(K("t"), "3", 3); e.ExpireAt != 0 {
		t.Fatalf("incr with ExpireNever kept %d", e.ExpireAt)
	}
	// WRONGTYPE on items and objects.
	if _, err := f.e.ItemAdd(K("items"), 5, bs("a"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.e.Incr(K("items"), 1, engines.IncrOptions{})
	wantCode(t, err, errs.TypeNotMatch)
	storeObject(t, f.e, K("obj"), "x")
	_, _, err = f.e.Incr(K("obj"), 1, engines.IncrOptions{})
	wantCode(t, err, errs.TypeNotMatch)
	// An expired counter restarts from Init.
	f.incr(K("exp"), 10, engines.IncrOptions{Expire: engines.TairExpire(1, f.clk.Now())}, 10, 1)
	f.clk.Advance(1001 * time.Millisecond)
	f.incr(K("exp"), 1, engines.IncrOptions{Init: 5}, 6, 1)
}

func testIncrBounds(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	b := engines.IncrOptions{Min: 0, Max: 10, HasMin: true, HasMax: true}
	f.incr(K("c"), 10, b, 10, 1)
	_, _, err := f.e.Incr(K("c"), 1, b)
	wantCode(t, err, errs.CounterOutOfRange)
	f.wantGet(K("c"), "10", 1)
	f.incr(K("c"), -10, b, 0, 2)
	_, _, err = f.e.Incr(K("c"), -1, b)
	wantCode(t, err, errs.CounterOutOfRange)
	f.wantGet(K("c"), "0", 2)
	// A missing key out of range is not created.
	_, _, err = f.e.Incr(K("m"), 1, engines.IncrOptions{Init: 20, Max: 10, HasMax: true})
	wantCode(t, err, errs.CounterOutOfRange)
	f.wantMissing(K("m"))
	// Only the bound that is set applies.
	f.incr(K("lo"), -100, engines.IncrOptions{Max: 0, HasMax: true}, -100, 1)
	f.incr(K("hi"), 100, engines.IncrOptions{Min: 0, HasMin: true}, 100, 1)
	// Bounds are inclusive.
	f.incr(K("eq"), 5, engines.IncrOptions{Min: 5, Max: 5, HasMin: true, HasMax: true}, 5, 1)
}

func testHidden(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	wantCode(t, f.e.SetHidden(K("h"), true), errs.DataNotExist)
	f.put(K("h"), "v", engines.PutOptions{})
	must(t, f.e.SetHidden(K("h"), true))
	e := f.wantGet(K("h"), "v", 1) // hidden records come back, flagged
	if !e.Hidden {
		t.Fatal("record not hidden")
	}
	must(t, f.e.SetHidden(K("h"), true)) // idempotent
	f.wantCount(0, 1)                    // Count is the engine's view: hidden keys exist
	must(t, f.e.SetHidden(K("h"), false))
	if e := f.wantGet(K("h"), "v", 1); e.Hidden {
		t.Fatal("record still hidden")
	}
	// Incr keeps a hidden key hidden; Put unhides it.
	f.put(K("n"), "1", engines.PutOptions{})
	must(t, f.e.SetHidden(K("n"), true))
	f.incr(K("n"), 1, engines.IncrOptions{}, 2, 2)
	if e := f.wantGet(K("n"), "2", 2); !e.Hidden {
		t.Fatal("incr unhid the key")
	}
	f.put(K("n"), "3", engines.PutOptions{})
	if e := f.wantGet(K("n"), "3", 3); e.Hidden {
		t.Fatal("put kept the key hidden")
	}
	// Hiding keeps the expiry; an expired key cannot be hidden.
	f.put(K("x"), "v", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	must(t, f.e.SetHidden(K("x"), true))
	if e := f.wantGet(K("x"), "v", 1); e.ExpireAt != f.clk.NowMs()+1000 {
		t.Fatalf("hide changed expiry to %d", e.ExpireAt)
	}
	f.clk.Advance(1001 * time.Millisecond)
	wantCode(t, f.e.SetHidden(K("x"), false), errs.DataNotExist)
}

// storeObject creates a TestObject under k through Update.
func storeObject(t testing.TB, e engines.Engine, k engines.Key, elems ...string) engines.Entry {
	t.Helper()
	ent, err := e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{Type: TestObjectType, Object: &TestObject{Elems: elems}}, engines.Store, nil
	})
	if err != nil {
		t.Fatalf("storeObject(%q): %v", k.Key, err)
	}
	return ent
}

func testUpdate(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	k := K("u")
	// Create: fn sees a missing record.
	ent, err := f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists || cur.Version != 0 || cur.Value != nil {
			t.Errorf("missing record seen as %+v exists=%v", cur, exists)
		}
		return engines.Entry{Type: engines.TypeString, Value: []byte("1"), Version: 555}, engines.Store, nil
	})
	must(t, err)
	if ent.Version != 1 || string(ent.Value) != "1" {
		t.Fatalf("Update create returned %q v%d; the engine sets the version", ent.Value, ent.Version)
	}
	// Keep returns the current record and changes nothing.
	ent, err = f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if !exists || cur.Version != 1 {
			t.Errorf("existing record seen as %+v exists=%v", cur, exists)
		}
		return engines.Entry{Value: []byte("ignored")}, engines.Keep, nil
	})
	must(t, err)
	if ent.Version != 1 || string(ent.Value) != "1" {
		t.Fatalf("Update keep returned %q v%d", ent.Value, ent.Version)
	}
	// An error changes nothing and comes back as is.
	boom := errors.New("boom")
	_, err = f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{Value: []byte("x")}, engines.Store, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error %v, want boom", err)
	}
	f.wantGet(k, "1", 1)
	// Store adds 1 and keeps what fn set (expiry, flags, hidden).
	at := f.clk.NowMs() + 60_000
	ent, err = f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		cur.Value = append([]byte(nil), "2"...)
		cur.ExpireAt = at
		cur.Flags = 9
		return cur, engines.Store, nil
	})
	must(t, err)
	if ent.Version != 2 {
		t.Fatalf("Update store version %d", ent.Version)
	}
	if e := f.wantGet(k, "2", 2); e.ExpireAt != at || e.Flags != 9 {
		t.Fatalf("Update lost fields: %+v", e)
	}
	// Delete.
	_, err = f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return cur, engines.Delete, nil
	})
	must(t, err)
	f.wantMissing(k)
	f.wantCount(0, 0)
	// Delete of a missing record is a no-op.
	_, err = f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return cur, engines.Delete, nil
	})
	must(t, err)
	f.wantCount(0, 0)
	// An expired record is missing to Update.
	f.put(k, "old", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	f.clk.Advance(1001 * time.Millisecond)
	_, err = f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		if exists {
			t.Errorf("expired record seen: %+v", cur)
		}
		return cur, engines.Keep, nil
	})
	must(t, err)
	// A string over the value limit is refused.
	_, err = f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{Value: make([]byte, 1<<20+1)}, engines.Store, nil
	})
	wantCode(t, err, errs.ValueTooLong)
	f.wantMissing(k)
}

func testObjects(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	k := K("obj")
	if ent := storeObject(t, f.e, k, "a"); ent.Version != 1 || ent.Type != TestObjectType {
		t.Fatalf("object create: %+v", ent)
	}
	// Mutate in place and store: the version moves, the object persists.
	for i, el := range []string{"b", "c"} {
		ent, err := f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			if !exists {
				t.Fatalf("object missing")
			}
			o := cur.Object.(*TestObject)
			o.Elems = append(o.Elems, el)
			return cur, engines.Store, nil
		})
		must(t, err)
		if ent.Version != int64(i+2) {
			t.Fatalf("object version %d, want %d", ent.Version, i+2)
		}
	}
	var got []string
	_, err := f.e.Update(k, func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		got = append(got, objectElems(t, cur)...)
		return cur, engines.Keep, nil
	})
	must(t, err)
	if strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("object elements %v", got)
	}
	if e, err := f.e.Get(k); err != nil || e.Type != TestObjectType || e.Version != 3 {
		t.Fatalf("Get of object: %+v %v", e, err)
	}
	// Items ops on an object are WRONGTYPE; a put replaces it.
	_, err = f.e.ItemAdd(k, 3, bs("x"), engines.PutOptions{})
	wantCode(t, err, errs.TypeNotMatch)
	_, err = f.e.ItemGet(k, 0, 1)
	wantCode(t, err, errs.TypeNotMatch)
	f.put(k, "str", engines.PutOptions{})
	if e := f.wantGet(k, "str", 4); e.Object != nil || e.Type != engines.TypeString {
		t.Fatalf("put left %+v", e)
	}
	// Objects expire like any record.
	_, err = f.e.Update(K("o2"), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return engines.Entry{Type: TestObjectType, Object: &TestObject{Elems: []string{"z"}}, ExpireAt: f.clk.NowMs() + 1000}, engines.Store, nil
	})
	must(t, err)
	f.clk.Advance(1001 * time.Millisecond)
	f.wantMissing(K("o2"))
	f.wantCount(0, 1)
}

func testLimits(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	long := strings.Repeat("k", 1024)
	f.put(K(long), "ok", engines.PutOptions{})
	f.wantGet(K(long), "ok", 1)
	_, err := f.e.Put(K(long+"k"), []byte("v"), engines.PutOptions{})
	wantCode(t, err, errs.KeyTooLong)
	_, err = f.e.Get(K(long + "k"))
	wantCode(t, err, errs.KeyTooLong)
	_, err = f.e.Put(engines.Key{Key: nil}, []byte("v"), engines.PutOptions{})
	wantCode(t, err, errs.InvalidArgument)
	_, err = f.e.Put(engines.Key{Area: 1024, Key: []byte("a")}, []byte("v"), engines.PutOptions{})
	wantCode(t, err, errs.InvalidArgument)
	big := make([]byte, 1<<20)
	if _, err := f.e.Put(K("big"), big, engines.PutOptions{}); err != nil {
		t.Fatalf("1 MiB value: %v", err)
	}
	_, err = f.e.Put(K("big"), make([]byte, 1<<20+1), engines.PutOptions{})
	wantCode(t, err, errs.ValueTooLong)
	if e, err := f.e.Get(K("big")); err != nil || len(e.Value) != 1<<20 || e.Version != 1 {
		t.Fatalf("big value after failed put: len %d v%d %v", len(e.Value), e.Version, err)
	}
	// pkey and skey together obey the key limit.
	pk := K(strings.Repeat("p", 1000))
	if _, err := f.e.PrefixPut(pk, []byte(strings.Repeat("s", 24)), []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatalf("pkey+skey of 1024: %v", err)
	}
	_, err = f.e.PrefixPut(pk, []byte(strings.Repeat("s", 25)), []byte("v"), engines.PutOptions{})
	wantCode(t, err, errs.KeyTooLong)
	_, err = f.e.PrefixPut(K("p"), []byte("s"), make([]byte, 1<<20+1), engines.PutOptions{})
	wantCode(t, err, errs.ValueTooLong)
	// Items are values one by one.
	_, err = f.e.ItemAdd(K("it"), 10, [][]byte{[]byte("ok"), make([]byte, 1<<20+1)}, engines.PutOptions{})
	wantCode(t, err, errs.ValueTooLong)
	_, err = f.e.ItemCount(K("it"))
	wantCode(t, err, errs.DataNotExist)

	// Limits are configurable.
	g := newFixture(t, open, func(o *engines.Options) { o.MaxKeySize, o.MaxValueSize = 8, 16 })
	_, err = g.e.Put(K("123456789"), []byte("v"), engines.PutOptions{})
	wantCode(t, err, errs.KeyTooLong)
	_, err = g.e.Put(K("12345678"), make([]byte, 17), engines.PutOptions{})
	wantCode(t, err, errs.ValueTooLong)
	g.put(K("12345678"), strings.Repeat("v", 16), engines.PutOptions{})
}

func testAreas(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	f.put(AK(0, "k"), "zero", engines.PutOptions{})
	f.put(AK(1023, "k"), "last", engines.PutOptions{})
	f.put(AK(1023, "k"), "last2", engines.PutOptions{})
	f.wantGet(AK(0, "k"), "zero", 1)
	f.wantGet(AK(1023, "k"), "last2", 2)
	f.wantMissing(AK(5, "k"))
	f.wantCount(0, 1)
	f.wantCount(1023, 1)
	f.wantCount(5, 0)
}

func testMultiGet(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	f.put(K("a"), "1", engines.PutOptions{})
	f.put(K("c"), "3", engines.PutOptions{})
	f.put(K("c"), "33", engines.PutOptions{})
	ents, errv := f.e.MultiGet([]engines.Key{K("a"), K("b"), K("c"), K("a")})
	if len(ents) != 4 || len(errv) != 4 {
		t.Fatalf("MultiGet returned %d entries, %d errors", len(ents), len(errv))
	}
	want := []struct {
		v   string
		ver int64
		err bool
	}{{"1", 1, false}, {"", 0, true}, {"33", 2, false}, {"1", 1, false}}
	for i, w := range want {
		if w.err {
			if !errors.Is(errv[i], errs.ErrNotFound) {
				t.Fatalf("MultiGet[%d] error %v, want not found", i, errv[i])
			}
			continue
		}
		if errv[i] != nil || string(ents[i].Value) != w.v || ents[i].Version != w.ver {
			t.Fatalf("MultiGet[%d] = %q v%d %v", i, ents[i].Value, ents[i].Version, errv[i])
		}
	}
	if ents, errv := f.e.MultiGet(nil); len(ents) != 0 || len(errv) != 0 {
		t.Fatal("MultiGet(nil) not empty")
	}
}

func (f *fixture) pput(pk engines.Key, skey, v string, o engines.PutOptions) int64 {
	f.t.Helper()
	ver, err := f.e.PrefixPut(pk, []byte(skey), []byte(v), o)
	must(f.t, err)
	return ver
}

func (f *fixture) wantRange(pk engines.Key, o engines.RangeOptions, want string) {
	f.t.Helper()
	kvs, err := f.e.PrefixRange(pk, o)
	must(f.t, err)
	if got := kvString(kvs); got != want {
		f.t.Fatalf("PrefixRange(%q, start %q end %q limit %d rev %v) = %q, want %q",
			pk.Key, o.Start, o.End, o.Limit, o.Reverse, got, want)
	}
}

func testPrefix(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	pk := K("user:1")
	if v := f.pput(pk, "name", "ann", engines.PutOptions{Version: 5}); v != 1 {
		t.Fatalf("first skey put v%d", v)
	}
	if v := f.pput(pk, "name", "bob", engines.PutOptions{Version: 1}); v != 2 {
		t.Fatalf("second skey put v%d", v)
	}
	_, err := f.e.PrefixPut(pk, []byte("name"), []byte("x"), engines.PutOptions{Version: 1})
	wantCode(t, err, errs.VersionError)
	f.pput(pk, "age", "3", engines.PutOptions{})
	e, err := f.e.PrefixGet(pk, []byte("name"))
	if err != nil || string(e.Value) != "bob" || e.Version != 2 {
		t.Fatalf("PrefixGet = %q v%d %v", e.Value, e.Version, err)
	}
	_, err = f.e.PrefixGet(pk, []byte("none"))
	wantCode(t, err, errs.DataNotExist)
	// The pkey and a plain key of the same name are different records.
	f.wantMissing(pk)
	f.put(pk, "plain", engines.PutOptions{})
	f.wantGet(pk, "plain", 1)
	f.wantRange(pk, engines.RangeOptions{}, "age=3/v1 name=bob/v2")
	f.wantCount(0, 2) // the plain key and the pkey
	// Empty skeys are skeys.
	f.pput(pk, "", "e", engines.PutOptions{})
	f.wantRange(pk, engines.RangeOptions{}, "=e/v1 age=3/v1 name=bob/v2")
	// Remove.
	wantCode(t, f.e.PrefixRemove(pk, []byte("none"), 0), errs.DataNotExist)
	wantCode(t, f.e.PrefixRemove(pk, []byte("name"), 1), errs.VersionError)
	must(t, f.e.PrefixRemove(pk, []byte("name"), 2))
	f.wantRange(pk, engines.RangeOptions{}, "=e/v1 age=3/v1")
	n, err := f.e.PrefixRemoveAll(pk)
	if err != nil || n != 2 {
		t.Fatalf("PrefixRemoveAll = %d %v, want 2", n, err)
	}
	f.wantRange(pk, engines.RangeOptions{}, "")
	f.wantGet(pk, "plain", 1)
	f.wantCount(0, 1)
	if n, err := f.e.PrefixRemoveAll(pk); err != nil || n != 0 {
		t.Fatalf("PrefixRemoveAll of empty pkey = %d %v", n, err)
	}
	// NX/XX on skeys.
	if v := f.pput(pk, "nx", "1", engines.PutOptions{Cond: engines.CondIfExists}); v != 0 {
		t.Fatalf("XX skey on missing: v%d", v)
	}
	f.pput(pk, "nx", "1", engines.PutOptions{Cond: engines.CondIfMissing})
	if v := f.pput(pk, "nx", "2", engines.PutOptions{Cond: engines.CondIfMissing}); v != 0 {
		t.Fatalf("NX skey on existing: v%d", v)
	}
	// PrefixUpdate.
	ent, err := f.e.PrefixUpdate(pk, []byte("nx"), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		cur.Value = append(append([]byte(nil), cur.Value...), '!')
		return cur, engines.Store, nil
	})
	if err != nil || string(ent.Value) != "1!" || ent.Version != 2 {
		t.Fatalf("PrefixUpdate = %q v%d %v", ent.Value, ent.Version, err)
	}
	_, err = f.e.PrefixUpdate(pk, []byte("nx"), func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return cur, engines.Delete, nil
	})
	must(t, err)
	f.wantRange(pk, engines.RangeOptions{}, "")
	// Skeys of a pkey are independent of other pkeys with a shared prefix.
	f.pput(K("ab"), "c", "1", engines.PutOptions{})
	f.pput(K("a"), "bc", "2", engines.PutOptions{})
	f.wantRange(K("ab"), engines.RangeOptions{}, "c=1/v1")
	f.wantRange(K("a"), engines.RangeOptions{}, "bc=2/v1")
}

func testPrefixRange(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	pk := K("p")
	// Insert out of order; includes bytes that sort differently as signed.
	for _, s := range []string{"d", "b", "\xff", "a\x00", "a", "c", "ba"} {
		f.pput(pk, s, "v", engines.PutOptions{})
	}
	all := "a=v/v1 a\x00=v/v1 b=v/v1 ba=v/v1 c=v/v1 d=v/v1 \xff=v/v1"
	f.wantRange(pk, engines.RangeOptions{}, all)
	f.wantRange(pk, engines.RangeOptions{Start: []byte("b"), End: []byte("c")}, "b=v/v1 ba=v/v1 c=v/v1")
	f.wantRange(pk, engines.RangeOptions{Start: []byte("b"), End: []byte("c"), Reverse: true}, "c=v/v1 ba=v/v1 b=v/v1")
	f.wantRange(pk, engines.RangeOptions{Start: []byte("bb"), End: []byte("bz")}, "")
	f.wantRange(pk, engines.RangeOptions{Start: []byte("c")}, "c=v/v1 d=v/v1 \xff=v/v1")
	f.wantRange(pk, engines.RangeOptions{End: []byte("a\x00")}, "a=v/v1 a\x00=v/v1")
	f.wantRange(pk, engines.RangeOptions{Limit: 2}, "a=v/v1 a\x00=v/v1")
	f.wantRange(pk, engines.RangeOptions{Limit: 2, Reverse: true}, "\xff=v/v1 d=v/v1")
	f.wantRange(pk, engines.RangeOptions{Start: []byte("b"), Limit: 2, Reverse: true}, "\xff=v/v1 d=v/v1")
	f.wantRange(pk, engines.RangeOptions{End: []byte("b"), Limit: 2, Reverse: true}, "b=v/v1 a\x00=v/v1")
	f.wantRange(pk, engines.RangeOptions{Limit: 100}, all)
	f.wantRange(pk, engines.RangeOptions{Start: []byte("d"), End: []byte("b")}, "")                // start > end
	f.wantRange(pk, engines.RangeOptions{Start: []byte("d"), End: []byte("b"), Reverse: true}, "") // same when reversed
	f.wantRange(pk, engines.RangeOptions{Start: []byte("c"), End: []byte("c")}, "c=v/v1")
	f.wantRange(K("none"), engines.RangeOptions{}, "")
	_, err := f.e.PrefixRange(pk, engines.RangeOptions{Limit: -1})
	wantCode(t, err, errs.InvalidArgument)
	// The range returns copies: changing them changes nothing stored.
	kvs, err := f.e.PrefixRange(pk, engines.RangeOptions{Limit: 1})
	must(t, err)
	kvs[0].Key[0] = 'z'
	f.wantRange(pk, engines.RangeOptions{Limit: 1}, "a=v/v1")
}

func testPrefixExpiry(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	pk := K("p")
	now := f.clk.Now()
	f.pput(pk, "a", "1", engines.PutOptions{Expire: engines.TairExpire(1, now)})
	f.pput(pk, "b", "2", engines.PutOptions{Expire: engines.TairExpire(2, now)})
	f.pput(pk, "c", "3", engines.PutOptions{})
	f.wantCount(0, 1)
	f.clk.Advance(1001 * time.Millisecond)
	f.wantRange(pk, engines.RangeOptions{}, "b=2/v1 c=3/v1")
	f.wantRange(pk, engines.RangeOptions{Limit: 1}, "b=2/v1") // expired skeys do not use the limit
	_, err := f.e.PrefixGet(pk, []byte("a"))
	wantCode(t, err, errs.DataNotExist)
	if v := f.pput(pk, "a", "new", engines.PutOptions{Version: 4}); v != 1 {
		t.Fatalf("put over expired skey v%d", v)
	}
	must(t, f.e.PrefixRemove(pk, []byte("c"), 0))
	f.clk.Advance(time.Second)
	f.wantRange(pk, engines.RangeOptions{}, "a=new/v1")
	f.wantCount(0, 1)
	must(t, f.e.PrefixRemove(pk, []byte("a"), 0))
	f.wantCount(0, 0)
	// RemoveAll counts live skeys only.
	f.pput(pk, "x", "1", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	f.pput(pk, "y", "1", engines.PutOptions{})
	f.clk.Advance(1001 * time.Millisecond)
	if n, err := f.e.PrefixRemoveAll(pk); err != nil || n != 1 {
		t.Fatalf("PrefixRemoveAll = %d %v, want 1", n, err)
	}
	// A pkey whose skeys all expired is gone from Count.
	f.pput(K("q"), "x", "1", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	f.wantCount(0, 1)
	f.clk.Advance(1001 * time.Millisecond)
	f.wantCount(0, 0)
}

func (f *fixture) wantItems(k engines.Key, off, cnt int, want string) {
	f.t.Helper()
	items, err := f.e.ItemGet(k, off, cnt)
	must(f.t, err)
	if got := itemsString(items); got != want {
		f.t.Fatalf("ItemGet(%q, %d, %d) = %s, want %s", k.Key, off, cnt, got, want)
	}
}

func (f *fixture) itemAdd(k engines.Key, max int, want int, items ...string) {
	f.t.Helper()
	n, err := f.e.ItemAdd(k, max, bs(items...), engines.PutOptions{})
	if err != nil || n != want {
		f.t.Fatalf("ItemAdd(%q, %d, %v) = %d %v, want %d", k.Key, max, items, n, err, want)
	}
}

func testItems(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	k := K("it")
	f.itemAdd(k, 5, 3, "a", "b", "c")
	e, err := f.e.Get(k)
	if err != nil || e.Type != engines.TypeItems || e.Version != 1 {
		t.Fatalf("items record %+v %v", e, err)
	}
	f.itemAdd(k, 5, 5, "d", "e")
	f.itemAdd(k, 5, 5, "f", "g") // oldest two dropped
	f.wantItems(k, 0, 10, "[c d e f g]")
	if e, _ := f.e.Get(k); e.Version != 3 {
		t.Fatalf("items version %d after 3 adds", e.Version)
	}
	// maxcount below the current count trims to it.
	f.itemAdd(k, 2, 2, "h")
	f.wantItems(k, 0, 10, "[g h]")
	// More items than maxcount in one add keeps the newest.
	f.itemAdd(K("m"), 2, 2, "1", "2", "3")
	f.wantItems(K("m"), 0, 5, "[2 3]")
	if n, err := f.e.ItemCount(k); err != nil || n != 2 {
		t.Fatalf("ItemCount = %d %v", n, err)
	}
	// ItemGetDelete is a FIFO pop.
	f.itemAdd(K("q"), 100, 4, "1", "2", "3", "4")
	got, err := f.e.ItemGetDelete(K("q"), 0, 2)
	if err != nil || itemsString(got) != "[1 2]" {
		t.Fatalf("ItemGetDelete = %s %v", itemsString(got), err)
	}
	f.wantItems(K("q"), 0, 10, "[3 4]")
	if e, _ := f.e.Get(K("q")); e.Version != 2 {
		t.Fatalf("version %d after ItemGetDelete", e.Version)
	}
	// ItemDelete counts, and the last item takes the key with it.
	if n, err := f.e.ItemDelete(K("q"), -1, 1); err != nil || n != 1 {
		t.Fatalf("ItemDelete = %d %v", n, err)
	}
	f.wantItems(K("q"), 0, 10, "[3]")
	if n, err := f.e.ItemDelete(K("q"), 0, 5); err != nil || n != 1 {
		t.Fatalf("ItemDelete = %d %v", n, err)
	}
	f.wantMissing(K("q"))
	// Deleting nothing leaves the record alone.
	f.itemAdd(K("r"), 10, 1, "x")
	if n, err := f.e.ItemDelete(K("r"), 5, 1); err != nil || n != 0 {
		t.Fatalf("ItemDelete past end = %d %v", n, err)
	}
	if e, _ := f.e.Get(K("r")); e.Version != 1 {
		t.Fatalf("empty ItemDelete moved the version to %d", e.Version)
	}
	// Items with versions and expiry.
	_, err = f.e.ItemAdd(K("r"), 10, bs("y"), engines.PutOptions{Version: 7})
	wantCode(t, err, errs.VersionError)
	n, err := f.e.ItemAdd(K("r"), 10, bs("y"), engines.PutOptions{Version: 1, Expire: engines.TairExpire(1, f.clk.Now())})
	if err != nil || n != 2 {
		t.Fatalf("ItemAdd with version = %d %v", n, err)
	}
	f.clk.Advance(1001 * time.Millisecond)
	_, err = f.e.ItemCount(K("r"))
	wantCode(t, err, errs.DataNotExist)
	f.itemAdd(K("r"), 10, 1, "z")
	// The items returned are copies.
	items, err := f.e.ItemGet(K("r"), 0, 1)
	must(t, err)
	items[0][0] = 'Q'
	f.wantItems(K("r"), 0, 1, "[z]")
	// Empty items are items.
	f.itemAdd(K("empty"), 3, 2, "", "")
	f.wantItems(K("empty"), 0, 3, "[ ]")
}

func testItemWindows(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	k := K("w")
	f.itemAdd(k, 10, 5, "0", "1", "2", "3", "4")
	for _, c := range []struct {
		off, cnt int
		want     string
	}{
		{0, 1, "[0]"},
		{0, 5, "[0 1 2 3 4]"},
		{0, 100, "[0 1 2 3 4]"},
		{3, 100, "[3 4]"},
		{4, 1, "[4]"},
		{5, 1, "[]"},
		{100, 1, "[]"},
		{-1, 1, "[4]"},
		{-2, 5, "[3 4]"},
		{-5, 2, "[0 1]"},
		{-7, 3, "[0 1 2]"}, // before the first item: starts at the first
		{2, 0, "[]"},
	} {
		f.wantItems(k, c.off, c.cnt, c.want)
	}
	_, err := f.e.ItemGet(k, 0, -1)
	wantCode(t, err, errs.InvalidArgument)
	got, err := f.e.ItemGetDelete(k, -2, 1)
	if err != nil || itemsString(got) != "[3]" {
		t.Fatalf("ItemGetDelete(-2, 1) = %s %v", itemsString(got), err)
	}
	f.wantItems(k, 0, 10, "[0 1 2 4]")
	got, err = f.e.ItemGetDelete(k, 10, 1)
	if err != nil || len(got) != 0 {
		t.Fatalf("ItemGetDelete past end = %s %v", itemsString(got), err)
	}
}

func testItemErrors(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	_, err := f.e.ItemGet(K("none"), 0, 1)
	wantCode(t, err, errs.DataNotExist)
	_, err = f.e.ItemCount(K("none"))
	wantCode(t, err, errs.DataNotExist)
	_, err = f.e.ItemDelete(K("none"), 0, 1)
	wantCode(t, err, errs.DataNotExist)
	_, err = f.e.ItemGetDelete(K("none"), 0, 1)
	wantCode(t, err, errs.DataNotExist)
	f.put(K("s"), "str", engines.PutOptions{})
	_, err = f.e.ItemAdd(K("s"), 5, bs("a"), engines.PutOptions{})
	wantCode(t, err, errs.TypeNotMatch)
	_, err = f.e.ItemGet(K("s"), 0, 1)
	wantCode(t, err, errs.TypeNotMatch)
	_, err = f.e.ItemCount(K("s"))
	wantCode(t, err, errs.TypeNotMatch)
	_, err = f.e.ItemGetDelete(K("s"), 0, 1)
	wantCode(t, err, errs.TypeNotMatch)
	f.wantGet(K("s"), "str", 1)
	_, err = f.e.ItemAdd(K("x"), 0, bs("a"), engines.PutOptions{})
	wantCode(t, err, errs.InvalidArgument)
	_, err = f.e.ItemAdd(K("x"), 5, nil, engines.PutOptions{})
	wantCode(t, err, errs.InvalidArgument)
	f.wantMissing(K("x"))
	// A put over items replaces them with a string.
	f.itemAdd(K("y"), 5, 1, "a")
	f.put(K("y"), "s", engines.PutOptions{})
	if e := f.wantGet(K("y"), "s", 2); e.Type != engines.TypeString {
		t.Fatalf("type %v after put over items", e.Type)
	}
}

// dump renders every live record of bucket in a canonical order, with
// version, expiry, flags, hidden and type.
func dump(t testing.TB, e engines.Engine, bucket uint32) []string {
	t.Helper()
	return dumpEach(t, e.ForEach, bucket)
}

// dumpEach is dump over forEach (an engine's, or a snapshot's).
func dumpEach(t testing.TB, forEach func(uint32, func(*engines.Record) error) error, bucket uint32) []string {
	t.Helper()
	var out []string
	ent := func(en engines.Entry) string {
		v := string(en.Value)
		if en.Object != nil {
			b, err := en.Object.MarshalBinary()
			must(t, err)
			v = fmt.Sprintf("obj:%q", b)
		}
		return fmt.Sprintf("%v:%q v%d exp%d f%d h%v", en.Type, v, en.Version, en.ExpireAt, en.Flags, en.Hidden)
	}
	err := forEach(bucket, func(r *engines.Record) error {
		if r.Prefix == nil {
			out = append(out, fmt.Sprintf("a%d %q = %s", r.Area, r.Key, ent(r.Entry)))
			return nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "a%d %q prefix:", r.Area, r.Key)
		for i, kv := range r.Prefix {
			if i > 0 && bytes.Compare(r.Prefix[i-1].Key, kv.Key) >= 0 {
				t.Errorf("ForEach: skeys of %q out of order: %q then %q", r.Key, r.Prefix[i-1].Key, kv.Key)
			}
			fmt.Fprintf(&b, " %q=%s", kv.Key, ent(kv.Entry))
		}
		out = append(out, b.String())
		return nil
	})
	must(t, err)
	sort.Strings(out)
	return out
}

// populate writes a bit of every kind of record into bucket b of area a.
func populate(t testing.TB, e engines.Engine, now time.Time, area uint16, b uint32, tag string) {
	t.Helper()
	k := func(s string) engines.Key { return engines.Key{Bucket: b, Area: area, Key: []byte(tag + s)} }
	for i := 0; i < 3; i++ {
		if _, err := e.Put(k("s"), []byte(fmt.Sprint("v", i)), engines.PutOptions{Flags: uint32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Put(k("exp"), []byte("e"), engines.PutOptions{Expire: engines.TairExpire(100, now)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Put(k("gone"), []byte("g"), engines.PutOptions{Expire: engines.TairExpire(1, now)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Put(k("hid"), []byte("h"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, e.SetHidden(k("hid"), true))
	if _, err := e.ItemAdd(k("items"), 10, bs("x", "y"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Incr(k("n"), 42, engines.IncrOptions{}); err != nil {
		t.Fatal(err)
	}
	storeObject(t, e, k("obj"), "o1", "o2")
	for _, s := range []string{"b", "a", "c"} {
		if _, err := e.PrefixPut(k("pk"), []byte(s), []byte("p"+s), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.PrefixPut(k("pk"), []byte("a"), []byte("pa2"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PrefixPut(k("pk"), []byte("x"), []byte("px"), engines.PutOptions{Expire: engines.TairExpire(1, now)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PrefixPut(k("pexp"), []byte("only"), []byte("1"), engines.PutOptions{Expire: engines.TairExpire(1, now)}); err != nil {
		t.Fatal(err)
	}
}

func testForEachRestore(t *testing.T, open OpenFunc) {
	src := newFixture(t, open, nil)
	now := src.clk.Now()
	populate(t, src.e, now, 0, 7, "")
	populate(t, src.e, now, 3, 7, "area3:")
	populate(t, src.e, now, 0, 8, "other:")
	src.clk.Advance(1001 * time.Millisecond) // "gone", "pk/x" and "pexp" expire
	d7 := dump(t, src.e, 7)
	// 9 plain keys ("gone" and "pexp" expired) ... per area: s exp hid items n obj pk = 7.
	if len(d7) != 14 {
		t.Fatalf("ForEach(7) yielded %d records, want 14:\n%s", len(d7), strings.Join(d7, "\n"))
	}
	for _, line := range d7 {
		if strings.Contains(line, `"gone"`) || strings.Contains(line, `"pexp"`) || strings.Contains(line, `"x"=`) {
			t.Fatalf("ForEach yielded an expired record: %s", line)
		}
	}
	wantLines := []string{
		`a0 "s" = string:"v2" v3 exp0 f2 hfalse`,
		fmt.Sprintf(`a0 "exp" = string:"e" v1 exp%d f0 hfalse`, now.UnixMilli()+100_000),
		`a0 "hid" = string:"h" v1 exp0 f0 htrue`,
		`a0 "n" = string:"42" v1 exp0 f0 hfalse`,
		`a0 "pk" prefix: "a"=string:"pa2" v2 exp0 f0 hfalse "b"=string:"pb" v1 exp0 f0 hfalse "c"=string:"pc" v1 exp0 f0 hfalse`,
	}
	for _, w := range wantLines {
		found := false
		for _, l := range d7 {
			found = found || l == w
		}
		if !found {
			t.Fatalf("ForEach(7) misses %s\ngot:\n%s", w, strings.Join(d7, "\n"))
		}
	}
	// Stop early on an error.
	stop := errors.New("stop")
	calls := 0
	if err := src.e.ForEach(7, func(*engines.Record) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("ForEach with error: %v after %d calls", err, calls)
	}
	if err := src.e.ForEach(999, func(*engines.Record) error { t.Fatal("record in empty bucket"); return nil }); err != nil {
		t.Fatal(err)
	}

	// Restore into another engine, over a stale copy of some records.
	dst := newFixture(t, open, nil)
	dst.clk.Advance(1001 * time.Millisecond)
	dst.put(engines.Key{Bucket: 7, Key: []byte("s")}, "stale", engines.PutOptions{})
	if _, err := dst.e.PrefixPut(engines.Key{Bucket: 7, Key: []byte("pk")}, []byte("zz"), []byte("stale"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var recs []*engines.Record
	must(t, src.e.ForEach(7, func(r *engines.Record) error {
		// Records must be usable after fn returns once objects are encoded,
		// as a migration sender does.
		c := *r
		if c.Entry.Object != nil {
			b, err := c.Entry.Object.MarshalBinary()
			must(t, err)
			o, err := engines.DecodeObject(c.Entry.Object.Type(), b)
			must(t, err)
			c.Entry.Object = o
		}
		c.Key = append([]byte(nil), r.Key...)
		c.Prefix = append([]engines.KV(nil), r.Prefix...)
		recs = append(recs, &c)
		return nil
	}))
	for _, r := range recs {
		must(t, dst.e.Restore(7, r))
	}
	if got := dump(t, dst.e, 7); strings.Join(got, "\n") != strings.Join(d7, "\n") {
		t.Fatalf("after Restore:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(d7, "\n"))
	}
	dst.wantCount(0, 7)
	dst.wantCount(3, 7)
	// Versions continue from the restored ones.
	if v := dst.put(engines.Key{Bucket: 7, Key: []byte("s")}, "next", engines.PutOptions{Version: 3}); v != 4 {
		t.Fatalf("put after restore v%d, want 4", v)
	}
	// Restoring twice changes nothing.
	for _, r := range recs {
		must(t, src.e.Restore(7, r))
	}
	if got := dump(t, src.e, 7); strings.Join(got, "\n") != strings.Join(d7, "\n") {
		t.Fatalf("restore onto itself changed:\n%s", strings.Join(got, "\n"))
	}
	wantCode(t, dst.e.Restore(7, nil), errs.InvalidArgument)
}

func testDeleteBucket(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	now := f.clk.Now()
	populate(t, f.e, now, 0, 1, "")
	populate(t, f.e, now, 2, 1, "")
	populate(t, f.e, now, 0, 2, "b2:")
	f.wantCount(0, 18)
	f.wantCount(2, 9)
	before2 := dump(t, f.e, 2)
	must(t, f.e.DeleteBucket(1))
	if got := dump(t, f.e, 1); len(got) != 0 {
		t.Fatalf("bucket 1 after DeleteBucket: %v", got)
	}
	if got := dump(t, f.e, 2); strings.Join(got, "\n") != strings.Join(before2, "\n") {
		t.Fatalf("DeleteBucket(1) changed bucket 2")
	}
	f.wantCount(0, 9)
	f.wantCount(2, 0)
	_, err := f.e.Get(engines.Key{Bucket: 1, Key: []byte("s")})
	wantCode(t, err, errs.DataNotExist)
	must(t, f.e.DeleteBucket(1)) // idempotent
	// The bucket is usable again, from version 1.
	if v := f.put(engines.Key{Bucket: 1, Key: []byte("s")}, "new", engines.PutOptions{}); v != 1 {
		t.Fatalf("put after DeleteBucket v%d", v)
	}
}

func testDeleteArea(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	now := f.clk.Now()
	populate(t, f.e, now, 4, 1, "")
	populate(t, f.e, now, 4, 2, "b2:") // a key has one bucket: other names
	populate(t, f.e, now, 5, 1, "")
	populate(t, f.e, now, 5, 2, "b2:")
	f.clk.Advance(1001 * time.Millisecond)
	area5 := func() string {
		var lines []string
		for _, b := range []uint32{1, 2} {
			for _, l := range dump(t, f.e, b) {
				if strings.HasPrefix(l, "a5 ") {
					lines = append(lines, l)
				}
			}
		}
		return strings.Join(lines, "\n")
	}
	before5, stats5 := area5(), f.e.Stats(5)
	n, err := f.e.DeleteArea(4)
	if err != nil || n != 14 {
		t.Fatalf("DeleteArea(4) = %d %v, want 14 live keys", n, err)
	}
	f.wantCount(4, 0)
	f.wantCount(5, 14)
	// No record of the area is left in any bucket; the other area is
	// exactly as it was, records and counters.
	for _, b := range []uint32{1, 2} {
		if got := keysOf(t, f.e, b, 4); got != "" {
			t.Fatalf("bucket %d still holds area 4 records after DeleteArea: %s", b, got)
		}
	}
	if s := f.e.Stats(4); s.Keys != 0 || (!f.e.Persistent() && s.Bytes != 0) {
		t.Fatalf("Stats(4) after DeleteArea: %+v", s)
	}
	if got := area5(); got != before5 {
		t.Fatalf("DeleteArea(4) changed area 5:\n%s\nwant:\n%s", got, before5)
	}
	if s := f.e.Stats(5); s.Keys != stats5.Keys || s.Bytes != stats5.Bytes {
		t.Fatalf("DeleteArea(4) changed Stats(5): %+v, was %+v", s, stats5)
	}
	if n, err := f.e.DeleteArea(4); err != nil || n != 0 {
		t.Fatalf("second DeleteArea = %d %v", n, err)
	}
	_, err = f.e.Get(engines.Key{Bucket: 1, Area: 5, Key: []byte("s")})
	must(t, err)
	if v := f.put(engines.Key{Bucket: 1, Area: 4, Key: []byte("s")}, "x", engines.PutOptions{}); v != 1 {
		t.Fatalf("put after DeleteArea v%d", v)
	}
	_, err = f.e.DeleteArea(1024)
	wantCode(t, err, errs.InvalidArgument)
}

func testCount(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	f.wantCount(0, 0)
	for i := 0; i < 100; i++ {
		f.put(K(fmt.Sprint("k", i)), "v", engines.PutOptions{Expire: engines.TairExpire(int64(1+i%2), f.clk.Now())})
	}
	for i := 0; i < 10; i++ {
		f.pput(K("pk"), fmt.Sprint(i), "v", engines.PutOptions{})
	}
	f.put(K("pk"), "plain", engines.PutOptions{})
	f.wantCount(0, 102)
	f.clk.Advance(1001 * time.Millisecond)
	f.wantCount(0, 52)
	f.clk.Advance(time.Second)
	f.wantCount(0, 2)
	must(t, f.e.Remove(K("pk"), 0))
	f.wantCount(0, 1)
	if n, _ := f.e.PrefixRemoveAll(K("pk")); n != 10 {
		t.Fatalf("PrefixRemoveAll = %d", n)
	}
	f.wantCount(0, 0)
	if got := f.e.Count(1024); got != 0 {
		t.Fatalf("Count(1024) = %d", got)
	}
}

func testStats(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	want := func(area uint16, keys, gets, puts, hits, misses int64) engines.AreaStats {
		t.Helper()
		s := f.e.Stats(area)
		if s.Keys != keys || s.Gets != gets || s.Puts != puts || s.Hits != hits || s.Misses != misses || s.Evictions != 0 {
			t.Fatalf("Stats(%d) = %+v, want keys %d gets %d puts %d hits %d misses %d", area, s, keys, gets, puts, hits, misses)
		}
		return s
	}
	want(6, 0, 0, 0, 0, 0)
	f.put(AK(6, "a"), "1", engines.PutOptions{})
	f.put(AK(6, "b"), "12345", engines.PutOptions{})
	f.wantGet(AK(6, "a"), "1", 1)
	f.wantMissing(AK(6, "none"))
	_, _ = f.e.MultiGet([]engines.Key{AK(6, "a"), AK(6, "b"), AK(6, "c")})
	s := want(6, 2, 5, 2, 3, 2)
	if s.Bytes <= 0 {
		t.Fatalf("Bytes %d with two keys", s.Bytes)
	}
	f.incr(AK(6, "n"), 1, engines.IncrOptions{}, 1, 1)
	if _, err := f.e.PrefixPut(AK(6, "p"), []byte("s"), []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.PrefixGet(AK(6, "p"), []byte("s")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.PrefixRange(AK(6, "p"), engines.RangeOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, f.e.Remove(AK(6, "a"), 0))
	want(6, 3, 7, 5, 5, 2)
	// Other areas are untouched; AllStats lists the areas in use.
	want(7, 0, 0, 0, 0, 0)
	all := f.e.AllStats()
	if _, ok := all[6]; !ok || len(all) != 1 {
		t.Fatalf("AllStats has areas %v, want [6]", all)
	}
	if all[6].Puts != 5 || all[6].Keys != 3 {
		t.Fatalf("AllStats[6] = %+v", all[6])
	}
	// Deleting everything gives back every byte (in-memory engines account
	// exactly; persistent ones may lag until compaction).
	_, err := f.e.DeleteArea(6)
	must(t, err)
	if s := f.e.Stats(6); s.Keys != 0 || (!f.e.Persistent() && s.Bytes != 0) {
		t.Fatalf("Stats after DeleteArea: %+v", s)
	}
}

func testCompact(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	for i := 0; i < 50; i++ {
		f.put(K(fmt.Sprint("k", i)), "v", engines.PutOptions{Expire: engines.TairExpire(1, f.clk.Now())})
	}
	f.put(K("keep"), "v", engines.PutOptions{})
	f.clk.Advance(2 * time.Second)
	must(t, f.e.Compact())
	f.wantCount(0, 1)
	f.wantGet(K("keep"), "v", 1)
}

func testClose(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	f.put(K("a"), "1", engines.PutOptions{})
	must(t, f.e.Close())
	if err := f.e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Calls after Close fail (or succeed) without panicking.
	_, _ = f.e.Get(K("a"))
	if _, err := f.e.Put(K("a"), []byte("2"), engines.PutOptions{}); err == nil {
		t.Fatal("Put after Close succeeded")
	}
	_, _ = f.e.PrefixRange(K("a"), engines.RangeOptions{})
	_ = f.e.ForEach(0, func(*engines.Record) error { return nil })
	_ = f.e.Count(0)
	_ = f.e.Stats(0)
}

func testConcurrency(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	const workers, perWorker = 8, 300
	var wg sync.WaitGroup
	errc := make(chan error, workers*4)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				if _, _, err := f.e.Incr(K("counter"), 1, engines.IncrOptions{}); err != nil {
					errc <- err
					return
				}
				k := K(fmt.Sprintf("w%d-%d", w, i%50))
				if _, err := f.e.Put(k, []byte(fmt.Sprint(i)), engines.PutOptions{}); err != nil {
					errc <- err
					return
				}
				if _, err := f.e.Get(k); err != nil {
					errc <- fmt.Errorf("get own write: %w", err)
					return
				}
				if _, err := f.e.PrefixPut(K("shared-pk"), []byte(fmt.Sprintf("%d-%d", w, i%20)), []byte("v"), engines.PutOptions{}); err != nil {
					errc <- err
					return
				}
				if _, err := f.e.ItemAdd(K("q"), 1000000, bs(fmt.Sprint(w, ":", i)), engines.PutOptions{}); err != nil {
					errc <- err
					return
				}
				if i%50 == 0 {
					_, _ = f.e.PrefixRange(K("shared-pk"), engines.RangeOptions{Limit: 5})
					_ = f.e.Count(0)
					_ = f.e.ForEach(K("counter").Bucket, func(*engines.Record) error { return nil })
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	total := int64(workers * perWorker)
	f.wantGet(K("counter"), fmt.Sprint(total), total)
	if n, err := f.e.ItemCount(K("q")); err != nil || n != int(total) {
		t.Fatalf("ItemCount = %d %v, want %d", n, err, total)
	}
	kvs, err := f.e.PrefixRange(K("shared-pk"), engines.RangeOptions{})
	must(t, err)
	if len(kvs) != workers*20 {
		t.Fatalf("shared pkey has %d skeys, want %d", len(kvs), workers*20)
	}
	// counter + q + shared-pk + workers*50 keys.
	f.wantCount(0, 3+workers*50)
}
