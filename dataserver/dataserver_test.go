package dataserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/engines"
	"github.com/tairkv/tair/internal/route"
	"github.com/tairkv/tair/internal/testutil"
	"github.com/tairkv/tair/internal/wire"
)

const q = 16

// cluster2 starts two nodes under a fake configserver with a ring table
// (copies 2: each bucket's slave is the other node).
func cluster2(t *testing.T, mut func(i int, c *Config)) (*fakeCS, []*Server) {
	return clusterN(t, 2, mut)
}

// clusterN starts n nodes on table 1, a ring of n copies of each bucket.
func clusterN(t *testing.T, n int, mut func(i int, c *Config)) (*fakeCS, []*Server) {
	cs := newFakeCS(t)
	var nodes []*Server
	var addrs []string
	for i := 0; i < n; i++ {
		c := testConfig(cs.addr())
		if mut != nil {
			mut(i, &c)
		}
		nodes = append(nodes, startNode(t, c))
		addrs = append(addrs, nodes[i].Addr())
	}
	cs.setTable(ringTable(1, q, n, addrs...))
	waitVersion(t, 1, nodes...)
	return cs, nodes
}

func engineGet(s *Server, key string) (string, bool) {
	k := engines.Key{Bucket: uint32(route.BucketOf([]byte(key), q)), Area: 0, Key: []byte(key)}
	e, err := s.Engine().Get(k)
	if err != nil {
		return "", false
	}
	return string(e.Value), true
}

func TestNotMaster(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	// bucket 0: master a, slave b.
	k := keyIn("nm", 0, q, 0)
	cb := dial(t, b.Addr())
	got := cb.do(x(1, "SET", k, "v")...)
	want := "-NOTMASTER bucket 0 table 1 (tair -3986)"
	if got != want {
		t.Fatalf("write on the slave: got %q, want %q", got, want)
	}
	// A plain command is area 0, master only as well.
	if got := cb.do("SET", k, "v"); got != want {
		t.Fatalf("plain write on the slave: got %q", got)
	}
	// TAIR.X read on the slave: NOTMASTER; TAIR.XR read: served.
	if got := cb.do(x(1, "GET", k)...); got != want {
		t.Fatalf("TAIR.X read on the slave: got %q", got)
	}
	ca := dial(t, a.Addr())
	if got := ca.do(x(1, "SET", k, "v")...); got != "+OK" {
		t.Fatalf("write on the master: %q", got)
	}
	xr := append([]string{"TAIR.XR", "0", "1", "2"}, "GET", k)
	if got := cb.do(xr...); got != "$1\r\nv" {
		t.Fatalf("TAIR.XR read on the slave: %q", got)
	}
	// A proxy with a stale table (version 0) still gets the node's version.
	if got := cb.do(x(0, "SET", k, "w")...); got != want {
		t.Fatalf("stale proxy: %q", got)
	}
	// Writes whose keys span buckets are refused.
	k1 := keyIn("nm", 2, q, 1)
	if got := ca.do(x(1, "MSET", k, "1", k1, "2")...); !strings.HasPrefix(got, "-CROSSSLOT") {
		t.Fatalf("cross-bucket MSET: %q", got)
	}
}

func TestSyncReplication(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	ca, cb := dial(t, a.Addr()), dial(t, b.Addr())
	for i := 0; i < 50; i++ {
		// alternate masters: bucket 0 on a, bucket 1 on b
		bk := route.BucketID(i % 2)
		k := keyIn("sync", bk, q, i)
		c, slave := ca, b
		if bk == 1 {
			c, slave = cb, a
		}
		v := fmt.Sprintf("v%d", i)
		if got := c.do(x(1, "SET", k, v)...); got != "+OK" {
			t.Fatalf("SET: %q", got)
		}
		// The ack means the slave has it, now.
		if got, ok := engineGet(slave, k); !ok || got != v {
			t.Fatalf("slave after ack: %q %v, want %q", got, ok, v)
		}
	}
	// A pipeline of writes: one wait for the batch, every write on the slave.
	var cmds [][]string
	var keys []string
	for i := 0; i < 500; i++ {
		k := keyIn("pipe", 0, q, i)
		keys = append(keys, k)
		cmds = append(cmds, x(1, "SET", k, k))
	}
	for i, r := range ca.pipeline(cmds) {
		if r != "+OK" {
			t.Fatalf("pipelined SET %d: %q", i, r)
		}
	}
	for _, k := range keys {
		if got, ok := engineGet(b, k); !ok || got != k {
			t.Fatalf("slave misses %s after the pipeline's ack", k)
		}
	}
	// INCR replays exactly once.
	k := keyIn("ctr", 0, q, 0)
	for i := 0; i < 20; i++ {
		ca.do(x(1, "INCR", k)...)
	}
	if got, _ := engineGet(b, k); got != "20" {
		t.Fatalf("slave counter %q, want 20", got)
	}
}

