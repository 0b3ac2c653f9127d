package enginetest

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/errs"
)

// Cases added after an audit of the engines: quotas per engine kind, hiding
// on prefix records, NOTSUPPORTED, invalid option values and the order of
// restored skeys. Run lists them with the others.

// keysOf returns the names of area's records (plain keys and pkeys) in
// bucket, sorted, from ForEach: it neither reads nor touches the records'
// recency, so it observes eviction without steering it.
func keysOf(t testing.TB, e engines.Engine, bucket uint32, area uint16) string {
	t.Helper()
	var out []string
	must(t, e.ForEach(bucket, func(r *engines.Record) error {
		if r.Area == area {
			out = append(out, string(r.Key))
		}
		return nil
	}))
	sort.Strings(out)
	return strings.Join(out, " ")
}

// testQuota checks an area's byte quota as engines.Engine.SetQuota states
// it, by engine kind (Persistent): an in-memory engine evicts, expired
// records first, then the least recently used, and never refuses a record
// that fits the quota; a persistent one refuses a write that would take
// the area over its quota with errs.ErrQuota and changes nothing. Both
// refuse a record larger than the whole quota.
func testQuota(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	const area = 9
	// One bucket: one shard and one table in the in-memory engines, so
	// that every record of the area costs the same and LRU is one list.
	k := func(i int) engines.Key {
		return engines.Key{Bucket: 3, Area: area, Key: []byte(fmt.Sprintf("q%d", i))}
	}
	val := strings.Repeat("v", 100)
	persistent := f.e.Persistent()
	for i := 0; i < 5; i++ {
		o := engines.PutOptions{}
		if i == 3 && !persistent {
			o.Expire = engines.TairExpire(1, f.clk.Now())
		}
		f.put(k(i), val, o)
	}
	full := f.e.Stats(area).Bytes
	if full <= 5*100 {
		t.Fatalf("five 100-byte values account %d bytes", full)
	}
	f.e.SetQuota(area, full) // exactly what the area holds
	f.wantCount(area, 5)
	wantStats := func(bytes, evictions int64) {
		t.Helper()
		s := f.e.Stats(area)
		if s.Bytes > bytes || s.Evictions != evictions {
			t.Fatalf("Stats(%d): bytes %d evictions %d, want bytes <= %d, evictions %d", area, s.Bytes, s.Evictions, bytes, evictions)
		}
	}

	// A record larger than the whole quota: refused by every engine, and
	// nothing is evicted or changed for it.
	_, err := f.e.Put(k(9), make([]byte, full+1), engines.PutOptions{})
	wantCode(t, err, errs.Quota)
	_, err = f.e.PrefixPut(k(9), []byte("s"), make([]byte, full+1), engines.PutOptions{})
	wantCode(t, err, errs.Quota)
	if got := keysOf(t, f.e, 3, area); got != "q0 q1 q2 q3 q4" {
		t.Fatalf("after refusing an oversized record the area holds %q", got)
	}
	wantStats(full, 0)
	if s := f.e.Stats(area); s.Bytes != full {
		t.Fatalf("refused record changed the bytes: %d, want %d", s.Bytes, full)
	}

	if persistent {
		before := dump(t, f.e, 3)
		_, err = f.e.Put(k(5), []byte(val), engines.PutOptions{})
		wantCode(t, err, errs.Quota)
		_, err = f.e.Put(k(0), []byte(val+"x"), engines.PutOptions{}) // grows the area
		wantCode(t, err, errs.Quota)
		_, err = f.e.PrefixPut(k(6), []byte("s"), []byte(val), engines.PutOptions{})
		wantCode(t, err, errs.Quota)
		_, err = f.e.ItemAdd(k(7), 5, bs(val), engines.PutOptions{})
		wantCode(t, err, errs.Quota)
		_, _, err = f.e.Incr(k(8), 1, engines.IncrOptions{})
		wantCode(t, err, errs.Quota)
		if got := dump(t, f.e, 3); strings.Join(got, "\n") != strings.Join(before, "\n") {
			t.Fatalf("refused writes changed the data:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
		}
		f.wantCount(area, 5)
		if s := f.e.Stats(area); s.Bytes != full {
			t.Fatalf("refused writes changed the bytes: %d, want %d", s.Bytes, full)
		}
		// Writes that do not grow the area pass; room made is usable.
		f.put(k(1), strings.Repeat("w", 100), engines.PutOptions{})
		must(t, f.e.Remove(k(2), 0))
		f.put(k(5), val, engines.PutOptions{})
		wantStats(full, 0)
	} else {
		// Exact victims need every record to cost the same and one LRU
		// order: true when q0..q6 share one table, as they do in mdb and
		// rdb (a bucket is one shard). A store that spreads a bucket over
		// shards (memstore's SubShards) evicts per shard, approximately
		// LRU overall; it gets the checks that hold for any layout.
		exact := sameTable(t, f.e, k, val)
		f.clk.Advance(2 * time.Second) // q3 expires
		for _, i := range []int{1, 2, 4} {
			f.wantGet(k(i), val, 1) // read: q0 is the least recently used
		}
		// The area is full: the write is taken, and room is made by
		// reclaiming the expired record, not by evicting a live one.
		if v := f.put(k(5), val, engines.PutOptions{}); v != 1 {
			t.Fatalf("put into a full area: v%d", v)
		}
		got := keysOf(t, f.e, 3, area)
		if strings.Contains(got, "q3") || !strings.Contains(got, "q5") {
			t.Fatalf("after a put into a full area with an expired record: %q", got)
		}
		if exact {
			if got != "q0 q1 q2 q4 q5" {
				t.Fatalf("after a put into a full area with an expired record: %q, want q0 q1 q2 q4 q5", got)
			}
			wantStats(full, 0)
		}
		// No expired record left: the least recently used one goes.
		if v := f.put(k(6), val, engines.PutOptions{}); v != 1 {
			t.Fatalf("put into a full area: v%d", v)
		}
		got = keysOf(t, f.e, 3, area)
		if !strings.Contains(got, "q6") {
			t.Fatalf("after a put into a full area: %q", got)
		}
		s := f.e.Stats(area)
		if s.Bytes > full {
			t.Fatalf("area over its quota: %d bytes, quota %d", s.Bytes, full)
		}
		// Every live record written (q0..q6 but the expired q3) is held
		// or counted as evicted.
		if held := int64(len(strings.Fields(got))); held+s.Evictions != 6 || f.e.Count(area) != held {
			t.Fatalf("area holds %q (Count %d) with %d evictions; 6 live records were written", got, f.e.Count(area), s.Evictions)
		}
		if exact {
			if got != "q1 q2 q4 q5 q6" {
				t.Fatalf("after a put into a full area: %q, want q1 q2 q4 q5 q6 (q0 evicted)", got)
			}
			wantStats(full, 1)
		}
		// A record acknowledged into a full area is held, also when it is
		// the only one of its bucket (alone in its shard's LRU list, it must
		// not be its own write's victim).
		for b := uint32(0); b < 8; b++ {
			fk := engines.Key{Bucket: b, Area: area, Key: []byte(fmt.Sprint("fresh", b))}
			f.put(fk, val, engines.PutOptions{})
			f.wantGet(fk, val, 1)
			if s := f.e.Stats(area); s.Bytes > full {
				t.Fatalf("area over its quota: %d bytes, quota %d", s.Bytes, full)
			}
		}
	}
	// Other areas have no quota; quota 0 lifts the limit.
	for i := 0; i < 10; i++ {
		f.put(AK(area+1, fmt.Sprint("free", i)), val, engines.PutOptions{})
	}
	f.wantCount(area+1, 10)
	f.e.SetQuota(area, 0)
	for i := 10; i < 20; i++ {
		f.put(k(i), val, engines.PutOptions{})
	}
	_, err = f.e.Put(k(9), make([]byte, full+1), engines.PutOptions{})
	must(t, err)
}

// sameTable reports whether the records k(0)..k(6) with value val all cost
// the same bytes in an area of their own (no record opens a new table, so
// they share one), probed in area 11 and deleted again.
func sameTable(t *testing.T, e engines.Engine, k func(int) engines.Key, val string) bool {
	t.Helper()
	const probe = 11
	var last, cost int64
	same := true
	for i := 0; i <= 6; i++ {
		pk := k(i)
		pk.Area = probe
		if _, err := e.Put(pk, []byte(val), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		b := e.Stats(probe).Bytes
		if d := b - last; i == 1 {
			cost = d
		} else if i > 1 && d != cost {
			same = false
		}
		last = b
	}
	if _, err := e.DeleteArea(probe); err != nil {
		t.Fatal(err)
	}
	return same
}

// testPrefixHidden: engines.Engine.SetHidden names plain keys only (it has
// no skey argument), so it cannot hide an skey: on a pkey without a plain
// key of the same name it finds nothing, and hiding that plain key leaves
// the skeys alone. An skey's Hidden flag is an Entry field like any other:
// set and cleared through PrefixUpdate (a write, so the version moves), it
// comes back from PrefixGet, PrefixRange and ForEach, and PrefixPut clears
// it as Put does for plain keys.
func testPrefixHidden(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	pk := K("hp")
	f.pput(pk, "a", "1", engines.PutOptions{})
	f.pput(pk, "b", "2", engines.PutOptions{})
	wantHidden := func(skey string, hidden bool, ver int64) {
		t.Helper()
		e, err := f.e.PrefixGet(pk, []byte(skey))
		must(t, err)
		if e.Hidden != hidden || e.Version != ver {
			t.Fatalf("PrefixGet(%q) hidden %v v%d, want hidden %v v%d", skey, e.Hidden, e.Version, hidden, ver)
		}
		kvs, err := f.e.PrefixRange(pk, engines.RangeOptions{Start: []byte(skey), End: []byte(skey)})
		must(t, err)
		if len(kvs) != 1 || kvs[0].Entry.Hidden != hidden {
			t.Fatalf("PrefixRange(%q) = %+v, want hidden %v", skey, kvs, hidden)
		}
		found := false
		must(t, f.e.ForEach(pk.Bucket, func(r *engines.Record) error {
			for _, kv := range r.Prefix {
				if string(r.Key) == "hp" && string(kv.Key) == skey {
					found = true
					if kv.Entry.Hidden != hidden {
						t.Errorf("ForEach: skey %q hidden %v, want %v", skey, kv.Entry.Hidden, hidden)
					}
				}
			}
			return nil
		}))
		if !found {
			t.Fatalf("ForEach misses skey %q", skey)
		}
	}
	wantCode(t, f.e.SetHidden(pk, true), errs.DataNotExist)
	wantHidden("a", false, 1)
	f.put(pk, "plain", engines.PutOptions{})
	must(t, f.e.SetHidden(pk, true))
	if e := f.wantGet(pk, "plain", 1); !e.Hidden {
		t.Fatal("plain key not hidden")
	}
	wantHidden("a", false, 1)
	wantHidden("b", false, 1)

	hide := func(h bool) engines.UpdateFunc {
		return func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
			if !exists {
				return cur, engines.Keep, errs.ErrNotFound
			}
			cur.Hidden = h
			return cur, engines.Store, nil
		}
	}
	ent, err := f.e.PrefixUpdate(pk, []byte("a"), hide(true))
	must(t, err)
	if !ent.Hidden || ent.Version != 2 || string(ent.Value) != "1" {
		t.Fatalf("PrefixUpdate hide = %+v", ent)
	}
	wantHidden("a", true, 2)
	wantHidden("b", false, 1)
	f.wantCount(0, 2) // the plain key and the pkey: a hidden skey still counts
	_, err = f.e.PrefixUpdate(pk, []byte("a"), hide(false))
	must(t, err)
	wantHidden("a", false, 3)
	_, err = f.e.PrefixUpdate(pk, []byte("a"), hide(true))
	must(t, err)
	f.pput(pk, "a", "new", engines.PutOptions{}) // replaces the record: unhides
	wantHidden("a", false, 5)
	_, err = f.e.PrefixUpdate(K("nopk"), []byte("a"), hide(true))
	wantCode(t, err, errs.DataNotExist)
}

// noCodecType is an Object type no codec is registered for.
const noCodecType engines.ValueType = 201

// noCodecObject is an Object that can be encoded but never decoded.
type noCodecObject struct{ TestObject }

func (o *noCodecObject) Type() engines.ValueType { return noCodecType }

// testNotSupported: SPEC §5's NOTSUPPORTED is what an engine answers for an
// operation it cannot do. The one engines.Engine operation not every engine
// can do is holding an Object that has no registered codec (DecodeObject):
// in-memory engines hold Objects as they are and never decode them; a
// persistent engine would write the encoding and then fail every later
// read of the key, and every migration of its bucket. It refuses the write
// with errs.ErrNotSupported instead, and changes nothing.
func testNotSupported(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	k := K("nc")
	obj := func() engines.Entry {
		return engines.Entry{Type: noCodecType, Object: &noCodecObject{TestObject{Elems: []string{"x"}}}}
	}
	store := func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		return obj(), engines.Store, nil
	}
	f.put(k, "old", engines.PutOptions{})
	_, errU := f.e.Update(k, store)
	_, errP := f.e.PrefixUpdate(k, []byte("s"), store)
	r := obj()
	r.Version = 1
	errR := f.e.Restore(k.Bucket, &engines.Record{Key: []byte("nc-restored"), Entry: r})
	if !f.e.Persistent() {
		must(t, errU)
		must(t, errP)
		must(t, errR)
		e, err := f.e.Get(k)
		must(t, err)
		if e.Type != noCodecType || e.Version != 2 {
			t.Fatalf("in-memory engine holds %+v", e)
		}
		return
	}
	for _, err := range []error{errU, errP, errR} {
		if !errors.Is(err, errs.ErrNotSupported) {
			t.Fatalf("persistent engine storing an object without a codec: %v, want %v", err, errs.ErrNotSupported)
		}
	}
	f.wantGet(k, "old", 1)
	_, err := f.e.PrefixGet(k, []byte("s"))
	wantCode(t, err, errs.DataNotExist)
	f.wantMissing(K("nc-restored"))
	f.wantCount(0, 1)
	must(t, f.e.ForEach(k.Bucket, func(*engines.Record) error { return nil }))
	// Objects with a codec are stored as before.
	storeObject(t, f.e, k, "y")
}

