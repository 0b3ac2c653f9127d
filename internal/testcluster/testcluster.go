// Package testcluster is the integration-test harness. New starts a whole
// cluster in the test's process (configservers, dataservers, proxies on
// free loopback ports) and tears it down with t.Cleanup; StartProcs starts
// the same roles as real child processes of the `tair` binary, which kill
// -9, SIGSTOP and restart reach as they would in production. Both speak
// the same fault vocabulary (Faults: kill, restart, pause, cut and delay
// a link), so a fault test reads as one script against either.
package testcluster

import (
	"log/slog"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/cluster"
	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/proxy"
)

// Options are cluster.Options; Verbose sends component logs to the test log.
type Options struct {
	cluster.Options
	Verbose bool
	// Links routes every dataserver's and proxy's connections to the
	// configservers, and the standby configservers' to the first one's
	// embedded etcd, through a Bridge (one link per pair of nodes), which
	// Cut, Delay and Heal act on and Pause and Kill hold.
	Links bool
	// PortFaults lets Pause cut a node's own listener off (nftables, as
	// root: NewPortFaults); New skips the test where that cannot be done.
	// It implies Links.
	PortFaults bool
}

// Cluster is an in-process cluster owned by one test. Its Faults
// (faults.go) are the closest an in-process cluster comes to the child
// processes' signals; where they differ is said at each.
type Cluster struct {
	*cluster.Cluster
	t      testing.TB
	bridge *Bridge    // nil without Links
	ports  *NetFaults // nil without PortFaults
	paused map[string]bool
}

// New starts a cluster and registers its teardown: faults are healed,
// then every node is stopped.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Verbose || os.Getenv("TAIR_TEST_VERBOSE") != "" {
		o.Log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c := &Cluster{t: t, paused: map[string]bool{}}
	if o.PortFaults {
		o.Links = true
		n, err := NewPortFaults(t)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("port faults unavailable under CI: %v", err)
			}
			t.Skipf("port faults unavailable: %v", err)
		}
		c.ports = n
	}
	if o.Links {
		c.bridge = NewBridge(t)
		c.bridgeLinks(&o.Options)
	}
	cc, err := cluster.Start(o.Options)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	c.Cluster = cc
	t.Cleanup(func() {
		c.healAll()
		_ = c.Close()
	})
	return c
}

// bridgeLinks has each node built from o dial the configservers (and the
// standbys etcd) through the bridge.
func (c *Cluster) bridgeLinks(o *cluster.Options) {
	via := func(from, prefix string, addrs []string) []string {
		out := make([]string, len(addrs))
		for k, a := range addrs {
			out[k] = c.bridge.Link(from, prefix+strconv.Itoa(k), a).Addr()
		}
		return out
	}
	userCS, userDS, userProxy := o.ConfigServer, o.DataServer, o.Proxy
	o.ConfigServer = func(i int, cfg *configserver.Config) {
		if i > 0 && len(cfg.Etcd) == 1 {
			cfg.Etcd = []string{c.bridge.Link(CS(i), "etcd", cfg.Etcd[0]).Addr()}
		}
		if userCS != nil {
			userCS(i, cfg)
		}
	}
	o.DataServer = func(i int, cfg *dataserver.Config) {
		cfg.ConfigServers = via(DS(i), "cs", cfg.ConfigServers)
		if userDS != nil {
			userDS(i, cfg)
		}
	}
	o.Proxy = func(i int, cfg *proxy.Config) {
		cfg.ConfigServers = via(Proxy(i), "cs", cfg.ConfigServers)
		if userProxy != nil {
			userProxy(i, cfg)
		}
	}
}

// Client returns a go-redis client of proxy i, closed at cleanup.
func (c *Cluster) Client(i int) *redis.Client {
	cl := redis.NewClient(&redis.Options{Addr: c.Proxies[i].Addr(), MaxRetries: -1})
	c.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
