package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/proxy"
)

// TAIR.INVALID deletes in this cluster at once and in the peer cluster
// (whose proxies want a password) through the invalid server; while the
// peer's proxy is down the invalidations wait in etcd and are applied
// when it is back.
func TestInvalidReachesPeerCluster(t *testing.T) {
	ctx := context.Background()
	peerAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	// Cluster B (the peer): its proxy 1 listens where A's invalid server
	// sends.
	b := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 1, Copies: 1, Proxies: 2,
		Proxy: func(i int, c *proxy.Config) {
			c.RequirePass = "s3cret"
			if i == 1 {
				c.Listen = peerAddr
			}
		},
	}})
	a := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 1, Copies: 1,
		ConfigServer: func(i int, c *configserver.Config) {
			c.InvalidPeers, c.InvalidPeerAuth = []string{peerAddr}, "s3cret"
		},
	}})
	ca := a.Client(0)
	cb := redis.NewClient(&redis.Options{Addr: b.Proxies[0].Addr(), Password: "s3cret", MaxRetries: -1})
	defer cb.Close()
	setBoth := func(db int, keys ...string) {
		t.Helper()
		for _, c := range []*redis.Client{ca, cb} {
			pl := c.Pipeline()
			pl.Select(ctx, db)
			for _, k := range keys {
				pl.Set(ctx, k, "v", 0)
			}
			pl.Select(ctx, 0)
			if _, err := pl.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	invalid := func(db int, keys ...string) int64 {
		t.Helper()
		conn := selectConn(t, ca, db)
		defer conn.Close()
		args := []any{"TAIR.INVALID"}
		for _, k := range keys {
			args = append(args, k)
		}
		n, err := conn.Do(ctx, args...).Int64()
		if err != nil {
			t.Fatalf("TAIR.INVALID %v: %v", keys, err)
		}
		return n
	}
	exists := func(c *redis.Client, db int, key string) bool {
		t.Helper()
		conn := selectConn(t, c, db)
		defer conn.Close()
		n, err := conn.Exists(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	waitGone := func(db int, key string, within time.Duration) {
		t.Helper()
		testutil.EventuallyErr(t, within, func() error {
			if exists(cb, db, key) {
				return fmt.Errorf("%s (area %d) still in the peer cluster", key, db)
			}
			return nil
		})
	}

	// Both sides, keys over several buckets (the command is split).
	setBoth(0, "k1", "k2", "k3")
	if n := invalid(0, "k1", "k2", "k3", "missing"); n != 3 {
		t.Fatalf("TAIR.INVALID deleted %d here, want 3", n)
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		if exists(ca, 0, k) {
			t.Fatalf("%s still here after TAIR.INVALID", k)
		}
		waitGone(0, k, 5*time.Second)
	}

	// The peer's proxy goes down: invalidations are queued, not lost.
	if err := b.Proxies[1].Close(); err != nil {
		t.Fatal(err)
	}
	setBoth(0, "q1")
	setBoth(5, "q2")
	if n := invalid(0, "q1"); n != 1 {
		t.Fatalf("TAIR.INVALID q1 = %d", n)
	}
	if n := invalid(5, "q2"); n != 1 {
		t.Fatalf("TAIR.INVALID q2 (area 5) = %d", n)
	}
	time.Sleep(1500 * time.Millisecond)
	if !exists(cb, 0, "q1") || !exists(cb, 5, "q2") {
		t.Fatal("the peer applied invalidations while its proxy was down")
	}
	if _, err := b.StartProxy(1); err != nil {
		t.Fatal(err)
	}
	waitGone(0, "q1", 10*time.Second)
	waitGone(5, "q2", 10*time.Second)

	// The peer has no peers of its own: its TAIR.INVALID deletes there only.
	setBoth(0, "p1")
	if n, err := cb.Do(ctx, "TAIR.INVALID", "p1").Int64(); err != nil || n != 1 {
		t.Fatalf("TAIR.INVALID on the peer = %d, %v", n, err)
	}
	time.Sleep(300 * time.Millisecond)
	if !exists(ca, 0, "p1") {
		t.Fatal("an invalidation travelled to a cluster that is not a peer")
	}
}

// selectConn is a connection of c in area db that goes back to the pool
// in area 0 (go-redis pools the connection on Close, SELECT and all).
type areaConn struct{ *redis.Conn }

func selectConn(t *testing.T, c *redis.Client, db int) areaConn {
	t.Helper()
	conn := c.Conn()
	if err := conn.Select(context.Background(), db).Err(); err != nil {
		_ = conn.Close()
		t.Fatal(err)
	}
	return areaConn{conn}
}

func (c areaConn) Close() error {
	_ = c.Conn.Select(context.Background(), 0).Err()
	return c.Conn.Close()
}