func TestStrictAndDegraded(t *testing.T) {
	for _, mode := range []string{ReplicationStrict, ReplicationDegraded} {
		t.Run(mode, func(t *testing.T) {
			cs, nodes := cluster2(t, func(_ int, c *Config) { c.ReplicationMode = mode })
			a, b := nodes[0], nodes[1]
			ca := dial(t, a.Addr())
			k := keyIn("sd", 0, q, 0)
			if got := ca.do(x(1, "SET", k, "1")...); got != "+OK" {
				t.Fatalf("healthy SET: %q", got)
			}
			testutil.Eventually(t, 2*time.Second, func() bool {
				hb := cs.lastHB(a.Addr())
				return hb.InSyncReported && slices.Equal(hb.InSyncSlaves, []string{b.Addr()})
			}, "heartbeat does not report the healthy slave in sync")
			_ = b.Close() // the slave dies
			start := time.Now()
			got := ca.do(x(1, "SET", k, "2")...)
			took := time.Since(start)
			switch mode {
			case ReplicationStrict:
				if !strings.HasPrefix(got, "-TIMEOUT ") || !strings.HasSuffix(got, "(tair -3989)") {
					t.Fatalf("strict with a dead slave: %q", got)
				}
			case ReplicationDegraded:
				if got != "+OK" {
					t.Fatalf("degraded with a dead slave: %q", got)
				}
				// Later writes do not wait for the dead slave.
				start2 := time.Now()
				if got := ca.do(x(1, "SET", k, "3")...); got != "+OK" {
					t.Fatalf("second degraded write: %q", got)
				}
				if d := time.Since(start2); d > 100*time.Millisecond {
					t.Fatalf("degraded write waited %v for a known-dead slave", d)
				}
				testutil.Eventually(t, 2*time.Second, func() bool {
					hb := cs.lastHB(a.Addr())
					return len(hb.UnreachableSlaves) == 1 && hb.UnreachableSlaves[0] == b.Addr() && len(hb.InSyncSlaves) == 0
				}, "heartbeat does not report the unreachable slave (and it alone, not in sync)")
			}
			if took > 2*time.Second {
				t.Fatalf("write took %v", took)
			}
		})
	}
}

func TestLease(t *testing.T) {
	cs, nodes := cluster2(t, shortLease)
	a := nodes[0]
	ca := dial(t, a.Addr())
	k := keyIn("lease", 0, q, 0)
	if got := ca.do(x(1, "SET", k, "1")...); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	cs.down.Store(true)
	time.Sleep(a.cfg.LeaseTimeout + 100*time.Millisecond)
	got := ca.do(x(1, "SET", k, "2")...)
	if got != "-NOTMASTER bucket 0 table 1: master lease lapsed (tair -3986)" {
		t.Fatalf("write with an expired lease: %q", got)
	}
	if v, _ := engineGet(a, k); v != "1" {
		t.Fatalf("refused write applied: %q", v)
	}
	if got := ca.do(x(1, "GET", k)...); !strings.HasPrefix(got, "-NOTMASTER") {
		t.Fatalf("read with an expired lease: %q", got)
	}
	cs.down.Store(false)
	testutil.Eventually(t, 2*time.Second, func() bool {
		return ca.do(x(1, "SET", k, "3")...) == "+OK"
	}, "writes do not resume after the configserver is back")
}

// A write that is in flight when the lease runs out is not acknowledged.
func TestLeaseExpiresDuringWrite(t *testing.T) {
	cs, nodes := cluster2(t, func(i int, c *Config) {
		shortLease(i, c)
		c.ReplicationMode = ReplicationStrict
		c.ReplicationTimeout = 2 * time.Second
	})
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	k := keyIn("lease2", 0, q, 0)
	// Freeze the slave's apply path by holding its bucket lock: the
	// master's write waits for replication while its lease runs out.
	bk := b.bucket(0)
	bk.mu.Lock()
	cs.down.Store(true)
	go func() {
		time.Sleep(a.cfg.LeaseTimeout + 100*time.Millisecond)
		bk.mu.Unlock()
	}()
	got := ca.do(x(1, "SET", k, "1")...)
	if !strings.HasPrefix(got, "-TIMEOUT lease expired") {
		t.Fatalf("write acknowledged past the lease: %q", got)
	}
}

