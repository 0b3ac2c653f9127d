package cluster

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
)

// TestGeoThroughProxy: the geo commands reach their dataserver through a
// real proxy and answer exactly what Redis answers (the documented Sicily
// example, then the same commands on redis-server); a STORE destination
// in another bucket is CROSSSLOT.
func TestGeoThroughProxy(t *testing.T) {
	_, p := startWithClient(t, Options{DataServers: 2, Buckets: 64}, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const key = "{geo}Sicily"
	if n, err := p.GeoAdd(ctx, key,
		&redis.GeoLocation{Name: "Palermo", Longitude: 13.361389, Latitude: 38.115556},
		&redis.GeoLocation{Name: "Catania", Longitude: 15.087269, Latitude: 37.502669}).Result(); err != nil || n != 2 {
		t.Fatalf("GEOADD = %d, %v", n, err)
	}
	// Redis's documentation's replies.
	if d, err := p.Do(ctx, "GEODIST", key, "Palermo", "Catania").Text(); err != nil || d != "166274.1516" {
		t.Fatalf("GEODIST = %q, %v", d, err)
	}
	if d, err := p.Do(ctx, "GEODIST", key, "Palermo", "Catania", "km").Text(); err != nil || d != "166.2742" {
		t.Fatalf("GEODIST km = %q, %v", d, err)
	}
	got, err := p.Do(ctx, "GEOSEARCH", key, "FROMLONLAT", 15, 37, "BYRADIUS", 200, "km", "ASC", "WITHCOORD", "WITHDIST").Slice()
	want := []any{
		[]any{"Catania", "56.4413", []any{"15.08726745843887329", "37.50266842333162032"}},
		[]any{"Palermo", "190.4424", []any{"13.36138933897018433", "38.11555639549629859"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("GEOSEARCH = %#v, %v\nwant %#v", got, err, want)
	}
	if n, err := p.Do(ctx, "GEOSEARCHSTORE", "{geo}near", key, "FROMMEMBER", "Palermo", "BYBOX", 400, 400, "km", "STOREDIST").Int(); err != nil || n != 2 {
		t.Fatalf("GEOSEARCHSTORE = %d, %v", n, err)
	}
	if v, err := p.ZRangeWithScores(ctx, "{geo}near", 0, -1).Result(); err != nil || len(v) != 2 || v[0].Member != "Palermo" || v[0].Score != 0 {
		t.Fatalf("ZRANGE of the stored distances = %v, %v", v, err)
	}

	// A destination in another bucket is refused.
	other := ""
	for i := 0; other == ""; i++ {
		if k := fmt.Sprintf("geo:%d", i); route.BucketOf([]byte(k), 64) != route.BucketOf([]byte(key), 64) {
			other = k
		}
	}
	for _, args := range [][]any{
		{"GEORADIUS", key, 15, 37, 200, "km", "STORE", other},
		{"GEORADIUSBYMEMBER", key, "Palermo", 200, "km", "STOREDIST", other},
		{"GEOSEARCHSTORE", other, key, "FROMMEMBER", "Palermo", "BYRADIUS", 1, "km"},
	} {
		if err := p.Do(ctx, args...).Err(); err == nil || err.Error() != "CROSSSLOT Keys in request don't hash to the same slot" {
			t.Fatalf("%v: %v, want CROSSSLOT", args, err)
		}
	}

	// The same commands on redis-server and through the proxy.
	rd := redis.NewClient(&redis.Options{Addr: testutil.StartRedis(t), MaxRetries: -1, Protocol: 2})
	defer rd.Close()
	for _, args := range [][]any{
		{"GEOADD", "{geo}p", 2.35, 48.85, "Paris", -0.12, 51.5, "London", 4.35, 50.85, "Brussels", 13.4, 52.52, "Berlin"},
		{"GEOADD", "{geo}p", "CH", "XX", 2.3522, 48.8566, "Paris", 0, 0, "Nowhere"},
		{"GEOPOS", "{geo}p", "Paris", "Nowhere", "Berlin"},
		{"GEOHASH", "{geo}p", "Paris", "London", "Nowhere"},
		{"GEODIST", "{geo}p", "Paris", "Berlin", "mi"},
		{"GEODIST", "{geo}p", "Paris", "Nowhere"},
		{"GEOSEARCH", "{geo}p", "FROMMEMBER", "Brussels", "BYRADIUS", 400, "km", "WITHDIST", "WITHHASH", "DESC"},
		{"GEOSEARCH", "{geo}p", "FROMLONLAT", 5, 50, "BYBOX", 1000, 600, "km", "COUNT", 2, "WITHCOORD"},
		{"GEORADIUS", "{geo}p", 5, 50, 1000, "km", "COUNT", 3, "DESC", "STORE", "{geo}d"},
		{"ZRANGE", "{geo}d", 0, -1},
		{"GEORADIUSBYMEMBER_RO", "{geo}p", "Berlin", 1000, "km", "WITHDIST"},
		{"GEOSEARCH", "{geo}p", "FROMMEMBER", "Nowhere", "BYRADIUS", 1, "km"},
		{"GEOADD", "{geo}p", 200, 1, "x"},
		{"GEODIST", "{geo}p", "Paris", "Berlin", "parsecs"},
	} {
		w, werr := rd.Do(ctx, args...).Result()
		g, gerr := p.Do(ctx, args...).Result()
		if !reflect.DeepEqual(g, w) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%v\n  got: %#v, %v\nredis: %#v, %v", args, g, gerr, w, werr)
		}
	}
}
