// Package cluster starts a whole cluster inside one process: configservers
// (the first embedding etcd unless endpoints are given), dataservers and
// proxies, all on loopback. `tair up` runs one for users; the test harness
// (internal/testcluster) runs them for integration tests.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tairkv/tair/configserver"
	"github.com/tairkv/tair/dataserver"
	"github.com/tairkv/tair/internal/gnetx"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/wire"
	"github.com/tairkv/tair/proxy"

	// Every engine, so that any can be chosen by name.
	_ "github.com/tairkv/tair/engines/kdb"
	_ "github.com/tairkv/tair/engines/ldb"
	_ "github.com/tairkv/tair/engines/mdb"
	_ "github.com/tairkv/tair/engines/rdb"
)

// Options describe the cluster.
type Options struct {
	// Dir holds etcd's and the persistent engines' data; a temporary
	// directory (removed by Close) when empty.
	Dir           string
	ConfigServers int    // default 1
	DataServers   int    // default 3
	Proxies       int    // default 1
	Copies        int    // default 2
	Buckets       uint32 // default 1023
	Engine        string // default "rdb"
	// Host is the interface everything listens on (default 127.0.0.1).
	Host string
	// ProxyPort is the first proxy's port (0 = any free port); later
	// proxies take any free port.
	ProxyPort int
	// BasePort, when non-zero, gives stable addresses: configserver i at
	// BasePort+8+i*10 (http +3000), dataserver i at BasePort+100+i (http +3000),
	// so a cluster restarted on the same Dir finds its nodes again.
	BasePort int
	// Zones labels dataserver i with Zones[i % len(Zones)] when set.
	Zones []string
	// ConfigServer, DataServer and Proxy adjust each role's config.
	ConfigServer func(i int, c *configserver.Config)
	DataServer   func(i int, c *dataserver.Config)
	Proxy        func(i int, c *proxy.Config)
	// Log receives every component's logs (discarded when nil).
	Log *slog.Logger
}

// WithDefaults is o with the defaults (said at each field) set where o
// leaves them zero: the shape of a cluster started as separate processes
// by the test harness (internal/testcluster) follows them too.
func (o Options) WithDefaults() Options {
	o.adjust()
	return o
}