// A master switch without a move (a reorder: [a b] -> [b a]) that the
// slave learns first: it takes over only after a short window in which it
// still applies the old master's last writes, so they are acknowledged.
// When the old master leaves the row instead, the slave refuses its write
// and the old master, demoted, answers NOTMASTER: the proxy sends the
// write to the real master, which has not seen it.
func TestSlaveRefusalIsNotMaster(t *testing.T) {
	// A long replication timeout: the refusal, not a timeout, decides.
	cs, nodes := cluster2(t, func(_ int, c *Config) { c.ReplicationTimeout = 5 * time.Second })
	a, b := nodes[0], nodes[1]
	k0 := keyIn("takeover", 0, q, 0)
	reorder := ringTable(2, q, 2, a.Addr(), b.Addr())
	reorder.Serving[0] = []string{b.Addr(), a.Addr()}
	b.applyTable(reorder)
	if got := dial(t, a.Addr()).do(x(1, "SET", k0, "1")...); got != "+OK" {
		t.Fatalf("old master's write in the takeover window: %q", got)
	}
	if v, ok := engineGet(b, k0); !ok || v != "1" {
		t.Fatalf("new master holds %q, %v; want the old master's last write", v, ok)
	}
	if got := dial(t, b.Addr()).do(x(2, "SET", k0, "2")...); !strings.HasPrefix(got, "-TRYAGAIN") && got != "+OK" {
		t.Fatalf("new master's first write: %q", got)
	}

	// b learns first that a left bucket 2's row; a a moment later.
	k := keyIn("refused", 2, q, 0)
	next := reorder.Clone()
	next.Version = 3
	next.Serving[2] = []string{b.Addr()}
	b.applyTable(next)
	go func() {
		time.Sleep(30 * time.Millisecond)
		cs.setTable(next)
	}()
	got := dial(t, a.Addr()).do(x(2, "SET", k, "1")...)
	if got != "-NOTMASTER bucket 2 table 3 (tair -3986)" {
		t.Fatalf("write refused by the slave: %q", got)
	}
	if _, ok := engineGet(b, k); ok {
		t.Fatal("the refusing slave applied the write")
	}

	// A slave that refuses while this node stays the master (the slave
	// copy moved away): the write may be on the new copy's way; -TIMEOUT.
	c := ringTable(4, q, 2, a.Addr(), b.Addr())
	b.applyTable(c)
	waitVersion(t, 4, b)
	c2 := c.Clone()
	c2.Version = 5
	c2.Serving[4] = []string{a.Addr()}
	b.applyTable(c2)
	cs.setTable(c)
	waitVersion(t, 4, a)
	k1 := keyIn("refused", 4, q, 0)
	if got := dial(t, a.Addr()).do(x(4, "SET", k1, "1")...); !strings.HasPrefix(got, "-TIMEOUT a slave refused the write to bucket 4") {
		t.Fatalf("write refused by a slave while still master: %q", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return a.bucket(4).diverged.Load() },
		"a kept a write its slave refused without marking its copy diverged")

	// The same refusal by a slave copy that the newer table dropped (an
	// extra copy removed, a staying master), once a learns that table:
	// every copy it names took the write, so it stands, and a's copy is
	// not diverged (its slaves get no full copy for it).
	d := ringTable(6, q, 2, a.Addr(), b.Addr())
	d.Serving[4] = []string{a.Addr()}
	b.applyTable(d)
	cs.setTable(d)
	waitVersion(t, 6, a, b)
	d2 := d.Clone()
	d2.Version = 7
	d2.Serving[6] = []string{a.Addr()}
	b.applyTable(d2)
	go func() {
		time.Sleep(30 * time.Millisecond)
		cs.setTable(d2)
	}()
	k2 := keyIn("dropped", 6, q, 0)
	if got := dial(t, a.Addr()).do(x(6, "SET", k2, "1")...); got != "+OK" {
		t.Fatalf("write refused only by a copy the newer table dropped, its master staying: %q", got)
	}
	if a.bucket(6).diverged.Load() {
		t.Fatal("a's copy of bucket 6 marked diverged for a refusal by a dropped copy")
	}
	if v, ok := engineGet(a, k2); !ok || v != "1" {
		t.Fatalf("a holds %q, %v after the acknowledged write", v, ok)
	}
}

