package testcluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tairkv/tair/internal/route"
)

// Faults is the fault vocabulary both harnesses speak, so that a fault
// test reads as the same script against an in-process cluster (Cluster)
// and against child processes (ProcCluster). Nodes are named by role and
// index: "cs0" (configserver), "ds1" (dataserver), "proxy0". A call that
// the harness cannot carry out fails the test and says why.
//
//   - Kill stops a node abruptly: its connections end, nothing is handed
//     over, a persistent engine's data stays as it was on disk.
//   - Restart starts it again on the same addresses (and data directory:
//     a persistent engine finds its data, an in-memory one starts empty),
//     killing it first when it runs.
//   - Pause stops it from serving or sending anything, its connections
//     left open, until Resume.
//   - Cut holds every byte of the link between two nodes (the
//     connections one makes to the other) until Heal, as a partition
//     does; Delay holds each chunk for d; Heal ends both. Only bridged
//     links can be cut: those from a dataserver or proxy to a
//     configserver (Options.Links, ProcOptions.Links).
type Faults interface {
	Kill(node string)
	Restart(node string)
	Pause(node string)
	Resume(node string)
	Cut(a, b string)
	Delay(a, b string, d time.Duration)
	Heal(a, b string)
}

// Harness is what a fault script needs of a cluster besides its faults.
type Harness interface {
	Faults
	// Addr is the node's address: RESP for dataservers and proxies, the
	// cluster API for configservers.
	Addr(node string) string
	// Table is the configservers' current table (the test fails when
	// none answers).
	Table() *route.Table
	// Node names the dataserver whose address (as in the table) is addr
	// ("" when none).
	Node(addr string) string
}

var (
	_ Harness = (*Cluster)(nil)
	_ Harness = (*ProcCluster)(nil)
)

// Node names.
func CS(i int) string    { return "cs" + strconv.Itoa(i) }
func DS(i int) string    { return "ds" + strconv.Itoa(i) }
func Proxy(i int) string { return "proxy" + strconv.Itoa(i) }

// parseNode splits a node name into its role and index.
func parseNode(node string) (role string, i int, err error) {
	for _, r := range []string{"cs", "ds", "proxy"} {
		if rest, ok := strings.CutPrefix(node, r); ok {
			if i, err := strconv.Atoi(rest); err == nil && i >= 0 {
				return r, i, nil
			}
		}
	}
	return "", 0, fmt.Errorf("testcluster: no node %q (cs<i>, ds<i> or proxy<i>)", node)
}

// linkBetween is the bridged link between a and b, or an error that says
// which links can be cut.
func linkBetween(b *Bridge, a, c string) (*Link, error) {
	if b == nil {
		return nil, fmt.Errorf("testcluster: no link %s-%s: the cluster bridges no links (set Links in its options)", a, c)
	}
	if l := b.Find(a, c); l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("testcluster: no bridged link %s-%s: only the links from dataservers and proxies to configservers are bridged "+
		"(the others go to the addresses in the table, the nodes' own)", a, c)
}
