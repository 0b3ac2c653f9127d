package memstore_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/engines/enginetest"
	"github.com/tairkv/tair/engines/generic"
	"github.com/tairkv/tair/engines/generic/memstore"
	"github.com/tairkv/tair/internal/errs"
)

// The engines run the suite with the default layout (256 shards, a bucket
// in one shard). These layouts put many buckets and areas in one shard, or
// spread a bucket over several, so that the bucket filters of
// ForEach/DeleteBucket, shared tables and sub-sharding are exercised too.
var layouts = []struct{ shards, sub int }{{1, 1}, {4, 2}, {16, 16}, {256, 8}}

func opener(shards, sub int) enginetest.OpenFunc {
	return func(t *testing.T, o engines.Options) engines.Engine {
		st := memstore.New(memstore.Options{Shards: shards, SubShards: sub, Now: o.Now, SweepInterval: o.SweepInterval, MemoryLimit: o.MemoryLimit})
		e := generic.New(generic.Config{Name: "memstore", Store: st, Options: o})
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
}

func TestLayouts(t *testing.T) {
	for _, l := range layouts {
		t.Run(fmt.Sprintf("shards%d-sub%d", l.shards, l.sub), func(t *testing.T) {
			enginetest.Run(t, opener(l.shards, l.sub))
			enginetest.RunModel(t, opener(l.shards, l.sub), 5000)
		})
	}
}

func TestAllocSizes(t *testing.T) {
	for _, c := range []struct{ keyLen, valCap int }{{0, 0}, {1, 1}, {16, 32}, {17, 33}, {1000, 1 << 20}} {
		got := memstore.Charge(c.keyLen, c.valCap)
		if got < int64(c.keyLen+c.valCap) {
			t.Fatalf("Charge(%d, %d) = %d, less than the bytes", c.keyLen, c.valCap, got)
		}
	}
	// A record is charged its arena block: the size classes round a
	// record up by at most 1/4 (and 8 bytes), charges never shrink as the
	// value grows, and a record beyond the largest class (a dedicated
	// allocation) is charged its Go allocation: its bytes rounded up to
	// the heap's 8 KiB pages.
	base := memstore.Charge(0, 0)
	prev := base
	for n := 1; n <= 9000; n++ {
		got := memstore.Charge(0, n)
		if got < prev || got-base > (int64(n)+64)*5/4+8 {
			t.Fatalf("value of %d bytes charged %d over an empty record (%d before)", n, got-base, prev-base)
		}
		prev = got
	}
	for _, n := range []int{1 << 17, 1 << 20} {
		if d := memstore.Charge(0, n) - base; d < int64(n) || d > int64(n)+8192+64 {
			t.Fatalf("a dedicated record of %d bytes charged %d over an empty record", n, d)
		}
	}
}

// TestChaosAccounting runs writers, deleters, migrations, quota changes and
// time against one store with eviction on, then checks that the books
// balance: Count matches what ForEach sees, and deleting everything gives
// back every byte and key.
func TestChaosAccounting(t *testing.T) {
	clk := enginetest.NewClock()
	st := memstore.New(memstore.Options{Shards: 16, SubShards: 4, Now: clk.Now, MemoryLimit: 256 << 10, SweepInterval: time.Millisecond})
	e := generic.New(generic.Config{Name: "chaos", Store: st, Options: engines.Options{Now: clk.Now}})
	defer e.Close()
	const workers, ops = 4, 3000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < ops; i++ {
				area := uint16(rnd.IntN(3))
				k := enginetest.AK(area, fmt.Sprint("k", rnd.IntN(500)))
				exp := engines.Expire{}
				if rnd.IntN(3) == 0 {
					exp = engines.Expire{Mode: engines.ExpireAt, At: clk.NowMs() + int64(rnd.IntN(50))}
				}
				var err error
				switch op := rnd.IntN(100); {
				case op < 40:
					_, err = e.Put(k, make([]byte, rnd.IntN(300)), engines.PutOptions{Expire: exp})
				case op < 55:
					_, err = e.PrefixPut(k, []byte(fmt.Sprint(rnd.IntN(20))), []byte("v"), engines.PutOptions{Expire: exp})
				case op < 65:
					_, err = e.ItemAdd(k, 5, [][]byte{[]byte("it")}, engines.PutOptions{Expire: exp})
				case op < 75:
					err = e.Remove(k, 0)
				case op < 80:
					_, err = e.PrefixRemoveAll(k)
				case op < 85:
					_, err = e.Get(k)
				case op < 88:
					err = e.DeleteBucket(k.Bucket)
				case op < 91:
					var recs []*engines.Record
					err = e.ForEach(k.Bucket, func(r *engines.Record) error {
						c := *r
						c.Prefix = append([]engines.KV(nil), r.Prefix...)
						recs = append(recs, &c)
						return nil
					})
					for _, r := range recs {
						if err == nil {
							err = e.Restore(k.Bucket, r)
						}
					}
				case op < 93:
					e.SetQuota(area, int64(rnd.IntN(3))*(64<<10))
				case op < 96:
					clk.Advance(time.Duration(rnd.IntN(20)) * time.Millisecond)
				default:
					_ = e.Count(area)
				}
				switch errs.CodeOf(err) {
				case errs.OK, errs.DataNotExist, errs.TypeNotMatch, errs.Quota:
				default:
					t.Errorf("worker %d op %d: %v", w, i, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for a := uint16(0); a < 3; a++ {
		e.SetQuota(a, 0)
	}
	// Count agrees with a full scan.
	seen := map[uint16]int64{}
	for b := uint32(0); b < 1023; b++ {
		if err := e.ForEach(b, func(r *engines.Record) error { seen[r.Area]++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var keys int64
	for a := uint16(0); a < 3; a++ {
		if got := e.Count(a); got != seen[a] {
			t.Fatalf("area %d: Count %d, ForEach saw %d", a, got, seen[a])
		}
		keys += seen[a]
	}
	var evicted int64
	for a := uint16(0); a < 3; a++ {
		_, ev := st.Usage(a)
		evicted += ev
	}
	if keys == 0 || evicted == 0 {
		t.Fatalf("%d keys survived, %d evicted: the test exercised too little", keys, evicted)
	}
	t.Logf("%d keys survived, %d evicted", keys, evicted)
	var bytes int64
	for a := uint16(0); a < 3; a++ {
		b, _ := st.Usage(a)
		bytes += b
	}
	if bytes != st.TotalBytes() || bytes > 256<<10 {
		t.Fatalf("area bytes sum %d, total %d, limit %d", bytes, st.TotalBytes(), 256<<10)
	}
	for a := uint16(0); a < 3; a++ {
		if _, err := e.DeleteArea(a); err != nil {
			t.Fatal(err)
		}
		if b, _ := st.Usage(a); b != 0 || e.Count(a) != 0 {
			t.Fatalf("area %d after DeleteArea: %d bytes, %d keys", a, b, e.Count(a))
		}
	}
	if st.TotalBytes() != 0 {
		t.Fatalf("total bytes %d after deleting everything", st.TotalBytes())
	}
}

// TestKeyLongerThanARecordHolds: a record keeps its key's length in 16
// bits, so with an operator's key limit above that a longer key (or skey)
// is refused with ErrKeyTooLong, never stored with a cut length; the
// longest that fits reads back whole.
func TestKeyLongerThanARecordHolds(t *testing.T) {
	e := opener(4, 1)(t, engines.Options{MaxKeySize: 1 << 17})
	long := make([]byte, 1<<16)
	for i := range long {
		long[i] = byte('a' + i%26)
	}
	if _, err := e.Put(engines.Key{Key: long}, []byte("v"), engines.PutOptions{}); err != errs.ErrKeyTooLong {
		t.Fatalf("Put of a %d-byte key: %v, want ErrKeyTooLong", len(long), err)
	}
	if _, err := e.PrefixPut(engines.Key{Key: []byte("pk")}, long, []byte("v"), engines.PutOptions{}); err != errs.ErrKeyTooLong {
		t.Fatalf("PrefixPut of a %d-byte skey: %v, want ErrKeyTooLong", len(long), err)
	}
	fits := long[:1<<16-1]
	if _, err := e.Put(engines.Key{Key: fits}, []byte("v"), engines.PutOptions{}); err != nil {
		t.Fatalf("Put of a %d-byte key: %v", len(fits), err)
	}
	got, err := e.Get(engines.Key{Key: fits})
	if err != nil || string(got.Value) != "v" {
		t.Fatalf("Get of the %d-byte key: %q, %v", len(fits), got.Value, err)
	}
	var keys int
	if err := e.ForEach(0, func(r *engines.Record) error {
		if string(r.Key) != string(fits) {
			t.Errorf("ForEach key of %d bytes, want the %d-byte key", len(r.Key), len(fits))
		}
		keys++
		return nil
	}); err != nil || keys != 1 {
		t.Fatalf("ForEach: %d records, %v; want 1", keys, err)
	}
}
