package tests

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tairkv/tair/internal/testcluster"
	"github.com/tairkv/tair/internal/testutil"
)

// startEtcd runs a real single-node etcd (Debian's etcd-server) as a child
// process on free loopback ports, so that configservers can die without
// taking their etcd with them.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd not installed (make test installs etcd-server)")
	}
	client := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	peer := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	cmd := exec.Command(bin, "--data-dir", t.TempDir(), "--name", "tairtest",
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "tairtest=http://"+peer)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testutil.Eventually(t, 20*time.Second, func() bool { return dialOK(client) }, "etcd did not start")
	return client
}

func dialOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
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
