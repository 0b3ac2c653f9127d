package engines_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	_ "github.com/tairkv/tair/engines/kdb"
	_ "github.com/tairkv/tair/engines/ldb"
	_ "github.com/tairkv/tair/engines/mdb"
	_ "github.com/tairkv/tair/engines/rdb"
)

// TestExpiredKeysCounted: every engine counts the expired keys it
// reclaims, once each, whether a write found one (lazy expiry) or a sweep
// (Compact) did; a key deleted before it expired, or one not yet expired,
// is not counted (the dataserver's redis_expired_keys_total).
func TestExpiredKeysCounted(t *testing.T) {
	for _, name := range []string{"mdb", "rdb", "ldb", "kdb"} {
		t.Run(name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
			e, err := engines.Open(name, engines.Options{
				Dir:           t.TempDir(),
				Now:           func() time.Time { return time.UnixMilli(now.Load()) },
				SweepInterval: time.Hour,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ec, ok := e.(interface{ ExpiredKeys() int64 })
			if !ok {
				t.Fatalf("%s has no ExpiredKeys", name)
			}
			at := engines.Expire{Mode: engines.ExpireAt, At: now.Load() + 1000}
			key := func(s string) engines.Key { return engines.Key{Bucket: 3, Area: 1, Key: []byte(s)} }
			for _, k := range []string{"lazy", "swept1", "swept2", "deleted"} {
				if _, err := e.Put(key(k), []byte("v"), engines.PutOptions{Expire: at}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Put(key("kept"), []byte("v"), engines.PutOptions{Expire: engines.Expire{Mode: engines.ExpireAt, At: now.Load() + 10000}}); err != nil {
				t.Fatal(err)
			}
			if err := e.Remove(key("deleted"), 0); err != nil {
				t.Fatal(err)
			}
			if n := ec.ExpiredKeys(); n != 0 {
				t.Fatalf("before expiry: %d expired", n)
			}
			now.Add(2000)
			// A write on an expired key reclaims it.
			if _, err := e.Put(key("lazy"), []byte("w"), engines.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if n := ec.ExpiredKeys(); n != 1 {
				t.Fatalf("after a write on an expired key: %d expired, want 1", n)
			}
			// A read does not reclaim; the sweep does.
			if _, err := e.Get(key("swept1")); err == nil {
				t.Fatal("expired key read")
			}
			if err := e.Compact(); err != nil {
				t.Fatal(err)
			}
			if n := ec.ExpiredKeys(); n != 3 {
				t.Fatalf("after the sweep: %d expired, want 3", n)
			}
			if err := e.Compact(); err != nil {
				t.Fatal(err)
			}
			if n := ec.ExpiredKeys(); n != 3 {
				t.Fatalf("after a second sweep: %d expired, want 3", n)
			}
		})
	}
}
