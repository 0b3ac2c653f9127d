package tests

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// TestBitmapsThroughProxy: the bitmap commands route through a real proxy
// to replicated dataservers (the key of SETBIT/GETBIT/BITCOUNT/BITPOS/
// BITFIELD[_RO] at 1, BITOP's destination and sources at 2.., which must
// share a bucket), answer as redis-server answers the same commands, and
// leave every copy of the bucket with the same record.
func TestBitmapsThroughProxy(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 3, Copies: 2, Buckets: 64}})
	p := c.Client(0)
	rd := redis.NewClient(&redis.Options{Addr: testutil.StartRedis(t), MaxRetries: -1})
	t.Cleanup(func() { _ = rd.Close() })
	x := ctx(t)

	// Exact replies, as go-redis reads them.
	if n, err := p.SetBit(x, "{bm}a", 7, 1).Result(); err != nil || n != 0 {
		t.Fatalf("SETBIT = %d, %v", n, err)
	}
	if n, err := p.SetBit(x, "{bm}a", 100, 1).Result(); err != nil || n != 0 {
		t.Fatalf("SETBIT = %d, %v", n, err)
	}
	if v, err := p.Get(x, "{bm}a").Result(); err != nil || v != "\x01"+strings.Repeat("\x00", 11)+"\x08" {
		t.Fatalf("GET of a bitmap = %q, %v", v, err)
	}
	if n, err := p.BitCount(x, "{bm}a", &redis.BitCount{Start: 7, End: 99, Unit: "BIT"}).Result(); err != nil || n != 1 {
		t.Fatalf("BITCOUNT 7 99 BIT = %d, %v", n, err)
	}
	if n, err := p.BitOpNot(x, "{bm}not", "{bm}a").Result(); err != nil || n != 13 {
		t.Fatalf("BITOP NOT = %d, %v", n, err)
	}
	if v, err := p.BitField(x, "{bm}f", "SET", "i8", 0, 100, "INCRBY", "u2", 100, 1).Result(); err != nil || !reflect.DeepEqual(v, []int64{0, 1}) {
		t.Fatalf("BITFIELD = %v, %v", v, err)
	}
	if v, err := p.Do(x, "BITFIELD", "{bm}f", "OVERFLOW", "FAIL", "INCRBY", "u2", 100, 5, "GET", "i8", 0).Slice(); err != nil ||
		!reflect.DeepEqual(v, []any{nil, int64(100)}) {
		t.Fatalf("BITFIELD OVERFLOW FAIL = %#v, %v", v, err)
	}
	if v, err := p.BitFieldRO(x, "{bm}f", "i8", 0).Result(); err != nil || !reflect.DeepEqual(v, []int64{100}) {
		t.Fatalf("BITFIELD_RO = %v, %v", v, err)
	}
	// BITOP over two buckets is refused, as other atomic multi-key writes.
	var k1, k2 string
	for i := 0; k2 == ""; i++ {
		k := fmt.Sprintf("bm:%d", i)
		switch {
		case k1 == "":
			k1 = k
		case route.BucketOf([]byte(k), 64) != route.BucketOf([]byte(k1), 64):
			k2 = k
		}
	}
	if err := p.BitOpAnd(x, k1, k1, k2).Err(); err == nil || err.Error() != "CROSSSLOT Keys in request don't hash to the same slot" {
		t.Fatalf("BITOP over two buckets: %v", err)
	}

	// The same commands on redis-server and through the proxy.
	if err := rd.FlushAll(x).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Del(x, "{bm}a", "{bm}not", "{bm}f").Err(); err != nil {
		t.Fatal(err)
	}
	script := [][]any{
		{"SETBIT", "{bm}a", 7, 1}, {"SETBIT", "{bm}a", 7, 1}, {"SETBIT", "{bm}a", 100, 1}, {"GETBIT", "{bm}a", 100},
		{"GETBIT", "{bm}a", 4294967295}, {"SETBIT", "{bm}a", 4294967296, 1}, {"SETBIT", "{bm}a", 0, 2}, {"GET", "{bm}a"},
		{"SET", "{bm}b", "foobar", "EX", 100}, {"SETBIT", "{bm}b", 70, 1}, {"TTL", "{bm}b"}, {"GET", "{bm}b"},
		{"BITCOUNT", "{bm}a"}, {"BITCOUNT", "{bm}b", 1, 1}, {"BITCOUNT", "{bm}b", 5, 30, "BIT"}, {"BITCOUNT", "{bm}b", 0},
		{"BITPOS", "{bm}a", 1}, {"BITPOS", "{bm}a", 1, 1}, {"BITPOS", "{bm}b", 0, 1, -1, "BIT"}, {"BITPOS", "{bm}a", 2},
		{"BITOP", "AND", "{bm}d", "{bm}a", "{bm}b"}, {"GET", "{bm}d"}, {"BITOP", "OR", "{bm}d", "{bm}a", "{bm}b", "{bm}none"},
		{"GET", "{bm}d"}, {"BITOP", "XOR", "{bm}d", "{bm}b", "{bm}a"}, {"GET", "{bm}d"}, {"BITOP", "NOT", "{bm}d", "{bm}b"},
		{"GET", "{bm}d"}, {"TTL", "{bm}d"}, {"BITOP", "NOT", "{bm}d", "{bm}a", "{bm}b"}, {"BITOP", "OR", "{bm}d", "{bm}none"},
		{"EXISTS", "{bm}d"}, {"LPUSH", "{bm}l", "x"}, {"BITOP", "AND", "{bm}d", "{bm}l"}, {"SETBIT", "{bm}l", 0, 1},
		{"BITFIELD", "{bm}f", "SET", "i8", 0, 100, "GET", "i8", 0, "INCRBY", "u2", 100, 1, "OVERFLOW", "SAT", "INCRBY", "i8", 200, -900},
		{"BITFIELD", "{bm}f", "OVERFLOW", "FAIL", "INCRBY", "u2", 102, 5, "SET", "i64", "#2", -1, "GET", "u63", 129},
		{"GET", "{bm}f"}, {"BITFIELD", "{bm}g", "OVERFLOW", "FAIL", "SET", "u2", 40, 9}, {"GET", "{bm}g"},
		{"BITFIELD", "{bm}f", "GET", "u64", 0}, {"BITFIELD", "{bm}f", "OVERFLOW", "FOO"}, {"BITFIELD", "{bm}f", "FOO"},
		{"BITFIELD_RO", "{bm}f", "GET", "i8", 0, "GET", "u4", "#3"}, {"BITFIELD_RO", "{bm}f", "SET", "i8", 0, 1},
		{"BITFIELD", "{bm}none", "GET", "i8", 0}, {"EXISTS", "{bm}none"}, {"BITOP", "XOR", "{bm}e", "{bm}f", "{bm}a"},
		{"GET", "{bm}e"},
	}
	for _, cmd := range script {
		want, werr := rd.Do(x, cmd...).Result()
		got, gerr := p.Do(x, cmd...).Result()
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%v\n  proxy: %#v %v\n  redis: %#v %v", cmd, got, gerr, want, werr)
		}
	}

	// Every copy of the bucket holds the master's record.
	tbl := c.Table()
	b := tbl.Bucket([]byte("{bm}"))
	holders := append([]string{tbl.Master(b)}, tbl.Slaves(b)...)
	if len(holders) != 2 {
		t.Fatalf("bucket %d has copies %v, want 2", b, holders)
	}
	engineOf := func(addr string) engines.Engine {
		for _, ds := range c.DataServers {
			if ds != nil && ds.Addr() == addr {
				return ds.Engine()
			}
		}
		t.Fatalf("no dataserver at %s", addr)
		return nil
	}
	for _, key := range []string{"{bm}a", "{bm}b", "{bm}d", "{bm}e", "{bm}f", "{bm}g"} {
		testutil.EventuallyErr(t, 5*time.Second, func() error {
			var first string
			for i, addr := range holders {
				e, err := engineOf(addr).Get(engines.Key{Bucket: uint32(b), Key: []byte(key)})
				rec := fmt.Sprintf("%v type=%v value=%q version=%d expire=%d", err, e.Type, e.Value, e.Version, e.ExpireAt)
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