// TestRefusedWriteMakesTheCopyDiverged: copies of a bucket that learn a
// master switch at different times decide differently on the old
// master's last writes; the one that refuses must not go on as a copy
// that agrees with the others (chaos seed 9519: a slave refused four
// writes its new master had, applied the next ones, and was promoted
// with the latest value at a version four lower). The copies are made to
// agree on the refused write's key alone (replrepair.go): no bucket is
// copied in full.
func TestRefusedWriteMakesTheCopyDiverged(t *testing.T) {
	// A long replication timeout: the refusal, not a timeout, decides.
	cs, nodes := clusterN(t, 3, func(_ int, c *Config) { c.ReplicationTimeout = 5 * time.Second })
	a, b, c := nodes[0], nodes[1], nodes[2]
	fullCopies := func() (n float64) {
		for _, s := range nodes {
			for _, reason := range []string{"resync", "resync_master", "replace_stream"} {
				n += counterValue(t, s.m.fullCopies.WithLabelValues(reason))
			}
		}
		return n
	}
	copiesBefore := fullCopies()
	defer func() {
		if n := fullCopies() - copiesBefore; n != 0 && !t.Failed() {
			t.Errorf("%v buckets copied in full, want the refused writes' keys repaired alone", n)
		}
		// One key per refused write; more if c asked again before the
		// first answer came.
		if n := counterValue(t, b.m.repairedNames); n < 2 {
			t.Errorf("b sent its records of %v keys, want one per refused write (2)", n)
		}
	}()
	v1 := cs.getTable()
	for _, bucket := range []int{0, 3} {
		if row := v1.Serving[bucket]; !slices.Equal(row, []string{a.Addr(), b.Addr(), c.Addr()}) {
			t.Fatalf("bucket %d of table 1: %v", bucket, row)
		}
	}
	// Table 2 drops a from bucket 0's row, b its new master.
	v2 := v1.Clone()
	v2.Version = 2
	v2.Serving[0] = []string{b.Addr(), c.Addr()}

	// The slave c learns table 2 first and refuses a's write, which b,
	// still on table 1, takes as a's slave: c's copy lacks it, so c must
	// count itself diverged and be copied again from b, its master.
	k := keyIn("slave-refused", 0, q, 0)
	c.applyTable(v2)
	got := dial(t, a.Addr()).do(x(1, "SET", k, "1")...)
	if v, ok := engineGet(b, k); !ok || v != "1" {
		t.Fatalf("b (on table 1) holds %q, %v; want a's write (reply %q)", v, ok, got)
	}
	if hasKey(c, k) {
		t.Fatal("c (on table 2) applied the write of a node that is no master there")
	}
	if !c.bucket(0).diverged.Load() && !hasKey(c, k) {
		t.Fatal("c refused a write of a bucket it holds without counting its copy diverged")
	}
	cs.setTable(v2)
	waitVersion(t, 2, a, b, c)
	testutil.Eventually(t, 10*time.Second, func() bool { return hasKey(c, k) && !c.bucket(0).diverged.Load() },
		"c's copy was not copied again from its master b, which holds the write c refused")

	// The other way round: b learns first that it is bucket 3's master
	// (a dropped) and refuses a's write, which c, still on table 2, takes
	// as a's slave: b must send its slaves a full copy.
	k3 := keyIn("master-refused", 3, q, 0)
	v3 := v2.Clone()
	v3.Version = 3
	v3.Serving[3] = []string{b.Addr(), c.Addr()}
	b.applyTable(v3)
	// (c's copy of the write is not looked at here: b's full copy may
	// already have replaced it by the time a answers.)
	if got := dial(t, a.Addr()).do(x(2, "SET", k3, "1")...); !strings.HasPrefix(got, "-TIMEOUT a slave refused the write to bucket 3") {
		t.Fatalf("a's write, taken by c, refused by b: %q", got)
	}
	if hasKey(b, k3) {
		t.Fatal("b (on table 3) applied the write of a node that is no master there")
	}
	cs.setTable(v3)
	waitVersion(t, 3, a, b, c)
	testutil.Eventually(t, 10*time.Second, func() bool { return !hasKey(c, k3) && !b.bucket(3).diverged.Load() },
		"c, b's slave, keeps a write its master b refused: the copies differ")
}

func hasKey(s *Server, k string) bool { _, ok := engineGet(s, k); return ok }

