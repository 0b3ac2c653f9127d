package dataserver

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/testutil"
)

// xr wraps a command in the TAIR.XR envelope (a read a slave may serve).
func xr(version uint64, args ...string) []string {
	return append([]string{"TAIR.XR", "0", strconv.FormatUint(version, 10), "2"}, args...)
}

// TestTairHashActiveFieldExpiry: with nothing touching the keys, the
// master removes expired TairHash fields within about a second (EXHLEN
// without NOEXP drops to the live count), deletes a key whose last field
// expired, and the slave, read directly, agrees.
func TestTairHashActiveFieldExpiry(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a, b := nodes[0], nodes[1]
	k, g := keyIn("fx", 0, q, 0), keyIn("fx", 0, q, 1) // bucket 0: master a, slave b
	ca, cb := dial(t, a.Addr()), dial(t, b.Addr())
	for _, c := range [][]string{
		{"EXHSET", k, "a", "1", "PX", "300"},
		{"EXHSET", k, "b", "2", "PX", "400"},
		{"EXHSET", k, "c", "3"},
		{"EXHSET", g, "a", "1", "PX", "300"},
		// A key expiry of its own: without the active expiry the key
		// would stay when its fields are gone.
		{"EXPIRE", g, "100"},
	} {
		if got := ca.do(x(1, c...)...); got[0] == '-' {
			t.Fatalf("%v: %q", c, got)
		}
	}
	if got := cb.do(xr(1, "EXHLEN", k)...); got != ":3" {
		t.Fatalf("slave EXHLEN before expiry: %q", got)
	}
	start := time.Now()
	for _, side := range []struct {
		name string
		c    *client
		env  func(uint64, ...string) []string
	}{{"master", ca, func(v uint64, a ...string) []string { return x(1, a...) }}, {"slave", cb, xr}} {
		testutil.Eventually(t, 3*time.Second, func() bool {
			return side.c.do(side.env(1, "EXHLEN", k)...) == ":1" && side.c.do(side.env(1, "EXISTS", g)...) == ":0"
		}, "%s: EXHLEN %s = %s, EXISTS %s = %s (want 1 and 0)", side.name,
			k, side.c.do(side.env(1, "EXHLEN", k)...), g, side.c.do(side.env(1, "EXISTS", g)...))
		if got := side.c.do(side.env(1, "EXHGETALL", k)...); got != "*2\r\n$1\r\nc\r\n$1\r\n3" {
			t.Fatalf("%s: EXHGETALL after expiry: %q", side.name, got)
		}
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("the fields took %v to go", d)
	}
	testutil.Eventually(t, 2*time.Second, func() bool { return a.fx.keys() == 0 && b.fx.keys() == 0 },
		"index entries left: master %d, slave %d", a.fx.keys(), b.fx.keys())
	if n := a.fxExpired.Load(); n != 3 {
		t.Fatalf("master counted %d expired fields, want 3", n)
	}
	if n := b.fxExpired.Load(); n != 0 {
		t.Fatalf("slave expired %d fields itself", n)
	}
}

