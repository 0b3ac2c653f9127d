package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// TestCtlHotKeys: a key hammered through two proxies is hot on each; the
// proxies report it in their beats and the leading configserver's
// /v1/hotkeys sums it over both (its rate is the sum of theirs, each
// named); `tair ctl hotkeys` prints it, --json as the API's document; once
// the hammering stops it leaves the list.
func TestCtlHotKeys(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 2, Copies: 2, Buckets: 16, Proxies: 2, Engine: "mdb",
	}})
	cs := strings.Join(c.ConfigServerAddrs(), ",")
	proxies := []string{c.Proxies[0].Addr(), c.Proxies[1].Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Client(0).Set(ctx, "hot:key", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if out := ctl(t, cs, "hotkeys"); out != "no hot keys (2 proxies reporting)\n" {
		// Both proxies beat every second; wait for them.
		testutil.Eventually(t, 5*time.Second, func() bool {
			return ctl(t, cs, "hotkeys") == "no hot keys (2 proxies reporting)\n"
		}, "hotkeys before any load: %q", out)
	}

	hammer, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range proxies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := c.Client(i)
			for hammer.Err() == nil {
				pipe := rc.Pipeline()
				for range 200 {
					pipe.Get(hammer, "hot:key")
				}
				pipe.Get(hammer, "cold:"+strconv.Itoa(i))
				_, _ = pipe.Exec(hammer)
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()

	var st wire.HotKeysStatus
	cl := wire.NewClient(c.ConfigServerAddrs()...)
	testutil.Eventually(t, 20*time.Second, func() bool {
		if cl.Get(ctx, "/v1/hotkeys", &st) != nil || len(st.Keys) == 0 {
			return false
		}
		k := st.Keys[0]
		return k.Key == "hot:key" && len(k.Proxies) == 2
	}, "the key hot through both proxies never showed merged: %+v", st)
	k := st.Keys[0]
	var sum float64
	for _, p := range proxies {
		r, ok := k.Proxies[p]
		if !ok || r < 1000 {
			t.Fatalf("proxy %s's rate %v in %+v, want hot (>= 1000/s)", p, r, k)
		}
		sum += r
	}
	slices.Sort(proxies)
	if k.Area != 0 || k.Rate != sum || !slices.Equal(st.Proxies, proxies) {
		t.Fatalf("merged %+v (proxies %v), want area 0, rate %v summed over %v", k, st.Proxies, sum, proxies)
	}
	for _, h := range st.Keys {
		if strings.HasPrefix(h.Key, "cold:") {
			t.Fatalf("a cold key listed hot: %+v", st.Keys)
		}
	}

	// ctl hotkeys: a table naming the key and both proxies; --json; an
	// area filter.
	out := ctl(t, cs, "hotkeys")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 2 || strings.Join(strings.Fields(lines[0]), " ") != "AREA KEY REQ/S PROXIES" {
		t.Fatalf("hotkeys:\n%s", out)
	}
	f := strings.Fields(lines[1])
	if len(f) != 4 || f[0] != "0" || f[1] != `"hot:key"` || !strings.Contains(f[3], proxies[0]+"=") || !strings.Contains(f[3], proxies[1]+"=") {
		t.Fatalf("hotkeys' first line %q", lines[1])
	}
	if rate, err := strconv.ParseFloat(f[2], 64); err != nil || rate < 2000 {
		t.Fatalf("hotkeys' rate %q, want both proxies' (>= 2000)", f[2])
	}
	var js wire.HotKeysStatus
	decodeJSON(t, ctl(t, cs, "hotkeys", "--json"), &js)
	if len(js.Keys) == 0 || js.Keys[0].Key != "hot:key" || len(js.Keys[0].Proxies) != 2 {
		t.Fatalf("hotkeys --json: %+v", js)
	}
	if out := ctl(t, cs, "hotkeys", "5"); out != "no hot keys (2 proxies reporting)\n" {
		t.Fatalf("hotkeys of area 5: %q", out)
	}
	if _, err := ctlErr(cs, "hotkeys", "1024"); err == nil || err.Error() != "area must be 0..1023" {
		t.Fatalf("hotkeys 1024: %v", err)
	}

	// Cooled down: gone within a window and a beat or two.
	stop()
	wg.Wait()
	testutil.Eventually(t, 10*time.Second, func() bool {
		return cl.Get(ctx, "/v1/hotkeys", &st) == nil && len(st.Keys) == 0
	}, "the key stayed hot after the load stopped: %+v", st)
}