// testInvalidOptions: option values outside their enums, and counter
// bounds that no value satisfies, are refused with errs.InvalidArgument
// and change nothing, rather than read as some valid value (Cond 99 as
// CondAlways, Expire.Mode 77 as ExpireNever, Min > Max as always out of
// range). An UpdateFunc returning an unknown Action is refused the same way.
func testInvalidOptions(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	badCond := engines.PutOptions{Cond: 99}
	badMode := engines.PutOptions{Expire: engines.Expire{Mode: 77, At: f.clk.NowMs() + 1000}}
	for _, o := range []engines.PutOptions{badCond, badMode} {
		_, err := f.e.Put(K("new"), []byte("v"), o)
		wantCode(t, err, errs.InvalidArgument)
		_, err = f.e.PrefixPut(K("pk"), []byte("s"), []byte("v"), o)
		wantCode(t, err, errs.InvalidArgument)
		_, err = f.e.ItemAdd(K("items"), 5, bs("a"), o)
		wantCode(t, err, errs.InvalidArgument)
	}
	f.wantMissing(K("new"))
	f.wantRange(K("pk"), engines.RangeOptions{}, "")
	f.wantMissing(K("items"))
	f.put(K("old"), "v", engines.PutOptions{})
	for _, o := range []engines.PutOptions{badCond, badMode} {
		_, err := f.e.Put(K("old"), []byte("w"), o)
		wantCode(t, err, errs.InvalidArgument)
	}
	f.wantGet(K("old"), "v", 1)

	_, _, err := f.e.Incr(K("n"), 1, engines.IncrOptions{Expire: engines.Expire{Mode: 77}})
	wantCode(t, err, errs.InvalidArgument)
	_, _, err = f.e.Incr(K("n"), 1, engines.IncrOptions{Min: 10, Max: 0, HasMin: true, HasMax: true})
	wantCode(t, err, errs.InvalidArgument)
	f.wantMissing(K("n"))
	// Only bounds that are both set are compared.
	f.incr(K("n"), 20, engines.IncrOptions{Min: 10, Max: 0, HasMin: true}, 20, 1)
	f.incr(K("n"), -30, engines.IncrOptions{Min: 10, Max: 0, HasMax: true}, -10, 2)

	bad := func(cur engines.Entry, exists bool) (engines.Entry, engines.Action, error) {
		cur.Value = []byte("changed")
		return cur, engines.Action(9), nil
	}
	_, err = f.e.Update(K("old"), bad)
	wantCode(t, err, errs.InvalidArgument)
	f.wantGet(K("old"), "v", 1)
	f.pput(K("pk"), "s", "v", engines.PutOptions{})
	_, err = f.e.PrefixUpdate(K("pk"), []byte("s"), bad)
	wantCode(t, err, errs.InvalidArgument)
	f.wantRange(K("pk"), engines.RangeOptions{}, "s=v/v1")
}

