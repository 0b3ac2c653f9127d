package testcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
)

// The in-process cluster's faults do what they say: a dataserver whose
// link to the configserver is cut is failed over and comes back when it
// heals; a paused proxy answers nothing until it resumes; a killed
// dataserver leaves the table's masters and a restarted one (same
// address) rejoins.
func TestInProcessFaults(t *testing.T) {
	c := New(t, Options{PortFaults: true, Options: cluster.Options{DataServers: 2, Copies: 2, Buckets: 16}})
	masters := func(node string) int {
		tb := c.Table()
		n := 0
		for b := range tb.Serving {
			if tb.Master(route.BucketID(b)) == c.Addr(node) {
				n++
			}
		}
		return n
	}
	if masters(DS(0)) == 0 || masters(DS(1)) == 0 {
		t.Fatalf("unbalanced table: %v", c.Table().Serving)
	}

	// Cut: ds0's heartbeats no longer arrive: its buckets go to ds1.
	c.Cut(DS(0), CS(0))
	testutil.EventuallyErr(t, 10*time.Second, func() error {
		if n := masters(DS(0)); n > 0 {
			return fmt.Errorf("ds0 still masters %d buckets with its link to cs0 cut", n)
		}
		return nil
	})
	c.Heal(DS(0), CS(0))
	testutil.EventuallyErr(t, 30*time.Second, func() error {
		tb := c.Table()
		if !slices.Contains(tb.Nodes(), c.Addr(DS(0))) || len(tb.Migrating) > 0 || masters(DS(0)) == 0 {
			return fmt.Errorf("ds0 not back as a master after the heal: table %d %v", tb.Version, tb.Serving)
		}
		return nil
	})

	// Pause: the proxy answers nothing; Resume: it does.
	cl := redis.NewClient(&redis.Options{Addr: c.Addr(Proxy(0)), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond,
		WriteTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond})
	defer cl.Close()
	if err := cl.Set(context.Background(), "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Pause(Proxy(0))
	if err := cl.Get(context.Background(), "k").Err(); err == nil {
		t.Fatal("a paused proxy answered")
	}
	c.Resume(Proxy(0))
	testutil.EventuallyErr(t, 5*time.Second, func() error {
		got, err := cl.Get(context.Background(), "k").Result()
		if err != nil || got != "before" {
			return fmt.Errorf("GET k after resume: %q, %v", got, err)
		}
		return nil
	})

	// Kill and Restart: same address, back in the table.
	addr := c.Addr(DS(1))
	c.Kill(DS(1))
	testutil.EventuallyErr(t, 10*time.Second, func() error {
		if n := masters(DS(1)); n > 0 {
			return fmt.Errorf("killed ds1 still masters %d buckets", n)
		}
		return nil
	})
	c.Restart(DS(1))
	if c.Addr(DS(1)) != addr {
		t.Fatalf("ds1 restarted on %s, was %s", c.Addr(DS(1)), addr)
	}
	testutil.EventuallyErr(t, 30*time.Second, func() error {
		tb := c.Table()
		if len(tb.Migrating) > 0 || masters(DS(1)) == 0 {
			return fmt.Errorf("restarted ds1 masters nothing: table %d %v", tb.Version, tb.Serving)
		}
		return nil
	})
	if got, err := cl.Get(context.Background(), "k").Result(); err != nil || got != "before" {
		t.Fatalf("GET k after the restart: %q, %v", got, err)
	}
}
