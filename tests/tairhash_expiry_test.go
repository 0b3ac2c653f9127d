package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// TestTairHashFieldsExpireActively: through a proxy, TairHash fields
// that expire leave EXHLEN (without NOEXP) within about a second with
// nothing touching their key, a key whose last field expired is gone,
// and every copy of the bucket holds the master's record (the master's
// EXHDEL reached the slave).
func TestTairHashFieldsExpireActively(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	p := c.Client(0)
	x := ctx(t)
	for _, cmd := range [][]any{
		{"EXHSET", "{th}k", "a", "1", "PX", "300"},
		{"EXHSET", "{th}k", "b", "2", "PX", "500"},
		{"EXHSET", "{th}k", "c", "3"},
		{"EXHSET", "{th}g", "a", "1", "PX", "300"},
		{"EXPIRE", "{th}g", "100"}, // the key would outlive its fields
	} {
		if err := p.Do(x, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	if n, err := p.Do(x, "EXHLEN", "{th}k").Int64(); err != nil || n != 3 {
		t.Fatalf("EXHLEN before expiry = %d, %v", n, err)
	}
	start := time.Now()
	testutil.EventuallyErr(t, 3*time.Second, func() error {
		n, err := p.Do(x, "EXHLEN", "{th}k").Int64()
		e, err2 := p.Exists(x, "{th}g").Result()
		if err != nil || err2 != nil || n != 1 || e != 0 {
			return fmt.Errorf("EXHLEN {th}k = %d (%v), EXISTS {th}g = %d (%v); want 1 and 0", n, err, e, err2)
		}
		return nil
	})
	t.Logf("expired fields gone after %v", time.Since(start))

	tbl := c.Table()
	b := tbl.Bucket([]byte("{th}"))
	holders := append([]string{tbl.Master(b)}, tbl.Slaves(b)...)
	engineOf := func(addr string) engines.Engine {
		for _, ds := range c.DataServers {
			if ds != nil && ds.Addr() == addr {
				return ds.Engine()
			}
		}
		t.Fatalf("no dataserver at %s", addr)
		return nil
	}
	for _, key := range []string{"{th}k", "{th}g"} {
		testutil.EventuallyErr(t, 5*time.Second, func() error {
			var first string
			for i, addr := range holders {
				e, err := engineOf(addr).Get(engines.Key{Bucket: uint32(b), Key: []byte(key)})
				fields := -1
				if e.Object != nil {
					fields = e.Object.Len()
				}
				rec := fmt.Sprintf("%v type=%v fields=%d version=%d expire=%d", err, e.Type, fields, e.Version, e.ExpireAt)
				if i == 0 {
					first = rec
				} else if rec != first {
					return fmt.Errorf("%s: master %s has %s, slave %s has %s", key, holders[0], first, addr, rec)
				}
			}
			return nil
		})
	}
}
