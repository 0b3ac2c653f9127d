package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// Proxies started with only --configserver find each other through it:
// CLUSTER NODES and SLOTS name every live proxy, and drop one that stops.
func TestProxiesDiscoverEachOther(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{DataServers: 1, Copies: 1, Proxies: 3}})
	cl := c.Client(0)
	nodes := func() []string {
		t.Helper()
		out, err := cl.ClusterNodes(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(out), "\n")
	}
	waitNodes := func(want int) []string {
		t.Helper()
		var got []string
		testutil.EventuallyErr(t, 8*time.Second, func() error {
			if got = nodes(); len(got) != want {
				return fmt.Errorf("CLUSTER NODES has %d proxies, want %d:\n%s", len(got), want, strings.Join(got, "\n"))
			}
			return nil
		})
		return got
	}
	got := waitNodes(3)
	for i, p := range c.Proxies {
		found := false
		for _, line := range got {
			if strings.Contains(line, " "+p.Addr()+"@") {
				found = true
			}
		}
		if !found {
			t.Fatalf("proxy %d (%s) missing from CLUSTER NODES:\n%s", i, p.Addr(), strings.Join(got, "\n"))
		}
	}
	slots, err := cl.ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 3 || slots[0].Start != 0 || slots[2].End != 16383 {
		t.Fatalf("CLUSTER SLOTS = %+v, %v", slots, err)
	}
	// A stopped proxy leaves the view within the configserver's TTL.
	gone := c.Proxies[2].Addr()
	if err := c.Proxies[2].Close(); err != nil {
		t.Fatal(err)
	}
	for _, line := range waitNodes(2) {
		if strings.Contains(line, gone) {
			t.Fatalf("stopped proxy %s still listed: %s", gone, line)
		}
	}
}