// TestTairHashActiveExpiryUnderLoad: a key with many fields expiring at
// once is expired a bounded batch per hold of its bucket's lock, so
// writes to the same bucket meanwhile are not held up.
func TestTairHashActiveExpiryUnderLoad(t *testing.T) {
	_, nodes := cluster2(t, nil)
	a := nodes[0]
	k := keyIn("fxl", 0, q, 0)
	ca := dial(t, a.Addr())
	const fields, perCmd = 20000, 1000
	var cmds [][]string
	for i := 0; i < fields; i += perCmd {
		c := x(1, "EXHMSETWITHOPTS", k)
		for j := i; j < i+perCmd; j++ {
			c = append(c, fmt.Sprint("f", j), "v", "0", "2") // expires in 2 s
		}
		cmds = append(cmds, c)
	}
	cmds = append(cmds, x(1, "EXHSET", k, "keep", "v"))
	for i, r := range ca.pipeline(cmds) {
		if r != "+OK" && r != ":1" {
			t.Fatalf("write %d: %q", i, r)
		}
	}
	// A writer on the same bucket until the fields are gone.
	cw := dial(t, a.Addr())
	w := keyIn("fxl", 0, q, 1)
	var worst time.Duration
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			r, err := cw.doErr(x(1, "SET", w, fmt.Sprint(i))...)
			d := time.Since(t0)
			if err != nil || r != "+OK" {
				return
			}
			mu.Lock()
			worst = max(worst, d)
			mu.Unlock()
		}
	}()
	testutil.Eventually(t, 10*time.Second, func() bool { return ca.do(x(1, "EXHLEN", k)...) == ":1" },
		"EXHLEN %s = %s, want 1", k, ca.do(x(1, "EXHLEN", k)...))
	close(stop)
	<-done
	// (A write of the key purges the fields due then too: on a slow
	// machine the last EXHMSETWITHOPTS may have found some.)
	if n := a.fxExpired.Load(); n <= 4*fieldExpiryFieldsPerLock {
		t.Fatalf("the active expiry removed %d fields, want most of %d", n, fields)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("slowest SET while %d fields expired: %v", fields, worst)
	if worst > time.Second {
		t.Fatalf("a SET waited %v while the fields expired", worst)
	}
}

// TestFieldExpiryAfterRestart: a persistent engine's TairHash written
// before a restart has its fields expired actively after it (the node
// scans the bucket it masters once, as no write reported them).
func TestFieldExpiryAfterRestart(t *testing.T) {
	s, restart := restartableLdbNode(t)
	k := keyIn("fxr", 3, q, 0)
	cl := dial(t, s.Addr())
	for _, w := range [][]string{{"EXHSET", k, "a", "1", "PX", "1500"}, {"EXHSET", k, "keep", "v"}} {
		if got := cl.do(x(1, w...)...); got != ":1" {
			t.Fatalf("%v: %q", w, got)
		}
	}
	s2 := restart()
	cl2 := dial(t, s2.Addr())
	if got := cl2.do(x(1, "EXHLEN", k)...); got != ":2" {
		t.Fatalf("EXHLEN after the restart: %q", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return cl2.do(x(1, "EXHLEN", k)...) == ":1" },
		"EXHLEN %s = %s after its field expired, want 1", k, cl2.do(x(1, "EXHLEN", k)...))
}

// TestFieldExpiryFollowsMoves: a TairHash that arrives by a move is
// indexed on its new master, which expires its fields; the old master
// forgets it once its copy is dropped.
func TestFieldExpiryFollowsMoves(t *testing.T) {
	cs := newFakeCS(t)
	var nodes []*Server
	for range 3 {
		nodes = append(nodes, startNode(t, testConfig(cs.addr())))
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	t1 := ringTable(1, q, 2, a.Addr(), b.Addr())
	cs.setTable(t1)
	waitVersion(t, 1, nodes...)
	k := keyIn("fxm", 0, q, 0) // bucket 0: master a, slave b
	ca := dial(t, a.Addr())
	for _, w := range [][]string{{"EXHSET", k, "a", "1", "PX", "2500"}, {"EXHSET", k, "keep", "v"}} {
		if got := ca.do(x(1, w...)...); got != ":1" {
			t.Fatalf("%v: %q", w, got)
		}
	}
	moveBucket(t, cs, t1, 0, a, c, b, c)
	if c.fx.keys() != 1 {
		t.Fatalf("the new master indexes %d keys, want 1", c.fx.keys())
	}
	v := strconv.FormatUint(uint64(cs.getTable().Version), 10)
	cc, cb := dial(t, c.Addr()), dial(t, b.Addr())
	testutil.Eventually(t, 6*time.Second, func() bool {
		return cc.do("TAIR.X", "0", v, "2", "EXHLEN", k) == ":1" && cb.do("TAIR.XR", "0", v, "2", "EXHLEN", k) == ":1"
	}, "EXHLEN %s: new master %s, slave %s, want 1", k, cc.do("TAIR.X", "0", v, "2", "EXHLEN", k), cb.do("TAIR.XR", "0", v, "2", "EXHLEN", k))
	testutil.Eventually(t, 5*time.Second, func() bool { return a.fx.keys() == 0 },
		"the old master still indexes %d keys", a.fx.keys())
}
