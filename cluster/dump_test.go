package cluster

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/testutil"
)

// TestDumpRestoreThroughProxy: DUMP and RESTORE through a real proxy with
// go-redis: a value of each type DUMPed here RESTOREs into redis-server
// with the same content, one DUMPed by redis-server RESTOREs here (with a
// TTL), and RESTORE's refusals are Redis's.
func TestDumpRestoreThroughProxy(t *testing.T) {
	_, p := startWithClient(t, Options{DataServers: 2, Buckets: 64}, 2)
	rd := redis.NewClient(&redis.Options{Addr: testutil.StartRedis(t), MaxRetries: -1, Protocol: 2})
	defer rd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	long := strings.Repeat("compressible ", 50)
	setup := [][]any{
		{"SET", "d:s", long}, {"SET", "d:i", "12345"},
		{"RPUSH", "d:l", "a", "1", long, "-7"},
		{"SADD", "d:set", "x", "2", "y"},
		{"ZADD", "d:z", "1.5", "a", "-2", "b"},
		{"HSET", "d:h", "f", "v", "n", "1"},
	}
	reads := func(k string) [][]any {
		switch k {
		case "d:s", "d:i":
			return [][]any{{"GET", k}}
		case "d:l":
			return [][]any{{"LRANGE", k, 0, -1}}
		case "d:set":
			return [][]any{{"SMEMBERS", k}}
		case "d:z":
			return [][]any{{"ZRANGE", k, 0, -1, "WITHSCORES"}}
		}
		return [][]any{{"HGETALL", k}}
	}
	show := func(cl *redis.Client, args []any) string {
		v, err := cl.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		switch x := v.(type) {
		case []any:
			var s []string
			for _, e := range x {
				s = append(s, e.(string))
			}
			switch args[0] {
			case "SMEMBERS":
				sort.Strings(s)
			case "HGETALL": // field=value pairs, in byte order
				var kv []string
				for i := 0; i+1 < len(s); i += 2 {
					kv = append(kv, s[i]+"="+s[i+1])
				}
				sort.Strings(kv)
				s = kv
			}
			return strings.Join(s, ",")
		case map[any]any:
			var s []string
			for f, val := range x {
				s = append(s, f.(string)+"="+val.(string))
			}
			sort.Strings(s)
			return strings.Join(s, ",")
		}
		return v.(string)
	}
	for _, args := range setup {
		if err := p.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for _, args := range setup {
		k := args[1].(string)
		payload, err := p.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s through the proxy: %v", k, err)
		}
		if err := rd.Restore(ctx, k, 0, payload).Err(); err != nil {
			t.Fatalf("redis-server RESTORE %s: %v", k, err)
		}
		for _, r := range reads(k) {
			if a, b := show(p, r), show(rd, r); a != b {
				t.Errorf("%v: proxy %q, redis %q", r, a, b)
			}
		}
		// and back: redis-server's payload into a new key here
		back, err := rd.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		nk := k + ":back"
		if err := p.Restore(ctx, nk, 100*time.Second, back).Err(); err != nil {
			t.Fatalf("RESTORE %s through the proxy: %v", nk, err)
		}
		if ttl, err := p.TTL(ctx, nk).Result(); err != nil || ttl != 100*time.Second {
			t.Errorf("TTL %s = %v, %v", nk, ttl, err)
		}
		for _, r := range reads(k) {
			r2 := append([]any{r[0], nk}, r[2:]...)
			if a, b := show(p, r2), show(rd, r); a != b {
				t.Errorf("%v: proxy %q, redis %q", r2, a, b)
			}
		}
		if err := p.Restore(ctx, nk, 0, back).Err(); err == nil || err.Error() != "BUSYKEY Target key name already exists." {
			t.Errorf("RESTORE over %s: %v", nk, err)
		}
		if err := p.RestoreReplace(ctx, nk, 0, back).Err(); err != nil {
			t.Errorf("RESTORE %s REPLACE: %v", nk, err)
		}
	}
	if err := p.Restore(ctx, "d:bad", 0, "not a payload").Err(); err == nil || err.Error() != "ERR DUMP payload version or checksum are wrong" {
		t.Errorf("RESTORE of a bad payload: %v", err)
	}
	if err := p.Dump(ctx, "d:missing").Err(); err != redis.Nil {
		t.Errorf("DUMP of a missing key: %v", err)
	}
}