func (o *Options) adjust() {
	if o.ConfigServers == 0 {
		o.ConfigServers = 1
	}
	if o.DataServers == 0 {
		o.DataServers = 3
	}
	if o.Proxies == 0 {
		o.Proxies = 1
	}
	if o.Copies == 0 {
		o.Copies = 2
	}
	if o.Buckets == 0 {
		o.Buckets = route.DefaultBuckets
	}
	if o.Engine == "" {
		o.Engine = "rdb"
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Cluster is a running in-process cluster.
type Cluster struct {
	Opts          Options
	ConfigServers []*configserver.Server
	DataServers   []*dataserver.Server
	Proxies       []*proxy.Server

	tempDir string
	// bound remembers the addresses each node bound ("ds1": RESP or API
	// and HTTP), so that a node started again at the same index (a
	// restart) comes back where its peers and the table know it.
	bound map[string][2]string
	// etcd are the first configserver's etcd endpoints, which the others
	// use (kept when it stops: it comes back on the same ports).
	etcd []string
}

// Start brings the cluster up and waits until the proxies hold a table
// that covers every dataserver.
// A failed start stops what it started and removes its temporary
// directory.
func Start(o Options) (*Cluster, error) {
	o.adjust()
	c := &Cluster{Opts: o}
	if err := c.start(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start() error {
	o := c.Opts
	if o.Dir == "" {
		var err error
		if c.tempDir, err = os.MkdirTemp("", "tair-up-"); err != nil {
			return err
		}
		c.Opts.Dir = c.tempDir
	}
	for i := 0; i < o.ConfigServers; i++ {
		if _, err := c.StartConfigServer(i); err != nil {
			return err
		}
	}
	for i := 0; i < o.DataServers; i++ {
		if _, err := c.StartDataServer(i); err != nil {
			return err
		}
	}
	if err := c.WaitTable(o.DataServers, 30*time.Second); err != nil {
		return err
	}
	for i := 0; i < o.Proxies; i++ {
		if _, err := c.StartProxy(i); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) addr(port int) string {
	return net.JoinHostPort(c.Opts.Host, strconv.Itoa(port))
}

// reuse gives listen and http the addresses node bound when it last ran.
func (c *Cluster) reuse(node string, listen, http *string) {
	if a, ok := c.bound[node]; ok {
		*listen, *http = a[0], a[1]
	}
}

func (c *Cluster) remember(node, listen, http string) {
	if c.bound == nil {
		c.bound = map[string][2]string{}
	}
	c.bound[node] = [2]string{listen, http}
}

// ConfigServerConfig is configserver i's config.
func (c *Cluster) ConfigServerConfig(i int) configserver.Config {
	cfg := configserver.DefaultConfig()
	cfg.Listen, cfg.HTTP = c.addr(0), c.addr(0)
	if c.Opts.BasePort != 0 {
		cfg.Listen = c.addr(c.Opts.BasePort + 8 + i*10)
		cfg.HTTP = c.addr(c.Opts.BasePort + 3008 + i*10)
	}
	cfg.Copies = c.Opts.Copies
	cfg.Buckets = c.Opts.Buckets
	c.reuse(fmt.Sprintf("cs%d", i), &cfg.Listen, &cfg.HTTP)
	cfg.EtcdDir = filepath.Join(c.Opts.Dir, "etcd")
	if i > 0 && len(c.etcd) > 0 {
		// Standbys share the first configserver's embedded etcd.
		cfg.Etcd = c.etcd
		cfg.EtcdDir = ""
	}
	if c.Opts.ConfigServer != nil {
		c.Opts.ConfigServer(i, &cfg)
	}
	return cfg
}

// StartConfigServer starts configserver i (appended, or replacing a
// stopped one at index i, on the addresses it had).
func (c *Cluster) StartConfigServer(i int) (*configserver.Server, error) {
	cs, err := startNode(c, &c.ConfigServers, i, "configserver", "cs", func(log *slog.Logger) (*configserver.Server, error) {
		return configserver.New(c.ConfigServerConfig(i), log)
	})
	if err == nil && i == 0 {
		c.etcd = cs.EtcdEndpoints()
	}
	return cs, err
}

// ConfigServerAddrs lists the configservers' API addresses, those of
// stopped ones included (a node started now must know where to find them
// when they come back).
func (c *Cluster) ConfigServerAddrs() []string {
	var out []string
	for i, cs := range c.ConfigServers {
		if cs != nil {
			out = append(out, cs.Addr())
		} else if a, ok := c.bound[fmt.Sprintf("cs%d", i)]; ok {
			out = append(out, a[0])
		}
	}
	return out
}

// DataServerConfig is dataserver i's config.
func (c *Cluster) DataServerConfig(i int) dataserver.Config {
	cfg := dataserver.DefaultConfig()
	cfg.Listen, cfg.HTTP = c.addr(0), c.addr(0)
	if c.Opts.BasePort != 0 {
		cfg.Listen = c.addr(c.Opts.BasePort + 100 + i)
		cfg.HTTP = c.addr(c.Opts.BasePort + 3100 + i)
	}
	c.reuse(fmt.Sprintf("ds%d", i), &cfg.Listen, &cfg.HTTP)
	cfg.ConfigServers = c.ConfigServerAddrs()
	cfg.Engine = c.Opts.Engine
	cfg.Dir = filepath.Join(c.Opts.Dir, fmt.Sprintf("ds%d", i))
	if len(c.Opts.Zones) > 0 {
		cfg.Zone = c.Opts.Zones[i%len(c.Opts.Zones)]
	}
	cfg.EventLoops = c.loopsPerRole()
	if c.Opts.DataServer != nil {
		c.Opts.DataServer(i, &cfg)
	}
	return cfg
}

// StartDataServer starts dataserver i (appended, or replacing a stopped
// one at index i, on the addresses and data directory it had).
func (c *Cluster) StartDataServer(i int) (*dataserver.Server, error) {
	return startNode(c, &c.DataServers, i, "dataserver", "ds", func(log *slog.Logger) (*dataserver.Server, error) {
		return dataserver.New(c.DataServerConfig(i), log)
	})
}

// ProxyConfig is proxy i's config.
func (c *Cluster) ProxyConfig(i int) proxy.Config {
	cfg := proxy.DefaultConfig()
	cfg.Listen, cfg.HTTP = c.addr(0), c.addr(0)
	if i == 0 && c.Opts.ProxyPort != 0 {
		cfg.Listen = c.addr(c.Opts.ProxyPort)
		cfg.HTTP = c.addr(c.Opts.ProxyPort + 2000)
	}
	c.reuse(fmt.Sprintf("proxy%d", i), &cfg.Listen, &cfg.HTTP)
	cfg.ConfigServers = c.ConfigServerAddrs()
	cfg.EventLoops = c.loopsPerRole()
	if c.Opts.Proxy != nil {
		c.Opts.Proxy(i, &cfg)
	}
	return cfg
}

// loopsPerRole shares the process's cores among the event loops of its
// proxies and dataservers: each role gets GOMAXPROCS/(roles) (without
// the spare P the running loops add, see gnetx.Procs), at least
// one. More loops than cores make the roles' loops wait for each other
// (measured with tair up on 2 cores: one loop each gives 8-13 % more
// requests per second at one request per round trip than two each, and
// a p99 lower by a third).
func (c *Cluster) loopsPerRole() int {
	roles := c.Opts.DataServers + max(c.Opts.Proxies, 1)
	return max(1, gnetx.Procs()/roles)
}

// StartProxy starts proxy i (appended, or replacing a stopped one at
// index i, on the addresses it had).
func (c *Cluster) StartProxy(i int) (*proxy.Server, error) {
	return startNode(c, &c.Proxies, i, "proxy", "proxy", func(log *slog.Logger) (*proxy.Server, error) {
		return proxy.New(c.ProxyConfig(i), log)
	})
}

// Table fetches the current table from the configservers.
func (c *Cluster) Table(ctx context.Context) (*route.Table, error) {
	return wire.NewClient(c.ConfigServerAddrs()...).Table(ctx, 0, 0)
}

// WaitTable waits until the table names n dataservers and has no
// migration in progress.
func (c *Cluster) WaitTable(n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl := wire.NewClient(c.ConfigServerAddrs()...)
	var last *route.Table
	for {
		t, err := cl.Table(ctx, 0, 0)
		if err == nil {
			last = t
			if len(t.Nodes()) >= n && len(t.Migrating) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("cluster: table has %d of %d dataservers and %d moves after %v",
					len(last.Nodes()), n, len(last.Migrating), timeout)
			}
			return fmt.Errorf("cluster: no table after %v: %v", timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StopConfigServer, StopDataServer and StopProxy stop node i (Close: the
// role's orderly stop) and leave its slot nil; Start* starts it again on
// the same addresses (and data directory).
func (c *Cluster) StopConfigServer(i int) error { return stopNode(c.ConfigServers, i) }

func (c *Cluster) StopDataServer(i int) error { return stopNode(c.DataServers, i) }

func (c *Cluster) StopProxy(i int) error { return stopNode(c.Proxies, i) }

// Close stops proxies, dataservers and configservers, in that order.
func (c *Cluster) Close() error {
	var list []error
	for _, p := range c.Proxies {
		if p != nil {
			list = append(list, p.Close())
		}
	}
	for _, ds := range c.DataServers {
		if ds != nil {
			list = append(list, ds.Close())
		}
	}
	for i := len(c.ConfigServers) - 1; i >= 0; i-- {
		if cs := c.ConfigServers[i]; cs != nil {
			list = append(list, cs.Close())
		}
	}
	if c.tempDir != "" {
		list = append(list, os.RemoveAll(c.tempDir))
	}
	return errors.Join(list...)
}

// node is what a configserver, a dataserver and a proxy have in common.
type node interface {
	Start() error
	Close() error
	Addr() string
	HTTPAddr() string
}

// startNode starts node i of a role (made by newNode with the role's
// logger), puts it at index i of *nodes and remembers its addresses
// under short+i ("ds1").
func startNode[N node](c *Cluster, nodes *[]N, i int, role, short string, newNode func(*slog.Logger) (N, error)) (N, error) {
	var none N
	n, err := newNode(c.Opts.Log.With("component", role, "i", i))
	if err != nil {
		return none, err
	}
	if err := n.Start(); err != nil {
		return none, fmt.Errorf("%s %d: %w", role, i, err)
	}
	*nodes = setAt(*nodes, i, n)
	c.remember(fmt.Sprintf("%s%d", short, i), n.Addr(), n.HTTPAddr())
	return n, nil
}

// closer is a node's slot: empty (nil) while the node is stopped.
type closer interface {
	comparable
	Close() error
}

// stopNode closes nodes[i] (when it runs) and leaves its slot empty.
func stopNode[N closer](nodes []N, i int) error {
	var none N
	n := nodes[i]
	if n == none {
		return nil
	}
	nodes[i] = none
	return n.Close()
}

func setAt[T any](s []T, i int, v T) []T {
	var none T
	for len(s) <= i {
		s = append(s, none)
	}
	s[i] = v
	return s
}
