package dataserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// TestNodeResourcesReported: each dataserver's heartbeat reports its
// memory (the engine's bytes, the process's RSS) and, for a persistent
// engine, its data directory's disk usage and its filesystem's free and
// total space; the configserver's /v1/nodes serves each node's last
// report, with plausible values.
func TestNodeResourcesReported(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 2, Copies: 2, Buckets: 16, Engine: "ldb",
		DataServer: func(i int, cfg *dataserver.Config) {
			if i == 1 {
				cfg.Engine, cfg.MemoryLimit = "mdb", 256<<20
			}
		},
	}})
	ldb, mdb := c.DataServers[0].Addr(), c.DataServers[1].Addr()
	ldbDir := c.DataServerConfig(0).Dir
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := c.Client(0)
	pipe := rc.Pipeline()
	const keys, size = 3000, 200
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("res:%d", i), strings.Repeat("x", size), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	cl := wire.NewClient(c.ConfigServerAddrs()...)
	var nodes []wire.NodeStatus
	var stats map[string]map[uint16]wire.AreaStats
	byAddr := map[string]*wire.NodeResources{}
	// Both nodes hold every key (two copies), so each engine accounts at
	// least the values' bytes; /v1/stats's bytes come from the same
	// heartbeat, so they sum to the engine's.
	testutil.Eventually(t, 15*time.Second, func() bool {
		if cl.Get(ctx, "/v1/nodes", &nodes) != nil || cl.Get(ctx, "/v1/stats", &stats) != nil {
			return false
		}
		for _, n := range nodes {
			r := n.Resources
			if r == nil || r.EngineBytes < keys*size {
				return false
			}
			var sum int64
			for _, a := range stats[n.Addr] {
				sum += a.Bytes
			}
			if sum != r.EngineBytes {
				return false
			}
			byAddr[n.Addr] = r
		}
		return len(byAddr) == 2
	}, "the nodes never reported their memory: %+v", nodes)

	for addr, r := range byAddr {
		t.Logf("%s: %+v", addr, *r)
		// The test process runs the whole cluster: its RSS is more than a
		// few MiB and less than the machine.
		if r.RSSBytes < 8<<20 || r.RSSBytes > 64<<30 {
			t.Errorf("%s: rss %d", addr, r.RSSBytes)
		}
		if r.EngineBytes > 64<<20 {
			t.Errorf("%s: engine bytes %d for %d keys of %d bytes", addr, r.EngineBytes, keys, size)
		}
	}
	if r := byAddr[mdb]; r.DataDir != "" || r.DiskUsedBytes != 0 || r.DiskFreeBytes != 0 || r.MemoryLimit != 256<<20 {
		t.Errorf("mdb node %s: %+v, want no disk figures and its memory limit", mdb, r)
	}
	r := byAddr[ldb]
	if r.DataDir != ldbDir || r.MemoryLimit != 0 {
		t.Errorf("ldb node %s: dir %q limit %d, want %q and none", ldb, r.DataDir, r.MemoryLimit, ldbDir)
	}
	if r.DiskUsedBytes <= 0 || r.DiskTotalBytes <= 0 || r.DiskFreeBytes <= 0 || r.DiskFreeBytes > r.DiskTotalBytes ||
		r.DiskUsedBytes > r.DiskTotalBytes {
		t.Errorf("ldb node %s: disk used %d, free %d of %d", ldb, r.DiskUsedBytes, r.DiskFreeBytes, r.DiskTotalBytes)
	}
}
