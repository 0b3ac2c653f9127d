//go:build integration

package dataserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// With the real configserver: a cluster of 3 grows to 4 (rebalance moves of
// masters and slaves) and loses one (failover) under writes; every copy of
// every bucket ends with exactly the acknowledged data.
func TestRealConfigServer(t *testing.T) {
	cc := configserver.DefaultConfig()
	cc.Listen, cc.HTTP = "127.0.0.1:0", "127.0.0.1:0"
	cc.EtcdDir = t.TempDir()
	cc.Buckets = 32
	cc.HeartbeatInterval = 300 * time.Millisecond
	cc.Settle = 300 * time.Millisecond
	cc.MovesPerNode = 2
	cs, err := configserver.New(cc, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	wc := wire.NewClient(cs.Addr())
	table := func() *route.Table {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		tb, err := wc.Table(ctx, 0, 0)
		if err != nil {
			return nil
		}
		return tb
	}
	var nodes []*Server
	start := func() {
		c := testConfig(cs.Addr())
		c.ReplicationTimeout = 2 * time.Second
		c.ReplicationMode = ReplicationStrict
		nodes = append(nodes, startNode(t, c))
	}
	settled := func(n int) func() bool {
		return func() bool {
			tb := table()
			if tb == nil || len(tb.Migrating) > 0 || len(tb.Nodes()) != n {
				return false
			}
			for b, row := range tb.Serving {
				if len(row) < 2 || row[0] == "" || row[1] == "" || (tb.Destination != nil && strings.Join(row, ",") != strings.Join(tb.Destination[b], ",")) {
					return false
				}
			}
			for _, n := range nodes {
				if !n.closing.Load() && n.TableVersion() != tb.Version {
					return false
				}
			}
			return true
		}
	}
	for i := 0; i < 3; i++ {
		start()
	}
	testutil.Eventually(t, 20*time.Second, settled(3), "first table not served")

	// Writers.
	const nw = 4
	type result struct {
		acked, unknown map[string]int
	}
	results := make([]result, nw)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < nw; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := result{acked: map[string]int{}, unknown: map[string]int{}}
			conns := map[string]*client{}
			tb := table()
			for n := 0; !stop.Load(); n++ {
				k := fmt.Sprintf("ctr:%d:%d", w, n%16)
				for attempt := 0; ; attempt++ {
					if attempt > 3000 {
						t.Errorf("no answer for %s", k)
						return
					}
					m := tb.Master(tb.Bucket([]byte(k)))
					c := conns[m]
					if c == nil {
						cl, err := dialPeer(m, time.Second)
						if err != nil {
							time.Sleep(20 * time.Millisecond)
							tb = table()
							continue
						}
						c = &client{t: t, c: cl}
						conns[m] = c
					}
					r, err := c.doErr(x(tb.Version, "INCR", k)...)
					switch {
					case err != nil:
						delete(conns, m)
						res.unknown[k]++
					case strings.HasPrefix(r, ":"):
						res.acked[k]++
					case strings.HasPrefix(r, "-NOTMASTER"), strings.HasPrefix(r, "-TRYAGAIN"):
						time.Sleep(5 * time.Millisecond)
						tb = table()
						continue
					case strings.HasPrefix(r, "-TIMEOUT"):
						res.unknown[k]++
					default:
						t.Errorf("INCR %s: %q", k, r)
						return
					}
					break
				}
			}
			results[w] = res
		}()
	}

	time.Sleep(500 * time.Millisecond)
	start() // grow to 4: rebalance
	testutil.Eventually(t, 60*time.Second, settled(4), "rebalance to 4 nodes did not settle")
	time.Sleep(300 * time.Millisecond)
	_ = nodes[0].Close() // failover
	testutil.Eventually(t, 60*time.Second, settled(3), "failover did not settle")
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	tb := table()
	byAddr := map[string]*Server{}
	for _, n := range nodes {
		byAddr[n.Addr()] = n
	}
	total := 0
	for w, res := range results {
		for k, acked := range res.acked {
			total += acked
			b := tb.Bucket([]byte(k))
			for _, addr := range tb.Serving[b] {
				n := byAddr[addr]
				e, err := n.Engine().Get(engineKey(b, k))
				got := 0
				if err == nil {
					got, _ = strconv.Atoi(string(e.Value))
				}
				if got < acked || got > acked+res.unknown[k] {
					t.Errorf("writer %d: %s on %s (bucket %d) = %d, acknowledged %d (+%d unknown)", w, k, addr, b, got, acked, res.unknown[k])
				}
			}
		}
	}
	t.Logf("%d INCRs acknowledged through a rebalance and a failover (table version %d)", total, tb.Version)
}
