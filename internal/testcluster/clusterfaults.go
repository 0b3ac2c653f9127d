package testcluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tairkv/tair/internal/route"
)

// The in-process cluster's Faults. One process cannot be killed or
// stopped in part, so each fault is made of what the roles and the
// harness offer; how far that is from the child processes' signals:
//
//   - Kill: a dataserver's or proxy's links to the configservers are held
//     first (nothing more reaches them, as from a dead process), then the
//     node is stopped with its Close: its listener and every connection
//     to it close at once (a reply not written is not acknowledged, as
//     with kill -9). Unlike kill -9, the writes it had applied still go
//     to its slaves (Close drains the replication streams for up to the
//     replication timeout, where a killed process's last sends are lost or
//     not), and its engine is closed in order: the clean-shutdown marker
//     is removed afterwards, so a persistent engine restarts as after a
//     crash. A configserver's Close gives up its leadership at once,
//     where a killed one's etcd lease runs out; killing cs0 stops the
//     embedded etcd, which every configserver uses.
//   - Pause (Options.PortFaults): the node's listener is cut off with
//     nftables (its peers' packets and its answers are dropped: they
//     retransmit, as to a stopped process that does not read, though a
//     stopped process's kernel takes the bytes into its buffers) and its
//     own links to the configservers (and a standby's to etcd) are held.
//     Unlike SIGSTOP, its goroutines run on: the connections it made
//     itself (replication and migration streams to other dataservers) go
//     on carrying what was queued, and it sees its lease run out as it
//     goes, not when it wakes. cs0, whose process runs etcd, cannot be
//     paused.
//   - Restart: the node starts again on the addresses it had, and a
//     dataserver on its data directory (in-memory engines start empty).
//   - Cut, Delay, Heal: bridged links only (Options.Links), as in the
//     child-process harness.

// Kill stops node abruptly (see above).
func (c *Cluster) Kill(node string) {
	c.t.Helper()
	role, i := c.node(node)
	if !c.running(role, i) {
		c.t.Fatalf("testcluster: kill %s: not running", node)
	}
	c.healPort(node)
	from := c.linksFrom(node)
	for _, l := range from {
		l.Cut()
	}
	var err error
	switch role {
	case "cs":
		for _, l := range c.linksTo(node) {
			l.Down()
			l.Heal() // a pause's hold ends with the node
		}
		err = c.StopConfigServer(i)
	case "ds":
		dir := c.DataServerConfig(i).Dir
		err = c.StopDataServer(i)
		// Persistent engines: the next start must not take this stop for
		// a clean one (dataserver.cleanMarker).
		if rerr := os.Remove(filepath.Join(dir, "CLEAN_SHUTDOWN")); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	case "proxy":
		err = c.StopProxy(i)
	}
	// Its connections end, as a dead process's do; the links themselves
	// stay for the restart.
	for _, l := range from {
		l.Reset()
		l.Heal()
	}
	if err != nil {
		c.t.Logf("testcluster: kill %s: stopping it: %v", node, err)
	}
}

// Restart starts node again on the same addresses (killing it first
// when it runs).
func (c *Cluster) Restart(node string) {
	c.t.Helper()
	role, i := c.node(node)
	if c.running(role, i) {
		c.Kill(node)
	}
	var err error
	switch role {
	case "cs":
		if _, err = c.StartConfigServer(i); err == nil {
			for _, l := range c.linksTo(node) {
				if err = l.Up(); err != nil {
					break
				}
			}
		}
	case "ds":
		_, err = c.StartDataServer(i)
	case "proxy":
		_, err = c.StartProxy(i)
	}
	if err != nil {
		c.t.Fatalf("testcluster: restart %s: %v", node, err)
	}
}

// Pause cuts node off until Resume (see above; Options.PortFaults).
func (c *Cluster) Pause(node string) {
	c.t.Helper()
	role, i := c.node(node)
	if c.ports == nil {
		c.t.Fatalf("testcluster: pause %s: the cluster was started without PortFaults", node)
	}
	if role == "cs" && i == 0 {
		c.t.Fatalf("testcluster: pause cs0: its process runs etcd, which would go on serving the others (use the child-process harness)")
	}
	if !c.running(role, i) || c.paused[node] {
		c.t.Fatalf("testcluster: pause %s: not running, or paused already", node)
	}
	port := c.port(node)
	if err := c.ports.CutPort(port, Both); err != nil {
		c.t.Fatalf("testcluster: pause %s: %v", node, err)
	}
	for _, l := range c.bridge.Of(node) {
		l.Cut()
	}
	c.paused[node] = true
}

