package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// The same fault script against both harnesses: in-process (roles as
// goroutines of the test, faults made of their Close and the bridge) and
// child processes (kill -9).
func TestKillMasterUnderWritesInProcess(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Links: true, Options: cluster.Options{
		DataServers: 3, Copies: 2, Buckets: 64,
		ConfigServer: func(_ int, cfg *configserver.Config) { cfg.HandoffWindow = 3 * time.Second },
	}})
	killMasterUnderWrites(t, c, c.Addr(testcluster.Proxy(0)))
}

func TestKillMasterUnderWritesProcs(t *testing.T) {
	pc := testcluster.StartProcs(t, testcluster.ProcOptions{DataServers: 3, Copies: 2, Buckets: 64, Links: true,
		ConfigServerArgs: []string{"--handoff-window", "3s"}})
	killMasterUnderWrites(t, pc, pc.Addr(testcluster.Proxy(0)))
}

// killMasterUnderWrites: go-redis clients SET unique keys through the
// proxy, half of them to the buckets one dataserver masters; that
// dataserver is killed mid-load. The cluster must serve its buckets again
// (a write to one of them acknowledged after the kill), every
// acknowledged write must read back with its exact value, a write may
// fail only as "may have applied" and only if it was in flight at the
// kill (one per writer), and once the node is restarted the cluster is
// whole again: three nodes, two copies of every bucket, every
// acknowledged write still there.
func killMasterUnderWrites(t *testing.T, h testcluster.Harness, proxy string) {
	tb0 := h.Table()
	victim := h.Node(tb0.Master(route.BucketOf([]byte("first"), tb0.Buckets)))
	if victim == "" {
		t.Fatalf("no dataserver named for the master of bucket %d in table %d", route.BucketOf([]byte("first"), tb0.Buckets), tb0.Version)
	}
	victimAddr := h.Addr(victim)
	onVictim := func(k string) bool { return tb0.Master(route.BucketOf([]byte(k), tb0.Buckets)) == victimAddr }

	const writers = 4
	stop := make(chan struct{})
	load, wg := runWatchedWriteLoad(t, proxy, writers, onVictim, stop)
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()
	acks := func() (all, watched int) {
		load.mu.Lock()
		defer load.mu.Unlock()
		return len(load.acked), load.watchedAcks
	}
	testutil.EventuallyErr(t, 10*time.Second, func() error {
		if _, w := acks(); w < 100 {
			return fmt.Errorf("%d writes to %s's buckets acknowledged before the kill, want 100", w, victim)
		}
		return nil
	})

	load.resetGaps() // watchedAcks counts from the kill
	h.Kill(victim)
	killed := time.Now()
	t.Logf("killed %s (%s), master of the buckets of half the writes", victim, victimAddr)
	testutil.EventuallyErr(t, 10*time.Second, func() error {
		if _, w := acks(); w < 100 {
			return fmt.Errorf("%d writes to the killed master's buckets acknowledged since the kill, want 100", w)
		}
		return nil
	})
	t.Logf("its buckets took 100 writes again %v after the kill", time.Since(killed).Round(time.Millisecond))
	stopLoad()

	load.mu.Lock()
	t.Logf("%d writes acknowledged, %d errors (%d 'may have applied')", len(load.acked), load.errors, load.maybe)
	for _, e := range load.errLog {
		t.Logf("error: %s", e)
	}
	if load.maybe > writers {
		t.Errorf("%d writes failed with 'may have applied', want at most %d (one in flight per writer at the kill)", load.maybe, writers)
	}
	if other := load.errors - load.maybe; other > 0 {
		t.Errorf("%d client errors other than 'may have applied': %v", other, load.otherLog)
	}
	load.mu.Unlock()
	verifyAcked(t, proxy, load.acked)

	// Back: the restarted node rejoins (in-memory engine: empty, its
	// copies rebuilt), and the cluster is whole again.
	h.Restart(victim)
	testutil.EventuallyErr(t, 60*time.Second, func() error {
		tb := h.Table()
		if n := len(tb.Nodes()); n != 3 || len(tb.Migrating) > 0 || len(tb.Behind) > 0 {
			return fmt.Errorf("table %d: %d nodes, %d moves, %d behind", tb.Version, n, len(tb.Migrating), len(tb.Behind))
		}
		for b, row := range tb.Serving {
			if len(row) != 2 || row[0] == "" || row[1] == "" {
				return fmt.Errorf("table %d: bucket %d held by %v", tb.Version, b, row)
			}
		}
		return nil
	})
	verifyAcked(t, proxy, load.acked)
	cl := redis.NewClient(&redis.Options{Addr: proxy, MaxRetries: -1})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 200; i++ {
		k, v := fmt.Sprintf("after:%d", i), fmt.Sprintf("v%d", i)
		if err := cl.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatalf("SET %s after the restart: %v", k, err)
		}
		if got, err := cl.Get(ctx, k).Result(); err != nil || got != v {
			t.Fatalf("GET %s after the restart = %q, %v; want %q", k, got, err, v)
		}
	}
}
