package enginetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tairkv/tair/engines"
)

// testBucketKeys checks engines.BucketKeys (a move's key list): every
// plain key and pkey stored throughout the listing is listed, once per
// namespace, in its area, and nothing of another bucket, while other keys
// of the bucket are inserted and deleted concurrently.
func testBucketKeys(t *testing.T, open OpenFunc) {
	f := newFixture(t, open, nil)
	e := f.e
	const bucket, other = 5, 6
	stable := map[string]bool{}
	for i := 0; i < 1500; i++ {
		area := uint16(i % 3)
		k := fmt.Sprintf("stable%04d", i)
		if _, err := e.Put(engines.Key{Bucket: bucket, Area: area, Key: []byte(k)}, []byte("v"), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		stable[fmt.Sprintf("%d/%s/plain", area, k)] = true
		if _, err := e.Put(engines.Key{Bucket: other, Area: area, Key: []byte("x" + k)}, []byte("v"), engines.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i++ {
		pk := engines.Key{Bucket: bucket, Area: 1, Key: []byte(fmt.Sprintf("pk%02d", i))}
		for j := 0; j < 30; j++ {
			if _, err := e.PrefixPut(pk, []byte(fmt.Sprintf("s%02d", j)), []byte("v"), engines.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		stable[fmt.Sprintf("1/%s/prefix", pk.Key)] = true
	}
	// Churn: keys of the same bucket come and go during each listing.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			k := engines.Key{Bucket: bucket, Area: uint16(i % 3), Key: []byte(fmt.Sprintf("churn%05d", i%4000))}
			if i%2 == 0 {
				_, _ = e.Put(k, []byte("c"), engines.PutOptions{})
			} else {
				_ = e.Remove(engines.Key{Bucket: bucket, Area: uint16((i - 1) % 3), Key: []byte(fmt.Sprintf("churn%05d", (i-1)%4000))}, 0)
			}
			pk := engines.Key{Bucket: bucket, Area: 2, Key: []byte(fmt.Sprintf("cpk%03d", i%200))}
			_, _ = e.PrefixPut(pk, []byte("s"), []byte("v"), engines.PutOptions{})
			if i%3 == 0 {
				_, _ = e.PrefixRemoveAll(pk)
			}
		}
	}()
	for round := 0; round < 5; round++ {
		seen := map[string]int{}
		err := engines.BucketKeys(e, bucket, func(area uint16, key []byte, prefix bool) error {
			kind := "plain"
			if prefix {
				kind = "prefix"
			}
			seen[fmt.Sprintf("%d/%s/%s", area, key, kind)]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for k := range stable {
			if seen[k] != 1 {
				t.Fatalf("round %d: stable key %s listed %d times", round, k, seen[k])
			}
		}
		for k, n := range seen {
			if len(k) > 3 && k[2:3] == "/" && k[3] == 'x' {
				t.Fatalf("round %d: key %s of another bucket listed", round, k)
			}
			if stable[k] {
				continue
			}
			if n > 1 {
				t.Fatalf("round %d: key %s listed %d times", round, k, n)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	// Nothing in an empty bucket.
	if err := engines.BucketKeys(e, 999, func(uint16, []byte, bool) error {
		t.Fatal("key listed in an empty bucket")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
