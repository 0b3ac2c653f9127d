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
			c = append(c, fmt.Sprint("f", j), "v", "0", "1") // expires in 1 s
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
	if n := a.fxExpired.Load(); n != fields {
		t.Fatalf("expired %d fields, want %d", n, fields)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("slowest SET while %d fields expired: %v", fields, worst)
	if worst > time.Second {
		t.Fatalf("a SET waited %v while the fields expired", worst)
	}
}