// testRestoreSkeyOrder: a prefix record's skeys come in strictly ascending
// order (engines.Record); a record with a duplicate or out-of-order skey is
// refused by every engine with errs.InvalidArgument and changes nothing,
// rather than one engine keeping the last duplicate and another refusing.
func testRestoreSkeyOrder(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	pk := engines.Key{Bucket: 7, Key: []byte("pk")}
	f.pput(pk, "a", "old", engines.PutOptions{})
	kv := func(s, v string) engines.KV {
		return engines.KV{Key: []byte(s), Entry: engines.Entry{Value: []byte(v), Version: 1}}
	}
	for _, skeys := range [][]engines.KV{
		{kv("x", "1"), kv("x", "2")},
		{kv("a", "1"), kv("b", "2"), kv("b", "3")},
		{kv("b", "1"), kv("a", "2")},
	} {
		err := f.e.Restore(7, &engines.Record{Key: []byte("pk"), Prefix: skeys})
		wantCode(t, err, errs.InvalidArgument)
		f.wantRange(pk, engines.RangeOptions{}, "a=old/v1")
	}
	f.wantCount(0, 1)
	must(t, f.e.Restore(7, &engines.Record{Key: []byte("pk"), Prefix: []engines.KV{kv("", "0"), kv("x", "1"), kv("x\x00", "2")}}))
	f.wantRange(pk, engines.RangeOptions{}, "=0/v1 x=1/v1 x\x00=2/v1")
}