// Resume ends a Pause.
func (c *Cluster) Resume(node string) {
	c.t.Helper()
	c.node(node)
	if !c.paused[node] {
		c.t.Fatalf("testcluster: resume %s: not paused", node)
	}
	c.healPort(node)
	for _, l := range c.bridge.Of(node) {
		l.Heal()
	}
}

// Cut holds the bridged link between a and b until Heal.
func (c *Cluster) Cut(a, b string) { c.t.Helper(); c.link(a, b).Cut() }

// Delay holds each chunk crossing the link between a and b for d.
func (c *Cluster) Delay(a, b string, d time.Duration) { c.t.Helper(); c.link(a, b).Delay(d) }

// Heal ends a Cut or Delay of the link between a and b.
func (c *Cluster) Heal(a, b string) { c.t.Helper(); c.link(a, b).Heal() }

// Addr is node's RESP (dataserver, proxy) or API (configserver) address,
// the one it had when it is not running.
func (c *Cluster) Addr(node string) string {
	c.t.Helper()
	role, i := c.node(node)
	if c.running(role, i) {
		switch role {
		case "cs":
			return c.ConfigServers[i].Addr()
		case "ds":
			return c.DataServers[i].Addr()
		case "proxy":
			return c.Proxies[i].Addr()
		}
	}
	var listen string
	switch role {
	case "cs":
		listen = c.ConfigServerConfig(i).Listen
	case "ds":
		listen = c.DataServerConfig(i).Listen
	case "proxy":
		listen = c.ProxyConfig(i).Listen
	}
	if _, port, _ := net.SplitHostPort(listen); port == "0" || port == "" {
		c.t.Fatalf("testcluster: %s never ran", node)
	}
	return listen
}

// Node names the dataserver whose address is addr ("" when none).
func (c *Cluster) Node(addr string) string {
	for i := range c.DataServers {
		if c.Addr(DS(i)) == addr {
			return DS(i)
		}
	}
	return ""
}

// node parses node and checks that the cluster has it.
func (c *Cluster) node(node string) (string, int) {
	c.t.Helper()
	role, i, err := parseNode(node)
	if err == nil {
		n := map[string]int{"cs": len(c.ConfigServers), "ds": len(c.DataServers), "proxy": len(c.Proxies)}[role]
		if i >= n {
			err = errors.New("testcluster: the cluster has no " + node)
		}
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return role, i
}

func (c *Cluster) running(role string, i int) bool {
	switch role {
	case "cs":
		return c.ConfigServers[i] != nil
	case "ds":
		return c.DataServers[i] != nil
	}
	return c.Proxies[i] != nil
}

// port is the port of node's listener.
func (c *Cluster) port(node string) int {
	c.t.Helper()
	_, p, err := net.SplitHostPort(c.Addr(node))
	n, _ := strconv.Atoi(p)
	if err != nil || n == 0 {
		c.t.Fatalf("testcluster: %s: no port in %q", node, c.Addr(node))
	}
	return n
}

func (c *Cluster) link(a, b string) *Link {
	c.t.Helper()
	l, err := linkBetween(c.bridge, a, b)
	if err != nil {
		c.t.Fatal(err)
	}
	return l
}

func (c *Cluster) linksFrom(node string) []*Link {
	if c.bridge == nil {
		return nil
	}
	return c.bridge.From(node)
}

func (c *Cluster) linksTo(node string) []*Link {
	if c.bridge == nil {
		return nil
	}
	return c.bridge.To(node)
}

// healPort ends node's pause, if any.
func (c *Cluster) healPort(node string) {
	if !c.paused[node] {
		return
	}
	delete(c.paused, node)
	if err := c.ports.HealPort(c.port(node)); err != nil {
		c.t.Errorf("testcluster: resume %s: %v", node, err)
	}
}

// healAll ends every pause, cut and delay (at cleanup, before the nodes
// stop: a stop must not wait on a held link).
func (c *Cluster) healAll() {
	for node := range c.paused {
		c.healPort(node)
	}
	if c.bridge != nil {
		for _, l := range c.bridge.All() {
			l.Heal()
		}
	}
}

// Table returns the configserver's current table.
func (c *Cluster) Table() *route.Table {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := c.Cluster.Table(ctx)
	if err != nil {
		c.t.Fatalf("testcluster: table: %v", err)
	}
	return t
}
