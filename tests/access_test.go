package tests

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// TestHotkeysThroughProxy: redis-cli --hotkeys, against a cluster as
// tair up runs it, names the key read most first, as it does against
// redis-server; OBJECT FREQ after the same reads is redis-server's
// (allkeys-lfu). A key read once is exact (the first increment is
// certain). Later increments are drawn at random, so one key read 100
// times is one draw from a distribution (redis-server alone gives 7 to
// 13): the comparison is of the mean over many such keys, on both sides.
func TestHotkeysThroughProxy(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not installed (make test installs it)")
	}
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Buckets: 64}})
	ours := redis.NewClient(&redis.Options{Addr: c.Proxies[0].Addr(), MaxRetries: -1})
	defer ours.Close()
	theirs := redis.NewClient(&redis.Options{Addr: testutil.StartRedis(t), MaxRetries: -1})
	defer theirs.Close()
	if err := theirs.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu").Err(); err != nil {
		t.Fatal(err)
	}
	reads := map[string]int{"hot": 100, "warm": 1, "cold": 0}
	waitMinuteStart()
	for _, cl := range []*redis.Client{ours, theirs} {
		for k, n := range reads {
			if err := cl.Set(ctx, k, "v-"+k, 0).Err(); err != nil { // not a shared integer in Redis
				t.Fatal(err)
			}
			for range n {
				if err := cl.Get(ctx, k).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for k, n := range reads {
		got, err1 := ours.ObjectFreq(ctx, k).Result()
		want, err2 := theirs.ObjectFreq(ctx, k).Result()
		if err1 != nil || err2 != nil {
			t.Fatalf("OBJECT FREQ %s: %v, redis-server: %v", k, err1, err2)
		}
		if n <= 1 && got != want {
			t.Errorf("OBJECT FREQ %s after %d reads = %d, redis-server %d", k, n, got, want)
		}
	}

	_, port, _ := net.SplitHostPort(c.Proxies[0].Addr())
	out, err := exec.Command("redis-cli", "-p", port, "--hotkeys").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --hotkeys: %v\n%s", err, out)
	}
	_, summary, _ := strings.Cut(string(out), "-------- summary -------")
	var found []string
	for _, l := range strings.Split(summary, "\n") {
		if _, name, ok := strings.Cut(l, "keyname: "); ok {
			found = append(found, name)
		}
	}
	if len(found) != 3 || found[0] != `"hot"` || found[1] != `"warm"` {
		t.Fatalf("redis-cli --hotkeys found %q, want hot, warm, cold:\n%s", found, out)
	}

	// The drawn increments: 40 keys read 100 times each on both sides.
	// One key's counter has a standard deviation near 1.4, so the
	// difference of the two means has one near 0.3; a bound of 1.5 is
	// five of those, and still catches an increment rule that is off by
	// one step.
	const keys, hits = 40, 100
	mean := func(cl *redis.Client) float64 {
		waitMinuteStart() // a minute boundary between reads decays the counter
		sum := 0.0
		for i := range keys {
			k := "freq:" + strconv.Itoa(i)
			if err := cl.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
				t.Fatal(err)
			}
			p := cl.Pipeline()
			for range hits {
				p.Get(ctx, k)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			f, err := cl.ObjectFreq(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			sum += float64(f)
		}
		return sum / keys
	}
	got, want := mean(ours), mean(theirs)
	if got-want > 1.5 || want-got > 1.5 {
		t.Errorf("mean OBJECT FREQ of %d keys read %d times = %.2f, redis-server %.2f", keys, hits, got, want)
	}
	t.Logf("mean OBJECT FREQ of %d keys read %d times = %.2f, redis-server %.2f", keys, hits, got, want)
}

// TestNoTouchThroughProxy: a client in CLIENT NO-TOUCH mode reads a key
// without resetting its idle time or counting in its frequency; its TOUCH
// does both (Redis 7.2's behaviour; the redis-server the tests run, 7.0,
// has no NO-TOUCH to compare with).
func TestNoTouchThroughProxy(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 2, Buckets: 64}})
	cl := redis.NewClient(&redis.Options{Addr: c.Proxies[0].Addr(), MaxRetries: -1, PoolSize: 1})
	defer cl.Close()
	waitMinuteStart()
	waitSecondStart()
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	do := func(args ...any) string {
		t.Helper()
		v, err := cl.Do(ctx, args...).Result()
		if err != nil {
			return "ERR " + err.Error()
		}
		switch v := v.(type) {
		case int64:
			return strconv.FormatInt(v, 10)
		case string:
			return v
		case []any:
			return strconv.Itoa(len(v)) + " replies"
		}
		t.Fatalf("%v answered %T", args, v)
		return ""
	}
	if got := do("CLIENT", "NO-TOUCH", "ON"); got != "OK" {
		t.Fatalf("CLIENT NO-TOUCH ON = %q", got)
	}
	time.Sleep(2100 * time.Millisecond)
	do("GET", "k")
	do("MGET", "k", "x")
	do("MULTI")
	do("GET", "k")
	do("EXEC")
	if idle, freq := do("OBJECT", "IDLETIME", "k"), do("OBJECT", "FREQ", "k"); idle != "2" || freq != "5" {
		t.Fatalf("after NO-TOUCH reads: IDLETIME %s FREQ %s, want 2 5", idle, freq)
	}
	do("TOUCH", "k")
	if idle, freq := do("OBJECT", "IDLETIME", "k"), do("OBJECT", "FREQ", "k"); idle != "0" || freq != "6" {
		t.Fatalf("after TOUCH: IDLETIME %s FREQ %s, want 0 6", idle, freq)
	}
	time.Sleep(1100 * time.Millisecond)
	do("CLIENT", "NO-TOUCH", "OFF")
	do("GET", "k")
	if idle := do("OBJECT", "IDLETIME", "k"); idle != "0" {
		t.Fatalf("after NO-TOUCH OFF and GET: IDLETIME %s, want 0", idle)
	}
}

// waitMinuteStart waits, when the minute is near its end, for the next:
// LFU counters decay at each wall-clock minute (Redis's too), and a test
// comparing counters over a few seconds keeps within one minute.
func waitMinuteStart() {
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
}

// waitSecondStart waits for the first 200 ms of a wall-clock second: the
// access clock counts whole seconds (Redis's LRU clock too), so a key
// set late in a second and read 2.1 s later is 3 seconds idle, not 2.
func waitSecondStart() {
	if ns := time.Now().Nanosecond(); ns > 200e6 {
		time.Sleep(time.Duration(1e9 - ns))
	}
}
