package cluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// TestStartFailsCleanly: a cluster whose proxy port is taken reports
// why, stops what it started and leaves no temporary directory (it used
// to panic on a nil cluster).
func TestStartFailsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "tair-up-*"))
	c, err := Start(Options{DataServers: 1, ProxyPort: port})
	if err == nil {
		c.Close()
		t.Fatal("a cluster started with its proxy port taken")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error %q does not say the port is in use", err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "tair-up-*"))
	if len(after) > len(before) {
		t.Fatalf("temporary directories left: %v (before %v)", after, before)
	}
}

// TestNodesReportHealthAndBuckets: each dataserver's heartbeat carries
// its health and the bucket copies it holds, which /v1/nodes (tair ctl
// nodes) shows beside the configserver's own count; a stopped node is
// "down".
func TestNodesReportHealthAndBuckets(t *testing.T) {
	c, err := Start(Options{DataServers: 3, Buckets: 64, Proxies: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := wire.NewClient(c.ConfigServerAddrs()...)
	nodes := func() []wire.NodeStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var list []wire.NodeStatus
		if err := cl.Get(ctx, "/v1/nodes", &list); err != nil {
			t.Fatal(err)
		}
		return list
	}
	var last []wire.NodeStatus
	testutil.Eventually(t, 10*time.Second, func() bool {
		last = nodes()
		masters := 0
		for _, n := range last {
			if n.Health != "ok" || n.HeldMasters != n.Masters || n.HeldSlaves != n.Slaves || n.Masters == 0 {
				return false
			}
			masters += n.HeldMasters
		}
		return len(last) == 3 && masters == 64
	}, "nodes do not report health ok and the table's buckets")
	stopped := c.DataServers[2].Addr()
	if err := c.DataServers[2].Close(); err != nil {
		t.Fatal(err)
	}
	c.DataServers[2] = nil
	testutil.Eventually(t, 10*time.Second, func() bool {
		for _, n := range nodes() {
			if n.Addr == stopped {
				return n.Health == "down" && !n.Alive
			}
		}
		return false
	}, "a stopped dataserver is not shown down: %+v", last)
}
