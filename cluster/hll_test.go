package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestHyperLogLogThroughProxy: PFADD, PFCOUNT and PFMERGE through a real
// proxy in front of replicated dataservers, with go-redis, answer what
// redis-server 7.0 answers (the numbers and bytes below are its), and
// keys of several buckets are refused as Redis Cluster refuses them.
func TestHyperLogLogThroughProxy(t *testing.T) {
	c, p := startWithClient(t, Options{DataServers: 2, Copies: 2, Buckets: 64}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	elems := func(from, to int) []any {
		var out []any
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("a%d", i))
		}
		return out
	}
	wantInt := func(what string, got int64, err error, want int64) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("%s = %d, %v; want %d", what, got, err, want)
		}
	}

	n, err := p.PFAdd(ctx, "{hll}a", elems(0, 1000)...).Result()
	wantInt("PFADD {hll}a a0..a999", n, err, 1)
	n, err = p.PFCount(ctx, "{hll}a").Result()
	wantInt("PFCOUNT {hll}a", n, err, 999)
	n, err = p.PFAdd(ctx, "{hll}b", elems(500, 5000)...).Result()
	wantInt("PFADD {hll}b a500..a4999", n, err, 1)
	n, err = p.PFCount(ctx, "{hll}b").Result()
	wantInt("PFCOUNT {hll}b", n, err, 4487)
	n, err = p.PFCount(ctx, "{hll}a", "{hll}b").Result()
	wantInt("PFCOUNT {hll}a {hll}b", n, err, 4999)
	if s, err := p.PFMerge(ctx, "{hll}c", "{hll}a", "{hll}b").Result(); err != nil || s != "OK" {
		t.Fatalf("PFMERGE = %q, %v", s, err)
	}
	n, err = p.PFCount(ctx, "{hll}c").Result()
	wantInt("PFCOUNT {hll}c", n, err, 4999)
	n, err = p.PFAdd(ctx, "{hll}a", "a1").Result()
	wantInt("PFADD {hll}a a1 again", n, err, 0)
	n, err = p.StrLen(ctx, "{hll}a").Result()
	wantInt("STRLEN {hll}a (sparse)", n, err, 1880)
	n, err = p.StrLen(ctx, "{hll}c").Result()
	wantInt("STRLEN {hll}c (dense)", n, err, 12304)

	// The bytes of a small sparse value, and its cached count after
	// PFCOUNT, as redis-server has them.
	n, err = p.PFAdd(ctx, "{hll}s", "x", "y", "z").Result()
	wantInt("PFADD {hll}s x y z", n, err, 1)
	const regs = "\x61\x84\x80\x58\xcd\x88\x45\xa0\x84\x08"
	if v, err := p.Get(ctx, "{hll}s").Result(); err != nil || v != "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"+regs {
		t.Fatalf("GET {hll}s = %q, %v", v, err)
	}
	n, err = p.PFCount(ctx, "{hll}s").Result()
	wantInt("PFCOUNT {hll}s", n, err, 3)
	if v, err := p.Get(ctx, "{hll}s").Result(); err != nil || v != "HYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00"+regs {
		t.Fatalf("GET {hll}s after PFCOUNT = %q, %v", v, err)
	}
	// The value moves by GET and SET.
	if err := p.Set(ctx, "{hll}copy", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"+regs, 0).Err(); err != nil {
		t.Fatal(err)
	}
	n, err = p.PFCount(ctx, "{hll}copy", "{hll}s").Result()
	wantInt("PFCOUNT {hll}copy {hll}s", n, err, 3)

	// Errors.
	p.Set(ctx, "{hll}str", "abc", 0)
	if err := p.PFAdd(ctx, "{hll}str", "x").Err(); err == nil || err.Error() != "WRONGTYPE Key is not a valid HyperLogLog string value." {
		t.Fatalf("PFADD on a plain string: %v", err)
	}
	p.SetRange(ctx, "{hll}s", 16, "\x7f")
	if err := p.PFCount(ctx, "{hll}s", "{hll}a").Err(); err == nil || err.Error() != "INVALIDOBJ Corrupted HLL object detected" {
		t.Fatalf("PFCOUNT of a corrupted value: %v", err)
	}
	a, b := "hll:x", "hll:y"
	tbl, err := c.Table(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; tbl.Bucket([]byte(a)) == tbl.Bucket([]byte(b)); i++ {
		b = fmt.Sprintf("hll:y%d", i)
	}
	const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"
	// PFCOUNT of keys in different buckets is answered by the proxy, from
	// each key's registers (proxy/gather.go), as one key's would be;
	// PFMERGE writes one of them, so its keys share a bucket.
	p.PFAdd(ctx, a, "1", "2", "3")
	p.PFAdd(ctx, b, "3", "4")
	n, err = p.PFCount(ctx, a, b).Result()
	wantInt("PFCOUNT across buckets", n, err, 4)
	if err := p.PFMerge(ctx, a, b).Err(); err == nil || err.Error() != crossSlot {
		t.Fatalf("PFMERGE across buckets: %v", err)
	}
}