// testRestoreMerge: a merged prefix record (engines.Record.Merge, a big
// pkey's later piece in a move) writes its skeys exactly as given,
// versions and expiries included, and keeps the pkey's other skeys; the
// pkey is counted once, and a merge into a missing pkey creates it. The
// flag survives the record codec. A merged plain record must carry an
// object that merges (engines.PieceMerger): a string is refused.
func testRestoreMerge(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	pk := engines.Key{Bucket: 7, Key: []byte("pk")}
	f.pput(pk, "a", "old", engines.PutOptions{})
	f.pput(pk, "c", "old", engines.PutOptions{})
	exp := f.clk.Now().UnixMilli() + 100_000
	rec := &engines.Record{Key: []byte("pk"), Merge: true, Prefix: []engines.KV{
		{Key: []byte("b"), Entry: engines.Entry{Value: []byte("new"), Version: 7, ExpireAt: exp}},
		{Key: []byte("c"), Entry: engines.Entry{Value: []byte("new"), Version: 9}},
	}}
	b, err := engines.AppendRecord(nil, rec)
	must(t, err)
	got, err := engines.DecodeRecord(b)
	must(t, err)
	if !got.Merge {
		t.Fatal("Record.Merge lost in the codec")
	}
	must(t, f.e.Restore(7, got))
	f.wantRange(pk, engines.RangeOptions{}, "a=old/v1 b=new/v7 c=new/v9")
	e, err := f.e.PrefixGet(pk, []byte("b"))
	must(t, err)
	if e.ExpireAt != exp {
		t.Fatalf("merged skey expires at %d, want %d", e.ExpireAt, exp)
	}
	f.wantCount(0, 1)
	must(t, f.e.Restore(7, &engines.Record{Key: []byte("pk2"), Merge: true, Prefix: []engines.KV{
		{Key: []byte("x"), Entry: engines.Entry{Value: []byte("1"), Version: 3}}}}))
	f.wantRange(engines.Key{Bucket: 7, Key: []byte("pk2")}, engines.RangeOptions{}, "x=1/v3")
	f.wantCount(0, 2)
	// Without Merge, the same record replaces the pkey.
	must(t, f.e.Restore(7, &engines.Record{Key: []byte("pk"), Prefix: rec.Prefix[1:]}))
	f.wantRange(pk, engines.RangeOptions{}, "c=new/v9")
	f.wantCount(0, 2)

	err = f.e.Restore(7, &engines.Record{Key: []byte("s"), Merge: true, Entry: engines.Entry{Value: []byte("v"), Version: 1}})
	wantCode(t, err, errs.InvalidArgument)
	f.wantMissing(engines.Key{Bucket: 7, Key: []byte("s")})
}

