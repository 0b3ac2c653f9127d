package testcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tairkv/tair/internal/testutil"
)

// EtcdCluster is an etcd cluster of real `etcd` processes (Debian's
// etcd-server) on free loopback ports, for tests in which configservers
// or etcd members die: configservers never embed it.
type EtcdCluster struct {
	t       testing.TB
	Members []*EtcdMember
}

// EtcdMember is one member process; Kill and Start stop and restart it
// on the same data directory.
type EtcdMember struct {
	t      testing.TB
	Name   string
	Client string // host:port of its client listener
	Peer   string
	args   []string

	child
}

// RequireEtcd returns the etcd binary's path. When it is not installed
// the test is skipped, or fails where etcd is required: with CI,
// TAIR_REQUIRE_ETCD or TAIR_REQUIRE_REDIS set (the Makefile sets the
// last; `make tools` installs both), as testutil.StartRedis does.
func RequireEtcd(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		for _, env := range []string{"CI", "TAIR_REQUIRE_ETCD", "TAIR_REQUIRE_REDIS"} {
			if os.Getenv(env) != "" {
				t.Fatalf("etcd not installed (%s is set; make tools installs etcd-server)", env)
			}
		}
		t.Skip("etcd not installed (make tools installs etcd-server)")
	}
	return bin
}

// StartEtcd starts an n-member etcd cluster (--initial-cluster naming
// every member), waits until every member answers and they agree on a
// leader, and kills it at cleanup.
func StartEtcd(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	bin := RequireEtcd(t)
	c := &EtcdCluster{t: t}
	dir := t.TempDir()
	var initial []string
	for i := 0; i < n; i++ {
		m := &EtcdMember{
			t:      t,
			Name:   fmt.Sprintf("etcd%d", i),
			Client: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)),
			Peer:   "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"=http://"+m.Peer)
	}
	for _, m := range c.Members {
		m.args = []string{bin, "--name", m.Name, "--data-dir", filepath.Join(dir, m.Name),
			"--listen-client-urls", "http://" + m.Client, "--advertise-client-urls", "http://" + m.Client,
			"--listen-peer-urls", "http://" + m.Peer, "--initial-advertise-peer-urls", "http://" + m.Peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "tairtest"}
		m.killAtCleanup(t, func() string { return m.Name }, 16<<10)
		m.startOrFail()
	}
	c.WaitHealthy(30 * time.Second)
	return c
}

// Endpoints are the members' client addresses.
func (c *EtcdCluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.Client)
	}
	return out
}

// Client returns a client of every member, closed at cleanup.
func (c *EtcdCluster) Client() *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// Leader returns the index of the member that leads the raft group now,
// as the running members report it; -1 when none answers.
func (c *EtcdCluster) Leader() int {
	ids := map[uint64]int{}
	var leader uint64
	for i, m := range c.Members {
		st, err := m.status()
		if err != nil {
			continue
		}
		ids[st.Header.MemberId] = i
		leader = st.Leader
	}
	if i, ok := ids[leader]; ok && leader != 0 {
		return i
	}
	return -1
}

// WaitHealthy waits until every running member answers and all of them
// name the same leader.
func (c *EtcdCluster) WaitHealthy(timeout time.Duration) {
	c.t.Helper()
	testutil.Eventually(c.t, timeout, func() bool {
		var leader uint64
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			st, err := m.status()
			if err != nil || st.Leader == 0 || leader != 0 && st.Leader != leader {
				return false
			}
			leader = st.Leader
		}
		return leader != 0
	}, "etcd members not healthy")
}

func (m *EtcdMember) status() (*clientv3.StatusResponse, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Client}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return cli.Status(ctx, m.Client)
}

func (m *EtcdMember) startOrFail() {
	if err := m.start(nil, m.args[0], m.args[1:]...); err != nil {
		m.t.Fatalf("start %s: %v", m.Name, err)
	}
}

// Start restarts a killed member on its data directory (it rejoins the
// cluster it was part of).
func (m *EtcdMember) Start() {
	if m.Running() {
		return
	}
	m.startOrFail()
}
