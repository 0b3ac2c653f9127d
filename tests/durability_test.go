package tests

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// kill -9 of the only dataserver (ldb under the default --sync group,
// copy count 1) under pipelined writes from several clients: after the
// restart every acknowledged write reads back. Under group sync a write
// commits before its fsync and one fsync covers a whole batch and every
// other connection's batch of that moment (engines.GroupCommitter); this
// checks that no reply leaves before the fsync that covers it.
func TestKillLdbGroupSyncLosesNothing(t *testing.T) {
	pc := testcluster.StartProcs(t, testcluster.ProcOptions{DataServers: 1, Copies: 1, Buckets: 16, Engine: "ldb"})
	proxy := pc.Proxies[0].Addr
	victim := pc.DataServers[0]

	const writers, depth = 6, 16
	var (
		mu    sync.Mutex
		acked = map[string]string{}
		seq   atomic.Int64
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := redis.NewClient(&redis.Options{Addr: proxy, MaxRetries: -1, ReadTimeout: 5 * time.Second})
			defer cl.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pipe := cl.Pipeline()
				keys := make([]string, depth)
				cmds := make([]*redis.StatusCmd, depth)
				for i := range keys {
					n := seq.Add(1)
					keys[i] = fmt.Sprintf("dur:%d", n)
					cmds[i] = pipe.Set(context.Background(), keys[i], fmt.Sprintf("v%d", n), 0)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, _ = pipe.Exec(ctx)
				cancel()
				failed := false
				mu.Lock()
				for i, c := range cmds {
					if c.Err() == nil {
						acked[keys[i]] = fmt.Sprintf("v%s", keys[i][len("dur:"):])
					} else {
						failed = true
					}
				}
				mu.Unlock()
				if failed {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	victim.Kill()
	mu.Lock()
	atKill := len(acked)
	mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if atKill < 1000 {
		t.Fatalf("only %d writes acknowledged before the kill; the load did not run", atKill)
	}

	victim.Start()
	cl := redis.NewClient(&redis.Options{Addr: proxy})
	defer cl.Close()
	testutil.EventuallyErr(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return cl.Set(ctx, "dur:probe", "1", 0).Err()
	})
	t.Logf("%d writes acknowledged (%d by the kill), checking them after the restart", len(acked), atKill)
	verifyAcked(t, proxy, acked)
}
