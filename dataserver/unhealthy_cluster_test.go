package dataserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// In a whole cluster: a dataserver whose event loop is wedged in a
// command reports itself unhealthy, and the configserver moves the
// masters of its buckets to other nodes, through which the proxy serves
// every bucket; once the command ends the node is healthy again.
func TestWedgedDataserverLosesItsMasters(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unwedge := func() { once.Do(func() { close(release) }) }
	defer unwedge() // a failed test must not leave the cluster's Close waiting
	defer dataserver.SetTestHook(func(point, cmd string) {
		if point == "run" && cmd == "echo" {
			<-release
		}
	})()
	c := testcluster.New(t, testcluster.Options{Options: cluster.Options{
		DataServers: 3, Copies: 2, Buckets: 16, Engine: "mdb",
		DataServer: func(_ int, cfg *dataserver.Config) { cfg.StallTimeout = time.Second },
	}})
	first := c.Table()
	sick := c.DataServers[0].Addr()
	masters := func(tb *route.Table) int {
		n := 0
		for b := range route.BucketID(tb.Buckets) {
			if tb.IsMaster(b, sick) {
				n++
			}
		}
		return n
	}
	if masters(first) == 0 {
		t.Fatalf("%s masters no bucket in %v", sick, first.Serving)
	}
	// Wedge one of its event loops: ECHO, sent to it alone, never ends.
	conn, err := net.Dial("tcp", sick)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("ECHO x\r\n")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return masters(c.Table()) == 0 },
		"the configserver did not move the masters away from the unhealthy node")
	ctx := context.Background()
	cl := c.Client(0)
	for i := 0; i < 64; i++ {
		k := fmt.Sprint("k", i)
		if err := cl.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s while the node is unhealthy: %v", k, err)
		}
	}
	unwedge()
	testutil.Eventually(t, 10*time.Second, func() bool {
		r, err := http.Get("http://" + c.DataServers[0].HTTPAddr() + "/healthz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}, "the node did not become healthy again")
	for i := 0; i < 64; i++ {
		k := fmt.Sprint("k", i)
		if v, err := cl.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s: %v %v", k, v, err)
		}
	}
}