func TestStatusAndDBSize(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a := nodes[0]
	ca := dial(t, a.Addr())
	for i := 0; i < 10; i++ {
		ca.do(x(1, "SET", keyIn("db", 0, q, i), "v")...)
	}
	if got := ca.do(x(1, "DBSIZE")...); got != ":10" {
		t.Fatalf("DBSIZE on the master: %q", got)
	}
	if got := dial(t, nodes[1].Addr()).do(x(1, "DBSIZE")...); got != ":0" {
		t.Fatalf("DBSIZE on the slave: %q", got)
	}
	got := ca.do(x(1, "SCANBUCKET", "0", "0", "MATCH", "db:1:*")...)
	if !strings.HasPrefix(got, "*2\r\n$1\r\n0\r\n*1\r\n") {
		t.Fatalf("SCANBUCKET: %q", got)
	}
	resp, err := http.Get("http://" + a.HTTPAddr() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st wire.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Kind != "dataserver" || st.TableVersion != 1 || len(st.Masters) != q/2 || len(st.Slaves) != q/2 {
		t.Fatalf("status: %+v", st)
	}
}

func TestAreaConfig(t *testing.T) {
	cs, nodes := cluster2(t, nil)
	a := nodes[0]
	ca := dial(t, a.Addr())
	k := keyIn("area", 0, q, 0)
	area := func(n int, args ...string) []string {
		return append([]string{"TAIR.X", strconv.Itoa(n), "1", "2"}, args...)
	}
	cs.mu.Lock()
	cs.areas = map[uint16]wire.AreaConfig{5: {ReadOnly: true}, 6: {OpsLimit: 5}}
	cs.mu.Unlock()
	testutil.Eventually(t, 3*time.Second, func() bool {
		return strings.HasPrefix(ca.do(area(5, "SET", k, "v")...), "-READONLY")
	}, "read-only area still takes writes")
	if got := ca.do(area(5, "GET", keyIn("area", 0, q, 1))...); got != "$-1" {
		t.Fatalf("read in a read-only area: %q", got)
	}
	if got := ca.do(area(0, "SET", k, "v")...); got != "+OK" {
		t.Fatalf("other area: %q", got)
	}
	limited := 0
	for i := 0; i < 20; i++ {
		if r := ca.do(area(6, "SET", k, "v")...); strings.HasPrefix(r, "-FLOWLIMIT ") {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("flow limit never hit")
	}
}

// Close loses nothing acknowledged: a persistent node reopened on its
// directory has every write.
func TestCloseKeepsAcknowledged(t *testing.T) {
	s, restart := restartableLdbNode(t)
	cl := dial(t, s.Addr())
	var cmds [][]string
	for i := 0; i < 1000; i++ {
		cmds = append(cmds, x(1, "SET", fmt.Sprintf("k%d", i), strconv.Itoa(i)))
	}
	for _, r := range cl.pipeline(cmds) {
		if r != "+OK" {
			t.Fatal(r)
		}
	}
	s2 := restart()
	cl2 := dial(t, s2.Addr())
	for i := 0; i < 1000; i += 37 {
		if got := cl2.do(x(1, "GET", fmt.Sprintf("k%d", i))...); got != "$"+strconv.Itoa(len(strconv.Itoa(i)))+"\r\n"+strconv.Itoa(i) {
			t.Fatalf("k%d after restart: %q", i, got)
		}
	}
}

func TestMultiExecAndWatch(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	k1, k2 := keyIn("tx", 0, q, 1), keyIn("tx", 0, q, 2)
	got := ca.do(x(1, "MULTIEXEC", "3", "3", "SET", k1, "a", "2", "INCR", k2, "2", "GET", k1)...)
	if got != "*3\r\n+OK\r\n:1\r\n$1\r\na" {
		t.Fatalf("MULTIEXEC: %q", got)
	}
	if v, _ := engineGet(b, k2); v != "1" {
		t.Fatalf("slave after MULTIEXEC: %q", v)
	}
	if got := ca.do(x(1, "TAIR.KEYVER", k1, k2, keyIn("tx", 0, q, 3))...); got != "*3\r\n:1\r\n:1\r\n:0" {
		t.Fatalf("TAIR.KEYVER: %q", got)
	}
	// Watch holds: runs. Then k1 changes: the next one with the old version aborts.
	if got := ca.do(x(1, "MULTIEXEC", "1", "2", "INCR", k2, "WATCH", "1", k1, "1")...); got != "*1\r\n:2" {
		t.Fatalf("watched MULTIEXEC: %q", got)
	}
	ca.do(x(1, "SET", k1, "b")...)
	if got := ca.do(x(1, "MULTIEXEC", "1", "2", "INCR", k2, "WATCH", "1", k1, "1")...); got != "*-1" {
		t.Fatalf("MULTIEXEC after the watched key changed: %q", got)
	}
	if got := ca.do(x(1, "MULTIEXEC", "2", "3", "SET", k1, "a", "3", "SET", keyIn("tx", 1, q, 0), "b")...); !strings.HasPrefix(got, "-CROSSSLOT") {
		t.Fatalf("cross-bucket MULTIEXEC: %q", got)
	}
}

// With no configserver process running at all, nobody can change the
// table: the nodes keep their lease and serve on.
func TestServesWhileNoConfigServerRuns(t *testing.T) {
	cs, nodes := cluster2(t, shortLease)
	ca := dial(t, nodes[0].Addr())
	k := keyIn("csdown", 0, q, 0)
	_ = cs.srv.Close() // connections refused from now on
	deadline := time.Now().Add(3 * nodes[0].cfg.LeaseTimeout)
	for i := 0; time.Now().Before(deadline); i++ {
		if got := ca.do(x(1, "SET", k, strconv.Itoa(i))...); got != "+OK" {
			t.Fatalf("write %d with no configserver: %q", i, got)
		}
		if v, _ := engineGet(nodes[1], k); v != strconv.Itoa(i) {
			t.Fatalf("slave after write %d: %q", i, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHooksAndMetrics(t *testing.T) {
	cs, nodes := cluster2(t, nil)
	a := nodes[0]
	cs.setHooks("stats", "audit")
	ca := dial(t, a.Addr())
	k := keyIn("hook", 0, q, 0)
	testutil.Eventually(t, 3*time.Second, func() bool {
		ca.do(x(1, "SET", k, "v")...)
		r, err := http.Get("http://" + a.HTTPAddr() + "/metrics")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return strings.Contains(string(b), `tair_dataserver_area_commands_total{area="0",kind="write",result="ok"}`)
	}, "stats hook did not count")
	for _, path := range []string{"/healthz", "/debug/pprof/"} {
		r, err := http.Get("http://" + a.HTTPAddr() + path)
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, r, err)
		}
		r.Body.Close() // else the client's connection waits for it to be read for ever (goleak)
	}
}

func TestFlush(t *testing.T) {
	_, nodes := cluster2(t, nil)
	ca := dial(t, nodes[0].Addr())
	k := keyIn("fl", 0, q, 0)
	in := func(area string, args ...string) []string {
		return append([]string{"TAIR.X", area, "1", "2"}, args...)
	}
	ca.do(in("0", "SET", k, "a")...)
	ca.do(in("7", "SET", k, "b")...)
	if got := ca.do(in("7", "FLUSHDB")...); got != "+OK" {
		t.Fatalf("FLUSHDB: %q", got)
	}
	if got := ca.do(in("7", "GET", k)...); got != "$-1" {
		t.Fatalf("area 7 after FLUSHDB: %q", got)
	}
	if got := ca.do(in("0", "GET", k)...); got != "$1\r\na" {
		t.Fatalf("area 0 after FLUSHDB of area 7: %q", got)
	}
	ca.do(in("7", "SET", k, "b")...)
	if got := ca.do(in("0", "FLUSHALL")...); got != "+OK" {
		t.Fatalf("FLUSHALL: %q", got)
	}
	for _, a := range []string{"0", "7"} {
		if got := ca.do(in(a, "GET", k)...); got != "$-1" {
			t.Fatalf("area %s after FLUSHALL: %q", a, got)
		}
	}
}

// A slave that falls further behind than the backlog allows gets a full
// copy through a new stream once it answers again (degraded mode).
func TestSlaveTooFarBehindIsResynced(t *testing.T) {
	_, nodes := cluster2(t, func(_ int, c *Config) {
		c.ReplicationBacklog = 4 << 10
		c.ReplicationTimeout = 200 * time.Millisecond
	})
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	bk := b.bucket(0)
	bk.mu.Lock() // the slave stops applying bucket 0
	var cmds [][]string
	for i := 0; i < 300; i++ {
		cmds = append(cmds, x(1, "SET", keyIn("far", 0, q, i), fmt.Sprint("v", i)))
	}
	for i, r := range ca.pipeline(cmds) {
		if r != "+OK" {
			bk.mu.Unlock()
			t.Fatalf("SET %d: %q", i, r)
		}
	}
	ca.do(x(1, "SET", keyIn("far", 0, q, 0), "last")...)
	bk.mu.Unlock()
	testutil.Eventually(t, 10*time.Second, func() bool {
		for i := 1; i < 300; i++ {
			if v, _ := engineGet(b, keyIn("far", 0, q, i)); v != fmt.Sprint("v", i) {
				return false
			}
		}
		v, _ := engineGet(b, keyIn("far", 0, q, 0))
		return v == "last"
	}, "the slave was not resynced")
}

// Batches of one connection that take different paths (envelopes on the
// event loop, writes waiting for their slave on the writer, plain
// commands on the runner) answer in the order they were sent, and run in
// it: each read sees the write sent before it.
func TestConnectionPathsKeepOrder(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a := nodes[0]
	k := keyIn("ord", 0, q, 0) // bucket 0: master a, slave b
	c := dial(t, a.Addr())
	batches := [][][]string{
		{x(1, "SET", k, "1"), x(1, "GET", k)},             // loop; the SET waits for the slave
		{{"PING"}, {"SET", k, "2"}, {"GET", k}},           // runner
		{x(1, "GET", k), x(1, "SET", k, "3")},             // loop, behind the waiting SET
		{{"ECHO", "e"}},                                   // runner
		{x(1, "GET", k), x(1, "INCR", k), x(1, "GET", k)}, // loop
	}
	want := []string{"+OK", "$1\r\n1", "+PONG", "+OK", "$1\r\n2", "$1\r\n2", "+OK", "$1\r\ne", "$1\r\n3", ":4", "$1\r\n4"}
	_ = c.c.c.SetDeadline(time.Now().Add(10 * time.Second))
	for _, b := range batches {
		if _, err := c.c.c.Write(encodeCommands(b)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // a read of its own at the node
	}
	for i, w := range want {
		raw, err := readReply(c.c.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(string(raw), "\r\n"); got != w {
			t.Fatalf("reply %d = %q, want %q", i, got, w)
		}
	}
}

// A malformed request after a batch that runs off the event loop is
// answered after that batch's replies, then the connection closes.
func TestProtocolErrorAfterRunnerBatch(t *testing.T) {
	_, nodes := cluster2(t, nil)
	c := dial(t, nodes[0].Addr())
	_ = c.c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.c.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n*1\r\n$-5\r\n")); err != nil {
		t.Fatal(err)
	}
	for i, w := range []string{"+PONG", "$1\r\nx", "-ERR Protocol error: invalid bulk length"} {
		raw, err := readReply(c.c.br, nil)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if got := strings.TrimSuffix(string(raw), "\r\n"); got != w {
			t.Fatalf("reply %d = %q, want %q", i, got, w)
		}
	}
	if _, err := readReply(c.c.br, nil); err == nil {
		t.Fatal("connection still open after the protocol error")
	}
}

// A slave the table names behind its master is not waited for once the
// master's stream to it has lost its connection, even before a write of
// the master timed out on it: after a node dies, the configserver marks
// it behind (handoff) before any write has waited a replication timeout
// on it, and the first write must not wait that timeout anyway.
func TestBehindDeadSlaveNotWaitedFor(t *testing.T) {
	cs, nodes := cluster2(t, func(_ int, c *Config) { c.ReplicationTimeout = 5 * time.Second })
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	k0, k1 := keyIn("behind", 0, q, 0), keyIn("behind", 0, q, 1)
	loseSlaveBehind(t, cs, a, b, ca, k0)
	start := time.Now()
	if got := ca.do(x(2, "SET", k1, "1")...); got != "+OK" {
		t.Fatalf("write with the slave dead and behind: %q", got)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the write waited %v for a dead slave the table names behind", took)
	}
}

// TestDroppingADeadSlaveLeavesTheMasterUndiverged: a master's stream to
// a dead slave holds the writes acknowledged without it (the table marks
// it behind). When a table drops that slave's copies the stream closes
// with them unsent; the master's own copy lost nothing and no copy the
// table names lacks them, so it is not diverged and sends its slaves no
// full copy. (A CI run saw both surviving masters send every bucket
// again when the dead node restarted empty and was dropped; one of those
// full copies met a move of the slave's copy and lost two writes.)
func TestDroppingADeadSlaveLeavesTheMasterUndiverged(t *testing.T) {
	cs, nodes := cluster2(t, func(_ int, c *Config) { c.ReplicationTimeout = time.Second })
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	loseSlaveBehind(t, cs, a, b, ca, keyIn("drop", 0, q, 0))
	for i := 1; i <= 4; i++ {
		if got := ca.do(x(1, "SET", keyIn("drop", 0, q, i), "v")...); got != "+OK" {
			t.Fatalf("write with the slave dead and behind: %q", got)
		}
	}
	st := a.rt.Load().slaves[0][0]
	if st.pending() == 0 {
		t.Fatal("the stream to the dead slave holds none of the writes acknowledged without it")
	}
	v := cs.getTable().Version + 1
	cs.setTable(ringTable(v, q, 1, a.Addr())) // b's copies dropped
	waitVersion(t, v, a)
	select {
	case <-st.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream to the dropped slave did not close")
	}
	for bk := route.BucketID(0); bk < q; bk++ {
		if a.bucket(bk).diverged.Load() {
			t.Fatalf("bucket %d is marked diverged on its master after its dead slave was dropped", bk)
		}
	}
	for i := 0; i <= 4; i++ {
		if v, ok := engineGet(a, keyIn("drop", 0, q, i)); !ok {
			t.Fatalf("the master lost %s (%q)", keyIn("drop", 0, q, i), v)
		}
	}
}

// TestBehindMarkCoversOnlyItsEpisode: a master relies on a slave's
// behind mark only for the episode of unreachability the mark was set
// for. A mark kept from an earlier episode may be cleared at any moment
// on a heartbeat sent before the new episode began (the configserver
// would then promote the slave without the writes acknowledged
// meanwhile), so a write waits until the table covers the new episode.
func TestBehindMarkCoversOnlyItsEpisode(t *testing.T) {
	cs, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	k := func(i int) string { return keyIn("episode", 0, q, i) }
	if got := ca.do(x(1, "SET", k(0), "1")...); got != "+OK" {
		t.Fatalf("write with both copies up: %q", got)
	}
	_ = b.Close()
	if got := ca.do(x(1, "SET", k(1), "1")...); got != "+OK" {
		t.Fatalf("degraded write once the slave is marked behind: %q", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		hb := cs.lastHB(a.Addr())
		return hb.Health == "degraded" && hb.MasterBuckets > 0
	}, "a master with an unreachable slave does not report itself degraded: %+v", cs.lastHB(a.Addr()))
	st := a.streamTo(b.Addr())
	first := st.episode.Load()
	if tb := a.Table(); !tb.BehindCovers(a.Addr(), b.Addr(), first) {
		t.Fatalf("table %d does not cover episode %d: %v %v", tb.Version, first, tb.Behind, tb.BehindEpoch)
	}

	// The slave was reachable for a moment and is lost again: a new
	// episode, which the configserver has not heard of yet.
	cs.staleEpochs.Store(true)
	st.setUnreachable(false)
	st.setUnreachable(true)
	if st.episode.Load() <= first {
		t.Fatalf("episode %d after %d", st.episode.Load(), first)
	}
	got := ca.do(x(a.TableVersion(), "SET", k(2), "1")...)
	if !strings.HasPrefix(got, "-TIMEOUT slave "+b.Addr()+" did not apply the write and the configserver has not marked it behind") {
		t.Fatalf("write relying on a mark from an earlier episode: %q", got)
	}

	cs.staleEpochs.Store(false)
	if got := ca.do(x(a.TableVersion(), "SET", k(3), "1")...); got != "+OK" {
		t.Fatalf("write once the mark covers the new episode: %q", got)
	}
}

// TestBehindSlaveRefusesSlaveReads: a slave the table marks behind its
// master may lack acknowledged writes, so it sends slave reads back
// (NOTMASTER) instead of answering them.
func TestBehindSlaveRefusesSlaveReads(t *testing.T) {
	cs, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	key := keyIn("xr", 0, q, 0)
	if got := dial(t, a.Addr()).do(x(1, "SET", key, "v")...); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	cb := dial(t, b.Addr())
	xr := func(v uint64) []string { return []string{"TAIR.XR", "0", strconv.FormatUint(v, 10), "2", "GET", key} }
	if got := cb.do(xr(1)...); got != "$1\r\nv" {
		t.Fatalf("slave read: %q", got)
	}
	// Only b learns the mark (the fake configserver would clear it on
	// a's next heartbeat, which does not report b).
	next := cs.getTable()
	next.Version = 2
	next.SetBehind(a.Addr(), b.Addr(), true)
	b.applyTable(next)
	if got := cb.do(xr(2)...); got != "-NOTMASTER bucket 0 table 2 (tair -3986)" {
		t.Fatalf("slave read from a slave marked behind: %q", got)
	}
}

// A slave applies its master's replication batches on its event loop:
// none is copied and handed to a goroutine (batches_off_loop_total stays
// where the stream's hello left it) and every write is there.
func TestReplicationAppliedOnTheLoop(t *testing.T) {
	_, nodes := cluster2(t, func(_ int, c *Config) { c.ReplicationMode = ReplicationStrict })
	a, b := nodes[0], nodes[1]
	ca := dial(t, a.Addr())
	k := keyIn("loop", 0, q, 0)
	if got := ca.do(x(1, "SET", k, "0")...); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	before := counterValue(t, b.m.offLoop)
	for i := 1; i <= 200; i++ {
		if got := ca.do(x(1, "SET", k, strconv.Itoa(i))...); got != "+OK" {
			t.Fatalf("SET %d: %q", i, got)
		}
	}
	if got, _ := engineGet(b, k); got != "200" {
		t.Fatalf("slave has %q, want 200", got)
	}
	if after := counterValue(t, b.m.offLoop); after != before {
		t.Fatalf("%v replication batches went off the slave's loop, want none", after-before)
	}
}