// testSnapshot: an engine that takes snapshots (engines.SnapshotOf; the
// persistent ones) reads a snapshot as ForEach read the engine when it was
// taken, plain keys and pkeys of every area, whatever is written, deleted
// or dropped since; a second Close does nothing. The in-memory engines
// and kdb take none.
func testSnapshot(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	snap, ok, err := engines.SnapshotOf(f.e)
	must(t, err)
	if !ok {
		if f.e.Name() == "ldb" {
			t.Fatal("ldb takes no snapshot")
		}
		t.Skip("no snapshots in " + f.e.Name())
	}
	must(t, snap.Close())
	k := func(area uint16, key string) engines.Key { return engines.Key{Bucket: 7, Area: area, Key: []byte(key)} }
	f.put(k(0, "a"), "1", engines.PutOptions{})
	f.put(k(0, "b"), "2", engines.PutOptions{})
	f.put(k(3, "a"), "3", engines.PutOptions{})
	f.pput(k(0, "pk"), "x", "4", engines.PutOptions{})
	f.pput(k(3, "pk"), "y", "5", engines.PutOptions{})
	f.put(engines.Key{Bucket: 8, Key: []byte("other")}, "6", engines.PutOptions{})
	for i := range 1100 { // more skeys than one call of the snapshot's ForEach brings
		f.pput(k(0, "big"), fmt.Sprintf("s%04d", i), "v", engines.PutOptions{})
	}
	want := dump(t, f.e, 7)
	snap, _, err = engines.SnapshotOf(f.e)
	must(t, err)
	defer snap.Close()
	f.put(k(0, "a"), "changed", engines.PutOptions{})
	must(t, f.e.Remove(k(0, "b"), 0))
	f.pput(k(0, "pk"), "z", "new", engines.PutOptions{})
	f.put(k(5, "new"), "7", engines.PutOptions{})
	must(t, f.e.DeleteBucket(7))
	// A pkey's skeys may come in several calls: joined back here.
	joined := func(bucket uint32, fn func(*engines.Record) error) error {
		var last *engines.Record
		err := snap.ForEach(bucket, func(r *engines.Record) error {
			if last != nil && r.Prefix != nil && last.Prefix != nil && last.Area == r.Area && string(last.Key) == string(r.Key) {
				last.Prefix = append(last.Prefix, r.Prefix...)
				return nil
			}
			if last != nil {
				if err := fn(last); err != nil {
					return err
				}
			}
			c := *r
			c.Key = slices.Clone(r.Key)
			c.Prefix = slices.Clone(r.Prefix)
			last = &c
			return nil
		})
		if err == nil && last != nil {
			err = fn(last)
		}
		return err
	}
	got := dumpEach(t, joined, 7)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the snapshot reads\n%s\nwant (the engine when it was taken)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(dump(t, f.e, 7)) != 0 {
		t.Fatal("the bucket dropped after the snapshot still reads in the engine")
	}
	must(t, snap.Close())
	must(t, snap.Close())
}
