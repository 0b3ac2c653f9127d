package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

// startEtcd runs a real single-node etcd (Debian's etcd-server) as a child
// process on free loopback ports, so that configservers can die without
// taking their etcd with them. Without etcd the test is skipped, or fails
// under make test (testcluster.RequireEtcd).
func startEtcd(t *testing.T) string {
	t.Helper()
	return testcluster.StartEtcd(t, 1).Endpoints()[0]
}

// tableOf fetches the table one configserver serves (GET /v1/table, no
// leader following).
func tableOf(t *testing.T, addr string) *route.Table {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tb, err := wire.NewClient(addr).Table(ctx, 0, 0)
	if err != nil {
		t.Fatalf("table from %s: %v", addr, err)
	}
	return tb
}

// sameRows reports whether two tables have the same version, serving and
// destination rows and running moves.
func sameRows(a, b *route.Table) bool {
	eq := func(x, y [][]string) bool {
		return slices.EqualFunc(x, y, func(r, s []string) bool { return slices.Equal(r, s) })
	}
	return a.Version == b.Version && eq(a.Serving, b.Serving) && eq(a.Destination, b.Destination) &&
		slices.Equal(a.Migrating, b.Migrating)
}

// Killing the leading configserver (kill -9 of a real process) makes the
// standby lead within 3 s with the same table and version, while a proxy
// keeps serving reads and writes throughout.
func TestConfigServerLeaderKill(t *testing.T) {
	etcd := startEtcd(t)
	common := []string{"--etcd", etcd, "--copies", "2", "--buckets", "64"}
	cs := []*testcluster.Proc{
		testcluster.StartProc(t, "configserver", common...),
		testcluster.StartProc(t, "configserver", common...),
	}
	csList := cs[0].Addr + "," + cs[1].Addr
	for i := 0; i < 3; i++ {
		testcluster.StartProc(t, "dataserver", "--configserver", csList, "--engine", "rdb")
	}
	pc := &testcluster.ProcCluster{ConfigServers: cs}
	pc.WaitNodes(t, 3, 30*time.Second)
	proxy := testcluster.StartProc(t, "proxy", "--configserver", csList)

	leader, standby := -1, -1
	testutil.Eventually(t, 10*time.Second, func() bool {
		leader, standby = -1, -1
		for i, p := range cs {
			st, err := p.Status()
			if err != nil {
				return false
			}
			switch st.Role {
			case "leader":
				leader = i
			case "standby":
				standby = i
			}
		}
		return leader >= 0 && standby >= 0
	}, "no leader and standby pair")
	before, err := cs[leader].Status()
	if err != nil {
		t.Fatal(err)
	}
	beforeTable := tableOf(t, cs[leader].Addr)

	stop := make(chan struct{})
	load, wg := runWriteLoad(t, proxy.Addr, 2, stop)
	time.Sleep(500 * time.Millisecond)

	killed := time.Now()
	cs[leader].Kill()
	var took time.Duration
	testutil.Eventually(t, 10*time.Second, func() bool {
		st, err := cs[standby].Status()
		if err == nil && st.Role == "leader" {
			took = time.Since(killed)
			return true
		}
		return false
	}, "standby never took over")
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	after, err := cs[standby].Status()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("standby led %v after kill -9 of the leader; table version %d -> %d; %d writes acknowledged, %d errors, longest gap %v",
		took, before.TableVersion, after.TableVersion, len(load.acked), load.errors, load.maxGap)
	if took > 3*time.Second {
		t.Fatalf("takeover took %v, want within 3s", took)
	}
	if after.TableVersion != before.TableVersion {
		t.Fatalf("table version changed across the takeover: %d -> %d", before.TableVersion, after.TableVersion)
	}
	// The same table, row for row: serving, destination, running moves.
	if afterTable := tableOf(t, cs[standby].Addr); !sameRows(beforeTable, afterTable) {
		t.Fatalf("the new leader serves another table:\nbefore %s\nafter %s", beforeTable, afterTable)
	}
	if load.errors != 0 {
		t.Fatalf("the proxy failed %d requests during the takeover (last: %v)", load.errors, load.lastErr)
	}
	verifyAcked(t, proxy.Addr, load.acked)

	// The new leader governs: its table answers and a write still works.
	cl := redis.NewClient(&redis.Options{Addr: proxy.Addr})
	defer cl.Close()
	if err := cl.Set(context.Background(), "after-takeover", "ok", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// A real 3-member etcd cluster, two configservers given all three
// endpoints, three dataservers and a proxy. Each etcd member in turn is
// killed (-9) and, while it is down, the configserver leader changes the
// table: a dataserver joins, then one is drained, then it is added back.
// Throughout, the proxy keeps serving writes; after each change the
// table in etcd is the one both configservers and the proxy serve. The
// member is restarted (and the cluster healthy again) before the next
// is killed, so every member, the raft leader among them and whichever
// one the configservers' clients were connected to, is lost once.
func TestConfigServerEtcdMemberKill(t *testing.T) {
	etcd := testcluster.StartEtcd(t, 3)
	common := []string{"--etcd", strings.Join(etcd.Endpoints(), ","), "--copies", "2", "--buckets", "64"}
	cs := []*testcluster.Proc{
		testcluster.StartProc(t, "configserver", common...),
		testcluster.StartProc(t, "configserver", common...),
	}
	csList := cs[0].Addr + "," + cs[1].Addr
	dir := t.TempDir()
	var ds []*testcluster.Proc
	startDS := func() {
		ds = append(ds, testcluster.StartProc(t, "dataserver", "--configserver", csList, "--engine", "rdb",
			"--dir", filepath.Join(dir, fmt.Sprintf("ds%d", len(ds)))))
	}
	for range 3 {
		startDS()
	}
	pc := &testcluster.ProcCluster{ConfigServers: cs}
	pc.WaitNodes(t, 3, 30*time.Second)
	proxy := testcluster.StartProc(t, "proxy", "--configserver", csList)
	cli := etcd.Client()
	admin := pc.Client()

	leader := func() int {
		for i, p := range cs {
			if st, err := p.Status(); err == nil && st.Role == "leader" {
				return i
			}
		}
		return -1
	}
	// settled waits for a table where cond holds and no copy is left to
	// move.
	settled := func(what string, cond func(*route.Table) bool) *route.Table {
		t.Helper()
		var tb *route.Table
		testutil.Eventually(t, 90*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			got, err := admin.Table(ctx, 0, 0)
			if err != nil {
				return false
			}
			tb = got
			return cond(got) && len(got.Migrating) == 0 &&
				slices.EqualFunc(got.Serving, got.Destination, func(a, b []string) bool { return slices.Equal(a, b) })
		}, "never settled: %s", what)
		return tb
	}
	// adminOp retries while no configserver leads (as an operator
	// would), and logs how long that took.
	adminOp := func(op, node string) {
		t.Helper()
		start, tries := time.Now(), 0
		var last string
		testutil.Eventually(t, 20*time.Second, func() bool {
			tries++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rep, err := admin.Admin(ctx, &wire.AdminRequest{Op: op, Node: node})
			if err != nil || !rep.OK {
				last = fmt.Sprintf("%v %+v", err, rep)
				return false
			}
			return true
		}, "%s %s refused", op, node)
		if tries > 1 {
			t.Logf("%s %s answered after %d tries, %v (last refusal: %s)", op, node, tries, time.Since(start).Round(time.Millisecond), last)
		}
	}
	// served checks that the table in etcd is the one the configservers
	// and the proxy serve.
	served := func(want *route.Table) {
		t.Helper()
		var why string
		ok := func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			resp, err := cli.Get(ctx, "/tair/table")
			if err != nil || len(resp.Kvs) != 1 {
				why = fmt.Sprintf("etcd get: %v", err)
				return false
			}
			var stored route.Table
			if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
				t.Fatal(err)
			}
			if stored.Version < want.Version {
				why = fmt.Sprintf("etcd holds version %d, want %d or later", stored.Version, want.Version)
				return false
			}
			for _, p := range cs {
				if got := tableOf(t, p.Addr); !sameRows(got, &stored) {
					why = fmt.Sprintf("configserver %s serves version %d, etcd holds %d", p.Addr, got.Version, stored.Version)
					return false
				}
			}
			if st, err := proxy.Status(); err != nil || st.TableVersion != stored.Version {
				why = fmt.Sprintf("proxy at version %d (%v), etcd holds %d", st.TableVersion, err, stored.Version)
				return false
			}
			return true
		}
		testutil.EventuallyErr(t, 15*time.Second, func() error {
			if ok() {
				return nil
			}
			return fmt.Errorf("the served table is not etcd's: %s", why)
		})
	}

	stop := make(chan struct{})
	load, wg := runWriteLoad(t, proxy.Addr, 2, stop)
	rounds := []struct {
		what string
		act  func()
		done func(*route.Table) bool
	}{
		{"a dataserver joins", startDS,
			func(tb *route.Table) bool { return slices.Contains(tb.Nodes(), ds[3].Addr) }},
		{"a dataserver is drained", func() { adminOp("node-drain", ds[0].Addr) },
			func(tb *route.Table) bool { return !slices.Contains(tb.Nodes(), ds[0].Addr) }},
		{"the drained dataserver is added back", func() { adminOp("node-add", ds[0].Addr) },
			func(tb *route.Table) bool { return slices.Contains(tb.Nodes(), ds[0].Addr) }},
	}
	for i, r := range rounds {
		testutil.Eventually(t, 10*time.Second, func() bool { return leader() >= 0 }, "no configserver leads")
		lead := leader()
		before := tableOf(t, cs[lead].Addr)
		raft := etcd.Leader()
		victim := etcd.Members[i]
		victim.Kill()
		killed := time.Now()
		r.act()
		after := settled(r.what, r.done)
		if after.Version <= before.Version {
			t.Fatalf("%s with etcd member %s down: table version %d -> %d", r.what, victim.Name, before.Version, after.Version)
		}
		served(after)
		t.Logf("%s: etcd member %s killed (raft leader was %d, member %d); configserver %d led before, %d after; table %d -> %d in %v",
			r.what, victim.Name, raft, i, lead, leader(), before.Version, after.Version, time.Since(killed).Round(time.Millisecond))
		victim.Start()
		etcd.WaitHealthy(30 * time.Second)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d writes acknowledged, %d errors, longest gap %v", len(load.acked), load.errors, load.maxGap)
	if load.errors != 0 {
		t.Fatalf("the proxy failed %d requests (last: %v)", load.errors, load.lastErr)
	}
	verifyAcked(t, proxy.Addr, load.acked)
}
