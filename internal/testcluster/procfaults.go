package testcluster

import (
	"context"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/route"
)

// The child-process cluster's Faults: signals. Kill is kill -9, Pause
// SIGSTOP, Resume SIGCONT, Restart starts the process again with the same
// arguments (addresses, data directory). Links (ProcOptions.Links) are
// the bridge's, as in process.

// tb is the test the cluster belongs to.
func (pc *ProcCluster) tb() testing.TB {
	if pc.t == nil {
		panic("testcluster: a ProcCluster not made by StartProcs has no faults")
	}
	return pc.t
}

// Kill sends node SIGKILL and reaps it; links to a killed configserver
// refuse connections, as it does.
func (pc *ProcCluster) Kill(node string) {
	pc.tb().Helper()
	p := pc.proc(node)
	if !p.Running() {
		pc.tb().Fatalf("testcluster: kill %s: not running", node)
	}
	p.Kill()
	pc.eachLink(node, func(l *Link) {
		if l.To == node {
			l.Down()
		} else {
			l.Reset()
		}
	})
}

// Restart starts node again with the same arguments (killing it first
// when it runs) and waits until it is healthy.
func (pc *ProcCluster) Restart(node string) {
	pc.tb().Helper()
	p := pc.proc(node)
	if p.Running() {
		pc.Kill(node)
	}
	p.Start()
	pc.eachLink(node, func(l *Link) {
		if l.To == node {
			if err := l.Up(); err != nil {
				pc.tb().Fatal(err)
			}
		}
	})
}

// Pause sends SIGSTOP; Resume SIGCONT.
func (pc *ProcCluster) Pause(node string) { pc.tb().Helper(); pc.proc(node).Pause() }
func (pc *ProcCluster) Resume(node string) {
	pc.tb().Helper()
	pc.proc(node).Resume()
}

// Cut holds the bridged link between a and b until Heal.
func (pc *ProcCluster) Cut(a, b string) { pc.tb().Helper(); pc.link(a, b).Cut() }

// Delay holds each chunk crossing the link between a and b for d.
func (pc *ProcCluster) Delay(a, b string, d time.Duration) { pc.tb().Helper(); pc.link(a, b).Delay(d) }

// Heal ends a Cut or Delay of the link between a and b.
func (pc *ProcCluster) Heal(a, b string) { pc.tb().Helper(); pc.link(a, b).Heal() }

// Addr is node's --listen address.
func (pc *ProcCluster) Addr(node string) string { pc.tb().Helper(); return pc.proc(node).Addr }

// Node names the dataserver whose address is addr ("" when none).
func (pc *ProcCluster) Node(addr string) string {
	for i, p := range pc.DataServers {
		if p.Addr == addr {
			return DS(i)
		}
	}
	return ""
}

// Table returns the configservers' current table.
func (pc *ProcCluster) Table() *route.Table {
	pc.tb().Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := pc.Client().Table(ctx, 0, 0)
	if err != nil {
		pc.tb().Fatalf("testcluster: table: %v", err)
	}
	return t
}

func (pc *ProcCluster) proc(node string) *Proc {
	pc.tb().Helper()
	role, i, err := parseNode(node)
	if err != nil {
		pc.tb().Fatal(err)
	}
	list := map[string][]*Proc{"cs": pc.ConfigServers, "ds": pc.DataServers, "proxy": pc.Proxies}[role]
	if i >= len(list) {
		pc.tb().Fatalf("testcluster: the cluster has no %s", node)
	}
	return list[i]
}

func (pc *ProcCluster) link(a, b string) *Link {
	pc.tb().Helper()
	l, err := linkBetween(pc.bridge, a, b)
	if err != nil {
		pc.tb().Fatal(err)
	}
	return l
}

func (pc *ProcCluster) eachLink(node string, fn func(*Link)) {
	if pc.bridge == nil {
		return
	}
	for _, l := range pc.bridge.Of(node) {
		fn(l)
	}
}
